import Foundation

/// Account management for a logged-in session: changing one's own password, adding and removing
/// accounts and resetting another account's password (admins only), and API tokens for scripts.
///
/// Every refusal is a `CollectorError` with a stable `code`:
/// - `account.password_wrong` (403): the current password does not match.
/// - `account.rate_limited` (429): too many wrong current passwords for this account recently
///   from this client (the login throttle's counts); `retryAfter` set.
/// - `account.password_too_short` / `account.password_too_long` (400): a new password has fewer
///   than `minimumPasswordLength` characters or more than `maximumPasswordBytes` UTF-8 bytes.
/// - `account.password_mismatch` (400): the new password and its repetition differ.
/// - `account.admin_only` (403): the session's account is not an admin.
/// - `account.name_invalid` (400), `account.name_taken` (409): a new account's name.
/// - `account.remove_self` (409), `account.last_admin` (409), `account.unknown` (404): removals.
/// - `account.reset_self` (409), `account.unknown` (404): an admin's password reset of another
///   account (one's own password is changed with the current one, `changePassword`).
/// - `token.name_invalid` (400), `token.unknown` (404): API tokens.
extension AccountService {
    /// New passwords need at least this many characters (12).
    public static let minimumPasswordLength = 12
    /// New passwords may have at most this many UTF-8 bytes (1024).
    public static let maximumPasswordBytes = 1024
    /// Account names: 1 to 64 of letters, digits and `.`, `_`, `-`, `@`, `+`.
    public static let maximumNameLength = 64
    /// API token names: 1 to 100 characters after trimming spaces.
    public static let maximumTokenNameLength = 100

    static func validateNewPassword(_ password: String, repeated: String? = nil) throws {
        guard password.count >= minimumPasswordLength else {
            throw CollectorError.badRequest("account.password_too_short", "the new password needs at least \(minimumPasswordLength) characters")
        }
        guard password.utf8.count <= maximumPasswordBytes else {
            throw CollectorError.badRequest("account.password_too_long", "the new password may have at most \(maximumPasswordBytes) bytes")
        }
        if let repeated, repeated != password {
            throw CollectorError.badRequest("account.password_mismatch", "the new password and its repetition differ")
        }
    }

    static func validName(_ raw: String) throws -> String {
        let name = raw.trimmingCharacters(in: .whitespaces)
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@+")
        guard (1...maximumNameLength).contains(name.count), name.allSatisfy({ allowed.contains($0) }) else {
            throw CollectorError.badRequest("account.name_invalid",
                                            "a name has 1 to \(maximumNameLength) letters, digits or . _ - @ +")
        }
        return name
    }

    static func requireAdmin(_ session: LoginSession) throws {
        guard session.account.isAdmin else { throw CollectorError.forbidden("account.admin_only", "only an admin can do this") }
    }

    /// Changes the session's own password after checking the current one, and logs out the
    /// account's other sessions (this one stays).
    /// Wrong current passwords count against the login throttle for `client` and the account.
    public func changePassword(session: LoginSession, current: String, new: String, repeated: String, client: String = "local") async throws {
        let name = session.account.name
        let time = now()
        if let wait = limiter.acquire(client: client, name: name, now: time) {
            throw CollectorError(code: "account.rate_limited", message: "too many wrong passwords; try again in \(wait) seconds", status: 429,
                                 retryAfter: wait)
        }
        // The stored hash as of now, not as of the session lookup.
        let stored = try await store.account(id: session.account.id)?.passwordHash ?? session.account.passwordHash
        guard await PasswordHasher.verifyOnKDFThreads(current, against: stored) else {
            throw CollectorError.forbidden("account.password_wrong", "the current password is wrong")
        }
        limiter.recordSuccess(client: client, name: name, attempt: time)
        try Self.validateNewPassword(new, repeated: repeated)
        try await store.updatePassword(accountID: session.account.id, passwordHash: await PasswordHasher.hashOnKDFThreads(new), keepingSession: session.tokenHash)
    }

