#!/bin/sh
# Fails when an optimised build emits a numbered static object (an array literal's
# storage, symbol ending in Tv0_, Tv1_, ...) of one function in more than one object
# file. Such symbols are weak and named by the literal's place in the function, so
# every module that inlines the function emits its own and the linker keeps one for
# all: when two modules number a function's literals differently, one module's values
# are read under another's names. Inlinable code uses string literals or single
# literals instead. Used by .ci/run after the release build.
#
#   scripts/check-static-objects.sh .build/release
set -eu
build=$1
if ! command -v nm >/dev/null 2>&1; then
    echo "notice: nm (binutils) is not installed: static objects are not checked"
    exit 0
fi
found=$(for object in "$build"/*.build/*.o; do
    nm "$object" 2>/dev/null | awk -v file="$object" '$2 == "V" && $3 ~ /Tv[0-9]+_$/ { print $3, file }'
done | sort | awk '{ files[$1] = files[$1] " " $2; count[$1]++ } END { for (s in count) if (count[s] > 1) print s ":" files[s] }')
if [ -n "$found" ]; then
    echo "numbered static objects emitted by more than one module (an inlinable function with several array literals):" >&2
    echo "$found" >&2
    exit 1
fi
echo "static objects: no numbered one is emitted by more than one module"
