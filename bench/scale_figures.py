#!/usr/bin/env python3
"""What one link and one click cost in PostgreSQL, measured (issue 40): the
figures docs/SCALE.md's arithmetic starts from.

A private PostgreSQL (testpg's pg-cluster, as bench/pg.py starts it) and
the real daemon (build/bin/shortlinkd) on it, one database per URL mix:

* Bytes per link: --links links (100,000) created through the batch API
  (POST /api/v1/links/batch, 10,000 a call), then VACUUM (ANALYZE) and
  `pg_total_relation_size` (heap, indexes and TOAST) of every table,
  less what it held before the creates, divided by the links. Two URL
  mixes: 29-byte URLs (`https://example.com/p/0000001`) and SMS-campaign
  URLs of 60 to 120 bytes with utm parameters (`campaign_url`).
* Click rows: the campaign database's links clicked through the real path,
  nginx with the module (build/sbin/nginx, two workers,
  `shortlink_country $http_cf_ipcountry`) and the daemon, with the
  User-Agent, Referer and CF-IPCountry headers of an SMS campaign's
  visitors (`visitor`): the module classifies the device and the bot flag,
  takes the referrer's host and the country, counts per link and hour and
  sends its batches; the daemon writes them. Links get 1, 3, 10, ... 3,600
  clicks each (CLICK_GROUPS), all in one hour, so each group gives the
  `clicks` rows of a link-hour at that many clicks, and the bytes per row.

Writes bench/results-scale.json; with --write also the "Sizes on
PostgreSQL" section of BENCHMARKS.md.

    python3 bench/scale_figures.py [--links 100000] [--write]     # make scale-figures
"""

import argparse
import concurrent.futures
import datetime
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import time

import harness
from harness import HERE, MODULE, NGINX, ROOT, Stack, free_port
from pg import Postgres, settled_clicks
from pgstatements import pg_bin

# Links per number of clicks in the hour: (clicks per link, links). About
# 100,000 clicks in all; more links where each has few clicks, so every
# group's mean rests on many link-hours.
CLICK_GROUPS = [(1, 3000), (3, 2000), (10, 1000), (30, 300), (100, 150), (300, 50), (1000, 20), (3600, 6)]

