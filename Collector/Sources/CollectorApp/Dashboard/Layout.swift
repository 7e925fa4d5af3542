import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The dashboard's page frame: document head (the collector's own stylesheet, nothing from
/// another host), header with navigation and the logout form.
enum Layout {
    enum Tab: String { case projects, issues, health, prevented, launch, config, settings, account, accounts }

    /// A full HTML document. Pages are never cached and never framed.
    static func document(title: String, body: HTML, status: HTTPResponse.Status = .ok) -> Response {
        let html: HTML = """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title) · CrashShield collector</title><link rel="stylesheet" href="/static/collector.css"></head>
        <body>\(body)</body></html>
        """
        return Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy: "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff", HTTPField.Name("Referrer-Policy")!: "same-origin",
            ],
            body: .init(byteBuffer: ByteBuffer(string: html.rendered)))
    }

    /// A logged-in page: header, project navigation (when `project` is set), then `body`;
    /// `wide`: the content takes the window's whole width (tables with many columns).
    static func page(title: String, session: LoginSession, project: Project? = nil, tab: Tab, body: HTML, wide: Bool = false) -> Response {
        var nav: [HTML] = []
        if let project {
            let tabs: [(Tab, String, String)] = [
                (.issues, "Issues", "/projects/\(project.id)"), (.health, "Release health", "/projects/\(project.id)/health"),
                (.prevented, "Prevented crashes", "/projects/\(project.id)/prevented"), (.launch, "Launch crashes", "/projects/\(project.id)/launch"),
                (.config, "Remote config", "/projects/\(project.id)/config"), (.settings, "Settings & DSN", "/projects/\(project.id)/settings"),
            ]
            nav = tabs.map { entry in
                "<a href=\"\(entry.2)\"\(entry.0 == tab ? HTML(" aria-current=\"page\"") : HTML.empty)>\(entry.1)</a>"
            }
        }
        let projectName: HTML = project.map { "<span class=\"sep\">/</span><a href=\"/projects/\($0.id)\">\($0.name)</a>" } ?? .empty
        let navHTML: HTML = nav.isEmpty ? .empty : "<nav class=\"tabs\">\(nav)</nav>"
        let accountsLink: HTML = session.account.isAdmin
            ? "<a href=\"/accounts\"\(tab == .accounts ? HTML(" aria-current=\"page\"") : HTML.empty)>Accounts</a>" : .empty
        let html: HTML = """
        <header class="top"><a class="brand" href="/projects">CrashShield collector</a>\(projectName)
        <div class="user"><a href="/account" title="Your password and API tokens"\(tab == .account ? HTML(" aria-current=\"page\"") : HTML.empty)>\(session.account.name)</a>\(accountsLink)
        <form class="logout" method="post" action="/logout">\(csrfField(session))<button type="submit">Log out</button></form></div></header>
        \(navHTML)<main\(wide ? HTML(" class=\"wide\"") : HTML.empty)>\(body)</main>
        """
        return document(title: title, body: html)
    }

    /// The hidden CSRF field every form of a logged-in page carries.
    static func csrfField(_ session: LoginSession) -> HTML {
        "<input type=\"hidden\" name=\"csrf_token\" value=\"\(session.csrfToken)\">"
    }

    static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss 'UTC'"
        return formatter.string(from: date)
    }

    static func percent(_ rate: Double) -> String { String(format: "%.2f%%", rate * 100) }
}

