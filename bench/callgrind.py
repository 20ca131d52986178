#!/usr/bin/env python3
"""Instructions per request on the edge's hot paths and a miss, under callgrind.

Starts the built daemon and the built nginx with the module in a fresh
prefix on free loopback ports, nginx in one process (`master_process off;
daemon off;`) under `valgrind --tool=callgrind --instr-atstart=no`. For each
path it warms up, then counts instructions between `callgrind_control -i on`
and `-i off` over N keep-alive requests (one connection, a desktop Chrome
`User-Agent`), and prints instructions per request:

* `return 302`: nginx's own redirect, the floor;
* hot redirect, clicks on: a cached code (`location /`);
* hot redirect, clicks off: the same code under `shortlink_clicks off`;
* miss, clicks off: a code the zone has not seen (each request a fresh
  one of N links made beforehand), so every request asks the daemon over
  the worker's link and stores the answer in the zone.

Usage: bench/callgrind.py [--requests N] [--out DIR] [--keep] [--daemon]   (needs `make build`)
With --keep the dumps stay in DIR (callgrind.out.<pid>.<n>, one per path, in
the order above) for `callgrind_annotate`. With --daemon the daemon runs
under callgrind too, and its instructions per request (every thread) are
shown beside nginx's: what a miss costs it, or a click batch's share.
"""

import argparse
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NGINX = os.path.join(ROOT, "build/sbin/nginx")
MODULE = os.path.join(ROOT, "build/modules/ngx_http_shortlink_module.so")
DAEMON = os.path.join(ROOT, "build/bin/shortlinkd")
TARGET = "https://www.example.com/campaigns/2026/spring/landing-page?utm_source=sms&utm_medium=bulk&id=00000001"
CHROME = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
          "(KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"{what} did not listen on {port} within {seconds} s")


