#!/usr/bin/env python3
"""Where the server's CPU goes in one scenario: `perf record` (cpu-clock
samples, no hardware counters needed) on the daemon, the nginx workers and
(with --pg) PostgreSQL while the scenario runs, then the samples summed by
area (SQLite, kernel, HTTP, decode, allocator, ...) and the top symbols.
Writes `bench/profiles/<scenario>[-pg].txt`, which the notes in
`bench/NOTES.md` cite (issue 14: a target not met gets a profile naming
its cost).

    python3 bench/profile.py [--scenarios hot,create,import,batch] [--pg] [--seconds 20]

Scenarios, each on a fresh stack:
  hot     100,000 links in the zone, wrk with clicks counted; the window
          runs on until every click is folded (the deferred fold included)
  hot_nc  the same links through `shortlink_clicks off` (not in the
          default list): set against `hot`, what counting adds
  create  single POST /api/v1/links through nginx, 16 connections
  import  `shortlinkd import` of a 1,000,000-row CSV (--rows)
  batch   POST /api/v1/links/batch, 100,000 links in calls of 10,000
  miss    --rows links imported, an 8 MiB zone, uniform random codes with
          clicks counted (as `make bench`'s miss; not in the default list)
  miss_nc the same with `shortlink_clicks off`: the lookups alone
"""

import argparse
import collections
import os
import signal
import subprocess
import time

import pg as pgbench
from harness import HERE, Stack, fold_wait, warm_zone, wrk, write_codes, write_import_csv

# Symbol (or DSO) prefixes to the area they belong to, first match wins.
AREAS = [
    ("sqlite3", "SQLite"),
    ("rusqlite", "SQLite"),
    ("[kernel", "kernel (syscalls: socket, fsync, futex, page faults)"),
    ("mi_", "allocator (mimalloc)"),
    ("_mi_", "allocator (mimalloc)"),
    ("malloc", "allocator (libc)"),
    ("free", "allocator (libc)"),
    ("cfree", "allocator (libc)"),
    ("__libc_", "allocator (libc)"),
    ("postcard", "IPC decode/encode (postcard)"),
    ("hyper", "HTTP (hyper/axum)"),
    ("axum", "HTTP (hyper/axum)"),
    ("http::", "HTTP (hyper/axum)"),
    ("serde_json", "JSON (serde_json)"),
    ("tokio", "tokio runtime"),
    ("csv", "CSV parse"),
    ("sha2", "hashing (SHA-256)"),
    ("hashbrown", "hash maps"),
    ("core::hash", "hash maps"),
    ("std::collections::hash", "hash maps"),
    ("memcpy", "memcpy/memmove"),
    ("__memcpy", "memcpy/memmove"),
    ("__memmove", "memcpy/memmove"),
    ("__memset", "memcpy/memmove"),
    # The module's Rust symbols start with its crate name, so before ngx_.
    ("ngx_http_shortlink", "shortlink code"),
    ("ngx_", "nginx core"),
    ("shortlink", "shortlink code"),
]


# Processes a whole-machine recording also catches: not the server's.
NOT_SERVER = {"wrk", "perf", "python3", "swapper", "sshd", "bash", "sleep"}


def area(comm, dso, sym):
    if comm.startswith("postgres") or dso.startswith("postgres"):
        return "PostgreSQL"
    for prefix, name in AREAS:
        if sym.startswith(prefix):
            return name
    # SQLite is compiled into shortlinkd, and its static functions
    # (pcache1Fetch, balance_nonroot, walFindFrame, ...) have no sqlite3
    # prefix: a C symbol of the daemon's own file is SQLite's (it links no
    # other C code but mimalloc, matched above), not ours.
    if dso.startswith("shortlinkd") and "::" not in sym and not sym.startswith(("0x", "[", "<")):
        return "SQLite"
    for prefix, name in AREAS:
        if dso.startswith(prefix):
            return name
    if "shortlink" in dso:
        return "shortlink code (inlined std/crates)"
    return f"other ({dso})"


