import HTTP
import TestSupport
import Testing

@Suite(.testThreads) struct MultipartFormDataTests {
    static let curlBoundary = "------------------------d74496d66958873e"
    static let pngBytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52]

    /// A body as a client writes it: each part is its header lines (CRLF-terminated) and its content.
    func body(_ boundary: String, _ parts: [(head: String, content: Raw)], preamble: Raw = "", epilogue: Raw = "\r\n") -> [UInt8] {
        var out: Raw = preamble.count > 0 ? preamble + "\r\n" : ""
        for part in parts {
            out = out + "--\(boundary)\r\n" + Raw(part.head) + "\r\n" + part.content + "\r\n"
        }
        return (out + "--\(boundary)--" + epilogue).bytes
    }

    func filePart(_ bytes: [UInt8], _ boundary: String, limits: MultipartFormData.Limits = .default)
        -> Result<MultipartFormData.FilePart, MultipartError>
    {
        Result { () throws(MultipartError) in try MultipartFormData.filePart(in: bytes, boundary: boundary, limits: limits) }
    }

    /// The file's bytes, or the error.
    func content(_ bytes: [UInt8], _ boundary: String, limits: MultipartFormData.Limits = .default) -> Result<[UInt8], MultipartError> {
        filePart(bytes, boundary, limits: limits).map { Array(bytes[$0.range]) }
    }

    func fileHead(name: String = "file", filename: String = "x.png", type: String? = "image/png") -> String {
        "Content-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\n" + (type.map { "Content-Type: \($0)\r\n" } ?? "")
    }

    // MARK: - The boundary parameter

    @Test func boundaryFromContentType() {
        let cases: [(String, String?)] = [
            ("multipart/form-data; boundary=\(Self.curlBoundary)", Self.curlBoundary),
            ("multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW", "----WebKitFormBoundary7MA4YWxkTrZu0gW"),
            ("Multipart/Form-Data; BOUNDARY=abc", "abc"),
            ("multipart/form-data;boundary=abc", "abc"),
            ("  multipart/form-data ;\tboundary=abc ; charset=utf-8", "abc"),
            ("multipart/form-data; charset=utf-8; boundary=abc;", "abc"),
            ("multipart/form-data; boundary=\"abc\"", "abc"),
            ("multipart/form-data; boundary=\"a b:c/d?e=f(g)h,i'j+k\"", "a b:c/d?e=f(g)h,i'j+k"),
            ("multipart/form-data; boundary=\"a\\bc\"", "abc"),
            ("multipart/form-data; boundary=\(String(repeating: "b", count: 70))", String(repeating: "b", count: 70)),
            ("multipart/form-data; title=\"x;boundary=no\"; boundary=yes", "yes"),
            // Refused: another type, no or several boundaries, bad lengths or characters, broken syntax.
            ("multipart/mixed; boundary=abc", nil),
            ("multipart/form-datax; boundary=abc", nil),
            ("text/plain; boundary=abc", nil),
            ("multipart/form-data", nil),
            ("multipart/form-data; charset=utf-8", nil),
            ("multipart/form-data; boundary=abc; boundary=abc", nil),
            ("multipart/form-data; boundary=", nil),
            ("multipart/form-data; boundary=\"\"", nil),
            ("multipart/form-data; boundary=\(String(repeating: "b", count: 71))", nil),
            ("multipart/form-data; boundary=\"abc \"", nil),
            ("multipart/form-data; boundary=\"a@b\"", nil),
            ("multipart/form-data; boundary=a*b", nil),
            ("multipart/form-data; boundary=abc@", nil),
            ("multipart/form-data; boundary=\"abc", nil),
            ("multipart/form-data; boundary = abc", nil),
            ("multipart/form-data boundary=abc", nil),
            ("multipart/form-data; =abc", nil),
            ("", nil),
        ]
        for (contentType, expected) in cases {
            #expect(MultipartFormData.boundary(fromContentType: contentType) == expected, "\(contentType)")
        }
    }

    // MARK: - Bodies as clients send them

    @Test func curlFileUpload() throws {
        // curl -F 'file=@x.png;type=image/png'
        let bytes = body(Self.curlBoundary, [(fileHead(), Raw(Self.pngBytes))])
        let part = try MultipartFormData.filePart(in: bytes, boundary: Self.curlBoundary)
        let start = "--\(Self.curlBoundary)\r\n\(fileHead())\r\n".utf8.count
        #expect(
            part
                == MultipartFormData.FilePart(
                    name: "file", filename: "x.png", contentType: "image/png",
                    range: start..<(start + Self.pngBytes.count)))
        #expect(Array(bytes[part.range]) == Self.pngBytes)
    }

    @Test func browserFormWithFieldsAndAFile() throws {
        let boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW"
        let bytes = body(
            boundary,
            [
                ("Content-Disposition: form-data; name=\"title\"\r\n", "Holiday"),
                (
                    "Content-Disposition: form-data; name=\"image\"; filename=\"photo.jpg\"\r\nContent-Type: image/jpeg\r\n",
                    Raw([0xFF, 0xD8, 0xFF, 0xE0]) + "\r\n\r\n--" + Raw([0xFF, 0xD9])
                ),
                ("Content-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n", "{\"a\":1}"),
            ])
        let part = try MultipartFormData.filePart(in: bytes, boundary: boundary)
        #expect(part.name == "image")
        #expect(part.filename == "photo.jpg")
        #expect(part.contentType == "image/jpeg")
        #expect(Array(bytes[part.range]) == [0xFF, 0xD8, 0xFF, 0xE0] + Array("\r\n\r\n--".utf8) + [0xFF, 0xD9])
    }

    @Test func libraryStylesOfPartHeaders() throws {
        // OkHttp adds Content-Length; Go's writer sends application/octet-stream; some send no type at all.
        let heads = [
            "Content-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\nContent-Length: 5\r\nContent-Type: image/png\r\n",
            "Content-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\nContent-Type: application/octet-stream\r\n",
            "content-disposition: FORM-DATA; NAME=file; FILENAME=a.png\r\ncontent-type:image/png\r\n",
            "CONTENT-DISPOSITION:form-data;name=\"file\";filename=\"a.png\"\r\nX-Extra: ignored\r\n",
            "Content-Disposition: form-data ; name = \"file\" ; filename = a.png ;\r\n",
        ]
        for head in heads {
            let bytes = body("b", [(head, "hello")])
            #expect(content(bytes, "b") == .success(Array("hello".utf8)), "\(head.debugDescription)")
        }
        let parsed = try MultipartFormData.filePart(in: body("b", [(heads[2], "x")]), boundary: "b")
        #expect(parsed.name == "file")
        #expect(parsed.filename == "a.png")
        #expect(parsed.contentType == "image/png")
        // A part with no Content-Type is parsed (a failure throws here) and has none.
        let untyped = try MultipartFormData.filePart(in: body("b", [(heads[3], "x")]), boundary: "b")
        #expect(untyped.name == "file")
        #expect(untyped.contentType == nil)
    }

    @Test func filenames() throws {
        func filename(_ parameters: String) throws -> String? {
            let head = "Content-Disposition: form-data; name=\"f\"; \(parameters)\r\n"
            return try MultipartFormData.filePart(in: body("b", [(head, "x")]), boundary: "b").filename
        }
        #expect(try filename("filename=\"a\\\"b.png\"") == "a\"b.png")
        #expect(try filename("filename=\"a%22b.png\"") == "a%22b.png")  // browsers' escapes are kept as sent
        #expect(try filename("filename=\"na\u{EF}ve.png\"") == "na\u{EF}ve.png")  // raw UTF-8, as browsers send it
        #expect(try filename("filename=\"\"; filename*=UTF-8''na%C3%AFve.png") == "")
        #expect(try filename("filename*=UTF-8''na%C3%AFve.png") == "na\u{EF}ve.png")
        #expect(try filename("filename*=utf-8'en'x.png") == nil)  // a language tag is not `UTF-8''`
        #expect(try filename("filename*=ISO-8859-1''x.png") == nil)
        #expect(try filename("filename*=UTF-8''bad%2") == nil)
        #expect(try filename("filename=\"C:\\\\Users\\\\x.png\"") == "C:\\Users\\x.png")
    }

    @Test func quotedBoundaryAndPunctuation() throws {
        let contentType = "multipart/form-data; boundary=\"=_part 1:2?(x)\""
        let boundary = try #require(MultipartFormData.boundary(fromContentType: contentType))
        #expect(boundary == "=_part 1:2?(x)")
        #expect(content(body(boundary, [(fileHead(), "data")]), boundary) == .success(Array("data".utf8)))
    }

    @Test func preambleAndEpilogue() {
        let bytes = body(
            "b", [(fileHead(), "data")], preamble: "A preamble. --b is not at a line start\r\n--bX is not the boundary",
            epilogue: "\r\nThis is the epilogue. --b\r\n\r\n--b\r\nContent-Disposition: garbage\r\n")
        #expect(content(bytes, "b") == .success(Array("data".utf8)))
        // A preamble that is only CRLF, and a body opening with the delimiter after it.
        #expect(content(Array("\r\n--b\r\n".utf8) + Array(fileHead().utf8) + Array("\r\nx\r\n--b--".utf8), "b") == .success([UInt8(ascii: "x")]))
    }

    @Test func contentLooksLikeDelimiters() {
        let tricky: [Raw] = [
            "\r\n", "\r\n\r\n", "--", "a--b", "a--b--", "a--b\r\n\r\n", "\r\n-", "\r\n--", "\r\n--\r\n", "a\r\n--bX\r\nb",
            "\r\n--bb--", "\r\n--b_", "\r\r\n--c", "\r\n\r\n--", "x\r", "\r", "\n--b\r\n", "\r\n--B--", "--bX",
            Raw([0, 0xFF, 13, 10, 45, 45, 98, 0x7A]),
        ]
        for data in tricky {
            let bytes = body("b", [(fileHead(), data)])
            #expect(content(bytes, "b") == .success(data.bytes), "\(String(decoding: data.bytes, as: UTF8.self).debugDescription)")
        }
        // A longer boundary that the content almost repeats.
        let boundary = "----abcdefgh"
        let data: Raw = "\r\n----abcdefg\r\n----abcdefgH\r\n---abcdefgh\r\n----abcdefghi--" + Raw(Self.pngBytes)
        #expect(content(body(boundary, [(fileHead(), data)]), boundary) == .success(data.bytes))
        // The CRLF ending a header section may be a delimiter's own (RFC 2046 `body-part`), so
        // content cannot start with the boundary: that is an empty part followed by a broken one.
        #expect(content(body("b", [(fileHead(), "--b\r\n")]), "b") == .failure(.malformed))
        #expect(content(body("b", [(fileHead(), "--b--")]), "b") == .success([]))
    }

    @Test func transportPaddingAndEmptyParts() {
        let padded =
            Array("--b \t \r\n".utf8) + Array(fileHead().utf8) + Array("\r\nabc\r\n--b\t\r\n".utf8)
            + Array("Content-Disposition: form-data; name=\"t\"\r\n\r\n\r\n--b-- \r\n".utf8)
        #expect(content(padded, "b") == .success(Array("abc".utf8)))
        // Empty content, with and without the CRLF that may follow the header section.
        #expect(content(body("b", [(fileHead(), "")]), "b") == .success([]))
        #expect(content(Array("--b\r\n\(fileHead())\r\n--b--".utf8), "b") == .success([]))
        // A file part with an empty content and an empty file name is a browser's empty file input: skipped.
        let emptyInput = fileHead(name: "other", filename: "", type: "application/octet-stream")
        #expect(content(body("b", [(emptyInput, ""), (fileHead(), "abc")]), "b") == .success(Array("abc".utf8)))
        #expect(content(body("b", [(emptyInput, "")]), "b") == .failure(.noFilePart))
        // With content, a nameless file is still a file.
        #expect(content(body("b", [(emptyInput, "abc")]), "b") == .success(Array("abc".utf8)))
    }

    // MARK: - Refusals

    @Test func noFilePart() {
        let fields = body(
            "b",
            [
                ("Content-Disposition: form-data; name=\"a\"\r\n", "1"),
                ("Content-Disposition: form-data; name=\"image\"\r\nContent-Type: image/png\r\n", Raw(Self.pngBytes)),
            ])
        #expect(content(fields, "b") == .failure(.noFilePart))
        #expect(content(Array("--b--\r\n".utf8), "b") == .failure(.noFilePart))
    }

    @Test func multipleFileParts() {
        let two = body("b", [(fileHead(name: "a"), "1"), ("Content-Disposition: form-data; name=\"t\"\r\n", "x"), (fileHead(name: "b"), "2")])
        #expect(content(two, "b") == .failure(.multipleFileParts))
        let extended = body("b", [(fileHead(name: "a"), "1"), ("Content-Disposition: form-data; name=\"c\"; filename*=UTF-8''y\r\n", "2")])
        #expect(content(extended, "b") == .failure(.multipleFileParts))
    }

    @Test func missingOrBrokenDelimiters() {
        let good = body("b", [(fileHead(), "data")])
        let cases: [[UInt8]] = [
            [],
            Array("no delimiter at all".utf8),
            Array(good.dropLast(4)),  // "--b" without "--" and no more
            Array("--b\r\n\(fileHead())\r\ndata".utf8),  // no delimiter after the content
            Array("--b\r\n\(fileHead())\r\ndata\r\n--b".utf8),  // ends after the boundary
            Array("--b\r\n\(fileHead())\r\ndata\r\n--b-".utf8),  // one dash of the close
            Array("--b\r\n\(fileHead())\r\ndata\r\n--b-x".utf8),
            Array("--b \r\n\(fileHead())\r\ndata\r\n--b  x\r\n--b--".utf8),  // padding then junk
            Array("--b\n\(fileHead())\r\ndata\r\n--b--".utf8),  // bare LF after the boundary
            Array("--b\r\n\(fileHead())\r\ndata\r\n--b\n--b--".utf8),
            Array("--b\r\n\(fileHead())\r\ndata\n--b--".utf8),  // bare LF before the close: no delimiter
            Array("--b\r\n\(fileHead())\r\ndata\r\n--b\r\n".utf8),  // a part that never starts
        ]
        for bytes in cases {
            #expect(content(bytes, "b") == .failure(.malformed), "\(String(decoding: bytes, as: UTF8.self).debugDescription)")
        }
    }

    @Test func everyTruncationBeforeTheCloseIsMalformed() {
        let bytes = body(Self.curlBoundary, [("Content-Disposition: form-data; name=\"t\"\r\n", "v"), (fileHead(), Raw(Self.pngBytes))])
        let closeEnd = bytes.count - 2  // before the epilogue's CRLF
        for cut in 0..<closeEnd {
            let result = content(Array(bytes[0..<cut]), Self.curlBoundary)
            #expect(result == .failure(.malformed), "cut at \(cut)")
        }
        for cut in closeEnd...bytes.count {
            #expect(content(Array(bytes[0..<cut]), Self.curlBoundary) == .success(Self.pngBytes))
        }
    }

    @Test func malformedPartHeaders() {
        let heads = [
            "",  // no Content-Disposition
            "Content-Type: image/png\r\n",
            "Content-Disposition: attachment; name=\"f\"; filename=\"x\"\r\n",
            "Content-Disposition: form-data; filename=\"x\"\r\n",  // no name
            "Content-Disposition: form-data; name=\"f\"; name=\"g\"; filename=\"x\"\r\n",
            "Content-Disposition: form-data; name=\"f\"; filename=\"x\"; filename=\"y\"\r\n",
            "Content-Disposition: form-data; name=\"f\"; filename=\"x\"\r\nContent-Disposition: form-data; name=\"g\"\r\n",
            "Content-Disposition: form-data; name=\"f\"; filename=\"x\"\r\nContent-Type: a\r\nContent-Type: b\r\n",
            "Content-Disposition: form-data; name=\"f\"; filename=\"x\r\n",  // unterminated quote
            "Content-Disposition: form-data; name=\"f\" filename=\"x\"\r\n",  // no ";"
            "Content-Disposition: form-data; name\r\n",
            "Content-Disposition: form-data; =\"f\"\r\n",
            "Content-Disposition: form-data; name=\r\n",
            "Content-Disposition form-data; name=\"f\"; filename=\"x\"\r\n",  // no colon
            "Content-Disposition : form-data; name=\"f\"; filename=\"x\"\r\n",  // space before the colon
            "Content-Disposition: form-data; name=\"f\";\r\n filename=\"x\"\r\n",  // obs-fold
            "Content-Disposition: form-data; name=\"f\"; filename=\"x\"\nContent-Type: a\r\n",
            "Content-Disposition: form-data; name=\"f\"; filename=\"x\"\rContent-Type: a\r\n",
            "Content-Disposition: form-data; name=\"f\"; filename=\"x\u{0}\"\r\n",
            "Content-Disposition: form-data; name=\"f\"; filename=\"x\u{7F}\"\r\n",
            "Content-Disposition: form-data; name=\"f\"; filename=\"x\"\r\nX-Bad\u{1}: 1\r\n",
        ]
        for head in heads {
            #expect(content(body("b", [(head, "x")]), "b") == .failure(.malformed), "\(head.debugDescription)")
        }
        // A field part is held to the same rules as the file part.
        let badField = body("b", [(fileHead(), "x"), ("Content-Disposition: form-data\r\n", "y")])
        #expect(content(badField, "b") == .failure(.malformed))
    }

    @Test func partHeadLimit() {
        var limits = MultipartFormData.Limits()
        limits.maxPartHeadBytes = 100
        let head = fileHead()  // its section is head + the empty line
        let padding = limits.maxPartHeadBytes - (head.utf8.count + 2) - "X: \r\n".utf8.count
        let fits = head + "X: " + String(repeating: "a", count: padding) + "\r\n"
        #expect(content(body("b", [(fits, "x")]), "b", limits: limits) == .success([UInt8(ascii: "x")]))
        let over = head + "X: " + String(repeating: "a", count: padding + 1) + "\r\n"
        #expect(content(body("b", [(over, "x")]), "b", limits: limits) == .failure(.partHeadTooLarge))
        // The default: 8 KiB, for fields as well as the file.
        let huge = "Content-Disposition: form-data; name=\"t\"\r\nX-Huge: " + String(repeating: "h", count: 9000) + "\r\n"
        #expect(content(body("b", [(fileHead(), "x"), (huge, "y")]), "b") == .failure(.partHeadTooLarge))
        // A head cut short by the end of the body is malformed, not too large.
        #expect(content(Array("--b\r\nContent-Disposition: form-data".utf8), "b", limits: limits) == .failure(.malformed))
    }

    @Test func partCountLimit() {
        let field = ("Content-Disposition: form-data; name=\"t\"\r\n", Raw("v"))
        let sixteen = body("b", [(fileHead(), Raw("x"))] + Array(repeating: field, count: 15))
        #expect(content(sixteen, "b") == .success([UInt8(ascii: "x")]))
        let seventeen = body("b", [(fileHead(), Raw("x"))] + Array(repeating: field, count: 16))
        #expect(content(seventeen, "b") == .failure(.tooManyParts))
    }

    @Test func invalidBoundaryArgument() {
        let bytes = body("b", [(fileHead(), "x")])
        for boundary in ["", String(repeating: "b", count: 71), "b ", "b\r\n", "b\"", "b\u{E9}"] {
            #expect(content(bytes, boundary) == .failure(.invalidBoundary), "\(boundary.debugDescription)")
        }
        let long = String(repeating: "b", count: 70)
        #expect(content(body(long, [(fileHead(), "x")]), long) == .success([UInt8(ascii: "x")]))
    }

    // MARK: - Robustness

    @Test func rawBufferAndArrayAgree() throws {
        let bytes = body("b", [(fileHead(), Raw(Self.pngBytes))], preamble: "pre")
        let fromArray = try MultipartFormData.filePart(in: bytes, boundary: "b")
        let fromRaw = try bytes.withUnsafeBytes { raw in
            try Result { () throws(MultipartError) in try MultipartFormData.filePart(in: raw, boundary: "b") }.get()
        }
        #expect(fromArray == fromRaw)
    }

    /// Megabytes of near-delimiters: the scan must stay linear (a quadratic one would not finish).
    @Test func largeAdversarialContent() throws {
        let boundary = "------------------------d74496d66958873e"
        let nearMiss = Raw("\r\n--" + boundary.dropLast() + "X")
        let data = nearMiss * ((2 << 20) / nearMiss.count) + Raw([UInt8](repeating: 0x0D, count: 1 << 20))
        let bytes = body(boundary, [(fileHead(), data)])
        let result = filePart(bytes, boundary)
        #expect(try result.get().range.count == data.count)
    }

    /// Random and mutated bodies never crash, and any file part found lies inside the body, before a delimiter.
    @Test func randomInputsNeverCrash() {
        var rng = SplitMix64(seed: 0x0F0B_0DA7A)
        let boundary = "xyz"
        let valid = body(
            boundary,
            [
                ("Content-Disposition: form-data; name=\"t\"\r\n", "v"),
                (fileHead(), Raw(Self.pngBytes) + "\r\n--xy\r\n"),
            ], preamble: "p")
        let pieces: [[UInt8]] = [
            "\r\n", "--", "--xyz", "\r\n--xyz", "\r\n--xyz--", "\r\n\r\n", ";", "\"", "=", ":", " ", "\\",
            "filename=", "Content-Disposition: form-data; name=a", "\r", "\n",
        ].map { Array($0.utf8) }
        func check(_ bytes: [UInt8]) {
            var custom = MultipartFormData.Limits()
            custom.maxParts = Int(rng.next() % 4) + 1
            custom.maxPartHeadBytes = Int(rng.next() % 200) + 1
            for limits in [MultipartFormData.Limits.default, custom] {
                guard case .success(let part) = filePart(bytes, boundary, limits: limits) else { continue }
                #expect(part.range.lowerBound >= 0 && part.range.upperBound <= bytes.count)
                let after = Array(bytes[part.range.upperBound...].prefix(7))
                #expect(after == Array("\r\n--xyz".utf8), "\(bytes)")
            }
        }
        for _ in 0..<1500 {
            let count = Int(rng.next() % 300)
            check((0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
        for _ in 0..<1500 {
            var bytes = valid
            for _ in 0..<(1 + rng.next() % 4) {
                let at = Int(rng.next() % UInt64(bytes.count + 1))
                switch rng.next() % 4 {
                case 0: if at < bytes.count { bytes[at] = UInt8(truncatingIfNeeded: rng.next()) }
                case 1: if at < bytes.count { bytes.remove(at: at) }
                case 2: bytes.insert(contentsOf: pieces[Int(rng.next() % UInt64(pieces.count))], at: at)
                default: bytes = Array(bytes[0..<at])
                }
                if bytes.isEmpty { break }
            }
            check(bytes)
        }
        for cut in 0...valid.count {
            check(Array(valid[0..<cut]))
            check(Array(valid[cut...]))
        }
    }
}
