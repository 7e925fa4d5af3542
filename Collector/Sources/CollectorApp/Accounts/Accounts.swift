import Foundation
import Logging
import Synchronization

/// Why a login was refused. `code` is stable: `login.invalid` (wrong name or password) or
/// `login.rate_limited` (too many failures; `retryAfter` seconds to wait).
public struct LoginFailure: Error, Sendable, Hashable {
    public let code: String
    public let retryAfter: Int?

    public init(code: String, retryAfter: Int?) {
        self.code = code
        self.retryAfter = retryAfter
    }
}

/// Dashboard accounts: the first admin, password logins, server-side sessions with expiry,
/// per-session CSRF tokens and login rate limiting.
///
/// A session token is 32 random bytes (hex) kept only in the browser's `csc_session` cookie; the
/// store holds its SHA-256. Sessions last `sessionLifetime` from login (default 12 hours) and
/// are not extended.
public final class AccountService: Sendable {
    public static let sessionCookieName = "csc_session"
    /// The pre-login cookie whose value the login form repeats (double-submit CSRF token).
    public static let loginCookieName = "csc_login"
    public static let adminName = "admin"

    let store: any AccountStore
    let sessionLifetime: TimeInterval
    /// Adds `Secure` to cookies (when the collector's public URL is https).
    let secureCookies: Bool
    let now: @Sendable () -> Date
    let limiter: LoginRateLimiter
    /// A stored hash to verify against when the account does not exist, so that an unknown name
    /// takes as long as a wrong password: the default iteration count with a random salt and a
    /// random key, which no password derives (built without running the KDF at start-up).
    private let decoyHash = PasswordHasher.decoy()

    public init(store: any AccountStore, sessionLifetime: TimeInterval = 12 * 3600, secureCookies: Bool = false,
                limiter: LoginRateLimiter = LoginRateLimiter(), now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.sessionLifetime = sessionLifetime
        self.secureCookies = secureCookies
        self.limiter = limiter
        self.now = now
    }

    /// On a database without accounts, creates the `admin` account with `configuredPassword`, or
    /// with a random password that is returned (to be shown once). Returns nil otherwise.
    public static func bootstrap(store: any AccountStore, configuredPassword: String?, logger: Logger) async throws -> String? {
        guard try await store.accountCount() == 0 else { return nil }
        let password = configuredPassword.flatMap { $0.isEmpty ? nil : $0 } ?? newSecret(bytes: 18)
        _ = try await store.createAccount(name: adminName, passwordHash: await PasswordHasher.hashOnKDFThreads(password), isAdmin: true, created: Date())
        logger.info("admin account created", metadata: ["account": "\(adminName)"])
        return configuredPassword == nil || configuredPassword == "" ? password : nil
    }

    /// Random bytes as lowercase hex.
    static func newSecret(bytes: Int = 32) -> String {
        CryptoSupport.randomBytes(bytes).map { String(format: "%02x", $0) }.joined()
    }

    static func tokenHash(_ token: String) -> String { CryptoSupport.sha256Hex(Data(token.utf8)) }

    /// Checks the password and opens a session. Returns the session token (for the cookie) and the session.
    /// - Throws: `LoginFailure` `login.rate_limited` before checking anything when the name or the
    ///   collector as a whole has failed too often recently; `login.invalid` otherwise.
    public func login(name: String, password: String) async throws -> (token: String, session: LoginSession) {
        let time = now()
        if let wait = limiter.retryAfter(name: name, now: time) {
            throw LoginFailure(code: "login.rate_limited", retryAfter: wait)
        }
        let account = try await store.account(name: name)
        let matches = await PasswordHasher.verifyOnKDFThreads(password, against: account?.passwordHash ?? decoyHash)
        guard let account, matches else {
            limiter.recordFailure(name: name, now: time)
            throw LoginFailure(code: "login.invalid", retryAfter: nil)
        }
        limiter.recordSuccess(name: name)
        let token = Self.newSecret()
        let csrf = Self.newSecret()
        let expires = time.addingTimeInterval(sessionLifetime)
        try await store.insertLoginSession(tokenHash: Self.tokenHash(token), accountID: account.id, csrfToken: csrf, created: time, expires: expires)
        _ = try? await store.deleteExpiredLoginSessions(now: time)
        return (token, LoginSession(tokenHash: Self.tokenHash(token), account: account, csrfToken: csrf, createdAt: time, expiresAt: expires))
    }

