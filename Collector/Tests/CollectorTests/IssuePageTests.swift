@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// The issue page: one event in full with navigation between the issue's events, frames with
/// package and address and an in-app / full-stack choice, the crashed thread's frames, the user,
/// request, contexts, extra and SDK sections, breadcrumb data and the event's attachments.
@Suite("Issue page")
struct IssuePageTests {
    /// The part of `page` from the first `start` to the next `end` after it ("" when absent).
    static func slice(_ page: String, from start: String, to end: String) -> String {
        guard let from = page.range(of: start) else { return "" }
        let rest = page[from.lowerBound...]
        guard let to = rest.range(of: end) else { return String(rest) }
        return String(rest[..<to.upperBound])
    }

    /// The target of the navigation link `name` (`data-nav`), nil when it is not a link.
    static func navTarget(_ page: String, _ name: String) -> String? {
        guard let marker = page.range(of: " data-nav=\"\(name)\">") else { return nil }
        let before = page[..<marker.lowerBound]
        guard let tag = before.range(of: "<", options: .backwards), before[tag.lowerBound...].hasPrefix("<a href=\""),
              before.hasSuffix("\"") else { return nil }
        return String(before[tag.lowerBound...].dropFirst("<a href=\"".count).dropLast())
    }

    static func eventID(ofPage page: String) -> String? {
        page.range(of: "data-event-id=\"").map { String(page[$0.upperBound...].prefix(32)) }
    }

    static func post(_ harness: Harness, _ event: JSONValue, extra: [Envelope.Item] = []) async throws {
        #expect(try await harness.post(body: Fixtures.envelope(event: event, extra: extra)).status == 200)
    }

    // MARK: Frames and threads