enum DashboardStyle {
    static let css = """
    :root { --fg: #1f2937; --muted: #6b7280; --line: #e5e7eb; --accent: #2563eb; --bad: #b91c1c; --good: #15803d; --bg: #f9fafb; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
    a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
    header.top { display: flex; align-items: center; gap: .5rem; padding: .6rem 1.2rem; background: #111827; color: #f9fafb; }
    header.top a { color: #f9fafb; font-weight: 600; } header.top .sep { color: #9ca3af; }
    header.top .user { margin-left: auto; display: flex; align-items: center; gap: .9rem; }
    header.top .user a { font-weight: 400; color: #d1d5db; } header.top .user a[aria-current=page] { color: #fff; text-decoration: underline; }
    header.top form.logout { display: flex; align-items: center; gap: .5rem; color: #d1d5db; }
    form.stacked { max-width: 420px; } form.stacked label { display: block; margin: .5rem 0; } form.stacked input:not([type=checkbox]) { display: block; width: 100%; margin-top: .2rem; }
    pre.token, pre.password { font-size: 14px; user-select: all; }
    nav.tabs { display: flex; gap: .2rem; padding: 0 1.2rem; background: #fff; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
    nav.tabs a { padding: .55rem .8rem; color: var(--muted); border-bottom: 2px solid transparent; }
    nav.tabs a[aria-current=page] { color: var(--fg); border-bottom-color: var(--accent); }
    main { padding: 1.2rem; max-width: 1200px; } main.wide { max-width: none; }
    main.login { max-width: 360px; margin: 10vh auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 1.5rem; }
    main.login label { display: block; margin: .6rem 0; } main.login input { display: block; width: 100%; margin-top: .2rem; }
    h1 { font-size: 1.35rem; margin: 0 0 .8rem; overflow-wrap: anywhere; } h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
    table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
    th, td { text-align: left; padding: .35rem .55rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
    th { background: #f3f4f6; font-weight: 600; font-size: .85rem; overflow-wrap: normal; } thead th { white-space: nowrap; }
    td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; } td.num { white-space: nowrap; }
    input, textarea, select, button { font: inherit; padding: .35rem .5rem; border: 1px solid #d1d5db; border-radius: 4px; }
    button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
    button.secondary { background: #fff; color: var(--fg); border-color: #d1d5db; }
    form.inline { display: inline; } .actions { display: flex; gap: .3rem; flex-wrap: wrap; }
    textarea { width: 100%; min-height: 18rem; font-family: ui-monospace, monospace; font-size: 13px; }
    code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
    pre { background: #fff; border: 1px solid var(--line); padding: .6rem; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
    .muted { color: var(--muted); } .error { color: var(--bad); } .notice { color: var(--good); }
    .badge { display: inline-block; padding: 0 .45rem; border-radius: 999px; font-size: .78rem; background: #e5e7eb; white-space: nowrap; overflow-wrap: normal; }
    .badge.unresolved, .badge.regressed { background: #fee2e2; color: var(--bad); } .badge.resolved, .badge.resolved_in_next_release { background: #dcfce7; color: var(--good); }
    .badge.ignored { background: #f3f4f6; color: var(--muted); } .badge.inapp { background: #dbeafe; color: #1d4ed8; }
    tr.inapp td { background: #eff6ff; } tr.crashed td { background: #fef2f2; }
    .cards { display: flex; gap: .8rem; flex-wrap: wrap; margin-bottom: 1rem; }
    .card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .6rem .9rem; min-width: 9rem; }
    .card b { display: block; font-size: 1.3rem; }
    .grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(280px, 1fr)); gap: 1rem; }
    figure.chart { margin: .5rem 0 1rem; background: #fff; border: 1px solid var(--line); padding: .5rem; max-width: 860px; }
    figure.chart svg { width: 100%; height: auto; display: block; }
    figure.chart figcaption { font-size: .85rem; color: var(--muted); }
    svg .grid { stroke: #e5e7eb; stroke-width: 1; } svg .axis { fill: #6b7280; font-size: 11px; }
    ul.legend { list-style: none; padding: 0; margin: .3rem 0 0; display: flex; gap: .8rem; flex-wrap: wrap; font-size: .85rem; }
    .swatch { display: inline-block; width: .8rem; height: .8rem; border-radius: 2px; margin-right: .3rem; vertical-align: -1px; }
    details { margin: .4rem 0; } summary { cursor: pointer; }
    form.filters { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin-bottom: .6rem; }
    form.filters input[type=search] { flex: 1 1 16rem; }
    .listbar { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: center; margin: .4rem 0; }
    .listbar form { display: flex; gap: .3rem; align-items: center; } .listbar .pager { margin-left: auto; display: flex; gap: .8rem; }
    button.small, .listbar button { padding: .1rem .5rem; font-size: .85rem; }
    table.issues td { vertical-align: middle; } table.issues td.issue { width: 100%; min-width: 14rem; }
    table.issues td.time, table.issues td.status { white-space: nowrap; overflow-wrap: normal; }
    table.issues td.release { white-space: nowrap; overflow-wrap: normal; max-width: 10rem; overflow: hidden; text-overflow: ellipsis; }
    @media (max-width: 1000px) { table.issues .optional { display: none; } }
    table.issues th a { color: inherit; } table.issues th[aria-sort] a { color: var(--accent); }
    svg.spark { display: block; } svg.spark rect { fill: var(--accent); } svg.spark line { stroke: #d1d5db; stroke-width: 1; }
    details.menu { position: relative; margin: 0; } details.menu summary { list-style: none; padding: 0 .5rem; border: 1px solid #d1d5db; border-radius: 4px; background: #fff; }
    details.menu summary::-webkit-details-marker { display: none; }
    details.menu .actions { position: absolute; right: 0; z-index: 2; flex-direction: column; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .4rem; white-space: nowrap; box-shadow: 0 4px 12px rgba(0,0,0,.08); }
    table.kv th { width: 30%; max-width: 14rem; background: #f9fafb; font-weight: 500; } tr[aria-current] td { background: #fefce8; }
    td.nowrap { white-space: nowrap; overflow-wrap: normal; }
    .eventnav span.muted { cursor: default; } td.crumb-data div { white-space: pre-wrap; }
    """ + SVGChart.palette.enumerated().map { ".swatch.c\($0.offset) { background: \($0.element); }" }.joined(separator: "\n")
}
