extension CustomerState {
    /// Sets the raw JWS of every stored version whose ``RawRef`` is in `raws`.
    ///
    /// Stored states carry references, not raws; after a ``MissingRawJWS`` the
    /// caller loads the named raws from the log and hands them here.
    public mutating func hydrate(_ raws: [RawRef: String]) {
        guard !raws.isEmpty else { return }
        for index in transactions.values.indices {
            if let raw = raws[transactions.values[index].ref] { transactions.values[index].raw = raw }
        }
        for index in renewalInfos.values.indices {
            for version in renewalInfos.values[index].indices {
                if let raw = raws[renewalInfos.values[index][version].ref] {
                    renewalInfos.values[index][version].raw = raw
                }
            }
        }
        if let ref = appTransaction?.ref, let raw = raws[ref] { appTransaction?.raw = raw }
        if let ref = accountToken?.ref, let raw = raws[ref] { accountToken?.raw = raw }
    }

    /// Every reference in the state whose raw JWS is not at hand.
    public var refsMissingRaw: Set<RawRef> {
        var refs = Set<RawRef>()
        for version in transactions.values where version.raw == nil { refs.insert(version.ref) }
        for versions in renewalInfos.values {
            for version in versions where version.raw == nil { refs.insert(version.ref) }
        }
        if let appTransaction, appTransaction.raw == nil { refs.insert(appTransaction.ref) }
        return refs
    }
}

extension Event {
    /// Sets the raw JWS of each signed object of the event whose ``RawRef`` is in `raws`.
    public mutating func hydrate(_ raws: [RawRef: String]) {
        guard !raws.isEmpty else { return }
        switch body {
        case .notification(var notification):
            if let ref = notification.transaction?.ref, let raw = raws[ref] { notification.transaction?.raw = raw }
            if let ref = notification.renewalInfo?.ref, let raw = raws[ref] { notification.renewalInfo?.raw = raw }
            if let ref = notification.appTransaction?.ref, let raw = raws[ref] { notification.appTransaction?.raw = raw }
            body = .notification(notification)
        case .transaction(var transaction):
            if let raw = raws[transaction.ref] { transaction.raw = raw }
            body = .transaction(transaction)
        case .renewalInfo(var renewalInfo):
            if let raw = raws[renewalInfo.ref] { renewalInfo.raw = raw }
            body = .renewalInfo(renewalInfo)
        case .appTransaction(var appTransaction):
            if let raw = raws[appTransaction.ref] { appTransaction.raw = raw }
            body = .appTransaction(appTransaction)
        case .receipt, .usage, .operatorAction:
            break
        }
    }

    /// The references of the event's signed objects.
    public var refs: [RawRef] {
        switch body {
        case .notification(let notification):
            return [notification.transaction?.ref, notification.renewalInfo?.ref, notification.appTransaction?.ref]
                .compactMap { $0 }
        case .transaction(let transaction): return [transaction.ref]
        case .renewalInfo(let renewalInfo): return [renewalInfo.ref]
        case .appTransaction(let appTransaction): return [appTransaction.ref]
        case .receipt, .usage, .operatorAction: return []
        }
    }
}
