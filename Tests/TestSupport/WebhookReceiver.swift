import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A webhook receiver on loopback for the tests: a Python HTTP server that verifies every
/// delivery's signature with the PyPI `standardwebhooks` package (the reference library a
/// team's receiver would use), records each request (before answering) in an NDJSON file,
/// and answers 204, or 500 or nothing for a while on the attempts the test chose. It can be
/// stopped and started again on the same port.
package final class WebhookReceiver: @unchecked Sendable {
    /// One request received.
    package struct Record {
        package var id: String
        package var verified: Bool
        package var error: String?
        /// "ok" (answered 204), "fail" (500), "hang" (no answer for a while), "redirect"
        /// (307), or "big" (200 with 8 MiB of body).
        package var action: String
        package var attempt: Int
        package var body: String
        package var cursor: Int64? { id.hasPrefix("changes:") ? Int64(id.dropFirst("changes:".count)) : nil }
        package var delivered: Bool { action == "ok" || action == "big" }
    }

    static let script = #"""
        import json, os, sys, threading, time
        from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
        from standardwebhooks.webhooks import Webhook

        secret, record, control, port = os.environ["WH_SECRET"], os.environ["WH_RECORD"], os.environ["WH_CONTROL"], int(os.environ["WH_PORT"])
        hook = Webhook(secret)
        lock = threading.Lock()
        # Attempts per webhook-id, counted over every run on this record file (a restart goes on counting).
        attempts = {}
        if os.path.exists(record):
            with open(record) as f:
                for line in f:
                    if line.strip():
                        mid = json.loads(line)["id"]
                        attempts[mid] = attempts.get(mid, 0) + 1

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k: v for k, v in self.headers.items()}
                try:
                    hook.verify(body, headers)
                    verified, error = True, None
                except Exception as e:
                    verified, error = False, repr(e)
                mid = self.headers.get("webhook-id", "")
                try:
                    with open(control) as f: plan = json.load(f)
                except Exception:
                    plan = {}
                with lock:
                    attempts[mid] = attempts.get(mid, 0) + 1
                    n = attempts[mid]
                    action = "ok"
                    if n <= plan.get("fail", {}).get(mid, 0): action = "fail"
                    elif n <= plan.get("hang", {}).get(mid, 0): action = "hang"
                    elif n <= plan.get("redirect", {}).get(mid, 0): action = "redirect"
                    elif n <= plan.get("big", {}).get(mid, 0): action = "big"
                    with open(record, "a") as f:
                        f.write(json.dumps({"id": mid, "verified": verified, "error": error, "action": action, "attempt": n, "body": body.decode()}) + "\n")
                        f.flush()
                if plan.get("delayMs"):
                    time.sleep(plan["delayMs"] / 1000.0)
                if action == "hang":
                    time.sleep(float(plan.get("hangSeconds", 5)))
                    self.close_connection = True
                    return
                if action == "redirect":
                    self.send_response(307)
                    self.send_header("Location", "/elsewhere")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if action == "big":
                    # A 2xx with a body far past what the deliverer reads.
                    self.send_response(200)
                    self.send_header("Content-Length", str(8 << 20))
                    self.end_headers()
                    try:
                        for _ in range(128):
                            self.wfile.write(b"x" * (64 << 10))
                    except Exception:
                        pass
                    self.close_connection = True
                    return
                self.send_response(500 if action == "fail" else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()
            def log_message(self, *args):
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    /// Whether python3 with `standardwebhooks` can run here (installed with pip when missing);
    /// when not, the tests that need it are skipped, with a notice on standard error.
    package static let isAvailable: Bool = {
        func importable() -> Bool { run(["python3", "-c", "import standardwebhooks"]) == 0 }
        if importable() { return true }
        _ = run(["python3", "-m", "pip", "install", "--quiet", "standardwebhooks"])
        if importable() { return true }
        FileHandle.standardError.write(
            Data("notice: webhook receiver tests skipped: python3 with the standardwebhooks package is not available (python3 -m pip install standardwebhooks)\n".utf8))
        return false
    }()

    private static func run(_ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    package let secret: String
    package let folder: URL
    var recordPath: URL { folder.appendingPathComponent("received.ndjson") }
    var controlPath: URL { folder.appendingPathComponent("control.json") }
    package private(set) var port = 0
    private var process: Process?

    package init(secret: String) throws {
        self.secret = secret
        folder = Scenario.temporaryFolder("webhooks")
        try Data().write(to: recordPath)
        try setControl([:])
        try start()
    }

    deinit { stop() }

    package var url: String { "http://127.0.0.1:\(port)/hooks/entitlements" }

    /// Starts the server (on the port it had, after a ``stop()``), once it listens.
    package func start() throws {
        let scriptPath = folder.appendingPathComponent("receiver.py")
        try Data(Self.script.utf8).write(to: scriptPath)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", scriptPath.path]
        var environment = ProcessInfo.processInfo.environment
        environment["WH_SECRET"] = secret
        environment["WH_RECORD"] = recordPath.path
        environment["WH_CONTROL"] = controlPath.path
        environment["WH_PORT"] = String(port)
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { throw ReceiverError(message: "the receiver ended before it listened") }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let listening = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ReceiverError(message: "the receiver printed \(text)")
        }
        port = listening
        self.process = process
    }

    /// Stops the server (and waits for it to end).
    package func stop() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// What to answer: `fail` and `hang` map a webhook-id to how many of its first attempts
    /// (counted across restarts) get a 500, no answer for `hangSeconds`, a redirect
    /// (`redirect`) or a 200 with a huge body (`big`); `delayMs` slows every answer.
    package func setControl(_ plan: JSONValue) throws {
        let temporary = folder.appendingPathComponent("control.tmp")
        try Data(JSONWriter.string(plan).utf8).write(to: temporary)
        _ = rename(temporary.path, controlPath.path)
    }

    /// Every request received so far, in order.
    package func records() -> [Record] {
        guard let data = try? Data(contentsOf: recordPath) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line -> Record? in
            guard case .object(let object)? = try? JSONParser().parse(Array(line.utf8)) else { return nil }
            guard case .string(let id)? = object["id"], case .bool(let verified)? = object["verified"],
                case .string(let action)? = object["action"], case .int(let attempt)? = object["attempt"],
                case .string(let body)? = object["body"]
            else { return nil }
            var error: String? = nil
            if case .string(let text)? = object["error"] { error = text }
            return Record(id: id, verified: verified, error: error, action: action, attempt: Int(attempt), body: body)
        }
    }

    /// Waits until `condition` holds for what was received, or `seconds` pass.
    @discardableResult
    package func wait(seconds: Double = 60, until condition: ([Record]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(records()) { return true }
            usleep(10_000)
        }
        return condition(records())
    }

    /// The problems with what was received, against the feed's cursors in order: a line
    /// that came before every line ahead of it had been delivered (answered 2xx) at least
    /// once (out of order, or skipped), one never delivered, a signature that did not verify.
    package static func problems(_ records: [Record], expected cursors: [Int64]) -> [String] {
        var problems: [String] = []
        var delivered = Set<Int64>()
        for (index, record) in records.enumerated() {
            if !record.verified { problems.append("request \(index) (\(record.id)) did not verify: \(record.error ?? "")") }
            guard let cursor = record.cursor else {
                problems.append("request \(index) has webhook-id \(record.id)")
                continue
            }
            if let missing = cursors.first(where: { $0 < cursor && !delivered.contains($0) }) {
                problems.append("request \(index) (\(record.id)) came before changes:\(missing) was delivered")
            }
            if record.delivered { delivered.insert(cursor) }
        }
        for cursor in cursors where !delivered.contains(cursor) { problems.append("changes:\(cursor) was never delivered") }
        return problems
    }

    package static func allDelivered(_ records: [Record], _ cursors: [Int64]) -> Bool {
        let delivered = Set(records.filter(\.delivered).compactMap(\.cursor))
        return cursors.allSatisfy(delivered.contains)
    }
}

