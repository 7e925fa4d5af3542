import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// Durations in the options are `Duration`s; the handler watchdog's C timer takes whole seconds.
@Suite struct OptionUnitsTests {
    @Test func theWatchdogDefaultsToFiveSeconds() {
        #expect(CaptureOptions().handlerWatchdog == .seconds(5))
        #expect(CaptureOptions.watchdogSeconds(CaptureOptions().handlerWatchdog) == 5)
    }

    /// Rounded up to a whole second, never under one second, clamped to the C field's range.
    @Test func theWatchdogIsRoundedUpToWholeSecondsAndAtLeastOne() {
        #expect(CaptureOptions.watchdogSeconds(.seconds(1)) == 1)
        #expect(CaptureOptions.watchdogSeconds(.seconds(7)) == 7)
        #expect(CaptureOptions.watchdogSeconds(.milliseconds(1500)) == 2)
        #expect(CaptureOptions.watchdogSeconds(.nanoseconds(2_000_000_001)) == 3)
        #expect(CaptureOptions.watchdogSeconds(.milliseconds(10)) == 1)
        #expect(CaptureOptions.watchdogSeconds(.zero) == 1)
        #expect(CaptureOptions.watchdogSeconds(.seconds(-3)) == 1)
        #expect(CaptureOptions.watchdogSeconds(.milliseconds(-500)) == 1)
        #expect(CaptureOptions.watchdogSeconds(.seconds(Int64(UInt32.max) + 10)) == UInt32.max)
        #expect(CaptureOptions.watchdogSeconds(.seconds(Int64.max)) == UInt32.max)
    }

    /// A report's nanosecond fields read as Durations; absent fields stay nil.
    @Test func reportTimesReadAsDurations() throws {
        let report = try CrashReport.decode(Array(#"{"id":"r","uptime_ns":1500000000,"handler_ns":250000}"#.utf8))
        #expect(report.uptime == .milliseconds(1500))
        #expect(report.handlerDuration == .microseconds(250))
        let bare = try CrashReport.decode(Array(#"{"id":"r"}"#.utf8))
        #expect(bare.uptime == nil)
        #expect(bare.handlerDuration == nil)
    }
}
