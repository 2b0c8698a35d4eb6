import HTTP

/// Requests valid and hostile, each with exactly the outcome RFC 9112 and our limits demand.
///
/// The sections follow RFC 9112: request line (§§2–3), fields (§5), Host (§3.2), framing (§6),
/// chunked (§7), persistence (§9.3), Expect (RFC 9110 §10.1.1), smuggling and pipelining.
enum RequestCorpus {
    static let all: [ParseCase] =
        requestLine + fields + host + contentLength + transferEncoding + chunked
        + connection + expect + smuggling + pipelining

    /// A head start shared by many cases.
    static let get: Raw = "GET / HTTP/1.1\r\nHost: h\r\n"
    static let post: Raw = "POST / HTTP/1.1\r\nHost: h\r\n"

    /// A request line of exactly `length` bytes (CRLF not included): `GET /aaa… HTTP/1.1`.
    static func longRequestLine(_ length: Int) -> (line: Raw, target: String) {
        let target = "/" + String(repeating: "a", count: length - 14)
        return (Raw("GET \(target) HTTP/1.1"), target)
    }

    /// A field line of exactly `length` bytes (CRLF not included).
    static func longField(_ length: Int, name: String = "X-Long") -> Raw {
        Raw("\(name): " + String(repeating: "v", count: length - name.utf8.count - 2))
    }

    /// Fields that bring a head starting with `get` to exactly `total` bytes with its final CRLF.
    static func fill(headTotal total: Int) -> Raw {
        var rest = total - get.count - 2
        var fields: Raw = ""
        var n = 0
        while rest > 0 {
            let line = min(rest, 8000)
            precondition(line >= 12, "cannot fill \(rest) bytes")
            let take = rest - line > 0 && rest - line < 12 ? line - 12 : line
            fields = fields + longField(take - 2, name: "X-Fill-\(n)") + "\r\n"
            rest -= take
            n += 1
        }
        return fields
    }

    static var smallBody: HTTPLimits {
        var limits = HTTPLimits()
        limits.maxBodyBytes = 10
        return limits
    }

    // MARK: - §§2–3 Request line

