import Foundation
import Logging

/// One line per message on standard error: `time level label message key=value ...`, values
/// quoted when they contain spaces, quotes or `=`, so lines can be filtered with grep or parsed.
public struct KeyValueLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let label: String

    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var line = "ts=\(formatter.string(from: Date())) level=\(event.level) logger=\(Self.quote(label)) msg=\(Self.quote("\(event.message)"))"
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            line += " \(key)=\(Self.quote("\(value)"))"
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    static func quote(_ text: String) -> String {
        let needsQuotes = text.isEmpty || text.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }
        guard needsQuotes else { return text }
        return "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}

/// Deletes data older than `olderThanDays` from `database` (the `prune` command).
public func pruneData(database: CollectorConfiguration.Database, olderThanDays: Int, logger: Logger) async throws -> Int64 {
    let store: SQLStore
    switch database {
    case .sqlite(let path): store = try await SQLStore.openSQLite(path: path, logger: logger)
    case .postgres(let url): store = try await SQLStore.openPostgres(url: url, logger: logger)
    }
    try await store.migrate()
    let deleted = try await store.deleteData(receivedBefore: Date().addingTimeInterval(-Double(olderThanDays) * 86_400))
    try await store.close()
    return deleted
}
