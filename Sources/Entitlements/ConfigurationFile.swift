internal import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading the configuration file, with errors that name the path and say what is wrong
/// (empty path, no such file, a folder, no permission) in plain words.
enum ConfigurationFile {
    /// A configuration is small; anything larger is not one.
    static let limit = 16 << 20

    static func read(path: String) throws(ConfigurationError) -> [UInt8] {
        guard !path.isEmpty else {
            throw ConfigurationError(field: nil, message: "the configuration path is empty: give --config PATH, the JSON configuration file")
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = errno
            if reason == ENOENT || reason == ENOTDIR {
                throw ConfigurationError(field: nil, message: "no configuration file at \(path) (check --config)")
            }
            throw ConfigurationError(field: nil, message: "cannot read the configuration file \(path): \(describe(reason))")
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw ConfigurationError(field: nil, message: "the configuration path \(path) is a folder, not a JSON file")
        }
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            throw ConfigurationError(field: nil, message: "cannot read the configuration file \(path): \(describe(errno))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { SystemCalls.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 {
                throw ConfigurationError(field: nil, message: "cannot read the configuration file \(path): \(describe(errno))")
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit {
                throw ConfigurationError(field: nil, message: "the configuration file \(path) is larger than 16 MiB: not a configuration")
            }
        }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            throw ConfigurationError(field: nil, message: "the configuration file \(path) is empty: it must hold a JSON object")
        }
        return bytes
    }

    static func describe(_ code: Int32) -> String {
        switch code {
        case EACCES, EPERM: return "permission denied"
        default: return String(cString: strerror(code))
        }
    }
}
