import CrashShieldProtocol
import CrashShield
import Foundation

/// `shield reports [--json] [--dir D] [--no-symbolicate] [--delete]`: lists the pending reports
/// of D, symbolicated. `--json` prints one JSON object per report per line (the report schema
/// plus `function`/`file`/`line` in frames and `classification`); unreadable files print
/// `{"file": ..., "error": ...}`. `--delete` removes each report after printing it.
enum ReportsCommand {
    static func run(_ arguments: [String]) -> Int32 {
        let directory = CrashCommand.option("--dir", in: arguments) ?? CaptureOptions.defaultDirectory
        let json = arguments.contains("--json")
        let loaded = CrashCapture.pendingReports(in: directory, symbolicate: !arguments.contains("--no-symbolicate"))
        if !json && loaded.isEmpty { print("no pending reports in \(directory)") }
        for item in loaded {
            switch item.result {
            case .success(let report):
                if json {
                    print(String(decoding: report.jsonData(), as: UTF8.self))
                } else {
                    printText(CrashEvent(report))
                }
            case .failure(let error):
                if json {
                    let escaped = String(decoding: (try? JSONEncoder().encode(item.path)) ?? Data("\"\"".utf8), as: UTF8.self)
                    print("{\"file\": \(escaped), \"error\": \"\(error)\"}")
                } else {
                    print("\(item.path): unreadable (\(error))")
                }
            }
            if arguments.contains("--delete") { try? FileManager.default.removeItem(atPath: item.path) }
        }
        return 0
    }

    /// The text form: what a user of the public `CrashEvent` can print (the raw report supplies
    /// the details that are optional in a file cut short).
    static func printText(_ event: CrashEvent) {
        let report = event.raw
        let crash = report.crash
        var headline = "\(event.id): \(report.classification?.rawValue ?? "?")"
        if let name = crash?.signalName { headline += " \(name)" }
        if let code = crash?.codeName { headline += " \(code)" }
        if let address = crash?.faultAddress { headline += " at \(address)" }
        print(headline)
        if let exception = report.exception {
            print("  \(exception.runtime == "c++" ? "c++ exception" : "exception") \(exception.name ?? "?"): \(exception.reason ?? "")")
        }
        print("  thread \(crash?.threadId ?? 0)\(crash?.mainThread == true ? " (main)" : "") phase \(report.launchPhase?.rawValue ?? "?")"
              + "\(event.isComplete ? "" : " [truncated]")\(report.minimal == true ? " [minimal: the handler crashed]" : "")"
              + "\(crash?.recovered == true ? " [thread parked, process continued]" : "")")
        for (index, frame) in event.crashedThreadFrames.prefix(16).enumerated() {
            let image = frame.image.map { ($0 as NSString).lastPathComponent } ?? "?"
            var line = "  #\(index) \(frame.address ?? "?") \(image)+\(frame.offset ?? "?") \(frame.function ?? "?")"
            if let file = frame.file { line += " \(file)\(frame.line.map { ":\($0)" } ?? "")" }
            if frame.sdk == true { line += " [CrashShield]" }
            print(line)
        }
        if let scope = report.scope { scopeLines(scope).forEach { print("  \($0)") } }
    }

    /// The scope in a few lines: user, tags, contexts, the last 5 breadcrumbs and what the report
    /// left out.
    static func scopeLines(_ scope: CrashScope.Snapshot) -> [String] {
        func pairs(_ values: [String: String]) -> String {
            values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        var lines: [String] = []
        if let user = scope.user {
            let fields = [("id", user.id), ("username", user.username), ("email", user.email), ("ip", user.ipAddress)]
            lines.append("user " + fields.compactMap { name, value in value.map { "\(name)=\($0)" } }.joined(separator: " "))
        }
        if !scope.tags.isEmpty { lines.append("tags " + pairs(scope.tags)) }
        for (name, values) in scope.contexts.sorted(by: { $0.key < $1.key }) { lines.append("context \(name): " + pairs(values)) }
        if !scope.breadcrumbs.isEmpty {
            lines.append("breadcrumbs (\(scope.breadcrumbs.count), last 5):")
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for crumb in scope.breadcrumbs.suffix(5) {
                var line = "  \(formatter.string(from: crumb.timestamp)) [\(crumb.level)]"
                if let category = crumb.category { line += " \(category):" }
                line += " \(crumb.message)"
                if !crumb.data.isEmpty { line += " {\(pairs(crumb.data))}" }
                lines.append(line)
            }
        }
        let dropped = [("breadcrumbs", scope.droppedBreadcrumbs), ("contexts", scope.droppedContexts), ("tags", scope.droppedTags)]
            .filter { $0.1 > 0 }.map { "\($0.1) \($0.0)" }
        if !dropped.isEmpty { lines.append("scope cut to fit the report: left out " + dropped.joined(separator: ", ")) }
        return lines
    }
}
