// CaptureOnlyExample — a Linux Swift program that uses only the CrashShieldCapture product:
// fatal crash capture and crash-loop protection, no Objective-C, no GNUstep.
// scripts/check-capture-only.sh builds it and checks with ldd that nothing of GNUstep or libobjc
// is linked.
//
// usage: CaptureOnlyExample <report-dir> [crash]
import CrashShieldRecording
import Foundation

let arguments = CommandLine.arguments
let directory = arguments.count > 1 ? arguments[1] : CaptureOptions.defaultDirectory

var options = CaptureOptions(directory: directory)
options.appVersion = "1.0"
options.deliverSynchronously = true
options.reportSinks = [ClosureCrashReportSink { report in
    let top = report.crashedThreadFrames.first { $0.function?.contains("CaptureOnlyExample") == true }
    print("earlier crash: \(report.classification.rawValue) \(report.signal.name) in \(top?.function ?? "?")")
    if let scope = report.scope {
        print("earlier crash scope: user \(scope.user?.id ?? "?"), tier \(scope.tags["tier"] ?? "?"), "
              + "last breadcrumb \(scope.breadcrumbs.last?.message ?? "?")")
    }
}]
var launch = LaunchProtectionOptions()
launch.repairSteps = [.safeMode(), .clearCaches(["\(directory)-cache"])]

let protection = try CrashCapture.start(options, launchProtection: launch)
print("capture installed: \(CrashCapture.isInstalled); last run: \(protection?.lastRun.outcome.rawValue ?? "?")")

@inline(never)
func crashWithSwiftTrap(_ value: Int?) -> Int { value! }

// The scope a later crash report carries: who, tags and contexts, and what happened before.
CrashScope.setUser(CrashScope.User(id: "user-1", email: "user-1@example.com"))
CrashScope.setTag("tier", "free")
CrashScope.setContext("job", ["queue": "default"])
CrashScope.addBreadcrumb(message: "job started", category: "worker", level: .info, data: ["id": "17"])

if arguments.count > 2 && arguments[2] == "crash" {
    print(crashWithSwiftTrap(arguments.count > 100 ? 1 : nil))
}
protection?.launchCompleted()
