"""The store-bound benchmark scenarios on PostgreSQL, beside the SQLite ones
of the same run: single creates at c1 and c16, batch creates, import, the
miss path and click ingest with two nodes on one database. Every row carries
the ratio to the SQLite figure of the same run.

PostgreSQL is a private cluster started with testpg's `pg-cluster` (initdb
into a temporary directory, as nobody when run as root, a free port, a
password file), stopped at the end whatever happened.
"""

import concurrent.futures
import os
import statistics
import subprocess
import sys
import time

from harness import (HERE, ROOT, Stack, children, counted_miss_runs, cpu_seconds, measured, summarize, warm_zone, wrk,
                     write_codes)

PG_CLUSTER = os.path.join(ROOT, "target/release/pg-cluster")

# Each PostgreSQL scenario and the SQLite one of the same run it is set against.
SQLITE_OF = {
    "pg_import": "import",
    "pg_create_c1": "create_c1",
    "pg_create_c16": "create_c16",
    "pg_miss": "miss",
    "pg_miss_no_clicks": "miss_no_clicks",
    "pg_batch": "batch",
    "pg_batch_short": "batch_short",
    "pg_clicks_2nodes": "hot",
}


class Postgres:
    """A private cluster via `pg-cluster start/stop DIR`."""

    def __init__(self, state_dir):
        if not os.path.exists(PG_CLUSTER):
            sys.exit(f"bench: {PG_CLUSTER} missing: run make pg-cluster")
        self.state_dir = state_dir
        os.makedirs(state_dir, exist_ok=True)
        r = subprocess.run([PG_CLUSTER, "start", state_dir], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"bench: private PostgreSQL did not start:\n{r.stderr[-3000:]}")
        env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        self.database = {"url": env["PG_URL"], "password_file": env["PG_PASSWORD_FILE"]}
        with open(os.path.join(env["PG_DIR"], "data/postmaster.pid")) as f:
            self.postmaster = int(f.readline())

    def pids(self):
        """The postmaster and its children (backends, writers)."""
        return [self.postmaster] + children(self.postmaster)

    def stop(self):
        subprocess.run([PG_CLUSTER, "stop", self.state_dir], check=False)


def ratio(pg, sqlite, key):
    if not sqlite or not sqlite.get(key):
        return None
    return round(pg[key] / sqlite[key], 3)


def with_ratios(res, by_name):
    """Adds the SQLite figures of the same run and the ratios to them."""
    sq = by_name.get(SQLITE_OF[res["scenario"]])
    res["sqlite_scenario"] = SQLITE_OF[res["scenario"]]
    if "rps" in res:
        res["sqlite_rps"] = sq["rps"] if sq else None
        res["ratio_vs_sqlite"] = ratio(res, sq, "rps")
        res["cpu_ratio_vs_sqlite"] = ratio(res, sq, "cpu_us_per_req")
    else:
        res["sqlite_items_per_s"] = sq["items_per_s"] if sq else None
        res["ratio_vs_sqlite"] = ratio(res, sq, "items_per_s")
    return res


def clicks_counted(stacks, code):
    """The clicks the daemons counted so far. On PostgreSQL most clicks
    wait in `click_log` for a fold (every 30 s); a read that shows clicks
    folds the log first, so one stats read per call makes every click
    acknowledged so far count now, not at the next timer. The read is of
    link `code`'s stats: the site's (`/api/v1/stats`) sums the whole
    `clicks` table, about 140 ms of PostgreSQL CPU per call with 100,000
    links clicked, and this runs every 0.2 s inside the measured window."""
    status, body = stacks[0].api("GET", f"/api/v1/links/{code}/stats")
    assert status == 200, f"stats read (to fold the click log) answered {status}: {body[:200]!r}"
    return sum(s.metric("shortlinkd_clicks_total") for s in stacks)


def lookup_timeouts(stack):
    """Lookups nginx gave up on so far (its error log, level warn)."""
    with open(os.path.join(stack.out, "logs/error.log"), errors="replace") as f:
        return sum(1 for line in f if "timed out" in line)


def settled_clicks(stacks, code, quiet_s=3.0, limit_s=60.0):
    """The clicks counted once the count stopped moving for `quiet_s` (the
    edges flush and the daemons count on timers)."""
    t0 = time.monotonic()
    last, since = clicks_counted(stacks, code), time.monotonic()
    while time.monotonic() - since < quiet_s and time.monotonic() - t0 < limit_s:
        time.sleep(0.5)
        now = clicks_counted(stacks, code)
        if now != last:
            last, since = now, time.monotonic()
    return last


