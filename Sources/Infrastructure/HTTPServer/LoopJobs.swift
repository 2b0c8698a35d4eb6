import Glibc
import Synchronization
import Threads

/// An event loop as a task executor: the jobs of the requests' tasks that run on the loop (their
/// first step, and each step after a suspension: a pipelined statement answered, a hop to the
/// workers back). The loop runs them after its events and before its sources send what they
/// batched, until none is left, so that a statement a resumed handler sends goes out in the same
/// wake-up.
final class LoopJobs: TaskExecutor, @unchecked Sendable {
    /// Jobs enqueued on the loop's thread; only that thread touches it.
    private var local: [UnownedJob] = []
    private var running: [UnownedJob] = []
    /// The loop's thread, once it runs.
    private var thread: pthread_t?
    /// Set once the loop has run its last jobs: later ones run on a thread of their own.
    private let ended = Atomic<Bool>(false)
    /// Hands a job from another thread to the loop's; set by the loop before its thread starts.
    var post: @Sendable (@escaping @Sendable () -> Void) -> Void = { _ in }

    /// Called on the loop's thread before it runs anything.
    func attach() {
        thread = pthread_self()
    }

    /// Whether the caller runs on the loop's thread.
    var isCurrent: Bool {
        guard let thread else { return false }
        return pthread_equal(pthread_self(), thread) != 0
    }

    var isEmpty: Bool { local.isEmpty }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if ended.load(ordering: .acquiring) {
            let executor = asUnownedTaskExecutor()
            OSThread(name: "loop-late-job") { job.runSynchronously(on: executor) }.detach()
        } else if isCurrent {
            local.append(job)
        } else {
            post { [self] in local.append(job) }
        }
    }

    /// Runs every job, and the jobs they enqueue, until none is left. On the loop's thread.
    func run() {
        let executor = asUnownedTaskExecutor()
        while !local.isEmpty {
            swap(&local, &running)
            for job in running { job.runSynchronously(on: executor) }
            running.removeAll(keepingCapacity: true)
        }
    }

    /// The loop has ended: runs what is left; later jobs run on threads of their own (a task
    /// resumed after shutdown still finishes).
    func end() {
        run()
        ended.store(true, ordering: .releasing)
        run()
    }
}
