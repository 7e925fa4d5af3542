import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation

/// What a server needs to match an image to its debug file: the build id and the span of the
/// image's loadable segments. Read from the image file on disk (ELF, 64-bit little-endian), for
/// events whose frames name images by path only (incidents). The crash handler records the same
/// for crash reports from memory.
package struct ImageIdentity: Sendable, Hashable {
    /// The GNU build id, lowercase hex.
    package var buildID: String
    /// The lowest virtual address of a loadable segment, rounded down to 4 KiB (0 for a
    /// position-independent image).
    package var vmStart: UInt64
    /// From `vmStart` to the end of the highest loadable segment.
    package var vmSize: UInt64

    package init(buildID: String, vmStart: UInt64, vmSize: UInt64) {
        self.buildID = buildID
        self.vmStart = vmStart
        self.vmSize = vmSize
    }

    /// The `debug_meta` image for this identity loaded with load bias `base`.
    package func debugImage(path: String, base: UInt64, arch: String?) -> SentryEvent.DebugImage? {
        guard let debugID = DebugIdentifier.fromELFBuildID(hex: buildID), vmSize > 0 else { return nil }
        return SentryEvent.DebugImage(
            type: "elf", codeFile: path, imageAddr: CrashEventConverter.hex(base &+ vmStart),
            imageVmaddr: vmStart > 0 ? CrashEventConverter.hex(vmStart) : nil, imageSize: vmSize,
            codeID: buildID, debugID: debugID, arch: arch)
    }

    /// Reads the identity of the ELF file at `path`; nil when it is not a readable 64-bit
    /// little-endian ELF file with a GNU build id note and a loadable segment. Reads at most the
    /// header, 1024 program headers and 64 KiB of notes.
    package static func readELF(path: String) -> ImageIdentity? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        func read(_ offset: UInt64, _ count: Int) -> [UInt8]? {
            guard count > 0, offset <= UInt64(Int64.max) else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
            return got == count ? bytes : nil
        }
        guard let header = read(0, 64), header[0] == 0x7f, header[1] == 0x45, header[2] == 0x4c, header[3] == 0x46,
              header[4] == 2, header[5] == 1 else { return nil }
        let phoff = u64(header, 0x20), phentsize = Int(u16(header, 0x36)), phnum = Int(u16(header, 0x38))
        guard phentsize >= 56, phnum > 0, phnum <= 1024, let table = read(phoff, phentsize * phnum) else { return nil }
        var low = UInt64.max, high: UInt64 = 0
        var buildID: String?
        for index in 0..<phnum {
            let at = index * phentsize
            let type = u32(table, at)
            let offset = u64(table, at + 8), vaddr = u64(table, at + 16), filesz = u64(table, at + 32), memsz = u64(table, at + 40)
            if type == 1 /* PT_LOAD */ {
                low = min(low, vaddr)
                high = max(high, vaddr &+ memsz)
            } else if type == 4 /* PT_NOTE */, buildID == nil, filesz > 0, filesz <= 65_536, let notes = read(offset, Int(filesz)) {
                buildID = gnuBuildID(in: notes)
            }
        }
        guard let buildID, low != .max, high > low else { return nil }
        let start = low & ~UInt64(0xfff)
        return ImageIdentity(buildID: buildID, vmStart: start, vmSize: high - start)
    }

    /// The descriptor of the first `NT_GNU_BUILD_ID` note ("GNU", type 3) in `notes`, as hex.
    static func gnuBuildID(in notes: [UInt8]) -> String? {
        var at = 0
        while at + 12 <= notes.count {
            let nameSize = Int(u32(notes, at)), descSize = Int(u32(notes, at + 4)), type = u32(notes, at + 8)
            let nameStart = at + 12
            let descStart = nameStart + (nameSize + 3) & ~3
            let next = descStart + (descSize + 3) & ~3
            guard nameSize <= 4096, descSize <= 4096, descStart + descSize <= notes.count else { return nil }
            if type == 3, nameSize == 4, Array(notes[nameStart..<nameStart + 4]) == [0x47, 0x4e, 0x55, 0], descSize > 0 {
                return notes[descStart..<descStart + descSize].map { byte in
                    let text = String(byte, radix: 16)
                    return text.count == 1 ? "0" + text : text
                }.joined()
            }
            at = next
        }
        return nil
    }

    private static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
    private static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) }
    }
    private static func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
    }
}

/// `ImageIdentity.readELF` once per path (thread-safe). Used for the images of incident frames.
package final class ImageIdentityCache: Sendable {
    private let known = Locked<[String: ImageIdentity?]>([:])
    package init() {}

    package func identity(of path: String) -> ImageIdentity? {
        if let cached = known.withLock({ $0[path] }) { return cached }
        let identity = ImageIdentity.readELF(path: path)
        known.withLock { $0[path] = identity }
        return identity
    }
}
