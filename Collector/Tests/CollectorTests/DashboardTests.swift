@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Logging
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A browser-like client for the dashboard: keeps cookies it is given, does not follow redirects.
final class Browser: Sendable {
    let baseURL: String
    private let session: URLSession
    private let cookies = Mutex<[String: String]>([:])

    init(baseURL: String) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        session = URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
    }

    func cookie(_ name: String) -> String? { cookies.withLock { $0[name] } }
    func setCookie(_ name: String, _ value: String?) { cookies.withLock { $0[name] = value } }

    func get(_ path: String) async throws -> TestResponse { try await send(path, method: "GET") }

    func post(_ path: String, form: [(String, String)], headers: [String: String] = [:]) async throws -> TestResponse {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
        return try await send(path, method: "POST", body: Data(body.utf8),
                              headers: headers.merging(["Content-Type": "application/x-www-form-urlencoded"]) { first, _ in first })
    }

    func send(_ path: String, method: String, body: Data? = nil, headers: [String: String] = [:]) async throws -> TestResponse {
        var request = URLRequest(url: URL(string: baseURL + path)!)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let jar = cookies.withLock { $0 }
        if !jar.isEmpty { request.setValue(jar.map { "\($0.key)=\($0.value)" }.joined(separator: "; "), forHTTPHeaderField: "Cookie") }
        let (data, response) = try await session.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        // Set-Cookie: name=value; attributes (the dashboard sets one cookie per response or two
        // joined with ", " by Foundation; every value here is hex, so splitting on ", " is safe).
        if let setCookie = fields["set-cookie"] {
            for cookie in setCookie.components(separatedBy: ", ") {
                let pair = cookie.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard pair.count == 2 else { continue }
                let name = String(pair[0]).trimmingCharacters(in: .whitespaces)
                let value = String(pair[1])
                self.setCookie(name, cookie.contains("Max-Age=0") || value.isEmpty ? nil : value)
            }
        }
        return TestResponse(status: http.statusCode, headers: fields, body: data)
    }

    /// Opens the login page (getting the login cookie) and logs in.
    func logIn(password: String = DashboardTests.adminPassword) async throws -> TestResponse {
        let page = try await get("/login")
        #expect(page.status == 200)
        let loginToken = try #require(cookie("csc_login"))
        return try await post("/login?next=%2Fprojects", form: [("login_csrf", loginToken), ("name", "admin"), ("password", password)])
    }

    /// The CSRF token in the page's hidden fields.
    static func csrfToken(in page: TestResponse) -> String? {
        guard let range = page.text.range(of: "name=\"csrf_token\" value=\"") else { return nil }
        return String(page.text[range.upperBound...].prefix(64))
    }
}

@Suite("Collector dashboard and accounts")
struct DashboardTests {
    static let adminPassword = "correct horse battery staple"

    static func run(_ body: @escaping @Sendable (Harness, Browser) async throws -> Void) async throws {
        try await Harness.run({ $0.adminPassword = Self.adminPassword }) { harness in
            try await body(harness, Browser(baseURL: harness.client.baseURL))
        }
    }

    // MARK: Escaping

    @Test func escapingTurnsMarkupAndOddUnicodeIntoText() {
        #expect(HTML.escape("<script>alert('x')</script>") == "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")
        #expect(HTML.escape("a & \"b\"") == "a &amp; &quot;b&quot;")
        // Bidirectional overrides and control characters become visible code points.
        #expect(HTML.escape("abc\u{202E}fed") == "abcU+202Efed")
        #expect(HTML.escape("nul\u{0}bell\u{7}") == "nulU+0000bellU+0007")
        // Tabs, newlines and ordinary non-ASCII text stay as they are.
        #expect(HTML.escape("line\n\ttab é 漢字 👩‍👩‍👧") == "line\n\ttab é 漢字 👩‍👩‍👧")
        let hostile = "<img src=x onerror=alert(1)>"
        let fragment: HTML = "<td title=\"\(hostile)\">\(hostile)</td>"
        #expect(fragment.rendered == "<td title=\"&lt;img src=x onerror=alert(1)&gt;\">&lt;img src=x onerror=alert(1)&gt;</td>")
        let nested: HTML = "<p>\(fragment)</p>"
        #expect(nested.rendered == "<p>" + fragment.rendered + "</p>")
    }

    // MARK: Passwords and sessions

