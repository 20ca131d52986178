#!/usr/bin/env bash
# Builds the module for an nginx you already have, against that nginx's own
# configured source tree (the one `./configure` ran in, with the arguments of
# the binary you run, and --with-compat):
#   scripts/module.sh /path/to/nginx-src        (what `make module NGINX_SRC=...` runs)
# The module is built without the `vendored` feature, with its own cargo
# target directory so it never touches the vendored build, and installed as
#   $OUT/ngx_http_shortlink_module.so           (OUT defaults to build/module)
# Environment: NGINX_BUILD_DIR (default SRC/objs), CARGO_TARGET_DIR (default
# target/module), OUT.
set -euo pipefail

src=${1:-${NGINX_SRC:-}}
if [ -z "$src" ]; then
  echo "usage: make module NGINX_SRC=/path/to/configured/nginx/source" >&2
  exit 2
fi
# Relative paths are taken from where this was run, before moving to the repo.
src=$(cd "$src" && pwd)
objs=${NGINX_BUILD_DIR:-$src/objs}
objs=$(cd "$objs" 2>/dev/null && pwd || echo "$objs")
[ -z "${CARGO_TARGET_DIR:-}" ] || CARGO_TARGET_DIR=$(mkdir -p "$CARGO_TARGET_DIR" && cd "$CARGO_TARGET_DIR" && pwd)
[ -z "${OUT:-}" ] || OUT=$(mkdir -p "$OUT" && cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
root=$PWD
if [ ! -f "$src/src/core/nginx.h" ]; then
  echo "module.sh: $src is not an nginx source tree (no src/core/nginx.h)" >&2
  exit 1
fi
if [ ! -f "$objs/ngx_auto_config.h" ] || [ ! -f "$objs/Makefile" ]; then
  echo "module.sh: $src is not configured (no $objs/ngx_auto_config.h): run ./configure there" \
    "with your nginx's arguments (nginx -V) and --with-compat" >&2
  exit 1
fi
if ! grep -q 'NGX_COMPAT' "$objs/ngx_auto_config.h"; then
  echo "module.sh: warning: $src was configured without --with-compat; the module loads only" \
    "into a binary built from this very tree" >&2
fi

target_dir=${CARGO_TARGET_DIR:-$root/target/module}
out=${OUT:-$root/build/module}
version=$(sed -n 's/^#define NGINX_VERSION *"\(.*\)"/\1/p' "$src/src/core/nginx.h")
echo "building the module for nginx $version from ${src#"$root"/} (target dir ${target_dir#"$root"/})"

start=$SECONDS
NGINX_SOURCE_DIR=$src NGINX_BUILD_DIR=$objs CARGO_TARGET_DIR=$target_dir \
  cargo build --release -p ngx_http_shortlink_module --no-default-features

mkdir -p "$out"
install -m 0644 "$target_dir/release/libngx_http_shortlink_module.so" "$out/ngx_http_shortlink_module.so"
echo "built: ${out#"$root"/}/ngx_http_shortlink_module.so for nginx $version in $((SECONDS - start))s"
