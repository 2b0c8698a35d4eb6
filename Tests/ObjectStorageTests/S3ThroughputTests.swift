import AWSSignature
import Foundation
import ObjectStorage
import TestSupport
import Testing

/// 2 MiB objects put and got by the client and by boto3 against the same cluster, one after the
/// other; the figures are printed (the speed targets are for the server's API, which
/// adds its own work: these are the client's share).
@Suite(.testThreads) struct S3ThroughputTests {
    @Test func twoMebibyteObjectsAgainstBoto3() throws {
        let ceph = try TestCeph.shared()
        let client = try S3ClientTests.client()
        let bucket = client.configuration.bucket
        let directory = try makeTemporaryDirectory("s3-throughput")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = S3ClientTests.randomBytes(2 << 20, seed: 11)
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/object"))
        let count = 20
        // Warm both: the first requests of a bucket create the gateway's data pools.
        try client.putObject("warm", bytes)
        try ceph.boto3(["bench-put", bucket, "warm-boto3/", directory + "/object", "1"])

        let boto3Put = Double(try ceph.boto3(["bench-put", bucket, "boto3/", directory + "/object", String(count)]).trimmed)!
        let start = ContinuousClock.now
        for index in 0..<count { try client.putObject("client/\(index)", bytes) }
        let clientPut = (ContinuousClock.now - start).inSeconds
        let boto3Get = Double(try ceph.boto3(["bench-get", bucket, "boto3/", String(count)]).trimmed)!
        let getStart = ContinuousClock.now
        for index in 0..<count { #expect(try client.getObject("client/\(index)").bytes.count == bytes.count) }
        let clientGet = (ContinuousClock.now - getStart).inSeconds
        print(
            "S3 throughput, \(count) x 2 MiB: put client \(clientPut) s, boto3 \(boto3Put) s (ratio \(boto3Put / clientPut)); "
                + "get client \(clientGet) s, boto3 \(boto3Get) s (ratio \(boto3Get / clientGet))")
        // Far below the figures measured (see the commit), so that a loaded machine does not fail it.
        #expect(boto3Put / clientPut > 0.25)
        #expect(boto3Get / clientGet > 0.25)
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