package struct ReceiverError: Error, CustomStringConvertible {
    package var message: String
    package var description: String { message }
    package init(message: String) { self.message = message }
}

/// Data that makes changes for the webhook tests: customers buying a monthly
/// subscription (active, then expired as time passes) or a lifetime product (active).
package enum WebhookTestData {
    /// The Standard Webhooks secret the tests' receivers and endpoints share.
    package static let secret = "whsec_" + Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()

    /// Ingests `customers` customers' purchases, each received a second after it was made
    /// (changes recorded as time passes), so that the feed holds about two lines per customer.
    package static func ingest(seed: UInt64, customers: Int = 6, into engine: Engine) throws {
        var random = SeededRandom(seed: seed)
        let day: Int64 = 86_400_000
        var moment = TestPayloads.january2025
        for index in 0..<customers {
            moment += Int64(random.int(1..<20)) * day + Int64(random.int(0..<86_400_000))
            let number = seed * 1_000 + UInt64(index)
            let id = "2\(String(format: "%015llu", number))"
            let lifetime = random.int(0..<4) == 0
            let transaction = TestPayloads.transaction(
                transactionId: id, originalTransactionId: id, appTransactionId: "704\(String(format: "%015llu", number))",
                productId: lifetime ? "com.example.lifetime" : "com.example.pro.monthly",
                type: lifetime ? "Non-Consumable" : "Auto-Renewable Subscription", purchaseDate: moment,
                expiresDate: lifetime ? nil : moment + 30 * day, signedDate: moment)
            let body = #"{"signedTransactionInfo":""# + Scenario.pki.sign(transaction) + #""}"#
            _ = try engine.ingest([InputBytes(body)], receivedAt: moment + 1_000)
            try engine.recordDueChanges(now: moment + 1_000)
        }
    }
}
