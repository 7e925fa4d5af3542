import CrashShieldProtocol
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The dashboard: server-rendered HTML, no JavaScript, no external resources. Every value that
/// comes from an event or a user is HTML-escaped. Every page needs a login; every form carries a
/// CSRF token bound to the login session.
struct WebRoutes: Sendable {
    let store: any CollectorStore
    let sdkConfig: SDKConfigService
    let logger: Logger
    /// Set the cookie's `Secure` attribute (the collector is served over HTTPS).
    let secureCookies: Bool
    /// Base URL for the DSNs shown (nil: taken from the request's Host header).
    let publicURL: String?

    static let sessionCookie = "csc_session"
    static let loginCookie = "csc_login_csrf"
    static let sessionLifetime: TimeInterval = 12 * 3600

    struct User: Sendable { let email: String; let csrf: String }

    func register(on router: Router<BasicRequestContext>) {
        router.get("login") { request, _ in self.loginPage(error: nil) }
        router.post("login") { request, _ in await self.page { try await self.login(request) } }
        router.post("logout") { request, _ in await self.page { try await self.logout(request) } }
        router.get("/") { request, _ in await self.authenticated(request) { user in try await self.home(request, user) } }
        router.post("projects") { request, _ in
            await self.authenticatedForm(request) { user, form in
                let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
                guard !name.isEmpty, name.count <= 200 else { throw CollectorError.badRequest("project.name", "name must be 1 to 200 characters") }
                let project = try await store.createProject(name: name)
                return Self.redirect("/projects/\(project.id)")
            }
        }
        router.get("projects/:id") { request, context in
            await self.authenticated(request) { user in try await self.projectPage(try Self.id(context), user) }
        }
        router.get("projects/:id/health") { request, context in
            await self.authenticated(request) { user in try await self.healthPage(try Self.id(context), user) }
        }
        router.get("projects/:id/prevented") { request, context in
            await self.authenticated(request) { user in try await self.preventedPage(try Self.id(context), user) }
        }
        router.get("projects/:id/config") { request, context in
            await self.authenticated(request) { user in try await self.configPage(try Self.id(context), user, error: nil) }
        }
        router.post("projects/:id/config") { request, context in
            await self.authenticatedForm(request) { user, form in
                let project = try Self.id(context)
                guard let document = try? JSONValue.parse(Data((form["document"] ?? "").utf8)) else {
                    return try await self.configPage(project, user, error: "The document is not valid JSON.")
                }
                do {
                    _ = try await sdkConfig.publish(projectID: project, document: document)
                } catch let error as CollectorError {
                    return try await self.configPage(project, user, error: error.message)
                }
                return Self.redirect("/projects/\(project)/config")
            }
        }
        router.post("projects/:id/config/rollback") { request, context in
            await self.authenticatedForm(request) { user, form in
                let project = try Self.id(context)
                guard let version = form["version"].flatMap({ Int64($0) }) else {
                    throw CollectorError.badRequest("sdk_config.invalid", "no version to roll back to")
                }
                _ = try await sdkConfig.rollback(projectID: project, to: version)
                return Self.redirect("/projects/\(project)/config")
            }
        }
        router.get("issues/:id") { request, context in
            await self.authenticated(request) { user in try await self.issuePage(try Self.id(context), user) }
        }
        router.post("issues/:id/status") { request, context in
            await self.authenticatedForm(request) { user, form in
                let id = try Self.id(context)
                guard let status = form["status"].flatMap(IssueStatus.init(rawValue:)) else {
                    throw CollectorError.badRequest("issue.status", "unknown status")
                }
                guard try await store.setIssueStatus(id: id, status) != nil else { throw CollectorError.notFound("issue.unknown", "no such issue") }
                return Self.redirect("/issues/\(id)")
            }
        }
    }

    // MARK: Sessions

    static func cookies(_ request: Request) -> [String: String] {
        var result: [String: String] = [:]
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                result[parts[0].trimmingCharacters(in: .whitespaces)] = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return result
    }

