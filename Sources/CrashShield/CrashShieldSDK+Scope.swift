import CrashShieldBase
import CrashShieldGuards
import CrashShieldRecording
import CrashShieldSentry

/// The app's scope: user, tags, contexts and breadcrumbs carried into crash reports and guard
/// incidents. These forward to `CrashScope` (module CrashShieldCapture), where the bounds are
/// documented; both work before, during and after `start`.
extension CrashShieldSDK {
    /// Sets the user (nil clears it).
    public static func setUser(_ user: CrashScope.User?) { CrashScope.setUser(user) }

    /// Sets a tag; ignored when `key` is empty or when it is new and `CrashScope.maxTags` are set.
    public static func setTag(_ key: String, _ value: String) { CrashScope.setTag(key, value) }

    public static func removeTag(_ key: String) { CrashScope.removeTag(key) }

    /// Sets a named context (nil removes it); ignored when `name` is empty or when it is new and
    /// `CrashScope.maxContexts` are set.
    public static func setContext(_ name: String, _ values: [String: String]?) { CrashScope.setContext(name, values) }

    /// Adds a breadcrumb; the last `CrashScope.maxBreadcrumbs` are kept.
    public static func addBreadcrumb(message: String, category: String? = nil,
                                     level: CrashScope.Breadcrumb.Level = .info, data: [String: String] = [:]) {
        CrashScope.addBreadcrumb(message: message, category: category, level: level, data: data)
    }

    public static func clearBreadcrumbs() { CrashScope.clearBreadcrumbs() }

    /// Clears user, tags, contexts and breadcrumbs.
    public static func clearScope() { CrashScope.clear() }
}