def click_ingest(nodes, pg, codes_file, seconds, runs, conns):
    """wrk on both nodes at once (half the connections each), clicks on,
    every hot code in both zones; then waits until both daemons counted
    every request as a click (exactly once: a request wrk did not see
    finish may still be counted, so >=)."""
    script = os.path.join(HERE, "random_code.lua")
    env = dict(os.environ, CODES=codes_file)
    with open(codes_file) as f:
        code = f.readline().strip()
    # Both zones warm at once, every code in each (harness.warm_zone): a
    # uniform warm-up of 3 s left ~16 % of 100,000 codes to miss in the
    # first run, which was always the slow one. The pool's map raises a
    # node's failure here.
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        list(pool.map(lambda n: warm_zone(n, f"http://127.0.0.1:{n.nginx_port}", conns // len(nodes), script,
                                          codes_file), nodes))
    out = []
    for _ in range(runs):
        before = settled_clicks(nodes, code)
        pids = [p for n in nodes for p in n.workers() + [n.daemon.pid]] + pg.pids()
        cpu0 = cpu_seconds(pids)
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            parts = list(pool.map(lambda n: wrk(f"http://127.0.0.1:{n.nginx_port}", seconds, conns // len(nodes),
                                                script, env), nodes))
        requests = sum(p["requests"] for p in parts)
        t0 = time.monotonic()
        counted = clicks_counted(nodes, code) - before
        # What the daemons wrote while the load ran: their ingest rate.
        during = counted
        while counted < requests and time.monotonic() - t0 < 60:
            time.sleep(0.2)
            counted = clicks_counted(nodes, code) - before
        within = time.monotonic() - t0
        # The window ends once the run's clicks are counted: their fold is
        # charged to this run.
        cpu1 = cpu_seconds(pids)
        counted = settled_clicks(nodes, code) - before
        out.append({
            "rps": sum(p["rps"] for p in parts),
            "p50_ms": max(p["p50_ms"] for p in parts),
            "p99_ms": max(p["p99_ms"] for p in parts),
            "requests": requests,
            "errors": sum(p["errors"] for p in parts),
            "wrk_cpu_s": sum(p["wrk_cpu_s"] for p in parts),
            "cpu_us_per_req": (cpu1 - cpu0) * 1e6 / max(requests, 1),
            "clicks_counted": counted,
            "counted_within_s": within,
            "ingest_per_s": during / seconds,
        })
    return out


