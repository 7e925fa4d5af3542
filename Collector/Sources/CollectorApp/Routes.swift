import CrashShieldProtocol
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// The collector's HTTP interface.
///
/// Ingest (project key): `POST /api/<project>/envelope/`, `POST /api/<project>/store/`,
/// `GET /api/<project>/sdk-config`. Operations (no auth): `GET /health`, `GET /metrics`.
/// Management (`Authorization: Bearer <api token>`): `/api/0/...`.
struct CollectorRoutes: Sendable {
    let store: any CollectorStore
    let metrics: CollectorMetrics
    let logger: Logger
    let ingest: IngestService
    let sdkConfig: SDKConfigService
    let rateLimiter: RateLimiter
    let limits: IngestLimits
    private let projectCache = ProjectCache()

    init(store: any CollectorStore, metrics: CollectorMetrics, logger: Logger, ingest: IngestService,
         sdkConfig: SDKConfigService, rateLimiter: RateLimiter, limits: IngestLimits) {
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.ingest = ingest
        self.sdkConfig = sdkConfig
        self.rateLimiter = rateLimiter
        self.limits = limits
    }

    static let sentryAuthHeader = HTTPField.Name("X-Sentry-Auth")!
    static let rateLimitsHeader = HTTPField.Name("X-Sentry-Rate-Limits")!
    static let linkHeader = HTTPField.Name("Link")!
    static let hitsHeader = HTTPField.Name("X-Hits")!

