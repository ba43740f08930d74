import EntitlementCore

/// The lifecycle event ids recorded for a customer's data, as 64-bit hashes kept
/// ascending: the compact form `customer_rows.id_hashes` holds, read with one row.
struct RecordedLifecycleIds: Equatable {
    /// The hashes, ascending, each once.
    private(set) var hashes: [UInt64]

    init(hashes: [UInt64] = []) {
        self.hashes = Array(Set(hashes)).sorted()
    }

    /// The FNV-1a hash of `id`'s UTF-8 bytes (stable across builds and runs).
    static func hash(_ id: String) -> UInt64 { LifecycleIdHash.of(id) }

    /// Whether `hash` is among the recorded ones.
    func contains(_ hash: UInt64) -> Bool {
        var low = 0
        var high = hashes.count
        while low < high {
            let middle = (low + high) / 2
            if hashes[middle] < hash { low = middle + 1 } else { high = middle }
        }
        return low < hashes.count && hashes[low] == hash
    }

    /// Adds `more` (the union).
    mutating func formUnion(_ more: some Sequence<UInt64>) {
        let added = more.sorted()
        guard !added.isEmpty else { return }
        // Both ascending: merged in one pass, repeats dropped.
        var merged: [UInt64] = []
        merged.reserveCapacity(hashes.count + added.count)
        var old = 0
        var new = 0
        while old < hashes.count || new < added.count {
            let next: UInt64
            if new == added.count || (old < hashes.count && hashes[old] <= added[new]) {
                next = hashes[old]
                old += 1
            } else {
                next = added[new]
                new += 1
            }
            if merged.last != next { merged.append(next) }
        }
        hashes = merged
    }

    /// 8 bytes little-endian per hash.
    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hashes.count * 8)
        for hash in hashes { withUnsafeBytes(of: hash.littleEndian) { bytes.append(contentsOf: $0) } }
        return bytes
    }

    /// The hashes in `bytes`, `nil` when they are not whole 8-byte values.
    init?(bytes: UnsafeRawBufferPointer) {
        guard bytes.count % 8 == 0 else { return nil }
        var hashes: [UInt64] = []
        hashes.reserveCapacity(bytes.count / 8)
        for offset in stride(from: 0, to: bytes.count, by: 8) {
            var value: UInt64 = 0
            for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
            hashes.append(value)
        }
        self.hashes = hashes
        if zip(hashes, hashes.dropFirst()).contains(where: { $0 >= $1 }) { self = RecordedLifecycleIds(hashes: hashes) }
    }
}

extension EventStore {
    /// The ids recorded for `key`'s data, `nil` when the store keeps none for it
    /// (data recorded before the table existed, or a row that cannot be read).
    func recordedLifecycleIds(of key: CustomerKey) throws -> RecordedLifecycleIds? {
        let load = try connection.cached("SELECT id_hashes FROM customer_rows WHERE customer_key = ?")
        defer { load.reset() }
        try load.bind(1, key)
        guard try load.step(), !load.isNull(0) else { return nil }
        return load.withBlob(0) { RecordedLifecycleIds(bytes: $0) }
    }

    /// Keeps `ids` as what is recorded for `key`'s data.
    func saveRecordedLifecycleIds(_ ids: RecordedLifecycleIds, of key: CustomerKey) throws {
        try writeCustomerRow(key, [(.idHashes, .blob(ids.bytes))])
    }

    /// At a merge, adds what was recorded for `from`'s data to what is kept for
    /// `into` (the events derived for `into` include `from`'s). When `into` has no
    /// row, it keeps none: its ids are then checked one by one.
    func mergeRecordedLifecycleIds(from: CustomerKey, into: CustomerKey) throws {
        guard let source = try recordedLifecycleIds(of: from), var target = try recordedLifecycleIds(of: into) else { return }
        target.formUnion(source.hashes)
        try saveRecordedLifecycleIds(target, of: into)
    }
}
