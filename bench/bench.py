#!/usr/bin/env python3
"""shortlink benchmarks: `make bench` (full) and `make bench-smoke` (seconds).

Starts the built nginx with the module and the real daemon in a fresh
prefix on loopback ports, loads links, and drives load with wrk. In the same
run and with the same nginx binary it measures nginx's own ceilings (a plain
`return 302`, and a 100,000-entry `map` with `return 302 $target`) so every
figure is quoted as a ratio of them. Server CPU per request comes from
/proc/PID/stat of the nginx workers and the daemon.

The store-bound scenarios (import, single and batch creates, the miss
path, click ingest) run on SQLite and then on PostgreSQL (pg.py), each
PostgreSQL row with its ratio to the SQLite row of the same run.

Writes bench/results.json and BENCHMARKS.md (full run) or
bench/out/smoke.json (smoke run, which only checks that every scenario ran
and produced sane output). `--stores-only` skips the edge scenarios (the
ceilings, the invalid flood, clicks off, zone density), keeps the store-bound
ones on both stores and rewrites only the PostgreSQL section of
BENCHMARKS.md (raw figures in bench/results-stores.json).
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import pg
from harness import (DAEMON, HERE, MODULE, NGINX, ROOT, TARGET, Stack, counted_miss_runs, fold_wait, measured, summarize,
                     thread_cpu, thread_cpu_us, warm_zone, write_codes, write_import_csv, zone_entries_per_mib)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="seconds-long run that checks the harness works")
    ap.add_argument("--stores-only", action="store_true",
                    help="only the store-bound scenarios, on SQLite and PostgreSQL")
    args = ap.parse_args()
    smoke = args.smoke
    edge = not args.stores_only
    seconds = 1 if smoke else 10
    runs = 1 if smoke else 3
    hot_n = 2000 if smoke else 100_000
    miss_n = 20_000 if smoke else 1_000_000
    conns = 64

    for tool in ("wrk",):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} not found (make deps installs it)")
    for path in (NGINX, MODULE, DAEMON):
        if not os.path.exists(path):
            sys.exit(f"bench: {path} missing: run make build")

    out = os.path.join(HERE, "out", ("smoke" if smoke else "full") + ("" if edge else "-stores"))
    stack = Stack(out, smoke)
    results = []
    try:
        # --- data: hot links through the batch API, the miss set through `shortlinkd import`
        hot = stack.create_batch(hot_n)
        csv_path = os.path.join(out, "import.csv")
        write_import_csv(csv_path, miss_n)
        threads0, t0 = thread_cpu(stack.daemon.pid), time.monotonic()
        stack.import_csv(csv_path)
        import_s = time.monotonic() - t0
        results.append({
            "scenario": "import",
            "description": f"`shortlinkd import` of a {miss_n:,}-row CSV (through the running daemon)",
            "items": miss_n, "seconds": round(import_s, 2), "items_per_s": round(miss_n / import_s, 1),
            "thread_cpu_us": thread_cpu_us(threads0, thread_cpu(stack.daemon.pid), miss_n),
        })
        hot_set = set(hot)
        miss_codes = [c for c in stack.exported_codes() if c not in hot_set]

        codes_hot = os.path.join(out, "hot.txt")
        write_codes(codes_hot, hot)
        # The ceiling goes through the same wrk script with the same paths,
        # so client cost and request shape are the same as for the links.
        codes_ret = os.path.join(out, "return302.txt")
        write_codes(codes_ret, ["r/" + c for c in hot])
        codes_nc = os.path.join(out, "hot-nc.txt")
        write_codes(codes_nc, ["nc/" + c for c in hot])
        codes_map = os.path.join(out, "map.txt")
        # nginx map keys are case-insensitive: keep codes unique when lowercased.
        seen, map_codes = set(), []
        for i, c in enumerate(hot):
            if c.lower() not in seen:
                seen.add(c.lower())
                map_codes.append((i, c))
        map_file = os.path.join(out, "map.conf")
        with open(map_file, "w") as f:
            for i, c in map_codes:
                f.write(f"/m/{c} \"{TARGET.format(i)}\";\n")
        write_codes(codes_map, ["m/" + c for _, c in map_codes])
        invalid = []
        for c in hot:
            last = c[-1]
            repl = "0" if last != "0" else "1"
            invalid.append(c[:-1] + repl)
        codes_invalid = os.path.join(out, "invalid.txt")
        write_codes(codes_invalid, invalid)
        codes_miss = os.path.join(out, "miss.txt")
        write_codes(codes_miss, miss_codes)

        script = os.path.join(HERE, "random_code.lua")
        url = f"http://127.0.0.1:{stack.nginx_port}"

        # --- hot, ceilings, invalid flood, clicks on/off: zone big enough for everything
        stack.start_nginx("64m", map_file)
        # Every hot code in the zone before the first hot run, and the
        # warm-up's clicks folded: every hot run is charged the fold of its
        # own clicks (`measured`'s clicks_before), so no fold lands in
        # another scenario's window.
        clicks = stack.metric("shortlinkd_clicks_total")
        clicks += warm_zone(stack, url, conns, script, codes_hot)
        if not fold_wait(lambda: stack.metric("shortlinkd_clicks_total"), clicks):
            raise RuntimeError("the warm-up's clicks were not folded within 120 s")

        def hot_run():
            nonlocal clicks
            r = measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_hot), clicks)
            clicks = r["clicks_after"]
            return r
        groups = {"return302": [], "map100k": [], "hot": [], "hot_no_clicks": [], "invalid": []}
        lookups_before_invalid = None
        for _ in range(runs):
            if not edge:  # hot alone: the one-node figure the two-node click ingest is set against
                groups["hot"].append(hot_run())
                continue
            groups["return302"].append(measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_ret)))
            groups["map100k"].append(measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_map)))
            groups["hot"].append(hot_run())
            groups["hot_no_clicks"].append(measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_nc)))
            lookups_before_invalid = stack.metric("shortlinkd_ipc_lookups_total")
            groups["invalid"].append(measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_invalid)))
            lookups_after_invalid = stack.metric("shortlinkd_ipc_lookups_total")
        if not edge:
            base = None
            results.append(summarize("hot", groups["hot"], f"{hot_n:,} links, all in the zone, clicks counted"))
        else:
            base = summarize("return302", groups["return302"], "nginx `return 302` in a plain location, same random paths (the ceiling)")
            results.append(base)
            results.append(summarize("map100k", groups["map100k"], "100,000-entry `map` + `return 302 $target`", base))
            hot_res = summarize("hot", groups["hot"], f"{hot_n:,} links, all in the zone, clicks counted", base)
            results.append(hot_res)
            nc = summarize("hot_no_clicks", groups["hot_no_clicks"], "same, `shortlink_clicks off`", base)
            nc["click_cost_pct"] = round((nc["rps"] - hot_res["rps"]) / nc["rps"] * 100, 2)
            nc["click_cpu_cost_pct"] = round((hot_res["cpu_us_per_req"] - nc["cpu_us_per_req"]) / nc["cpu_us_per_req"] * 100, 2)
            results.append(nc)
            inv = summarize("invalid", groups["invalid"], "random strings failing the check character", base,
                            {"daemon_lookups_during_run": lookups_after_invalid - lookups_before_invalid})
            results.append(inv)

            # entries per MiB: links held by the 64m zone after the warm-up
            # (reported by counting HITs in a newest-first pass would need a
            # smaller zone; see the miss scenario's zone below)

            # --- how many ~100-byte links a MiB of zone holds
            zone_kib = 256 if smoke else 1024
            per_mib = zone_entries_per_mib(stack, hot[: (2000 if smoke else 10_000)], zone_kib)
            results.append({
                "scenario": "zone_entries",
                "description": f"links of a {len(TARGET.format(0))}-byte URL held by a {zone_kib} KiB zone, per MiB",
                "items": round(per_mib), "items_per_s": round(per_mib),
                "entries_per_mib": round(per_mib),
            })
        stack.start_nginx("64m")

        # --- creation through nginx over keep-alive
        create_script = os.path.join(HERE, "create.lua")
        api_url = f"http://127.0.0.1:{stack.nginx_api_port()}"
        env = dict(os.environ, SHORTLINK_KEY=stack.api_key)
        for c in (1, 16):
            cr = [measured(stack, api_url, seconds, c, create_script, env) for _ in range(runs)]
            res = summarize(f"create_c{c}", cr, f"single POST /api/v1/links through nginx, {c} connection(s)")
            res["items_per_s"] = res["rps"]
            results.append(res)
        # --- miss: a zone too small for the million links, uniform random codes
        stack.start_nginx("8m")
        miss_runs, clicks = counted_miss_runs(stack, url, seconds, conns, script, codes_miss, runs, clicks)
        miss = summarize("miss", miss_runs, f"{len(miss_codes):,} links, 8 MiB zone, uniform random codes", base)
        miss["lookup_share"] = round(statistics.median(r["lookups"] / max(r["requests"], 1) for r in miss_runs), 3)
        results.append(miss)
        codes_miss_nc = os.path.join(out, "miss-nc.txt")
        write_codes(codes_miss_nc, ["nc/" + c for c in miss_codes])
        miss_nc_runs = [
            measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_miss_nc)) for _ in range(runs)
        ]
        results.append(summarize("miss_no_clicks", miss_nc_runs, "same, `shortlink_clicks off`: lookups alone", base))

        # One pass takes about 4 s, and single passes ranged from 23k to
        # 39k links/s over make bench runs: the median of `runs` passes.
        # The same with `?results=short`: each item answered with its code
        # and short URL, not the whole link (84 bytes an item, not 682).
        batch_n = 20_000 if smoke else 100_000
        for name, short, first, how in [("batch", False, 50_000_000, "whole links in the reply"),
                                        ("batch_short", True, 60_000_000, "`?results=short`")]:
            passes = []
            threads0 = thread_cpu(stack.daemon.pid)
            for i in range(runs):
                t0 = time.monotonic()
                stack.create_batch(batch_n, offset=first + i * 1_000_000, short=short)
                passes.append(time.monotonic() - t0)
            threads = thread_cpu_us(threads0, thread_cpu(stack.daemon.pid), batch_n * runs)
            bt = statistics.median(passes)
            results.append({
                "scenario": name,
                "description": f"POST /api/v1/links/batch, {batch_n:,} links in calls of 10,000, {how} (median of {runs} passes)",
                "items": batch_n, "seconds": round(bt, 2), "items_per_s": round(batch_n / bt, 1),
                "passes_items_per_s": [round(batch_n / p, 1) for p in passes],
                "thread_cpu_us": threads,
            })
    finally:
        stack.close()

    # The same store-bound scenarios on PostgreSQL, set against these.
    pg_results = pg.run(out, smoke, seconds, runs, conns, csv_path, miss_n, results)
    for r in results + pg_results:
        r.pop("raw", None)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    cpu_model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    doc = {
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"cpus": os.cpu_count(), "cpu_model": cpu_model, "kernel": platform.release(),
                    "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
        "settings": {"seconds_per_run": seconds, "runs": runs, "connections": conns, "wrk_threads": 2,
                     "nginx_workers": "auto", "access_log": "off"},
        "scenarios": results,
        "postgres": pg_results,
    }
    if not smoke:  # a failed check keeps the figures of a long run
        with open(os.path.join(HERE, "results.json" if edge else "results-stores.json"), "w") as f:
            json.dump(doc, f, indent=2)
    check(doc, edge)
    pg.check(pg_results, smoke)
    with open(os.path.join(out, "logs/error.log")) as f:
        log = f.read()
    assert "exited on signal" not in log, "an nginx worker crashed: see " + out + "/logs/error.log"
    if smoke:
        os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
        with open(os.path.join(HERE, "out", "smoke.json" if edge else "smoke-stores.json"), "w") as f:
            json.dump(doc, f, indent=2)
        print("bench-smoke: every scenario ran:", ", ".join(r["scenario"] for r in results + pg_results))
    elif not edge:
        with open(os.path.join(HERE, "results-stores.json"), "w") as f:
            json.dump(doc, f, indent=2)
        replace_pg_section(pg.markdown(pg_results, doc, "python3 bench/bench.py --stores-only"))
        print(json.dumps(results + pg_results, indent=2))
    else:
        with open(os.path.join(HERE, "results.json"), "w") as f:
            json.dump(doc, f, indent=2)
        write_markdown(doc)
        print(json.dumps(results, indent=2))


def check(doc, edge=True):
    """Sanity of the output (not of speeds)."""
    names = [r["scenario"] for r in doc["scenarios"]]
    required = ["hot", "miss", "miss_no_clicks", "create_c1", "create_c16", "batch", "batch_short", "import"]
    if edge:
        required += ["return302", "map100k", "hot_no_clicks", "invalid"]
    for name in required:
        assert name in names, f"scenario {name} missing"
    for r in doc["scenarios"]:
        if "rps" in r:
            assert r["rps"] > 0 and r["p50_ms"] > 0 and r["p99_ms"] >= r["p50_ms"], r
            assert r["cpu_us_per_req"] > 0, r
            # wrk counts 404s as errors: the invalid flood is all 404s.
            if r["scenario"] != "invalid":
                assert r["errors"] <= max(1, r["rps"] * 0.001), r
        else:
            assert r["items_per_s"] > 0, r
    if edge:
        inv = next(r for r in doc["scenarios"] if r["scenario"] == "invalid")
        assert inv["daemon_lookups_during_run"] == 0, f"invalid codes reached the daemon: {inv}"


def replace_pg_section(section):
    """Puts `section` (from `## PostgreSQL` on) in place of that section of
    BENCHMARKS.md, or before `## Measured beside it` when there is none yet."""
    path = os.path.join(ROOT, "BENCHMARKS.md")
    with open(path) as f:
        text = f.read()
    start = text.find("\n## PostgreSQL\n")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[: start + 1] + section + (text[end:] if end >= 0 else "")
    else:
        at = text.find("\n## Measured beside it\n")
        assert at >= 0, "BENCHMARKS.md has neither a PostgreSQL nor a Measured beside it section"
        text = text[: at + 1] + section + "\n" + text[at + 1:]
    with open(path, "w") as f:
        f.write(text)


# The commands under "Reproduce" in BENCHMARKS.md.
COMMANDS = """\
```sh
make bench              # builds release binaries, runs every scenario, writes this file (about an hour)
make bench-smoke        # a few seconds of each scenario (part of make test)
python3 bench/bench.py --stores-only   # import, creates, miss, clicks on SQLite and PostgreSQL only: rewrites the PostgreSQL section
python3 bench/profile.py [--pg] [--scenarios hot,hot_nc,...]   # perf profiles of hot, create, import, batch (also hot_nc, miss, miss_nc) by area -> bench/profiles/
python3 bench/callgrind.py [--daemon]  # instructions per request: hot paths and a miss (--daemon: the daemon's too)
python3 bench/clickcost.py OLD NEW [--pg]   # click cost, two daemon binaries back to back
python3 bench/missab.py OLD[,OLD.so] NEW[,NEW.so] [--rounds 2]   # make bench's miss and miss_no_clicks, daemons (and modules) in turn
python3 bench/creates.py / bulk.py / pgbulk.py   # creates, import + batch (SQLite, PostgreSQL), old vs new binary
python3 bench/callgrind_bulk.py OLD NEW        # daemon instructions per imported row and per batch link
python3 bench/pgstatements.py --bin N=PATH ... [--scenario import|batch|clicks|miss|creates] [--seconds 30]   # PostgreSQL's server time per statement (pg_stat_statements)
python3 bench/walgrowth.py [--seconds 12]      # SQLite's file sizes every 2 s under creates that never pause
python3 bench/restarts.py --daemon N=PATH ...   # create_c16 over 1M imported links: p99 and how long WAL restarts hold writes
cargo run --release --example sqlite_floor [ROWS RUNS CHUNK SHAPE]   # SQLite alone on import-shaped rows: the single writer's floor (CHUNK 6: grouped single creates)
python3 bench/fsyncrate.py [--pages N] [--datasync]   # CPU and wall time of one durable write on this disk
cargo run --release --example click_floor [LINKS CLICKS RUNS]   # SQLite alone on hot's clicks: log, aggregate and fold per click (the click cost's floor)
```
"""


def scenario(doc, name):
    return next((r for r in doc["scenarios"] if r["scenario"] == name), None)


def peers_markdown(doc):
    """What every ratio is set against: nginx's own redirects, measured in
    the same run with the same binary."""
    ceiling, table, hot = (scenario(doc, n) for n in ("return302", "map100k", "hot"))

    def fig(r):
        return f"{r['rps']:,.0f} req/s at {r['cpu_us_per_req']:.1f} µs of server CPU per request"

    return f"""## Measured beside it

