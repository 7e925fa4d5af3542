import CrashShieldProtocol
import Foundation
import Hummingbird

/// What the issue page reads from an event's JSON (Sentry's event schema). Missing or
/// mistyped fields read as absent.
enum EventView {
    struct Frame {
        let function: String
        let location: String?
        let inApp: Bool
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

    /// Frames, innermost (crashing) first; Sentry sends them outermost first.
    static func frames(_ stacktrace: JSONValue?) -> [Frame] {
        (stacktrace?["frames"]?.arrayValue ?? []).reversed().map { frame in
            let module = string(frame["module"]) ?? string(frame["package"])
            let address = string(frame["instruction_addr"])
            let function = string(frame["function"]) ?? [module, address].compactMap { $0 }.joined(separator: " ")
            let file = string(frame["filename"]) ?? string(frame["abs_path"])
            let location = file.map { file in string(frame["lineno"]).map { "\(file):\($0)" } ?? file }
            return Frame(function: function.isEmpty ? "<unknown>" : function, location: location ?? module, inApp: frame["in_app"]?.boolValue == true)
        }
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
}

extension DashboardRoutes {
    static func framesTable(_ frames: [EventView.Frame]) -> HTML {
        guard !frames.isEmpty else { return "<p class=\"muted\">No stack frames.</p>" }
        let rows: [HTML] = frames.enumerated().map { index, frame in
            let mark: HTML = frame.inApp ? "<span class=\"badge inapp\">in app</span>" : .empty
            return "<tr\(frame.inApp ? HTML(" class=\"inapp\"") : .empty)><td class=\"num\">\(index)</td><td class=\"mono\">\(frame.function)</td><td class=\"mono\">\(frame.location)</td><td>\(mark)</td></tr>"
        }
        return "<table class=\"frames\"><thead><tr><th class=\"num\">#</th><th>Function</th><th>Location</th><th></th></tr></thead><tbody>\(rows)</tbody></table>"
    }

