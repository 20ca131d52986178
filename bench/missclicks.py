#!/usr/bin/env python3
"""Clicks on the miss path, daemon binaries taking turns (issue 14).

For each daemon binary given, and each round: a fresh stack (harness.Stack,
SQLite), `shortlinkd import` of the bench's 1,000,000-row CSV, an 8 MiB
zone, then `miss` (uniform random codes, clicks counted) and `miss-nc`
(`shortlink_clicks off`) with wrk for --seconds each. Prints per run the
nginx workers' and the daemon's CPU per request during the load, and for
`miss` the daemon's CPU per request from the load's end until every click
of the run is folded (the 30 s fold included), which `make bench` charges
to the run as a whole. With --perf, the daemon's threads are sampled
during the load of each binary's last round (`perf record -e cpu-clock`)
and their samples per request printed: the lookups' reader threads, the
writer, the tokio side; and the daemon's top symbols while it folds the
`miss` run's clicks.

    python3 bench/missclicks.py --bin old=/tmp/shortlinkd-old --bin new=build/bin/shortlinkd [--rounds 2] [--perf]
"""

import argparse
import collections
import csv
import os
import signal
import subprocess
import time

import harness
from harness import HERE, Stack, cpu_seconds, fold_wait, wrk, write_codes, write_import_csv

ROWS = 1_000_000


def thread_samples(data):
    """perf samples per thread group (readers, writer, tokio, other)."""
    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "-n", "--sort", "comm",
                          "-F", "sample,comm"], capture_output=True, text=True, check=True).stdout
    groups = collections.Counter()
    for line in rep.splitlines():
        parts = line.split()
        if len(parts) < 2 or line.startswith("#") or not parts[0].isdigit():
            continue
        comm = parts[1]
        group = ("readers" if comm.startswith("sqlite-reader") else
                 "writer" if comm.startswith("sqlite-writer") else
                 "tokio" if comm.startswith("tokio") else "other")
        groups[group] += int(parts[0])
    return groups


def top_symbols(data, top):
    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "-F", "overhead,comm,sym",
                          "--percent-limit", "0.5"], capture_output=True, text=True, check=True).stdout
    lines = [line for line in rep.splitlines() if line.strip() and not line.startswith("#")]
    return "\n".join(lines[:top])


def run(name, binary, csv_path, seconds, perf, out_root):
    harness.DAEMON = binary
    out = os.path.join(out_root, name)
    subprocess.run(["rm", "-rf", out], check=True)
    stack = Stack(out, False)
    rows = []
    try:
        imp = subprocess.run([binary, "import", csv_path] + stack.daemon_args, capture_output=True, text=True)
        assert imp.returncode == 0, imp.stderr[-2000:]
        export = os.path.join(out, "export.csv")
        subprocess.run([binary, "export", export] + stack.daemon_args, check=True, capture_output=True)
        with open(export, newline="") as f:
            codes = [row["code"] for row in csv.DictReader(f)]
        write_codes(os.path.join(out, "miss.txt"), codes)
        write_codes(os.path.join(out, "miss-nc.txt"), ["nc/" + c for c in codes])
        stack.start_nginx("8m")
        url = f"http://127.0.0.1:{stack.nginx_port}"
        script = os.path.join(HERE, "random_code.lua")
        for scenario in ("miss", "miss-nc"):
            clicks = stack.metric("shortlinkd_clicks_total")
            workers, daemon = stack.workers(), [stack.daemon.pid]
            n0, d0 = cpu_seconds(workers), cpu_seconds(daemon)
            rec = None
            data = os.path.join(out, f"perf-{scenario}.data")
            if perf:
                rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", "-p",
                                        str(stack.daemon.pid), "-o", data],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.3)
            r = wrk(url, seconds, 64, script, dict(os.environ, CODES=os.path.join(out, scenario + ".txt")))
            if rec:
                rec.send_signal(signal.SIGINT)
                rec.wait(60)
            n1, d1 = cpu_seconds(workers), cpu_seconds(daemon)
            n = max(r["requests"], 1)
            if scenario == "miss":
                expected = clicks + r["requests"]
                fold_data = os.path.join(out, "perf-fold.data")
                if perf:
                    rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", "-p",
                                            str(stack.daemon.pid), "-o", fold_data],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if not fold_wait(lambda: stack.metric("shortlinkd_clicks_total"), expected):
                    raise RuntimeError(f"{name}: clicks not folded within 120 s")
                if perf:
                    rec.send_signal(signal.SIGINT)
                    rec.wait(60)
                    print(f"{name}: the fold of the miss run's clicks, top symbols of the daemon:")
                    print(top_symbols(fold_data, 20), flush=True)
                    os.remove(fold_data)
            d2 = cpu_seconds(daemon)
            row = {"bin": name, "scenario": scenario, "req_s": round(r["requests"] / seconds),
                   "nginx_us": round((n1 - n0) * 1e6 / n, 2), "daemon_load_us": round((d1 - d0) * 1e6 / n, 2),
                   "daemon_fold_us": round((d2 - d1) * 1e6 / n, 2)}
            if perf:
                # cpu-clock at 1999 Hz: a sample is ~0.5 ms of CPU.
                row.update({f"{g}_us": round(s * 1e6 / 1999 / n, 2) for g, s in thread_samples(data).items()})
                os.remove(data)
            rows.append(row)
            print(row, flush=True)
    finally:
        stack.close()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="NAME=PATH of a shortlinkd binary")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--perf", action="store_true", help="sample the daemon's threads in the last round")
    args = ap.parse_args()
    bins = [b.split("=", 1) for b in args.bin]
    out_root = os.path.join(HERE, "out", "missclicks")
    os.makedirs(out_root, exist_ok=True)
    csv_path = os.path.join(HERE, "out", f"bulk-{ROWS}.csv")
    if not os.path.exists(csv_path):
        write_import_csv(csv_path, ROWS)
    for i in range(args.rounds):
        for name, path in bins:
            run(name, os.path.abspath(path), csv_path, args.seconds, args.perf and i == args.rounds - 1, out_root)


if __name__ == "__main__":
    main()
