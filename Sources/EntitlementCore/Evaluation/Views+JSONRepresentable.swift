// The views encode to the specification's JSON (`json()`), key for key and value for value.

extension CustomerView: JSONRepresentable {}

extension AccountView: JSONRepresentable {}

extension EntitlementView: JSONRepresentable {}

extension SubscriptionView: JSONRepresentable {}

extension PurchaseView: JSONRepresentable {}
