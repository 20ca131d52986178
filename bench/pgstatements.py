#!/usr/bin/env python3
"""Where PostgreSQL's time goes in a daemon's bulk writes (issue 14): one
private cluster (testpg's `pg-cluster`) restarted with `pg_stat_statements`
(planning tracked too), then for each daemon binary in turn, run after run:
a fresh schema, an import of a CSV or batch creates through the running
daemon, and the server time of each statement. Server-side times moved far
less between identical runs than wall-clock rates on a noisy machine.

    python3 bench/pgstatements.py --bin old=/tmp/shortlinkd-old --bin new=target/release/shortlinkd
    python3 bench/pgstatements.py --bin new=target/release/shortlinkd --scenario batch --items 200000
    python3 bench/pgstatements.py --bin new=build/bin/shortlinkd --scenario clicks --items 100000 [--seconds 30]

`miss` is `make bench`'s `pg_miss_no_clicks`: `--items` imported links,
an 8 MiB zone, wrk on uniform random codes with clicks off, so the
statements are the lookups' alone.

`creates` is `make bench`'s `pg_create_c16`: single creates through nginx
for 10 s, twice, 16 connections.

`clicks` is `make bench`'s `pg_clicks_2nodes`: two nodes on the database,
`--items` links made through the batch API, wrk on both nodes at once, and
besides the statements the server CPU per request and how many updates of
`links` and `clicks` were HOT (no index touched).
"""

import argparse
import csv
import glob
import os
import pwd
import subprocess
import time

import harness
import pg
from harness import HERE, Stack, write_import_csv

TOP = 8


def pg_bin():
    """PostgreSQL's programs, found as testpg finds them."""
    return os.environ.get("SHORTLINK_PG_BIN") or sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]


