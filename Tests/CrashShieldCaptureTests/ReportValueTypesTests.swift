import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// The report's named values are typed (extensible structs with the file's
/// string as `rawValue`). Known values decode to the constants, values this version does not know
/// decode and encode unchanged, and the file format is the same as with plain strings.
@Suite struct ReportValueTypesTests {
    /// A complete report in the file's format with the given named values (JSON string literals).
    static func report(kind: String = "signal", launchPhase: String = "running", trapInstruction: String = "ud2",
                       unwinder: String = "dwarf", symbolSource: String = "addr2line", guardState: String = "active",
                       guardPolicy: String = "neutralize") -> [UInt8] {
        func quoted(_ text: String) -> String {
            String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
        }
        let text = """
            {"schema":"crashshield.crash-report","version":1,"id":"report-1-2-0","kind":\(quoted(kind)),\
            "launch_id":"a","launch_phase":\(quoted(launchPhase)),\
            "crash":{"signal":4,"signal_name":"SIGILL","pc":"0x10","trap_instruction":\(quoted(trapInstruction))},\
            "crashed_thread":{"unwinder":\(quoted(unwinder)),"first_frame_is_pc":true,\
            "frames":[{"address":"0x10","image":"/bin/app","offset":"0x10","function":"main","symbol_source":\(quoted(symbolSource))}]},\
            "guards":[{"name":"container","state":\(quoted(guardState)),"policy":\(quoted(guardPolicy))}],\
            "complete":true}
            """
        return Array(text.utf8)
    }

    /// The named values of an encoded report, by key path, as the file holds them.
    static func namedValues(_ json: Data) throws -> [String: String?] {
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let crash = object["crash"] as? [String: Any]
        let thread = object["crashed_thread"] as? [String: Any]
        let frame = (thread?["frames"] as? [[String: Any]])?.first
        let guardState = (object["guards"] as? [[String: Any]])?.first
        return [
            "kind": object["kind"] as? String,
            "launch_phase": object["launch_phase"] as? String,
            "crash.trap_instruction": crash?["trap_instruction"] as? String,
            "crashed_thread.unwinder": thread?["unwinder"] as? String,
            "frames[0].symbol_source": frame?["symbol_source"] as? String,
            "guards[0].state": guardState?["state"] as? String,
            "guards[0].policy": guardState?["policy"] as? String,
        ]
    }

    @Test(arguments: [("signal", CrashReport.Kind.signal), ("objc_exception", .objcException)])
    func kindDecodes(raw: String, expected: CrashReport.Kind) throws {
        let report = try CrashReport.decode(Self.report(kind: raw))
        #expect(report.kind == expected)
        #expect(report.kind?.rawValue == raw)
    }

    @Test(arguments: [("launching", CrashReport.LaunchPhase.launching), ("running", .running),
                      ("terminating", .terminating), ("unknown", .unknown)])
    func launchPhaseDecodes(raw: String, expected: CrashReport.LaunchPhase) throws {
        #expect(try CrashReport.decode(Self.report(launchPhase: raw)).launchPhase == expected)
    }

    @Test(arguments: [("ud2", CrashReport.Crash.TrapInstruction.ud2), ("int3", .int3), ("brk", .brk)])
    func trapInstructionDecodes(raw: String, expected: CrashReport.Crash.TrapInstruction) throws {
        #expect(try CrashReport.decode(Self.report(trapInstruction: raw)).crash?.trapInstruction == expected)
    }

    @Test(arguments: [("dwarf", CrashReport.CrashedThread.Unwinder.dwarf), ("frame_pointer", .framePointer),
                      ("exception", .exception), ("partial", .partial), ("none", .notUnwound)])
    func unwinderDecodes(raw: String, expected: CrashReport.CrashedThread.Unwinder) throws {
        #expect(try CrashReport.decode(Self.report(unwinder: raw)).crashedThread?.unwinder == expected)
    }

    @Test(arguments: [("dladdr", CrashReport.Frame.SymbolSource.dladdr), ("llvm-symbolizer", .llvmSymbolizer),
                      ("addr2line", .addr2line)])
    func symbolSourceDecodes(raw: String, expected: CrashReport.Frame.SymbolSource) throws {
        #expect(try CrashReport.decode(Self.report(symbolSource: raw)).crashedThread?.frames?.first?.symbolSource == expected)
    }

