#!/usr/bin/env bash
# The whole test suite (or a filter) under AddressSanitizer, with the command line it starts
# instrumented too. LeakSanitizer is on, with suppressions for the toolchain's own leaks only
# (Tests/reliability/lsan.supp): any leak or memory error in the engine fails the run.
#
#   Tests/reliability/asan.sh                      # everything
#   Tests/reliability/asan.sh --filter Reliability
set -euo pipefail
cd "$(dirname "$0")/../.."
scratch=${SCRATCH_PATH:-.build-asan}
swift build --build-tests --scratch-path "$scratch" -Xswiftc -sanitize=address
export LSAN_OPTIONS="suppressions=$PWD/Tests/reliability/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="detect_stack_use_after_return=1:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
swift test --scratch-path "$scratch" -Xswiftc -sanitize=address --skip-build "$@"