    func currentUser(_ request: Request) async throws -> User? {
        guard let token = Self.cookies(request)[Self.sessionCookie], !token.isEmpty else { return nil }
        guard let session = try await store.webSession(tokenHash: APIAuth.hash(token), now: Date()) else { return nil }
        return User(email: session.email, csrf: session.csrfToken)
    }

    func cookie(_ name: String, _ value: String, maxAge: Int) -> String {
        "\(name)=\(value); Path=/; HttpOnly; SameSite=Lax; Max-Age=\(maxAge)" + (secureCookies ? "; Secure" : "")
    }

    func login(_ request: Request) async throws -> Response {
        let form = try await Self.form(request)
        guard let expected = Self.cookies(request)[Self.loginCookie], let presented = form["csrf"],
              CryptoSupport.constantTimeEqual(Array(expected.utf8), Array(presented.utf8))
        else { return loginPage(error: "The login form expired; please try again.", status: .forbidden) }
        let email = form["email"] ?? ""
        guard let account = try await store.account(email: email),
              PasswordHasher.verify(form["password"] ?? "", against: account.passwordHash)
        else {
            logger.info("login refused", metadata: ["email": "\(email)"])
            return loginPage(error: "Wrong e-mail or password.", status: .unauthorized)
        }
        let token = Self.randomToken()
        try await store.insertWebSession(tokenHash: APIAuth.hash(token), accountID: account.id, csrfToken: Self.randomToken(),
                                         expires: Date().addingTimeInterval(Self.sessionLifetime))
        logger.info("login", metadata: ["email": "\(email)"])
        var response = Self.redirect("/")
        response.headers[values: .setCookie] = [
            cookie(Self.sessionCookie, token, maxAge: Int(Self.sessionLifetime)), cookie(Self.loginCookie, "", maxAge: 0),
        ]
        return response
    }

    func logout(_ request: Request) async throws -> Response {
        let form = try await Self.form(request)
        if let user = try await currentUser(request), let token = Self.cookies(request)[Self.sessionCookie] {
            guard form["csrf"] == user.csrf else { throw CollectorError.forbidden("csrf.invalid", "the form's CSRF token does not match") }
            try await store.deleteWebSession(tokenHash: APIAuth.hash(token))
        }
        var response = Self.redirect("/login")
        response.headers[.setCookie] = cookie(Self.sessionCookie, "", maxAge: 0)
        return response
    }

    static func randomToken() -> String { CryptoSupport.randomBytes(32).map { String(format: "%02x", $0) }.joined() }

    func authenticated(_ request: Request, _ body: (User) async throws -> Response) async -> Response {
        await page {
            guard let user = try await currentUser(request) else { return Self.redirect("/login") }
            return try await body(user)
        }
    }

    func authenticatedForm(_ request: Request, _ body: (User, [String: String]) async throws -> Response) async -> Response {
        await page {
            guard let user = try await currentUser(request) else { return Self.redirect("/login") }
            let form = try await Self.form(request)
            guard let presented = form["csrf"], CryptoSupport.constantTimeEqual(Array(presented.utf8), Array(user.csrf.utf8)) else {
                throw CollectorError.forbidden("csrf.invalid", "the form's CSRF token does not match")
            }
            return try await body(user, form)
        }
    }

    func page(_ body: () async throws -> Response) async -> Response {
        do { return try await body() } catch {
            let failure = error as? CollectorError ?? .storage("the page could not be shown")
            if !(error is CollectorError) { logger.error("page failed", metadata: ["error": "\(error)"]) }
            return Self.html(Self.layout(title: "Error", user: nil, body: "<h1>\(failure.status)</h1><p>\(Self.escape(failure.message))</p>"),
                             status: .init(code: failure.status))
        }
    }

    // MARK: Pages

