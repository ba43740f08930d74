#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system calls the adapters make, spelled once for Linux and macOS: socket types and
/// flags that only Linux has (`SOCK_CLOEXEC`, `MSG_NOSIGNAL`), and the calls whose names
/// types of the adapters also use for methods of their own (`send`, `write`, `bind`, ...).
///
/// Sockets made here are closed on `exec`, and a write to a peer that has gone fails
/// with `EPIPE` instead of raising `SIGPIPE`, on both systems.
package enum SystemCalls {
    /// A stream socket's type, for `socket` and `getaddrinfo`'s hints.
    #if canImport(Darwin)
    package static let streamType: Int32 = SOCK_STREAM
    #else
    package static let streamType = Int32(SOCK_STREAM.rawValue)
    #endif

    /// A socket of `family` and `type` (see the type's documentation), or -1 with `errno` set.
    package static func socket(family: Int32, type: Int32 = streamType, protocol: Int32 = 0) -> Int32 {
        #if canImport(Darwin)
        let fd = Darwin.socket(family, type, `protocol`)
        if fd >= 0 {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        return fd
        #else
        return Glibc.socket(family, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
        #endif
    }

    /// `send` without `SIGPIPE` (`MSG_NOSIGNAL` on Linux; macOS sockets made by ``socket(family:type:protocol:)`` carry `SO_NOSIGPIPE`).
    package static func send(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
        return Darwin.send(fd, bytes, count, 0)
        #else
        return Glibc.send(fd, bytes, count, Int32(MSG_NOSIGNAL))
        #endif
    }

    package static func write(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
        return Darwin.write(fd, bytes, count)
        #else
        return Glibc.write(fd, bytes, count)
        #endif
    }

    package static func read(_ fd: Int32, _ bytes: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
        return Darwin.read(fd, bytes, count)
        #else
        return Glibc.read(fd, bytes, count)
        #endif
    }

    /// Sends `signal` to the process `pid`.
    @discardableResult
    package static func kill(_ pid: Int32, _ signal: Int32) -> Int32 {
        #if canImport(Darwin)
        return Darwin.kill(pid, signal)
        #else
        return Glibc.kill(pid, signal)
        #endif
    }

    @discardableResult
    package static func close(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
        return Darwin.close(fd)
        #else
        return Glibc.close(fd)
        #endif
    }

    package static func bind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
        #if canImport(Darwin)
        return Darwin.bind(fd, address, length)
        #else
        return Glibc.bind(fd, address, length)
        #endif
    }

    package static func listen(_ fd: Int32, _ backlog: Int32) -> Int32 {
        #if canImport(Darwin)
        return Darwin.listen(fd, backlog)
        #else
        return Glibc.listen(fd, backlog)
        #endif
    }

    package static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
        #if canImport(Darwin)
        return Darwin.connect(fd, address, length)
        #else
        return Glibc.connect(fd, address, length)
        #endif
    }
}
