internal import COpenSSL

/// OpenSSL's state and the end of the process.
///
/// By default OpenSSL frees its state in an `atexit` handler. A process that exits while
/// another of its threads is inside OpenSSL (a transaction finisher signing its request to
/// Apple, a webhook delivery, a verifying lane) can then crash in that thread, on a lock
/// already freed, and exit with a signal instead of its status. The engine asks OpenSSL to
/// leave its state to the end of the process, which the system reclaims.
public enum OpenSSLAtExit {
    /// Asks OpenSSL not to free its state at exit. Effective when it is the process's first
    /// use of OpenSSL (a program calls it first thing in `main`; ``SignedDataVerifier`` and
    /// the engine's configuration call it too); later calls do nothing. Safe from any thread.
    public static func keepStateUntilTheEnd() {
        _ = kept
    }

    private static let kept: Bool = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
}
