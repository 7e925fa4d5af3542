import CrashShieldProtocol
import Foundation
import Logging
import ServiceLifecycle

/// The remote-configuration document that switches one guard on for some app versions, built
/// from the project's current document so that nothing else changes.
///
/// The SDK applies the first rule whose `when` matches. For each app version V, in front of the
/// current rules come: a copy of every current rule that can match V (its `app_version` absent or
/// matching V), in order, with `app_version` narrowed to `=V` and the guard set, up to the first
/// that matches every app of V (no `os`, `os_version` or `arch`); when there is none, one rule
/// `{"when": {"app_version": "=V"}, "guards": {guard: policy}}` for the apps of version V no current
/// rule matches. So an app of version V resolves to the rule it resolved to before, plus the
/// guard; an app of any other version resolves exactly as before. Current rules that match only
/// V (`app_version` "=V") can no longer be reached and are dropped, so protecting a version twice
/// does not grow the document. Unknown fields and guard names of the copied rules are kept.
/// The guard's policy only ever strengthens (off < reportOnly < neutralize): a rule that already
/// neutralises keeps doing so when report-only is asked for. For the zombie guard the class
/// prefixes are added to each new rule's `zombie_class_prefixes` (the guard acts only on those
/// classes); `allow_class_prefixes` is never set: it narrows every guard of the rule, not one.
enum ProtectionPlan {
    /// The app version a release names, as the SDK derives it (`ReportingOptions.releaseVersion`):
    /// the text after the last "@" up to the first "+"; nil when that is not a dotted version.
    static func appVersion(ofRelease release: String) -> String? {
        guard let at = release.lastIndex(of: "@") else { return nil }
        let version = String(release[release.index(after: at)...].prefix { $0 != "+" })
        return DottedVersion(version) == nil ? nil : version
    }

    static func rank(_ policy: RemoteGuardPolicy?) -> Int {
        switch policy {
        case .neutralize?: return 2
        case .reportOnly?: return 1
        default: return 0
        }
    }

    /// `current`'s rules (a JSON document the SDK accepts, or nil for none) with `guardName`
    /// switched to `policy` for apps of each of `versions` (see the type's comment).
    /// - Throws: `SDKConfigRejection` when `current` is a document the SDK refuses.
    static func document(current: JSONValue?, guardName: String, policy: RemoteGuardPolicy, zombiePrefixes: [String],
                         versions: [String]) throws -> JSONValue {
        var members = current?.objectValue ?? [:]
        var rawRules = members["rules"]?.arrayValue ?? []
        for version in versions {
            guard let dotted = DottedVersion(version) else { continue }
            let parsed: [RemoteConfigRule]
            do {
                parsed = try RemoteConfigDocument.parse(JSONValue.object(["version": .int(0), "rules": .array(rawRules)])).document.rules
            } catch {
                throw SDKConfigRejection(error)
            }
            let pinned = "=\(version)"
            var front: [JSONValue] = []
            var caughtAll = false
            for (raw, rule) in zip(rawRules, parsed) where rule.when.appVersion.map({ $0.matches(dotted) }) ?? true {
                front.append(switched(raw, rule: rule, pinned: pinned, guardName: guardName, policy: policy, zombiePrefixes: zombiePrefixes))
                // A rule with no other condition matches every app of V: the rules after it are
                // never reached for V.
                if rule.when.os == nil && rule.when.osVersion == nil && rule.when.arch == nil { caughtAll = true; break }
            }
            if !caughtAll {
                var fallback: [String: JSONValue] = ["when": .object(["app_version": .string(pinned)]),
                                                      "guards": .object([guardName: .string(policy.rawValue)])]
                if !zombiePrefixes.isEmpty { fallback["zombie_class_prefixes"] = .array(zombiePrefixes.map(JSONValue.string)) }
                front.append(.object(fallback))
            }
            let reachable = zip(rawRules, parsed).filter { _, rule in
                guard let clauses = rule.when.appVersion?.clauses, clauses.count == 1 else { return true }
                return !(clauses[0].op == .equal && clauses[0].version == dotted)
            }.map(\.0)
            rawRules = front + reachable
        }
        members["rules"] = .array(rawRules)
        return .object(members)
    }

    /// The weakest policy `guardName` has in `document`'s rules pinned to `=version` (the rules a
    /// protection put in front for that version): what every app of the version gets at least.
    /// nil when no such rule names the guard.
    static func effectivePolicy(of document: JSONValue, guardName: String, version: String) -> RemoteGuardPolicy? {
        guard let dotted = DottedVersion(version),
              let rules = try? RemoteConfigDocument.parse(JSONValue.object(["version": .int(0), "rules": document["rules"] ?? .array([])])).document.rules
        else { return nil }
        let pinned = rules.filter { rule in
            guard let clauses = rule.when.appVersion?.clauses, clauses.count == 1 else { return false }
            return clauses[0].op == .equal && clauses[0].version == dotted
        }
        let policies = pinned.map { $0.guards[guardName] }
        guard !policies.isEmpty, !policies.contains(where: { $0 == nil }) else { return nil }
        return policies.compactMap { $0 }.min { rank($0) < rank($1) }
    }

