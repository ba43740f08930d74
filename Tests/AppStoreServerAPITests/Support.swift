import AppStoreServerAPI
import EntitlementCore
import Foundation
import Testing
import TestSupport

/// Helpers of the App Store Server API tests: temporary folders, the `openssl` tool (an
/// implementation independent of the code under test), JWS decoding.
enum Tool {
    static func folder(_ label: String = "asapi") -> URL { Scenario.temporaryFolder(label) }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `executable` with `arguments` to completion (output to files: no pipe can fill up).
    static func run(_ executable: String, _ arguments: [String], in directory: URL? = nil, environment: [String: String]? = nil) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if let environment { process.environment = environment }
        let scratch = folder("run")
        let outURL = scratch.appendingPathComponent("out"), errURL = scratch.appendingPathComponent("err")
        // Checked: this Foundation's createFile is not @discardableResult (a warning otherwise).
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        try process.run()
        process.waitUntilExit()
        defer { try? FileManager.default.removeItem(at: scratch) }
        return Run(
            status: process.terminationStatus,
            stdout: String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self),
            stderr: String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self))
    }

    /// The `openssl` command line tool.
    static let opensslPath: String = {
        for candidate in ["/usr/bin/openssl", "/usr/local/bin/openssl", "/opt/homebrew/bin/openssl"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        return "/usr/bin/openssl"
    }()

    @discardableResult
    static func openssl(_ arguments: [String], in directory: URL) throws -> Run {
        let run = try run(opensslPath, arguments, in: directory)
        if run.status != 0 { Issue.record("openssl \(arguments.joined(separator: " ")) failed: \(run.stderr)") }
        return run
    }

    /// A new unencrypted PKCS#8 PEM key made by `openssl genpkey` in `folder`.
    static func generateKey(_ name: String, in folder: URL, algorithm: [String] = ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]) throws -> String {
        try openssl(["genpkey"] + algorithm + ["-out", name], in: folder)
        return folder.appendingPathComponent(name).path
    }

    /// Whether `openssl dgst -sha256 -verify` accepts the DER `signature` of `message` under the public key of `keyPath`.
    static func opensslVerifies(message: [UInt8], derSignature: [UInt8], keyPath: String) throws -> Bool {
        let scratch = folder("verify")
        defer { try? FileManager.default.removeItem(at: scratch) }
        try Data(message).write(to: scratch.appendingPathComponent("message"))
        try Data(derSignature).write(to: scratch.appendingPathComponent("signature.der"))
        try openssl(["pkey", "-in", keyPath, "-pubout", "-out", "public.pem"], in: scratch)
        let run = try run(opensslPath, ["dgst", "-sha256", "-verify", "public.pem", "-signature", "signature.der", "message"], in: scratch)
        return run.status == 0 && run.stdout.contains("Verified OK")
    }

    /// DER `ECDSA-Sig-Value` from a JWS's raw `r || s`.
    static func der(fromRaw raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    /// The three segments of a compact JWS: header and payload text, raw signature.
    static func split(_ jws: String) -> (header: String, payload: String, signature: [UInt8], signingInput: String)? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64.decodeURL(parts[0]), let payload = Base64.decodeURL(parts[1]),
            let signature = Base64.decodeURL(parts[2])
        else { return nil }
        return (String(decoding: header, as: UTF8.self), String(decoding: payload, as: UTF8.self), signature, parts[0] + "." + parts[1])
    }

    /// Checks a JWS made by the engine: unpadded base64url segments, a 64-byte signature that
    /// `openssl` verifies with `keyPath`'s public key; returns the decoded header and payload.
    static func verifiedJWS(_ jws: String, keyPath: String) throws -> (header: String, payload: String)? {
        #expect(!jws.contains("="), "base64url without padding")
        #expect(!jws.contains("+") && !jws.contains("/"), "base64url alphabet")
        guard let parts = split(jws) else {
            Issue.record("not a compact JWS: \(jws)")
            return nil
        }
        #expect(parts.signature.count == 64, "ES256 signatures are raw r || s, 64 bytes")
        let verified = try opensslVerifies(message: Array(parts.signingInput.utf8), derSignature: der(fromRaw: parts.signature), keyPath: keyPath)
        #expect(verified, "openssl verifies the ES256 signature with the key's public key")
        return verified ? (parts.header, parts.payload) : nil
    }
}

extension Tool {
    /// The `entitlements` binary (``EntitlementsBinary``).
    static var binary: String { EntitlementsBinary.path }

    /// Runs `entitlements ARGUMENTS` in `folder`.
    static func entitlements(_ arguments: [String], in folder: URL) throws -> Run {
        try run(binary, arguments, in: folder)
    }

    /// A configuration file in `folder` with an `appStoreServerAPI` section.
    static func writeConfig(
        in folder: URL, keyPath: String, baseURL: String? = nil, bundleId: String = "com.example.app", environment: JSONValue = "Sandbox",
        rootPEM: String? = nil, rules: JSONValue = ["version": "1", "products": [:]]
    ) throws -> String {
        var api = JSONObject([
            ("issuerId", "57246542-96fe-1a63-e053-0824d011072a"), ("keyId", "2X9R4HXF34"), ("privateKeyPath", .string(keyPath)),
        ])
        if let baseURL { api["baseURL"] = .string(baseURL) }
        var config = JSONObject([
            ("bundleId", .string(bundleId)), ("appAppleId", 1_234_567_890), ("environment", environment), ("rules", rules),
            ("appStoreServerAPI", .object(api)),
        ])
        if let rootPEM {
            try Data(rootPEM.utf8).write(to: folder.appendingPathComponent("root.pem"))
            config["rootCertificates"] = ["root.pem"]
        }
        let path = folder.appendingPathComponent("config.json").path
        try Data(JSONWriter.string(.object(config)).utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