    @Test(arguments: [("active", CrashReport.GuardState.State.active), ("canary_failed", .canaryFailed),
                      ("install_failed", .installFailed), ("not_installed", .notInstalled)])
    func guardStateDecodes(raw: String, expected: CrashReport.GuardState.State) throws {
        #expect(try CrashReport.decode(Self.report(guardState: raw)).guards?.first?.state == expected)
    }

    @Test(arguments: [("neutralize", CrashReport.GuardState.Policy.neutralize), ("reportOnly", .reportOnly),
                      ("off", .off)])
    func guardPolicyDecodes(raw: String, expected: CrashReport.GuardState.Policy) throws {
        #expect(try CrashReport.decode(Self.report(guardPolicy: raw)).guards?.first?.policy == expected)
    }

    /// Values a newer version might write (and odd strings) decode, keep their raw value, match
    /// no known constant, and are written back unchanged.
    @Test(arguments: ["future_value", "", "Ünïcode \u{2028} \"quoted\" / slash"])
    func unknownValuesDecodeAndRoundTrip(raw: String) throws {
        let input = Self.report(kind: raw, launchPhase: raw, trapInstruction: raw, unwinder: raw, symbolSource: raw,
                                guardState: raw, guardPolicy: raw)
        let report = try CrashReport.decode(input)
        #expect(report.kind == CrashReport.Kind(rawValue: raw))
        #expect(report.kind != .signal && report.kind != .objcException)
        #expect(report.launchPhase?.rawValue == raw)
        #expect(report.crash?.trapInstruction?.rawValue == raw)
        #expect(report.crashedThread?.unwinder?.rawValue == raw)
        #expect(report.crashedThread?.frames?.first?.symbolSource?.rawValue == raw)
        #expect(report.guards?.first?.state?.rawValue == raw)
        #expect(report.guards?.first?.policy?.rawValue == raw)
        // An unknown kind is not an Objective-C exception; the classification falls to the signal.
        #expect(report.classification == .trap)

        let encoded = report.jsonData()
        let values = try Self.namedValues(encoded)
        #expect(values.count == 7)
        for (key, value) in values { #expect(value == raw, "\(key)") }
        #expect(try CrashReport.decode(Array(encoded)) == report)
    }

    /// Known values survive encode then decode, and encode as the file's strings.
    @Test func knownValuesRoundTrip() throws {
        let input = Self.report(kind: "objc_exception", launchPhase: "launching", trapInstruction: "brk",
                                unwinder: "frame_pointer", symbolSource: "llvm-symbolizer", guardState: "canary_failed",
                                guardPolicy: "reportOnly")
        let report = try CrashReport.decode(input)
        let encoded = report.jsonData()
        #expect(try Self.namedValues(encoded) == Self.namedValues(Data(input)))
        #expect(try CrashReport.decode(Array(encoded)) == report)
    }

    /// The golden examples (written by the handler) keep their named values through decode and
    /// encode: the on-disk strings are the ones the types carry.
    @Test(arguments: ReportParserTests.examples)
    func goldenExampleValuesAreUnchanged(_ path: String) throws {
        let bytes = try ReportParserTests.bytes(path)
        let report = try CrashReport.decode(bytes)
        #expect(try Self.namedValues(report.jsonData()) == Self.namedValues(Data(bytes)))
    }

    /// A report encoded by `jsonData` carries its classification; one from a version that knows
    /// more kinds of failure still decodes (it was an invalid report while `Classification` was a
    /// closed enum), and the classification is decided anew from the report's content.
    @Test(arguments: ["stack_overflow", "watchdog_timeout"])
    func encodedClassificationDecodes(raw: String) throws {
        var text = String(decoding: Self.report(), as: UTF8.self)
        text = text.replacingOccurrences(of: #""complete":true"#, with: #""classification":"\#(raw)","complete":true"#)
        let report = try CrashReport.decode(Array(text.utf8))
        #expect(report.classification == .trap)
    }

    @Test(arguments: ["stack_overflow", "watchdog_timeout"])
    func classificationRoundTrips(raw: String) throws {
        #expect(CrashReport.Classification(rawValue: raw).rawValue == raw)
        let roundTripped = try JSONDecoder().decode([CrashReport.Classification].self, from: Data("[\"\(raw)\"]".utf8))
        #expect(roundTripped.first?.rawValue == raw)
        #expect(String(decoding: try JSONEncoder().encode(roundTripped), as: UTF8.self) == "[\"\(raw)\"]")
    }

    @Test func knownClassificationsKeepTheirRawValues() {
        let known: [(CrashReport.Classification, String)] = [
            (.swiftTrap, "swift_trap"), (.objcException, "objc_exception"), (.abort, "abort"), (.trap, "trap"),
            (.stackOverflow, "stack_overflow"), (.badAccess, "bad_access"), (.arithmetic, "arithmetic"),
            (.brokenPipe, "broken_pipe"), (.badSystemCall, "bad_system_call"), (.unknown, "unknown"),
        ]
        for (value, raw) in known { #expect(value.rawValue == raw) }
    }

    /// A value of the wrong JSON type is still an invalid report, as it was for a string field.
    @Test func aNonStringValueIsInvalid() throws {
        var text = String(decoding: Self.report(), as: UTF8.self)
        text = text.replacingOccurrences(of: #""unwinder":"dwarf""#, with: #""unwinder":7"#)
        do {
            _ = try CrashReport.decode(Array(text.utf8))
            Issue.record("a number as the unwinder decoded")
        } catch let error as CrashReportError where error.code == .invalid {
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    /// `CrashCapture.setGuardStates` (JSONEncoder) writes the same "guards" array as the
    /// CrashShield module's hand-written publisher, from the typed values.
    @Test func guardStatesEncodeAsTheirRawValues() throws {
        let states = [CrashReport.GuardState(name: "kvo", state: .installFailed, policy: .off),
                      CrashReport.GuardState(name: "x", state: .init(rawValue: "later"), policy: .init(rawValue: "new"))]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(states), as: UTF8.self)
        #expect(text == #"[{"name":"kvo","policy":"off","state":"install_failed"},{"name":"x","policy":"new","state":"later"}]"#)
    }

    /// The constants work as `switch` cases; unknown values take the `default`.
    @Test func valuesSwitchOverTheConstants() throws {
        func describe(_ phase: CrashReport.LaunchPhase?) -> String {
            switch phase {
            case .launching?: return "launch crash"
            case .running?, .terminating?: return "after launch"
            case .unknown?, nil: return "not known"
            default: return "newer value"
            }
        }
        #expect(describe(try CrashReport.decode(Self.report(launchPhase: "launching")).launchPhase) == "launch crash")
        #expect(describe(try CrashReport.decode(Self.report(launchPhase: "terminating")).launchPhase) == "after launch")
        #expect(describe(try CrashReport.decode(Self.report(launchPhase: "suspended")).launchPhase) == "newer value")
        #expect("\(CrashReport.CrashedThread.Unwinder.notUnwound)" == "none", "description is the raw value")
    }
}

/// `LastRun.detection` and the launch phase a report names, as launch protection reads them.
@Suite struct LastRunDetectionTests {
    @Test func timerWithoutCaptureReportWithCapture() throws {
        let directory = temporaryDirectory("detection")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let timer = LaunchProtection.begin(directory: directory, captureEnabled: false)
        #expect(timer.lastRun.detection == .timer)
        #expect(timer.lastRun.detection.rawValue == "timer")
        timer.launchCompleted()
        timer.markExited()
        LaunchProtection.forgetLaunchForTesting(directory: directory)
        let report = LaunchProtection.begin(directory: directory, captureEnabled: true, reports: [])
        #expect(report.lastRun.outcome == .cleanExit)
        #expect(report.lastRun.detection == .report)
        #expect(report.lastRun.detection.rawValue == "report")
        report.launchCompleted()
    }

    /// A report of the previous launch decides the outcome by its typed launch phase: `launching`
    /// is a launch crash; a phase this version does not know is a crash, not a launch crash.
    @Test(arguments: [("launching", true), ("running", false), ("suspended", false)])
    func reportPhaseDecidesALaunchCrash(phase: String, duringLaunch: Bool) throws {
        let directory = temporaryDirectory("detection-phase")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var state = LaunchProtection.State()
        state.launchId = "a"
        state.phase = "launching"
        LaunchProtection.writeState(state, to: "\(directory)/launch-state")
        let crashed = try CrashReport.decode(ReportValueTypesTests.report(launchPhase: phase))
        #expect(crashed.launchPhase == CrashReport.LaunchPhase(rawValue: phase))
        var options = LaunchProtectionOptions()
        options.launchWindow = .seconds(60)
        let protection = LaunchProtection.begin(directory: directory, options: options, captureEnabled: true,
                                                reports: [crashed])
        #expect(protection.lastRun.outcome == .crashed)
        #expect(protection.lastRun.crashedDuringLaunch == duringLaunch)
        #expect(protection.lastRun.detection == .report)
        #expect(protection.lastRun.report?.raw.launchPhase == crashed.launchPhase)
        protection.launchCompleted()
    }
}
