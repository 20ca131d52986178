#!/usr/bin/env python3
"""Single creates (`POST /api/v1/links` through nginx's keep-alive upstream,
bench/create.lua), with server CPU per create split between the nginx
workers and the daemon: the figure issue 14 is about.

Each `--daemon NAME=PATH[@VAR=VALUE,...]` gets a stack of its own
(harness.Stack, SQLite, the built nginx and module; the daemon started with
those environment variables); their runs alternate (A, B, A, B, ...) so
that the old and the new binary see the same machine in the same minutes,
and the medians are printed side by side, with the writer's group size
(creates per write transaction). `--trivial` adds the same nginx proxying
to a second nginx answering a fixed `return 200` over a Unix socket: the
part of nginx's CPU that no daemon change can remove.

    python3 bench/creates.py --daemon old=/tmp/shortlinkd-old --daemon new=build/bin/shortlinkd
    python3 bench/creates.py --trivial --runs 5 --seconds 8
    python3 bench/creates.py --pg --daemon old=/tmp/shortlinkd-old --daemon new=build/bin/shortlinkd

`--pg` puts each daemon on a private PostgreSQL of its own (pg.py's
`Postgres`); its processes' CPU is printed apart (`pg`).
"""

import argparse
import os
import signal
import statistics
import subprocess
import time

import harness
import pg
from harness import HERE, NGINX, cpu_seconds, wrk


def store_counts(stack):
    """(write jobs, write transactions) so far, when a daemon answers."""
    try:
        return stack.metric("shortlinkd_store_writes_total"), stack.metric("shortlinkd_store_transactions_total")
    except OSError:
        return 0.0, 0.0


def run_once(stack, connections, seconds, env, pids_of):
    """One wrk run; rate and µs of CPU per create for nginx and the daemon."""
    nginx_pids, daemon_pids = pids_of(stack)
    pg_pids = stack.pg_pids() if stack.pg_pids else []
    w0, t0 = store_counts(stack)
    n0, d0, p0 = cpu_seconds(nginx_pids), cpu_seconds(daemon_pids), cpu_seconds(pg_pids)
    r = wrk(f"http://127.0.0.1:{stack.nginx_api_port()}", seconds, connections,
            os.path.join(HERE, "create.lua"), env)
    n1, d1, p1 = cpu_seconds(nginx_pids), cpu_seconds(daemon_pids), cpu_seconds(pg_pids)
    w1, t1 = store_counts(stack)
    done = max(r["requests"], 1)
    return {
        "rps": r["rps"],
        "nginx_us": (n1 - n0) * 1e6 / done,
        "daemon_us": (d1 - d0) * 1e6 / done,
        "pg_us": (p1 - p0) * 1e6 / done,
        "group": (w1 - w0) / max(t1 - t0, 1),
        "errors": r["errors"],
        "p99_ms": r["p99_ms"],
    }


