// Writes a Swift file holding text files as string literals:
// `embed-files OUTPUT ENUM ROOT FILE...`, each file named by its path under ROOT.
// Run by the EmbedFiles build plugin; it reads and writes with plain system calls only.
import Glibc

func readAll(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { fatalError("embed-files: cannot open \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count == 0 { break }
        bytes += buffer[..<count]
    }
    return bytes
}

/// A one-line string literal that reads back as exactly `text` (no line-ending normalisation,
/// no indentation stripping, as a multi-line literal would do).
func literal(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\\": result += "\\\\"
        case "\"": result += "\\\""
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F: result += "\\u{\(String(scalar.value, radix: 16))}"
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result + "\""
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else { fatalError("usage: embed-files OUTPUT ENUM ROOT FILE...") }
let (outputPath, enumName, root) = (arguments[1], arguments[2], arguments[3])
var source = """
    // Generated from \(root.split(separator: "/").last ?? "") by the EmbedFiles build plugin; do not edit.

    /// Files compiled in, by their path under their directory, in order.
    public enum \(enumName) {
        public static let files: [(name: String, contents: String)] = [

    """
for path in arguments.dropFirst(4) {
    guard path.hasPrefix(root + "/") else { fatalError("embed-files: \(path) is not under \(root)") }
    let name = String(path.dropFirst(root.count + 1))
    let bytes = readAll(path)
    // A string literal holds text: a file that is not UTF-8 would come back altered.
    guard let text = String(validating: bytes, as: UTF8.self) else { fatalError("embed-files: \(path) is not UTF-8 text") }
    source += "        (\(literal(name)), \(literal(text))),\n"
}
source += "    ]\n}\n"
guard let output = fopen(outputPath, "wb") else { fatalError("embed-files: cannot write \(outputPath)") }
let bytes = Array(source.utf8)
guard fwrite(bytes, 1, bytes.count, output) == bytes.count, fclose(output) == 0 else {
    fatalError("embed-files: writing \(outputPath) failed")
}
