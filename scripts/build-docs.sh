#!/bin/sh
# Builds the DocC documentation of the `Entitlements` library into .build/docs.
#
#   scripts/build-docs.sh            # then open .build/docs, or serve it as a static site
#
# Two steps: build the target with symbol graphs, then `docc convert` the catalog
# Sources/Entitlements/Entitlements.docc against them. Only the Entitlements module's
# graph is handed to docc: it holds the types the library re-exports (CustomerView,
# Rules, ...) as its own, and the dependencies' graphs would be documented as
# separate modules.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
graphs="$root/.build/docs-symbol-graphs"
module="$root/.build/docs-symbol-graphs-entitlements"
rm -rf "$graphs" "$module"
mkdir -p "$graphs" "$module"

# A module's symbol graph is written when the module is compiled: one of the
# Entitlements module's files is touched first, so that the module is compiled (and
# its graph written) even when the build is otherwise up to date.
touch Sources/Entitlements/Engine.swift
nice -n 10 swift build --target Entitlements \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs"
cp "$graphs/Entitlements.symbols.json" "$module/"
for extension in "$graphs"/Entitlements@*.symbols.json; do
    [ -e "$extension" ] && cp "$extension" "$module/"
done

# The toolchain's docc: on PATH with a Linux toolchain, through xcrun with Xcode.
if command -v docc >/dev/null 2>&1; then docc=docc; else docc="xcrun docc"; fi
$docc convert Sources/Entitlements/Entitlements.docc \
    --additional-symbol-graph-dir "$module" \
    --fallback-display-name Entitlements \
    --fallback-bundle-identifier org.entitlements.Entitlements \
    --output-path .build/docs
echo "documentation: $root/.build/docs"
