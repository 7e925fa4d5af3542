// The `shield-collector` executable: the commands live in `CollectorCommandLine`, so the tests
// parse the same options into the same configuration. Parsed and run here as
// `AsyncParsableCommand.main()` does (calling that from top-level code picks the synchronous
// `ParsableCommand.main()`, which refuses an asynchronous command).
import ArgumentParser
import CollectorCommandLine

do {
    var command = try ShieldCollector.parseAsRoot()
    if var asynchronous = command as? any AsyncParsableCommand {
        try await asynchronous.run()
    } else {
        try command.run()
    }
} catch {
    ShieldCollector.exit(withError: error)
}
