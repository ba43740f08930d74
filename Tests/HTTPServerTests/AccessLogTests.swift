import Foundation
import Testing

@testable import HTTPServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The access log writes its lines together: none lost, none cut, in order, within its
/// interval, at once past its limit, and all of them before a stopped server's `run()` returns.
@Suite("HTTP server: the access log's writes")
struct AccessLogTests {
    /// A file the log writes to, read back as lines.
    final class LogFile {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("access-\(UUID().uuidString).log").path
        let fd: Int32

        init() { fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644) }

        deinit {
            close(fd)
            unlink(path)
        }

        var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        var lines: [Substring] { text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() }
    }

    static func entry(_ number: Int, client: String = "127.0.0.1") -> AccessLog.Entry {
        AccessLog.Entry(client: client, method: "GET", target: "/customers/\(number)", status: 200, bytes: number, microseconds: 1)
    }

    @Test("lines wait for the interval or a flush, then are written whole and in order")
    func linesWaitThenAreWrittenInOrder() {
        let file = LogFile()
        let log = AccessLog(fileDescriptor: file.fd, flushMilliseconds: 600_000)
        for number in 1...3 { log.write(Self.entry(number)) }
        #expect(file.text.isEmpty, "nothing written before the interval or a flush")
        log.flush()
        let lines = file.lines
        #expect(lines.count == 3)
        for (index, line) in lines.enumerated() {
            #expect(line.hasPrefix(#"{"time":"#))
            #expect(line.contains(#""path":"/customers/\#(index + 1)","status":200,"bytes":\#(index + 1),"us":1}"#))
        }
        log.flush()
        #expect(file.lines.count == 3, "a second flush writes nothing again")
    }

    @Test("a line is written within the interval without a flush")
    func theIntervalWritesALine() {
        let file = LogFile()
        let log = AccessLog(fileDescriptor: file.fd, flushMilliseconds: 5)
        log.write(Self.entry(7))
        #expect(RunningServer.eventually { file.lines.count == 1 })
        #expect(file.lines.first?.contains(#""bytes":7"#) == true)
    }

    @Test("past the limit the thread adding a line writes everything waiting at once")
    func theLimitWritesAtOnce() {
        let file = LogFile()
        let log = AccessLog(fileDescriptor: file.fd, flushMilliseconds: 600_000)
        var written = 0
        var count = 0
        while written < AccessLog.pendingLimit {
            count += 1
            log.write(Self.entry(count))
            written = file.text.utf8.count
        }
        #expect(file.lines.count == count, "every line written by the write that crossed the limit")
        #expect(written >= AccessLog.pendingLimit)
    }

    @Test("0 ms writes each line at once")
    func zeroWritesAtOnce() {
        let file = LogFile()
        let log = AccessLog(fileDescriptor: file.fd, flushMilliseconds: 0)
        log.write(Self.entry(1))
        #expect(file.lines.count == 1)
    }

    @Test("lines from many threads: every one whole, each thread's in its order")
    func concurrentWriters() async {
        let file = LogFile()
        let log = AccessLog(fileDescriptor: file.fd, flushMilliseconds: 1)
        let threads = 8
        let each = 600
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    for number in 0..<each { log.write(Self.entry(number, client: "10.0.0.\(thread)")) }
                }
            }
        }
        log.flush()
        let lines = file.lines
        #expect(lines.count == threads * each)
        var next = [String: Int]()
        for line in lines {
            guard let client = line.split(separator: "\"").dropFirst(5).first, let bytes = line.split(separator: ",").first(where: { $0.hasPrefix(#""bytes":"#) })
            else {
                Issue.record("a line cut or mixed: \(line)")
                continue
            }
            let number = Int(bytes.dropFirst(8)) ?? -1
            #expect(number == next[String(client), default: 0], "\(client)")
            next[String(client)] = number + 1
        }
        #expect(next.count == threads)
    }

    @Test("a stopped server's run() returns after its lines are written")
    func stopWritesEveryLine() throws {
        let file = LogFile()
        let log = AccessLog(fileDescriptor: file.fd, flushMilliseconds: 600_000)
        let running = try RunningServer(limits: ServerLimits(maxBodyBytes: 1024), log: log)
        for _ in 0..<3 {
            let client = try #require(LoopbackClient(port: running.port))
            client.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(client.head(timeout: 30)?.status == 200)
        }
        #expect(running.stop(timeout: 60))
        let lines = file.lines
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { $0.contains(#""path":"/health","status":200"#) })
    }
}