def run(out_base, smoke, seconds, runs, conns, csv_path, miss_n, sqlite_results):
    """The PostgreSQL scenarios; returns their results, each with its ratio
    to the SQLite figure in `sqlite_results` (same run)."""
    by_name = {r["scenario"]: r for r in sqlite_results}
    pg = Postgres(out_base + "-pg")
    nodes = []
    results = []
    try:
        node1 = Stack(out_base + "-pg-node1", smoke, database=pg.database)
        node1.pg_pids = pg.pids
        nodes.append(node1)

        t0 = time.monotonic()
        node1.import_csv(csv_path)
        import_s = time.monotonic() - t0
        results.append({
            "scenario": "pg_import",
            "description": f"`shortlinkd import` of the same {miss_n:,}-row CSV",
            "items": miss_n, "seconds": round(import_s, 2), "items_per_s": round(miss_n / import_s, 1),
        })
        miss_codes = node1.exported_codes()
        codes_miss = os.path.join(node1.out, "miss.txt")
        write_codes(codes_miss, miss_codes)
        codes_miss_nc = os.path.join(node1.out, "miss-nc.txt")
        write_codes(codes_miss_nc, ["nc/" + c for c in miss_codes])

        # --- single creates through nginx over keep-alive
        node1.start_nginx("64m")
        create_script = os.path.join(HERE, "create.lua")
        api_url = f"http://127.0.0.1:{node1.nginx_api_port()}"
        env = dict(os.environ, SHORTLINK_KEY=node1.api_key)
        for c in (1, 16):
            cr = [measured(node1, api_url, seconds, c, create_script, env) for _ in range(runs)]
            res = summarize(f"pg_create_c{c}", cr, f"single POST /api/v1/links through nginx, {c} connection(s)")
            res["items_per_s"] = res["rps"]
            results.append(res)

        # --- miss: the 8 MiB zone against every imported link
        node1.start_nginx("8m")
        script = os.path.join(HERE, "random_code.lua")
        url = f"http://127.0.0.1:{node1.nginx_port}"
        timeouts0 = lookup_timeouts(node1)
        # Each run is charged the fold of its clicks (`measured`).
        count = lambda: clicks_counted([node1], miss_codes[0])  # noqa: E731
        miss_runs, _ = counted_miss_runs(node1, url, seconds, conns, script, codes_miss, runs, count(), count)
        miss = summarize("pg_miss", miss_runs, f"{len(miss_codes):,} links, 8 MiB zone, uniform random codes")
        miss["lookup_share"] = round(statistics.median(r["lookups"] / max(r["requests"], 1) for r in miss_runs), 3)
        miss["requests"] = sum(r["requests"] for r in miss_runs)
        miss["edge_lookup_timeouts"] = lookup_timeouts(node1) - timeouts0
        results.append(miss)
        timeouts0 = lookup_timeouts(node1)
        nc_runs = [measured(node1, url, seconds, conns, script, dict(os.environ, CODES=codes_miss_nc))
                   for _ in range(runs)]
        nc = summarize("pg_miss_no_clicks", nc_runs, "same, `shortlink_clicks off`: lookups alone")
        nc["requests"] = sum(r["requests"] for r in nc_runs)
        nc["edge_lookup_timeouts"] = lookup_timeouts(node1) - timeouts0
        results.append(nc)

        # --- batch creates; their codes are the hot set of the click ingest
        batch_n = 20_000 if smoke else 100_000
        t0 = time.monotonic()
        hot = node1.create_batch(batch_n, offset=50_000_000)
        bt = time.monotonic() - t0
        results.append({
            "scenario": "pg_batch",
            "description": f"POST /api/v1/links/batch, {batch_n:,} links in calls of 10,000",
            "items": batch_n, "seconds": round(bt, 2), "items_per_s": round(batch_n / bt, 1),
        })
        t0 = time.monotonic()
        node1.create_batch(batch_n, offset=60_000_000, short=True)
        bt = time.monotonic() - t0
        results.append({
            "scenario": "pg_batch_short",
            "description": "the same with `?results=short`",
            "items": batch_n, "seconds": round(bt, 2), "items_per_s": round(batch_n / bt, 1),
        })

        # --- click ingest: a second node on the same database and key
        node2 = Stack(out_base + "-pg-node2", smoke, key=node1.key, database=pg.database)
        nodes.append(node2)
        hot = hot[: (2000 if smoke else 100_000)]
        codes_hot = os.path.join(node1.out, "hot.txt")
        write_codes(codes_hot, hot)
        node1.start_nginx("64m")
        node2.start_nginx("64m")
        ci_runs = click_ingest(nodes, pg, codes_hot, seconds, runs, conns)
        ci = summarize(
            "pg_clicks_2nodes", ci_runs,
            f"{len(hot):,} links, all in both zones, clicks counted; wrk on two nodes at once "
            f"({conns // 2} connections each); against SQLite's one-node `hot`",
        )
        ci["clicks_counted"] = [round(r["clicks_counted"]) for r in ci_runs]
        ci["requests"] = [r["requests"] for r in ci_runs]
        ci["counted_within_s"] = round(max(r["counted_within_s"] for r in ci_runs), 2)
        ci["ingest_per_s"] = round(statistics.median(r["ingest_per_s"] for r in ci_runs), 1)
        results.append(ci)
        for n in nodes:
            with open(os.path.join(n.out, "logs/error.log")) as f:
                assert "exited on signal" not in f.read(), "an nginx worker crashed: see " + n.out
    finally:
        for n in nodes:
            n.close()
        pg.stop()
    if not smoke:  # the big lists go; the logs stay for a post-mortem
        for n in nodes:
            for name in ("export.csv", "miss.txt", "miss-nc.txt"):
                if os.path.exists(os.path.join(n.out, name)):
                    os.remove(os.path.join(n.out, name))
    return [with_ratios(r, by_name) for r in results]


def check(results, smoke):
    """Sanity of the PostgreSQL rows (not of speeds)."""
    names = {r["scenario"] for r in results}
    for required in SQLITE_OF:
        assert required in names, f"scenario {required} missing"
    for r in results:
        assert r["ratio_vs_sqlite"], f"{r['scenario']}: no SQLite figure to compare with"
        if "rps" in r:
            assert r["rps"] > 0 and r["p50_ms"] > 0 and r["p99_ms"] >= r["p50_ms"], r
            # The miss path may see a few lookups exceed nginx's 500 ms
            # timeout on a loaded 2-core machine: counted and shown, not hidden.
            allowed = r["requests"] * 0.001 if "requests" in r and r["scenario"].startswith("pg_miss") else 0
            assert r["errors"] <= max(1, r["rps"] * 0.001, allowed), r
        else:
            assert r["items_per_s"] > 0, r
    ci = next(r for r in results if r["scenario"] == "pg_clicks_2nodes")
    # Never counted twice: a few more than wrk saw answered may be counted
    # (cut off in flight when wrk stopped, at most one per connection).
    slack = 256 * len(ci["requests"])
    assert sum(ci["clicks_counted"]) <= sum(ci["requests"]) + slack, f"clicks counted twice: {ci}"
    if smoke:
        # Seconds of load: the daemons count every click before the check.
        for counted, requests in zip(ci["clicks_counted"], ci["requests"]):
            assert requests <= counted <= requests + 256, f"clicks counted {counted} for {requests} requests: {ci}"
    # A full run measures capacity: past the daemons' ingest rate the edges
    # hold clicks and spool them (counted later); markdown() states it.


