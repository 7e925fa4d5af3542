import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// The public errors are structs with stable codes: a catch matches by code, details are stored
/// properties, and a failing start throws the documented code and changes nothing.
@Suite struct ErrorTypesTests {
    /// A report directory below a regular file cannot be created: `directoryUnavailable` with the
    /// path, thrown before anything is installed.
    @Test func anUncreatableDirectoryIsDirectoryUnavailable() throws {
        let file = temporaryDirectory("errors-file")
        try FileManager.default.removeItem(atPath: file)
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(atPath: file) }
        var options = CaptureOptions()
        options.directory = file + "/reports"
        do {
            try CrashCapture.start(options)
            Issue.record("start succeeded with a directory below a file")
        } catch let error as CrashCaptureError where error.code == .directoryUnavailable {
            #expect(error.path == file + "/reports")
            #expect(error == .directoryUnavailable(file + "/reports"))
            #expect(error.description.hasPrefix("directoryUnavailable: "), "\(error)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(!CrashCapture.isInstalled)
        #expect(CrashCapture.directory == nil)
    }

    /// `catch CrashCaptureError.alreadyStarted` matches every error of that code (whatever its
    /// message) and no other code.
    @Test func aCatchPatternMatchesByCode() {
        func kind(_ error: any Error) -> String {
            do { throw error } catch CrashCaptureError.alreadyStarted {
                return "capture.alreadyStarted"
            } catch CrashCaptureError.installFailed {
                return "capture.installFailed"
            } catch CrashReportError.unreadable {
                return "report.unreadable"
            } catch {
                return "other"
            }
        }
        #expect(kind(CrashCaptureError(code: .alreadyStarted, message: "other wording")) == "capture.alreadyStarted")
        #expect(kind(CrashCaptureError.installFailed) == "capture.installFailed")
        #expect(kind(CrashCaptureError.directoryUnavailable("/x")) == "other")
        #expect(kind(CrashReportError.unreadable) == "report.unreadable")
        #expect(kind(CrashReportError.invalid("field")) == "other")
        #expect(kind(CocoaError(.fileNoSuchFile)) == "other")
    }

    /// Every error type shares `CodedError`: "<code>: <message>" as its description (unless it
    /// states its own) and a catch pattern that matches by code, for string codes as well.
    @Test func everyErrorTypeDescribesAndMatchesByCode() {
        func matches<E: CodedError>(_ pattern: E, _ error: any Error) -> Bool {
            do { throw error } catch pattern { return true } catch { return false }
        }
        func dsnError(_ text: String) -> DSN.ParseError? {
            do { _ = try DSN(text); return nil } catch { return error }
        }
        guard let dsn = dsnError("ftp://key@host.example/1"), let otherScheme = dsnError("gopher://key@host.example/1"),
              let noKey = dsnError("https://host.example/1") else {
            Issue.record("a malformed DSN parsed")
            return
        }
        #expect(dsn.description == "dsn.scheme: the scheme must be http or https, not ftp")
        #expect(matches(dsn, otherScheme), "same code, other message")
        #expect(!matches(dsn, noKey), "\(noKey.code)")
        let remote = RemoteConfigError(code: RemoteConfigError.badSignatureCode, path: "$", message: "no")
        #expect(remote.description == "remote_config.bad_signature at $: no", "its own description, with the path")
        #expect(matches(remote, RemoteConfigError(code: RemoteConfigError.badSignatureCode, path: "$.rules", message: "x")))
        #expect(!matches(remote, dsn), "an error of another type never matches")
        #expect(CrashReportError.unreadable.description == "unreadable: not even a prefix of a JSON object")
        #expect(CrashCaptureError.Code.installFailed.description == "installFailed")
        #expect(OutboxError.tooLarge.description.hasPrefix("tooLarge: "))
        #expect(matches(TransportError.timedOut, TransportError(code: .timedOut, message: "after 3 s")))
    }

    /// Codes are stable strings; an unknown code from a newer version still round-trips.
    @Test func codesAreStableStrings() {
        #expect(CrashCaptureError.Code.alreadyStarted.rawValue == "alreadyStarted")
        #expect(CrashCaptureError.Code.directoryUnavailable.rawValue == "directoryUnavailable")
        #expect(CrashCaptureError.Code.installFailed.rawValue == "installFailed")
        #expect(CrashCaptureError.Code.unsupportedPlatform.rawValue == "unsupportedPlatform")
        #expect(CrashReportError.Code.unreadable.rawValue == "unreadable")
        #expect(CrashReportError.Code.invalid.rawValue == "invalid")
        #expect(CrashCaptureError.Code(rawValue: "somethingNew") != .installFailed)
    }

    /// Bytes that are not JSON: `unreadable`; JSON with a field of the wrong type: `invalid`,
    /// whose message names the field.
    @Test func decodeErrorsCarryTheirCode() {
        #expect(throws: CrashReportError.unreadable) { try CrashReport.decode(Array("not json".utf8)) }
        do {
            let text = String(decoding: ReportValueTypesTests.report(), as: UTF8.self)
                .replacingOccurrences(of: #""unwinder":"dwarf""#, with: #""unwinder":7"#)
            _ = try CrashReport.decode(Array(text.utf8))
            Issue.record("a number as the unwinder decoded")
        } catch let error as CrashReportError where error.code == .invalid {
            #expect(error.message.contains("unwinder"), "\(error.message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}
