import Foundation

/// What the collector needs to know of an uploaded debug file: which image it describes (debug
/// id, code id, architecture), where that image expects to be loaded, and what it holds. Read from
/// the file's headers only: 64-bit little-endian ELF (GNU build id note), and 64-bit Mach-O, thin
/// or universal (`LC_UUID`, one `Slice` per architecture).
struct ObjectFile: Sendable, Hashable {
    enum Kind: String, Sendable { case elf, macho }

    struct Slice: Sendable, Hashable {
        /// Sentry's debug id: lowercase UUID form (ELF: the first 16 bytes of the build id with the
        /// first three fields byte-swapped, as Sentry's symbolic reads it; Mach-O: `LC_UUID`).
        var debugID: String
        /// ELF: the build id as lowercase hex; Mach-O: the UUID without dashes.
        var codeID: String
        /// `x86_64`, `arm64`, ... (nil when the machine is not one the collector names).
        var arch: String?
        /// The address the image's first segment expects: ELF the `p_vaddr` of the first
        /// `PT_LOAD`, Mach-O the `vmaddr` of `__TEXT`. A frame's address in the file is
        /// `instruction_addr - image_addr + loadAddress`.
        var loadAddress: UInt64
        /// `debug` (DWARF), `symtab` (a symbol table), as Sentry lists a debug file's features.
        var features: [String]
    }

    var kind: Kind
    var slices: [Slice]

    /// The debug id as Sentry writes it for an ELF build id (`hex`: the build id as hex digits);
    /// nil when `hex` is not hex or shorter than one byte.
    static func debugID(elfBuildID hex: String) -> String? {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        guard !bytes.isEmpty else { return nil }
        while bytes.count < 16 { bytes.append(0) }
        let uuid: [UInt8] = [bytes[3], bytes[2], bytes[1], bytes[0], bytes[5], bytes[4], bytes[7], bytes[6]] + bytes[8..<16]
        return uuidString(uuid)
    }