def markdown(results, doc, how):
    """The PostgreSQL section of BENCHMARKS.md (`how`: the command that ran)."""
    rows = []
    for r in results:
        if "rps" in r:
            rate = f"{r['rps']:,.0f} req/s"
            sq = f"{r['sqlite_rps']:,.0f} req/s"
            lat = f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['cpu_us_per_req']:.1f}"
            cpu = r["cpu_ratio_vs_sqlite"]
        else:
            rate = f"{r['items_per_s']:,.0f} items/s"
            sq = f"{r['sqlite_items_per_s']:,.0f} items/s"
            lat = " |  |  "
            cpu = ""
        rows.append(f"| {r['scenario']} | {r['description']} | {rate} | {lat} | {sq} ({r['sqlite_scenario']}) | "
                    f"{r['ratio_vs_sqlite']} | {cpu} |")
    ci = next(r for r in results if r["scenario"] == "pg_clicks_2nodes")
    miss = next(r for r in results if r["scenario"] == "pg_miss")
    errors = "; ".join(
        f"{r['scenario']} {r['errors']:,}" + (f" of {r['requests']:,} (nginx logged {r['edge_lookup_timeouts']:,} "
                                               "lookups timed out)" if "edge_lookup_timeouts" in r else "")
        for r in results if r.get("errors"))
    if all(c >= r for c, r in zip(ci["clicks_counted"], ci["requests"])):
        clicks = (f"""every
  request wrk saw answered was counted as a click, once (clicks counted per
  run: {ci['clicks_counted']} for {ci['requests']} answered requests; the few more
  are requests cut off in flight when wrk stopped), all of them within
  {ci['counted_within_s']} s of the load's end.""")
    else:
        clicks = (f"""the daemons
  did NOT keep up: clicks counted per run, once the count stood still (or
  60 s after the load), {ci['clicks_counted']} for {ci['requests']} answered
  requests. The edges held the rest and wrote them to their spools ("clicks
  held too long … written to the spool" in nginx's error log), to be sent
  again later; a later run's count also holds the backlog of the runs
  before it; over all runs {sum(ci['clicks_counted']):,} of
  {sum(ci['requests']):,} were counted by the end, none twice. The req/s
  figure is the edge's; while wrk ran, the daemons wrote
  {ci['ingest_per_s']:,.0f} clicks/s to PostgreSQL (median of the runs),
  sharing the two cores with wrk, four nginx workers and the database, and
  caught up after the load.""")
    return f"""## PostgreSQL

Produced by `{how}` at commit `{doc['commit']}` on {doc['date']}
(raw figures: `bench/{'results.json' if how == 'make bench' else 'results-stores.json'}`).
The store-bound scenarios again with the daemon on a private PostgreSQL
cluster (testpg's `pg-cluster`: initdb into a temporary directory, default
settings but `shared_buffers = 64MB` and `fsync = on`, on the same two cores),
right after the SQLite ones in the same run; each row is set against the
SQLite row named beside it. Client, nginx, daemons and PostgreSQL share the
machine; "server CPU" here is nginx workers, daemons and PostgreSQL's
processes (the postmaster and its children), so it holds the database's
work as SQLite's figure does (SQLite runs inside the daemon).

| scenario | what | rate | p50 ms | p99 ms | server CPU µs/req | SQLite, same run | ratio to SQLite | CPU ratio |
|---|---|---:|---:|---:|---:|---:|---:|---:|
{chr(10).join(rows)}

* Click ingest: two nodes (nginx + shortlinkd each) on one database; {clicks}
* Miss path on PostgreSQL: {miss['lookup_share'] * 100:.1f}% of requests went to the daemon.
* Requests wrk counted as errors (not 2xx/3xx, or socket errors): {errors or "none"}.
"""
