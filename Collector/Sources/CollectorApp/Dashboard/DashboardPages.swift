import CrashShieldProtocol
import Foundation
import Hummingbird

// The dashboard's pages other than the issue page. Every value from the database or an event is
// interpolated into `HTML` literals, which escapes it.
extension DashboardRoutes {
    // MARK: Projects

    func projectsPage(_ session: LoginSession) async throws -> Response {
        var rows: [HTML] = []
        for summary in try await queries.projectSummaries() {
            let project = summary.project
            rows.append("""
            <tr><td><a href="/projects/\(project.id)">\(project.name)</a></td><td class="num">\(summary.openIssues)</td><td class="num">\(summary.issues)</td>\
            <td class="num">\(summary.incidents)</td><td>\(Layout.time(project.createdAt))</td><td><a href="/projects/\(project.id)/settings">DSN</a></td></tr>
            """)
        }
        let body: HTML = """
        <h1>Projects</h1><p><a href="/projects/new">New project</a></p>
        <table><thead><tr><th>Project</th><th class="num">Open issues</th><th class="num">Issues</th><th class="num">Prevented crashes</th><th>Created</th><th></th></tr></thead>
        <tbody>\(rows)</tbody></table>
        """
        return Layout.page(title: "Projects", session: session, tab: .projects, body: body)
    }

    func newProjectPage(_ session: LoginSession, error: String?) -> Response {
        let errorHTML: HTML = error.map { "<p class=\"error\">\($0)</p>" } ?? .empty
        let body: HTML = """
        <h1>New project</h1>\(errorHTML)
        <form method="post" action="/projects">\(Layout.csrfField(session))
        <label>Name <input name="name" required maxlength="200"></label> <button type="submit">Create project</button></form>
        """
        return Layout.page(title: "New project", session: session, tab: .projects, body: body)
    }

    func createProject(_ session: LoginSession, _ form: FormFields) async throws -> Response {
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty, name.count <= 200 else {
            var response = newProjectPage(session, error: "The name must be 1 to 200 characters.")
            response.status = .badRequest
            return response
        }
        let project = try await store.createProject(name: name)
        logger.info("project created", metadata: ["project": "\(project.id)", "account": "\(session.account.name)"])
        return Self.redirect("/projects/\(project.id)/settings")
    }

    func projectSettingsPage(_ session: LoginSession, _ project: Project, _ request: Request) async throws -> Response {
        let autoProtect = try await autoProtectSection(project, session: session)
        let body: HTML = """
        <h1>\(project.name): settings</h1>
        <h2>DSN</h2><p>Configure any Sentry SDK (or CrashShield's reporting) with this DSN:</p><pre class="dsn">\(project.dsn(baseURL: baseURL(request)))</pre>
        <table><tbody><tr><th>Project id</th><td class="mono">\(project.id)</td></tr>
        <tr><th>Public key</th><td class="mono">\(project.publicKey)</td></tr>
        <tr><th>SDK config signing key (Ed25519, base64)</th><td class="mono">\(project.configSigningPublicKey)</td></tr>
        <tr><th>Created</th><td>\(Layout.time(project.createdAt))</td></tr></tbody></table>
        \(autoProtect)
        """
        return Layout.page(title: "\(project.name) settings", session: session, project: project, tab: .settings, body: body)
    }

    // MARK: Issues

    static func statusBadge(_ status: IssueStatus) -> HTML {
        "<span class=\"badge \(status.rawValue)\">\(status.rawValue.replacingOccurrences(of: "_", with: " "))</span>"
    }

    /// The status forms applicable to an issue (resolve, resolve in next release, ignore, unresolve).
    static func statusActions(_ issue: Issue, session: LoginSession, returnTo: String) -> HTML {
        let choices: [(IssueStatus, String)] = [
            (.resolved, "Resolve"), (.resolvedInNextRelease, "Resolve in next release"), (.ignored, "Ignore"), (.unresolved, "Unresolve"),
        ]
        let forms = choices.filter { $0.0 != issue.status && !($0.0 == .unresolved && issue.status == .regressed) }.map { choice -> HTML in
            """
            <form class="inline" method="post" action="/issues/\(issue.id)/status">\(Layout.csrfField(session))\
            <input type="hidden" name="status" value="\(choice.0.rawValue)"><input type="hidden" name="return" value="\(returnTo)">\
            <button type="submit" class="secondary" data-action="\(choice.0.rawValue)">\(choice.1)</button></form>
            """
        }
        return "<div class=\"actions\">\(forms)</div>"
    }

