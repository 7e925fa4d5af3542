@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// Debug-file upload (`sentry-cli`'s chunk-upload and assemble endpoints) and symbolication of
/// events with the stored files, against a live collector on the test database (SQLite, or
/// PostgreSQL with COLLECTOR_TEST_POSTGRES_URL). The program symbolicated is compiled by the test
/// (clang from the Swift toolchain, binutils' objcopy and objdump); what each frame must say (function and line) is read from
/// its source and from binutils' objdump, a DWARF reader other than the collector's llvm-symbolizer.
@Suite("Debug files and symbolication")
struct DebugFileTests {
    static let source = """
    #include <stdlib.h>
    volatile int sink;
    static inline __attribute__((always_inline)) void inner(int value) {
        sink = value * 3; /* INNER */
    }
    __attribute__((noinline)) void outer(int value) {
        inner(value + 1); /* CALL-INNER */
        sink = sink + 1;
    }
    __attribute__((noinline)) void crash_here(void) { /* CRASH-ENTRY */
        abort();
    }
    int main(int argc, char **argv) {
        outer(argc); /* CALL-OUTER */
        crash_here();
        return 0;
    }

    """

    /// The 1-based line of `source` that contains `marker`.
    static func line(_ marker: String) throws -> Int {
        let lines = source.components(separatedBy: "\n")
        return try #require(lines.firstIndex { $0.contains(marker) }) + 1
    }

    struct Program {
        var directory: URL
        var debugFile: Data
        var buildID: String
        /// Addresses in the file: `outer`'s first instruction of the inlined `inner`, the return
        /// address of main's call of `outer`, `crash_here`'s entry.
        var inlinedAddress: UInt64
        var returnAddressInMain: UInt64
        var crashEntry: UInt64
        var firstLoadVaddr: UInt64
    }

