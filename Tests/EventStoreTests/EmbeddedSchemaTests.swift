import Foundation
import SchemaMigrations
import Testing

/// The schema is compiled into the program (scripts/embed-resources.sh): the compiled
/// copy must be exactly `Migrations/sql`, file for file and byte for byte.
@Suite struct EmbeddedSchemaTests {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Migrations/sql")

    static let fix = "run scripts/embed-resources.sh and commit Migrations/Embedded"

    @Test("every Migrations/sql file is compiled in, byte for byte, and nothing else")
    func compiledSchemaEqualsTheFiles() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(!names.isEmpty, "no migrations found in \(Self.folder.path)")
        let compiled = Dictionary(uniqueKeysWithValues: SchemaMigrations.migrations.map { ($0.identifier, $0.sql) })
        for name in names {
            let identifier = String(name.dropLast(4))
            let onDisk = try Data(contentsOf: Self.folder.appendingPathComponent(name))
            guard let sql = compiled[identifier] else {
                Issue.record("Migrations/sql/\(name) is not compiled into the program: \(Self.fix)")
                continue
            }
            #expect(Data(sql.utf8) == onDisk, "Migrations/sql/\(name) differs from its compiled copy Migrations/Embedded/\(identifier).swift: \(Self.fix)")
        }
        for identifier in compiled.keys.sorted() where !names.contains(identifier + ".sql") {
            Issue.record("Migrations/Embedded/\(identifier).swift has no Migrations/sql/\(identifier).sql: \(Self.fix)")
        }
        #expect(SchemaMigrations.migrations.map(\.identifier) == names.map { String($0.dropLast(4)) }, "migrations out of order")
    }
}