    func loginPage(error: String?, status: HTTPResponse.Status = .ok) -> Response {
        let csrf = Self.randomToken()
        let body = """
            <h1>Sign in</h1>
            \(error.map { "<p class=\"error\">\(Self.escape($0))</p>" } ?? "")
            <form method="post" action="/login">
            <input type="hidden" name="csrf" value="\(csrf)">
            <label>E-mail <input name="email" autocomplete="username" required></label>
            <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
            <button>Sign in</button></form>
            """
        var response = Self.html(Self.layout(title: "Sign in", user: nil, body: body), status: status)
        response.headers[.setCookie] = cookie(Self.loginCookie, csrf, maxAge: 3600)
        return response
    }

    func baseURL(_ request: Request) -> String {
        if let publicURL { return publicURL }
        return "http://" + (request.head.authority ?? "127.0.0.1")
    }

    func home(_ request: Request, _ user: User) async throws -> Response {
        var rows = ""
        for project in try await store.projects() {
            let issues = try await store.issues(projectID: project.id)
            let open = issues.filter { $0.status == .unresolved || $0.status == .regressed }.count
            rows += "<tr><td><a href=\"/projects/\(project.id)\">\(Self.escape(project.name))</a></td><td>\(open)</td>"
                + "<td><code>\(Self.escape(project.dsn(baseURL: baseURL(request))))</code></td></tr>"
        }
        let body = """
            <h1>Projects</h1>
            <table><tr><th>Project</th><th>Open issues</th><th>DSN</th></tr>\(rows)</table>
            <h2>New project</h2>
            <form method="post" action="/projects">\(Self.csrfField(user))
            <label>Name <input name="name" required maxlength="200"></label><button>Create</button></form>
            """
        return Self.html(Self.layout(title: "Projects", user: user, body: body))
    }

    func project(_ id: Int64) async throws -> Project {
        guard let project = try await store.project(id: id) else { throw CollectorError.notFound("project.unknown", "no such project") }
        return project
    }

    static func projectNav(_ project: Project) -> String {
        """
        <p class="nav"><a href="/projects/\(project.id)">Issues</a> · <a href="/projects/\(project.id)/health">Release health</a> ·
        <a href="/projects/\(project.id)/prevented">Prevented crashes</a> · <a href="/projects/\(project.id)/config">Remote switches</a></p>
        """
    }

    func projectPage(_ id: Int64, _ user: User) async throws -> Response {
        let project = try await project(id)
        var rows = ""
        for issue in try await store.issues(projectID: id) {
            rows += """
                <tr class="\(issue.status.rawValue)"><td><a href="/issues/\(issue.id)">\(Self.escape(issue.title))</a>
                <div class="culprit">\(Self.escape(issue.culprit))</div></td><td>\(issue.level)</td><td>\(issue.eventCount)</td>
                <td>\(issue.userCount)</td><td>\(Self.date(issue.firstSeen))</td><td>\(Self.date(issue.lastSeen))</td>
                <td>\(Self.escape(issue.lastRelease ?? ""))</td><td>\(Self.statusLabel(issue.status))</td></tr>
                """
        }
        let body = """
            <h1>\(Self.escape(project.name))</h1>\(Self.projectNav(project))
            <table><tr><th>Issue</th><th>Level</th><th>Events</th><th>Users</th><th>First seen</th><th>Last seen</th><th>Release</th><th>Status</th></tr>
            \(rows.isEmpty ? "<tr><td colspan=\"8\">No events yet.</td></tr>" : rows)</table>
            """
        return Self.html(Self.layout(title: project.name, user: user, body: body))
    }

