import EntitlementCore
import Testing
import TestSupport

/// ``AnswerTimeline``, which answers the change feed's questions from one list of
/// moments and one walk, gives what asking each question on its own gives: the
/// answer at `now` by evaluation, the next change by evaluating every later
/// moment, each entitlement's effective moment by comparing every earlier moment
/// with the millisecond before, over randomized histories at random moments.
@Suite("Answer timeline: one pass equals one question at a time")
struct AnswerTimelinePropertyTests {
    /// The next change, asked on its own: every candidate moment after `now` evaluated in turn.
    static func referenceNextChange(_ state: CustomerState, moments: [Int64], now: Int64, limit: Int) -> Int64? {
        let current = ReportedAnswer(Evaluation.evaluate(state, rules: testRules, at: now))
        var checked = 0
        for moment in moments where moment > now {
            if ReportedAnswer(Evaluation.evaluate(state, rules: testRules, at: moment)) != current { return moment }
            checked += 1
            if checked >= limit { return moment }
        }
        return nil
    }

    /// One entitlement's effective moment, asked on its own: walking back from `now`,
    /// the first candidate moment whose answer differs from the millisecond before's.
    static func referenceEffectiveAt(_ name: String, _ state: CustomerState, moments: [Int64], now: Int64, limit: Int) -> Int64? {
        func answer(_ at: Int64) -> Int64?? { ReportedAnswer(Evaluation.evaluate(state, rules: testRules, at: at)).active[name] }
        var checked = 0
        for moment in moments.reversed() where moment <= now {
            guard checked < limit else { return nil }
            if moment > Int64.min, answer(moment) != answer(moment - 1) { return moment }
            checked += 1
        }
        return nil
    }

    @Test(arguments: PropertySeeds.seeds(1...16))
    func onePassEqualsEachQuestionOnItsOwn(seed: UInt64) throws {
        let events = RandomHistory.events(seed: seed)
        var rng = SplitMix64(seed: seed &* 7_919 &+ 11)
        var compared = 0
        for state in try reduceAll(events).values {
            let full = AnswerTimeline(state: state, rules: testRules, now: Time.day(5_000)).moments
            for _ in 0..<3 {
                // A random day, or exactly one of the state's moments, or a millisecond either side.
                var now = Time.t0 + rng.int(-30...400) * Time.day
                if !full.isEmpty, rng.chance(0.5) { now = full[rng.index(full.count)] + rng.pick([-1, 0, 0, 1]) }
                let limit = rng.pick([256, 256, 2])
                let timeline = AnswerTimeline(state: state, rules: testRules, now: now)
                #expect(timeline.answer == ReportedAnswer(Evaluation.evaluate(state, rules: testRules, at: now)))
                #expect(
                    timeline.nextChange(limit: limit)
                        == Self.referenceNextChange(state, moments: timeline.moments, now: now, limit: limit),
                    "seed \(seed), \(state.key) at \(now)")
                #expect(
                    ChangeTimeline.nextChange(of: state, rules: testRules, after: now, limit: limit)
                        == timeline.nextChange(limit: limit))
                // Every name the answer has or had earlier, and one it never has.
                var names = Set(timeline.answer.active.keys)
                for moment in timeline.moments.prefix(while: { $0 <= now }) {
                    names.formUnion(timeline.answer(at: moment).active.keys)
                }
                names.insert("never-granted")
                let effective = timeline.effectiveAt(of: names, limit: limit)
                for name in names {
                    let expected = Self.referenceEffectiveAt(name, state, moments: timeline.moments, now: now, limit: limit)
                    #expect(effective[name] == expected, "seed \(seed), \(state.key), \(name) at \(now)")
                    #expect(ChangeTimeline.effectiveAt(of: name, in: state, rules: testRules, now: now, limit: limit) == expected)
                }
                compared += 1
            }
        }
        #expect(compared > 0)
    }
}

/// The change feed's answer worked out from the entitlements alone equals the
/// answer read from the whole view, over randomized histories (subscriptions with
/// grace and billing retry, commitments, Advanced Commerce items, passes,
/// consumables, usage, operators' grants and credits), under rules that grant in
/// grace or billing retry or neither, with and without a rescinded consent that
/// ends access, at random moments and at every candidate moment and a
/// millisecond either side of it.
@Suite("The change feed's answer equals the view's")
struct ReportedAnswerEvaluationTests {
    static let ruleVariants: [Rules] = {
        var variants: [Rules] = [testRules]
        var lenient = testRules
        lenient.billingRetryGrantsAccess = true
        lenient.consentRescindedRevokesAccess = true
        variants.append(lenient)
        var strict = testRules
        strict.gracePeriodGrantsAccess = false
        strict.skus = [:]
        variants.append(strict)
        return variants
    }()

    @Test(arguments: PropertySeeds.seeds(1...12))
    func answerFromEntitlementsEqualsTheViews(seed: UInt64) throws {
        let events = RandomHistory.events(seed: seed &+ 100)
        var rng = SplitMix64(seed: seed &* 104_729 &+ 3)
        var compared = 0
        var active = 0
        for rules in Self.ruleVariants {
            for var state in try reduceAll(events, rules: rules).values {
                let moments = AnswerTimeline(state: state, rules: rules, now: Time.day(5_000)).moments
                if rules.consentRescindedRevokesAccess, !moments.isEmpty, rng.chance(0.5) {
                    state.consentRescindedAt = moments[rng.index(moments.count)] + rng.pick([-1, 0, 1])
                }
                var instants = moments.flatMap { [$0 - 1, $0, $0 + 1] }
                for _ in 0..<8 { instants.append(Time.t0 + rng.int(-30...400) * Time.day) }
                for at in instants {
                    let expected = ReportedAnswer(Evaluation.evaluate(state, rules: rules, at: at))
                    let answer = ReportedAnswer(evaluating: state, rules: rules, at: at)
                    #expect(answer == expected, "seed \(seed), \(state.key) at \(at)")
                    compared += 1
                    if !expected.active.isEmpty { active += 1 }
                }
            }
        }
        // Enough answers with something active that the comparison has teeth.
        #expect(active > compared / 10, "\(active) of \(compared) answers had an active entitlement")
    }
}
