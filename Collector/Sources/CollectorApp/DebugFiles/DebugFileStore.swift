import Foundation

/// A debug file assembled from uploaded chunks, stored for one project.
public struct DebugFileRecord: Sendable, Hashable {
    public var projectID: Int64
    /// SHA-1 of the whole file (lowercase hex): what `sentry-cli` names it by.
    public var checksum: String
    /// Sentry's debug id of the image it describes (see `ObjectFile.Slice.debugID`).
    public var debugID: String
    public var codeID: String?
    /// The name the uploader gave (a path or file name; shown, never opened).
    public var name: String
    /// `elf` or `macho`.
    public var kind: String
    public var arch: String?
    /// See `ObjectFile.Slice.loadAddress`.
    public var loadAddress: UInt64
    public var features: [String]
    public var size: Int64
    /// The SHA-1 checksums of the chunks whose concatenation is the file, in order.
    public var chunks: [String]
    public var created: Date
}

/// Where uploaded debug files live: in the database, as content-addressed chunks (`debug_chunks`,
/// one row per distinct chunk, shared by every file and project that contains it) and one row per
/// assembled file and project (`debug_files`, naming its chunks). In the database rather than in
/// the data directory because several collectors may share one PostgreSQL: an upload answered by
/// one must symbolicate events shown by another. A collector writes a file to its own data
/// directory only as a cache for the symbolizer (`DebugFileCache`), named by its checksum.
public protocol DebugFileStore: Sendable {
    /// The checksums among `checksums` of which no chunk is stored.
    func missingDebugChunks(_ checksums: [String]) async throws -> Set<String>
    /// Stores chunks (checksum, bytes) not stored yet, in one transaction; the caller checked each
    /// checksum against its bytes.
    func storeDebugChunks(_ chunks: [(checksum: String, data: Data)]) async throws
    /// A chunk's bytes, or nil.
    func debugChunk(_ checksum: String) async throws -> Data?
    /// The project's debug file of this content, or nil.
    func debugFile(projectID: Int64, checksum: String) async throws -> DebugFileRecord?
    /// Records an assembled file (a file of the same checksum and debug id stored before for the
    /// project is kept: assembling is idempotent).
    func insertDebugFile(_ file: DebugFileRecord) async throws
    /// The project's debug files for these debug ids (normalized, see
    /// `ObjectFile.normalizedDebugID`), newest first.
    func debugFiles(projectID: Int64, debugIDs: [String]) async throws -> [DebugFileRecord]
    /// The projects that have a debug file.
    func projectsWithDebugFiles() async throws -> [Int64]
    /// The project's issues (id above `newerThan`) whose title or culprit names an address
    /// (`+0x`, as grouping names a frame without a function), newest first, at most `limit`.
    func issuesNamedByAddress(projectID: Int64, newerThan: Int64, limit: Int) async throws -> [(id: Int64, title: String, culprit: String)]
    /// Sets an issue's title and culprit if they are still `from`; whether it did.
    func renameIssue(id: Int64, from: (title: String, culprit: String), to: (title: String, culprit: String)) async throws -> Bool
}

enum DebugFileSchema {
    /// Migration 11.
    static let statements = [
        """
        CREATE TABLE debug_chunks (
            checksum TEXT PRIMARY KEY, size {int} NOT NULL, data {blob} NOT NULL, created {real} NOT NULL)
        """,
        """
        CREATE TABLE debug_files (
            id {serial}, project_id {int} NOT NULL REFERENCES projects(id), checksum TEXT NOT NULL,
            debug_id TEXT NOT NULL, code_id TEXT, name TEXT NOT NULL, kind TEXT NOT NULL, arch TEXT,
            load_address TEXT NOT NULL, features TEXT NOT NULL, size {int} NOT NULL, chunks TEXT NOT NULL,
            created {real} NOT NULL, UNIQUE (project_id, checksum, debug_id))
        """,
        "CREATE INDEX debug_files_debug_id ON debug_files (project_id, debug_id)",
    ]
}

extension SQLStore: DebugFileStore {
    public func missingDebugChunks(_ checksums: [String]) async throws -> Set<String> {
        guard !checksums.isEmpty else { return [] }
        return try await read {
            var present = Set<String>()
            for start in stride(from: 0, to: checksums.count, by: 100) {
                let part = Array(checksums[start..<min(start + 100, checksums.count)])
                let marks = Array(repeating: "?", count: part.count).joined(separator: ", ")
                for row in try await query("SELECT checksum FROM debug_chunks WHERE checksum IN (\(marks))", part.map { .text($0) }) {
                    if let checksum = row.string("checksum") { present.insert(checksum) }
                }
            }
            return Set(checksums).subtracting(present)
        }
    }

