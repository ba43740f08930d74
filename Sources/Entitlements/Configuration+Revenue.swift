import EntitlementCore
import Foundation

extension EngineConfiguration {
    /// Reads `"revenue": {"reportingCurrency": "USD", "exchangeRates": "rates.csv",
    /// "smallBusinessProgram": false}` (specification section 14). A relative
    /// `exchangeRates` path resolves against the configuration file's folder.
    /// - Returns: The settings, and the rates file's path as given (for messages).
    /// - Throws: ``ConfigurationError`` naming the field, and for the rates file its line and field.
    static func parseRevenue(_ json: JSONValue, baseDirectory: URL) throws(ConfigurationError) -> (RevenueSettings, String?) {
        guard case .object(let object) = json else {
            throw ConfigurationError(
                field: "revenue",
                message: "expected an object such as {\"reportingCurrency\": \"USD\", \"exchangeRates\": \"rates.csv\", \"smallBusinessProgram\": false}, found \(json.typeName)")
        }
        let known = ["reportingCurrency", "exchangeRates", "smallBusinessProgram"]
        for key in object.keys.sorted() where !known.contains(key) {
            throw ConfigurationError(field: "revenue.\(key)", message: "unknown field; expected one of \(known.joined(separator: ", "))")
        }
        guard case .string(let currency)? = object["reportingCurrency"] else {
            throw ConfigurationError(field: "revenue.reportingCurrency", message: "required: the ISO 4217 code figures are reported in, e.g. \"USD\"")
        }
        guard !currency.isEmpty, currency.utf8.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) }) else {
            throw ConfigurationError(field: "revenue.reportingCurrency", message: "\"\(currency)\" is not a currency code such as USD (upper-case letters)")
        }
        var settings = RevenueSettings(reportingCurrency: currency)
        switch object["smallBusinessProgram"] {
        case nil, .null?: break
        case .bool(let flag)?: settings.smallBusinessProgram = flag
        case let other?:
            throw ConfigurationError(field: "revenue.smallBusinessProgram", message: "expected true or false, found \(JSONWriter.string(other))")
        }
        var ratesPath: String? = nil
        switch object["exchangeRates"] {
        case nil, .null?: break
        case .string(let path)? where !path.isEmpty:
            let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : baseDirectory.appendingPathComponent(path)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw ConfigurationError(field: "revenue.exchangeRates", message: "cannot read the exchange-rate file \(url.path)")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw ConfigurationError(field: "revenue.exchangeRates", message: "\(url.path) is not UTF-8 text")
            }
            do {
                settings.exchangeRates = try ExchangeRates(csv: text)
            } catch {
                throw ConfigurationError(field: "revenue.exchangeRates", message: "\(url.path) \(error.description)")
            }
            ratesPath = path
        case let other?:
            throw ConfigurationError(
                field: "revenue.exchangeRates", message: "expected the path of a CSV file of date,currency,rate lines, found \(JSONWriter.string(other))")
        }
        return (settings, ratesPath)
    }
}
