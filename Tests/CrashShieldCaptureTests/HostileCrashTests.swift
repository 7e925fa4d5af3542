import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry
import _CrashShieldCapture

/// Crashes that corrupt the stack or jump to non-code, non-ASCII and long paths, a
/// signal sent by another process, and hostile limits (file size, descriptor table, an
/// unwritable directory). Each crash runs in a child process (`shield crash <kind>`).
@Suite struct HostileCrashTests {
    /// glibc with `_dl_find_object`: the handler uses the DWARF unwinder (checked the same way
    /// at install), so a corrupt stack makes that walk fault.
    static let dwarfUnwinderInUse = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "_dl_find_object") != nil

    /// The raw JSON object of the only report in `directory`, and its keys checked against the
    /// schema (top level and one level down, as the golden-example test does).
    func rawReport(_ directory: String) throws -> [String: Any] {
        let files = CrashReportStore(directory: directory).reportFiles()
        try #require(files.count == 1, "expected one report file, found \(files)")
        let data = try #require(FileManager.default.contents(atPath: files[0]))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let schemaData = try #require(FileManager.default.contents(atPath: schemaDirectory + "/crash-report.schema.json"))
        let schema = try #require(try JSONSerialization.jsonObject(with: schemaData) as? [String: Any])
        let properties = try #require(schema["properties"] as? [String: Any])
        for (key, value) in object {
            let declared = try #require(properties[key] as? [String: Any], "undeclared key \(key)")
            if let nestedObject = value as? [String: Any], let nested = declared["properties"] as? [String: Any] {
                for nestedKey in nestedObject.keys { #expect(nested[nestedKey] != nil, "undeclared key \(key).\(nestedKey)") }
            }
        }
        return object
    }

    struct CorruptStack: Sendable, CustomTestStringConvertible {
        let kind: String
        let signal: Int32
        let function: String
        var testDescription: String { kind }
    }

    /// The unwinder never turns the crash into a second crash. A return through an
    /// overwritten return address, a clobbered saved frame pointer and a stack smash caught by
    /// the stack protector make libgcc's walk read unmapped memory; a call to an unmapped page
    /// gives it a PC without unwind tables. Each leaves a complete, non-minimal report with
    /// registers, images and the function that crashed, and the process dies of its signal.
    @Test(arguments: [
        CorruptStack(kind: "return-overwritten", signal: SIGSEGV, function: "csc_crash_return_overwritten"),
        CorruptStack(kind: "frame-pointer-clobbered", signal: SIGSEGV, function: "csc_crash_frame_pointer_clobbered"),
        CorruptStack(kind: "stack-smash", signal: SIGABRT, function: "CrashKinds.stackSmash"),
        CorruptStack(kind: "bad-function-pointer", signal: SIGSEGV, function: "csc_crash_bad_function_pointer"),
    ])
    func corruptStackStillGivesAFullReport(_ crash: CorruptStack) throws {
        let directory = temporaryDirectory(crash.kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", crash.kind, "--dir", directory])
        #expect(result.termination == .signaled(crash.signal))
        let raw = try rawReport(directory)
        let report = try #require(loadReports(directory).first)
        #expect(report.minimal == nil)
        #expect(report.handlerCrash == nil)
        #expect(report.isComplete)
        #expect(report.crash?.signal == crash.signal)
        #expect(report.registers?["rip"] != nil || report.registers?["pc"] != nil)
        #expect((report.images ?? []).count > 3)
        let functions = (report.crashedThread?.frames ?? []).compactMap(\.function)
        #expect(functions.contains { $0.contains(crash.function) }, "frames: \(functions)")
        let thread = try #require(raw["crashed_thread"] as? [String: Any])
        if crash.kind == "bad-function-pointer" {
            // The instruction at the PC could not be fetched: DWARF is not even tried.
            #expect(thread["pc_is_code"] as? Bool == false)
            #expect(thread["dwarf_fault"] == nil)
            #expect(report.crashedThread?.unwinder == .framePointer)
        } else if Self.dwarfUnwinderInUse {
            #expect(thread["dwarf_fault"] as? Bool == true)
        }
        if crash.kind == "stack-smash" {
            // The frames DWARF gathered before it met the smashed return address are kept.
            #expect(functions.contains("__stack_chk_fail"), "frames: \(functions)")
            #expect(report.crashedThread?.unwinder == .dwarf)
        }
    }

    /// A call through NULL, through a pointer to an unmapped page, or into a buffer on the
    /// non-executable stack: frame 0 is the bad PC, frame 1 the function that made the call (from
    /// the stack pointer / link register), then its callers.
    @Test(arguments: [("null-call", "csc_crash_null_call"), ("bad-function-pointer", "csc_crash_bad_function_pointer"),
                      ("jump-to-stack", "csc_crash_jump_to_stack")])
    func callThroughABadPointerNamesTheCaller(_ kind: String, _ caller: String) throws {
        let directory = temporaryDirectory(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", kind, "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        let raw = try rawReport(directory)
        let report = try #require(loadReports(directory).first)
        let frames = report.crashedThread?.frames ?? []
        try #require(frames.count >= 3, "frames: \(frames)")
        if kind == "null-call" { #expect(frames[0].address == "0x0") }
        #expect(frames[0].image == nil)
        #expect(frames[1].function == caller, "frames: \(frames.map { $0.function ?? $0.address ?? "?" })")
        #expect(frames[2].function?.contains("CrashCommand.crash") == true)
        #if arch(x86_64)
        #expect((raw["crashed_thread"] as? [String: Any])?["caller_from"] as? String == "stack_pointer")
        #else
        #expect((raw["crashed_thread"] as? [String: Any])?["caller_from"] as? String == "link_register")
        #endif
    }

    /// Well-formed UTF-8 is copied as it is: a Chinese exception reason, an emoji thread
    /// name. The file holds the UTF-8 bytes themselves, not \u00XX escapes of each byte.
    @Test func nonASCIITextIsCopiedVerbatim() throws {
        let directory = temporaryDirectory("utf8")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "utf8-exception", "--dir", directory])
        #expect(result.termination == .signaled(SIGABRT))
        _ = try rawReport(directory)
        let report = try #require(loadReports(directory).first)
        #expect(report.exception?.name == "数组异常")
        #expect(report.exception?.reason == "原因：索引 3 超出范围 🔥 josé")
        #expect(report.crash?.threadName == "crash-🔥")
        let file = try #require(CrashReportStore(directory: directory).reportFiles().first)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text.contains("\"reason\":\"原因：索引 3 超出范围 🔥 josé\""))
        #expect(!text.contains("\\u00"))
    }

    /// Text cut in the middle of a character (a thread name the kernel cut at 15 bytes, a reason
    /// longer than the report's 1024-byte bound) ends before that character: no escaped bytes.
    @Test func textCutMidCharacterEndsBeforeIt() throws {
        let directory = temporaryDirectory("utf8-cut")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reason = "x" + String(repeating: "🔥", count: 300)
        let result = try runChild(Built.shield, ["crash", "utf8-exception", "--thread-name", "crash-🔥🔥🔥", "--reason", reason,
                                                 "--dir", directory])
        #expect(result.termination == .signaled(SIGABRT))
        let report = try #require(loadReports(directory, symbolicate: false).first)
        #expect(report.crash?.threadName == "crash-🔥🔥")
        #expect(report.exception?.reason == "x" + String(repeating: "🔥", count: 255))
    }

    /// Text longer than its buffer (an app name of 400 bytes here; install keeps 255 bytes) ends
    /// before the character the cut split: the report holds the first 63 four-byte characters.
    @Test func longNonASCIITextIsCutAtACharacter() throws {
        let directory = temporaryDirectory("long-name")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let name = String(repeating: "🔥", count: 100)
        let result = try runChild(Built.shield, ["crash", "segv", "--app-name", name, "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        let report = try #require(loadReports(directory, symbolicate: false).first)
        #expect(report.process?.name == String(repeating: "🔥", count: 63))
    }

    /// Runs a copy of `shield` placed at `executable` and checks that the report names it whole
    /// (process and image list) and that its frames symbolicate from that path.
    func crashCopiedExecutable(at executable: String, label: String) throws {
        let directory = temporaryDirectory(label)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: (executable as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        // Copied by cp(1), not in this process: a child that another test forks while the copy's
        // write descriptor is open here would keep it open, and exec would fail with ETXTBSY.
        let copy = try runChild("/bin/cp", [Built.shield, executable])
        try #require(copy.termination == .exited(0))
        let result = try runChild(executable, ["crash", "segv", "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        _ = try rawReport(directory)
        let report = try #require(loadReports(directory).first)
        #expect(report.process?.executable == executable)
        #expect((report.images ?? []).contains { $0.path == executable })
        let top = try #require(report.crashedThread?.frames?.first)
        #expect(top.image == executable)
        #expect(top.function == "csc_crash_segv")
    }

    /// An image under a non-ASCII directory (/home/josé/…).
    @Test func executableInANonASCIIDirectorySymbolicates() throws {
        let root = temporaryDirectory("non-ascii")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try crashCopiedExecutable(at: "\(root)/josé-目录/shield", label: "non-ascii-reports")
    }

    /// Paths of 256 bytes and more are kept whole.
    @Test func executableUnderALongPathSymbolicates() throws {
        let root = temporaryDirectory("long-path")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let deep = (0..<8).map { "level-\($0)-" + String(repeating: "x", count: 40) }.joined(separator: "/")
        let executable = "\(root)/\(deep)/shield"
        #expect(executable.utf8.count > 400)
        try crashCopiedExecutable(at: executable, label: "long-path-reports")
    }

    /// A SIGSEGV sent with kill(2) has no fault address (si_addr holds the sender's pid
    /// and uid then); the report names the sender.
    @Test func signalSentByAnotherProcessHasNoFaultAddress() throws {
        let directory = temporaryDirectory("sent")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try Child(Built.shield, ["crash", "await-signal", "--dir", directory])
        try #require(child.waitForOutput(containing: "READY"))
        kill(child.process.processIdentifier, SIGSEGV)
        let result = child.wait()
        #expect(result.termination == .signaled(SIGSEGV))
        let raw = try rawReport(directory)
        let crash = try #require(raw["crash"] as? [String: Any])
        #expect(crash["fault_address"] == nil)
        #expect(crash["code_name"] as? String == "SI_USER")
        #expect(crash["sender_pid"] as? Int == Int(getpid()))
    }

    /// A report that reaches RLIMIT_FSIZE is cut there (a valid prefix that loads) and
    /// the process dies of the crash's signal, not of SIGXFSZ.
    @Test func fileSizeLimitCutsTheReportButNotTheSignal() throws {
        let directory = temporaryDirectory("fsize")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "segv", "--fsize-limit", "3000", "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        let files = CrashReportStore(directory: directory).reportFiles()
        try #require(files.count == 1)
        let size = (try FileManager.default.attributesOfItem(atPath: files[0])[.size] as? Int) ?? -1
        #expect(size == 3000)
        let report = try #require(loadReports(directory, symbolicate: false).first)
        #expect(!report.isComplete)
        #expect(report.crash?.signal == SIGSEGV)
    }

    /// With the descriptor table full (EMFILE) the report is still written, through the
    /// descriptor kept in reserve since install.
    @Test func fullDescriptorTableStillGivesAReport() throws {
        let directory = temporaryDirectory("emfile")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "segv", "--exhaust-fds", "--dir", directory])
        #expect(result.output.contains("EXHAUSTED after"))
        #expect(!result.output.contains("EXHAUST-FAILED"))
        #expect(result.termination == .signaled(SIGSEGV))
        let reports = loadReports(directory)
        try #require(reports.count == 1)
        #expect(reports[0].isComplete)
        #expect(reports[0].crashedThread?.frames?.first?.function == "csc_crash_segv")
    }

    /// The report directory was deleted: one line on stderr, and the process still dies
    /// of its signal.
    @Test func deletedDirectoryIsSaidOnStandardError() throws {
        let directory = temporaryDirectory("deleted")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try Child(Built.shield, ["crash", "segv", "--remove-dir", "--dir", directory], captureStandardError: true)
        let result = child.wait()
        #expect(result.termination == .signaled(SIGSEGV))
        let lines = result.output.split(separator: "\n").filter { $0.hasPrefix("CrashShield: no crash report could be written") }
        #expect(lines.count == 1, "output: \(result.output)")
        #expect(lines.first?.hasSuffix("(errno \(ENOENT)); passing SIGSEGV on") == true)
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    /// The directory became unwritable (here: the process dropped its privileges after
    /// start, as servers do; or, not as root, the directory was made read-only): one line on
    /// stderr, and the next start's lastRun says the run crashed during launch without a report.
    @Test func unwritableDirectoryMakesLastRunSayCrashedWithoutReport() throws {
        let directory = temporaryDirectory("unwritable")
        defer {
            chmod(directory, 0o755)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let crash = try Child(Built.shield, ["launch-probe", "--dir", directory, "--unwritable-dir", "--crash"], captureStandardError: true)
        let crashed = crash.wait()
        #expect(crashed.termination == .signaled(SIGSEGV))
        #expect(!crashed.output.contains("DROP-FAILED"))
        #expect(crashed.output.contains("CrashShield: no crash report could be written in \(directory) (errno \(EACCES)); passing SIGSEGV on"),
                "output: \(crashed.output)")
        chmod(directory, 0o755)
        #expect(CrashReportStore(directory: directory).reportFiles().isEmpty)

        let next = try runChild(Built.shield, ["launch-probe", "--dir", directory])
        #expect(next.termination == .exited(0))
        let line = try #require(next.output.split(separator: "\n").first { $0.hasPrefix("{") })
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(fields["last_run"] as? String == "crashed")
        #expect(fields["during_launch"] as? Bool == true)
        #expect(fields["report_lost"] as? Bool == true)
        #expect(fields["consecutive"] as? Int == 1)

    }
}

/// "Report lost" must hold when nothing else can be written. The handler writes
/// the marker first, over bytes reserved at install, and its stderr line without blocking.
@Suite struct ReportLostTests {
    /// A tmpfs of `size` mounted at a fresh directory, or nil where mounting needs privileges this
    /// process lacks (root with CAP_SYS_ADMIN here and in CI).
    static func mountTmpfs(size: String) -> String? {
        let point = temporaryDirectory("tmpfs")
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        mount.arguments = ["mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", point]
        mount.standardError = FileHandle.nullDevice
        guard (try? mount.run()) != nil else { return nil }
        mount.waitUntilExit()
        guard mount.terminationStatus == 0 else {
            try? FileManager.default.removeItem(atPath: point)
            return nil
        }
        return point
    }

    static func unmount(_ point: String) {
        let umount = Process()
        umount.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        umount.arguments = ["umount", point]
        try? umount.run()
        umount.waitUntilExit()
        try? FileManager.default.removeItem(atPath: point)
    }

    static let canMountTmpfs: Bool = {
        #if os(Linux)
        guard let point = mountTmpfs(size: "64k") else { return false }
        unmount(point)
        return true
        #else
        return false
        #endif
    }()

    /// The lastRun the next start of `launch-probe` reports.
    static func nextStart(_ directory: String) throws -> [String: Any] {
        let next = try runChild(Built.shield, ["launch-probe", "--dir", directory])
        #expect(next.termination == .exited(0))
        let line = try #require(next.output.split(separator: "\n").first { $0.hasPrefix("{") })
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    /// The directory is unwritable and stderr is a full pipe nobody reads: the stderr line is
    /// dropped instead of blocking until the watchdog ends the process with SIGALRM, the process
    /// dies with the crash's signal, and the marker makes the next lastRun say the report was lost.
    @Test func fullStandardErrorPipeNeitherBlocksNorLosesTheMarker() throws {
        let directory = temporaryDirectory("stderr-full")
        defer {
            chmod(directory, 0o755)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let started = Date()
        let crashed = try runChild(Built.shield, ["launch-probe", "--dir", directory, "--unwritable-dir", "--stderr-full-pipe", "--crash"],
                                   timeout: 20)
        let seconds = Date().timeIntervalSince(started)
        #expect(crashed.output.contains("STDERR-FULL"), "output: \(crashed.output)")
        #expect(!crashed.output.contains("DROP-FAILED"))
        #expect(crashed.termination == .signaled(SIGSEGV), "after \(seconds) s")
        #expect(seconds < 4, "the handler must not wait for the watchdog: \(seconds) s")
        chmod(directory, 0o755)
        let fields = try Self.nextStart(directory)
        #expect(fields["last_run"] as? String == "crashed")
        #expect(fields["report_lost"] as? Bool == true)
    }

    /// The file system of the report directory is full at the crash (a tmpfs of 256 KiB, filled
    /// after start): no report, and the marker, reserved at install, still records the crash.
    @Test(.enabled(if: canMountTmpfs, "mounting a tmpfs needs root (CAP_SYS_ADMIN)"))
    func fullDiskStillRecordsTheLostReport() throws {
        let point = try #require(Self.mountTmpfs(size: "256k"))
        defer { Self.unmount(point) }
        let directory = point + "/reports"
        let crashed = try runChild(Built.shield, ["launch-probe", "--dir", directory, "--fill-disk", "--crash"])
        #expect(crashed.output.contains("DISK-FULL"), "output: \(crashed.output)")
        #expect(crashed.termination == .signaled(SIGSEGV))
        #expect(CrashReportStore(directory: directory).reportFiles().isEmpty)
        try FileManager.default.removeItem(atPath: directory + "/filler")
        let fields = try Self.nextStart(directory)
        #expect(fields["last_run"] as? String == "crashed")
        #expect(fields["during_launch"] as? Bool == true)
        #expect(fields["report_lost"] as? Bool == true)
        // The next start wrote the reservation back: a crash of this run is recorded too.
        let marker = try #require(FileManager.default.contents(atPath: UnreportedCrash.path(in: directory)))
        #expect(marker.count == Int(CSC_UNREPORTED_MARKER_BYTES) && marker.allSatisfy { $0 == 0x0a })
    }
}

extension ReportLostTests {
    /// The same class for a file-size limit: with RLIMIT_FSIZE 0 no report byte can be written,
    /// and the marker's record (at offset 0, at or past the limit) was refused with EFBIG too.
    @Test func fileSizeLimitZeroStillRecordsTheLostReport() throws {
        let directory = temporaryDirectory("fsize-zero")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crashed = try runChild(Built.shield, ["launch-probe", "--dir", directory, "--fsize-limit", "0", "--crash"])
        #expect(crashed.termination == .signaled(SIGSEGV))
        #expect(CrashReportStore(directory: directory).reportFiles().isEmpty)
        let fields = try Self.nextStart(directory)
        #expect(fields["last_run"] as? String == "crashed")
        #expect(fields["report_lost"] as? Bool == true)
    }
}
