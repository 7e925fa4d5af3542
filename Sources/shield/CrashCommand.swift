import CrashShieldProtocol
import CrashShield
import Foundation
import _CrashShieldCapture
import _CrashShieldRuntime
import _CrashShieldScenarios
import _CrashShieldTestSupport

/// `shield crash <kind> [--dir D] [--crash-in-handler] [--recover]`: installs capture and
/// crashes on purpose. The process dies with the kind's signal (GNUstep ends an
/// uncaught exception with exit(1)); the report lands in D. Test setups before capture:
/// `--previous-handler`, `--resethand-previous`, `--slow-previous-handlers`,
/// `--previous-trap-handler`, `--ignore-sigpipe`, `--ignore-sigtrap`, `--app-terminate-handler`; `jumped-signal` takes
/// `--jump-from <segv|abort>` and `--then <segv|abort|thread-abort>`; `fork-child-segv` takes
/// `--from-thread` and `--parent-crashes`; `--occupy-report-name` takes the next report's name.
/// Guards: `--guards` starts them with capture in one `CrashShieldSDK.start`, `--guards-after-capture`
/// with a second start (capture off) after capture started alone;
/// `--set-policy <guard>=<neutralize|reportOnly|off>` (repeatable) switches a policy after both
/// started, before the crash. Scope (user, tags, contexts, breadcrumbs): see `ScopeSetup`.
/// Remote configuration: `--remote-config-dsn <dsn>` activates the document stored in D before
/// capture (so reports name its version) and waits up to 10 s for the background fetch from
/// <dsn> before crashing (`[--remote-config-key <base64>]`: the Ed25519 public key;
/// `--app-version <v>`: the app version rules are matched against).
/// `scenario --scenario NAME`: runs that Objective-C misuse scenario (a `shield demo` name) with
/// no try/catch around it, so what it does without its guard (an uncaught exception, a signal)
/// ends the process as in an app; a scenario that returns exits 1 after printing
/// `SCENARIO <name> returned`.
enum CrashCommand {
    static let kinds = [
        "segv", "bus", "ill", "fpe", "abort", "trap", "objc-exception", "swift-index", "swift-unwrap",
        "stack-overflow", "thread-segv", "two-threads", "thread-stack-overflow", "recover-thread", "sigpipe", "inside-guard",
        "null-call", "bad-function-pointer", "jump-to-stack", "return-overwritten", "frame-pointer-clobbered", "stack-smash", "await-signal",
        "utf8-exception",
        "three-signals", "fork-child-segv", "segv-pending-alarm", "resolved-fault", "raise-trap",
        "jumped-signal", "array-beyond", "scenario",
        "cxx-exception", "cxx-custom-type", "cxx-noexcept", "thread-cxx-exception", "cxx-terminate", "cxx-caught-abort",
    ]

