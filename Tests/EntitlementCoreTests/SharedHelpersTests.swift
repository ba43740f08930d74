import EntitlementCore
import Foundation
import Testing

/// The helpers that each replaced two or three copies: the one base64 encoder (both
/// alphabets), the JSON writer's ASCII form (what the App Store signer writes), and the
/// core's calendar.
@Suite("Shared helpers")
struct SharedHelpersTests {
    @Test("standard padded base64 is Foundation's, and decodes back; base64url is it without padding")
    func base64MatchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let standard = Base64.encodeStandardPadded(bytes)
            #expect(standard == Data(bytes).base64EncodedString(), "\(length) bytes")
            #expect(Base64.decodeStandardPadded(standard) == bytes)
            let url = Base64.encodeURL(bytes)
            var expected = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            while expected.hasSuffix("=") { expected.removeLast() }
            #expect(url == expected)
            #expect(url.utf8.count == Base64.encodedLengthURL(length))
        }
    }

    @Test("asciiString escapes as Python's json.dumps does; plain output keeps UTF-8")
    func asciiJSON() {
        let value: JSONValue = [
            "a": "café\u{1F600}\"\\\n\r\t\u{08}\u{0C}\u{01}\u{7F}/", "n": .int(-42), "t": true, "f": false, "z": .null, "l": [1, "x"],
        ]
        #expect(
            JSONWriter.asciiString(value)
                == #"{"a":"caf\u00e9\ud83d\ude00\"\\\n\r\t\b\f\u0001"# + "\u{7F}" + #"/","n":-42,"t":true,"f":false,"z":null,"l":[1,"x"]}"#)
        #expect(JSONWriter.string(["k": "é"]) == #"{"k":"é"}"#)
        #expect(JSONWriter.asciiString(["é": "x"]) == #"{"\u00e9":"x"}"#)
    }

    @Test("the calendar: known moments, and every day from 1900 to 2200 round-trips")
    func civilTime() {
        #expect(CivilTime.iso8601(1_729_136_651_128) == "2024-10-17T03:44:11.128Z")
        #expect(CivilTime.iso8601(-1) == "1969-12-31T23:59:59.999Z")
        #expect(CivilTime.millis(year: 2045, month: 1, day: 1) == 2_366_841_600_000)
        #expect(CivilTime.millis(year: 2026, month: 11, day: 23, hour: 10, millisecond: 250) == 1_795_428_000_250)
        #expect(CivilTime.daysIn(month: 2, year: 2000) == 29)
        #expect(CivilTime.daysIn(month: 2, year: 1900) == 28)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        var days = CivilTime.days(year: 1900, month: 1, day: 1)
        for year: Int64 in 1900...2200 {
            for month: Int64 in 1...12 {
                for day in 1...CivilTime.daysIn(month: month, year: year) {
                    #expect(CivilTime.days(year: year, month: month, day: day) == days)
                    let date = CivilTime.date(days: days)
                    #expect(date.year == year && date.month == month && date.day == day)
                    days += 1
                }
            }
        }
        for millis: Int64 in [0, 951_782_400_000, -2_208_988_800_000, 4_102_444_799_999] {
            let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
            let text = formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))
            #expect(CivilTime.iso8601(millis).hasPrefix(String(text.dropLast())), "\(millis)")
        }
    }
}
