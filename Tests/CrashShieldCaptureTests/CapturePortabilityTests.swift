import Foundation
import Testing

/// Issue 12, item 4: capture on Apple. Nothing here can compile or run the Darwin files (no Apple
/// SDK); what Linux can check is checked: the platform-neutral pure-C parts compile for Apple
/// targets with only the compiler's freestanding headers, and every concern of the platform
/// interface (csc_platform.h) has a Linux and a Darwin file, each wholly inside its own guard, that
/// define every function the interface declares for it.
@Suite struct CapturePortabilityTests {
    static let captureSources: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path + "/Sources/_CrashShieldCapture"
    }()

    /// The pure-C parts: the report's JSON writer and the crash claim (CAS, states, waiting).
    static let pureCFiles = ["csc_writer.c", "csc_claim.c"]
    static let appleTargets = ["arm64-apple-ios15", "x86_64-apple-macos13"]

    static func clangPath() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":") + ["/opt/swift/usr/bin", "/usr/bin"] {
            let candidate = "\(directory)/clang"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// -nostdlibinc keeps the host's /usr/include out (clang searches it even for an Apple
    /// target), so only clang's own freestanding headers are found.
    static func checkFreestanding(_ file: String, target: String) throws -> ChildResult {
        let clang = try #require(clangPath(), "clang not found")
        let arguments = ["-target", target, "-ffreestanding", "-nostdlibinc", "-fsyntax-only", "-Wall", "-Werror",
                         "\(captureSources)/\(file)"]
        return try Child(clang, arguments, captureStandardError: true).wait(timeout: 120)
    }

    @Test(arguments: appleTargets)
    func pureCPartsCompileWithFreestandingHeadersOnly(target: String) throws {
        for file in Self.pureCFiles {
            let result = try Self.checkFreestanding(file, target: target)
            #expect(result.termination == .exited(0), "\(file) for \(target): \(result.output)")
        }
        // The check is not vacuous: a file that needs the C library's headers is refused.
        let canary = try Self.checkFreestanding("csc_sys_posix.c", target: target)
        #expect(canary.termination != .exited(0), "csc_sys_posix.c should need hosted headers")
    }

    /// csc_platform.h's sections ("/* ---- <concern> (csc_<name>_*.c) ---") and the functions
    /// each declares; csc_safe_read lives in csc_internal.h (concern "memory").
    static func declaredFunctions() throws -> [String: [String]] {
        let header = try String(contentsOfFile: "\(captureSources)/csc_platform.h", encoding: .utf8)
        var concerns: [String: [String]] = ["memory": ["csc_safe_read", "csc_safe_read_prepare"]]
        var current: String?
        for line in header.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("/* ----") {
                if let start = line.range(of: "(csc_"), let end = line.range(of: "_*.c)") {
                    current = String(line[start.upperBound..<end.lowerBound])
                } else {
                    current = nil
                }
                continue
            }
            guard let concern = current, !line.hasPrefix(" "), !line.hasPrefix("/"), !line.hasPrefix("#"),
                  let open = line.firstIndex(of: "(") else { continue }
            let beforeParen = line[..<open]
            guard let name = beforeParen.split(whereSeparator: { $0 == " " || $0 == "*" }).last else { continue }
            concerns[concern, default: []].append(String(name))
        }
        return concerns
    }

    @Test func everyConcernHasALinuxAndADarwinFileDefiningTheWholeInterface() throws {
        let concerns = try Self.declaredFunctions()
        #expect(Set(concerns.keys) == ["context", "process", "threads", "unwind", "watchdog", "memory"],
                "concerns: \(concerns.keys.sorted())")
        for (concern, functions) in concerns {
            #expect(!functions.isEmpty, "\(concern) declares nothing")
            for (os, guardMacro) in [("linux", "__linux__"), ("darwin", "__APPLE__")] {
                let path = "\(Self.captureSources)/csc_\(concern)_\(os).c"
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                    Issue.record("missing \(path)")
                    continue
                }
                let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                let directives = lines.filter { $0.hasPrefix("#") }
                #expect(directives.first == "#if defined(\(guardMacro))", "\(path) does not open with its guard")
                #expect(lines.last?.hasPrefix("#endif") == true, "\(path) does not close its guard last")
                for function in functions {
                    // A definition: at the start of a line, a return type, then the name, and a body.
                    let defined = lines.contains { line in
                        guard !line.hasPrefix("return"), !line.hasPrefix("if"), !line.hasPrefix("*"), !line.hasPrefix("/"),
                              let name = line.range(of: " \(function)(") ?? line.range(of: "*\(function)("),
                              let body = line.range(of: ") {") else { return false }
                        return name.upperBound <= body.lowerBound
                    }
                    #expect(defined, "\(function) is not defined in csc_\(concern)_\(os).c")
                }
            }
        }
    }
}
