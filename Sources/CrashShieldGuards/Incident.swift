import CrashShieldBase
import CrashShieldRecording
import Foundation
package import _CrashShieldIncidents

/// One misuse that a guard intercepted: which guard, what it did, where (class, selector,
/// return addresses) and how often its fingerprint has occurred.
///
/// The first occurrence of a fingerprint is delivered in full; later occurrences are counted and
/// delivered as updates (`kind == .countUpdate`) at most once per `countUpdateInterval`.
public struct Incident: Sendable, Hashable {
    /// Whether this is a fingerprint's first delivery or a later count update.
    public enum Kind: Sendable, Hashable {
        /// The first time this fingerprint was seen in this process.
        case firstOccurrence
        /// A later delivery of a known fingerprint: `count` grew (at most one per `CrashShieldOptions.countUpdateInterval`).
        case countUpdate
    }

    /// One raw return address, with the image that contains it (for later symbolication).
    public struct Frame: Sendable, Hashable {
        /// The return address.
        public let address: UInt
        /// Path of the image containing `address`; empty when unknown.
        public let imagePath: String
        /// `address` minus the image's load address; nil when the image is unknown.
        public let imageOffset: UInt?

        package init(address: UInt, imagePath: String, imageOffset: UInt?) {
            self.address = address
            self.imagePath = imagePath
            self.imageOffset = imageOffset
        }
    }

    /// First occurrence of the fingerprint, or an update of its count.
    public let kind: Kind
    /// The guard that intercepted the misuse.
    public let guardID: GuardID
    /// The policy the guard applied to this occurrence.
    public let policy: GuardPolicy
    /// Receiver's class name (for a `+` method, the class itself).
    public let className: String
    /// The selector's name ("objectAtIndex:").
    public let selector: String
    /// True for a class method (`+`), false for an instance method.
    public let isClassMethod: Bool
    /// Short, bounded reason; never contains a description of the values involved.
    public let reason: String
    /// Return addresses from the call site outwards (up to 32).
    public let frames: [Frame]
    /// The thread's system id.
    public let threadID: UInt64
    /// True when the misuse happened on the main thread.
    public let isMainThread: Bool
    /// The wall-clock time of the misuse.
    public let wallTime: Date
    /// The monotonic clock (CLOCK_MONOTONIC) at the misuse, as the time since that clock's origin
    /// (usually boot): only the difference between two incidents' values means something.
    public let monotonicTime: Duration
    /// Guard + class + selector + first frame outside system images.
    public let fingerprint: UInt64
    /// Occurrences of this fingerprint so far, this one included.
    public let count: Int
    /// The app's scope (`CrashScope`: user, tags, contexts) when the incident was delivered, with
    /// its `CrashScope.incidentBreadcrumbs` (10) most recent breadcrumbs.
    public let scope: CrashScope.Snapshot

    /// `-[NSArray objectAtIndex:]` style name.
    public var methodName: String { "\(isClassMethod ? "+" : "-")[\(className) \(selector)]" }
}

extension Incident {
    package init(_ raw: UnsafePointer<cs_incident>) {
        let c = raw.pointee
        kind = c.kind == CS_INCIDENT_UPDATE ? .countUpdate : .firstOccurrence
        guardID = GuardID(rawValue: c.guard_name.map { String(cString: $0) } ?? "")
        policy = GuardPolicy(c.policy)
        className = withUnsafeBytes(of: c.class_name) { String(decodingCString: $0) }
        selector = withUnsafeBytes(of: c.selector_name) { String(decodingCString: $0) }
        isClassMethod = c.is_class_method
        let args = [c.args.0, c.args.1].prefix(Int(c.arg_count))
        reason = Incident.format(template: c.reason.map { String(cString: $0) } ?? "", args: Array(args))
        frames = withUnsafeBytes(of: c.frames) { buffer in
            buffer.bindMemory(to: UInt.self).prefix(Int(c.frame_count)).map(Frame.init(address:))
        }
        threadID = c.thread_id
        isMainThread = c.is_main_thread
        wallTime = Date(timeIntervalSince1970: Double(c.wall_time_ns) / 1e9)
        monotonicTime = .nanoseconds(Int64(clamping: c.monotonic_ns))
        fingerprint = c.fingerprint
        count = Int(clamping: c.count)
        scope = CrashScope.snapshot(lastBreadcrumbs: CrashScope.incidentBreadcrumbs)
    }

    /// Replaces each "{}" in `template` with the next argument.
    static package func format(template: String, args: [UInt64]) -> String {
        var result = ""
        var remaining = args[...]
        var rest = Substring(template)
        while let marker = rest.range(of: "{}") {
            result += rest[..<marker.lowerBound]
            result += remaining.popFirst().map(Incident.render) ?? "?"
            rest = rest[marker.upperBound...]
        }
        return result + rest
    }

    /// Numbers near UInt64.max are almost always a negative value or NSNotFound passed as an index.
    private static func render(_ value: UInt64) -> String {
        if value == UInt64(Int64.max) { return "NSNotFound" }
        if value > UInt64(Int64.max) { return "\(Int64(bitPattern: value))" }
        return "\(value)"
    }
}

extension Incident.Frame {
    package init(address: UInt) {
        self.address = address
        var path: UnsafePointer<CChar>? = nil
        var base: UInt = 0
        if cs_address_image(address, &path, &base) {
            imagePath = path.map { String(cString: $0) } ?? ""
            imageOffset = address - base
        } else {
            imagePath = ""
            imageOffset = nil
        }
    }
}

private extension String {
    package init(decodingCString bytes: UnsafeRawBufferPointer) {
        let chars = bytes.bindMemory(to: UInt8.self)
        let length = chars.firstIndex(of: 0) ?? chars.count
        self = String(decoding: chars.prefix(length), as: UTF8.self)
    }
}

extension GuardPolicy {
    package init(_ raw: cs_policy) {
        switch raw {
        case CS_POLICY_REPORT_ONLY: self = .reportOnly
        case CS_POLICY_OFF: self = .off
        default: self = .neutralize
        }
    }

    package var raw: cs_policy {
        switch self {
        case .neutralize: return CS_POLICY_NEUTRALIZE
        case .reportOnly: return CS_POLICY_REPORT_ONLY
        case .off: return CS_POLICY_OFF
        }
    }
}
