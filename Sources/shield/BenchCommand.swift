import Foundation

enum BenchCommand {
    static func run(json: Bool) -> Int32 { 0 }
}
