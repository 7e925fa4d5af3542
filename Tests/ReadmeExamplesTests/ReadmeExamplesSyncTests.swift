import Foundation
import Testing

/// The README's ```swift blocks and ReadmeExamples.swift (which compiles them) must not drift
/// apart: every block appears there, in order, unchanged, between the begin/end markers; a
/// block's `import` lines appear among that file's top-level imports. A ```swift manifest block
/// is a fragment of an app's Package.swift, built by scripts/check-url-dependency.sh instead.
@Suite struct ReadmeExamplesSyncTests {
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    /// The ```swift blocks of `markdown`, each as its lines.
    static func swiftBlocks(_ markdown: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in markdown.components(separatedBy: "\n") {
            if current == nil {
                if line == "```swift" { current = [] }
            } else if line == "```" {
                blocks.append(current!)
                current = nil
            } else {
                current!.append(line)
            }
        }
        return blocks
    }

    /// The regions between the markers of `source`, each as its lines.
    static func markedRegions(_ source: String) -> [[String]] {
        var regions: [[String]] = []
        var current: [String]?
        for line in source.components(separatedBy: "\n") {
            if line == "// README example begin" {
                current = []
            } else if line == "// README example end" {
                if let region = current { regions.append(region) }
                current = nil
            } else {
                current?.append(line)
            }
        }
        return regions
    }

    @Test func everyReadmeSwiftBlockIsCompiledVerbatim() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let examplesPath = Self.root.appendingPathComponent("Tests/ReadmeExamplesTests/ReadmeExamples.swift")
        let examples = try String(contentsOf: examplesPath, encoding: .utf8)
        let blocks = Self.swiftBlocks(readme)
        let regions = Self.markedRegions(examples)
        #expect(blocks.count >= 3, "README.md lost its Swift examples")
        #expect(blocks.count == regions.count, "README.md has \(blocks.count) swift blocks, ReadmeExamples.swift \(regions.count)")
        let topLevelImports = Set(examples.components(separatedBy: "\n").filter { $0.hasPrefix("import ") })
        for (index, (block, region)) in zip(blocks, regions).enumerated() {
            let imports = block.filter { $0.hasPrefix("import ") }
            for line in imports { #expect(topLevelImports.contains(line), "block \(index + 1): \(line) missing") }
            let code = block.filter { !$0.hasPrefix("import ") }
            #expect(code == region, "README swift block \(index + 1) differs from ReadmeExamples.swift")
        }
    }

    /// The parser finds what it should (so the test above cannot pass by finding nothing).
    @Test func blockParserFindsSwiftBlocksOnly() {
        let markdown = "a\n```swift\nlet x = 1\n```\n```sh\nls\n```\n```swift\nimport A\nf()\n```\n"
        #expect(Self.swiftBlocks(markdown) == [["let x = 1"], ["import A", "f()"]])
        let source = "x\n// README example begin\nlet x = 1\n// README example end\ny\n"
        #expect(Self.markedRegions(source) == [["let x = 1"]])
    }
}