    func healthPage(_ id: Int64, _ user: User) async throws -> Response {
        let project = try await project(id)
        let health = try await store.releaseHealth(projectID: id)
        var rows = ""
        for release in health {
            rows += "<tr><td>\(Self.escape(release.release))</td><td>\(release.sessions)</td><td>\(release.crashedSessions)</td>"
                + "<td>\(Self.percent(release.crashFreeSessionRate))</td><td>\(release.users)</td><td>\(Self.percent(release.crashFreeUserRate))</td></tr>"
        }
        let chart = Self.barChart(health.map { ($0.release, $0.crashFreeSessionRate * 100) }, unit: "% crash-free sessions", maximum: 100)
        let body = """
            <h1>Release health: \(Self.escape(project.name))</h1>\(Self.projectNav(project))\(chart)
            <table><tr><th>Release</th><th>Sessions</th><th>Crashed</th><th>Crash-free sessions</th><th>Users</th><th>Crash-free users</th></tr>
            \(rows.isEmpty ? "<tr><td colspan=\"6\">No sessions yet.</td></tr>" : rows)</table>
            """
        return Self.html(Self.layout(title: "Release health", user: user, body: body))
    }

    func preventedPage(_ id: Int64, _ user: User) async throws -> Response {
        let project = try await project(id)
        let incidents = try await store.incidents(projectID: id)
        var perGuard: [String: Int64] = [:]
        for incident in incidents { perGuard[incident.guardName, default: 0] += incident.count }
        let chart = Self.barChart(perGuard.sorted { $0.value > $1.value }.map { ($0.key, Double($0.value)) }, unit: "prevented crashes",
                                  maximum: Double(perGuard.values.max() ?? 1))
        var rows = ""
        for incident in incidents {
            rows += "<tr><td>\(Self.escape(incident.guardName))</td><td>\(Self.escape(incident.release ?? "—"))</td>"
                + "<td>\(incident.count)</td><td>\(Self.date(incident.lastSeen))</td></tr>"
        }
        let body = """
            <h1>Prevented crashes: \(Self.escape(project.name))</h1>\(Self.projectNav(project))\(chart)
            <table><tr><th>Guard</th><th>Release</th><th>Incidents</th><th>Last seen</th></tr>
            \(rows.isEmpty ? "<tr><td colspan=\"4\">No incidents yet.</td></tr>" : rows)</table>
            """
        return Self.html(Self.layout(title: "Prevented crashes", user: user, body: body))
    }

    func configPage(_ id: Int64, _ user: User, error: String?) async throws -> Response {
        let project = try await project(id)
        let history = try await store.sdkConfigHistory(projectID: id)
        let current = history.first.map { String(decoding: $0.document, as: UTF8.self) } ?? "{\"rules\": []}"
        var rows = ""
        for version in history {
            let restore = version.version == history.first?.version ? "current" : """
                <form method="post" action="/projects/\(id)/config/rollback">\(Self.csrfField(user))
                <input type="hidden" name="version" value="\(version.version)"><button>Roll back to this</button></form>
                """
            rows += "<tr><td>\(version.version)</td><td>\(Self.date(version.createdAt))</td>"
                + "<td>\(version.restoredFrom.map { "restores \($0)" } ?? "")</td><td><pre>\(Self.escape(String(decoding: version.document, as: UTF8.self)))</pre></td><td>\(restore)</td></tr>"
        }
        let body = """
            <h1>Remote switches: \(Self.escape(project.name))</h1>\(Self.projectNav(project))
            <p>Signed with the project's Ed25519 key; public key for the app: <code>\(Self.escape(project.configSigningPublicKey))</code></p>
            \(error.map { "<p class=\"error\">\(Self.escape($0))</p>" } ?? "")
            <form method="post" action="/projects/\(id)/config">\(Self.csrfField(user))
            <label>Document (JSON; version and issued_at are set on publish)<br>
            <textarea name="document" rows="14" cols="90">\(Self.escape(current))</textarea></label><br><button>Publish</button></form>
            <h2>History</h2><table><tr><th>Version</th><th>Published</th><th></th><th>Document</th><th></th></tr>\(rows)</table>
            """
        return Self.html(Self.layout(title: "Remote switches", user: user, body: body))
    }

