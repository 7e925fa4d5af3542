import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// The Apple build of the Swift modules, checked from Linux: what a Mac would
/// compile differently is covered by scripts/check-portability.sh (docs/PORTABILITY.md); the
/// platform-neutral pieces of the Apple paths (default directory, symbolication without external
/// tools, Mach-O debug ids) run here.
@Suite struct ApplePortabilityTests {
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// No Linux-only construct in a Swift, C or Objective-C line that an Apple platform compiles,
    /// and Package.swift declares the minimum versions the API needs. The script also runs the
    /// scanner's self-test and canaries and checks docs/PORTABILITY.md lists every pattern; it runs
    /// in scripts/test too, and here so that `swift test` shows it.
    @Test func noLinuxOnlyConstructWhereAnAppleBuildCompiles() throws {
        let result = try runChild("/bin/bash", [Self.packageRoot + "/scripts/check-portability.sh"], timeout: 120)
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("ok:   no Linux-only construct where an Apple build compiles"), "\(result.output)")
        #expect(!result.output.contains("FAIL"), "\(result.output)")
    }

    @Test func appleDefaultDirectoryIsUnderCachesNamedByBundleIdentifier() {
        #expect(CaptureOptions.appleDefaultDirectory(
            caches: "/var/mobile/Containers/Data/Application/ABC/Library/Caches", bundleIdentifier: "com.example.app",
            executable: "App") == "/var/mobile/Containers/Data/Application/ABC/Library/Caches/crashshield/com.example.app")
        // URL.path never ends in "/", but a caller-made path may.
        #expect(CaptureOptions.appleDefaultDirectory(caches: "/Users/u/Library/Caches/", bundleIdentifier: "com.example.tool",
                                                     executable: "tool") == "/Users/u/Library/Caches/crashshield/com.example.tool")
    }

    /// A command-line tool on macOS has no bundle identifier: its executable names the folder.
    @Test func appleDefaultDirectoryFallsBackToTheExecutableName() {
        #expect(CaptureOptions.appleDefaultDirectory(caches: "/Users/u/Library/Caches", bundleIdentifier: nil, executable: "tool")
                == "/Users/u/Library/Caches/crashshield/tool")
        #expect(CaptureOptions.appleDefaultDirectory(caches: "/Users/u/Library/Caches", bundleIdentifier: "", executable: "tool")
                == "/Users/u/Library/Caches/crashshield/tool")
        let temporary = (NSTemporaryDirectory() as NSString).standardizingPath
        #expect(CaptureOptions.appleDefaultDirectory(caches: nil, bundleIdentifier: "com.example.app", executable: "App")
                == "\(temporary)/crashshield/com.example.app")
    }

    #if os(Linux)
    /// Oracle: the Linux default is the XDG cache directory, as before the Apple branch existed.
    @Test func linuxDefaultDirectoryIsTheXDGCache() {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"] ?? ((environment["HOME"] ?? NSTemporaryDirectory()) + "/.cache")
        let executable = (CommandLine.arguments[0] as NSString).lastPathComponent
        #expect(CaptureOptions.defaultDirectory == "\(base)/crashshield/\(executable)")
    }
    #endif

    /// What the symbolicator does where `Process` does not exist (iOS): frames in images loaded in
    /// this process with the recorded build id are named through dladdr, the others keep their raw
    /// addresses, and no tool runs. With tools (Linux, macOS) the same report names the frames of
    /// the crashed executable too.
    @Test func symbolicationWithoutExternalToolsNamesLoadedImagesOnly() throws {
        let directory = temporaryDirectory("no-tools")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try runChild(Built.shield, ["crash", "abort", "--dir", directory])
        let raw = try #require(loadReports(directory, symbolicate: false).first)
        let rawFrames = try #require(raw.crashedThread?.frames)
        let shieldFrame = try #require(rawFrames.firstIndex { $0.image?.hasSuffix("/shield") == true })

        var withoutTools = raw
        Symbolicator.symbolicate(&withoutTools, externalTools: false)
        let frames = try #require(withoutTools.crashedThread?.frames)
        let toolSources: Set<CrashReport.Frame.SymbolSource?> = [.llvmSymbolizer, .addr2line]
        #expect(!frames.contains { toolSources.contains($0.symbolSource) })
        // libc's abort path (raise/pthread_kill/abort) is loaded here with the same build id.
        #expect(frames.contains { $0.symbolSource == .dladdr && $0.function != nil && $0.image?.contains("libc") == true })
        #expect(frames[shieldFrame].function == nil)
        #expect(frames[shieldFrame].symbolSource == nil)

        var withTools = raw
        Symbolicator.symbolicate(&withTools, externalTools: true)
        #expect(withTools.crashedThread?.frames?.contains { $0.function == "csc_crash_abort" } == true)
    }

    /// LC_UUID of a thin 64-bit image and of each slice of a universal file, in the report's form.
    @Test func machOUUIDOfThinAndUniversalFiles() throws {
        let first = [UInt8](0..<16), second = [UInt8](repeating: 0xab, count: 16)
        let directory = temporaryDirectory("macho")
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let thin = directory + "/thin.dylib"
        try Data(Self.thinImage(uuid: first)).write(to: URL(fileURLWithPath: thin))
        #expect(MachOUUID.read(path: thin) == ["000102030405060708090a0b0c0d0e0f"])
        #expect(ImageDebugID.read(path: thin) == ["000102030405060708090a0b0c0d0e0f"])

        // FAT_MAGIC, two slices at 4096 and 8192 (fat_arch: cputype, cpusubtype, offset, size, align).
        var fat = Self.bigEndian([0xcafe_babe, 2])
        fat += Self.bigEndian([0x0100_000c, 0, 4096, 80, 12]) + Self.bigEndian([0x0100_0007, 3, 8192, 80, 12])
        fat += [UInt8](repeating: 0, count: 4096 - fat.count) + Self.thinImage(uuid: first)
        fat += [UInt8](repeating: 0, count: 8192 - fat.count) + Self.thinImage(uuid: second)
        let universal = directory + "/universal.dylib"
        try Data(fat).write(to: URL(fileURLWithPath: universal))
        #expect(MachOUUID.read(path: universal) == ["000102030405060708090a0b0c0d0e0f", String(repeating: "ab", count: 16)])

        // Neither Mach-O nor ELF, and a Mach-O image without LC_UUID: no id.
        let text = directory + "/text"
        try Data("not an image at all, just text".utf8).write(to: URL(fileURLWithPath: text))
        #expect(ImageDebugID.read(path: text) == nil)
        let noUUID = directory + "/no-uuid.dylib"
        try Data(Self.thinImage(uuid: nil)).write(to: URL(fileURLWithPath: noUUID))
        #expect(ImageDebugID.read(path: noUUID) == nil)
        // An ELF image keeps its GNU build id.
        #expect(ImageDebugID.read(path: Built.shield) == ELFBuildID.read(path: Built.shield).map { [$0] })
        #expect(ELFBuildID.read(path: Built.shield) != nil)
    }

    @Test func debugIDsCompareWithoutCaseOrDashes() {
        #expect(ImageDebugID.normalized("0A1B2C3D-0405-0607-0809-0A0B0C0D0E0F") == "0a1b2c3d0405060708090a0b0c0d0e0f")
        #expect(ImageDebugID.normalized("5f3e") == "5f3e")
    }

    /// mach_header_64 (arm64 dylib), LC_SOURCE_VERSION, then LC_UUID unless `uuid` is nil.
    static func thinImage(uuid: [UInt8]?) -> [UInt8] {
        var commands = littleEndian([0x2a, 16, 0, 0])  // LC_SOURCE_VERSION: cmd, cmdsize, version (64-bit)
        if let uuid { commands += littleEndian([0x1b, 24]) + uuid }
        let header = littleEndian([0xfeed_facf, 0x0100_000c, 0, 6, uuid == nil ? 1 : 2, UInt32(commands.count), 0, 0])
        return header + commands
    }

    static func littleEndian(_ words: [UInt32]) -> [UInt8] {
        words.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
    }

    static func bigEndian(_ words: [UInt32]) -> [UInt8] {
        words.flatMap { word in (0..<4).reversed().map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
    }
}
