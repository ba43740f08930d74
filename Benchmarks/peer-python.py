"""Times Apple's App Store Server Library (Python) on the benchmark corpus.

For each notification body of the corpus: SignedDataVerifier.verify_and_decode_notification
on its signedPayload, then verify_and_decode_signed_transaction and
verify_and_decode_renewal_info on the nested data.signedTransactionInfo and
data.signedRenewalInfo (the library does not verify nested JWS by itself), which is
what a webhook built on the library must do to trust all three.

Offline, as the engine runs: enable_online_checks=False. The library then checks
certificate validity at the payload's signedDate and verifies the whole chain for
every JWS (its chain cache is only used with online checks on).

Prints one JSON line: {"notifications": N, "seconds": S, "rate": N/S, ...}.
"""
import argparse
import importlib.metadata
import json
import platform
import sys
import time

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--bundle-id", default="com.example.app")
    parser.add_argument("--app-apple-id", type=int, default=1234567890)
    parser.add_argument("--environment", default="Sandbox")
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=20)
    options = parser.parse_args()

    with open(options.root, "rb") as f:
        root = f.read()
    payloads = []
    with open(options.corpus, "r") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            payloads.append(json.loads(line)["signedPayload"])
            if len(payloads) >= options.limit:
                break
    if not payloads:
        print("peer-python: the corpus is empty", file=sys.stderr)
        sys.exit(1)

    verifier = SignedDataVerifier(
        [root], False, Environment(options.environment), options.bundle_id, options.app_apple_id
    )

    def verify(signed_payload):
        notification = verifier.verify_and_decode_notification(signed_payload)
        data = notification.data
        if data is None or data.signedTransactionInfo is None or data.signedRenewalInfo is None:
            raise RuntimeError("notification without nested transaction and renewal info")
        verifier.verify_and_decode_signed_transaction(data.signedTransactionInfo)
        verifier.verify_and_decode_renewal_info(data.signedRenewalInfo)

    for signed_payload in payloads[: options.warmup]:
        verify(signed_payload)

    count = options.limit
    cpu = time.process_time()
    start = time.perf_counter()
    for index in range(count):
        verify(payloads[index % len(payloads)])
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu

    try:
        from cryptography.hazmat.backends.openssl.backend import backend

        openssl = backend.openssl_version_text()
    except Exception:  # noqa: BLE001
        openssl = "unknown"
    print(
        json.dumps(
            {
                "library": "app-store-server-library",
                "version": importlib.metadata.version("app-store-server-library"),
                "cryptography": importlib.metadata.version("cryptography"),
                "pyOpenSSL": importlib.metadata.version("pyOpenSSL"),
                "openssl": openssl,
                "python": platform.python_version(),
                "notifications": count,
                "jws": 3 * count,
                "seconds": seconds,
                "cpuSeconds": cpu,
                "rate": count / seconds,
            }
        )
    )


if __name__ == "__main__":
    main()
