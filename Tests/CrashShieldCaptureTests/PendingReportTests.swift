import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry
import _CrashShieldCapture
import _CrashShieldLaunch

/// The start after a crash decides `lastRun` from a C scan of the report's launch fields and
/// decodes the report only when it is read; the scan agrees with the decoder.
@Suite struct PendingReportTests {
    static func example(_ name: String) throws -> [UInt8] {
        [UInt8](try #require(FileManager.default.contents(atPath: "\(schemaDirectory)/examples/\(name)")))
    }

    /// The example report with its launch fields replaced.
    static func report(launchID: String, phase: String) throws -> [UInt8] {
        var text = String(decoding: try example("signal-segv.json"), as: UTF8.self)
        text = text.replacingOccurrences(of: #""launch_id":"[^"]*""#, with: "\"launch_id\":\"\(launchID)\"", options: .regularExpression)
        text = text.replacingOccurrences(of: #""launch_phase":"[^"]*""#, with: "\"launch_phase\":\"\(phase)\"", options: .regularExpression)
        return Array(text.utf8)
    }

    struct Fields: Equatable, CustomStringConvertible {
        var launchId: String?
        var launchPhase: String?
        var recovered: Bool
        var description: String { "(\(launchId ?? "nil"), \(launchPhase ?? "nil"), \(recovered))" }
    }

    static func scan(_ bytes: [UInt8]) -> (fields: Fields?, needsFullDecode: Bool) {
        var raw = csc_report_launch_fields()
        bytes.withUnsafeBufferPointer { csc_report_scan_launch_fields($0.baseAddress, $0.count, &raw) }
        func text<T>(_ tuple: T) -> String { withUnsafeBytes(of: tuple) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) } }
        guard raw.is_report else { return (nil, raw.needs_full_decode) }
        let fields = Fields(launchId: raw.has_launch_id ? text(raw.launch_id) : nil,
                            launchPhase: raw.has_launch_phase ? text(raw.launch_phase) : nil, recovered: raw.recovered)
        return (fields, raw.needs_full_decode)
    }

    /// Byte offset of the "crashed_thread" key (0 when there is none).
    static func offsetOfCrashedThread(_ bytes: [UInt8]) -> Int {
        let key = Array("\"crashed_thread\"".utf8)
        return (0..<max(0, bytes.count - key.count)).first { Array(bytes[$0..<($0 + key.count)]) == key } ?? 0
    }

    /// crashed_thread.guard_frames as the scan reads it, and whether crashed_thread has frames.
    static func scanGuardFrames(_ bytes: [UInt8]) -> (status: csc_guard_frames_status, names: [String], hasCrashedFrames: Bool) {
        var raw = csc_report_launch_fields()
        bytes.withUnsafeBufferPointer { csc_report_scan_launch_fields($0.baseAddress, $0.count, &raw) }
        let text = withUnsafeBytes(of: raw.guard_frames) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        return (raw.guard_frames_status, text.split(separator: ",").map(String.init), raw.has_crashed_frames)
    }

    /// What the guard fail-safe takes from the scan agrees with the decoded report: names read
    /// are the decoder's guardFrames; "absent, no frames" means the decoder has neither (so
    /// mapping frames finds nothing either). Returns 1 when guard_frames was read.
    static func checkGuardFramesAgreement(_ bytes: [UInt8], _ decoded: CrashReport, _ label: String) -> Int {
        let scanned = scanGuardFrames(bytes)
        switch scanned.status {
        case CSC_GUARD_FRAMES_READ:
            #expect(decoded.crashedThread?.guardFrames == scanned.names, "\(label)")
            return 1
        case CSC_GUARD_FRAMES_ABSENT where !scanned.hasCrashedFrames:
            #expect(decoded.crashedThread?.guardFrames == nil, "\(label)")
            let frameCount = decoded.crashedThread?.frames?.count ?? 0
            #expect(frameCount == 0, "\(label)")
        default: break // the start decodes this report
        }
        return 0
    }

    /// For every input the scan reads the decoder's launch fields, or says it cannot (then the
    /// start decodes that report). A decoder failure where the scan found a report is a wrong
    /// type in a field the scan does not read (`.invalid`), never a parse difference. The same
    /// for crashed_thread.guard_frames (`guardFramesRead` counts the inputs where it was read).
    static func checkAgreement(_ bytes: [UInt8], _ label: String, guardFramesRead: UnsafeMutablePointer<Int>? = nil)
        -> (compared: Int, deferred: Int, typeOnly: Int)
    {
        let (fields, needsFullDecode) = scan(bytes)
        if needsFullDecode { return (0, 1, 0) }
        let decoded: CrashReport?
        var invalid = false
        do { decoded = try CrashReport.decode(bytes) } catch let error as CrashReportError {
            decoded = nil
            if error.code == .invalid { invalid = true }
        } catch { decoded = nil }
        if let decoded {
            let expected = Fields(launchId: decoded.launchId, launchPhase: decoded.launchPhase?.rawValue, recovered: decoded.crash?.recovered == true)
            #expect(fields == expected, "\(label): \(String(decoding: bytes.prefix(400), as: UTF8.self))")
            let read = checkGuardFramesAgreement(bytes, decoded, label)
            guardFramesRead?.pointee += read
            return (1, 0, 0)
        }
        if fields != nil {
            #expect(invalid, "\(label): the scan found a report the decoder cannot parse")
            return (0, 0, 1)
        }
        return (1, 0, 0)
    }

    /// Every example cut at every byte of its first 520 (the launch fields and the crash object)
    /// and at every 97th byte after that.
    @Test func scanAgreesWithTheDecoderOnEveryTruncation() throws {
        var compared = 0, deferred = 0, guardFramesRead = 0
        for path in ReportParserTests.examples {
            let full = try ReportParserTests.bytes(path)
            // Every byte around crashed_thread's guard_frames too.
            let guardKey = Self.offsetOfCrashedThread(full)
            let lengths = Array(0..<min(520, full.count)) + Array(stride(from: 520, through: full.count, by: 97)) + [full.count]
                + Array(max(0, guardKey - 10)..<min(full.count, guardKey + 160))
            for length in lengths {
                let result = Self.checkAgreement(Array(full[0..<length]), "\((path as NSString).lastPathComponent) cut at \(length)",
                                                 guardFramesRead: &guardFramesRead)
                compared += result.compared
                deferred += result.deferred
            }
        }
        #expect(compared > 1000)
        #expect(deferred == 0, "the SDK's own reports never need the full decode at start")
        #expect(guardFramesRead > 100, "the examples' guard_frames are read by the scan")
    }

    /// Seeded fuzzing around the launch fields: byte edits, insertions of JSON tokens, escapes,
    /// duplicated keys, nulls and wrong types.
    @Test func scanAgreesWithTheDecoderOnFuzzedReports() throws {
        var generator = SplitMix64(seed: 0x1a_0c4_5ca7)
        let corpus = try ReportParserTests.examples.map { try ReportParserTests.bytes($0) }
        let splices = [",\"launch_id\":null", ",\"launch_id\":\"dup\"", ",\"launch_phase\":7", "\\u0041", ",\"crash\":{\"recovered\":true}",
                       ",\"recovered\":1", "\"id\":3,", "1e999", "\u{e9}", ",\"LAUNCH_PHASE\":\"x\"", ",\"launchId\":\"y\"", ",\"launch__id\":\"z\"",
                       ",\"_launch_id\":\"w\"", ",\"Launch_Phase_\":\"v\"", "[", "}", "\"", ",", ":", "\\",
                       ",\"guard_frames\":[\"kvo\"]", ",\"guard_frames\":[\"a\\u0062\"]", ",\"crashed_thread\":{\"guard_frames\":[\"x\"]}",
                       ",\"GUARD_FRAMES\":[\"y\"]", "\"guard_frames\":7,", ",\"frames\":[]", "\"guard_frames\":[[\"z\"]],"]
        var compared = 0, deferred = 0, guardFramesRead = 0
        let crashedThreadOffsets = corpus.map(Self.offsetOfCrashedThread)
        for round in 0..<4000 {
            var bytes = corpus[round % corpus.count]
            for _ in 0..<Int(generator.next() % 4) {
                guard !bytes.isEmpty else { break }
                // Edits land near the launch fields and the crash object, or near crashed_thread,
                // most of the time.
                let window = min(bytes.count, 700)
                var at = Int(generator.next() % UInt64(window))
                if round % 2 == 1 { at = min(bytes.count - 1, crashedThreadOffsets[round % corpus.count] + at / 4) }
                switch generator.next() % 4 {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: generator.next())
                case 1: bytes.remove(at: at)
                case 2: bytes.insert(contentsOf: Array(splices[Int(generator.next() % UInt64(splices.count))].utf8), at: at)
                default: bytes = Array(bytes[0..<(at + Int(generator.next() % UInt64(bytes.count - at)))])
                }
            }
            let result = Self.checkAgreement(bytes, "round \(round)", guardFramesRead: &guardFramesRead)
            compared += result.compared
            deferred += result.deferred
        }
        #expect(compared > 1000)
        #expect(deferred > 0, "the corpus reaches the cases left to the decoder")
        #expect(guardFramesRead > 100)
    }

