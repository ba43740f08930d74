#!/bin/sh
# Copies the `entitlements` binary BINARY alone into a fresh empty folder and runs
# `--version`, `demo`, `ingest` and `query` there: nothing from the build folder (no
# resource bundle, no sources) may be needed. Then, with python3, `serve` answers
# `GET /customers/{id}?at=` with the very bytes `query` prints, for every customer and
# moment of the demo's tour: the server writes its answers by another path, and only
# an optimised build inlines it across modules. Used by .ci/run on the static release
# build and by the tests (DeployTests) on the debug build.
#
#   scripts/check-relocated.sh .build/release/entitlements
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
binary=$1
place=$(mktemp -d)
data=$(mktemp -d)
trap 'rm -rf "$place" "$data"' EXIT
chmod 755 "$place" "$data"
cp "$binary" "$place/entitlements"
# The inputs live elsewhere, as a deployment's would.
cp "$root/Fixtures/demo/config.json" "$root/Fixtures/demo/test-root.pem" "$root/Fixtures/demo/histories.ndjson" \
    "$root/Fixtures/demo/tour.json" "$data/"
cd "$place"
./entitlements --version
./entitlements demo > "$data/demo.txt"
grep -q "^Customer 704100000000000001" "$data/demo.txt"
./entitlements ingest --db "$place/db.sqlite" --config "$data/config.json" "$data/histories.ndjson" > "$data/ingest.ndjson"
grep -q '"result":"appended"' "$data/ingest.ndjson"
./entitlements query --db "$place/db.sqlite" --config "$data/config.json" --app-transaction-id 704100000000000001 \
    --at 2026-11-10T00:00:00Z > "$data/query.json"
grep -q '"appTransactionId":"704100000000000001"' "$data/query.json"
grep -q '"pro":{"active":true' "$data/query.json"
echo "relocated binary: --version, demo, ingest and query work from $place with nothing beside it ($(ls "$place" | tr '\n' ' '))"
if command -v python3 >/dev/null 2>&1; then
    python3 "$root/scripts/compare-serve-with-query.py" "$place/entitlements" "$place/db.sqlite" "$data/config.json" "$data/tour.json"
else
    echo "notice: python3 is not installed: serve's answers are not compared with query's"
fi