def requests(port, paths):
    """Keep-alive GETs of paths on one connection; returns the status counts."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    statuses = {}
    for path in paths:
        conn.request("GET", path, headers={"User-Agent": CHROME})
        r = conn.getresponse()
        r.read()
        statuses[r.status] = statuses.get(r.status, 0) + 1
    conn.close()
    return statuses


def post(conn, api_key, path, body, want):
    """POSTs JSON through the API; the decoded reply, or exits with it."""
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", "X-Api-Key": api_key})
    r = conn.getresponse()
    reply = r.read()
    if r.status != want:
        sys.exit(f"POST {path}: {r.status} {reply[:200]!r}")
    return json.loads(reply)


def create_batch(conn, api_key, n):
    """Codes of n new links, made through the batch API 1,000 at a time."""
    codes = []
    for start in range(0, n, 1000):
        items = [{"url": f"{TARGET}&n={i}"} for i in range(start, min(n, start + 1000))]
        reply = post(conn, api_key, "/api/v1/links/batch?results=short", {"links": items}, 200)
        codes += [item["code"] for item in reply["results"]]
    return codes


def control(pid, *args):
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def dump_total(out, pid, before):
    """Instructions in the dump callgrind writes for pid after `-d`."""
    control(pid, "-d")
    for _ in range(100):
        dumps = set(glob.glob(os.path.join(out, f"callgrind.out.{pid}.*"))) - before
        if dumps:
            break
        time.sleep(0.1)
    (dump,) = dumps
    for _ in range(100):
        with open(dump) as f:
            for line in f:
                # The header's `summary:` may be 0; `totals:` ends the file.
                if line.startswith("totals:"):
                    return int(line.split()[1]), dump
        time.sleep(0.1)
    sys.exit(f"no totals in {dump}")


def measure(out, pids, port, warm, paths, keep):
    """Instructions per request in each of pids over paths, after the
    warm-up paths."""
    requests(port, warm)  # zone, front cache, User-Agent cache
    before = set(glob.glob(os.path.join(out, "callgrind.out*")))
    for pid in pids:
        control(pid, "-i", "on")
    statuses = requests(port, paths)
    per_request = []
    for pid in pids:
        control(pid, "-i", "off")
        ir, dump = dump_total(out, pid, before)
        if not keep:
            os.unlink(dump)
        per_request.append(ir / len(paths))
    return per_request, statuses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/out/callgrind"))
    ap.add_argument("--keep", action="store_true", help="keep the dumps for callgrind_annotate")
    ap.add_argument("--daemon", action="store_true",
                    help="run the daemon under callgrind too and count its instructions per request")
    args = ap.parse_args()
    for binary in (NGINX, MODULE, DAEMON):
        if not os.path.exists(binary):
            sys.exit(f"{binary} not found: run `make build` first")
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "logs"))
    os.makedirs(os.path.join(out, "spool"), mode=0o700)
    key = os.path.join(out, "key")
    subprocess.run([DAEMON, "keygen", key], check=True, capture_output=True)
    api_port, port = free_port(), free_port()
    dargs = ["--data-dir", os.path.join(out, "data"), "--key-file", key,
             "--ipc-socket", os.path.join(out, "ipc.sock"), "--api-socket", os.path.join(out, "api.sock"),
             "--api-listen", f"127.0.0.1:{api_port}", "--spool-dir", os.path.join(out, "spool")]
    log = open(os.path.join(out, "logs/daemon.log"), "a")
    grind = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
             f"--callgrind-out-file={out}/callgrind.out.%p"]
    daemon = subprocess.Popen((grind if args.daemon else []) + [DAEMON, "serve"] + dargs,
                              stdout=log, stderr=log)
    nginx = None
    try:
        wait_port(api_port, daemon, "shortlinkd", 300 if args.daemon else 60)
        api_key = subprocess.run(
            [DAEMON, "key", "create", "--name", "callgrind", "--scopes", "links:write"] + dargs,
            check=True, capture_output=True, text=True).stdout.strip()
        conn = http.client.HTTPConnection("127.0.0.1", api_port, timeout=60)
        code = post(conn, api_key, "/api/v1/links", {"url": TARGET}, 201)["code"]
        fresh = create_batch(conn, api_key, args.requests + 200)
        conn.close()
        conf = os.path.join(out, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""load_module {MODULE};
master_process off;
daemon off;
error_log {out}/logs/error.log warn;
pid {out}/logs/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    shortlink_key_file {key};
    shortlink_zone zone=callgrind:4m;
    shortlink_pass unix:{out}/ipc.sock;
    shortlink_spool {out}/spool;
    server {{
        listen 127.0.0.1:{port};
        location / {{ shortlink on; }}
        location /nc/ {{ shortlink on; shortlink_clicks off; }}
        location /r/ {{ return 302 {TARGET}; }}
    }}
}}
""")
        nginx = subprocess.Popen(
            grind + [NGINX, "-p", out, "-c", conf],
            cwd=out, stdout=subprocess.DEVNULL, stderr=open(os.path.join(out, "logs/valgrind.log"), "w"))
        wait_port(port, nginx, "nginx under valgrind")
        time.sleep(2)  # the worker connects to the daemon
        # The dump names the process: callgrind.out.<pid>.<n>.
        rows = []
        n = args.requests
        misses = [f"/nc/{c}" for c in fresh]
        for name, warm, paths in [("return 302", ["/r/x"] * 200, ["/r/x"] * n),
                                  ("hot redirect, clicks on", [f"/{code}"] * 200, [f"/{code}"] * n),
                                  ("hot redirect, clicks off", [f"/nc/{code}"] * 200, [f"/nc/{code}"] * n),
                                  ("miss, clicks off", misses[:200], misses[200:])]:
            pids = [nginx.pid] + ([daemon.pid] if args.daemon else [])
            per_request, statuses = measure(out, pids, port, warm, paths, args.keep)
            rows.append((name, per_request, statuses))
        floor = rows[0][1][0]
        print(f"instructions per request, {args.requests} keep-alive requests per path")
        daemon_head = f" {'daemon':>12}" if args.daemon else ""
        print(f"{'path':<28} {'instructions':>12} {'vs return 302':>14}{daemon_head}  statuses")
        for name, irs, statuses in rows:
            daemon_ir = f" {irs[1]:>12,.0f}" if args.daemon else ""
            print(f"{name:<28} {irs[0]:>12,.0f} {irs[0] / floor:>14.3f}{daemon_ir}  {statuses}")
    finally:
        if nginx and nginx.poll() is None:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(30)
            except subprocess.TimeoutExpired:
                nginx.kill()
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(20)
        except subprocess.TimeoutExpired:
            daemon.kill()


if __name__ == "__main__":
    main()
