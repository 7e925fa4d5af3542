import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
import _CrashShieldIncidents

/// The platform-neutral parts of the Apple image handling, checked here on Linux: the Mach-O
/// load-command walk (hand-built images in the layout of <mach-o/loader.h>), the debug ids Sentry
/// expects, and the path rule that says which Apple images are the system's.
@Suite struct ImageIdentityTests {
    // MARK: - Mach-O images built in memory

    /// Little-endian bytes of a Mach-O image's header and load commands (every Apple target and
    /// this test's hosts are little-endian).
    struct MachOBuilder {
        var wide = true
        var commands: [[UInt8]] = []

        static func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
            withUnsafeBytes(of: value.littleEndian) { Array($0) }
        }

        static func name16(_ name: String) -> [UInt8] {
            let utf8 = Array(name.utf8)
            return utf8 + [UInt8](repeating: 0, count: 16 - utf8.count)
        }

        mutating func segment(_ name: String, vmaddr: UInt64, vmsize: UInt64, initprot: UInt32) {
            var command: [UInt8] = []
            if wide {
                command += Self.bytes(UInt32(0x19)) + Self.bytes(UInt32(72)) + Self.name16(name)
                command += Self.bytes(vmaddr) + Self.bytes(vmsize) + Self.bytes(UInt64(0)) + Self.bytes(UInt64(0))
            } else {
                command += Self.bytes(UInt32(0x1)) + Self.bytes(UInt32(56)) + Self.name16(name)
                command += Self.bytes(UInt32(vmaddr)) + Self.bytes(UInt32(vmsize)) + Self.bytes(UInt32(0)) + Self.bytes(UInt32(0))
            }
            command += Self.bytes(UInt32(7)) + Self.bytes(initprot) + Self.bytes(UInt32(0)) + Self.bytes(UInt32(0))
            commands.append(command)
        }

        mutating func uuid(_ bytes: [UInt8]) {
            commands.append(Self.bytes(UInt32(0x1b)) + Self.bytes(UInt32(24)) + bytes)
        }

        mutating func raw(_ command: [UInt8]) { commands.append(command) }

