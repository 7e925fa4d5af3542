import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// A browser without JavaScript: keeps the session cookie, reads CSRF tokens from forms.
struct Browser {
    let harness: Harness
    var session: String?

    static func csrf(in page: String) -> String? {
        guard let range = page.range(of: #"name="csrf" value="([0-9a-f]+)""#, options: .regularExpression) else { return nil }
        return String(page[range].split(separator: "\"")[3])
    }

    static func cookie(_ name: String, in response: TestResponse) -> String? {
        guard let header = response.headers["set-cookie"],
              let range = header.range(of: name + #"=[0-9a-f]*"#, options: .regularExpression) else { return nil }
        return String(header[range].dropFirst(name.count + 1))
    }

    func get(_ path: String) async throws -> TestResponse {
        // The session cookie travels as a browser would send it: only to this collector.
        try await harness.client.execute(path, headers: session.map { ["Cookie": "csc_session=\($0)"] } ?? [:])
    }

    func post(_ path: String, _ fields: [String: String]) async throws -> TestResponse {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        var headers = ["Content-Type": "application/x-www-form-urlencoded"]
        if let session { headers["Cookie"] = "csc_session=\(session)" }
        return try await harness.client.execute(path, method: "POST", headers: headers, body: Data(body.utf8))
    }

    /// Signs in as admin; returns the browser with its session cookie.
    static func signedIn(_ harness: Harness) async throws -> Browser {
        let form = try await harness.client.execute("/login")
        let csrf = try #require(Browser.csrf(in: form.text))
        let loginCookie = try #require(Browser.cookie("csc_login_csrf", in: form))
        let body = "csrf=\(csrf)&email=admin&password=\(Harness.adminPassword.replacingOccurrences(of: " ", with: "+"))"
        let response = try await harness.client.execute("/login", method: "POST", headers: [
            "Content-Type": "application/x-www-form-urlencoded", "Cookie": "csc_login_csrf=\(loginCookie)",
        ], body: Data(body.utf8))
        #expect(response.status == 303)
        let setCookie = response.headers["set-cookie"] ?? ""
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Lax"))
        let session: String = try #require(Browser.cookie("csc_session", in: response))
        return Browser(harness: harness, session: session)
    }
}

@Suite("Collector dashboard")
struct WebTests {
    @Test func everyPageNeedsALoginAndWrongPasswordsOrMissingCSRFAreRefused() async throws {
        try await Harness.run { harness in
            for path in ["/", "/projects/\(harness.project.id)", "/projects/\(harness.project.id)/config", "/issues/1"] {
                let response = try await harness.client.execute(path)
                #expect(response.status == 303, "\(path)")
                #expect(response.headers["location"] == "/login", "\(path)")
            }
            let form = try await harness.client.execute("/login")
            #expect(form.status == 200)
            #expect(form.headers["content-security-policy"]?.contains("default-src 'none'") == true)
            let csrf = try #require(Browser.csrf(in: form.text))
            let loginCookie = try #require(Browser.cookie("csc_login_csrf", in: form))
            let headers = ["Content-Type": "application/x-www-form-urlencoded", "Cookie": "csc_login_csrf=\(loginCookie)"]
            let wrong = try await harness.client.execute("/login", method: "POST", headers: headers, body: Data("csrf=\(csrf)&email=admin&password=nope".utf8))
            #expect(wrong.status == 401)
            #expect(Browser.cookie("csc_session", in: wrong) == nil)
            let noCSRF = try await harness.client.execute("/login", method: "POST", headers: headers, body: Data("email=admin&password=x".utf8))
            #expect(noCSRF.status == 403)

            let browser = try await Browser.signedIn(harness)
            let home = try await browser.get("/")
            #expect(home.status == 200)
            #expect(home.text.contains("default"))
            #expect(home.text.contains("/\(harness.project.id)</code>"))  // the DSN
            // A form without the session's CSRF token changes nothing.
            #expect(try await browser.post("/projects", ["name": "forged"]).status == 403)
            #expect(try await browser.post("/projects", ["name": "forged", "csrf": "00"]).status == 403)
            let csrfToken = try #require(Browser.csrf(in: home.text))
            let created = try await browser.post("/projects", ["name": "second app", "csrf": csrfToken])
            #expect(created.status == 303)
            #expect(try await harness.api("/api/0/projects").json?.arrayValue?.map { $0["name"]?.stringValue } == ["default", "second app"])

            #expect(try await browser.post("/logout", ["csrf": csrfToken]).status == 303)
            #expect(try await browser.get("/").status == 303)  // the session is gone
        }
    }

    @Test func eventContentIsEscapedAndIssuesCanBeResolvedFromTheirPage() async throws {
        try await Harness.run { harness in
            let hostile = "<script>alert(1)</script> \u{202E}evil\u{202C} \u{1F4A5} e\u{301} \"quoted\" 'single' &amp;"
            let event: JSONValue = [
                "event_id": .string(Fixtures.eventID()), "level": "fatal", "release": "app@1.0", "platform": "native",
                "exception": ["values": [["type": .string("<img src=x onerror=alert(2)>"), "value": .string(hostile),
                                          "mechanism": ["type": "signalhandler", "handled": false],
                                          "stacktrace": ["frames": [["function": "main", "in_app": true],
                                                                    ["function": .string("<b>crash</b>"), "in_app": true, "filename": "<file>.swift"]],
                                                         "registers": ["rip": "0x1<2>"]]]]],
                "threads": ["values": [["id": 1, "name": "<main>", "crashed": true, "main": true]]],
                "breadcrumbs": ["values": [["category": "<ui>", "message": .string(hostile), "timestamp": 1]]],
                "tags": ["<tag>": "<value>"],
                "contexts": ["os": ["name": "<Linux>", "version": "6.1"]],
            ]
            #expect(try await harness.post(body: Fixtures.envelope(event: event)).status == 200)
            let issueID = try #require(try await harness.issues().first?["id"]?.intValue)
            let browser = try await Browser.signedIn(harness)
            for path in ["/projects/\(harness.project.id)", "/issues/\(issueID)"] {
                let page = try await browser.get(path)
                #expect(page.status == 200, "\(path)")
                #expect(!page.text.contains("<script>"), "\(path)")
                #expect(!page.text.contains("<img"), "\(path)")
                #expect(!page.text.contains("<b>crash"), "\(path)")
                #expect(page.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "\(path)")
                #expect(page.text.contains("\u{1F4A5}"), "\(path)")
            }
            let issuePage = try await browser.get("/issues/\(issueID)").text
            #expect(issuePage.contains("&lt;b&gt;crash&lt;/b&gt;"))
            #expect(issuePage.contains("&lt;main&gt;"))
            #expect(issuePage.contains("&lt;tag&gt;"))
            #expect(issuePage.contains("&lt;Linux&gt; 6.1"))
            #expect(issuePage.contains("&amp;amp;"))
            #expect(issuePage.contains("class=\"in-app\""))

            let csrf = try #require(Browser.csrf(in: issuePage))
            #expect(try await browser.post("/issues/\(issueID)/status", ["status": "resolved", "csrf": csrf]).status == 303)
            #expect(try await harness.api("/api/0/issues/\(issueID)").json?["status"]?.stringValue == "resolved")
        }
    }

    @Test func remoteSwitchesCanBePublishedAndRolledBackFromTheDashboard() async throws {
        try await Harness.run { harness in
            let browser = try await Browser.signedIn(harness)
            let path = "/projects/\(harness.project.id)/config"
            let page = try await browser.get(path)
            #expect(page.status == 200)
            let csrf = try #require(Browser.csrf(in: page.text))
            #expect(try await browser.post(path, ["document": #"{"rules":[{"guards":{"timer":"off"}}]}"#, "csrf": csrf]).status == 303)
            #expect(try await browser.post(path, ["document": #"{"rules":[]}"#, "csrf": csrf]).status == 303)
            let invalid = try await browser.post(path, ["document": "{not json", "csrf": csrf])
            #expect(invalid.status == 200)
            #expect(invalid.text.contains("not valid JSON"))
            #expect(try await browser.post(path + "/rollback", ["version": "1", "csrf": csrf]).status == 303)
            let history = try await harness.api("/api/0/projects/\(harness.project.id)/sdk-config").json?.arrayValue ?? []
            #expect(history.map { $0["version"]?.intValue } == [3, 2, 1])
            #expect(history.first?["document"]?["rules"]?.arrayValue?.first?["guards"]?["timer"]?.stringValue == "off")
            let after = try await browser.get(path).text
            #expect(after.contains("restores 1"))
        }
    }

    @Test func releaseHealthAndPreventedCrashPagesDrawCharts() async throws {
        try await Harness.run { harness in
            let now = ISO8601DateFormatter().string(from: Date())
            let session: Envelope.Item = .json(type: "session", ["sid": "s1", "did": "u1", "init": true, "started": .string(now),
                                                                  "status": "crashed", "attrs": ["release": "app@3.0"]])
            let incident: JSONValue = ["event_id": .string(Fixtures.eventID()), "level": "warning", "release": "app@3.0", "tags": ["guard": "container"],
                                       "exception": ["values": [["type": "NSRangeException", "mechanism": ["type": "crashshield", "handled": true]]]]]
            #expect(try await harness.post(body: Fixtures.envelope(event: incident, extra: [session])).status == 200)
            let browser = try await Browser.signedIn(harness)
            let health = try await browser.get("/projects/\(harness.project.id)/health").text
            #expect(health.contains("<svg"))
            #expect(health.contains("app@3.0"))
            #expect(health.contains("0.00 %"))  // the one session crashed
            let prevented = try await browser.get("/projects/\(harness.project.id)/prevented").text
            #expect(prevented.contains("<svg"))
            #expect(prevented.contains("<td>container</td><td>app@3.0</td><td>1</td>"))
        }
    }
}
