import CrashShieldBase
import Foundation

/// A Sentry envelope: one JSON header line, then items, each a JSON header line and a payload.
///
/// Written form (what `serialized()` produces and `parse` reads):
/// ```
/// {"event_id":"...","dsn":"...","sdk":{...}}\n
/// {"type":"event","length":123}\n
/// <123 bytes of payload>\n
/// ```
/// Every item written carries `length`, so a payload may contain newlines. The reader also takes
/// items without `length` (payload up to the next newline) and a final item without its newline,
/// as Sentry's servers do. Item types the reader does not know are kept as they are.
public struct Envelope: Sendable, Hashable {
    public var header: [String: JSONValue]
    public var items: [Item]

    public init(header: [String: JSONValue] = [:], items: [Item] = []) {
        self.header = header
        self.items = items
    }

    /// One item: its header (`type` and, when written, `length`, plus type-specific keys such as
    /// `content_type` or `filename`) and its payload bytes.
    public struct Item: Sendable, Hashable {
        public var header: [String: JSONValue]
        public var payload: Data

        public init(type: String, payload: Data, header extra: [String: JSONValue] = [:]) {
            var header = extra
            header["type"] = .string(type)
            self.header = header
            self.payload = payload
        }

        public init(header: [String: JSONValue], payload: Data) {
            self.header = header
            self.payload = payload
        }

        /// The item's `type` ("event", "session", "client_report", "attachment", ...).
        public var type: String { header["type"]?.stringValue ?? "" }

        /// An item whose payload is `value` as compact JSON.
        public static func json(type: String, _ value: JSONValue, header: [String: JSONValue] = [:]) -> Item {
            Item(type: type, payload: value.jsonData(), header: header)
        }

        /// An item whose payload is `value` encoded with sorted keys.
        public static func encoded<T: Encodable>(type: String, _ value: T, header: [String: JSONValue] = [:]) throws -> Item {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return Item(type: type, payload: try encoder.encode(value), header: header)
        }
    }

    /// The envelope's bytes. Every item header gets `length` set to its payload's byte count.
    public func serialized() -> Data {
        var data = JSONValue.object(header).jsonData()
        data.append(0x0A)
        for item in items {
            var itemHeader = item.header
            itemHeader["length"] = .int(Int64(item.payload.count))
            data.append(JSONValue.object(itemHeader).jsonData())
            data.append(0x0A)
            data.append(item.payload)
            data.append(0x0A)
        }
        return data
    }

    /// Why bytes are not an envelope. `code` is stable.
    public struct ParseError: CodedError {
        public let code: String
        public let message: String
    }

    /// The envelope-header fields Sentry's ingestion (Relay) declares; a header naming one of them
    /// twice is refused (serde's "duplicate field"), where an undeclared key's last value counts.
    static let declaredHeaderFields: Set<String> = [
        "event_id", "dsn", "client", "version", "origin", "remote_addr", "forwarded_for", "user_agent",
        "client_hints", "no_cache", "retention", "downsampled_retention", "sent_at", "trace", "required_features",
    ]

    /// The item-header fields Relay declares; as `declaredHeaderFields`, for item headers.
    static let declaredItemHeaderFields: Set<String> = [
        "type", "length", "item_count", "attachment_type", "content_type", "filename", "platform",
        "routing_hint", "metrics_extracted", "spans_extracted", "fully_normalized", "sampled",
    ]

    /// Reads an envelope.
    ///
    /// Headers are JSON objects in UTF-8 on one line each, read as Sentry's ingestion (Relay,
    /// serde_json) reads them: a trailing comma in an object or array, or a byte order mark before
    /// a header, makes the header invalid (`envelope.header`); a field Relay declares
    /// (`declaredHeaderFields`, `declaredItemHeaderFields`: `event_id`, `dsn`, `type`, `length`,
    /// ...) given twice in one header is refused (`envelope.duplicate_field`), while of another
    /// repeated key the last value counts. An item's `length` is an integer from 0 to 2^32 − 1
    /// written without fraction or exponent (`3.0` is refused) or `null` (as if absent). Blank
    /// lines between items are skipped.
    /// - Throws: `Envelope.ParseError` for a missing or non-object header (`envelope.empty`,
    ///   `envelope.header`), a repeated declared field (`envelope.duplicate_field`), a `length`
    ///   that is not such an integer or does not end where the payload's newline is
    ///   (`envelope.length`), or a `length` beyond the data (`envelope.truncated`).
    public static func parse(_ data: Data) throws(ParseError) -> Envelope {
        // Read in place: no copy of the whole body.
        let result: Result<Envelope, ParseError> = data.withUnsafeBytes { raw in
            Result { () throws(ParseError) -> Envelope in try parse(buffer: raw.assumingMemoryBound(to: UInt8.self)) }
        }
        return try result.get()
    }

