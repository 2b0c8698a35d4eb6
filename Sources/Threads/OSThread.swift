import CLinux
import Glibc

/// A joinable pthread running a closure.
public final class OSThread: @unchecked Sendable {
    private var handle = pthread_t()

    private final class Box {
        let body: @Sendable () -> Void
        let name: String
        let niceness: Int32
        init(_ body: @escaping @Sendable () -> Void, name: String, niceness: Int32) {
            self.body = body
            self.name = name
            self.niceness = niceness
        }
    }

    /// Starts a thread; the name (15 bytes at most are kept) shows in `top -H` and debuggers.
    /// A positive `niceness` lowers its CPU priority (Linux keeps a nice value per thread), so
    /// background work such as password hashing yields the cores to latency-sensitive threads.
    public init(name: String, stackSize: Int = 512 * 1024, niceness: Int32 = 0, _ body: @escaping @Sendable () -> Void) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setstacksize(&attributes, stackSize)
        let box = Unmanaged.passRetained(Box(body, name: name, niceness: niceness)).toOpaque()
        let status = pthread_create(&handle, &attributes, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            _ = pthread_setname_np(pthread_self(), String(box.name.prefix(15)))
            if box.niceness != 0 {
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(gettid()), box.niceness)
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
}