    static func run(_ arguments: [String]) -> Int32 {
        guard let kind = arguments.first, kinds.contains(kind) else {
            FileHandle.standardError.write(Data("usage: shield crash <\(kinds.joined(separator: "|"))> [--dir D]\n".utf8))
            return 2
        }
        #if !DEBUG
        if let hook = arguments.first(where: { Self.handlerHookOptions.contains($0) }) {
            FileHandle.standardError.write(Data("shield crash: \(hook) needs the test seams of a debug build\n".utf8))
            return 2
        }
        #endif
        let withGuards = kind == "inside-guard" || arguments.contains("--guards")
        let directory = option("--dir", in: arguments) ?? CaptureOptions.defaultDirectory
        // Before the guards: CrashShieldSDK.start applies the active document's overrides.
        var remoteActivation: RemoteConfigActivation?
        if let dsnText = option("--remote-config-dsn", in: arguments) {
            do {
                var remote = RemoteConfigOptions(dsn: try DSN(dsnText), directory: directory)
                remote.publicKey = try option("--remote-config-key", in: arguments).map { try RemoteConfigPublicKey(base64: $0) }
                remote.appVersion = option("--app-version", in: arguments)
                remoteActivation = RemoteConfiguration.activate(remote)
            } catch {
                FileHandle.standardError.write(Data("shield crash: remote configuration: \(error)\n".utf8))
                return 2
            }
        }
        // Test setups that must happen before capture is installed.
        if arguments.contains("--previous-handler") { csc_test_install_previous_handler() }
        if arguments.contains("--ignore-sigpipe") { signal(SIGPIPE, SIG_IGN) }
        if arguments.contains("--resethand-previous") { csc_test_install_resethand_handler() }
        if arguments.contains("--slow-previous-handlers") { csc_test_install_slow_previous_handlers() }
        if kind == "resolved-fault" { csc_test_install_resolving_handler() }
        if kind == "jumped-signal" { csc_test_install_jumping_handler(option("--jump-from", in: arguments) == "abort" ? SIGABRT : SIGSEGV) }
        if arguments.contains("--ignore-sigtrap") { signal(SIGTRAP, SIG_IGN) }
        if arguments.contains("--previous-trap-handler") { csc_test_install_previous_trap_handler() }
        if arguments.contains("--app-terminate-handler") { csc_test_install_app_terminate_handler() }
        var options = CaptureOptions(directory: directory)
        options.recoverBackgroundThreads = kind == "recover-thread" || arguments.contains("--recover")
        options.appName = option("--app-name", in: arguments)
        if arguments.contains("--hang-in-handler") { options.handlerWatchdog = .seconds(1) }
        do {
            if withGuards {
                var shieldOptions = CrashShieldOptions()
                shieldOptions.capture = options
                shieldOptions.launchProtection = nil
                try CrashShieldSDK.start(shieldOptions)
            } else {
                try CrashShieldSDK._startCaptureWithoutGuardsForTesting(options)
            }
        } catch {
            FileHandle.standardError.write(Data("shield crash: capture did not start: \(error)\n".utf8))
            return 1
        }
        if arguments.contains("--guards-after-capture") && !withGuards { try? CrashShieldSDK.start(.guardsOnly) }
        for (index, argument) in arguments.enumerated() where argument == "--set-policy" && index + 1 < arguments.count {
            let parts = arguments[index + 1].split(separator: "=", maxSplits: 1).map(String.init)
            let policies: [String: GuardPolicy] = ["neutralize": .neutralize, "reportOnly": .reportOnly, "off": .off]
            guard parts.count == 2, let policy = policies[parts[1]],
                  (try? CrashShieldSDK.setPolicy(policy, for: GuardID(rawValue: parts[0]))) != nil else {
                FileHandle.standardError.write(Data("shield crash: cannot set policy \(arguments[index + 1])\n".utf8))
                return 1
            }
        }
        #if DEBUG
        if arguments.contains("--crash-in-handler") { csc_test_fault_in_handler(true) }
        if arguments.contains("--hang-in-handler") { csc_test_hang_in_handler() }
        #endif
        ScopeSetup.apply(arguments)
        HostileSetup.apply(arguments, directory: options.directory)
        if let remoteActivation {
            let outcome = remoteActivation.waitForBackgroundFetch(timeout: .seconds(10))
            let line = "REMOTE-CONFIG active=\(remoteActivation.version.map(String.init) ?? "none") fetch=\(outcome.map { "\($0)" } ?? "unfinished")\n"
            FileHandle.standardOutput.write(Data(line.utf8))
        }
        #if DEBUG
        if arguments.contains("--occupy-report-name") && !csc_test_occupy_next_report_name() { return 3 }
        #endif
        crash(kind, arguments)
        return 1 // not reached for any kind except recover-thread
    }

    /// Options that use the signal handler's test hooks (csc_test_support.h), which exist only in a
    /// debug build (CSC_TEST_SEAMS).
    static let handlerHookOptions: Set<String> = ["--crash-in-handler", "--hang-in-handler", "--occupy-report-name"]

