import EntitlementCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A JWS as the log keeps it: in parts that give back its exact bytes, with
/// what every JWS Apple signs repeats stored once.
///
/// A JWS is `header.payload.signature`, each part base64url. Apple's header
/// carries its certificate chain (`x5c`): 4–5 KB, the same for every JWS signed
/// with one certificate, and a notification repeats it three times (its own and
/// its nested transaction's and renewal info's, those base64url-encoded once more
/// inside its payload). So the log keeps:
/// - the header's text once per distinct header (`jws_headers`), referenced by id;
/// - the payload decoded (`body`: the JSON exactly as signed, readable with
///   `sqlite3`), each nested JWS's text cut out of it and kept as an object of its
///   own (`jws_nested`: its header by id, its decoded payload, its signature), with
///   the byte offset where its text goes back;
/// - the signature (its bytes where they give back its text: see `LogColumns`).
///
/// Base64url without padding has exactly one encoding of given bytes and the
/// decoder is strict (``Base64/decodeURL(_:)-(Substring)``), so encoding the decoded
/// payload again gives back the segment received: ``jws`` is the JWS byte for byte,
/// and the log's hash chain, computed over it, is the same as over the raw text.
public struct StoredJWS: Sendable, Hashable {
    /// A JWS nested in the payload (a notification's signed transaction, renewal
    /// info or AppTransaction), cut out of ``StoredJWS/body``.
    public struct Nested: Sendable, Hashable {
        /// Where, in the body's UTF-8 bytes, the nested JWS's text goes back
        /// (between the quotes of its JSON string).
        public var position: Int
        /// The JSON path of that string in the payload (`$.data.signedTransactionInfo`).
        public var path: String
        /// The nested JWS.
        public var jws: Parts
    }

    /// A compact JWS's three parts: header text, decoded payload, signature text.
    public struct Parts: Sendable, Hashable {
        public var header: String
        /// The payload's bytes as signed (UTF-8 JSON).
        public var payload: [UInt8]
        public var signature: String

        /// Splits `jws`, or `nil` when it is not three parts with a strictly
        /// encoded, UTF-8 payload (then the log keeps it whole).
        public init?(_ jws: Substring) {
            self.init(jws, decoded: nil)
        }

        /// Splits `jws`; `decoded`, when given, is its payload segment already decoded
        /// by the verifier (strict base64url of JSON it parsed, so UTF-8), which is then
        /// not decoded again.
        init?(_ jws: Substring, decoded: [UInt8]?) {
            var text = jws
            guard let parts = text.withUTF8({ bytes -> (String, [UInt8], String)? in
                guard let base = bytes.baseAddress, bytes.count > 0 else { return nil }
                let dot = UInt8(ascii: ".")
                // The header is most often the one met last: compared whole (to share its
                // text), its length then places the first dot.
                let known = Self.lastHeader.withLock { $0 }
                let firstDot: Int
                let header: String
                if Self.startsWithHeader(known, followedBy: dot, in: bytes) {
                    firstDot = known.utf8.count
                    header = known
                } else {
                    guard let first = memchr(base, Int32(dot), bytes.count) else { return nil }
                    firstDot = base.distance(to: first.assumingMemoryBound(to: UInt8.self))
                    header = Self.rememberedHeader(UnsafeBufferPointer(rebasing: bytes[0..<firstDot]))
                }
                let afterFirst = firstDot + 1
                // The verifier's decoded payload gives its segment's length: the second dot
                // is there when the segment is the one it decoded (strict base64url: no dot).
                let secondDot: Int
                if let decoded, case let placed = afterFirst + Base64.encodedLengthURL(decoded.count),
                    placed < bytes.count, bytes[placed] == dot
                {
                    secondDot = placed
                } else {
                    guard let second = memchr(base + afterFirst, Int32(dot), bytes.count - afterFirst) else { return nil }
                    secondDot = base.distance(to: second.assumingMemoryBound(to: UInt8.self))
                }
                let afterSecond = secondDot + 1
                guard memchr(base + afterSecond, Int32(dot), bytes.count - afterSecond) == nil else { return nil }
                let segment = UnsafeBufferPointer(rebasing: bytes[afterFirst..<secondDot])
                let payload: [UInt8]
                if let decoded, Base64.encodedLengthURL(decoded.count) == segment.count {
                    payload = decoded
                } else {
                    guard let fresh = Base64.decodeURL(segment), String(validating: fresh, as: UTF8.self) != nil else { return nil }
                    payload = fresh
                }
                return (header, payload, String(decoding: UnsafeBufferPointer(rebasing: bytes[afterSecond...]), as: UTF8.self))
            }) else { return nil }
            (header, payload, signature) = parts
        }

