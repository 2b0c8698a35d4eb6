extension Duration {
    /// The duration in seconds, fractions included, for figures and bounds in tests.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
