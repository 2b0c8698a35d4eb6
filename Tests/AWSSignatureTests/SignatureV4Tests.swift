import AWSSignature
import Cryptography
import TestSupport
import Testing

/// The signer against the published examples: AWS's Signature Version 4 test suite (credential
/// `AKIDEXAMPLE`, 2015-08-30T12:36:00Z, service `service`) and the S3 documentation's
/// "Signature Calculations for the Authorization Header" (`AKIAIOSFODNN7EXAMPLE`, 2013-05-24).
@Suite(.testThreads) struct SignatureV4Tests {
    static let suiteDate = AMZDate(secondsSinceEpoch: 1_440_938_160)
    static let suite = SignatureV4(
        credentials: AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"), region: "us-east-1",
        service: "service")
    static let s3Date = AMZDate(secondsSinceEpoch: 1_369_353_600)
    static let s3 = SignatureV4(
        credentials: AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1")
    static let s3Host = ("host", "examplebucket.s3.amazonaws.com")

    /// The test suite's request (`Host: example.amazonaws.com`), signed: the `authorization` field.
    static func suiteAuthorization(
        _ method: String, _ path: String = "/", query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = [],
        body: String = ""
    ) -> String? {
        let request = SignatureV4.Request(
            method: method, path: path, query: query, headers: [("Host", "example.amazonaws.com")] + headers, payload: .hashing(Array(body.utf8)))
        return suite.sign(request, date: suiteDate).first { $0.name == "authorization" }?.value
    }

    static func suiteExpectation(_ signedHeaders: String, _ signature: String) -> String {
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=\(signedHeaders), Signature=\(signature)"
    }

    @Test func theDates() {
        #expect(Self.suiteDate.timestamp == "20150830T123600Z")
        #expect(Self.suiteDate.dateStamp == "20150830")
        #expect(Self.s3Date.timestamp == "20130524T000000Z")
        #expect(AMZDate(secondsSinceEpoch: 951_868_799).timestamp == "20000229T235959Z")
    }

    @Test func getVanilla() {
        let request = SignatureV4.Request(
            method: "GET", path: "/", headers: [("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z")], payload: .empty)
        #expect(
            SignatureV4.canonicalRequest(request)
                == "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
                + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            Self.suite.stringToSign(canonicalRequest: SignatureV4.canonicalRequest(request), date: Self.suiteDate)
                == "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
                + "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63")
        #expect(
            Self.suiteAuthorization("GET")
                == Self.suiteExpectation("host;x-amz-date", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"))
    }

    @Test func getVanillaQueryOrderKeyCase() {
        #expect(
            Self.suiteAuthorization("GET", query: [("Param2", "value2"), ("Param1", "value1")])
                == Self.suiteExpectation("host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"))
    }

    @Test func getUnreserved() {
        #expect(
            Self.suiteAuthorization("GET", URIEncoding.encodePath("/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
                == Self.suiteExpectation("host;x-amz-date", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"))
    }

    @Test func postVanilla() {
        #expect(
            Self.suiteAuthorization("POST")
                == Self.suiteExpectation("host;x-amz-date", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"))
    }

    @Test func postHeaderKeySort() {
        #expect(
            Self.suiteAuthorization("POST", headers: [("My-Header1", "value1")])
                == Self.suiteExpectation("host;my-header1;x-amz-date", "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"))
    }

    @Test func postXWWWFormURLEncoded() {
        let request = SignatureV4.Request(
            method: "POST", path: "/",
            headers: [
                ("Content-Type", "application/x-www-form-urlencoded"), ("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z"),
            ], payload: .hashing(Array("Param1=value1".utf8)))
        #expect(
            SHA256.hexDigest(Array(SignatureV4.canonicalRequest(request).utf8))
                == "42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281")
        #expect(
            Self.suiteAuthorization("POST", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "Param1=value1")
                == Self.suiteExpectation("content-type;host;x-amz-date", "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"))
    }

    /// The derived key of the IAM example in AWS's "Examples of how to derive a signing key".
    @Test func theSigningKeyOfADay() {
        var iam = Self.suite
        iam.service = "iam"
        #expect(Hex.encode(iam.signingKey(Self.suiteDate)) == "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9")
    }

    @Test func headerValuesAreTrimmedAndRepeatedFieldsJoined() {
        let (block, signed) = SignatureV4.canonicalHeaders([("My-Header1", "  a   b  c "), ("host", "h"), ("my-header1", "d")])
        #expect(block == "host:h\nmy-header1:a b c,d\n")
        #expect(signed == "host;my-header1")
    }

    // MARK: - The S3 documentation

    @Test func s3GetObjectWithARange() {
        let request = SignatureV4.Request(method: "GET", path: "/test.txt", headers: [Self.s3Host, ("Range", "bytes=0-9")], payload: .empty)
        let headers = Self.s3.sign(request, date: Self.s3Date)
        #expect(headers.first { $0.name == "x-amz-content-sha256" }?.value == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var signed = request
        signed.headers = headers.filter { $0.name != "authorization" }
        #expect(
            SHA256.hexDigest(Array(SignatureV4.canonicalRequest(signed).utf8)) == "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972")
        #expect(
            headers.last?.value
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func s3PutObject() {
        let body = Array("Welcome to Amazon S3.".utf8)
        #expect(SignatureV4.Payload.hashing(body) == .sha256("44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"))
        #expect(URIEncoding.encodePath("/test$file.text") == "/test%24file.text")
        let request = SignatureV4.Request(
            method: "PUT", path: URIEncoding.encodePath("/test$file.text"),
            headers: [Self.s3Host, ("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
            payload: .hashing(body))
        #expect(
            Self.s3.sign(request, date: Self.s3Date).last?.value
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
                + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func s3GetBucketLifecycleAndListObjects() {
        let lifecycle = SignatureV4.Request(method: "GET", path: "/", query: [("lifecycle", "")], headers: [Self.s3Host], payload: .empty)
        #expect(lifecycle.target == "/?lifecycle=")
        #expect(
            Self.s3.sign(lifecycle, date: Self.s3Date).last?.value.hasSuffix(
                "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") == true)
        let list = SignatureV4.Request(
            method: "GET", path: "/", query: [("prefix", "J"), ("max-keys", "2")], headers: [Self.s3Host], payload: .empty)
        #expect(list.target == "/?max-keys=2&prefix=J")
        #expect(
            Self.s3.sign(list, date: Self.s3Date).last?.value.hasSuffix(
                "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }

    /// "Authenticating Requests: Using Query Parameters": GET test.txt for 86,400 seconds.
    @Test func s3PresignedGet() {
        let request = SignatureV4.Request(method: "GET", path: "/test.txt", headers: [Self.s3Host], payload: .unsigned)
        #expect(
            "https://examplebucket.s3.amazonaws.com" + Self.s3.presignedTarget(request, date: Self.s3Date, expires: 86_400)
                == "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
                + "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
                + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
    }

    @Test func encodingKeepsOnlyTheUnreservedCharacters() {
        #expect(URIEncoding.encode("a b+c/é~") == "a%20b%2Bc%2F%C3%A9~")
        #expect(URIEncoding.encodePath("/images/a b/é.jpg") == "/images/a%20b/%C3%A9.jpg")
    }

    @Test func theSecretIsNeverDescribed() {
        let credentials = AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
        #expect(!"\(credentials)".contains("wJalr"))
        #expect(!String(reflecting: credentials).contains("wJalr"))
        #expect(AWSCredentials(environment: ["AWS_ACCESS_KEY_ID": "a"]) == nil)
        #expect(AWSCredentials(environment: ["AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"])?.secretAccessKey == "b")
    }
}
