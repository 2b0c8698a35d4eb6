/// What the inspector learned from an image's headers: its format and its size in pixels as
/// encoded, before any orientation (EXIF `Orientation`, HEIF `irot`) is applied.
public struct ImageInfo: Sendable, Hashable {
    public let format: ImageFormat
    public let width: Int
    public let height: Int

    public init(format: ImageFormat, width: Int, height: Int) {
        self.format = format
        self.width = width
        self.height = height
    }
}
