import CrashShieldProtocol
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The dashboard: server-rendered HTML pages behind a login. Every page redirects to `/login`
/// without a live session; every POST needs a session, a same-origin `Origin` (or `Referer`)
/// when the browser sends one, and the session's CSRF token in the `csrf_token` form field
/// (403 otherwise). Pages need no JavaScript; charts are inline SVG.
struct DashboardRoutes: Sendable {
    let store: any CollectorStore
    let queries: any DashboardQueries
    let accounts: AccountService
    let sdkConfig: SDKConfigService
    /// The collector's public URL (its origin is accepted for POSTs and used in DSNs), or nil.
    let publicURL: String?
    /// Counts the pages answered 503 because of the database (`storage.busy`, `storage.cancelled`).
    let metrics: CollectorMetrics
    let logger: Logger
    /// Symbolicates the issue page's event with uploaded debug files (nil: frames as received).
    var symbolication: Symbolication? = nil

    static let maxFormBytes = 256 * 1024

    func register(on router: Router<CollectorRequestContext>) {
        router.get("static/collector.css") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "max-age=3600"],
                     body: .init(byteBuffer: ByteBuffer(string: DashboardStyle.css)))
        }
        router.get("favicon.ico") { _, _ in Response(status: .noContent) }
        router.get("login") { request, _ in await self.loginPage(request) }
        router.post("login") { request, context in await self.loginSubmit(request, client: ClientAddress.key(context.remoteAddress)) }
        router.post("logout") { request, context in
            await self.action(request, context) { _, _ in
                try await self.accounts.logout(token: request.cookies[AccountService.sessionCookieName]?.value)
                var response = Self.redirect("/login")
                response.headers.append(HTTPField(name: .setCookie, value: self.accounts.clearedSessionCookie()))
                return response
            }
        }
        router.get("/") { request, context in await self.page(request, context) { _ in Self.redirect("/projects") } }
        router.get("projects") { request, context in await self.page(request, context) { try await self.projectsPage($0) } }
        router.get("projects/new") { request, context in await self.page(request, context) { self.newProjectPage($0, error: nil) } }
        router.post("projects") { request, context in await self.action(request, context) { try await self.createProject($0, $1) } }
        router.get("projects/:id/settings") { request, context in
            await self.page(request, context) { try await self.projectSettingsPage($0, try await self.project(context), request) }
        }
        router.get("projects/:id") { request, context in
            await self.page(request, context) { try await self.issuesPage($0, try await self.project(context), request) }
        }
        router.post("projects/:id/issues/status") { request, context in
            await self.action(request, context) { try await self.bulkStatus($0, try await self.project(context), $1) }
        }
        router.get("projects/:id/health") { request, context in
            await self.page(request, context) { try await self.healthPage($0, try await self.project(context)) }
        }
        router.get("projects/:id/prevented") { request, context in
            await self.page(request, context) { try await self.preventedPage($0, try await self.project(context)) }
        }
        router.get("projects/:id/launch") { request, context in
            await self.page(request, context) { try await self.launchPage($0, try await self.project(context)) }
        }
        router.get("projects/:id/config") { request, context in
            await self.page(request, context) { try await self.configPage($0, try await self.project(context), draft: nil, message: nil) }
        }
        router.post("projects/:id/config") { request, context in
            await self.action(request, context) { try await self.publishConfig($0, try await self.project(context), $1) }
        }
        router.post("projects/:id/config/rollback") { request, context in
            await self.action(request, context) { try await self.rollbackConfig($0, try await self.project(context), $1) }
        }
        router.get("projects/:id/events/:event") { request, context in
            await self.page(request, context) { _ in try await self.eventJSON(try await self.project(context), context.parameters.get("event") ?? "") }
        }
        router.get("projects/:id/attachments/:attachment") { request, context in
            await self.page(request, context) { _ in
                try await self.attachmentDownload(try await self.project(context), context.parameters.get("attachment") ?? "")
            }
        }
        router.get("issues/:id") { request, context in
            await self.page(request, context) { try await self.issuePage($0, try await self.issue(context), request: request) }
        }
        router.get("issues/:id/events/:event") { request, context in
            await self.page(request, context) {
                try await self.issuePage($0, try await self.issue(context), eventID: context.parameters.get("event") ?? "", request: request)
            }
        }
        router.post("issues/:id/status") { request, context in
            await self.action(request, context) { try await self.setStatus($0, try await self.issue(context), $1) }
        }
        registerAccountPages(on: router)
        registerProtectPages(on: router)
    }

    // MARK: Sessions, CSRF, origin

    /// Runs a page handler for a logged-in user; without a session, redirects to the login page
    /// (with the requested path in `next`). The whole page (session, queries, HTML) is built on
    /// a page thread below ingest's priority (`CollectorStore.withPageRead`).
    func page(_ request: Request, _ context: CollectorRequestContext, _ body: (LoginSession) async throws -> Response) async -> Response {
        do {
            return try await store.withPageRead {
                guard let session = try await accounts.session(token: request.cookies[AccountService.sessionCookieName]?.value) else {
                    return Self.redirect("/login?next=" + HTML.urlComponent(request.uri.path))
                }
                return try await body(session)
            }
        } catch {
            return errorPage(error)
        }
    }

    /// Runs a form handler: session (else redirect to login), same origin (else 403), form body
    /// (at most 256 KiB), CSRF token (else 403).
    func action(_ request: Request, _ context: CollectorRequestContext,
                _ body: (LoginSession, FormFields) async throws -> Response) async -> Response {
        do {
            guard let session = try await accounts.session(token: request.cookies[AccountService.sessionCookieName]?.value) else {
                return Self.redirect("/login")
            }
            guard isSameOrigin(request) else {
                throw CollectorError.forbidden("csrf.origin", "the form was submitted from another site")
            }
            let form = try await FormFields.read(request, limit: Self.maxFormBytes)
            guard AccountService.csrfMatches(form["csrf_token"], session: session) else {
                throw CollectorError.forbidden("csrf.token", "the form's CSRF token is missing or wrong; reload the page and try again")
            }
            return try await body(session, form)
        } catch {
            return errorPage(error)
        }
    }

    /// False when the browser says the request comes from another origin: `Origin` (or, without
    /// it, `Referer`) names a host other than this request's `Host` and the public URL's host.
    func isSameOrigin(_ request: Request) -> Bool {
        let claimed = request.headers[.origin] ?? request.headers[.referer]
        guard let claimed else { return true }  // no browser claim: the CSRF token decides
        if claimed == "null" { return false }
        guard let components = URLComponents(string: claimed), let host = components.host else { return false }
        let origin = host.lowercased() + (components.port.map { ":\($0)" } ?? "")
        var allowed: Set<String> = []
        if let hostHeader = request.head.authority { allowed.insert(hostHeader.lowercased()) }
        if let publicURL, let url = URLComponents(string: publicURL), let publicHost = url.host {
            allowed.insert(publicHost.lowercased() + (url.port.map { ":\($0)" } ?? ""))
        }
        return allowed.contains(origin)
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    /// Only local paths (one leading slash), so `next` cannot send the user to another site.
    static func localPath(_ candidate: String?) -> String? {
        guard let candidate, candidate.hasPrefix("/"), !candidate.hasPrefix("//"), !candidate.contains("\\"),
              !candidate.contains(where: { $0.isNewline }) else { return nil }
        return candidate
    }

    // MARK: Login

    func loginPage(_ request: Request, error: String? = nil, status: HTTPResponse.Status = .ok, retryAfter: Int? = nil) async -> Response {
        let existing = request.cookies[AccountService.loginCookieName]?.value
        let loginToken = existing.flatMap { $0.count == 64 && $0.allSatisfy(\.isHexDigit) ? $0 : nil } ?? AccountService.newSecret()
        let next = Self.localPath(request.uri.queryParameters.get("next").map { String($0) }) ?? "/projects"
        let errorHTML: HTML = error.map { "<p class=\"error\" role=\"alert\">\($0)</p>" } ?? .empty
        let body: HTML = """
        <main class="login"><h1>CrashShield collector</h1>\(errorHTML)
        <form method="post" action="/login?next=\(HTML.urlComponent(next))">
        <input type="hidden" name="login_csrf" value="\(loginToken)">
        <label>Account <input name="name" autocomplete="username" value="admin" required></label>
        <label>Password <input name="password" type="password" autocomplete="current-password" required autofocus></label>
        <button type="submit">Log in</button></form></main>
        """
        var response = Layout.document(title: "Log in", body: body, status: status)
        response.headers.append(HTTPField(name: .setCookie, value: accounts.loginCookie(loginToken)))
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    func loginSubmit(_ request: Request, client: String) async -> Response {
        do {
            guard isSameOrigin(request) else { throw CollectorError.forbidden("csrf.origin", "the form was submitted from another site") }
            let form = try await FormFields.read(request, limit: 16 * 1024)
            guard let cookie = request.cookies[AccountService.loginCookieName]?.value, let submitted = form["login_csrf"],
                  !cookie.isEmpty, PasswordHasher.constantTimeEqual(cookie, submitted)
            else { throw CollectorError.forbidden("csrf.token", "the login form expired; reload the page and try again") }
            let name = form["name"] ?? ""
            let password = form["password"] ?? ""
            do {
                let (token, _) = try await accounts.login(name: name, password: password, client: client)
                var response = Self.redirect(Self.localPath(request.uri.queryParameters.get("next").map { String($0) }) ?? "/projects")
                response.headers.append(HTTPField(name: .setCookie, value: accounts.sessionCookie(token)))
                logger.info("login", metadata: ["account": "\(name)"])
                return response
            } catch let failure as LoginFailure {
                logger.notice("login refused", metadata: ["account": "\(name)", "client": "\(client)", "code": "\(failure.code)"])
                if failure.code == "login.rate_limited" {
                    return await loginPage(request, error: "Too many failed logins. Try again in \(failure.retryAfter ?? 60) seconds.",
                                           status: .tooManyRequests, retryAfter: failure.retryAfter)
                }
                return await loginPage(request, error: "Wrong account name or password.", status: .unauthorized)
            }
        } catch {
            return errorPage(error)
        }
    }

    /// An event's JSON exactly as received, as a download-safe `application/json` document
    /// (`nosniff`, a CSP that allows nothing), so the browser never renders it as HTML.
    func eventJSON(_ project: Project, _ eventID: String) async throws -> Response {
        guard let payload = try await store.eventPayload(projectID: project.id, eventID: eventID.lowercased()) else {
            throw CollectorError.notFound("event.unknown", "no such event")
        }
        return Response(status: .ok, headers: [
            .contentType: "application/json; charset=utf-8", .contentSecurityPolicy: "default-src 'none'; sandbox",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff", .cacheControl: "no-store",
        ], body: .init(byteBuffer: ByteBuffer(bytes: payload)))
    }

    // MARK: Helpers

    func project(_ context: CollectorRequestContext) async throws -> Project {
        guard let id = context.parameters.get("id").flatMap(Int64.init), let project = try await store.project(id: id) else {
            throw CollectorError.notFound("project.unknown", "no such project")
        }
        return project
    }

    func issue(_ context: CollectorRequestContext) async throws -> Issue {
        guard let id = context.parameters.get("id").flatMap(Int64.init), let issue = try await store.issue(id: id) else {
            throw CollectorError.notFound("issue.unknown", "no such issue")
        }
        return issue
    }

    /// The HTML page for a refused or failed request, with the error's status, message and code.
    /// A failure the browser may retry (`CollectorError.retryAfter`: the database was busy, or the
    /// collector is shutting down) carries `Retry-After`, as the API's and ingest's answers do,
    /// and a 503 of the database is counted in `collector_storage_unavailable_total`.
    func errorPage(_ error: any Error) -> Response {
        let failure: CollectorError
        if let known = error as? CollectorError { failure = known } else {
            logger.error("dashboard request failed", metadata: ["error": "\(error)"])
            failure = .storage("the page could not be built")
        }
        if failure.status == 503 && failure.code.hasPrefix("storage.") { metrics.storageUnavailable(failure.code) }
        if failure.code == "storage.unavailable" || failure.code == "storage.full" {
            logger.error("dashboard request refused", metadata: ["code": "\(failure.code)", "detail": "\(failure.message)"])
        }
        return Self.errorDocument(failure)
    }

    /// The error page itself (also the page of unknown routes, `NotFoundPageMiddleware`).
    static func errorDocument(_ failure: CollectorError) -> Response {
        let heading = failure.status == 404 ? "Not found" : failure.retryAfter != nil ? "Try again shortly" : "Request refused"
        let body: HTML = "<main><h1>\(heading)</h1><p class=\"error\">\(failure.message)</p><p><code>\(failure.code)</code></p><p><a href=\"/projects\">Projects</a></p></main>"
        var response = Layout.document(title: "Error", body: body, status: .init(code: failure.status))
        if let retryAfter = failure.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// The base URL for DSNs: the public URL, else the request's `Host`.
    func baseURL(_ request: Request) -> String {
        if let publicURL { return publicURL }
        return "http://" + (request.head.authority ?? "127.0.0.1")
    }
}

/// A parsed `application/x-www-form-urlencoded` body or query string: the first value of each
/// field, and every value of a repeated one (`all`).
struct FormFields: Sendable {
    private var values: [String: String] = [:]
    private var repeated: [String: [String]] = [:]
    subscript(_ name: String) -> String? { values[name] }
    /// Every value of the field, in order (checkboxes of one name).
    func all(_ name: String) -> [String] { repeated[name] ?? [] }

    static func read(_ request: Request, limit: Int) async throws -> FormFields {
        var request = request
        let buffer: ByteBuffer
        do { buffer = try await request.collectBody(upTo: limit) } catch {
            throw CollectorError.tooLarge("body.too_large", "the form is larger than \(limit) bytes")
        }
        return parse(String(decoding: buffer.readableBytesView, as: UTF8.self))
    }

    static func parse(_ body: String) -> FormFields {
        var fields = FormFields()
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                let spaced = part.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            let name = decode(parts[0])
            let value = parts.count > 1 ? decode(parts[1]) : ""
            if fields.values[name] == nil { fields.values[name] = value }
            fields.repeated[name, default: []].append(value)
        }
        return fields
    }
}