    @Test func passwordHashesVerifyAndUseFreshSalts() {
        let first = PasswordHasher.hash("hunter2")
        let second = PasswordHasher.hash("hunter2")
        #expect(first != second)
        let parts = first.split(separator: "$")
        #expect(parts.count == 4 && parts[0] == "pbkdf2-sha256")
        #expect((Int(parts[1]) ?? 0) >= 200_000)
        #expect(PasswordHasher.verify("hunter2", against: first))
        #expect(PasswordHasher.verify("hunter2", against: second))
        #expect(!PasswordHasher.verify("hunter3", against: first))
        #expect(!PasswordHasher.verify("", against: first))
        #expect(!PasswordHasher.verify("hunter2", against: "pbkdf2-sha256$210000$AAAA$"))
        #expect(!PasswordHasher.verify("hunter2", against: "plain:hunter2"))
        // A stored hash with a trivially low iteration count is refused.
        #expect(!PasswordHasher.verify("hunter2", against: PasswordHasher.hash("hunter2", iterations: 1)))
        #expect(PasswordHasher.constantTimeEqual("abc", "abc"))
        #expect(!PasswordHasher.constantTimeEqual("abc", "abd"))
        #expect(!PasswordHasher.constantTimeEqual("abc", "abcd"))
    }

    @Test func sessionsExpireAndLogoutEndsThem() async throws {
        try await TestDatabase.withStore { store in
            let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
            _ = try await AccountService.bootstrap(store: store, configuredPassword: "pw-123456", logger: Logger(label: "t"))
            let service = AccountService(store: store, sessionLifetime: 3600, now: { clock.withLock { $0 } })
            let (token, session) = try await service.login(name: "admin", password: "pw-123456")
            #expect(session.expiresAt.timeIntervalSince(session.createdAt) == 3600)
            #expect(try await service.session(token: token)?.account.name == "admin")
            #expect(try await service.session(token: String(repeating: "0", count: 64)) == nil)
            clock.withLock { $0 = $0.addingTimeInterval(3599) }
            #expect(try await service.session(token: token) != nil)
            clock.withLock { $0 = $0.addingTimeInterval(2) }
            #expect(try await service.session(token: token) == nil)
            #expect(try await store.deleteExpiredLoginSessions(now: clock.withLock { $0 }) == 1)

            let (second, _) = try await service.login(name: "admin", password: "pw-123456")
            #expect(try await service.session(token: second) != nil)
            try await service.logout(token: second)
            #expect(try await service.session(token: second) == nil)
        }
    }

    @Test func adminIsCreatedOnceWithAGeneratedPasswordWhenNoneIsConfigured() async throws {
        try await TestDatabase.withStore { store in
            let generated = try #require(try await AccountService.bootstrap(store: store, configuredPassword: nil, logger: Logger(label: "t")))
            #expect(generated.count >= 24)
            #expect(try await AccountService.bootstrap(store: store, configuredPassword: "other", logger: Logger(label: "t")) == nil)
            #expect(try await store.accountCount() == 1)
            let service = AccountService(store: store)
            #expect(try await service.login(name: "admin", password: generated).session.account.isAdmin)
        }
    }

    @Test func repeatedFailedLoginsAreRateLimited() async throws {
        try await TestDatabase.withStore { store in
            _ = try await AccountService.bootstrap(store: store, configuredPassword: "right-password", logger: Logger(label: "t"))
            let service = AccountService(store: store, limiter: LoginRateLimiter(freeFailures: 3, perAddress: 100, window: 900))
            for _ in 0..<3 {
                await #expect(throws: LoginFailure(code: "login.invalid", retryAfter: nil)) { try await service.login(name: "admin", password: "wrong") }
            }
            // Even the right password is refused until the window passes.
            do {
                _ = try await service.login(name: "admin", password: "right-password")
                Issue.record("a rate-limited login succeeded")
            } catch let failure as LoginFailure {
                #expect(failure.code == "login.rate_limited")
                #expect((failure.retryAfter ?? 0) > 0)
            }
            // Another name is not affected.
            await #expect(throws: LoginFailure(code: "login.invalid", retryAfter: nil)) { try await service.login(name: "nobody", password: "x") }
        }
    }

    // MARK: HTTP