    func issuePage(_ id: Int64, _ user: User) async throws -> Response {
        guard let issue = try await store.issue(id: id) else { throw CollectorError.notFound("issue.unknown", "no such issue") }
        let project = try await project(issue.projectID)
        let events = try await store.events(issueID: id, limit: 100)
        var latest: JSONValue?
        var osCounts: [String: Int] = [:]
        var releaseCounts: [String: Int] = [:]
        for (index, summary) in events.enumerated() {
            releaseCounts[summary.release ?? "—", default: 0] += 1
            guard let payload = try await store.eventPayload(projectID: issue.projectID, eventID: summary.eventID),
                  let json = try? JSONValue.parse(payload) else { continue }
            if index == 0 { latest = json }
            let os = [json["contexts"]?["os"]?["name"]?.stringValue, json["contexts"]?["os"]?["version"]?.stringValue].compactMap { $0 }.joined(separator: " ")
            osCounts[os.isEmpty ? "—" : os, default: 0] += 1
        }
        let actions = IssueStatus.allCases.filter { $0 != issue.status && $0 != .regressed }.map { status in
            "<form class=\"inline\" method=\"post\" action=\"/issues/\(id)/status\">\(Self.csrfField(user))"
                + "<input type=\"hidden\" name=\"status\" value=\"\(status.rawValue)\"><button>\(Self.statusLabel(status))</button></form>"
        }.joined()
        let eventRows = events.prefix(50).map {
            "<tr><td><code>\($0.eventID)</code></td><td>\(Self.date($0.received))</td><td>\(Self.escape($0.release ?? ""))</td>"
                + "<td>\(Self.escape($0.environment ?? ""))</td><td>\(Self.escape($0.platform ?? ""))</td></tr>"
        }.joined()
        let body = """
            <h1>\(Self.escape(issue.title))</h1>\(Self.projectNav(project))
            <p class="culprit">\(Self.escape(issue.culprit))</p>
            <p>\(Self.statusLabel(issue.status))\(issue.resolvedInRelease.map { " in \(Self.escape($0))" } ?? "") · \(issue.eventCount) events ·
            \(issue.userCount) users · first seen \(Self.date(issue.firstSeen))\(issue.firstRelease.map { " in \(Self.escape($0))" } ?? "") ·
            last seen \(Self.date(issue.lastSeen))\(issue.lastRelease.map { " in \(Self.escape($0))" } ?? "") · grouping \(issue.groupingAlgorithm)</p>
            <div>\(actions)</div>
            <h2>Tags</h2>\(Self.breakdown("Release", releaseCounts))\(Self.breakdown("OS", osCounts))
            \(latest.map(Self.eventDetails) ?? "")
            <h2>Events</h2><table><tr><th>Event</th><th>Received</th><th>Release</th><th>Environment</th><th>Platform</th></tr>\(eventRows)</table>
            """
        return Self.html(Self.layout(title: issue.title, user: user, body: body))
    }

