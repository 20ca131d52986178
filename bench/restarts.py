#!/usr/bin/env python3
"""How long SQLite's WAL restarts hold writes (issue 14): each daemon gets a
fresh stack whose database first imports --links rows (as `make bench`'s
create_c16 finds it, after the miss scenario's million links), then wrk
creates links through nginx on 16 connections for --seconds, --runs
times, then (with --batches N) times N passes of 100,000 links through
/links/batch, as `make bench` runs its batch after the creates. Prints the
rate, p99, server CPU per create, the batch rates, and from the daemon's
debug log the time each restart of the WAL held the writer (count,
median, 90th percentile, longest). Daemons take turns, so noise falls on
all of them.

    python3 bench/restarts.py --daemon old=/tmp/shortlinkd-old --daemon new=build/bin/shortlinkd [--batches 3]
"""
import argparse
import os
import re
import statistics
import subprocess
import time

import harness

HOLD = re.compile(r"started the WAL over .*held_ms=([0-9.]+)")


def one(name, daemon, links, seconds, runs, batches):
    harness.DAEMON = daemon
    out = os.path.join(harness.HERE, "out", f"restarts-{name}")
    subprocess.run(["rm", "-rf", out], check=True)
    os.environ["RUST_LOG"] = "info,shortlinkd::store::sqlite::threads::checkpoint=debug"
    stack = harness.Stack(out, False)
    try:
        csv_path = os.path.join(out, "import.csv")
        harness.write_import_csv(csv_path, links)
        subprocess.run([daemon, "import", csv_path] + stack.daemon_args, check=True, capture_output=True)
        stack.start_nginx("64m")
        url = f"http://127.0.0.1:{stack.nginx_api_port()}"
        env = dict(os.environ, SHORTLINK_KEY=stack.api_key)
        script = os.path.join(harness.HERE, "create.lua")
        rows = [harness.measured(stack, url, seconds, 16, script, env) for _ in range(runs)]
        rates = []
        for i in range(batches):
            t0 = time.monotonic()
            stack.create_batch(100_000, offset=50_000_000 + i * 1_000_000)
            rates.append(100_000 / (time.monotonic() - t0))
    finally:
        stack.close()
    with open(os.path.join(out, "logs", "daemon.log")) as f:
        holds = sorted(float(m.group(1)) for m in HOLD.finditer(f.read()))
    return rows, holds, rates


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--daemon", action="append", help="NAME=PATH (repeat to compare; default build/bin/shortlinkd)")
    ap.add_argument("--links", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--turns", type=int, default=1, help="stacks per daemon, taking turns")
    ap.add_argument("--batches", type=int, default=0, help="timed passes of 100,000 links by batch after the creates")
    args = ap.parse_args()
    daemons = [d.split("=", 1) for d in (args.daemon or [f"current={harness.DAEMON}"])]
    for turn in range(args.turns):
        for name, path in daemons:
            rows, holds, rates = one(name, path, args.links, args.seconds, args.runs, args.batches)
            for r in rows:
                print(f"{name:12s} turn {turn}  {r['rps']:8.0f}/s  p99 {r['p99_ms']:6.2f} ms  "
                      f"{r['cpu_us_per_req']:6.1f} µs per create", flush=True)
            if rates:
                print(f"{name:12s} turn {turn}  batch " + ", ".join(f"{r:,.0f}" for r in rates) + " links/s", flush=True)
            if holds:
                p90 = holds[int(len(holds) * 0.9)]
                print(f"{name:12s} turn {turn}  {len(holds)} restarts, held median {statistics.median(holds):.2f} ms, "
                      f"p90 {p90:.2f} ms, longest {holds[-1]:.2f} ms", flush=True)
            else:
                print(f"{name:12s} turn {turn}  no restart logged", flush=True)


if __name__ == "__main__":
    main()
