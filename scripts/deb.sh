#!/usr/bin/env bash
# `make deb`: two Debian 12 packages in build/deb/, put together with
# dpkg-deb from what `make build` and `make module-debian` made (no network):
#   shortlinkd_V_ARCH.deb                    the daemon, its systemd unit,
#                                            /etc/shortlinkd/shortlinkd.toml
#   libnginx-mod-http-shortlink_V_ARCH.deb   the module for Debian's nginx and
#                                            its snippets
# packaging/<package>/ holds each package's control template, conffiles and
# hand-written maintainer scripts. Filled in here: the version (the
# workspace's), the architecture, the shared libraries the binaries need
# (package >= installed upstream version) and, for the module, the exact
# nginx ABI it was built against (the nginx-abi-* that Debian's nginx
# package provides). Maintainer: $DEBFULLNAME <$DEBEMAIL> when set.
set -euo pipefail
cd "$(dirname "$0")/.."
umask 022
root=$PWD
out=$root/build/deb
stage=$root/target/deb

die() {
  echo "deb.sh: $*" >&2
  exit 1
}

daemon=$root/build/bin/shortlinkd
module=$root/build/debian/ngx_http_shortlink_module.so
[ -x "$daemon" ] || die "no $daemon: run make build"
[ -f "$module" ] || die "no $module: run make module-debian"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (package dpkg)"

upstream=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
[ -n "$upstream" ] || die "no version in Cargo.toml [workspace.package]"
version=$upstream-1
arch=$(dpkg --print-architecture)
maintainer="${DEBFULLNAME:-shortlink maintainers} <${DEBEMAIL:-shortlink@localhost}>"

# --- the nginx the module was built for ------------------------------------
# The package that owns /usr/sbin/nginx provides nginx-abi-<version>; the
# module must have been built from that very version's source (nginx-dev).
nginx_pkg=$(dpkg-query -S /usr/sbin/nginx 2>/dev/null | sed -n 's/^\([^:]*\): .*/\1/p' | head -n 1)
[ -n "$nginx_pkg" ] || die "no Debian package owns /usr/sbin/nginx (make module-debian installs it)"
nginx_version=$(dpkg-query -W -f='${Version}' "$nginx_pkg")
nginx_abi=$(dpkg-query -W -f='${Provides}' "$nginx_pkg" | tr ',' '\n' |
  sed -n 's/^ *\(nginx-abi-[^ ]*\).*/\1/p' | head -n 1)
[ -n "$nginx_abi" ] || die "$nginx_pkg $nginx_version provides no nginx-abi-* package"
stamp=$root/target/debian-nginx/src/.shortlink-configured
built_for=$(sed -n '1s/^nginx-dev //p' "$stamp" 2>/dev/null)
[ "$built_for" = "$nginx_version" ] ||
  die "the module was built against nginx-dev '${built_for:-?}', the installed $nginx_pkg is $nginx_version: run make module-debian"

# --- the packaged layout must agree with itself ------------------------------
# conf/ is the packaged layout: what the daemon's config and nginx's http{}
# snippet name must be the same key, socket and spool.
toml_value() { sed -n "s/^$1 *= *\"\(.*\)\"/\1/p" conf/shortlinkd.toml; }
nginx_value() { sed -n "s/^$1 *\([^;]*\);.*/\1/p" conf/nginx/shortlink-http.conf; }
[ "$(toml_value key_file)" = "$(nginx_value shortlink_key_file)" ] ||
  die "key_file in conf/shortlinkd.toml is not shortlink_key_file in conf/nginx/shortlink-http.conf"
[ "unix:$(toml_value ipc_socket)" = "$(nginx_value shortlink_pass)" ] ||
  die "ipc_socket in conf/shortlinkd.toml is not shortlink_pass in conf/nginx/shortlink-http.conf"
[ "$(toml_value spool_dir)" = "$(nginx_value shortlink_spool)" ] ||
  die "spool_dir in conf/shortlinkd.toml is not shortlink_spool in conf/nginx/shortlink-http.conf"

