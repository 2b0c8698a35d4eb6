// Writes a Swift file holding SQL files as string literals: `embed-migrations OUTPUT FILE...`.
// Run by the EmbedMigrations build plugin; it reads and writes with plain system calls only.
import Glibc

func readAll(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { fatalError("embed-migrations: cannot open \(path)") }
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
guard arguments.count >= 2 else { fatalError("usage: embed-migrations OUTPUT FILE...") }
var source = """
    // Generated from migrations/*.sql by the EmbedMigrations build plugin; do not edit.

    /// The repository's migrations, by file name, in order.
    public enum EmbeddedMigrations {
        public static let files: [(fileName: String, sql: String)] = [

    """
for path in arguments.dropFirst(2) {
    let name = String(path.split(separator: "/").last!)
    let text = String(decoding: readAll(path), as: UTF8.self)
    source += "        (\(literal(name)), \(literal(text))),\n"
}
source += "    ]\n}\n"
guard let output = fopen(arguments[1], "wb") else { fatalError("embed-migrations: cannot write \(arguments[1])") }
let bytes = Array(source.utf8)
guard fwrite(bytes, 1, bytes.count, output) == bytes.count, fclose(output) == 0 else {
    fatalError("embed-migrations: writing \(arguments[1]) failed")
}
