import CrashShieldProtocol
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// What the issue page reads from an event's JSON (Sentry's event schema). Missing or
/// mistyped fields read as absent.
enum EventView {
    struct Frame {
        let function: String
        let location: String?
        /// The frame's image (`package`: a binary or library path), as sent.
        let package: String?
        let address: String?
        let inApp: Bool
    }

    /// Where a stack shown under an exception or a thread came from.
    enum StackSource: Equatable {
        /// Its own `stacktrace`.
        case own
        /// The stack of the thread the exception names (`thread_id`), or of the crashed thread.
        case thread(String?)
        /// The stack of the exception raised on this thread.
        case exception(String)
    }

    /// A stored payload's JSON: read by `StrictJSON` (ingest checked it; a page parses up to 501
    /// payloads, which `JSONDecoder` took about ten times longer to read), else by `JSONDecoder`.
    static func parse(_ payload: Data) -> JSONValue? {
        (try? StrictJSON.parse(payload, rules: .lastKeyWins)) ?? (try? JSONValue.parse(payload))
    }

    static func values(_ json: JSONValue?) -> [JSONValue] {
        json?["values"]?.arrayValue ?? json?.arrayValue ?? []
    }

    static func string(_ value: JSONValue?) -> String? {
        guard let value else { return nil }
        switch value {
        case .string(let text): return text
        case .int(let number): return String(number)
        case .double(let number): return String(number)
        case .bool(let flag): return String(flag)
        default: return nil
        }
    }

    /// A value as one line of text: scalars as `string` reads them, `null` as "null", arrays and
    /// objects as compact JSON.
    static func display(_ value: JSONValue) -> String {
        if let text = string(value) { return text }
        if case .null = value { return "null" }
        return String(decoding: value.jsonData(), as: UTF8.self)
    }

    /// An object's members as (key, text) pairs, by key; a list of `[key, value]` pairs (Sentry
    /// sends headers and query strings either way) in its order; a string as one unnamed pair.
    static func pairs(_ value: JSONValue?) -> [(String, String)] {
        guard let value else { return [] }
        if let object = value.objectValue { return object.sorted { $0.key < $1.key }.map { ($0.key, display($0.value)) } }
        if let items = value.arrayValue {
            return items.compactMap { pair in
                guard let items = pair.arrayValue, items.count == 2, let key = string(items[0]) else { return nil }
                return (key, display(items[1]))
            }
        }
        return string(value).map { [("", $0)] } ?? []
    }

    /// Frames, innermost (crashing) first; Sentry sends them outermost first.
    static func frames(_ stacktrace: JSONValue?) -> [Frame] {
        (stacktrace?["frames"]?.arrayValue ?? []).reversed().map { frame in
            let module = string(frame["module"])
            let package = string(frame["package"])
            let address = string(frame["instruction_addr"])
            let function = string(frame["function"]) ?? string(frame["symbol"]) ?? [module ?? package, address].compactMap { $0 }.joined(separator: " ")
            let file = string(frame["filename"]) ?? string(frame["abs_path"])
            let location = file.map { file in string(frame["lineno"]).map { "\(file):\($0)" } ?? file }
            return Frame(function: function.isEmpty ? "<unknown>" : function, location: location ?? module, package: package,
                         address: address, inApp: frame["in_app"]?.boolValue == true)
        }
    }

    static func hasFrames(_ stacktrace: JSONValue?) -> Bool { !(stacktrace?["frames"]?.arrayValue ?? []).isEmpty }

    /// The stack shown under an exception: its own `stacktrace`; without one, the stack of the
    /// thread its `thread_id` names; without a `thread_id`, the crashed thread's (for the event's
    /// main exception, the last one, only). Sentry SDKs put the crashing stack in either place.
    static func stack(ofException exception: JSONValue, isMain: Bool, threads: [JSONValue]) -> (JSONValue?, StackSource) {
        if hasFrames(exception["stacktrace"]) { return (exception["stacktrace"], .own) }
        let threadID = string(exception["thread_id"])
        if let threadID, let thread = threads.first(where: { string($0["id"]) == threadID }), hasFrames(thread["stacktrace"]) {
            return (thread["stacktrace"], .thread(threadID))
        }
        if threadID == nil, isMain, let thread = threads.first(where: { $0["crashed"]?.boolValue == true }), hasFrames(thread["stacktrace"]) {
            return (thread["stacktrace"], .thread(string(thread["id"])))
        }
        return (exception["stacktrace"], .own)
    }