    /// Keys as the decoder's snake-case conversion matches them, escapes, nulls, duplicates and
    /// wrong types: the scan agrees or leaves the report to the decoder.
    @Test func scanFollowsTheDecodersKeyRules() {
        let cases = [
            #"{"id":"r","LAUNCH_PHASE":"launching","launch_id":"a"}"#,
            #"{"id":"r","launchId":"a","launch__phase":"running"}"#,
            #"{"id":"r","_launch_id":"a","launch_phase_":"x","Launch_Id":"b"}"#,
            #"{"id":"r","launch_id":null,"crash":{"RECOVERED":true}}"#,
            #"{"id":"r","launch_id":"a","launch_id":"b"}"#,
            #"{"id":"r","launch_\u0069d":"a"}"#,
            #"{"id":"r","launch_id":"\u0061"}"#,
            #"{"id":"r","launch_phase":7}"#,
            #"{"id":"r","crash":[true]}"#,
            #"{"id":"r","crash":{"recovered":"yes"}}"#,
            #"{"id":7}"#,
            #"{"launch_id":"a"}"#,
            #"["id"]"#,
            #"{"id":"r","crash":{"signal":11,"recovered":true,"sig"#,
            #"{"id":"r","launch_id":"a","launch_phase":"launching"} trailing"#,
        ]
        for text in cases { _ = Self.checkAgreement(Array(text.utf8), text) }
        #expect(Self.scan(Array(cases[0].utf8)).fields == Fields(launchId: "a", launchPhase: "launching", recovered: false))
        #expect(Self.scan(Array(cases[1].utf8)).fields == Fields(launchId: "a", launchPhase: "running", recovered: false))
        #expect(Self.scan(Array(cases[13].utf8)).fields == Fields(launchId: nil, launchPhase: nil, recovered: true))
        #expect(Self.scan(Array(cases[5].utf8)).needsFullDecode)
    }