    static func registersTable(_ registers: [String: JSONValue]) -> HTML {
        let rows: [HTML] = registers.sorted { $0.key < $1.key }.map { "<tr><td class=\"mono\">\($0.key)</td><td class=\"mono\">\(EventView.string($0.value))</td></tr>" }
        return "<table class=\"registers\"><thead><tr><th>Register</th><th>Value</th></tr></thead><tbody>\(rows)</tbody></table>"
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

    func issuePage(_ session: LoginSession, _ issue: Issue) async throws -> Response {
        guard let project = try await store.project(id: issue.projectID) else { throw CollectorError.notFound("project.unknown", "no such project") }
        let events = try await queries.issueEvents(issueID: issue.id, limit: 500)
        let parsed: [(StoredEvent, JSONValue)] = events.compactMap { event in (try? FastJSON.parse(event.payload)).map { (event, $0) } }
        var sections: [HTML] = []
        if let (latest, json) = parsed.first {
            sections.append("<h2>Latest event</h2><p class=\"mono\">\(latest.summary.eventID) · \(Layout.time(latest.summary.received)) · \(latest.summary.release, or: "no release") · \(latest.summary.platform, or: "")</p>")
            if let message = EventView.message(json) { sections.append("<pre class=\"message\">\(message)</pre>") }
            for exception in EventView.values(json["exception"]).reversed() {
                let type = EventView.string(exception["type"]) ?? "Exception"
                let mechanism = exception["mechanism"]
                let mechanismText = [EventView.string(mechanism?["type"]), mechanism?["handled"]?.boolValue.map { $0 ? "handled" : "unhandled" }]
                    .compactMap { $0 }.joined(separator: ", ")
                sections.append("<h3>\(type): \(EventView.string(exception["value"]), or: "")</h3><p class=\"muted\">\(mechanismText)</p>\(Self.framesTable(EventView.frames(exception["stacktrace"])))")
                if let registers = exception["stacktrace"]?["registers"]?.objectValue, !registers.isEmpty {
                    sections.append("<h3>Registers</h3>\(Self.registersTable(registers))")
                }
            }
            let threads = EventView.values(json["threads"])
            if !threads.isEmpty {
                sections.append("<h2>Threads</h2>")
                for thread in threads {
                    let crashed = thread["crashed"]?.boolValue == true
                    let name = [EventView.string(thread["id"]).map { "Thread \($0)" }, EventView.string(thread["name"])].compactMap { $0 }.joined(separator: " · ")
                    let state: HTML = crashed ? " <span class=\"badge unresolved\">crashed</span>" : (thread["current"]?.boolValue == true ? " <span class=\"badge\">current</span>" : .empty)
                    var inner: HTML = Self.framesTable(EventView.frames(thread["stacktrace"]))
                    if let registers = thread["stacktrace"]?["registers"]?.objectValue, !registers.isEmpty {
                        inner = "\(inner)<h3>Registers</h3>\(Self.registersTable(registers))"
                    }
                    sections.append("<details\(crashed ? HTML(" open") : .empty)><summary>\(name.isEmpty ? "Thread" : name)\(state)</summary>\(inner)</details>")
                }
            }
            let crumbs = EventView.values(json["breadcrumbs"])
            if !crumbs.isEmpty {
                let rows: [HTML] = crumbs.suffix(100).map { crumb in
                    """
                    <tr><td>\(EventView.time(crumb["timestamp"]))</td><td>\(EventView.string(crumb["type"]), or: "")</td><td>\(EventView.string(crumb["category"]), or: "")</td>\
                    <td>\(EventView.string(crumb["level"]), or: "")</td><td>\(EventView.string(crumb["message"]), or: "")</td></tr>
                    """
                }
                sections.append("<h2>Breadcrumbs</h2><table class=\"breadcrumbs\"><thead><tr><th>Time</th><th>Type</th><th>Category</th><th>Level</th><th>Message</th></tr></thead><tbody>\(rows)</tbody></table>")
            }
            let tagRows: [HTML] = EventView.tags(json).map { "<tr><td class=\"mono\">\($0.0)</td><td>\($0.1)</td></tr>" }
            if !tagRows.isEmpty { sections.append("<h2>Tags of the latest event</h2><table class=\"tags\"><tbody>\(tagRows)</tbody></table>") }
        }
        let breakdowns: HTML = parsed.isEmpty ? .empty : """
        <h2>Tags breakdown (\(parsed.count) newest events)</h2><div class="grid2">\
        \(Self.breakdown("Release", parsed.map { $0.0.summary.release }))\(Self.breakdown("OS", parsed.map { EventView.os($0.1) }))\
        \(Self.breakdown("Device", parsed.map { EventView.device($0.1) }))\(Self.breakdown("Environment", parsed.map { $0.0.summary.environment }))</div>
        """
        let eventRows: [HTML] = events.prefix(50).map { event in
            let s = event.summary
            return "<tr><td class=\"mono\"><a href=\"/projects/\(issue.projectID)/events/\(s.eventID)\">\(s.eventID)</a></td><td>\(Layout.time(s.received))</td><td>\(s.level)</td><td>\(s.release)</td><td>\(s.environment)</td></tr>"
        }
        let body: HTML = """
        <h1>\(issue.title)</h1><p class="mono muted">\(issue.culprit)</p>
        <div class="cards"><div class="card"><b>\(issue.eventCount)</b>events</div><div class="card"><b>\(issue.userCount)</b>users</div>\
        <div class="card">status<b>\(Self.statusBadge(issue.status))</b></div><div class="card">first seen<br>\(Layout.time(issue.firstSeen))</div>\
        <div class="card">last seen<br>\(Layout.time(issue.lastSeen))</div><div class="card">releases<br>\(issue.firstRelease) → \(issue.lastRelease)</div></div>
        \(Self.statusActions(issue, session: session, returnTo: "/issues/\(issue.id)"))
        \(sections)\(breakdowns)
        <h2>Events</h2><table class="events"><thead><tr><th>Event id</th><th>Received</th><th>Level</th><th>Release</th><th>Environment</th></tr></thead><tbody>\(eventRows)</tbody></table>
        <p class="muted">Grouping \(issue.groupingAlgorithm), hash <span class="mono">\(issue.fingerprintHash)</span>.</p>
        """
        return Layout.page(title: issue.title, session: session, project: project, tab: .issues, body: body)
    }
}
