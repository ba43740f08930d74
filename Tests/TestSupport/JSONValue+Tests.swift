import JSONAndBase64

extension JSONValue {
    /// The number of elements when this is an array.
    package var arrayCount: Int? {
        if case .array(let elements) = self { return elements.count }
        return nil
    }

    /// The element at `index` when this is an array that long.
    package func element(_ index: Int) -> JSONValue? {
        if case .array(let elements) = self, index < elements.count { return elements[index] }
        return nil
    }
}