    private static func switched(_ raw: JSONValue, rule: RemoteConfigRule, pinned: String, guardName: String,
                                 policy: RemoteGuardPolicy, zombiePrefixes: [String]) -> JSONValue {
        var members = raw.objectValue ?? [:]
        var when = members["when"]?.objectValue ?? [:]
        when["app_version"] = .string(pinned)
        members["when"] = .object(when)
        var guards = members["guards"]?.objectValue ?? [:]
        let existing = rule.guards[guardName]
        guards[guardName] = .string((rank(existing) >= rank(policy) ? existing ?? policy : policy).rawValue)
        members["guards"] = .object(guards)
        if !zombiePrefixes.isEmpty {
            var prefixes = rule.zombieClassPrefixes ?? []
            for prefix in zombiePrefixes where !prefixes.contains(prefix) { prefixes.append(prefix) }
            members["zombie_class_prefixes"] = .array(prefixes.map(JSONValue.string))
        }
        return .object(members)
    }
}

/// What a protection published: the version, the guard and policy, and the releases and app
/// versions its rules name.
struct ProtectOutcome: Sendable {
    let config: SDKConfigVersion
    let verdict: GuardVerdict
    let policy: RemoteGuardPolicy
    let releases: [String]
    let appVersions: [String]
    let classPrefixes: [String]
}

/// Verdicts for issues and the protections built on them: the one-click protection (`protect`)
/// and auto-protect (`autoProtect`). Publishing goes through `SDKConfigService` (validated by the
/// SDK's parser, signed, in the history with its publisher and reason).
struct ProtectService: Sendable {
    let store: any CollectorStore
    let sdkConfig: SDKConfigService

    static func notProtectable(_ code: String, _ message: String) -> CollectorError {
        CollectorError(code: code, message: message, status: 422)
    }

    /// The verdict for `issue`: from its newest event, for a fatal issue only; nil otherwise.
    func verdict(for issue: Issue) async throws -> GuardVerdict? {
        guard issue.level == "fatal" else { return nil }
        guard let newest = try await store.events(issueID: issue.id, limit: 1).first,
              let payload = try await store.eventPayload(projectID: issue.projectID, eventID: newest.eventID),
              let event = (try? StrictJSON.parse(payload, rules: .lastKeyWins)) ?? (try? JSONValue.parse(payload))
        else { return nil }
        return GuardVerdicts.verdict(for: event)
    }

    /// Publishes the switch for `issue`'s verdict: `policy` for the releases given (default: every
    /// release of the issue) that name an app version, scoped by those versions; for the zombie guard, `classPrefixes`
    /// or the verdict's prefix. Records one protection per release.
    /// - Throws: 422 `protect.no_verdict` (no guard covers the crash, or the issue is not fatal),
    ///   `protect.no_release` (no named release carries an app version), `protect.needs_class_prefix`
    ///   (a zombie verdict with no class prefix); 400 `protect.release` (a release the issue does
    ///   not have); what `SDKConfigService.publish` throws (409 when another version was
    ///   published meanwhile).
    func protect(issue: Issue, policy: RemoteGuardPolicy, releases requested: [String]?, classPrefixes: [String]?,
                 by publisher: SDKConfigPublisher, origin: String = "manual", reason: String? = nil,
                 now: Date = Date()) async throws -> ProtectOutcome {
        guard let verdict = try await verdict(for: issue) else {
            throw Self.notProtectable("protect.no_verdict", "no CrashShield guard covers this issue's crash")
        }
        let known = try await store.issueReleases(issueID: issue.id)
        if let unknown = requested?.first(where: { !known.contains($0) }) {
            throw CollectorError.badRequest("protect.release", "the issue has no events of release \(unknown)")
        }
        // Only releases that name an app version can be scoped; the others are left out.
        let releases = (requested ?? known).filter { ProtectionPlan.appVersion(ofRelease: $0) != nil }
        var versions: [String] = []
        for release in releases {
            if let version = ProtectionPlan.appVersion(ofRelease: release), !versions.contains(version) { versions.append(version) }
        }
        guard !versions.isEmpty else {
            throw Self.notProtectable("protect.no_release", "none of the releases names an app version (name@version)")
        }
        let prefixes = verdict.needsClassPrefix ? (classPrefixes ?? verdict.classPrefix.map { [$0] } ?? []) : []
        if verdict.needsClassPrefix && prefixes.isEmpty {
            throw Self.notProtectable("protect.needs_class_prefix", "the zombie guard needs the class prefixes to keep as zombies (class_prefixes)")
        }
        let active = try await store.activeSDKConfig(projectID: issue.projectID)
        let current = try active.map { config -> JSONValue in
            do { return try JSONValue.parse(config.document) } catch {
                throw CollectorError.storage("the active configuration version is not JSON")
            }
        }
        var document = try ProtectionPlan.document(current: current, guardName: verdict.guardName, policy: policy,
                                                   zombiePrefixes: prefixes, versions: versions)
        // The next version exactly: a version published meanwhile makes this one a 409, never lost.
        if case .object(var members) = document {
            members["version"] = .int((active?.version ?? 0) + 1)
            document = .object(members)
        }
        let why = reason ?? "protect issue \(issue.id) (\(verdict.rule)): \(verdict.guardName) \(policy.rawValue) for \(releases.joined(separator: ", "))"
        let config = try await sdkConfig.publish(projectID: issue.projectID, document: document, publishedBy: publisher, reason: why, now: now)
        if origin == "manual" {
            for release in releases {
                // The policy apps of the release get: never below the one asked for.
                let effective = ProtectionPlan.appVersion(ofRelease: release)
                    .flatMap { ProtectionPlan.effectivePolicy(of: document, guardName: verdict.guardName, version: $0) } ?? policy
                if let id = try await store.insertProtection(Protection(
                    id: 0, projectID: issue.projectID, issueID: issue.id, release: release, guardName: verdict.guardName,
                    policy: effective.rawValue, origin: origin, classPrefix: prefixes.first, configVersion: nil, createdAt: now)) {
                    try await store.setProtectionVersion(id: id, version: config.version)
                }
            }
        }
        return ProtectOutcome(config: config, verdict: verdict, policy: policy, releases: releases, appVersions: versions, classPrefixes: prefixes)
    }

