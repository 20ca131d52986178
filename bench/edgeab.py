#!/usr/bin/env python3
"""The nginx workers' CPU per redirect, module builds back to back.

One daemon on SQLite with 100,000 links (harness.Stack); for each round and
each module `.so` given, nginx is started with that module and a 64 MiB zone,
every code is requested once to fill the zone, then wrk runs `return 302`
(`/r/`, nginx's own redirect over the same random paths) and the cached
redirect with `shortlink_clicks off` (`/nc/`, so the daemon does no work).
Prints per module the medians of the workers' CPU per request and the
ratio to `return 302` in the same round; the modules take turns, so the
machine's drift falls on both.

    python3 bench/edgeab.py /tmp/old.so build/modules/ngx_http_shortlink_module.so [--rounds 3]
"""

import argparse
import os
import statistics

import harness
from harness import HERE, Stack, cpu_seconds, wrk, write_codes


def run(stack, url, seconds, codes, script):
    """Workers' CPU µs per request and req/s of one wrk run."""
    workers = stack.workers()
    before = cpu_seconds(workers)
    r = wrk(url, seconds, 64, script, dict(os.environ, CODES=codes))
    n = max(r["requests"], 1)
    return (cpu_seconds(workers) - before) / n * 1e6, r["requests"] / seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--links", type=int, default=100_000)
    args = ap.parse_args()
    out = os.path.join(HERE, "out", "edgeab")
    stack = Stack(out, smoke=False)
    try:
        codes = stack.create_batch(args.links)
        files = {}
        for prefix in ("", "r/", "nc/"):
            files[prefix] = os.path.join(out, f"codes-{prefix.strip('/') or 'all'}.txt")
            write_codes(files[prefix], [prefix + c for c in codes])
        script = os.path.join(HERE, "random_code.lua")
        url = f"http://127.0.0.1:{stack.nginx_port}"
        figures = {m: {"r": [], "nc": [], "ratio": [], "rps": []} for m in args.modules}
        for rnd in range(args.rounds):
            for m in args.modules:
                harness.MODULE = os.path.abspath(m)
                stack.start_nginx("64m")
                run(stack, url, 5, files["nc/"], script)  # fill the zone
                r_us, _ = run(stack, url, args.seconds, files["r/"], script)
                nc_us, nc_rps = run(stack, url, args.seconds, files["nc/"], script)
                f = figures[m]
                f["r"].append(r_us)
                f["nc"].append(nc_us)
                f["ratio"].append(nc_us / r_us)
                f["rps"].append(nc_rps)
                print(f"round {rnd + 1} {m}: return 302 {r_us:.2f} µs, cached {nc_us:.2f} µs "
                      f"({nc_us / r_us:.3f}x), {nc_rps:,.0f} req/s", flush=True)
        print("\nmedians (workers' CPU per request):")
        for m, f in figures.items():
            med = {k: statistics.median(v) for k, v in f.items()}
            print(f"  {m}: return 302 {med['r']:.2f} µs, cached {med['nc']:.2f} µs, "
                  f"ratio {med['ratio']:.3f}, {med['rps']:,.0f} req/s")
    finally:
        stack.close()


if __name__ == "__main__":
    main()
