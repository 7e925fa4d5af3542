import Foundation
import HTTPTypes
import Hummingbird

// The account pages: `/account` (one's own password and API tokens) and `/accounts` (admins:
// add and remove accounts, reset another account's password). Forms post with the session's CSRF token like every dashboard form;
// a refused form (a `CollectorError` with a 4xx status) shows the page again with the message
// and that status. Passwords and tokens that are shown once are rendered only into the answer
// to the POST that made them (pages are `no-store`).
extension DashboardRoutes {
    func registerAccountPages(on router: Router<CollectorRequestContext>) {
        router.get("account") { request, context in await self.page(request, context) { try await self.accountPage($0) } }
        router.post("account/password") { request, context in
            await self.action(request, context) { session, form in
                try await self.refusalShown(session) {
                    try await self.accounts.changePassword(session: session, current: form["current_password"] ?? "",
                                                           new: form["new_password"] ?? "", repeated: form["new_password_again"] ?? "",
                                                           client: ClientAddress.key(context.remoteAddress))
                    self.logger.info("password changed", metadata: ["account": "\(session.account.name)"])
                    return try await self.accountPage(session, message: "<p class=\"notice\" role=\"status\">Your password was changed; your other sessions are logged out.</p>")
                }
            }
        }
        router.post("account/tokens") { request, context in
            await self.action(request, context) { session, form in
                try await self.refusalShown(session) {
                    let (token, info) = try await self.accounts.createAPIToken(by: session, name: form["name"] ?? "")
                    self.logger.info("api token created", metadata: ["account": "\(session.account.name)", "name": "\(info.name)"])
                    let message: HTML = """
                    <div class="card created-token" role="status"><p>API token <strong>\(info.name)</strong> created. Copy it now: it is shown only this once.</p>
                    <pre class="token" id="new-token">\(token)</pre></div>
                    """
                    return try await self.accountPage(session, message: message)
                }
            }
        }
        router.post("account/tokens/revoke") { request, context in
            await self.action(request, context) { session, form in
                try await self.refusalShown(session) {
                    try await self.accounts.revokeAPIToken(by: session, tokenHash: form["token_hash"] ?? "")
                    self.logger.info("api token revoked", metadata: ["account": "\(session.account.name)"])
                    return Self.redirect("/account")
                }
            }
        }
        router.get("accounts") { request, context in await self.page(request, context) { try await self.accountsPage($0) } }
        router.post("accounts") { request, context in
            await self.action(request, context) { session, form in
                try await self.refusalShown(session, onAccountsPage: true) {
                    let (account, password) = try await self.accounts.addAccount(
                        by: session, name: form["name"] ?? "", password: form["password"], isAdmin: form["admin"] == "1")
                    self.logger.info("account created", metadata: ["account": "\(account.name)", "by": "\(session.account.name)", "admin": "\(account.isAdmin)"])
                    let message: HTML = """
                    <div class="card created-account" role="status"><p>Account <strong>\(account.name)</strong> created. Its password, shown only this once:</p>
                    <pre class="password" id="new-password">\(password)</pre></div>
                    """
                    return try await self.accountsPage(session, message: message)
                }
            }
        }
        router.post("accounts/:id/password") { request, context in
            await self.action(request, context) { session, form in
                try await self.refusalShown(session, onAccountsPage: true) {
                    guard let id = context.parameters.get("id").flatMap(Int64.init) else {
                        throw CollectorError.notFound("account.unknown", "no such account")
                    }
                    let (account, password) = try await self.accounts.resetPassword(by: session, accountID: id, password: form["password"])
                    // Who and by whom only: the password is never logged.
                    self.logger.info("password reset", metadata: ["account": "\(account.name)", "by": "\(session.account.name)"])
                    let message: HTML = """
                    <div class="card reset-password" role="status"><p>The password of <strong>\(account.name)</strong> was reset and its sessions were logged out. The new password, shown only this once:</p>
                    <pre class="password" id="reset-password">\(password)</pre></div>
                    """
                    return try await self.accountsPage(session, message: message)
                }
            }
        }
        router.post("accounts/:id/delete") { request, context in
            await self.action(request, context) { session, _ in
                try await self.refusalShown(session, onAccountsPage: true) {
                    guard let id = context.parameters.get("id").flatMap(Int64.init) else {
                        throw CollectorError.notFound("account.unknown", "no such account")
                    }
                    let removed = try await self.accounts.removeAccount(by: session, id: id)
                    self.logger.info("account removed", metadata: ["account": "\(removed.name)", "by": "\(session.account.name)"])
                    return Self.redirect("/accounts")
                }
            }
        }
    }

    /// Runs a form handler; a refusal with a 4xx status shows the account page (or, with
    /// `onAccountsPage`, the accounts page) again with its message and status. An admin-only
    /// refusal and anything else go to the error page.
    private func refusalShown(_ session: LoginSession, onAccountsPage: Bool = false, _ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let refusal as CollectorError where (400..<500).contains(refusal.status) && refusal.code != "account.admin_only" {
            let message: HTML = "<p class=\"error\" role=\"alert\">\(refusal.message) <code>\(refusal.code)</code></p>"
            let page = onAccountsPage ? try await accountsPage(session, message: message) : try await accountPage(session, message: message)
            var response = page.withStatus(.init(code: refusal.status))
            if let wait = refusal.retryAfter { response.headers[.retryAfter] = String(wait) }
            return response
        }
    }