    func setStatus(_ session: LoginSession, _ issue: Issue, _ form: FormFields) async throws -> Response {
        guard let status = form["status"].flatMap(IssueStatus.init(rawValue:)), status != .regressed else {
            throw CollectorError.badRequest("issue.status", "status must be unresolved, resolved, resolved_in_next_release or ignored")
        }
        _ = try await store.setIssueStatus(id: issue.id, status)
        logger.info("issue status set", metadata: ["issue": "\(issue.id)", "status": "\(status.rawValue)", "account": "\(session.account.name)"])
        return Self.redirect(Self.localPath(form["return"]) ?? "/issues/\(issue.id)")
    }

    // MARK: Release health

    /// How many releases the release-health charts draw: the newest (`ReleaseOrder`) of those
    /// with sessions in the charts' 14 days.
    static let healthChartReleases = 6

    func healthPage(_ session: LoginSession, _ project: Project) async throws -> Response {
        let health = try await store.releaseHealth(projectID: project.id)
        let rows: [HTML] = health.map { entry in
            """
            <tr><td>\(entry.release)</td><td class="num">\(entry.sessions)</td><td class="num">\(entry.crashedSessions)</td>\
            <td class="num">\(entry.abnormalSessions)</td><td class="num">\(entry.erroredSessions)</td>\
            <td class="num">\(Layout.percent(entry.crashFreeSessionRate))</td><td class="num">\(entry.users)</td>\
            <td class="num">\(Layout.percent(entry.crashFreeUserRate))</td></tr>
            """
        }
        let days = SVGChart.days(count: 14, now: Date())
        // The newest releases (release order, not session count) among the 50 newest, of those with
        // sessions in the charts' days.
        let candidates = Array(health.map(\.release).sorted { ReleaseOrder.isNewer($0, than: $1) }.prefix(50))
        let byRelease = Dictionary(grouping: try await queries.releaseDays(projectID: project.id, releases: candidates, since: days[0]), by: \.release)
        let releases = candidates.filter { byRelease[$0] != nil }.prefix(Self.healthChartReleases)
        var sessionSeries: [SVGChart.Series] = []
        var userSeries: [SVGChart.Series] = []
        var lowest = 1.0
        for release in releases {
            var sessions = [Int64](repeating: 0, count: days.count), crashed = [Int64](repeating: 0, count: days.count)
            var users = [Int64](repeating: 0, count: days.count), crashedUsers = [Int64](repeating: 0, count: days.count)
            for entry in byRelease[release] ?? [] {
                guard let day = SVGChart.dayIndex(entry.day, in: days) else { continue }
                sessions[day] += entry.sessions
                crashed[day] += entry.crashed
                users[day] += entry.users
                crashedUsers[day] += entry.crashedUsers
            }
            let sessionRates: [Double?] = days.indices.map { sessions[$0] == 0 ? nil : 1 - Double(crashed[$0]) / Double(sessions[$0]) }
            let userRates: [Double?] = days.indices.map { users[$0] == 0 ? nil : 1 - Double(crashedUsers[$0]) / Double(users[$0]) }
            lowest = min(lowest, sessionRates.compactMap { $0 }.min() ?? 1, userRates.compactMap { $0 }.min() ?? 1)
            sessionSeries.append(.init(name: release, values: sessionRates))
            userSeries.append(.init(name: release, values: userRates))
        }
        let yMin = max(0, (lowest * 20).rounded(.down) / 20 - 0.05)
        let labels = days.map(SVGChart.dayLabel)
        let charts: HTML = releases.isEmpty ? "<p class=\"muted\">No sessions in the last 14 days.</p>" : """
        <div class="grid2">\(SVGChart.lines(title: "Crash-free sessions per day (UTC), newest releases", labels: labels, series: sessionSeries, yMin: yMin, yMax: 1, format: Layout.percent))\
        \(SVGChart.lines(title: "Crash-free users per day (UTC), newest releases", labels: labels, series: userSeries, yMin: yMin, yMax: 1, format: Layout.percent))</div>
        """
        let body: HTML = """
        <h1>\(project.name): release health</h1>\(charts)
        <h2>All releases</h2><table><thead><tr><th>Release</th><th class="num">Sessions</th><th class="num">Crashed</th><th class="num">Abnormal</th>\
        <th class="num">Errored</th><th class="num">Crash-free sessions</th><th class="num">Users</th><th class="num">Crash-free users</th></tr></thead>\
        <tbody>\(rows)</tbody></table>
        """
        return Layout.page(title: "\(project.name) release health", session: session, project: project, tab: .health, body: body)
    }

