import EntitlementCore

/// How `lifecycle_events` keeps a line of the lifecycle feed
/// (`Migrations/sql/028_lifecycle_compact.sql`): what cannot be rebuilt, in small
/// columns; the line's JSON is written again when it is read, the same as the one
/// ``LifecycleEvent/line(entitlements:recordedAt:)`` gives.
enum LifecycleRow {
    /// The types by the number the table keeps them as (position + 1). Fixed by the
    /// migration: append only, never reorder.
    static let types: [LifecycleEventType] = [
        .subscriptionStarted, .renewal, .productChange, .autoRenewDisabled, .autoRenewEnabled, .billingIssue,
        .expiration, .purchase, .refund, .familyRevoke, .refundReversed, .consumptionRequest, .consentRescinded,
        .customerMerged, .grantStarted, .grantEnded, .grantRevoked, .transfer,
    ]

    private static let codes: [LifecycleEventType: Int64] = Dictionary(
        uniqueKeysWithValues: types.enumerated().map { ($0.element, Int64($0.offset + 1)) })

    /// The number `type` is kept as.
    static func code(of type: LifecycleEventType) -> Int64 { codes[type]! }

    /// The type kept as `code`, `nil` for a number no type has.
    static func type(code: Int64) -> LifecycleEventType? {
        code >= 1 && code <= Int64(types.count) ? types[Int(code - 1)] : nil
    }

