// The `shield-collector` executable: the commands live in `CollectorCommandLine`, so the tests
// parse the same options into the same configuration.
import CollectorCommandLine

await ShieldCollector.main()
