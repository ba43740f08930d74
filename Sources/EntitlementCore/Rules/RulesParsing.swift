/// Why a rules document was refused: the field and what is wrong with it.
public struct RulesError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The path of the bad field, e.g. `rules.products.com.example.pass.durationDays`.
    public var field: String
    public var reason: String
    public var description: String { "\(field): \(reason)" }
}

extension Rules {
    /// Reads the `rules` object of the configuration (specification section 4).
    /// - Throws: ``RulesError`` naming the field.
    public init(json: JSONValue, path: String = "rules") throws(RulesError) {
        guard case .object(let object) = json else {
            throw RulesError(field: path, reason: "expected an object, found \(json.typeName)")
        }
        let known: Set<String> = [
            "version", "gracePeriodGrantsAccess", "billingRetryGrantsAccess", "products", "skus", "consentRescindedRevokesAccess",
        ]
        for key in object.keys where !known.contains(key) {
            throw RulesError(field: "\(path).\(key)", reason: "unknown field (expected one of \(known.sorted().joined(separator: ", ")))")
        }
        guard case .string(let version)? = object["version"], !version.isEmpty else {
            throw RulesError(field: "\(path).version", reason: "required: a non-empty string naming this set of rules")
        }
        func flag(_ key: String, default value: Bool) throws(RulesError) -> Bool {
            switch object[key] {
            case nil: return value
            case .bool(let flag)?: return flag
            case let other?: throw RulesError(field: "\(path).\(key)", reason: "expected true or false, found \(other.typeName)")
            }
        }
        var products: [String: ProductRule] = [:]
        switch object["products"] {
        case nil: break
        case .object(let list)?:
            for (productId, value) in list.members {
                products[productId] = try ProductRule(json: value, path: "\(path).products[\"\(productId)\"]")
            }
        case let other?:
            throw RulesError(field: "\(path).products", reason: "expected an object keyed by productId, found \(other.typeName)")
        }
        var skus: [String: ProductRule] = [:]
        switch object["skus"] {
        case nil: break
        case .object(let list)?:
            for (sku, value) in list.members {
                let rule = try ProductRule(json: value, path: "\(path).skus[\"\(sku)\"]")
                guard rule.durationDays == nil, rule.currency == nil, rule.units == nil else {
                    throw RulesError(field: "\(path).skus[\"\(sku)\"]", reason: "a SKU grants only entitlements (durationDays, currency and units belong to products)")
                }
                skus[sku] = rule
            }
        case let other?:
            throw RulesError(field: "\(path).skus", reason: "expected an object keyed by SKU, found \(other.typeName)")
        }
        self.init(
            version: version, gracePeriodGrantsAccess: try flag("gracePeriodGrantsAccess", default: true),
            billingRetryGrantsAccess: try flag("billingRetryGrantsAccess", default: false), products: products, skus: skus,
            consentRescindedRevokesAccess: try flag("consentRescindedRevokesAccess", default: false))
    }

    /// Reads rules from JSON text (as recorded in the store).
    public init(jsonText: String) throws(RulesError) {
        let json: JSONValue
        do { json = try JSONParser().parse(jsonText) } catch { throw RulesError(field: "rules", reason: error.description) }
        try self.init(json: json)
    }

    /// Canonical JSON of these rules: products sorted, every field present,
    /// so equal rules give equal text.
    public var canonicalJSON: JSONValue {
        var products = JSONObject()
        for productId in self.products.keys.sorted() {
            let rule = self.products[productId]!
            var entry = JSONObject()
            entry["entitlements"] = .array(rule.entitlements.map { .string($0) })
            if let days = rule.durationDays { entry["durationDays"] = .int(days) }
            if let currency = rule.currency { entry["currency"] = .string(currency) }
            if let units = rule.units { entry["units"] = .int(units) }
            if let period = rule.period { entry["period"] = .string(period.rawValue) }
            products[productId] = .object(entry)
        }
        var canonical = JSONObject([
            ("version", .string(version)), ("gracePeriodGrantsAccess", .bool(gracePeriodGrantsAccess)),
            ("billingRetryGrantsAccess", .bool(billingRetryGrantsAccess)), ("products", .object(products)),
        ])
        // Written only when set, so that rules without them keep their canonical text.
        if !self.skus.isEmpty {
            var skus = JSONObject()
            for sku in self.skus.keys.sorted() {
                skus[sku] = .object(JSONObject([("entitlements", .array(self.skus[sku]!.entitlements.map { .string($0) }))]))
            }
            canonical["skus"] = .object(skus)
        }
        if consentRescindedRevokesAccess { canonical["consentRescindedRevokesAccess"] = true }
        return .object(canonical)
    }
}

extension ProductRule {
    init(json: JSONValue, path: String) throws(RulesError) {
        guard case .object(let object) = json else {
            throw RulesError(field: path, reason: "expected an object, found \(json.typeName)")
        }
        let known: Set<String> = ["entitlements", "durationDays", "currency", "units", "period"]
        for key in object.keys where !known.contains(key) {
            throw RulesError(field: "\(path).\(key)", reason: "unknown field (expected one of \(known.sorted().joined(separator: ", ")))")
        }
        var entitlements: [String] = []
        switch object["entitlements"] {
        case nil: break
        case .array(let list)?:
            for element in list {
                guard case .string(let name) = element, !name.isEmpty else {
                    throw RulesError(field: "\(path).entitlements", reason: "expected an array of non-empty strings")
                }
                entitlements.append(name)
            }
        case let other?: throw RulesError(field: "\(path).entitlements", reason: "expected an array of strings, found \(other.typeName)")
        }
        func positive(_ key: String) throws(RulesError) -> Int64? {
            switch object[key] {
            case nil: return nil
            case .int(let value)? where value > 0: return value
            case let other?: throw RulesError(field: "\(path).\(key)", reason: "expected a positive integer, found \(JSONWriter.string(other))")
            }
        }
        let durationDays = try positive("durationDays")
        let units = try positive("units")
        var currency: String? = nil
        switch object["currency"] {
        case nil: break
        case .string(let name)? where !name.isEmpty: currency = name
        case let other?: throw RulesError(field: "\(path).currency", reason: "expected a non-empty string, found \(JSONWriter.string(other))")
        }
        var period: BillingPeriod? = nil
        switch object["period"] {
        case nil: break
        case .string(let name)?:
            guard let parsed = BillingPeriod(rawValue: name) else {
                throw RulesError(
                    field: "\(path).period",
                    reason: "\"\(name)\" is not one of \(BillingPeriod.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            period = parsed
        case let other?: throw RulesError(field: "\(path).period", reason: "expected a string such as \"P1M\", found \(JSONWriter.string(other))")
        }
        self.init(entitlements: entitlements, durationDays: durationDays, currency: currency, units: units, period: period)
    }
}
