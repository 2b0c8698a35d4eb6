// libFuzzer target for image inspection (signatures, PNG/GIF/JPEG/WebP headers and HEIC box
// walking), which reads every upload: built by fuzz/run.sh with the pure inspection sources of
// Sources/Images as one module. The first byte picks the declared format; the rest is the file.
// Inspection must never trap or read outside the input, and what it accepts must respect the limits.

@inline(__always)
private func check(_ condition: Bool, _ message: @autoclosure () -> String = "invariant") {
    if !condition { fatalError(message()) }
}

private let limits = ImageLimits(maxPixels: 1 << 20, maxDimension: 4096)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let formats = ImageFormat.allCases
    let declared = formats[Int(data[0]) % formats.count]
    let file = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    switch ImageInspector.inspect(file, declared: declared, limits: limits) {
    case .success(let info):
        check(info.format == declared, "\(info.format) accepted as \(declared)")
        check(info.width > 0 && info.height > 0, "\(info.width)×\(info.height)")
        check(info.width <= limits.maxDimension && info.height <= limits.maxDimension, "\(info.width)×\(info.height) over the limit")
        check(info.width * info.height <= limits.maxPixels, "\(info.width)×\(info.height) over the pixel limit")
    case .failure(let error):
        check(!String(describing: error).isEmpty)
    }
    // Sniffing any prefix is total too.
    _ = ImageFormat.sniff(file)
    return 0
}
