import Entitlements

/// Progress on standard error: done, rate, ETA.
final class ProgressMeter {
    let enabled: Bool
    let start = Engine.now()
    var last: Int64 = 0
    var printed = false

    init(enabled: Bool) { self.enabled = enabled }

    func report(label: String, done: Int64, total: Int64?) {
        guard enabled else { return }
        let now = Engine.now()
        guard now - last >= 500 || (total != nil && done == total) else { return }
        last = now
        let seconds = max(Double(now - start) / 1000, 0.001)
        let rate = Double(done) / seconds
        var text = "\r\(label) \(done)"
        if let total, total > 0 {
            text += "/\(total) events (\(Int(Double(done) * 100 / Double(total)))%)"
            let eta = rate > 0 ? Double(total - done) / rate : 0
            text += ", \(Int(rate)) events/s, ETA \(Int(eta.rounded(.up)))s   "
        } else {
            text += " events, \(Int(rate)) events/s   "
        }
        Output.errorFragment(text)
        printed = true
    }

    func finish() {
        if printed { Output.errorFragment("\n") }
        printed = false
    }

    /// Ends a count whose total was not known in advance: its last figure, then the line's end.
    func finish(label: String, done: Int64) {
        report(label: label, done: done, total: done)
        finish()
    }
}
