/// What a server said it supports in its EHLO reply (RFC 5321 §4.1.1.1): one extension keyword
/// per line after the first, with its parameters.
struct SMTPCapabilities: Equatable {
    /// Upper-cased keyword → parameters.
    private var extensions: [String: [String]] = [:]

    /// None: what a server that only knows HELO offers.
    init() {}

    init(ehloReply reply: SMTPReply) {
        for line in reply.lines.dropFirst() {
            var words = line.split(separator: " ").map(String.init)
            guard !words.isEmpty else { continue }
            var keyword = words.removeFirst().uppercased()
            // "AUTH=PLAIN LOGIN": the pre-standard form some servers still send beside "AUTH PLAIN LOGIN".
            if keyword.hasPrefix("AUTH=") {
                words.insert(String(keyword.dropFirst(5)), at: 0)
                keyword = "AUTH"
            }
            extensions[keyword, default: []] += words
        }
    }

    func supports(_ keyword: String) -> Bool { extensions[keyword] != nil }

    /// The SASL mechanisms after AUTH, upper-cased.
    var authenticationMechanisms: [String] { (extensions["AUTH"] ?? []).map { $0.uppercased() } }
}
