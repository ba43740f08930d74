@testable import EventStore
import Testing

/// A statement is reset (its bindings cleared, its cursor closed) only when it was bound
/// or stepped since its last reset; either way it runs again as if freshly prepared.
@Suite struct StatementResetTests {
    @Test func aStatementHandedOutAgainHasNoBindingsLeft() throws {
        let connection = try Connection(path: ":memory:")
        let select = try connection.cached("SELECT ?1, ?2")
        try select.bind(1, 5 as Int64?)
        try select.bind(2, "five")
        #expect(try select.step())
        #expect(select.int64(0) == 5 && select.string(1) == "five")
        select.reset()
        select.reset()  // a second reset changes nothing
        let again = try connection.cached("SELECT ?1, ?2")
        #expect(again === select)
        #expect(try again.step())
        #expect(again.isNull(0) && again.isNull(1))
        // Bound and never stepped: the cache's reset clears the binding.
        again.reset()
        try again.bind(1, 7 as Int64?)
        let third = try connection.cached("SELECT ?1, ?2")
        #expect(try third.step())
        #expect(third.isNull(0))
    }

    @Test func aStatementLeftOnARowIsResetBeforeItRunsAgain() throws {
        let connection = try Connection(path: ":memory:")
        try connection.execute("CREATE TABLE t (x INTEGER)")
        try connection.execute("INSERT INTO t VALUES (1), (2), (3)")
        let scan = try connection.cached("SELECT x FROM t ORDER BY x")
        #expect(try scan.step())
        #expect(scan.int64(0) == 1)
        // Left on its first row: the next hand-out starts over.
        let again = try connection.cached("SELECT x FROM t ORDER BY x")
        #expect(try again.step())
        #expect(again.int64(0) == 1)
        again.reset()
        // A write after the reset is not held back by an open read.
        try connection.execute("DELETE FROM t WHERE x = 1")
        #expect(try connection.scalarInt("SELECT count(*) FROM t") == 2)
    }
}
