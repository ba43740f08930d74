#!/usr/bin/env python3
"""Which B-trees' pages a run changed, per notification.

    python3 Benchmarks/changed-pages.py DB save          # before the run
    .build/release/entitlements-bench scale ... --db DB --reuse-db --only ingest --further 4000
    python3 Benchmarks/changed-pages.py DB diff 4000     # after it: N notifications

Each time the WAL is checkpointed into the file (sqlite3 on the PATH), and every
16 KiB page of the file hashed; `diff` counts the pages that differ from what
`save` kept (DB.pages.pkl), named by the `dbstat` table of the database after the
run (B-tree, leaf or interior). A page changed by several commits counts once.
"""
import collections
import hashlib
import pickle
import subprocess
import sys

PAGE = 16384


def page_hashes(db):
    subprocess.run(["sqlite3", db, "PRAGMA wal_checkpoint(TRUNCATE);"], check=True, capture_output=True)
    hashes = []
    with open(db, "rb") as f:
        while page := f.read(PAGE):
            hashes.append(hashlib.md5(page).digest())
    return hashes


def main():
    db, mode = sys.argv[1], sys.argv[2]
    hashes = page_hashes(db)
    if mode == "save":
        with open(db + ".pages.pkl", "wb") as f:
            pickle.dump(hashes, f)
        print(f"{len(hashes)} pages kept")
        return
    notifications = int(sys.argv[3])
    with open(db + ".pages.pkl", "rb") as f:
        old = pickle.load(f)
    changed = [i + 1 for i, h in enumerate(hashes) if i >= len(old) or old[i] != h]
    stat = subprocess.run(
        ["sqlite3", db, "SELECT pageno, name, pagetype FROM dbstat"], check=True, capture_output=True, text=True
    ).stdout
    owner = {}
    for line in stat.splitlines():
        number, name, kind = line.split("|")
        owner[int(number)] = (name, kind)
    counts = collections.Counter(owner.get(p, ("(free or overflow)", "")) for p in changed)
    print(f"pages changed: {len(changed)}, {len(changed) / notifications:.2f} per notification")
    for (name, kind), count in counts.most_common():
        print(f"{name:40} {kind:9} {count:7} {count / notifications:7.3f}")


if __name__ == "__main__":
    main()
