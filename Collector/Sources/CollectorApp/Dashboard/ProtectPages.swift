import CrashShieldProtocol
import Foundation
import Hummingbird

/// The dashboard's face of verdicts and protections: the issue page's "Protection" section with
/// the one-click forms (`POST /issues/<id>/protect`, field `policy`), the protections table of
/// the prevented-crashes page, and auto-protect in the project's settings
/// (`POST /projects/<id>/auto-protect`, fields `enabled`, `users`). Forms carry the session's
/// CSRF token like every dashboard form.
extension DashboardRoutes {
    func registerProtectPages(on router: Router<CollectorRequestContext>) {
        router.post("issues/:id/protect") { request, context in
            await self.action(request, context) { try await self.protectIssue($0, try await self.issue(context), $1) }
        }
        router.post("projects/:id/auto-protect") { request, context in
            await self.action(request, context) { try await self.setAutoProtect($0, try await self.project(context), $1) }
        }
    }

    var protectService: ProtectService { ProtectService(store: store, sdkConfig: sdkConfig) }

    /// The issue page's section: the verdict (or why there is none), the releases a protection
    /// scopes, the one-click forms, and the issue's protections.
    func protectionSection(_ issue: Issue, session: LoginSession) async throws -> HTML {
        guard issue.level == "fatal" else { return .empty }
        let view = try await ProtectionView.make(issue: issue, service: protectService)
        let protections: [HTML] = view.protections.map { protection in
            """
            <tr><td>\(protection.guardName)</td><td>\(protection.policy)</td><td>\(protection.release)</td>\
            <td>\(protection.origin)</td><td class="num">\(protection.configVersion.map { "v\($0)" }, or: "—")</td><td>\(Layout.time(protection.createdAt))</td></tr>
            """
        }
        let protectionTable: HTML = protections.isEmpty ? .empty : """
        <table data-protections><thead><tr><th>Guard</th><th>Policy</th><th>Release</th><th>By</th><th class="num">Version</th><th>When</th></tr></thead><tbody>\(protections)</tbody></table>
        """
        guard let verdict = view.verdict else {
            return """
            <h2 id="protection">Protection</h2><p class="muted" data-verdict="none">No CrashShield guard covers this crash.</p>\(protectionTable)
            """
        }
        let scoped = view.releases.filter { $0.appVersion != nil }
        let releases: HTML = view.releases.isEmpty ? "no release" : HTML.join(view.releases.map { release -> HTML in
            release.appVersion.map { "\(release.release) (app version \($0))" } ?? "\(release.release) (no app version: not scoped)"
        }, separator: ", ")
        let classLine: HTML = verdict.className.map { "<p>Class <code>\($0)</code>, prefix <code>\(verdict.classPrefix, or: "—")</code>.</p>" } ?? .empty
        let forms: HTML
        if scoped.isEmpty {
            forms = "<p class=\"muted\">None of the releases names an app version (name@version): a switch cannot be scoped.</p>"
        } else if verdict.needsClassPrefix && verdict.classPrefix == nil {
            forms = "<p class=\"muted\">The zombie guard needs a class prefix, and the stack names no app class: publish it with the API's <code>class_prefixes</code>.</p>"
        } else {
            let buttons: [HTML] = [(RemoteGuardPolicy.reportOnly, "Protect: report only"), (.neutralize, "Protect: neutralize")].map { policy, label in
                """
                <form class="inline" method="post" action="/issues/\(issue.id)/protect">\(Layout.csrfField(session))\
                <input type="hidden" name="policy" value="\(policy.rawValue)">\
                <button type="submit" data-protect="\(policy.rawValue)">\(label)</button></form>
                """
            }
            forms = "<div class=\"actions\">\(buttons)</div>"
        }
        return """
        <h2 id="protection">Protection</h2>
        <p data-verdict="\(verdict.guardName)">The <b>\(verdict.guardName) guard</b> would have prevented this crash (rule <code>\(verdict.rule)</code>: \(verdict.summary)).</p>
        \(classLine)<p>Publishing switches it on in the remote configuration for \(releases); every other app version keeps its settings.</p>
        \(forms)\(protectionTable)
        """
    }

