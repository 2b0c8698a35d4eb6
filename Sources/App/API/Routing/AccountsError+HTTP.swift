import Accounts
import HTTP
import HTTPServer

/// Each domain code has one HTTP status; the code itself goes into the problem body.
extension AccountsError: HTTPResponseError {
    public var problem: Problem {
        var headers = HTTPHeaders()
        let status: HTTPStatus
        switch code {
        case .invalidJSON: status = .badRequest
        case .emailTaken, .alreadyVerified: status = .conflict
        case .missingToken:
            status = .unauthorized
            headers.add(name: "WWW-Authenticate", value: "Bearer")
        // A reauthentication's passkey names its field instead (422): the session is good.
        case .invalidCredentials where fields.isEmpty:
            status = .unauthorized
            headers.add(name: "WWW-Authenticate", value: "Bearer")
        // A mailed link's token names its field instead (422): it is not the request's credential.
        case .invalidToken where fields.isEmpty:
            status = .unauthorized
            headers.add(name: "WWW-Authenticate", value: #"Bearer error="invalid_token""#)
        case .invalidPassword, .accountDisabled, .reauthenticationRequired, .emailUnverified, .mfaEnrolmentRequired: status = .forbidden
        // Finishing a sign-in; a code in a signed-in request names its field instead (422).
        case .mfaRequired, .invalidMFAToken:
            status = .unauthorized
            headers.add(name: "WWW-Authenticate", value: "Bearer")
        case .invalidCode where fields.isEmpty:
            status = .unauthorized
            headers.add(name: "WWW-Authenticate", value: "Bearer")
        case .alreadyEnabled, .noAddress: status = .conflict
        case .adminExists, .schemaConflict, .accountExists, .identityTaken, .lastSignInMethod: status = .conflict
        // Signing in; linking while signed in names the field instead (422).
        case .invalidIDToken where fields.isEmpty: status = .unauthorized
        case .notFound: status = .notFound
        case .preconditionFailed: status = .preconditionFailed
        case .tooManyAttempts: status = .tooManyRequests
        case .overloaded, .cancelled, .providerUnavailable: status = .serviceUnavailable
        default: status = .unprocessableContent
        }
        if let retryAfterSeconds { headers.add(name: "Retry-After", value: String(retryAfterSeconds)) }
        var problem = Problem(
            status: status, domainCode: code, detail: detail,
            errors: fields.map { Problem.FieldError(field: $0.field, code: $0.code.rawValue, detail: $0.detail) },
            headers: headers)
        if let secondFactor {
            problem.members = [("mfaToken", .string(secondFactor.token)), ("factors", .strings(secondFactor.factors))]
        }
        return problem
    }
}
