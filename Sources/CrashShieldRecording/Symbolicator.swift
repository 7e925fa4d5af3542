import CrashShieldBase
import Foundation
package import _CrashShieldCapture

/// Turns a report's frames (image path + offset) into function names, as far as this machine
/// allows, in this order (later steps refine earlier ones):
/// 1. `dladdr` when the image is loaded in this process with the same GNU build id (exported
///    symbols only: a static function is named after the nearest exported one before it);
/// 2. `llvm-symbolizer` (or else `addr2line`) on the image file, when the file on disk still has
///    the build id recorded in the report: every symbol in the symbol table, plus file and line.
///    Linux and macOS only (`ExternalSymbolizer.canRunTools`): iOS and the other Apple platforms
///    have no `Process`, so there the frames keep what step 1 found;
/// 3. Swift demangling of the names found (the runtime's `swift_demangle`), then C++ demangling
///    of the Itanium-mangled ones (`__cxa_demangle` of the C++ runtime, when the process has one).
/// Frames whose image changed on disk (other build id) keep their raw address.
package enum Symbolicator {
    /// Symbolicates `report` in place and re-classifies it. Blocking: runs external tools.
    package static func symbolicate(_ report: inout CrashReport) {
        symbolicate(&report, externalTools: ExternalSymbolizer.canRunTools)
    }

    /// Symbolicates every report in place, as `symbolicate(_:)` does one, with one external tool
    /// run per image for all of them (the offsets of every report in one call) and one debug-id
    /// read per image: a listing costs as many tool runs as there are images, not reports times
    /// images.
    package static func symbolicate(_ reports: inout [CrashReport]) {
        symbolicate(&reports, externalTools: ExternalSymbolizer.canRunTools)
    }

    /// `externalTools: false` is what a platform without `Process` does (the tests run it here).
    static func symbolicate(_ report: inout CrashReport, externalTools: Bool) {
        var reports = [report]
        symbolicate(&reports, externalTools: externalTools)
        report = reports[0]
    }

    static func symbolicate(_ reports: inout [CrashReport], externalTools: Bool) {
        // Per report: frame indices by image, after step 1; per image: the offsets for the tools.
        var plans: [[String: [Int]]] = []
        var toolOffsets: [String: Set<UInt64>] = [:]
        var fileMatches: [String: Bool] = [:]  // "<image>\u{0}<recorded build id>"
        var loadedImages: [String: (bias: UInt, buildID: String)?] = [:]
        for reportIndex in reports.indices {
            guard var frames = reports[reportIndex].crashedThread?.frames, !frames.isEmpty else {
                plans.append([:])
                continue
            }
            let firstIsPC = reports[reportIndex].crashedThread?.firstFrameIsPc ?? true
            let buildIDs = Dictionary(
                (reports[reportIndex].images ?? []).compactMap { image in image.path.map { ($0, image.buildId ?? "") } },
                uniquingKeysWith: { first, _ in first })
            var byImage: [String: [Int]] = [:]
            for index in frames.indices {
                guard let image = frames[index].image, lookupOffset(frames, index, firstIsPC) != nil else { continue }
                byImage[image, default: []].append(index)
            }
            var forTools: [String: [Int]] = [:]
            for (image, indices) in byImage {
                let recorded = buildIDs[image] ?? ""
                // 1. dladdr in this process.
                if loadedImages[image] == nil {
                    var bias: UInt = 0
                    var hex = [CChar](repeating: 0, count: 80)
                    loadedImages[image] = csc_loaded_image(image, &bias, &hex, hex.count) ? (bias, cText(hex)) : .some(nil)
                }
                if let loaded = loadedImages[image] ?? nil, recorded.isEmpty || loaded.buildID == recorded {
                    for index in indices {
                        guard let offset = lookupOffset(frames, index, firstIsPC) else { continue }
                        var name = [CChar](repeating: 0, count: 512)
                        if csc_symbol_name(UInt(offset) &+ loaded.bias, &name, name.count) {
                            frames[index].function = cText(name)
                            frames[index].symbolSource = .dladdr
                        }
                    }
                }
                // 2. Tools on the file, if it is still the file that crashed.
                guard externalTools else { continue }
                let key = "\(image)\u{0}\(recorded)"
                if fileMatches[key] == nil {
                    var matches = FileManager.default.isReadableFile(atPath: image)
                    if matches, !recorded.isEmpty, let onDisk = ImageDebugID.read(path: image),
                       !onDisk.contains(ImageDebugID.normalized(recorded)) { matches = false }
                    fileMatches[key] = matches
                }
                guard fileMatches[key] == true else { continue }
                forTools[image] = indices
                toolOffsets[image, default: []].formUnion(indices.compactMap { lookupOffset(frames, $0, firstIsPC) })
            }
            reports[reportIndex].crashedThread?.frames = frames
            plans.append(forTools)
        }
        var symbols: [String: [UInt64: ExternalSymbolizer.Symbol?]] = [:]
        for (image, offsets) in toolOffsets {
            let sorted = offsets.sorted()
            if let results = ExternalSymbolizer.symbolize(path: image, offsets: sorted), results.count == sorted.count {
                symbols[image] = Dictionary(uniqueKeysWithValues: zip(sorted, results))
            }
        }
        for reportIndex in reports.indices {
            guard var frames = reports[reportIndex].crashedThread?.frames, !frames.isEmpty else { continue }
            let firstIsPC = reports[reportIndex].crashedThread?.firstFrameIsPc ?? true
            for (image, indices) in plans[reportIndex] {
                guard let found = symbols[image] else { continue }
                for index in indices {
                    guard let offset = lookupOffset(frames, index, firstIsPC), let result = found[offset] ?? nil else { continue }
                    frames[index].function = result.function
                    frames[index].file = result.file
                    frames[index].line = result.line
                    frames[index].symbolSource = result.source
                }
            }
            reports[reportIndex].crashedThread?.frames = frames
            reports[reportIndex].classification = reports[reportIndex].classify()
            // Demangle after classifying: classification looks at mangled Swift names.
            for index in frames.indices {
                if let name = frames[index].function { frames[index].function = CxxDemangler.demangle(SwiftDemangler.demangle(name)) }
            }
            reports[reportIndex].crashedThread?.frames = frames
        }
    }

    /// The address to look up for frame `index`: a return address points after the call; step
    /// back into it.
    private static func lookupOffset(_ frames: [CrashReport.Frame], _ index: Int, _ firstIsPC: Bool) -> UInt64? {
        guard let offset = frames[index].offsetValue else { return nil }
        return (index == 0 && firstIsPC) || offset == 0 ? offset : offset - 1
    }
}