    /// The stack shown under a thread: its own `stacktrace`; without one, the stack of the
    /// exception whose `thread_id` names it; for the crashed thread, when no exception names a
    /// thread, the main exception's. (CrashShield's SDK sends the crashing stack only in the
    /// exception, with the thread's id.)
    static func stack(ofThread thread: JSONValue, exceptions: [JSONValue]) -> (JSONValue?, StackSource) {
        if hasFrames(thread["stacktrace"]) { return (thread["stacktrace"], .own) }
        let id = string(thread["id"])
        if let id, let exception = exceptions.last(where: { string($0["thread_id"]) == id && hasFrames($0["stacktrace"]) }) {
            return (exception["stacktrace"], .exception(string(exception["type"]) ?? "exception"))
        }
        if thread["crashed"]?.boolValue == true, !exceptions.contains(where: { $0["thread_id"] != nil }),
           let exception = exceptions.last, hasFrames(exception["stacktrace"]) {
            return (exception["stacktrace"], .exception(string(exception["type"]) ?? "exception"))
        }
        return (thread["stacktrace"], .own)
    }

    /// Tags as pairs, from an object or an array of `[key, value]` pairs.
    static func tags(_ json: JSONValue) -> [(String, String)] {
        if let object = json["tags"]?.objectValue {
            return object.compactMap { key, value in string(value).map { (key, $0) } }.sorted { $0.0 < $1.0 }
        }
        return (json["tags"]?.arrayValue ?? []).compactMap { pair in
            guard let items = pair.arrayValue, items.count == 2, let key = string(items[0]), let value = string(items[1]) else { return nil }
            return (key, value)
        }
    }

    static func os(_ json: JSONValue) -> String? {
        let os = json["contexts"]?["os"]
        let text = [string(os?["name"]), string(os?["version"])].compactMap { $0 }.joined(separator: " ")
        return text.isEmpty ? nil : text
    }

    static func device(_ json: JSONValue) -> String? {
        let device = json["contexts"]?["device"]
        return string(device?["model"]) ?? string(device?["family"]) ?? string(device?["name"])
    }

    static func message(_ json: JSONValue) -> String? {
        string(json["message"]) ?? string(json["message"]?["formatted"]) ?? string(json["message"]?["message"])
            ?? string(json["logentry"]?["formatted"]) ?? string(json["logentry"]?["message"])
    }

    static func time(_ value: JSONValue?) -> String? {
        if let seconds = value?.doubleValue { return Layout.time(Date(timeIntervalSince1970: seconds)) }
        return string(value)
    }

    /// The last path component of a binary's path (`/usr/lib/libc.so.6` → `libc.so.6`).
    static func basename(_ path: String) -> String {
        path.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? path
    }

    /// A byte count for people: `512 B`, `1.5 KiB`, `2.0 MiB`.
    static func bytes(_ count: Int64) -> String {
        if count < 1024 { return "\(count) B" }
        if count < 1024 * 1024 { return String(format: "%.1f KiB", Double(count) / 1024) }
        return String(format: "%.1f MiB", Double(count) / (1024 * 1024))
    }
}

extension DashboardRoutes {
    /// How many attachments of one event the page lists.
    static let attachmentsShown = 100

