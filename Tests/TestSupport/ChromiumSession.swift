import Foundation
import JSONAndBase64
#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium driven over the DevTools protocol on `--remote-debugging-pipe`
/// (commands in on file descriptor 3, answers out on 4, each message JSON ended by a
/// NUL byte): one page, to run script in, press keys and type, as a person would.
package final class ChromiumSession {
    private let pid: pid_t
    private let toBrowser: Int32
    private let fromBrowser: Int32
    private let profile: URL
    private var nextId: Int64 = 0
    private var buffer: [UInt8] = []
    private var sessionId = ""

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Starts the browser with one blank page of `width` × `height` CSS pixels.
    package init(width: Int = 1280, height: Int = 900) throws {
        guard let executable = Chromium.executable else { throw Failure(description: Chromium.missingNotice) }
        profile = Scenario.temporaryFolder("chromium-session")
        var commands: [Int32] = [0, 0], answers: [Int32] = [0, 0]
        guard pipe(&commands) == 0, pipe(&answers) == 0 else { throw Failure(description: "pipe: errno \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, commands[0], 3)
        posix_spawn_file_actions_adddup2(&actions, answers[1], 4)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = [
            executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--mute-audio", "--force-device-scale-factor=1", "--remote-debugging-pipe",
            "--user-data-dir=\(profile.appendingPathComponent("profile").path)", "--window-size=\(width),\(height)", "about:blank",
        ]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = profile.path
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, nil, &argv, &envp)
        close(commands[0])
        close(answers[1])
        guard spawned == 0 else {
            close(commands[1])
            close(answers[0])
            throw Failure(description: "posix_spawn \(executable): \(spawned)")
        }
        pid = child
        toBrowser = commands[1]
        fromBrowser = answers[0]
        signal(SIGPIPE, SIG_IGN)
        let target = try command("Target.createTarget", ["url": "about:blank"])
        guard case .string(let targetId)? = target["targetId"] else { throw Failure(description: "no targetId in \(target)") }
        let attached = try command("Target.attachToTarget", ["targetId": .string(targetId), "flatten": true])
        guard case .string(let session)? = attached["sessionId"] else { throw Failure(description: "no sessionId in \(attached)") }
        sessionId = session
        _ = try command(
            "Emulation.setDeviceMetricsOverride",
            ["width": .int(Int64(width)), "height": .int(Int64(height)), "deviceScaleFactor": 1, "mobile": false], inPage: true)
    }

    deinit {
        _ = try? send("Browser.close", [:], inPage: false)
        close(toBrowser)
        close(fromBrowser)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(10)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(10_000)
        }
        try? FileManager.default.removeItem(at: profile)
    }

    // MARK: The protocol

    private func send(_ method: String, _ params: JSONValue, inPage: Bool) throws -> Int64 {
        nextId += 1
        var message = JSONObject([("id", .int(nextId)), ("method", .string(method)), ("params", params)])
        if inPage { message["sessionId"] = .string(sessionId) }
        var bytes = JSONWriter.bytes(.object(message))
        bytes.append(0)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(toBrowser, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw Failure(description: "the browser closed its pipe (errno \(errno))") }
            offset += written
        }
        return nextId
    }

    /// Sends a command and waits (at most `timeout` seconds) for its answer's `result`.
    @discardableResult
    package func command(_ method: String, _ params: JSONValue = [:], inPage: Bool = false, timeout: Double = 60) throws -> JSONValue {
        let id = try send(method, params, inPage: inPage)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let message = try nextMessage(deadline: deadline)
            guard case .int(let answered)? = message["id"], answered == id else { continue }
            if let error = message["error"] { throw Failure(description: "\(method): \(JSONWriter.string(error))") }
            return message["result"] ?? .null
        }
    }

    private func nextMessage(deadline: Date) throws -> JSONValue {
        while true {
            if let end = buffer.firstIndex(of: 0) {
                let message = Array(buffer[..<end])
                buffer.removeSubrange(...end)
                return try JSONParser().parse(message)
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw Failure(description: "the browser did not answer in time") }
            var descriptor = pollfd(fd: fromBrowser, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(left, 1) * 1000))
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let count = chunk.withUnsafeMutableBytes { read(fromBrowser, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Failure(description: "the browser closed its pipe") }
            buffer += chunk[0..<count]
        }
    }

    // MARK: What a test does

    /// Opens `url` in the page.
    package func navigate(_ url: String) throws {
        try command("Page.navigate", ["url": .string(url)], inPage: true)
    }

    /// Runs `expression` in the page (a promise is awaited) and gives its value.
    @discardableResult
    package func evaluate(_ expression: String, timeout: Double = 60) throws -> JSONValue {
        let result = try command(
            "Runtime.evaluate", ["expression": .string(expression), "awaitPromise": true, "returnByValue": true], inPage: true, timeout: timeout)
        if let exception = result["exceptionDetails"] { throw Failure(description: "\(expression.prefix(200)): \(JSONWriter.string(exception))") }
        return result["result"]?["value"] ?? .null
    }

    /// Waits until `expression` is true in the page; whether it became true within `timeout` seconds.
    @discardableResult
    package func wait(until expression: String, timeout: Double = 30) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            // While the page loads, the expression may read what is not there yet.
            if case .bool(true)? = try? evaluate("Boolean(\(expression))") { return true }
            usleep(20_000)
        }
        return false
    }

    /// Presses a key (`Tab`, `Enter`, `Escape`, ...) as the keyboard does, with `shift` held when asked.
    package func press(_ key: String, shift: Bool = false) throws {
        let codes: [String: Int64] = ["Tab": 9, "Enter": 13, "Escape": 27, " ": 32, "ArrowDown": 40]
        var params = JSONObject([
            ("key", .string(key)), ("code", .string(key == " " ? "Space" : key)), ("windowsVirtualKeyCode", .int(codes[key] ?? 0)),
            ("modifiers", .int(shift ? 8 : 0)),
        ])
        if key == "Enter" { params["text"] = "\r" }
        params["type"] = "keyDown"
        try command("Input.dispatchKeyEvent", .object(params), inPage: true)
        params["type"] = "keyUp"
        params["text"] = nil
        try command("Input.dispatchKeyEvent", .object(params), inPage: true)
    }

    /// Types `text` into the focused element.
    package func type(_ text: String) throws {
        try command("Input.insertText", ["text": .string(text)], inPage: true)
    }
}
