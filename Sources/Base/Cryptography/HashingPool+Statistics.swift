extension HashingPool {
    /// A snapshot of a hashing pool's figures for metrics.
    public struct Statistics: Sendable, Hashable {
        /// The number of worker threads.
        public let workers: Int
        /// How many jobs may wait while every worker is busy.
        public let queueCapacity: Int
        /// Jobs waiting for a worker.
        public let queued: Int
        /// Workers running a job.
        public let busy: Int
        /// Jobs refused as `overloaded` since the pool started.
        public let rejected: UInt64
        /// Jobs finished since the pool started.
        public let completed: UInt64
        /// Of those, the bulk lane's (the rest are interactive).
        public let completedBulk: UInt64
        /// Jobs dropped unstarted because their client went away, since the pool started.
        public let abandoned: UInt64
        /// Jobs dropped unstarted because their request's deadline passed, since the pool started.
        public let expired: UInt64
    }
}