    // MARK: Prevented crashes

    func preventedPage(_ session: LoginSession, _ project: Project) async throws -> Response {
        let counts = try await store.incidents(projectID: project.id)
        let now = Date()
        let days = SVGChart.days(count: 14, now: now)
        let weekAgo = now.addingTimeInterval(-7 * 86_400)
        // Counted per guard and day by the database (the 14 days' rows are not read one by one).
        let perGuardDay = try await queries.incidentDayCounts(projectID: project.id, since: days[0], recent: weekAgo)
        var totals: [String: (all: Int64, recent: Int64)] = [:]
        for row in perGuardDay {
            let total = totals[row.guardName] ?? (0, 0)
            totals[row.guardName] = (total.all + row.count, total.recent + row.recent)
        }
        let guards = totals.keys.sorted { (totals[$0]?.all ?? 0, $1) > (totals[$1]?.all ?? 0, $0) }
        let firstDay = Int64((days[0].timeIntervalSince1970 / 86_400).rounded(.down))
        let series: [SVGChart.Series] = guards.prefix(8).map { name in
            var perDay = [Double](repeating: 0, count: days.count)
            for row in perGuardDay where row.guardName == name {
                let index = Int(row.day - firstDay)
                if perDay.indices.contains(index) { perDay[index] += Double(row.count) }
            }
            return .init(name: name, values: perDay.map { Optional($0) })
        }
        let peak = series.flatMap { $0.values.compactMap { $0 } }.max() ?? 1
        let trendRows: [HTML] = guards.map { name in
            let total = totals[name] ?? (0, 0)
            let thisWeek = total.recent
            let lastWeek = total.all - thisWeek
            let trend: HTML = lastWeek == 0 ? (thisWeek == 0 ? "—" : "new") : "\(Double(thisWeek - lastWeek) / Double(lastWeek) * 100, digits: 0)%"
            return "<tr><td>\(name)</td><td class=\"num\">\(thisWeek)</td><td class=\"num\">\(lastWeek)</td><td class=\"num\">\(trend)</td></tr>"
        }
        let rows: [HTML] = counts.map { entry in
            "<tr><td>\(entry.guardName)</td><td>\(entry.release)</td><td class=\"num\">\(entry.count)</td><td>\(Layout.time(entry.lastSeen))</td></tr>"
        }
        let total = counts.reduce(Int64(0)) { $0 + $1.count }
        let protections = try await protectionsSection(project)
        let chart: HTML = series.isEmpty ? "<p class=\"muted\">No prevented crashes in the last 14 days.</p>"
            : SVGChart.lines(title: "Prevented crashes per day (UTC), by guard", labels: days.map(SVGChart.dayLabel), series: series,
                             // A multiple of 4 so that the five grid lines fall on whole counts.
                             yMin: 0, yMax: max(4, (peak / 4).rounded(.up) * 4), format: { String(Int($0.rounded())) })
        let body: HTML = """
        <h1>\(project.name): prevented crashes</h1>
        <p class="muted">Incidents: events with level warning, a handled exception mechanism and a guard name: CrashShield's SDK names it in the tag <code>crashshield.guard</code> and as the exception type of a <code>crashshield.guard</code> mechanism; other senders may use the tag <code>guard</code> or <code>mechanism.data.guard</code>.</p>
        <div class="cards"><div class="card"><b>\(total)</b>prevented crashes</div><div class="card"><b>\(Set(counts.map(\.guardName)).count)</b>guards</div></div>
        \(chart)<h2>Trend by guard</h2><table><thead><tr><th>Guard</th><th class="num">Last 7 days</th><th class="num">Previous 7 days</th><th class="num">Change</th></tr></thead><tbody>\(trendRows)</tbody></table>
        <h2>By guard and release</h2><table><thead><tr><th>Guard</th><th>Release</th><th class="num">Incidents</th><th>Last seen</th></tr></thead><tbody>\(rows)</tbody></table>
        \(protections)
        """
        return Layout.page(title: "\(project.name) prevented crashes", session: session, project: project, tab: .prevented, body: body)
    }