    @discardableResult
    static func run(_ arguments: [String], in directory: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CommandFailure(command: arguments.joined(separator: " ")) }
        return String(decoding: data, as: UTF8.self)
    }

    struct CommandFailure: Error { let command: String }

    /// Compiles the program (`pie`: position-independent, else linked at its fixed address),
    /// splits its DWARF into a debug file and strips the binary, as a team does before shipping.
    static func build(pie: Bool) throws -> Program {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("debugfiles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(source.utf8).write(to: directory.appendingPathComponent("prog.c"))
        try run(["clang", "-g", "-O1", pie ? "-fPIE" : "-fno-pie", pie ? "-pie" : "-no-pie", "-Wl,--build-id=sha1", "-o", "prog", "prog.c"], in: directory)
        try run(["objcopy", "--only-keep-debug", "prog", "prog.debug"], in: directory)
        try run(["objcopy", "--strip-debug", "--strip-unneeded", "prog", "prog.stripped"], in: directory)
        let notes = try run(["readelf", "-n", "prog"], in: directory)
        let buildID = try #require(notes.components(separatedBy: "\n").first { $0.contains("Build ID:") }?
            .components(separatedBy: "Build ID:").last?.trimmingCharacters(in: .whitespaces))
        let load = try run(["readelf", "-lW", "prog"], in: directory).components(separatedBy: "\n").first { $0.contains("LOAD") }
        let firstLoadVaddr = try #require(load.flatMap { $0.split(separator: " ").dropFirst(2).first }.flatMap { UInt64($0.dropFirst(2), radix: 16) })
        let disassembly = try run(["objdump", "-dl", "prog"], in: directory).components(separatedBy: "\n")

        func address(_ line: String) -> UInt64? {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard let colon = trimmed.firstIndex(of: ":") else { return nil }
            return UInt64(trimmed[..<colon], radix: 16)
        }
        func body(of function: String) -> ArraySlice<String> {
            guard let start = disassembly.firstIndex(where: { $0.hasSuffix("<\(function)>:") }) else { return [] }
            let end = disassembly[(start + 1)...].firstIndex(where: { $0.isEmpty }) ?? disassembly.endIndex
            return disassembly[(start + 1)..<end]
        }
        // The first instruction after objdump names the INNER line inside outer.
        let innerLine = try line("INNER")
        let outerBody = body(of: "outer")
        let innerMarker = try #require(outerBody.firstIndex { $0.hasSuffix("prog.c:\(innerLine)") || $0.contains("prog.c:\(innerLine) ") })
        let inlinedAddress = try #require(outerBody[innerMarker...].lazy.compactMap(address).first)
        // The instruction after main's call of outer: the return address a stack walk finds.
        let mainBody = Array(body(of: "main"))
        let call = try #require(mainBody.firstIndex { $0.contains("call") && $0.contains("<outer>") })
        let returnAddress = try #require(mainBody[(call + 1)...].lazy.compactMap(address).first)
        let symbols = try run(["nm", "prog"], in: directory).components(separatedBy: "\n")
        let crashEntry = try #require(symbols.first { $0.hasSuffix(" crash_here") }.flatMap { UInt64($0.prefix(16), radix: 16) })
        return Program(directory: directory, debugFile: try Data(contentsOf: directory.appendingPathComponent("prog.debug")),
                       buildID: buildID, inlinedAddress: inlinedAddress, returnAddressInMain: returnAddress, crashEntry: crashEntry,
                       firstLoadVaddr: firstLoadVaddr)
    }

    /// Sentry's debug id of an ELF build id: its first 16 bytes as a little-endian GUID.
    static func debugID(buildID: String) -> String {
        let bytes = stride(from: 0, to: 32, by: 2).map { UInt8(buildID.dropFirst($0).prefix(2), radix: 16)! }
        let swapped = [bytes[3], bytes[2], bytes[1], bytes[0], bytes[5], bytes[4], bytes[7], bytes[6]] + bytes[8...]
        let hex = swapped.map { String(format: "%02x", $0) }.joined()
        return [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
            .joined(separator: "-")
    }

    static func sha1(_ data: Data) -> String { SHA1.hex(data) }

    /// `gzip`: each chunk compressed, as a `file_gzip` part.
    static func multipart(_ chunks: [(name: String, data: Data)], gzip: Bool = false, boundary: String = "test-boundary-1234") -> (Data, String) {
        var body = Data()
        for chunk in chunks {
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(gzip ? "file_gzip" : "file")\"; filename=\"\(chunk.name)\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8))
            body.append(gzip ? Data(Fixtures.compress([UInt8](chunk.data), gzip: true)) : chunk.data)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    /// Uploads `file` in chunks of at most `chunkSize` bytes as sentry-cli does (assemble, the
    /// missing chunks, assemble again); returns the final assemble answer for the file.
    static func upload(_ harness: Harness, _ file: Data, debugID: String, chunkSize: Int, project: String, gzip: Bool = false) async throws -> JSONValue {
        let chunks = stride(from: 0, to: file.count, by: chunkSize).map { file.subdata(in: $0..<min($0 + chunkSize, file.count)) }
        let checksum = sha1(file)
        let request: JSONValue = .object([checksum: .object([
            "name": "prog.debug", "debug_id": .string(debugID), "chunks": .array(chunks.map { .string(sha1($0)) })])])
        let path = "/api/0/projects/any-org/\(project)/files/difs/assemble/"
        let first = try await harness.api(path, method: "POST", json: request)
        #expect(first.status == 200)
        let missing = first.json?[checksum]?["missingChunks"]?.arrayValue?.compactMap(\.stringValue) ?? []
        if !missing.isEmpty {
            let (body, contentType) = multipart(chunks.filter { missing.contains(sha1($0)) }.map { (sha1($0), $0) }, gzip: gzip)
            let uploaded = try await harness.client.execute("/api/0/organizations/any-org/chunk-upload/", method: "POST",
                                                            headers: ["Authorization": "Bearer \(Harness.token)", "Content-Type": contentType], body: body)
            #expect(uploaded.status == 200, "\(uploaded.text)")
        }
        return try #require(try await harness.api(path, method: "POST", json: request).json?[checksum])
    }

    /// A native crash event of the stripped program (image file `path`) loaded at `imageAddr`:
    /// main's call of outer, then the PC inside outer's inlined inner (frames caller first).
    static func crashEvent(_ program: Program, imageAddr: UInt64, debugID: String, codeID: String?, path: String = "/opt/app/prog") -> JSONValue {
        func absolute(_ vaddr: UInt64) -> String { "0x" + String(vaddr - program.firstLoadVaddr + imageAddr, radix: 16) }
        var image: [String: JSONValue] = [
            "type": "elf", "code_file": .string(path), "image_addr": .string("0x" + String(imageAddr, radix: 16)),
            "image_size": 65_536, "debug_id": .string(debugID)]
        if let codeID { image["code_id"] = .string(codeID) }
        return .object([
            "event_id": .string(Fixtures.eventID()), "timestamp": .double(Date().timeIntervalSince1970), "platform": "native",
            "level": "fatal", "release": "prog@1.0",
            "exception": ["values": [[
                "type": "SIGSEGV", "value": "bad access",
                "mechanism": ["type": "signalhandler", "handled": false, "synthetic": true],
                "stacktrace": ["frames": [
                    ["instruction_addr": .string(absolute(program.returnAddressInMain)), "package": .string(path), "in_app": true],
                    ["instruction_addr": .string(absolute(program.inlinedAddress)), "package": .string(path), "in_app": true],
                ]],
            ]]],
            "debug_meta": ["images": [.object(image)]],
        ])
    }

    static func frames(_ event: JSONValue?) -> [JSONValue] {
        event?["exception"]?["values"]?.arrayValue?.first?["stacktrace"]?["frames"]?.arrayValue ?? []
    }

    static func post(_ harness: Harness, _ event: JSONValue) async throws {
        #expect(try await harness.post(body: Fixtures.envelope(event: event)).status == 200)
    }

    static func symbolicated(_ harness: Harness, _ event: JSONValue, project: Int64? = nil) async throws -> TestResponse {
        let id = try #require(event["event_id"]?.stringValue)
        return try await harness.api("/api/0/projects/\(project ?? harness.project.id)/events/\(id)/symbolicated")
    }

    /// A crash received before its debug file shows addresses; once the file is uploaded the same
    /// event shows function, file and line per frame (inlined code as a frame of its own, a
    /// return address looked up at its call), for a PIE loaded at a slide and for a fixed-address
    /// executable; the event as received stays as it was; the crashes before and after the upload
    /// are one issue (grouping by image and offset as received).
    @Test(arguments: [true, false]) func uploadedDebugFileSymbolicatesEarlierAndLaterEvents(pie: Bool) async throws {
        let program = try Self.build(pie: pie)
        defer { try? FileManager.default.removeItem(at: program.directory) }
        let debugID = Self.debugID(buildID: program.buildID)
        let imageAddr: UInt64 = pie ? 0x5612_3456_7000 : program.firstLoadVaddr
        try await Harness.run { harness in
            let before = Self.crashEvent(program, imageAddr: imageAddr, debugID: debugID, codeID: program.buildID)
            try await Self.post(harness, before)
            let unsymbolicated = try await Self.symbolicated(harness, before)
            #expect(unsymbolicated.status == 200)
            #expect(Self.frames(unsymbolicated.json).allSatisfy { $0["function"] == nil && $0["lineno"] == nil })
            #expect(unsymbolicated.json?["debug_meta"]?["images"]?.arrayValue?.first?["debug_status"]?.stringValue == "missing")

            let options = try await harness.api("/api/0/organizations/any-org/chunk-upload/")
            #expect(options.json?["hashAlgorithm"]?.stringValue == "sha1")
            #expect(options.json?["accept"]?.arrayValue?.contains(.string("debug_files")) == true)
            let chunkSize = Int(try #require(options.json?["chunkSize"]?.intValue))
            #expect(chunkSize == DebugFileRoutes.Limits.chunkSize)
            // Small chunks, so the file is several of them; gzip-compressed for one of the two programs.
            #expect(options.json?["compression"]?.arrayValue == ["gzip"])
            let answer = try await Self.upload(harness, program.debugFile, debugID: debugID, chunkSize: 4096, project: harness.project.name, gzip: pie)
            #expect(answer["state"]?.stringValue == "ok", "\(answer)")
            #expect(answer["dif"]?["debugId"]?.stringValue == debugID)
            #expect(answer["dif"]?["data"]?["features"]?.arrayValue?.contains(.string("debug")) == true)

            let after = Self.crashEvent(program, imageAddr: imageAddr, debugID: debugID, codeID: nil)
            try await Self.post(harness, after)
            for event in [before, after] {
                let response = try await Self.symbolicated(harness, event)
                #expect(response.status == 200)
                let frames = Self.frames(response.json)
                #expect(frames.count == 3, "\(frames)")
                guard frames.count == 3 else { continue }
                #expect(frames[0]["function"]?.stringValue == "main")
                let (callOuter, callInner, innerLine) = (try Self.line("CALL-OUTER"), try Self.line("CALL-INNER"), try Self.line("INNER"))
                #expect(frames[0]["lineno"]?.intValue == Int64(callOuter))
                #expect(frames[1]["function"]?.stringValue == "outer")
                #expect(frames[1]["lineno"]?.intValue == Int64(callInner))
                #expect(frames[1]["inlined"] == nil)
                #expect(frames[2]["function"]?.stringValue == "inner")
                #expect(frames[2]["lineno"]?.intValue == Int64(innerLine))
                #expect(frames[2]["inlined"]?.boolValue == true)
                #expect(frames[2]["filename"]?.stringValue == "prog.c")
                #expect(frames.allSatisfy { $0["symbolicator_status"]?.stringValue == "symbolicated" })
                #expect(response.json?["debug_meta"]?["images"]?.arrayValue?.first?["debug_status"]?.stringValue == "found")
                // As received: no function, no line.
                let raw = try await harness.api("/api/0/projects/\(harness.project.id)/events/\(event["event_id"]!.stringValue!)")
                #expect(Self.frames(raw.json).allSatisfy { $0["function"] == nil && $0["lineno"] == nil })
            }
            let issues = try await harness.issues()
            #expect(issues.count == 1 && issues.first?["event_count"]?.intValue == 2, "\(issues)")
            // The issue, named after an address when it was created, is renamed after the upload.
            let renamedIssueID = try #require(issues.first?["id"]?.intValue)
            let renamed = try await Self.poll { try await harness.api("/api/0/issues/\(renamedIssueID)").json?["culprit"]?.stringValue == "inner" }
            #expect(renamed)
            #expect(try await harness.api("/api/0/issues/\(renamedIssueID)").json?["title"]?.stringValue?.hasPrefix("inner (SIGSEGV)") == true)

            // The issue page shows the function and file:line of the innermost frame.
            let browser = Browser(baseURL: harness.client.baseURL)
            #expect(try await browser.logIn(password: Harness.adminPassword).status == 303)
            let issueID = try #require(issues.first?["id"]?.intValue)
            let page = try await browser.get("/issues/\(issueID)")
            #expect(page.status == 200)
            let innerLine = try Self.line("INNER")
            #expect(page.text.contains(">inner<") && page.text.contains("prog.c:\(innerLine)"))

            // Another project does not see this project's debug file.
            let other = try await harness.api("/api/0/projects", method: "POST", json: ["name": "other"])
            let otherID = try #require(other.json?["id"]?.intValue)
            let otherKey = try #require(other.json?["public_key"]?.stringValue)
            let elsewhere = Self.crashEvent(program, imageAddr: imageAddr, debugID: debugID, codeID: nil)
            let posted = try await harness.post("/api/\(otherID)/envelope/", body: Fixtures.envelope(event: elsewhere), headers: [
                "X-Sentry-Auth": "Sentry sentry_version=7, sentry_key=\(otherKey)", "Content-Type": "application/x-sentry-envelope"])
            #expect(posted.status == 200)
            let foreign = try await Self.symbolicated(harness, elsewhere, project: otherID)
            #expect(foreign.status == 200)
            #expect(Self.frames(foreign.json).allSatisfy { $0["function"] == nil })
        }
    }

    /// Calls `condition` until it is true or 15 s pass; whether it became true.
    static func poll(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try await condition()
    }

    /// An issue created after its debug file was stored is renamed by the next periodic pass;
    /// one whose image has no debug file keeps its address.
    @Test func issuesCreatedAfterTheUploadAreRenamed() async throws {
        let program = try Self.build(pie: true)
        defer { try? FileManager.default.removeItem(at: program.directory) }
        let debugID = Self.debugID(buildID: program.buildID)
        try await Harness.run({ $0.issueRenameInterval = 0.2 }) { harness in
            let answer = try await Self.upload(harness, program.debugFile, debugID: debugID, chunkSize: 1 << 20, project: String(harness.project.id))
            #expect(answer["state"]?.stringValue == "ok")
            try await Self.post(harness, Self.crashEvent(program, imageAddr: 0x5612_3456_7000, debugID: debugID, codeID: nil))
            let unknownID = "00000000-1111-2222-3333-444444444444"
            try await Self.post(harness, Self.crashEvent(program, imageAddr: 0x5612_3456_7000, debugID: unknownID, codeID: nil, path: "/opt/other/tool"))
            let named = try await Self.poll {
                try await harness.issues().contains { $0["culprit"]?.stringValue == "inner" }
            }
            #expect(named)
            // The other image has no debug file: its issue keeps the address it was named after.
            let issues = try await harness.issues()
            #expect(issues.count == 2)
            #expect(issues.contains { $0["culprit"]?.stringValue?.hasPrefix("tool+0x") == true }, "\(issues.map { $0["culprit"] })")
        }
    }

    /// Two collectors on one database, each with its own data directory: a file uploaded through
    /// one symbolicates events shown by the other (the bytes are in the database; each collector's
    /// `debug-files` directory is only its cache).
    @Test func aFileUploadedThroughOneCollectorServesAnother() async throws {
        let program = try Self.build(pie: true)
        defer { try? FileManager.default.removeItem(at: program.directory) }
        let debugID = Self.debugID(buildID: program.buildID)
        let fresh = try await TestDatabase.fresh()
        let directories = (0..<2).map { FileManager.default.temporaryDirectory.appendingPathComponent("collector-\($0)-\(UUID().uuidString)").path }
        defer { for directory in directories { try? FileManager.default.removeItem(atPath: directory) } }
        let configurations = directories.map { directory in
            var configuration = CollectorConfiguration(database: fresh.database, dataDirectory: directory)
            configuration.initialAPIToken = Harness.token
            configuration.adminPassword = Harness.adminPassword
            configuration.port = 0
            return configuration
        }
        do {
            try await Harness.run(configuration: configurations[0]) { first in
                try await Harness.run(configuration: configurations[1]) { second in
                    let answer = try await Self.upload(first, program.debugFile, debugID: debugID, chunkSize: 1 << 16, project: String(first.project.id))
                    #expect(answer["state"]?.stringValue == "ok")
                    let event = Self.crashEvent(program, imageAddr: 0x5612_3456_7000, debugID: debugID, codeID: nil)
                    try await Self.post(second, event)
                    let frames = Self.frames(try await Self.symbolicated(second, event).json)
                    #expect(frames.last?["function"]?.stringValue == "inner", "\(frames)")
                    let cached = (try? FileManager.default.contentsOfDirectory(atPath: directories[1] + "/debug-files")) ?? []
                    #expect(cached == [Self.sha1(program.debugFile)])
                }
            }
        } catch {
            await fresh.drop()
            throw error
        }
        await fresh.drop()
    }

    /// A data directory the collector cannot write its copy to answers the assemble 503 with
    /// Retry-After and records nothing; the same upload succeeds once it can.
    @Test func anUnwritableDataDirectoryAnswers503() async throws {
        let program = try Self.build(pie: true)
        defer { try? FileManager.default.removeItem(at: program.directory) }
        let debugID = Self.debugID(buildID: program.buildID)
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("collector-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        try await Harness.run({ $0.dataDirectory = dataDirectory }) { harness in
            // A file where the cache directory should be.
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: dataDirectory + "/debug-files", contents: Data("x".utf8)))
            let checksum = Self.sha1(program.debugFile)
            let request: JSONValue = .object([checksum: .object(["name": "prog.debug", "chunks": [.string(checksum)]])])
            let (body, type) = Self.multipart([(checksum, program.debugFile)])
            let stored = try await harness.client.execute("/api/0/organizations/o/chunk-upload/", method: "POST",
                                                          headers: ["Authorization": "Bearer \(Harness.token)", "Content-Type": type], body: body)
            #expect(stored.status == 200)
            let path = "/api/0/projects/o/\(harness.project.id)/files/difs/assemble/"
            let refused = try await harness.api(path, method: "POST", json: request)
            #expect(refused.status == 503 && refused.headers["retry-after"] == "30" && refused.json?["code"]?.stringValue == "debug_files.cache",
                    "\(refused.status) \(refused.text)")
            try FileManager.default.removeItem(atPath: dataDirectory + "/debug-files")
            let accepted = try await harness.api(path, method: "POST", json: request)
            #expect(accepted.json?[checksum]?["state"]?.stringValue == "ok" && accepted.json?[checksum]?["dif"]?["debugId"]?.stringValue == debugID)
        }
    }

    /// The upload's refusals: no token, a chunk not named by its SHA-1, a chunk above
    /// `chunkSize` (as sent, or once decompressed), an unknown project, chunks whose concatenation is not the named file, a debug
    /// id that is not the file's.
    @Test func uploadsAreRefusedWhenTheyAreNotWhatTheyClaim() async throws {
        let program = try Self.build(pie: true)
        defer { try? FileManager.default.removeItem(at: program.directory) }
        try await Harness.run { harness in
            let noToken = try await harness.client.execute("/api/0/organizations/o/chunk-upload/")
            #expect(noToken.status == 401)
            let bearer = ["Authorization": "Bearer \(Harness.token)"]

            let chunk = Data("some bytes".utf8)
            let (misnamed, type) = Self.multipart([(String(repeating: "0", count: 40), chunk)])
            let refused = try await harness.client.execute("/api/0/organizations/o/chunk-upload/", method: "POST",
                                                           headers: bearer.merging(["Content-Type": type]) { $1 }, body: misnamed)
            #expect(refused.status == 400 && refused.json?["code"]?.stringValue == "debug_files.checksum")

            let big = Data(repeating: 7, count: DebugFileRoutes.Limits.chunkSize + 1)
            let (oversized, bigType) = Self.multipart([(Self.sha1(big), big)])
            let tooLarge = try await harness.client.execute("/api/0/organizations/o/chunk-upload/", method: "POST",
                                                            headers: bearer.merging(["Content-Type": bigType]) { $1 }, body: oversized)
            #expect(tooLarge.status == 413 && tooLarge.json?["code"]?.stringValue == "debug_files.chunk_too_large")

            // Compressed small, but above chunkSize once decompressed.
            let (bomb, bombType) = Self.multipart([(Self.sha1(big), big)], gzip: true)
            #expect(bomb.count < DebugFileRoutes.Limits.chunkSize / 100)
            let inflated = try await harness.client.execute("/api/0/organizations/o/chunk-upload/", method: "POST",
                                                            headers: bearer.merging(["Content-Type": bombType]) { $1 }, body: bomb)
            #expect(inflated.status == 413 && inflated.json?["code"]?.stringValue == "debug_files.chunk_too_large")

            let unknown = try await harness.api("/api/0/projects/o/no-such-project/files/difs/assemble/", method: "POST", json: [:])
            #expect(unknown.status == 404)

            // Two real chunks named as a file whose checksum is another's: refused, nothing stored.
            let half = program.debugFile.count / 2
            let parts = [program.debugFile.prefix(half), program.debugFile.dropFirst(half)].map { Data($0) }
            let (body, partsType) = Self.multipart(parts.map { (Self.sha1($0), $0) })
            let stored = try await harness.client.execute("/api/0/organizations/o/chunk-upload/", method: "POST",
                                                          headers: bearer.merging(["Content-Type": partsType]) { $1 }, body: body)
            #expect(stored.status == 200)
            let wrongSum = String(repeating: "ab", count: 20)
            let mismatch = try await harness.api("/api/0/projects/o/\(harness.project.id)/files/difs/assemble/", method: "POST", json: .object([
                wrongSum: ["name": "prog.debug", "chunks": .array(parts.map { .string(Self.sha1($0)) })]]))
            #expect(mismatch.json?[wrongSum]?["state"]?.stringValue == "error", "\(mismatch.text)")
            let realSum = Self.sha1(program.debugFile)
            let wrongID = try await harness.api("/api/0/projects/o/\(harness.project.id)/files/difs/assemble/", method: "POST", json: .object([
                realSum: ["name": "prog.debug", "debug_id": "00000000-0000-0000-0000-000000000001",
                          "chunks": .array(parts.map { .string(Self.sha1($0)) })]]))
            #expect(wrongID.json?[realSum]?["state"]?.stringValue == "error", "\(wrongID.text)")
            let debugID = Self.debugID(buildID: program.buildID)
            let event = Self.crashEvent(program, imageAddr: 0x5612_3456_7000, debugID: debugID, codeID: nil)
            try await Self.post(harness, event)
            #expect(Self.frames(try await Self.symbolicated(harness, event).json).allSatisfy { $0["function"] == nil })
        }
    }

    /// Without a symbolizer the frames stay as received and the page and API still answer 200.
    @Test func aMissingSymbolizerLeavesFramesAsReceived() async throws {
        let program = try Self.build(pie: true)
        defer { try? FileManager.default.removeItem(at: program.directory) }
        let debugID = Self.debugID(buildID: program.buildID)
        try await Harness.run({ $0.symbolizer = "/nonexistent/llvm-symbolizer" }) { harness in
            let answer = try await Self.upload(harness, program.debugFile, debugID: debugID, chunkSize: 1 << 20, project: String(harness.project.id))
            #expect(answer["state"]?.stringValue == "ok")
            let event = Self.crashEvent(program, imageAddr: 0x5612_3456_7000, debugID: debugID, codeID: nil)
            try await Self.post(harness, event)
            let response = try await Self.symbolicated(harness, event)
            #expect(response.status == 200)
            #expect(Self.frames(response.json).count == 2 && Self.frames(response.json).allSatisfy { $0["function"] == nil })
            let browser = Browser(baseURL: harness.client.baseURL)
            _ = try await browser.logIn(password: Harness.adminPassword)
            let issueID = try #require(try await harness.issues().first?["id"]?.intValue)
            #expect(try await browser.get("/issues/\(issueID)").status == 200)
        }
    }

    /// A symbolizer that does not answer is killed after its timeout and the batch fails.
    @Test func aSymbolizerThatHangsIsKilledAfterItsTimeout() async throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("hanging-symbolizer-\(UUID().uuidString)")
        try Data("#!/bin/sh\nexec sleep 60\n".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        defer { try? FileManager.default.removeItem(at: script) }
        let symbolizer = Symbolizer(configured: script.path, timeout: 0.5)
        let start = Date()
        await #expect(throws: Symbolizer.Failure.self) {
            _ = try await symbolizer.symbolize(object: "/dev/null", addresses: [0x1000], arch: nil)
        }
        #expect(Date().timeIntervalSince(start) < 10)
    }
}

