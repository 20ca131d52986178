#!/usr/bin/env bash
# Builds the module for Debian's own nginx (/usr/sbin/nginx, 1.22 on Debian 12):
#   1. installs nginx-core and nginx-dev when missing, without letting the
#      package start nginx on port 80;
#   2. copies Debian's nginx source (/usr/share/nginx/src) to
#      target/debian-nginx/src and runs ./configure there with Debian's own
#      arguments (its conf_flags file), so the module signature matches the
#      binary; skipped when already configured with the same arguments;
#   3. builds the module against it (scripts/module.sh, CARGO_TARGET_DIR
#      target/debian) and installs build/debian/ngx_http_shortlink_module.so.
# Idempotent; as root without prompts (sudo otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)

# --- 1. packages -----------------------------------------------------------
packages=(nginx-core nginx-dev)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  # The postinst of the nginx package (a dependency) starts nginx on port 80
  # through invoke-rc.d, systemd or not. A policy-rc.d answering 101 forbids it: put one in
  # place for the install only, unless the machine already has one.
  policy=/usr/sbin/policy-rc.d
  own_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# shortlink: scripts/debian-nginx.sh, removed after the install\nexit 101\n' \
      | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 0755 "$policy"
    own_policy=1
    trap '"${sudo[@]}" rm -f "$policy"' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  status=0
  { "${sudo[@]}" apt-get update -qq &&
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } || status=$?
  if [ -n "$own_policy" ]; then
    "${sudo[@]}" rm -f "$policy"
    trap - EXIT
  fi
  [ "$status" -eq 0 ] || exit "$status"
fi
# Whatever the policy, never leave the package's nginx running on port 80.
if [ -s /run/nginx.pid ] && "${sudo[@]}" kill -0 "$(cat /run/nginx.pid)" 2>/dev/null; then
  echo "stopping the nginx started by the package (pid $(cat /run/nginx.pid))"
  "${sudo[@]}" /usr/sbin/nginx -q -s quit 2>/dev/null || "${sudo[@]}" kill -QUIT "$(cat /run/nginx.pid)" || true
  for _ in $(seq 50); do [ -s /run/nginx.pid ] || break; sleep 0.1; done
fi

# --- 2. configured copy of Debian's source ---------------------------------
src=/usr/share/nginx/src
[ -f "$src/src/core/nginx.h" ] || { echo "debian-nginx.sh: no nginx source in $src (nginx-dev)" >&2; exit 1; }
[ -f "$src/conf_flags" ] || { echo "debian-nginx.sh: no $src/conf_flags (nginx-dev)" >&2; exit 1; }
dst=$root/target/debian-nginx/src
version=$(dpkg-query -W -f='${Version}' nginx-dev)

# conf_flags is a bash array assignment, NGX_CONF_FLAGS=( ... ), the
# arguments every Debian flavour of nginx is configured with (the rest of
# `nginx -V` is modules, which do not change the module signature).
NGX_CONF_FLAGS=()
# shellcheck disable=SC1091
. "$src/conf_flags"
flags=("${NGX_CONF_FLAGS[@]}")
[ ${#flags[@]} -gt 0 ] || { echo "debian-nginx.sh: no NGX_CONF_FLAGS in $src/conf_flags" >&2; exit 1; }
# Debian's binary is built --with-compat, which is what lets a module built
# elsewhere load into it: insist on it.
printf '%s\n' "${flags[@]}" | grep -qx -- '--with-compat' || flags+=(--with-compat)
stamp_want=$(printf 'nginx-dev %s\n' "$version"; printf '%s\n' "${flags[@]}")

if [ ! -f "$dst/objs/ngx_auto_config.h" ] || [ "$(cat "$dst/.shortlink-configured" 2>/dev/null)" != "$stamp_want" ]; then
  echo "configuring Debian's nginx $version source in ${dst#"$root"/}"
  rm -rf "$dst"
  mkdir -p "$(dirname "$dst")"
  cp -a "$src" "$dst"
  (cd "$dst" && ./configure "${flags[@]}" >"$dst/configure.log" 2>&1) || {
    echo "debian-nginx.sh: ./configure failed, see ${dst#"$root"/}/configure.log" >&2
    tail -n 20 "$dst/configure.log" >&2
    exit 1
  }
  printf '%s\n' "$stamp_want" >"$dst/.shortlink-configured"
fi

# --- 3. the module ---------------------------------------------------------
CARGO_TARGET_DIR=$root/target/debian OUT=$root/build/debian \
  "$root/scripts/module.sh" "$dst"

# load_module refuses a module whose signature (pointer and type sizes, and
# the configure-time features that change struct layouts) differs from the
# binary's: check it here rather than at the first `nginx -t`.
so=$root/build/debian/ngx_http_shortlink_module.so
signature() { grep -aoE '[0-9]+,[0-9]+,[0-9]+,[01]{30,}' "$1" | head -n 1; }
sig_so=$(signature "$so")
if [ -z "$sig_so" ] || ! grep -aqF -- "$sig_so" /usr/sbin/nginx; then
  echo "debian-nginx.sh: module signature '$sig_so' is not /usr/sbin/nginx's" \
    "'$(signature /usr/sbin/nginx)'" >&2
  exit 1
fi
echo "module signature $sig_so matches /usr/sbin/nginx ($(/usr/sbin/nginx -v 2>&1 | sed 's/.*\///'))"
