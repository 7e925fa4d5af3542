import Foundation

/// A fragment of HTML. String literals in an `HTML` literal are markup written here; every
/// interpolated `String` (or number, or optional) goes through `HTML.escape`, the one escaping
/// function of the dashboard; only another `HTML` value is inserted as markup. So
/// `"<td>\(event.title)</td>" as HTML` can never let event data become markup.
public struct HTML: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var rendered: String

    public init(stringLiteral value: String) { rendered = value }
    public init(stringInterpolation: StringInterpolation) { rendered = stringInterpolation.output }
    public var description: String { rendered }

    public static let empty: HTML = ""

    /// Joins fragments (the separator is markup).
    public static func join(_ parts: [HTML], separator: HTML = "") -> HTML {
        var result = HTML.empty
        result.rendered = parts.map(\.rendered).joined(separator: separator.rendered)
        return result
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var output = ""
        public init(literalCapacity: Int, interpolationCount: Int) { output.reserveCapacity(literalCapacity + 16 * interpolationCount) }
        public mutating func appendLiteral(_ literal: String) { output += literal }
        /// Text: escaped.
        public mutating func appendInterpolation(_ text: String) { output += HTML.escape(text) }
        /// Optional text: escaped, or `placeholder` (escaped) when nil.
        public mutating func appendInterpolation(_ text: String?, or placeholder: String = "—") { output += HTML.escape(text ?? placeholder) }
        public mutating func appendInterpolation(_ number: Int) { output += HTML.escape(String(number)) }
        public mutating func appendInterpolation(_ number: Int64) { output += HTML.escape(String(number)) }
        public mutating func appendInterpolation(_ number: Double, digits: Int = 1) {
            output += HTML.escape(String(format: "%.\(digits)f", number))
        }
        /// Markup built elsewhere (already escaped).
        public mutating func appendInterpolation(_ html: HTML) { output += html.rendered }
        public mutating func appendInterpolation(_ parts: [HTML]) { output += parts.map(\.rendered).joined() }
    }

    /// Escapes text for HTML element content and quoted attribute values: `& < > " '` become
    /// entities; control characters (other than tab, line feed and carriage return) and the
    /// Unicode bidirectional overrides and isolates, which could make text display differently
    /// from what it is, become a visible `U+XXXX`.
    public static func escape(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            case "\t", "\n", "\r": output.unicodeScalars.append(scalar)
            default:
                let value = scalar.value
                let isControl = value < 0x20 || (0x7F...0x9F).contains(value)
                let isBidi = (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value) || value == 0x200E || value == 0x200F
                    || value == 0x061C
                if isControl || isBidi {
                    output += String(format: "U+%04X", value)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        return output
    }

    /// Percent-encodes a value for a URL query or path segment (then escape it as text when it
    /// goes in an attribute, which interpolation does).
    public static func urlComponent(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}

/// Charts as inline SVG drawn by the server (no script).
enum SVGChart {
    struct Series {
        let name: String
        /// One value per x position (nil: no data that day).
        let values: [Double?]
    }

    static let palette = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"]

    /// A line chart of several series over `labels` (the x positions, e.g. days), y from
    /// `yMin` to `yMax`. Each point carries a `<title>` with its series, label and value.
    static func lines(title: String, labels: [String], series: [Series], yMin: Double, yMax: Double,
                      format: (Double) -> String) -> HTML {
        let width = 720.0, height = 260.0, left = 56.0, right = 16.0, top = 16.0, bottom = 40.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let span = max(yMax - yMin, 1e-9)
        func x(_ index: Int) -> Double { labels.count <= 1 ? left + plotWidth / 2 : left + plotWidth * Double(index) / Double(labels.count - 1) }
        func y(_ value: Double) -> Double { top + plotHeight * (1 - (min(max(value, yMin), yMax) - yMin) / span) }
        var parts: [HTML] = []
        for step in 0...4 {
            let value = yMin + span * Double(step) / 4
            let yy = y(value)
            parts.append("<line class=\"grid\" x1=\"\(left, digits: 1)\" y1=\"\(yy, digits: 1)\" x2=\"\(width - right, digits: 1)\" y2=\"\(yy, digits: 1)\"/><text class=\"axis\" x=\"\(left - 6, digits: 1)\" y=\"\(yy + 4, digits: 1)\" text-anchor=\"end\">\(format(value))</text>")
        }
        for index in labelIndices(count: labels.count, plotWidth: plotWidth) {
            parts.append("<text class=\"axis\" x=\"\(x(index), digits: 1)\" y=\"\(height - bottom + 18, digits: 1)\" text-anchor=\"middle\">\(labels[index])</text>")
        }
        for (seriesIndex, entry) in series.enumerated() {
            let color = palette[seriesIndex % palette.count]
            var segments: [[(Double, Double)]] = [[]]
            for (index, value) in entry.values.enumerated() {
                if let value { segments[segments.count - 1].append((x(index), y(value))) } else if !segments[segments.count - 1].isEmpty { segments.append([]) }
            }
            for segment in segments where segment.count > 1 {
                let points = segment.map { String(format: "%.1f,%.1f", $0.0, $0.1) }.joined(separator: " ")
                parts.append("<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(points)\"/>")
            }
            for (index, value) in entry.values.enumerated() {
                guard let value else { continue }
                parts.append("<circle cx=\"\(x(index), digits: 1)\" cy=\"\(y(value), digits: 1)\" r=\"3\" fill=\"\(color)\"><title>\(entry.name) · \(labels[index]): \(format(value))</title></circle>")
            }
        }
        let legend = HTML.join(series.enumerated().map { index, entry in
            // A class, not a style attribute: the dashboard's Content-Security-Policy allows only its stylesheet.
            "<li><span class=\"swatch c\(index % palette.count)\"></span>\(entry.name)</li>"
        })
        return """
        <figure class="chart"><svg viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-label="\(title)" xmlns="http://www.w3.org/2000/svg">\
        <title>\(title)</title>\(parts)</svg><figcaption>\(title)</figcaption><ul class="legend">\(legend)</ul></figure>
        """
    }

    /// Horizontal room an x-axis label needs (a `MM-dd` day at 11 px and a gap), in chart units.
    static let labelSpacing = 44.0

    /// Which of `count` x positions spread over `plotWidth` get a label: at most 8, never two
    /// closer than `labelSpacing`, counted back from the last (today), which always has one.
    static func labelIndices(count: Int, plotWidth: Double) -> [Int] {
        guard count > 1 else { return count == 1 ? [0] : [] }
        let gap = plotWidth / Double(count - 1)
        let step = max(1, Int((Double(count) / 8).rounded(.up)), Int((labelSpacing / gap).rounded(.up)))
        return Array(stride(from: count - 1, through: 0, by: -step).reversed())
    }

    /// The last `count` days up to `now` (UTC midnights), oldest first.
    static func days(count: Int, now: Date) -> [Date] {
        let today = (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400
        return (0..<count).reversed().map { Date(timeIntervalSince1970: today - Double($0) * 86_400) }
    }

    /// Index of `date`'s day in `days` (from `days(count:now:)`), or nil when outside.
    static func dayIndex(_ date: Date, in days: [Date]) -> Int? {
        guard let first = days.first else { return nil }
        let index = Int(((date.timeIntervalSince1970 - first.timeIntervalSince1970) / 86_400).rounded(.down))
        return days.indices.contains(index) ? index : nil
    }

    static func dayLabel(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "MM-dd"
        return formatter.string(from: date)
    }
}
