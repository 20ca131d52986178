#!/usr/bin/env python3
"""The SQLite files' sizes under creates that never pause (issue 14): a
fresh stack (harness.Stack, build/bin/shortlinkd), wrk with create.lua on
16 connections for --seconds, and the size of every database file printed
every 2 s. Before 9c68f0b the `-wal` grew for as long as the load lasted
(1,252 MB after 12 s for a 32 MB database); now it stays near the 64 MiB
at which the writer starts it over.

    python3 bench/walgrowth.py [--seconds 12]
"""
import argparse
import glob
import os
import threading
import time

from harness import HERE, Stack, wrk


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=12)
    args = ap.parse_args()
    out = os.path.join(HERE, "out", "walgrowth")
    stack = Stack(out, False)
    try:
        stack.start_nginx("64m")
        api_url = f"http://127.0.0.1:{stack.nginx_api_port()}"
        env = dict(os.environ, SHORTLINK_KEY=stack.api_key)

        def sizes():
            files = glob.glob(os.path.join(out, "**", "*.db*"), recursive=True)
            return {os.path.basename(p): os.path.getsize(p) for p in files}
        result = {}
        load = threading.Thread(target=lambda: result.update(
            wrk(api_url, args.seconds, 16, os.path.join(HERE, "create.lua"), env)))
        load.start()
        for i in range(args.seconds // 2):
            time.sleep(2)
            print(f"{(i + 1) * 2:3d} s", sizes(), flush=True)
        load.join()
        print(f"creates/s: {result.get('rps', 0):,.0f}")
    finally:
        stack.close()


if __name__ == "__main__":
    main()
