import HTTP
import TestSupport
import Testing

/// The codes are a stable contract with clients and logs: changing one is a breaking change.
@Suite(.testThreads) struct HTTPParseErrorTests {
    @Test func stableCodesAndStatuses() {
        let expected: [(HTTPParseError, String, Int)] = [
            (.invalidRequestLine, "invalid_request_line", 400), (.invalidMethod, "invalid_method", 400),
            (.invalidTarget, "invalid_target", 400), (.invalidVersion, "invalid_version", 400),
            (.unsupportedVersion, "unsupported_version", 505), (.requestLineTooLong, "request_line_too_long", 414),
            (.fieldTooLarge, "header_field_too_large", 431), (.headersTooLarge, "headers_too_large", 431),
            (.tooManyHeaders, "too_many_headers", 431), (.bareLF, "bare_lf", 400), (.bareCR, "bare_cr", 400),
            (.obsFold, "obs_fold", 400), (.whitespaceBeforeColon, "whitespace_before_colon", 400),
            (.invalidFieldName, "invalid_field_name", 400), (.invalidFieldValue, "invalid_field_value", 400),
            (.missingHost, "missing_host", 400), (.duplicateHost, "duplicate_host", 400), (.invalidHost, "invalid_host", 400),
            (.duplicateContentLength, "duplicate_content_length", 400), (.invalidContentLength, "invalid_content_length", 400),
            (.contentLengthWithTransferEncoding, "content_length_with_transfer_encoding", 400),
            (.chunkedNotFinal, "chunked_not_final", 400), (.transferEncodingInHTTP10, "transfer_encoding_http10", 400),
            (.unsupportedTransferCoding, "unsupported_transfer_coding", 501),
            (.unsupportedExpectation, "unsupported_expectation", 417), (.bodyTooLarge, "body_too_large", 413),
            (.invalidChunkSize, "invalid_chunk_size", 400), (.chunkSizeOverflow, "chunk_size_overflow", 400),
            (.invalidChunkExtension, "invalid_chunk_extension", 400), (.chunkExtensionTooLong, "chunk_extension_too_long", 400),
            (.invalidChunkTerminator, "invalid_chunk_terminator", 400), (.invalidTrailer, "invalid_trailer", 400),
        ]
        for (error, code, status) in expected {
            #expect(error.code.rawValue == code)
            #expect(error.status.code == status)
            #expect(!error.detail.isEmpty)
            #expect(error.description == "\(status) \(code): \(error.detail)")
        }
        #expect(Set(expected.map(\.1)).count == expected.count, "codes must be distinct")
    }
}
