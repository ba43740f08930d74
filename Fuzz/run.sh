#!/usr/bin/env bash
# Builds the libFuzzer target (Fuzz/FuzzTarget.swift) with swiftc — not a SwiftPM target —
# from the sources of JSONAndBase64, EntitlementCore, AppStoreVerification and the input-document layer,
# instrumented with -sanitize=fuzzer,address, and runs it for a fixed number of iterations.
#
#   Fuzz/run.sh [RUNS] [extra libFuzzer flags...]     # default RUNS=200000
#   FUZZ_JOBS=2 Fuzz/run.sh 1000000                   # parallel workers
#
# Seeds: the signed demo histories (Fixtures/demo), the hostile corpus (Tests/reliability/corpus),
# their decoded JWS payloads and headers, in every mode. New interesting inputs accumulate in
# .build-fuzz/corpus (kept between runs); a crash, a property failure or a hang (>10 s) stops the
# run with a non-zero exit and leaves the input in .build-fuzz/crash-* / timeout-*.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200000}
shift || true
out=.build-fuzz
mkdir -p "$out/obj" "$out/corpus" "$out/seeds"

# The fuzzer runtime (libFuzzer) ships with the swift.org toolchain, and -sanitize=fuzzer links it.
# Without it, install the distribution's clang runtime and link its libFuzzer archive by hand
# (FUZZ_RUNTIME=/path/to/libclang_rt.fuzzer-x86_64.a does the same with any archive).
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")
runtime=${FUZZ_RUNTIME:-}
if [ -z "$runtime" ] && ! ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 \
   && ! ls "$toolchain"/lib/swift/clang/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  runtime=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | tail -1 || true)
  if [ -z "$runtime" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "the Swift toolchain has no libFuzzer runtime: installing the distribution's clang runtime"
    apt-get update -qq && { apt-get install -y -qq libclang-rt-14-dev || apt-get install -y -qq libclang-rt-dev; }
    runtime=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | tail -1 || true)
  fi
  [ -n "$runtime" ] || { echo "no libFuzzer runtime found (libclang_rt.fuzzer-x86_64.a); set FUZZ_RUNTIME" >&2; exit 2; }
fi
pkg-config --exists libcrypto || { echo "needs libssl-dev (OpenSSL 3 libcrypto)"; exit 2; }

# The test root of Fixtures/pki, trusted besides Apple's so the demo seeds verify end to end.
{
  echo 'import AppStoreVerification'
  echo 'enum FuzzRoots {'
  echo '    static let extra: [[UInt8]] = [try! loadCertificate(from: Array("""'
  cat Fixtures/pki/root.pem
  echo '""".utf8))]'
  echo '}'
} > "$out/FuzzRoots.swift"

# Compiling with -sanitize=fuzzer only instruments (coverage); linking with it also links libFuzzer
# from the toolchain. With another runtime, the target is linked with -sanitize=address and that archive.
flags=(-swift-version 6 -package-name entitlements -O -g -parse-as-library -enable-testing -sanitize=fuzzer,address)
echo "libFuzzer: ${runtime:-from the Swift toolchain}"
crypto=$(pkg-config --libs-only-L libcrypto)
# Rebuilt when a source is newer than its library.
stale() { [ ! -f "$1" ] || [ -n "$(find "${@:2}" -name '*.swift' -newer "$1" | head -1)" ]; }
if stale "$out/obj/libJSONAndBase64.a" Sources/JSONAndBase64; then
echo "building JSONAndBase64"
swiftc "${flags[@]}" -module-name JSONAndBase64 -emit-module -emit-module-path "$out/obj/JSONAndBase64.swiftmodule" \
  -emit-library -static -o "$out/obj/libJSONAndBase64.a" $(find Sources/JSONAndBase64 -name '*.swift' | sort)
fi
if stale "$out/obj/libEntitlementCore.a" Sources/EntitlementCore Sources/JSONAndBase64; then
echo "building EntitlementCore"
swiftc "${flags[@]}" -module-name EntitlementCore -I "$out/obj" -emit-module -emit-module-path "$out/obj/EntitlementCore.swiftmodule" \
  -emit-library -static -o "$out/obj/libEntitlementCore.a" $(find Sources/EntitlementCore -name '*.swift' | sort)
