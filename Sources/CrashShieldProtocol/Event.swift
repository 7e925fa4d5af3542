import Foundation

/// The subset of a Sentry event that CrashShield sends: a crash (`level: fatal`), a guard
/// incident (`level: warning`), or the end of a launch-crash loop (`level: info`, a message).
///
/// Field names and shapes follow Sentry's event payload (`event_id`, `exception.values[]`,
/// `threads.values[]`, `debug_meta.images[]`, `breadcrumbs.values[]`, ...). Encoded with
/// `SentryEvent.encoder` (sorted keys), an optional that is nil is left out. Decoding accepts
/// what encoding writes, so a stored or received event reads back into the same value.
public struct SentryEvent: Codable, Sendable, Hashable {
    /// 32 lowercase hex digits, no hyphens.
    public var eventID: String
    /// RFC 3339 UTC with microseconds ("2026-11-26T03:53:46.102148Z"): `SentryTimestamp`.
    public var timestamp: String
    /// "native" for C/Swift/Objective-C on Linux, "cocoa" on Apple platforms.
    public var platform: String
    public var level: Level?
    public var logger: String?
    public var release: String?
    public var dist: String?
    public var environment: String?
    public var tags: [String: String]?
    public var contexts: Contexts?
    public var user: User?
    public var exception: Values<ExceptionValue>?
    public var threads: Values<Thread>?
    public var debugMeta: DebugMeta?
    public var breadcrumbs: Values<Breadcrumb>?
    /// The message of an event that has no exception (Sentry's `logentry`); nil for crashes and
    /// incidents.
    public var logentry: LogEntry?
    /// Grouping: events with the same fingerprint are one issue on the server.
    public var fingerprint: [String]?
    public var extra: [String: JSONValue]?
    public var sdk: SDKInfo?

    public init(eventID: String, timestamp: String, platform: String) {
        self.eventID = eventID
        self.timestamp = timestamp
        self.platform = platform
    }

    enum CodingKeys: String, CodingKey {
        case eventID = "event_id", timestamp, platform, level, logger, release, dist, environment, tags, contexts, user
        case exception, threads, debugMeta = "debug_meta", breadcrumbs, logentry, fingerprint, extra, sdk
    }

    /// Sentry's `logentry`: a message as shown (`formatted`), without format parameters.
    public struct LogEntry: Codable, Sendable, Hashable {
        /// The message text.
        public var formatted: String
        /// A message shown as `formatted`.
        public init(formatted: String) { self.formatted = formatted }
    }

    /// Severity. Sentry's levels; "fatal" is a crash.
    public enum Level: String, Codable, Sendable, Hashable {
        case fatal, error, warning, info, debug
    }

