import CrashShieldProtocol
import Foundation
import CrashShield

/// Runs a program as a child process with a timeout, capturing its standard output.
/// Anything that may crash on purpose runs through here, never in the calling process.
struct ChildProcess {
    enum Termination: Equatable {
        case exited(Int32)
        case signaled(Int32)
        case timedOut
    }

    struct Result {
        let termination: Termination
        let output: String
    }

    static var currentExecutable: String {
        #if os(Linux)
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        #else
        Bundle.main.executablePath ?? CommandLine.arguments[0]  // no /proc on Darwin
        #endif
    }

    static func run(_ path: String, _ arguments: [String], timeout: Duration = .seconds(20)) -> Result {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { return Result(termination: .exited(-1), output: "") }
        // glibc's file actions are a struct; Darwin's are an opaque pointer that init allocates.
        #if canImport(Glibc)
        var actions = posix_spawn_file_actions_t()
        #else
        var actions: posix_spawn_file_actions_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        posix_spawn_file_actions_addclose(&actions, pipeFDs[1])

        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        close(pipeFDs[1])
        guard spawned == 0 else {
            close(pipeFDs[0])
            return Result(termination: .exited(-1), output: "")
        }

        var output = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + timeout
        var timedOut = false
        while true {
            let remaining = deadline - ContinuousClock.now
            if remaining <= .zero {
                timedOut = true
                break
            }
            var descriptor = pollfd(fd: pipeFDs[0], events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + 1)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            let count = read(pipeFDs[0], &buffer, buffer.count)
            if count <= 0 { break }
            output.append(contentsOf: buffer[0..<count])
        }
        close(pipeFDs[0])
        if timedOut { kill(pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let termination: Termination
        if timedOut {
            termination = .timedOut
        } else if status & 0x7f == 0 {
            termination = .exited((status >> 8) & 0xff)
        } else {
            termination = .signaled(status & 0x7f)
        }
        return Result(termination: termination, output: String(decoding: output, as: UTF8.self))
    }

    static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [
            SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGILL: "SIGILL", SIGFPE: "SIGFPE", SIGABRT: "SIGABRT",
            SIGTRAP: "SIGTRAP", SIGSYS: "SIGSYS", SIGPIPE: "SIGPIPE", SIGKILL: "SIGKILL", SIGTERM: "SIGTERM",
        ]
        return names[signal] ?? "SIG\(signal)"
    }
}
