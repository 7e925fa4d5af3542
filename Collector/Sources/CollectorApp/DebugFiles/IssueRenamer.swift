import Foundation
import Logging
import ServiceLifecycle

/// Gives issues named after an unsymbolicated frame (`module+0x...` in their stored title or
/// culprit, as grouping names a frame the SDK could not name) the names their debug files give:
/// the issue's newest event is symbolicated (`Symbolication`) and named again as grouping names an
/// event (`Grouping.group(...).title`, `.culprit`). The issue's grouping hash never changes, so
/// later events keep joining it. Runs after a debug file is stored (every such issue of the
/// project, newest first, at most `passLimit`) and every `interval` for the issues created since
/// its last pass in projects that have debug files. Idempotent: a rename only applies while the
/// issue still has the names it read, so collectors sharing a database may all run it.
actor IssueRenamer {
    let store: any DebugFileStore & CollectorStore
    let symbolication: Symbolication
    let logger: Logger
    static let passLimit = 1000
    /// Per project, the highest issue id a pass has looked at.
    private var seen: [Int64: Int64] = [:]

    init(store: any DebugFileStore & CollectorStore, symbolication: Symbolication, logger: Logger) {
        self.store = store
        self.symbolication = symbolication
        self.logger = logger
    }

    /// Looks at the project's issues named after addresses (all of them, or those with an id above
    /// `newerThan`); returns how many were renamed.
    @discardableResult
    func pass(projectID: Int64, newerThan: Int64? = nil) async -> Int {
        var renamed = 0
        do {
            let issues = try await store.issuesNamedByAddress(projectID: projectID, newerThan: newerThan ?? 0, limit: Self.passLimit)
            for issue in issues {
                seen[projectID] = max(seen[projectID] ?? 0, issue.id)
                guard let latest = try await store.events(issueID: issue.id, limit: 1).first,
                      let payload = try await store.eventPayload(projectID: projectID, eventID: latest.eventID),
                      let event = EventView.parse(payload) else { continue }
                let naming = Grouping.group(await symbolication.symbolicate(event, projectID: projectID))
                guard naming.title != issue.title || naming.culprit != issue.culprit else { continue }
                if try await store.renameIssue(id: issue.id, from: (issue.title, issue.culprit), to: (naming.title, naming.culprit)) {
                    renamed += 1
                }
            }
        } catch {
            logger.warning("issues could not be renamed after their debug files", metadata: ["project": "\(projectID)", "error": "\(error)"])
        }
        if renamed > 0 { logger.info("issues renamed after their debug files", metadata: ["project": "\(projectID)", "issues": "\(renamed)"]) }
        return renamed
    }

    /// One pass over every project with debug files, for the issues created since the last.
    func passOverNewIssues() async {
        let projects: [Int64]
        do { projects = try await store.projectsWithDebugFiles() } catch {
            logger.warning("projects with debug files could not be read", metadata: ["error": "\(error)"])
            return
        }
        for project in projects {
            if let since = seen[project] {
                await pass(projectID: project, newerThan: since)
            } else {
                await pass(projectID: project)
            }
        }
    }
}

/// Runs `IssueRenamer.passOverNewIssues` every `interval` seconds until shutdown.
struct IssueRenamerService: Service {
    let renamer: IssueRenamer
    let interval: Double

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await renamer.passOverNewIssues()
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(interval)) }
        }
    }
}
