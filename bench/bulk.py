#!/usr/bin/env python3
"""Bulk writes on SQLite: `shortlinkd import` of an N-row CSV through the
running daemon, then POST /api/v1/links/batch in calls of 10,000, each on a
fresh stack. Prints rows/s and the daemon's CPU µs per row (all its threads,
from /proc/PID/stat; and the writer's, the runtime's and the checkpointer's
apart) per run and the medians.

    python3 bench/bulk.py [--daemon PATH] [--rows 1000000] [--batch 100000] [--runs 3]
                          [--short] [--in-flight 1]

`--short` asks for `?results=short`; `--in-flight N` keeps N batch calls
in flight at once (threads), as a sender that overlaps its calls would.

Run it for two daemon binaries back to back (`--daemon` an old build kept
aside) to compare on the same data: wall-clock rates on a shared machine
move a lot, CPU per row much less."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time

import harness
from harness import HERE, Stack, cpu_seconds, thread_cpu, thread_cpu_us, write_import_csv


def child_cpu():
    t = os.times()
    return t.children_user + t.children_system


def one_run(out, csv_path, rows, batch, short=False, in_flight=1):
    stack = Stack(out, smoke=False)
    try:
        pid = [stack.daemon.pid]
        res = {}
        if rows:
            threads0 = thread_cpu(stack.daemon.pid)
            cpu0, cli0, t0 = cpu_seconds(pid), child_cpu(), time.monotonic()
            imp = subprocess.run([harness.DAEMON, "import", csv_path] + stack.daemon_args,
                                 capture_output=True, text=True)
            secs = time.monotonic() - t0
            assert imp.returncode == 0, imp.stderr[-2000:]
            res["import_rows_s"] = rows / secs
            res["import_cpu_us"] = (cpu_seconds(pid) - cpu0) * 1e6 / rows
            res["import_cli_cpu_us"] = (child_cpu() - cli0) * 1e6 / rows
            for k, v in thread_cpu_us(threads0, thread_cpu(stack.daemon.pid), rows).items():
                res[f"import_{k}_us"] = v
        if batch:
            threads0 = thread_cpu(stack.daemon.pid)
            cpu0, t0 = cpu_seconds(pid), time.monotonic()
            stack.create_batch(batch, offset=50_000_000, short=short, in_flight=in_flight)
            secs = time.monotonic() - t0
            res["batch_links_s"] = batch / secs
            res["batch_cpu_us"] = (cpu_seconds(pid) - cpu0) * 1e6 / batch
            for k, v in thread_cpu_us(threads0, thread_cpu(stack.daemon.pid), batch).items():
                res[f"batch_{k}_us"] = v
        return res
    finally:
        stack.close()
        shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--daemon", default=harness.DAEMON, help="the shortlinkd binary (default: build/bin)")
    ap.add_argument("--rows", type=int, default=1_000_000, help="CSV rows to import (0: no import)")
    ap.add_argument("--batch", type=int, default=100_000, help="links through the batch API (0: none)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--label", default="", help="a name for the runs in the output")
    ap.add_argument("--short", action="store_true", help="batch calls with ?results=short")
    ap.add_argument("--in-flight", type=int, default=1, help="batch calls in flight at once")
    args = ap.parse_args()
    harness.DAEMON = os.path.abspath(args.daemon)
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    csv_path = os.path.join(HERE, "out", f"bulk-{args.rows}.csv")
    if args.rows:
        write_import_csv(csv_path, args.rows)
    runs = []
    for i in range(args.runs):
        r = one_run(os.path.join(HERE, "out", "bulk"), csv_path, args.rows, args.batch, args.short, args.in_flight)
        print(json.dumps({"label": args.label, "run": i + 1, **{k: round(v, 2) for k, v in r.items()}}), flush=True)
        runs.append(r)
    medians = {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]}
    print(json.dumps({"label": args.label, "median_of": len(runs), **medians}), flush=True)


if __name__ == "__main__":
    main()