    // MARK: Launch crashes

    /// Launch-crash loops, read from event tags: `launch.phase` = `launching` (CrashShield's SDK;
    /// `launch` is accepted too) marks a crash before the launch completed,
    /// `launch.consecutive_crashes` its count, `launch.repair_step` the repair step after which a
    /// launch completed (the SDK's event for the loop's end).
    func launchPage(_ session: LoginSession, _ project: Project) async throws -> Response {
        // The tags stored at ingest (`event_launch_tags`), not the events' payloads.
        let summary = try await queries.launchSummary(projectID: project.id, window: LaunchSummary.window)
        let crashesByRelease = summary.crashesByRelease, repairs = summary.repairs, launchTagKeys = summary.tagKeys
        let crashRows: [HTML] = crashesByRelease.sorted { ReleaseOrder.isNewer($0.key, than: $1.key) }.map { release, entry in
            "<tr><td>\(release)</td><td class=\"num\">\(entry.count)</td><td class=\"num\">\(entry.maxConsecutive)</td></tr>"
        }
        let repairRows: [HTML] = repairs.sorted { $0.value.count > $1.value.count }.map { step, entry in
            "<tr><td class=\"mono\">\(step)</td><td class=\"num\">\(entry.count)</td><td>\(entry.releases.sorted().joined(separator: ", "))</td></tr>"
        }
        let keys: HTML = launchTagKeys.isEmpty ? "<p class=\"muted\">No launch-related tags in the last \(summary.eventsRead) events.</p>"
            : "<p>Launch-related tags seen: \(HTML.join(launchTagKeys.sorted { $0.key < $1.key }.map { "<code>\($0.key)</code> (\($0.value))" }, separator: ", "))</p>"
        let body: HTML = """
        <h1>\(project.name): launch crashes</h1>
        <p class="muted">Read from the newest \(summary.eventsRead) events' tags: <code>launch.phase</code> = <code>launching</code> marks a crash before the launch completed,
        <code>launch.consecutive_crashes</code> its position in a loop, and <code>launch.repair_step</code> the repair step after which a launch completed
        (CrashShield's SDK sends these; any SDK that sets them is counted here).</p>\(keys)
        <h2>Launch crashes by release</h2><table><thead><tr><th>Release</th><th class="num">Launch crashes</th><th class="num">Longest loop</th></tr></thead><tbody>\(crashRows)</tbody></table>
        <h2>Loops ended, by repair step</h2><table><thead><tr><th>Repair step</th><th class="num">Loops ended</th><th>Releases</th></tr></thead><tbody>\(repairRows)</tbody></table>
        """
        return Layout.page(title: "\(project.name) launch crashes", session: session, project: project, tab: .launch, body: body)
    }

    // MARK: Remote configuration

