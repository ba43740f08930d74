extension ByteWriter {
    /// An operator record: its canonical JSON, as one string (operator records are
    /// few beside Apple's data; their logged form is the one kept).
    mutating func operatorRecord(_ record: OperatorRecord) {
        string(JSONWriter.string(record.canonicalJSON))
    }
}

extension ByteReader {
    mutating func operatorRecord() throws(CodecError) -> OperatorRecord {
        let offset = self.offset
        let text = try string()
        guard let json = try? JSONParser().parse(Array(text.utf8)), let record = OperatorRecord(json: json) else {
            throw CodecError(code: .inconsistent, offset: offset, message: "an operator record that is not one")
        }
        return record
    }
}
