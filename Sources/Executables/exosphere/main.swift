import API
import Glibc

var environment: [String: String] = [:]
var pointer = environ
while let entry = pointer.pointee {
    let pair = String(cString: entry)
    if let equals = pair.firstIndex(of: "=") {
        environment[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
    }
    pointer += 1
}
exit(Exosphere.main(arguments: Array(CommandLine.arguments.dropFirst()), environment: environment))