    static let pages = ["/projects", "/projects/new", "/projects/1", "/projects/1?status=all", "/projects/1/settings", "/projects/1/health",
                        "/projects/1/prevented", "/projects/1/launch", "/projects/1/config", "/issues/1", "/account", "/accounts"]

    @Test func everyPageRedirectsToLoginWithoutASession() async throws {
        try await Self.run { harness, browser in
            for page in Self.pages {
                let response = try await browser.get(page)
                #expect(response.status == 303, "\(page)")
                #expect(response.headers["location"]?.hasPrefix("/login?next=") == true, "\(page)")
            }
            let post = try await browser.post("/issues/1/status", form: [("status", "resolved"), ("csrf_token", "x")])
            #expect(post.status == 303)
            #expect(post.headers["location"] == "/login")
            // A made-up session cookie is no session.
            browser.setCookie("csc_session", String(repeating: "ab", count: 32))
            #expect(try await browser.get("/projects").status == 303)
            // The JSON API keeps its tokens; ingest keeps its project keys.
            #expect(try await harness.client.execute("/api/0/projects").status == 401)
            #expect(try await harness.api("/api/0/projects").status == 200)
        }
    }

    @Test func loginSetsAnHttpOnlySameSiteCookieAndLogoutEndsTheSession() async throws {
        try await Self.run { _, browser in
            let wrong = try await browser.logIn(password: "wrong")
            #expect(wrong.status == 401)
            #expect(browser.cookie("csc_session") == nil)
            // The login form's own CSRF token is required.
            let forged = try await browser.post("/login", form: [("name", "admin"), ("password", Self.adminPassword)])
            #expect(forged.status == 403)

            let response = try await browser.logIn()
            #expect(response.status == 303)
            #expect(response.headers["location"] == "/projects")
            let setCookie = try #require(response.headers["set-cookie"])
            #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Lax") && !setCookie.contains("Secure"))
            let projects = try await browser.get("/projects")
            #expect(projects.status == 200)
            #expect(projects.headers["content-security-policy"]?.contains("default-src 'none'") == true)
            let csrf = try #require(Browser.csrfToken(in: projects))
            #expect(try await browser.post("/logout", form: [("csrf_token", csrf)]).status == 303)
            #expect(try await browser.get("/projects").status == 303)
        }
    }

