import TestPKI
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Monotonic time, in seconds.
enum Clock {
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Monotonic time in nanoseconds (for per-call latencies).
    static func nanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// CPU time the calling thread has used, in seconds.
    static func threadCPU() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// CPU time this process has used in user and in system (kernel) mode, in seconds.
    static func processUserSystem() -> (user: Double, system: Double) {
        var usage = rusage()
        getrusage(rusageSelf, &usage)
        return (
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
            Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        )
    }

    /// CPU time this process has used (user + system), in seconds.
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(rusageSelf, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }
}

/// `getrusage`'s whom: this process, or its children that ended.
#if canImport(Darwin)
let rusageSelf = RUSAGE_SELF
let rusageChildren = RUSAGE_CHILDREN
#else
let rusageSelf = RUSAGE_SELF.rawValue
let rusageChildren = RUSAGE_CHILDREN.rawValue
#endif

/// Facts about this machine and this process, read from /proc.
enum Machine {
    static func procLines(_ path: String) -> [Substring] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n")
    }

    /// A `Key: value` line of a /proc file, the value trimmed.
    static func field(_ path: String, _ key: String) -> String? {
        for line in procLines(path) where line.hasPrefix(key) {
            let rest = line.dropFirst(key.count).drop { $0 == " " || $0 == "\t" }
            guard rest.first == ":" else { continue }
            return rest.dropFirst().trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// A kB figure of /proc/self/status (`VmHWM`, `VmRSS`), in bytes.
    static func statusBytes(_ key: String) -> Int64 {
        guard let value = field("/proc/self/status", key) else { return 0 }
        return (Int64(value.split(separator: " ").first ?? "0") ?? 0) * 1024
    }

    static var cpuModel: String { field("/proc/cpuinfo", "model name") ?? "unknown" }
    static var cores: Int { Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) }
    static var memoryBytes: Int64 {
        guard let value = field("/proc/meminfo", "MemTotal") else { return 0 }
        return (Int64(value.split(separator: " ").first ?? "0") ?? 0) * 1024
    }
    static var loadAverage: String {
        guard let data = FileManager.default.contents(atPath: "/proc/loadavg") else { return "" }
        return String(decoding: data, as: UTF8.self).split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// The path of this executable, for re-running it as a child process.
    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    static func fileSize(_ path: String) -> Int64 {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return 0 }
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }
}

/// Writes progress to standard error (the table and JSON go to standard output and the file).
func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Zero-padded decimal digits, without Foundation's formatter.
func padded(_ value: Int, _ width: Int) -> String {
    let digits = String(value)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}

/// Zero-padded lowercase hexadecimal digits.
func paddedHex(_ value: Int, _ width: Int) -> String {
    let digits = String(value, radix: 16)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}

/// The deterministic generator shared with the tests, so runs pick the same queries.
typealias SplitMix64 = SeededRandom

/// Runs `body` over `items`, cycling, until at least `minimum` calls were made and
/// `seconds` have passed (or `maximum` calls). Returns calls, elapsed seconds and the
/// calling thread's CPU seconds.
func timed<T>(_ items: [T], seconds: Double, minimum: Int = 1, maximum: Int = .max, _ body: (T) -> Void) -> (count: Int, seconds: Double, cpuSeconds: Double) {
    precondition(!items.isEmpty)
    let cpu = Clock.threadCPU()
    let start = Clock.now()
    var count = 0
    var index = 0
    var elapsed = 0.0
    while count < maximum {
        let chunk = min(32, maximum - count)
        for _ in 0..<chunk {
            body(items[index])
            index += 1
            if index == items.count { index = 0 }
        }
        count += chunk
        elapsed = Clock.now() - start
        if elapsed >= seconds && count >= minimum { break }
    }
    return (count, elapsed, Clock.threadCPU() - cpu)
}

/// A failed check of a stage (the smoke run exits non-zero on any).
struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Calls counted over a time: per second of wall-clock time, and per second of the
/// measuring thread's CPU time (which leaves out time the thread sat descheduled on a
/// busy machine).
struct Rate {
    var count: Int
    var seconds: Double
    var cpuSeconds: Double

    init(_ run: (count: Int, seconds: Double, cpuSeconds: Double)) {
        count = run.count
        seconds = run.seconds
        cpuSeconds = run.cpuSeconds
    }

    var perSecond: Double { seconds > 0 ? Double(count) / seconds : 0 }
    var perCPUSecond: Double { cpuSeconds > 0 ? Double(count) / cpuSeconds : 0 }
}

/// Runs `work` in a task and waits for it on this thread (the benchmark's main thread is not
/// one of Swift's cooperative pool, so waiting here blocks no task).
func runBlocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { box.result = .success(try await work()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try box.result!.get()
}

private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
