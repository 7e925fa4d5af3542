// What `import CrashShield` brings into an app: the umbrella's own API (the one start, options,
// status) and the public API of the three modules below. The wire format (CrashShieldProtocol) is
// not re-exported: an app never needs it.
@_exported import CrashShieldBase
@_exported import CrashShieldGuards
@_exported import CrashShieldRecording
@_exported import CrashShieldSentry
