import Foundation
import TestSupport
import Testing

/// The test cluster itself: started on first use, it stores and lists what boto3 puts.
@Suite(.testThreads) struct TestCephTests {
    @Test func boto3StoresReadsAndListsOnTheTestCluster() throws {
        let ceph = try TestCeph.shared()
        let directory = try makeTemporaryDirectory("ceph-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/in"))
        let bucket = ceph.uniqueBucketName("harness")
        try ceph.boto3(["create-bucket", bucket])
        try ceph.boto3(["put", bucket, "a/b.bin", directory + "/in"])
        try ceph.boto3(["get", bucket, "a/b.bin", directory + "/out"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/out")) == Data(bytes))
        #expect(try ceph.boto3(["list", bucket, "a/"]) == "a/b.bin\n")
        #expect(ceph.startDuration < .seconds(120))
        print("TestCeph: the cluster answered \(ceph.startDuration) after its start")
    }
}
