import CLibPQ
import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLiteNIO

/// A value bound to or read from a SQL statement.
enum DBValue: Sendable, Hashable {
    case int(Int64)
    case double(Double)
    case text(String)
    case blob(Data)
    case null
}

/// One result row, by column name.
struct DBRow: Sendable {
    let values: [String: DBValue]

    func int(_ name: String) -> Int64? {
        switch values[name] {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.0e15: return Int64(value)
        case .text(let text): return Int64(text)
        default: return nil
        }
    }

    func double(_ name: String) -> Double? {
        switch values[name] {
        case .double(let value): return value
        case .int(let value): return Double(value)
        case .text(let text): return Double(text)
        default: return nil
        }
    }

    func string(_ name: String) -> String? {
        switch values[name] {
        case .text(let text): return text
        case .int(let value): return String(value)
        case .double(let value): return String(value)
        default: return nil
        }
    }

    func data(_ name: String) -> Data? {
        if case .blob(let data) = values[name] { return data }
        return nil
    }
}

enum SQLDialect: Sendable { case sqlite, postgres }

/// One database connection. Statements use `?` placeholders (each backend converts them).
/// The store calls one statement at a time.
protocol SQLBackend: Sendable {
    var dialect: SQLDialect { get }
    func query(_ sql: String, _ binds: [DBValue]) async throws -> [DBRow]
    func close() async throws
}

// MARK: SQLite

final class SQLiteBackend: SQLBackend {
    let dialect = SQLDialect.sqlite
    private let connection: SQLiteConnection

    private init(connection: SQLiteConnection) { self.connection = connection }

    static func open(path: String, logger: Logger) async throws -> SQLiteBackend {
        let storage: SQLiteConnection.Storage = path == ":memory:" ? .memory : .file(path: path)
        let connection = try await SQLiteConnection.open(storage: storage, logger: logger)
        do {
            if path != ":memory:" {
                _ = try await connection.query("PRAGMA journal_mode=WAL", [])
                // NORMAL in WAL mode: a commit survives a crash of the process (not of the machine).
                _ = try await connection.query("PRAGMA synchronous=NORMAL", [])
            }
            _ = try await connection.query("PRAGMA foreign_keys=ON", [])
            _ = try await connection.query("PRAGMA busy_timeout=5000", [])
        } catch {
            try? await connection.close()
            throw error
        }
        return SQLiteBackend(connection: connection)
    }

    func query(_ sql: String, _ binds: [DBValue]) async throws -> [DBRow] {
        let data: [SQLiteData] = binds.map { value in
            switch value {
            case .int(let number): return .integer(Int(number))
            case .double(let number): return .float(number)
            case .text(let text): return .text(text)
            case .blob(let bytes): return .blob(ByteBuffer(bytes: bytes))
            case .null: return .null
            }
        }
        return try await connection.query(sql, data).map { row in
            var values: [String: DBValue] = [:]
            for column in row.columns {
                switch column.data {
                case .integer(let number): values[column.name] = .int(Int64(number))
                case .float(let number): values[column.name] = .double(number)
                case .text(let text): values[column.name] = .text(text)
                case .blob(let buffer): values[column.name] = .blob(Data(buffer.readableBytesView))
                case .null: values[column.name] = .null
                }
            }
            return DBRow(values: values)
        }
    }

    func close() async throws { try await connection.close() }
}

// MARK: PostgreSQL

/// A libpq connection; its blocking calls run on NIO's shared thread pool, one at a time.
final class PostgresBackend: SQLBackend, @unchecked Sendable {
    let dialect = SQLDialect.postgres
    /// `PGconn *`. Used by one thread at a time: the store serializes statements, and `lock`
    /// guards against any caller that does not.
    private let connection: OpaquePointer
    private let lock = NSLock()
    private var closed = false

    private init(connection: OpaquePointer) { self.connection = connection }

    /// - Throws: `database.connect` with libpq's message when the server refuses or is unreachable.
    static func connect(url: String) async throws -> PostgresBackend {
        try await NIOThreadPool.singleton.runIfActive {
            guard let connection = PQconnectdb(url) else {
                throw CollectorError(code: "database.connect", message: "libpq could not allocate a connection", status: 500)
            }
            guard PQstatus(connection) == CONNECTION_OK else {
                let message = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
                PQfinish(connection)
                throw CollectorError(code: "database.connect", message: "PostgreSQL: \(message)", status: 500)
            }
            return PostgresBackend(connection: connection)
        }
    }