Every ratio above is against nginx itself, run in the same pass with the
same binary, wrk script and random paths:

* nginx's own `return 302` in a plain location, the ceiling for any
  redirect nginx answers: {fig(ceiling)};
* a 100,000-entry `map` with `return 302 $target`, a redirect table
  kept in nginx's configuration, which needs a reload for every change:
  {fig(table)} ({table['ratio_vs_return302']}× the ceiling's req/s);
* shortlink's hot redirect (100,000 links in the zone, clicks
  counted): {fig(hot)} ({hot['ratio_vs_return302']}× the ceiling's req/s,
  {hot['cpu_ratio_vs_return302']}× its CPU).

No other URL shortener was run on this machine, so none is quoted here.
"""


def write_markdown(doc, bounds_path=None, out_path=None):
    """Writes BENCHMARKS.md from one run's figures (`doc`, as in
    results.json): the tables, what they are set against, how to run them,
    then `bench/BOUNDS.md` (what bounds each figure, written by hand)."""
    rows = []
    for r in doc["scenarios"]:
        if "rps" in r:
            rows.append(
                f"| {r['scenario']} | {r['description']} | {r['rps']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                f"{r['cpu_us_per_req']:.1f} | {r.get('ratio_vs_return302', '')} | {r.get('cpu_ratio_vs_return302', '')} |"
            )
    items = [
        f"| {r['scenario']} | {r['description']} | {r['items_per_s']:,.0f} |"
        for r in doc["scenarios"]
        if "rps" not in r and "entries_per_mib" not in r
    ]
    threads = [
        f"  * {r['scenario']}: " + ", ".join(f"{k} {v}" for k, v in r["thread_cpu_us"].items())
        + (f" (one writer thread: at most {1e6 / r['thread_cpu_us']['writer']:,.0f}/s)" if r["thread_cpu_us"]["writer"] else "")
        for r in doc["scenarios"]
        if "thread_cpu_us" in r
    ]
    zone = next((r for r in doc["scenarios"] if "entries_per_mib" in r), None)
    m = doc["machine"]
    nc = scenario(doc, "hot_no_clicks")
    inv = scenario(doc, "invalid")
    miss = scenario(doc, "miss")
    with open(bounds_path or os.path.join(HERE, "BOUNDS.md")) as f:
        bounds = f.read()
    text = f"""# Benchmarks

