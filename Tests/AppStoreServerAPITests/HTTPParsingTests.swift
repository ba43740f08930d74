@testable import AppStoreServerAPI
import Foundation
import Testing

/// The response reader and the request and retry details of the client.
@Suite struct HTTPParsingTests {
    func parse(_ text: String, atEOF: Bool = false) throws -> HTTPResponse? {
        if case .complete(let response) = try HTTPResponseParser.parse(Array(text.utf8), atEOF: atEOF, method: "GET") { return response }
        return nil
    }

    @Test func contentLengthAndChunkedBodiesAtEverySplitPoint() throws {
        let plain = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"b c\"}"
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{\"a\"\r\n7\r\n:\"b c\"}\r\n0\r\nTrailer: x\r\n\r\n"
        for text in [plain, chunked] {
            let bytes = Array(text.utf8)
            for split in 0..<bytes.count {
                #expect(try parse(String(decoding: bytes[0..<split], as: UTF8.self)) == nil, "incomplete at \(split)")
            }
            let response = try #require(try parse(text))
            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self) == "{\"a\":\"b c\"}")
        }
        #expect(try parse("HTTP/1.1 204 No Content\r\n\r\n")?.body == [])
        #expect(try parse("HTTP/1.1 200 OK\r\n\r\nuntil close", atEOF: true)?.body == Array("until close".utf8))
        #expect(try parse("HTTP/1.1 429 Too Many\r\nretry-after: 7\r\nContent-Length: 0\r\n\r\n")?.header("Retry-After") == "7")
    }

    @Test func malformedResponsesAreProtocolErrors() {
        for text in [
            "SMTP ready\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            #expect(throws: HTTPClientError.self, "\(text)") { try HTTPResponseParser.parse(Array(text.utf8), atEOF: false, method: "GET") }
        }
        #expect(throws: HTTPClientError.self) {
            try HTTPResponseParser.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort".utf8), atEOF: true, method: "GET")
        }
    }

    @Test func retryAfterIsSecondsOrATime() {
        let now: Int64 = 1_763_683_200_000
        #expect(AppStoreServerAPIClient.retryDelay("7", nowMilliseconds: now) == 7)
        #expect(AppStoreServerAPIClient.retryDelay(String(now + 2_500), nowMilliseconds: now) == 2.5)
        #expect(AppStoreServerAPIClient.retryDelay(String(now / 1000 + 3), nowMilliseconds: now) == 3)
        #expect(AppStoreServerAPIClient.retryDelay(String(now - 10_000), nowMilliseconds: now) == 0)
        #expect(AppStoreServerAPIClient.retryDelay(nil, nowMilliseconds: now) == 1)
        #expect(AppStoreServerAPIClient.retryDelay("Wed, 21 Oct 2015 07:28:00 GMT", nowMilliseconds: now) == 1)
    }

    @Test func requestsEncodeTheirVariableParts() {
        #expect(APIRequest.transactionHistory(transactionId: "2000/1", revision: "a+b=").description == "GET /inApps/v2/history/2000%2F1?revision=a%2Bb%3D")
        // An id that is a dot segment names no other path.
        #expect(APIRequest.transactionHistory(transactionId: "..", revision: nil).description == "GET /inApps/v2/history/%2E%2E")
        #expect(APIRequest.transactionInfo(transactionId: ".").description == "GET /inApps/v1/transactions/%2E")
        #expect(APIRequest.transactionInfo(transactionId: "...").description == "GET /inApps/v1/transactions/...")
        let history = APIRequest.notificationHistory(startDate: 1, endDate: 2, onlyFailures: false, paginationToken: nil)
        #expect(history.body == ["startDate": 1, "endDate": 2])
        #expect(history.description == "POST /inApps/v1/notifications/history")
        #expect(APIRequest.notificationHistory(startDate: 1, endDate: 2, onlyFailures: true, paginationToken: "t").body?["onlyFailures"] == .bool(true))
        let consumption = APIRequest.sendConsumption(transactionId: "2000000000000001", body: ["customerConsented": true, "deliveryStatus": "DELIVERED"])
        #expect(consumption.description == "PUT /inApps/v2/transactions/consumption/2000000000000001")
        #expect(consumption.body?["deliveryStatus"] == "DELIVERED")
    }
}
