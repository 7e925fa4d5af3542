import CrashShieldProtocol
import Foundation

/// Which CrashShield guard would have prevented a fatal crash, decided from the crash event alone:
/// the exception's type and reason, the signal, and the function names of the crashing stack.
///
/// The table (`GuardVerdicts.rules`) is tried in order and the first rule that matches wins. A rule
/// names the SDK's guard (`RemoteConfigDocument.knownGuardNames`) and matches when the crash's
/// type is one of `exceptionTypes` (an exception's type, or for a signal its name, "SIGSEGV";
/// empty: any type) and, when the rule lists any evidence, one piece of it is there:
/// - `selectors`: an Objective-C selector named in the reason as a whole token (Apple's
///   "-[__NSArrayI objectAtIndex:]: index 5 beyond bounds", GNUstep's "... (in 'objectAtIndex:')"
///   or "-characterAtIndex: index out of range") or by a method frame (`-[GSInlineArray objectAtIndex:]`);
/// - `phrases`: a text the reason contains (compared without regard to case);
/// - `innermostFrames`: a text one of the three innermost named frames contains.
/// `classPrefix` says where the verdict's class comes from: the class the reason names
/// ("-[MYThing foo]: unrecognized selector", GNUstep's "MYThing(instance) does not recognize foo"),
/// or the innermost in-app Objective-C method frame's class (the caller of a freed receiver). The
/// prefix is `GuardVerdicts.classPrefix` of that class. A crash no rule matches has no verdict.
struct GuardVerdictRule: Sendable, Hashable {
    enum ClassPrefixSource: Sendable, Hashable {
        case none
        case reasonClass
        case inAppFrameClass
    }

    /// Stable name of the rule ("container.misuse"): shown with the verdict and in the API.
    let name: String
    /// The SDK's guard name (`GuardID` raw value).
    let guardName: String
    /// For people: what the rule recognises.
    let summary: String
    var exceptionTypes: Set<String> = []
    var selectors: Set<String> = []
    var phrases: [String] = []
    var innermostFrames: [String] = []
    var classPrefix: ClassPrefixSource = .none
}

/// A guard that covers a crash: the rule that matched, its guard, and the class and prefix the
/// rule read (nil when the rule reads none or found none).
struct GuardVerdict: Sendable, Hashable, Encodable {
    let rule: String
    let guardName: String
    let summary: String
    let className: String?
    let classPrefix: String?
    /// The zombie guard acts only on the classes named by `zombie_class_prefixes`: a zombie verdict
    /// without a class prefix cannot be switched on by the one-click protection.
    var needsClassPrefix: Bool { guardName == "zombie" }

    enum CodingKeys: String, CodingKey { case rule, guardName = "guard", summary, className = "class", classPrefix = "class_prefix" }
}

/// What a verdict reads from an event (Sentry's JSON): the last exception (the crash; earlier
/// entries are chained causes) with its type (for a signal, the signal's name), reason and
/// whether it was handled, and its stack's function names, innermost (crashing) frame first.
struct CrashFacts: Sendable, Hashable {
    struct Frame: Sendable, Hashable {
        var function: String
        var inApp: Bool
    }
    var level: String?
    var exceptionType: String?
    var reason: String?
    /// Innermost first.
    var frames: [Frame] = []
    /// Whether the event is a CrashShield incident (a prevented crash), not a crash.
    var handled: Bool = false

    init(event: JSONValue) {
        level = event["level"]?.stringValue
        let list = event["exception"]?["values"]?.arrayValue ?? event["exception"]?.arrayValue ?? []
        guard let crash = list.last else { return }
        exceptionType = crash["type"]?.stringValue
        reason = crash["value"]?.stringValue
        handled = crash["mechanism"]?["handled"]?.boolValue ?? false
        var stack = (crash["stacktrace"]?["frames"]?.arrayValue ?? []).reversed().map { $0 }
        if stack.isEmpty {
            // The crashed thread's stack when the SDK put it there instead.
            let threads = event["threads"]?["values"]?.arrayValue ?? []
            if let crashed = threads.first(where: { $0["crashed"]?.boolValue == true }) {
                stack = (crashed["stacktrace"]?["frames"]?.arrayValue ?? []).reversed()
            }
        }
        frames = stack.compactMap { frame in
            guard let function = frame["function"]?.stringValue ?? frame["raw_function"]?.stringValue else { return nil }
            return Frame(function: function, inApp: frame["in_app"]?.boolValue ?? false)
        }
    }
}

