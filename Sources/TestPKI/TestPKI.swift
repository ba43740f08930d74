internal import COpenSSL
public import JSONAndBase64

/// A throwaway PKI shaped like Apple's App Store signing chain, made in memory with OpenSSL:
/// a self-signed P-384 root, a P-384 intermediate carrying Apple's WWDR extension
/// 1.2.840.113635.100.6.2.1, and a P-256 leaf carrying Apple's receipt-signing extension
/// 1.2.840.113635.100.6.11.1. It signs payloads as compact JWS exactly as the App Store does.
///
/// ```swift
/// let pki = TestPKI()
/// let jws = pki.sign(TestPayloads.transaction(bundleId: "com.example.app"))
/// let verifier = try SignedDataVerifier(configuration: .init(
///     bundleId: "com.example.app", environment: .sandbox, trustedRootsDER: [pki.rootDER]))
/// let transaction = try verifier.verifyTransaction(jws)
/// ```
///
/// For tests of refusals, ``Options`` builds broken variants (a leaf without the OID, an
/// expired leaf, ...), ``init(_:sharingRootWith:)`` issues a new intermediate and leaf under
/// another PKI's root (so the variant chains to the trusted root), any other `TestPKI()` is an
/// unrelated root, and ``sign(payloadJSON:header:)`` signs with any header (other `alg`,
/// other certificates in `x5c`).
public struct TestPKI: Sendable {
    let material: Material
    /// The options this PKI was made with (for a loaded PKI: the defaults, with the loaded validity).
    public let options: Options

    /// DER of the root certificate (configure it as the trusted root).
    public let rootDER: [UInt8]
    /// DER of the intermediate certificate.
    public let intermediateDER: [UInt8]
    /// DER of the leaf (signing) certificate.
    public let leafDER: [UInt8]
    /// The base64url of the default ``header(alg:x5c:)``, the first segment of every JWS ``sign(_:)`` makes.
    let headerSegment: String

    /// Makes a new PKI with fresh keys.
    public init(_ options: Options = Options()) {
        let rootKey = OpenSSL.generateKey(.p384)
        let root = CertificateBuilder(
            role: .root, commonName: options.rootName, validity: options.rootValidity, subjectKey: rootKey,
            issuer: nil, markerOIDs: [], serial: Self.randomSerial()
        ).build()
        self.init(options, rootKey: rootKey, root: root)
    }

    /// Makes a new intermediate and leaf (fresh keys, per `options`) under `other`'s root, so
    /// that a verifier trusting `other.rootDER` trusts this chain's root too.
    public init(_ options: Options = Options(), sharingRootWith other: TestPKI) {
        X509_up_ref(other.material.root)
        _ = EVP_PKEY_up_ref(other.material.rootKey)
        self.init(options, rootKey: other.material.rootKey, root: other.material.root)
    }

    private init(_ options: Options, rootKey: OpaquePointer, root: OpaquePointer) {
        let intermediateKey = OpenSSL.generateKey(.p384)
        let intermediate = CertificateBuilder(
            role: .intermediate, commonName: options.intermediateName, validity: options.intermediateValidity,
            subjectKey: intermediateKey, issuer: (root, rootKey),
            markerOIDs: options.intermediateHasAppleOID ? [AppleOID.wwdrIntermediate] : [], serial: Self.randomSerial()
        ).build()
        let leafKey = OpenSSL.generateKey(options.leafCurve)
        let leaf = CertificateBuilder(
            role: .leaf, commonName: options.leafName, validity: options.leafValidity,
            subjectKey: leafKey, issuer: (intermediate, intermediateKey),
            markerOIDs: options.leafHasAppleOID ? [AppleOID.receiptSigner] : [], serial: Self.randomSerial()
        ).build()
        self.init(
            material: Material(
                rootKey: rootKey, intermediateKey: intermediateKey, leafKey: leafKey,
                root: root, intermediate: intermediate, leaf: leaf),
            options: options)
    }

    init(material: Material, options: Options) {
        self.material = material
        self.options = options
        rootDER = OpenSSL.der(material.root)
        intermediateDER = OpenSSL.der(material.intermediate)
        leafDER = OpenSSL.der(material.leaf)
        headerSegment = Base64Encoding.url(
            JSONWriter.bytes(Self.header(alg: "ES256", x5c: [leafDER, intermediateDER, rootDER].map { Base64Encoding.standard($0) })))
    }

    /// The root certificate as PEM text.
    public var rootPEM: String { OpenSSL.writeToMemory { PEM_write_bio_X509($0, material.root) } }
    /// The intermediate certificate as PEM text.
    public var intermediatePEM: String { OpenSSL.writeToMemory { PEM_write_bio_X509($0, material.intermediate) } }
    /// The leaf certificate as PEM text.
    public var leafPEM: String { OpenSSL.writeToMemory { PEM_write_bio_X509($0, material.leaf) } }

    /// The `x5c` header value Apple sends: standard base64 (with padding) of the leaf,
    /// intermediate and root DER, in that order.
    public var x5c: [String] { [leafDER, intermediateDER, rootDER].map { Base64Encoding.standard($0) } }

    /// A JWS header: `{"alg":"ES256","x5c":[leaf, intermediate, root]}` by default.
    /// - Parameters:
    ///   - alg: the `alg` value (`nil` leaves it out).
    ///   - x5c: the certificates (`nil` leaves `x5c` out); defaults to this PKI's ``x5c``.
    public func header(alg: String? = "ES256", x5c: [String]? = nil) -> JSONValue {
        Self.header(alg: alg, x5c: x5c ?? self.x5c)
    }

    static func header(alg: String?, x5c: [String]) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let alg { members.append(("alg", .string(alg))) }
        members.append(("x5c", .array(x5c.map(JSONValue.string))))
        return .object(JSONObject(members))
    }

    static func randomSerial() -> UInt64 {
        var serial: UInt64 = 0
        withUnsafeMutableBytes(of: &serial) { _ = RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), 8) }
        return (serial >> 1) | 1  // positive, non-zero
    }
}

/// Apple's marker extensions.
enum AppleOID {
    static let receiptSigner = "1.2.840.113635.100.6.11.1"
    static let wwdrIntermediate = "1.2.840.113635.100.6.2.1"
}