    /// A stack's frames, innermost first, numbered by their place in the whole stack. `full`
    /// false shows in-app frames only (all of them when none is in app) and says how many are
    /// hidden.
    static func framesTable(_ frames: [EventView.Frame], full: Bool = true) -> HTML {
        guard !frames.isEmpty else { return "<p class=\"muted\">No stack frames.</p>" }
        let numbered = Array(frames.enumerated())
        let anyInApp = frames.contains(where: \.inApp)
        let shown = full || !anyInApp ? numbered : numbered.filter { $0.element.inApp }
        let rows: [HTML] = shown.map { index, frame in
            let mark: HTML = frame.inApp ? "<span class=\"badge inapp\">in app</span>" : .empty
            let package: HTML = frame.package.map { "<span title=\"\($0)\">\(EventView.basename($0))</span>" } ?? .empty
            return """
            <tr\(frame.inApp ? HTML(" class=\"inapp\"") : .empty)><td class="num">\(index)</td><td class="mono">\(frame.function)</td>\
            <td class="mono">\(frame.location, or: "")</td><td class="mono nowrap">\(package)</td><td class="mono nowrap">\(frame.address, or: "")</td><td class="nowrap">\(mark)</td></tr>
            """
        }
        let hidden = frames.count - shown.count
        let note: HTML = hidden > 0 ? "<p class=\"muted\" data-hidden-frames=\"\(hidden)\">\(hidden) system frames hidden.</p>"
            : !full && !anyInApp ? "<p class=\"muted\">No in-app frames; all frames shown.</p>" : .empty
        return """
        <table class="frames"><thead><tr><th class="num">#</th><th>Function</th><th>Location</th><th>Package</th><th>Address</th><th></th></tr></thead>\
        <tbody>\(rows)</tbody></table>\(note)
        """
    }

    static func registersTable(_ registers: [String: JSONValue]) -> HTML {
        let rows: [HTML] = registers.sorted { $0.key < $1.key }.map { "<tr><td class=\"mono\">\($0.key)</td><td class=\"mono\">\(EventView.string($0.value))</td></tr>" }
        return "<table class=\"registers\"><thead><tr><th>Register</th><th>Value</th></tr></thead><tbody>\(rows)</tbody></table>"
    }

    /// A two-column table of (key, value) text pairs.
    static func pairsTable(_ pairs: [(String, String)], class name: String) -> HTML {
        let rows: [HTML] = pairs.map { "<tr><th>\($0.0)</th><td class=\"mono\">\($0.1)</td></tr>" }
        return "<table class=\"kv \(name)\"><tbody>\(rows)</tbody></table>"
    }

    /// Counts of `value(event)` over `events`, most frequent first (at most 8 rows).
    static func breakdown(_ title: String, _ values: [String?]) -> HTML {
        let present = values.map { $0 ?? "(none)" }
        let counts = Dictionary(present.map { ($0, 1) }, uniquingKeysWith: +).sorted { ($0.value, $1.key) > ($1.value, $0.key) }
        let rows: [HTML] = counts.prefix(8).map { value, count in
            "<tr><td>\(value)</td><td class=\"num\">\(count)</td><td class=\"num\">\(Double(count) / Double(max(1, present.count)) * 100, digits: 0)%</td></tr>"
        }
        return "<div><h3>\(title)</h3><table><tbody>\(rows)</tbody></table></div>"
    }

    // MARK: Event sections

    /// The user card: `id`, `email`, `username`, `ip_address`, `name`, `geo` (city, region,
    /// country), then any other member.
    static func userSection(_ user: JSONValue?) -> HTML {
        guard let members = user?.objectValue, !members.isEmpty else { return .empty }
        let known = ["id", "email", "username", "ip_address", "name"]
        var pairs: [(String, String)] = known.compactMap { key in members[key].map { (key, EventView.display($0)) } }
        if let geo = members["geo"] {
            let place = ["city", "region", "country_code"].compactMap { EventView.string(geo[$0]) }.joined(separator: ", ")
            pairs.append(("geo", place.isEmpty ? EventView.display(geo) : place))
        }
        pairs += members.filter { !known.contains($0.key) && $0.key != "geo" }.sorted { $0.key < $1.key }.map { ($0.key, EventView.display($0.value)) }
        return "<section class=\"user\"><h2>User</h2>\(pairsTable(pairs, class: "user"))</section>"
    }

    /// Contexts, one table each: `os`, `device`, `app`, `runtime`, `browser` first, then the others by name.
    static func contextsSection(_ contexts: JSONValue?) -> HTML {
        guard let members = contexts?.objectValue, !members.isEmpty else { return .empty }
        let first = ["os", "device", "app", "runtime", "browser"]
        let names = first.filter { members[$0] != nil } + members.keys.filter { !first.contains($0) }.sorted()
        let parts: [HTML] = names.map { name in
            let value = members[name]!
            let table = value.objectValue == nil ? pairsTable([("", EventView.display(value))], class: "context")
                : pairsTable(EventView.pairs(value).filter { $0.0 != "type" }, class: "context")
            return "<div data-context=\"\(name)\"><h3>\(name)</h3>\(table)</div>"
        }
        return "<section class=\"contexts\"><h2>Contexts</h2><div class=\"grid2\">\(parts)</div></section>"
    }