    /// The latest event: exceptions with their frames (crashing frame first, in-app marked),
    /// registers, threads, breadcrumbs and tags.
    static func eventDetails(_ event: JSONValue) -> String {
        var html = "<h2>Latest event</h2>"
        for exception in Grouping.exceptions(event).reversed() {
            let mechanism = exception["mechanism"]
            html += "<h3>\(escape(exception["type"]?.stringValue ?? "Error")): \(escape(exception["value"]?.stringValue ?? ""))</h3>"
            if let mechanism {
                html += "<p>mechanism \(escape(mechanism["type"]?.stringValue ?? "?")), handled: \(mechanism["handled"]?.boolValue.map(String.init) ?? "unknown")"
                    + (mechanism["synthetic"]?.boolValue == true ? ", synthetic" : "") + "</p>"
            }
            html += frames(exception["stacktrace"])
            if let registers = exception["stacktrace"]?["registers"]?.objectValue, !registers.isEmpty {
                html += "<h4>Registers</h4><table>" + registers.sorted { $0.key < $1.key }.map {
                    "<tr><td>\(escape($0.key))</td><td><code>\(escape(text($0.value)))</code></td></tr>"
                }.joined() + "</table>"
            }
        }
        if let threads = event["threads"]?["values"]?.arrayValue, !threads.isEmpty {
            html += "<h3>Threads</h3>"
            for thread in threads {
                let flags = [thread["crashed"]?.boolValue == true ? "crashed" : nil, thread["main"]?.boolValue == true ? "main" : nil].compactMap { $0 }
                html += "<h4>\(escape(text(thread["id"] ?? .null))) \(escape(thread["name"]?.stringValue ?? "")) \(flags.joined(separator: ", "))</h4>"
                html += frames(thread["stacktrace"])
            }
        }
        let crumbs = event["breadcrumbs"]?["values"]?.arrayValue ?? event["breadcrumbs"]?.arrayValue ?? []
        if !crumbs.isEmpty {
            html += "<h3>Breadcrumbs</h3><table><tr><th>Time</th><th>Category</th><th>Level</th><th>Message</th></tr>"
            html += crumbs.suffix(100).map {
                "<tr><td>\(escape(text($0["timestamp"] ?? .null)))</td><td>\(escape($0["category"]?.stringValue ?? ""))</td>"
                    + "<td>\(escape($0["level"]?.stringValue ?? ""))</td><td>\(escape($0["message"]?.stringValue ?? text($0["data"] ?? .null)))</td></tr>"
            }.joined() + "</table>"
        }
        var tags: [(String, String)] = []
        if let object = event["tags"]?.objectValue { tags = object.map { ($0.key, text($0.value)) } }
        if let list = event["tags"]?.arrayValue {
            tags = list.compactMap { pair in pair.arrayValue.flatMap { $0.count == 2 ? (text($0[0]), text($0[1])) : nil } }
        }
        if !tags.isEmpty {
            html += "<h3>Event tags</h3><table>" + tags.sorted { $0.0 < $1.0 }.map { "<tr><td>\(escape($0.0))</td><td>\(escape($0.1))</td></tr>" }.joined() + "</table>"
        }
        return html
    }

    static func frames(_ stacktrace: JSONValue?) -> String {
        guard let frames = stacktrace?["frames"]?.arrayValue, !frames.isEmpty else { return "" }
        let rows = frames.reversed().map { frame -> String in
            let inApp = frame["in_app"]?.boolValue == true
            let location = [frame["filename"]?.stringValue ?? frame["module"]?.stringValue ?? frame["package"]?.stringValue,
                            frame["lineno"].map { text($0) }].compactMap { $0 }.joined(separator: ":")
            return "<tr class=\"\(inApp ? "in-app" : "system")\"><td>\(inApp ? "in app" : "")</td>"
                + "<td><code>\(escape(frame["function"]?.stringValue ?? frame["raw_function"]?.stringValue ?? "?"))</code></td>"
                + "<td>\(escape(location))</td><td><code>\(escape(frame["instruction_addr"].map { text($0) } ?? ""))</code></td></tr>"
        }
        return "<table class=\"frames\"><tr><th></th><th>Function (crashing frame first)</th><th>Location</th><th>Address</th></tr>\(rows.joined())</table>"
    }

    // MARK: HTML helpers

    /// `text` with `&`, `<`, `>`, `"` and `'` replaced by character references.
    static func escape(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            case "\u{0}": output += "\u{FFFD}"
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }

