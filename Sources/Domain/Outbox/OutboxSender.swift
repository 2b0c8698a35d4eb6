import FoundationEssentials
import Mail
import Postgres
import StructuredLogging
import Synchronization
import Threads

/// Sends what the outbox holds, on every instance: claims due rows in batches, delivers them over
/// one relay connection per batch (or into the dev mailbox), and records each outcome.
///
/// Delivery is at least once: a mail the relay accepted whose row could not be deleted (the
/// process died in between) is sent again after its lease; its `Message-ID` is the same, so the
/// receiving side can tell.
public final class OutboxSender: Sendable {
    /// Where mail goes and how hard to try.
    public struct Configuration: Sendable {
        /// Where mail goes.
        public enum Transport: Sendable {
            /// An SMTP relay.
            case smtp(SMTPConfiguration)
            /// `.eml` files in a directory, for development (the two-command start).
            case mailbox(directory: String)
        }

        public var transport = Transport.mailbox(directory: "./.exosphere/mail")
        public var from = MailAddress("no-reply@localhost", displayName: "Exosphere")
        /// The base of links in mail, without a trailing slash.
        public var publicURL = "http://localhost:8080"
        public var appName = "Exosphere"
        /// How often due rows are looked for when nothing wakes the sender.
        public var pollIntervalSeconds: Double = 5
        /// The first retry's delay; each next one doubles, up to `retryMaxSeconds`.
        public var retryBaseSeconds: Double = 30
        public var retryMaxSeconds: Double = 3_600
        /// After this many attempts a mail is failed for good (with the defaults, about a day).
        public var maxAttempts = 30
        public var batchSize = 20
        /// How long a claimed row is left to its sender before another may take it: how long a
        /// mail waits after its sender died mid-batch. A batch that runs longer renews it.
        public var leaseSeconds: Double = 120
        /// Failed rows are deleted after this long.
        public var failedRetentionSeconds: Double = 30 * 86_400

        public init() {}

        /// The delay before attempt `attempts + 1`.
        func retryDelay(afterAttempts attempts: Int) -> Double {
            min(retryMaxSeconds, retryBaseSeconds * Double(1 << min(max(attempts - 1, 0), 30)))
        }
    }

    /// Counts of this instance since it started, for `/metrics`.
    public final class Statistics: Sendable {
        public let sent = Atomic<Int>(0)
        public let retried = Atomic<Int>(0)
        public let failed = Atomic<Int>(0)
    }

    public let configuration: Configuration
    public let statistics = Statistics()
    private let pool: PostgresPool
    private let templates: MailTemplates
    private let logger: Logger
    private let thread: PeriodicThread
    /// The host part of Message-IDs: the public URL's host.
    private let messageIDDomain: String
    /// Makes the token of a mail's link from its slot, and stores its hash, just before the mail
    /// is sent; nil when the slot is gone (see `OutgoingMail.tokenSlotVariable`).
    private let mintToken: @Sendable (Int64) throws -> String?
    /// The same for a mailed code (see `OutgoingMail.codeSlotVariable`).
    private let mintCode: @Sendable (Int64) throws -> String?

    /// Starts the sending thread; its first round runs at once, for mail left by an earlier run.
    public init(
        pool: PostgresPool, configuration: Configuration, templates: MailTemplates, logger: Logger,
        mintToken: @escaping @Sendable (Int64) throws -> String?, mintCode: @escaping @Sendable (Int64) throws -> String?
    ) {
        self.pool = pool
        self.mintToken = mintToken
        self.mintCode = mintCode
        self.configuration = configuration
        self.templates = templates
        self.logger = logger.with("component", "mail")
        messageIDDomain = OutboxSender.host(of: configuration.publicURL) ?? "localhost"
        thread = PeriodicThread(name: "mail", intervalNanoseconds: UInt64(max(0.01, configuration.pollIntervalSeconds) * 1e9))
        thread.start { [self] in round() }
        thread.wake()
    }

    /// Sends at once what is due (after a commit that queued mail).
    public func wake() {
        thread.wake()
    }

    /// Stops after the current mail.
    public func shutdown() {
        thread.stop()
    }

    private func round() {
        do {
            while !thread.isStopping, try sendBatch() == configuration.batchSize {}
            _ = try pool.withConnection {
                try OutboxRepository.purgeFailed($0, olderThanSeconds: configuration.failedRetentionSeconds, limit: 1_000)
            }
        } catch {
            logger.warning("mail round failed", ["error": String(reflecting: error)])
        }
    }

