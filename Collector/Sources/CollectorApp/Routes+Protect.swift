import CrashShieldProtocol
import Foundation
import Hummingbird

/// The management API of verdicts and protections (API token):
/// - `GET /api/0/issues/<id>/protection`: `{"verdict": {rule, guard, summary, class, class_prefix} | null,
///   "releases": [{"release", "app_version"}], "protections": [...]}`;
/// - `POST /api/0/issues/<id>/protect` with `{"policy": "reportOnly" | "neutralize"` (default
///   reportOnly)`, "releases": [...]` (default: every release of the issue)`, "class_prefixes": [...]}`
///   (zombie guard; default: the verdict's): publishes the switch (201, the version with the
///   guard, rule, releases and app versions); 422 `protect.no_verdict` / `protect.no_release` /
///   `protect.needs_class_prefix`, 400 `protect.policy` / `protect.release`;
/// - `GET /api/0/projects/<id>/protections`: every protection with the issue's crashes in the
///   release before and after it and the guard's incidents in the release after it;
/// - `GET` and `PUT /api/0/projects/<id>/auto-protect`: `{"enabled": bool, "users": n}` (off by
///   default; `users` defaults to `ProtectService.defaultAutoProtectUsers`, 1 to 1,000,000).
extension CollectorRoutes {
    var protectService: ProtectService { ProtectService(store: store, sdkConfig: sdkConfig) }

    func registerProtection(on manage: RouterGroup<CollectorRequestContext>) {
        manage.get("issues/:id/protection") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                let issue = try await self.existingIssue(try Self.id(context, "id"))
                return Self.json(try await ProtectionView.make(issue: issue, service: self.protectService))
            }
        }
        manage.post("issues/:id/protect") { request, context in
            await self.respond {
                let caller = try await self.requireToken(request)
                let issue = try await self.existingIssue(try Self.id(context, "id"))
                let body = try await Self.jsonBody(request)
                let policyText = body["policy"]?.stringValue ?? RemoteGuardPolicy.reportOnly.rawValue
                guard let policy = RemoteGuardPolicy(rawValue: policyText), policy != .off else {
                    throw CollectorError.badRequest("protect.policy", "policy must be reportOnly or neutralize")
                }
                let releases = try Self.stringList(body["releases"], field: "releases")
                let prefixes = try Self.stringList(body["class_prefixes"], field: "class_prefixes")
                do {
                    let outcome = try await self.protectService.protect(
                        issue: issue, policy: policy, releases: releases, classPrefixes: prefixes,
                        by: .apiToken(caller.name, owner: caller.accountName))
                    return Self.json(ProtectOutcomeView(outcome), status: .created)
                } catch let rejection as SDKConfigRejection {
                    return self.rejectionResponse(rejection)
                }
            }
        }
        manage.get("projects/:id/protections") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                return Self.json(try await self.store.protectionSummaries(projectID: try Self.id(context, "id")).map(ProtectionSummaryView.init))
            }
        }
        manage.get("projects/:id/auto-protect") { request, context in
            await self.respondReading {
                try await self.requireToken(request)
                let project = try await self.existingProject(try Self.id(context, "id"))
                return Self.json(AutoProtectView(users: try await self.store.autoProtectUsers(projectID: project.id)))
            }
        }
        manage.put("projects/:id/auto-protect") { request, context in
            await self.respond {
                try await self.requireToken(request)
                let project = try await self.existingProject(try Self.id(context, "id"))
                let body = try await Self.jsonBody(request)
                guard let enabled = body["enabled"]?.boolValue else {
                    throw CollectorError.badRequest("auto_protect.invalid", "the body must be {\"enabled\": true|false, \"users\": <number>}")
                }
                let users = try AutoProtectView.users(body["users"].map { $0.intValue ?? -1 })
                try await self.store.setAutoProtectUsers(projectID: project.id, users: enabled ? users : nil)
                self.logger.info("auto-protect set", metadata: ["project": "\(project.id)", "enabled": "\(enabled)", "users": "\(users)"])
                return Self.json(AutoProtectView(users: try await self.store.autoProtectUsers(projectID: project.id)))
            }
        }
    }

    func existingIssue(_ id: Int64) async throws -> Issue {
        guard let issue = try await store.issue(id: id) else { throw CollectorError.notFound("issue.unknown", "no such issue") }
        return issue
    }

    func existingProject(_ id: Int64) async throws -> Project {
        guard let project = try await store.project(id: id) else { throw CollectorError.notFound("project.unknown", "no such project") }
        return project
    }

    /// An optional array of non-empty strings.
    static func stringList(_ value: JSONValue?, field: String) throws -> [String]? {
        guard let value else { return nil }
        guard let items = value.arrayValue, let strings = Optional(items.compactMap(\.stringValue)),
              strings.count == items.count, !strings.contains(where: \.isEmpty) else {
            throw CollectorError.badRequest("protect.\(field)", "\(field) must be an array of non-empty strings")
        }
        return strings
    }
}

