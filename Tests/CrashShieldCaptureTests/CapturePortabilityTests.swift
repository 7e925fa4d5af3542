import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

/// Capture on Apple. Nothing here can compile or run the Darwin files (no Apple
/// SDK); what Linux can check is checked: scripts/check-apple-targets.sh compiles the
/// platform-neutral pure-C parts for Apple targets with only the compiler's freestanding headers
/// and checks every Linux/ELF file is empty there (run below, so `swift test` shows it), and every
/// concern of the platform interface (csc_platform.h) has a Linux and a Darwin file, each wholly
/// inside its own guard, that define every function the interface declares for it.
@Suite struct CapturePortabilityTests {
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()
    static let captureSources = packageRoot + "/Sources/_CrashShieldCapture"

    /// The script's own canaries run with it (a host header, a line outside a Linux file's guard,
    /// an unlisted freestanding file, ... must each be rejected); the pure-C parts of capture are
    /// named in its output.
    @Test func appleTargetChecksPass() throws {
        let result = try Child("/bin/bash", [Self.packageRoot + "/scripts/check-apple-targets.sh"], captureStandardError: true)
            .wait(timeout: 300)
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("check-apple-targets: all checks passed"), "\(result.output)")
        for file in ["csc_writer.c", "csc_claim.c"] {
            #expect(result.output.contains("ok:   Sources/_CrashShieldCapture/\(file): freestanding, every Apple target"),
                    "\(file) is not checked: \(result.output)")
        }
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
        #expect(Set(concerns.keys) == ["context", "process", "threads", "unwind", "watchdog", "memory", "runtime_message"],
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