    /// Reads an envelope from bytes already in an array (no copy of the whole body); the same
    /// rules and errors as `parse(_:)`.
    public static func parse(bytes: [UInt8]) throws(ParseError) -> Envelope {
        try bytes.withUnsafeBufferPointer { buffer throws(ParseError) -> Envelope in try parse(buffer: buffer) }
    }

    /// The reader of both `parse` functions, over bytes it only reads during the call: each
    /// header line is read where it lies, and each payload is copied once, into its item's `Data`.
    private static func parse(buffer bytes: UnsafeBufferPointer<UInt8>) throws(ParseError) -> Envelope {
        var position = 0

        /// The next line's range (without its newline), or nil at the end.
        func line() -> Range<Int>? {
            guard position < bytes.count else { return nil }
            var end = position
            while end < bytes.count && bytes[end] != 0x0A { end += 1 }
            let range = position..<end
            position = min(bytes.count, end + 1)
            return range
        }
        /// Names the header in error messages: the envelope's (nil) or item `itemIndex`'s.
        func describe(_ itemIndex: Int?) -> String {
            itemIndex.map { "item header \($0)" } ?? "the envelope header"
        }
        // The headers are read by the package's own reader in its envelope-header dialect
        // (JSONDecoder, the reader before it, was most of this function's cost).
        func object(_ range: Range<Int>, item itemIndex: Int?, declared: Set<String>) throws(ParseError) -> [String: JSONValue] {
            guard let parsed = try? StrictJSON.parseEnvelopeHeader(UnsafeBufferPointer(rebasing: bytes[range])),
                  case .object(let members) = parsed.value
            else {
                throw ParseError(code: "envelope.header", message: "\(describe(itemIndex)) is not a JSON object")
            }
            if !parsed.repeatedKeys.isEmpty, let field = parsed.repeatedKeys.intersection(declared).sorted().first {
                throw ParseError(code: "envelope.duplicate_field", message: "\(describe(itemIndex)) has the field \(field) more than once")
            }
            return members
        }

        guard let headerLine = line() else {
            throw ParseError(code: "envelope.empty", message: "no envelope header")
        }
        let header = try object(headerLine, item: nil, declared: declaredHeaderFields)
        var items: [Item] = []
        while position < bytes.count {
            guard let itemLine = line() else { break }
            if itemLine.isEmpty { continue }  // tolerated: blank line between items
            let itemHeader = try object(itemLine, item: items.count, declared: declaredItemHeaderFields)
            let payload: Range<Int>
            if let lengthValue = itemHeader["length"], lengthValue != .null {
                // Relay reads `length` as a u32: an integer as written, no fraction or exponent.
                guard case .int(let length) = lengthValue, length >= 0, length <= Int64(UInt32.max) else {
                    throw ParseError(code: "envelope.length", message: "item \(items.count) has an invalid length (an integer from 0 to 4294967295)")
                }
                guard length <= bytes.count - position else {
                    throw ParseError(code: "envelope.truncated", message: "item \(items.count) is shorter than its length")
                }
                payload = position..<(position + Int(length))
                position += Int(length)
                if position < bytes.count {
                    guard bytes[position] == 0x0A else {
                        throw ParseError(code: "envelope.length", message: "item \(items.count) is longer than its length")
                    }
                    position += 1
                }
            } else {
                payload = line() ?? position..<position
            }
            items.append(Item(header: itemHeader, payload: Data(buffer: UnsafeBufferPointer(rebasing: bytes[payload]))))
        }
        return Envelope(header: header, items: items)
    }
}