    @Test func theLoginPageAnswers429AfterRepeatedFailures() async throws {
        try await Self.run { _, browser in
            for _ in 0..<5 { #expect(try await browser.logIn(password: "wrong").status == 401) }
            let limited = try await browser.logIn()
            #expect(limited.status == 429)
            #expect(Int(limited.headers["retry-after"] ?? "") ?? 0 > 0)
            #expect(limited.text.contains("Too many failed logins"))
            #expect(browser.cookie("csc_session") == nil)
        }
    }

    @Test func theRootLeadsToTheProjectsAfterLogin() async throws {
        try await Self.run { _, browser in
            #expect(try await browser.get("/").headers["location"]?.hasPrefix("/login") == true)
            #expect(try await browser.logIn().status == 303)
            let root = try await browser.get("/")
            #expect(root.status == 303 && root.headers["location"] == "/projects")
        }
    }

    @Test func aProjectCreatedFromTheFormIsStoredAndShowsItsDSN() async throws {
        try await Self.run { harness, browser in
            #expect(try await browser.logIn().status == 303)
            let form = try await browser.get("/projects/new")
            let csrf = try #require(Browser.csrfToken(in: form))
            #expect(try await browser.post("/projects", form: [("name", "   "), ("csrf_token", csrf)]).status == 400)
            let created = try await browser.post("/projects", form: [("name", "second app"), ("csrf_token", csrf)])
            #expect(created.status == 303)
            let names = try await harness.api("/api/0/projects").json?.arrayValue?.compactMap { $0["name"]?.stringValue }
            #expect(names == ["default", "second app"])
            let location = try #require(created.headers["location"])
            let settings = try await browser.get(location)
            #expect(settings.status == 200)
            let key = try #require(try await harness.api("/api/0/projects").json?.arrayValue?.last?["public_key"]?.stringValue)
            #expect(settings.text.contains("\(key)@127.0.0.1"))
        }
    }

    @Test func cookiesAreSecureOnlyWhenAskedFor() async throws {
        try await TestDatabase.withStore { store in
            let token = String(repeating: "ab", count: 32)
            let secure = AccountService(store: store, secureCookies: true).sessionCookie(token)
            #expect(secure == "csc_session=\(token); Path=/; Max-Age=43200; HttpOnly; SameSite=Lax; Secure")
            #expect(!AccountService(store: store).sessionCookie(token).contains("Secure"))
            #expect(AccountService(store: store).clearedSessionCookie().contains("csc_session=; Path=/; Max-Age=0"))
        }
    }

    @Test func postsWithoutTheSessionsCSRFTokenOrFromAnotherOriginAreRefused() async throws {
        try await Self.run { harness, browser in
            #expect(try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent())).status == 200)
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/issues/1")
            let csrf = try #require(Browser.csrfToken(in: page))
            let missing = try await browser.post("/issues/1/status", form: [("status", "resolved")])
            #expect(missing.status == 403)
            #expect(missing.text.contains("csrf.token"))
            #expect(try await browser.post("/issues/1/status", form: [("status", "resolved"), ("csrf_token", String(repeating: "0", count: 64))]).status == 403)
            #expect(try await browser.post("/projects", form: [("name", "sneaky")]).status == 403)
            let crossSite = try await browser.post("/issues/1/status", form: [("status", "resolved"), ("csrf_token", csrf)],
                                                   headers: ["Origin": "http://evil.example"])
            #expect(crossSite.status == 403)
            #expect(crossSite.text.contains("csrf.origin"))
            #expect(try await harness.api("/api/0/issues/1").json?["status"]?.stringValue == "unresolved")
            #expect(try await harness.api("/api/0/projects").json?.arrayValue?.count == 1)

            let sameSite = try await browser.post("/issues/1/status", form: [("status", "resolved"), ("csrf_token", csrf), ("return", "/issues/1")],
                                                  headers: ["Origin": harness.client.baseURL])
            #expect(sameSite.status == 303)
            #expect(sameSite.headers["location"] == "/issues/1")
            #expect(try await harness.api("/api/0/issues/1").json?["status"]?.stringValue == "resolved")
            // `return` only takes local paths.
            let offsite = try await browser.post("/issues/1/status", form: [("status", "ignored"), ("csrf_token", csrf), ("return", "//evil.example/")])
            #expect(offsite.headers["location"] == "/issues/1")
        }
    }

    /// An event with threads, registers, breadcrumbs, tags and contexts.
    static func richEvent(release: String, guardName: String? = nil, hostile: Bool = false) -> JSONValue {
        let text = hostile ? "<script>alert(\"pwned\")</script>\u{202E}evil\u{0}👩‍👩‍👧 ' & é" : "plain"
        let event = Fixtures.exceptionEvent(type: hostile ? "<script>alert(1)</script>" : "SIGSEGV", value: text,
                                            functions: hostile ? ["main", "<img src=x onerror=alert(2)>"] : ["main", "loadConfig", "parseHeader"],
                                            release: release)
        guard case .object(var fields) = event else { return event }
        fields["threads"] = ["values": [
            ["id": 1, "name": .string(hostile ? "<b>main</b>" : "main"), "crashed": true,
             "stacktrace": ["frames": [["function": "start", "in_app": false], ["function": "parseHeader", "in_app": true]],
                            "registers": ["rip": "0x1000", "rsp": .string(hostile ? "<i>x</i>" : "0x7ff0")]]],
            ["id": 2, "name": "worker", "stacktrace": ["frames": [["function": "poll", "in_app": false]]]],
        ]]
        fields["breadcrumbs"] = ["values": [["timestamp": 1_800_000_000.5, "category": "ui.tap", "message": .string(text), "level": "info"]]]
        fields["tags"] = ["device.class": "phone", "custom": .string(text)]
        fields["contexts"] = ["os": ["name": "iOS", "version": "17.4"], "device": ["model": .string(hostile ? "<svg onload=alert(3)>" : "iPhone15,2")]]
        if let guardName {
            fields["level"] = "warning"
            fields["tags"] = ["guard": .string(guardName), "launch.phase": "launch", "launch.repair_step": "reset-caches"]
            fields["exception"] = ["values": [["type": "NSRangeException", "value": "index 3 beyond bounds",
                                               "mechanism": ["type": "crashshield", "handled": true],
                                               "stacktrace": ["frames": [["function": .string("-[Feed \(guardName)]"), "in_app": true]]]]]]
        }
        return .object(fields)
    }

    static func ingestSampleData(_ harness: Harness) async throws {
        #expect(try await harness.post(body: Fixtures.envelope(event: richEvent(release: "app@1.0.0"))).status == 200)
        #expect(try await harness.post(body: Fixtures.envelope(event: richEvent(release: "app@1.1.0"))).status == 200)
        #expect(try await harness.post(body: Fixtures.envelope(event: richEvent(release: "app@1.1.0", guardName: "container"))).status == 200)
        let now = Date().timeIntervalSince1970
        for (index, status) in ["exited", "crashed", "exited"].enumerated() {
            let session: JSONValue = ["sid": .string(UUID().uuidString), "did": .string("user-\(index)"), "started": .double(now - 60),
                                      "status": .string(status), "attrs": ["release": "app@1.1.0"]]
            #expect(try await harness.post(body: Fixtures.envelope(extra: [.json(type: "session", session)])).status == 200)
        }
        #expect(try await harness.api("/api/0/projects/\(harness.project.id)/sdk-config", method: "PUT",
                                      json: ["document": ["rules": [["guards": ["container": "neutralize"]]]]]).status == 201)
    }

    /// The launch page reads CrashShield's SDK as it sends: crash events tagged
    /// `launch.phase` = `launching` with their place in the loop, and the `info` event the SDK
    /// sends when a launch that ran a repair step completed, tagged `launch.repair_step`.
    @Test func launchPageCountsCrashShieldLaunchCrashesAndTheStepThatEndedTheLoop() async throws {
        try await Self.run { harness, browser in
            for consecutive in ["1", "2"] {
                guard case .object(var crash) = Fixtures.exceptionEvent(type: "SIGSEGV", functions: ["main", "csc_crash_segv"],
                                                                        release: "loop@2.0.0", synthetic: true) else { return }
                crash["level"] = "fatal"
                crash["tags"] = ["launch.phase": "launching", "launch.consecutive_crashes": .string(consecutive)]
                #expect(try await harness.post(body: Fixtures.envelope(event: .object(crash))).status == 200)
            }
            let ended: JSONValue = [
                "event_id": .string(Fixtures.eventID()), "timestamp": .double(Date().timeIntervalSince1970), "platform": "native",
                "level": "info", "release": "loop@2.0.0", "logger": "crashshield",
                "logentry": ["formatted": "Launch completed after repair step clear-caches ended a loop of 2 launch crashes in a row"],
                "fingerprint": ["crashshield.launch-loop-ended", "clear-caches"],
                "tags": ["launch.phase": "running", "launch.repair_step": "clear-caches", "launch.consecutive_crashes": "2"],
            ]
            #expect(try await harness.post(body: Fixtures.envelope(event: ended)).status == 200)
            #expect(try await browser.logIn().status == 303)
            let launch = try await browser.get("/projects/1/launch").text
            #expect(launch.contains("<td>loop@2.0.0</td><td class=\"num\">2</td><td class=\"num\">2</td>"), "\(launch)")
            #expect(launch.contains("<td class=\"mono\">clear-caches</td><td class=\"num\">1</td><td>loop@2.0.0</td>"), "\(launch)")
        }
    }

    @Test func everyPageRendersForALoggedInAdminWithData() async throws {
        try await Self.run { harness, browser in
            try await Self.ingestSampleData(harness)
            #expect(try await browser.logIn().status == 303)
            for page in Self.pages + ["/issues/2"] {
                let response = try await browser.get(page)
                #expect(response.status == 200, "\(page)")
                #expect(response.headers["content-type"] == "text/html; charset=utf-8", "\(page)")
                #expect(response.text.hasPrefix("<!DOCTYPE html>"), "\(page)")
            }
            let issue = try await browser.get("/issues/1").text
            for expected in ["parseHeader", "in app", "Registers", "0x7ff0", "Breadcrumbs", "ui.tap", "iOS 17.4", "iPhone15,2", "worker", "Thread 1"] {
                #expect(issue.contains(expected), "issue page lacks \(expected)")
            }
            let health = try await browser.get("/projects/1/health").text
            #expect(health.contains("<svg") && health.contains("app@1.1.0") && health.contains("66.67%"))
            let prevented = try await browser.get("/projects/1/prevented").text
            #expect(prevented.contains("<svg") && prevented.contains("container"))
            let launch = try await browser.get("/projects/1/launch").text
            #expect(launch.contains("reset-caches"))
            let settings = try await browser.get("/projects/1/settings").text
            #expect(settings.contains("\(harness.project.publicKey)@127.0.0.1"))
            let eventLink = try #require(issue.range(of: "href=\"/projects/1/events/").map { String(issue[$0.upperBound...].prefix(32)) })
            let raw = try await browser.get("/projects/1/events/\(eventLink)")
            #expect(raw.status == 200 && raw.headers["content-type"]?.hasPrefix("application/json") == true)
            #expect(raw.json?["event_id"]?.stringValue == eventLink)
            #expect(try await browser.get("/projects/1/events/" + String(repeating: "0", count: 32)).status == 404)
            let css = try await browser.get("/static/collector.css")
            #expect(css.status == 200 && css.headers["content-type"]?.hasPrefix("text/css") == true)
            #expect(try await browser.get("/issues/999").status == 404)
            #expect(try await browser.get("/projects/999/health").status == 404)
        }
    }

    @Test func hostileEventContentRendersAsText() async throws {
        try await Self.run { harness, browser in
            #expect(try await harness.post(body: Fixtures.envelope(event: Self.richEvent(release: "<script>r</script>", hostile: true))).status == 200)
            #expect(try await browser.logIn().status == 303)
            for page in ["/projects/1", "/issues/1", "/projects/1/launch", "/projects/1/health"] {
                let text = try await browser.get(page).text
                #expect(!text.contains("<script"), "\(page) contains a raw <script")
                #expect(!text.contains("<img src=x"), "\(page)")
                #expect(!text.contains("<svg onload"), "\(page)")
                #expect(!text.contains("<b>main"), "\(page)")
                #expect(!text.contains("\u{202E}"), "\(page)")
            }
            let issue = try await browser.get("/issues/1").text
            #expect(issue.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            #expect(issue.contains("&lt;img src=x onerror=alert(2)&gt;"))
            #expect(issue.contains("U+202Eevil"))
            #expect(issue.contains("👩‍👩‍👧 &#39; &amp; é"))
            #expect(issue.contains("&lt;svg onload=alert(3)&gt;"))
        }
    }

    @Test func remoteConfigurationCanBeEditedAndRolledBackFromThePage() async throws {
        try await Self.run { harness, browser in
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/projects/1/config")
            let csrf = try #require(Browser.csrfToken(in: page))
            #expect(try await browser.post("/projects/1/config", form: [("csrf_token", csrf), ("document", "{\"rules\": [{\"guards\": {\"timer\": \"off\"}}]}")]).status == 303)
            #expect(try await browser.post("/projects/1/config", form: [("csrf_token", csrf), ("document", "{\"rules\": [{\"guards\": {\"timer\": \"reportOnly\"}}]}")]).status == 303)
            // The editor shows the served document without the fields the collector sets, and
            // saving it as shown (even with a stale version number) publishes the next version.
            let editor = try await browser.get("/projects/1/config").text
            let textarea = try #require(editor.range(of: "<textarea").flatMap { start in
                editor.range(of: "</textarea>").map { String(editor[start.lowerBound..<$0.lowerBound]) } })
            #expect(textarea.contains("&quot;reportOnly&quot;") && !textarea.contains("issued_at") && !textarea.contains("version"))
            let stale = try await browser.post("/projects/1/config", form: [("csrf_token", csrf), ("document", "{\"version\": 1, \"rules\": [{\"guards\": {\"timer\": \"reportOnly\"}}]}")])
            #expect(stale.status == 303)
            let invalid = try await browser.post("/projects/1/config", form: [("csrf_token", csrf), ("document", "{not json")])
            #expect(invalid.status == 400)
            #expect(invalid.text.contains("{not json"))
            let rolledBack = try await browser.post("/projects/1/config/rollback", form: [("csrf_token", csrf), ("version", "1")])
            #expect(rolledBack.status == 303)
            let history = try await harness.api("/api/0/projects/1/sdk-config").json?.arrayValue ?? []
            #expect(history.count == 4)
            #expect(history.first?["restored_from"]?.intValue == 1)
            #expect(history.first?["document"]?["rules"]?.arrayValue?.first?["guards"]?["timer"]?.stringValue == "off")
            let after = try await browser.get("/projects/1/config").text
            #expect(after.contains("rollback to v1") && after.contains("Served now: <b>v4</b>"))
        }
    }
}
