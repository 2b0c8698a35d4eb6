import CLinux
import Glibc

/// A joinable pthread running a closure.
public final class OSThread: @unchecked Sendable {
    private var handle = pthread_t()

    private final class Box {
        let body: @Sendable () -> Void
        let name: String
        init(_ body: @escaping @Sendable () -> Void, name: String) {
            self.body = body
            self.name = name
        }
    }

    /// Starts a thread; the name (15 bytes at most are kept) shows in `top -H` and debuggers.
    public init(name: String, stackSize: Int = 512 * 1024, _ body: @escaping @Sendable () -> Void) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setstacksize(&attributes, stackSize)
        let box = Unmanaged.passRetained(Box(body, name: name)).toOpaque()
        let status = pthread_create(&handle, &attributes, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            _ = pthread_setname_np(pthread_self(), String(box.name.prefix(15)))
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