    static func text(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): return text
        case .null: return ""
        default: return String(decoding: value.jsonData(), as: UTF8.self)
        }
    }

    static func csrfField(_ user: User) -> String { "<input type=\"hidden\" name=\"csrf\" value=\"\(escape(user.csrf))\">" }

    static func date(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withSpaceBetweenDateAndTime]
        return formatter.string(from: date) + " UTC"
    }

    static func percent(_ rate: Double) -> String { String(format: "%.2f %%", rate * 100) }

    static func statusLabel(_ status: IssueStatus) -> String {
        switch status {
        case .unresolved: return "Unresolved"
        case .resolved: return "Resolved"
        case .resolvedInNextRelease: return "Resolved in next release"
        case .ignored: return "Ignored"
        case .regressed: return "Regressed"
        }
    }

    static func breakdown(_ title: String, _ counts: [String: Int]) -> String {
        guard !counts.isEmpty else { return "" }
        let total = counts.values.reduce(0, +)
        return "<table class=\"tags\"><tr><th>\(escape(title))</th><th>Events</th></tr>" + counts.sorted { $0.value > $1.value }.prefix(10).map {
            "<tr><td>\(escape($0.key))</td><td>\($0.value) (\(percent(Double($0.value) / Double(total))))</td></tr>"
        }.joined() + "</table>"
    }

    /// A horizontal bar chart as inline SVG (no script, no external resource).
    static func barChart(_ bars: [(String, Double)], unit: String, maximum: Double) -> String {
        guard !bars.isEmpty else { return "" }
        let rowHeight = 22, labelWidth = 180, barWidth = 420
        let height = bars.count * rowHeight + 24
        var svg = "<svg role=\"img\" aria-label=\"\(escape(unit))\" width=\"\(labelWidth + barWidth + 90)\" height=\"\(height)\" xmlns=\"http://www.w3.org/2000/svg\">"
        for (index, bar) in bars.prefix(30).enumerated() {
            let y = index * rowHeight + 4
            let width = maximum > 0 ? Int((max(0, bar.1) / maximum) * Double(barWidth)) : 0
            svg += "<text x=\"0\" y=\"\(y + 15)\" font-size=\"12\">\(escape(String(bar.0.prefix(28))))</text>"
            svg += "<rect x=\"\(labelWidth)\" y=\"\(y)\" width=\"\(width)\" height=\"16\" fill=\"#4a7bd0\"></rect>"
            svg += "<text x=\"\(labelWidth + width + 6)\" y=\"\(y + 15)\" font-size=\"12\">\(String(format: "%.1f", bar.1))</text>"
        }
        svg += "<text x=\"\(labelWidth)\" y=\"\(height - 4)\" font-size=\"11\" fill=\"#555\">\(escape(unit))</text></svg>"
        return "<figure>\(svg)</figure>"
    }

    static func layout(title: String, user: User?, body: String) -> String {
        let account = user.map {
            "<form class=\"inline\" method=\"post\" action=\"/logout\">\(csrfField($0))\(escape($0.email)) <button>Sign out</button></form>"
        } ?? ""
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>\(escape(title)) · CrashShield collector</title>
            <style>body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0}
            td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}.culprit{color:#666;font-size:12px}
            .error{color:#b00}.in-app td{background:#eef4ff}.inline{display:inline}.regressed td{background:#fff0f0}
            pre{white-space:pre-wrap;max-width:50em}header{display:flex;justify-content:space-between}</style></head>
            <body><header><a href="/">CrashShield collector</a><span>\(account)</span></header>\(body)</body></html>
            """
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [
            .contentType: "text/html; charset=utf-8",
            .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            .cacheControl: "no-store",
        ], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    static func id(_ context: BasicRequestContext) throws -> Int64 {
        guard let id = context.parameters.get("id").flatMap(Int64.init) else { throw CollectorError.notFound("request.id", "no such page") }
        return id
    }

    /// An `application/x-www-form-urlencoded` body (at most 256 KiB).
    static func form(_ request: Request) async throws -> [String: String] {
        var request = request
        let buffer: ByteBuffer
        do { buffer = try await request.collectBody(upTo: 256 * 1024) } catch {
            throw CollectorError.tooLarge("body.too_large", "the form is larger than 256 KiB")
        }
        var result: [String: String] = [:]
        for pair in String(buffer: buffer).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            result[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return result
    }
}
