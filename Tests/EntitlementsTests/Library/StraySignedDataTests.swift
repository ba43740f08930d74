import EntitlementCore
@testable import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// Specification sections 1 and 3: a document carrying a JWS at any position the engine
/// does not ingest, at any depth, is rejected whole (`MALFORMED_INPUT`, the position
/// named, the input quarantined, nothing appended); Apple's own documents still pass.
@Suite struct StraySignedDataTests {
    static let t0 = TestPayloads.january2025
    static let transaction = TestPayloads.transaction(
        transactionId: "2000000000000701", originalTransactionId: "2000000000000701", signedDate: t0 + 10)
    static let renewal = TestPayloads.renewalInfo(originalTransactionId: "2000000000000701", signedDate: t0 + 11)
    static let notification = TestPayloads.notification(
        type: "TEST", uuid: "33333333-0000-4000-8000-000000000001", signedDate: t0 + 12)

    /// Documents that would append something, each with one JWS where nothing reads it, and that JWS's path.
    static func strays() -> [(document: String, path: String)] {
        let tx = JSONValue.string(E2E.pki.sign(transaction))
        let rn = JSONValue.string(E2E.pki.sign(renewal))
        let note = JSONValue.string(E2E.pki.sign(notification))
        let app = JSONValue.string(E2E.pki.sign(TestPayloads.appTransaction(receiptCreationDate: t0 + 13)))
        let cases: [(JSONValue, String)] = [
            (["signedTransactions": [tx], "hasMore": false, "extraSigned": tx], "extraSigned"),
            (["signedPayload": note, "retriedAs": note], "retriedAs"),
            (
                [
                    "environment": "Sandbox", "bundleId": .string(TestPayloads.bundleId),
                    "data": [
                        [
                            "subscriptionGroupIdentifier": "21000001",
                            "lastTransactions": [
                                ["originalTransactionId": "2000000000000701", "status": 1, "signedTransactionInfo": tx, "signedFoo": rn]
                            ],
                        ]
                    ],
                ],
                "data[0].lastTransactions[0].signedFoo"
            ),
            (["data": [["subscriptionGroupIdentifier": "21000001", "lastTransactions": [tx]]]], "data[0].lastTransactions[0]"),
            (["data": [["lastTransactions": [], "previous": ["signedTransactionInfo": tx]]]], "data[0].previous.signedTransactionInfo"),
            (
                [
                    "notificationHistory": [
                        ["signedPayload": note, "sendAttempts": [["attemptDate": .int(t0), "sendAttemptResult": "SUCCESS"], ["body": note]]]
                    ],
                    "hasMore": false,
                ],
                "notificationHistory[0].sendAttempts[1].body"
            ),
            (["signedTransactionInfo": tx, "signedRenewalInfo": rn, "context": ["history": [["a", 1], [.null, app]]]], "context.history[1][1]"),
            (["signedAppTransactionInfo": app, "odd key": [tx]], #"["odd key"][0]"#),
            (["signedRenewalInfo": rn, "signedPayload": 5, "wrapped": ["signedPayload": note]], ""),  // two forms: the conflict is named first
            (["signedPayload": ["nested": note]], "signedPayload.nested"),
            (["unrelated": tx], "unrelated"),
        ]
        return cases.map { (JSONWriter.string($0.0), $0.1) }
    }

    @Test func aJWSWhereNothingReadsItRejectsTheDocumentWholeAndNamesWhereItSits() throws {
        let path = E2E.folder().appendingPathComponent("stray.sqlite").path
        let engine = try E2E.engine(path: path)
        let strays = Self.strays()
        for (document, position) in strays {
            let results = try engine.ingest([InputBytes(document)])
            #expect(results.map(\.outcome) == [.rejected], "\(document.prefix(120))")
            #expect(results.first?.errorCode == "MALFORMED_INPUT")
            let message = results.first?.errorMessage ?? ""
            #expect(message.contains("rejected whole"), "\(message)")
            if !position.isEmpty {
                #expect(message.hasPrefix(position + " holds signed data (a JWS) the engine does not ingest"), "\(message)")
            }
        }
        let probe = try Probe(path)
        #expect(try probe.eventCount() == 0)
        #expect(try probe.quarantineCount() == Int64(strays.count))
        // `verify` (the same classification) says the same without storing anything.
        let verifier = try DocumentVerifier(configuration: E2E.configuration())
        for (document, _) in strays {
            let lines = verifier.verify(InputBytes(document))
            #expect(lines.count == 1)
            #expect(lines.first?["result"] == "rejected")
            #expect(lines.first?["error"]?["code"] == "MALFORMED_INPUT")
        }
    }

    /// A legacy app receipt is signed data too (specification section 16): one beside
    /// `receipt-data`, beside a transaction or inside a history page is not dropped
    /// silently either.
    @Test func anAppReceiptWhereNothingReadsItRejectsTheDocumentWhole() throws {
        let receipt = Scenario.pki.receiptBase64(
            TestReceipts.payload(
                bundleId: TestPayloads.bundleId, creationDate: Self.t0 + 20,
                entries: [TestReceiptEntry(productId: "com.example.lifetime", transactionId: "5000", purchaseDate: Self.t0)]))
        var wrapped = ""
        for (index, character) in receipt.enumerated() {
            if index > 0 && index % 76 == 0 { wrapped += "\r\n" }
            wrapped.append(character)
        }
        #expect(ReceiptShape.matches(receipt))
        #expect(ReceiptShape.matches(wrapped))
        let tx = JSONValue.string(E2E.pki.sign(Self.transaction))
        let cases: [(JSONValue, String)] = [
            (["signedTransactionInfo": tx, "appReceipt": .string(receipt)], "appReceipt"),
            (["receipt-data": .string(receipt), "password": "0123456789abcdef", "latest_receipt": .string(wrapped)], "latest_receipt"),
            (["signedTransactions": [tx], "hasMore": false, "receipts": [.string(wrapped)]], "receipts[0]"),
        ]
        let path = E2E.folder().appendingPathComponent("stray-receipt.sqlite").path
        let engine = try E2E.engine(path: path)
        for (document, position) in cases {
            let results = try engine.ingest([InputBytes(JSONWriter.string(document))])
            #expect(results.map(\.outcome) == [.rejected], "\(position)")
            #expect(results.first?.errorCode == "MALFORMED_INPUT")
            let message = results.first?.errorMessage ?? ""
            #expect(message.hasPrefix(position + " holds signed data (an app receipt) the engine does not ingest"), "\(message)")
        }
        let probe = try Probe(path)
        #expect(try probe.eventCount() == 0)
        #expect(try probe.quarantineCount() == Int64(cases.count))
    }

    /// Every generation of Apple's receipts (long-form and indefinite lengths) has the
    /// shape; other base64 (a certificate, a token, a short string) has not.
    @Test func theReceiptShapeTestKnowsReceiptsFromOtherBase64() throws {
        let fixtures = Scenario.packageRoot.appendingPathComponent("Fixtures/receipts")
        for name in ["receipt-sandbox-g5.json", "receipt-sandbox-legacy.json", "receipt-xcode.json"] {
            let text = try String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8)
            guard case .object(let object) = try JSONParser().parse(text), case .string(let base64)? = object["receipt-data"] else {
                Issue.record("\(name) has no receipt-data")
                continue
            }
            #expect(ReceiptShape.matches(base64), "\(name)")
        }
        let certificate = Base64.encodeStandardPadded(E2E.pki.rootDER)
        for text in [certificate, "", "MIIB", "2000000000000701", "Sandbox", String(repeating: "M", count: 64), "0123456789abcdef0123456789abcdef"] {
            #expect(!ReceiptShape.matches(text), "\(text)")
        }
    }

