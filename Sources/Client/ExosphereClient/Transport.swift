import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request to the API, before it becomes a `URLRequest`.
struct APIRequest: Sendable {
    enum Body: Sendable {
        case none
        case json(JSONValue, contentType: String = "application/json")
        case data(Data, contentType: String)
        case file(URL, contentType: String)
    }

    var method: String
    /// From the base URL, starting with `/`; ids already escaped with `APIRequest.segment`.
    var path: String
    var query: [(name: String, value: String)] = []
    var headers: [String: String] = [:]
    var body: Body = .none
    /// Whether sending it twice does what sending it once does, so that it may be repeated when
    /// its first answer was lost.
    var isIdempotent: Bool
    var progress: (@Sendable (UploadProgress) -> Void)?

    init(
        _ method: String, _ path: String, query: [(name: String, value: String)] = [], headers: [String: String] = [:],
        body: Body = .none, isIdempotent: Bool? = nil, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.isIdempotent = isIdempotent ?? ["GET", "HEAD", "PUT", "DELETE"].contains(method)
        self.progress = progress
    }

    /// Whether the request may be sent again after `error` (a `503`, a `429` or a network error).
    func mayRetry(after error: ExosphereError) -> Bool {
        if error.code == .networkError {
            guard let urlError = error.underlyingError as? URLError else { return false }
            switch urlError.code {
            case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
                return true  // nothing was sent
            case .networkConnectionLost:
                return isIdempotent  // sent, answer lost
            default:
                return false
            }
        }
        // The connection was lost before the commit was confirmed: the write may have happened.
        if error.code == .databaseUnavailable { return isIdempotent }
        return true
    }

    /// An id as one path segment, escaped.
    static func segment(_ id: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id
    }
}

/// A response whose body has been read.
struct APIResponse: Sendable {
    var status: Int
    /// Names lowercased.
    var headers: [String: String]
    var body: Data

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// `Retry-After` in seconds (the server sends whole seconds, never an HTTP-date).
    var retryAfter: TimeInterval? { header("Retry-After").flatMap { TimeInterval($0.trimmingCharacters(in: .whitespaces)) } }

    /// The body as JSON.
    func json() throws -> JSONValue {
        do {
            return try JSONValue.parse(body)
        } catch {
            throw ExosphereError.invalidResponse("\(error)", status: status)
        }
    }
}

/// Sends requests with `URLSession`, with no cache and no cookies of its own: the client
/// decides what is cached (ETags, the image cache), and the API authenticates by header only.
final class Transport: Sendable {
    private let session: URLSession
    private let base: String
    private let userAgent: String?

