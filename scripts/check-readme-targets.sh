#!/bin/sh
# Fails when the README's architecture table and the package's targets disagree:
# every target other than a test target must have one row, naming exactly the
# targets it depends on (as `swift package dump-package` lists them).
#
#   scripts/check-readme-targets.sh
set -eu
cd "$(dirname "$0")/.."
swift package dump-package | python3 -c '
import json, re, sys
package = json.load(sys.stdin)
targets = {}
for target in package["targets"]:
    if target["type"] == "test":
        continue
    names = set()
    for dependency in target.get("dependencies", []):
        kind = next(iter(dependency))
        names.add(dependency[kind][0])
    targets[target["name"]] = names
readme = open("README.md", encoding="utf-8").read()
section = readme.split("## Architecture", 1)[1].split("\n## ", 1)[0]
drawn = {}
for line in section.splitlines():
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    if len(cells) != 3 or not cells[0].startswith("`"):
        continue
    names = re.findall(r"`([^`]+)`", cells[0].split("(")[0])
    depends = set(re.findall(r"`([^`]+)`", cells[2]))
    for name in names:
        if name in drawn:
            sys.exit("README: %s has two rows" % name)
        drawn[name] = depends
problems = []
for name in sorted(set(targets) | set(drawn)):
    if name not in drawn:
        problems.append("%s is a target but has no row in the README" % name)
    elif name not in targets:
        problems.append("%s has a row in the README but is no target" % name)
    elif drawn[name] != targets[name]:
        problems.append("%s depends on %s, the README says %s" % (name, sorted(targets[name]), sorted(drawn[name])))
if problems:
    sys.exit("README architecture table vs Package.swift:\n  " + "\n  ".join(problems))
print("the README draws the %d targets as Package.swift declares them" % len(targets))
'
