import Foundation
import Logging
import NIOCore
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
    /// `client` is the client's address as `ClientAddress.key` gives it (the login throttle's key
    /// with the name; in-process callers without a connection pass their own label).
    /// - Throws: `LoginFailure` `login.rate_limited` before checking anything when this client has
    ///   failed too often recently for this name, or for any names (`LoginRateLimiter`);
    ///   `login.invalid` otherwise.
    public func login(name: String, password: String, client: String = "local") async throws -> (token: String, session: LoginSession) {
        let time = now()
        // Counted as a failure from here until the password matched.
        if let wait = limiter.acquire(client: client, name: name, now: time) {
            throw LoginFailure(code: "login.rate_limited", retryAfter: wait)
        }
        let account = try await store.account(name: name)
        let matches = await PasswordHasher.verifyOnKDFThreads(password, against: account?.passwordHash ?? decoyHash)
        guard let account, matches else {
            throw LoginFailure(code: "login.invalid", retryAfter: nil)
        }
        limiter.recordSuccess(client: client, name: name, attempt: time)
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

/// Login throttling by client address and account name together, so that an attacker slows
/// down without locking out the real user:
/// - per (address, name) pair: `freeFailures` failures in a row are answered at once; from the
///   `freeFailures`-th on, each failure makes the pair wait `baseDelay` doubled per further
///   failure, at most `maxDelay` (30 s, 1 min, 2 min, ... 15 min).
///   A pair is forgotten `pairMemory` after its last failure; a successful login resets it.
/// - per address, across all names: at most `perAddress` failures within `window`; then that
///   address waits until the oldest ages out (a flood that rotates names).
/// A refused attempt is not checked and does not count. Unknown names count like real ones (so
/// the answers do not tell which names exist), and a name's failures never block it from another
/// address. Memory is bounded: at most `maxTrackedKeys` pairs and as many addresses; past that,
/// the entries that failed longest ago are forgotten first.
///
/// The address is the connection's peer (`ClientAddress.key`: IPv4, or an IPv6 address's /64
/// prefix); `X-Forwarded-For` is not trusted.
public final class LoginRateLimiter: Sendable {
    let freeFailures: Int
    let perAddress: Int
    let window: TimeInterval
    let baseDelay: TimeInterval
    let maxDelay: TimeInterval
    let pairMemory: TimeInterval
    let maxTrackedKeys: Int

    private struct PairKey: Hashable { let client: String; let name: String }
    private struct Pair { var failures: Int; var last: Date; var blockedUntil: Date }
    private struct State {
        var pairs: [PairKey: Pair] = [:]
        /// Each address's failure times within `window`, oldest first (at most `perAddress`).
        var addresses: [String: [Date]] = [:]
    }
    private let state = Mutex(State())

    /// Defaults: 5 failures per address and name, then 30 s doubling to 15 min; 30 failures
    /// per address per 15 minutes; pairs remembered an hour; 10,000 pairs and addresses at most.
    public init(freeFailures: Int = 5, perAddress: Int = 30, window: TimeInterval = 900, baseDelay: TimeInterval = 30,
                maxDelay: TimeInterval = 900, pairMemory: TimeInterval = 3600, maxTrackedKeys: Int = 10_000) {
        self.freeFailures = max(freeFailures, 1)
        self.perAddress = max(perAddress, 1)
        self.window = window
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.pairMemory = max(pairMemory, maxDelay)
        self.maxTrackedKeys = max(maxTrackedKeys, 1)
    }

    private static func seconds(until date: Date, from now: Date) -> Int {
        max(1, Int(date.timeIntervalSince(now).rounded(.up)))
    }

    /// Seconds until `client` may try `name` again, or nil when it may now.
    func retryAfter(client: String, name: String, now: Date) -> Int? {
        state.withLock { Self.wait(&$0, key: PairKey(client: client, name: name.lowercased()), now: now, limits: self) }
    }

    /// Takes an attempt for `client` and `name`: the seconds to wait when it must wait, else nil,
    /// and the attempt is counted as a failure at once (in one step with the check, so attempts
    /// made in parallel cannot all pass before the first failure is recorded). A login that
    /// then succeeds calls `recordSuccess` with the same `now`, which takes the count back.
    func acquire(client: String, name: String, now: Date) -> Int? {
        let key = PairKey(client: client, name: name.lowercased())
        return state.withLock { state in
            if let wait = Self.wait(&state, key: key, now: now, limits: self) { return wait }
            Self.fail(&state, key: key, now: now, limits: self)
            return nil
        }
    }

    func recordFailure(client: String, name: String, now: Date) {
        state.withLock { Self.fail(&$0, key: PairKey(client: client, name: name.lowercased()), now: now, limits: self) }
    }

    /// A successful login: `client`'s failures for `name` are forgotten, and the attempt `acquire`
    /// counted at `attempt` is taken back from the address (its earlier failures stay).
    func recordSuccess(client: String, name: String, attempt: Date? = nil) {
        state.withLock { state in
            state.pairs[PairKey(client: client, name: name.lowercased())] = nil
            if let attempt, var failures = state.addresses[client], let index = failures.lastIndex(of: attempt) {
                failures.remove(at: index)
                state.addresses[client] = failures.isEmpty ? nil : failures
            }
        }
    }

    private static func wait(_ state: inout State, key: PairKey, now: Date, limits: LoginRateLimiter) -> Int? {
        var until: Date?
        if let pair = state.pairs[key] {
            if now.timeIntervalSince(pair.last) >= limits.pairMemory {
                state.pairs[key] = nil
            } else if pair.blockedUntil > now {
                until = pair.blockedUntil
            }
        }
        if var failures = state.addresses[key.client] {
            let cutoff = now.addingTimeInterval(-limits.window)
            failures.removeAll { $0 <= cutoff }
            state.addresses[key.client] = failures.isEmpty ? nil : failures
            if failures.count >= limits.perAddress, let oldest = failures.first {
                let free = oldest.addingTimeInterval(limits.window)
                until = max(until ?? free, free)
            }
        }
        return until.map { seconds(until: $0, from: now) }
    }

    private static func fail(_ state: inout State, key: PairKey, now: Date, limits: LoginRateLimiter) {
        var pair = state.pairs[key] ?? Pair(failures: 0, last: now, blockedUntil: now)
        if now.timeIntervalSince(pair.last) >= limits.pairMemory { pair = Pair(failures: 0, last: now, blockedUntil: now) }
        pair.failures += 1
        pair.last = now
        if pair.failures >= limits.freeFailures {
            let exponent = min(pair.failures - limits.freeFailures, 40)
            pair.blockedUntil = now.addingTimeInterval(min(limits.baseDelay * pow(2, Double(exponent)), limits.maxDelay))
        }
        state.pairs[key] = pair
        var failures = state.addresses[key.client] ?? []
        failures.append(now)
        if failures.count > limits.perAddress { failures.removeFirst(failures.count - limits.perAddress) }
        state.addresses[key.client] = failures
        bound(&state.pairs, to: limits.maxTrackedKeys) { $0.last }
        bound(&state.addresses, to: limits.maxTrackedKeys) { $0.last ?? .distantPast }
    }

    /// Pairs and addresses tracked now (tests: the state stays bounded).
    var trackedKeys: (pairs: Int, addresses: Int) { state.withLock { ($0.pairs.count, $0.addresses.count) } }

    /// Past `limit` entries, drops the oldest (by `time`) down to 90% of it, so a flood of new
    /// keys sorts once per `limit / 10` insertions.
    private static func bound<Key, Value>(_ table: inout [Key: Value], to limit: Int, time: (Value) -> Date) {
        guard table.count > limit else { return }
        let keep = max(limit - limit / 10, 1)
        let oldest = table.sorted { time($0.value) < time($1.value) }.prefix(table.count - keep)
        for (key, _) in oldest { table[key] = nil }
    }
}

/// The client address the login throttle keys on: the connection's peer address as text; an
/// IPv6 address by its /64 prefix (one host commonly has a whole /64), an IPv4-mapped one as IPv4.
/// Proxy headers (`X-Forwarded-For`) are not trusted: behind a reverse proxy every client has the
/// proxy's address.
enum ClientAddress {
    static func key(_ address: SocketAddress?) -> String {
        guard let address else { return "unknown" }
        switch address {
        case .v4(let v4):
            return address.ipAddress ?? "v4:\(v4.address.sin_addr.s_addr)"
        case .v6(let v6):
            var raw = v6.address.sin6_addr
            let bytes = withUnsafeBytes(of: &raw) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return bytes[12..<16].map(String.init).joined(separator: ".")
            }
            return stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                .joined(separator: ":") + "::/64"
        case .unixDomainSocket:
            return "unix"
        }
    }
}
