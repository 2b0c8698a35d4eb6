import Foundation
import Glibc
import JSON
import Postgres
import PostgresCluster
import TestSupport
import Testing

/// A PostgreSQL primary and its synchronous replica under Patroni (Debian's 3.0), on a one-member
/// etcd, with haproxy's `primary` port in front: it sends connections to whichever node Patroni's
/// REST API calls the primary (`OPTIONS /primary`), checked every 100 ms. Everything runs as the
/// PostgreSQL system user when the tests run as root (PostgreSQL refuses root), in a temporary
/// directory that `stop()` removes with every process.
///
/// Patroni runs with a 10 s leader lease and a 1 s loop: a killed leader's lease expires within
/// 10 s, and the replica takes over then.
final class PatroniPair: Sendable {
    typealias Child = ExosphereProcessTests.Child

    let directory: String
    let postgresPorts: [Int]
    let restPorts: [Int]
    /// haproxy's port that reaches the primary.
    let primaryPort: Int
    private let processes: Processes

    /// The children, kept apart because they are not `Sendable`: only the test's own thread and
    /// the one that kills a node touch them, one after the other.
    private final class Processes: @unchecked Sendable {
        var etcd: Child?
        var nodes: [Child?] = [nil, nil]
        var haproxy: Child?
    }

    /// A libpq connection string to both nodes that picks the one that takes writes.
    var multiHostURL: String {
        "host=127.0.0.1,127.0.0.1 port=\(postgresPorts[0]),\(postgresPorts[1]) user=postgres dbname=postgres target_session_attrs=read-write"
    }

    func connectionString(node: Int) -> String { Self.connectionString(port: postgresPorts[node]) }

    static func connectionString(port: Int) -> String {
        "host=127.0.0.1 port=\(port) user=postgres dbname=postgres connect_timeout=2"
    }

    private init(directory: String, postgresPorts: [Int], restPorts: [Int], primaryPort: Int, processes: Processes) {
        self.directory = directory
        self.postgresPorts = postgresPorts
        self.restPorts = restPorts
        self.primaryPort = primaryPort
        self.processes = processes
    }

