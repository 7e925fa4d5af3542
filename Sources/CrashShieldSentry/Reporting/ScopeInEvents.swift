import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation

extension SentryEvent {
    /// Puts the app's scope (`CrashScope`) on this event, as it was when the event happened (a
    /// crash report's `scope`, an incident's snapshot, the current scope for an event made now):
    /// - `user`: the app's user, its `id` falling back to `installationID`; without a user set,
    ///   `{"id": installationID}` (the `did` of sessions, so that "users affected" counts
    ///   installations);
    /// - `tags`: the app's tags beside the event's own; on a name both set, the event's own
    ///   (CrashShield's `crashshield.*` and `launch.*` tags) wins;
    /// - `contexts`: each app context under its name (`SentryEvent.Contexts.named`: one called
    ///   `os`, `device` or `app` joins that object, the SDK's fields winning);
    /// - `breadcrumbs`: the app's breadcrumbs, oldest first, before the event's own (a crash's
    ///   incidents, stamped with the crash's time); an unknown level is sent without a level.
    package mutating func apply(scope: CrashScope.Snapshot?, installationID: String) {
        if let user = scope?.user, !user.isEmpty {
            self.user = User(id: user.id ?? installationID, username: user.username, email: user.email, ipAddress: user.ipAddress)
        } else {
            self.user = User(id: installationID)
        }
        guard let scope else { return }
        if !scope.tags.isEmpty {
            tags = scope.tags.merging(tags ?? [:]) { _, own in own }
        }
        if !scope.contexts.isEmpty {
            var all = contexts ?? Contexts()
            var named = all.named ?? [:]
            for (name, entries) in scope.contexts {
                named[name] = (named[name] ?? [:]).merging(entries.mapValues(JSONValue.string)) { _, app in app }
            }
            all.named = named
            contexts = all
        }
        if !scope.breadcrumbs.isEmpty {
            let appCrumbs = scope.breadcrumbs.map { crumb in
                Breadcrumb(timestamp: SentryTimestamp.rfc3339(crumb.timestamp), type: "default", category: crumb.category,
                           level: Level(rawValue: crumb.level.rawValue), message: crumb.message,
                           data: crumb.data.isEmpty ? nil : crumb.data.mapValues(JSONValue.string))
            }
            breadcrumbs = Values(appCrumbs + (breadcrumbs?.values ?? []))
        }
    }
}