        /// Whether `bytes` begin with `header`'s text and then `separator`. A header
        /// kept as the last one met holds no dot (it was the text before a first dot).
        private static func startsWithHeader(_ header: String, followedBy separator: UInt8, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            var header = header
            return header.withUTF8 { known in
                !known.isEmpty && known.count < bytes.count && bytes[known.count] == separator
                    && memcmp(known.baseAddress!, bytes.baseAddress!, known.count) == 0
            }
        }

        /// The header met last, shared: nearly every JWS carries the header of the one
        /// before (4–5 KB of certificate chain, the same for years), so it is compared,
        /// not copied again, and the log's header cache then finds it by identity.
        private static let lastHeader = Mutex<String>("")

        /// The text of `bytes`, kept as the header met last.
        private static func rememberedHeader(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
            let text = String(decoding: bytes, as: UTF8.self)
            lastHeader.withLock { $0 = text }
            return text
        }

        public init(header: String, payload: [UInt8], signature: String) {
            self.header = header
            self.payload = payload
            self.signature = signature
        }

        /// The compact JWS text.
        public var text: String {
            header + "." + Base64.encodeURL(payload) + "." + signature
        }
    }

    /// The outer JWS's header text and signature text.
    public var header: String
    public var signature: String
    /// The outer payload as signed, with each nested JWS's text cut out.
    public var body: [UInt8]
    /// The nested JWS cut out of ``body``, by ascending position.
    public var nested: [Nested]

    /// The keys that reach, in a notification's payload, the JWS nested in `slot`
    /// (`nil` for the event's own JWS).
    public static func keys(of slot: RawRef.Slot) -> [String]? {
        switch slot {
        case .own: return nil
        case .nestedTransaction: return ["data", "signedTransactionInfo"]
        case .nestedRenewalInfo: return ["data", "signedRenewalInfo"]
        case .nestedAppTransaction: return ["appData", "signedAppTransactionInfo"]
        }
    }

    /// The JSON path (`$.data.signedTransactionInfo`) of the JWS nested in `slot`.
    public static func path(of slot: RawRef.Slot) -> String? {
        nestedSlots.firstIndex(of: slot).map { nestedPaths[$0].path }
    }

    /// The slots of the JWS a notification nests.
    static let nestedSlots: [RawRef.Slot] = [.nestedTransaction, .nestedRenewalInfo, .nestedAppTransaction]

    /// The JSON paths where a notification nests JWS, and the keys that reach them, in the
    /// order of ``nestedSlots``: made once (every event logged names them).
    public static let nestedPaths: [(path: String, keys: [String])] = nestedSlots.map { slot in
        let keys = keys(of: slot)!
        return ("$." + keys.joined(separator: "."), keys)
    }

    public init(header: String, signature: String, body: [UInt8], nested: [Nested]) {
        self.header = header
        self.signature = signature
        self.body = body
        self.nested = nested
    }

    /// Splits `jws`, cutting out each of `candidates` (a JSON path and the JWS text
    /// found there) that occurs exactly once in the payload as a JSON string and
    /// splits itself; the others stay in the body. `nil` when `jws` does not split.
    public init?(jws: String, nested candidates: [(path: String, jws: String)]) {
        guard let outer = Parts(Substring(jws)) else { return nil }
        self.init(outer: outer, nested: candidates)
    }

    /// Splits a verified input's JWS, with the payload bytes its verifier kept.
    package init?(_ input: __shared VerifiedInput) {
        guard let outer = Parts(Substring(input.jws), decoded: input.signedBytes) else { return nil }
        self.init(outer: outer, nested: Self.nestedCandidates(of: input))
    }

    /// The same, from the JWS already split into its parts.
    public init(outer: Parts, nested candidates: [(path: String, jws: String)]) {
        self.init(outer: outer, nested: candidates.map { ($0.path, $0.jws, nil) })
    }

