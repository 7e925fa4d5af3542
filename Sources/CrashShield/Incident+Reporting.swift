import CrashShieldBase
import CrashShieldGuards
import CrashShieldRecording
import CrashShieldSentry
import Foundation

extension Incident {
    /// This incident as reporting takes it (`EventReporter.incidentEnvelope`): the same fields,
    /// with the guard and policy as their raw names, and the app's scope as the incident saw it.
    package var reportingRecord: IncidentRecord {
        IncidentRecord(
            guardName: guardID.rawValue, policy: policy.reportingName, className: className, selector: selector,
            isClassMethod: isClassMethod, reason: reason,
            frames: frames.map { IncidentRecord.Frame(address: UInt64($0.address), imagePath: $0.imagePath, imageOffset: $0.imageOffset.map(UInt64.init)) },
            threadID: threadID, isMainThread: isMainThread, wallTime: wallTime, fingerprint: fingerprint, count: count,
            isFirstOccurrence: kind == .firstOccurrence, scope: scope.isEmpty ? nil : scope)
    }
}

extension GuardPolicy {
    /// The name written into reports and events: "neutralize", "reportOnly", "off".
    var reportingName: String {
        switch self {
        case .neutralize: return "neutralize"
        case .reportOnly: return "reportOnly"
        case .off: return "off"
        }
    }
}
