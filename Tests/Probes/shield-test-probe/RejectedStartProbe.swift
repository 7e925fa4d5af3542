import CrashShieldProtocol
import CrashShield
import Foundation
import _CrashShieldCapture
import _CrashShieldTestSupport

/// `shield-test-probe rejected-start-probe --dir A --other-dir B --first <capture|capture-c|start-capture>
/// --second <capture|start-capture>`: starts capture into A the `--first` way
/// (`CrashCapture.start`, the C entry point, or `CrashShieldSDK.start` with guards and capture),
/// then makes a second start into B the `--second` way (`CrashCapture.start` or
/// `CrashShieldSDK.start` with guards, capture and launch protection), prints "REJECTED <error>" or
/// "ACCEPTED", then "GUARDS-ACTIVE <n>" (registry guards installed), "LAUNCH-PROTECTION <yes|no>",
/// then crashes with SIGSEGV, so the report shows what the capture of this process was left with. The second start's report sink prints
/// "REJECTED-SINK-RECEIVED" for every report it is given (B holds one when the test puts it there).
enum RejectedStartProbeCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard let directory = option("--dir", in: arguments),
              let otherDirectory = option("--other-dir", in: arguments),
              let first = option("--first", in: arguments),
              let second = option("--second", in: arguments) else { return 2 }
        var options = CaptureOptions(directory: directory)
        options.appName = "first-start"
        do {
            switch first {
            case "capture": try CrashCapture.start(options, launchProtection: nil)
            case "start-capture":
                var shieldOptions = CrashShieldOptions()
                shieldOptions.capture = options
                shieldOptions.launchProtection = nil
                try CrashShieldSDK.start(shieldOptions)
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
        rejected.deliverSynchronously = true
        rejected.symbolicate = false
        rejected.reportSinks = [ClosureCrashReportSink { _ in print("REJECTED-SINK-RECEIVED") }]
        do {
            switch second {
            case "capture": try CrashCapture.start(rejected, launchProtection: LaunchProtectionOptions())
            case "start-capture":
                var shieldOptions = CrashShieldOptions()
                shieldOptions.capture = rejected
                shieldOptions.launchProtection = LaunchProtectionOptions()
                try CrashShieldSDK.start(shieldOptions)
            default: return 2
            }
            print("ACCEPTED")
        } catch {
            print("REJECTED \(error)")
        }
        let active = CrashShieldSDK.status.filter { $0.state == .active && $0.id != .swiftAccess && $0.id != .decoding }.count
        print("GUARDS-ACTIVE \(active)")
        print("LAUNCH-PROTECTION \(CrashCapture.launchProtection == nil && CrashShieldSDK.launchProtection == nil ? "no" : "yes")")
        fflush(nil)
        csc_crash_segv()
        return 1
    }
}

/// `shield-test-probe stop-probe --dir D [--capture-only] [--restart]`: installs a SIGSEGV handler of
/// its own (it prints "PREVIOUS-HANDLER-RAN"), starts capture into D (`CrashShieldSDK.start` with
/// the guards, or `CrashCapture.start` with `--capture-only`; launch protection off), stops it and
/// prints "ENABLED <bool> INSTALLED <bool>"; with `--restart` starts again and prints "RESTARTED".
/// Then crashes with SIGSEGV: after a stop no report is written and the own handler runs.
enum StopProbeCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard let directory = option("--dir", in: arguments) else { return 2 }
        let captureOnly = arguments.contains("--capture-only")
        csc_test_install_previous_handler()
        var options = CrashShieldOptions()
        options.capture = CaptureOptions(directory: directory)
        options.launchProtection = nil
        func start() throws {
            if captureOnly {
                try CrashCapture.start(CaptureOptions(directory: directory), launchProtection: nil)
            } else {
                try CrashShieldSDK.start(options)
            }
        }
        do {
            try start()
            if captureOnly { CrashCapture.stop() } else { CrashShieldSDK.stop() }
            let enabled = captureOnly ? CrashCapture.isEnabled : CrashShieldSDK.isEnabled
            print("ENABLED \(enabled) INSTALLED \(CrashCapture.isInstalled)")
            if arguments.contains("--restart") {
                try start()
                print("RESTARTED")
            }
        } catch {
            print("START-FAILED \(error)")
            return 1
        }
        fflush(nil)
        csc_crash_segv()
        return 1
    }
}
