"""The benchmark harness: a daemon + nginx stack in a fresh prefix, wrk
runs with server CPU per request, medians. Used by bench.py (SQLite and the
edge) and pg.py (the same scenarios on PostgreSQL)."""

import concurrent.futures
import csv
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NGINX = os.path.join(ROOT, "build/sbin/nginx")
MODULE = os.path.join(ROOT, "build/modules/ngx_http_shortlink_module.so")
DAEMON = os.path.join(ROOT, "build/bin/shortlinkd")
HERE = os.path.join(ROOT, "bench")
TICKS = os.sysconf("SC_CLK_TCK")
TARGET = "https://www.example.com/campaigns/2026/spring/landing-page?utm_source=sms&utm_medium=bulk&id={:08d}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stat_cpu(path):
    """utime + stime in seconds from a `/proc/.../stat` file; raises
    FileNotFoundError (or ProcessLookupError) once the process or thread
    is gone."""
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            total += stat_cpu(f"/proc/{pid}/stat")
        except FileNotFoundError:
            pass
    return total


# The daemon's threads that bound a bulk write, by their kernel name
# (`comm`, cut to 15 bytes), as `thread_cpu_us` reports them.
BULK_THREADS = {"sqlite-writer": "writer", "tokio-rt-worker": "runtime", "sqlite-checkpoi": "checkpointer"}


def thread_cpu(pid):
    """CPU seconds of each of `pid`'s threads, summed by thread name."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            cpu = stat_cpu(f"/proc/{pid}/task/{tid}/stat")
        except (FileNotFoundError, ProcessLookupError):
            continue
        out[name] = out.get(name, 0) + cpu
    return out


def thread_cpu_us(before, after, items):
    """The bulk threads' CPU µs per item between two `thread_cpu` readings:
    the writer's share is the one no overlap can hide (one thread), so
    1e6 / writer is the ceiling of items/s on this machine."""
    return {short: round((after.get(name, 0) - before.get(name, 0)) * 1e6 / items, 2)
            for name, short in BULK_THREADS.items()}


def children(ppid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == ppid:
                        out.append(int(d))
            except (FileNotFoundError, ProcessLookupError):
                pass
    return out


def parse_duration_ms(text):
    m = re.match(r"([\d.]+)(us|ms|s|m)", text)
    value, unit = float(m.group(1)), m.group(2)
    return value * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def write_import_csv(path, rows, first=10_000_000):
    """The import CSV of every bench tool: `rows` rows of TARGET numbered
    from `first`, no alias, expiry or tags."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["url", "alias", "expires_at", "tags"])
        for i in range(rows):
            w.writerow([TARGET.format(first + i), "", "", ""])


