#!/bin/sh
# Fails when two tracked paths (files or folders) differ only in case: on a
# case-insensitive disk (macOS's default) they would be one, and the package
# would not build there.
#
#   scripts/check-path-case.sh
set -eu
cd "$(dirname "$0")/.."
clashes=$(
  git ls-files | awk '{
    n = split($0, part, "/"); path = ""
    for (i = 1; i <= n; i++) { path = (i == 1 ? part[1] : path "/" part[i]); print path }
  }' | sort -u | sort -f | uniq -di
)
if [ -n "$clashes" ]; then
  echo "paths that differ only in case (one path on a case-insensitive disk):" >&2
  echo "$clashes" >&2
  exit 1
fi
echo "no two tracked paths differ only in case"