enum GuardVerdicts {
    static let containerSelectors: Set<String> = [
        "objectAtIndex:", "objectAtIndexedSubscript:", "subarrayWithRange:", "objectsAtIndexes:", "getObjects:range:",
        "arrayWithObjects:count:", "initWithObjects:count:", "addObject:", "insertObject:atIndex:", "removeObjectAtIndex:",
        "replaceObjectAtIndex:withObject:", "exchangeObjectAtIndex:withObjectAtIndex:", "setObject:atIndexedSubscript:",
        "removeObjectsInRange:", "insertObjects:atIndexes:", "dictionaryWithObjects:forKeys:count:",
        "initWithObjects:forKeys:count:", "setObject:forKey:", "setObject:forKeyedSubscript:", "removeObjectForKey:",
        "removeObject:", "setObject:forKey:cost:", "subdataWithRange:", "getBytes:range:", "replaceBytesInRange:withBytes:",
        "resetBytesInRange:", "setWithObjects:count:", "orderedSetWithObjects:count:",
    ]
    static let stringSelectors: Set<String> = [
        "characterAtIndex:", "substringFromIndex:", "substringToIndex:", "substringWithRange:", "rangeOfString:options:range:",
        "rangeOfString:", "rangeOfString:options:", "stringByReplacingCharactersInRange:withString:", "stringByAppendingString:",
        "hasPrefix:", "hasSuffix:", "initWithString:", "appendString:", "insertString:atIndex:", "deleteCharactersInRange:",
        "replaceCharactersInRange:withString:", "attributedSubstringFromRange:", "attribute:atIndex:effectiveRange:",
        "attributesAtIndex:effectiveRange:", "addAttribute:value:range:", "setAttributes:range:",
    ]
    static let kvoSelectors: Set<String> = [
        "addObserver:forKeyPath:options:context:", "removeObserver:forKeyPath:", "removeObserver:forKeyPath:context:",
        "observeValueForKeyPath:ofObject:change:context:",
    ]
    static let foundationExceptions: Set<String> = ["NSRangeException", "NSInvalidArgumentException", "NSInternalInconsistencyException"]
    static let signals: Set<String> = ["SIGSEGV", "SIGBUS"]

    /// The table, tried in order (the first match wins). Each rule has a test on a real crash of
    /// CrashShield's own scenarios with the guards off (`GuardVerdictTests`, fixtures from
    /// `scripts/verdict_fixtures.py`). The order matters where texts overlap: a message to NSNull
    /// and GNUstep's KVO removal ("does not recognize removeObserver:forKeyPath:context:") come
    /// before the unrecognized selector.
    static let rules: [GuardVerdictRule] = [
        GuardVerdictRule(name: "nsnull.message", guardName: "nsnull",
                         summary: "a message to NSNull (an unexpected JSON null) that an empty value would answer",
                         exceptionTypes: ["NSInvalidArgumentException"], phrases: ["[NSNull "]),
        GuardVerdictRule(name: "kvo.misuse", guardName: "kvo",
                         summary: "removing a KVO observer that is not registered, or a bad registration",
                         exceptionTypes: foundationExceptions, selectors: kvoSelectors),
        GuardVerdictRule(name: "selector.unrecognized", guardName: "selector",
                         summary: "an unrecognized selector sent to an instance or a class",
                         exceptionTypes: ["NSInvalidArgumentException"],
                         phrases: ["unrecognized selector", "does not recognize"], classPrefix: .reasonClass),
        GuardVerdictRule(name: "kvc.undefined-key", guardName: "kvc", summary: "KVC with a key the object does not have",
                         exceptionTypes: ["NSUnknownKeyException"]),
        GuardVerdictRule(name: "kvc.nil-value", guardName: "kvc", summary: "KVC setting nil for a scalar",
                         exceptionTypes: ["NSInvalidArgumentException"], selectors: ["setNilValueForKey:"]),
        GuardVerdictRule(name: "container.misuse", guardName: "container",
                         summary: "an index or range beyond a Foundation container's bounds, or a nil element or key",
                         exceptionTypes: foundationExceptions, selectors: containerSelectors,
                         // GNUstep: a nil key or value in a dictionary; an index beyond an ordered
                         // set, asserted in its internal array (GSIArray).
                         phrases: ["nil key to dictionary", "nil value to dictionary", "Assertion failed in GSIArrayItemAtIndex"]),
        GuardVerdictRule(name: "string.misuse", guardName: "string",
                         summary: "an index or range beyond a Foundation string's length, or a nil argument",
                         exceptionTypes: foundationExceptions, selectors: stringSelectors),
        GuardVerdictRule(name: "zombie.freed-receiver", guardName: "zombie",
                         summary: "a message to a freed object (a fault in the runtime's message lookup)",
                         exceptionTypes: signals, innermostFrames: ["objc_msgSend", "objc_msg_lookup"], classPrefix: .inAppFrameClass),
    ]

    /// The first rule of `rules` that matches the fatal crash `event`, or nil (not a crash, a
    /// prevented crash, or a crash no guard covers).
    static func verdict(for event: JSONValue) -> GuardVerdict? {
        let facts = CrashFacts(event: event)
        guard !facts.handled, facts.exceptionType != nil else { return nil }
        for rule in rules {
            if let verdict = match(rule, facts) { return verdict }
        }
        return nil
    }

