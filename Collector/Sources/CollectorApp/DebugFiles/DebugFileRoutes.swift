import COpenSSL
import CrashShieldProtocol
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The part of Sentry's API that `sentry-cli debug-files upload` uses (API token,
/// `Authorization: Bearer`):
/// - `GET /api/0/organizations/<org>/chunk-upload/`: the upload options (`ChunkUploadOptions`);
/// - `POST` to the same path: `multipart/form-data` whose `file` parts are chunks (`file_gzip`:
///   gzip-compressed), each named (`filename`) by the SHA-1 of its (decompressed) bytes;
/// - `POST /api/0/projects/<org>/<project>/files/difs/assemble/`: `{"<sha1 of the file>": {"name",
///   "debug_id", "chunks": [sha1, ...]}}`; each file is answered `{"state", "missingChunks",
///   "detail", "dif"}`: `not_found` with the chunks to upload, then `ok` (stored) or `error`.
/// `<org>` is not checked (the collector has no organizations); `<project>` is a project's id or
/// name. Assembling is synchronous: a file is `ok` or `error` in the answer that completes it.
struct DebugFileRoutes: Sendable {
    let routes: CollectorRoutes
    let store: any DebugFileStore
    let cache: DebugFileCache
    let symbolication: Symbolication
    /// Renames the project's issues once a file is stored (nil: not done).
    let renamer: IssueRenamer?
    let logger: Logger

    /// What the collector accepts, as the chunk-upload options announce it.
    enum Limits {
        /// Bytes per chunk (`chunkSize`); a larger chunk refuses its request with 413.
        static let chunkSize = 8 * 1024 * 1024
        static let chunksPerRequest = 64
        /// Bytes of one chunk-upload request's body (`maxRequestSize`); above it 413.
        static let maxRequestSize = 32 * 1024 * 1024
        /// Bytes of one assembled file (`maxFileSize`); a larger one is `error`.
        static let maxFileSize: Int64 = 2 * 1024 * 1024 * 1024
        /// Files one assemble request may name.
        static let filesPerAssemble = 256
    }

    func register(on router: Router<CollectorRequestContext>) {
        let api = router.group("api/0")
        api.get("organizations/:org/chunk-upload") { request, _ in
            await routes.respond {
                try await routes.requireToken(request)
                return Self.json(.object(Self.options(url: Self.chunkURL(request))))
            }
        }
        api.post("organizations/:org/chunk-upload") { request, _ in
            await routes.respond {
                try await routes.requireToken(request)
                return try await uploadChunks(request)
            }
        }
        api.post("projects/:id/:project/files/difs/assemble") { request, context in
            await routes.respond {
                try await routes.requireToken(request)
                let project = try await project(context.parameters.get("project") ?? "")
                return try await assemble(request, projectID: project.id)
            }
        }
        // An event's JSON with its frames symbolicated (`Symbolication`); `.../events/<id>` is as received.
        api.get("projects/:id/events/:event/symbolicated") { request, context in
            await routes.respondReading {
                try await routes.requireToken(request)
                let projectID = try CollectorRoutes.id(context, "id")
                let eventID = (context.parameters.get("event") ?? "").lowercased()
                guard let payload = try await routes.store.eventPayload(projectID: projectID, eventID: eventID),
                      let event = EventView.parse(payload) else {
                    throw CollectorError.notFound("event.unknown", "no such event")
                }
                return Self.json(await symbolication.symbolicate(event, projectID: projectID))
            }
        }
    }

