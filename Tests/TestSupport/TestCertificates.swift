import Files

/// A throwaway CA and two server certificates it signed, made once per test run with the
/// `openssl` command: one for localhost and 127.0.0.1, one for another name.
public struct TestCertificates: Sendable {
    public let directory: String

    /// The CA to trust (`SMTPConfiguration.caFile`).
    public var caFile: String { directory + "/ca.pem" }
    /// For DNS:localhost and IP:127.0.0.1.
    public var server: (certificate: String, key: String) { (directory + "/server.pem", directory + "/server.key") }
    /// For DNS:mail.example.org only.
    public var otherName: (certificate: String, key: String) { (directory + "/other.pem", directory + "/other.key") }

    public static func shared() throws -> TestCertificates { try made.get() }

    private static let made = Result { try TestCertificates.make() }

    private static func make() throws -> TestCertificates {
        let directory = try FileSystem.createTemporaryDirectory(prefix: "mail-certificates")
        let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try run(
            "/usr/bin/openssl",
            ["req", "-x509", "-new"] + ecKey + [
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Exosphere Test CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: directory)
        for (name, alternativeNames) in [("server", "DNS:localhost,IP:127.0.0.1"), ("other", "DNS:mail.example.org")] {
            try run(
                "/usr/bin/openssl", ["req", "-new"] + ecKey + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)"], in: directory
            )
            let extensions = "subjectAltName=\(alternativeNames)\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            try Array(extensions.utf8).withUnsafeBytes { try FileSystem.writeNewFile("\(directory)/\(name).ext", $0, sync: false) }
            try run(
                "/usr/bin/openssl",
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-CAserial", "ca.srl",
                    "-days", "2", "-out", "\(name).pem", "-extfile", "\(name).ext",
                ], in: directory)
        }
        return TestCertificates(directory: directory)
    }
}
