import CrashShieldProtocol
import CrashShield
import Foundation

/// `shield crash` options that set the app's scope before the crash:
/// `--user <id>` (id, username "user-<id>", email "<id>@example.com"), `--tag <key>=<value>`,
/// `--context <name>.<key>=<value>`, `--breadcrumb <message>` (category "shield", level
/// warning, data {"index": n}), each repeatable; `--oversize-scope` sets a scope several times
/// a report's 32 KiB bound, mostly breadcrumbs (`fillEveryBound`); `--scope-churn <threads>` starts that many threads that change user, tags, contexts
/// and breadcrumbs without pause, and crashes after 300 ms of it.
enum ScopeSetup {
    static func apply(_ arguments: [String]) {
        for (index, argument) in arguments.enumerated() where index + 1 < arguments.count {
            let value = arguments[index + 1]
            switch argument {
            case "--user":
                CrashScope.setUser(CrashScope.User(id: value, username: "user-\(value)", email: "\(value)@example.com"))
            case "--tag":
                let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { CrashScope.setTag(parts[0], parts[1]) }
            case "--context":
                let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
                let path = parts.first?.split(separator: ".", maxSplits: 1).map(String.init) ?? []
                if parts.count == 2, path.count == 2 {
                    var values = CrashScope.current.contexts[path[0]] ?? [:]
                    values[path[1]] = parts[1]
                    CrashScope.setContext(path[0], values)
                }
            case "--breadcrumb":
                CrashScope.addBreadcrumb(message: value, category: "shield", level: .warning, data: ["index": "\(index)"])
            default:
                break
            }
        }
        if arguments.contains("--oversize-scope") { fillEveryBound() }
        if let churn = CrashCommand.option("--scope-churn", in: arguments), let threads = Int(churn), threads > 0 {
            for thread in 0..<threads { Thread.detachNewThread { churnForever(thread) } }
            usleep(300_000)
        }
    }

    /// A scope several times the report's bound, made mostly of breadcrumbs: the user and 50
    /// tags at their bounds, 3 contexts of 20 entries, and 120 breadcrumbs (the ring keeps 100) of
    /// 1 KiB messages with 10 data entries, all with text that needs escaping (quotes,
    /// backslashes, control characters) and multi-byte UTF-8. User, tags and contexts fit the
    /// report; only the oldest breadcrumbs are left out.
    static func fillEveryBound() {
        let value = String(repeating: "\"\\\u{01}é🔥", count: 40)
        CrashScope.setUser(CrashScope.User(id: value, username: value, email: value, ipAddress: value))
        for tag in 0..<CrashScope.maxTags { CrashScope.setTag("tag-\(tag)", String(repeating: "t", count: 300)) }
        for context in 0..<3 {
            CrashScope.setContext("context-\(context)", Dictionary(uniqueKeysWithValues: (0..<CrashScope.maxContextEntries).map { ("key-\($0)", "value-\($0)") }))
        }
        let data = Dictionary(uniqueKeysWithValues: (0..<CrashScope.maxBreadcrumbDataEntries).map { ("key-\($0)", value) })
        for crumb in 0..<CrashScope.maxBreadcrumbs + 20 {
            CrashScope.addBreadcrumb(message: "breadcrumb \(crumb) " + String(repeating: value, count: 4), category: "oversize", data: data)
        }
    }

    private static func churnForever(_ thread: Int) -> Never {
        var step = 0
        while true {
            step += 1
            CrashScope.setTag("churn-\(thread)", "step \(step) \"quoted\"")
            CrashScope.addBreadcrumb(message: "thread \(thread) step \(step)", category: "churn", data: ["step": "\(step)"])
            CrashScope.setUser(CrashScope.User(id: "churn-\(thread)-\(step)"))
            CrashScope.setContext("churn", ["thread": "\(thread)", "step": "\(step)"])
            if step % 50 == 0 { CrashScope.clearBreadcrumbs() }
            if step % 97 == 0 { CrashScope.clear() }
        }
    }
}

/// Bench cases of the scope (`shield bench-capture`): the cost of one change with a full ring of
/// ordinary breadcrumbs (`capture.scope_add_breadcrumb`: message of ~40 bytes, two data entries),
/// the same with the scope at every bound so each change shrinks it to fit
/// (`capture.scope_add_breadcrumb_oversized`), and the signal-to-disk time of a crash carrying
/// a full 32 KiB scope (`capture.signal_to_disk_full_scope`, the report's `handler_ns`).
extension BenchCaptureCommand {
    struct ScopeCase {
        let name: String
        let samples: [UInt64]
        var median: UInt64 { samples.isEmpty ? 0 : samples[samples.count / 2] }
    }

    static func scopeCases(runs: Int) -> [ScopeCase] {
        defer { CrashScope.clear() }
        func addBreadcrumbSamples() -> [UInt64] {
            var samples: [UInt64] = []
            for round in 0..<max(runs, 20) * 10 {
                let start = DispatchTime.now().uptimeNanoseconds
                CrashScope.addBreadcrumb(message: "bench breadcrumb \(round) with an ordinary message",
                                             category: "bench", data: ["round": "\(round)", "screen": "checkout"])
                samples.append(DispatchTime.now().uptimeNanoseconds - start)
            }
            return samples.sorted()
        }
        CrashScope.clear()
        CrashScope.setUser(CrashScope.User(id: "42", email: "ada@example.com"))
        for tag in 0..<10 { CrashScope.setTag("tag-\(tag)", "value \(tag)") }
        for _ in 0..<CrashScope.maxBreadcrumbs { CrashScope.addBreadcrumb(message: "warm-up") }
        let ordinary = addBreadcrumbSamples()
        ScopeSetup.fillEveryBound()
        let oversized = addBreadcrumbSamples()
        CrashScope.clear()
        let crash = signalToDiskSamples(kind: "segv", runs: runs, extraArguments: ["--oversize-scope"])
        return [ScopeCase(name: "capture.scope_add_breadcrumb", samples: ordinary),
                ScopeCase(name: "capture.scope_add_breadcrumb_oversized", samples: oversized),
                ScopeCase(name: "capture.signal_to_disk_full_scope", samples: crash)]
    }
}
