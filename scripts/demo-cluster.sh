#!/usr/bin/env bash
# `make demo-cluster`: two nodes on one PostgreSQL, under var/demo-cluster/.
# A private PostgreSQL cluster (testpg's pg-cluster: initdb into a
# temporary directory, as nobody when run as root, a free port, a password
# file) and two nodes, each nginx with the module and its own shortlinkd on
# that database, with the same deployment key: node 1 on
# 127.0.0.1:${PORT:-8080}, node 2 on ${PORT+1}. It creates a link through
# node 1's API, shows it redirecting on node 2, deletes it on node 1 and
# shows node 2 answering 404.
# `scripts/demo-cluster.sh stop` stops the nodes and PostgreSQL and drops the
# cluster (the key is kept); `make stop` runs it. Running it again starts
# afresh. A failed step is reported with its name and the last lines of its log.
set -eEuo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=scripts/demo-nginx.sh
. "$root/scripts/demo-nginx.sh"
port=${PORT:-8080}
dir=$root/var/demo-cluster
nginx=$root/build/sbin/nginx
daemon=$root/build/bin/shortlinkd
pg_cluster=$root/target/release/pg-cluster

step="starting"
step_log=""
at() {
  step=$1
  step_log=${2:-}
}
on_error() {
  local status=$?
  [ "$BASH_SUBSHELL" -eq 0 ] || exit "$status"
  echo "make demo-cluster: FAILED while $step (exit $status)" >&2
  if [ -n "$step_log" ]; then
    echo "---- last lines of ${step_log#"$root"/}:" >&2
    tail -n 20 "$step_log" >&2 2>/dev/null || echo "(no log yet)" >&2
  fi
  echo "make stop stops what this run started." >&2
  exit "$status"
}
trap on_error ERR
fail() {
  echo "$1" >&2
  false
}

node_dir() { echo "$dir/node$1"; }
node_port() { echo $((port + $1 - 1)); }

# The daemon's arguments for node $1 (the database from pg.env).
daemon_args() {
  local n=$1 d
  d=$(node_dir "$n")
  local args=(--data-dir "$d/data" --key-file "$dir/key" --ipc-socket "$d/ipc.sock"
    --api-socket "$d/api.sock" --spool-dir "$d/spool" --base-url "http://127.0.0.1:$(node_port "$n")"
    --database "$PG_URL" --database-password-file "$PG_PASSWORD_FILE")
  [ "$(id -u)" -eq 0 ] && args+=(--socket-group nogroup)
  printf '%s\n' "${args[@]}"
}

stop_node() {
  local d
  d=$(node_dir "$1")
  if [ -f "$d/logs/nginx.pid" ] && kill -0 "$(cat "$d/logs/nginx.pid")" 2>/dev/null; then
    "$nginx" -p "$d" -c "$d/nginx.conf" -s quit || true
    for _ in $(seq 50); do [ -f "$d/logs/nginx.pid" ] || break; sleep 0.1; done
  fi
  if [ -f "$d/shortlinkd.pid" ] && kill -0 "$(cat "$d/shortlinkd.pid")" 2>/dev/null; then
    kill -TERM "$(cat "$d/shortlinkd.pid")"
    for _ in $(seq 50); do kill -0 "$(cat "$d/shortlinkd.pid")" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$d/shortlinkd.pid"
}

stop_all() {
  stop_node 1
  stop_node 2
  if [ -f "$dir/pg.env" ]; then
    if [ -x "$pg_cluster" ]; then
      "$pg_cluster" stop "$dir"
    else
      echo "demo-cluster: $pg_cluster is missing: PostgreSQL named in $dir/pg.env is still running" >&2
    fi
  fi
}

if [ "${1:-}" = stop ]; then
  if [ -d "$dir" ]; then
    stop_all
    echo "stopped the two nodes and their PostgreSQL; key kept in $dir"
  fi
  exit 0
fi

at "stopping the previous run (and make demo, which shares the port)"
scripts/demo.sh stop >/dev/null
stop_all
mkdir -p "$dir"
[ -f "$dir/key" ] || "$daemon" keygen "$dir/key"

at "starting PostgreSQL (pg-cluster start $dir)"
# PG_DIR, PG_PORT, PG_URL (no password) and PG_PASSWORD_FILE
"$pg_cluster" start "$dir" >/dev/null
# shellcheck disable=SC1091
. "$dir/pg.env"