    static func extraSection(_ extra: JSONValue?) -> HTML {
        let pairs = EventView.pairs(extra)
        guard extra?.objectValue != nil, !pairs.isEmpty else { return .empty }
        return "<section class=\"extra\"><h2>Extra</h2>\(pairsTable(pairs, class: "extra"))</section>"
    }

    /// The SDK: name and version, integrations, packages.
    static func sdkSection(_ sdk: JSONValue?) -> HTML {
        guard let sdk, sdk.objectValue != nil else { return .empty }
        var pairs: [(String, String)] = []
        let nameVersion = [EventView.string(sdk["name"]), EventView.string(sdk["version"])].compactMap { $0 }.joined(separator: " ")
        if !nameVersion.isEmpty { pairs.append(("SDK", nameVersion)) }
        let integrations = (sdk["integrations"]?.arrayValue ?? []).compactMap { EventView.string($0) }
        if !integrations.isEmpty { pairs.append(("integrations", integrations.joined(separator: ", "))) }
        let packages = (sdk["packages"]?.arrayValue ?? []).compactMap { package -> String? in
            guard let name = EventView.string(package["name"]) else { return nil }
            return EventView.string(package["version"]).map { "\(name) \($0)" } ?? name
        }
        if !packages.isEmpty { pairs.append(("packages", packages.joined(separator: ", "))) }
        guard !pairs.isEmpty else { return .empty }
        return "<section class=\"sdk\"><h2>SDK</h2>\(pairsTable(pairs, class: "sdk"))</section>"
    }

    /// The request: method and URL (as text, never a link), query, headers, then other members
    /// (`data`, `cookies`, `env`, ...).
    static func requestSection(_ request: JSONValue?) -> HTML {
        guard let members = request?.objectValue, !members.isEmpty else { return .empty }
        let line = [EventView.string(members["method"]), EventView.string(members["url"])].compactMap { $0 }.joined(separator: " ")
        var parts: [HTML] = []
        if !line.isEmpty { parts.append("<p class=\"mono request-line\">\(line)</p>") }
        let query = EventView.pairs(members["query_string"])
        if !query.isEmpty {
            let parsed = query.count == 1 && query[0].0.isEmpty ? queryPairs(query[0].1) : query
            parts.append("<h3>Query</h3>\(pairsTable(parsed, class: "query"))")
        }
        let headers = EventView.pairs(members["headers"])
        if !headers.isEmpty { parts.append("<h3>Headers</h3>\(pairsTable(headers, class: "headers"))") }
        let others = members.filter { !["method", "url", "query_string", "headers"].contains($0.key) }.sorted { $0.key < $1.key }
        if !others.isEmpty { parts.append(pairsTable(others.map { ($0.key, EventView.display($0.value)) }, class: "request")) }
        return "<section class=\"request\"><h2>Request</h2>\(parts)</section>"
    }

    /// `a=1&b=2` as pairs, percent-decoded.
    static func queryPairs(_ text: String) -> [(String, String)] {
        text.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String { part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part) }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    static func breadcrumbsSection(_ crumbs: [JSONValue]) -> HTML {
        guard !crumbs.isEmpty else { return .empty }
        let rows: [HTML] = crumbs.suffix(100).map { crumb in
            let data: [HTML] = EventView.pairs(crumb["data"]).map { "<div>\($0.0): \($0.1)</div>" }
            return """
            <tr><td>\(EventView.time(crumb["timestamp"]), or: "")</td><td>\(EventView.string(crumb["type"]), or: "")</td><td>\(EventView.string(crumb["category"]), or: "")</td>\
            <td>\(EventView.string(crumb["level"]), or: "")</td><td>\(EventView.string(crumb["message"]), or: "")</td><td class="mono crumb-data">\(data)</td></tr>
            """
        }
        return """
        <h2>Breadcrumbs</h2><table class="breadcrumbs"><thead><tr><th>Time</th><th>Type</th><th>Category</th><th>Level</th><th>Message</th><th>Data</th></tr></thead>\
        <tbody>\(rows)</tbody></table>
        """
    }

