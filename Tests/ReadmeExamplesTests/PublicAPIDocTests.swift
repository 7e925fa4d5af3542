import Foundation
import Testing

/// docs/PUBLIC_API.md lists every public declaration `import CrashShield` brings into an app (the
/// umbrella and the modules it re-exports): the set of paths in the file must equal the set the compiler reports
/// (swift-symbolgraph-extract on the modules of this very build). Regenerate the file with
/// `scripts/public-api.py --write` after adding or removing a public declaration.
@Suite struct PublicAPIDocTests {
    static let modules = ["CrashShield", "CrashShieldBase", "CrashShieldGuards", "CrashShieldRecording", "CrashShieldSentry"]
    static let cModules = ["_CrashShieldCapture", "_CrashShieldLaunch", "_CrashShieldCxxTerminate", "_CrashShieldIncidents", "_CrashShieldRuntime", "CGNUstepBase", "_CrashShieldZlib"]

    /// The build directory of this test binary (it holds Modules/ and the C modules' module maps).
    static var buildDirectory: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (executable as NSString).deletingLastPathComponent
    }

    static func findTool() -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let path = "\(directory)/swift-symbolgraph-extract"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Public declaration paths per module, as the symbol graphs list them, and those of them
    /// without a doc comment (their own or one they inherit).
    static func compilerPaths() throws -> [String: (paths: Set<String>, undocumented: Set<String>)] {
        let tool = try #require(Self.findTool(), "swift-symbolgraph-extract is not on PATH")
        let output = NSTemporaryDirectory() + "crashshield-symbolgraph-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: output) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        var flags: [String] = []
        for module in cModules {
            let map = "\(buildDirectory)/\(module).build/module.modulemap"
            if FileManager.default.fileExists(atPath: map) { flags += ["-Xcc", "-fmodule-map-file=\(map)"] }
            // A system-library target's module map stays in its sources.
            let sourceMap = "\(root)/Sources/\(module)/module.modulemap"
            if FileManager.default.fileExists(atPath: sourceMap) { flags += ["-Xcc", "-fmodule-map-file=\(sourceMap)"] }
            flags += ["-Xcc", "-I\(root)/Sources/\(module)/include"]
        }
        #if arch(x86_64)
        let triple = "x86_64-unknown-linux-gnu"
        #else
        let triple = "aarch64-unknown-linux-gnu"
        #endif
        var result: [String: (paths: Set<String>, undocumented: Set<String>)] = [:]
        for module in modules {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = ["-module-name", module, "-I", "\(buildDirectory)/Modules"] + flags
                + ["-target", triple, "-minimum-access-level", "public", "-output-dir", output]
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "swift-symbolgraph-extract failed for \(module)")
            var paths = Set<String>()
            var undocumented = Set<String>()
            for name in try FileManager.default.contentsOfDirectory(atPath: output)
            where name == "\(module).symbols.json" || name.hasPrefix("\(module)@") {
                let data = try Data(contentsOf: URL(fileURLWithPath: "\(output)/\(name)"))
                let graph = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
                for case let symbol as [String: Any] in graph["symbols"] as? [Any] ?? [] {
                    let identifier = (symbol["identifier"] as? [String: Any])?["precise"] as? String ?? ""
                    let access = symbol["accessLevel"] as? String ?? ""
                    guard !identifier.contains("SYNTHESIZED"), access == "public" || access == "open",
                          let components = symbol["pathComponents"] as? [String] else { continue }
                    paths.insert(components.joined(separator: "."))
                    if symbol["docComment"] == nil { undocumented.insert(components.joined(separator: ".")) }
                }
            }
            result[module] = (paths, undocumented)
        }
        return result
    }

    /// Paths per module listed in PUBLIC_API.md: "- `path` ..." lines under "## Module".
    static func documentedPaths(_ markdown: String) -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        var module: String?
        for line in markdown.components(separatedBy: "\n") {
            if line.hasPrefix("## ") {
                module = String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces)
            } else if let module, line.hasPrefix("- `"), let end = line.dropFirst(3).firstIndex(of: "`") {
                result[module, default: []].insert(String(line[line.index(line.startIndex, offsetBy: 3)..<end]))
            }
        }
        return result
    }

    #if os(Linux)
    /// Linux only: the build directory's layout and the target triple are Linux's (as in
    /// PublicSurfaceTests).
    @Test func publicAPIDocListsExactlyThePublicDeclarations() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let markdown = try String(contentsOf: root.appendingPathComponent("docs/PUBLIC_API.md"), encoding: .utf8)
        let documented = Self.documentedPaths(markdown)
        let compiled = try Self.compilerPaths()
        var total = 0
        for module in Self.modules {
            let actual = compiled[module]?.paths ?? []
            let listed = documented[module] ?? []
            total += actual.count
            #expect(actual.count > 5, "\(module): the symbol graph lists only \(actual.count) declarations")
            #expect(compiled[module]?.undocumented.sorted() == [], "\(module): public declarations without a doc comment")
            #expect(actual.subtracting(listed).sorted() == [], "\(module): public but not in docs/PUBLIC_API.md (run scripts/public-api.py --write)")
            #expect(listed.subtracting(actual).sorted() == [], "\(module): in docs/PUBLIC_API.md but not public")
        }
        // What `import CrashShield` brings into an app stays small: raising this budget is a decision.
        #expect(total <= 400, "\(total) public declarations; the budget is 400")
        // The start API this file is about must be there (so a broken parser cannot pass).
        #expect(documented["CrashShield"]?.contains("CrashShieldSDK.start(_:)") == true)
    }
    #endif

    @Test func documentedPathsParserReadsModulesAndPaths() {
        let markdown = "# x\n## A\n- `T.f(_:)` (Method): y\n- `T` (Struct): z\n## B\n- `U.v` (Property): w\ntext `no`\n"
        #expect(Self.documentedPaths(markdown) == ["A": ["T.f(_:)", "T"], "B": ["U.v"]])
    }
}