class Stack:
    """Daemon + nginx in bench/out/<name>: on SQLite under `out`, or on the
    PostgreSQL `database` ({"url", "password_file"}) with the deployment
    `key` of the other nodes (a fresh key when none is given). `wrap` goes
    before the daemon's command line (valgrind, for callgrind_bulk.py)."""

    def __init__(self, out, smoke, key=None, database=None, wrap=()):
        self.out = out
        self.smoke = smoke
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(os.path.join(out, "logs"))
        os.makedirs(os.path.join(out, "spool"))
        # The workers' spool, theirs alone: nobody:nogroup 0770 as root.
        if os.getuid() == 0:
            shutil.chown(os.path.join(out, "spool"), "nobody", "nogroup")
            os.chmod(os.path.join(out, "spool"), 0o770)
        else:
            os.chmod(os.path.join(out, "spool"), 0o700)
        os.chmod(out, 0o755)
        self.key = key or os.path.join(out, "key")
        self.api_port = free_port()
        self.nginx_port = free_port()
        self.nginx = None
        # The database server's processes, counted as server CPU (PostgreSQL).
        self.pg_pids = None
        if not key:
            subprocess.run([DAEMON, "keygen", self.key], check=True, capture_output=True)
        args = [
            "--data-dir", os.path.join(out, "data"), "--key-file", self.key,
            "--ipc-socket", os.path.join(out, "ipc.sock"), "--api-socket", os.path.join(out, "api.sock"),
            "--api-listen", f"127.0.0.1:{self.api_port}", "--spool-dir", os.path.join(out, "spool"),
            "--base-url", "http://short.bench",
        ]
        if os.getuid() == 0:
            args += ["--socket-group", "nogroup"]
        if database:
            args += ["--database", database["url"], "--database-password-file", database["password_file"]]
        self.daemon_args = args
        log = open(os.path.join(out, "logs/daemon.log"), "a")
        self.daemon = subprocess.Popen(list(wrap) + [DAEMON, "serve"] + args, stdout=log, stderr=log)
        for _ in range(300 if not wrap else 1200):
            try:
                if self.api("GET", "/api/v1/health", auth=False)[0] == 200:
                    break
            except OSError:
                pass
            if self.daemon.poll() is not None:
                sys.exit(f"bench: shortlinkd exited ({self.daemon.returncode}): see {out}/logs/daemon.log")
            time.sleep(0.05)
        key = subprocess.run(
            [DAEMON, "key", "create", "--name", "bench", "--scopes", "links:write,links:read,stats:read,admin"] + args,
            check=True, capture_output=True, text=True,
        )
        self.api_key = key.stdout.strip()

    def api(self, method, path, body=None, auth=True, port=None):
        conn = http.client.HTTPConnection("127.0.0.1", port or self.api_port, timeout=600)
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["X-Api-Key"] = self.api_key
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, data

    def metric(self, name):
        _, body = self.api("GET", "/metrics")
        total = 0.0
        for line in body.decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def import_csv(self, csv_path):
        """`shortlinkd import` of `csv_path` into this stack's daemon; the
        finished process (asserted to have succeeded)."""
        imp = subprocess.run([DAEMON, "import", csv_path] + self.daemon_args,
                             capture_output=True, text=True)
        assert imp.returncode == 0, imp.stderr[-2000:]
        return imp

    def exported_codes(self):
        """Every link's code, from `shortlinkd export`."""
        export = os.path.join(self.out, "export.csv")
        subprocess.run([DAEMON, "export", export] + self.daemon_args, check=True, capture_output=True)
        with open(export, newline="") as f:
            return [row["code"] for row in csv.DictReader(f)]

    def create_batch(self, n, offset=0, short=False, in_flight=1):
        """`n` links in calls of 10,000, their codes in order; `short`: with
        `?results=short` (each item's code and short URL instead of the
        whole link); `in_flight`: that many calls at once, as a sender that
        overlaps its calls would."""
        path = "/api/v1/links/batch" + ("?results=short" if short else "")

        def call(start):
            items = [{"url": TARGET.format(offset + i)} for i in range(start, min(n, start + 10000))]
            status, body = self.api("POST", path, {"links": items})
            assert status in (200, 201, 207), (status, body[:300])
            return [item["code"] if short else item["link"]["code"] for item in json.loads(body)["results"]]

        # `map` answers in call order and raises a call's failure here.
        with concurrent.futures.ThreadPoolExecutor(max_workers=in_flight) as pool:
            return [code for codes in pool.map(call, range(0, n, 10000)) for code in codes]

    def start_nginx(self, zone, map_file=None):
        self.stop_nginx()
        user = "user nobody nogroup;\n" if os.getuid() == 0 else ""
        map_conf = ""
        map_location = ""
        if map_file:
            map_location = "        location /m/ { return 302 $bench_target; }"

            map_conf = (
                f"    map_hash_max_size 262144;\n    map_hash_bucket_size 256;\n"
                f"    map $uri $bench_target {{\n        include {map_file};\n    }}\n"
            )
        conf = f"""{user}load_module {MODULE};
worker_processes auto;
error_log {self.out}/logs/error.log warn;
pid {self.out}/logs/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 1000000;
{map_conf}    shortlink_key_file {self.key};
    shortlink_zone zone=bench:{zone};
    shortlink_pass unix:{self.out}/ipc.sock;
    shortlink_spool {self.out}/spool;
    server {{
        listen 127.0.0.1:{self.nginx_port} reuseport backlog=4096;
        location / {{ shortlink on; }}
        location /nc/ {{ shortlink on; shortlink_clicks off; }}
        location /z/ {{ shortlink on; shortlink_clicks off; add_header X-Cache $shortlink_cache_status; }}
        location /r/ {{ return 302 https://www.example.com/campaigns/2026/spring/landing-page?utm_source=sms&utm_medium=bulk&id=00000001; }}
{map_location}
        location /api/ {{
            proxy_pass http://unix:{self.out}/api.sock;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Shortlink-Base http://$host;
        }}
    }}
    upstream shortlinkd_keepalive {{ server unix:{self.out}/api.sock; keepalive 32; }}
    server {{
        listen 127.0.0.1:{self.nginx_api_port()};
        location /api/ {{
            proxy_pass http://shortlinkd_keepalive;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Shortlink-Base http://$host;
        }}
    }}
}}
"""
        path = os.path.join(self.out, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        subprocess.run([NGINX, "-p", self.out, "-c", path, "-t", "-q"], check=True)
        self.nginx = subprocess.Popen([NGINX, "-p", self.out, "-c", path, "-g", "daemon off;"])
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.nginx_port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        time.sleep(0.5)  # workers connect and take the alias snapshot

    def nginx_api_port(self):
        if not hasattr(self, "_nginx_api_port"):
            self._nginx_api_port = free_port()
        return self._nginx_api_port

    def workers(self):
        return children(self.nginx.pid) if self.nginx else []

    def stop_nginx(self):
        if self.nginx:
            self.nginx.send_signal(signal.SIGQUIT)
            try:
                self.nginx.wait(10)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
            self.nginx = None

    def close(self):
        self.stop_nginx()
        self.daemon.send_signal(signal.SIGTERM)
        try:
            self.daemon.wait(20)
        except subprocess.TimeoutExpired:
            self.daemon.kill()


def zone_entries_per_mib(stack, codes, zone_kib):
    """Fills a zone of `zone_kib` through the edge, then counts the links
    still cached, newest first (the LRU keeps the most recent)."""
    stack.start_nginx(f"{zone_kib}k")
    conn = http.client.HTTPConnection("127.0.0.1", stack.nginx_port, timeout=30)

    def cache_status(code):
        conn.request("GET", "/z/" + code)
        r = conn.getresponse()
        r.read()
        return r.getheader("X-Cache")

    for code in codes:
        cache_status(code)
    held = 0
    for code in reversed(codes):
        if cache_status(code) != "HIT":
            break
        held += 1
    return held * 1024 / zone_kib


BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def wrk(url, seconds, connections, script=None, env=None):
    """Runs wrk; returns rps, p50/p99 ms, requests, errors, wrk's own CPU seconds."""
    # A browser's User-Agent: clicks are people's, as in real traffic (no
    # header at all is counted as a bot).
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency",
           "-H", f"User-Agent: {BROWSER_UA}"]
    if connections < 2:
        cmd[1] = "-t1"
    if script:
        cmd += ["-s", script]
    cmd.append(url)
    before = os.times()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    after = os.times()
    wrk_cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    errors = 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors += sum(int(x) for x in m.groups())
    return {
        "rps": rps,
        "p50_ms": parse_duration_ms(lat["50"]),
        "p99_ms": parse_duration_ms(lat["99"]),
        "requests": requests,
        "errors": errors,
        "wrk_cpu_s": wrk_cpu,
        "raw": out,
    }


