#!/usr/bin/env bash
# Release build of nginx (vendored 1.28), the module and the daemon, copied to
# fixed paths:
#   build/sbin/nginx
#   build/modules/ngx_http_shortlink_module.so
#   build/bin/shortlinkd
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(-p ngx_http_shortlink_module)
[ -f daemon/Cargo.toml ] && packages+=(-p shortlinkd)

# The nginx binary must be the one the module was built against: take the
# out_dir that cargo reports for this very build of nginx-sys.
out_dir=$(cargo build --release "${packages[@]}" --message-format=json-render-diagnostics \
  | grep '"reason":"build-script-executed"' | grep '"package_id":"[^"]*nginx-sys' \
  | sed 's/.*"out_dir":"\([^"]*\)".*/\1/' | tail -n 1)
if [ -z "$out_dir" ] || [ ! -x "$out_dir/objs/nginx" ]; then
  echo "build.sh: cannot find the nginx binary built by nginx-sys" >&2
  exit 1
fi

# Copy to a temporary name, then rename: a running nginx or daemon keeps
# its old file (overwriting a mapped .so in place crashes its workers).
place() {
  install -m 0755 "$1" "$2.new.$$"
  mv -f "$2.new.$$" "$2"
}

mkdir -p build/sbin build/modules build/bin
place "$out_dir/objs/nginx" build/sbin/nginx
place target/release/libngx_http_shortlink_module.so build/modules/ngx_http_shortlink_module.so
if [ -f target/release/shortlinkd ] && [ -f daemon/Cargo.toml ]; then
  place target/release/shortlinkd build/bin/shortlinkd
fi
echo "built: build/sbin/nginx ($(build/sbin/nginx -v 2>&1 | sed 's/.*\///')), build/modules/ngx_http_shortlink_module.so"