    /// Sentry's `{"values": [...]}` wrapper (exceptions, threads, breadcrumbs).
    public struct Values<Element: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
        public var values: [Element]
        public init(_ values: [Element]) { self.values = values }
    }

    /// `contexts`: the operating system, the device and the app, and the app's own named
    /// contexts (`named`: "order", "checkout", ...), each a JSON object under its name.
    ///
    /// A named context called `os`, `device` or `app` is sent in the same object as the typed
    /// one: its entries join the typed fields, and a typed field that is set wins over an entry
    /// of the same key. Decoding splits such an object back: the typed fields into the typed
    /// context, every other entry into `named`. A context that is not a JSON object is skipped.
    public struct Contexts: Codable, Sendable, Hashable {
        public var os: OSContext?
        public var device: DeviceContext?
        public var app: AppContext?
        /// Contexts by name, beside (or, for `os`, `device`, `app`, merged into) the typed ones.
        public var named: [String: [String: JSONValue]]?
        public init(os: OSContext? = nil, device: DeviceContext? = nil, app: AppContext? = nil,
                    named: [String: [String: JSONValue]]? = nil) {
            self.os = os
            self.device = device
            self.app = app
            self.named = named
        }

        public init(from decoder: any Decoder) throws {
            let objects = try decoder.singleValueContainer().decode([String: JSONValue].self)
            var named: [String: [String: JSONValue]] = [:]
            for (name, value) in objects {
                guard var fields = value.objectValue else { continue }
                switch name {
                case "os": os = OSContext(fields: &fields)
                case "device": device = DeviceContext(fields: &fields)
                case "app": app = AppContext(fields: &fields)
                default: break
                }
                if !fields.isEmpty || !["os", "device", "app"].contains(name) { named[name] = fields }
            }
            self.named = named.isEmpty ? nil : named
        }

        static func strings(_ values: [String: String?]) -> [String: JSONValue] {
            values.compactMapValues { $0.map(JSONValue.string) }
        }

        static func take(_ key: String, _ fields: inout [String: JSONValue]) -> String? {
            guard let value = fields[key]?.stringValue else { return nil }
            fields[key] = nil
            return value
        }

        public func encode(to encoder: any Encoder) throws {
            var objects = named ?? [:]
            func merge(_ name: String, _ typed: [String: JSONValue]?) {
                guard let typed else { return }
                objects[name] = (objects[name] ?? [:]).merging(typed) { _, typedValue in typedValue }
            }
            merge("os", os?.fields)
            merge("device", device?.fields)
            merge("app", app?.fields)
            var container = encoder.singleValueContainer()
            try container.encode(objects)
        }
    }

    public struct OSContext: Codable, Sendable, Hashable {
        /// "Linux", "macOS", "iOS".
        public var name: String?
        public var version: String?
        public var build: String?
        public var kernelVersion: String?
        public init(name: String? = nil, version: String? = nil, build: String? = nil, kernelVersion: String? = nil) {
            self.name = name
            self.version = version
            self.build = build
            self.kernelVersion = kernelVersion
        }
        enum CodingKeys: String, CodingKey { case name, version, build, kernelVersion = "kernel_version" }

        /// The fields set, by their JSON names.
        var fields: [String: JSONValue] {
            Contexts.strings(["name": name, "version": version, "build": build, "kernel_version": kernelVersion])
        }
        /// Takes the typed fields out of `fields` (a string value only; anything else stays).
        init(fields: inout [String: JSONValue]) {
            self.init(name: Contexts.take("name", &fields), version: Contexts.take("version", &fields),
                      build: Contexts.take("build", &fields), kernelVersion: Contexts.take("kernel_version", &fields))
        }
    }

    public struct DeviceContext: Codable, Sendable, Hashable {
        /// CPU architecture as Sentry names it: "x86_64", "arm64".
        public var arch: String?
        public var model: String?
        public init(arch: String? = nil, model: String? = nil) {
            self.arch = arch
            self.model = model
        }

        /// The fields set, by their JSON names.
        var fields: [String: JSONValue] { Contexts.strings(["arch": arch, "model": model]) }
        /// Takes the typed fields out of `fields` (a string value only; anything else stays).
        init(fields: inout [String: JSONValue]) {
            self.init(arch: Contexts.take("arch", &fields), model: Contexts.take("model", &fields))
        }
    }

    public struct AppContext: Codable, Sendable, Hashable {
        public var appIdentifier: String?
        public var appName: String?
        public var appVersion: String?
        public var appBuild: String?
        public init(appIdentifier: String? = nil, appName: String? = nil, appVersion: String? = nil, appBuild: String? = nil) {
            self.appIdentifier = appIdentifier
            self.appName = appName
            self.appVersion = appVersion
            self.appBuild = appBuild
        }
        enum CodingKeys: String, CodingKey {
            case appIdentifier = "app_identifier", appName = "app_name", appVersion = "app_version", appBuild = "app_build"
        }

        /// The fields set, by their JSON names.
        var fields: [String: JSONValue] {
            Contexts.strings(["app_identifier": appIdentifier, "app_name": appName, "app_version": appVersion,
                              "app_build": appBuild])
        }
        /// Takes the typed fields out of `fields` (a string value only; anything else stays).
        init(fields: inout [String: JSONValue]) {
            self.init(appIdentifier: Contexts.take("app_identifier", &fields), appName: Contexts.take("app_name", &fields),
                      appVersion: Contexts.take("app_version", &fields), appBuild: Contexts.take("app_build", &fields))
        }
    }

    public struct User: Codable, Sendable, Hashable {
        public var id: String?
        public var username: String?
        public var email: String?
        public var ipAddress: String?
        public var data: [String: JSONValue]?
        public init(id: String? = nil, username: String? = nil, email: String? = nil, ipAddress: String? = nil, data: [String: JSONValue]? = nil) {
            self.id = id
            self.username = username
            self.email = email
            self.ipAddress = ipAddress
            self.data = data
        }
        enum CodingKeys: String, CodingKey { case id, username, email, ipAddress = "ip_address", data }
    }

    /// One entry of `exception.values`.
    public struct ExceptionValue: Codable, Sendable, Hashable {
        /// "SIGSEGV", "NSRangeException", a guard's name.
        public var type: String?
        public var value: String?
        public var module: String?
        public var threadID: UInt64?
        public var mechanism: Mechanism?
        public var stacktrace: Stacktrace?
        public init(type: String?, value: String?, mechanism: Mechanism? = nil, stacktrace: Stacktrace? = nil, threadID: UInt64? = nil) {
            self.type = type
            self.value = value
            self.mechanism = mechanism
            self.stacktrace = stacktrace
            self.threadID = threadID
        }
        enum CodingKeys: String, CodingKey { case type, value, module, threadID = "thread_id", mechanism, stacktrace }
    }

    /// How the error was caught.
    public struct Mechanism: Codable, Sendable, Hashable {
        /// "signalhandler", "nsexception", "crashshield.guard".
        public var type: String
        /// False for a crash, true for a misuse a guard caught.
        public var handled: Bool?
        /// True when `type` of the exception is made up from the signal (the server then groups by
        /// the stack and titles the issue by the top in-app frame).
        public var synthetic: Bool?
        public var description: String?
        public var data: [String: JSONValue]?
        public var meta: Meta?
        public init(type: String, handled: Bool? = nil, synthetic: Bool? = nil, description: String? = nil,
                    data: [String: JSONValue]? = nil, meta: Meta? = nil) {
            self.type = type
            self.handled = handled
            self.synthetic = synthetic
            self.description = description
            self.data = data
            self.meta = meta
        }

        public struct Meta: Codable, Sendable, Hashable {
            public var signal: Signal?
            public init(signal: Signal?) { self.signal = signal }
        }

        /// The POSIX signal: number, name ("SIGSEGV"), `si_code` and its name ("SEGV_MAPERR").
        public struct Signal: Codable, Sendable, Hashable {
            public var number: Int32
            public var code: Int32?
            public var name: String?
            public var codeName: String?
            public init(number: Int32, code: Int32? = nil, name: String? = nil, codeName: String? = nil) {
                self.number = number
                self.code = code
                self.name = name
                self.codeName = codeName
            }
            enum CodingKeys: String, CodingKey { case number, code, name, codeName = "code_name" }
        }
    }

    /// Frames ordered caller → callee: the crashing frame is the last one.
    public struct Stacktrace: Codable, Sendable, Hashable {
        public var frames: [Frame]
        /// Register name → "0x..." value at the crash.
        public var registers: [String: String]?
        /// How the server treats `instruction_addr` before symbolication: "auto" (default: the
        /// last frame of a crashed thread is the faulting instruction, the others are return
        /// addresses) or "all" (every frame is a return address, as in an exception's backtrace).
        public var instructionAddrAdjustment: String?
        /// The stack of a thread that was running on, taken while it ran (an app hang's sample),
        /// not the state at a crash: Sentry then does not treat it as the crashing stack.
        public var snapshot: Bool?
        public init(frames: [Frame], registers: [String: String]? = nil, instructionAddrAdjustment: String? = nil, snapshot: Bool? = nil) {
            self.frames = frames
            self.registers = registers
            self.instructionAddrAdjustment = instructionAddrAdjustment
            self.snapshot = snapshot
        }
        enum CodingKeys: String, CodingKey { case frames, registers, instructionAddrAdjustment = "instruction_addr_adjustment", snapshot }
    }

    public struct Frame: Codable, Sendable, Hashable {
        /// "0x..." absolute address.
        public var instructionAddr: String?
        public var function: String?
        /// Path of the image that holds the address.
        public var package: String?
        /// True for the app's own code, false for system libraries and runtimes.
        public var inApp: Bool?
        public var symbolAddr: String?
        /// "0x..." load address of `package`.
        public var imageAddr: String?
        public var filename: String?
        public var lineno: Int?
        public init(instructionAddr: String? = nil, function: String? = nil, package: String? = nil, inApp: Bool? = nil,
                    imageAddr: String? = nil, filename: String? = nil, lineno: Int? = nil) {
            self.instructionAddr = instructionAddr
            self.function = function
            self.package = package
            self.inApp = inApp
            self.imageAddr = imageAddr
            self.filename = filename
            self.lineno = lineno
        }
        enum CodingKeys: String, CodingKey {
            case instructionAddr = "instruction_addr", function, package, inApp = "in_app", symbolAddr = "symbol_addr"
            case imageAddr = "image_addr", filename, lineno
        }
    }

    /// One entry of `threads.values`. The crashed thread carries no stack trace: the exception
    /// names it through `thread_id`.
    public struct Thread: Codable, Sendable, Hashable {
        public var id: UInt64
        public var name: String?
        public var crashed: Bool?
        public var current: Bool?
        public var main: Bool?
        public var stacktrace: Stacktrace?
        public init(id: UInt64, name: String? = nil, crashed: Bool? = nil, current: Bool? = nil, main: Bool? = nil, stacktrace: Stacktrace? = nil) {
            self.id = id
            self.name = name
            self.crashed = crashed
            self.current = current
            self.main = main
            self.stacktrace = stacktrace
        }
    }

    public struct DebugMeta: Codable, Sendable, Hashable {
        public var images: [DebugImage]
        public init(images: [DebugImage]) { self.images = images }
    }

    /// A loaded image, so the server can match uploaded debug files to addresses.
    public struct DebugImage: Codable, Sendable, Hashable {
        /// "elf" or "macho".
        public var type: String
        public var codeFile: String?
        /// "0x..." address the image is loaded at.
        public var imageAddr: String
        /// "0x..." preferred load address, when the image was not loaded there (ELF: nonzero for
        /// an executable that is not position-independent).
        public var imageVmaddr: String?
        public var imageSize: UInt64
        /// ELF: the GNU build id, hex. Mach-O: absent.
        public var codeID: String?
        /// ELF: derived from the build id (`DebugIdentifier.fromELFBuildID`). Mach-O: the UUID.
        public var debugID: String?
        public var arch: String?
        public init(type: String, codeFile: String?, imageAddr: String, imageVmaddr: String? = nil, imageSize: UInt64,
                    codeID: String?, debugID: String?, arch: String?) {
            self.type = type
            self.codeFile = codeFile
            self.imageAddr = imageAddr
            self.imageVmaddr = imageVmaddr
            self.imageSize = imageSize
            self.codeID = codeID
            self.debugID = debugID
            self.arch = arch
        }
        enum CodingKeys: String, CodingKey {
            case type, codeFile = "code_file", imageAddr = "image_addr", imageVmaddr = "image_vmaddr", imageSize = "image_size"
            case codeID = "code_id", debugID = "debug_id", arch
        }
    }

    public struct Breadcrumb: Codable, Sendable, Hashable {
        /// RFC 3339 UTC (`SentryTimestamp`).
        public var timestamp: String
        /// "default", "error", "debug", ...
        public var type: String?
        public var category: String?
        public var level: Level?
        public var message: String?
        public var data: [String: JSONValue]?
        public init(timestamp: String, type: String? = nil, category: String? = nil, level: Level? = nil,
                    message: String? = nil, data: [String: JSONValue]? = nil) {
            self.timestamp = timestamp
            self.type = type
            self.category = category
            self.level = level
            self.message = message
            self.data = data
        }
    }

    /// The sending SDK: also written into envelope headers.
    public struct SDKInfo: Codable, Sendable, Hashable {
        public var name: String
        public var version: String
        public init(name: String, version: String) {
            self.name = name
            self.version = version
        }
    }
}

