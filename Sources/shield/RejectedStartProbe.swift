import CrashShield
import Foundation
import _CrashShieldCapture
import _CrashShieldTestSupport

/// `shield rejected-start-probe --dir A --other-dir B --first <capture|capture-c|start-capture>
/// --second <capture|start-capture>`: (internal) starts capture into A the `--first` way (with
/// guards started before), then makes a second start into B the `--second` way, prints
/// "REJECTED <error>" or "ACCEPTED", then crashes with SIGSEGV, so the report shows what the
/// capture of this process was left with. The second start's report sink prints
/// "REJECTED-SINK-RECEIVED" for every report it is given (B holds one when the test puts it there).
enum RejectedStartProbeCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard let directory = CrashCommand.option("--dir", in: arguments),
              let otherDirectory = CrashCommand.option("--other-dir", in: arguments),
              let first = CrashCommand.option("--first", in: arguments),
              let second = CrashCommand.option("--second", in: arguments) else { return 2 }
        try? CrashShieldSDK.start()
        var options = CaptureOptions(directory: directory)
        options.launchProtection = nil
        options.appName = "first-start"
        do {
            switch first {
            case "capture": try CrashCapture.start(options)
            case "start-capture": try CrashShieldSDK.startCapture(options)
            case "capture-c":
                let result = directory.withCString { path -> csc_install_result in
                    var config = csc_config()
                    config.directory = path
                    return csc_install(&config)
                }
                guard result == CSC_INSTALL_OK else { return 3 }
            default: return 2
            }
        } catch {
            print("FIRST-START-FAILED \(error)")
            return 1
        }

        var rejected = CaptureOptions(directory: otherDirectory)
        rejected.appName = "rejected-start"
        rejected.launchProtection = LaunchProtectionOptions()
        rejected.deliverSynchronously = true
        rejected.symbolicate = false
        rejected.reportSinks = [ClosureCrashReportSink { _ in print("REJECTED-SINK-RECEIVED") }]
        do {
            switch second {
            case "capture": try CrashCapture.start(rejected)
            case "start-capture": try CrashShieldSDK.startCapture(rejected)
            default: return 2
            }
            print("ACCEPTED")
        } catch {
            print("REJECTED \(error)")
        }
        fflush(nil)
        csc_crash_segv()
        return 1
    }
}
