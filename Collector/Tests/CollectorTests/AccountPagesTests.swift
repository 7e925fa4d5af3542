@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Logging
import Testing

/// Account management: passwords, accounts, API tokens, through `AccountService` on a store
/// (SQLite, or PostgreSQL when `COLLECTOR_TEST_POSTGRES_URL` is set) and through the pages.
@Suite("Collector accounts and API tokens")
struct AccountPagesTests {
    static let adminPassword = DashboardTests.adminPassword

    static func refusal(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as CollectorError {
            return error.code
        } catch {
            return "unexpected: \(error)"
        }
    }

    static func bootstrapped(_ store: SQLStore) async throws -> AccountService {
        _ = try await AccountService.bootstrap(store: store, configuredPassword: adminPassword, logger: Logger(label: "t"))
        return AccountService(store: store, limiter: LoginRateLimiter(freeFailures: 3, perAddress: 100, window: 900))
    }

    // MARK: The service on a store

    @Test func tokenHashesAreSHA256() {
        // The FIPS 180-2 test vector: API tokens are stored as this hash.
        #expect(APIAuth.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let token = APIAuth.newToken()
        #expect(token.hasPrefix("csc_") && token.count == 68)
    }

    @Test func changingThePasswordNeedsTheCurrentOneAndEndsTheOtherSessions() async throws {
        try await TestDatabase.withStore { store in
            let service = try await Self.bootstrapped(store)
            let (tokenA, sessionA) = try await service.login(name: "admin", password: Self.adminPassword)
            let (tokenB, _) = try await service.login(name: "admin", password: Self.adminPassword)
            let newPassword = "a much better passphrase"
            #expect(await Self.refusal { try await service.changePassword(session: sessionA, current: "wrong", new: newPassword, repeated: newPassword) }
                    == "account.password_wrong")
            #expect(await Self.refusal { try await service.changePassword(session: sessionA, current: Self.adminPassword, new: "short", repeated: "short") }
                    == "account.password_too_short")
            #expect(await Self.refusal { try await service.changePassword(session: sessionA, current: Self.adminPassword, new: newPassword, repeated: newPassword + "!") }
                    == "account.password_mismatch")
            let huge = String(repeating: "x", count: AccountService.maximumPasswordBytes + 1)
            #expect(await Self.refusal { try await service.changePassword(session: sessionA, current: Self.adminPassword, new: huge, repeated: huge) }
                    == "account.password_too_long")
            // Refusals changed nothing: both sessions live, the old password works.
            #expect(try await service.session(token: tokenB) != nil)

            try await service.changePassword(session: sessionA, current: Self.adminPassword, new: newPassword, repeated: newPassword)
            #expect(try await service.session(token: tokenA) != nil)
            #expect(try await service.session(token: tokenB) == nil)
            await #expect(throws: LoginFailure(code: "login.invalid", retryAfter: nil)) { try await service.login(name: "admin", password: Self.adminPassword) }
            #expect(try await service.login(name: "admin", password: newPassword).session.account.name == "admin")
        }
    }

    @Test func wrongCurrentPasswordsAreRateLimited() async throws {
        try await TestDatabase.withStore { store in
            let service = try await Self.bootstrapped(store)
            let (_, session) = try await service.login(name: "admin", password: Self.adminPassword)
            let newPassword = "a much better passphrase"
            for _ in 0..<3 {
                #expect(await Self.refusal { try await service.changePassword(session: session, current: "guess", new: newPassword, repeated: newPassword) }
                        == "account.password_wrong")
            }
            // Even the right current password is refused until the window passes.
            #expect(await Self.refusal { try await service.changePassword(session: session, current: Self.adminPassword, new: newPassword, repeated: newPassword) }
                    == "account.rate_limited")
        }
    }

    @Test func adminsAddAndRemoveAccountsWhoseSessionsAndTokensStopAtOnce() async throws {
        try await TestDatabase.withStore { store in
            let service = try await Self.bootstrapped(store)
            let (_, admin) = try await service.login(name: "admin", password: Self.adminPassword)

            let (bob, generated) = try await service.addAccount(by: admin, name: "bob", password: nil, isAdmin: false)
            #expect(!bob.isAdmin && generated.count == 36)
            let (carol, given) = try await service.addAccount(by: admin, name: "carol@example.com", password: "carol's own passphrase", isAdmin: true)
            #expect(carol.isAdmin && given == "carol's own passphrase")
            #expect(try await service.allAccounts(for: admin).map(\.name) == ["admin", "bob", "carol@example.com"])

            #expect(await Self.refusal { _ = try await service.addAccount(by: admin, name: "bob", password: nil, isAdmin: false) } == "account.name_taken")
            for name in ["", "has space", "<script>", String(repeating: "n", count: 65)] {
                #expect(await Self.refusal { _ = try await service.addAccount(by: admin, name: name, password: nil, isAdmin: false) } == "account.name_invalid", "\(name)")
            }
            #expect(await Self.refusal { _ = try await service.addAccount(by: admin, name: "dave", password: "short", isAdmin: false) } == "account.password_too_short")

            let (bobToken, bobSession) = try await service.login(name: "bob", password: generated)
            #expect(await Self.refusal { _ = try await service.addAccount(by: bobSession, name: "eve", password: nil, isAdmin: true) } == "account.admin_only")
            #expect(await Self.refusal { _ = try await service.removeAccount(by: bobSession, id: admin.account.id) } == "account.admin_only")
            #expect(await Self.refusal { _ = try await service.allAccounts(for: bobSession) } == "account.admin_only")
            let (bobAPIToken, _) = try await service.createAPIToken(by: bobSession, name: "bob's script")
            #expect(try await store.apiTokenExists(tokenHash: APIAuth.hash(bobAPIToken)))

            #expect(await Self.refusal { _ = try await service.removeAccount(by: admin, id: admin.account.id) } == "account.remove_self")
            #expect(await Self.refusal { _ = try await service.removeAccount(by: admin, id: 9999) } == "account.unknown")
            #expect(try await service.removeAccount(by: admin, id: bob.id).name == "bob")
            #expect(try await service.session(token: bobToken) == nil)
            #expect(try await !store.apiTokenExists(tokenHash: APIAuth.hash(bobAPIToken)))
            await #expect(throws: LoginFailure(code: "login.invalid", retryAfter: nil)) { try await service.login(name: "bob", password: generated) }
            #expect(try await service.allAccounts(for: admin).map(\.name) == ["admin", "carol@example.com"])

            // Another admin may remove the first one; the one left is the last admin.
            let (_, carolSession) = try await service.login(name: "carol@example.com", password: given)
            #expect(try await service.removeAccount(by: carolSession, id: admin.account.id).name == "admin")
            #expect(await Self.refusal { _ = try await store.deleteAccount(id: carol.id) } == "account.last_admin")
            #expect(try await store.accountCount() == 1)
        }
    }

    @Test func adminsResetAnotherAccountsPasswordEndingOnlyItsSessions() async throws {
        try await TestDatabase.withStore { store in
            let service = try await Self.bootstrapped(store)
            let (adminToken, admin) = try await service.login(name: "admin", password: Self.adminPassword)
            let (bob, bobPassword) = try await service.addAccount(by: admin, name: "bob", password: nil, isAdmin: false)
            let (carol, carolPassword) = try await service.addAccount(by: admin, name: "carol", password: nil, isAdmin: false)
            let (bobToken1, bobSession) = try await service.login(name: "bob", password: bobPassword)
            let (bobToken2, _) = try await service.login(name: "bob", password: bobPassword)
            let (carolToken, _) = try await service.login(name: "carol", password: carolPassword)
            let (bobAPIToken, _) = try await service.createAPIToken(by: bobSession, name: "bob's script")

            #expect(await Self.refusal { _ = try await service.resetPassword(by: bobSession, accountID: carol.id, password: nil) } == "account.admin_only")
            #expect(await Self.refusal { _ = try await service.resetPassword(by: admin, accountID: admin.account.id, password: nil) } == "account.reset_self")
            #expect(await Self.refusal { _ = try await service.resetPassword(by: admin, accountID: 9999, password: nil) } == "account.unknown")
            #expect(await Self.refusal { _ = try await service.resetPassword(by: admin, accountID: bob.id, password: "short") } == "account.password_too_short")
            // Refusals changed nothing.
            #expect(try await service.session(token: bobToken1) != nil)
            #expect(try await service.login(name: "bob", password: bobPassword).session.account.id == bob.id)

            let chosen = "bob's reset passphrase"
            let (reset, shown) = try await service.resetPassword(by: admin, accountID: bob.id, password: chosen)
            #expect(reset.id == bob.id && shown == chosen)
            // Stored with the KDF, never as given.
            let stored = try #require(try await store.account(id: bob.id)?.passwordHash)
            #expect(stored.hasPrefix("pbkdf2-sha256$") && !stored.contains(chosen) && PasswordHasher.verify(chosen, against: stored))
            // Every session of bob ended; his API token, the admin's and carol's sessions stay.
            #expect(try await service.session(token: bobToken1) == nil)
            #expect(try await service.session(token: bobToken2) == nil)
            #expect(try await service.session(token: adminToken) != nil)
            #expect(try await service.session(token: carolToken) != nil)
            #expect(try await store.apiTokenExists(tokenHash: APIAuth.hash(bobAPIToken)))
            await #expect(throws: LoginFailure(code: "login.invalid", retryAfter: nil)) { try await service.login(name: "bob", password: bobPassword) }
            #expect(try await service.login(name: "bob", password: chosen).session.account.id == bob.id)

            // Without a password: a generated one, which works.
            let (_, generated) = try await service.resetPassword(by: admin, accountID: carol.id, password: "")
            #expect(generated.count == 36 && generated != carolPassword)
            #expect(try await service.session(token: carolToken) == nil)
            #expect(try await service.login(name: "carol", password: generated).session.account.id == carol.id)
        }
    }

    @Test func apiTokensAreStoredHashedListedWithTheirLastUseAndRevoked() async throws {
        try await TestDatabase.withStore { store in
            let service = try await Self.bootstrapped(store)
            try await store.insertAPIToken(name: "initial", tokenHash: APIAuth.hash("initial-token"), created: Date())
            let (_, admin) = try await service.login(name: "admin", password: Self.adminPassword)
            let (member, memberPassword) = try await service.addAccount(by: admin, name: "member", password: nil, isAdmin: false)
            let (_, memberSession) = try await service.login(name: "member", password: memberPassword)

            #expect(await Self.refusal { _ = try await service.createAPIToken(by: admin, name: "   ") } == "token.name_invalid")
            let (adminToken, adminInfo) = try await service.createAPIToken(by: admin, name: "deploy <script>")
            let (memberToken, memberInfo) = try await service.createAPIToken(by: memberSession, name: "member's script")
            #expect(adminInfo.tokenHash == APIAuth.hash(adminToken) && adminInfo.accountName == "admin" && adminInfo.lastUsedAt == nil)
            #expect(memberInfo.accountID == member.id)
            // Only the hash is stored: no column holds the token.
            let stored = try await store.query("SELECT * FROM api_tokens")
            #expect(stored.count == 3)
            for row in stored {
                for column in ["token_hash", "name"] {
                    #expect(row.string(column) != adminToken && row.string(column) != memberToken)
                }
            }

            // An admin sees every token (the first-start one has no owner); a member their own.
            #expect(Set(try await service.apiTokens(visibleTo: admin).map(\.name)) == ["initial", "deploy <script>", "member's script"])
            #expect(try await service.apiTokens(visibleTo: admin).first { $0.name == "initial" }?.accountName == nil)
            #expect(try await service.apiTokens(visibleTo: memberSession).map(\.name) == ["member's script"])

            // Last use: recorded, then rewritten only when more than a minute older.
            let first = Date(timeIntervalSince1970: 1_800_000_000)
            try await store.recordAPITokenUse(tokenHash: memberInfo.tokenHash, now: first)
            try await store.recordAPITokenUse(tokenHash: memberInfo.tokenHash, now: first.addingTimeInterval(30))
            #expect(try await store.apiTokens(accountID: member.id).first?.lastUsedAt == first)
            try await store.recordAPITokenUse(tokenHash: memberInfo.tokenHash, now: first.addingTimeInterval(61))
            #expect(try await store.apiTokens(accountID: member.id).first?.lastUsedAt == first.addingTimeInterval(61))

            // A member cannot revoke another account's token; an admin can revoke any.
            #expect(await Self.refusal { try await service.revokeAPIToken(by: memberSession, tokenHash: adminInfo.tokenHash) } == "token.unknown")
            #expect(await Self.refusal { try await service.revokeAPIToken(by: memberSession, tokenHash: "not a hash") } == "token.unknown")
            #expect(try await store.apiTokenExists(tokenHash: adminInfo.tokenHash))
            try await service.revokeAPIToken(by: memberSession, tokenHash: memberInfo.tokenHash)
            #expect(try await !store.apiTokenExists(tokenHash: memberInfo.tokenHash))
            try await service.revokeAPIToken(by: admin, tokenHash: APIAuth.hash("initial-token"))
            #expect(try await service.apiTokens(visibleTo: admin).map(\.name) == ["deploy <script>"])
        }
    }

    @Test func theTokensLastUseColumnComesFromMigrationFour() async throws {
        try await TestDatabase.withStore { store in
            #expect(try await store.appliedMigrations().contains(4))
            try await store.insertAPIToken(name: "t", tokenHash: APIAuth.hash("t"), created: Date())
            #expect(try await store.query("SELECT last_used_at FROM api_tokens").count == 1)
        }
    }

    // MARK: Pages

    static func logIn(_ browser: Browser, name: String = "admin", password: String = adminPassword) async throws -> TestResponse {
        let page = try await browser.get("/login")
        let loginToken = try #require(browser.cookie("csc_login"))
        #expect(page.status == 200)
        return try await browser.post("/login", form: [("login_csrf", loginToken), ("name", name), ("password", password)])
    }

    static func match(_ pattern: String, in text: String) -> String? {
        guard let regex = try? NSRegularExpression(pattern: pattern),
              let found = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)), found.numberOfRanges > 1,
              let range = Range(found.range(at: 1), in: text)
        else { return nil }
        return String(text[range])
    }

    @Test func theAccountPageChangesThePasswordWithCSRFAndOriginChecks() async throws {
        try await DashboardTests.run { _, browser in
            let other = Browser(baseURL: browser.baseURL)
            #expect(try await Self.logIn(other).status == 303)
            #expect(try await browser.get("/account").status == 303)  // behind the login
            #expect(try await Self.logIn(browser).status == 303)
            let page = try await browser.get("/account")
            #expect(page.status == 200)
            #expect(page.text.contains("Change password") && page.text.contains("href=\"/accounts\""))
            let csrf = try #require(Browser.csrfToken(in: page))
            let newPassword = "a much better passphrase"
            let fields = [("current_password", Self.adminPassword), ("new_password", newPassword), ("new_password_again", newPassword)]

            #expect(try await browser.post("/account/password", form: fields).status == 403)  // no CSRF token
            let crossSite = try await browser.post("/account/password", form: fields + [("csrf_token", csrf)], headers: ["Origin": "http://evil.example"])
            #expect(crossSite.status == 403 && crossSite.text.contains("csrf.origin"))
            let wrong = try await browser.post("/account/password", form: [("current_password", "nope"), ("new_password", newPassword),
                                                                           ("new_password_again", newPassword), ("csrf_token", csrf)])
            #expect(wrong.status == 403 && wrong.text.contains("account.password_wrong") && wrong.text.contains("Change password"))

            let changed = try await browser.post("/account/password", form: fields + [("csrf_token", csrf)])
            #expect(changed.status == 200 && changed.text.contains("Your password was changed"))
            #expect(try await browser.get("/projects").status == 200)  // this session stays
            #expect(try await other.get("/projects").status == 303)  // the other one ended

            let fresh = Browser(baseURL: browser.baseURL)
            #expect(try await Self.logIn(fresh).status == 401)
            #expect(try await Self.logIn(fresh, password: newPassword).status == 303)
        }
    }

    @Test func tokensCreatedOnTheAccountPageWorkOnTheAPIUntilRevoked() async throws {
        try await DashboardTests.run { harness, browser in
            #expect(try await Self.logIn(browser).status == 303)
            let csrf = try #require(Browser.csrfToken(in: try await browser.get("/account")))
            #expect(try await browser.post("/account/tokens", form: [("name", "release script")]).status == 403)
            let created = try await browser.post("/account/tokens", form: [("name", "release script"), ("csrf_token", csrf)])
            #expect(created.status == 200)
            let token = try #require(Self.match("id=\"new-token\">(csc_[0-9a-f]{64})<", in: created.text))
            // Shown once: the next page load does not carry it.
            let listed = try await browser.get("/account")
            #expect(!listed.text.contains(token) && listed.text.contains("release script") && listed.text.contains("never"))

            let client = harness.client
            let projects = try await client.execute("/api/0/projects", headers: ["Authorization": "Bearer \(token)"])
            #expect(projects.status == 200 && projects.json?.arrayValue?.first?["name"]?.stringValue == "default")
            let used = try await browser.get("/account")
            let row = try #require(Self.match("(<tr><td>release script</td>.*?</tr>)", in: used.text))
            #expect(!row.contains("never"))

            let hash = APIAuth.hash(token)
            #expect(row.contains("value=\"\(hash)\""))
            #expect(try await browser.post("/account/tokens/revoke", form: [("token_hash", hash)]).status == 403)
            let revoked = try await browser.post("/account/tokens/revoke", form: [("token_hash", hash), ("csrf_token", csrf)])
            #expect(revoked.status == 303 && revoked.headers["location"] == "/account")
            let refused = try await client.execute("/api/0/projects", headers: ["Authorization": "Bearer \(token)"])
            #expect(refused.status == 401 && refused.json?["code"]?.stringValue == "auth.token_invalid")
            #expect(try await browser.post("/account/tokens/revoke", form: [("token_hash", hash), ("csrf_token", csrf)]).status == 404)
            // The harness's own token still works.
            #expect(try await harness.api("/api/0/projects").status == 200)
        }
    }

    @Test func theAccountsPageAddsAndRemovesAccountsForAdminsOnly() async throws {
        try await DashboardTests.run { harness, browser in
            #expect(try await Self.logIn(browser).status == 303)
            let page = try await browser.get("/accounts")
            #expect(page.status == 200 && page.text.contains("Add an account"))
            let csrf = try #require(Browser.csrfToken(in: page))
            #expect(try await browser.post("/accounts", form: [("name", "bob")]).status == 403)
            let crossSite = try await browser.post("/accounts", form: [("name", "bob"), ("csrf_token", csrf)], headers: ["Origin": "http://evil.example"])
            #expect(crossSite.status == 403)
            let added = try await browser.post("/accounts", form: [("name", "bob"), ("password", ""), ("csrf_token", csrf)])
            #expect(added.status == 200)
            let password = try #require(Self.match("id=\"new-password\">([0-9a-f]{36})<", in: added.text))
            #expect(try await browser.post("/accounts", form: [("name", "bob"), ("csrf_token", csrf)]).status == 409)
            #expect(try await browser.post("/accounts", form: [("name", "<b>x</b>"), ("csrf_token", csrf)]).text.contains("account.name_invalid"))

            let bob = Browser(baseURL: browser.baseURL)
            #expect(try await Self.logIn(bob, name: "bob", password: password).status == 303)
            let bobPage = try await bob.get("/account")
            #expect(bobPage.status == 200 && !bobPage.text.contains("href=\"/accounts\""))
            #expect(try await bob.get("/accounts").status == 403)
            let bobCSRF = try #require(Browser.csrfToken(in: bobPage))
            #expect(try await bob.post("/accounts", form: [("name", "eve"), ("admin", "1"), ("csrf_token", bobCSRF)]).status == 403)
            let bobToken = try #require(Self.match("id=\"new-token\">(csc_[0-9a-f]{64})<",
                                                   in: try await bob.post("/account/tokens", form: [("name", "bob's"), ("csrf_token", bobCSRF)]).text))
            #expect(try await harness.client.execute("/api/0/projects", headers: ["Authorization": "Bearer \(bobToken)"]).status == 200)

            let accounts = try await browser.get("/accounts").text
            let bobID = try #require(Self.match("action=\"/accounts/([0-9]+)/delete\"", in: accounts))
            #expect(try await browser.post("/accounts/1/delete", form: [("csrf_token", csrf)]).status == 409)  // oneself
            #expect(try await browser.post("/accounts/\(bobID)/delete", form: []).status == 403)  // no CSRF token
            let removed = try await browser.post("/accounts/\(bobID)/delete", form: [("csrf_token", csrf)])
            #expect(removed.status == 303 && removed.headers["location"] == "/accounts")
            // Bob's session and token stop working at once.
            #expect(try await bob.get("/projects").status == 303)
            #expect(try await harness.client.execute("/api/0/projects", headers: ["Authorization": "Bearer \(bobToken)"]).status == 401)
            #expect(try await Self.logIn(bob, name: "bob", password: password).status == 401)
        }
    }
    @Test func theAccountsPageResetsAnotherAccountsPasswordWithCSRF() async throws {
        try await DashboardTests.run { harness, browser in
            #expect(try await Self.logIn(browser).status == 303)
            let csrf = try #require(Browser.csrfToken(in: try await browser.get("/accounts")))
            let added = try await browser.post("/accounts", form: [("name", "bob"), ("password", ""), ("csrf_token", csrf)])
            let oldPassword = try #require(Self.match("id=\"new-password\">([0-9a-f]{36})<", in: added.text))
            let bob = Browser(baseURL: browser.baseURL)
            #expect(try await Self.logIn(bob, name: "bob", password: oldPassword).status == 303)
            let bobCSRF = try #require(Browser.csrfToken(in: try await bob.get("/account")))
            let bobToken = try #require(Self.match("id=\"new-token\">(csc_[0-9a-f]{64})<",
                                                   in: try await bob.post("/account/tokens", form: [("name", "bob's"), ("csrf_token", bobCSRF)]).text))

            let accounts = try await browser.get("/accounts").text
            #expect(accounts.contains("data-reset=\"bob\"") && !accounts.contains("/accounts/1/password"))  // no reset of oneself
            let bobID = try #require(Self.match("action=\"/accounts/([0-9]+)/password\"", in: accounts))
            let newPassword = "bob's new passphrase"
            #expect(try await browser.post("/accounts/\(bobID)/password", form: [("password", newPassword)]).status == 403)  // no CSRF token
            let crossSite = try await browser.post("/accounts/\(bobID)/password", form: [("password", newPassword), ("csrf_token", csrf)],
                                                   headers: ["Origin": "http://evil.example"])
            #expect(crossSite.status == 403)
            #expect(try await bob.post("/accounts/1/password", form: [("password", newPassword), ("csrf_token", bobCSRF)]).status == 403)  // members cannot
            let short = try await browser.post("/accounts/\(bobID)/password", form: [("password", "short"), ("csrf_token", csrf)])
            #expect(short.status == 400 && short.text.contains("account.password_too_short"))
            #expect(try await browser.post("/accounts/1/password", form: [("password", newPassword), ("csrf_token", csrf)]).status == 409)
            #expect(try await bob.get("/projects").status == 200)  // the refusals changed nothing

            let reset = try await browser.post("/accounts/\(bobID)/password", form: [("password", newPassword), ("csrf_token", csrf)])
            #expect(reset.status == 200 && Self.match("id=\"reset-password\">([^<]*)<", in: reset.text) == "bob&#39;s new passphrase")
            // Shown once only.
            #expect(!(try await browser.get("/accounts").text.contains("reset-password\"")))
            #expect(try await bob.get("/projects").status == 303)  // bob's session ended
            #expect(try await browser.get("/projects").status == 200)  // the admin's did not
            #expect(try await harness.client.execute("/api/0/projects", headers: ["Authorization": "Bearer \(bobToken)"]).status == 200)
            #expect(try await Self.logIn(bob, name: "bob", password: oldPassword).status == 401)
            #expect(try await Self.logIn(bob, name: "bob", password: newPassword).status == 303)
        }
    }
}
