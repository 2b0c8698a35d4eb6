import HTTP
import HTTPServer
import Images
import Thumbnails

/// Image codes to statuses: not found `404`, too large or over the quota `413`, too many uploads
/// `429` (with `Retry-After`), every refusal of the bytes `422`.
extension ImageError: HTTPResponseError {
    public var problem: Problem {
        let status: HTTPStatus
        switch code {
        case .notFound: status = .notFound
        case .tooLarge, .quotaExceeded: status = .contentTooLarge
        case .tooManyUploads: status = .tooManyRequests
        default: status = .unprocessableContent
        }
        var headers = HTTPHeaders()
        if let retryAfterSeconds { headers.add(name: "Retry-After", value: String(retryAfterSeconds)) }
        return Problem(status: status, domainCode: code, detail: detail, headers: headers)
    }
}

extension MultipartError: HTTPResponseError {
    public var problem: Problem {
        Problem(status: status, domainCode: code, detail: detail)
    }
}

/// Every helper busy, or none could start: `503` with `Retry-After`.
extension ThumbnailsUnavailable: HTTPResponseError {
    public var problem: Problem {
        Problem.serviceUnavailable(code: .thumbnailsUnavailable, detail: "No thumbnail can be made right now; try again shortly.")
    }
}

/// The object store is down or slow: `503` with `Retry-After`; the rest of the API keeps serving.
extension ImageStoreUnavailable: HTTPResponseError {
    public var problem: Problem {
        Problem.serviceUnavailable(
            code: .imageStoreUnavailable, detail: "The image store cannot be reached right now; try again shortly.", retryAfterSeconds: 5)
    }
}
