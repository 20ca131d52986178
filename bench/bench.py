#!/usr/bin/env python3
"""shortlink benchmarks: `make bench` (full) and `make bench-smoke` (seconds).

Starts the built nginx with the module and the real daemon in a fresh
prefix on loopback ports, loads links, and drives load with wrk. In the same
run and with the same nginx binary it measures nginx's own ceilings (a plain
`return 302`, and a 100,000-entry `map` with `return 302 $target`) so every
figure is quoted as a ratio of them. Server CPU per request comes from
/proc/PID/stat of the nginx workers and the daemon.

Writes bench/results.json and BENCHMARKS.md (full run) or
bench/out/smoke.json (smoke run, which only checks that every scenario ran
and produced sane output).
"""

import argparse
import csv
import http.client
import json
import os
import platform
import random
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


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except FileNotFoundError:
            pass
    return total / TICKS


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


class Stack:
    """Daemon + nginx in bench/out/<name>."""

    def __init__(self, out, smoke):
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
        self.key = os.path.join(out, "key")
        self.api_port = free_port()
        self.nginx_port = free_port()
        self.nginx = None
        subprocess.run([DAEMON, "keygen", self.key], check=True, capture_output=True)
        args = [
            "--data-dir", os.path.join(out, "data"), "--key-file", self.key,
            "--ipc-socket", os.path.join(out, "ipc.sock"), "--api-socket", os.path.join(out, "api.sock"),
            "--api-listen", f"127.0.0.1:{self.api_port}", "--spool-dir", os.path.join(out, "spool"),
            "--base-url", "http://short.bench",
        ]
        if os.getuid() == 0:
            args += ["--socket-group", "nogroup"]
        self.daemon_args = args
        log = open(os.path.join(out, "logs/daemon.log"), "a")
        self.daemon = subprocess.Popen([DAEMON, "serve"] + args, stdout=log, stderr=log)
        for _ in range(300):
            try:
                if self.api("GET", "/api/v1/health", auth=False)[0] == 200:
                    break
            except OSError:
                pass
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

    def create_batch(self, n, offset=0):
        codes = []
        for start in range(0, n, 10000):
            items = [{"url": TARGET.format(offset + i)} for i in range(start, min(n, start + 10000))]
            status, body = self.api("POST", "/api/v1/links/batch", {"links": items})
            assert status in (200, 201, 207), (status, body[:300])
            for item in json.loads(body)["results"]:
                codes.append(item["link"]["code"])
        return codes

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


def wrk(url, seconds, connections, script=None, env=None):
    """Runs wrk; returns rps, p50/p99 ms, requests, errors, wrk's own CPU seconds."""
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency"]
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


def measured(stack, url, seconds, connections, script=None, env=None):
    """wrk plus server CPU (nginx workers + daemon) per request."""
    pids = stack.workers() + [stack.daemon.pid]
    cpu0 = cpu_seconds(pids)
    r = wrk(url, seconds, connections, script, env)
    cpu1 = cpu_seconds(pids)
    r["cpu_us_per_req"] = (cpu1 - cpu0) * 1e6 / max(r["requests"], 1)
    return r


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="seconds-long run that checks the harness works")
    args = ap.parse_args()
    smoke = args.smoke
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

    out = os.path.join(HERE, "out", "smoke" if smoke else "full")
    stack = Stack(out, smoke)
    results = []
    try:
        # --- data: hot links through the batch API, the miss set through `shortlinkd import`
        hot = stack.create_batch(hot_n)
        csv_path = os.path.join(out, "import.csv")
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["url", "alias", "expires_at", "tags"])
            for i in range(miss_n):
                w.writerow([TARGET.format(10_000_000 + i), "", "", ""])
        t0 = time.monotonic()
        imp = subprocess.run([DAEMON, "import", csv_path] + stack.daemon_args, capture_output=True, text=True)
        import_s = time.monotonic() - t0
        assert imp.returncode == 0, imp.stderr[-2000:]
        results.append({
            "scenario": "import",
            "description": f"`shortlinkd import` of a {miss_n:,}-row CSV (through the running daemon)",
            "items": miss_n, "seconds": round(import_s, 2), "items_per_s": round(miss_n / import_s, 1),
        })
        export = os.path.join(out, "export.csv")
        subprocess.run([DAEMON, "export", export] + stack.daemon_args, check=True, capture_output=True)
        with open(export, newline="") as f:
            miss_codes = [row["code"] for row in csv.DictReader(f)]
        hot_set = set(hot)
        miss_codes = [c for c in miss_codes if c not in hot_set]

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
        # warm the zone: every hot code once
        warm = measured(stack, url, max(2, seconds // 2), conns, script, dict(os.environ, CODES=codes_hot))
        del warm
        groups = {"return302": [], "map100k": [], "hot": [], "hot_no_clicks": [], "invalid": []}
        lookups_before_invalid = None
        for _ in range(runs):
            groups["return302"].append(measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_ret)))
            groups["map100k"].append(measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_map)))
            groups["hot"].append(measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_hot)))
            groups["hot_no_clicks"].append(measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_nc)))
            lookups_before_invalid = stack.metric("shortlinkd_ipc_lookups_total")
            groups["invalid"].append(measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_invalid)))
            lookups_after_invalid = stack.metric("shortlinkd_ipc_lookups_total")
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
        miss_runs = []
        for _ in range(runs):
            l0 = stack.metric("shortlinkd_ipc_lookups_total")
            r = measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_miss))
            r["lookups"] = stack.metric("shortlinkd_ipc_lookups_total") - l0
            miss_runs.append(r)
        miss = summarize("miss", miss_runs, f"{len(miss_codes):,} links, 8 MiB zone, uniform random codes", base)
        miss["lookup_share"] = round(statistics.median(r["lookups"] / max(r["requests"], 1) for r in miss_runs), 3)
        results.append(miss)
        codes_miss_nc = os.path.join(out, "miss-nc.txt")
        write_codes(codes_miss_nc, ["nc/" + c for c in miss_codes])
        miss_nc_runs = [
            measured(stack, url, seconds, conns, script, dict(os.environ, CODES=codes_miss_nc)) for _ in range(runs)
        ]
        results.append(summarize("miss_no_clicks", miss_nc_runs, "same, `shortlink_clicks off`: lookups alone", base))

        t0 = time.monotonic()
        batch_n = 20_000 if smoke else 100_000
        stack.create_batch(batch_n, offset=50_000_000)
        bt = time.monotonic() - t0
        results.append({
            "scenario": "batch",
            "description": f"POST /api/v1/links/batch, {batch_n:,} links in calls of 10,000",
            "items": batch_n, "seconds": round(bt, 2), "items_per_s": round(batch_n / bt, 1),
        })
    finally:
        stack.close()

    for r in results:
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
    }
    check(doc)
    with open(os.path.join(out, "logs/error.log")) as f:
        log = f.read()
    assert "exited on signal" not in log, "an nginx worker crashed: see " + out + "/logs/error.log"
    if smoke:
        os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
        with open(os.path.join(HERE, "out", "smoke.json"), "w") as f:
            json.dump(doc, f, indent=2)
        print("bench-smoke: every scenario ran:", ", ".join(r["scenario"] for r in results))
    else:
        with open(os.path.join(HERE, "results.json"), "w") as f:
            json.dump(doc, f, indent=2)
        write_markdown(doc)
        print(json.dumps(results, indent=2))


