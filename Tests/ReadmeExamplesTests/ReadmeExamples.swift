// The README's Swift examples, verbatim, each inside a function that is compiled but never run:
// an example that no longer compiles against the public API fails the build.
// ReadmeExamplesSyncTests checks that every ```swift block of README.md appears here between
// "README example begin/end" markers, in order and unchanged (`import` lines go to the top of
// this file instead). Edit README.md and this file together.
//
// Only the public API may be used here: no @testable import, no package-level module.
import CrashShield
import Foundation

// Stand-ins for the app's own values that the examples refer to.
private let appSupport = NSTemporaryDirectory()
private let cachesDirectory = NSTemporaryDirectory() + "caches"
private let databasePath = NSTemporaryDirectory() + "app.sqlite"
private struct Session: Sendable { func reset() async throws {} }
private let session = Session()
private func disableRiskyFeatures() {}

func readmeExample_usingIt() throws {
// README example begin

var options = CrashShieldOptions()                // every guard, policy .neutralize; crash capture and
                                                  // launch protection on, in the default directory
options.sinks = [LoggingIncidentSink()]           // swift-log, level .warning
options.deniedClassPrefixes = ["MYLegacy"]        // leave these classes' misuses alone
options.guardedAppClassPrefixes = ["MYSafe"]      // also hook these app classes' own implementations
options.zombieClassPrefixes = ["MY"]              // zombies are opt-in
options.mainThreadOnlyCalls = [MainThreadCall(className: "MYCanvas", selector: "redraw")]
options.timerWeakTargetClasses = ["MYScreen"]     // repeating timers hold these weakly;
                                                  // default: UIViewController, UIView, NSViewController,
                                                  // NSView on Apple, none elsewhere; other timers stay strong
try CrashShieldSDK.start(options)

if CrashShieldSDK.lastRun?.outcome == .crashed { print("the previous run crashed") }
try CrashShieldSDK.setPolicy(.reportOnly, for: .string)   // record, then let the exception happen

Task {
    for await incident in CrashShieldSDK.incidents {
        print(incident.methodName, incident.reason, incident.count)
    }
}

let items = [1, 2, 3]
_ = items[shielded: 7]            // nil, and an incident "index 7 beyond count 3"
_ = "héllo"[shieldedOffset: 9]    // nil, and an incident

struct User: Codable {
    let id: Int                          // strict: a bad id still fails the document
    @Lenient var name: String            // "" when null, missing or not a string, with an incident
    @Lenient var tags: [String]          // []
}
// README example end
}

func readmeExample_captureAndLaunchProtection() throws {
// README example begin
var options = CrashShieldOptions()
var capture = CaptureOptions(directory: appSupport + "/CrashShield")
capture.appVersion = "2.4.1"
capture.reportSinks = [LoggingCrashReportSink()]      // reports of earlier runs, next launch
capture.appHangTimeout = .seconds(2)                  // app hangs (the default; nil: off)
options.capture = capture                             // nil: no capture (launch protection then
                                                      // counts launches that never completed)
var launch = LaunchProtectionOptions()                // 3 launch crashes within 5 s of start
launch.repairSteps = [                                // one step per crashing launch, in order
    .safeMode(),                                      // isSafeMode == true
    .clearCaches([cachesDirectory]),
    .quarantine([databasePath]),                      // moved aside, recoverable
    .resetRemoteConfiguration(),                      // drops the stored remote-config document
    RepairStep(id: "re-login", timeout: .seconds(5)) { context in
        try await session.reset()
    },
]
options.launchProtection = launch
options.safeModeGuards = [.kvo]                       // guards switched off in safe mode
try CrashShieldSDK.start(options)

let protection = CrashShieldSDK.launchProtection
if protection?.isSafeMode == true { disableRiskyFeatures() }
// ... when the first screen is up:
protection?.launchCompleted()                         // resets the count
// README example end
}

func readmeExample_captureOnly() throws {
// README example begin
let captureOnly = try CrashCapture.start(CaptureOptions(), launchProtection: LaunchProtectionOptions())
print(CrashCapture.lastRun?.outcome.rawValue ?? "first start", captureOnly?.isSafeMode ?? false)
// README example end
}

func readmeExample_reporting() throws {
// README example begin
var options = CrashShieldOptions()
options.reporting = try ReportingOptions(dsn: "https://<public key>@o123.ingest.sentry.io/42",
                                         release: "com.example.app@2.4.1+311")
options.reporting?.beforeSend = { event in var event = event; event.user = nil; return event }  // redaction
try CrashShieldSDK.start(options)
// README example end
}

func readmeExample_remoteSwitches() throws {
// README example begin
var options = CrashShieldOptions()
options.capture?.appVersion = "2.4.1"                 // matched against the rules' app_version
options.reporting = try ReportingOptions(dsn: "https://<public key>@collector.example.com/42")
options.reporting?.remoteConfigPublicKey = try RemoteConfigPublicKey(base64: "<the collector's Ed25519 public key>")
try CrashShieldSDK.start(options)   // the active rule fills in what `options` left unset;
                                    // every crash report names the active document's version
print(RemoteConfiguration.current?.version.map { "version \($0)" } ?? "no document")
// README example end
}

func readmeExample_errors() throws {
// README example begin
do {
    try CrashShieldSDK.setPolicy(.off, for: GuardID(rawValue: "nope"))
} catch let error as CrashShieldError where error.code == .unknownGuard {
    print(error.guardID!, error.message)      // the guard the error is about
}
do {
    try CrashShieldSDK.start()
} catch CrashShieldError.alreadyStarted {     // matches by code; the first start stays in effect
}
// README example end
}

func readmeExample_scope() {
// README example begin
CrashScope.setUser(CrashScope.User(id: "42", email: "ada@example.com"))  // nil clears it
CrashScope.setTag("environment", "staging")
CrashScope.setContext("order", ["id": "A-1187", "items": "3"])          // nil removes it
CrashScope.addBreadcrumb(message: "tapped pay", category: "ui", level: .info, data: ["screen": "checkout"])
// README example end
}

func readmeExample_handledEvents() {
// README example begin
enum CheckoutError: Error { case declined(code: Int) }
CrashShieldSDK.capture(error: CheckoutError.declined(code: 7))       // returns the event id, or nil
CrashShieldSDK.capture(message: "cart emptied by the server", level: .warning)
let sent = CrashShieldSDK.flush(timeout: .seconds(2))
// README example end
_ = sent
}