extension SentryEvent {
    /// Compact JSON with sorted keys: the event item's payload.
    public func jsonData() throws -> Data { try SentryEvent.encoder.encode(self) }

    /// Reads an event written by `jsonData()` (or sent by another SDK, as far as this subset goes).
    public static func decode(_ data: Data) throws -> SentryEvent { try JSONDecoder().decode(SentryEvent.self, from: data) }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// Timestamps as Sentry reads them: RFC 3339 in UTC with microseconds.
public enum SentryTimestamp {
    /// "2026-11-26T03:53:46.102148Z" for nanoseconds since 1970 (truncated to microseconds).
    public static func rfc3339(nanosecondsSince1970 ns: UInt64) -> String {
        let seconds = Int64(ns / 1_000_000_000)
        let micros = Int((ns % 1_000_000_000) / 1_000)
        var days = seconds / 86_400
        let secondOfDay = Int(seconds % 86_400)
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        days += 719_468
        let era = days / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(Int64(secondOfDay / 3600), 2)):"
            + "\(pad(Int64(secondOfDay / 60 % 60), 2)):\(pad(Int64(secondOfDay % 60), 2)).\(pad(Int64(micros), 6))Z"
    }

    /// The same for a `Date` (before 1970: clamped to 1970).
    public static func rfc3339(_ date: Date) -> String {
        let seconds = max(0, date.timeIntervalSince1970)
        return rfc3339(nanosecondsSince1970: UInt64(seconds * 1_000_000) * 1_000)
    }
}
