#!/usr/bin/env python3
"""Batch creation throughput: POST /api/v1/links/batch with N links per call,
over one keep-alive connection, for a fixed number of calls."""
import http.client, json, os, sys, time

host, port = sys.argv[1], int(sys.argv[2])
per_call = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
calls = int(sys.argv[4]) if len(sys.argv) > 4 else 10
key = os.environ["SHORTLINK_KEY"]
conn = http.client.HTTPConnection(host, port)
bodies = [
    json.dumps({"links": [{"url": f"https://example.com/batch/{c}/{i}?utm_source=bench"} for i in range(per_call)]})
    for c in range(calls)
]
start = time.perf_counter()
created = 0
for body in bodies:
    conn.request("POST", "/api/v1/links/batch", body, {"Content-Type": "application/json", "X-Api-Key": key})
    resp = conn.getresponse()
    data = json.loads(resp.read())
    assert resp.status == 200, data
    created += data["created"]
elapsed = time.perf_counter() - start
print(f"{calls} calls x {per_call} links: {created} created in {elapsed:.2f} s = {created / elapsed:,.0f} links/s ({elapsed / calls * 1000:.0f} ms per call)")