class Statements:
    """A psql session on the cluster, as its superuser."""

    def __init__(self, cluster):
        with open(cluster.database["password_file"]) as f:
            self.env = dict(os.environ, PGPASSWORD=f.read().strip())
        self.url = cluster.database["url"]
        self.psql = os.path.join(pg_bin(), "psql")

    def sql(self, text):
        r = subprocess.run([self.psql, "-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1",
                            self.url, "-c", text], env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"pgstatements: psql {text!r}: {r.stderr}")
        return [line.split("|") for line in r.stdout.splitlines() if line]

    def fresh(self):
        """An empty schema (a new daemon makes its own) and zeroed figures."""
        self.sql("DROP SCHEMA public CASCADE")
        self.sql("CREATE SCHEMA public")
        self.sql("CREATE EXTENSION pg_stat_statements")
        self.sql("SELECT pg_stat_statements_reset()")

    def hot_updates(self):
        """Per table: updates, and how many of them were HOT."""
        rows = self.sql("SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                        "WHERE relname IN ('links', 'clicks') ORDER BY relname")
        return {name: (int(upd), int(hot)) for name, upd, hot in rows}

    def figures(self, width=60):
        total = self.sql("SELECT round(sum(total_exec_time)), round(sum(total_plan_time)) "
                         "FROM pg_stat_statements")[0]
        top = self.sql("SELECT calls, round(total_exec_time), round(total_plan_time), "
                       f"left(regexp_replace(query, '\\s+', ' ', 'g'), {width}) FROM pg_stat_statements "
                       f"ORDER BY total_exec_time + total_plan_time DESC LIMIT {TOP}")
        return {"exec_ms": int(total[0]), "plan_ms": int(total[1]),
                "top": [{"calls": int(c), "exec_ms": int(e), "plan_ms": int(p), "query": q}
                        for c, e, p, q in top]}


def with_statements(cluster):
    """Restarts the cluster with pg_stat_statements loaded."""
    env = dict(line.split("=", 1) for line in open(os.path.join(cluster.state_dir, "pg.env")).read().splitlines()
               if "=" in line)
    data = os.path.join(env["PG_DIR"], "data")
    with open(os.path.join(data, "postgresql.conf"), "a") as f:
        f.write("\nshared_preload_libraries = 'pg_stat_statements'\n"
                "pg_stat_statements.track_planning = on\n")
    cmd = [os.path.join(pg_bin(), "pg_ctl"), "-D", data, "-w", "restart", "-m", "fast",
           "-l", os.path.join(env["PG_DIR"], "server.log")]
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", pwd.getpwuid(os.stat(data).st_uid).pw_name, "--"] + cmd
    subprocess.run(cmd, check=True, capture_output=True, cwd="/")
    # A new postmaster: its CPU and its children's are the server's.
    with open(os.path.join(data, "postmaster.pid")) as f:
        cluster.postmaster = int(f.readline())


def one_run(binary, out, cluster, stmts, scenario, items, csv_path, seconds):
    harness.DAEMON = binary
    stmts.fresh()
    stack = Stack(os.path.join(out, "stack"), smoke=False, database=cluster.database)
    if scenario in ("clicks", "miss", "creates"):
        try:
            if scenario == "clicks":
                return clicks_run(out, cluster, stmts, stack, items, seconds)
            run = {"miss": miss_run, "creates": creates_run}[scenario]
            return run(out, cluster, stmts, stack, items)
        finally:
            stack.close()
    try:
        t0 = time.monotonic()
        if scenario == "import":
            r = subprocess.run([binary, "import", csv_path] + stack.daemon_args, capture_output=True, text=True)
            assert r.returncode == 0, r.stderr[-2000:]
        else:
            stack.create_batch(items, offset=50_000_000)
        rate = items / (time.monotonic() - t0)
    finally:
        stack.close()
    return dict(stmts.figures(), items_per_s=round(rate))


def loaded(cluster, stmts, stack, url, conns, script, env):
    """A warm-up, then the statements and the CPU of two 10 s wrk runs."""
    harness.wrk(url, 3, conns, script, env)
    stmts.sql("SELECT pg_stat_statements_reset()")
    pg0 = harness.cpu_seconds(cluster.pids())
    runs = [harness.measured(stack, url, 10, conns, script, env) for _ in range(2)]
    pg_cpu = harness.cpu_seconds(cluster.pids()) - pg0
    requests = sum(r["requests"] for r in runs)
    return dict(stmts.figures(width=160), items_per_s=round(sum(r["rps"] for r in runs) / len(runs)),
                cpu_us_per_req=[round(r["cpu_us_per_req"], 1) for r in runs],
                pg_us_per_req=round(pg_cpu * 1e6 / requests, 1))


def miss_run(out, cluster, stmts, stack, items):
    """`pg_miss_no_clicks` on a fresh schema: the lookups' statements."""
    csv_path = os.path.join(out, "import.csv")
    r = subprocess.run([harness.DAEMON, "import", csv_path] + stack.daemon_args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    export = os.path.join(out, "export.csv")
    subprocess.run([harness.DAEMON, "export", export] + stack.daemon_args, check=True, capture_output=True)
    with open(export, newline="") as f:
        codes = ["nc/" + row["code"] for row in csv.DictReader(f)]
    os.remove(export)
    path = os.path.join(out, "miss-nc.txt")
    harness.write_codes(path, codes)
    stack.pg_pids = cluster.pids
    stack.start_nginx("8m")
    env = dict(os.environ, CODES=path)
    url = f"http://127.0.0.1:{stack.nginx_port}"
    return loaded(cluster, stmts, stack, url, 64, os.path.join(HERE, "random_code.lua"), env)


def creates_run(out, cluster, stmts, stack, items):
    """`pg_create_c16` on a fresh schema: the statements of single creates."""
    stack.pg_pids = cluster.pids
    stack.start_nginx("64m")
    url = f"http://127.0.0.1:{stack.nginx_api_port()}"
    env = dict(os.environ, SHORTLINK_KEY=stack.api_key)
    script = os.path.join(HERE, "create.lua")
    return loaded(cluster, stmts, stack, url, 16, script, env)


def clicks_run(out, cluster, stmts, node1, items, seconds):
    """`pg_clicks_2nodes` on a fresh schema: the statements of the ingest
    only (the batch creates are reset away), `seconds` per wrk window:
    each window's clicks are folded when it ends, so 30 s (the fold's own
    interval) folds as much at once as a node under that load does."""
    hot = node1.create_batch(items, offset=50_000_000)
    codes = os.path.join(out, "hot.txt")
    harness.write_codes(codes, hot)
    node2 = Stack(os.path.join(out, "stack2"), smoke=False, key=node1.key, database=cluster.database)
    try:
        node1.start_nginx("64m")
        node2.start_nginx("64m")
        stmts.sql("SELECT pg_stat_statements_reset()")
        stmts.sql("SELECT pg_stat_reset()")
        runs = pg.click_ingest([node1, node2], cluster, codes, seconds, 2, 64)
    finally:
        node2.close()
    hot_upd = stmts.hot_updates()
    return dict(stmts.figures(), items_per_s=round(sum(r["rps"] for r in runs) / len(runs)),
                cpu_us_per_req=[round(r["cpu_us_per_req"], 1) for r in runs],
                counted=[round(r["clicks_counted"]) for r in runs],
                requests=[r["requests"] for r in runs], hot_updates=hot_upd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", action="append", required=True, metavar="NAME=PATH",
                    help="a daemon binary to measure (repeat: they take turns)")
    ap.add_argument("--scenario", choices=["import", "batch", "clicks", "miss", "creates"], default="import")
    ap.add_argument("--items", type=int, default=1_000_000, help="CSV rows, or links in batch calls of 10,000")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=10, help="each wrk window of `clicks` (make bench: 10)")
    args = ap.parse_args()
    bins = [(n, os.path.abspath(p)) for n, p in (b.split("=", 1) for b in args.bin)]
    out = os.path.join(HERE, "out", "pgstatements")
    os.makedirs(out, exist_ok=True)
    csv_path = os.path.join(out, "import.csv")
    if args.scenario in ("import", "miss"):
        write_import_csv(csv_path, args.items)
    cluster = pg.Postgres(os.path.join(out, "pg"))
    try:
        with_statements(cluster)
        stmts = Statements(cluster)
        for i in range(args.runs):
            for name, binary in bins:
                r = one_run(binary, out, cluster, stmts, args.scenario, args.items, csv_path, args.seconds)
                print(f"run {i + 1} {name}: {args.scenario} {r['items_per_s']:,}/s, statements "
                      f"{r['exec_ms']:,} ms executing, {r['plan_ms']:,} ms planning", flush=True)
                if "cpu_us_per_req" in r and "hot_updates" not in r:
                    print(f"    CPU per request {r['cpu_us_per_req']} µs, of which PostgreSQL's "
                          f"{r['pg_us_per_req']} µs")
                if "hot_updates" in r:
                    print(f"    CPU per request {r['cpu_us_per_req']} µs, counted {r['counted']} of "
                          f"{r['requests']}, updates (all, HOT) {r['hot_updates']}")
                for t in r["top"]:
                    print(f"    {t['exec_ms']:>8,} ms {t['plan_ms']:>6,} ms plan {t['calls']:>7,} calls  {t['query']}")
    finally:
        cluster.stop()
        if os.path.exists(csv_path):
            os.remove(csv_path)


if __name__ == "__main__":
    main()