    func accountPage(_ session: LoginSession, message: HTML? = nil) async throws -> Response {
        let account = session.account
        let tokens = try await accounts.apiTokens(visibleTo: session)
        let showOwner = account.isAdmin
        let rows: [HTML] = tokens.map { token in
            let owner: HTML = showOwner ? "<td>\(token.accountName ?? "(first start)")</td>" : .empty
            return """
            <tr><td>\(token.name)</td>\(owner)<td>\(Layout.time(token.createdAt))</td><td>\(token.lastUsedAt.map { Layout.time($0) } ?? "never")</td>\
            <td><form class="inline" method="post" action="/account/tokens/revoke">\(Layout.csrfField(session))\
            <input type="hidden" name="token_hash" value="\(token.tokenHash)"><button type="submit" class="secondary" data-revoke="\(token.name)">Revoke</button></form></td></tr>
            """
        }
        let ownerHeader: HTML = showOwner ? "<th>Owner</th>" : .empty
        let tokenTable: HTML = rows.isEmpty ? "<p class=\"muted\">No API tokens.</p>" : """
        <table class="tokens"><thead><tr><th>Name</th>\(ownerHeader)<th>Created</th><th>Last used</th><th></th></tr></thead><tbody>\(rows)</tbody></table>
        """
        let adminLink: HTML = account.isAdmin ? " <a href=\"/accounts\">Manage accounts</a>" : .empty
        let body: HTML = """
        <h1>Your account</h1><p>Logged in as <b>\(account.name)</b> (\(account.isAdmin ? "admin" : "member")).\(adminLink)</p>\(message ?? .empty)
        <h2>Change password</h2>
        <form class="stacked" method="post" action="/account/password">\(Layout.csrfField(session))
        <label>Current password <input name="current_password" type="password" autocomplete="current-password" required></label>
        <label>New password (at least \(AccountService.minimumPasswordLength) characters) <input name="new_password" type="password" autocomplete="new-password" minlength="\(AccountService.minimumPasswordLength)" required></label>
        <label>New password again <input name="new_password_again" type="password" autocomplete="new-password" minlength="\(AccountService.minimumPasswordLength)" required></label>
        <button type="submit" data-action="change-password">Change password</button></form>
        <p class="muted">Changing the password logs out your other sessions.</p>
        <h2>API tokens</h2>
        <p>Scripts call the JSON API (<code>/api/0/...</code>) with <code>Authorization: Bearer &lt;token&gt;</code>. A token is shown once, when it is created; the collector keeps only its SHA-256. \(account.isAdmin ? "As an admin you see and can revoke every token." : "")</p>
        <form method="post" action="/account/tokens">\(Layout.csrfField(session))
        <label>Name <input name="name" required maxlength="\(AccountService.maximumTokenNameLength)" placeholder="e.g. release script"></label> <button type="submit" data-action="create-token">Create token</button></form>
        \(tokenTable)
        """
        return Layout.page(title: "Your account", session: session, tab: .account, body: body)
    }

    func accountsPage(_ session: LoginSession, message: HTML? = nil) async throws -> Response {
        let rows: [HTML] = try await accounts.allAccounts(for: session).map { account in
            let action: HTML = account.id == session.account.id ? "<span class=\"muted\">you</span>" : """
            <form class="inline" method="post" action="/accounts/\(account.id)/password">\(Layout.csrfField(session))\
            <input name="password" type="password" autocomplete="new-password" placeholder="empty: generated" aria-label="New password for \(account.name)" data-reset-password="\(account.name)">\
            <button type="submit" class="secondary" data-reset="\(account.name)">Reset password</button></form> \
            <form class="inline" method="post" action="/accounts/\(account.id)/delete">\(Layout.csrfField(session))\
            <button type="submit" class="secondary" data-remove="\(account.name)">Remove</button></form>
            """
            return """
            <tr><td>\(account.name)</td><td>\(account.isAdmin ? "admin" : "member")</td><td>\(Layout.time(account.createdAt))</td><td>\(action)</td></tr>
            """
        }
        let body: HTML = """
        <h1>Accounts</h1>\(message ?? .empty)
        <table class="accounts"><thead><tr><th>Name</th><th>Role</th><th>Created</th><th></th></tr></thead><tbody>\(rows)</tbody></table>
        <p class="muted">Resetting a password logs out that account's sessions; its API tokens keep working. Removing an account ends its sessions and revokes its API tokens at once. The last admin cannot be removed.</p>
        <h2>Add an account</h2>
        <form class="stacked" method="post" action="/accounts">\(Layout.csrfField(session))
        <label>Name <input name="name" required maxlength="\(AccountService.maximumNameLength)" autocomplete="off"></label>
        <label>Password (empty: a generated one; at least \(AccountService.minimumPasswordLength) characters) <input name="password" type="password" autocomplete="new-password"></label>
        <label class="check"><input type="checkbox" name="admin" value="1"> Admin (can manage accounts and every API token)</label>
        <button type="submit" data-action="add-account">Add account</button></form>
        <p class="muted">The password is shown once after the account is created.</p>
        """
        return Layout.page(title: "Accounts", session: session, tab: .accounts, body: body)
    }
}