    static func attachmentsSection(_ attachments: [AttachmentInfo], projectID: Int64) -> HTML {
        guard !attachments.isEmpty else { return .empty }
        let rows: [HTML] = attachments.map { attachment in
            """
            <tr><td><a href="/projects/\(projectID)/attachments/\(attachment.id)" download data-attachment="\(attachment.id)">\(attachment.filename)</a></td>\
            <td>\(attachment.attachmentType, or: "")</td><td class="mono">\(attachment.contentType, or: "")</td><td class="num">\(EventView.bytes(attachment.size))</td></tr>
            """
        }
        return """
        <section class="attachments"><h2>Attachments</h2><table class="attachments"><thead><tr><th>File</th><th>Type</th><th>Content type</th>\
        <th class="num">Size</th></tr></thead><tbody>\(rows)</tbody></table></section>
        """
    }

    /// Everything one event carries, as the issue page shows it. `full`: every frame, else in-app
    /// frames only.
    static func eventSections(_ json: JSONValue, full: Bool) -> [HTML] {
        var sections: [HTML] = []
        if let message = EventView.message(json) { sections.append("<pre class=\"message\">\(message)</pre>") }
        let exceptions = EventView.values(json["exception"])
        let threads = EventView.values(json["threads"])
        for (index, exception) in exceptions.enumerated().reversed() {
            let type = EventView.string(exception["type"]) ?? "Exception"
            let mechanism = exception["mechanism"]
            let mechanismText = [EventView.string(mechanism?["type"]), mechanism?["handled"]?.boolValue.map { $0 ? "handled" : "unhandled" }]
                .compactMap { $0 }.joined(separator: ", ")
            let (stacktrace, source) = EventView.stack(ofException: exception, isMain: index == exceptions.count - 1, threads: threads)
            let origin: HTML = if case .thread(let id) = source { "<p class=\"muted\">Frames of thread \(id, or: "(crashed)").</p>" } else { .empty }
            sections.append("""
            <section class="exception"><h3>\(type): \(EventView.string(exception["value"]), or: "")</h3><p class="muted">\(mechanismText)</p>\
            \(origin)\(Self.framesTable(EventView.frames(stacktrace), full: full))</section>
            """)
            if let registers = stacktrace?["registers"]?.objectValue, !registers.isEmpty {
                sections.append("<h3>Registers</h3>\(Self.registersTable(registers))")
            }
        }
        if !threads.isEmpty {
            sections.append("<h2>Threads</h2>")
            for thread in threads {
                let crashed = thread["crashed"]?.boolValue == true
                let id = EventView.string(thread["id"])
                let name = [id.map { "Thread \($0)" }, EventView.string(thread["name"])].compactMap { $0 }.joined(separator: " · ")
                let state: HTML = crashed ? " <span class=\"badge unresolved\">crashed</span>" : (thread["current"]?.boolValue == true ? " <span class=\"badge\">current</span>" : .empty)
                let (stacktrace, source) = EventView.stack(ofThread: thread, exceptions: exceptions)
                var inner: HTML = if case .exception(let type) = source { "<p class=\"muted\">Frames of the exception \(type) raised on this thread.</p>" } else { .empty }
                inner = "\(inner)\(Self.framesTable(EventView.frames(stacktrace), full: full))"
                if source == .own, let registers = stacktrace?["registers"]?.objectValue, !registers.isEmpty {
                    inner = "\(inner)<h3>Registers</h3>\(Self.registersTable(registers))"
                }
                sections.append("<details class=\"thread\" data-thread=\"\(id ?? "")\"\(crashed ? HTML(" open") : .empty)><summary>\(name.isEmpty ? "Thread" : name)\(state)</summary>\(inner)</details>")
            }
        }
        sections.append(Self.breadcrumbsSection(EventView.values(json["breadcrumbs"])))
        sections.append(Self.userSection(json["user"]))
        sections.append(Self.requestSection(json["request"]))
        let tagRows: [HTML] = EventView.tags(json).map { "<tr><td class=\"mono\">\($0.0)</td><td>\($0.1)</td></tr>" }
        if !tagRows.isEmpty { sections.append("<h2>Tags</h2><table class=\"tags\"><tbody>\(tagRows)</tbody></table>") }
        sections.append(Self.contextsSection(json["contexts"]))
        sections.append(Self.extraSection(json["extra"]))
        sections.append(Self.sdkSection(json["sdk"]))
        return sections
    }