    /// `value` as the body of a 200 (keys as they are: `CollectorRoutes.json` converts keys to snake case).
    static func json(_ value: JSONValue) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: value.jsonData())))
    }

    /// The options `sentry-cli` reads before uploading.
    static func options(url: String) -> [String: JSONValue] {
        [
            "url": .string(url),
            "chunkSize": .int(Int64(Limits.chunkSize)),
            "chunksPerRequest": .int(Int64(Limits.chunksPerRequest)),
            "maxRequestSize": .int(Int64(Limits.maxRequestSize)),
            "maxFileSize": .int(Limits.maxFileSize),
            "concurrency": .int(1),
            "hashAlgorithm": .string("sha1"),
            // Chunks may arrive gzip-compressed, as `file_gzip` parts.
            "compression": .array([.string("gzip")]),
            "accept": .array([.string("debug_files")]),
        ]
    }

    /// The chunk-upload URL as the client reached it (path only: `sentry-cli` resolves it against
    /// the server URL it was given, so a proxy in front keeps working).
    static func chunkURL(_ request: Request) -> String {
        let path = request.uri.path
        return path.hasSuffix("/") ? path : path + "/"
    }

    /// A project by id, else by name (one project of that name).
    func project(_ reference: String) async throws -> Project {
        let store = routes.store
        if let id = Int64(reference), let project = try await store.project(id: id) { return project }
        let named = try await store.projects().filter { $0.name == reference }
        guard named.count == 1, let project = named.first else {
            throw CollectorError.notFound("project.unknown", named.isEmpty ? "no such project" : "several projects have this name: use its id")
        }
        return project
    }

    // MARK: Chunks

    func uploadChunks(_ request: Request) async throws -> Response {
        guard let boundary = Multipart.boundary(request.headers[.contentType]) else {
            throw CollectorError.badRequest("debug_files.multipart", "the body must be multipart/form-data with a boundary")
        }
        var request = request
        let body: ByteBuffer
        do {
            // The parts' headers and boundaries on top of `maxRequestSize` bytes of chunks.
            body = try await request.collectBody(upTo: Limits.maxRequestSize + 64 * 1024)
        } catch {
            throw CollectorError.tooLarge("debug_files.request_too_large", "a chunk upload is at most \(Limits.maxRequestSize) bytes")
        }
        let parts = try Multipart.parts(Data(body.readableBytesView), boundary: boundary)
        var chunks: [(checksum: String, data: Data)] = []
        for part in parts where part.name == "file" || part.name == "file_gzip" {
            let data = try Self.chunkBytes(part)
            let checksum = SHA1.hex(data)
            guard let named = part.filename?.lowercased(), named == checksum else {
                throw CollectorError.badRequest("debug_files.checksum", "a chunk's file name must be the SHA-1 of its bytes (\(checksum))")
            }
            chunks.append((checksum, data))
        }
        guard chunks.count <= Limits.chunksPerRequest else {
            throw CollectorError.tooLarge("debug_files.too_many_chunks", "at most \(Limits.chunksPerRequest) chunks per request")
        }
        try await store.storeDebugChunks(chunks)
        logger.info("debug chunks stored", metadata: ["chunks": "\(chunks.count)", "bytes": "\(chunks.reduce(0) { $0 + $1.data.count })"])
        return Self.json(.object([:]))
    }

    /// A chunk's bytes (a `file_gzip` part decompressed: its checksum and size are those of the
    /// decompressed bytes).
    /// - Throws: 413 `debug_files.chunk_too_large` above `chunkSize`; 400 `body.compression` for
    ///   a truncated or corrupt gzip stream.
    static func chunkBytes(_ part: Multipart.Part) throws(CollectorError) -> Data {
        let tooLarge = CollectorError.tooLarge("debug_files.chunk_too_large", "a chunk is at most \(Limits.chunkSize) bytes")
        guard part.data.count <= Limits.chunkSize else { throw tooLarge }
        guard part.name == "file_gzip" else { return part.data }
        let inflater = try Inflater(format: .gzip, limit: Limits.chunkSize)
        let output: [UInt8]
        do {
            try inflater.feed([UInt8](part.data))
            output = try inflater.finish()
        } catch {
            throw error.status == 413 ? tooLarge : error
        }
        return Data(output)
    }

    // MARK: Assemble

    func assemble(_ request: Request, projectID: Int64) async throws -> Response {
        var request = request
        let buffer: ByteBuffer
        do { buffer = try await request.collectBody(upTo: 4 * 1024 * 1024) } catch {
            throw CollectorError.tooLarge("body.too_large", "an assemble request is at most 4 MiB")
        }
        guard let body = (try? JSONValue.parse(Data(buffer.readableBytesView)))?.objectValue else {
            throw CollectorError.badRequest("request.json", "the body must be a JSON object")
        }
        guard body.count <= Limits.filesPerAssemble else {
            throw CollectorError.badRequest("debug_files.too_many_files", "at most \(Limits.filesPerAssemble) files per request")
        }
        var answers: [String: JSONValue] = [:]
        for (checksum, file) in body {
            answers[checksum] = try await assembleFile(checksum: checksum.lowercased(), file, projectID: projectID)
        }
        return Self.json(.object(answers))
    }

    static func state(_ state: String, missing: [String] = [], detail: String? = nil, dif: JSONValue? = nil) -> JSONValue {
        .object(["state": .string(state), "missingChunks": .array(missing.map { .string($0) }),
                 "detail": detail.map { .string($0) } ?? .null, "dif": dif ?? .null])
    }

    func assembleFile(checksum: String, _ file: JSONValue, projectID: Int64) async throws -> JSONValue {
        guard SHA1.isChecksum(checksum) else { return Self.state("error", detail: "the file's checksum must be 40 hex digits (SHA-1)") }
        guard let chunkValues = file["chunks"]?.arrayValue else { return Self.state("error", detail: "chunks must be a list of SHA-1 checksums") }
        let chunks = chunkValues.compactMap { $0.stringValue?.lowercased() }
        guard chunks.count == chunkValues.count, chunks.allSatisfy(SHA1.isChecksum),
              Int64(chunks.count) <= Limits.maxFileSize / Int64(Limits.chunkSize) + 1 else {
            return Self.state("error", detail: "chunks must be a list of SHA-1 checksums, at most maxFileSize / chunkSize of them")
        }
        let name = String((file["name"]?.stringValue ?? checksum).prefix(1024))
        let claimedDebugID = file["debug_id"]?.stringValue.flatMap(ObjectFile.normalizedDebugID)
        if let stored = try await store.debugFile(projectID: projectID, checksum: checksum) {
            return Self.state("ok", dif: Self.dif(stored))
        }
        let missing = try await store.missingDebugChunks(chunks)
        if !missing.isEmpty {
            // In the order the file needs them, each once.
            var seen = Set<String>()
            return Self.state("not_found", missing: chunks.filter { missing.contains($0) && seen.insert($0).inserted })
        }
        let assembled: DebugFileCache.Assembled
        do {
            assembled = try await cache.assemble(checksum: checksum, chunks: chunks, maxSize: Limits.maxFileSize, store: store)
        } catch let failure as DebugFileCache.AssemblyFailure {
            logger.info("debug file refused", metadata: ["checksum": "\(checksum)", "reason": "\(failure.detail)"])
            return Self.state("error", detail: failure.detail)
        }
        var slices = assembled.object.slices
        if let claimedDebugID {
            slices = slices.filter { $0.debugID == claimedDebugID }
            guard !slices.isEmpty else {
                return Self.state("error", detail: "debug_id \(claimedDebugID) is not the file's (\(assembled.object.slices.map(\.debugID).joined(separator: ", ")))")
            }
        }
        var records: [DebugFileRecord] = []
        for slice in slices {
            let record = DebugFileRecord(
                projectID: projectID, checksum: checksum, debugID: slice.debugID, codeID: slice.codeID, name: name,
                kind: assembled.object.kind.rawValue, arch: slice.arch, loadAddress: slice.loadAddress, features: slice.features,
                size: assembled.size, chunks: chunks, created: Date())
            try await store.insertDebugFile(record)
            records.append(record)
        }
        logger.info("debug file stored", metadata: [
            "project": "\(projectID)", "checksum": "\(checksum)", "debug_id": "\(records.map(\.debugID).joined(separator: ","))",
            "size": "\(assembled.size)", "features": "\(records.first?.features.joined(separator: ",") ?? "")",
        ])
        if let renamer {
            // Not awaited: the uploader's answer does not wait for the project's issues.
            Task.detached { await renamer.pass(projectID: projectID) }
        }
        return Self.state("ok", dif: records.first.map(Self.dif))
    }

    /// A stored file as Sentry's API describes one (`sentry-cli` prints `debugId`, `objectName`, `cpuName`).
    static func dif(_ file: DebugFileRecord) -> JSONValue {
        .object([
            "id": .string(file.checksum + "/" + file.debugID), "debugId": .string(file.debugID),
            "codeId": file.codeID.map { .string($0) } ?? .null, "objectName": .string(file.name),
            "cpuName": .string(file.arch ?? "unknown"), "symbolType": .string(file.kind), "headers": .object([:]),
            "size": .int(file.size), "sha1": .string(file.checksum),
            "dateCreated": .string(ISO8601DateFormatter().string(from: file.created)),
            "data": .object(["features": .array(file.features.map { .string($0) })]),
        ])
    }
}