start_node() {
  local n=$1 d p
  d=$(node_dir "$n")
  p=$(node_port "$n")
  mkdir -p "$d/logs" "$d/data" "$d/spool"
  if [ "$(id -u)" -eq 0 ]; then
    chown nobody:nogroup "$d/spool"
    chmod 0770 "$d/spool"
  else
    chmod 0700 "$d/spool"
  fi
  local args
  mapfile -t args < <(daemon_args "$n")

  at "starting shortlinkd of node $n" "$d/logs/shortlinkd.log"
  "$daemon" serve "${args[@]}" >> "$d/logs/shortlinkd.log" 2>&1 &
  echo $! > "$d/shortlinkd.pid"
  local healthy=""
  for _ in $(seq 100); do
    if curl -sf --unix-socket "$d/api.sock" http://localhost/api/v1/health >/dev/null 2>&1; then
      healthy=1
      break
    fi
    kill -0 "$(cat "$d/shortlinkd.pid")" 2>/dev/null || fail "shortlinkd of node $n exited"
    sleep 0.1
  done
  [ -n "$healthy" ] || fail "shortlinkd of node $n did not answer on $d/api.sock within 10 s"

  at "writing and checking $d/nginx.conf" "$d/logs/error.log"
  write_nginx_conf "$d/nginx.conf" 1 "$dir/key" "$d" "$p"
  "$nginx" -p "$d" -c "$d/nginx.conf" -t -q
  at "starting nginx of node $n on 127.0.0.1:$p" "$d/logs/error.log"
  "$nginx" -p "$d" -c "$d/nginx.conf"
  healthy=""
  for _ in $(seq 50); do
    if curl -s -o /dev/null "http://127.0.0.1:$p/api/v1/health"; then
      healthy=1
      break
    fi
    sleep 0.1
  done
  [ -n "$healthy" ] || fail "nginx of node $n does not answer on 127.0.0.1:$p within 5 s"
}

start_node 1
start_node 2
node1="http://127.0.0.1:$(node_port 1)"
node2="http://127.0.0.1:$(node_port 2)"

at "creating the demo API key (in PostgreSQL, valid on both nodes)" "$(node_dir 1)/logs/shortlinkd.log"
mapfile -t args1 < <(daemon_args 1)
(umask 077; "$daemon" key create --name demo --scopes links:write,links:read,stats:read,admin "${args1[@]}" > "$dir/api-key")
api_key=$(cat "$dir/api-key")

cat <<MSG

Two shortlink nodes on one PostgreSQL (logs in $dir/node*/logs):
  node 1: nginx on $node1, shortlinkd in $(node_dir 1)
  node 2: nginx on $node2, shortlinkd in $(node_dir 2)
  PostgreSQL: $PG_URL (password in $PG_PASSWORD_FILE; data in $PG_DIR)
  API key (both nodes): $dir/api-key

MSG

at "creating a link through node 1" "$(node_dir 1)/logs/error.log"
echo "\$ curl -s -X POST $node1/api/v1/links -H \"X-Api-Key: …\" -d '{\"url\": \"https://nginx.org/en/docs/\"}'"
reply=$(curl -sf -X POST "$node1/api/v1/links" -H "X-Api-Key: $api_key" -H 'Content-Type: application/json' \
  -d '{"url": "https://nginx.org/en/docs/"}')
echo "$reply"
code=$(echo "$reply" | sed 's/.*"code":"\([^"]*\)".*/\1/')
[ -n "$code" ] && [ "$code" != "$reply" ] || fail "no code in node 1's reply: $reply"

at "following the link on node 2" "$(node_dir 2)/logs/error.log"
echo
echo "\$ curl -si $node2/$code | grep -E '^(HTTP|Location)'      # node 2"
curl -si "$node2/$code" | grep -E '^(HTTP|Location)'

at "deleting the link through node 1" "$(node_dir 1)/logs/error.log"
echo
echo "\$ curl -si -X DELETE $node1/api/v1/links/$code -H \"X-Api-Key: …\" | head -n 1      # node 1"
curl -si -X DELETE "$node1/api/v1/links/$code" -H "X-Api-Key: $api_key" | head -n 1
deleted=$(date +%s%N)

at "waiting for node 2 to forget the link" "$(node_dir 2)/logs/shortlinkd.log"
# The delete reaches node 2 through the change log in PostgreSQL: its
# daemon purges its own cache and its nginx zone. Ask until it answers 404.
status=""
for _ in $(seq 100); do
  status=$(curl -s -o /dev/null -w '%{http_code}' "$node2/$code")
  [ "$status" = 404 ] && break
  sleep 0.02
done
took=$((($(date +%s%N) - deleted) / 1000000))
[ "$status" = 404 ] || fail "node 2 still answers $status for $code 2 s after the delete on node 1"
echo
echo "\$ curl -si $node2/$code | head -n 1      # node 2, ${took} ms after the delete on node 1"
curl -si "$node2/$code" | head -n 1

cat <<MSG

Try it yourself (create on one node, follow on the other):
  curl -X POST $node1/api/v1/links -H "X-Api-Key: \$(cat $dir/api-key)" -H 'Content-Type: application/json' -d '{"url": "https://example.com/"}'
  curl -i $node2/CODE

Stop with: make stop
MSG
