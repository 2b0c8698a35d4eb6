import TestSupport
import Testing

/// The pipeline counters of `GET /metrics`, to tell which way statements ran: on the event loops'
/// pipelined connections (`sent` goes up) or on a pooled connection on the worker pool
/// (`offloaded` goes up).
struct PipelineCounters: Equatable, CustomStringConvertible {
    /// `exosphere_db_pipelined_queries_total`: statements sent on the pipelines.
    var sent: Int
    /// `exosphere_db_pipeline_offloaded_total`: statements and transactions run on the workers.
    var offloaded: Int

    static func - (after: PipelineCounters, before: PipelineCounters) -> PipelineCounters {
        PipelineCounters(sent: after.sent - before.sent, offloaded: after.offloaded - before.offloaded)
    }

    var description: String { "\(sent) statements pipelined, \(offloaded) offloaded" }
}

extension TestServer {
    /// The pipeline counters now; nil when the server has no pipelines (`databasePipelining` off),
    /// whose metrics then carry no such samples.
    func pipelineCounters(sourceLocation: SourceLocation = #_sourceLocation) throws -> PipelineCounters? {
        let sent = try metric("exosphere_db_pipelined_queries_total")
        let offloaded = try metric("exosphere_db_pipeline_offloaded_total")
        guard let sent, let offloaded else {
            try #require(sent == nil && offloaded == nil, "only some of the pipeline counters are exposed", sourceLocation: sourceLocation)
            return nil
        }
        return PipelineCounters(sent: sent, offloaded: offloaded)
    }

    /// Reads `/users/me` with `token` on new connections until every one of the `eventLoops` has
    /// its pipelined connection open (a loop opens it on its first such request, which meanwhile
    /// goes to the workers), so that what a test sends next can run on the pipelines.
    func openPipelines(eventLoops: Int, token: String) throws {
        try waitUntil(timeout: .seconds(60), pollingEvery: .milliseconds(5), "a pipeline open on each of the \(eventLoops) event loops") {
            _ = try me(token)
            return try metric("exosphere_db_pipelines_open") == eventLoops
        }
    }
}
