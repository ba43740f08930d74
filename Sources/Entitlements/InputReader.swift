internal import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads NDJSON input from a file descriptor as it arrives, one bounded line
/// at a time: a line longer than the limit is kept only up to the limit (and
/// its full size recorded), so hostile input cannot exhaust memory. A line that
/// runs on past the limit plus ``lookAhead`` (`/dev/zero` never ends one) is
/// handed over at once, marked as larger than that (to be rejected), and the
/// rest of it is skipped up to its line end. A line that still has not ended
/// after ``longestSkip`` more bytes is taken never to end: the reader gives the
/// input up (``gaveUp``) and reads no more of it.
///
/// A line ends at LF, CRLF or a lone CR (files written with classic Mac line
/// ends); a UTF-8 byte order mark before a document is the document parser's
/// to skip (``InputDocument``).
package struct InputReader {
    let fd: Int32
    let limit: Int
    let ownsDescriptor: Bool
    var buffer: [UInt8] = []
    var readIndex = 0
    var current: [UInt8] = []
    var currentSize = 0
    var atEnd = false
    /// Lines completed so far, blank ones included: the number of the line being read is this + 1.
    var lineNumber = 0
    /// The rest of a line already handed over as too long is being skipped.
    var skipping = false
    /// Bytes of the line being skipped read so far.
    var skipped = 0
    /// A line ran on past the limit, ``lookAhead`` and ``longestSkip`` without ending:
    /// the input was given up, and ``nextBatch(maxLines:)`` returns `nil` from then on.
    public private(set) var gaveUp = false
    /// The last line ended with CR: an LF right after it is part of that line end.
    var afterCR = false
    var chunk = [UInt8](repeating: 0, count: 1 << 16)

    /// How far past the limit a line is read to learn its size, before it is
    /// handed over as too long without reading further.
    package static let lookAhead = 1 << 20

    /// How much more of a line handed over as too long is skipped, looking for its
    /// end, before the input is given up: a line that runs this far is taken never to
    /// end (`/dev/zero`), not to be followed by more input worth reading. Zeros are
    /// skipped at hundreds of MB/s, so this is a fraction of a second.
    public static let longestSkip = 1 << 28

    /// Reads standard input.
    package init(standardInputWithLimit limit: Int) {
        self.fd = 0
        self.limit = limit
        self.ownsDescriptor = false
        Self.widenPipe(0)
    }

    /// Opens a file. Returns `nil` when it cannot be opened.
    package init?(path: String, limit: Int) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        self.fd = fd
        self.limit = limit
        self.ownsDescriptor = true
        Self.widenPipe(fd)
    }

    /// When `fd` is a pipe, asks for a 1 MiB buffer (Linux's default is 64 KiB, four
    /// App Store notifications): the writer can then run ahead of the reader by a
    /// batch's worth of lines, and a batch holds what arrived while the one before
    /// was verified. Anything else (a file, a terminal, a limit below 1 MiB) is left as it is.
    static func widenPipe(_ fd: Int32) {
        #if os(Linux)
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFIFO else { return }
        _ = fcntl(fd, 1031 /* F_SETPIPE_SZ */, Int32(1 << 20))
        #endif
    }

    /// Closes the file, if this reader opened it.
    package func close() {
        if ownsDescriptor { SystemCalls.close(fd) }
    }

    /// The complete lines available now, up to `maxLines`, waiting only when none
    /// is: at least one line, or `nil` at the end of input (or once it was given
    /// up, ``gaveUp``). Empty lines are skipped.
    /// "Available now" is all that can be read without waiting: a file gives full
    /// batches, a stream what its writer has written so far.
    package mutating func nextBatch(maxLines: Int) -> [InputBytes]? {
        var lines: [InputBytes] = []
        // (Not while the rest of a too-long line is skipped: `/dev/zero` never ends one,
        // and the line already handed over must be acknowledged.)
        while lines.isEmpty || (lines.count < maxLines && !atEnd && !skipping && readableNow()) {
            if !lines.isEmpty {
                // More is there already: read it into this batch rather than commit a small one.
                fill()
                drainLines(into: &lines, maxLines: maxLines)
                continue
            }
            drainLines(into: &lines, maxLines: maxLines)
            if !lines.isEmpty { continue }
            if gaveUp { return nil }
            if atEnd {
                // A last line without its newline, skipped when blank like any other blank line.
                let blank = currentSize == current.count && current.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
                if currentSize > 0 { lineNumber += 1 }
                if currentSize > 0 && !blank && !skipping { lines.append(takeCurrent()) } else { current = []; currentSize = 0 }
                return lines.isEmpty ? nil : lines
            }
            fill()
        }
        return lines
    }

    /// Whether a read would return at once (input waiting, or the end of it).
    private func readableNow() -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) > 0
    }

    /// Reads everything (for a file holding one JSON document): up to the
    /// limit, with the full size recorded.
    package mutating func readAll() -> InputBytes {
        while !atEnd { fill(); consumeAll() }
        consumeAll()
        lineNumber = 1  // one document: document 1
        return takeCurrent()
    }

    private mutating func consumeAll() {
        while readIndex < buffer.count {
            append(buffer[readIndex])
            readIndex += 1
        }
        buffer.removeAll(keepingCapacity: true)
        readIndex = 0
    }

    private mutating func fill() {
        if readIndex > 0 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count <= 0 {
            if count < 0 && errno == EINTR { return }
            atEnd = true
            return
        }
        buffer.append(contentsOf: chunk[0..<count])
    }

    private mutating func append(_ byte: UInt8) {
        if current.count <= limit { current.append(byte) }
        currentSize += 1
    }

    private mutating func takeCurrent(sizeIsLowerBound: Bool = false, number: Int? = nil) -> InputBytes {
        var line = InputBytes(bytes: current, size: currentSize, number: number ?? lineNumber)
        line.sizeIsLowerBound = sizeIsLowerBound
        current = []
        currentSize = 0
        return line
    }

    /// The index of the first LF or CR in `buffer` at or after `from`, or `buffer.count`.
    static func lineEnd(in buffer: [UInt8], from: Int) -> Int {
        buffer.withUnsafeBufferPointer { bytes in
            guard from < bytes.count, let base = bytes.baseAddress else { return bytes.count }
            let count = bytes.count - from
            // LF first (memchr), then a CR before it, if any: CR line ends are rare.
            let lf = memchr(base + from, 0x0A, count).map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) } ?? bytes.count
            let cr = memchr(base + from, 0x0D, lf - from).map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) }
            return cr ?? lf
        }
    }

    private mutating func drainLines(into lines: inout [InputBytes], maxLines: Int) {
        while readIndex < buffer.count && lines.count < maxLines {
            if afterCR {
                afterCR = false
                if buffer[readIndex] == 0x0A {
                    readIndex += 1
                    continue
                }
            }
            // Find the next line end (LF or CR) from readIndex.
            let end = Self.lineEnd(in: buffer, from: readIndex)
            if skipping {
                skipped += end - readIndex
                readIndex = end
                if end == buffer.count {
                    if skipped > Self.longestSkip { gaveUp = true }
                    return
                }
                skipping = false
                skipped = 0
                lineNumber += 1
                afterCR = buffer[end] == 0x0D
                readIndex = end + 1
                continue
            }
            let room = max(0, limit + 1 - current.count)
            let take = min(room, end - readIndex)
            if take > 0 { current.append(contentsOf: buffer[readIndex..<(readIndex + take)]) }
            currentSize += end - readIndex
            if end == buffer.count {
                readIndex = end
                if currentSize > limit + Self.lookAhead {
                    // Far too long to be worth reading to its end: hand it over now (to be
                    // rejected and acknowledged), skip the rest of it.
                    lines.append(takeCurrent(sizeIsLowerBound: true, number: lineNumber + 1))
                    skipping = true
                }
                return
            }
            afterCR = buffer[end] == 0x0D
            readIndex = end + 1
            lineNumber += 1
            if currentSize == 0 || current.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) && currentSize == current.count {
                current = []
                currentSize = 0
                continue
            }
            lines.append(takeCurrent())
        }
    }
}
