#!/usr/bin/env python3
"""Instructions per row of the daemon's bulk writes, under callgrind.

Wall-clock rates and CPU seconds of `bench/bulk.py` move by 10-20 % between
runs on a shared two-core VM; instruction counts repeat to well under 1 %.
For each daemon binary given, on a fresh SQLite stack with the daemon under
`valgrind --tool=callgrind --instr-atstart=no`:

1. `shortlinkd import` of ROWS rows, not counted (the tables and caches
   warm up);
2. `shortlinkd import` of ROWS other rows, counted;
3. BATCH links through POST /api/v1/links/batch in calls of 10,000,
   counted separately.

Prints the daemon's instructions per row for each (all its threads), the
same rows as `make bench`'s import and batch. Instructions are not time: a
B-tree's cache misses cost far more than they count, so this compares
builds; `bench/bulk.py` and `daemon/examples/sqlite_floor.rs` give times.
Under valgrind, sha2 uses its portable code (no SHA extensions), which
inflates the dedupe hash about tenfold in the counts.

Usage: bench/callgrind_bulk.py [--rows 20000] [--batch 20000] [--keep] DAEMON...
With --keep the dumps stay in bench/out/callgrind-bulk-<n>/ for
`callgrind_annotate`.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

import harness
from harness import HERE, Stack, write_import_csv

# Row numbers of the two imports and the batch: never the same URL twice.
WARM, COUNTED, BATCH = 10_000_000, 20_000_000, 30_000_000


def total(dump):
    """The PROGRAM TOTALS of one callgrind dump."""
    out = subprocess.run(["callgrind_annotate", dump], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if "PROGRAM TOTALS" in line:
            return int(line.split()[0].replace(",", ""))
    sys.exit(f"callgrind_bulk: no PROGRAM TOTALS in {dump}")


def control(pid, *args):
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def measure(daemon, n, rows, batch, keep):
    harness.DAEMON = os.path.abspath(daemon)
    out = os.path.join(HERE, "out", f"callgrind-bulk-{n}")
    warm, counted = os.path.join(HERE, "out", "cg-warm.csv"), os.path.join(HERE, "out", "cg-counted.csv")
    write_import_csv(warm, rows, WARM)
    write_import_csv(counted, rows, COUNTED)
    dumps = os.path.join(out, "cg")
    wrap = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={dumps}"]
    stack = Stack(out, smoke=False, wrap=wrap)
    try:
        pid = stack.daemon.pid
        imp = lambda csv: subprocess.run([harness.DAEMON, "import", csv] + stack.daemon_args,
                                         check=True, capture_output=True)
        imp(warm)
        control(pid, "-i", "on")
        imp(counted)
        control(pid, "-i", "off")
        control(pid, "-d")
        result = {"daemon": daemon, "import_instr_per_row": total(f"{dumps}.1") // rows}
        if batch:
            control(pid, "-i", "on")
            stack.create_batch(batch, offset=BATCH)
            control(pid, "-i", "off")
            control(pid, "-d")
            result["batch_instr_per_link"] = total(f"{dumps}.2") // batch
        return result
    finally:
        stack.close()
        if not keep:
            shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000, help="rows per import (one warm, one counted)")
    ap.add_argument("--batch", type=int, default=20_000, help="links through the batch API (0: none)")
    ap.add_argument("--keep", action="store_true", help="keep the dumps")
    ap.add_argument("daemons", nargs="*", default=[harness.DAEMON], help="shortlinkd binaries (default: build/bin)")
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("callgrind_bulk: valgrind is not installed (scripts/deps.sh bench)")
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    for n, daemon in enumerate(args.daemons):
        print(json.dumps(measure(daemon, n, args.rows, args.batch, args.keep)), flush=True)


if __name__ == "__main__":
    main()
