import EntitlementCore
import EventStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// How a reader's connection reads pages for point queries (`prepareForQueries`).
@Suite struct QueryReadingTests {
    /// A database of `customers` customers, one transaction each, its log checkpointed into the file.
    static func database(customers: Int) throws -> String {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        let items: [AppendItem] = (0..<customers).map { index in
            .verified(StoreFixtures.transaction(id: "t\(index)", original: "o\(index)", app: Self.key(index)))
        }
        _ = try store.append(items, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        try store.checkpoint()
        return path
    }

    static func key(_ index: Int) -> String { "app-" + String(100_000 + index) }

    @Test func readersKeepPagesInTheirOwnCacheAndMapNothing() throws {
        let path = try Self.database(customers: 3)
        let reader = try EventStore(path: path, hash: StoreFixtures.hash, mode: .readOnly)
        try reader.prepareForQueries()
        #expect(try reader.rawConnection.scalarInt("PRAGMA mmap_size") == 0)
        #expect(try reader.rawConnection.scalarInt("PRAGMA cache_size") == -131_072)
        let view = try reader.view(of: Self.key(1), rules: StoreFixtures.rules, at: 1_701_000_000_000)
        #expect(view?.entitlements.filter(\.active).map(\.name) == ["pro"])
    }

    /// A query whose pages are not in the kernel's page cache reads its own pages from
    /// the disk, not the megabytes around them that a memory map's faults read ahead.
    @Test func aColdQueryReadsItsPagesAndNotTheFileAroundThem() throws {
        let path = try Self.database(customers: 4_000)
        let pageSize = try #require(try EventStore(path: path, hash: StoreFixtures.hash, mode: .readOnly).rawConnection.scalarInt("PRAGMA page_size"))
        let fileSize = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(fileSize > 32 * Int(pageSize))

        let reader = try EventStore(path: path, hash: StoreFixtures.hash, mode: .readOnly)
        try reader.prepareForQueries()
        // The schema and the upper pages of the projections are read by a first query.
        #expect(try reader.view(of: Self.key(0), rules: StoreFixtures.rules, at: 1_701_000_000_000) != nil)
        // Then the file leaves the kernel's page cache, and another customer is asked about.
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        _ = fdatasync(descriptor)
        #expect(posix_fadvise(descriptor, 0, 0, Int32(POSIX_FADV_DONTNEED)) == 0)
        close(descriptor)
        // Counted for this thread alone: the query runs on it, and tests beside it do not count.
        let before = Self.bytesReadFromDisk()
        #expect(try reader.view(of: Self.key(3_999), rules: StoreFixtures.rules, at: 1_701_000_000_000) != nil)
        let read = Self.bytesReadFromDisk() - before
        // At most the leaf and the interior pages above it (none is read ahead); 0 where the
        // file system reads nothing from a disk (tmpfs).
        #expect(read <= 3 * pageSize, "a cold query read \(read) bytes, pages of \(pageSize)")
    }

    /// Bytes this thread has had read from storage (`read_bytes` of `/proc/thread-self/io`), or 0.
    static func bytesReadFromDisk() -> Int64 {
        guard let text = try? String(contentsOfFile: "/proc/thread-self/io", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("read_bytes:") {
            return Int64(line.dropFirst("read_bytes:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }
}