def check(doc):
    """Sanity of the output (not of speeds)."""
    names = [r["scenario"] for r in doc["scenarios"]]
    for required in ("return302", "map100k", "hot", "hot_no_clicks", "invalid", "miss", "miss_no_clicks",
                     "create_c1", "create_c16", "batch", "import"):
        assert required in names, f"scenario {required} missing"
    for r in doc["scenarios"]:
        if "rps" in r:
            assert r["rps"] > 0 and r["p50_ms"] > 0 and r["p99_ms"] >= r["p50_ms"], r
            assert r["cpu_us_per_req"] > 0, r
            # wrk counts 404s as errors: the invalid flood is all 404s.
            if r["scenario"] != "invalid":
                assert r["errors"] <= max(1, r["rps"] * 0.001), r
        else:
            assert r["items_per_s"] > 0, r
    inv = next(r for r in doc["scenarios"] if r["scenario"] == "invalid")
    assert inv["daemon_lookups_during_run"] == 0, f"invalid codes reached the daemon: {inv}"


def write_markdown(doc):
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
    zone = next((r for r in doc["scenarios"] if "entries_per_mib" in r), None)
    m = doc["machine"]
    nc = next(r for r in doc["scenarios"] if r["scenario"] == "hot_no_clicks")
    inv = next(r for r in doc["scenarios"] if r["scenario"] == "invalid")
    miss = next(r for r in doc["scenarios"] if r["scenario"] == "miss")
    text = f"""# Benchmarks

Produced by `make bench` (`bench/bench.py`) at commit `{doc['commit']}` on {doc['date']}.
Raw figures: `bench/results.json`.

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

* Click counting costs {nc['click_cost_pct']}% of requests/s and {nc['click_cpu_cost_pct']}% of CPU per request
  (hot vs `shortlink_clicks off`).
* The shared zone holds {zone['entries_per_mib'] if zone else 'n/a'} links per MiB ({zone['description'] if zone else ''}).
* The invalid flood made {inv['daemon_lookups_during_run']:.0f} daemon lookups (from `shortlinkd_ipc_lookups_total`).
* Miss path: {miss['lookup_share'] * 100:.1f}% of requests went to the daemon.

## Commands

```sh
make bench              # builds release binaries, runs every scenario, writes this file
make bench-smoke        # a few seconds of each scenario (part of make test)
```

## What limits each figure

See the notes below, written from the profile of the last run.
"""
    for name in ("NOTES-edge.md", "NOTES.md"):
        notes = os.path.join(HERE, name)
        if os.path.exists(notes):
            with open(notes) as f:
                text += "\n" + f.read()
    with open(os.path.join(ROOT, "BENCHMARKS.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
