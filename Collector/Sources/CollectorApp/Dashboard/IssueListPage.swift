import Foundation
import Hummingbird

// The issue list (`/projects/<id>`): search and filters, sort, keyset pages, a sparkline per issue,
// bulk status changes. The page takes `IssueQuery`'s parameters (status `open` by default).
extension DashboardRoutes {
    /// Issues per page without `limit`, and at most.
    static let issueListDefaultLimit = 50
    static let issueListMaxLimit = 200
    /// Days of the sparkline (UTC days, today last).
    static let sparklineDays = 14

    func issuesPage(_ session: LoginSession, _ project: Project, _ request: Request) async throws -> Response {
        let fields = FormFields.parse(request.uri.query ?? "")
        let query = try IssueQuery.parse(fields, defaultStatus: "open", defaultLimit: Self.issueListDefaultLimit, maxLimit: Self.issueListMaxLimit)
        let page = try await store.issues(projectID: project.id, query: query)
        let values = try await store.issueFilterValues(projectID: project.id, limit: 200)
        let days = SVGChart.days(count: Self.sparklineDays, now: Date())
        let dayNumbers = days.map { Int64(($0.timeIntervalSince1970 / 86_400).rounded(.down)) }
        let activity = try await store.issueActivity(issueIDs: page.issues.map(\.id), days: dayNumbers[0]...dayNumbers[dayNumbers.count - 1])
        let dayLabels = days.map(SVGChart.dayLabel)
        let base = "/projects/\(project.id)"
        let here = base + "?" + query.queryString(cursor: query.cursor)

        let rows: [HTML] = page.issues.map { issue in
            let counts = dayNumbers.map { activity[issue.id]?[$0] ?? 0 }
            let releases = issue.firstRelease == issue.lastRelease ? issue.lastRelease ?? "—"
                : "\(issue.firstRelease ?? "—") → \(issue.lastRelease ?? "—")"
            return """
            <tr data-issue="\(issue.id)"><td><input type="checkbox" name="issue" value="\(issue.id)" form="bulk" aria-label="Select issue \(issue.id)"></td>\
            <td class="issue"><a href="/issues/\(issue.id)">\(issue.title)</a><div class="muted"><span class="badge level">\(issue.level)</span> <span class="mono">\(issue.culprit)</span></div></td>\
            <td class="status">\(Self.statusBadge(issue.status))</td>\
            <td>\(SVGChart.sparkline(counts, labels: dayLabels))</td>\
            <td class="num">\(issue.eventCount)</td><td class="num">\(issue.userCount)</td>\
            <td class="time optional">\(Self.shortTime(issue.firstSeen))</td><td class="time">\(Self.shortTime(issue.lastSeen))</td>\
            <td class="release optional" title="\(releases)">\(releases)</td>\
            <td><details class="menu"><summary aria-label="Actions for issue \(issue.id)">⋯</summary>\(Self.statusActions(issue, session: session, returnTo: here))</details></td></tr>
            """
        }

        func sortHeader(_ sort: IssueSort, _ title: String, numeric: Bool) -> HTML {
            var sorted = query
            sorted.sort = sort
            let current: HTML = query.sort == sort ? " aria-sort=\"descending\"" : .empty
            let link = base + "?" + sorted.queryString(cursor: nil)
            let classes = [numeric ? "num" : nil, sort == .firstSeen ? "optional" : nil].compactMap { $0 }.joined(separator: " ")
            return "<th\(classes.isEmpty ? HTML.empty : HTML(" class=\"\(classes)\""))\(current)><a href=\"\(link)\">\(title)</a></th>"
        }
        let pager: [HTML] = [
            page.previous.map { "<a rel=\"prev\" href=\"\(base)?\(query.queryString(cursor: $0))\">← Previous</a>" },
            page.next.map { "<a rel=\"next\" href=\"\(base)?\(query.queryString(cursor: $0))\">Next →</a>" },
        ].compactMap { $0 }
        let notice: HTML = fields["updated"].flatMap(Int.init).map { count in
            let to = (fields["to"] ?? "").replacingOccurrences(of: "_", with: " ")
            return count == 0 ? "<p class=\"notice\" role=\"status\">No issue was selected.</p>"
                : "<p class=\"notice\" role=\"status\">\(count) \(count == 1 ? "issue" : "issues") set to \(to).</p>"
        } ?? .empty
        let summary: HTML = page.issues.isEmpty ? "No issues match."
            : "\(page.issues.count) of \(page.total) matching \(page.total == 1 ? "issue" : "issues")"
        let bulk: HTML = """
        <form id="bulk" method="post" action="\(base)/issues/status">\(Layout.csrfField(session))<input type="hidden" name="return" value="\(here)">\
        <span class="muted">Selected:</span>\
        <button type="submit" name="status" value="resolved" class="secondary" data-bulk="resolved">Resolve</button>\
        <button type="submit" name="status" value="ignored" class="secondary" data-bulk="ignored">Ignore</button>\
        <button type="submit" name="status" value="unresolved" class="secondary" data-bulk="unresolved">Unresolve</button></form>
        """
        let body: HTML = """
        <h1>\(project.name): issues</h1>\(notice)\(filterForm(project, query, values: values))
        <div class="listbar">\(bulk)<span class="muted" data-summary>\(summary)</span><nav class="pager" aria-label="Pages">\(pager)</nav></div>
        <table class="issues"><thead><tr><th><span class="muted" title="Select for the buttons above">✓</span></th><th>Issue</th><th>Status</th>\
        <th title="Events per day (UTC), last \(Self.sparklineDays) days">\(Self.sparklineDays) days</th>\
        \(sortHeader(.events, "Events", numeric: true))\(sortHeader(.users, "Users", numeric: true))\
        \(sortHeader(.firstSeen, "First seen", numeric: false))\(sortHeader(.lastSeen, "Last seen", numeric: false))<th class="optional">Releases</th><th></th></tr></thead>\
        <tbody>\(rows)</tbody></table>
        <div class="listbar"><nav class="pager" aria-label="Pages">\(pager)</nav></div>
        """
        return Layout.page(title: "\(project.name) issues", session: session, project: project, tab: .issues, body: body, wide: true)
    }

    /// The search form: text, status, level, release, environment, guard, order, page size.
    private func filterForm(_ project: Project, _ query: IssueQuery, values: IssueFilterValues) -> HTML {
        func select(_ name: String, _ label: String, _ choices: [(value: String, title: String)], selected: String?) -> HTML {
            var options = choices
            if let selected, !options.contains(where: { $0.value == selected }) { options.append((selected, selected)) }
            let html: [HTML] = options.map { choice in
                "<option value=\"\(choice.value)\"\(choice.value == (selected ?? "") ? HTML(" selected") : HTML.empty)>\(choice.title)</option>"
            }
            return "<select name=\"\(name)\" aria-label=\"\(label)\">\(html)</select>"
        }
        let statuses = IssueQuery.statusChoices.map { ($0, $0 == "all" ? "any status" : $0.replacingOccurrences(of: "_", with: " ")) }
        let releaseOptions: [HTML] = values.releases.map { "<option value=\"\($0)\"></option>" }
        let sorts: [(String, String)] = [("last_seen", "last seen"), ("first_seen", "first seen"), ("events", "most events"), ("users", "most users")]
        return """
        <form class="filters" method="get" action="/projects/\(project.id)" role="search">\
        <input type="search" name="query" value="\(query.text ?? "")" placeholder="Search title or culprit" aria-label="Search title or culprit">\
        \(select("status", "Status", statuses, selected: query.statusParameter))\
        \(select("level", "Level", [("", "any level")] + IssueQuery.levels.map { ($0, $0) }, selected: query.level))\
        <input name="release" list="issue-releases" value="\(query.release ?? "")" placeholder="release" aria-label="Release" size="14">\
        <datalist id="issue-releases">\(releaseOptions)</datalist>\
        \(select("environment", "Environment", [("", "any environment")] + values.environments.map { ($0, $0) }, selected: query.environment))\
        \(select("guard", "Guard", [("", "any guard")] + values.guards.map { ($0, $0) }, selected: query.guardName))\
        \(select("sort", "Order", sorts, selected: query.sort.rawValue))\
        \(select("limit", "Issues per page", [25, 50, 100, 200].map { (String($0), "\($0) per page") }, selected: String(query.limit)))\
        <button type="submit" data-action="search">Search</button> <a href="/projects/\(project.id)">Reset</a></form>
        """
    }

    /// Sets the status of the issues checked on the list (`issue` fields) and returns to it with
    /// a notice (`updated`, `to`).
    func bulkStatus(_ session: LoginSession, _ project: Project, _ form: FormFields) async throws -> Response {
        guard let status = form["status"].flatMap(IssueStatus.init(rawValue:)), status != .regressed else {
            throw CollectorError.badRequest("issue.status", "status must be unresolved, resolved, resolved_in_next_release or ignored")
        }
        let raw = form.all("issue")
        let ids = raw.compactMap { Int64($0) }
        guard ids.count == raw.count, ids.count <= Self.issueListMaxLimit else {
            throw CollectorError.badRequest("request.ids", "select at most \(Self.issueListMaxLimit) issues")
        }
        let updated = try await store.setIssueStatus(projectID: project.id, ids: ids, status)
        logger.info("issue status set", metadata: ["project": "\(project.id)", "status": "\(status.rawValue)", "issues": "\(updated.count)",
                                                   "account": "\(session.account.name)"])
        let back = Self.localPath(form["return"]) ?? "/projects/\(project.id)"
        return Self.redirect(back + (back.contains("?") ? "&" : "?") + "updated=\(updated.count)&to=\(status.rawValue)")
    }

    /// `11-29 08:58` (UTC) in the current year, else `2025-11-29`; the full time in its tooltip.
    static func shortTime(_ date: Date, now: Date = Date()) -> HTML {
        let full = Layout.time(date)  // yyyy-MM-dd HH:mm:ss UTC
        let short = full.prefix(4) == Layout.time(now).prefix(4) ? String(full.dropFirst(5).prefix(11)) : String(full.prefix(10))
        return "<time datetime=\"\(ISO8601DateFormatter().string(from: date))\" title=\"\(full)\">\(short)</time>"
    }
}

