import CrashShieldBase
import Foundation
package import _CrashShieldCapture

/// A crash whose report could not be written (directory unwritable, disk full, file-size limit):
/// the handler records it in `CSC_UNREPORTED_MARKER` in the report directory, through a
/// descriptor opened at install. Read by the next start's launch protection.
struct UnreportedCrash: Equatable {
    var launchID: String
    var phase: CrashReport.LaunchPhase
    var signal: Int32

    static func path(in directory: String) -> String { "\(directory)/\(CSC_UNREPORTED_MARKER)" }

    /// The recorded crash, if the marker holds one ("key=value" lines).
    static func read(directory: String) -> UnreportedCrash? {
        guard let data = FileManager.default.contents(atPath: path(in: directory)), !data.isEmpty else { return nil }
        var fields: [Substring: Substring] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[line[..<equals]] = line[line.index(after: equals)...]
        }
        guard let launchID = fields["launch_id"], let phase = fields["phase"], let signal = fields["signal"].flatMap({ Int32($0) })
        else { return nil }
        return UnreportedCrash(launchID: String(launchID), phase: CrashReport.LaunchPhase(rawValue: String(phase)), signal: signal)
    }

    /// Empties the marker once its crash was taken into account: its bytes become the reserved
    /// newlines again (`CSC_UNREPORTED_MARKER_BYTES`), in the same file, which the running process
    /// may hold open for its own crash and must be able to rewrite on a full disk.
    static func clear(directory: String) {
        let descriptor = open(path(in: directory), O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let newlines = [UInt8](repeating: 0x0a, count: Int(CSC_UNREPORTED_MARKER_BYTES))
        _ = newlines.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        _ = ftruncate(descriptor, off_t(CSC_UNREPORTED_MARKER_BYTES))
    }
}