    /// CrashShield's SDK sends the crashing stack in `exception.values[].stacktrace` with the
    /// crashed thread's id (`thread_id`) and the thread without a stack: the thread shows the
    /// exception's frames (it showed "No stack frames"), each with its package and address, in-app
    /// frames only unless `?stack=full`.
    @Test func theCrashedThreadOfACrashShieldCrashShowsTheExceptionsFrames() async throws {
        try await DashboardTests.run { harness, browser in
            let envelope = try CrashShieldEnvelopeTests.addressed(try CrashShieldEnvelopeTests.golden("crash-segv"), to: harness)
            #expect(try await harness.post(body: envelope).status == 200)
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/issues/1")
            #expect(page.status == 200)
            let thread = Self.slice(page.text, from: "data-thread=\"29661\"", to: "</details>")
            #expect(thread.contains("crashed"), "\(thread)")
            #expect(thread.contains("csc_crash_segv") && thread.contains("Frames of the exception SIGSEGV"), "\(thread)")
            #expect(!thread.contains("No stack frames"), "\(thread)")
            // Package (the binary's name, its path in the title) and instruction address per frame.
            let exception = Self.slice(page.text, from: "<section class=\"exception\">", to: "</section>")
            #expect(exception.contains("<td class=\"mono nowrap\"><span title=\"/opt/app/bin/shield\">shield</span></td><td class=\"mono nowrap\">0x565401d00f00</td>"),
                    "\(exception)")
            // In-app frames by default: libc's two frames are hidden and counted.
            #expect(!page.text.contains("__libc_start_main"))
            #expect(exception.contains("data-hidden-frames=\"2\""))
            #expect(page.text.contains("href=\"/issues/1/events/9a6ae36df3b66903775600e462a72371?stack=full\" data-stack=\"full\""))
            let full = try await browser.get("/issues/1?stack=full").text
            let fullException = Self.slice(full, from: "<section class=\"exception\">", to: "</section>")
            #expect(fullException.contains("__libc_start_main") && fullException.contains("libc.so.6") && fullException.contains("0x7f9db0045305"))
            #expect(!fullException.contains("data-hidden-frames"))
            #expect(full.contains("data-stack=\"app\""))
            // Registers once, under the exception whose stack they belong to.
            #expect(full.components(separatedBy: "<h3>Registers</h3>").count == 2)
        }
    }

    /// Sentry's Cocoa SDK sends the crashing stack in the crashed thread and an exception naming
    /// it by `thread_id`, without a stack of its own: the exception shows the thread's frames.
    @Test func anExceptionWithoutAStackShowsTheFramesOfItsThread() async throws {
        try await DashboardTests.run { harness, browser in
            let event: JSONValue = [
                "event_id": .string(Fixtures.eventID()), "timestamp": .double(Date().timeIntervalSince1970), "platform": "cocoa", "level": "fatal",
                "exception": ["values": [["type": "EXC_BAD_ACCESS", "value": "KERN_INVALID_ADDRESS at 0x10", "thread_id": 0,
                                          "mechanism": ["type": "mach", "handled": false]]]],
                "threads": ["values": [
                    ["id": 0, "name": "main", "crashed": true, "current": true, "stacktrace": ["frames": [
                        ["function": "start", "package": "/usr/lib/dyld", "instruction_addr": "0x1a0b0c0d0", "in_app": false],
                        ["function": "-[FeedViewController viewDidLoad]", "package": "/private/var/containers/Bundle/Application/X/Feed.app/Feed",
                         "instruction_addr": "0x100f3a2b4", "in_app": true],
                    ]]],
                    ["id": 1, "name": "com.apple.uikit.eventfetch-thread", "stacktrace": ["frames": [
                        ["function": "mach_msg2_trap", "package": "/usr/lib/system/libsystem_kernel.dylib", "instruction_addr": "0x1f00d0001", "in_app": false],
                    ]]],
                ]],
            ]
            try await Self.post(harness, event)
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/issues/1?stack=full").text
            let exception = Self.slice(page, from: "<section class=\"exception\">", to: "</section>")
            #expect(exception.contains("Frames of thread 0."), "\(exception)")
            #expect(exception.contains("-[FeedViewController viewDidLoad]") && exception.contains("0x100f3a2b4") && exception.contains(">Feed</span>"))
            #expect(!exception.contains("mach_msg2_trap"))
            #expect(!exception.contains("No stack frames"))
            let other = Self.slice(page, from: "data-thread=\"1\"", to: "</details>")
            #expect(other.contains("mach_msg2_trap") && other.contains(">libsystem_kernel.dylib</span>"), "\(other)")
        }
    }

    @Test func threadAndExceptionStacksFollowSentrysSchema() {
        let crashed: JSONValue = ["id": 7, "crashed": true, "stacktrace": ["frames": [["function": "f"]]]]
        let idle: JSONValue = ["id": "8"]
        // Own stack first.
        let own: JSONValue = ["type": "E", "stacktrace": ["frames": [["function": "g"]]], "thread_id": 7]
        #expect(EventView.stack(ofException: own, isMain: true, threads: [crashed]).1 == .own)
        // Named thread (ids compare as text: 8 and "8" are one thread).
        let named: JSONValue = ["type": "E", "thread_id": 8]
        let withStack: JSONValue = ["id": 8, "stacktrace": ["frames": [["function": "h"]]]]
        #expect(EventView.stack(ofException: named, isMain: true, threads: [crashed, withStack]).1 == .thread("8"))
        // No thread id: the crashed thread's stack, for the main exception only.
        let bare: JSONValue = ["type": "E"]
        #expect(EventView.stack(ofException: bare, isMain: true, threads: [idle, crashed]).1 == .thread("7"))
        #expect(EventView.stack(ofException: bare, isMain: false, threads: [idle, crashed]).1 == .own)
        // A thread without a stack: the exception raised on it.
        let stackless: JSONValue = ["id": 8, "crashed": true]
        #expect(EventView.stack(ofThread: stackless, exceptions: [own, ["type": "Other", "thread_id": "8", "stacktrace": ["frames": [["function": "k"]]]]]).1
                == .exception("Other"))
        #expect(EventView.stack(ofThread: idle, exceptions: [own]).1 == .own)
        // The crashed thread, when no exception names a thread: the main (last) exception's.
        let crashedBare: JSONValue = ["id": 3, "crashed": true]
        #expect(EventView.stack(ofThread: crashedBare, exceptions: [["type": "A"], ["type": "B", "stacktrace": ["frames": [["function": "m"]]]]]).1
                == .exception("B"))
    }

    // MARK: Event sections

    /// A real sentry-python event: user card, request, contexts (runtime among them), extra, SDK
    /// with integrations and packages, breadcrumb data; its stdlib frames (no `in_app`) only in
    /// the full stack.
    @Test func aSentryPythonEventShowsUserRequestContextsExtraSDKAndBreadcrumbData() async throws {
        try await DashboardTests.run { harness, browser in
            try await Self.post(harness, SDKEvents.sentryPythonEvent)
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/issues/1").text
            let user = Self.slice(page, from: "<section class=\"user\">", to: "</section>")
            for expected in ["<th>id</th><td class=\"mono\">user-42</td>", "ada@example.com", "<th>username</th><td class=\"mono\">ada</td>",
                             "<th>ip_address</th><td class=\"mono\">203.0.113.9</td>", "<th>geo</th><td class=\"mono\">Vienna, Vienna, AT</td>"] {
                #expect(user.contains(expected), "user card lacks \(expected): \(user)")
            }
            let request = Self.slice(page, from: "<section class=\"request\">", to: "</section>")
            for expected in ["POST https://shop.example/checkout", "<th>coupon</th><td class=\"mono\">SPRING</td>",
                             "<th>User-Agent</th><td class=\"mono\">Mozilla/5.0</td>"] {
                #expect(request.contains(expected), "request lacks \(expected): \(request)")
            }
            let contexts = Self.slice(page, from: "<section class=\"contexts\">", to: "</section>")
            for expected in ["data-context=\"device\"", "iPhone15,2", "data-context=\"runtime\"", "<th>name</th><td class=\"mono\">CPython</td>",
                             "<th>version</th><td class=\"mono\">3.11.7</td>", "data-context=\"trace\""] {
                #expect(contexts.contains(expected), "contexts lack \(expected): \(contexts)")
            }
            let extra = Self.slice(page, from: "<section class=\"extra\">", to: "</section>")
            #expect(extra.contains("<th>cart_items</th><td class=\"mono\">3</td>"), "\(extra)")
            #expect(extra.contains("<th>feature_flags</th><td class=\"mono\">{&quot;new_checkout&quot;:true}</td>"), "\(extra)")
            let sdk = Self.slice(page, from: "<section class=\"sdk\">", to: "</section>")
            #expect(sdk.contains("sentry.python 2.75.0") && sdk.contains("argv, atexit, dedupe") && sdk.contains("pypi:sentry-sdk 2.75.0"), "\(sdk)")
            let crumbs = Self.slice(page, from: "<table class=\"breadcrumbs\">", to: "</table>")
            #expect(crumbs.contains("<div>status_code: 200</div>") && crumbs.contains("<div>url: https://shop.example/api/cart</div>"), "\(crumbs)")
            // Frames: module and file, the SDK's in-app marking; json's frames only in the full stack.
            #expect(page.contains("parse_header") && page.contains(">capture.py:12<"))
            #expect(!page.contains("raw_decode"))
            #expect(try await browser.get("/issues/1?stack=full").text.contains("raw_decode"))
        }
    }

    /// Every new section escapes what the event says; a request URL is text, never a link.
    @Test func hostileValuesInTheNewSectionsRenderAsText() async throws {
        try await DashboardTests.run { harness, browser in
            let evil = "<script>alert(1)</script>"
            guard case .object(var event) = Fixtures.exceptionEvent() else { return }
            event["user"] = ["id": .string(evil), "email": "\"><img src=x onerror=alert(2)>", "geo": ["city": .string(evil)], "segment": .string(evil)]
            event["request"] = ["url": "javascript:alert(3)", "method": .string(evil), "query_string": [[.string(evil), .string(evil)]],
                                "headers": [evil: .string(evil)], "data": [evil: .string(evil)]]
            event["contexts"] = [evil: ["type": "custom", evil: .string(evil)], "os": .string(evil)]
            event["extra"] = [evil: [.string(evil)]]
            event["sdk"] = ["name": .string(evil), "integrations": [.string(evil)], "packages": [["name": .string(evil), "version": "1"]]]
            event["breadcrumbs"] = [["message": "m", "data": [evil: .string(evil)]]]
            event["exception"] = ["values": [["type": "E", "stacktrace": ["frames": [["function": "f", "package": .string(evil), "instruction_addr": .string(evil)]]]]]]
            try await Self.post(harness, .object(event))
            #expect(try await browser.logIn().status == 303)
            for path in ["/issues/1", "/issues/1?stack=full"] {
                let page = try await browser.get(path).text
                #expect(!page.contains("<script") && !page.contains("<img"), "\(path)")
                #expect(!page.contains("href=\"javascript:"), "\(path)")
                #expect(page.contains("javascript:alert(3)"), "\(path)")
                #expect(page.components(separatedBy: "&lt;script&gt;alert(1)&lt;/script&gt;").count > 12, "\(path)")
            }
        }
    }

    // MARK: Navigation

    /// Three events of one issue: the page shows the newest; each event's page links to its
    /// neighbours, the first and the latest, keeping `?stack=full`; an event of another issue or
    /// an unknown id is 404; the raw JSON stays one link away.
    @Test func navigationLinksPointToTheNeighbourEvents() async throws {
        try await DashboardTests.run { harness, browser in
            let ids = (0..<3).map { _ in Fixtures.eventID() }
            for (index, id) in ids.enumerated() {
                try await Self.post(harness, Fixtures.exceptionEvent(id: id, release: "app@1.\(index).0", fingerprint: ["one"]))
            }
            let otherIssue = Fixtures.eventID()
            try await Self.post(harness, Fixtures.exceptionEvent(id: otherIssue, fingerprint: ["two"]))
            #expect(try await browser.get("/issues/1/events/\(ids[0])").status == 303)  // login first
            #expect(try await browser.logIn().status == 303)

            let latest = try await browser.get("/issues/1").text
            #expect(Self.eventID(ofPage: latest) == ids[2])
            #expect(latest.contains("Latest event"))
            #expect(Self.navTarget(latest, "older") == "/issues/1/events/\(ids[1])")
            #expect(Self.navTarget(latest, "first") == "/issues/1/events/\(ids[0])")
            #expect(Self.navTarget(latest, "newer") == nil && Self.navTarget(latest, "latest") == nil)
            #expect(Self.navTarget(latest, "raw") == "/projects/1/events/\(ids[2])")

            let middle = try await browser.get("/issues/1/events/\(ids[1])")
            #expect(middle.status == 200)
            #expect(Self.eventID(ofPage: middle.text) == ids[1])
            #expect(middle.text.contains("app@1.1.0"))
            #expect(Self.navTarget(middle.text, "older") == "/issues/1/events/\(ids[0])")
            #expect(Self.navTarget(middle.text, "newer") == "/issues/1/events/\(ids[2])")
            #expect(Self.navTarget(middle.text, "latest") == "/issues/1/events/\(ids[2])")
            #expect(Self.navTarget(middle.text, "first") == "/issues/1/events/\(ids[0])")

            let oldest = try await browser.get("/issues/1/events/\(ids[0].uppercased())?stack=full")
            #expect(oldest.status == 200)
            #expect(oldest.text.contains("First event"))
            #expect(Self.navTarget(oldest.text, "newer") == "/issues/1/events/\(ids[1])?stack=full")
            #expect(Self.navTarget(oldest.text, "older") == nil && Self.navTarget(oldest.text, "first") == nil)

            #expect(try await browser.get("/issues/1/events/\(otherIssue)").status == 404)
            #expect(try await browser.get("/issues/2/events/\(otherIssue)").status == 200)
            #expect(try await browser.get("/issues/1/events/" + String(repeating: "0", count: 32)).status == 404)
            #expect(try await browser.get("/issues/9/events/\(ids[0])").status == 404)
        }
    }

    /// Neighbours follow received time, then storage order, also among events received at the
    /// same instant; an event of another issue is not found.
    @Test func neighboursFollowReceivedTimeThenStorageOrder() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p")
            let base = Date(timeIntervalSince1970: 1_800_000_000.25)
            // Stored in this order; received: t+2, t, t+1, t+1, t+1.
            let offsets: [Double] = [2, 0, 1, 1, 1]
            let ids = offsets.map { _ in Fixtures.eventID() }
            for (id, offset) in zip(ids, offsets) {
                let json = Fixtures.exceptionEvent(id: id, fingerprint: ["same"])
                let record = try EventRecord.extract(projectID: project.id, payload: json.jsonData(), json: json, fallbackEventID: nil,
                                                     received: base.addingTimeInterval(offset))
                _ = try await store.insertEvent(record)
            }
            let issue = try #require(try await store.issues(projectID: project.id).first)
            // Newest first: t+2; then the three at t+1, latest stored first; then t.
            let expected = [ids[0], ids[4], ids[3], ids[2], ids[1]]
            var walked: [String] = []
            var position = try await store.issueEvent(issueID: issue.id, projectID: project.id, eventID: nil)
            while let current = position {
                walked.append(current.event.summary.eventID)
                #expect(current.newest == (walked.count == 1 ? nil : expected[0]))
                #expect(current.oldest == (walked.count == expected.count ? nil : expected.last))
                guard let older = current.older else { break }
                position = try await store.issueEvent(issueID: issue.id, projectID: project.id, eventID: older)
                #expect(position?.newer == current.event.summary.eventID)
            }
            #expect(walked == expected)
            #expect(try await store.issueEvent(issueID: issue.id + 1, projectID: project.id, eventID: ids[0]) == nil)
            #expect(try await store.issueEvent(issueID: issue.id + 1, projectID: project.id, eventID: nil) == nil)
        }
    }

    /// An issue whose events retention deleted still has a page, which says so.
    @Test func anIssueWithoutStoredEventsSaysSo() async throws {
        let fresh = try await TestDatabase.fresh()
        do {
            try await Harness.run({ $0.adminPassword = DashboardTests.adminPassword; $0.database = fresh.database }) { harness in
                let browser = Browser(baseURL: harness.client.baseURL)
                try await Self.post(harness, Fixtures.exceptionEvent())
                #expect(try await browser.logIn().status == 303)
                #expect(!(try await browser.get("/issues/1").text.contains("data-no-events")))
                let store = try await TestDatabase.open(fresh.database)
                #expect(try await store.deleteData(receivedBefore: Date().addingTimeInterval(60)) == 1)
                try await store.close()
                let page = try await browser.get("/issues/1")
                #expect(page.status == 200)
                #expect(page.text.contains("data-no-events") && !page.text.contains("data-nav="))
            }
        } catch {
            await fresh.drop()
            throw error
        }
        await fresh.drop()
    }

    // MARK: Attachments

    /// Attachments are listed on their event with name, type, content type and size, and download
    /// as files: `Content-Disposition: attachment`, `application/octet-stream` whatever they
    /// claim, `nosniff`; only with a login, only under their own project.
    @Test func attachmentsAreListedAndDownloadOnlyAsFiles() async throws {
        try await DashboardTests.run { harness, browser in
            let log = Data("line 1\nline 2\n".utf8)
            let page = Data("<html><script>alert(document.cookie)</script></html>".utf8)
            let hostileName = "\"><img src=x onerror=alert(1)>\r\nSet-Cookie: a=b.html"
            try await Self.post(harness, Fixtures.exceptionEvent(), extra: [
                Envelope.Item(type: "attachment", payload: log, header: ["filename": "app.log", "content_type": "text/plain",
                                                                         "attachment_type": "event.attachment"]),
                Envelope.Item(type: "attachment", payload: page, header: ["filename": .string(hostileName), "content_type": "text/html"]),
            ])
            // A second project with an attachment of its own.
            let created = try await harness.api("/api/0/projects", method: "POST", json: ["name": "other"])
            let otherKey = try #require(created.json?["public_key"]?.stringValue)
            let otherID = try #require(created.json?["id"]?.intValue)
            let otherEvent = Fixtures.exceptionEvent()
            let otherBody = Fixtures.envelope(event: otherEvent, extra: [Envelope.Item(type: "attachment", payload: Data("other".utf8), header: ["filename": "o.txt"])])
            #expect(try await harness.post("/api/\(otherID)/envelope/", body: otherBody, headers: [
                "X-Sentry-Auth": "Sentry sentry_version=7, sentry_key=\(otherKey)", "Content-Type": "application/x-sentry-envelope"]).status == 200)

            #expect(try await browser.get("/projects/1/attachments/1").status == 303)  // no login: to the login page
            #expect(try await browser.logIn().status == 303)
            let issue = try await browser.get("/issues/1").text
            let section = Self.slice(issue, from: "<section class=\"attachments\">", to: "</section>")
            #expect(section.contains("<a href=\"/projects/1/attachments/1\" download data-attachment=\"1\">app.log</a></td><td>event.attachment</td><td class=\"mono\">text/plain</td><td class=\"num\">14 B</td>"),
                    "\(section)")
            #expect(section.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\r\nSet-Cookie: a=b.html"), "\(section)")
            #expect(!section.contains("<img"))

            let download = try await browser.get("/projects/1/attachments/1")
            #expect(download.status == 200)
            #expect(download.body == log)
            #expect(download.headers["content-type"] == "application/octet-stream")
            #expect(download.headers["content-disposition"] == "attachment; filename=\"app.log\"; filename*=UTF-8''app.log")
            #expect(download.headers["x-content-type-options"] == "nosniff")
            #expect(download.headers["content-security-policy"] == "default-src 'none'; sandbox")

            let hostile = try await browser.get("/projects/1/attachments/2")
            #expect(hostile.status == 200 && hostile.body == page)
            #expect(hostile.headers["content-type"] == "application/octet-stream")
            #expect(hostile.headers["set-cookie"] == nil)
            let disposition = try #require(hostile.headers["content-disposition"])
            #expect(disposition.hasPrefix("attachment; filename=\"___img src_x onerror_alert(1)___Set-Cookie_ a_b.html\"; filename*=UTF-8''%22%3E%3Cimg"),
                    "\(disposition)")

            // Project access: another project's attachment is not found under this one.
            #expect(try await browser.get("/projects/1/attachments/3").status == 404)
            #expect(try await browser.get("/projects/\(otherID)/attachments/3").status == 200)
            #expect(try await browser.get("/projects/\(otherID)/attachments/1").status == 404)
            #expect(try await browser.get("/projects/1/attachments/x").status == 404)
            #expect(try await browser.get("/projects/1/attachments/99").status == 404)
        }
    }

    @Test func contentDispositionNamesKeepHeadersIntact() {
        #expect(DashboardRoutes.contentDisposition("crash report.txt") == "attachment; filename=\"crash report.txt\"; filename*=UTF-8''crash%20report.txt")
        #expect(DashboardRoutes.contentDisposition("résumé \"q\"\\.log") == "attachment; filename=\"r_sum_ _q__.log\"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22q%22%5C.log")
        #expect(DashboardRoutes.contentDisposition("") == "attachment; filename=\"attachment\"; filename*=UTF-8''attachment")
        #expect(DashboardRoutes.contentDisposition("..") == "attachment; filename=\"attachment\"; filename*=UTF-8''..")
        let crlf = DashboardRoutes.contentDisposition("a\r\nb")
        #expect(!crlf.contains("\r") && !crlf.contains("\n"))
    }
}