    static func prettyJSON(_ data: Data) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
              let pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed])
        else { return String(decoding: data, as: UTF8.self) }
        return String(decoding: pretty, as: UTF8.self)
    }

    func configPage(_ session: LoginSession, _ project: Project, draft: String?, message: HTML?, status: HTTPResponse.Status = .ok) async throws -> Response {
        let history = try await store.sdkConfigHistory(projectID: project.id)
        let current = history.first
        let text = draft ?? current.map { Self.prettyJSON(Self.editableDocument($0.document)) } ?? "{\n  \"rules\": []\n}"
        let rows: [HTML] = history.map { version in
            let rollback: HTML = version.version == current?.version ? "<span class=\"muted\">served now</span>" : """
            <form class="inline" method="post" action="/projects/\(project.id)/config/rollback">\(Layout.csrfField(session))\
            <input type="hidden" name="version" value="\(version.version)"><button type="submit" class="secondary" data-rollback="\(version.version)">Roll back to this</button></form>
            """
            let restored: HTML = version.restoredFrom.map { "rollback to v\($0)" } ?? "edit"
            var publisher: HTML = version.publishedBy.map { "<span data-published-by>\($0.description)</span>" }
                ?? "<span class=\"muted\">not recorded</span>"
            if let reason = version.reason { publisher = "\(publisher)<br><span class=\"muted\" data-reason>\(reason)</span>" }
            return """
            <tr><td class="num">v\(version.version)</td><td>\(Layout.time(version.createdAt))</td><td>\(publisher)</td><td>\(restored)</td>\
            <td><details><summary>document</summary><pre>\(Self.prettyJSON(version.document))</pre></details>\(Self.warningsHTML(SDKConfigService.warnings(of: version)))</td><td>\(rollback)</td></tr>
            """
        }
        let currentHTML: HTML = current.map { "<p>Served now: <b>v\($0.version)</b>, signed with the project's Ed25519 key.</p>" }
            ?? "<p class=\"muted\">No configuration published yet: <code>GET /api/\(project.id)/sdk-config</code> answers 404.</p>"
        let body: HTML = """
        <h1>\(project.name): remote configuration</h1>\(message ?? .empty)\(currentHTML)
        <div class="grid2"><form method="post" action="/projects/\(project.id)/config">\(Layout.csrfField(session))
        <label for="document">SDK configuration document (JSON object; <code>version</code> and <code>issued_at</code> are set by the collector)</label>
        <textarea id="document" name="document" spellcheck="false">\(text)</textarea>
        <p><button type="submit">Publish new version</button></p></form>
        \(Self.configReference)</div>
        <h2 id="history">History</h2><table><thead><tr><th class="num">Version</th><th>Published</th><th>By</th><th>Kind</th><th>Content</th><th></th></tr></thead><tbody>\(rows)</tbody></table>
        """
        return Layout.page(title: "\(project.name) remote configuration", session: session, project: project, tab: .config, body: body)
            .withStatus(status)
    }

    /// What the SDK ignores in a version, as a short list (empty markup when nothing).
    static func warningsHTML(_ warnings: [RemoteConfigWarning]) -> HTML {
        guard !warnings.isEmpty else { return .empty }
        let items: [HTML] = warnings.map { warning in
            let kind = warning.code == RemoteConfigWarning.unknownGuardCode ? "unknown guard" : "unknown field"
            return "<li><code>\(warning.path)</code> (\(kind))</li>"
        }
        return "<div class=\"muted\" data-sdk-warnings>Ignored by this SDK version:<ul>\(items)</ul></div>"
    }

    /// An example document built from the SDK's model: one rule with every field the model
    /// reads, its guards named from `RemoteConfigDocument.knownGuardNames` and one of each policy.
    static let exampleDocument: RemoteConfigDocument = {
        let guardNames = RemoteConfigDocument.knownGuardNames.sorted()
        let rule = RemoteConfigRule(
            when: RemoteConfigCondition(appVersion: try? VersionConstraint(">=2.4.0, <2.5.0"), os: "iOS",
                                        osVersion: try? VersionConstraint(">=16"), arch: "arm64"),
            guards: Dictionary(uniqueKeysWithValues: zip(guardNames, RemoteGuardPolicy.allCases)),
            allowClassPrefixes: ["MY"], denyClassPrefixes: ["MYLegacy"], zombieClassPrefixes: ["MY"],
            incidentSampleRate: 0.25, capture: true)
        return RemoteConfigDocument(version: 0, rules: [rule])
    }()

    /// The reference next to the editor, generated from the SDK's model (`CrashShieldProtocol`):
    /// the guard names and policies it knows, the version-constraint operators, and an example.
    static let configReference: HTML = {
        let guardNames: [HTML] = RemoteConfigDocument.knownGuardNames.sorted().map { "<code data-guard>\($0)</code> " }
        let policies: [HTML] = RemoteGuardPolicy.allCases.map { "<code data-policy>\($0.rawValue)</code> " }
        let operators: [HTML] = VersionConstraint.Operator.allCases.map { "<code>\($0.rawValue)</code> " }
        let example = prettyJSON(editableDocument(exampleDocument.jsonData()))
        return """
        <aside aria-label="Reference"><h2>Reference (from the SDK's model)</h2>
        <p>Guards, in <code>rules[].guards</code>: \(guardNames)</p>
        <p>Policies: \(policies)</p>
        <p>Version constraints (<code>when.app_version</code>, <code>when.os_version</code>): comparisons joined by commas, all must hold; operators \(operators)(a bare version means <code>=</code>).</p>
        <p class="muted">Rules are tried in order and the first whose <code>when</code> matches applies; a field left out keeps the app's own setting. A document the SDK would refuse (a wrong policy, a bad version constraint, a sample rate outside 0 to 1, …) is not published. Unknown fields and guard names are published (a newer SDK may know them) and listed as ignored.</p>
        <details open><summary>Example</summary><pre>\(example)</pre></details></aside>
        """
    }()

    /// A served document without the fields the collector sets (`version`, `issued_at`), for the editor.
    static func editableDocument(_ served: Data) -> Data {
        guard case .object(var members)? = try? JSONValue.parse(served) else { return served }
        members["version"] = nil
        members["issued_at"] = nil
        return JSONValue.object(members).jsonData()
    }

    /// The editor's text as a JSON value, read as strictly as the SDK reads a document
    /// (RFC 8259; a key repeated in one object is refused); otherwise a message for the user.
    static func parseEditorText(_ text: String) -> Result<JSONValue, EditorTextError> {
        let data = Data(text.utf8)
        let value: JSONValue
        do {
            value = try StrictJSON.parse(data, rules: .lastKeyWins)
        } catch {
            let prefix = data.prefix(error.offset)
            let line = prefix.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
            let column = prefix.count - (prefix.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
            return .failure(EditorTextError(message: "The document is not valid JSON (line \(line), column \(column))."))
        }
        if value.objectValue != nil {
            do {
                _ = try RemoteConfigDocument.parse(data)
            } catch where error.code == RemoteConfigError.invalidJSONCode {
                return .failure(EditorTextError(message: "The document is not JSON as the SDK reads it: a key appears twice in one object, or a number is out of range."))
            } catch {
                // Other objections are the model's, reported by `publish` for the completed document.
            }
        }
        return .success(value)
    }

    /// The editor's text is not JSON the SDK reads.
    struct EditorTextError: Error {
        let message: String
    }

    /// The message shown above the editor when the SDK would refuse the document.
    static func rejectionHTML(_ rejection: SDKConfigRejection) -> HTML {
        "<p class=\"error\" role=\"alert\" data-rejection=\"\(rejection.sdkCode)\">Not published: the SDK would refuse this document at <code>\(rejection.path)</code>: \(rejection.reason).</p>"
    }

    /// Publishes the edited document as the next version; `version` and `issued_at` in the text
    /// are ignored (the collector sets both), so saving the page as shown never conflicts. Text
    /// that is not JSON (400), or a document the SDK would refuse (422), shows the page again with
    /// the error and the text as submitted.
    func publishConfig(_ session: LoginSession, _ project: Project, _ form: FormFields) async throws -> Response {
        let text = form["document"] ?? ""
        var document: JSONValue
        switch Self.parseEditorText(text) {
        case .success(let value): document = value
        case .failure(let error):
            return try await configPage(session, project, draft: text, message: "<p class=\"error\" role=\"alert\">\(error.message)</p>", status: .badRequest)
        }
        if case .object(var members) = document {
            members["version"] = nil
            members["issued_at"] = nil
            document = .object(members)
        }
        do {
            let published = try await sdkConfig.publish(projectID: project.id, document: document, publishedBy: .account(session.account.name))
            logger.info("sdk config published", metadata: ["project": "\(project.id)", "version": "\(published.version)", "account": "\(session.account.name)"])
        } catch let rejection as SDKConfigRejection {
            return try await configPage(session, project, draft: text, message: Self.rejectionHTML(rejection),
                                        status: .init(code: SDKConfigRejection.status))
        } catch let error as CollectorError where error.status == 400 || error.status == 413 {
            return try await configPage(session, project, draft: text, message: "<p class=\"error\" role=\"alert\">\(error.message)</p>", status: .badRequest)
        }
        return Self.redirect("/projects/\(project.id)/config")
    }

    func rollbackConfig(_ session: LoginSession, _ project: Project, _ form: FormFields) async throws -> Response {
        guard let version = form["version"].flatMap(Int64.init) else {
            throw CollectorError.badRequest("sdk_config.invalid", "version must be a number")
        }
        do {
            let restored = try await sdkConfig.rollback(projectID: project.id, to: version, by: .account(session.account.name))
            logger.info("sdk config rolled back", metadata: ["project": "\(project.id)", "to": "\(version)", "version": "\(restored.version)",
                                                             "account": "\(session.account.name)"])
        } catch let rejection as SDKConfigRejection {
            return try await configPage(session, project, draft: nil, message: Self.rejectionHTML(rejection),
                                        status: .init(code: SDKConfigRejection.status))
        }
        return Self.redirect("/projects/\(project.id)/config")
    }
}

extension Response {
    func withStatus(_ status: HTTPResponse.Status) -> Response {
        var copy = self
        copy.status = status
        return copy
    }
}
