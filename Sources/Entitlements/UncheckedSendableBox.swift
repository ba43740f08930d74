/// A value handed to another thread by a caller that guarantees one thread uses it at a time.
final class UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
