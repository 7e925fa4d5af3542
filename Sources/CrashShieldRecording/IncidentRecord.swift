import CrashShieldBase
import Foundation

/// A guard incident as reporting needs it: the CrashShield module maps its `Incident` to this
/// (`Incident.reportingRecord`), so reporting lives here without depending on the guards.
package struct IncidentRecord: Sendable, Hashable {
    /// One return address with its image, when known.
    package struct Frame: Sendable, Hashable {
        package var address: UInt64
        /// Path of the image holding `address`; empty when unknown.
        package var imagePath: String
        /// `address` minus the image's load address; nil when the image is unknown.
        package var imageOffset: UInt64?
        /// Set by reporting's symbolication (`IncidentSymbols`) before the event is built.
        package var function: String?
        package var file: String?
        package var line: Int?
        package init(address: UInt64, imagePath: String, imageOffset: UInt64?) {
            self.address = address
            self.imagePath = imagePath
            self.imageOffset = imageOffset
        }
    }

    /// The guard's identifier ("container", "selector", ...).
    package var guardName: String
    /// "neutralize", "reportOnly" or "off".
    package var policy: String
    package var className: String
    package var selector: String
    package var isClassMethod: Bool
    package var reason: String
    /// Return addresses from the call site outwards.
    package var frames: [Frame]
    package var threadID: UInt64
    package var isMainThread: Bool
    package var wallTime: Date
    /// Guard + class + selector + first frame outside system images: one bug, one fingerprint.
    package var fingerprint: UInt64
    /// Occurrences of this fingerprint so far in this process, this one included.
    package var count: Int
    /// True for the first occurrence, false for a count update.
    package var isFirstOccurrence: Bool
    /// The app's scope when the incident was recorded (`CrashScope.Snapshot`); nil: none.
    package var scope: CrashScope.Snapshot?

    package init(guardName: String, policy: String, className: String, selector: String, isClassMethod: Bool, reason: String,
                frames: [Frame], threadID: UInt64, isMainThread: Bool, wallTime: Date, fingerprint: UInt64, count: Int,
                isFirstOccurrence: Bool, scope: CrashScope.Snapshot? = nil) {
        self.scope = scope
        self.guardName = guardName
        self.policy = policy
        self.className = className
        self.selector = selector
        self.isClassMethod = isClassMethod
        self.reason = reason
        self.frames = frames
        self.threadID = threadID
        self.isMainThread = isMainThread
        self.wallTime = wallTime
        self.fingerprint = fingerprint
        self.count = count
        self.isFirstOccurrence = isFirstOccurrence
    }

    /// `-[NSArray objectAtIndex:]` style name.
    package var methodName: String { "\(isClassMethod ? "+" : "-")[\(className) \(selector)]" }
    /// The fingerprint as 16 hex digits.
    package var fingerprintHex: String {
        let text = String(fingerprint, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}