# "pkg (>= upstream version)" for every shared library $1 links.
shlibs() {
  local lib pkg ver deps=() seen=" "
  while read -r lib; do
    pkg=$(dpkg-query -S "$lib" 2>/dev/null | grep -v '^diversion' | sed -n 's/^\([^:]*\):.*/\1/p' | head -n 1)
    [ -n "$pkg" ] || die "no Debian package owns $lib, which $1 needs"
    case $seen in *" $pkg "*) continue ;; esac
    seen="$seen$pkg "
    ver=$(dpkg-query -W -f='${Version}' "$pkg" | sed 's/-[^-]*$//')
    deps+=("$pkg (>= $ver)")
  done < <(ldd "$1" | sed -n 's/.* => \(\/[^ ]*\) .*/\1/p')
  [ ${#deps[@]} -gt 0 ] || die "ldd found no shared library in $1"
  local joined
  joined=$(printf '%s, ' "${deps[@]}")
  echo "${joined%, }"
}

# A fresh tree for package $1, with its maintainer scripts and conffiles.
start_tree() {
  local dir=$stage/$1 f
  rm -rf "$dir"
  install -d -m 0755 "$dir/DEBIAN"
  for f in postinst prerm postrm; do
    install -m 0755 "packaging/$1/$f" "$dir/DEBIAN/$f"
  done
  install -m 0644 "packaging/$1/conffiles" "$dir/DEBIAN/conffiles"
}

# put MODE SRC DEST: install a file at DEST inside the tree.
put() {
  install -D -m "$1" "$2" "$3"
}

# Strips symbols as dh_strip does (dynamic symbols stay).
strip_in_place() {
  strip --strip-unneeded --remove-section=.comment --remove-section=.note "$1"
}

# control from the template, md5sums, then the .deb.
finish() {
  local name=$1 dir=$stage/$1 size
  shift
  size=$(du -sk --exclude=DEBIAN "$dir" | cut -f1)
  local sed_args=(-e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|"
    -e "s|@MAINTAINER@|$maintainer|" -e "s|@INSTALLED_SIZE@|$size|")
  local kv
  for kv in "$@"; do sed_args+=(-e "s|@${kv%%=*}@|${kv#*=}|"); done
  sed "${sed_args[@]}" "packaging/$name/control" >"$dir/DEBIAN/control"
  chmod 0644 "$dir/DEBIAN/control"
  if grep -n '@[A-Z_]*@' "$dir/DEBIAN/control"; then die "unfilled field in $name's control"; fi
  for f in "${conffiles[@]}"; do [ -f "$dir$f" ] || die "conffile $f is not in $name"; done
  (cd "$dir" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
    xargs -0 md5sum >DEBIAN/md5sums)
  chmod 0644 "$dir/DEBIAN/md5sums"
  dpkg-deb --root-owner-group -Zxz --build "$dir" "$out/${name}_${version}_${arch}.deb" >/dev/null
  echo "built: build/deb/${name}_${version}_${arch}.deb"
}

mkdir -p "$out"
rm -f "$out"/*.deb

# --- shortlinkd --------------------------------------------------------------
start_tree shortlinkd
t=$stage/shortlinkd
put 0755 "$daemon" "$t/usr/bin/shortlinkd"
strip_in_place "$t/usr/bin/shortlinkd"
# The unit as shipped in conf/, hardening and all; only the binary's path moves.
install -d -m 0755 "$t/lib/systemd/system"
sed 's|/usr/local/bin/shortlinkd|/usr/bin/shortlinkd|g' conf/shortlinkd.service >"$t/lib/systemd/system/shortlinkd.service"
chmod 0644 "$t/lib/systemd/system/shortlinkd.service"
grep -q '^ExecStart=/usr/bin/shortlinkd ' "$t/lib/systemd/system/shortlinkd.service" ||
  die "conf/shortlinkd.service does not start /usr/local/bin/shortlinkd"
put 0644 conf/shortlinkd.toml "$t/etc/shortlinkd/shortlinkd.toml"
put 0644 README.md "$t/usr/share/doc/shortlinkd/README.md"
# The pages README.md links to, at the same relative paths.
for doc in docs/*.md docs/screenshots/*.png; do
  put 0644 "$doc" "$t/usr/share/doc/shortlinkd/$doc"
done
put 0644 packaging/copyright "$t/usr/share/doc/shortlinkd/copyright"
mapfile -t conffiles <packaging/shortlinkd/conffiles
finish shortlinkd "SHLIBS=$(shlibs "$daemon")"

# --- libnginx-mod-http-shortlink ---------------------------------------------
name=libnginx-mod-http-shortlink
start_tree "$name"
t=$stage/$name
put 0644 "$module" "$t/usr/lib/nginx/modules/ngx_http_shortlink_module.so"
strip_in_place "$t/usr/lib/nginx/modules/ngx_http_shortlink_module.so"
put 0644 "packaging/$name/mod-http-shortlink.conf" "$t/usr/share/nginx/modules-available/mod-http-shortlink.conf"
put 0644 conf/nginx/shortlink-http.conf "$t/etc/nginx/snippets/shortlink-http.conf"
put 0644 conf/nginx/shortlink-api-errors.conf "$t/etc/nginx/snippets/shortlink-api-errors.conf"
put 0644 conf/nginx/short-domains.conf "$t/etc/nginx/sites-available/shortlink"
put 0644 packaging/copyright "$t/usr/share/doc/$name/copyright"
mapfile -t conffiles <"packaging/$name/conffiles"
finish "$name" "SHLIBS=$(shlibs "$module")" "NGINX_ABI=$nginx_abi" "NGINX_VERSION=$nginx_version"
