// libFuzzer target for the JSON parser, which reads every request body: built by fuzz/run.sh with
// Sources/Base/JSON/*.swift as one module. Each input is parsed under small limits (so that every
// limit is reachable from a short input) and, when it parses, serialized and parsed again: the
// value must come back equal, and its depth must respect the limit.

@inline(__always)
private func check(_ condition: Bool, _ message: @autoclosure () -> String = "invariant") {
    if !condition { fatalError(message()) }
}

private let limits = JSONLimits(maxDepth: 6, maxBytes: 2048, maxStringBytes: 64, maxKeysPerObject: 8, maxNumberLength: 24)

private func depth(_ value: JSONValue) -> Int {
    switch value {
    case .array(let items): 1 + (items.map(depth).max() ?? 0)
    case .object(let object): 1 + (object.map { depth($0.value) }.max() ?? 0)
    default: 0
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let parsed: JSONValue
    do {
        parsed = try JSONParser.parse(bytes, limits: limits)
    } catch {
        // Refused: the error must describe itself without trapping.
        check(!String(describing: error).isEmpty)
        return 0
    }
    check(size <= limits.maxBytes, "a \(size)-byte input passed a \(limits.maxBytes)-byte limit")
    check(depth(parsed) <= limits.maxDepth, "depth \(depth(parsed)) over \(limits.maxDepth)")
    // What we write, we read back as the same value (number literals kept as written).
    let written = parsed.serialized()
    let again: JSONValue
    do {
        again = try JSONParser.parse(
            written,
            limits: JSONLimits(
                maxDepth: limits.maxDepth, maxBytes: 1 << 20,
                maxNumberLength: limits.maxNumberLength))
    } catch {
        fatalError("serialized output does not parse: \(error): \(String(decoding: written, as: UTF8.self))")
    }
    check(again == parsed, "round trip changed the value: \(String(decoding: written, as: UTF8.self))")
    return 0
}