    /// crashed_thread.guard_frames: read when it is a complete array of plain names in the first
    /// crashed_thread; anything the decoder might read differently is left to it.
    @Test func scanReadsGuardFramesOrLeavesThemToTheDecoder() {
        let read = CSC_GUARD_FRAMES_READ, unreadable = CSC_GUARD_FRAMES_UNREADABLE, absent = CSC_GUARD_FRAMES_ABSENT
        let cases: [(String, csc_guard_frames_status, [String], Bool)] = [
            (#"{"id":"r","crashed_thread":{"guard_frames":["container","kvo"],"frames":[{}]}}"#, read, ["container", "kvo"], true),
            (#"{"id":"r","crashed_thread":{"guard_frames":[],"frames":[{"address":"0x1"}]}}"#, read, [], true),
            (#"{"id":"r","crashed_thread":{"GUARD__FRAMES":["kvo"]}}"#, read, ["kvo"], false),
            (#"{"id":"r","crashed_thread":{"frames":[{"address":"0x1"}]}}"#, absent, [], true),
            (#"{"id":"r","crash":{"guard_frames":["kvo"]}}"#, absent, [], false),
            (#"{"id":"r","guard_frames":["kvo"]}"#, absent, [], false),
            (#"{"id":"r","crashed_thread":{"guard_frames":["a\u0062"]}}"#, unreadable, [], false),
            (#"{"id":"r","crashed_thread":{"guard_fr\u0061mes":["kvo"]}}"#, unreadable, [], false),
            (#"{"id":"r","crashed_thread":{"guard_frames":["kvo"],"guard_frames":[]}}"#, unreadable, [], false),
            (#"{"id":"r","crashed_thread":{"guard_frames":["kvo"]},"crashed_thread":{}}"#, unreadable, [], false),
            (#"{"id":"r","crashed_thread":{"guard_frames":"kvo"}}"#, unreadable, [], false),
            (#"{"id":"r","crashed_thread":{"guard_frames":null}}"#, unreadable, [], false),
            (#"{"id":"r","crashed_thread":{"guard_frames":[["kvo"]]}}"#, unreadable, [], false),
            (#"{"id":"r","crashed_thread":{"guard_frames":["Kvo"]}}"#, unreadable, [], false),
            (#"{"id":"r","crashed_thread":{"guard_frames":["kvo","st"#, unreadable, [], false),
            (#"{"id":"r","crashed_thread":{"guard_frames":["kvo"],"fr"#, read, ["kvo"], false),
        ]
        for (text, status, names, hasFrames) in cases {
            let scanned = Self.scanGuardFrames(Array(text.utf8))
            #expect(scanned.status == status, "\(text)")
            #expect(scanned.names == names, "\(text)")
            #expect(scanned.hasCrashedFrames == hasFrames, "\(text)")
            _ = Self.checkAgreement(Array(text.utf8), text)
        }
    }

    /// In-process start after a crash during launch: the outcome comes from the scan, the report
    /// is decoded only when read (then equal to a full decode), and still readable after a sink
    /// deleted its file.
    @Test func startAfterACrashDecodesTheReportOnlyWhenRead() throws {
        let directory = temporaryDirectory("lazy-report")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var state = LaunchProtection.State()
        state.launchId = "previous-launch"
        state.phase = "launching"
        state.consecutiveLaunchCrashes = 1
        LaunchProtection.writeState(state, to: "\(directory)/launch-state")
        let bytes = try Self.report(launchID: "previous-launch", phase: "launching")
        let path = "\(directory)/report-1-1-0.json"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))

        var options = LaunchProtectionOptions()
        options.launchWindow = .seconds(60)
        let protection = LaunchProtection.begin(directory: directory, options: options, captureEnabled: true)
        defer { protection.launchCompleted() }
        #expect(protection.lastRun.outcome == .crashed)
        #expect(protection.lastRun.crashedDuringLaunch)
        #expect(protection.consecutiveLaunchCrashes == 2)
        let source = try #require(protection.lastRun.reportSource)
        #expect(!source.isDecoded, "the start decoded no report")

        try FileManager.default.removeItem(atPath: path) // a sink accepted it meanwhile
        var expected = try CrashReport.decode(bytes)
        expected.file = path
        #expect(protection.lastRun.report?.raw == expected)
        #expect(source.isDecoded)
    }

    /// The other cases the scan decides: a report of another launch or of a recovered thread is
    /// not how the last run ended; a crash after launch resets the count.
    @Test func scannedReportsDecideLikeDecodedOnes() throws {
        for (launchID, phase, recovered, outcome, duringLaunch) in [
            ("previous-launch", "running", false, LastRun.Outcome.crashed, false),
            ("other-launch", "launching", false, .endedWithoutReport, false),
            ("previous-launch", "launching", true, .endedWithoutReport, false),
        ] {
            let directory = temporaryDirectory("scan-decides")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var state = LaunchProtection.State()
            state.launchId = "previous-launch"
            state.phase = "launching"
            state.consecutiveLaunchCrashes = 2
            LaunchProtection.writeState(state, to: "\(directory)/launch-state")
            var bytes = try Self.report(launchID: launchID, phase: phase)
            if recovered {
                bytes = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\"crash\":{", with: "\"crash\":{\"recovered\":true,").utf8)
            }
            #expect(FileManager.default.createFile(atPath: "\(directory)/report-1-1-0.json", contents: Data(bytes)))
            var options = LaunchProtectionOptions()
            options.launchWindow = .seconds(60)
            let protection = LaunchProtection.begin(directory: directory, options: options, captureEnabled: true)
            #expect(protection.lastRun.outcome == outcome, "\(launchID) \(phase) \(recovered)")
            #expect(protection.lastRun.crashedDuringLaunch == duringLaunch)
            #expect(protection.consecutiveLaunchCrashes == (outcome == .crashed ? 0 : 2))
            protection.launchCompleted()
        }
    }

    /// A report file named `name` with modification time `modified` (seconds since 1970).
    static func writeReport(_ bytes: [UInt8], named name: String, in directory: String, modified: Int) {
        let path = "\(directory)/\(name)"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        var times = [timeval(tv_sec: modified, tv_usec: 0), timeval(tv_sec: modified, tv_usec: 0)]
        #expect(utimes(path, &times) == 0)
    }

    static func reportNames(in directory: String) -> Set<String> {
        Set(((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("report-") })
    }

    static func droppedCount(in directory: String) -> String? {
        FileManager.default.contents(atPath: "\(directory)/dropped-reports")
            .map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    static func begin(_ directory: String, captureEnabled: Bool = true) -> LaunchProtection {
        var options = LaunchProtectionOptions()
        options.launchWindow = .seconds(60)
        let protection = LaunchProtection.begin(directory: directory, options: options, captureEnabled: captureEnabled)
        protection.launchCompleted()
        LaunchProtection.forgetLaunchForTesting(directory: directory)
        return protection
    }

    /// Reports an app never delivers pile up; each start keeps the newest 30 (by modification
    /// time, not by name), deletes the older ones unread and adds their number to
    /// "dropped-reports". The previous run's crash is still found.
    @Test func startKeepsTheNewest30ReportsAndCountsTheDropped() throws {
        let directory = temporaryDirectory("pending-cap")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var state = LaunchProtection.State()
        state.launchId = "previous-launch"
        state.phase = "launching"
        LaunchProtection.writeState(state, to: "\(directory)/launch-state")
        let now = time(nil)
        // Names sort against time: the newest has the smallest pid.
        func name(_ index: Int) -> String { "report-\(1000 - index)-1-0.json" }
        for index in 0..<45 {
            let bytes = try Self.report(launchID: index == 44 ? "previous-launch" : "launch-\(index)", phase: "launching")
            Self.writeReport(bytes, named: name(index), in: directory, modified: now - 3600 + index)
        }
        let protection = Self.begin(directory)
        #expect(protection.lastRun.outcome == .crashed)
        #expect(protection.lastRun.crashedDuringLaunch)
        #expect(Self.reportNames(in: directory) == Set((15..<45).map(name)))
        #expect(Self.droppedCount(in: directory) == "15")

        // The next start: 5 more, the oldest 5 go; the count adds up.
        for index in 45..<50 {
            Self.writeReport(try Self.report(launchID: "launch-\(index)", phase: "running"), named: name(index), in: directory,
                             modified: now - 3600 + index)
        }
        _ = Self.begin(directory)
        #expect(Self.reportNames(in: directory) == Set((20..<50).map(name)))
        #expect(Self.droppedCount(in: directory) == "20")
    }

    /// Reports older than 30 days are deleted at start, except the newest (the previous run may
    /// have crashed 60 days ago: its report still decides `lastRun`).
    @Test func startAgesOutReportsOlderThan30DaysButTheNewest() throws {
        let directory = temporaryDirectory("pending-age")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var state = LaunchProtection.State()
        state.launchId = "previous-launch"
        state.phase = "launching"
        LaunchProtection.writeState(state, to: "\(directory)/launch-state")
        let now = time(nil)
        let day = 24 * 3600
        for index in 0..<3 {
            Self.writeReport(try Self.report(launchID: "old-\(index)", phase: "running"), named: "report-9\(index)-1-0.json",
                             in: directory, modified: now - 90 * day + index)
        }
        Self.writeReport(try Self.report(launchID: "previous-launch", phase: "running"), named: "report-1-1-0.json",
                         in: directory, modified: now - 60 * day)
        var protection = Self.begin(directory)
        #expect(protection.lastRun.outcome == .crashed, "the newest report is kept however old")
        #expect(Self.reportNames(in: directory) == ["report-1-1-0.json"])
        #expect(Self.droppedCount(in: directory) == "3")

        // A fresh report next to one of 31 days: the old one goes.
        Self.writeReport(try Self.report(launchID: protection.launchID, phase: "running"), named: "report-2-1-0.json",
                         in: directory, modified: now)
        protection = Self.begin(directory)
        #expect(protection.lastRun.outcome == .crashed)
        #expect(Self.reportNames(in: directory) == ["report-2-1-0.json"])
        #expect(Self.droppedCount(in: directory) == "4")
    }

    /// `shield reports` symbolicates all reports with one tool run per image (was: one per report
    /// per image, ~0.2 s each). A stand-in llvm-symbolizer logs its runs.
    @Test func listingRunsTheSymbolizerOncePerImage() throws {
        let directory = temporaryDirectory("listing")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tools = "\(directory)/tools"
        try FileManager.default.createDirectory(atPath: tools, withIntermediateDirectories: true)
        let log = "\(directory)/runs.log"
        let script = """
            #!/bin/sh
            echo run >> "\(log)"
            for argument in "$@"; do
              case "$argument" in 0x*) printf 'stand_in_%s\\n??:0:0\\n\\n' "$argument" ;; esac
            done
            """
        #expect(FileManager.default.createFile(atPath: "\(tools)/llvm-symbolizer", contents: Data(script.utf8),
                                               attributes: [.posixPermissions: 0o755]))
        let image = Built.shield
        for index in 0..<5 {
            let text = #"{"id":"listing-\#(index)","crashed_thread":{"first_frame_is_pc":true,"frames":["#
                + #"{"address":"0x\#(String(0x1000 + index, radix: 16))","image":"\#(image)","offset":"0x\#(String(0x1000 + index, radix: 16))"}"#
                + #"]},"complete":true}"#
            Self.writeReport(Array(text.utf8), named: "report-\(index)-1-0.json", in: directory, modified: time(nil) - 10 + index)
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let result = try Child(Built.shield, ["reports", "--dir", directory], environment: ["PATH": "\(tools):\(path)"]).wait()
        #expect(result.termination == .exited(0))
        for index in 0..<5 {
            #expect(result.output.contains("stand_in_0x\(String(0x1000 + index, radix: 16))"), "\(result.output)")
        }
        let runs = (FileManager.default.contents(atPath: log).map { String(decoding: $0, as: UTF8.self) } ?? "")
            .split(separator: "\n").count
        #expect(runs == 1, "tool runs for 5 reports in one image")
    }

    /// Launch protection reads pending reports only when they can tell how the last run ended:
    /// not with the timer method (capture off), not after a clean exit (main read every report at
    /// each such start). A read shows in a file's access time, set here before its modification
    /// time so that relatime updates it; where reads leave access times alone, that check is skipped.
    @Test func launchProtectionReadsNoReportWhenNoneCanTell() throws {
        for (phase, captureEnabled, outcome) in [("launching", false, LastRun.Outcome.crashed), ("exited", true, .cleanExit)] {
            let directory = temporaryDirectory("reads-none")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var state = LaunchProtection.State()
            state.launchId = "previous-launch"
            state.phase = phase
            LaunchProtection.writeState(state, to: "\(directory)/launch-state")
            let accessed = time(nil) - 7200
            func stale(_ name: String, _ bytes: [UInt8]) -> String {
                let path = "\(directory)/\(name)"
                #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
                var times = [timeval(tv_sec: accessed, tv_usec: 0), timeval(tv_sec: accessed + 3600, tv_usec: 0)]
                #expect(utimes(path, &times) == 0)
                return path
            }
            func accessTime(_ path: String) -> Int {
                var info = stat()
                return stat(path, &info) == 0 ? info.st_atim.tv_sec : -1
            }
            let control = stale("control", [UInt8]("{}".utf8))
            _ = FileManager.default.contents(atPath: control)
            let recordsReads = accessTime(control) != accessed
            let reports = try (0..<3).map { stale("report-\($0)-1-0.json", try Self.report(launchID: "previous-launch", phase: "launching")) }

            let protection = Self.begin(directory, captureEnabled: captureEnabled)
            #expect(protection.lastRun.outcome == outcome, "\(phase)")
            if recordsReads {
                for path in reports { #expect(accessTime(path) == accessed, "\(phase) capture \(captureEnabled): \(path) was read") }
            }
            #expect(Self.reportNames(in: directory).count == 3)
        }
    }

    /// Oracle for the one-pass symbolication: several reports symbolicated together come out as
    /// each one alone (frames in libc, loaded here, with offsets shared and not; one report
    /// whose recorded build id differs from the file's, so the tools skip only that report).
    @Test func symbolicatingReportsTogetherEqualsOneByOne() throws {
        let maps = String(decoding: try #require(FileHandle(forReadingAtPath: "/proc/self/maps")).readDataToEndOfFile(), as: UTF8.self)
        // libc's path and load bias (its first mapping maps file offset 0 at virtual address 0).
        let (libc, bias) = try #require(maps.split(separator: "\n").compactMap { line -> (String, UInt64)? in
            guard let slash = line.firstIndex(of: "/") else { return nil }
            let path = String(line[slash...])
            guard (path as NSString).lastPathComponent.hasPrefix("libc.so"),
                  let start = UInt64(line.prefix { $0 != "-" }, radix: 16) else { return nil }
            return (path, start)
        }.first)
        let functions = try ["strlen", "qsort", "getpid", "abort", "memchr"].map { (name: String) in
            UInt64(UInt(bitPattern: try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), name)))) - bias + 16  // inside the function, also as a return address
        }
        func report(_ id: String, _ offsets: [UInt64], buildID: String? = nil) -> CrashReport {
            var report = CrashReport(id: id)
            report.crash = CrashReport.Crash(signal: SIGSEGV)
            var thread = CrashReport.CrashedThread()
            thread.firstFrameIsPc = true
            thread.frames = offsets.map { CrashReport.Frame(address: "0x\(String($0, radix: 16))", image: libc, offset: "0x\(String($0, radix: 16))") }
            report.crashedThread = thread
            if let buildID { report.images = [CrashReport.Image(path: libc, buildId: buildID)] }
            return report
        }
        let reports = [report("a", [functions[0], functions[1], functions[2]]), report("b", [functions[1], functions[3]]),
                       report("c", [functions[0], functions[4]], buildID: "00112233445566778899aabbccddeeff00112233"),
                       report("d", [])]
        var together = reports
        Symbolicator.symbolicate(&together)
        for (index, single) in reports.enumerated() {
            var alone = single
            Symbolicator.symbolicate(&alone)
            #expect(together[index] == alone, "report \(single.id)")
        }
        #expect(together.contains { $0.crashedThread?.frames?.contains { $0.function != nil } == true }, "some frame is named")
    }

    /// C++ names in frames are demangled like Swift names (`__cxa_demangle`); other names and
    /// what the runtime cannot demangle stay as they are.
    @Test func symbolicationDemanglesCxxNames() {
        var report = CrashReport(id: "cxx")
        var thread = CrashReport.CrashedThread()
        thread.frames = ["_ZNSt6vectorIiSaIiEE9push_backERKi", "__ZN5shape4areaEv", "_Z3foov", "main", "_Zbroken", "$sSi"].map {
            CrashReport.Frame(address: "0x1", function: $0)
        }
        report.crashedThread = thread
        Symbolicator.symbolicate(&report, externalTools: false)
        #expect(report.crashedThread?.frames?.map(\.function) == [
            "std::vector<int, std::allocator<int> >::push_back(int const&)", "shape::area()", "foo()", "main", "_Zbroken",
            "Swift.Int",
        ])
    }
}
