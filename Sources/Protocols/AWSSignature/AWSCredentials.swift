/// An access key pair of an S3-compatible store. The secret never appears in a description, so
/// a configuration that holds it can be logged.
public struct AWSCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String

    public init(accessKeyID: String, secretAccessKey: String) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
    }

    /// The pair from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` in `environment`; nil unless both are set and not empty.
    public init?(environment: [String: String]) {
        guard let id = environment["AWS_ACCESS_KEY_ID"], !id.isEmpty, let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else {
            return nil
        }
        self.init(accessKeyID: id, secretAccessKey: secret)
    }

    public var description: String { "AWSCredentials(\(accessKeyID), secret redacted)" }
    public var debugDescription: String { description }
}