    /// `text` as an integer when it is a decimal number written the way SQLite prints
    /// one back (digits only, no leading zero, at most 18 digits), else `nil`: kept as
    /// that INTEGER, it reads back as the same text. The migration's SQL applies the same rule.
    static func integer(_ text: some StringProtocol) -> Int64? {
        let utf8 = text.utf8
        guard let first = utf8.first, utf8.count <= 18, first != UInt8(ascii: "0") || utf8.count == 1 else { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// Binds `text` to a column of type ANY: an INTEGER when ``integer(_:)`` reads
    /// it as one, else TEXT; NULL for `nil`.
    static func bind(_ statement: Statement, _ index: Int32, numberOrText text: String?) throws {
        if let text, let value = integer(text) { try statement.bind(index, value) } else { try statement.bind(index, text) }
    }

    /// The text a column bound by ``bind(_:_:numberOrText:)`` holds.
    static func numberOrText(_ statement: Statement, _ column: Int32) -> String? {
        if statement.isNull(column) { return nil }
        if statement.isInteger(column) { return String(statement.int64(column)) }
        return statement.string(column)
    }

    /// The keys of a type's own fields whose values many lines share (a period type,
    /// a reason): kept in the line's shape. Every other field's value (dates,
    /// amounts, ids of grants and app users) is kept in the row.
    static let sharedFieldKeys: Set<String> = [
        "periodType", "isTrialConversion", "fromProductId", "expirationIntent", "reason", "quantity", "productType",
        "revocationType", "revocationPercentage",
    ]
}

/// What many lifecycle lines share, kept once in `lifecycle_shapes`: the product, its
/// entitlements under the rules at recording, the environment, the currency, and
/// the type's own fields in order, each with its value or with none when the row
/// keeps the value.
struct LifecycleShape: Hashable {
    var productId: String?
    var entitlements: [String]
    var environment: String?
    var currency: String?
    /// The type's fields in the line's order; `value` `nil` when the row keeps it.
    var fields: [Field]

    struct Field: Hashable {
        var key: String
        var value: JSONValue?
    }

    /// The shape of `event`'s line, and the values of its fields that the row keeps, in order.
    init(of event: LifecycleEvent, entitlements: [String]) {
        productId = event.productId
        self.entitlements = entitlements
        environment = event.environment
        currency = event.currency
        fields = event.extra.members.map { member in
            Field(key: member.key, value: LifecycleRow.sharedFieldKeys.contains(member.key) ? .some(member.value) : .none)
        }
    }

    /// The values of `event`'s fields that the row keeps (see ``fields``), in order.
    static func rowValues(of event: LifecycleEvent) -> [JSONValue] {
        // (filter, then map: JSONValue is ExpressibleByNilLiteral, so a `nil` here would be `.null`.)
        event.extra.members.filter { !LifecycleRow.sharedFieldKeys.contains($0.key) }.map(\.value)
    }

    /// As `lifecycle_shapes.value` keeps it: `[productId, [entitlements], environment,
    /// currency, [[key, value] or [key], ...]]`.
    var json: String {
        JSONWriter.string(.array([
            productId.map(JSONValue.string) ?? .null,
            .array(entitlements.map(JSONValue.string)),
            environment.map(JSONValue.string) ?? .null,
            currency.map(JSONValue.string) ?? .null,
            .array(fields.map { field in .array([.string(field.key)] + (field.value.map { [$0] } ?? [])) }),
        ]))
    }

    /// The shape kept as `json`, `nil` when it is not of that form.
    init?(json: JSONValue) {
        func optionalString(_ value: JSONValue) -> String?? {
            switch value {
            case .null: return .some(nil)
            case .string(let text): return .some(text)
            default: return nil
            }
        }
        guard case .array(let parts) = json, parts.count == 5, let productId = optionalString(parts[0]),
            case .array(let entitlements) = parts[1], let environment = optionalString(parts[2]),
            let currency = optionalString(parts[3]), case .array(let fields) = parts[4]
        else { return nil }
        var names: [String] = []
        for entitlement in entitlements {
            guard case .string(let name) = entitlement else { return nil }
            names.append(name)
        }
        var kept: [Field] = []
        for field in fields {
            guard case .array(let pair) = field, pair.count == 1 || pair.count == 2, case .string(let key) = pair[0] else { return nil }
            kept.append(Field(key: key, value: pair.count == 2 ? .some(pair[1]) : .none))
        }
        self.productId = productId
        self.entitlements = names
        self.environment = environment
        self.currency = currency
        self.fields = kept
    }

    /// The line's values as ``LifecycleEvent/storedValues(entitlements:)`` gives them,
    /// from this shape and what the row keeps; `nil` when the row's values do not fit it.
    func storedValues(originalTransactionId: String?, transactionId: String?, price: Int64?, rowValues: [JSONValue]) -> JSONValue? {
        var members: [(key: String, value: JSONValue)] = []
        members.reserveCapacity(fields.count)
        var next = rowValues.makeIterator()
        for field in fields {
            guard let value = field.value ?? next.next() else { return nil }
            members.append((field.key, value))
        }
        guard case .none = next.next() else { return nil }
        return LifecycleEvent.storedValues(
            originalTransactionId: originalTransactionId, transactionId: transactionId, productId: productId,
            entitlements: entitlements, environment: environment, price: price, currency: currency, extra: JSONObject(members))
    }
}

/// The `lifecycle_shapes` rows a connection has read or written, both ways: a feed
/// holds few distinct shapes, so after the first line of each, it is found here.
///
/// Rows of `lifecycle_shapes` are never changed or deleted, so a shape once committed
/// keeps its number, whichever process wrote it. One written by a transaction that
/// rolls back is not: after any rollback on the connection (``Connection/rollbacks``)
/// everything remembered is forgotten and looked up again.
final class LifecycleShapes {
    private var numbers: [LifecycleShape: Int64] = [:]
    private var shapes: [Int64: LifecycleShape] = [:]
    private var rollbacksSeen = 0
    let capacity: Int

    init(capacity: Int = 10_000) { self.capacity = capacity }

    private func forgetIfRolledBack(_ connection: Connection) {
        guard connection.rollbacks != rollbacksSeen || numbers.count + shapes.count >= capacity else { return }
        numbers.removeAll()
        shapes.removeAll()
        rollbacksSeen = connection.rollbacks
    }

    /// The number of `shape`, inserted in the caller's transaction when it is new.
    func number(of shape: LifecycleShape, on connection: Connection) throws -> Int64 {
        forgetIfRolledBack(connection)
        if let number = numbers[shape] { return number }
        let json = shape.json
        let find = try connection.cached("SELECT shape FROM lifecycle_shapes WHERE value = ?")
        defer { find.reset() }
        try find.bind(1, json)
        let number: Int64
        if try find.step() {
            number = find.int64(0)
        } else {
            let insert = try connection.cached("INSERT INTO lifecycle_shapes (value) VALUES (?)")
            defer { insert.reset() }
            try insert.bind(1, json)
            try insert.step()
            number = connection.lastInsertRowid
        }
        numbers[shape] = number
        shapes[number] = shape
        return number
    }

    /// The shape numbered `number`.
    func shape(_ number: Int64, on connection: Connection) throws -> LifecycleShape {
        forgetIfRolledBack(connection)
        if let shape = shapes[number] { return shape }
        let find = try connection.cached("SELECT value FROM lifecycle_shapes WHERE shape = ?")
        defer { find.reset() }
        try find.bind(1, number)
        guard try find.step(), let text = find.string(0), let json = try? JSONParser().parse(text),
            let shape = LifecycleShape(json: json)
        else {
            throw StoreError(code: .unreadable, message: "lifecycle shape \(number) is missing or cannot be read (lifecycle_shapes)")
        }
        numbers[shape] = number
        shapes[number] = shape
        return shape
    }
}
