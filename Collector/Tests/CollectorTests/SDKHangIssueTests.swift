@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// CrashShield's app hangs and abnormal exits as the collector shows them: each kind is
/// an issue of its own, apart from crashes with the same stack, and the sessions the next start
/// closes `abnormal` beside them count in release health. The envelopes are samples of what the
/// SDK sends (Tests/Golden/Reporting/hangs, exported by the root package's AppHangTests with
/// CRASHSHIELD_INTEROP_DIR set): a hang that ended and a fatal hang, each with the probe's
/// reader and sleeper threads beside the hung one, and an abnormal exit, release `hang-probe@1.0`.
@Suite("CrashShield app hangs and abnormal exits")
struct SDKHangIssueTests {
    static func sample(_ name: String) throws -> Envelope {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return try Envelope.parse(Data(contentsOf: url.appendingPathComponent("Tests/Golden/Reporting/hangs/\(name).envelope")))
    }

    static func event(_ envelope: Envelope) throws -> JSONValue {
        try JSONValue.parse(try #require(envelope.items.first { $0.type == "event" }).payload)
    }

    /// The crash a hang's stack would give (same frames, a signal's synthetic type).
    static func crash(like hang: JSONValue) throws -> JSONValue {
        guard case .object(var event) = hang, case .object(var exception)? = hang["exception"]?["values"]?.arrayValue?.first else {
            throw SampleError()
        }
        exception["type"] = "SIGSEGV"
        exception["value"] = "Segmentation fault"
        exception["mechanism"] = ["type": "signalhandler", "handled": false, "synthetic": true]
        event["exception"] = ["values": [.object(exception)]]
        event["event_id"] = .string(Fixtures.eventID())
        event["level"] = "fatal"
        return .object(event)
    }

    struct SampleError: Error {}

    @Test func grouping() throws {
        let hang = Grouping.group(try Self.event(try Self.sample("live-app-hang")))
        let fatalHang = Grouping.group(try Self.event(try Self.sample("live-fatal-app-hang")))
        let abnormal = Grouping.group(try Self.event(try Self.sample("live-abnormal-exit")))
        let crash = Grouping.group(try Self.crash(like: try Self.event(try Self.sample("live-app-hang"))))
        #expect(hang.components.first == "type:App Hanging", "\(hang.components)")
        #expect(hang.components.contains { $0.contains("blockMainThread") }, "the hanging call site: \(hang.components)")
        #expect(hang.hash == fatalHang.hash, "a hang at one call site is one issue, fatal or not")
        #expect(hang.hash != crash.hash, "a hang is not the crash with the same stack")
        #expect(abnormal.components == ["fingerprint:crashshield.abnormal-exit"])
        #expect(Set([hang.hash, abnormal.hash, crash.hash]).count == 3)
        #expect(hang.title.contains("App Hanging") && abnormal.title.contains("AbnormalExit"), "\(hang.title) / \(abnormal.title)")
    }

    /// The issue page of an app hang shows every thread the SDK sampled: the hung thread with the
    /// exception's frames (it names the thread by `thread_id` and has no stack of its own), and the
    /// probe's two other threads, each with its own blocking function.
    @Test func issuePageShowsTheHangsOtherThreads() async throws {
        let event = try Self.event(try Self.sample("live-app-hang"))
        let threads = event["threads"]?["values"]?.arrayValue ?? []
        let hungID = try #require(threads.first?["id"]?.intValue)
        let reader = try #require(threads.first { $0["name"] == "probe-reader" }?["id"]?.intValue, "the sample has the probe's reader: \(threads)")
        let sleeper = try #require(threads.first { $0["name"] == "probe-sleeper" }?["id"]?.intValue)
        try await DashboardTests.run { harness, browser in
            var envelope = try Self.sample("live-app-hang")
            envelope.header["dsn"] = nil
            #expect(try await harness.post(body: [UInt8](envelope.serialized())).status == 200)
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/issues/1").text
            #expect(page.components(separatedBy: "<details class=\"thread\"").count - 1 == threads.count, "one section per thread")
            let hung = IssuePageTests.slice(page, from: "data-thread=\"\(hungID)\"", to: "</details>")
            #expect(hung.contains("current") && hung.contains("Frames of the exception App Hanging raised on this thread"), "\(hung)")
            #expect(hung.contains("blockMainThread"), "\(hung)")
            let readerSection = IssuePageTests.slice(page, from: "data-thread=\"\(reader)\"", to: "</details>")
            #expect(readerSection.contains("probe-reader") && readerSection.contains("probeReaderBlockedInRead"), "\(readerSection)")
            #expect(!readerSection.contains("blockMainThread") && !readerSection.contains("crashed"))
            let sleeperSection = IssuePageTests.slice(page, from: "data-thread=\"\(sleeper)\"", to: "</details>")
            #expect(sleeperSection.contains("probe-sleeper") && sleeperSection.contains("probeSleeperInNanosleep"), "\(sleeperSection)")
        }
    }

    @Test func ingestedAsTheirOwnIssuesAndCountedInReleaseHealth() async throws {
        try await Harness.run { harness in
            for name in ["live-app-hang", "live-fatal-app-hang", "live-abnormal-exit"] {
                // The sample's `dsn` header names the test server it was sent to: left out here.
                var envelope = try Self.sample(name)
                envelope.header["dsn"] = nil
                let response = try await harness.post(body: [UInt8](envelope.serialized()))
                #expect(response.status == 200, "\(name): \(response.status) \(response.text)")
            }
            let crash = try Self.crash(like: try Self.event(try Self.sample("live-app-hang")))
            #expect(try await harness.post(body: Fixtures.envelope(event: crash)).status == 200)

            let issues = try await harness.issues()
            #expect(issues.count == 3, "hangs, abnormal exits, the crash: \(issues)")
            let titles = issues.compactMap { $0["title"]?.stringValue }
            let hangIssue = issues.first { $0["title"]?.stringValue?.contains("App Hanging") == true }
            #expect(hangIssue?["event_count"]?.intValue == 2, "\(titles)")
            let abnormalIssue = issues.first { $0["title"]?.stringValue?.contains("AbnormalExit") == true }
            #expect(abnormalIssue?["event_count"]?.intValue == 1, "\(titles)")

            let health = try await harness.api("/api/0/projects/\(harness.project.id)/release-health").json
            let release = try #require(health?.arrayValue?.first { $0["release"]?.stringValue == "hang-probe@1.0" }, "\(String(describing: health))")
            #expect(release["abnormal_sessions"]?.intValue == 2, "the fatal hang's and the abnormal exit's runs: \(release)")
        }
    }
}
