import CrashShieldProtocol
import Foundation

/// What grouping decided for one event: the issue it belongs to (`hash`) and how that issue is named.
public struct GroupingResult: Sendable, Hashable {
    /// 64 lowercase hex digits (SHA-256 of the grouping components and the algorithm version).
    public let hash: String
    /// The grouping algorithm version that produced `hash` (stored with the issue so a later
    /// algorithm does not regroup old issues).
    public let algorithm: String
    /// The components hashed, for display ("why were these grouped together?").
    public let components: [String]
    public let title: String
    public let culprit: String
}

/// Turns an event into its issue key.
///
/// Algorithm `v1`:
/// 1. The event's `fingerprint` (an array of strings) when present; an element `{{ default }}`
///    (spaces optional) is replaced by the components of step 2.
/// 2. Otherwise, for every exception in `exception.values`: its `type` (left out when its
///    `mechanism.synthetic` is true, as for signal crashes whose type is only the signal name),
///    then the function names of its stack's top five in-app frames, crashing frame first. A frame
///    without a function name contributes `module+0xoffset` (its address relative to its image,
///    which does not change between runs the way an absolute address does). When no frame is
///    marked in-app, all frames are used.
/// 3. An event without exceptions groups by its message (`logentry.formatted`, `logentry.message`
///    or `message`); an event with neither by its event id (it stays alone).
public enum Grouping {
    public static let algorithm = "v1"
    static let framesPerException = 5

    public static func group(_ event: JSONValue) -> GroupingResult { group(EventFacts(event)) }

    /// The same grouping from an event's facts (what ingest reads straight from the payload).
    static func group(_ event: EventFacts) -> GroupingResult {
        let defaults = defaultComponents(event)
        var components = defaults
        if let fingerprint = event.fingerprint, !fingerprint.isEmpty {
            let entries = fingerprint.compactMap { value -> String? in
                if let text = value.stringValue { return text }
                if let number = value.intValue { return String(number) }
                return nil
            }
            if !entries.isEmpty {
                components = entries.flatMap { entry -> [String] in
                    let squeezed = entry.filter { !$0.isWhitespace }
                    return squeezed == "{{default}}" ? defaults : ["fingerprint:" + entry]
                }
            }
        }
        let hash = CryptoSupport.sha256Hex(Data((algorithm + "\n" + components.joined(separator: "\n")).utf8))
        let (title, culprit) = naming(event)
        return GroupingResult(hash: hash, algorithm: algorithm, components: components, title: title, culprit: culprit)
    }

    static func message(_ event: EventFacts) -> String? {
        let candidates = [event.logentryFormatted, event.logentryMessage, event.messageFormatted, event.messageMessage, event.messageText]
        for candidate in candidates {
            if let text = candidate, !text.isEmpty { return text }
        }
        return nil
    }

    /// The first `limit` frames nearest the crash, crashing frame first (Sentry orders frames
    /// caller → callee, crashing frame last): of the in-app frames when any frame is marked
    /// in-app, else of all frames. (Walks the stack from its end instead of filtering and
    /// reversing copies of it.)
    static func topFrames(_ exception: EventFacts.Exception, limit: Int) -> [EventFacts.Frame] {
        let frames = exception.frames
        let anyInApp = frames.contains { $0.inApp == true }
        var top: [EventFacts.Frame] = []
        top.reserveCapacity(min(limit, frames.count))
        var index = frames.endIndex
        while index > frames.startIndex, top.count < limit {
            index -= 1
            if !anyInApp || frames[index].inApp == true { top.append(frames[index]) }
        }
        return top
    }

    static func frameKey(_ frame: EventFacts.Frame, images: [EventFacts.Image]) -> String? {
        if let function = frame.function, !function.isEmpty, function != "<unknown>" { return function }
        if let raw = frame.rawFunction, !raw.isEmpty { return raw }
        guard let address = hexValue(frame.instructionAddress) else { return nil }
        var base = hexValue(frame.imageAddress)
        var module = frame.package ?? frame.module
        if base == nil {
            for image in images {
                guard let start = hexValue(image.imageAddress), let size = image.imageSize?.intValue, size > 0 else { continue }
                if address >= start && address - start < UInt64(size) {
                    base = start
                    if module == nil { module = image.codeFile }
                    break
                }
            }
        }
        guard let base, address >= base else { return nil }  // an absolute address changes every run
        let name = (module ?? "?").split(separator: "/").last.map(String.init) ?? "?"
        return "\(name)+0x\(String(address - base, radix: 16))"
    }

    static func hexValue(_ value: JSONValue?) -> UInt64? {
        guard let value else { return nil }
        if let number = value.intValue, number >= 0 { return UInt64(number) }
        guard var text = value.stringValue?.lowercased() else { return nil }
        if text.hasPrefix("0x") { text.removeFirst(2) }
        return UInt64(text, radix: 16)
    }

    static func defaultComponents(_ event: EventFacts) -> [String] {
        var components: [String] = []
        for exception in event.exceptions {
            let synthetic = exception.mechanism.synthetic == true
            if !synthetic, let type = exception.type, !type.isEmpty { components.append("type:" + type) }
            for frame in topFrames(exception, limit: framesPerException) {
                if let key = frameKey(frame, images: event.images) { components.append("frame:" + key) }
            }
        }
        if !components.isEmpty { return components }
        if let message = message(event) { return ["message:" + message] }
        return ["event:" + (event.eventID ?? UUID().uuidString)]
    }

    static func naming(_ event: EventFacts) -> (title: String, culprit: String) {
        if let exception = event.exceptions.last {
            let synthetic = exception.mechanism.synthetic == true
            let top = topFrames(exception, limit: 1).first.flatMap { frameKey($0, images: event.images) } ?? ""
            let type = exception.type ?? "Error"
            let value = exception.value ?? ""
            let head = synthetic && !top.isEmpty ? "\(top) (\(type))" : type
            let title = value.isEmpty ? head : "\(head): \(value)"
            let culprit = event.culprit ?? event.transaction ?? top
            return (clip(title), clip(culprit))
        }
        if let message = message(event) {
            return (clip(String(message.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")),
                    clip(event.culprit ?? event.transaction ?? ""))
        }
        return ("<untitled event>", clip(event.culprit ?? ""))
    }

    static func clip(_ text: String) -> String { text.count > 200 ? String(text.prefix(199)) + "…" : text }
}
