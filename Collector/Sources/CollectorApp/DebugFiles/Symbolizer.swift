import Foundation
import Logging
import Synchronization

/// Runs `llvm-symbolizer` (LLVM's; reads ELF/DWARF and Mach-O/dSYM) on a debug file, one child
/// process per batch of addresses, each bounded by `timeout` (then killed; the batch fails).
/// Never called by the ingest writer.
final class Symbolizer: Sendable {
    /// One source location of an address; an address inside inlined code has several, innermost first.
    struct Location: Sendable, Hashable {
        var function: String?
        var file: String?
        var line: Int?
        var column: Int?
        /// The start of the (outermost) function in the file's address space, when known.
        var functionStart: UInt64?
    }

    enum Failure: Error, CustomStringConvertible {
        case notFound(searched: [String])
        case timedOut(seconds: Double)
        case failed(status: Int32, stderr: String)
        case launch(String)

        var description: String {
            switch self {
            case .notFound(let searched): "llvm-symbolizer not found (searched: \(searched.joined(separator: ", ")); install Debian's llvm or pass serve --symbolizer PATH)"
            case .timedOut(let seconds): "llvm-symbolizer did not finish within \(seconds) s and was killed"
            case .failed(let status, let stderr): "llvm-symbolizer exited with status \(status): \(stderr.prefix(300))"
            case .launch(let message): "llvm-symbolizer could not be started: \(message)"
            }
        }
    }

    /// The executable, or nil when none was found (`searched` says where it looked).
    let executable: String?
    let searched: [String]
    let timeout: Double

    /// - Parameter configured: `serve --symbolizer PATH`; nil searches `defaultCandidates()`.
    init(configured: String?, timeout: Double = 10) {
        let candidates = configured.map { [$0] } ?? Self.defaultCandidates()
        searched = candidates
        executable = candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
        self.timeout = timeout
    }

    /// Where the collector looks for `llvm-symbolizer` when not told, in order: every directory of
    /// `PATH`; Debian's versioned installs (`/usr/bin/llvm-symbolizer-<N>`, newest first, and
    /// `/usr/lib/llvm-<N>/bin`); the Swift toolchain's (`/opt/swift/usr/bin`, `/usr/libexec/swift/bin`).
    static func defaultCandidates() -> [String] {
        var candidates: [String] = []
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            candidates.append("\(directory)/llvm-symbolizer")
        }
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? [])
            .compactMap { $0.hasPrefix("llvm-") ? Int($0.dropFirst(5)) : nil }.sorted(by: >)
        for version in versions {
            candidates.append("/usr/bin/llvm-symbolizer-\(version)")
            candidates.append("/usr/lib/llvm-\(version)/bin/llvm-symbolizer")
        }
        candidates += ["/opt/swift/usr/bin/llvm-symbolizer", "/usr/libexec/swift/bin/llvm-symbolizer"]
        var seen = Set<String>()
        return candidates.filter { seen.insert($0).inserted }
    }

    /// The locations of `addresses` (in the file's address space) in the debug file at `object`,
    /// one list per address (empty: unknown). `arch` picks a slice of a universal Mach-O file.
    func symbolize(object: String, addresses: [UInt64], arch: String?) async throws -> [[Location]] {
        guard let executable else { throw Failure.notFound(searched: searched) }
        var arguments = ["--obj=" + object, "--output-style=JSON", "--inlines", "--demangle", "--functions=linkage"]
        if let arch { arguments.append("--default-arch=" + arch) }
        let input = Data(addresses.map { "0x" + String($0, radix: 16) + "\n" }.joined().utf8)
        let timeout = self.timeout
        let fixedArguments = arguments
        let output: Data = try await withCheckedThrowingContinuation { continuation in
            // Blocking pipe reads and the wait run on a thread of their own, never on the
            // cooperative pool or an event loop.
            Thread.detachNewThread {
                continuation.resume(with: Result { try Self.run(executable, fixedArguments, input: input, timeout: timeout) })
            }
        }
        var results: [[Location]] = []
        for line in output.split(separator: UInt8(ascii: "\n")) {
            guard let json = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else { continue }
            let symbols = json["Symbol"] as? [[String: Any]] ?? []
            results.append(symbols.compactMap { symbol in
                func text(_ key: String) -> String? {
                    guard let value = symbol[key] as? String, !value.isEmpty, value != "??" else { return nil }
                    return value
                }
                let line = (symbol["Line"] as? NSNumber)?.intValue
                let column = (symbol["Column"] as? NSNumber)?.intValue
                let start = (symbol["StartAddress"] as? String).flatMap { UInt64($0.hasPrefix("0x") ? String($0.dropFirst(2)) : $0, radix: 16) }
                let location = Location(function: text("FunctionName"), file: text("FileName"), line: line == 0 ? nil : line,
                                        column: column == 0 ? nil : column, functionStart: start)
                return location.function == nil && location.file == nil ? nil : location
            })
        }
        guard results.count == addresses.count else {
            throw Failure.failed(status: 0, stderr: "answered \(results.count) of \(addresses.count) addresses")
        }
        return results
    }

    private static func run(_ executable: String, _ arguments: [String], input: Data, timeout: Double) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        // No debuginfod or other network look-ups: only the file named.
        process.environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        do { try process.run() } catch { throw Failure.launch("\(error)") }
        let timedOut = LockedFlag()
        let killer = DispatchWorkItem {
            timedOut.set()
            process.terminate()
            let pid = process.processIdentifier
            DispatchQueue.global().asyncAfter(deadline: .now() + 1) { if process.isRunning { kill(pid, SIGKILL) } }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        DispatchQueue.global().async {
            try? stdin.fileHandleForWriting.write(contentsOf: input)
            try? stdin.fileHandleForWriting.close()
        }
        let errors = LockedData()
        DispatchQueue.global().async { errors.set(stderr.fileHandleForReading.readDataToEndOfFile()) }
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        killer.cancel()
        if timedOut.value { throw Failure.timedOut(seconds: timeout) }
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw Failure.failed(status: process.terminationStatus, stderr: String(decoding: errors.value, as: UTF8.self))
        }
        return output
    }
}

private final class LockedFlag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var value: Bool { flag.withLock { $0 } }
}

private final class LockedData: Sendable {
    private let data = Mutex(Data())
    func set(_ value: Data) { data.withLock { $0 = value } }
    var value: Data { data.withLock { $0 } }
}