/// `multipart/form-data` (RFC 7578) as `sentry-cli` sends it: parts with a `Content-Disposition`
/// naming the field and a file name.
enum Multipart {
    struct Part {
        var name: String?
        var filename: String?
        var data: Data
    }

    static func boundary(_ contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return value.isEmpty || value.count > 200 ? nil : value
            }
        }
        return nil
    }

    /// - Throws: 400 `debug_files.multipart` when the body is not a well-formed multipart body.
    static func parts(_ body: Data, boundary: String) throws -> [Part] {
        let malformed = CollectorError.badRequest("debug_files.multipart", "the multipart body is malformed")
        let delimiter = Data(("--" + boundary).utf8)
        let separator = Data(("\r\n--" + boundary).utf8)
        let headerEnd = Data("\r\n\r\n".utf8)
        guard let first = body.range(of: delimiter), body[body.startIndex..<first.lowerBound].allSatisfy({ $0 == 13 || $0 == 10 }) else {
            throw malformed
        }
        var parts: [Part] = []
        var at = first.upperBound
        while true {
            // After a delimiter: "--" ends the body, else CRLF and a part.
            if body[at...].starts(with: Data("--".utf8)) { return parts }
            guard body[at...].starts(with: Data("\r\n".utf8)) else { throw malformed }
            at += 2
            guard let headersEnd = body.range(of: headerEnd, in: at..<body.endIndex) else { throw malformed }
            let headers = String(decoding: body[at..<headersEnd.lowerBound], as: UTF8.self)
            guard let next = body.range(of: separator, in: headersEnd.upperBound..<body.endIndex) else { throw malformed }
            var part = Part(data: body.subdata(in: headersEnd.upperBound..<next.lowerBound))
            for line in headers.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("content-disposition:") {
                part.name = parameter("name", in: line)
                part.filename = parameter("filename", in: line)
            }
            parts.append(part)
            at = next.upperBound
        }
    }

    private static func parameter(_ name: String, in line: String) -> String? {
        for item in line.split(separator: ";").dropFirst() {
            let pair = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == name {
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }
}

/// SHA-1 through OpenSSL's EVP interface (the checksum `sentry-cli` names chunks and files by).
struct SHA1: ~Copyable {
    private let context: OpaquePointer

    init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha1(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    func update(_ data: Data) {
        data.withUnsafeBytes { buffer in _ = EVP_DigestUpdate(context, buffer.baseAddress, buffer.count) }
    }

    consuming func hex() -> String {
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return CryptoSupport.hex(digest)
    }

    static func hex(_ data: Data) -> String {
        let hash = SHA1()
        hash.update(data)
        return hash.hex()
    }

    static func isChecksum(_ text: String) -> Bool {
        text.utf8.count == 40 && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }
}
