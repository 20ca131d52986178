#!/usr/bin/env bash
# `make demo`: runs the product from build/ under var/demo/ on
# 127.0.0.1:${PORT:-8080}, in the background. `scripts/demo.sh stop` stops it
# and keeps the data. Running it again reuses the key and restarts cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
port=${PORT:-8080}
dir=$root/var/demo
nginx=$root/build/sbin/nginx

stop_nginx() {
  if [ -f "$dir/logs/nginx.pid" ] && kill -0 "$(cat "$dir/logs/nginx.pid")" 2>/dev/null; then
    "$nginx" -p "$dir" -c "$dir/nginx.conf" -s quit || true
    for _ in $(seq 50); do [ -f "$dir/logs/nginx.pid" ] || break; sleep 0.1; done
  fi
}

if [ "${1:-}" = stop ]; then
  stop_nginx
  echo "stopped; data kept in $dir"
  exit 0
fi

mkdir -p "$dir/logs" "$dir/html"
codes=$(cargo run -q --release -p shortlink-core --example codes -- "$dir/key" 3844123)
valid=$(echo "$codes" | awk '$1=="valid"{print $2}')
id=$(echo "$codes" | awk '$1=="valid"{print $3}')
invalid=$(echo "$codes" | awk '$1=="invalid"{print $2}')
echo "valid code $valid" > "$dir/html/passed.txt"

cat > "$dir/nginx.conf" <<CONF
load_module $root/build/modules/ngx_http_shortlink_module.so;
worker_processes 2;
error_log logs/error.log info;
pid logs/nginx.pid;
events { worker_connections 1024; }
http {
    log_format shortlink '\$remote_addr "\$request" \$status code=\$shortlink_code id=\$shortlink_id \$shortlink_cache_status';
    access_log logs/access.log shortlink;
    shortlink_key_file $dir/key;
    server {
        listen 127.0.0.1:$port;
        root html;
        add_header X-Shortlink-Id \$shortlink_id always;
        location / {
            shortlink on;
            try_files /passed.txt =500;
        }
    }
}
CONF

"$nginx" -p "$dir" -c "$dir/nginx.conf" -t -q
stop_nginx
"$nginx" -p "$dir" -c "$dir/nginx.conf"
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done

cat <<MSG

nginx with the shortlink module is running on http://127.0.0.1:$port/ (logs in $dir/logs).
Codes are checked at the edge, with no I/O; valid ones set \$shortlink_code and \$shortlink_id.

  valid code $valid (id $id):
    curl -i http://127.0.0.1:$port/$valid
  invalid code $invalid (wrong check character): 404 from the module
    curl -i http://127.0.0.1:$port/$invalid

Stop with: make stop
MSG
echo
echo "\$ curl -si http://127.0.0.1:$port/$valid | head -1; grep X-Shortlink-Id"
curl -si "http://127.0.0.1:$port/$valid" | grep -E '^HTTP|X-Shortlink-Id'
echo "\$ curl -si http://127.0.0.1:$port/$invalid | head -1"
curl -si "http://127.0.0.1:$port/$invalid" | head -1