class TrivialUpstream:
    """A second nginx answering every request with a fixed 201 and a
    link-sized JSON body on a Unix socket, standing in for the daemon."""

    def __init__(self, out):
        os.makedirs(os.path.join(out, "logs"), exist_ok=True)
        self.out = out
        self.sock = os.path.join(out, "trivial.sock")
        body = '{"code":"aZ3kQ9x","short_url":"http://short.bench/aZ3kQ9x","url":"https://example.com/landing/1/2"}'
        user = "user nobody nogroup;\n" if os.getuid() == 0 else ""
        conf = f"""{user}worker_processes 1;
error_log {out}/logs/error.log warn;
pid {out}/logs/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    server {{
        listen unix:{self.sock};
        location / {{ default_type application/json; return 201 '{body}'; }}
    }}
}}
"""
        path = os.path.join(out, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        self.proc = subprocess.Popen([NGINX, "-p", out, "-c", path, "-g", "daemon off;"])
        for _ in range(100):
            if os.path.exists(self.sock):
                break
            time.sleep(0.05)
        if os.getuid() == 0:
            os.chmod(self.sock, 0o666)

    def pids(self):
        return harness.children(self.proc.pid)

    def close(self):
        self.proc.send_signal(signal.SIGQUIT)
        self.proc.wait(10)


def trivial_stack(stack, upstream):
    """Points `stack`'s keep-alive API server at the trivial upstream."""
    conf_path = os.path.join(stack.out, "nginx.conf")
    stack.stop_nginx()
    with open(conf_path) as f:
        conf = f.read()
    api_sock = f"unix:{stack.out}/api.sock; keepalive 32;"
    conf = conf.replace(api_sock, f"unix:{upstream.sock}; keepalive 32;")
    trivial_conf = os.path.join(stack.out, "nginx-trivial.conf")
    with open(trivial_conf, "w") as f:
        f.write(conf)
    stack.nginx = subprocess.Popen([NGINX, "-p", stack.out, "-c", trivial_conf, "-g", "daemon off;"])
    time.sleep(1.0)


def measure(stacks, conns, args, pids_of):
    """Alternating runs of every stack; {(name, connections): [run, ...]}."""
    results = {(name, c): [] for name, _ in stacks for c in conns}
    for name, stack in stacks:  # warm-up: caches, id segments, first WAL growth
        env = dict(os.environ, SHORTLINK_KEY=stack.api_key)
        run_once(stack, 16, 2, env, pids_of)
    for _ in range(args.runs):
        for c in conns:
            for name, stack in stacks:
                env = dict(os.environ, SHORTLINK_KEY=stack.api_key)
                r = run_once(stack, c, args.seconds, env, pids_of)
                results[(name, c)].append(r)
                print(f"  {name:<40} c{c:<3} {r['rps']:>9.0f}/s  nginx {r['nginx_us']:6.1f} µs  "
                      f"daemon {r['daemon_us']:6.1f} µs  pg {r['pg_us']:6.1f} µs  creates/commit {r['group']:.1f}  "
                      f"errors {r['errors']}", flush=True)
    return results


def parse_variant(text):
    """`NAME=PATH[@VAR=VALUE,...]` -> (name, path, env)."""
    name, _, rest = text.partition("=")
    if not rest:
        name, rest = os.path.basename(text), text
    path, _, env_text = rest.partition("@")
    env = dict(kv.split("=", 1) for kv in env_text.split(",") if kv)
    return name, path, env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", action="append",
                    help="NAME=PATH[@VAR=VALUE,...]: a shortlinkd binary and its environment (repeat to compare; "
                         "default build/bin/shortlinkd)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--connections", default="1,16")
    ap.add_argument("--trivial", action="store_true", help="also nginx proxying to a fixed `return 201`")
    ap.add_argument("--pg", action="store_true", help="each daemon on a private PostgreSQL")
    args = ap.parse_args()
    daemons = [parse_variant(v) for v in args.daemon or [f"build={harness.DAEMON}"]]
    conns = [int(c) for c in args.connections.split(",")]

    stacks = []
    upstream = None
    clusters = []

    def pids_of(stack):
        if upstream and stack is stacks[-1][1]:
            return stack.workers(), upstream.pids()
        return stack.workers(), [stack.daemon.pid]

    try:
        for i, (name, path, extra_env) in enumerate(daemons):
            harness.DAEMON = os.path.abspath(path)
            saved = dict(os.environ)
            os.environ.update(extra_env)  # Stack starts the daemon with this process's environment
            try:
                out = os.path.join(HERE, "out", f"creates-{i}")
                database = None
                if args.pg:
                    clusters.append(pg.Postgres(out + "-pg"))
                    database = clusters[-1].database
                stack = harness.Stack(out, smoke=False, database=database)
                if args.pg:
                    stack.pg_pids = clusters[-1].pids
            finally:
                os.environ.clear()
                os.environ.update(saved)
            stacks.append((name, stack))
            stack.start_nginx("64m")
        if args.trivial:
            upstream = TrivialUpstream(os.path.join(HERE, "out", "creates-trivial-upstream"))
            harness.DAEMON = os.path.abspath(daemons[0][1])
            tstack = harness.Stack(os.path.join(HERE, "out", "creates-trivial"), smoke=False)
            stacks.append(("nginx -> trivial return 201", tstack))
            tstack.start_nginx("64m")
            trivial_stack(tstack, upstream)
        results = measure(stacks, conns, args, pids_of)
    finally:
        for _, stack in stacks:
            stack.close()
        if upstream:
            upstream.close()
        for cluster in clusters:
            cluster.stop()

    print("\nmedians (server CPU per create):")
    for (name, c), runs in results.items():
        keys = ("rps", "nginx_us", "daemon_us", "pg_us", "p99_ms", "group")
        med = {k: statistics.median(r[k] for r in runs) for k in keys}
        errors = sum(r["errors"] for r in runs)
        pg_part = f"pg {med['pg_us']:6.1f} µs  " if args.pg else ""
        total = med["nginx_us"] + med["daemon_us"] + med["pg_us"]
        print(f"  {name:<40} c{c:<3} {med['rps']:>9.0f}/s  nginx {med['nginx_us']:6.1f} µs  "
              f"daemon {med['daemon_us']:6.1f} µs  {pg_part}total {total:6.1f} µs  "
              f"p99 {med['p99_ms']:.2f} ms  creates/commit {med['group']:.1f}  errors {errors}")


if __name__ == "__main__":
    main()