    // MARK: Page

    /// The issue page showing one of its events in full: `eventID`, or the newest when nil (404
    /// when the issue has no event with this id; without `eventID`, a note when retention deleted
    /// all of them). `?stack=full` shows every frame, otherwise
    /// in-app frames only. Links lead to the first, older, newer and latest events (each page
    /// keeps the stack choice) and to the event's JSON as received.
    func issuePage(_ session: LoginSession, _ issue: Issue, eventID: String? = nil, request: Request? = nil) async throws -> Response {
        guard let project = try await store.project(id: issue.projectID) else { throw CollectorError.notFound("project.unknown", "no such project") }
        let full = request?.uri.queryParameters.get("stack") == "full"
        let position = try await queries.issueEvent(issueID: issue.id, projectID: issue.projectID, eventID: eventID?.lowercased())
        if eventID != nil && position == nil { throw CollectorError.notFound("event.unknown", "this issue has no such event") }
        let stackQuery = full ? "?stack=full" : ""
        func eventPath(_ id: String) -> String { "/issues/\(issue.id)/events/\(HTML.urlComponent(id))" }
        var sections: [HTML] = []
        if let position {
            let event = position.event.summary
            var json = EventView.parse(position.event.payload) ?? .object([:])
            if let symbolication { json = await symbolication.symbolicate(json, projectID: issue.projectID) }
            func link(_ target: String?, _ label: String, _ name: String) -> HTML {
                guard let target else { return "<span class=\"muted\" data-nav=\"\(name)\">\(label)</span>" }
                return "<a href=\"\(eventPath(target) + stackQuery)\" data-nav=\"\(name)\">\(label)</a>"
            }
            let navigation: [HTML] = [link(position.oldest, "« First", "first"), link(position.older, "‹ Older", "older"),
                                      link(position.newer, "Newer ›", "newer"), link(position.newest, "Latest »", "latest"),
                                      "<a href=\"/projects/\(issue.projectID)/events/\(HTML.urlComponent(event.eventID))\" data-nav=\"raw\">Raw JSON</a>"]
            let toggle: HTML = full
                ? "<a href=\"\(eventPath(event.eventID))\" data-stack=\"app\">In-app frames</a> · <b>Full stack</b>"
                : "<b>In-app frames</b> · <a href=\"\(eventPath(event.eventID))?stack=full\" data-stack=\"full\">Full stack</a>"
            let which = position.newer == nil ? "Latest event" : position.older == nil ? "First event" : "Event"
            sections.append("""
            <h2 id="event">\(which) <span class="mono" data-event-id="\(event.eventID)">\(event.eventID)</span></h2>
            <p class="actions eventnav">\(HTML.join(navigation, separator: " · "))</p>
            <p class="mono">received \(Layout.time(event.received)) · \(event.level) · \(event.release, or: "no release") · \(event.environment, or: "no environment") · \(event.platform, or: "")</p>
            <p class="stack-toggle">Frames: \(toggle)</p>
            """)
            sections += Self.eventSections(json, full: full)
            let attachments = try await queries.eventAttachments(projectID: issue.projectID, eventID: event.eventID, limit: Self.attachmentsShown)
            sections.append(Self.attachmentsSection(attachments, projectID: issue.projectID))
        } else {
            sections.append("<p class=\"muted\" data-no-events>No event of this issue is stored any more (events older than the retention period are deleted; the issue's counts stay).</p>")
        }
        let events = try await queries.issueEvents(issueID: issue.id, limit: 500)
        let parsed: [(StoredEvent, JSONValue)] = events.compactMap { event in EventView.parse(event.payload).map { (event, $0) } }
        let breakdowns: HTML = parsed.isEmpty ? .empty : """
        <h2>Tags breakdown (\(parsed.count) newest events)</h2><div class="grid2">\
        \(Self.breakdown("Release", parsed.map { $0.0.summary.release }))\(Self.breakdown("OS", parsed.map { EventView.os($0.1) }))\
        \(Self.breakdown("Device", parsed.map { EventView.device($0.1) }))\(Self.breakdown("Environment", parsed.map { $0.0.summary.environment }))</div>
        """
        let current = position?.event.summary.eventID
        let eventRows: [HTML] = events.prefix(50).map { event in
            let s = event.summary
            let mark: HTML = s.eventID == current ? " aria-current=\"true\"" : .empty
            return """
            <tr\(mark)><td class="mono"><a href="\(eventPath(s.eventID) + stackQuery)">\(s.eventID)</a></td><td>\(Layout.time(s.received))</td><td>\(s.level)</td>\
            <td>\(s.release)</td><td>\(s.environment)</td><td><a href="/projects/\(issue.projectID)/events/\(HTML.urlComponent(s.eventID))">JSON</a></td></tr>
            """
        }
        let returnTo = eventID.map { eventPath($0) } ?? "/issues/\(issue.id)"
        let protection = try await protectionSection(issue, session: session)
        let body: HTML = """
        <h1>\(issue.title)</h1><p class="mono muted">\(issue.culprit)</p>
        <div class="cards"><div class="card"><b>\(issue.eventCount)</b>events</div><div class="card"><b>\(issue.userCount)</b>users</div>\
        <div class="card">status<b>\(Self.statusBadge(issue.status))</b></div><div class="card">first seen<br>\(Layout.time(issue.firstSeen))</div>\
        <div class="card">last seen<br>\(Layout.time(issue.lastSeen))</div><div class="card">releases<br>\(issue.firstRelease) → \(issue.lastRelease)</div></div>
        \(Self.statusActions(issue, session: session, returnTo: returnTo))
        \(protection)\(sections)\(breakdowns)
        <h2>Newest events</h2><table class="events"><thead><tr><th>Event id</th><th>Received</th><th>Level</th><th>Release</th><th>Environment</th><th></th></tr></thead><tbody>\(eventRows)</tbody></table>
        <p class="muted">Grouping \(issue.groupingAlgorithm), hash <span class="mono">\(issue.fingerprintHash)</span>.</p>
        """
        return Layout.page(title: issue.title, session: session, project: project, tab: .issues, body: body)
    }