    /// Adds an account (admins only) with `password`, or with a generated one when `password` is
    /// nil or empty. Returns the account and the password to show once.
    public func addAccount(by session: LoginSession, name rawName: String, password: String?, isAdmin: Bool) async throws -> (account: Account, password: String) {
        try Self.requireAdmin(session)
        let name = try Self.validName(rawName)
        let chosen = password.flatMap { $0.isEmpty ? nil : $0 } ?? Self.newSecret(bytes: 18)
        try Self.validateNewPassword(chosen)
        guard try await store.account(name: name) == nil else {
            throw CollectorError.conflict("account.name_taken", "an account with this name exists")
        }
        let account = try await store.createAccount(name: name, passwordHash: await PasswordHasher.hashOnKDFThreads(chosen), isAdmin: isAdmin, created: now())
        return (account, chosen)
    }

    /// Removes another account (admins only) with its sessions and API tokens, which stop working
    /// at once. An admin cannot remove their own account, and the last admin cannot be removed.
    public func removeAccount(by session: LoginSession, id: Int64) async throws -> Account {
        try Self.requireAdmin(session)
        guard id != session.account.id else {
            throw CollectorError.conflict("account.remove_self", "you cannot remove your own account")
        }
        guard let account = try await store.account(id: id), try await store.deleteAccount(id: id) else {
            throw CollectorError.notFound("account.unknown", "no such account")
        }
        return account
    }

    /// Sets another account's password (admins only) to `password`, or to a generated one when
    /// `password` is nil or empty, hashed like every password (`PasswordHasher`), and logs out
    /// every session of that account; its API tokens and everything else stay. Returns the
    /// account and the password to show once (the collector keeps only its hash).
    public func resetPassword(by session: LoginSession, accountID: Int64, password: String?) async throws -> (account: Account, password: String) {
        try Self.requireAdmin(session)
        guard accountID != session.account.id else {
            throw CollectorError.conflict("account.reset_self", "change your own password on your account page, with the current one")
        }
        guard let account = try await store.account(id: accountID) else {
            throw CollectorError.notFound("account.unknown", "no such account")
        }
        let chosen = password.flatMap { $0.isEmpty ? nil : $0 } ?? Self.newSecret(bytes: 18)
        try Self.validateNewPassword(chosen)
        try await store.updatePassword(accountID: account.id, passwordHash: PasswordHasher.hash(chosen), keepingSession: nil)
        return (account, chosen)
    }

    /// Every account (admins only).
    public func allAccounts(for session: LoginSession) async throws -> [Account] {
        try Self.requireAdmin(session)
        return try await store.accounts()
    }

    /// Creates an API token owned by the session's account. Returns the token (to show once:
    /// only its SHA-256 is stored) and its listing.
    public func createAPIToken(by session: LoginSession, name rawName: String) async throws -> (token: String, info: APITokenInfo) {
        let name = rawName.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...Self.maximumTokenNameLength).contains(name.count), !name.contains(where: { $0.isNewline }) else {
            throw CollectorError.badRequest("token.name_invalid", "a token name has 1 to \(Self.maximumTokenNameLength) characters")
        }
        let token = APIAuth.newToken()
        let info = try await store.createAPIToken(name: name, tokenHash: APIAuth.hash(token), accountID: session.account.id, created: now())
        return (token, info)
    }

    /// The tokens the session may see and revoke: an admin's are all tokens, anyone else's their own.
    public func apiTokens(visibleTo session: LoginSession) async throws -> [APITokenInfo] {
        try await store.apiTokens(accountID: session.account.isAdmin ? nil : session.account.id)
    }

    /// Revokes a token (admins: any; others: their own). It stops working at once.
    public func revokeAPIToken(by session: LoginSession, tokenHash: String) async throws {
        guard tokenHash.count == 64, tokenHash.allSatisfy(\.isHexDigit),
              try await store.deleteAPIToken(tokenHash: tokenHash.lowercased(), accountID: session.account.isAdmin ? nil : session.account.id)
        else { throw CollectorError.notFound("token.unknown", "no such API token") }
    }
}
