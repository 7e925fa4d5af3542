import CrashShieldProtocol
import Foundation
import Logging
import Synchronization

/// Symbolicates an event's native frames with the project's uploaded debug files, when the event
/// is shown (issue page, event API with `?symbolicate=1`, issue API): the stored event stays as
/// received, and a debug file uploaded after the event applies to it at once.
///
/// A frame is symbolicated when its `instruction_addr` lies in an image of `debug_meta.images`
/// (`image_addr` ≤ address < `image_addr + image_size`) whose `debug_id` (or, failing that, ELF
/// `code_id`) names a stored debug file. Its address in the file is
/// `instruction_addr − image_addr + load address` (`ObjectFile.Slice.loadAddress`: ELF the first
/// `PT_LOAD`'s `p_vaddr`, so a PIE's slide cancels out), less one for a return address (every
/// frame but the innermost, or all with `instruction_addr_adjustment: "all"`, none with
/// `"none"`). The frame then gets `function`, `filename` (base name), `abs_path`, `lineno`,
/// `colno`, `symbol_addr` and `symbolicator_status: "symbolicated"` (the client's own function,
/// if it sent one, in `raw_function`); code inlined there becomes one more frame per inlined
/// call (`inlined: true`), callee after caller, as Sentry shows them. Images whose frames were
/// looked up get `debug_status` `found` or `missing`. Frames no file describes, and every frame
/// when the symbolizer is missing or fails (logged at `error`, at most once a minute), stay as
/// received.
final class Symbolication: Sendable {
    let store: any DebugFileStore
    let cache: DebugFileCache
    let symbolizer: Symbolizer
    let logger: Logger
    /// Results by "<checksum>:<arch>:<address in file>"; cleared when it reaches `memoLimit`.
    private let memo = Mutex<[String: [Symbolizer.Location]]>([:])
    private let lastErrorLog = Mutex<Date?>(nil)
    static let memoLimit = 200_000

    init(store: any DebugFileStore, cache: DebugFileCache, symbolizer: Symbolizer, logger: Logger) {
        self.store = store
        self.cache = cache
        self.symbolizer = symbolizer
        self.logger = logger
    }

    /// Logs at `error` that symbolication failed, at most once a minute.
    private func report(_ message: String, _ error: any Error) {
        let now = Date()
        let due = lastErrorLog.withLock { last -> Bool in
            if let last, now.timeIntervalSince(last) < 60 { return false }
            last = now
            return true
        }
        if due { logger.error("\(message)", metadata: ["error": "\(error)"]) }
    }

    private struct Image {
        var start: UInt64
        var size: UInt64
        var debugID: String
        var index: Int
    }

    /// One frame to look up: where it is in the event, its image and its address in the file's space.
    private struct Lookup {
        var path: [PathStep]
        var image: Int
        var offset: UInt64
    }

    enum PathStep { case key(String), index(Int) }