def warm_zone(stack, url, connections, script, codes, tries=4):
    """Puts every code of the file `codes` in the zone. A pass walks the
    file in order (random_code.lua's ORDER=seq, wrk's threads half a file
    apart), so two threads cover it once they made half a file each: a
    pass counts when it made at least two files' worth of requests. Then
    2 s of uniform codes must make no daemon lookup (a code still missing
    is drawn with a chance of 1 - e^-(requests / codes)). Otherwise the
    next pass is twice as long. Uniform warm-ups left about 8 % of
    100,000 codes out after 5 s, and the first measured run paid for
    their misses. Returns the requests made (clicks, where counted);
    raises if codes stay out."""
    with open(codes) as f:
        lines = sum(1 for _ in f)
    requests, seconds = 0, 4
    for _ in range(tries):
        walked = wrk(url, seconds, connections, script, dict(os.environ, CODES=codes, ORDER="seq"))["requests"]
        requests += walked
        seconds *= 2
        if walked < 2 * lines:
            continue
        before = stack.metric("shortlinkd_ipc_lookups_total")
        requests += wrk(url, 2, connections, script, dict(os.environ, CODES=codes))["requests"]
        if stack.metric("shortlinkd_ipc_lookups_total") == before:
            return requests
    raise RuntimeError(f"{codes}: codes still missing the zone after {tries} warm-up passes")


