#!/usr/bin/env python3
"""The miss path of `make bench`, daemon binaries back to back (issue 14).

For each daemon binary given (`DAEMON` or `DAEMON,MODULE` to load that
nginx module `.so` with it; the built one otherwise), in turn: a fresh stack (harness.Stack, SQLite)
with 1,000,000 imported links, nginx with an 8 MiB zone, then what
`make bench` runs on it: `miss` (uniform random codes, clicks counted, each
window until its clicks are folded) `--runs` times, then `miss_no_clicks`
(the same codes under `shortlink_clicks off`) `--runs` times. Prints each
run's req/s and server CPU µs per request (nginx workers + daemon).

    python3 bench/missab.py /tmp/old-shortlinkd build/bin/shortlinkd [--rounds 2]
    python3 bench/missab.py /tmp/old-shortlinkd,/tmp/old.so build/bin/shortlinkd [--rounds 2]
"""

import argparse
import os

import harness
from harness import HERE, Stack, counted_miss_runs, measured, write_codes, write_import_csv

BUILT_MODULE = harness.MODULE


def one(binaries, runs, seconds):
    """(miss runs, miss_no_clicks runs) as (req/s, CPU µs per request)."""
    daemon, _, module = binaries.partition(",")
    harness.DAEMON = os.path.abspath(daemon)
    harness.MODULE = os.path.abspath(module) if module else BUILT_MODULE
    out = os.path.join(HERE, "out", "missab")
    stack = Stack(out, False)
    try:
        csv_path = os.path.join(HERE, "out", "bulk-1000000.csv")
        write_import_csv(csv_path, 1_000_000)
        stack.import_csv(csv_path)
        codes = stack.exported_codes()
        counted, uncounted = os.path.join(out, "miss.txt"), os.path.join(out, "miss-nc.txt")
        write_codes(counted, codes)
        write_codes(uncounted, ["nc/" + c for c in codes])
        stack.start_nginx("8m")
        url = f"http://127.0.0.1:{stack.nginx_port}"
        script = os.path.join(HERE, "random_code.lua")
        clicks = stack.metric("shortlinkd_clicks_total")
        miss, _ = counted_miss_runs(stack, url, seconds, 64, script, counted, runs, clicks)
        miss_nc = [measured(stack, url, seconds, 64, script, dict(os.environ, CODES=uncounted)) for _ in range(runs)]
        return [[(round(r["rps"]), round(r["cpu_us_per_req"], 2)) for r in rs] for rs in (miss, miss_nc)]
    finally:
        stack.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+", help="shortlinkd binaries (DAEMON or DAEMON,MODULE), measured in turn")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    args = ap.parse_args()
    for _ in range(args.rounds):
        for daemon in args.binaries:
            miss, miss_nc = one(daemon, args.runs, args.seconds)
            print(f"{daemon}: miss {miss}, miss_no_clicks {miss_nc}", flush=True)


if __name__ == "__main__":
    main()
