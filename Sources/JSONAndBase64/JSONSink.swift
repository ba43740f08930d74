/// Where a value that writes its JSON member by member goes: straight to bytes
/// (``JSONByteSink``, for answers written often) or into a ``JSONValue``
/// (``JSONTreeSink``, for callers that read or pretty-print the value). One
/// description of the fields serves both, so the two never disagree.
///
/// Calls come in document order: `beginObject`, then `key` before each member's
/// value, then `endObject`; `beginArray`, values, `endArray`.
public protocol JSONSink {
    mutating func beginObject()
    mutating func endObject()
    mutating func beginArray()
    mutating func endArray()
    /// The key of the object member whose value comes next.
    mutating func key(_ name: String)
    mutating func null()
    mutating func bool(_ value: Bool)
    mutating func int(_ value: Int64)
    mutating func string(_ value: String)
}

extension JSONSink {
    /// A string member, `null` when absent.
    @inlinable public mutating func member(_ name: String, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    /// An integer member, `null` when absent.
    @inlinable public mutating func member(_ name: String, _ value: Int64?) {
        key(name)
        if let value { int(value) } else { null() }
    }

    /// A boolean member, `null` when absent.
    @inlinable public mutating func member(_ name: String, _ value: Bool?) {
        key(name)
        if let value { bool(value) } else { null() }
    }

    /// An object: `{`, what `body` writes, `}`.
    @inlinable public mutating func object(_ body: (inout Self) -> Void) {
        beginObject()
        body(&self)
        endObject()
    }

    /// An array: `[`, what `body` writes, `]`.
    @inlinable public mutating func array(_ body: (inout Self) -> Void) {
        beginArray()
        body(&self)
        endArray()
    }
}

/// Compact JSON written as it comes, byte for byte what ``JSONWriter/bytes(_:)``
/// writes for the same value. Inlinable, so that a view's writing specialised for it
/// appends bytes without a call per member.
@frozen public struct JSONByteSink: JSONSink {
    @usableFromInline var output: [UInt8]
    /// Whether a value was written at this level, so the next one needs a comma.
    @usableFromInline var afterValue = false

    /// What was written.
    @inlinable public var bytes: [UInt8] { output }

    @inlinable public init(capacity: Int = 1024) {
        output = []
        output.reserveCapacity(capacity)
    }

    @inlinable mutating func separate() {
        if afterValue { output.append(0x2C) }
        afterValue = true
    }

    /// `{` or `[`: a value at this level, the first of its own.
    @inlinable mutating func open(_ bracket: UInt8) {
        separate()
        output.append(bracket)
        afterValue = false
    }

    /// `}` or `]`: the container is a value written.
    @inlinable mutating func close(_ bracket: UInt8) {
        output.append(bracket)
        afterValue = true
    }

    @inlinable public mutating func beginObject() { open(0x7B) }
    @inlinable public mutating func endObject() { close(0x7D) }
    @inlinable public mutating func beginArray() { open(0x5B) }
    @inlinable public mutating func endArray() { close(0x5D) }

    @inlinable public mutating func key(_ name: String) {
        separate()
        JSONWriter.writeString(name, into: &output)
        output.append(0x3A)
        // The member's value follows the colon, not a comma.
        afterValue = false
    }

    // The words below are string literals, never array literals: in inlinable code an
    // array literal becomes a static object named by its place in the function, every
    // module that inlines the function emits its own, and the linker keeps one of them
    // for all. Two literals in one function may be numbered in a different order by
    // another module's optimizer: one module's `false` would be linked under the name
    // another module uses for `true` (scripts/compare-serve-with-query.py checks a release build).

    @inlinable public mutating func null() {
        separate()
        output.append(contentsOf: "null".utf8)
    }

    @inlinable public mutating func bool(_ value: Bool) {
        separate()
        output.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    @inlinable public mutating func int(_ value: Int64) {
        separate()
        JSONWriter.writeInteger(value, into: &output)
    }

    @inlinable public mutating func string(_ value: String) {
        separate()
        JSONWriter.writeString(value, into: &output)
    }
}

/// A ``JSONValue`` built from what is written: the containers open at the moment on a stack.
public struct JSONTreeSink: JSONSink {
    /// An open object (its members, and the key of the value that comes next) or array.
    private struct Open {
        let isObject: Bool
        var members: [(key: String, value: JSONValue)] = []
        var elements: [JSONValue] = []
        var key = ""
    }

    private var open: [Open] = []
    /// The whole value, once its last container is closed (`nil` before).
    public private(set) var value: JSONValue?

    public init() {}

    private mutating func add(_ element: JSONValue) {
        guard let top = open.indices.last else {
            value = element
            return
        }
        if open[top].isObject {
            open[top].members.append((open[top].key, element))
        } else {
            open[top].elements.append(element)
        }
    }

    public mutating func beginObject() { open.append(Open(isObject: true)) }

    public mutating func endObject() {
        guard let closed = open.popLast(), closed.isObject else { preconditionFailure("endObject without an open object") }
        add(.object(JSONObject(closed.members)))
    }

    public mutating func beginArray() { open.append(Open(isObject: false)) }

    public mutating func endArray() {
        guard let closed = open.popLast(), !closed.isObject else { preconditionFailure("endArray without an open array") }
        add(.array(closed.elements))
    }

    public mutating func key(_ name: String) {
        guard let top = open.indices.last, open[top].isObject else { preconditionFailure("a key outside an object") }
        open[top].key = name
    }

    public mutating func null() { add(.null) }
    public mutating func bool(_ value: Bool) { add(.bool(value)) }
    public mutating func int(_ value: Int64) { add(.int(value)) }
    public mutating func string(_ value: String) { add(.string(value)) }
}

/// A value that writes its JSON to any ``JSONSink``.
public protocol JSONSinkWritable {
    func write<Sink: JSONSink>(to sink: inout Sink)
}

extension JSONSinkWritable {
    /// The value as a ``JSONValue``.
    public func json() -> JSONValue {
        var tree = JSONTreeSink()
        write(to: &tree)
        return tree.value ?? .null
    }

    /// The value as compact JSON bytes, written without building a ``JSONValue``.
    public func jsonBytes() -> [UInt8] {
        var sink = JSONByteSink()
        write(to: &sink)
        return sink.bytes
    }
}