    /// `event` with its frames symbolicated as far as the project's debug files allow (see the type).
    func symbolicate(_ event: JSONValue, projectID: Int64) async -> JSONValue {
        let imageValues = event["debug_meta"]?["images"]?.arrayValue ?? []
        var images: [Image] = []
        for (index, value) in imageValues.enumerated() {
            guard let start = Grouping.hexValue(value["image_addr"]), let size = value["image_size"]?.intValue, size > 0 else { continue }
            let debugID = value["debug_id"]?.stringValue.flatMap(ObjectFile.normalizedDebugID)
                ?? value["code_id"]?.stringValue.flatMap(ObjectFile.debugID(elfBuildID:))
            guard let debugID else { continue }
            images.append(Image(start: start, size: UInt64(size), debugID: debugID, index: index))
        }
        guard !images.isEmpty else { return event }

        // Every stack trace: exceptions', threads', and the event's own.
        var stacks: [[PathStep]] = []
        for (index, exception) in (event["exception"]?["values"]?.arrayValue ?? []).enumerated() where exception["stacktrace"] != nil {
            stacks.append([.key("exception"), .key("values"), .index(index), .key("stacktrace")])
        }
        for (index, thread) in (event["threads"]?["values"]?.arrayValue ?? []).enumerated() where thread["stacktrace"] != nil {
            stacks.append([.key("threads"), .key("values"), .index(index), .key("stacktrace")])
        }
        if event["stacktrace"] != nil { stacks.append([.key("stacktrace")]) }

        var lookups: [Lookup] = []
        for stack in stacks {
            guard let stacktrace = Self.value(event, at: stack), let frames = stacktrace["frames"]?.arrayValue else { continue }
            let adjustment = stacktrace["instruction_addr_adjustment"]?.stringValue ?? "auto"
            for (index, frame) in frames.enumerated() {
                guard let address = Grouping.hexValue(frame["instruction_addr"]),
                      frame["addr_mode"]?.stringValue.map({ $0 == "abs" }) ?? true,
                      let image = images.firstIndex(where: { address >= $0.start && address - $0.start < $0.size }) else { continue }
                let innermost = index == frames.count - 1
                let returnAddress = adjustment == "all" || (adjustment != "none" && !innermost)
                var offset = address - images[image].start
                if returnAddress && offset > 0 { offset -= 1 }
                lookups.append(Lookup(path: stack + [.key("frames"), .index(index)], image: image, offset: offset))
            }
        }
        guard !lookups.isEmpty else { return event }

        let wanted = Array(Set(lookups.map { images[$0.image].debugID }))
        let files: [DebugFileRecord]
        do { files = try await store.debugFiles(projectID: projectID, debugIDs: wanted) } catch {
            report("debug files could not be read; frames shown as received", error)
            return event
        }
        // Per debug id: the newest file with DWARF, else the newest.
        var fileFor: [String: DebugFileRecord] = [:]
        for file in files where fileFor[file.debugID] == nil || (!fileFor[file.debugID]!.features.contains("debug") && file.features.contains("debug")) {
            fileFor[file.debugID] = file
        }

        // Look the addresses up, per file, in one symbolizer run for those not known yet.
        var results: [Int: [Symbolizer.Location]] = [:]  // by lookup index
        var byFile: [String: [Int]] = [:]
        for (index, lookup) in lookups.enumerated() where fileFor[images[lookup.image].debugID] != nil {
            byFile[images[lookup.image].debugID, default: []].append(index)
        }
        for (debugID, indices) in byFile {
            guard let file = fileFor[debugID] else { continue }
            func key(_ index: Int) -> String { "\(file.checksum):\(file.arch ?? ""):\(lookups[index].offset &+ file.loadAddress)" }
            let known = memo.withLock { memo in indices.compactMap { index in memo[key(index)].map { (index, $0) } } }
            for (index, locations) in known { results[index] = locations }
            let unknown = indices.filter { results[$0] == nil }
            guard !unknown.isEmpty else { continue }
            do {
                let path = try await cache.localPath(for: file, store: store)
                let addresses = Array(Set(unknown.map { lookups[$0].offset &+ file.loadAddress })).sorted()
                let found = try await symbolizer.symbolize(object: path, addresses: addresses, arch: file.kind == "macho" ? file.arch : nil)
                let byAddress = Dictionary(uniqueKeysWithValues: zip(addresses, found))
                memo.withLock { memo in
                    if memo.count + addresses.count > Self.memoLimit { memo.removeAll() }
                    for (address, locations) in byAddress { memo["\(file.checksum):\(file.arch ?? ""):\(address)"] = locations }
                }
                for index in unknown { results[index] = byAddress[lookups[index].offset &+ file.loadAddress] }
            } catch {
                report("symbolication failed; frames shown as received", error)
            }
        }

        // Rewrite: frames of each stack (from the end, so indices stay valid), then images.
        var event = event
        let lookupsByStack = Dictionary(grouping: lookups.indices, by: { Array(lookups[$0].path.dropLast(2)).description })
        for stack in stacks {
            guard let indices = lookupsByStack[stack.description], var frames = Self.value(event, at: stack + [.key("frames")])?.arrayValue else { continue }
            for index in indices.sorted(by: { lookups[$0].path.last.map(Self.position) ?? 0 > lookups[$1].path.last.map(Self.position) ?? 0 }) {
                guard let locations = results[index], !locations.isEmpty, let file = fileFor[images[lookups[index].image].debugID],
                      case .index(let at)? = lookups[index].path.last else { continue }
                let original = frames[at]
                let imageStart = images[lookups[index].image].start
                // llvm-symbolizer lists innermost first; a stack trace lists callers first.
                let replacement = locations.reversed().enumerated().map { depth, location in
                    Self.frame(original, location, inlined: depth > 0,
                               symbolAddress: location.functionStart.map { $0 &- file.loadAddress &+ imageStart })
                }
                frames.replaceSubrange(at...at, with: replacement)
            }
            event = Self.setting(event, at: stack + [.key("frames")], to: .array(frames))
        }
        var imagesValue = imageValues
        for (position, image) in images.enumerated() where lookups.contains(where: { $0.image == position }) {
            guard case .object(var members) = imagesValue[image.index] else { continue }
            members["debug_status"] = .string(fileFor[image.debugID] != nil ? "found" : "missing")
            imagesValue[image.index] = .object(members)
        }
        return Self.setting(event, at: [.key("debug_meta"), .key("images")], to: .array(imagesValue))
    }