    /// The same, each candidate with its payload bytes when its verifier kept them.
    init(outer: Parts, nested candidates: [(path: String, jws: String, decoded: [UInt8]?)]) {
        header = outer.header
        signature = outer.signature
        var cuts: [(start: Int, end: Int, path: String, parts: Parts)] = []
        for (path, text, decoded) in candidates {
            guard let parts = Parts(Substring(text), decoded: decoded) else { continue }
            var needle = text
            guard let (start, end) = needle.withUTF8({ Self.onlyQuotedOccurrence(of: $0, in: outer.payload) }) else { continue }
            cuts.append((start, end, path, parts))
        }
        cuts.sort { $0.start < $1.start }
        var body: [UInt8] = []
        body.reserveCapacity(outer.payload.count - cuts.reduce(0) { $0 + $1.end - $1.start })
        var nested: [Nested] = []
        var at = 0
        for cut in cuts where cut.start >= at {
            body.append(contentsOf: outer.payload[at..<cut.start])
            nested.append(Nested(position: body.count, path: cut.path, jws: cut.parts))
            at = cut.end
        }
        body.append(contentsOf: outer.payload[at...])
        self.body = body
        self.nested = nested
    }

    /// The nested JWS a verified notification carries, with their paths: what ``init(jws:nested:)`` cuts out.
    static func nestedCandidates(of input: VerifiedInput) -> [(path: String, jws: String, decoded: [UInt8]?)] {
        guard case .notification(let n) = input else { return [] }
        var candidates: [(path: String, jws: String, decoded: [UInt8]?)] = []
        if let t = n.transaction { candidates.append((path(of: .nestedTransaction)!, t.jws, t.signedBytes.bytes)) }
        if let r = n.renewalInfo { candidates.append((path(of: .nestedRenewalInfo)!, r.jws, r.signedBytes.bytes)) }
        if let a = n.appTransaction { candidates.append((path(of: .nestedAppTransaction)!, a.jws, a.signedBytes.bytes)) }
        return candidates
    }

    /// The strings at ``nestedPaths`` in a payload's JSON: the candidates to cut
    /// out of a JWS logged before the log was stored in parts.
    public static func nestedCandidates(inPayload payload: [UInt8]) -> [(path: String, jws: String)] {
        guard let json = try? JSONParser().parse(payload) else { return [] }
        var candidates: [(path: String, jws: String)] = []
        for (path, keys) in nestedPaths {
            var value: JSONValue? = json
            for key in keys { value = value?[key] }
            if case .string(let text)? = value { candidates.append((path, text)) }
        }
        return candidates
    }

    /// The outer payload as signed: the body with every nested JWS's text put back.
    public var payload: [UInt8] {
        guard !nested.isEmpty else { return body }
        let texts = nested.map { Array($0.jws.text.utf8) }
        var payload: [UInt8] = []
        payload.reserveCapacity(body.count + texts.reduce(0) { $0 + $1.count })
        var at = 0
        for (item, text) in zip(nested, texts) {
            payload.append(contentsOf: body[at..<item.position])
            payload.append(contentsOf: text)
            at = item.position
        }
        payload.append(contentsOf: body[at...])
        return payload
    }

    /// The JWS exactly as received.
    public var jws: String {
        header + "." + Base64.encodeURL(payload) + "." + signature
    }

    /// The text of the nested JWS at `path`, or `nil` when none was cut out there.
    public func nestedJWS(at path: String) -> String? {
        nested.first { $0.path == path }?.jws.text
    }

    /// Where `needle` occurs in `haystack` as a whole JSON string's content (between
    /// two quotes), when it does exactly once: the range of its bytes; else `nil`.
    /// (`memchr` to each candidate start, `memcmp` to check it.)
    static func onlyQuotedOccurrence(of needle: UnsafeBufferPointer<UInt8>, in haystack: [UInt8]) -> (start: Int, end: Int)? {
        guard let pin = needle.baseAddress, !needle.isEmpty, haystack.count >= needle.count + 2 else { return nil }
        let quote = UInt8(ascii: "\"")
        // An occurrence found, the next can begin no sooner than at its closing quote,
        // unless the needle holds a quote itself (then one may begin inside it).
        let step = memchr(pin, Int32(quote), needle.count) == nil ? needle.count + 1 : 1
        return haystack.withUnsafeBufferPointer { hay -> (start: Int, end: Int)? in
            let base = hay.baseAddress!
            // Each opening quote with room after it for the needle and a closing quote.
            let last = hay.count - needle.count - 2
            var index = 0
            var found: (start: Int, end: Int)? = nil
            while index <= last {
                guard let hit = memchr(base + index, Int32(quote), last - index + 1) else { break }
                let open = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                let at = open + 1
                if base[at] == pin[0] && base[at + needle.count] == quote && memcmp(base + at, pin, needle.count) == 0 {
                    if found != nil { return nil }
                    found = (at, at + needle.count)
                    index = open + step
                } else {
                    index = open + 1
                }
            }
            return found
        }
    }
}
