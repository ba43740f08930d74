#!/usr/bin/env python3
"""Starts `entitlements serve` on a free loopback port and checks that
`GET /customers/{id}?at=MS` answers, byte for byte, what `entitlements query
--app-transaction-id id --at MS` prints, for every customer and moment of a tour
(Fixtures/demo/tour.json). Exit 0 when all agree, 1 with the first difference.

    scripts/compare-serve-with-query.py BINARY DB CONFIG TOUR
"""
import json
import subprocess
import sys
import urllib.parse
import urllib.request


def main() -> int:
    binary, db, config, tour_path = sys.argv[1:5]
    with open(tour_path) as f:
        tour = json.load(f)
    server = subprocess.Popen(
        [binary, "serve", "--db", db, "--config", config, "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        # The first line says where it listens, once it does.
        line = server.stdout.readline()
        if not line:
            print("serve exited before it listened", file=sys.stderr)
            return 1
        address = json.loads(line)["listening"]
        compared = 0
        for customer in tour:
            key = customer["appTransactionId"]
            for moment in customer["moments"]:
                at = str(moment["at"])
                printed = subprocess.run(
                    [binary, "query", "--db", db, "--config", config, "--app-transaction-id", key, "--at", at],
                    check=True, capture_output=True).stdout.rstrip(b"\n")
                url = "http://%s/customers/%s?at=%s" % (address, urllib.parse.quote(key, safe=":"), at)
                with urllib.request.urlopen(url, timeout=30) as response:
                    answered = response.read()
                if answered != printed:
                    print("serve and query differ for %s at %s:\n  serve: %s\n  query: %s"
                          % (key, at, answered.decode(), printed.decode()), file=sys.stderr)
                    return 1
                compared += 1
        print("serve answers what query prints: %d customers' moments compared" % compared)
        return 0
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