        func image(sizeofcmds: UInt32? = nil) -> [UInt8] {
            let body = commands.flatMap { $0 }
            var header = Self.bytes(UInt32(wide ? 0xfeed_facf : 0xfeed_face))
            header += Self.bytes(UInt32(wide ? 0x0100_000c : 0x0200_000c)) + Self.bytes(UInt32(0)) // cputype, subtype
            header += Self.bytes(UInt32(2)) // MH_EXECUTE
            header += Self.bytes(UInt32(commands.count)) + Self.bytes(sizeofcmds ?? UInt32(body.count))
            header += Self.bytes(UInt32(0))
            if wide { header += Self.bytes(UInt32(0)) } // reserved
            return header + body
        }
    }

    static let uuid: [UInt8] = [0x84, 0xa0, 0x4d, 0x24, 0x0e, 0x60, 0x38, 0x10, 0xa8, 0xc0, 0x90, 0xa6, 0x5e, 0x2d, 0xf6, 0x1a]

    static func layout(of image: [UInt8], readable: Int? = nil, slide: Int = 0) -> (Bool, cs_macho_layout) {
        var layout = cs_macho_layout()
        let found = image.withUnsafeBytes { raw in
            cs_macho_read_layout(raw.baseAddress, readable ?? raw.count, slide, &layout)
        }
        return (found, layout)
    }

    static func uuidBytes(_ layout: cs_macho_layout) -> [UInt8] {
        withUnsafeBytes(of: layout.uuid) { Array($0) }
    }

    static func executable() -> MachOBuilder {
        var builder = MachOBuilder()
        builder.segment("__PAGEZERO", vmaddr: 0, vmsize: 0x1_0000_0000, initprot: 0)
        builder.segment("__TEXT", vmaddr: 0x1_0000_0000, vmsize: 0x8000, initprot: 5)
        builder.segment("__DATA", vmaddr: 0x1_0000_8000, vmsize: 0x4000, initprot: 3)
        builder.segment("__LINKEDIT", vmaddr: 0x1_0000_c000, vmsize: 0x4000, initprot: 1)
        builder.uuid(uuid)
        return builder
    }

    @Test func textRangeExecutableSpanAndUUIDOfASlidExecutable() {
        let (found, layout) = Self.layout(of: Self.executable().image(), slide: 0x4_2000)
        #expect(found)
        #expect(layout.has_text && layout.text_low == 0x1_0004_2000 && layout.text_high == 0x1_0004_a000)
        #expect(layout.text_vmaddr == 0x1_0000_0000)
        // __PAGEZERO (no access) and the data segments are not code.
        #expect(layout.has_exec && layout.exec_low == 0x1_0004_2000 && layout.exec_high == 0x1_0004_a000)
        #expect(layout.has_uuid && Self.uuidBytes(layout) == Self.uuid)
    }

    /// In the dyld shared cache an image's __LINKEDIT is shared and far from its __TEXT: the image's
    /// range must stay its __TEXT, or it would swallow the addresses of every image in between.
    @Test func sharedCacheImageKeepsItsTextRange() {
        var builder = MachOBuilder()
        builder.segment("__TEXT", vmaddr: 0x1_8000_0000, vmsize: 0x2000, initprot: 5)
        builder.segment("__DATA_CONST", vmaddr: 0x1_f000_0000, vmsize: 0x1000, initprot: 3)
        builder.segment("__LINKEDIT", vmaddr: 0x2_8000_0000, vmsize: 0x100_0000, initprot: 1)
        let (found, layout) = Self.layout(of: builder.image(), slide: 0x10_0000)
        #expect(found)
        #expect(layout.text_low == 0x1_8010_0000 && layout.text_high == 0x1_8010_2000)
        #expect(!layout.has_uuid)
    }

    /// arm64_32 (watchOS) images use the 32-bit header and LC_SEGMENT.
    @Test func thirtyTwoBitForm() {
        var builder = MachOBuilder()
        builder.wide = false
        builder.segment("__PAGEZERO", vmaddr: 0, vmsize: 0x4000, initprot: 0)
        builder.segment("__TEXT", vmaddr: 0x4000, vmsize: 0x1000, initprot: 5)
        builder.uuid(Self.uuid)
        let (found, layout) = Self.layout(of: builder.image(), slide: 0x10000)
        #expect(found)
        #expect(layout.text_low == 0x14000 && layout.text_high == 0x15000)
        #expect(Self.uuidBytes(layout) == Self.uuid)
    }

    @Test func malformedImagesAreRefusedOrReadUpToTheDamage() {
        // The other byte order, another magic, too short to hold a header.
        var swapped = Self.executable().image()
        swapped.replaceSubrange(0..<4, with: [0xfe, 0xed, 0xfa, 0xcf])
        #expect(!Self.layout(of: swapped).0)
        #expect(!Self.layout(of: [0x7f, 0x45, 0x4c, 0x46] + [UInt8](repeating: 0, count: 60)).0)
        #expect(!Self.layout(of: Array(Self.executable().image().prefix(20))).0)

        // A command of size 0 ends the walk: what came before it stays, nothing after is read.
        var broken = MachOBuilder()
        broken.segment("__TEXT", vmaddr: 0x1000, vmsize: 0x1000, initprot: 5)
        broken.raw(MachOBuilder.bytes(UInt32(0x1b)) + MachOBuilder.bytes(UInt32(0)))
        broken.uuid(Self.uuid)
        let (found, layout) = Self.layout(of: broken.image())
        #expect(found && layout.text_low == 0x1000 && !layout.has_uuid)

        // sizeofcmds or the readable bytes cut a command: it is not read.
        let executable = Self.executable().image()
        #expect(!Self.layout(of: executable, readable: 32 + 72 + 40).1.has_text) // __TEXT cut short
        let cut = Self.layout(of: Self.executable().image(sizeofcmds: 72 * 4 + 10))
        #expect(cut.0 && !cut.1.has_uuid)
        // A load command that claims more bytes than remain.
        var overlong = MachOBuilder()
        overlong.segment("__TEXT", vmaddr: 0x1000, vmsize: 0x1000, initprot: 5)
        overlong.raw(MachOBuilder.bytes(UInt32(0x1b)) + MachOBuilder.bytes(UInt32(4096)) + Self.uuid)
        let over = Self.layout(of: overlong.image())
        #expect(over.0 && !over.1.has_uuid)
        // No __TEXT segment: not an image the lists can use.
        var noText = MachOBuilder()
        noText.segment("__DATA", vmaddr: 0x1000, vmsize: 0x1000, initprot: 3)
        #expect(!Self.layout(of: noText.image()).0)
    }

    // MARK: - Debug ids

    static func text(_ body: (UnsafeMutablePointer<CChar>) -> Void) -> String {
        var buffer = [CChar](repeating: 0x55, count: Int(CS_DEBUG_ID_TEXT_SIZE))
        buffer.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
        return String(cString: buffer)
    }

    @Test func machODebugIdIsTheUUIDHyphenated() {
        let id = Self.text { cs_debug_id_from_uuid(Self.uuid, $0) }
        #expect(id == "84a04d24-0e60-3810-a8c0-90a65e2df61a")
    }

    /// Relay's documented pair (code_id → debug_id) for an x86_64 ELF image.
    @Test func elfDebugIdFollowsSentrysTransformation() {
        let buildID: [UInt8] = [0x68, 0x22, 0x0a, 0xe2, 0xc6, 0x5d, 0x65, 0xc1, 0xb6, 0xaa, 0xa1, 0x2f, 0xa6, 0x76, 0x5a, 0x6e,
                                0xc2, 0xf5, 0xf4, 0x34]
        #expect(Self.text { _ = cs_debug_id_from_elf_build_id(buildID, buildID.count, $0) } == "e20a2268-5dc6-c165-b6aa-a12fa6765a6e")
        // A short build id is padded with zeros; none gives "".
        #expect(Self.text { _ = cs_debug_id_from_elf_build_id([0x01, 0x02, 0x03, 0x04, 0x05], 5, $0) }
            == "04030201-0005-0000-0000-000000000000")
        var wrote = true
        #expect(Self.text { wrote = cs_debug_id_from_elf_build_id(nil, 0, $0) } == "")
        #expect(!wrote)
    }

    // MARK: - System images on Apple, by path

    static let simulatorRoot =
        "/Library/Developer/CoreSimulator/Volumes/iOS_21A328/Library/Developer/CoreSimulator/Profiles/Runtimes/iOS 17.0.simruntime/Contents/Resources/RuntimeRoot"

    @Test func runtimeRootComesFromTheLoadedLibSystem() {
        var root = [CChar](repeating: 0x55, count: 1024)
        #expect(cs_apple_runtime_root("/usr/lib/libSystem.B.dylib", &root, root.count))
        #expect(String(cString: root) == "")
        #expect(cs_apple_runtime_root(Self.simulatorRoot + "/usr/lib/libSystem.B.dylib", &root, root.count))
        #expect(String(cString: root) == Self.simulatorRoot)
        // Not libSystem itself, or a root that does not fit: no root.
        #expect(!cs_apple_runtime_root("/usr/lib/system/libsystem_kernel.dylib", &root, root.count))
        #expect(String(cString: root) == "")
        var small = [CChar](repeating: 0x55, count: 16)
        #expect(!cs_apple_runtime_root(Self.simulatorRoot + "/usr/lib/libSystem.B.dylib", &small, small.count))
        #expect(small[0] == 0)
    }

    @Test func systemImagesAreThoseUnderTheRuntimeRootsSystemAndUsrLib() {
        // A device or a Mac: the root is "".
        #expect(cs_apple_path_is_system("/System/Library/Frameworks/Foundation.framework/Foundation", ""))
        #expect(cs_apple_path_is_system("/usr/lib/libobjc.A.dylib", ""))
        #expect(cs_apple_path_is_system("/usr/lib/swift/libswiftCore.dylib", nil))
        #expect(!cs_apple_path_is_system("/private/var/containers/Bundle/Application/0C1D/App.app/App", ""))
        #expect(!cs_apple_path_is_system("/Applications/App.app/Contents/Frameworks/Kit.framework/Kit", ""))
        #expect(!cs_apple_path_is_system("/usr/libexec/thing", "")) // "/usr/lib" alone is not a directory prefix
        #expect(!cs_apple_path_is_system("", ""))
        #expect(!cs_apple_path_is_system(nil, ""))

        // The simulator: the simulated OS's images live under the runtime root; the app does not.
        let uikit = Self.simulatorRoot + "/System/Library/Frameworks/UIKit.framework/UIKit"
        let libobjc = Self.simulatorRoot + "/usr/lib/libobjc.A.dylib"
        let app = "/Users/dev/Library/Developer/CoreSimulator/Devices/5E1F/data/Containers/Bundle/Application/77AA/App.app/App"
        #expect(!cs_apple_path_is_system(uikit, "")) // what the /System/-and-/usr/lib/-only rule missed
        #expect(cs_apple_path_is_system(uikit, Self.simulatorRoot))
        #expect(cs_apple_path_is_system(libobjc, Self.simulatorRoot))
        #expect(!cs_apple_path_is_system(app, Self.simulatorRoot))
        #expect(!cs_apple_path_is_system(Self.simulatorRoot + "/Applications/Other.app/Other", Self.simulatorRoot))
    }

    // MARK: - Threads

    @Test func threadNameAndIdOfAThreadThatIsNotMain() {
        final class Box: @unchecked Sendable {
            var name = ""
            var id: UInt64 = 0
            var isMain = true
            var named = false
        }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            box.named = cs_thread_set_name("cs-images-name-test")
            var name = [CChar](repeating: 0x55, count: 64)
            cs_thread_copy_name(&name, name.count)
            box.name = String(cString: name)
            box.id = cs_current_thread_id()
            box.isMain = cs_is_main_thread()
            done.signal()
        }
        thread.start()
        done.wait()
        #expect(box.named)
        #if os(Linux)
        #expect(box.name == "cs-images-name-") // PR_SET_NAME keeps 15 bytes
        #else
        #expect(box.name == "cs-images-name-test")
        #endif
        #expect(!box.isMain)
        #expect(box.id != 0 && box.id != cs_current_thread_id())

        var cut = [CChar](repeating: 0x55, count: 4)
        cs_thread_copy_name(&cut, cut.count)
        #expect(cut.firstIndex(of: 0).map { $0 <= 3 } == true) // cut to the capacity, always terminated
    }
}