fi
if stale "$out/obj/libAppStoreVerification.a" Sources/AppStoreVerification Sources/EntitlementCore Sources/JSONAndBase64; then
echo "building AppStoreVerification"
swiftc "${flags[@]}" -module-name AppStoreVerification -I "$out/obj" -I Sources/COpenSSL \
  -emit-module -emit-module-path "$out/obj/AppStoreVerification.swiftmodule" \
  -emit-library -static -o "$out/obj/libAppStoreVerification.a" $(find Sources/AppStoreVerification -name '*.swift' | sort)
fi
echo "building the fuzz target"
sources=(Fuzz/FuzzTarget.swift Sources/Entitlements/InputDocument.swift Sources/Entitlements/V1Notification.swift "$out/FuzzRoots.swift")
libraries=("$out/obj/libAppStoreVerification.a" "$out/obj/libEntitlementCore.a" "$out/obj/libJSONAndBase64.a" $crypto -lcrypto -lm)
if [ -z "$runtime" ]; then
  swiftc "${flags[@]}" -module-name FuzzEntitlements -I "$out/obj" -I Sources/COpenSSL "${sources[@]}" "${libraries[@]}" \
    -o "$out/fuzz-entitlements"
else
  swiftc "${flags[@]}" -module-name FuzzEntitlements -I "$out/obj" -I Sources/COpenSSL "${sources[@]}" \
    -c -wmo -o "$out/obj/FuzzEntitlements.o"
  swiftc -sanitize=address "$out/obj/FuzzEntitlements.o" "${libraries[@]}" \
    -Xlinker --whole-archive -Xlinker "$runtime" -Xlinker --no-whole-archive -lstdc++ -o "$out/fuzz-entitlements"
fi

# Seeds, one file per (mode, sample).
rm -f "$out/seeds"/*
# (Named by content: seed runs in pipelines, so a counter would not survive.)
seed() {
  local tmp="$out/seeds/.tmp"
  { printf "\\x$(printf %02x "$1")"; cat; } > "$tmp"
  local name
  name=$(sha1sum < "$tmp" | cut -c1-16)
  mv "$tmp" "$out/seeds/$1-$name"
}
b64d() { local s=${1//-/+}; s=${s//_//}; while [ $(( ${#s} % 4 )) -ne 0 ]; do s="$s="; done; printf '%s' "$s" | base64 -d 2>/dev/null || true; }
while IFS= read -r line; do
  printf '%s' "$line" | seed 6
  jws=$(printf '%s' "$line" | sed -E 's/^[^"]*"[^"]*" *: *"([^"]*)".*$/\1/')
  printf '%s' "$jws" | seed 2
  printf '%s' "$jws" | seed 4
  header=$(b64d "${jws%%.*}"); rest=${jws#*.}; payload=$(b64d "${rest%%.*}")
  printf '%s' "$payload" | seed 0
  printf '%s' "$payload" | seed 1
  { printf '%s' "$header"; printf '\xff'; printf '%s' "$payload"; printf '\xff'; printf 'AAAA'; } | seed 3
  { printf '%s' "$header"; printf '\xff'; printf '%s' "$payload"; printf '\xff'; printf 'AAAA'; } | seed 5
done < <(head -n 24 Fixtures/demo/histories.ndjson)
for file in Tests/reliability/corpus/*.input; do
  [ -s "$file" ] || continue
  seed 6 < "$file"
done
printf 'eyJhbGciOiJFUzI1NiJ9' | seed 7
echo "$(ls "$out/seeds" | wc -l) seeds"

jobs=${FUZZ_JOBS:-1}
extra=()
[ "$jobs" -gt 1 ] && extra+=(-jobs="$jobs" -workers="$jobs")
echo "fuzzing: $runs runs"
"$out/fuzz-entitlements" "$out/corpus" "$out/seeds" -runs="$runs" -timeout=10 -max_len=16384 -rss_limit_mb=4096 \
  -artifact_prefix="$out/" -print_final_stats=1 "${extra[@]}" "$@"
