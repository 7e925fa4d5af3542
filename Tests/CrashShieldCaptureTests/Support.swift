import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// How a child process ended.
enum Termination: Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)
    case timedOut

    var description: String {
        switch self {
        case .exited(let code): "exit:\(code)"
        case .signaled(let signal): "signal:\(signal)"
        case .timedOut: "timeout"
        }
    }
}

struct ChildResult {
    let termination: Termination
    let output: String
}

/// Executables built next to the test bundle (`swift build --build-tests` builds every target).
enum Built {
    static var directory: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (executable as NSString).deletingLastPathComponent
    }
    static var shield: String { "\(directory)/shield" }
    /// The children only the tests spawn: rejected-start-probe, stop-probe, outbox-writer, hang-probe, ...
    static var testProbe: String { "\(directory)/shield-test-probe" }
    static var mallocProbe: String { "\(directory)/capture-malloc-probe" }
}

/// A child process with SWIFT_BACKTRACE=enable=no, standard error discarded (or, with
/// `captureStandardError`, collected with the output), and a timeout after which it is killed (a
/// hung crash handler fails the test instead of hanging CI).
final class Child: @unchecked Sendable {
    let process = Process()
    private let pipe = Pipe()
    private let collected = Locked(Data())
    private let reader = DispatchGroup()

    /// `environment`: variables set (or replaced) in the child on top of this process's.
    init(_ path: String, _ arguments: [String], swiftBacktrace: String = "enable=no", captureStandardError: Bool = false,
         environment extra: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        environment["SWIFT_BACKTRACE"] = swiftBacktrace
        process.environment = environment
        process.standardOutput = pipe
        process.standardError = captureStandardError ? pipe : FileHandle.nullDevice
        try process.run()
        let handle = pipe.fileHandleForReading
        reader.enter()
        DispatchQueue.global().async { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                collected.withLock { $0.append(chunk) }
            }
            reader.leave()
        }
    }

    var output: String { collected.withLock { String(decoding: $0, as: UTF8.self) } }

    /// Waits until the output contains `text` (or the timeout passes).
    func waitForOutput(containing text: String, timeout: TimeInterval = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if output.contains(text) { return true }
            usleep(10_000)
        }
        return false
    }

    func wait(timeout: TimeInterval = 30) -> ChildResult {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        var timedOut = false
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            timedOut = true
        }
        process.waitUntilExit()
        _ = reader.wait(timeout: .now() + 5)
        let termination: Termination
        if timedOut {
            termination = .timedOut
        } else if process.terminationReason == .uncaughtSignal {
            termination = .signaled(process.terminationStatus)
        } else {
            termination = .exited(process.terminationStatus)
        }
        return ChildResult(termination: termination, output: output)
    }
}

func runChild(_ path: String, _ arguments: [String], timeout: TimeInterval = 30) throws -> ChildResult {
    try Child(path, arguments).wait(timeout: timeout)
}

/// A fresh directory under the temporary directory.
func temporaryDirectory(_ label: String) -> String {
    let path = NSTemporaryDirectory() + "crashshield-tests-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Every report in `directory`, loaded (symbolicated unless told otherwise).
func loadReports(_ directory: String, symbolicate: Bool = true) -> [CrashReport] {
    CrashCapture.pendingReports(in: directory, symbolicate: symbolicate).compactMap { try? $0.result.get() }
}

/// The Schema folder at the top of the repository.
let schemaDirectory: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path + "/Schema"
}()

#if arch(arm64)
let swiftTrapSignal = SIGTRAP
#else
let swiftTrapSignal = SIGILL
#endif

/// A test `EnvelopeHTTPClient` that holds every request: until `release()`, after which it answers
/// `answer`, or, when `cancellable`, until `cancelAll()`, after which it throws `cancelled` (a
/// client that cannot cancel ignores `cancelAll`). Counts the requests begun and returned. A held
/// request gives up after a minute, so a broken test fails instead of hanging.
final class HoldingHTTPClient: EnvelopeHTTPClient, @unchecked Sendable {
    private let cancellable: Bool
    private let answer: HTTPResponse
    private let condition = NSCondition()
    private var cancelled = false
    private var released = false
    private var begun = 0
    private var returned = 0

    init(cancellable: Bool, answer: HTTPResponse = HTTPResponse(status: 200, headers: [:])) {
        self.cancellable = cancellable
        self.answer = answer
    }

    var counts: (begun: Int, returned: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (begun, returned)
    }

    func post(_ url: URL, headers: [String: String], body: Data, timeout: Duration) throws(TransportError) -> HTTPResponse {
        condition.lock()
        defer { condition.unlock() }
        begun += 1
        condition.broadcast()
        let until = Date().addingTimeInterval(60)
        while !cancelled, !released, Date() < until { _ = condition.wait(until: until) }
        returned += 1
        guard released else { throw TransportError.cancelled }
        return answer
    }

    func cancelAll() {
        guard cancellable else { return }
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    func release() {
        condition.lock()
        released = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until a request has begun; false after `timeout` seconds.
    func waitForARequest(timeout: TimeInterval) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let until = Date().addingTimeInterval(timeout)
        while begun == 0, Date() < until { _ = condition.wait(until: until) }
        return begun > 0
    }
}