    static func match(_ rule: GuardVerdictRule, _ facts: CrashFacts) -> GuardVerdict? {
        // A signal's event names the signal as its exception type ("SIGSEGV").
        let type = facts.exceptionType ?? ""
        if !rule.exceptionTypes.isEmpty && !rule.exceptionTypes.contains(type) { return nil }
        let reason = facts.reason ?? ""
        let hasEvidence = !rule.selectors.isEmpty || !rule.phrases.isEmpty || !rule.innermostFrames.isEmpty
        if hasEvidence {
            let lowered = reason.lowercased()
            let named = facts.frames.prefix(3)
            let found = rule.phrases.contains { lowered.contains($0.lowercased()) }
                || rule.selectors.contains { containsToken(reason, $0) }
                || facts.frames.contains { methodParts($0.function).map { rule.selectors.contains($0.selector) } ?? false }
                || named.contains { frame in rule.innermostFrames.contains { frame.function.contains($0) } }
            guard found else { return nil }
        }
        var className: String?
        switch rule.classPrefix {
        case .none: break
        case .reasonClass: className = reasonClass(reason)
        case .inAppFrameClass:
            className = facts.frames.lazy.filter(\.inApp).compactMap { methodParts($0.function)?.className }.first
        }
        return GuardVerdict(rule: rule.name, guardName: rule.guardName, summary: rule.summary, className: className,
                            classPrefix: className.map(classPrefix))
    }

    /// Whether `text` names `selector` as a whole token (not inside a longer selector or word).
    static func containsToken(_ text: String, _ selector: String) -> Bool {
        func isPart(_ character: Character) -> Bool { character.isLetter || character.isNumber || character == ":" || character == "_" }
        var searchStart = text.startIndex
        while let range = text.range(of: selector, range: searchStart..<text.endIndex) {
            let before = range.lowerBound == text.startIndex ? nil : text[text.index(before: range.lowerBound)]
            let after = range.upperBound == text.endIndex ? nil : text[range.upperBound]
            if !(before.map(isPart) ?? false) && !(after.map(isPart) ?? false) { return true }
            searchStart = range.upperBound
        }
        return false
    }

    struct MethodParts {
        var className: String
        var selector: String
    }

    /// `-[Class selector]` or `+[Class(Category) selector]` → class and selector; nil otherwise.
    static func methodParts(_ function: String) -> MethodParts? {
        guard function.count > 4, function.first == "-" || function.first == "+",
              let open = function.firstIndex(of: "["), let close = function.lastIndex(of: "]"), open < close
        else { return nil }
        let inside = function[function.index(after: open)..<close]
        guard let space = inside.firstIndex(of: " ") else { return nil }
        var className = String(inside[..<space])
        if let paren = className.firstIndex(of: "(") { className = String(className[..<paren]) }
        let selector = String(inside[inside.index(after: space)...])
        guard !className.isEmpty, !selector.isEmpty else { return nil }
        return MethodParts(className: className, selector: selector)
    }

    /// The class the reason names: of the first `-[Class selector]` (or `+[...]`), else GNUstep's
    /// "Class(instance) does not recognize ..." / "Class(class) ...".
    static func reasonClass(_ reason: String) -> String? {
        if let marker = reason.range(of: "(instance) does not recognize") ?? reason.range(of: "(class) does not recognize") {
            let name = reason[..<marker.lowerBound].split(separator: " ").last.map(String.init) ?? ""
            if !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) { return name }
        }
        var rest = Substring(reason)
        while let open = rest.firstIndex(of: "[") {
            if open > rest.startIndex, "-+".contains(rest[rest.index(before: open)]),
               let close = rest[open...].firstIndex(of: "]"),
               let parts = methodParts(String(rest[rest.index(before: open)...close])) {
                return parts.className
            }
            rest = rest[rest.index(after: open)...]
        }
        return nil
    }

    /// A class name's prefix as the SDK's class filters use it: the leading capitals before the
    /// capital that starts the first word ("MYThing" → "MY", "MYURLCache" → "MYURL", "NSNull" →
    /// "NS"); the whole name when it has no such run of at least two capitals ("Cart" → "Cart").
    static func classPrefix(_ className: String) -> String {
        let characters = Array(className)
        var capitals = 0
        while capitals < characters.count && characters[capitals].isUppercase && characters[capitals].isASCII { capitals += 1 }
        // "MYThing": capitals = 3 ("MYT"); the last capital begins the word "Thing".
        if capitals < characters.count && capitals >= 3 { return String(characters[0..<(capitals - 1)]) }
        if capitals >= 2 && capitals == characters.count { return className }
        if capitals == 2 && capitals < characters.count {
            // "MYthing" has no word start: the two capitals are the prefix.
            return String(characters[0..<2])
        }
        return className
    }
}