    static func crash(_ kind: String, _ arguments: [String] = []) {
        switch kind {
        case "segv": csc_crash_segv()
        case "bus": csc_crash_bus()
        case "ill": csc_crash_ill()
        case "fpe": csc_crash_fpe()
        case "abort": csc_crash_abort()
        case "trap": csc_crash_trap()
        case "cxx-exception": csc_crash_cxx_exception()
        case "cxx-custom-type": csc_crash_cxx_custom_type()
        case "cxx-noexcept": csc_crash_cxx_noexcept()
        case "thread-cxx-exception": csc_crash_thread_cxx_exception()
        case "cxx-terminate": csc_crash_cxx_terminate()
        case "cxx-caught-abort": csc_crash_cxx_caught_then_abort()
        case "objc-exception": cs_capture_raise_uncaught_exception()
        case "array-beyond": cs_capture_array_beyond_for_testing()
        case "scenario":
            guard let name = option("--scenario", in: arguments), let index = ScenarioChild.index(of: name) else {
                FileHandle.standardError.write(Data("shield crash scenario: --scenario names no Objective-C scenario\n".utf8))
                return
            }
            _ = cs_scenario_run_uncaught(index)
            print("SCENARIO \(name) returned")
            fflush(nil)
        case "swift-index": print(CrashKinds.swiftIndex(CommandLine.arguments.count + 2))
        case "swift-unwrap": print(CrashKinds.swiftUnwrap(CommandLine.arguments.count > 100 ? 1 : nil))
        case "stack-overflow": csc_crash_stack_overflow()
        case "thread-segv": csc_crash_thread_segv()
        case "two-threads": csc_crash_two_threads()
        case "thread-stack-overflow": csc_crash_thread_stack_overflow()
        case "inside-guard": cs_capture_crash_inside_guard_for_testing()
        case "null-call": csc_crash_null_call()
        case "bad-function-pointer": csc_crash_bad_function_pointer()
        case "jump-to-stack": csc_crash_jump_to_stack()
        case "return-overwritten": csc_crash_return_overwritten()
        case "frame-pointer-clobbered": csc_crash_frame_pointer_clobbered()
        case "stack-smash": CrashKinds.stackSmash(CommandLine.arguments.count * 256)
        case "await-signal":
            // For a signal sent by another process: the test kills this child with SIGSEGV.
            print("READY")
            fflush(nil)
            while true { pause() }
        case "utf8-exception":
            // Non-ASCII text in a report: an emoji thread name and a Chinese exception reason.
            // `--thread-name T` / `--reason R` replace them (longer text is cut by the kernel / the
            // report's bound).
            let arguments = CommandLine.arguments
            csc_test_set_thread_name(option("--thread-name", in: arguments) ?? "crash-🔥")
            let reason = option("--reason", in: arguments) ?? "原因：索引 3 超出范围 🔥 josé"
            let addresses = Thread.callStackReturnAddresses.map { UInt($0.uintValue) }
            _ = addresses.withUnsafeBufferPointer { frames in
                csc_report_exception("数组异常", reason, frames.baseAddress, frames.count)
            }
            abort()
        case "three-signals": csc_crash_three_signals()
        case "raise-trap":
            // A sent SIGTRAP that the app ignores or handles is not a crash: the process goes on.
            raise(SIGTRAP)
            print("SURVIVED installed=\(csc_is_installed()) written=\(csc_report_written())")
            fflush(nil)
            exit(0)
        case "segv-pending-alarm": csc_crash_segv_with_pending_alarm()
        case "fork-child-segv":
            // The child crashes (from this thread, or with --from-thread from a background thread,
            // which is the child's main thread); this process reports how it ended, then crashes
            // too with --parent-crashes.
            var child: Int32 = -1
            let status = csc_crash_forked_child(arguments.contains("--from-thread"), 20, &child)
            let ending = status < 0 ? "hung" : (status & 0x7f) != 0 ? "signaled:\(status & 0x7f)" : "exited:\((status >> 8) & 0xff)"
            print("CHILD pid=\(child) \(ending)")
            fflush(nil)
            if arguments.contains("--parent-crashes") { csc_crash_segv() }
            exit(0)
        case "resolved-fault":
            // A fault the previous handler resolves is not a crash; the real one after it is.
            let resolved = csc_test_touch_guarded_page()
            let directory = option("--dir", in: arguments) ?? CaptureOptions.defaultDirectory
            let reports = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("report-") }
            print("RESOLVED faults=\(resolved) installed=\(csc_is_installed()) written=\(csc_report_written()) reports=\(reports.count)")
            fflush(nil)
            csc_crash_segv()
        case "jumped-signal":
            // A signal the app's handler jumps back out of (a probe of an unmapped address, a
            // harness catching abort()) is not a crash; what comes after it is.
            let jumped = option("--jump-from", in: arguments) == "abort" ? csc_test_abort_caught() : !csc_test_probe_read(8)
            let directory = option("--dir", in: arguments) ?? CaptureOptions.defaultDirectory
            let reports = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("report-") }
            print("JUMPED \(jumped) installed=\(csc_is_installed()) written=\(csc_report_written()) reports=\(reports.count)")
            fflush(nil)
            switch option("--then", in: arguments) {
            case "abort": csc_crash_abort()
            case "thread-abort": csc_crash_thread_abort()
            default: csc_crash_segv()
            }
        case "sigpipe":
            let error = csc_crash_sigpipe()
            print("SURVIVED errno=\(error) still-ignored=\(csc_test_sigpipe_is_ignored())")
            fflush(nil)
            exit(0)
        case "recover-thread":
            // A background thread crashes; with recovery it is parked and this thread goes on.
            let thread = Thread { csc_crash_segv() }
            thread.start()
            for _ in 0..<200 where !CrashCapture.reportWrittenThisRun { usleep(10_000) }
            print("RECOVERED \(CrashCapture.reportWrittenThisRun)")
            fflush(nil)
            exit(0)
        default: break
        }
    }

    static func option(_ name: String, in arguments: [String]) -> String? {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }
}