/// `name` looked up in every image loaded (dlsym with RTLD_DEFAULT); nil when none defines it.
private func runtimeSymbol(_ name: String) -> UnsafeMutableRawPointer? {
    #if canImport(Darwin)
    let defaultHandle = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT on Darwin
    #else
    let defaultHandle = UnsafeMutableRawPointer(bitPattern: 0)  // RTLD_DEFAULT on glibc and musl
    #endif
    return dlsym(defaultHandle, name)
}

/// `swift_demangle` from the Swift runtime, found at run time.
enum SwiftDemangler {
    private typealias Demangle = @convention(c) (
        UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UInt32
    ) -> UnsafeMutablePointer<CChar>?

    private static let function: Demangle? = runtimeSymbol("swift_demangle").map { unsafeBitCast($0, to: Demangle.self) }

    static func demangle(_ name: String) -> String {
        guard name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_T"),
              let function else { return name }
        return name.withCString { pointer in
            guard let result = function(pointer, strlen(pointer), nil, nil, 0) else { return name }
            defer { free(result) }
            return String(cString: result)
        }
    }
}

/// `__cxa_demangle` of the C++ runtime (libstdc++ or libc++abi), found at run time: Swift's
/// runtime links one on Linux and Apple platforms; without it names stay as they are.
enum CxxDemangler {
    private typealias Demangle = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?
    ) -> UnsafeMutablePointer<CChar>?

    private static let function: Demangle? = runtimeSymbol("__cxa_demangle").map { unsafeBitCast($0, to: Demangle.self) }

    /// The demangled form of an Itanium C++ name ("_Z...", "__Z..." as Mach-O symbols spell it);
    /// any other name, or one the runtime cannot demangle, unchanged.
    static func demangle(_ name: String) -> String {
        let mangled = name.hasPrefix("__Z") ? String(name.dropFirst()) : name
        guard mangled.hasPrefix("_Z"), let function else { return name }
        return mangled.withCString { pointer in
            var status: Int32 = -1
            guard let result = function(pointer, nil, nil, &status) else { return name }
            defer { free(result) }
            return status == 0 ? String(cString: result) : name
        }
    }
}