    /// Claims and sends one batch; returns how many rows it claimed. Exposed for tests.
    @discardableResult
    public func sendBatch() throws -> Int {
        let claimed = try pool.withConnection {
            try OutboxRepository.claim($0, limit: configuration.batchSize, leaseSeconds: configuration.leaseSeconds)
        }
        guard !claimed.isEmpty else { return 0 }
        var relay: Relay?
        defer { relay?.close() }
        var leaseRenewal = ContinuousClock.now + .seconds(configuration.leaseSeconds / 2)
        for (index, row) in claimed.enumerated() {
            if ContinuousClock.now > leaseRenewal {
                let rest = claimed[index...].map(\.id)
                try pool.withConnection { try OutboxRepository.extendLease($0, ids: rest, seconds: configuration.leaseSeconds) }
                leaseRenewal = ContinuousClock.now + .seconds(configuration.leaseSeconds / 2)
            }
            if thread.isStopping {
                // Given back for the next round (or instance) rather than held for a whole lease.
                try record(row, .retry(delay: 0, error: "the sender stopped"))
                continue
            }
            guard var mail = row.mail else {
                try record(row, .failed("unknown template \(row.kindText)"))
                continue
            }
            // The link's token is made now, its hash committed before the mail leaves: no queue
            // holds a token, and a retry sends a new one.
            if let slot = mail.variables.removeValue(forKey: OutgoingMail.tokenSlotVariable) {
                guard let id = Int64(slot), let token = try mintToken(id) else {
                    try record(row, .voided)
                    continue
                }
                mail.variables["token"] = token
            }
            if let slot = mail.variables.removeValue(forKey: OutgoingMail.codeSlotVariable) {
                guard let id = Int64(slot), let code = try mintCode(id) else {
                    try record(row, .voided)
                    continue
                }
                mail.variables["code"] = code
            }
            let message = self.message(for: mail, row: row)
            let outcome: Outcome
            do {
                if relay == nil { relay = try Relay.open(configuration.transport) }
                let receipt = try relay!.deliver(message)
                outcome = .delivered(receipt)
            } catch let error as SMTPError where error.isPermanent {
                outcome = .failed(error.reply ?? error.description)
                if relay?.reset() == false {
                    relay?.close()
                    relay = nil
                }
            } catch {
                outcome = .retry(delay: configuration.retryDelay(afterAttempts: row.attempts), error: String(describing: error))
                // The connection's state is unknown after a transport fault: the next mail opens a new one.
                relay?.close()
                relay = nil
            }
            try record(row, outcome)
        }
        return claimed.count
    }

    private enum Outcome {
        case delivered(String)
        /// Its link was used or voided before it could be sent: not worth sending.
        case voided
        case retry(delay: Double, error: String)
        case failed(String)
    }

    private func record(_ row: OutboxRepository.Claimed, _ outcome: Outcome) throws {
        let kind = row.kindText
        switch outcome {
        case .voided:
            try pool.withConnection { try OutboxRepository.delivered($0, id: row.id) }
            logger.info("mail dropped: its link was used or voided before it was sent", ["mail.id": String(row.id), "mail.template": kind])
        case .delivered(let receipt):
            try pool.withConnection { try OutboxRepository.delivered($0, id: row.id) }
            statistics.sent.add(1, ordering: .relaxed)
            if case .mailbox = configuration.transport {
                // No relay: the developer follows the links from the file.
                logger.notice("mail written to the dev mailbox", ["mail.id": String(row.id), "mail.template": kind, "mail.file": receipt])
            } else {
                logger.info("mail sent", ["mail.id": String(row.id), "mail.template": kind, "mail.reply": receipt])
            }
        case .retry(let delay, let error) where row.attempts < configuration.maxAttempts:
            try pool.withConnection { try OutboxRepository.retry($0, id: row.id, delaySeconds: delay, error: error) }
            statistics.retried.add(1, ordering: .relaxed)
            logger.warning(
                "mail not sent, will retry",
                [
                    "mail.id": String(row.id), "mail.template": kind, "mail.attempts": String(row.attempts), "retry.seconds": String(delay),
                    "error": error,
                ])
        case .retry(_, let error), .failed(let error):
            try pool.withConnection { try OutboxRepository.failed($0, id: row.id, error: error) }
            statistics.failed.add(1, ordering: .relaxed)
            logger.error(
                "mail failed for good",
                ["mail.id": String(row.id), "mail.template": kind, "mail.attempts": String(row.attempts), "error": error])
        }
    }

    /// Renders a queued mail with the deployment's templates.
    func message(for mail: OutgoingMail, row: OutboxRepository.Claimed) -> MailMessage {
        var values = mail.variables
        values["appName"] = configuration.appName
        let firstname = values["firstname"] ?? ""
        values["name"] = firstname.isEmpty ? (values["email"] ?? mail.recipient) : firstname
        if let path = mail.kind.linkPath, let token = values["token"] {
            values["link"] = configuration.publicURL + path + "#token=" + token
        }
        let rendered = templates.render(mail.kind, values: values)
        let micros = Int64((row.createdAt.timeIntervalSince1970 * 1e6).rounded())
        return MailMessage(
            from: configuration.from, to: MailAddress(mail.recipient), subject: rendered.subject, text: rendered.text,
            html: rendered.html, date: Date(), messageID: "exosphere.\(row.id).\(micros)@\(messageIDDomain)")
    }

    /// The host of an http(s) URL.
    public static func host(of url: String) -> String? {
        guard let scheme = url.firstRange(of: "://") else { return nil }
        let rest = url[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostAndPort = authority.split(separator: "@").last ?? authority
        if hostAndPort.hasPrefix("[") { return hostAndPort.firstIndex(of: "]").map { String(hostAndPort[...$0]) } }
        let host = hostAndPort.split(separator: ":").first.map(String.init)
        return host?.isEmpty == false ? host : nil
    }
}

/// One batch's way out: an SMTP session, or the dev mailbox.
private enum Relay {
    case smtp(SMTPClient)
    case mailbox(DevMailbox)

    static func open(_ transport: OutboxSender.Configuration.Transport) throws -> Relay {
        switch transport {
        case .smtp(let configuration): .smtp(try SMTPClient.connect(configuration))
        case .mailbox(let directory): .mailbox(DevMailbox(directory: directory))
        }
    }

    /// Delivers a message; returns what to log of it: the relay's reply, or the file's path.
    func deliver(_ message: MailMessage) throws -> String {
        switch self {
        case .smtp(let client): try client.send(message)
        case .mailbox(let mailbox): try mailbox.deliver(message)
        }
    }

    /// Makes the session ready for the next mail after a refused one; false when it is not.
    func reset() -> Bool {
        guard case .smtp(let client) = self else { return true }
        do {
            try client.reset()
            return true
        } catch {
            return false
        }
    }

    func close() {
        if case .smtp(let client) = self { client.close() }
    }
}