    /// Auto-protect's threshold when a project does not name one: a crash that reached this many
    /// distinct users of one release.
    static let defaultAutoProtectUsers: Int64 = 10
    /// How far back auto-protect looks for issues seen (older issues are not re-examined).
    static let autoProtectWindow: TimeInterval = 7 * 86_400

    /// One auto-protect pass over every project with auto-protect on: each release of a fatal,
    /// guardable issue seen in the last `autoProtectWindow` whose crashes reached the project's
    /// threshold of users gets the report-only switch, published as `SDKConfigPublisher.autoProtect`
    /// with the reason in the history. The protection row is claimed first (unique per issue and
    /// release for origin "auto"), so two collectors on one database publish it once; a failed
    /// publication gives the claim back for the next pass. Returns the versions published.
    func autoProtect(now: Date = Date(), logger: Logger) async throws -> [Int64] {
        var published: [Int64] = []
        for (projectID, users) in try await store.autoProtectProjects() {
            for candidate in try await store.autoProtectCandidates(projectID: projectID, users: users, since: now - Self.autoProtectWindow) {
                guard let issue = try await store.issue(id: candidate.issueID), ProtectionPlan.appVersion(ofRelease: candidate.release) != nil,
                      let verdict = try await verdict(for: issue), !verdict.needsClassPrefix || verdict.classPrefix != nil
                else { continue }
                guard let claim = try await store.insertProtection(Protection(
                    id: 0, projectID: projectID, issueID: issue.id, release: candidate.release, guardName: verdict.guardName,
                    policy: RemoteGuardPolicy.reportOnly.rawValue, origin: "auto", classPrefix: verdict.classPrefix, configVersion: nil,
                    createdAt: now))
                else { continue }
                let reason = "auto-protect: issue \(issue.id) (\(verdict.rule)) reached \(candidate.users) users in release \(candidate.release) (threshold \(users))"
                do {
                    let outcome = try await protect(issue: issue, policy: .reportOnly, releases: [candidate.release], classPrefixes: nil,
                                                    by: .autoProtect, origin: "auto", reason: reason, now: now)
                    try await store.setProtectionVersion(id: claim, version: outcome.config.version)
                    published.append(outcome.config.version)
                    logger.info("auto-protect published", metadata: [
                        "project": "\(projectID)", "issue": "\(issue.id)", "release": "\(candidate.release)",
                        "guard": "\(verdict.guardName)", "version": "\(outcome.config.version)",
                    ])
                } catch {
                    try? await store.deleteProtection(id: claim)
                    logger.error("auto-protect failed", metadata: ["project": "\(projectID)", "issue": "\(issue.id)", "error": "\(error)"])
                }
            }
        }
        return published
    }
}

/// Runs `ProtectService.autoProtect` every `interval` seconds (and at start).
struct AutoProtectService: Service {
    let protect: ProtectService
    let interval: Double
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                _ = try await protect.autoProtect(logger: logger)
            } catch {
                logger.error("auto-protect pass failed", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(interval)) }
        }
    }
}
