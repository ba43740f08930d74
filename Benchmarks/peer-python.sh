#!/usr/bin/env bash
# The peer: Apple's official App Store Server Library for Python (PyPI:
# app-store-server-library), its SignedDataVerifier run over the benchmark's
# corpus (the NDJSON notification bodies entitlements-bench writes).
#
# Installs the library into a throwaway virtual environment (default: a `venv`
# folder beside the corpus), then runs peer-python.py, which prints one JSON
# line with the rate. entitlements-bench runs this itself; to run it by hand:
#
#   Benchmarks/peer-python.sh --corpus bench-out/corpus.ndjson --root bench-out/root.der
#
# Options (all passed on to peer-python.py except --venv):
#   --corpus PATH        NDJSON of {"signedPayload": "..."} bodies
#   --root PATH          the trusted root certificate, DER
#   --bundle-id ID       default com.example.app
#   --app-apple-id N     default 1234567890
#   --environment ENV    default Sandbox
#   --limit N            notifications to time (default 2000; entitlements-bench passes 1000)
#   --venv DIR           where to make the virtual environment
# Environment: APP_STORE_SERVER_LIBRARY_VERSION (default 3.1.2) picks the version.
#
# Exit codes: 0 measured; 3 the peer cannot run here (no python3, no venv, pip
# could not install): entitlements-bench then skips the comparison with a message;
# anything else is a failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${APP_STORE_SERVER_LIBRARY_VERSION:-3.1.2}"
venv=""
corpus=""
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --venv) venv="$2"; shift 2 ;;
        --corpus) corpus="$2"; args+=("$1" "$2"); shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
if [ -z "$venv" ]; then
    venv="$(dirname "${corpus:-bench-out/corpus.ndjson}")/venv"
fi

if ! command -v python3 >/dev/null 2>&1; then
    echo "peer-python: python3 is not installed" >&2
    exit 3
fi
if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv" >&2; then
        echo "peer-python: python3 -m venv failed (on Debian: apt-get install python3-venv)" >&2
        exit 3
    fi
fi
if ! "$venv/bin/python" -c "import appstoreserverlibrary, importlib.metadata as m, sys; sys.exit(m.version('app-store-server-library') != '$version')" 2>/dev/null; then
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "app-store-server-library==$version" >&2; then
        echo "peer-python: pip could not install app-store-server-library==$version" >&2
        exit 3
    fi
fi
exec "$venv/bin/python" "$here/peer-python.py" "${args[@]}"
