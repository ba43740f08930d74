extension FactsLayout {
    /// An operator record field by field (state format 5, event facts format 4): flags, u8 kind, string id,
    /// [string appTransactionId] [string originalTransactionId] [string appUserId],
    /// date recordedAt, [string operator] [string reason], then the action: a grant's
    /// string entitlement, date from, date until; a revocation's date at; a credit's
    /// string currency, int units; nothing for a link.
    enum OperatorRecordFields {
        static let appTransactionId: UInt64 = 1 << 0
        static let originalTransactionId: UInt64 = 1 << 1
        static let appUserId: UInt64 = 1 << 2
        static let operatorName: UInt64 = 1 << 3
        static let reason: UInt64 = 1 << 4
        static let known: UInt64 = (1 << 5) - 1

        static let grant: UInt8 = 0
        static let grantRevoked: UInt8 = 1
        static let credit: UInt8 = 2
        static let link: UInt8 = 3
    }
}

extension ByteWriter {
    /// An operator record as the log keeps it: its canonical JSON, as one string (the
    /// event codec's form, and the stored states' before format 5).
    mutating func operatorRecordJSON(_ record: OperatorRecord) {
        string(JSONWriter.string(record.canonicalJSON))
    }

    /// An operator record field by field (``FactsLayout/OperatorRecordFields``): read back
    /// without parsing JSON, at every query of a customer that has one.
    mutating func operatorRecordFields(_ record: OperatorRecord) {
        typealias F = FactsLayout.OperatorRecordFields
        var flags: UInt64 = 0
        if record.appTransactionId != nil { flags |= F.appTransactionId }
        if record.originalTransactionId != nil { flags |= F.originalTransactionId }
        if record.appUserId != nil { flags |= F.appUserId }
        if record.operatorName != nil { flags |= F.operatorName }
        if record.reason != nil { flags |= F.reason }
        varint(flags)
        switch record.action {
        case .grant: byte(F.grant)
        case .grantRevoked: byte(F.grantRevoked)
        case .credit: byte(F.credit)
        case .link: byte(F.link)
        }
        string(record.id)
        if let value = record.appTransactionId { string(value) }
        if let value = record.originalTransactionId { string(value) }
        if let value = record.appUserId { string(value) }
        date(record.recordedAt)
        if let value = record.operatorName { string(value) }
        if let value = record.reason { string(value) }
        switch record.action {
        case .grant(let entitlement, let from, let until):
            string(entitlement)
            date(from)
            date(until)
        case .grantRevoked(let at):
            date(at)
        case .credit(let currency, let units):
            string(currency)
            int(units)
        case .link:
            break
        }
    }
}

extension ByteReader {
    /// An operator record in the form the format read keeps (``operatorRecordsAsFields``).
    mutating func operatorRecord() throws(CodecError) -> OperatorRecord {
        operatorRecordsAsFields ? try operatorRecordFields() : try operatorRecordJSON()
    }

    /// An operator record written by ``ByteWriter/operatorRecordJSON(_:)``.
    mutating func operatorRecordJSON() throws(CodecError) -> OperatorRecord {
        let offset = self.offset
        let text = try string()
        guard let json = try? JSONParser().parse(Array(text.utf8)), let record = OperatorRecord(json: json) else {
            throw CodecError(code: .inconsistent, offset: offset, message: "an operator record that is not one")
        }
        return record
    }

    /// An operator record written by ``ByteWriter/operatorRecordFields(_:)``.
    mutating func operatorRecordFields() throws(CodecError) -> OperatorRecord {
        typealias F = FactsLayout.OperatorRecordFields
        let start = offset
        let flags = try self.flags(known: F.known)
        guard flags & F.appTransactionId == 0 || flags & F.originalTransactionId == 0 else {
            throw CodecError(
                code: .inconsistent, offset: start, message: "an operator record naming both appTransactionId and originalTransactionId")
        }
        let kindOffset = offset
        let kind = try byte()
        let id = try string()
        let appTransactionId = flags & F.appTransactionId != 0 ? try string() : nil
        let originalTransactionId = flags & F.originalTransactionId != 0 ? try string() : nil
        let appUserId = flags & F.appUserId != 0 ? try string() : nil
        let recordedAt = try date()
        let operatorName = flags & F.operatorName != 0 ? try string() : nil
        let reason = flags & F.reason != 0 ? try string() : nil
        let action: OperatorAction
        switch kind {
        case F.grant:
            let entitlement = try string()
            let from = try date()
            action = .grant(entitlement: entitlement, from: from, until: try date())
        case F.grantRevoked:
            action = .grantRevoked(at: try date())
        case F.credit:
            let currency = try string()
            action = .credit(currency: currency, units: try int())
        case F.link:
            action = .link
        default:
            throw CodecError(code: .invalidTag, offset: kindOffset, message: "unknown operator record kind \(kind)")
        }
        return OperatorRecord(
            id: id, appTransactionId: appTransactionId, originalTransactionId: originalTransactionId, appUserId: appUserId,
            recordedAt: recordedAt, operatorName: operatorName, reason: reason, action: action)
    }
}
