/// How large an image may be, in pixels; checked from the headers before anything is decoded.
public struct ImageLimits: Sendable, Hashable {
    /// The largest `width × height`; the default allows 10 000 × 10 000.
    public var maxPixels: Int
    /// The largest width or height.
    public var maxDimension: Int

    public init(maxPixels: Int = 100_000_000, maxDimension: Int = 65_535) {
        self.maxPixels = maxPixels
        self.maxDimension = maxDimension
    }
}
