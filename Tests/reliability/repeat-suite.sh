#!/bin/sh
# The suite's determinism, proved: clones this repository (its HEAD) into a fresh
# `mktemp -d` folder (mode 0700: only its owner may enter, as /root is), builds there,
# then runs the whole suite RUNS times in a row (default 5) while two busy loops keep
# both cores of a 2-core machine busy. Stops at the first failing run and prints its
# failures. Logs: $work/run-N.log (the folder is printed).
#
#   Tests/reliability/repeat-suite.sh [RUNS]
set -eu
runs=${1:-5}
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
echo "repeat-suite: cloning $(git -C "$repo" rev-parse --short HEAD) into $work/clone ($(stat -c %a "$work") folder)"
git clone -q "$repo" "$work/clone"
cd "$work/clone"
swift build --build-tests > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
grep -c "warning:" "$work/build.log" | sed 's/^/repeat-suite: compiler warnings in the build: /'

busy() { while :; do :; done; }
busy & first=$!
busy & second=$!
trap 'kill "$first" "$second" 2>/dev/null || true' EXIT INT TERM
echo "repeat-suite: busy loops $first and $second keep both cores busy"

run=1
while [ "$run" -le "$runs" ]; do
    started=$(date +%s)
    if swift test --skip-build > "$work/run-$run.log" 2>&1; then
        echo "repeat-suite: run $run of $runs: $(grep -E 'Test run with' "$work/run-$run.log" | tail -1) ($(($(date +%s) - started)) s)"
    else
        echo "repeat-suite: run $run of $runs FAILED ($(($(date +%s) - started)) s):"
        grep -E "✘|recorded an issue|error:" "$work/run-$run.log" | head -40
        exit 1
    fi
    run=$((run + 1))
done
echo "repeat-suite: $runs of $runs runs green from a clone in $work"