    static let requestLine: [ParseCase] = {
        let line8192 = longRequestLine(8192)
        let line8193 = longRequestLine(8193)
        return [
            .valid("simple GET", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"),
            .valid(
                "origin-form with query", "GET /search?q=swift&page=2 HTTP/1.1\r\nHost: h\r\n\r\n",
                target: "/search?q=swift&page=2", path: "/search", query: "q=swift&page=2"),
            .valid("empty query", "GET /a? HTTP/1.1\r\nHost: h\r\n\r\n", target: "/a?", path: "/a", query: ""),
            .valid(
                "question mark inside the query", "GET /a?b?c HTTP/1.1\r\nHost: h\r\n\r\n",
                target: "/a?b?c", path: "/a", query: "b?c"),
            .valid("percent-encoding is kept", "GET /a%20b/%2F HTTP/1.1\r\nHost: h\r\n\r\n", target: "/a%20b/%2F"),
            .valid("empty path segments", "GET //a//b HTTP/1.1\r\nHost: h\r\n\r\n", target: "//a//b"),
            .valid("HEAD", "HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n", method: "HEAD", target: "/x"),
            .valid(
                "POST with a body", "POST /submit HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n", body: "hello",
                method: "POST", target: "/submit", framing: .contentLength(5)),
            .valid(
                "PUT", "PUT /r/1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n", body: "{}",
                method: "PUT", target: "/r/1", framing: .contentLength(2)),
            .valid(
                "PATCH", "PATCH /r/1 HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\n", body: "x",
                method: "PATCH", target: "/r/1", framing: .contentLength(1)),
            .valid("DELETE", "DELETE /r/1 HTTP/1.1\r\nHost: h\r\n\r\n", method: "DELETE", target: "/r/1"),
            .valid("TRACE", "TRACE / HTTP/1.1\r\nHost: h\r\n\r\n", method: "TRACE"),
            .valid("OPTIONS origin-form", "OPTIONS /r HTTP/1.1\r\nHost: h\r\n\r\n", method: "OPTIONS", target: "/r"),
            .valid("OPTIONS asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", method: "OPTIONS", target: "*"),
            .valid("extension method", "PURGE /cache HTTP/1.1\r\nHost: h\r\n\r\n", method: "PURGE", target: "/cache"),
            .valid("method with tchar punctuation", "M-SEARCH.v2 / HTTP/1.1\r\nHost: h\r\n\r\n", method: "M-SEARCH.v2"),
            .valid("methods are case-sensitive: get is not GET", "get / HTTP/1.1\r\nHost: h\r\n\r\n", method: "get"),
            .valid(
                "absolute-form", "GET http://example.com/a/b?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                target: "http://example.com/a/b?x=1", path: "/a/b", query: "x=1"),
            .valid(
                "absolute-form https without a path", "GET https://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n",
                target: "https://example.com", path: "/"),
            .valid(
                "absolute-form uppercase scheme, query without path", "GET HTTP://example.com?q HTTP/1.1\r\nHost: example.com\r\n\r\n",
                target: "HTTP://example.com?q", path: "/", query: "q"),
            .valid(
                "absolute-form with a port", "GET http://example.com:8080/p HTTP/1.1\r\nHost: example.com:8080\r\n\r\n",
                target: "http://example.com:8080/p", path: "/p"),
            .valid("HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", version: .http1_0, keepAlive: false),
            .valid("HTTP/1.2 is served as HTTP/1.1", "GET / HTTP/1.2\r\nHost: h\r\n\r\n"),
            .valid("one empty line before the request line", "\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"),
            .valid("four empty lines before the request line", "\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"),
            .valid("request line of exactly 8192 bytes", line8192.line + "\r\nHost: h\r\n\r\n", target: line8192.target),
            .invalid(
                "five empty lines before the request line", "\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
                "invalid_request_line", 400),
            .invalid("asterisk-form for GET", "GET * HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid("absolute-form with another scheme", "GET ftp://example.com/ HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid("absolute-form with an empty authority", "GET http:///etc/passwd HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid("absolute-form that is only a scheme", "GET http:// HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid(
                "absolute-form with an empty authority before a query", "GET https://?a HTTP/1.1\r\nHost: h\r\n\r\n",
                "invalid_target", 400),
            .invalid("absolute-form with a port but no host", "GET http://:80/ HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .valid(
                "absolute-form with an IPv6 host", "GET http://[::1]:8080/v6 HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
                target: "http://[::1]:8080/v6", path: "/v6"),
            .invalid(
                "authority-form: this server is no proxy", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
                "invalid_target", 400),
            .invalid("relative target", "GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid("query-only target", "GET ?a HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid("two spaces after the method", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_request_line", 400),
            .invalid("two spaces before the version", "GET /  HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_version", 400),
            .invalid("tab after the method", "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_request_line", 400),
            .invalid("tab before the version", "GET /\tHTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid("space inside the target", "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_version", 400),
            .invalid("space before the method", " GET / HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_method", 400),
            .invalid("space after the version", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", "invalid_version", 400),
            .invalid("lowercase http", "GET / http/1.1\r\nHost: h\r\n\r\n", "invalid_version", 400),
            .invalid("HTTP/1.10", "GET / HTTP/1.10\r\nHost: h\r\n\r\n", "invalid_version", 400),
            .invalid("HTTP/1 without minor", "GET / HTTP/1\r\nHost: h\r\n\r\n", "invalid_version", 400),
            .invalid("HTTP/11 without dot", "GET / HTTP/11\r\nHost: h\r\n\r\n", "invalid_version", 400),
            .invalid("HTTP/2.0", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", "unsupported_version", 505),
            .invalid("HTTP/0.9 version", "GET / HTTP/0.9\r\nHost: h\r\n\r\n", "unsupported_version", 505),
            .invalid("HTTP/3.0", "GET / HTTP/3.0\r\nHost: h\r\n\r\n", "unsupported_version", 505),
            .invalid("missing version", "GET /\r\nHost: h\r\n\r\n", "invalid_request_line", 400),
            .invalid("HTTP/0.9 simple request", "GET /\r\n\r\n", "invalid_request_line", 400),
            .invalid("method only", "GET\r\nHost: h\r\n\r\n", "invalid_request_line", 400),
            .invalid("missing target", "GET HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_request_line", 400),
            .invalid("empty version", "GET / \r\nHost: h\r\n\r\n", "invalid_version", 400),
            .invalid("separator in the method", "GE(T / HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_method", 400),
            .invalid("obs-text in the method", "G" + Raw([0xC9]) + "T / HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_method", 400),
            .invalid("NUL in the target", "GET /a" + Raw([0]) + "b HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid("DEL in the target", "GET /a" + Raw([0x7F]) + " HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid("obs-text in the target", "GET /caf" + Raw([0xC3, 0xA9]) + " HTTP/1.1\r\nHost: h\r\n\r\n", "invalid_target", 400),
            .invalid("leading bare LF", "\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", "bare_lf", 400),
            .invalid("request line ends in bare LF", "GET / HTTP/1.1\nHost: h\r\n\r\n", "bare_lf", 400),
            .invalid("bare CR inside the request line", "GET /\r HTTP/1.1\r\nHost: h\r\n\r\n", "bare_cr", 400),
            .invalid("request line ends in CR CR LF", "GET / HTTP/1.1\r\r\nHost: h\r\n\r\n", "bare_cr", 400),
            .invalid("request line of 8193 bytes", line8193.line + "\r\nHost: h\r\n\r\n", "request_line_too_long", 414),
            .invalid("request line that never ends", longRequestLine(20_000).line, "request_line_too_long", 414),
            .invalid(
                "over-long request line ending in bare LF", longRequestLine(9000).line + "\nHost: h\r\n\r\n",
                "request_line_too_long", 414),
            .incomplete("request line only", "GET / HTTP/1.1\r\n"),
            .incomplete("half a request line", "GET /ind"),
            .incomplete("request line of exactly 8192 bytes and its CR", line8192.line + "\r"),
        ]
    }()

    // MARK: - §5 Fields

    static let fields: [ParseCase] = {
        var hundred: Raw = get
        for i in 1...99 { hundred = hundred + "X-F\(i): \(i)\r\n" }
        let field8192 = longField(8192)
        return [
            .valid(
                "order and case of fields are kept",
                "GET / HTTP/1.1\r\nHost: h\r\nAccept: */*\r\nX-Custom: One\r\nx-custom: two\r\n\r\n",
                headers: [Field("Host", "h"), Field("Accept", "*/*"), Field("X-Custom", "One"), Field("x-custom", "two")]),
            .valid(
                "OWS around values is trimmed", "GET / HTTP/1.1\r\nHost:   h  \r\nX-A:\t v a l \t\r\n\r\n",
                headers: [Field("Host", "h"), Field("X-A", "v a l")]),
            .valid("no whitespace after the colon", "GET / HTTP/1.1\r\nHost:h\r\n\r\n", headers: [Field("Host", "h")]),
            .valid("empty value", get + "X-Empty:\r\n\r\n", headers: [Field("Host", "h"), Field("X-Empty", "")]),
            .valid("value of whitespace only", get + "X-Empty: \t \r\n\r\n", headers: [Field("Host", "h"), Field("X-Empty", "")]),
            .valid("tab inside a value", get + "X-T: a\tb\r\n\r\n", headers: [Field("Host", "h"), Field("X-T", "a\tb")]),
            .valid("colons inside a value", get + "X-Time: 12:30:45\r\n\r\n", headers: [Field("Host", "h"), Field("X-Time", "12:30:45")]),
            .valid(
                "obs-text (UTF-8) in a value", get + "X-Name: Zo" + Raw([0xC3, 0xAB]) + "\r\n\r\n",
                headers: [Field("Host", "h"), Field("X-Name", "Zoë")]),
            .valid(
                "obs-text (Latin-1 byte) in a value", get + "X-B: a" + Raw([0xE9]) + "b\r\n\r\n",
                headers: [Field("Host", "h"), Field("X-B", "a\u{FFFD}b")]),
            .valid("every tchar in a field name", get + "!#$%&'*+-.^_`|~09azAZ: x\r\n\r\n"),
            .valid("field line of exactly 8192 bytes", get + field8192 + "\r\n\r\n"),
            .valid("100 fields", hundred + "\r\n"),
            .valid("head of exactly 32 KiB", get + fill(headTotal: 32 * 1024) + "\r\n"),
            .invalid("obs-fold with a space", get + "X-A: a\r\n b\r\n\r\n", "obs_fold", 400),
            .invalid("obs-fold with a tab", get + "X-A: a\r\n\tb\r\n\r\n", "obs_fold", 400),
            .invalid("whitespace before the first field", "GET / HTTP/1.1\r\n Host: h\r\n\r\n", "obs_fold", 400),
            .invalid("space before the colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", "whitespace_before_colon", 400),
            .invalid("tab before the colon", "GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", "whitespace_before_colon", 400),
            .invalid("space inside a field name", get + "X Y: a\r\n\r\n", "whitespace_before_colon", 400),
            .invalid("empty field name", get + ": a\r\n\r\n", "invalid_field_name", 400),
            .invalid("field without a colon", get + "NoColon\r\n\r\n", "invalid_field_name", 400),
            .invalid("separator in a field name", get + "X(Y): a\r\n\r\n", "invalid_field_name", 400),
            .invalid("obs-text in a field name", get + "X" + Raw([0xC3, 0xA9]) + ": a\r\n\r\n", "invalid_field_name", 400),
            .invalid("bare CR inside a value", get + "X: a\rb\r\n\r\n", "bare_cr", 400),
            .invalid("value ends in CR CR LF", get + "X: a\r\r\n\r\n", "bare_cr", 400),
            .invalid("bare CR as the last line", get + "\r\r\n\r\n", "bare_cr", 400),
            .invalid("field ends in bare LF", "GET / HTTP/1.1\r\nHost: h\nX: a\r\n\r\n", "bare_lf", 400),
            .invalid("head ends in a bare LF line", get + "\n", "bare_lf", 400),
            .invalid("head ends in LF CR LF", "GET / HTTP/1.1\r\nHost: h\n\r\n", "bare_lf", 400),
            .invalid("NUL in a value", get + "X: a" + Raw([0]) + "b\r\n\r\n", "invalid_field_value", 400),
            .invalid("DEL in a value", get + "X: a" + Raw([0x7F]) + "b\r\n\r\n", "invalid_field_value", 400),
            .invalid("SOH in a value", get + "X: a" + Raw([1]) + "\r\n\r\n", "invalid_field_value", 400),
            .invalid("ESC in a value", get + "X: " + Raw([0x1B]) + "[31m\r\n\r\n", "invalid_field_value", 400),
            .invalid("vertical tab in a value", get + "X: a" + Raw([0x0B]) + "b\r\n\r\n", "invalid_field_value", 400),
            .invalid("form feed in a value", get + "X: a" + Raw([0x0C]) + "b\r\n\r\n", "invalid_field_value", 400),
            .invalid("field line of 8193 bytes", get + longField(8193) + "\r\n\r\n", "header_field_too_large", 431),
            .invalid("field line that never ends", get + longField(12_000), "header_field_too_large", 431),
            .invalid("over-long field line ending in bare LF", get + longField(9000) + "\n\r\n", "header_field_too_large", 431),
            .invalid("101 fields", hundred + "X-F100: 100\r\n\r\n", "too_many_headers", 431),
            .invalid("head of 32 KiB + 1", get + fill(headTotal: 32 * 1024 + 1) + "\r\n", "headers_too_large", 431),
            .invalid("head over 32 KiB that never ends", get + fill(headTotal: 40 * 1024), "headers_too_large", 431),
            // The head limit is crossed inside a field before that field is too long: 431 for the head.
            .invalid(
                "head limit crossed inside a field that is also too long",
                get + fill(headTotal: 30_000) + longField(9000) + "\r\n\r\n", "headers_too_large", 431),
            // The field is too long before the head limit is reached: 431 for the field.
            .invalid(
                "field too long before the head limit",
                get + fill(headTotal: 20_000) + longField(9000) + "\r\n\r\n", "header_field_too_large", 431),
            .incomplete("head without its final CRLF", get),
        ]
    }()

    // MARK: - §3.2 Host

    static let host: [ParseCase] = [
        .valid("Host with a port", "GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"),
        .valid("Host as an IPv4 address", "GET / HTTP/1.1\r\nHost: 192.0.2.1\r\n\r\n"),
        .valid("Host as an IPv6 literal", "GET / HTTP/1.1\r\nHost: [2001:db8::1]:443\r\n\r\n"),
        .valid("empty Host is allowed", "GET / HTTP/1.1\r\nHost:\r\n\r\n", headers: [Field("Host", "")]),
        .valid("host in any case", "GET / HTTP/1.1\r\nhOsT: h\r\n\r\n"),
        .valid("HTTP/1.0 with Host", "GET / HTTP/1.0\r\nHost: h\r\n\r\n", version: .http1_0, keepAlive: false),
        .invalid("HTTP/1.1 without Host", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", "missing_host", 400),
        .invalid("HTTP/1.1 absolute-form without Host", "GET http://example.com/ HTTP/1.1\r\n\r\n", "missing_host", 400),
        .invalid("two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", "duplicate_host", 400),
        .invalid("two different Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHOST: b\r\n\r\n", "duplicate_host", 400),
        .invalid("two Host fields in HTTP/1.0", "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", "duplicate_host", 400),
        .invalid("Host with a path", "GET / HTTP/1.1\r\nHost: example.com/evil\r\n\r\n", "invalid_host", 400),
        .invalid("Host with userinfo", "GET / HTTP/1.1\r\nHost: user@example.com\r\n\r\n", "invalid_host", 400),
        .invalid("Host with a space inside", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", "invalid_host", 400),
        .invalid("Host with a query", "GET / HTTP/1.1\r\nHost: a?b\r\n\r\n", "invalid_host", 400),
        .invalid("Host with obs-text", "GET / HTTP/1.1\r\nHost: caf" + Raw([0xC3, 0xA9]) + "\r\n\r\n", "invalid_host", 400),
        .invalid("Host list", "GET / HTTP/1.1\r\nHost: a b, c\r\n\r\n", "invalid_host", 400),
    ]

    // MARK: - §6 Content-Length

    static let contentLength: [ParseCase] = [
        .valid("Content-Length 0 means no body", post + "Content-Length: 0\r\n\r\n", method: "POST"),
        .valid("Content-Length 000 means no body", post + "Content-Length: 000\r\n\r\n", method: "POST"),
        .valid(
            "Content-Length with leading zeros", post + "Content-Length: 007\r\n\r\n", body: "1234567",
            method: "POST", framing: .contentLength(7)),
        .valid(
            "Content-Length with OWS", post + "Content-Length:  3 \t\r\n\r\n", body: "abc",
            method: "POST", framing: .contentLength(3)),
        .valid("content-length in lowercase", post + "content-length: 2\r\n\r\n", body: "ab", method: "POST", framing: .contentLength(2)),
        .valid("Content-Length on GET", get + "Content-Length: 4\r\n\r\n", body: "ping", framing: .contentLength(4)),
        .valid(
            "Content-Length in HTTP/1.0", "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\n", body: "ok",
            method: "POST", version: .http1_0, framing: .contentLength(2), keepAlive: false),
        .valid(
            "body bytes are not interpreted", post + "Content-Length: 6\r\n\r\n", body: "\r\n\r\n\0\n",
            method: "POST", framing: .contentLength(6)),
        .incomplete("body shorter than Content-Length", post + "Content-Length: 10\r\n\r\nabc", .needMoreBody),
        .incomplete("largest Content-Length (18 digits)", post + "Content-Length: 999999999999999999\r\n\r\nabc", .needMoreBody),
        .invalid(
            "duplicate Content-Length, same value", post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
            "duplicate_content_length", 400),
        .invalid(
            "duplicate Content-Length, different values", post + "Content-Length: 4\r\nContent-Length: 5\r\n\r\nhello",
            "duplicate_content_length", 400),
        .invalid("Content-Length as a list", post + "Content-Length: 5, 5\r\n\r\nhello", "invalid_content_length", 400),
        .invalid("Content-Length with a plus sign", post + "Content-Length: +5\r\n\r\nhello", "invalid_content_length", 400),
        .invalid("negative Content-Length", post + "Content-Length: -5\r\n\r\nhello", "invalid_content_length", 400),
        .invalid("space inside Content-Length", post + "Content-Length: 1 0\r\n\r\n", "invalid_content_length", 400),
        .invalid("tab inside Content-Length", post + "Content-Length: 1\t0\r\n\r\n", "invalid_content_length", 400),
        .invalid("hexadecimal Content-Length", post + "Content-Length: 0x10\r\n\r\n", "invalid_content_length", 400),
        .invalid("decimal point in Content-Length", post + "Content-Length: 5.0\r\n\r\n", "invalid_content_length", 400),
        .invalid("empty Content-Length", post + "Content-Length:\r\n\r\n", "invalid_content_length", 400),
        .invalid("Content-Length of 19 digits", post + "Content-Length: 1000000000000000000\r\n\r\n", "invalid_content_length", 400),
        .invalid("Content-Length beyond Int64", post + "Content-Length: 99999999999999999999999\r\n\r\n", "invalid_content_length", 400),
        .invalid("Content-Length with trailing junk", post + "Content-Length: 5abc\r\n\r\n", "invalid_content_length", 400),
    ]

    // MARK: - §6.1 Transfer-Encoding

    static let transferEncoding: [ParseCase] = [
        .valid(
            "chunked", post + "Transfer-Encoding: chunked\r\n\r\n", body: "5\r\nhello\r\n0\r\n\r\n", decoded: "hello",
            method: "POST", framing: .chunked),
        .valid(
            "Chunked in mixed case", post + "Transfer-Encoding: ChUnKeD\r\n\r\n", body: "0\r\n\r\n", decoded: "",
            method: "POST", framing: .chunked),
        .valid(
            "chunked after a tab", post + "Transfer-Encoding:\tchunked\r\n\r\n", body: "1\r\na\r\n0\r\n\r\n", decoded: "a",
            method: "POST", framing: .chunked),
        .valid(
            "chunked with empty list elements", post + "Transfer-Encoding: , chunked ,\r\n\r\n", body: "0\r\n\r\n", decoded: "",
            method: "POST", framing: .chunked),
        .invalid(
            "gzip, chunked is not implemented", post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            "unsupported_transfer_coding", 501),
        .invalid(
            "gzip then chunked in two fields", post + "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "unsupported_transfer_coding", 501),
        .invalid("chunked, gzip: chunked is not final", post + "Transfer-Encoding: chunked, gzip\r\n\r\n", "chunked_not_final", 400),
        .invalid("gzip alone: no chunked at all", post + "Transfer-Encoding: gzip\r\n\r\n", "chunked_not_final", 400),
        .invalid("chunked, chunked", post + "Transfer-Encoding: chunked, chunked\r\n\r\n", "chunked_not_final", 400),
        .invalid(
            "chunked twice in two fields", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            "chunked_not_final", 400),
        .invalid("empty Transfer-Encoding", post + "Transfer-Encoding:\r\n\r\n", "chunked_not_final", 400),
        .invalid("identity", post + "Transfer-Encoding: identity\r\n\r\n", "unsupported_transfer_coding", 501),
        .invalid("unknown coding", post + "Transfer-Encoding: br\r\n\r\n", "unsupported_transfer_coding", 501),
        .invalid("chunked with a parameter", post + "Transfer-Encoding: chunked;q=1\r\n\r\n", "unsupported_transfer_coding", 501),
        .invalid(
            "Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "transfer_encoding_http10", 400),
        .invalid(
            "Transfer-Encoding and Content-Length", post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
            "content_length_with_transfer_encoding", 400),
        .invalid(
            "Content-Length then Transfer-Encoding", post + "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n",
            "content_length_with_transfer_encoding", 400),
        .invalid(
            "Transfer-Encoding and Content-Length in HTTP/1.0",
            "POST / HTTP/1.0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "content_length_with_transfer_encoding", 400),
    ]

    // MARK: - §7 Chunked bodies

    static let chunked: [ParseCase] = {
        let te: Raw = post + "Transfer-Encoding: chunked\r\n\r\n"
        func ok(_ name: String, _ body: Raw, _ decoded: Raw, limits: HTTPLimits = .default) -> ParseCase {
            .valid(name, te, body: body, decoded: decoded, method: "POST", framing: .chunked, limits: limits)
        }
        func bad(_ name: String, _ body: Raw, _ code: String, _ status: Int = 400, limits: HTTPLimits = .default) -> ParseCase {
            .invalid(name, te + body, code, status, limits: limits)
        }
        let mib = 1024 * 1024
        return [
            ok("empty chunked body", "0\r\n\r\n", ""),
            ok("several chunks", "3\r\nabc\r\n4\r\ndefg\r\n1\r\nh\r\n0\r\n\r\n", "abcdefgh"),
            ok("uppercase hex size", "A\r\n0123456789\r\n0\r\n\r\n", "0123456789"),
            ok("lowercase hex size", "a\r\n0123456789\r\n0\r\n\r\n", "0123456789"),
            ok("leading zeros", "0005\r\nhello\r\n0000\r\n\r\n", "hello"),
            ok("16-digit size", "0000000000000005\r\nhello\r\n0\r\n\r\n", "hello"),
            ok("chunk data holding CRLF", "4\r\n\r\n\r\n\r\n0\r\n\r\n", "\r\n\r\n"),
            ok("extension", "5;name\r\nhello\r\n0\r\n\r\n", "hello"),
            ok("extension with a value", "5;name=value;other=1\r\nhello\r\n0;last\r\n\r\n", "hello"),
            ok("extension with a quoted string", "5;n=\"a b;c=d\"\r\nhello\r\n0\r\n\r\n", "hello"),
            ok("whitespace before the semicolon", "5 \t ;n=v\r\nhello\r\n0\r\n\r\n", "hello"),
            ok("extension of exactly 1024 bytes", "5;" + Raw("e") * 1024 + "\r\nhello\r\n0\r\n\r\n", "hello"),
            ok("one trailer", "5\r\nhello\r\n0\r\nX-Checksum: abc\r\n\r\n", "hello"),
            ok("several trailers, OWS and empty values", "1\r\nx\r\n0\r\nA: 1\r\nB:\r\nC:\t 3 \r\n\r\n", "x"),
            ok("body of exactly the limit", "6\r\nabcdef\r\n4\r\nghij\r\n0\r\n\r\n", "abcdefghij", limits: smallBody),
            ok("body of exactly 1 MiB", "100000\r\n" + Raw("z") * mib + "\r\n0\r\n\r\n", Raw("z") * mib),
            bad("17-digit size", "00000000000000005\r\nhello\r\n0\r\n\r\n", "chunk_size_overflow"),
            bad("size beyond 64 bits", "10000000000000000\r\n", "chunk_size_overflow"),
            bad("largest 64-bit size", "FFFFFFFFFFFFFFFF\r\n", "body_too_large", 413),
            bad("first chunk over 1 MiB", "100001\r\n", "body_too_large", 413),
            bad("one chunk over the limit", "B\r\n", "body_too_large", 413, limits: smallBody),
            bad("chunks adding up over the limit", "6\r\nabcdef\r\n5\r\nghijk\r\n0\r\n\r\n", "body_too_large", 413, limits: smallBody),
            bad("junk after the size", "5x\r\nhello\r\n0\r\n\r\n", "invalid_chunk_size"),
            bad("hex prefix", "0x5\r\nhello\r\n0\r\n\r\n", "invalid_chunk_size"),
            bad("negative size", "-5\r\nhello\r\n0\r\n\r\n", "invalid_chunk_size"),
            bad("empty size line", "\r\nhello\r\n0\r\n\r\n", "invalid_chunk_size"),
            bad("space before the size", " 5\r\nhello\r\n0\r\n\r\n", "invalid_chunk_size"),
            bad("space after the size, no extension", "5 \r\nhello\r\n0\r\n\r\n", "invalid_chunk_size"),
            bad("two sizes", "5 5\r\nhello\r\n0\r\n\r\n", "invalid_chunk_size"),
            bad("size line ends in bare LF", "5\nhello\r\n0\r\n\r\n", "invalid_chunk_size"),
            bad("extension ends in bare LF", "5;a\nhello\r\n0\r\n\r\n", "invalid_chunk_extension"),
            bad("bare CR after the size", "5\rhello\r\n0\r\n\r\n", "bare_cr"),
            bad("control in an extension", "5;a" + Raw([0]) + "\r\nhello\r\n0\r\n\r\n", "invalid_chunk_extension"),
            bad("extension of 1025 bytes", "5;" + Raw("e") * 1025 + "\r\nhello\r\n0\r\n\r\n", "chunk_extension_too_long"),
            bad(
                "endless whitespace before an extension", "5" + Raw(" ") * 2000 + ";a\r\nhello\r\n0\r\n\r\n",
                "chunk_extension_too_long"),
            bad("data longer than its size", "5\r\nhello!\r\n0\r\n\r\n", "invalid_chunk_terminator"),
            bad("data shorter than its size", "5\r\nhell\r\n0\r\n\r\n", "invalid_chunk_terminator"),
            bad("data ends in bare LF", "5\r\nhello\n0\r\n\r\n", "invalid_chunk_terminator"),
            bad("data ends in CR and junk", "5\r\nhello\rX0\r\n\r\n", "invalid_chunk_terminator"),
            bad("last chunk ends in bare LF", "0\n\r\n", "invalid_chunk_size"),
            bad("body ends in CR and junk", "0\r\n\rX", "bare_cr"),
            bad("body ends in bare LF", "0\r\n\n", "invalid_trailer"),
            bad("trailer ends in bare LF", "0\r\nA: 1\n\r\n", "invalid_field_value"),
            bad("trailer ends in CR and junk", "0\r\nA: 1\rB\r\n\r\n", "bare_cr"),
            bad("trailer obs-fold", "0\r\nA: 1\r\n 2\r\n\r\n", "obs_fold"),
            bad("trailer with whitespace before the colon", "0\r\nA : 1\r\n\r\n", "whitespace_before_colon"),
            bad("trailer without a colon", "0\r\nA\r\n\r\n", "invalid_trailer"),
            bad("trailer with an empty name", "0\r\n: 1\r\n\r\n", "invalid_trailer"),
            bad("trailer with a NUL", "0\r\nA: " + Raw([0]) + "\r\n\r\n", "invalid_field_value"),
            bad("101 trailers", "0\r\n" + Raw("T: v\r\n") * 101 + "\r\n", "too_many_headers", 431),
            bad("trailer line over 8 KiB", "0\r\nT: " + Raw("v") * 8190 + "\r\n\r\n", "header_field_too_large", 431),
            bad(
                "trailers over 32 KiB", "0\r\n" + Raw("T: " + String(repeating: "v", count: 8000) + "\r\n") * 5 + "\r\n",
                "headers_too_large", 431),
            .incomplete("chunked body without its last CRLF", te + "5\r\nhello\r\n0\r\n", .needMoreBody),
            .incomplete("chunked body inside a chunk", te + "5\r\nhel", .needMoreBody),
        ]
    }()

    // MARK: - §9.3 Persistence

    static let connection: [ParseCase] = [
        .valid("HTTP/1.1 keeps alive by default", get + "\r\n"),
        .valid("HTTP/1.1 Connection: close", get + "Connection: close\r\n\r\n", keepAlive: false),
        .valid("HTTP/1.1 Connection: CLOSE", get + "Connection: CLOSE\r\n\r\n", keepAlive: false),
        .valid("HTTP/1.1 close among other options", get + "Connection: upgrade, close\r\n\r\n", keepAlive: false),
        .valid("HTTP/1.1 close in a second Connection field", get + "Connection: upgrade\r\nConnection: close\r\n\r\n", keepAlive: false),
        .valid("HTTP/1.1 keep-alive and close", get + "Connection: keep-alive, close\r\n\r\n", keepAlive: false),
        .valid("HTTP/1.1 other options keep alive", get + "Connection: upgrade\r\n\r\n"),
        .valid("HTTP/1.1 close-ish token is not close", get + "Connection: closed\r\n\r\n"),
        .valid("HTTP/1.0 closes by default", "GET / HTTP/1.0\r\n\r\n", version: .http1_0, keepAlive: false),
        .valid("HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", version: .http1_0),
        .valid("HTTP/1.0 Keep-Alive in mixed case", "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", version: .http1_0),
        .valid("HTTP/1.0 keep-alive among other options", "GET / HTTP/1.0\r\nConnection: foo, keep-alive\r\n\r\n", version: .http1_0),
        .valid(
            "HTTP/1.0 keep-alive and close", "GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
            version: .http1_0, keepAlive: false),
        .valid("HTTP/1.0 Connection: close", "GET / HTTP/1.0\r\nConnection: close\r\n\r\n", version: .http1_0, keepAlive: false),
    ]

    // MARK: - RFC 9110 §10.1.1 Expect

    static let expect: [ParseCase] = [
        .valid(
            "100-continue with a Content-Length body", post + "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n", body: "hi",
            method: "POST", framing: .contentLength(2), expectContinue: true),
        .valid(
            "100-Continue in mixed case", post + "Expect: 100-Continue\r\nContent-Length: 2\r\n\r\n", body: "hi",
            method: "POST", framing: .contentLength(2), expectContinue: true),
        .valid(
            "100-continue with a chunked body", post + "Expect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n",
            body: "2\r\nhi\r\n0\r\n\r\n", decoded: "hi", method: "POST", framing: .chunked, expectContinue: true),
        .valid("100-continue without a body is ignored", get + "Expect: 100-continue\r\n\r\n"),
        .valid(
            "100-continue with Content-Length 0 is ignored", post + "Expect: 100-continue\r\nContent-Length: 0\r\n\r\n",
            method: "POST"),
        .valid(
            "100-continue in HTTP/1.0 is ignored", "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
            body: "hi", method: "POST", version: .http1_0, framing: .contentLength(2), keepAlive: false),
        .invalid("unknown expectation", get + "Expect: something\r\n\r\n", "unsupported_expectation", 417),
        .invalid(
            "100-continue among others", post + "Expect: 100-continue, x\r\nContent-Length: 2\r\n\r\nhi",
            "unsupported_expectation", 417),
        .invalid("empty expectation", get + "Expect:\r\n\r\n", "unsupported_expectation", 417),
        .invalid("102-processing", get + "Expect: 102-processing\r\n\r\n", "unsupported_expectation", 417),
    ]

    // MARK: - Request smuggling

    static let smuggling: [ParseCase] = {
        let next: Raw = "GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n"
        let cases: [ParseCase] = [
            .invalid(
                "CL.TE", post + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nX",
                "content_length_with_transfer_encoding", 400),
            .invalid(
                "TE.CL", post + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n",
                "content_length_with_transfer_encoding", 400),
            .invalid(
                "TE.TE: space before the colon", post + "Content-Length: 4\r\nTransfer-Encoding : chunked\r\n\r\n5c\r\n",
                "whitespace_before_colon", 400),
            .invalid(
                "TE.TE: xchunked", post + "Content-Length: 4\r\nTransfer-Encoding: xchunked\r\n\r\n5c\r\n",
                "unsupported_transfer_coding", 501),
            .invalid(
                "TE.TE: tab before the value", post + "Content-Length: 4\r\nTransfer-Encoding:\tchunked\r\n\r\n5c\r\n",
                "content_length_with_transfer_encoding", 400),
            .invalid(
                "TE.TE: second field with junk", post + "Transfer-Encoding: chunked\r\nTransfer-encoding: x\r\n\r\n0\r\n\r\n",
                "unsupported_transfer_coding", 501),
            .invalid(
                "TE.TE: chunked then identity", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n",
                "unsupported_transfer_coding", 501),
            .invalid(
                "TE.TE: folded value", post + "Content-Length: 4\r\nTransfer-Encoding:\r\n chunked\r\n\r\n",
                "obs_fold", 400),
            .invalid(
                "TE.TE: vertical tab", post + "Transfer-Encoding:" + Raw([0x0B]) + "chunked\r\n\r\n",
                "invalid_field_value", 400),
            .invalid(
                "TE.TE: NUL after chunked", post + "Transfer-Encoding: chunked" + Raw([0]) + "\r\n\r\n",
                "invalid_field_value", 400),
            .invalid("TE.TE: quoted chunked", post + "Transfer-Encoding: \"chunked\"\r\n\r\n", "unsupported_transfer_coding", 501),
            .invalid(
                "TE.TE: bare LF before Transfer-Encoding", post + "X: y\nTransfer-Encoding: chunked\r\n\r\n",
                "bare_lf", 400),
            .invalid(
                "TE.TE: bare CR before Transfer-Encoding", post + "X: y\rTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                "bare_cr", 400),
            .invalid("CL.CL: 4 then 5", post + "Content-Length: 4\r\nContent-Length: 5\r\n\r\n12345", "duplicate_content_length", 400),
            .invalid("CL.CL: list with different values", post + "Content-Length: 4, 5\r\n\r\n12345", "invalid_content_length", 400),
            .invalid("CL with space before the colon", post + "Content-Length : 5\r\n\r\nhello", "whitespace_before_colon", 400),
            .invalid(
                "TE in HTTP/1.0 with CL", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                "content_length_with_transfer_encoding", 400),
            // Look-alike names are other fields: Content-Length frames the body, the next request is real.
            .pipeline(
                "Transfer_Encoding is another field",
                [
                    .part(
                        post + "Content-Length: 5\r\nTransfer_Encoding: chunked\r\n\r\n", body: "0\r\n\r\n", method: "POST",
                        framing: .contentLength(5)),
                    .part(next, target: "/smuggled"),
                ]),
            .pipeline(
                "GET with an unframed body: the body is the next request",
                [
                    .part(get + "\r\n"),
                    .part(next, target: "/smuggled"),
                ]),
            .pipeline(
                "chunk data that looks like a request stays data",
                [
                    .part(
                        post + "Transfer-Encoding: chunked\r\n\r\n", body: "23\r\n" + next + "\r\n0\r\n\r\n", decoded: next,
                        method: "POST", framing: .chunked),
                    .part(next, target: "/smuggled"),
                ]),
            .pipeline(
                "trailer that looks like Content-Length is dropped",
                [
                    .part(
                        post + "Transfer-Encoding: chunked\r\n\r\n", body: "0\r\nContent-Length: 40\r\n\r\n", decoded: "",
                        method: "POST", framing: .chunked),
                    .part(next, target: "/smuggled"),
                ]),
            .pipeline(
                "quoted CRLF in a chunk extension ends the size line",
                [
                    .part(
                        post + "Transfer-Encoding: chunked\r\n\r\n", body: "2;a=\"x\r\nhi\r\n0\r\n\r\n", decoded: "hi",
                        method: "POST", framing: .chunked),
                    .part(next, target: "/smuggled"),
                ]),
            .pipeline(
                "chunked body ending early is followed by a bad request",
                [
                    .part(post + "Transfer-Encoding: chunked\r\n\r\n", body: "0\r\n\r\n", decoded: "", method: "POST", framing: .chunked)
                ], rest: "5\r\nhello\r\n0\r\n\r\n", end: .failed(code: "invalid_request_line", status: 400)),
            .pipeline(
                "bytes beyond Content-Length start the next request",
                [
                    .part(post + "Content-Length: 3\r\n\r\n", body: "abc", method: "POST", framing: .contentLength(3)),
                    .part("GET /x HTTP/1.1\r\nHost: h\r\n\r\n", target: "/x"),
                ], rest: "X", end: .needMoreHead),
        ]
        return cases
    }()

    // MARK: - Pipelining

    static let pipelining: [ParseCase] = [
        .pipeline(
            "two GETs",
            [
                .part("GET /a HTTP/1.1\r\nHost: h\r\n\r\n", target: "/a"),
                .part("GET /b HTTP/1.1\r\nHost: h\r\n\r\n", target: "/b"),
            ]),
        .pipeline(
            "fixed, chunked and no body",
            [
                .part(
                    "POST /1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n", body: "one", method: "POST", target: "/1",
                    framing: .contentLength(3)),
                .part(
                    "POST /2 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", body: "3\r\ntwo\r\n0\r\nT: x\r\n\r\n",
                    decoded: "two", method: "POST", target: "/2", framing: .chunked),
                .part("GET /3?x HTTP/1.1\r\nHost: h\r\n\r\n", target: "/3?x", path: "/3", query: "x"),
            ]),
        .pipeline(
            "HTTP/1.0 then HTTP/1.1 close",
            [
                .part("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", target: "/a", version: .http1_0),
                .part("GET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", target: "/b", keepAlive: false),
            ]),
        .pipeline(
            "empty lines between requests",
            [
                .part("GET /a HTTP/1.1\r\nHost: h\r\n\r\n", target: "/a"),
                .part("\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n", target: "/b"),
            ]),
        .pipeline(
            "second request incomplete",
            [
                .part("GET /a HTTP/1.1\r\nHost: h\r\n\r\n", target: "/a")
            ], rest: "GET /b HTTP/1.1\r\nHo", end: .needMoreHead),
        .pipeline(
            "second body incomplete",
            [
                .part("GET /a HTTP/1.1\r\nHost: h\r\n\r\n", target: "/a")
            ], rest: "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\nabc", end: .needMoreBody),
        .pipeline(
            "second request invalid",
            [
                .part("GET /a HTTP/1.1\r\nHost: h\r\n\r\n", target: "/a")
            ], rest: "GET /b HTTP/1.1\r\n\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n", end: .failed(code: "missing_host", status: 400)),
        .pipeline(
            "third request after a chunked one fails in its body",
            [
                .part("GET /a HTTP/1.1\r\nHost: h\r\n\r\n", target: "/a"),
                .part(post + "Transfer-Encoding: chunked\r\n\r\n", body: "1\r\nx\r\n0\r\n\r\n", decoded: "x", method: "POST", framing: .chunked),
            ], rest: post + "Transfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n", end: .failed(code: "invalid_chunk_terminator", status: 400)),
    ]
}
