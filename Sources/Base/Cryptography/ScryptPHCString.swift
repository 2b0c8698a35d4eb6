/// A scrypt password hash in PHC string format: `$scrypt$ln=17,r=8,p=1$<salt>$<key>`, with
/// salt and key in unpadded standard base64.
///
/// Parsing is strict and accepts only what `text` produces: one algorithm, the three
/// parameters in this order without leading zeros, a 16-byte salt, a 32-byte key, no other
/// fields. Anything else is `malformedHash`, so verification fails closed.
struct ScryptPHCString: Sendable, Hashable {
    static let algorithm = "scrypt"
    static let saltLength = 16
    static let keyLength = 32
    /// Well above the 87 characters of a real hash; stops absurd inputs before any work.
    static let maximumLength = 256

    let parameters: ScryptParameters
    let salt: [UInt8]
    let key: [UInt8]

    init(parameters: ScryptParameters, salt: [UInt8], key: [UInt8]) {
        precondition(salt.count == Self.saltLength && key.count == Self.keyLength)
        self.parameters = parameters
        self.salt = salt
        self.key = key
    }

    var text: String {
        "$\(Self.algorithm)$\(parameters)$\(Base64.encode(salt))$\(Base64.encode(key))"
    }

    init(parsing text: String) throws {
        func malformed(_ reason: String) -> SecurityError {
            SecurityError(.malformedHash, detail: reason)
        }
        guard text.utf8.count <= Self.maximumLength else { throw malformed("too long") }
        let fields = text.utf8.split(separator: UInt8(ascii: "$"), omittingEmptySubsequences: false)
        guard fields.count == 5, fields[0].isEmpty else { throw malformed("wrong field count") }
        guard fields[1].elementsEqual(Self.algorithm.utf8) else {
            throw malformed("unsupported algorithm")
        }

        let assignments = fields[2].split(
            separator: UInt8(ascii: ","),
            omittingEmptySubsequences: false)
        guard assignments.count == 3,
            let logN = Self.value(of: "ln", in: assignments[0]),
            let r = Self.value(of: "r", in: assignments[1]),
            let p = Self.value(of: "p", in: assignments[2])
        else { throw malformed("malformed parameters") }
        let parameters: ScryptParameters
        do {
            parameters = try ScryptParameters(logN: logN, r: r, p: p)
        } catch {
            throw malformed("parameters out of bounds")
        }

        guard let salt = Base64.decode(Substring(fields[3])), salt.count == Self.saltLength else {
            throw malformed("malformed salt")
        }
        guard let key = Base64.decode(Substring(fields[4])), key.count == Self.keyLength else {
            throw malformed("malformed key")
        }
        self.init(parameters: parameters, salt: salt, key: key)
    }

    /// The value of `name=<decimal>`: one to three digits, no sign, no leading zero.
    private static func value(of name: String, in assignment: Substring.UTF8View) -> Int? {
        let parts = assignment.split(
            separator: UInt8(ascii: "="), maxSplits: 1,
            omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].elementsEqual(name.utf8) else { return nil }
        let digits = parts[1]
        guard (1...3).contains(digits.count),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            digits.first != UInt8(ascii: "0") || digits.count == 1
        else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }
}
