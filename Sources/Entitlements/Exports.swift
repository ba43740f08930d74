// `import Entitlements` is all an app needs: the answers' types (CustomerView, JSONValue,
// Rules, ...), the verifier's (AppStoreEnvironment, VerificationError, ...) and the
// reports of replay and audit come with it.
@_exported import AppStoreVerification
@_exported import EntitlementCore
@_exported import struct EventStore.AuditFinding
@_exported import struct EventStore.AuditReport
@_exported import struct EventStore.ReplayDiff
@_exported import struct EventStore.ReplayProgress
@_exported import struct EventStore.ReplayReport
@_exported import struct EventStore.MigrationProgress
