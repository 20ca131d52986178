#!/usr/bin/env python3
"""The cost of counting clicks, daemon binaries back to back (issue 14).

For each daemon binary given (e.g. the previous build and the current one),
starts the stack (harness.Stack, SQLite or with --pg a private PostgreSQL
from pg.py), makes 100,000 hot links, and alternates `hot` (clicks counted)
and `hot_no_clicks` (`shortlink_clicks off`) runs with wrk. A hot run's
window lasts until every one of its clicks is folded into the tables
(`shortlinkd_clicks_total`), so the fold's work, however late it runs, is
in the window that caused it. Prints per binary the medians of: server CPU
per request (nginx workers + daemon [+ PostgreSQL]), the daemon's (and
PostgreSQL's) CPU per click, the daemon's by thread (writer, runtime,
checkpointer) and nginx's, and the click cost (% of server CPU per request
and of req/s, hot vs no clicks).

    python3 bench/clickcost.py /tmp/old-shortlinkd build/bin/shortlinkd [--pg]
"""

import argparse
import os
import statistics
import sys

import harness
from harness import HERE, Stack, cpu_seconds, fold_wait, thread_cpu, thread_cpu_us, warm_zone, wrk, write_codes


def window(stack, url, seconds, codes, script, expected_before=None):
    """One wrk run; for a hot run (expected_before given) the window runs on
    until its clicks are folded. CPU seconds per process group."""
    daemon = [stack.daemon.pid]
    workers = stack.workers()
    pg = stack.pg_pids() if stack.pg_pids else []
    groups = (workers, daemon, pg)
    before = [cpu_seconds(g) for g in groups]
    threads_before = thread_cpu(stack.daemon.pid)
    r = wrk(url, seconds, 64, script, dict(os.environ, CODES=codes))
    folded = True
    if expected_before is not None:
        folded = fold_wait(lambda: stack.metric("shortlinkd_clicks_total"), expected_before + r["requests"])
    after = [cpu_seconds(g) for g in groups]
    n = max(r["requests"], 1)
    threads = thread_cpu_us(threads_before, thread_cpu(stack.daemon.pid), n)
    nginx_us, daemon_us, pg_us = ((a - b) * 1e6 / n for a, b in zip(after, before))
    return {
        "rps": r["rps"],
        "requests": r["requests"],
        "server_us": nginx_us + daemon_us + pg_us,
        "nginx_us": nginx_us,
        "daemon_us": daemon_us,
        "threads": threads,
        "pg_us": pg_us,
        "folded": folded,
    }


def measure(binary, args, pg=None):
    harness.DAEMON = os.path.abspath(binary)
    out = os.path.join(HERE, "out", "clickcost")
    stack = Stack(out, False, database=pg.database if pg else None)
    if pg:
        stack.pg_pids = pg.pids
    try:
        hot = stack.create_batch(args.links)
        codes_hot = os.path.join(out, "hot.txt")
        codes_nc = os.path.join(out, "hot-nc.txt")
        write_codes(codes_hot, hot)
        write_codes(codes_nc, ["nc/" + c for c in hot])
        script = os.path.join(HERE, "random_code.lua")
        url = f"http://127.0.0.1:{stack.nginx_port}"
        stack.start_nginx("64m")
        clicks = warm_zone(stack, url, 64, script, codes_hot)
        fold_wait(lambda: stack.metric("shortlinkd_clicks_total"), clicks)
        hot_runs, nc_runs = [], []
        for _ in range(args.runs):
            clicks = stack.metric("shortlinkd_clicks_total")
            h = window(stack, url, args.seconds, codes_hot, script, clicks)
            hot_runs.append(h)
            nc_runs.append(window(stack, url, args.seconds, codes_nc, script))
            print(f"  {os.path.basename(binary)}: hot {h}, no clicks {nc_runs[-1]}", file=sys.stderr)
    finally:
        stack.close()
    med = lambda runs, k: statistics.median(r[k] for r in runs)  # noqa: E731
    hot_cpu, nc_cpu = med(hot_runs, "server_us"), med(nc_runs, "server_us")
    hot_rps, nc_rps = med(hot_runs, "rps"), med(nc_runs, "rps")
    return {
        "binary": binary,
        "hot_server_us": round(hot_cpu, 2),
        "nc_server_us": round(nc_cpu, 2),
        "daemon_us_per_click": round(med(hot_runs, "daemon_us") - med(nc_runs, "daemon_us"), 2),
        # By daemon thread, and nginx's CPU per request, hot minus no clicks.
        "threads_us_per_click": {t: round(statistics.median(r["threads"][t] for r in hot_runs)
                                          - statistics.median(r["threads"][t] for r in nc_runs), 2)
                                 for t in hot_runs[0]["threads"]},
        "nginx_us_per_click": round(med(hot_runs, "nginx_us") - med(nc_runs, "nginx_us"), 2),
        "pg_us_per_click": round(med(hot_runs, "pg_us") - med(nc_runs, "pg_us"), 2),
        "click_cpu_cost_pct": round((hot_cpu - nc_cpu) / nc_cpu * 100, 1),
        "click_rps_cost_pct": round((nc_rps - hot_rps) / nc_rps * 100, 1),
        "all_folded": all(r["folded"] for r in hot_runs),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+", help="shortlinkd binaries, measured in turn")
    ap.add_argument("--pg", action="store_true", help="on a private PostgreSQL (bench/pg.py)")
    ap.add_argument("--links", type=int, default=100_000)
    # A window's clicks go into the tables with the fold of everything,
    # every 30 s (stats::FOLD_ALL_EVERY), whose cost is per link, not per
    # click. With 20 s windows some windows paid for one fold and some for
    # two, and the daemon's CPU per click read 0.50 to 0.93 us by that
    # alone; with 30 s windows, 0.42 to 0.58 us over six runs.
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    results = []
    for binary in args.binaries:
        if args.pg:
            import pg

            cluster = pg.Postgres(os.path.join(HERE, "out", "clickcost-pg"))
            try:
                results.append(measure(binary, args, cluster))
            finally:
                cluster.stop()
        else:
            results.append(measure(binary, args))
    for r in results:
        print(r)


if __name__ == "__main__":
    main()