# An SMS campaign's visitors (shares of all clicks). Link previews and
# scanners come first: an SMS app or a carrier fetches the link before a
# person taps it.
BOT_AGENTS = [
    # iMessage's link preview
    (0.40, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) "
           "Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"),
    (0.20, "WhatsApp/2.24.6.77 A"),
    (0.15, "okhttp/4.12.0"),
    (0.10, "TelegramBot (like TwitterBot)"),
    (0.10, "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
    (0.05, "curl/7.88.1"),
]
PEOPLE_AGENTS = [
    (0.52, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
           "Version/17.4 Mobile/15E148 Safari/604.1"),
    (0.42, "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/123.0.0.0 Mobile Safari/537.36"),
    (0.05, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/123.0.0.0 Safari/537.36"),
    (0.01, "Mozilla/5.0 (Mobile; LYF/F300B/LYF-F300B-001-01-15-130718-i;Android; rv:48.0) "
           "Gecko/48.0 Firefox/48.0 KAIOS/2.5"),
]
BOT_SHARE = 0.08
# People's Referer: most taps come straight from the SMS app (none).
REFERERS = [
    (0.92, None),
    (0.02, "https://www.google.com/"),
    (0.02, "android-app://com.google.android.gm/"),
    (0.02, "https://l.facebook.com/l.php?u=x"),
    (0.01, "https://t.co/abc"),
    (0.01, "https://mail.yahoo.com/d/folders/1"),
]
# CF-IPCountry; None: no header (the unknown country).
COUNTRIES = [(0.85, "US"), (0.05, "CA"), (0.04, "MX"), (0.01, "GB"), (0.01, "DE"), (0.01, "IN"),
             (0.01, "PH"), (0.02, None)]

MIX_TEXT = (
    f"{BOT_SHARE:.0%} link previews and scanners (iMessage 40%, WhatsApp 20%, okhttp 15%, "
    "Telegram 10%, Googlebot 10%, curl 5% of them); people on iOS 52%, Android 42%, desktop 5%, "
    "KaiOS 1%, 92% with no Referer and the rest from 5 hosts; country (CF-IPCountry) "
    "US 85%, CA 5%, MX 4%, GB, DE, IN, PH 1% each, none 2%"
)


def pick(rng, table):
    x = rng.random()
    for share, value in table:
        x -= share
        if x < 0:
            return value
    return table[-1][1]


def visitor(rng):
    """One click's headers."""
    if rng.random() < BOT_SHARE:
        return {"User-Agent": pick(rng, BOT_AGENTS)}
    headers = {"User-Agent": pick(rng, PEOPLE_AGENTS)}
    referer = pick(rng, REFERERS)
    if referer:
        headers["Referer"] = referer
    country = pick(rng, COUNTRIES)
    if country:
        headers["CF-IPCountry"] = country
    return headers


def short_url(i):
    """A 29-byte URL."""
    return f"https://example.com/p/{i:07d}"


SHOPS = ["www.example-shop.com", "shop.example.co.uk", "example-brand.com", "go.example-retail.de",
         "www.example-telecom.fr", "m.example-bank.com", "offers.example-air.com", "example.store"]
PATHS = ["/", "/sale", "/spring-sale/women", "/p/{n}", "/offers/2026/black-friday", "/app/download",
         "/c/shoes/running", "/account/renew", "/l/{n}", "/events/summer-fest/tickets"]
CAMPAIGNS = ["spring26", "bf_2026_wave2", "renewal_q3", "app_install", "loyalty", "flash_sale_0612"]


def campaign_url(rng, i):
    """An SMS campaign URL of 60 to 120 bytes: a shop, a path, utm
    parameters and often a per-recipient id."""
    while True:
        path = rng.choice(PATHS).format(n=rng.randrange(10**7))
        medium = f"&utm_medium={rng.choice(['sms', 'mms', 'rcs'])}" if rng.random() < 0.7 else ""
        query = f"utm_source=sms{medium}&utm_campaign={rng.choice(CAMPAIGNS)}"
        if rng.random() < 0.7:
            query += f"&utm_content={i:x}"
        if rng.random() < 0.3:
            query += f"&rid={rng.getrandbits(48):012x}"
        url = f"https://{rng.choice(SHOPS)}{path}?{query}"
        if 60 <= len(url) <= 120:
            return url


class Psql:
    """psql on one database of the cluster, as its owner (a superuser)."""

    def __init__(self, cluster, dbname=None):
        with open(cluster.database["password_file"]) as f:
            self.env = dict(os.environ, PGPASSWORD=f.read().strip())
        base = cluster.database["url"]
        self.url = base.rsplit("/", 1)[0] + "/" + dbname if dbname else base
        self.psql = os.path.join(pg_bin(), "psql")

    def sql(self, text):
        r = subprocess.run([self.psql, "-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1", self.url,
                            "-c", text], env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"scale_figures: psql {text!r}: {r.stderr}")
        return [line.split("|") for line in r.stdout.splitlines() if line]

    def sizes(self):
        """Per table: rows, and bytes in all (heap, indexes, TOAST), heap,
        indexes."""
        self.sql("VACUUM (ANALYZE)")
        out = {}
        for name in [r[0] for r in self.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]:
            rows = int(self.sql(f"SELECT count(*) FROM {name}")[0][0])
            total, heap, idx = (int(x) for x in self.sql(
                f"SELECT pg_total_relation_size('{name}'), pg_relation_size('{name}'), "
                f"pg_indexes_size('{name}')")[0])
            out[name] = {"rows": rows, "total": total, "heap": heap, "indexes": idx}
        return out

    def index_sizes(self, table):
        """Bytes of each index of `table`."""
        return {name: int(size) for name, size in self.sql(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            f"WHERE i.indrelid = '{table}'::regclass ORDER BY 2 DESC")}


def create_links(stack, urls):
    """`urls` as links, through POST /api/v1/links/batch (10,000 a call);
    their (code, id) in order."""
    links = []
    for start in range(0, len(urls), 10000):
        items = [{"url": u} for u in urls[start:start + 10000]]
        status, body = stack.api("POST", "/api/v1/links/batch", {"links": items})
        assert status in (200, 201), (status, body[:300])
        links += [(r["link"]["code"], r["link"]["id"]) for r in json.loads(body)["results"]]
    return links


def link_bytes(cluster, name, urls):
    """A database of its own, a daemon on it, `urls` created: the tables'
    growth per link. Returns the figures and the running stack (the
    caller closes it)."""
    Psql(cluster).sql(f"CREATE DATABASE {name}")
    db = Psql(cluster, name)
    database = dict(cluster.database, url=db.url)
    stack = Stack(os.path.join(HERE, "out", f"scale-{name}"), False, database=database)
    before = db.sizes()
    before_idx = db.index_sizes("links")
    t0 = time.monotonic()
    links = create_links(stack, urls)
    took = time.monotonic() - t0
    after = db.sizes()
    after_idx = db.index_sizes("links")
    n = len(urls)
    grew = {t: {k: after[t][k] - before.get(t, {}).get(k, 0) for k in after[t]} for t in after}
    grew = {t: g for t, g in grew.items() if g["total"] > 0 or g["rows"] > 0}
    # Tables with a row per link (or more), and the others (a few rows:
    # the API key's last use, id ranges), which do not grow with links.
    per_link = {t: g for t, g in grew.items() if g["rows"] >= n // 2}
    lengths = [len(u) for u in urls]
    stored = float(db.sql("SELECT avg(octet_length(url)) FROM links")[0][0])
    fig = {
        "links": n,
        "url_bytes_mean": round(statistics.mean(lengths), 1),
        "url_bytes_min": min(lengths),
        "url_bytes_max": max(lengths),
        "stored_url_bytes_mean": round(stored, 1),
        "created_per_s": round(n / took),
        "bytes_per_link": round(sum(g["total"] for g in per_link.values()) / n, 1),
        "per_link_tables": sorted(per_link),
        "other_tables_bytes": sum(g["total"] for t, g in grew.items() if t not in per_link),
        "links_table_bytes_per_link": round(grew["links"]["total"] / n, 1),
        "links_heap_bytes_per_link": round(grew["links"]["heap"] / n, 1),
        "links_index_bytes_per_link": round(grew["links"]["indexes"] / n, 1),
        "links_indexes_bytes_per_link": {i: round((size - before_idx.get(i, 0)) / n, 1)
                                         for i, size in after_idx.items()},
        "tables": {t: dict(g, bytes_per_link=round(g["total"] / n, 1)) for t, g in sorted(grew.items())},
    }
    return fig, stack, links, db


def start_nginx(stack):
    """The edge of `stack`: two workers, the country from CF-IPCountry."""
    out = stack.out
    port = free_port()
    user = "user nobody nogroup;\n" if os.getuid() == 0 else ""
    conf = f"""{user}load_module {MODULE};
worker_processes 2;
error_log {out}/logs/error.log warn;
pid {out}/logs/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    shortlink_key_file {stack.key};
    shortlink_zone zone=scale:64m;
    shortlink_pass unix:{out}/ipc.sock;
    shortlink_spool {out}/spool;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            shortlink on;
            shortlink_country $http_cf_ipcountry;
        }}
    }}
}}
"""
    path = os.path.join(out, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    subprocess.run([NGINX, "-p", out, "-c", path, "-t", "-q"], check=True)
    stack.nginx = subprocess.Popen([NGINX, "-p", out, "-c", path, "-g", "daemon off;"])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    time.sleep(0.5)  # workers connect and take the alias snapshot
    return port


def send_clicks(port, requests, threads=4):
    """GET each (code, headers) of `requests` from nginx, over `threads`
    keep-alive connections; the answers' statuses counted."""

    def run(part):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        statuses = {}
        for code, headers in part:
            conn.request("GET", "/" + code, headers=headers)
            r = conn.getresponse()
            r.read()
            statuses[r.status] = statuses.get(r.status, 0) + 1
        conn.close()
        return statuses

    parts = [requests[i::threads] for i in range(threads)]
    total = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        for statuses in pool.map(run, parts):
            for k, v in statuses.items():
                total[k] = total.get(k, 0) + v
    return total


def wait_for_a_whole_hour(seconds_needed):
    """Sleeps into the next hour when this one has less than
    `seconds_needed` left, so each link's clicks fall in one hour."""
    now = datetime.datetime.now(datetime.timezone.utc)
    left = 3600 - (now.minute * 60 + now.second)
    if left < seconds_needed:
        print(f"scale_figures: waiting {left + 2} s for the next hour", file=sys.stderr)
        time.sleep(left + 2)


def click_rows(stack, db, links, seed):
    """Clicks through nginx and the module per CLICK_GROUPS on `links`
    ((code, id) each); the `clicks` rows per link-hour of each group, and
    the bytes per row."""
    rng = random.Random(seed)
    need = sum(n for _, n in CLICK_GROUPS)
    assert len(links) >= need, f"--links must be at least {need} for the click groups"
    group_of = {}
    requests = []
    at = 0
    for clicks, n in CLICK_GROUPS:
        for code, link_id in links[at:at + n]:
            group_of[link_id] = clicks
            requests += [(code, visitor(rng)) for _ in range(clicks)]
        at += n
    rng.shuffle(requests)
    port = start_nginx(stack)
    wait_for_a_whole_hour(300)
    first = links[0][0]
    before = settled_clicks([stack], first)
    t0 = time.monotonic()
    statuses = send_clicks(port, requests)
    took = time.monotonic() - t0
    counted = settled_clicks([stack], first) - before
    assert statuses.get(302) == len(requests), f"not every click was redirected: {statuses}"
    assert counted == len(requests), f"{counted} clicks counted for {len(requests)} sent"
    by_link = {}
    for link_id, _hour, n, clicks in db.sql("SELECT link_id, hour, count(*), sum(count) FROM clicks "
                                             "GROUP BY link_id, hour"):
        by_link.setdefault(int(link_id), []).append((int(n), int(clicks)))
    groups = []
    for clicks, _links in CLICK_GROUPS:
        hours = [h for link_id, k in group_of.items() if k == clicks for h in by_link.get(link_id, [])]
        groups.append({
            "clicks_per_link": clicks,
            "link_hours": len(hours),
            "clicks_per_link_hour": round(statistics.mean(c for _, c in hours), 2),
            "rows_per_link_hour": round(statistics.mean(n for n, _ in hours), 2),
            "rows_per_click": round(sum(n for n, _ in hours) / sum(c for _, c in hours), 4),
        })
    # As the table stands (rows updated by each fold leave dead versions
    # whose space VACUUM frees for reuse but keeps), then packed.
    sizes = db.sizes()
    c = sizes["clicks"]
    db.sql("VACUUM FULL clicks")
    packed = db.sizes()["clicks"]
    return {
        "clicks_sent": len(requests),
        "clicks_counted": counted,
        "seconds": round(took, 1),
        "mix": MIX_TEXT,
        "groups": groups,
        "click_rows": c["rows"],
        "bytes_per_click_row": round(c["total"] / c["rows"], 1),
        "heap_bytes_per_click_row": round(c["heap"] / c["rows"], 1),
        "index_bytes_per_click_row": round(c["indexes"] / c["rows"], 1),
        "packed_bytes_per_click_row": round(packed["total"] / c["rows"], 1),
        "packed_heap_bytes_per_click_row": round(packed["heap"] / c["rows"], 1),
        "click_batches": sizes["click_batches"],
    }


def commit():
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def bullet(text):
    """A Markdown list item, wrapped."""
    return textwrap.fill(" ".join(text.split()), 76, initial_indent="* ", subsequent_indent="  ",
                         break_on_hyphens=False)


def markdown(doc):
    """The "Sizes on PostgreSQL" section of BENCHMARKS.md."""
    s, m, c = doc["short"], doc["campaign"], doc["clicks"]
    indexes = ", ".join(f"`{i}` {b:g}" for i, b in m["links_indexes_bytes_per_link"].items() if b)
    rows = "\n".join(
        f"| {g['clicks_per_link']:,} | {g['link_hours']:,} | {g['clicks_per_link_hour']:,g} | "
        f"{g['rows_per_link_hour']:g} | {g['rows_per_click']:.3f} |" for g in c["groups"])
    links_notes = "\n".join([
        bullet(f"""Tables with a row per link: {", ".join(f"`{t}`" for t in m["per_link_tables"])} (a create
               without an alias writes no change-log row). The other tables grew by
               {m['other_tables_bytes'] / 1024:,.0f} KiB in all (the API key's last use, id ranges),
               not per link."""),
        bullet(f"""The `links` indexes, bytes per link (campaign URLs): {indexes}. Every
               link keeps its URL's 32-byte dedupe hash, indexed, so a later create
               with `dedupe` finds it."""),
        bullet(f"""Clicks: {c['clicks_sent']:,} requests through nginx (the module, two
               workers, `shortlink_country $http_cf_ipcountry`) to the campaign links,
               all redirected and all counted once ({c['clicks_counted']:,.0f}), each
               link's clicks within one hour ({c['seconds']:g} s of sending). The
               visitors: {c['mix']}. A `clicks` row is one link, hour, device class,
               bot flag, referrer host and country."""),
    ])
    clicks_notes = "\n".join([
        bullet(f"""A `clicks` row takes {c['bytes_per_click_row']:g} bytes ({c['heap_bytes_per_click_row']:g} heap,
               {c['index_bytes_per_click_row']:g} in its two indexes) over {c['click_rows']:,} rows as the
               table stands after `VACUUM` (each fold's upsert leaves a dead version
               whose space is reused, not returned), {c['packed_bytes_per_click_row']:g} bytes
               ({c['packed_heap_bytes_per_click_row']:g} heap) after `VACUUM FULL`."""),
        bullet(f"""The batches: {c['click_batches']['rows']:,} `click_batches` rows (one per worker
               batch, kept `batch_retention_days`) for {c['clicks_sent']:,} clicks."""),
    ])
    return f"""## Sizes on PostgreSQL

Produced by `{doc['command']}` at commit `{doc['commit']}` on {doc['date']}
(raw figures: `bench/results-scale.json`). A private PostgreSQL 15 (testpg's
`pg-cluster`) and the real daemon; sizes are `pg_total_relation_size`
(heap, indexes, TOAST) after `VACUUM (ANALYZE)`, less the empty tables'.
`make bench` writes this file anew without this section: run `make
scale-figures` after it.

| links created through `POST /api/v1/links/batch` | URL bytes: mean (range) | bytes per link | heap | indexes |
|---|---:|---:|---:|---:|
| {s['links']:,} of 29 bytes (`https://example.com/p/0000001`) | {s['stored_url_bytes_mean']:g} | {s['bytes_per_link']:g} | {s['links_heap_bytes_per_link']:g} | {s['links_index_bytes_per_link']:g} |
| {m['links']:,} SMS-campaign URLs with utm parameters | {m['stored_url_bytes_mean']:g} ({m['url_bytes_min']}–{m['url_bytes_max']}) | {m['bytes_per_link']:g} | {m['links_heap_bytes_per_link']:g} | {m['links_index_bytes_per_link']:g} |

{links_notes}

| clicks per link in the hour | link-hours | clicks per link-hour | `clicks` rows per link-hour | rows per click |
|---:|---:|---:|---:|---:|
{rows}

{clicks_notes}
"""


def write_section(section):
    """Puts `section` in place of BENCHMARKS.md's "Sizes on PostgreSQL", or
    before "Measured beside it" when there is none yet."""
    path = os.path.join(ROOT, "BENCHMARKS.md")
    with open(path) as f:
        text = f.read()
    start = text.find("\n## Sizes on PostgreSQL\n")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[: start + 1] + section + (text[end:] if end >= 0 else "")
    else:
        at = text.find("\n## Measured beside it\n")
        assert at >= 0, "BENCHMARKS.md has no Measured beside it section"
        text = text[: at + 1] + section + "\n" + text[at + 1:]
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--links", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=40)
    ap.add_argument("--write", action="store_true", help="also write the section of BENCHMARKS.md")
    args = ap.parse_args()
    for binary in (harness.DAEMON, NGINX, MODULE):
        if not os.path.exists(binary):
            sys.exit(f"scale_figures: {binary} missing: run make build")
    rng = random.Random(args.seed)
    cluster = Postgres(os.path.join(HERE, "out", "scale-pg"))
    stacks = []
    try:
        short, stack, _, _ = link_bytes(cluster, "scale_short", [short_url(i) for i in range(args.links)])
        stack.close()
        print("29-byte URLs:", json.dumps(short), file=sys.stderr)
        campaign, stack, links, db = link_bytes(
            cluster, "scale_campaign", [campaign_url(rng, i) for i in range(args.links)])
        stacks.append(stack)
        print("campaign URLs:", json.dumps(campaign), file=sys.stderr)
        clicks = click_rows(stack, db, links, args.seed)
        print("clicks:", json.dumps(clicks), file=sys.stderr)
        with open(os.path.join(stack.out, "logs/error.log")) as f:
            assert "exited on signal" not in f.read(), "an nginx worker crashed: see " + stack.out
    finally:
        for s in stacks:
            s.close()
        cluster.stop()
    argv = " ".join(sys.argv[1:])
    doc = {
        "commit": commit(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": "python3 bench/scale_figures.py" + (f" {argv}" if argv else ""),
        "short": short,
        "campaign": campaign,
        "clicks": clicks,
    }
    with open(os.path.join(HERE, "results-scale.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    section = markdown(doc)
    print(section)
    if args.write:
        write_section(section)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    main()
