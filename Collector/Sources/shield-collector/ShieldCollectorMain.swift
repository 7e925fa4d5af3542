import ArgumentParser
import CollectorCommandLine

/// The `shield-collector` executable: the commands live in `CollectorCommandLine` (so the tests
/// parse the same options into the same configuration); this root has the same name, help and
/// subcommands. Declared here with `@main` so ArgumentParser's asynchronous entry point runs
/// (`ShieldCollector.main()` called from top-level code resolves to the synchronous one, which
/// refuses asynchronous commands).
@main
struct ShieldCollectorMain: AsyncParsableCommand {
    static let configuration = ShieldCollector.configuration
}
