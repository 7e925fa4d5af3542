import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

/// Public doc comments state behaviour: they never send a user to a section of a document that
/// users do not have (nothing written "SPEC" or with a section sign).
@Suite struct DocCommentTests {
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The `///` blocks of `source` attached to a public declaration (or an extension), with the
    /// declaration's line number; attribute lines between the block and the declaration are skipped.
    static func publicDocBlocks(_ source: String) -> [(line: Int, text: String)] {
        let lines = source.components(separatedBy: "\n")
        var blocks: [(Int, String)] = []
        var block: [String] = []
        for (index, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("///") { block.append(line); continue }
            if block.isEmpty { continue }
            if line.hasPrefix("@") && !line.contains(" public ") { continue }  // @discardableResult, @propertyWrapper
            let declaration = line.replacingOccurrences(of: #"^(@\w+(\([^)]*\))?\s+)*"#, with: "", options: .regularExpression)
            if declaration.hasPrefix("public ") || declaration.hasPrefix("open ") || declaration.hasPrefix("extension ") {
                blocks.append((index + 1, block.joined(separator: "\n")))
            }
            block = []
        }
        return blocks
    }

    @Test func theScannerFindsPublicBlocksOnly() {
        let source = """
            /// internal one
            func a() {}
            /// public one
            @discardableResult
            public func b() -> Int { 1 }
            /// extension doc
            extension String {}
            """
        let blocks = Self.publicDocBlocks(source)
        #expect(blocks.map(\.line) == [5, 7])
        #expect(blocks.map(\.text) == ["/// public one", "/// extension doc"])
    }

    @Test func publicDocCommentsCiteNoSpecSections() throws {
        var offenders: [String] = []
        var scanned = 0
        for module in ["CrashShield", "CrashShieldBase", "CrashShieldGuards", "CrashShieldRecording", "CrashShieldSentry"] {
            let directory = "\(Self.packageRoot)/Sources/\(module)"
            for name in try FileManager.default.subpathsOfDirectory(atPath: directory) where name.hasSuffix(".swift") {
                let source = try String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8)
                for block in Self.publicDocBlocks(source) {
                    scanned += 1
                    if block.text.contains("SPEC") || block.text.contains("\u{00A7}") {
                        offenders.append("\(module)/\(name):\(block.line)")
                    }
                }
            }
        }
        #expect(scanned > 100, "the scanner found only \(scanned) public doc blocks")
        #expect(offenders.isEmpty, "public doc comments citing a section: \(offenders)")
    }
}
