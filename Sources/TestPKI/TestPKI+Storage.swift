internal import COpenSSL
import Foundation

extension TestPKI {
    /// Why a saved PKI could not be loaded.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        /// The file (or folder) that could not be used.
        public var file: String
        /// What was wrong with it.
        public var reason: String
        /// `file: reason`.
        public var description: String { "\(file): \(reason)" }
    }

    /// The file names a saved PKI uses in its folder.
    public static let fileNames = (
        root: "root.pem", rootKey: "root.key.pem",
        intermediate: "intermediate.pem", intermediateKey: "intermediate.key.pem",
        leaf: "leaf.pem", leafKey: "leaf.key.pem"
    )

    /// Writes the three certificates and their private keys (PEM, unencrypted: test use only)
    /// into `folder`, creating it if needed, so a fixture generator can re-sign later.
    public func save(to folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let m = material
        let files: [(String, String)] = [
            (Self.fileNames.root, rootPEM),
            (Self.fileNames.rootKey, Self.privateKeyPEM(m.rootKey)),
            (Self.fileNames.intermediate, intermediatePEM),
            (Self.fileNames.intermediateKey, Self.privateKeyPEM(m.intermediateKey)),
            (Self.fileNames.leaf, leafPEM),
            (Self.fileNames.leafKey, Self.privateKeyPEM(m.leafKey)),
        ]
        for (name, text) in files {
            try Data(text.utf8).write(to: folder.appendingPathComponent(name), options: .atomic)
        }
    }

    /// Reads a PKI written by ``save(to:)``.
    /// - Throws: ``LoadError`` naming the file that is missing, unreadable or does not match its key.
    public static func load(from folder: URL) throws -> TestPKI {
        func text(_ name: String) throws -> String {
            let url = folder.appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw LoadError(file: url.path, reason: "missing or unreadable")
            }
            return String(decoding: data, as: UTF8.self)
        }
        func certificate(_ name: String) throws -> OpaquePointer {
            guard let parsed = OpenSSL.readFromMemory(try text(name), { PEM_read_bio_X509($0, nil, nil, nil) }) else {
                throw LoadError(file: name, reason: "not a PEM certificate")
            }
            return parsed
        }
        func key(_ name: String) throws -> OpaquePointer {
            guard let parsed = OpenSSL.readFromMemory(try text(name), { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
                throw LoadError(file: name, reason: "not a PEM private key")
            }
            return parsed
        }
        // Everything parsed so far is freed if a later file fails.
        var certificates: [OpaquePointer] = []
        var keys: [OpaquePointer] = []
        var owned = false
        defer {
            if !owned {
                certificates.forEach { X509_free($0) }
                keys.forEach { EVP_PKEY_free($0) }
            }
        }
        for (certificateName, keyName) in [
            (fileNames.root, fileNames.rootKey), (fileNames.intermediate, fileNames.intermediateKey),
            (fileNames.leaf, fileNames.leafKey),
        ] {
            certificates.append(try certificate(certificateName))
            keys.append(try key(keyName))
            if X509_check_private_key(certificates.last!, keys.last!) != 1 {
                ERR_clear_error()
                throw LoadError(file: keyName, reason: "does not match \(certificateName)")
            }
        }
        let (root, intermediate, leaf) = (certificates[0], certificates[1], certificates[2])
        let material = Material(
            rootKey: keys[0], intermediateKey: keys[1], leafKey: keys[2],
            root: root, intermediate: intermediate, leaf: leaf)
        owned = true
        var options = Options()
        options.rootValidity = validity(root) ?? options.rootValidity
        options.intermediateValidity = validity(intermediate) ?? options.intermediateValidity
        options.leafValidity = validity(leaf) ?? options.leafValidity
        return TestPKI(material: material, options: options)
    }

    private static func privateKeyPEM(_ key: OpaquePointer) -> String {
        OpenSSL.writeToMemory { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
    }

    private static func validity(_ certificate: OpaquePointer) -> Validity? {
        func millis(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
            guard let time else { return nil }
            var value = tm()
            guard ASN1_TIME_to_tm(time, &value) == 1 else { return nil }
            return Int64(timegm(&value)) * 1_000
        }
        guard let start = millis(X509_get0_notBefore(certificate)), let end = millis(X509_get0_notAfter(certificate)) else {
            return nil
        }
        return Validity(notBefore: start, notAfter: end)
    }
}