    /// The live session for a cookie value, or nil (no cookie, unknown or expired session).
    public func session(token: String?) async throws -> LoginSession? {
        guard let token, token.count == 64, token.allSatisfy(\.isHexDigit) else { return nil }
        return try await store.loginSession(tokenHash: Self.tokenHash(token), now: now())
    }

    public func logout(token: String?) async throws {
        guard let token else { return }
        try await store.deleteLoginSession(tokenHash: Self.tokenHash(token))
    }

    /// Whether a submitted form's CSRF token is this session's (constant-time comparison).
    public static func csrfMatches(_ submitted: String?, session: LoginSession) -> Bool {
        guard let submitted, !submitted.isEmpty else { return false }
        return PasswordHasher.constantTimeEqual(submitted, session.csrfToken)
    }

    /// `Set-Cookie` value for a session token.
    public func sessionCookie(_ token: String) -> String {
        cookie(Self.sessionCookieName, token, maxAge: Int(sessionLifetime))
    }

    /// `Set-Cookie` value that removes the session cookie.
    public func clearedSessionCookie() -> String { cookie(Self.sessionCookieName, "", maxAge: 0) }

    func loginCookie(_ value: String) -> String { cookie(Self.loginCookieName, value, maxAge: 3600) }

    private func cookie(_ name: String, _ value: String, maxAge: Int) -> String {
        "\(name)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Lax" + (secureCookies ? "; Secure" : "")
    }
}

/// Login rate limiting: at most `perName` failed logins per account name within `window`
/// seconds, and at most `global` failed logins across all names within `window` (a flood that
/// rotates names). Both reset as failures age out; a successful login clears its name's failures.
public final class LoginRateLimiter: Sendable {
    let perName: Int
    let global: Int
    let window: TimeInterval
    private let state = Mutex<(byName: [String: [Date]], all: [Date])>(([:], []))

    /// Defaults: 5 failures per name and 100 overall per 15 minutes.
    public init(perName: Int = 5, global: Int = 100, window: TimeInterval = 900) {
        self.perName = perName
        self.global = global
        self.window = window
    }

    /// Seconds until another attempt for `name` is allowed, or nil when it is allowed now.
    func retryAfter(name: String, now: Date) -> Int? {
        let key = name.lowercased()
        return state.withLock { state in
            let cutoff = now.addingTimeInterval(-window)
            state.all.removeAll { $0 <= cutoff }
            state.byName[key]?.removeAll { $0 <= cutoff }
            if state.byName[key]?.isEmpty == true { state.byName[key] = nil }
            var oldest: Date?
            if let failures = state.byName[key], failures.count >= perName { oldest = failures.first }
            if state.all.count >= global, let first = state.all.first { oldest = min(oldest ?? first, first) }
            guard let oldest else { return nil }
            return max(1, Int((oldest.addingTimeInterval(window).timeIntervalSince(now)).rounded(.up)))
        }
    }

    func recordFailure(name: String, now: Date) {
        state.withLock { state in
            state.byName[name.lowercased(), default: []].append(now)
            state.all.append(now)
            if state.byName.count > 10_000 { state.byName.removeAll() }  // bounded memory under a name flood; `all` still limits
        }
    }

    func recordSuccess(name: String) {
        _ = state.withLock { $0.byName.removeValue(forKey: name.lowercased()) }
    }
}