    /// Bootstraps the pair: etcd, the first node (initdb, then leader), the second (a base backup
    /// of the first, then its synchronous standby), and haproxy once the primary answers.
    static func start() throws -> PatroniPair {
        let patroni = try #require(
            executable(["/usr/bin/patroni", "/usr/local/bin/patroni"]),
            "patroni is not installed: the failover drill needs it (apt-get install -y patroni etcd-server; .ci/run installs them)")
        let etcdPath = try #require(
            executable(["/usr/bin/etcd", "/usr/local/bin/etcd"]),
            "etcd is not installed: the failover drill needs it (apt-get install -y etcd-server; .ci/run installs it)")
        let haproxy = try #require(MultiInstanceTests.Deployment.haproxyPath(), "haproxy is not installed (.ci/run installs it)")
        let binDirectory = try LocalCluster.findBinDirectory()

        let directory = try makeTemporaryDirectory("exo-patroni")
        let processes = Processes()
        do {
            let ports = try (0..<7).map { _ in try ExosphereProcessTests.freePort() }
            let (etcdClient, etcdPeer, primaryPort) = (ports[0], ports[1], ports[2])
            let postgresPorts = [ports[3], ports[4]]
            let restPorts = [ports[5], ports[6]]
            for node in 0..<2 {
                let configuration = nodeConfiguration(
                    node: node, directory: directory, postgresPort: postgresPorts[node], restPort: restPorts[node],
                    etcdPort: etcdClient, binDirectory: binDirectory)
                try Data(configuration.utf8).write(to: URL(fileURLWithPath: "\(directory)/node\(node).yml"))
            }
            let owner = try systemUser()
            if let owner { try chownTree(directory, owner) }

            processes.etcd = try Child(
                executable: etcdPath,
                arguments: [
                    "--name", "e0", "--data-dir", directory + "/etcd",
                    "--listen-client-urls", "http://127.0.0.1:\(etcdClient)", "--advertise-client-urls", "http://127.0.0.1:\(etcdClient)",
                    "--listen-peer-urls", "http://127.0.0.1:\(etcdPeer)", "--initial-advertise-peer-urls", "http://127.0.0.1:\(etcdPeer)",
                    "--initial-cluster", "e0=http://127.0.0.1:\(etcdPeer)", "--log-level", "warn",
                ],
                environment: [:], port: etcdClient)
            try waitUntil(timeout: .seconds(20), "etcd to listen on \(etcdClient)") { isListening(etcdClient) }

            let pair = PatroniPair(
                directory: directory, postgresPorts: postgresPorts, restPorts: restPorts, primaryPort: primaryPort,
                processes: processes)
            for node in 0..<2 {
                var arguments = [patroni, "\(directory)/node\(node).yml"]
                if let owner { arguments = ["--reuid=\(owner.uid)", "--regid=\(owner.gid)", "--clear-groups", "--"] + arguments }
                processes.nodes[node] = try Child(
                    executable: owner == nil ? patroni : "/usr/bin/setpriv", arguments: owner == nil ? Array(arguments.dropFirst()) : arguments,
                    environment: ["HOME": directory, "LANG": "C.UTF-8"], port: restPorts[node])
                // The first node initialises and leads; the second copies it and becomes its
                // synchronous standby (a commit is acknowledged only once it has the WAL).
                let role = node == 0 ? "leader" : "sync_standby"
                try waitUntil(timeout: .seconds(90), pollingEvery: .milliseconds(200), "node\(node) to be the \(role): \(pair.diagnostics())") {
                    guard processes.nodes[node]?.isRunning == true else { throw TestFailure("node\(node) exited: \(pair.diagnostics())") }
                    return try pair.members().contains { $0.name == "node\(node)" && $0.role == role && $0.running }
                }
            }

            let proxyConfiguration = """
                global
                    maxconn 2000
                defaults
                    mode tcp
                    timeout connect 500ms
                    timeout client 1h
                    timeout server 1h
                    timeout check 1s
                listen primary
                    bind 127.0.0.1:\(primaryPort)
                    option httpchk OPTIONS /primary
                    http-check expect status 200
                    default-server inter 100ms fall 3 rise 1 on-marked-down shutdown-sessions
                    server node0 127.0.0.1:\(postgresPorts[0]) check port \(restPorts[0])
                    server node1 127.0.0.1:\(postgresPorts[1]) check port \(restPorts[1])

                """
            try Data(proxyConfiguration.utf8).write(to: URL(fileURLWithPath: directory + "/haproxy.cfg"))
            processes.haproxy = try Child(
                executable: haproxy, arguments: ["-f", directory + "/haproxy.cfg", "-db"], environment: [:], port: primaryPort)
            try waitUntil(timeout: .seconds(20), "haproxy to reach the primary: \(processes.haproxy?.stderr ?? "")") {
                (try? isPrimary(port: primaryPort)) == true
            }
            // haproxy starts with both servers up and marks the standby down only after `fall`
            // failed checks; until then it sends some connections to the standby, and cuts them
            // when it marks it down (`on-marked-down shutdown-sessions`): a server starting then
            // exited on "server conn crashed?" behind pgbouncer. Ready once the standby is down.
            try waitUntil(timeout: .seconds(20), "haproxy to mark the standby down: \(processes.haproxy?.stderr ?? "")") {
                pair.proxyEvents().contains { $0.contains("Server primary/node1 is DOWN") }
            }
            return pair
        } catch {
            stop(processes, directory: directory)
            throw error
        }
    }

    /// Kills everything of a node at once, as a crash of its machine would: Patroni, the
    /// postmaster and each of its processes (the postmaster runs in a session of its own).
    func kill(node: Int) throws {
        let postmaster = try Self.postmasterPID(directory: directory, node: node)
        // Frozen first, so that no backend can be forked between the listing and the kill.
        Glibc.kill(postmaster, SIGSTOP)
        processes.nodes[node]?.signal(SIGKILL)
        for child in Self.childProcesses(of: postmaster) { Glibc.kill(child, SIGKILL) }
        Glibc.kill(postmaster, SIGKILL)
    }

    /// The index of the node that Patroni calls the leader.
    func leader() throws -> Int {
        let name = try #require(try members().first { $0.role == "leader" }?.name, "no leader: \(diagnostics())")
        return name == "node0" ? 0 : 1
    }

    struct Member {
        let name: String
        let role: String
        let running: Bool
    }

    /// The members as a live node's REST API lists them (`GET /cluster`).
    func members() throws -> [Member] {
        for port in restPorts {
            guard
                let reply = try? HTTPClient.send(port: port, method: "GET", target: "/cluster", headers: [], body: nil, deadline: .now + .seconds(2)),
                reply.status == 200
            else { continue }
            return (reply.json["members"]?.arrayValue ?? []).map {
                let state = $0["state"]?.stringValue ?? ""
                return Member(
                    name: $0["name"]?.stringValue ?? "", role: $0["role"]?.stringValue ?? "", running: state == "running" || state == "streaming")
            }
        }
        return []
    }

    /// What went wrong, when a node does not come up: the tail of each process's output.
    func diagnostics() -> String {
        let nodes = processes.nodes.enumerated().map { "node\($0.offset): \(String(($0.element?.stderr ?? "not started").suffix(1_500)))" }
        return (nodes + ["etcd: \(String((processes.etcd?.stderr ?? "").suffix(500)))"]).joined(separator: "\n")
    }

    /// haproxy's changes of a node's state (`Server primary/node1 is UP, reason: …`), in order.
    func proxyEvents() -> [String] {
        (processes.haproxy?.stderr ?? "").split(separator: "\n").filter { $0.contains("Server primary/") }.map(String.init)
    }

    /// Whether the PostgreSQL at `port` answers and takes writes.
    static func isPrimary(port: Int) throws -> Bool {
        let connection = try PostgresConnection(connectionString: connectionString(port: port))
        defer { connection.close() }
        return try !connection.query("SELECT pg_is_in_recovery()")[0].decode(Bool.self, at: 0)
    }

    func stop() { Self.stop(processes, directory: directory) }

    private static func stop(_ processes: Processes, directory: String) {
        let postmasters = (0..<2).compactMap { try? postmasterPID(directory: directory, node: $0) }
        for child in [processes.haproxy, processes.nodes[0], processes.nodes[1], processes.etcd].compactMap({ $0 }) {
            child.signal(SIGKILL)
            _ = child.waitForExit(timeout: 5)
        }
        for postmaster in postmasters {
            let children = childProcesses(of: postmaster)
            Glibc.kill(postmaster, SIGKILL)
            for child in children { Glibc.kill(child, SIGKILL) }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: - Set-up

    private static func nodeConfiguration(
        node: Int, directory: String, postgresPort: Int, restPort: Int, etcdPort: Int, binDirectory: String
    ) -> String {
        """
        scope: exosphere-drill
        name: node\(node)
        restapi:
          listen: 127.0.0.1:\(restPort)
          connect_address: 127.0.0.1:\(restPort)
        etcd3:
          hosts: 127.0.0.1:\(etcdPort)
        bootstrap:
          dcs:
            ttl: 10
            loop_wait: 1
            retry_timeout: 3
            maximum_lag_on_failover: 1048576
            synchronous_mode: true
            postgresql:
              use_pg_rewind: true
              parameters:
                wal_log_hints: 'on'
                max_connections: 200
          initdb:
            - encoding: UTF8
            - locale: C.UTF-8
            - auth: trust
          pg_hba:
            - local all all trust
            - host replication all 127.0.0.1/32 trust
            - host all all 127.0.0.1/32 trust
        postgresql:
          listen: 127.0.0.1:\(postgresPort)
          connect_address: 127.0.0.1:\(postgresPort)
          data_dir: \(directory)/data\(node)
          bin_dir: \(binDirectory)
          pgpass: \(directory)/pgpass\(node)
          authentication:
            replication:
              username: postgres
            superuser:
              username: postgres
          parameters:
            unix_socket_directories: '\(directory)'
            fsync: 'on'

        """
    }

    private static func executable(_ candidates: [String]) -> String? {
        candidates.first { access($0, X_OK) == 0 }
    }

    /// The PostgreSQL system user, when the tests run as root.
    private static func systemUser() throws -> (uid: uid_t, gid: gid_t)? {
        guard geteuid() == 0 else { return nil }
        guard let account = getpwnam("postgres") else { throw TestFailure("running as root and there is no postgres system user") }
        return (account.pointee.pw_uid, account.pointee.pw_gid)
    }

    private static func chownTree(_ path: String, _ owner: (uid: uid_t, gid: gid_t)) throws {
        guard chown(path, owner.uid, owner.gid) == 0 else { throw TestFailure("chown \(path): errno \(errno)") }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            chown(path + "/" + name, owner.uid, owner.gid)
        }
    }

    private static func postmasterPID(directory: String, node: Int) throws -> pid_t {
        let text = try String(contentsOfFile: "\(directory)/data\(node)/postmaster.pid", encoding: .utf8)
        guard let first = text.split(separator: "\n").first, let pid = pid_t(first) else { throw TestFailure("no postmaster.pid for node\(node)") }
        return pid
    }

    /// The processes whose parent is `pid` (`/proc/N/stat`'s fourth field).
    private static func childProcesses(of pid: pid_t) -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name in
            guard let candidate = pid_t(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == pid ? candidate : nil
        }
    }
}