def fold_wait(count, expected, timeout=120):
    """Waits until `count()`, the clicks folded into the tables so far
    (`shortlinkd_clicks_total`), reaches `expected`; False at the timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if count() >= expected:
            return True
        time.sleep(0.2)
    return False


def measured(stack, url, seconds, connections, script=None, env=None, clicks_before=None, count=None):
    """wrk plus server CPU (nginx workers + daemon) per request. For a run
    whose clicks are counted, `clicks_before` is the folded total expected
    before it (`count()`, by default this stack's `shortlinkd_clicks_total`):
    the CPU window then runs on until the run's clicks are folded too, so
    the daemon's deferred fold is charged to the run that caused it (not to
    whichever later run it lands in); req/s stays wrk's."""
    pids = stack.workers() + [stack.daemon.pid] + (stack.pg_pids() if stack.pg_pids else [])
    cpu0 = cpu_seconds(pids)
    r = wrk(url, seconds, connections, script, env)
    if clicks_before is not None:
        count = count or (lambda: stack.metric("shortlinkd_clicks_total"))
        expected = clicks_before + r["requests"]
        if not fold_wait(count, expected):
            raise RuntimeError(f"clicks not folded within 120 s: {count()} of {expected}")
        r["clicks_after"] = expected
    cpu1 = cpu_seconds(pids)
    r["cpu_us_per_req"] = (cpu1 - cpu0) * 1e6 / max(r["requests"], 1)
    return r


def counted_miss_runs(stack, url, seconds, connections, script, codes, runs, clicks_before, count=None):
    """`runs` wrk runs of the codes in file `codes` whose clicks are counted
    (`measured`: each window until its clicks are folded), each with the
    daemon lookups it made (`lookups`); returns them and the folded clicks
    after the last."""
    out = []
    for _ in range(runs):
        l0 = stack.metric("shortlinkd_ipc_lookups_total")
        r = measured(stack, url, seconds, connections, script, dict(os.environ, CODES=codes), clicks_before, count)
        clicks_before = r["clicks_after"]
        r["lookups"] = stack.metric("shortlinkd_ipc_lookups_total") - l0
        out.append(r)
    return out, clicks_before


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def summarize(name, runs, description, baseline=None, extra=None):
    res = {
        "scenario": name,
        "description": description,
        "runs": len(runs),
        "rps": round(median_of(runs, "rps"), 1),
        "p50_ms": round(median_of(runs, "p50_ms"), 3),
        "p99_ms": round(median_of(runs, "p99_ms"), 3),
        "cpu_us_per_req": round(median_of(runs, "cpu_us_per_req"), 2),
        "wrk_cpu_s": round(median_of(runs, "wrk_cpu_s"), 2),
        "errors": sum(r["errors"] for r in runs),
        "rps_runs": [round(r["rps"], 1) for r in runs],
    }
    if baseline:
        res["ratio_vs_return302"] = round(res["rps"] / baseline["rps"], 3)
        res["cpu_ratio_vs_return302"] = round(res["cpu_us_per_req"] / baseline["cpu_us_per_req"], 3)
    if extra:
        res.update(extra)
    return res


def write_codes(path, codes):
    with open(path, "w") as f:
        f.write("\n".join(codes) + "\n")
