import CLinux
import Glibc

/// A joinable pthread running a closure.
public final class OSThread: @unchecked Sendable {
    private var handle = pthread_t()

    private final class Box {
        let body: @Sendable () -> Void
        let name: String
        let priority: Priority
        init(_ body: @escaping @Sendable () -> Void, name: String, priority: Priority) {
            self.body = body
            self.name = name
            self.priority = priority
        }
    }

    /// How the scheduler treats a thread.
    public enum Priority: Sendable, Equatable {
        case normal
        /// A positive nice value (Linux keeps one per thread): a smaller share of a busy CPU.
        case nice(Int32)
        /// The idle scheduling class: it runs only when no other thread wants the CPU, and any
        /// thread that wakes up preempts it at once, so background work cannot delay requests.
        case idle
    }

    /// Starts a thread; the name (15 bytes at most are kept) shows in `top -H` and debuggers.
    public init(name: String, stackSize: Int = 512 * 1024, priority: Priority = .normal, _ body: @escaping @Sendable () -> Void) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setstacksize(&attributes, stackSize)
        let box = Unmanaged.passRetained(Box(body, name: name, priority: priority)).toOpaque()
        let status = pthread_create(
            &handle, &attributes,
            { raw in
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                _ = pthread_setname_np(pthread_self(), String(box.name.prefix(15)))
                switch box.priority {
                case .normal:
                    break
                case .nice(let value):
                    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(gettid()), value)
                case .idle:
                    var parameters = sched_param()
                    parameters.sched_priority = 0
                    _ = pthread_setschedparam(pthread_self(), clinux_sched_idle(), &parameters)
                }
                box.body()
                return nil
            }, box)
        pthread_attr_destroy(&attributes)
        precondition(status == 0, "pthread_create failed: \(status)")
    }

    /// Waits for the thread to end.
    public func join() {
        pthread_join(handle, nil)
    }

    /// Lets the thread release its resources when it ends, for a thread nobody joins.
    public func detach() {
        pthread_detach(handle)
    }
}
