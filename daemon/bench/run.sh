#!/usr/bin/env bash
# Creation throughput of shortlinkd: single creates over keep-alive with wrk
# (1 and 16 connections) and batch creates. Usage: daemon/bench/run.sh [seconds]
set -euo pipefail
secs=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
bin=${SHORTLINKD_BIN:-${CARGO_TARGET_DIR:-$here/../../target}/release/shortlinkd}
dir=$(mktemp -d)
port=${PORT:-18099}
"$bin" keygen "$dir/key" 2>/dev/null
"$bin" serve --data-dir "$dir" --api-listen "127.0.0.1:$port" 2>"$dir/log" &
pid=$!
trap 'kill -TERM $pid; wait $pid; rm -rf "$dir"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/api/v1/health" >/dev/null && break; sleep 0.05; done
export SHORTLINK_KEY=$("$bin" --data-dir "$dir" key create --name bench --scopes links:write)
for c in 1 16; do
  echo "== single POST /api/v1/links, $c connection(s), ${secs}s"
  wrk -t"$(( c < 2 ? 1 : 2 ))" -c"$c" -d"${secs}s" --latency -s "$here/../../bench/create.lua" "http://127.0.0.1:$port"
done
echo "== batch POST /api/v1/links/batch"
python3 "$here/batch.py" 127.0.0.1 "$port" 10000 10
python3 "$here/batch.py" 127.0.0.1 "$port" 1000 50
echo "links stored: $(curl -s "http://127.0.0.1:$port/api/v1/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["links"])')"