/// The debug ids a file on disk carries, in the report's form (lowercase hex, no dashes): the GNU
/// build id of an ELF file, or the LC_UUID of each slice of a Mach-O file (thin or universal).
/// nil when the file is neither or carries no id: the caller then cannot tell a changed file.
enum ImageDebugID {
    static func read(path: String) -> [String]? {
        if let buildID = ELFBuildID.read(path: path) { return [buildID] }
        let uuids = MachOUUID.read(path: path)
        return uuids.isEmpty ? nil : uuids
    }

    /// Reports write ids as lowercase hex; a UUID may also come as 8-4-4-4-12 in capitals.
    static func normalized(_ id: String) -> String {
        id.lowercased().filter { $0 != "-" }
    }
}

/// Reads the GNU build id of an ELF file (from its PT_NOTE program headers).
enum ELFBuildID {
    static func read(path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 64), header.count == 64,
              header.starts(with: [0x7f, 0x45, 0x4c, 0x46]), header[4] == 2, header[5] == 1 else { return nil }
        func u16(_ data: Data, _ at: Int) -> Int { Int(data[data.startIndex + at]) | Int(data[data.startIndex + at + 1]) << 8 }
        func u32(_ data: Data, _ at: Int) -> Int { u16(data, at) | u16(data, at + 2) << 16 }
        func u64(_ data: Data, _ at: Int) -> Int { u32(data, at) | u32(data, at + 4) << 32 }
        let phoff = u64(header, 32), phentsize = u16(header, 54), phnum = u16(header, 56)
        guard phentsize >= 56, phnum < 256 else { return nil }
        try? handle.seek(toOffset: UInt64(phoff))
        guard let table = try? handle.read(upToCount: phentsize * phnum), table.count == phentsize * phnum else { return nil }
        for index in 0..<phnum {
            let entry = table.subdata(in: (index * phentsize)..<(index * phentsize + phentsize))
            guard u32(entry, 0) == 4 /* PT_NOTE */ else { continue }
            let offset = u64(entry, 8), size = u64(entry, 32)
            guard size < 1 << 16 else { continue }
            try? handle.seek(toOffset: UInt64(offset))
            guard let notes = try? handle.read(upToCount: size), notes.count == size else { continue }
            var at = 0
            while at + 12 <= notes.count {
                let namesz = u32(notes, at), descsz = u32(notes, at + 4), type = u32(notes, at + 8)
                let name = at + 12, desc = name + ((namesz + 3) & ~3), next = desc + ((descsz + 3) & ~3)
                guard next <= notes.count else { break }
                if type == 3, namesz == 4, notes.subdata(in: name..<(name + 3)) == Data("GNU".utf8) {
                    return notes.subdata(in: desc..<(desc + descsz)).map { String(format: "%02x", $0) }.joined()
                }
                at = next
            }
        }
        return nil
    }
}

/// Reads LC_UUID from a Mach-O file (<mach-o/loader.h>, <mach-o/fat.h>): a 64- or 32-bit
/// little-endian image, or each such slice of a universal ("fat") file. Platform-neutral: the
/// file is read as bytes, so the Linux tests check it.
enum MachOUUID {
    static func read(path: String) -> [String] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        guard let magic = try? handle.read(upToCount: 8), magic.count == 8 else { return [] }
        let bigMagic = magic.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        // FAT_MAGIC / FAT_MAGIC_64: big-endian header, then nfat_arch entries of 20 / 32 bytes
        // whose offset field (32 or 64 bits) locates each slice.
        if bigMagic == 0xcafe_babe || bigMagic == 0xcafe_babf {
            let wide = bigMagic == 0xcafe_babf
            let count = Int(magic.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            let entrySize = wide ? 32 : 20
            // A Java class file shares 0xcafebabe; its "count" (a version) is far above any slice count.
            guard count > 0, count < 32,
                  let table = try? handle.read(upToCount: entrySize * count), table.count == entrySize * count else { return [] }
            return (0..<count).flatMap { index -> [String] in
                let entry = table.subdata(in: (index * entrySize)..<((index + 1) * entrySize))
                let offset = wide ? bigEndian(entry, 8, 8) : bigEndian(entry, 8, 4)
                return thinUUID(handle, at: offset).map { [$0] } ?? []
            }
        }
        return thinUUID(handle, at: 0).map { [$0] } ?? []
    }