def demangle_key(sym):
    # rustc v0 / legacy symbols arrive demangled from perf: strip the hash.
    if "::h" in sym and len(sym.rsplit("::h", 1)[1]) == 16:
        sym = sym.rsplit("::h", 1)[0]
    return sym.lstrip("<")


def record(pids, data, work, call_graph=False):
    """Runs `work()` under `perf record` of `pids` (None: the whole machine,
    for PostgreSQL, whose backends start after the recording does; the
    report leaves out the load generator and the tools); returns work's
    result."""
    target = ["-a"] if pids is None else ["-p", ",".join(map(str, pids))]
    perf = subprocess.Popen(
        ["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", *(["--call-graph", "dwarf,32768"] if call_graph else []), *target, "-o", data],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)
    try:
        return work()
    finally:
        perf.send_signal(signal.SIGINT)
        perf.wait(60)


def report(data, title, out_path, top):
    rep = subprocess.run(
        ["perf", "report", "-i", data, "--stdio", "--no-children", "-F", "overhead,comm,dso,sym",
         "--percent-limit", "0.01", "-t", "\t"],
        capture_output=True, text=True, check=True).stdout
    rows = []
    for line in rep.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) < 4 or not parts[0].endswith("%"):
            continue
        pct = float(parts[0].rstrip("%"))
        comm, dso, sym = parts[1], parts[2], parts[3]
        if comm in NOT_SERVER:
            continue
        sym = sym.split("] ", 1)[-1] if sym.startswith("[") else sym
        sym = demangle_key(sym)
        sym_area = area(comm, "[kernel" if dso.startswith("[kernel") else dso, sym)
        rows.append((pct, comm, dso, sym, sym_area))
    # As shares of the server's samples alone.
    total = sum(r[0] for r in rows) or 1.0
    rows = [(pct * 100 / total, *rest) for pct, *rest in rows]
    by_area = collections.Counter()
    by_comm = collections.Counter()
    for pct, comm, _, _, a in rows:
        by_area[a] += pct
        by_comm[comm] += pct
    lines = [f"# {title}", "", "Share of the sampled server CPU by process:", ""]
    lines += [f"  {v:6.2f}%  {k}" for k, v in by_comm.most_common()]
    lines += ["", "By area:", ""]
    lines += [f"  {v:6.2f}%  {k}" for k, v in by_area.most_common()]
    lines += ["", f"Top {top} symbols (self time):", ""]
    for pct, comm, dso, sym, a in sorted(rows, reverse=True)[:top]:
        lines.append(f"  {pct:6.2f}%  {comm[:12]:<12} {sym[:110]}")
    text = "\n".join(lines) + "\n"
    with open(out_path, "w") as f:
        f.write(text)
    print(text)


def stack_pids(stack):
    return stack.workers() + [stack.daemon.pid] + (stack.pg_pids() if stack.pg_pids else [])