    @Test func ingestOnTheCommandLineExitsOneAndQuarantinesTheDocument() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let db = folder.appendingPathComponent("cli.sqlite").path
        let stray = Self.strays()[2]
        let run = try E2E.run(["ingest", "--db", db, "--config", config], stdin: stray.document + "\n")
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.lines.count == 1)
        #expect(run.lines.first?["result"] == "rejected")
        #expect(run.lines.first?["error"]?["code"] == "MALFORMED_INPUT")
        #expect(text(run.lines.first?["error"]?["message"])?.hasPrefix(stray.path + " holds signed data") == true, "\(run.stdout)")
        let probe = try Probe(db)
        #expect(try probe.eventCount() == 0)
        #expect(try probe.quarantineCount() == 1)
        let verify = try E2E.run(["verify", "--config", config], stdin: stray.document + "\n")
        #expect(verify.status == 1)
        #expect(verify.lines.first?["error"]?["code"] == "MALFORMED_INPUT")
    }

    @Test func apple_sDocumentsWithAllTheirMembersStillPass() throws {
        let engine = try E2E.engine()
        let pki = E2E.pki
        let tx = JSONValue.string(pki.sign(Self.transaction))
        let rn = JSONValue.string(pki.sign(Self.renewal))
        let note = JSONValue.string(pki.sign(Self.notification))
        // Strings shaped a little like a JWS, in Apple's own members: dots, `eyJ`, no `alg`.
        let lookalikes: [JSONValue] = [
            "com.example.app", "1.2.3", "eyJ.eyJ.x", .string(Base64.encodeURL(Array(#"{"typ":"JWT"}"#.utf8)) + ".e30.c2ln"),
        ]
        let documents: [JSONValue] = [
            [
                "revision": "1.2.3", "bundleId": .string(TestPayloads.bundleId), "appAppleId": .int(TestPayloads.appAppleId),
                "environment": "Sandbox", "hasMore": false, "signedTransactions": [tx],
            ],
            [
                "environment": "Sandbox", "bundleId": .string(TestPayloads.bundleId), "appAppleId": .int(TestPayloads.appAppleId),
                "data": [
                    [
                        "subscriptionGroupIdentifier": "21000001",
                        "lastTransactions": [
                            ["status": 1, "originalTransactionId": "2000000000000701", "signedTransactionInfo": tx, "signedRenewalInfo": rn]
                        ],
                    ]
                ],
            ],
            [
                "notificationHistory": [
                    [
                        "signedPayload": note,
                        "sendAttempts": [
                            ["attemptDate": .int(Self.t0), "sendAttemptResult": "TIMED_OUT"],
                            ["attemptDate": .int(Self.t0 + 1), "sendAttemptResult": "SUCCESS"],
                        ],
                    ]
                ],
                "hasMore": false, "paginationToken": "57a7d2b4-0002",
            ],
            ["signedTransactionInfo": tx, "signedRenewalInfo": rn, "notes": .array(lookalikes)],
        ]
        let results = try engine.ingest(documents.map { InputBytes(JSONWriter.string($0)) })
        #expect(results.map(\.outcome) == [.appended, .duplicate, .appended, .appended, .duplicate, .duplicate], "\(results.map(\.errorMessage))")
        // Apple's body with whitespace takes the strict path, and passes too.
        let spaced = "{ \"signedPayload\" : \(JSONWriter.string(note)) }\n"
        #expect(try engine.ingest([InputBytes(spaced)]).map(\.outcome) == [.duplicate])
    }

    @Test func theRealAppleSamplesPassAloneAndInApple_sResponses() throws {
        let real = Scenario.packageRoot.appendingPathComponent("Fixtures/real")
        func sample(_ name: String) throws -> (document: String, jws: JSONValue) {
            let text = try String(contentsOf: real.appendingPathComponent(name), encoding: .utf8)
            guard case .object(let object) = try JSONParser().parse(text), let jws = object.members.first?.value else {
                throw Failure("\(name) is not an object")
            }
            return (text, jws)
        }
        let rules = try Rules(json: ["version": "1", "products": [:]])
        let folder = Scenario.temporaryFolder("stray-real")

        let notification = try sample("production-test-notification.json")
        let production = try Engine(
            configuration: EngineConfiguration(bundleId: "com.nineton.taller", appAppleId: 6_450_284_872, environment: .production, rules: rules),
            databasePath: folder.appendingPathComponent("production.sqlite").path)
        let history: JSONValue = [
            "notificationHistory": [
                ["signedPayload": notification.jws, "sendAttempts": [["attemptDate": 1_729_136_652_000, "sendAttemptResult": "SUCCESS"]]]
            ],
            "hasMore": false,
        ]
        let notificationResults = try production.ingest([
            InputBytes(notification.document), InputBytes(JSONWriter.string(history)),
            InputBytes("{ \"signedPayload\": \(JSONWriter.string(notification.jws)) }"),
        ])
        #expect(notificationResults.map(\.outcome) == [.appended, .duplicate, .duplicate], "\(notificationResults.map(\.errorMessage))")

        let transaction = try sample("sandbox-consumable-transaction.json")
        let sandbox = try Engine(
            configuration: EngineConfiguration(bundleId: "com.goodheartapp", environment: .sandbox, rules: rules),
            databasePath: folder.appendingPathComponent("sandbox.sqlite").path)
        let page: JSONValue = [
            "revision": "1739161772561_2000000847061981", "bundleId": "com.goodheartapp", "environment": "Sandbox", "hasMore": false,
            "signedTransactions": [transaction.jws],
        ]
        let transactionResults = try sandbox.ingest([InputBytes(transaction.document), InputBytes(JSONWriter.string(page))])
        #expect(transactionResults.map(\.outcome) == [.appended, .duplicate], "\(transactionResults.map(\.errorMessage))")
    }

    @Test func everyFixtureDocumentIsStillClassified() throws {
        let fixtures = Scenario.packageRoot.appendingPathComponent("Fixtures")
        var documents: [(name: String, bytes: [UInt8])] = []
        for name in [
            "real/production-test-notification.json", "real/sandbox-consumable-transaction.json", "receipts/receipt-sandbox-g5.json",
            "receipts/receipt-sandbox-legacy.json", "receipts/receipt-xcode.json",
        ] {
            documents.append((name, Array(try Data(contentsOf: fixtures.appendingPathComponent(name)))))
        }
        let lines = try String(contentsOf: fixtures.appendingPathComponent("demo/histories.ndjson"), encoding: .utf8)
        for (number, line) in lines.split(separator: "\n").enumerated() {
            documents.append(("demo/histories.ndjson:\(number + 1)", Array(line.utf8)))
        }
        #expect(documents.count > 20)
        for document in documents {
            guard case .failure(let error) = InputDocument.items(document.bytes[...]) else { continue }
            Issue.record("\(document.name): \(error.message)")
        }
    }

    @Test func theJWSShapeTestIsExact() {
        let jws = E2E.pki.sign(Self.transaction)
        let header = { (json: String) in Base64.encodeURL(Array(json.utf8)) }
        #expect(JWSShape.matches(jws))
        #expect(JWSShape.matches(header(#"{"alg":"none"}"#) + ".."))  // unsecured, still signed data's shape
        #expect(JWSShape.matches(header(#" { "alg" : "ES256" } "#) + ".e30.c2ln"))
        #expect(!JWSShape.matches(header(#"{"typ":"JWT"}"#) + ".e30.c2ln"))  // no alg
        #expect(!JWSShape.matches(header(#"["alg"]"#) + ".e30.c2ln"))  // not an object
        #expect(!JWSShape.matches(jws + ".x"))  // four segments
        #expect(!JWSShape.matches(String(jws.prefix { $0 != "." }) + ".payload"))  // two segments
        #expect(!JWSShape.matches("." + jws.split(separator: ".").dropFirst().joined(separator: ".")))  // no header
        #expect(!JWSShape.matches(header(#"{"alg":"ES256"}"#) + "=.e30.c2ln"))  // padded: not base64url
        for text in ["", "com.example.app", "1.2.3", "..", "eyJ.eyJ.x", "2000000000000701", "Sandbox"] {
            #expect(!JWSShape.matches(text), "\(text)")
        }
    }

    @Test func pathsReadAsPeopleWriteThem() {
        let path = JSONPath(components: [.key("data"), .index(0), .key("lastTransactions"), .index(2), .key("signedFoo")])
        #expect(path.description == "data[0].lastTransactions[2].signedFoo")
        #expect(JSONPath(components: [.key("receipt-data")]).description == "receipt-data")
        #expect(JSONPath(components: [.key("a b"), .key(""), .index(1), .key("x\"y")]).description == #"["a b"][""][1]["x\"y"]"#)
    }
}

private struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
