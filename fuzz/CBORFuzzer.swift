// libFuzzer target for the CBOR decoder, which reads every passkey registration's attestation
// object and every stored COSE key: built by fuzz/run.sh with Sources/Protocols/WebAuthn/CBOR.swift as one
// module. Each input is decoded whole and as a prefix: the prefix's length is within the input,
// and when it is the whole input both reads give the same item.

@inline(__always)
private func check(_ condition: Bool, _ message: @autoclosure () -> String = "invariant") {
    if !condition { fatalError(message()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let whole: CBOR?
    do {
        whole = try CBOR.decode(bytes)
    } catch {
        check(!error.description.isEmpty)
        whole = nil
    }
    do {
        let (item, length) = try CBOR.decodePrefix(bytes[...])
        check(length > 0 && length <= bytes.count, "a prefix of \(length) bytes in \(bytes.count)")
        if length == bytes.count { check(whole == item, "the whole and the prefix read differ") }
        if let whole { check(length == bytes.count && whole == item) }
    } catch {
        check(whole == nil, "the whole input decoded but its prefix did not")
    }
    return 0
}