    init(baseURL: URL, configuration: Exosphere.Configuration) {
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.urlCache = nil
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.httpCookieStorage = nil
        sessionConfiguration.httpShouldSetCookies = false
        #if canImport(FoundationNetworking)
        // FoundationNetworking (Linux) times a request out at once when this is under a second.
        sessionConfiguration.timeoutIntervalForRequest = max(1, configuration.timeoutInterval)
        #else
        sessionConfiguration.timeoutIntervalForRequest = configuration.timeoutInterval
        #endif
        session = URLSession(configuration: sessionConfiguration)
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
        userAgent = configuration.userAgent
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    func url(for request: APIRequest) throws -> URL {
        var text = base + request.path
        if !request.query.isEmpty {
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            text +=
                "?"
                + request.query.map { item in
                    let name = item.name.addingPercentEncoding(withAllowedCharacters: allowed) ?? item.name
                    let value = item.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? item.value
                    return "\(name)=\(value)"
                }.joined(separator: "&")
        }
        guard let url = URL(string: text) else {
            throw ExosphereError(code: .invalidArgument, detail: "\(text) is not a valid URL")
        }
        return url
    }

    /// Sends the request once. Throws `network_error` when no response arrived, and
    /// `CancellationError` when the task was cancelled.
    func send(_ request: APIRequest, token: String?) async throws -> APIResponse {
        var urlRequest = URLRequest(url: try url(for: request))
        urlRequest.httpMethod = request.method
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let token { urlRequest.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let userAgent { urlRequest.setValue(userAgent, forHTTPHeaderField: "User-Agent") }
        let delegate = request.progress.map(ProgressDelegate.init)
        let data: Data
        let response: URLResponse
        do {
            switch request.body {
            case .none:
                (data, response) = try await session.data(for: urlRequest, delegate: delegate)
            case .json(let json, let contentType):
                urlRequest.setValue(contentType, forHTTPHeaderField: "Content-Type")
                do {
                    urlRequest.httpBody = try json.serialized()
                } catch {
                    throw ExosphereError(code: .invalidArgument, detail: "\(error)")
                }
                (data, response) = try await session.data(for: urlRequest, delegate: delegate)
            case .data(let body, let contentType):
                urlRequest.setValue(contentType, forHTTPHeaderField: "Content-Type")
                (data, response) = try await session.upload(for: urlRequest, from: body, delegate: delegate)
            case .file(let file, let contentType):
                urlRequest.setValue(contentType, forHTTPHeaderField: "Content-Type")
                (data, response) = try await session.upload(for: urlRequest, fromFile: file, delegate: delegate)
            }
        } catch let error as ExosphereError {
            throw error
        } catch let error as URLError where error.code == .cancelled {
            throw CancellationError()
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ExosphereError(
                code: .networkError, detail: "\(request.method) \(request.path): \(error.localizedDescription)",
                underlyingError: error)
        }
        guard let http = response as? HTTPURLResponse else {
            throw ExosphereError.invalidResponse("not an HTTP response")
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return APIResponse(status: http.statusCode, headers: headers, body: data)
    }
}

extension Transport {
    /// What a streamed response delivers: its head once, then its body's bytes as they come.
    enum StreamPart: Sendable {
        case head(status: Int, headers: [String: String])
        case bytes(Data)
    }

    /// Sends `request` and delivers the response as it arrives, on a session of its own whose
    /// timeout is `idleTimeout` without a byte. Ends when the body ends; throws `network_error`
    /// when the connection fails. Cancelling the iteration cancels the request.
    func stream(_ request: APIRequest, token: String?, idleTimeout: TimeInterval) throws -> AsyncThrowingStream<StreamPart, any Error> {
        var urlRequest = URLRequest(url: try url(for: request))
        urlRequest.httpMethod = request.method
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        urlRequest.timeoutInterval = idleTimeout
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let token { urlRequest.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let userAgent { urlRequest.setValue(userAgent, forHTTPHeaderField: "User-Agent") }
        let path = request.path
        return AsyncThrowingStream { continuation in
            let delegate = StreamDelegate(continuation: continuation, path: path)
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = nil
            configuration.httpCookieStorage = nil
            configuration.timeoutIntervalForRequest = idleTimeout
            let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
            let task = session.dataTask(with: urlRequest)
            continuation.onTermination = { _ in
                task.cancel()
                session.invalidateAndCancel()
            }
            task.resume()
        }
    }
}

/// Hands a data task's response and bytes to a stream as they arrive.
private final class StreamDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let continuation: AsyncThrowingStream<Transport.StreamPart, any Error>.Continuation
    let path: String

    init(continuation: AsyncThrowingStream<Transport.StreamPart, any Error>.Continuation, path: String) {
        self.continuation = continuation
        self.path = path
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let http = response as? HTTPURLResponse {
            var headers: [String: String] = [:]
            for (name, value) in http.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
            }
            continuation.yield(.head(status: http.statusCode, headers: headers))
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        continuation.yield(.bytes(data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error {
            if let urlError = error as? URLError, urlError.code == .cancelled {
                continuation.finish(throwing: CancellationError())
            } else {
                continuation.finish(
                    throwing: ExosphereError(
                        code: .networkError, detail: "GET \(path): \(error.localizedDescription)", underlyingError: error))
            }
        } else {
            continuation.finish()
        }
        session.finishTasksAndInvalidate()
    }
}

/// Reports an upload's progress.
private final class ProgressDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let report: @Sendable (UploadProgress) -> Void

    init(_ report: @escaping @Sendable (UploadProgress) -> Void) {
        self.report = report
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        report(UploadProgress(sentBytes: totalBytesSent, totalBytes: totalBytesExpectedToSend))
    }
}