def run(name, args, db):
    out = os.path.join(HERE, "out", f"profile-{name}")
    stack = Stack(out, False, database=db.database if db else None)
    if db:
        stack.pg_pids = db.pids
    data = os.path.join(HERE, "out", f"perf-{name}.data")
    try:
        miss = name in ("miss", "miss_nc")
        if miss:
            csv_path = os.path.join(HERE, "out", f"bulk-{args.rows}.csv")
            write_import_csv(csv_path, args.rows)
            stack.import_csv(csv_path)
            prefix = "nc/" if name == "miss_nc" else ""
            codes = os.path.join(out, "miss.txt")
            write_codes(codes, [prefix + c for c in stack.exported_codes()])
        # The miss scenarios' zone holds a fraction of the links, as make bench's.
        stack.start_nginx("8m" if miss else "64m")
        if miss:
            url = f"http://127.0.0.1:{stack.nginx_port}"
            env = dict(os.environ, CODES=codes)
            script = os.path.join(HERE, "random_code.lua")
            wrk(url, 3, 64, script, env)

            def work():
                r = wrk(url, args.seconds, 64, script, env)
                return f"{r['requests']:,} requests at {r['rps']:,.0f}/s"
        elif name in ("hot", "hot_nc"):
            hot = stack.create_batch(100_000)
            codes = os.path.join(out, "hot.txt")
            write_codes(codes, hot)
            script = os.path.join(HERE, "random_code.lua")
            url = f"http://127.0.0.1:{stack.nginx_port}"
            env = dict(os.environ, CODES=codes)
            count = (lambda: pgbench.clicks_counted([stack], hot[0])) if db else (
                lambda: stack.metric("shortlinkd_clicks_total"))
            warmed = warm_zone(stack, url, 64, script, codes)
            assert fold_wait(count, warmed), "warm-up clicks not folded"
            before = count()
            if name == "hot_nc":
                codes_nc = os.path.join(out, "hot-nc.txt")
                write_codes(codes_nc, ["nc/" + c for c in hot])
                env = dict(os.environ, CODES=codes_nc)

            def work():
                r = wrk(url, args.seconds, 64, script, env)
                if name == "hot_nc":
                    return f"{r['requests']:,} requests at {r['rps']:,.0f}/s, no clicks counted"
                if not fold_wait(count, before + r["requests"]):
                    raise RuntimeError(f"clicks not folded: {count() - before:,.0f} of {r['requests']:,} "
                                       f"(non-3xx answers: {r.get('errors')})")
                return f"{r['requests']:,} requests at {r['rps']:,.0f}/s, every click folded in the window"
        elif name == "create":
            api_url = f"http://127.0.0.1:{stack.nginx_api_port()}"
            env = dict(os.environ, SHORTLINK_KEY=stack.api_key)

            def work():
                r = wrk(api_url, args.seconds, 16, os.path.join(HERE, "create.lua"), env)
                return f"{r['requests']:,} creates at {r['rps']:,.0f}/s"
        elif name == "import":
            csv_path = os.path.join(HERE, "out", f"bulk-{args.rows}.csv")
            write_import_csv(csv_path, args.rows)

            def work():
                t0 = time.monotonic()
                stack.import_csv(csv_path)
                return f"{args.rows:,} rows at {args.rows / (time.monotonic() - t0):,.0f}/s"
        elif name == "batch":
            def work():
                t0 = time.monotonic()
                stack.create_batch(100_000, offset=50_000_000)
                return f"100,000 links at {100_000 / (time.monotonic() - t0):,.0f}/s"
        else:
            raise SystemExit(f"unknown scenario {name}")
        summary = record(None if db else stack_pids(stack), data, work, args.call_graph)
    finally:
        stack.close()
    store = "PostgreSQL" if db else "SQLite"
    os.makedirs(os.path.join(HERE, "profiles"), exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=os.path.dirname(HERE),
                            capture_output=True, text=True).stdout.strip()
    title = f"{name} on {store} at {commit} ({time.strftime('%Y-%m-%d %H:%M')}): {summary}"
    report(data, title, os.path.join(HERE, "profiles", f"{name}{'-pg' if db else ''}.txt"), args.top)
    if args.call_graph:
        print(f"samples with call graphs kept in {data}: perf report -i {data} --no-children -G -S SYMBOL")
    else:
        os.remove(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default="hot,create,import,batch")
    ap.add_argument("--pg", action="store_true", help="the daemon on a private PostgreSQL (bench/pg.py)")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--call-graph", action="store_true",
                    help="also record call graphs (DWARF unwinding) and keep the perf data to ask who calls what")
    args = ap.parse_args()
    for name in args.scenarios.split(","):
        # A cluster of its own per scenario: each stack has a key of its own.
        db = pgbench.Postgres(os.path.join(HERE, "out", f"profile-pg-{name}")) if args.pg else None
        try:
            run(name, args, db)
        finally:
            if db:
                db.stop()


if __name__ == "__main__":
    main()