    private static func bigEndian(_ data: Data, _ at: Int, _ width: Int) -> UInt64 {
        data[(data.startIndex + at)..<(data.startIndex + at + width)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    private static func littleEndian(_ data: Data, _ at: Int) -> Int {
        (0..<4).reduce(0) { $0 | Int(data[data.startIndex + at + $1]) << (8 * $1) }
    }

    /// The UUID of the thin Mach-O image starting at `offset`, if it is one and has LC_UUID.
    private static func thinUUID(_ handle: FileHandle, at offset: UInt64) -> String? {
        guard (try? handle.seek(toOffset: offset)) != nil,
              let header = try? handle.read(upToCount: 32), header.count == 32 else { return nil }
        let headerSize: Int
        switch littleEndian(header, 0) {
        case 0xfeed_facf: headerSize = 32  // MH_MAGIC_64
        case 0xfeed_face: headerSize = 28  // MH_MAGIC
        default: return nil
        }
        let commandCount = littleEndian(header, 16), commandsSize = littleEndian(header, 20)
        guard commandCount < 4096, commandsSize < 1 << 24, (try? handle.seek(toOffset: offset + UInt64(headerSize))) != nil,
              let commands = try? handle.read(upToCount: commandsSize), commands.count == commandsSize else { return nil }
        var at = 0
        for _ in 0..<commandCount {
            guard at + 8 <= commands.count else { break }
            let command = littleEndian(commands, at), size = littleEndian(commands, at + 4)
            guard size >= 8, at + size <= commands.count else { break }
            if command == 0x1b /* LC_UUID */, size >= 24 {
                return commands.subdata(in: (at + 8)..<(at + 24)).map { String(format: "%02x", $0) }.joined()
            }
            at += size
        }
        return nil
    }
}

/// llvm-symbolizer or addr2line, whichever is on PATH (llvm-symbolizer first).
enum ExternalSymbolizer {
    /// Whether this platform can start a tool: Foundation's `Process` exists on Linux and macOS
    /// only (not on iOS, Mac Catalyst, tvOS, watchOS or visionOS).
    #if os(Linux) || os(macOS)
    static let canRunTools = true
    #else
    static let canRunTools = false
    #endif

    struct Symbol {
        var function: String
        var file: String?
        var line: Int?
        var source: CrashReport.Frame.SymbolSource
    }

    static let llvmSymbolizer = findTool("llvm-symbolizer")
    static let addr2line = findTool("addr2line")

    static func findTool(_ name: String) -> String? {
        let path = Foundation.ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    static func symbolize(path: String, offsets: [UInt64]) -> [Symbol?]? {
        guard canRunTools else { return nil }
        let addresses = offsets.map { "0x" + String($0, radix: 16) }
        if let tool = llvmSymbolizer,
           let output = run(tool, ["--obj=\(path)", "--no-demangle", "--no-inlines", "--functions=linkage"] + addresses) {
            // One block per address: function line, "file:line:column" line, blank line.
            let blocks = output.components(separatedBy: "\n\n").map { $0.split(separator: "\n", omittingEmptySubsequences: true) }
                .filter { !$0.isEmpty }
            if blocks.count == offsets.count {
                return blocks.map { lines in parse(function: String(lines[0]), location: lines.count > 1 ? String(lines[1]) : nil, source: .llvmSymbolizer) }
            }
        }
        if let tool = addr2line, let output = run(tool, ["-f", "-e", path] + addresses) {
            let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard lines.count >= offsets.count * 2 else { return nil }
            return offsets.indices.map { parse(function: lines[2 * $0], location: lines[2 * $0 + 1], source: .addr2line) }
        }
        return nil
    }

    private static func parse(function: String, location: String?, source: CrashReport.Frame.SymbolSource) -> Symbol? {
        guard !function.isEmpty, function != "??" else { return nil }
        var file: String?
        var line: Int?
        if let location, !location.hasPrefix("??") {
            let parts = location.split(separator: ":")
            if parts.count >= 2 {
                file = String(parts[0])
                line = Int(parts[1].split(separator: " ").first ?? "")
                if line == 0 { line = nil }
            }
        }
        return Symbol(function: function, file: file, line: line, source: source)
    }

    private static let runs = Locked(0)
    /// How many tool processes this process has started.
    static var toolRuns: Int { runs.withLock { $0 } }

    private static func run(_ tool: String, _ arguments: [String]) -> String? {
        #if os(Linux) || os(macOS)
        runs.withLock { $0 += 1 }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
        #else
        return nil
        #endif
    }
}

/// The NUL-terminated text in a C buffer.
func cText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
