#!/usr/bin/env bash
# The long crash-safety and concurrency run. The test suite runs the same tests small
# and fast; this script runs them at scale:
#
#   Tests/reliability/crash-test.sh [--inputs N] [--kills K] [--seed S] [--writers W] [--race-inputs N] [--release]
#
#   --inputs N       lines of signed App Store input to generate (default 30000; ~10% more events)
#   --kills K        kill -9 rounds during ingest (default 200)
#   --seed S         generator and timing seed (default: random, printed)
#   --writers W      concurrent writer processes in the race test (default 6)
#   --race-inputs N  lines for the race test (default 10000)
#   --replay-kills K kill -9 rounds during replay (default 20)
#   --release        build and run optimized (faster ingest, so more inputs per minute)
#
# Each kill round resends the input from the first line not acknowledged (as a webhook sender
# would), kills the ingest process at a random moment, and checks that every acknowledged event
# is in the log. Then the whole input is ingested again, and the database is compared with a
# reference that ingested the same input without interruption: the same events (none twice),
# the same quarantine (each rejected input once), the same answer for every customer at many
# moments, replay changes nothing, audit passes. Set RELIABILITY_KEEP=1 to keep the databases.
set -euo pipefail
cd "$(dirname "$0")/../.."

inputs=30000 kills=200 seed=$(( (RANDOM << 16) | RANDOM )) writers=6 race=10000 replay_kills=20 config=debug
while [ $# -gt 0 ]; do
  case "$1" in
    --inputs) inputs=$2; shift 2 ;;
    --kills) kills=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --race-inputs) race=$2; shift 2 ;;
    --replay-kills) replay_kills=$2; shift 2 ;;
    --release) config=release; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

scratch=${SCRATCH_PATH:-.build-rel}
flags=(--scratch-path "$scratch")
if [ "$config" = release ]; then
  scratch=${SCRATCH_PATH:-.build-rel-release}
  flags=(--scratch-path "$scratch" -c release -Xswiftc -enable-testing)
fi

echo "crash test: $inputs inputs, $kills kills, $writers writers x $race inputs, seed $seed ($config)"
export RELIABILITY_SEED=$seed RELIABILITY_CRASH_INPUTS=$inputs RELIABILITY_CRASH_KILLS=$kills \
  RELIABILITY_WRITERS=$writers RELIABILITY_RACE_INPUTS=$race RELIABILITY_REPLAY_INPUTS=$(( inputs / 3 )) \
  RELIABILITY_REPLAY_KILLS=$replay_kills RELIABILITY_VERBOSE=${RELIABILITY_VERBOSE:-}
swift build "${flags[@]}" --build-tests
swift test "${flags[@]}" --skip-build \
  --filter 'Reliability.CrashSafety' --filter 'Reliability.ConcurrentWriters.racingWriters'