/// Hostile conditions set up after capture is installed and before the crash:
/// `--fsize-limit N` (RLIMIT_FSIZE), `--exhaust-fds` (descriptor table full), `--remove-dir` (the
/// report directory deleted), `--unwritable-dir` (the directory made read-only, and as root the
/// process drops to uid/gid 65534, as servers do after start, so it cannot write there).
enum HostileSetup {
    // glibc declares the resources as an enum (imported with a raw value); Darwin and musl as ints.
    #if canImport(Glibc)
    static let fileSizeLimit = Int32(RLIMIT_FSIZE.rawValue)
    static let descriptorLimit = Int32(RLIMIT_NOFILE.rawValue)
    #else
    static let fileSizeLimit = RLIMIT_FSIZE
    static let descriptorLimit = RLIMIT_NOFILE
    #endif

    static func apply(_ arguments: [String], directory: String) {
        if let limit = CrashCommand.option("--fsize-limit", in: arguments).flatMap({ rlim_t($0) }) { limitFileSize(limit) }
        if arguments.contains("--exhaust-fds") {
            var value = rlimit()
            getrlimit(descriptorLimit, &value)
            value.rlim_cur = min(value.rlim_cur, 256)
            setrlimit(descriptorLimit, &value)
            var opened = 0
            while open("/dev/null", O_RDONLY) >= 0 { opened += 1 }
            if errno != EMFILE { print("EXHAUST-FAILED errno=\(errno)") }
            print("EXHAUSTED after \(opened)")
            fflush(nil)
        }
        if arguments.contains("--remove-dir") { try? FileManager.default.removeItem(atPath: directory) }
        if arguments.contains("--unwritable-dir") { makeUnwritable(directory) }
    }

    /// Sets the soft RLIMIT_FSIZE to `limit`, with SIGXFSZ's default action unblocked, as in a
    /// process started from a shell (a parent may hand down an ignored or blocked SIGXFSZ, which
    /// would hide what the limit does).
    static func limitFileSize(_ limit: rlim_t) {
        var value = rlimit()
        getrlimit(fileSizeLimit, &value)
        value.rlim_cur = limit
        setrlimit(fileSizeLimit, &value)
        signal(SIGXFSZ, SIG_DFL)
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGXFSZ)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// Writes `<directory>/filler` until the file system is full (ENOSPC).
    static func fillDisk(_ directory: String) {
        let descriptor = open("\(directory)/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let chunk = [UInt8](repeating: 0x2e, count: 4096)
        while descriptor >= 0 && chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        while descriptor >= 0 && chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, 1) }) > 0 {}
        print(errno == ENOSPC ? "DISK-FULL" : "FILL-FAILED errno=\(errno)")
        fflush(nil)
        if descriptor >= 0 { close(descriptor) }
    }

    /// Makes stderr (blocking) the write end of a pipe that is full and that nobody reads: a
    /// blocking write to it never returns.
    static func fillStandardErrorPipe() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return }
        let flags = fcntl(ends[1], F_GETFL)
        _ = fcntl(ends[1], F_SETFL, flags | O_NONBLOCK)
        let chunk = [UInt8](repeating: 0x2e, count: 4096)
        while chunk.withUnsafeBytes({ write(ends[1], $0.baseAddress, $0.count) }) > 0 {}
        while chunk.withUnsafeBytes({ write(ends[1], $0.baseAddress, 1) }) > 0 {}
        _ = fcntl(ends[1], F_SETFL, flags)
        dup2(ends[1], STDERR_FILENO)
        print("STDERR-FULL")
        fflush(nil)
    }

    static func makeUnwritable(_ directory: String) {
        chmod(directory, 0o555)
        if getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0) { print("DROP-FAILED errno=\(errno)") }
        fflush(nil)
    }
}

/// Swift runtime traps, kept out of line so the report names them.
enum CrashKinds {
    /// Writes `count` bytes of "A" into a 16-byte stack buffer: the Swift compiler's stack
    /// protector (on by default for such buffers) ends the function in `__stack_chk_fail`, and
    /// the smashed return address lies above the frames the unwinder has to walk.
    @inline(never)
    static func stackSmash(_ count: Int) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { buffer in
            let raw = UnsafeMutableRawPointer(buffer.baseAddress!)
            for offset in 0..<count { raw.storeBytes(of: 0x41, toByteOffset: offset, as: UInt8.self) }
        }
    }

    @inline(never)
    static func swiftIndex(_ index: Int) -> Int {
        let values = [1, 2, 3]
        return values[index] // index out of range: a Swift runtime trap
    }

    @inline(never)
    static func swiftUnwrap(_ value: Int?) -> Int {
        value! // force unwrap of nil: a Swift runtime trap
    }
}