    func register(on router: Router<CollectorRequestContext>) {
        router.get("health") { _, _ in await self.health() }
        router.get("metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: .init(byteBuffer: ByteBuffer(string: self.metrics.render())))
        }
        // The router matches a path with or without its trailing slash.
        router.post("api/:project/envelope") { request, context in await self.ingestRequest(request, context, kind: .envelope) }
        router.post("api/:project/store") { request, context in await self.ingestRequest(request, context, kind: .store) }
        router.get("api/:project/sdk-config") { request, context in
            let response = await self.respond { try await self.serveSDKConfig(request, context) }
            self.metrics.sdkConfigAnswered(status: response.status.code)
            return response
        }

        let manage = router.group("api/0")
        manage.get("projects") { request, _ in
            await self.respondReading { try await self.requireToken(request); return Self.json(try await self.store.projects().map(ProjectView.init)) }
        }
        manage.post("projects") { request, context in
            await self.respond {
                try await self.requireToken(request)
                let body = try await Self.jsonBody(request)
                guard let name = body["name"]?.stringValue, !name.isEmpty, name.count <= 200 else {
                    throw CollectorError.badRequest("project.name", "name must be 1 to 200 characters")
                }
                return Self.json(ProjectView(try await self.store.createProject(name: name)), status: .created)
            }
        }
        manage.get("projects/:id/issues") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                return try await self.issueList(request, projectID: try Self.id(context, "id"))
            }
        }
        manage.put("projects/:id/issues") { request, context in
            await self.respond {
                try await self.requireToken(request)
                return try await self.bulkIssueStatus(request, projectID: try Self.id(context, "id"))
            }
        }
        manage.get("projects/:id/events/:event") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                let eventID = context.parameters.get("event") ?? ""
                guard let payload = try await self.store.eventPayload(projectID: try Self.id(context, "id"), eventID: eventID.lowercased()) else {
                    throw CollectorError.notFound("event.unknown", "no such event")
                }
                return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: payload)))
            }
        }
        manage.get("projects/:id/release-health") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                return Self.json(try await self.store.releaseHealth(projectID: try Self.id(context, "id")).map(ReleaseHealthView.init))
            }
        }
        manage.get("projects/:id/incidents") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                return Self.json(try await self.store.incidents(projectID: try Self.id(context, "id")))
            }
        }
        manage.get("projects/:id/stats") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                let project = try Self.id(context, "id")
                return Self.json([
                    "attachments": try await self.store.attachmentCount(projectID: project),
                    "client_discarded": try await self.store.discardedTotal(projectID: project),
                ])
            }
        }
        manage.get("projects/:id/sdk-config") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                return Self.json(try await self.store.sdkConfigHistory(projectID: try Self.id(context, "id")).map(SDKConfigView.init))
            }
        }
        manage.put("projects/:id/sdk-config") { request, context in
            await self.respond {
                let caller = try await self.requireToken(request)
                let project = try await self.knownProject(try Self.id(context, "id"))
                let body = try await Self.jsonBody(request)
                guard let document = body["document"] else {
                    throw CollectorError.badRequest("sdk_config.invalid", "the body must be {\"document\": {...}}")
                }
                do {
                    return Self.json(SDKConfigView(try await self.sdkConfig.publish(
                        projectID: project.id, document: document, publishedBy: .apiToken(caller.name, owner: caller.accountName))), status: .created)
                } catch let rejection as SDKConfigRejection {
                    return self.rejectionResponse(rejection)
                }
            }
        }
        manage.post("projects/:id/sdk-config/rollback") { request, context in
            await self.respond {
                let caller = try await self.requireToken(request)
                let project = try await self.knownProject(try Self.id(context, "id"))
                guard let version = try await Self.jsonBody(request)["version"]?.intValue else {
                    throw CollectorError.badRequest("sdk_config.invalid", "the body must be {\"version\": <number>}")
                }
                do {
                    return Self.json(SDKConfigView(try await self.sdkConfig.rollback(
                        projectID: project.id, to: version, by: .apiToken(caller.name, owner: caller.accountName))), status: .created)
                } catch let rejection as SDKConfigRejection {
                    return self.rejectionResponse(rejection)
                }
            }
        }
        manage.get("issues/:id") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                guard let issue = try await self.store.issue(id: try Self.id(context, "id")) else {
                    throw CollectorError.notFound("issue.unknown", "no such issue")
                }
                return Self.json(issue)
            }
        }
        manage.put("issues/:id") { request, context in
            await self.respond {
                try await self.requireToken(request)
                guard let status = try await Self.jsonBody(request)["status"]?.stringValue.flatMap(IssueStatus.init(rawValue:)) else {
                    throw CollectorError.badRequest("issue.status", "status must be one of \(IssueStatus.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                guard let issue = try await self.store.setIssueStatus(id: try Self.id(context, "id"), status) else {
                    throw CollectorError.notFound("issue.unknown", "no such issue")
                }
                return Self.json(issue)
            }
        }
        manage.get("issues/:id/events") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                let limit = min(max(Int(request.uri.queryParameters.get("limit") ?? "") ?? 100, 1), 1000)
                return Self.json(try await self.store.events(issueID: try Self.id(context, "id"), limit: limit))
            }
        }
        registerProtection(on: manage)
    }

    // MARK: Issue list

    /// Issues per page of `GET /api/0/projects/<id>/issues` without `limit`, and at most.
    static let issueListDefaultLimit = 100
    static let issueListMaxLimit = 1000
    /// Issues one bulk status change may name.
    static let bulkIssueLimit = 1000

    /// One page of the project's issues as a JSON array (see `IssueQuery` for the parameters;
    /// every status unless `status` says otherwise), with `X-Hits` (how many match) and a
    /// `Link` header naming the previous and next pages as Sentry's API does:
    /// `<url>; rel="next"; results="true"; cursor="..."` (`results="false"` when there is none).
    func issueList(_ request: Request, projectID: Int64) async throws -> Response {
        let fields = FormFields.parse(request.uri.query ?? "")
        let query = try IssueQuery.parse(fields, defaultStatus: "all", defaultLimit: Self.issueListDefaultLimit, maxLimit: Self.issueListMaxLimit)
        _ = try await knownProject(projectID)
        let page = try await store.issues(projectID: projectID, query: query)
        func link(_ cursor: IssueCursor?, _ rel: String) -> String {
            let path = request.uri.path + "?" + query.queryString(cursor: cursor)
            return "<\(path)>; rel=\"\(rel)\"; results=\"\(cursor != nil)\"; cursor=\"\(cursor?.description ?? "")\""
        }
        var response = Self.json(page.issues)
        response.headers[Self.linkHeader] = link(page.previous, "previous") + ", " + link(page.next, "next")
        response.headers[Self.hitsHeader] = String(page.total)
        return response
    }

    /// `PUT /api/0/projects/<id>/issues?id=1&id=2` with `{"status": "resolved"}`: sets the status
    /// of the named issues of the project (at most `bulkIssueLimit`); answers
    /// `{"status": ..., "updated": [ids changed]}`.
    /// - Throws: 400 `request.ids` (no id, a non-number, or too many) or `issue.status`.
    func bulkIssueStatus(_ request: Request, projectID: Int64) async throws -> Response {
        let raw = FormFields.parse(request.uri.query ?? "").all("id")
        let ids = raw.compactMap { Int64($0) }
        guard !ids.isEmpty, ids.count == raw.count, ids.count <= Self.bulkIssueLimit else {
            throw CollectorError.badRequest("request.ids", "name 1 to \(Self.bulkIssueLimit) issues as ?id=<number>&id=<number>")
        }
        guard let status = try await Self.jsonBody(request)["status"]?.stringValue.flatMap(IssueStatus.init(rawValue:)), status != .regressed else {
            throw CollectorError.badRequest("issue.status", "status must be unresolved, resolved, resolved_in_next_release or ignored")
        }
        _ = try await knownProject(projectID)
        let updated = try await store.setIssueStatus(projectID: projectID, ids: ids, status)
        logger.info("issue status set", metadata: ["project": "\(projectID)", "status": "\(status.rawValue)", "issues": "\(updated.count)"])
        return Self.json(BulkStatusView(status: status.rawValue, updated: updated))
    }

    // MARK: Ingest

    enum IngestKind { case envelope, store }

    func ingestRequest(_ request: Request, _ context: CollectorRequestContext, kind: IngestKind) async -> Response {
        metrics.beginRequest()
        defer { metrics.endRequest() }
        do {
            guard let projectID = context.parameters.get("project").flatMap(Int64.init) else {
                throw CollectorError.notFound("project.unknown", "no such project")
            }
            let presentedKey = Self.clientKey(request)
            guard let project = try await cachedProject(projectID) else {
                throw CollectorError.forbidden("auth.invalid_key", "unknown project or key")
            }
            if let presentedKey {
                guard SentryAuth.normalizedKey(presentedKey) == project.publicKey else {
                    throw CollectorError.forbidden("auth.invalid_key", "unknown project or key")
                }
            }
            if let wait = rateLimiter.acquire(project: project.id) {
                metrics.rateLimited()
                return Response(
                    status: .tooManyRequests,
                    headers: [.retryAfter: String(wait), Self.rateLimitsHeader: "\(wait)::project:rate_limited", .contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(["detail": "rate limited", "code": "ingest.rate_limited"]).jsonData())))
            }
            let body = try await readBody(request)
            let outcome: IngestOutcome
            switch kind {
            case .envelope:
                let envelope: Envelope
                do { envelope = try Envelope.parse(bytes: body) } catch {
                    throw CollectorError.badRequest(error.code, error.message)
                }
                if presentedKey == nil {
                    // No header or query key: the envelope header's dsn is the credential.
                    guard let dsnText = envelope.header["dsn"]?.stringValue else {
                        throw CollectorError.unauthorized("auth.missing", "no sentry_key in X-Sentry-Auth, Authorization, the query or the envelope's dsn")
                    }
                    guard let dsn = try? DSN(dsnText), SentryAuth.normalizedKey(dsn.publicKey) == project.publicKey else {
                        throw CollectorError.forbidden("auth.invalid_key", "unknown project or key")
                    }
                }
                outcome = try await ingest.ingestEnvelope(envelope, project: project)
            case .store:
                guard presentedKey != nil else {
                    throw CollectorError.unauthorized("auth.missing", "no sentry_key in X-Sentry-Auth, Authorization or the query")
                }
                outcome = try await ingest.ingestStoreEvent(body, project: project)
            }
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: Self.ingestAnswer(eventID: outcome.eventID))))
        } catch {
            var response = errorResponse(error, countAsRejected: true)
            if (error as? CollectorError)?.code == "ingest.queue_full" { response.headers[.retryAfter] = "1" }
            if (error as? CollectorError)?.code == BodyEncoding.unsupportedCode { response.headers[.acceptEncoding] = BodyEncoding.acceptEncoding }
            return response
        }
    }

    /// The ingest endpoints' answer, `{"id":"<event id>"}` or `{}` without an event, written
    /// directly (a JSONEncoder per request cost more than the rest of the response).
    static func ingestAnswer(eventID: String?) -> String {
        guard let eventID else { return "{}" }
        return "{\"id\":" + jsonString(eventID) + "}"
    }

    /// `text` as a JSON string literal: quote, backslash and control characters escaped.
    static func jsonString(_ text: String) -> String {
        // Event ids (32 hex digits) need no escaping: copied as they are, without the per-scalar loop.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x80 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            return "\"" + text + "\""
        }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{00}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// The client key from `X-Sentry-Auth`, `Authorization: Sentry ...` or `?sentry_key=`.
    static func clientKey(_ request: Request) -> String? {
        if let header = request.headers[sentryAuthHeader], let key = SentryAuth.key(fromHeader: header) { return key }
        if let header = request.headers[.authorization], let key = SentryAuth.key(fromAuthorization: header) { return key }
        if let key = request.uri.queryParameters.get("sentry_key"), !key.isEmpty { return key }
        return nil
    }

    /// Reads the body, decompressing `gzip` or `deflate` (see `BodyEncoding`; others are 415
    /// `body.encoding`), with the size limits checked as bytes arrive.
    func readBody(_ request: Request) async throws -> [UInt8] {
        let declaredLength = request.headers[.contentLength].flatMap(Int.init)
        if let declared = declaredLength, declared > limits.maxBodyBytes {
            throw CollectorError.tooLarge("body.too_large", "the body is larger than \(limits.maxBodyBytes) bytes")
        }
        let inflater: Inflater?
        switch try BodyEncoding(header: request.headers[.contentEncoding]) {
        case .identity: inflater = nil
        case .compressed(let format): inflater = try Inflater(format: format, limit: limits.maxDecompressedBytes)
        }
        var received = 0
        var plain: [UInt8] = []
        if inflater == nil, let declared = declaredLength, declared > 0 {
            plain.reserveCapacity(declared)  // at most maxBodyBytes, checked above
        }
        for try await buffer in request.body {
            received += buffer.readableBytes
            guard received <= limits.maxBodyBytes else {
                throw CollectorError.tooLarge("body.too_large", "the body is larger than \(limits.maxBodyBytes) bytes")
            }
            // One copy out of the network buffer (into the body, or into the inflater's input).
            if let inflater { try inflater.feed(Array(buffer.readableBytesView)) } else { plain.append(contentsOf: buffer.readableBytesView) }
        }
        return try inflater?.finish() ?? plain
    }

    private func cachedProject(_ id: Int64) async throws -> Project? {
        if let project = projectCache.get(id) { return project }
        guard let project = try await store.project(id: id) else { return nil }
        projectCache.set(project)
        return project
    }

    private func knownProject(_ id: Int64) async throws -> Project {
        guard let project = try await cachedProject(id) else { throw CollectorError.notFound("project.unknown", "no such project") }
        return project
    }

    // MARK: SDK configuration

    func serveSDKConfig(_ request: Request, _ context: CollectorRequestContext) async throws -> Response {
        guard let projectID = context.parameters.get("project").flatMap(Int64.init), let project = try await cachedProject(projectID) else {
            throw CollectorError.forbidden("auth.invalid_key", "unknown project or key")
        }
        guard let key = Self.clientKey(request) else {
            throw CollectorError.unauthorized("auth.missing", "no sentry_key in X-Sentry-Auth, Authorization or the query")
        }
        guard SentryAuth.normalizedKey(key) == project.publicKey else {
            throw CollectorError.forbidden("auth.invalid_key", "unknown project or key")
        }
        guard let config = try await store.activeSDKConfig(projectID: project.id) else {
            throw CollectorError.notFound("sdk_config.none", "the project has no SDK configuration")
        }
        let etag = SDKConfigService.etag(config)
        var headers: HTTPFields = [.eTag: etag, .cacheControl: "max-age=\(sdkConfig.maxAge)"]
        if let ifNoneMatch = request.headers[.ifNoneMatch], SDKConfigService.matches(ifNoneMatch: ifNoneMatch, etag: etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: SDKConfigService.body(config))))
    }

    /// 422 `{"code": "sdk_config.rejected", "detail": "<path>: <reason>", "path", "sdk_code"}`.
    func rejectionResponse(_ rejection: SDKConfigRejection) -> Response {
        logger.info("request refused", metadata: ["code": "\(SDKConfigRejection.code)", "status": "\(SDKConfigRejection.status)",
                                                  "path": "\(rejection.path)", "sdk_code": "\(rejection.sdkCode)"])
        let body = JSONValue.object([
            "code": .string(SDKConfigRejection.code), "detail": .string(rejection.message),
            "path": .string(rejection.path), "sdk_code": .string(rejection.sdkCode),
        ]).jsonData()
        return Response(status: .init(code: SDKConfigRejection.status), headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    // MARK: Helpers

    /// `{"status": ..., "storage": "ok" | "unavailable" | "full"}`: 200 when the storage is ok,
    /// else 503 with `Retry-After` (5 s unavailable, 30 s full).
    func health() async -> Response {
        let state = await store.checkStorage()
        switch state {
        case .ok:
            return Self.json(["status": "ok", "storage": state.rawValue])
        case .unavailable, .full:
            var response = Self.json(["status": state == .full ? "storage full" : "database unavailable", "storage": state.rawValue],
                                     status: .serviceUnavailable)
            response.headers[.retryAfter] = state == .full ? "30" : "5"
            return response
        }
    }

    /// The request's API token (`Authorization: Bearer <token>`), with its name and owner.
    /// - Throws: `auth.token_missing` or `auth.token_invalid` (401).
    @discardableResult
    func requireToken(_ request: Request) async throws -> APITokenInfo {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            throw CollectorError.unauthorized("auth.token_missing", "Authorization: Bearer <api token> is required")
        }
        let token = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        let tokenHash = APIAuth.hash(token)
        // 401 like a missing token (RFC 6750 `invalid_token`): an unknown or revoked token is no credential.
        guard let info = try await store.apiToken(tokenHash: tokenHash) else {
            throw CollectorError.unauthorized("auth.token_invalid", "unknown or revoked API token")
        }
        // "Last used" for the dashboard's token list; a failure to record it does not refuse the request.
        if let accounts = store as? any AccountStore {
            do { try await accounts.recordAPITokenUse(tokenHash: tokenHash, now: Date()) } catch {
                logger.warning("could not record the API token's use", metadata: ["error": "\(error)"])
            }
        }
        return info
    }

    func respond(_ body: () async throws -> Response) async -> Response {
        do { return try await body() } catch { return errorResponse(error, countAsRejected: false) }
    }

    /// `respond` for a management API read: its whole work on a page thread below ingest's
    /// priority (`CollectorStore.withPageRead`).
    func respondReading(_ body: () async throws -> Response) async -> Response {
        await respond { try await self.store.withPageRead(body) }
    }

    func errorResponse(_ error: any Error, countAsRejected: Bool) -> Response {
        let failure: CollectorError
        if let known = error as? CollectorError {
            failure = known
        } else {
            logger.error("request failed", metadata: ["error": "\(error)"])
            failure = .storage("the request could not be completed")
        }
        if countAsRejected { metrics.rejected(failure.code) }
        if failure.status == 503 && failure.code.hasPrefix("storage.") { metrics.storageUnavailable(failure.code) }
        if failure.status >= 500 && failure.code.hasPrefix("storage.") && failure.code != "storage.busy" && failure.code != "storage.cancelled" {
            // The database is away, full or failing: an operator's matter.
            logger.error("request refused", metadata: ["code": "\(failure.code)", "status": "\(failure.status)", "detail": "\(failure.message)"])
        } else {
            logger.info("request refused", metadata: ["code": "\(failure.code)", "status": "\(failure.status)"])
        }
        let body = JSONValue.object(["detail": .string(failure.message), "code": .string(failure.code)]).jsonData()
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter = failure.retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: .init(code: failure.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func id(_ context: CollectorRequestContext, _ name: String) throws -> Int64 {
        guard let id = context.parameters.get(name).flatMap(Int64.init) else {
            throw CollectorError.badRequest("request.id", "\(name) must be a number")
        }
        return id
    }

    static func jsonBody(_ request: Request) async throws -> JSONValue {
        var request = request
        let buffer: ByteBuffer
        do { buffer = try await request.collectBody(upTo: 256 * 1024) } catch {
            throw CollectorError.tooLarge("body.too_large", "the body is larger than 256 KiB")
        }
        guard let value = try? JSONValue.parse(Data(buffer.readableBytesView)) else {
            throw CollectorError.badRequest("request.json", "the body is not valid JSON")
        }
        return value
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? encoder.encode(value)) ?? Data("null".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// A project as the management API shows it.
struct ProjectView: Encodable {
    let id: Int64
    let name: String
    let publicKey: String
    let createdAt: Date
    let configSigningPublicKey: String
    init(_ project: Project) {
        id = project.id
        name = project.name
        publicKey = project.publicKey
        createdAt = project.createdAt
        configSigningPublicKey = project.configSigningPublicKey
    }
}

/// What a bulk status change did.
struct BulkStatusView: Encodable {
    let status: String
    let updated: [Int64]
}

struct ReleaseHealthView: Encodable {
    let release: String
    let sessions: Int64
    let crashedSessions: Int64
    let abnormalSessions: Int64
    let erroredSessions: Int64
    let users: Int64
    let crashedUsers: Int64
    let crashFreeSessionRate: Double
    let crashFreeUserRate: Double
    init(_ health: ReleaseHealth) {
        release = health.release
        sessions = health.sessions
        crashedSessions = health.crashedSessions
        abnormalSessions = health.abnormalSessions
        erroredSessions = health.erroredSessions
        users = health.users
        crashedUsers = health.crashedUsers
        crashFreeSessionRate = health.crashFreeSessionRate
        crashFreeUserRate = health.crashFreeUserRate
    }
}

/// A version of a project's SDK configuration as the management API shows it; `warnings` lists
/// what the SDK's parser ignores in it (unknown fields and guard names, by path);
/// `published_by` is `{"account": <login name or null>, "api_token": <token name or null>}`
/// (absent for versions stored before the collector recorded it).
struct SDKConfigView: Encodable {
    struct Warning: Encodable {
        let code: String
        let path: String
    }
    /// Both keys always present (null when absent), so clients need not guess.
    struct Publisher: Encodable {
        let account: String?
        let apiToken: String?
        /// The collector's automation that published ("auto-protect"); present only then.
        let automation: String?
        enum CodingKeys: String, CodingKey { case account, apiToken, automation }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(account, forKey: .account)
            try container.encode(apiToken, forKey: .apiToken)
            try container.encodeIfPresent(automation, forKey: .automation)
        }
    }
    let version: Int64
    let document: JSONValue
    let signature: String?
    let createdAt: Date
    let restoredFrom: Int64?
    let publishedBy: Publisher?
    /// Why the version was published when something other than an edit published it (a protection).
    let reason: String?
    let warnings: [Warning]
    init(_ config: SDKConfigVersion) {
        version = config.version
        document = (try? JSONValue.parse(config.document)) ?? .null
        signature = config.signature
        createdAt = config.createdAt
        restoredFrom = config.restoredFrom
        publishedBy = config.publishedBy.map { Publisher(account: $0.account, apiToken: $0.apiToken, automation: $0.automation) }
        reason = config.reason
        warnings = SDKConfigService.warnings(of: config).map { Warning(code: $0.code, path: $0.path) }
    }
}

/// Projects by id, read once from the store (a project's id and key never change).
final class ProjectCache: Sendable {
    private let projects = Mutex<[Int64: Project]>([:])
    func get(_ id: Int64) -> Project? { projects.withLock { $0[id] } }
    func set(_ project: Project) { projects.withLock { $0[project.id] = project } }
}
