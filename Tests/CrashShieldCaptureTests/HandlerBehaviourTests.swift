import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry
import _CrashShieldCapture
import _CrashShieldTestSupport

/// The handler's behaviour around the crash itself, each in a child process.
@Suite struct HandlerBehaviourTests {
    /// The image table the handler reads is pinned: a refresh during a report (another thread
    /// loading a library) fills the other table, and a second one is skipped instead of
    /// rewriting the table being read. In process: no crash involved.
    @Test func pinnedImageTableSurvivesRefreshes() {
        #expect(csc_test_image_pin() == 0)
    }

    /// A fault inside the handler still leaves one (minimal) report and the process dies with the
    /// original signal instead of hanging.
    @Test func crashInsideTheHandlerLeavesAMinimalReport() throws {
        let directory = temporaryDirectory("handler-crash")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "segv", "--crash-in-handler", "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        let reports = loadReports(directory)
        try #require(reports.count == 1)
        #expect(reports[0].minimal == true)
        #expect(reports[0].crash?.signal == SIGSEGV)
        #expect(reports[0].handlerCrash?.signal == SIGSEGV)
        #expect(reports[0].isComplete)
    }

    /// A handler that gets stuck is ended by its watchdog (SIGALRM after 1 s here) instead of
    /// hanging; the report it had begun is truncated but still loads.
    @Test func stuckHandlerIsEndedByTheWatchdog() throws {
        let directory = temporaryDirectory("handler-hang")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "segv", "--hang-in-handler", "--dir", directory], timeout: 30)
        #expect(result.termination == .signaled(SIGALRM))
        let reports = loadReports(directory, symbolicate: false)
        try #require(reports.count == 1)
        #expect(!reports[0].isComplete)
        #expect(reports[0].crash?.signal == SIGSEGV)
    }

    /// A SIGSEGV handler installed before capture still runs; it resets the default action, so
    /// the fault is a crash and its report is written.
    @Test func chainsToThePreviouslyInstalledHandler() throws {
        let directory = temporaryDirectory("chain")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "segv", "--previous-handler", "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        #expect(result.output.contains("PREVIOUS-HANDLER-RAN"))
        #expect(loadReports(directory, symbolicate: false).count == 1)
    }

    /// The Swift runtime's backtracer (installed at process start when enabled) runs first and
    /// resets the default action: both outputs exist and the process still dies with SIGSEGV.
    @Test func chainsToTheSwiftRuntimeBacktracer() throws {
        let directory = temporaryDirectory("swift-backtracer")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try Child(Built.shield, ["crash", "segv", "--dir", directory],
                              swiftBacktrace: "enable=yes,interactive=no,output-to=stdout,symbolicate=off")
        let result = child.wait(timeout: 60)
        #expect(result.termination == .signaled(SIGSEGV))
        #expect(result.output.contains("Program crashed"))
        #expect(loadReports(directory, symbolicate: false).count == 1)
    }

    /// An app that ignores SIGPIPE keeps ignoring it: the write fails with EPIPE, no report.
    @Test func ignoredSIGPIPEStaysIgnored() throws {
        let directory = temporaryDirectory("sigpipe-ignored")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "sigpipe", "--ignore-sigpipe", "--dir", directory])
        #expect(result.termination == .exited(0))
        #expect(result.output.contains("SURVIVED errno=\(EPIPE) still-ignored=true"))
        #expect(CrashReportStore(directory: directory).reportFiles().isEmpty)
    }

    /// Without SIG_IGN, SIGPIPE is captured and the process still dies of it.
    @Test func unignoredSIGPIPEIsCaptured() throws {
        let directory = temporaryDirectory("sigpipe")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "sigpipe", "--dir", directory])
        #expect(result.termination == .signaled(SIGPIPE))
        let reports = loadReports(directory, symbolicate: false)
        #expect(reports.count == 1)
        #expect(reports.first?.classification == .brokenPipe)
    }

    /// The malloc probe interposes malloc/free for the whole process and arms itself right before
    /// the crash: the handler must not allocate. The self-test shows the probe does see allocations.
    @Test func handlerNeverAllocates() throws {
        let directory = temporaryDirectory("malloc")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let selfTest = try runChild(Built.mallocProbe, [directory, "--self-test"])
        #expect(selfTest.output.contains("MALLOC-IN-HANDLER"), "the probe must see an allocation it makes itself")

        let crash = try runChild(Built.mallocProbe, [directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        #expect(!crash.output.contains("MALLOC-IN-HANDLER"))
        let reports = loadReports(directory, symbolicate: false)
        try #require(reports.count == 1)
        #expect(reports[0].isComplete)
        #expect(reports[0].launchId == "malloc-probe")
    }

    /// Opt-in recovery: a background thread's crash is recorded, the thread parked, and the
    /// process goes on to exit normally.
    @Test func recoveryParksTheCrashedBackgroundThread() throws {
        let directory = temporaryDirectory("recover")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "recover-thread", "--dir", directory])
        #expect(result.termination == .exited(0))
        #expect(result.output.contains("RECOVERED true"))
        let reports = loadReports(directory, symbolicate: false)
        try #require(reports.count == 1)
        #expect(reports[0].crash?.recovered == true)
        #expect(reports[0].crash?.mainThread == false)
    }
}