    /// `?` placeholders become `$1`, `$2`, ... (the statements have no `?` inside string literals).
    static func numbered(_ sql: String) -> String {
        var output = ""
        var index = 0
        for character in sql {
            if character == "?" {
                index += 1
                output += "$\(index)"
            } else {
                output.append(character)
            }
        }
        return output
    }

    func query(_ sql: String, _ binds: [DBValue]) async throws -> [DBRow] {
        let statement = Self.numbered(sql)
        return try await NIOThreadPool.singleton.runIfActive { try self.execute(statement, binds) }
    }

    private func execute(_ sql: String, _ binds: [DBValue]) throws -> [DBRow] {
        try lock.withLock { try executeLocked(sql, binds) }
    }

    private func executeLocked(_ sql: String, _ binds: [DBValue]) throws -> [DBRow] {
        guard !closed else { throw CollectorError.storage("PostgreSQL: the connection is closed") }
        // Text parameters, except blobs, which go in binary (format 1) so no escaping is needed.
        var buffers: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { for buffer in buffers { free(buffer) } }
        for value in binds {
            switch value {
            case .null:
                buffers.append(nil); lengths.append(0); formats.append(0)
            case .int(let number):
                buffers.append(strdup(String(number))); lengths.append(0); formats.append(0)
            case .double(let number):
                buffers.append(strdup(number.isFinite ? "\(number)" : "0")); lengths.append(0); formats.append(0)
            case .text(let text):
                buffers.append(strdup(text)); lengths.append(0); formats.append(0)
            case .blob(let data):
                let memory = malloc(max(data.count, 1))!.assumingMemoryBound(to: CChar.self)
                data.withUnsafeBytes { raw in
                    if let base = raw.baseAddress { memcpy(memory, base, data.count) }
                }
                buffers.append(memory); lengths.append(Int32(data.count)); formats.append(1)
            }
        }
        let result: OpaquePointer? = buffers.withUnsafeBufferPointer { values in
            values.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(values.count, 1)) { pointers in
                PQexecParams(connection, sql, Int32(binds.count), nil, binds.isEmpty ? nil : pointers,
                             lengths, formats, 0)
            }
        }
        guard let result else {
            throw CollectorError.storage("PostgreSQL: \(String(cString: PQerrorMessage(connection)))")
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            throw CollectorError(code: state == "23505" ? "storage.unique_violation" : "storage.failed",
                                 message: "PostgreSQL \(state): \(message)", status: 500)
        }
        var rows: [DBRow] = []
        let fieldCount = PQnfields(result)
        let names = (0..<fieldCount).map { String(cString: PQfname(result, $0)) }
        for row in 0..<PQntuples(result) {
            var values: [String: DBValue] = [:]
            for field in 0..<fieldCount {
                let name = names[Int(field)]
                if PQgetisnull(result, row, field) == 1 {
                    values[name] = .null
                    continue
                }
                let text = String(cString: PQgetvalue(result, row, field))
                switch PQftype(result, field) {
                case 20, 21, 23: values[name] = Int64(text).map(DBValue.int) ?? .text(text)  // int8, int2, int4
                case 700, 701: values[name] = Double(text).map(DBValue.double) ?? .text(text)  // float4, float8
                case 1700: values[name] = Int64(text).map(DBValue.int) ?? Double(text).map(DBValue.double) ?? .text(text)  // numeric
                case 16: values[name] = .int(text == "t" ? 1 : 0)  // bool
                case 17: values[name] = .blob(Self.decodeByteaHex(text))  // bytea
                default: values[name] = .text(text)
                }
            }
            rows.append(DBRow(values: values))
        }
        return rows
    }

    /// bytea in text output: `\x` followed by hex digits.
    static func decodeByteaHex(_ text: String) -> Data {
        var bytes = [UInt8]()
        var utf8 = Array(text.utf8)
        if utf8.starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "x")]) { utf8.removeFirst(2) }
        bytes.reserveCapacity(utf8.count / 2)
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return 0
            }
        }
        var index = 0
        while index + 1 < utf8.count {
            bytes.append(nibble(utf8[index]) << 4 | nibble(utf8[index + 1]))
            index += 2
        }
        return Data(bytes)
    }

    func close() async throws {
        lock.withLock {
            guard !closed else { return }
            closed = true
            PQfinish(connection)
        }
    }
}
