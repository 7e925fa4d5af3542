import CrashShieldRecording
import CrashShieldSentry
import CrashShieldProtocol
import Foundation

/// `shield send --dsn DSN --dir D [--timeout S]`: turns the crash reports pending in D into event
/// envelopes in D's outbox (symbolicated; each report file is removed once all are stored), then
/// sends the outbox's envelopes, oldest first, printing one line per envelope (`delivered`, `dropped` or `kept`, with the reason) and a summary.
/// Exit status: 0 when the outbox is empty afterwards and nothing was dropped, 1 when something
/// could not be sent (kept envelopes stay for the next try), 2 for a bad DSN or directory.
///
/// `shield envelope --dir D [--dsn DSN]`: with a DSN, first the envelopes D's pending crash reports
/// would become (`# crash report <i> of <n>`, not stored); then each envelope of the outbox as
/// `# <file> (<n> bytes)` followed by its bytes as stored (without `sent_at`, which is set when it
/// is sent), and the discard counts waiting to be reported.
enum SendCommand {
    static func run(dsn text: String, directory: String, timeout: Double) -> Int32 {
        let dsn: DSN
        do {
            dsn = try DSN(text)
        } catch {
            FileHandle.standardError.write(Data("shield send: \(error)\n".utf8))
            return 2
        }
        let outbox: Outbox
        do {
            outbox = try Outbox(directory: Outbox.directory(forReportDirectory: directory))
        } catch {
            FileHandle.standardError.write(Data("shield send: \(error)\n".utf8))
            return 2
        }
        guard convertPendingReports(in: directory, dsn: dsn, into: outbox) else { return 1 }
        var options = TransportOptions()
        options.requestTimeout = .milliseconds(Int(max(0.1, timeout) * 1000))
        options.maximumAttempts = 1
        let transport = EnvelopeTransport(dsn: dsn, outbox: outbox, options: options)
        let before = outbox.pending().count
        print("sending \(before) envelope\(before == 1 ? "" : "s") to \(dsn.envelopeURL.absoluteString)")
        let result = transport.sendPending { outcome in
            var line: String
            switch outcome.kind {
            case .delivered: line = "delivered \(outcome.entry)"
            case .dropped(let reason): line = "dropped \(outcome.entry) (\(reason))"
            case .kept(let reason): line = "kept \(outcome.entry) (\(reason))"
            }
            if let status = outcome.status { line += " HTTP \(status)" }
            if outcome.itemsDroppedForRateLimits > 0 { line += ", \(outcome.itemsDroppedForRateLimits) item(s) dropped for rate limits" }
            print(line)
            fflush(nil)
        }
        let delivered = result.outcomes.filter { $0.kind == .delivered }.count
        let dropped = result.outcomes.filter { if case .dropped = $0.kind { return true } else { return false } }.count
        print("delivered \(delivered), dropped \(dropped), pending \(result.remaining)")
        if result.stop == .busy { print("another sender is using \(outbox.directory); try again later") }
        return result.remaining == 0 && dropped == 0 && result.stop != .busy ? 0 : 1
    }

    /// Converts D's pending crash reports (release, environment: the defaults of
    /// `ReportingOptions`) and stores their envelopes; removes the report files once every
    /// envelope is durable. An unreadable report is left where it is. False when storing failed
    /// (the reports then stay, and a later run converts them again under the same event ids).
    static func convertPendingReports(in directory: String, dsn: DSN, into outbox: Outbox) -> Bool {
        let loaded = CrashCapture.pendingReports(in: directory)
        guard !loaded.isEmpty else { return true }
        var reports: [CrashReport] = []
        var converted: [String] = []
        for item in loaded {
            switch item.result {
            case .success(let report):
                reports.append(report)
                converted.append(item.path)
            case .failure(let error):
                print("unreadable report \(item.path) (\(error)): left in place")
            }
        }
        guard !reports.isEmpty else { return true }
        do {
            let options = try ReportingOptions(dsn: dsn)
            let installationID = (try? InstallationID.load(directory: directory)) ?? UUID().uuidString.lowercased()
            let reporter = EventReporter(options: options, installationID: installationID)
            for envelope in reporter.crashEnvelopes(reports: reports, sessions: nil) { try outbox.enqueue(envelope) }
        } catch {
            FileHandle.standardError.write(Data("shield send: cannot store the crash reports' envelopes: \(error)\n".utf8))
            return false
        }
        for path in converted { unlink(path) }
        print("converted \(reports.count) crash report\(reports.count == 1 ? "" : "s") into \(outbox.directory)")
        return true
    }

    static func printEnvelopes(directory: String, dsn text: String?) -> Int32 {
        if let text {
            // What the pending crash reports would become (not stored).
            do {
                let options = try ReportingOptions(dsn: text)
                let reports = CrashCapture.pendingReports(in: directory).compactMap { try? $0.result.get() }
                let installationID = (try? InstallationID.load(directory: directory)) ?? UUID().uuidString.lowercased()
                let reporter = EventReporter(options: options, installationID: installationID)
                let ordered = reports.sorted { ($0.timestampNs ?? 0, $0.id) < ($1.timestampNs ?? 0, $1.id) }
                for (index, report) in ordered.enumerated() {
                    // A report-only crash sends the guard's incident first, then the crash.
                    let envelopes = reporter.crashEnvelopes(reports: [report], sessions: nil)
                    for (position, envelope) in envelopes.enumerated() {
                        print(position == envelopes.count - 1
                              ? "# crash report \(index + 1) of \(ordered.count) (not yet in the outbox)"
                              : "# incident of the report-only guard before crash report \(index + 1) (not yet in the outbox)")
                        fflush(nil)
                        FileHandle.standardOutput.write(envelope.serialized())
                    }
                }
            } catch {
                FileHandle.standardError.write(Data("shield envelope: \(error)\n".utf8))
                return 2
            }
        }
        let outboxDirectory = Outbox.directory(forReportDirectory: directory)
        guard FileManager.default.fileExists(atPath: outboxDirectory) else {
            print("no pending envelopes in \(outboxDirectory)")
            return 0
        }
        let outbox: Outbox
        do {
            outbox = try Outbox(directory: outboxDirectory)
        } catch {
            FileHandle.standardError.write(Data("shield envelope: \(error)\n".utf8))
            return 2
        }
        let entries = outbox.pending()
        if entries.isEmpty { print("no pending envelopes in \(outboxDirectory)") }
        var status: Int32 = 0
        for entry in entries {
            print("# \(entry.name) (\(entry.byteCount) bytes)")
            fflush(nil)
            do {
                let envelope = try outbox.load(entry)
                FileHandle.standardOutput.write(envelope.serialized())
            } catch {
                print("# unreadable: \(error)")
                status = 1
            }
        }
        let discards = outbox.pendingDiscards()
        for key in discards.keys.sorted() {
            print("# discarded, to report: \(discards[key]!) \(key.category) (\(key.reason))")
        }
        return status
    }
}
