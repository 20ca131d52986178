#!/usr/bin/env python3
"""What one durable write costs on this disk: PAGES pages written at the
next place of a file the size of the whole run (preallocated, as SQLite's
WAL is once it has been started over), then `fsync` (or `fdatasync`), N
times in one thread. Prints the thread's CPU (user + system) and the wall
time per commit: the floor under every commit the daemon makes with
`synchronous=FULL`, whatever SQLite or the daemon do around it.

    python3 bench/fsyncrate.py [--pages 2] [--commits 3000] [--datasync] [--dir /var/tmp]
"""

import argparse
import os
import resource
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=2, help="4 KiB pages written per commit")
    ap.add_argument("--commits", type=int, default=3000)
    ap.add_argument("--datasync", action="store_true", help="fdatasync instead of fsync")
    ap.add_argument("--dir", default="/var/tmp", help="a directory on the disk to measure")
    args = ap.parse_args()
    sync = os.fdatasync if args.datasync else os.fsync
    page = b"x" * (4096 * args.pages)
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        fd = os.open(os.path.join(d, "log"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.write(fd, b"\0" * (len(page) * args.commits))
            os.fsync(fd)
            r0, t0 = resource.getrusage(resource.RUSAGE_THREAD), time.perf_counter()
            for i in range(args.commits):
                os.pwrite(fd, page, i * len(page))
                sync(fd)
            r1, t1 = resource.getrusage(resource.RUSAGE_THREAD), time.perf_counter()
        finally:
            os.close(fd)
    cpu = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) / args.commits * 1e6
    wall = (t1 - t0) / args.commits * 1e6
    print(f"{args.pages} pages + {sync.__name__}: {cpu:.1f} µs CPU, {wall:.0f} µs wall per commit "
          f"({args.commits / (t1 - t0):,.0f} commits/s, one thread)")


if __name__ == "__main__":
    main()