    private static func position(_ step: PathStep) -> Int {
        if case .index(let index) = step { return index }
        return 0
    }

    private static func frame(_ original: JSONValue, _ location: Symbolizer.Location, inlined: Bool, symbolAddress: UInt64?) -> JSONValue {
        var members = original.objectValue ?? [:]
        if let function = location.function {
            if let sent = members["function"]?.stringValue, sent != function, members["raw_function"] == nil {
                members["raw_function"] = .string(sent)
            }
            members["function"] = .string(SwiftDemangler.demangle(function))
        }
        if let file = location.file {
            members["abs_path"] = .string(file)
            members["filename"] = .string((file as NSString).lastPathComponent)
        }
        members["lineno"] = location.line.map { .int(Int64($0)) } ?? .null
        members["colno"] = location.column.map { .int(Int64($0)) } ?? .null
        if let symbolAddress, !inlined { members["symbol_addr"] = .string("0x" + String(symbolAddress, radix: 16)) }
        if inlined { members["inlined"] = .bool(true) }
        members["symbolicator_status"] = .string("symbolicated")
        return .object(members)
    }

    static func value(_ root: JSONValue, at path: [PathStep]) -> JSONValue? {
        var current: JSONValue? = root
        for step in path {
            switch step {
            case .key(let key): current = current?[key]
            case .index(let index):
                guard let array = current?.arrayValue, index < array.count else { return nil }
                current = array[index]
            }
        }
        return current
    }

    static func setting(_ root: JSONValue, at path: [PathStep], to value: JSONValue) -> JSONValue {
        guard let step = path.first else { return value }
        let rest = Array(path.dropFirst())
        switch (step, root) {
        case (.key(let key), .object(var members)):
            members[key] = setting(members[key] ?? .null, at: rest, to: value)
            return .object(members)
        case (.key(let key), .null):
            return .object([key: setting(.null, at: rest, to: value)])
        case (.index(let index), .array(var items)) where index < items.count:
            items[index] = setting(items[index], at: rest, to: value)
            return .array(items)
        default:
            return root
        }
    }
}

/// Swift symbol names demangled by the Swift runtime's `swift_demangle` (the collector is a Swift
/// program, so its process has the runtime); other names unchanged.
enum SwiftDemangler {
    private typealias Demangle = @convention(c) (UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UInt32) -> UnsafeMutablePointer<CChar>?
    // nonisolated(unsafe): an immutable C function pointer, set once by the (thread-safe) static initializer
    private nonisolated(unsafe) static let function: Demangle? = {
        #if canImport(Darwin)
        let everywhere = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
        #else
        let everywhere: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
        #endif
        guard let symbol = dlsym(everywhere, "swift_demangle") else { return nil }
        return unsafeBitCast(symbol, to: Demangle.self)
    }()

    static func demangle(_ name: String) -> String {
        guard name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_T0"), let function else { return name }
        return name.withCString { pointer in
            guard let result = function(pointer, strlen(pointer), nil, nil, 0) else { return name }
            defer { free(result) }
            return String(cString: result)
        }
    }
}
