import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The second factor's state (`secondFactor()`).
public struct SecondFactorStatus: Sendable, Hashable {
    /// Whether sign-ins ask for an authenticator app's code.
    public let totpEnabled: Bool
    /// Recovery codes not used yet.
    public let recoveryCodesLeft: Int
}

/// A started TOTP enrolment: show `qrCodeSVG` (or `uri`, or `secret` for typing in) to the
/// user's authenticator app, then `confirmTOTPEnrolment(code:)` with its first code.
public struct TOTPEnrolment: Sendable, Hashable {
    /// The secret in base32.
    public let secret: String
    /// `otpauth://totp/…`
    public let uri: String
    /// The URI as a QR code, an SVG document.
    public let qrCodeSVG: String
}

extension Exosphere {
    /// Finishes a sign-in that answered `ExosphereError` `mfa_required` (its `secondFactor`)
    /// with the authenticator's code or a recovery code.
    ///
    /// - Throws: `ExosphereError` `401 invalid_code` (wrong or used: try again), `401
    ///   invalid_mfa_token` (five wrong codes, or five minutes: sign in again), `429`.
    @discardableResult
    public func finishSignIn(_ challenge: ExosphereError.SecondFactorChallenge, code: String) async throws -> User {
        let body = JSONValue.object(["mfaToken": .string(challenge.token), "code": .string(code)])
        let response = try await send(APIRequest("POST", "/users/signin/mfa", body: .json(body), isIdempotent: false))
        return try begin(from: response)
    }

    public func secondFactor() async throws -> SecondFactorStatus {
        let (response, _) = try await sendSignedIn(APIRequest("GET", "/users/me/mfa"))
        let json = try response.json()
        guard let enabled = json["totp"]?["enabled"]?.boolValue, let left = json["recoveryCodesLeft"]?.intValue else {
            throw ExosphereError.invalidResponse("a second factor's state without totp.enabled or recoveryCodesLeft")
        }
        return SecondFactorStatus(totpEnabled: enabled, recoveryCodesLeft: left)
    }

    /// Starts a TOTP enrolment (a recent authentication needed: `.reauthenticationRequired`).
    ///
    /// - Throws: `ExosphereError` `409 already_enabled`, `403`.
    public func startTOTPEnrolment() async throws -> TOTPEnrolment {
        let (response, _) = try await sendSignedIn(APIRequest("POST", "/users/me/mfa/totp", isIdempotent: false))
        let json = try response.json()
        guard let secret = json["secret"]?.stringValue, let uri = json["otpauthUri"]?.stringValue, let svg = json["qrCodeSvg"]?.stringValue
        else { throw ExosphereError.invalidResponse("an enrolment without secret, otpauthUri or qrCodeSvg") }
        return TOTPEnrolment(secret: secret, uri: uri, qrCodeSVG: svg)
    }

    /// Turns TOTP on with the app's first code; returns the ten recovery codes, shown this once.
    ///
    /// - Throws: `ExosphereError` `422 invalid_code`.
    public func confirmTOTPEnrolment(code: String) async throws -> [String] {
        let request = APIRequest("POST", "/users/me/mfa/totp/confirm", body: .json(.object(["code": .string(code)])), isIdempotent: false)
        return try Self.recoveryCodes(try await sendSignedIn(request).0)
    }

    /// Turns the second factor off (a recent authentication with both factors needed).
    public func disableTOTP() async throws {
        _ = try await sendSignedIn(APIRequest("DELETE", "/users/me/mfa/totp"))
    }

    /// Ten new recovery codes; the older ones stop working.
    public func regenerateRecoveryCodes() async throws -> [String] {
        try Self.recoveryCodes(try await sendSignedIn(APIRequest("POST", "/users/me/mfa/recovery-codes", isIdempotent: false)).0)
    }

    private static func recoveryCodes(_ response: APIResponse) throws -> [String] {
        guard let codes = try response.json()["recoveryCodes"]?.arrayValue?.compactMap(\.stringValue) else {
            throw ExosphereError.invalidResponse("an answer without recoveryCodes")
        }
        return codes
    }
}