<!-- Written by `make bench` (bench/bench.py) from bench/results.json; the
last section is bench/BOUNDS.md. Edit those, not this file. -->

What shortlink does on one small machine, set against nginx's own
redirect [measured beside it](#measured-beside-it) in the same run; how to
[reproduce](#reproduce) it; and [what bounds each
figure](#what-bounds-each-figure).

Produced by `make bench` (`bench/bench.py`) at commit `{doc['commit']}` on {doc['date']}.
Raw figures: `bench/results.json`.

## Results

Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, Linux {m['kernel']}.
Client and server share the machine: wrk (2 threads, {doc['settings']['connections']} connections,
{doc['settings']['seconds_per_run']} s per run) competes with nginx (`worker_processes auto`,
`access_log off`) and the daemon for the same cores, which is why CPU per request
(nginx workers + daemon, from `/proc/PID/stat`, divided by requests served) is the fairer
figure. Each figure is the median of {doc['settings']['runs']} runs; ratios are against
`return 302` measured in the same run with the same nginx binary.

| scenario | what | req/s | p50 ms | p99 ms | server CPU µs/req | req/s vs return 302 | CPU vs return 302 |
|---|---|---:|---:|---:|---:|---:|---:|
{chr(10).join(rows)}

| scenario | what | items/s |
|---|---|---:|
{chr(10).join(items)}

* The daemon's CPU µs per item by thread (all passes; the client's CPU not counted):
{chr(10).join(threads) if threads else "  (not measured)"}
* Click counting costs {nc['click_cost_pct']}% of requests/s and {nc['click_cpu_cost_pct']}% of CPU per request
  (hot vs `shortlink_clicks off`).
* The shared zone holds {zone['entries_per_mib'] if zone else 'n/a'} links per MiB ({zone['description'] if zone else ''}).
* The invalid flood made {inv['daemon_lookups_during_run']:.0f} daemon lookups (from `shortlinkd_ipc_lookups_total`).
* Miss path: {miss['lookup_share'] * 100:.1f}% of requests went to the daemon.

{pg.markdown(doc["postgres"], doc, "make bench")}
{peers_markdown(doc)}
## Reproduce

{COMMANDS}
{bounds}"""
    with open(out_path or os.path.join(ROOT, "BENCHMARKS.md"), "w") as f:
        f.write(text)

if __name__ == "__main__":
    main()