/// An issue's verdict, its releases with the app versions a protection would scope, and its
/// protections.
struct ProtectionView: Encodable {
    struct Release: Encodable {
        let release: String
        let appVersion: String?
    }
    let verdict: GuardVerdict?
    let releases: [Release]
    let protections: [ProtectionRecordView]

    static func make(issue: Issue, service: ProtectService) async throws -> ProtectionView {
        ProtectionView(
            verdict: try await service.verdict(for: issue),
            releases: try await service.store.issueReleases(issueID: issue.id).map {
                Release(release: $0, appVersion: ProtectionPlan.appVersion(ofRelease: $0))
            },
            protections: try await service.store.protections(issueID: issue.id).map(ProtectionRecordView.init))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(verdict, forKey: .verdict)  // null when there is none
        try container.encode(releases, forKey: .releases)
        try container.encode(protections, forKey: .protections)
    }
    enum CodingKeys: String, CodingKey { case verdict, releases, protections }
}

struct ProtectionRecordView: Encodable {
    let id: Int64
    let issueId: Int64
    let release: String
    let guardName: String
    let policy: String
    let origin: String
    let classPrefix: String?
    let configVersion: Int64?
    let createdAt: Date
    init(_ protection: Protection) {
        id = protection.id
        issueId = protection.issueID
        release = protection.release
        guardName = protection.guardName
        policy = protection.policy
        origin = protection.origin
        classPrefix = protection.classPrefix
        configVersion = protection.configVersion
        createdAt = protection.createdAt
    }
    enum CodingKeys: String, CodingKey {
        case id, issueId, release, guardName = "guard", policy, origin, classPrefix, configVersion, createdAt
    }
}

struct ProtectionSummaryView: Encodable {
    let protection: ProtectionRecordView
    let crashesBefore: Int64
    let crashesAfter: Int64
    let incidentsAfter: Int64
    init(_ summary: ProtectionSummary) {
        protection = ProtectionRecordView(summary.protection)
        crashesBefore = summary.crashesBefore
        crashesAfter = summary.crashesAfter
        incidentsAfter = summary.incidentsAfter
    }
}

struct ProtectOutcomeView: Encodable {
    let version: Int64
    let rule: String
    let guardName: String
    let policy: String
    let releases: [String]
    let appVersions: [String]
    let classPrefixes: [String]
    let reason: String?
    let config: SDKConfigView
    init(_ outcome: ProtectOutcome) {
        version = outcome.config.version
        rule = outcome.verdict.rule
        guardName = outcome.verdict.guardName
        policy = outcome.policy.rawValue
        releases = outcome.releases
        appVersions = outcome.appVersions
        classPrefixes = outcome.classPrefixes
        reason = outcome.config.reason
        config = SDKConfigView(outcome.config)
    }
    enum CodingKeys: String, CodingKey {
        case version, rule, guardName = "guard", policy, releases, appVersions, classPrefixes, reason, config
    }
}

/// Auto-protect's setting: `{"enabled": bool, "users": n}` (`users` is the default threshold when off).
struct AutoProtectView: Encodable {
    let enabled: Bool
    let users: Int64
    init(users: Int64?) {
        enabled = users != nil
        self.users = users ?? ProtectService.defaultAutoProtectUsers
    }

    /// A threshold as given (nil: the default).
    /// - Throws: 400 `auto_protect.users` outside 1...1,000,000.
    static func users(_ value: Int64?) throws -> Int64 {
        guard let value else { return ProtectService.defaultAutoProtectUsers }
        guard (1...1_000_000).contains(value) else {
            throw CollectorError.badRequest("auto_protect.users", "users must be a whole number from 1 to 1000000")
        }
        return value
    }
}
