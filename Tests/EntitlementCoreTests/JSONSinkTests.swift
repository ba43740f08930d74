import EntitlementCore
import Testing
import TestSupport

/// The two sinks a view's JSON is written to: bytes at once, and a `JSONValue`. Both
/// must say what `JSONWriter` says of the same value, for any value and any view.
@Suite("JSON sinks")
struct JSONSinkTests {
    /// Replays `value` into `sink`, call for call.
    static func replay<Sink: JSONSink>(_ value: JSONValue, into sink: inout Sink) {
        switch value {
        case .null: sink.null()
        case .bool(let flag): sink.bool(flag)
        case .int(let number): sink.int(number)
        case .double: Issue.record("the sinks write no doubles; the generator makes none")
        case .string(let text): sink.string(text)
        case .array(let elements):
            sink.array { sink in for element in elements { replay(element, into: &sink) } }
        case .object(let object):
            sink.object { sink in
                for member in object.members {
                    sink.key(member.key)
                    replay(member.value, into: &sink)
                }
            }
        }
    }

    /// Strings that need escaping, and some that do not.
    static let strings = [
        "", "plain", "quote \" inside", "back\\slash", "line\nbreak", "tab\there", "\u{01}control\u{1F}", "é unicode ✓ 🎉",
        "com.example.pro.monthly", "\u{2063}",
    ]

    /// A random value of nested objects and arrays, `depth` levels at most.
    static func randomValue(_ rng: inout SplitMix64, depth: Int) -> JSONValue {
        switch rng.index(depth > 0 ? 7 : 5) {
        case 0: return .null
        case 1: return .bool(rng.index(2) == 0)
        case 2: return .int([0, -1, 1, Int64.max, Int64.min, rng.int(-1_000_000_000_000...1_000_000_000_000)][rng.index(6)])
        case 3, 4: return .string(strings[rng.index(strings.count)])
        case 5: return .array((0..<rng.index(4)).map { _ in randomValue(&rng, depth: depth - 1) })
        default:
            // Keys unique within an object, as the parser requires.
            let keys = Array(Set((0..<rng.index(5)).map { _ in strings[rng.index(strings.count)] }))
            return .object(JSONObject(keys.map { ($0, randomValue(&rng, depth: depth - 1)) }))
        }
    }

    @Test(arguments: PropertySeeds.seeds(1...8))
    func bothSinksWriteWhatTheWriterWritesForRandomValues(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        for _ in 0..<200 {
            let value = Self.randomValue(&rng, depth: 4)
            var bytes = JSONByteSink()
            Self.replay(value, into: &bytes)
            #expect(bytes.bytes == JSONWriter.bytes(value), "\(JSONWriter.string(value))")
            var tree = JSONTreeSink()
            Self.replay(value, into: &tree)
            #expect(tree.value == value)
        }
    }

    @Test func aTreeSinkHoldsNothingUntilItsLastContainerCloses() {
        var tree = JSONTreeSink()
        tree.beginObject()
        tree.key("a")
        tree.beginArray()
        tree.int(1)
        tree.endArray()
        #expect(tree.value == nil)
        tree.endObject()
        #expect(tree.value == ["a": [1]])
    }

    /// Every view of the random histories, at every moment the order tests use: its bytes are
    /// its `JSONValue` written, and they parse back to it.
    @Test(arguments: PropertySeeds.seeds(1...12))
    func viewsOfRandomHistoriesWriteTheSameBytesBothWays(seed: UInt64) throws {
        let states = try reduceAll(RandomHistory.events(seed: seed))
        #expect(!states.isEmpty)
        for state in states.values {
            for at in PropertyTests.moments {
                let view = Evaluation.evaluate(state, rules: testRules, at: at)
                let bytes = view.jsonBytes()
                #expect(bytes == JSONWriter.bytes(view.json()))
                #expect(try JSONParser().parse(bytes) == view.json())
            }
        }
    }
}