    static func uuidString(_ bytes: [UInt8]) -> String {
        let hex = CryptoSupport.hex(bytes)
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex[hex.index(hex.startIndex, offsetBy: range.lowerBound)..<hex.index(hex.startIndex, offsetBy: range.upperBound)])
        }
        return parts.joined(separator: "-")
    }

    /// A debug id compared as Sentry compares them: lowercase, the UUID part only (an appendix
    /// such as `-0` dropped), dashes added to a bare 32-digit form.
    static func normalizedDebugID(_ text: String) -> String? {
        let lower = text.lowercased().replacingOccurrences(of: "-", with: "")
        guard lower.count >= 32 else { return nil }
        let digits = Array(lower.utf8.prefix(32))
        guard digits.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 32, by: 2) {
            bytes.append(UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)!)
        }
        return uuidString(bytes)
    }

    /// Reads the file through `read(offset, count)`, which returns exactly `count` bytes or nil.
    /// Nil when the file is none of the formats above or has no identifier.
    static func read(size: UInt64, _ read: (UInt64, Int) -> [UInt8]?) -> ObjectFile? {
        guard let magic = read(0, 8) else { return nil }
        if magic[0] == 0x7f, magic[1] == 0x45, magic[2] == 0x4c, magic[3] == 0x46 {
            return readELF(size: size, read).map { ObjectFile(kind: .elf, slices: [$0]) }
        }
        let little = Bytes.u32(magic, 0, bigEndian: false)
        if little == 0xfeed_facf {
            return readMachO(at: 0, read).map { ObjectFile(kind: .macho, slices: [$0]) }
        }
        let big = Bytes.u32(magic, 0, bigEndian: true)
        if big == 0xcafe_babe || big == 0xcafe_babf {
            let count = Int(Bytes.u32(magic, 4, bigEndian: true))
            let entry = big == 0xcafe_babe ? 20 : 32
            guard count > 0, count <= 64, let table = read(8, count * entry) else { return nil }
            var slices: [Slice] = []
            for index in 0..<count {
                let at = index * entry
                let offset = big == 0xcafe_babe ? UInt64(Bytes.u32(table, at + 8, bigEndian: true)) : Bytes.u64(table, at + 8, bigEndian: true)
                if let slice = readMachO(at: offset, read) { slices.append(slice) }
            }
            return slices.isEmpty ? nil : ObjectFile(kind: .macho, slices: slices)
        }
        return nil
    }

    /// Reads the file at `path` (see `read(size:_:)`).
    static func read(path: String) -> ObjectFile? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        return read(size: size) { offset, count in
            guard count >= 0, offset <= size, UInt64(count) <= size - offset else { return nil }
            guard (try? handle.seek(toOffset: offset)) != nil, let data = try? handle.read(upToCount: count), data.count == count else { return nil }
            return [UInt8](data)
        }
    }

    private static func readELF(size: UInt64, _ read: (UInt64, Int) -> [UInt8]?) -> Slice? {
        guard let header = read(0, 64), header[4] == 2 /* 64-bit */, header[5] == 1 /* little-endian */ else { return nil }
        let machine = Bytes.u16(header, 0x12)
        let arch: String? = switch machine {
        case 0x3e: "x86_64"
        case 0xb7: "arm64"
        case 0x28: "arm"
        case 0x03: "x86"
        default: nil
        }
        let phoff = Bytes.u64(header, 0x20), phentsize = Int(Bytes.u16(header, 0x36)), phnum = Int(Bytes.u16(header, 0x38))
        let shoff = Bytes.u64(header, 0x28), shentsize = Int(Bytes.u16(header, 0x3a)), shnum = Int(Bytes.u16(header, 0x3c))
        let shstrndx = Int(Bytes.u16(header, 0x3e))
        var loadAddress: UInt64?
        var buildID: String?
        if phnum > 0, phentsize >= 56, phnum <= 4096, let table = read(phoff, phnum * phentsize) {
            for index in 0..<phnum {
                let at = index * phentsize
                let type = Bytes.u32(table, at, bigEndian: false)
                if type == 1, loadAddress == nil { loadAddress = Bytes.u64(table, at + 16) }
                // PT_NOTE: only when its bytes are in this file (a debug-only file keeps the
                // program headers but may not keep what they point at).
                if type == 4, buildID == nil {
                    let offset = Bytes.u64(table, at + 8), filesz = Bytes.u64(table, at + 32)
                    if filesz > 0, filesz <= 65_536, offset < size, let notes = read(offset, Int(filesz)) { buildID = gnuBuildID(notes) }
                }
            }
        }
        var features: [String] = []
        if shnum > 0, shentsize >= 64, shnum <= 65_535, let sections = read(shoff, shnum * shentsize) {
            var names: [UInt8] = []
            if shstrndx < shnum {
                let at = shstrndx * shentsize
                let offset = Bytes.u64(sections, at + 24), length = Bytes.u64(sections, at + 32)
                if length <= 16 << 20, let bytes = read(offset, Int(length)) { names = bytes }
            }
            func name(_ at: Int) -> String {
                let start = Int(Bytes.u32(sections, at, bigEndian: false))
                guard start < names.count else { return "" }
                let end = names[start...].firstIndex(of: 0) ?? names.count
                return String(decoding: names[start..<end], as: UTF8.self)
            }
            for index in 0..<shnum {
                let at = index * shentsize
                let type = Bytes.u32(sections, at + 4, bigEndian: false)
                let offset = Bytes.u64(sections, at + 24), length = Bytes.u64(sections, at + 32)
                let sectionName = name(at)
                if sectionName == ".debug_info" || sectionName == ".zdebug_info", type != 8 /* SHT_NOBITS */, !features.contains("debug") {
                    features.append("debug")
                }
                if type == 2 /* SHT_SYMTAB */, length > 0, !features.contains("symtab") { features.append("symtab") }
                if type == 7 /* SHT_NOTE */, buildID == nil, length > 0, length <= 65_536, let notes = read(offset, Int(length)) {
                    buildID = gnuBuildID(notes)
                }
            }
        }
        guard let buildID, let debugID = debugID(elfBuildID: buildID) else { return nil }
        return Slice(debugID: debugID, codeID: buildID, arch: arch, loadAddress: loadAddress ?? 0, features: features.sorted())
    }

    /// The descriptor of the first GNU build-id note (name "GNU", type 3) in `notes`, as hex.
    static func gnuBuildID(_ notes: [UInt8]) -> String? {
        var at = 0
        while at + 12 <= notes.count {
            let nameSize = Int(Bytes.u32(notes, at, bigEndian: false)), descSize = Int(Bytes.u32(notes, at + 4, bigEndian: false))
            let type = Bytes.u32(notes, at + 8, bigEndian: false)
            guard nameSize <= 4096, descSize <= 4096 else { return nil }
            let descStart = at + 12 + (nameSize + 3) & ~3
            guard descStart + descSize <= notes.count else { return nil }
            if type == 3, nameSize == 4, notes[(at + 12)..<(at + 16)].elementsEqual([0x47, 0x4e, 0x55, 0]), descSize > 0 {
                return CryptoSupport.hex(Array(notes[descStart..<descStart + descSize]))
            }
            at = descStart + (descSize + 3) & ~3
        }
        return nil
    }

    private static func readMachO(at base: UInt64, _ read: (UInt64, Int) -> [UInt8]?) -> Slice? {
        guard let header = read(base, 32), Bytes.u32(header, 0, bigEndian: false) == 0xfeed_facf else { return nil }
        let cpu = Bytes.u32(header, 4, bigEndian: false)
        let arch: String? = switch cpu {
        case 0x0100_0007: "x86_64"
        case 0x0100_000c: "arm64"
        default: nil
        }
        let count = Int(Bytes.u32(header, 16, bigEndian: false)), size = Int(Bytes.u32(header, 20, bigEndian: false))
        guard count > 0, count <= 65_536, size > 0, size <= 16 << 20, let commands = read(base + 32, size) else { return nil }
        var uuid: [UInt8]?
        var textAddress: UInt64?
        var features: [String] = []
        var at = 0
        for _ in 0..<count {
            guard at + 8 <= commands.count else { break }
            let command = Bytes.u32(commands, at, bigEndian: false), length = Int(Bytes.u32(commands, at + 4, bigEndian: false))
            guard length >= 8, at + length <= commands.count else { break }
            if command == 0x1b /* LC_UUID */, length >= 24 { uuid = Array(commands[(at + 8)..<(at + 24)]) }
            if command == 0x19 /* LC_SEGMENT_64 */, length >= 72 {
                let name = String(decoding: commands[(at + 8)..<(at + 24)].prefix { $0 != 0 }, as: UTF8.self)
                if name == "__TEXT" { textAddress = Bytes.u64(commands, at + 24) }
                if name == "__DWARF", !features.contains("debug") { features.append("debug") }
            }
            if command == 0x2 /* LC_SYMTAB */, !features.contains("symtab") { features.append("symtab") }
            at += length
        }
        guard let uuid else { return nil }
        return Slice(debugID: uuidString(uuid), codeID: CryptoSupport.hex(uuid), arch: arch, loadAddress: textAddress ?? 0,
                     features: features.sorted())
    }
}

/// Little- and big-endian integers from byte arrays (callers check the bounds).
enum Bytes {
    static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
    static func u32(_ bytes: [UInt8], _ at: Int, bigEndian: Bool) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { value, index in
            value | UInt32(bytes[at + index]) << (8 * UInt32(bigEndian ? 3 - index : index))
        }
    }
    static func u64(_ bytes: [UInt8], _ at: Int, bigEndian: Bool = false) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { value, index in
            value | UInt64(bytes[at + index]) << (8 * UInt64(bigEndian ? 7 - index : index))
        }
    }
}