/// `ObjectFile` on Mach-O headers written by the test (this machine's lld cannot link for macOS):
/// a thin 64-bit dSYM and a universal file of two, each with `__TEXT` and `LC_UUID`.
@Suite("Debug file identification")
struct ObjectFileTests {
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    static func le64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    static func be32(_ value: UInt32) -> [UInt8] { le32(value).reversed() }

    /// mach_header_64, LC_SEGMENT_64 "__TEXT" at `text`, LC_UUID `uuid`.
    static func machO(cpu: UInt32, uuid: [UInt8], text: UInt64) -> [UInt8] {
        let segment = le32(0x19) + le32(72) + Array("__TEXT".utf8) + [UInt8](repeating: 0, count: 10) + le64(text) + le64(0x4000)
            + le64(0) + le64(0) + le32(5) + le32(5) + le32(0) + le32(0)
        let uuidCommand = le32(0x1b) + le32(24) + uuid
        return le32(0xfeed_facf) + le32(cpu) + le32(0) + le32(0xa) + le32(2) + le32(UInt32(segment.count + uuidCommand.count))
            + le32(0) + le32(0) + segment + uuidCommand
    }

    static func read(_ bytes: [UInt8]) -> ObjectFile? {
        ObjectFile.read(size: UInt64(bytes.count)) { offset, count in
            guard offset <= UInt64(bytes.count), UInt64(count) <= UInt64(bytes.count) - offset else { return nil }
            return Array(bytes[Int(offset)..<Int(offset) + count])
        }
    }