    // MARK: Attachments

    /// An attachment's bytes as a download: `Content-Disposition: attachment` with its file name
    /// (an ASCII fallback and the UTF-8 name, RFC 6266), always `application/octet-stream`
    /// whatever type it was sent with, `nosniff` and a CSP that allows nothing, so a browser never
    /// renders it (an HTML or SVG attachment stays a file). 404 when the project has no such
    /// attachment.
    func attachmentDownload(_ project: Project, _ id: String) async throws -> Response {
        guard let number = Int64(id), let attachment = try await queries.attachment(projectID: project.id, id: number) else {
            throw CollectorError.notFound("attachment.unknown", "no such attachment")
        }
        return Response(status: .ok, headers: [
            .contentType: "application/octet-stream", HTTPField.Name("Content-Disposition")!: Self.contentDisposition(attachment.info.filename),
            HTTPField.Name("X-Content-Type-Options")!: "nosniff", .contentSecurityPolicy: "default-src 'none'; sandbox",
            .cacheControl: "no-store",
        ], body: .init(byteBuffer: ByteBuffer(bytes: attachment.data)))
    }

    /// `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<percent-encoded name>`: the
    /// fallback keeps letters, digits, space and `._-()+,` (others become `_`), so no quote,
    /// backslash, control character or line break reaches the header.
    static func contentDisposition(_ filename: String) -> String {
        let name = String(filename.prefix(200))
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ._-()+,".unicodeScalars)
        var fallback = String(String.UnicodeScalarView(name.unicodeScalars.map { allowed.contains($0) ? $0 : "_" }))
        if fallback.trimmingCharacters(in: CharacterSet(charactersIn: "._ ")).isEmpty { fallback = "attachment" }
        let encoded = HTML.urlComponent(name.isEmpty ? "attachment" : name)
        return "attachment; filename=\"\(fallback)\"; filename*=UTF-8''\(encoded)"
    }
}
