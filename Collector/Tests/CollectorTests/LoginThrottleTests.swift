@testable import CollectorApp
import Foundation
import Logging
import NIOCore
import Synchronization
import Testing

/// Failed logins are throttled by client address and account name together, so
/// an attacker slows down without locking the real user out (`LoginRateLimiter`).
@Suite("Login throttle by address and account")
struct LoginThrottleTests {
    static let password = "the right password"
    static let attacker = "203.0.113.5"
    static let realUser = "198.51.100.7"

    /// The code of a refused login (nil: it succeeded) and its `retryAfter`.
    static func attempt(_ service: AccountService, _ name: String, _ password: String, from client: String) async throws -> (code: String?, retryAfter: Int?) {
        do {
            _ = try await service.login(name: name, password: password, client: client)
            return (nil, nil)
        } catch let failure as LoginFailure {
            return (failure.code, failure.retryAfter)
        }
    }

    final class Clock: Sendable {
        private let date = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        var now: Date { date.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { date.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    static func withService(_ body: (AccountService, Clock, SQLStore) async throws -> Void) async throws {
        try await TestDatabase.withStore { store in
            _ = try await AccountService.bootstrap(store: store, configuredPassword: password, logger: Logger(label: "t"))
            let clock = Clock()
            let service = AccountService(store: store, now: { clock.now })
            try await body(service, clock, store)
        }
    }

    @Test func anAttackerFailingForAdminIsThrottledWhileTheRealUserLogsInFromAnotherAddress() async throws {
        try await Self.withService { service, clock, _ in
            var codes: [String: Int] = [:]
            for _ in 0..<100 {
                let result = try await Self.attempt(service, "admin", "guess", from: Self.attacker)
                codes[result.code ?? "ok", default: 0] += 1
            }
            // 5 guesses checked, the other 95 refused before the password is looked at.
            #expect(codes == ["login.invalid": 5, "login.rate_limited": 95])
            // The attacker's address cannot use even the right password now ...
            let throttled = try await Self.attempt(service, "admin", Self.password, from: Self.attacker)
            #expect(throttled.code == "login.rate_limited" && throttled.retryAfter == 30)
            // ... while the real admin logs in at once from elsewhere.
            #expect(try await Self.attempt(service, "admin", Self.password, from: Self.realUser).code == nil)

            // The delay doubles with each further failure of the pair.
            clock.advance(31)
            #expect(try await Self.attempt(service, "admin", "guess", from: Self.attacker).code == "login.invalid")
            #expect(try await Self.attempt(service, "admin", "guess", from: Self.attacker).retryAfter == 60)
            clock.advance(61)
            #expect(try await Self.attempt(service, "admin", "guess", from: Self.attacker).code == "login.invalid")
            #expect(try await Self.attempt(service, "admin", "guess", from: Self.attacker).retryAfter == 120)

            // A successful login resets the pair: 5 quick tries again.
            clock.advance(121)
            #expect(try await Self.attempt(service, "admin", Self.password, from: Self.attacker).code == nil)
            for _ in 0..<5 { #expect(try await Self.attempt(service, "admin", "typo", from: Self.attacker).code == "login.invalid") }
            #expect(try await Self.attempt(service, "admin", "typo", from: Self.attacker).code == "login.rate_limited")
        }
    }

    @Test func randomNamesFromOneAddressLockNoAccountForOtherAddresses() async throws {
        try await Self.withService { service, clock, store in
            _ = try await store.createAccount(name: "bob", passwordHash: await PasswordHasher.hashOnKDFThreads("bob's password"), isAdmin: false, created: Date())
            var codes: [String: Int] = [:]
            var longestWait = 0
            for index in 0..<100 {
                let result = try await Self.attempt(service, "name-\(index)-\(UUID().uuidString.prefix(8))", "guess", from: Self.attacker)
                codes[result.code ?? "ok", default: 0] += 1
                longestWait = max(longestWait, result.retryAfter ?? 0)
            }
            // 30 failures per address per 15 minutes, whatever the names.
            #expect(codes == ["login.invalid": 30, "login.rate_limited": 70])
            #expect(longestWait == 900)
            // That address is refused for every name, real ones included ...
            #expect(try await Self.attempt(service, "admin", Self.password, from: Self.attacker).code == "login.rate_limited")
            // ... and no account is locked for anyone else.
            #expect(try await Self.attempt(service, "admin", Self.password, from: Self.realUser).code == nil)
            #expect(try await Self.attempt(service, "bob", "bob's password", from: "192.0.2.44").code == nil)
            #expect(try await Self.attempt(service, "name-0", "guess", from: Self.realUser).code == "login.invalid")
            // The address's failures age out after the window.
            clock.advance(901)
            #expect(try await Self.attempt(service, "admin", Self.password, from: Self.attacker).code == nil)
        }
    }

    /// Attempts made in parallel cannot all be checked before the first failure is recorded.
    @Test func parallelGuessesGetNoMoreThanTheFreeFailures() async throws {
        try await Self.withService { service, _, _ in
            let codes = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<20 { group.addTask { try await Self.attempt(service, "admin", "guess", from: Self.attacker).code } }
                var codes: [String: Int] = [:]
                for try await code in group { codes[code ?? "ok", default: 0] += 1 }
                return codes
            }
            #expect(codes == ["login.invalid": 5, "login.rate_limited": 15])
            #expect(try await Self.attempt(service, "admin", Self.password, from: Self.realUser).code == nil)
        }
    }

    @Test func theThrottleKeepsABoundedNumberOfKeys() {
        let limiter = LoginRateLimiter(maxTrackedKeys: 100)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for index in 0..<5_000 {
            limiter.recordFailure(client: "10.0.\(index / 256).\(index % 256)", name: "user-\(index)", now: start.addingTimeInterval(Double(index) / 1000))
        }
        let tracked = limiter.trackedKeys
        #expect(tracked.pairs <= 100 && tracked.addresses <= 100)
        // The newest stay: the last address is still counted.
        limiter.recordFailure(client: "10.0.19.135", name: "user-4999", now: start.addingTimeInterval(5))
        for _ in 0..<3 { limiter.recordFailure(client: "10.0.19.135", name: "user-4999", now: start.addingTimeInterval(5)) }
        #expect(limiter.retryAfter(client: "10.0.19.135", name: "user-4999", now: start.addingTimeInterval(5)) != nil)
    }

    @Test func clientAddressesAreKeyedByIPv4OrIPv6Slash64() throws {
        #expect(ClientAddress.key(try SocketAddress(ipAddress: "192.0.2.7", port: 1234)) == "192.0.2.7")
        let a = ClientAddress.key(try SocketAddress(ipAddress: "2001:db8:1:2:aaaa::1", port: 1))
        let b = ClientAddress.key(try SocketAddress(ipAddress: "2001:db8:1:2:bbbb::9", port: 2))
        #expect(a == "2001:db8:1:2::/64" && a == b)
        #expect(ClientAddress.key(try SocketAddress(ipAddress: "2001:db8:1:3::1", port: 1)) != a)
        #expect(ClientAddress.key(try SocketAddress(ipAddress: "::ffff:192.0.2.7", port: 1)) == "192.0.2.7")
        #expect(ClientAddress.key(nil) == "unknown")
    }
}
