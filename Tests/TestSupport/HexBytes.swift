/// The bytes a string of hexadecimal digit pairs spells (`"0aff"` is `[10, 255]`), for
/// fixed bytes written into tests: stored formats, keys, signatures.
package func hexBytes(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
