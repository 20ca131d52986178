#!/usr/bin/env bash
# `make demo`: runs the product from build/ under var/demo/: shortlinkd on
# SQLite and nginx with the module on 127.0.0.1:${PORT:-8080}, both in the
# background; creates an API key and a sample link and shows them working.
# `scripts/demo.sh stop` stops both and keeps the data. Running it again
# reuses the key, the API key and the database, and restarts cleanly.
# A failed step is reported with its name and the last lines of its log.
set -eEuo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=scripts/demo-nginx.sh
. "$root/scripts/demo-nginx.sh"
port=${PORT:-8080}
dir=$root/var/demo
nginx=$root/build/sbin/nginx
daemon=$root/build/bin/shortlinkd
base="http://127.0.0.1:$port"

# The step under way and the log that tells about it, for the report below.
step="starting"
step_log=""
at() {
  step=$1
  step_log=${2:-}
}
# set -e stops at the first failed command; say which step it was in and
# show its log instead of exiting without a word. (Subshells and command
# substitutions inherit the trap: only the top level reports.)
on_error() {
  local status=$?
  [ "$BASH_SUBSHELL" -eq 0 ] || exit "$status"
  echo "make demo: FAILED while $step (exit $status)" >&2
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

daemon_args=(--data-dir "$dir/data" --key-file "$dir/key" --ipc-socket "$dir/ipc.sock"
  --api-socket "$dir/api.sock" --spool-dir "$dir/spool" --base-url "$base")
[ "$(id -u)" -eq 0 ] && daemon_args+=(--socket-group nogroup)

stop_all() {
  if [ -f "$dir/logs/nginx.pid" ] && kill -0 "$(cat "$dir/logs/nginx.pid")" 2>/dev/null; then
    "$nginx" -p "$dir" -c "$dir/nginx.conf" -s quit || true
    for _ in $(seq 50); do [ -f "$dir/logs/nginx.pid" ] || break; sleep 0.1; done
  fi
  if [ -f "$dir/shortlinkd.pid" ] && kill -0 "$(cat "$dir/shortlinkd.pid")" 2>/dev/null; then
    kill -TERM "$(cat "$dir/shortlinkd.pid")"
    for _ in $(seq 50); do kill -0 "$(cat "$dir/shortlinkd.pid")" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$dir/shortlinkd.pid"
}

if [ "${1:-}" = stop ]; then
  stop_all
  echo "stopped; data kept in $dir"
  exit 0
fi

at "preparing $dir (stopping the previous run and make demo-cluster, directories, key)"
# make demo-cluster's node 1 listens on the same port.
scripts/demo-cluster.sh stop >/dev/null
stop_all
mkdir -p "$dir/logs" "$dir/data" "$dir/spool"
# nginx workers write undeliverable clicks here, and nobody else may: as
# root the workers run as nobody:nogroup (below), otherwise as this user.
if [ "$(id -u)" -eq 0 ]; then
  chown nobody:nogroup "$dir/spool"
  chmod 0770 "$dir/spool"
else
  chmod 0700 "$dir/spool"
fi
[ -f "$dir/key" ] || "$daemon" keygen "$dir/key"

at "starting shortlinkd" "$dir/logs/shortlinkd.log"
"$daemon" serve "${daemon_args[@]}" >> "$dir/logs/shortlinkd.log" 2>&1 &
echo $! > "$dir/shortlinkd.pid"
healthy=""
for _ in $(seq 100); do
  if curl -sf --unix-socket "$dir/api.sock" http://localhost/api/v1/health >/dev/null 2>&1; then
    healthy=1
    break
  fi
  kill -0 "$(cat "$dir/shortlinkd.pid")" 2>/dev/null || fail "shortlinkd exited"
  sleep 0.1
done
[ -n "$healthy" ] || fail "shortlinkd did not answer on $dir/api.sock within 10 s"

at "writing and checking $dir/nginx.conf" "$dir/logs/error.log"
write_nginx_conf "$dir/nginx.conf" 2 "$dir/key" "$dir" "$port"
"$nginx" -p "$dir" -c "$dir/nginx.conf" -t -q
at "starting nginx on 127.0.0.1:$port" "$dir/logs/error.log"
"$nginx" -p "$dir" -c "$dir/nginx.conf"
healthy=""
for _ in $(seq 50); do
  if curl -s -o /dev/null "$base/api/v1/health"; then
    healthy=1
    break
  fi
  sleep 0.1
done
[ -n "$healthy" ] || fail "nginx does not answer on $base within 5 s"

at "creating the demo API key" "$dir/logs/shortlinkd.log"
if [ ! -s "$dir/api-key" ]; then
  (umask 077; "$daemon" key create --name demo --scopes links:write,links:read,stats:read,admin "${daemon_args[@]}" > "$dir/api-key")
fi
chmod 600 "$dir/api-key"
api_key=$(cat "$dir/api-key")

at "creating the sample link through nginx" "$dir/logs/error.log"
reply=$(curl -sf -X POST "$base/api/v1/links" -H "X-Api-Key: $api_key" -H 'Content-Type: application/json' \
  -d '{"url": "https://nginx.org/en/docs/", "dedupe": true}')
short_url=$(echo "$reply" | sed 's/.*"short_url":"\([^"]*\)".*/\1/')
code=$(echo "$reply" | sed 's/.*"code":"\([^"]*\)".*/\1/')

cat <<MSG

shortlink is running: nginx on $base, shortlinkd on SQLite in $dir/data (logs in $dir/logs).

  sample short link: $short_url

  see the redirect:
    curl -i $short_url
  create a link (API key in $dir/api-key):
    curl -X POST $base/api/v1/links -H "X-Api-Key: \$(cat $dir/api-key)" -H 'Content-Type: application/json' -d '{"url": "https://example.com/"}'
  its clicks:
    curl $base/api/v1/links/$code/stats -H "X-Api-Key: \$(cat $dir/api-key)"

  admin UI: $base/admin/
    add a user first (the password is read from stdin):
    $daemon user add admin ${daemon_args[*]}

Stop with: make stop
MSG
at "following the sample link" "$dir/logs/error.log"
echo
echo "\$ curl -si $short_url | grep -E '^(HTTP|Location)'"
curl -si "$short_url" | grep -E '^(HTTP|Location)'