extension SVGChart {
    /// A small bar chart of `counts` (one per day, oldest first), each bar with a `<title>` of
    /// its label and count; a day without events is the baseline only.
    static func sparkline(_ counts: [Int64], labels: [String]) -> HTML {
        let barWidth = 4.0, gap = 2.0, height = 20.0
        let width = Double(counts.count) * (barWidth + gap) - gap
        let peak = max(1, counts.max() ?? 1)
        var bars: [HTML] = []
        for (index, count) in counts.enumerated() where count > 0 {
            let barHeight = max(2, (height - 1) * Double(count) / Double(peak))
            let label = index < labels.count ? labels[index] : ""
            bars.append("<rect x=\"\(Double(index) * (barWidth + gap), digits: 0)\" y=\"\(height - 1 - barHeight, digits: 1)\" width=\"\(barWidth, digits: 0)\" height=\"\(barHeight, digits: 1)\"><title>\(label): \(count)</title></rect>")
        }
        let total = counts.reduce(0, +)
        return """
        <svg class="spark" viewBox="0 0 \(width, digits: 0) \(height, digits: 0)" width="\(width, digits: 0)" height="\(height, digits: 0)" role="img" \
        aria-label="\(total) events in the last \(counts.count) days" xmlns="http://www.w3.org/2000/svg">\
        <line x1="0" y1="\(height - 0.5, digits: 1)" x2="\(width, digits: 0)" y2="\(height - 0.5, digits: 1)"/>\(bars)</svg>
        """
    }
}
