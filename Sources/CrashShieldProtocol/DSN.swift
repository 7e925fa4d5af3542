import CrashShieldBase
import Foundation

/// A client key of a Sentry-compatible server (Sentry, self-hosted Sentry, GlitchTip, the
/// CrashShield collector): `https://<public key>@<host>[:port][/path]/<project id>`.
///
/// A legacy secret key (`https://<public>:<secret>@host/1`) is accepted and ignored, as Sentry's
/// own SDKs do today.
public struct DSN: Sendable, Hashable, CustomStringConvertible {
    public let scheme: String
    public let publicKey: String
    public let host: String
    public let port: Int?
    /// The path before the project id, without a trailing slash ("" for most servers).
    public let pathPrefix: String
    public let projectID: String

    /// Why a DSN string was refused. `code` is stable across versions.
    public struct ParseError: CodedError {
        public let code: String
        public let message: String
        static func invalid(_ code: String, _ message: String) -> ParseError { ParseError(code: code, message: message) }
    }

    /// Parses `string`.
    /// - Throws: `DSN.ParseError` naming what is wrong (scheme, key, host or project id).
    public init(_ string: String) throws(ParseError) {
        let trimmed = string.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased() else {
            throw .invalid("dsn.malformed", "not a URL: expected https://<public key>@<host>/<project id>")
        }
        guard scheme == "https" || scheme == "http" else {
            throw .invalid("dsn.scheme", "the scheme must be http or https, not \(scheme)")
        }
        guard let key = components.user, !key.isEmpty else {
            throw .invalid("dsn.key", "no public key before '@'")
        }
        guard key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw .invalid("dsn.key", "the public key has characters other than letters, digits, '-' and '_'")
        }
        guard let host = components.host, !host.isEmpty else {
            throw .invalid("dsn.host", "no host")
        }
        var parts = components.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let project = parts.popLast(), !project.isEmpty else {
            throw .invalid("dsn.project", "no project id after the host")
        }
        guard project.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw .invalid("dsn.project", "the project id has characters other than letters, digits, '-' and '_'")
        }
        guard components.query == nil, components.fragment == nil else {
            throw .invalid("dsn.malformed", "a DSN has no query or fragment")
        }
        self.scheme = scheme
        self.publicKey = key
        self.host = host
        self.port = components.port
        self.pathPrefix = parts.isEmpty ? "" : "/" + parts.joined(separator: "/")
        self.projectID = project
    }

    /// `scheme://host[:port]`, with brackets around an IPv6 host.
    public var origin: String {
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(hostPart)" + (port.map { ":\($0)" } ?? "")
    }

    /// `POST` target for envelopes: `<origin><prefix>/api/<project>/envelope/`.
    public var envelopeURL: URL { URL(string: "\(origin)\(pathPrefix)/api/\(projectID)/envelope/")! }

    /// `GET` target of the remote configuration document.
    public var sdkConfigURL: URL { URL(string: "\(origin)\(pathPrefix)/api/\(projectID)/sdk-config")! }

    /// The `X-Sentry-Auth` header value for `client` (e.g. "crashshield.swift/1.0.0").
    public func authHeader(client: String) -> String {
        "Sentry sentry_version=7, sentry_key=\(publicKey), sentry_client=\(client)"
    }

    /// The DSN as a string (without any secret key).
    public var description: String {
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(publicKey)@\(hostPart)" + (port.map { ":\($0)" } ?? "") + "\(pathPrefix)/\(projectID)"
    }
}