    @Test func thinAndUniversalMachOFilesNameTheirSlices() throws {
        let arm = (0..<16).map { UInt8($0 * 16 + 1) }
        let intel = (0..<16).map { UInt8(255 - $0) }
        let thin = try #require(Self.read(Self.machO(cpu: 0x0100_000c, uuid: arm, text: 0x1_0000_0000)))
        #expect(thin.kind == .macho)
        #expect(thin.slices.map(\.debugID) == ["01112131-4151-6171-8191-a1b1c1d1e1f1"])
        #expect(thin.slices.first?.arch == "arm64" && thin.slices.first?.loadAddress == 0x1_0000_0000)

        let first = Self.machO(cpu: 0x0100_0007, uuid: intel, text: 0x1_0000_0000)
        let second = Self.machO(cpu: 0x0100_000c, uuid: arm, text: 0x1_0000_0000)
        let headerSize = 8 + 2 * 20
        let firstAt = 4096, secondAt = 8192
        var fat = Self.be32(0xcafe_babe) + Self.be32(2)
        fat += Self.be32(0x0100_0007) + Self.be32(3) + Self.be32(UInt32(firstAt)) + Self.be32(UInt32(first.count)) + Self.be32(12)
        fat += Self.be32(0x0100_000c) + Self.be32(0) + Self.be32(UInt32(secondAt)) + Self.be32(UInt32(second.count)) + Self.be32(14)
        #expect(fat.count == headerSize)
        fat += [UInt8](repeating: 0, count: firstAt - fat.count) + first
        fat += [UInt8](repeating: 0, count: secondAt - fat.count) + second
        let universal = try #require(Self.read(fat))
        #expect(universal.slices.map(\.arch) == ["x86_64", "arm64"])
        #expect(universal.slices.map(\.debugID) == ["fffefdfc-fbfa-f9f8-f7f6-f5f4f3f2f1f0", "01112131-4151-6171-8191-a1b1c1d1e1f1"])
        #expect(Self.read(Array("not an object file".utf8)) == nil)
    }

    /// ELF build ids become Sentry's debug ids (the pair below is what sentry-cli 3.8.2 printed for
    /// that build id); debug ids compare without case, dashes or appendix.
    @Test func debugIDsAreNormalized() {
        #expect(ObjectFile.debugID(elfBuildID: "4f7d6e978bd2034d6498e9e175210a08f730aaef") == "976e7d4f-d28b-4d03-6498-e9e175210a08")
        #expect(ObjectFile.normalizedDebugID("976E7D4FD28B4D036498E9E175210A08-0") == "976e7d4f-d28b-4d03-6498-e9e175210a08")
        #expect(ObjectFile.normalizedDebugID("not-an-id") == nil)
    }
}