    public func storeDebugChunks(_ chunks: [(checksum: String, data: Data)]) async throws {
        guard !chunks.isEmpty else { return }
        let now = Date()
        try await transaction {
            for chunk in chunks {
                _ = try await query(
                    "INSERT INTO debug_chunks (checksum, size, data, created) VALUES (?, ?, ?, ?) ON CONFLICT (checksum) DO NOTHING",
                    [.text(chunk.checksum), Self.int(chunk.data.count), .blob(chunk.data), Self.time(now)])
            }
        }
    }

    public func debugChunk(_ checksum: String) async throws -> Data? {
        try await read { try await query("SELECT data FROM debug_chunks WHERE checksum = ?", [.text(checksum)]).first?.data("data") }
    }

    public func debugFile(projectID: Int64, checksum: String) async throws -> DebugFileRecord? {
        try await read {
            try await query("SELECT * FROM debug_files WHERE project_id = ? AND checksum = ? ORDER BY id LIMIT 1",
                            [Self.int(projectID), .text(checksum)]).first.flatMap(Self.debugFile)
        }
    }

    public func insertDebugFile(_ file: DebugFileRecord) async throws {
        try await serialized(write: true) {
            _ = try await query(
                """
                INSERT INTO debug_files (project_id, checksum, debug_id, code_id, name, kind, arch, load_address, features, size, chunks, created)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project_id, checksum, debug_id) DO NOTHING
                """,
                [Self.int(file.projectID), .text(file.checksum), .text(file.debugID), Self.text(file.codeID), .text(file.name),
                 .text(file.kind), Self.text(file.arch), .text(String(file.loadAddress)), .text(file.features.joined(separator: ",")),
                 Self.int(file.size), .text(file.chunks.joined(separator: ",")), Self.time(file.created)])
        }
    }

    public func debugFiles(projectID: Int64, debugIDs: [String]) async throws -> [DebugFileRecord] {
        guard !debugIDs.isEmpty else { return [] }
        return try await read {
            let marks = Array(repeating: "?", count: debugIDs.count).joined(separator: ", ")
            return try await query(
                "SELECT * FROM debug_files WHERE project_id = ? AND debug_id IN (\(marks)) ORDER BY id DESC",
                [Self.int(projectID)] + debugIDs.map { .text($0) }).compactMap(Self.debugFile)
        }
    }

    public func projectsWithDebugFiles() async throws -> [Int64] {
        try await read { try await query("SELECT DISTINCT project_id FROM debug_files ORDER BY project_id").compactMap { $0.int("project_id") } }
    }

    public func issuesNamedByAddress(projectID: Int64, newerThan: Int64, limit: Int) async throws -> [(id: Int64, title: String, culprit: String)] {
        try await read {
            try await query(
                """
                SELECT id, title, culprit FROM issues WHERE project_id = ? AND id > ? AND (culprit LIKE '%+0x%' OR title LIKE '%+0x%')
                ORDER BY id DESC LIMIT ?
                """, [Self.int(projectID), Self.int(newerThan), Self.int(limit)]
            ).compactMap { row in
                guard let id = row.int("id"), let title = row.string("title"), let culprit = row.string("culprit") else { return nil }
                return (id, title, culprit)
            }
        }
    }

    public func renameIssue(id: Int64, from: (title: String, culprit: String), to: (title: String, culprit: String)) async throws -> Bool {
        try await serialized(write: true) {
            !(try await query("UPDATE issues SET title = ?, culprit = ? WHERE id = ? AND title = ? AND culprit = ? RETURNING id",
                              [.text(to.title), .text(to.culprit), Self.int(id), .text(from.title), .text(from.culprit)]).isEmpty)
        }
    }

    private static func debugFile(_ row: DBRow) -> DebugFileRecord? {
        guard let project = row.int("project_id"), let checksum = row.string("checksum"), let debugID = row.string("debug_id"),
              let name = row.string("name"), let kind = row.string("kind"), let load = row.string("load_address").flatMap({ UInt64($0) }),
              let size = row.int("size"), let chunks = row.string("chunks"), let created = row.double("created")
        else { return nil }
        return DebugFileRecord(
            projectID: project, checksum: checksum, debugID: debugID, codeID: row.string("code_id"), name: name, kind: kind,
            arch: row.string("arch"), loadAddress: load,
            features: (row.string("features") ?? "").split(separator: ",").map(String.init), size: size,
            chunks: chunks.split(separator: ",").map(String.init), created: Date(timeIntervalSince1970: created))
    }
}
