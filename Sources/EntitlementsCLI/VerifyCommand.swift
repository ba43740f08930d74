import EntitlementCore
import Entitlements
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Commands {
    // MARK: verify

    static func verify(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "verify", valued: ["--config"], switches: [])
        guard let configPath = arguments.values["--config"] else {
            throw UsageError(message: "--config PATH is required", command: "verify")
        }
        let configuration: EngineConfiguration
        do { configuration = try EngineConfiguration.loadChecked(path: configPath) } catch {
            Output.error("entitlements verify: \(error.description)")
            return .usage
        }
        let verifier: DocumentVerifier
        do { verifier = try DocumentVerifier(configuration: configuration) } catch {
            Output.error("entitlements verify: \(error.code): \(error.message)")
            return .usage
        }
        var anyRejected = false
        let files = arguments.positional.isEmpty ? ["-"] : arguments.positional
        try checkInputs(files, command: "verify")
        func report(_ documents: [InputBytes]) {
            let lines = documents.flatMap(verifier.verify)
            if lines.contains(where: { $0["result"] == "rejected" }) { anyRejected = true }
            Output.lines(lines)
        }
        for file in files {
            switch try openInput(file, limit: configuration.maxInputBytes, command: "verify") {
            case .whole(let document):
                report([document])
            case .lines(var reader):
                defer { reader.close() }
                while let lines = reader.nextBatch(maxLines: 64) { report(lines) }
                if reader.gaveUp {
                    anyRejected = true
                    Output.error(gaveUpNotice(file, limit: configuration.maxInputBytes, command: "verify"))
                }
            }
        }
        return anyRejected ? .rejected : .success
    }
}
