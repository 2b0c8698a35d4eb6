import Glibc
import Postgres
import Synchronization

/// Runs the benchmark loop on one connection (1 client) or on N threads sharing a pool.
struct Benchmark: Sendable {
    let configuration: PostgresConfiguration
    let rows: Int
    let duration: Duration

    /// Returns round trips per second over all clients.
    func run(clients: Int) throws -> Double {
        if clients == 1 {
            let connection = try PostgresConnection(configuration: configuration)
            var random = FastRandom(seed: 1)
            let start = ContinuousClock.now
            let count = try loop(until: start + duration, random: &random) { try $0(connection) }
            return Double(count) / seconds(ContinuousClock.now - start)
        }
        let pool = PostgresPool(configuration: configuration, size: clients)
        // Open every connection before timing, as pgbench does.
        try warmUp(pool, clients: clients)
        let total = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let start = ContinuousClock.now
        let deadline = start + duration
        let threads = (0..<clients).map { index in
            startThread {
                var random = FastRandom(seed: UInt64(index + 1))
                do {
                    let count = try loop(until: deadline, random: &random) { query in
                        try pool.withConnection { try query($0) }
                    }
                    total.add(count, ordering: .relaxed)
                } catch {
                    failures.withLock { $0.append(String(reflecting: error)) }
                }
            }
        }
        threads.forEach { pthread_join($0, nil) }
        let elapsed = ContinuousClock.now - start
        if let failure = failures.withLock({ $0.first }) {
            throw BenchmarkError(message: failure)
        }
        pool.close()
        return Double(total.load(ordering: .relaxed)) / seconds(elapsed)
    }

    /// Repeats the query until the deadline; `lend` supplies a connection for each one.
    func loop(
        until deadline: ContinuousClock.Instant,
        random: inout FastRandom,
        lend: ((PostgresConnection) throws -> Void) throws -> Void
    ) throws -> Int {
        var count = 0
        var checksum = 0
        while true {
            // Check the clock every 64 queries: reading it is cheap but not free.
            if count & 63 == 0, ContinuousClock.now >= deadline { break }
            let id = Int(random.next() % UInt64(rows)) + 1
            try lend { connection in
                let rows = try connection.query("SELECT id, name, balance FROM bench_accounts WHERE id = \(id)")
                let (rowID, name, balance) = try rows[0].decode((Int, String, Int).self)
                checksum &+= rowID &+ name.utf8.count &+ balance
            }
            count += 1
        }
        if checksum == 42 { print("") }  // keep the decoding observable
        return count
    }

    func warmUp(_ pool: PostgresPool, clients: Int) throws {
        let ready = Atomic<Int>(0)
        let threads = (0..<clients).map { _ in
            startThread {
                _ = try? pool.withConnection { _ in
                    ready.add(1, ordering: .relaxed)
                    while ready.load(ordering: .relaxed) < clients { usleep(100) }
                }
            }
        }
        threads.forEach { pthread_join($0, nil) }
        guard pool.statistics.created == clients else {
            throw BenchmarkError(message: "could not open \(clients) connections")
        }
    }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// xorshift64*: a random id costs no system call.
struct FastRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
}

/// Starts a joinable pthread running `body`.
func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let status = pthread_create(
        &thread, nil,
        { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box)
    precondition(status == 0, "pthread_create failed")
    return thread
}
