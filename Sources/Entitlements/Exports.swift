// `import Entitlements` is all an app needs: the answers' types (CustomerView, JSONValue,
// Rules, the reports of replay and audit, ...) and the verifier's (AppStoreEnvironment,
// VerificationError, ...) come with it. The event store stays an internal import.
@_exported import AppStoreVerification
@_exported import EntitlementCore
