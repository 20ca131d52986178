"""PostgreSQL writes, one daemon binary against another (issue 14): import
of a CSV through the running daemon, batch creates, single creates at c1
and c16 on the daemon's API port (no nginx: the edge plays no part in a
create), each on a fresh private cluster (testpg's `pg-cluster`), the
binaries taking turns run after run so both see the same machine load.

Prints the rate and the server CPU per item (daemon + every PostgreSQL
process, from /proc), medians of the runs, and writes the raw runs to
bench/out/pgbulk.json.

    python3 bench/pgbulk.py --bin old=/tmp/shortlinkd-old --bin new=target/release/shortlinkd
    python3 bench/pgbulk.py --bin new=target/release/shortlinkd --rows 200000 --runs 1
"""

import argparse
import json
import os
import statistics
import subprocess
import time

import harness
import pg
from harness import HERE, Stack, write_import_csv, wrk


def cpu_by_pid(pids):
    """utime+stime seconds of each of `pids` still running."""
    out = {}
    for p in pids:
        try:
            out[p] = harness.stat_cpu(f"/proc/{p}/stat")
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


class Server:
    """CPU of the daemon and the cluster's processes between two marks
    (backends started in between count from zero)."""

    def __init__(self, stack, cluster):
        self.pids = lambda: [stack.daemon.pid] + cluster.pids()

    def settle(self, idle=0.05, limit_s=60.0):
        """Waits until the server used under `idle` of a core for a second
        (autovacuum and the checkpointer after a bulk write), at most `limit_s`."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit_s:
            before = cpu_by_pid(self.pids())
            time.sleep(1.0)
            after = cpu_by_pid(self.pids())
            if sum(v - before.get(p, 0.0) for p, v in after.items()) < idle:
                return

    def mark(self):
        self.settle()
        self.t0 = time.monotonic()
        self.cpu0 = cpu_by_pid(self.pids())

    def since(self, items):
        seconds = time.monotonic() - self.t0
        cpu1 = cpu_by_pid(self.pids())
        cpu = sum(v - self.cpu0.get(p, 0.0) for p, v in cpu1.items())
        return {"items": items, "seconds": round(seconds, 2),
                "items_per_s": round(items / seconds, 1), "cpu_us_per_item": round(cpu * 1e6 / items, 1)}


def one_run(name, binary, out, csv_path, rows, batch_n, seconds):
    harness.DAEMON = binary
    cluster = pg.Postgres(os.path.join(out, f"{name}-pg"))
    stack = None
    res = {}
    try:
        stack = Stack(os.path.join(out, name), smoke=False, database=cluster.database)
        server = Server(stack, cluster)

        server.mark()
        imp = subprocess.run([binary, "import", csv_path] + stack.daemon_args, capture_output=True, text=True)
        assert imp.returncode == 0, imp.stderr[-2000:]
        res["import"] = server.since(rows)

        server.mark()
        stack.create_batch(batch_n, offset=50_000_000)
        res["batch"] = server.since(batch_n)

        script = os.path.join(HERE, "create.lua")
        env = dict(os.environ, SHORTLINK_KEY=stack.api_key)
        for c in (1, 16):
            server.mark()
            r = wrk(f"http://127.0.0.1:{stack.api_port}", seconds, c, script, env)
            assert r["errors"] == 0, r["raw"]
            got = server.since(r["requests"])
            got["items_per_s"] = r["rps"]
            got["p50_ms"], got["p99_ms"] = r["p50_ms"], r["p99_ms"]
            res[f"create_c{c}"] = got
    finally:
        if stack:
            stack.close()
        cluster.stop()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", action="append", required=True, metavar="NAME=PATH",
                    help="a daemon binary to measure (repeat: they take turns)")
    ap.add_argument("--rows", type=int, default=1_000_000, help="CSV rows imported")
    ap.add_argument("--batch", type=int, default=100_000, help="links created in calls of 10,000")
    ap.add_argument("--seconds", type=int, default=10, help="wrk seconds per create run")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    bins = [b.split("=", 1) for b in args.bin]
    out = os.path.join(HERE, "out", "pgbulk")
    os.makedirs(out, exist_ok=True)
    csv_path = os.path.join(out, "import.csv")
    write_import_csv(csv_path, args.rows)
    runs = {name: [] for name, _ in bins}
    for i in range(args.runs):
        for name, binary in bins:
            r = one_run(name, os.path.abspath(binary), out, csv_path, args.rows, args.batch, args.seconds)
            runs[name].append(r)
            print(f"run {i + 1} {name}: " + ", ".join(
                f"{k} {v['items_per_s']:,.0f}/s {v['cpu_us_per_item']:.0f} µs" for k, v in r.items()), flush=True)
    with open(os.path.join(out, "pgbulk.json"), "w") as f:
        json.dump({"args": vars(args), "runs": runs}, f, indent=1)
    print(f"\nmedians of {args.runs} run(s); CPU: daemon + PostgreSQL, µs per item")
    print(f"| scenario | {' | '.join(f'{n} items/s | {n} CPU µs' for n, _ in bins)} |")
    print("|---|" + "---:|---:|" * len(bins))
    for scenario in runs[bins[0][0]][0]:
        cells = []
        for name, _ in bins:
            rs = [r[scenario] for r in runs[name]]
            cells.append(f"{statistics.median(r['items_per_s'] for r in rs):,.0f}")
            cells.append(f"{statistics.median(r['cpu_us_per_item'] for r in rs):.1f}")
        print(f"| {scenario} | {' | '.join(cells)} |")
    os.remove(csv_path)


if __name__ == "__main__":
    main()