    func protectIssue(_ session: LoginSession, _ issue: Issue, _ form: FormFields) async throws -> Response {
        guard let policy = form["policy"].flatMap(RemoteGuardPolicy.init(rawValue:)), policy != .off else {
            throw CollectorError.badRequest("protect.policy", "policy must be reportOnly or neutralize")
        }
        let outcome = try await protectService.protect(issue: issue, policy: policy, releases: nil, classPrefixes: nil,
                                                       by: .account(session.account.name))
        logger.info("issue protected", metadata: ["issue": "\(issue.id)", "guard": "\(outcome.verdict.guardName)",
                                                  "policy": "\(policy.rawValue)", "version": "\(outcome.config.version)",
                                                  "account": "\(session.account.name)"])
        return Self.redirect("/issues/\(issue.id)#protection")
    }

    /// The prevented-crashes page's table: per protection, the issue's crashes in the release
    /// before and after the switch and the guard's incidents in the release after it.
    func protectionsSection(_ project: Project) async throws -> HTML {
        let summaries = try await store.protectionSummaries(projectID: project.id)
        guard !summaries.isEmpty else { return .empty }
        let rows: [HTML] = summaries.map { summary in
            let protection = summary.protection
            return """
            <tr data-protection="\(protection.id)"><td>\(protection.guardName)</td><td>\(protection.release)</td><td>\(protection.policy)</td>\
            <td><a href="/issues/\(protection.issueID)">#\(protection.issueID)</a></td><td>\(Layout.time(protection.createdAt))</td>\
            <td class="num" data-crashes-before>\(summary.crashesBefore)</td><td class="num" data-crashes-after>\(summary.crashesAfter)</td>\
            <td class="num" data-incidents-after>\(summary.incidentsAfter)</td></tr>
            """
        }
        return """
        <h2>Protections: crashes before, incidents after</h2>
        <table data-protections><thead><tr><th>Guard</th><th>Release</th><th>Policy</th><th>Issue</th><th>Switched</th>\
        <th class="num">Crashes before</th><th class="num">Crashes after</th><th class="num">Incidents after</th></tr></thead><tbody>\(rows)</tbody></table>
        """
    }

    /// The settings page's section.
    func autoProtectSection(_ project: Project, session: LoginSession) async throws -> HTML {
        let setting = AutoProtectView(users: try await store.autoProtectUsers(projectID: project.id))
        let checked: HTML = setting.enabled ? " checked" : .empty
        return """
        <h2 id="auto-protect">Protect automatically</h2>
        <p>When a crash a CrashShield guard covers reaches this many users in a release, publish that guard's report-only switch for the release (once per issue and release; the history says why).</p>
        <form method="post" action="/projects/\(project.id)/auto-protect">\(Layout.csrfField(session))\
        <label><input type="checkbox" name="enabled" value="true"\(checked) data-auto-protect> Protect automatically</label> \
        <label>Users <input type="number" name="users" min="1" max="1000000" value="\(setting.users)"></label> \
        <button type="submit">Save</button></form>
        """
    }

    func setAutoProtect(_ session: LoginSession, _ project: Project, _ form: FormFields) async throws -> Response {
        let enabled = form["enabled"] == "true"
        let users = try AutoProtectView.users(form["users"].map { Int64($0) ?? -1 })
        try await store.setAutoProtectUsers(projectID: project.id, users: enabled ? users : nil)
        logger.info("auto-protect set", metadata: ["project": "\(project.id)", "enabled": "\(enabled)", "users": "\(users)",
                                                   "account": "\(session.account.name)"])
        return Self.redirect("/projects/\(project.id)/settings#auto-protect")
    }
}
