// exosphere-dbbench: prepared primary-key SELECT round trips per second through the Postgres
// module, on one connection and through the pool. Driven by bench/postgres.sh.
//
//   exosphere-dbbench cluster                       start a temporary cluster, print its conninfo,
//                                                   stop it when stdin closes
//   exosphere-dbbench run <conninfo> <clients> <seconds> <rows>
import Glibc
import Postgres
import PostgresCluster

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print("usage: exosphere-dbbench cluster | run <conninfo> <clients> <seconds> <rows>")
    exit(2)
}

switch arguments[1] {
case "cluster":
    do {
        let cluster = try LocalCluster.startTemporary()
        writeLine(cluster.connectionString, to: 1)
        while readLine() != nil {}
        cluster.stop()
    } catch {
        writeLine("cluster: \(String(reflecting: error))", to: 2)
        exit(1)
    }

case "run" where arguments.count == 6:
    guard let clients = Int(arguments[3]), let seconds = Int(arguments[4]), let rows = Int(arguments[5]) else {
        writeLine("run: bad numbers", to: 2)
        exit(2)
    }
    do {
        let configuration = try PostgresConfiguration(connectionString: arguments[2])
        let rate = try Benchmark(configuration: configuration, rows: rows, duration: .seconds(seconds)).run(clients: clients)
        print("rate = \(Int(rate.rounded()))")
    } catch {
        writeLine("run: \(String(reflecting: error))", to: 2)
        exit(1)
    }

default:
    writeLine("unknown command \(arguments[1])", to: 2)
    exit(2)
}

/// Unbuffered, so that a pipe reader sees the line at once.
func writeLine(_ text: String, to descriptor: Int32) {
    let line = Array((text + "\n").utf8)
    _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
}
