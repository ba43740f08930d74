import EntitlementCore
import Entitlements
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Commands {
    // MARK: input files (ingest, verify)

    /// Why the input `file` was read no further: a line in it never ended (``InputReader/gaveUp``).
    static func gaveUpNotice(_ file: String, limit: Int, command: String) -> String {
        let name = file == "-" ? "standard input" : file
        let bound = limit + InputReader.lookAhead + InputReader.longestSkip
        return "entitlements \(command): \(name): a line ran on for more than \(bound) bytes without ending (the limit is \(limit), maxInputBytes); the line is rejected; stopped reading \(name)"
    }

    /// An input file (or `-`, standard input) opened for reading.
    enum Input {
        /// A file holding one (possibly indented) JSON document, read whole.
        case whole(InputBytes)
        /// NDJSON: one document per line.
        case lines(InputReader)
    }

    /// Every input file exists, is a file (not a folder) and can be read; else a usage
    /// error naming it. `-` is standard input.
    static func checkInputs(_ files: [String], command: String) throws(UsageError) {
        for file in files where file != "-" {
            var info = stat()
            guard stat(file, &info) == 0 else {
                let reason = errno
                if reason == ENOENT || reason == ENOTDIR {
                    throw UsageError(message: "no input file \(file)", command: command)
                }
                throw UsageError(message: "cannot read input file \(file): \(String(cString: strerror(reason)))", command: command)
            }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                throw UsageError(message: "input \(file) is a folder, not a file (give the files in it)", command: command)
            }
            if (info.st_mode & S_IFMT) == S_IFIFO {
                // A named pipe is not opened to be checked: opening it, even without waiting,
                // would let in a writer that waits for its reader, and closing it again would
                // leave that writer writing to a pipe nobody reads (SIGPIPE: its lines lost).
                guard faccessat(AT_FDCWD, file, R_OK, AT_EACCESS) == 0 else {
                    let reason = errno
                    let why = reason == EACCES || reason == EPERM ? "permission denied" : String(cString: strerror(reason))
                    throw UsageError(message: "cannot read input file \(file): \(why)", command: command)
                }
                continue
            }
            let fd = open(file, O_RDONLY | O_NONBLOCK)
            guard fd >= 0 else {
                let reason = errno
                let why = reason == EACCES || reason == EPERM ? "permission denied" : String(cString: strerror(reason))
                throw UsageError(message: "cannot read input file \(file): \(why)", command: command)
            }
            close(fd)
        }
    }

    static func openInput(_ file: String, limit: Int, command: String) throws(UsageError) -> Input {
        if file == "-" { return .lines(InputReader(standardInputWithLimit: limit)) }
        if let whole = wholeDocument(path: file, limit: limit) { return .whole(whole) }
        guard let reader = InputReader(path: file, limit: limit) else {
            Output.error("entitlements \(command): cannot open \(file)")
            throw UsageError(message: "cannot read input file \(file)", command: command)
        }
        return .lines(reader)
    }

    /// The file's content when it is a single JSON document spanning lines;
    /// `nil` when it should be read as NDJSON (one document per line).
    static func wholeDocument(path: String, limit: Int) -> InputBytes? {
        // Larger than one input may be: it can only be NDJSON.
        // Only a regular file is read whole: a device or a pipe may never end.
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) <= limit else { return nil }
        guard var reader = InputReader(path: path, limit: limit) else { return nil }
        defer { reader.close() }
        let all = reader.readAll()
        guard all.size <= limit else { return nil }
        let lines = all.bytes.split(omittingEmptySubsequences: true) { $0 == 0x0A || $0 == 0x0D }
            .filter { !$0.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } }
        if lines.count <= 1 { return nil }
        // A byte order mark before the document is skipped (as InputDocument does).
        let body = all.bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? all.bytes.dropFirst(3) : all.bytes[...]
        guard (try? JSONParser().parse(body)) != nil else { return nil }
        return all
    }
}
