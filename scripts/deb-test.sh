#!/usr/bin/env bash
# `make deb-test`: the packages of `make deb` installed on this machine and
# serving, then removed and purged. CI runs it as root on a throwaway
# machine; elsewhere it re-runs itself with sudo and refuses to touch
# packages it did not install itself.
#   1. apt-get install ./build/deb/*.deb; the user, directories, key and
#      module symlink as the packages promise; a reinstall changes nothing;
#   2. shortlinkd started as its systemd unit says (systemctl where systemd
#      runs; else the unit's own User, Group, SupplementaryGroups, UMask,
#      RuntimeDirectory and ExecStart, read from the installed unit file);
#   3. /usr/sbin/nginx -t on Debian's own nginx.conf with docs/install.md's
#      step 3 (the conf.d and sites-enabled links, kept to the end), then
#      nginx on a free loopback port with the packaged modules-enabled
#      link, the http{} snippet and the example server (its port and log
#      path substituted);
#   4. an API key from the packaged CLI, a link created through nginx, its
#      redirect (MISS, then HIT), the fallback for an unknown code;
#   5. clicks through the packaged spool: with the daemon down, cached
#      redirects go on, nginx's workers spool their counts when nginx stops,
#      the restarted daemon imports them and counts every click;
#   6. remove keeps the data and key, purge deletes them; after each,
#      Debian's nginx.conf passes nginx -t and serves (its step 3 links set
#      aside, not left naming a directive or a file that is gone), and a
#      reinstall in between puts the links back.
# Any failed step stops the test with its name and the logs' tails; the
# packages are purged whatever happens. Logs: target/deb-test/.
# Checks read "[ A ] && [ B ] || fail ...": fail runs when any test fails.
# shellcheck disable=SC2015
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if [ "$(id -u)" -ne 0 ]; then
  exec sudo "$0" "$@"
fi

work=$root/target/deb-test
marker=$work/installed-by-deb-test
packages=(shortlinkd libnginx-mod-http-shortlink)
export DEBIAN_FRONTEND=noninteractive
apt_get=(apt-get -y -qq -o Dpkg::Use-Pty=0)
ua='Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'

step=starting
daemon_pid=
guide_files=()
nginx_conf=$work/nginx.conf

say() { echo "deb-test: $*"; }
begin() {
  step=$*
  say "-- $step"
}
fail() {
  echo "deb-test: FAILED at '$step': $*" >&2
  exit 1
}
# expect_stat PATH "MODE USER:GROUP"
expect_stat() {
  local got
  got=$(stat -c '%a %U:%G' "$1") || fail "$1 is missing"
  [ "$got" = "$2" ] || fail "$1 is '$got', expected '$2'"
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

on_exit() {
  local status=$?
  trap - EXIT
  if [ "$status" -ne 0 ]; then
    echo "deb-test: FAILED at '$step' (exit $status); logs in ${work#"$root"/}/" >&2
    local log
    for log in "$work/shortlinkd.log" "$work/error.log" "$work/apt.log"; do
      [ -s "$log" ] || continue
      echo "---- last lines of ${log#"$root"/}" >&2
      tail -n 25 "$log" >&2
    done
  fi
  stop_nginx || true
  stop_daemon || true
  [ ${#guide_files[@]} -eq 0 ] || rm -f "${guide_files[@]}"
  if [ -f "$marker" ]; then
    say "purging ${packages[*]}"
    "${apt_get[@]}" purge "${packages[@]}" >>"$work/apt.log" 2>&1 || status=1
    rm -f "$marker"
  fi
  [ "$status" -eq 0 ] && say "passed"
  exit "$status"
}

# --- the unit file, read as systemd would -----------------------------------
unit=/lib/systemd/system/shortlinkd.service
unit_value() {
  sed -n "s/^$1=//p" "$unit" | tail -n 1
}

start_daemon() {
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    systemctl restart shortlinkd.service
    daemon_pid=$(systemctl show -p MainPID --value shortlinkd.service)
  else
    local user group supp umask_ runtime runtime_mode groups exec_line
    user=$(unit_value User)
    group=$(unit_value Group)
    supp=$(unit_value SupplementaryGroups)
    umask_=$(unit_value UMask)
    runtime=$(unit_value RuntimeDirectory)
    runtime_mode=$(unit_value RuntimeDirectoryMode)
    exec_line=$(unit_value ExecStart)
    [ -n "$user" ] && [ -n "$group" ] && [ -n "$exec_line" ] || fail "$unit lacks User, Group or ExecStart"
    # systemd: RuntimeDirectory= made for User:Group with its mode; the
    # user's own groups (initgroups) plus SupplementaryGroups=.
    if [ -n "$runtime" ]; then
      install -d -o "$user" -g "$group" -m "${runtime_mode:-0755}" "/run/$runtime"
    fi
    groups=$(id -Gn "$user" | tr ' ' '\n')
    [ -z "$supp" ] || groups+=$'\n'$(tr ' ' '\n' <<<"$supp")
    groups=$(sort -u <<<"$groups" | paste -sd, -)
    local -a argv
    read -ra argv <<<"$exec_line"
    [ -x "${argv[0]}" ] || fail "ExecStart ${argv[0]} is not an executable"
    say "as $user:$group (groups $groups, umask ${umask_:-0022}): ${argv[*]}"
    (
      umask "${umask_:-0022}"
      exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        setpriv --reuid="$user" --regid="$group" --groups="$groups" \
        --no-new-privs --inh-caps=-all --bounding-set=-all -- "${argv[@]}"
    ) >>"$work/shortlinkd.log" 2>&1 &
    daemon_pid=$!
  fi
  local _
  for _ in $(seq 100); do
    if curl -sf --unix-socket "$api_sock" http://localhost/api/v1/health >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$daemon_pid" 2>/dev/null || fail "shortlinkd exited at start"
    sleep 0.1
  done
  fail "shortlinkd did not answer on $api_sock within 10 s"
}

# Stops the daemon as systemd would (the unit's KillSignal); fails when it
# does not exit cleanly. Returns instead of exiting: on_exit calls it too.
stop_daemon() {
  [ -n "$daemon_pid" ] || return 0
  local pid=$daemon_pid sig status=0
  daemon_pid=
  if [ -d /run/systemd/system ]; then
    systemctl stop shortlinkd.service || return 1
  else
    sig=$(unit_value KillSignal)
    kill -s "${sig:-SIGTERM}" "$pid" 2>/dev/null || true
    wait "$pid" || status=$?
    if [ "$status" -ne 0 ]; then
      echo "deb-test: shortlinkd exited with status $status on ${sig:-SIGTERM}" >&2
      return 1
    fi
  fi
}

# nginx -t on Debian's own /etc/nginx/nginx.conf as the operator left it,
# then that configuration started and serving its default site on port
# 80: in a private network namespace (the machine's port 80 may be the
# system nginx's), its pid and logs moved into $work.
debian_nginx_serves() {
  /usr/sbin/nginx -t 2>&1 | sed 's/^/    /'
  /usr/sbin/nginx -t -q || fail "nginx -t fails on /etc/nginx/nginx.conf"
  local conf=$work/debian-nginx.conf pid=$work/debian-nginx.pid got
  sed -E -e "s|^([[:space:]]*pid[[:space:]]+).*|\\1$pid;|" \
    -e "s|^([[:space:]]*error_log[[:space:]]+).*|\\1$work/error.log;|" \
    -e "s|^([[:space:]]*access_log[[:space:]]+).*|\\1$work/access.log;|" /etc/nginx/nginx.conf >"$conf"
  grep -q "^pid $pid;" "$conf" || fail "no pid line to move in /etc/nginx/nginx.conf"
  # shellcheck disable=SC2016
  got=$(unshare --net sh -c '
    ip link set lo up || exit 1
    /usr/sbin/nginx -c "$1" || exit 1
    for _ in $(seq 50); do
      code=$(curl -s -o /dev/null -w "%{http_code}" http://127.0.0.1/) && break
      sleep 0.1
    done
    /usr/sbin/nginx -c "$1" -s quit
    for _ in $(seq 100); do [ -e "$2" ] || break; sleep 0.1; done
    echo "$code"' sh "$conf" "$pid" 2>>"$work/error.log") ||
    fail "nginx did not start on Debian's nginx.conf (target/deb-test/error.log)"
  [ "$got" = 200 ] || fail "nginx on Debian's nginx.conf answered '$got' on its default site"
  say "Debian's nginx.conf: nginx -t passes, nginx starts and serves 200"
}

stop_nginx() {
  [ -s "$work/nginx.pid" ] || return 0
  local pid _
  pid=$(cat "$work/nginx.pid")
  /usr/sbin/nginx -c "$nginx_conf" -s quit 2>/dev/null || kill -QUIT "$pid" 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "deb-test: nginx (pid $pid) did not quit within 10 s" >&2
  return 1
}

# A port below the kernel's ephemeral range (so no outgoing connection can
# hold it when nginx binds) that no socket uses now.
free_port() {
  local p low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
  for _ in $(seq 50); do
    p=$((10000 + RANDOM % (low - 10000)))
    [ -z "$(ss -Htan "sport = :$p")" ] && { echo "$p"; return 0; }
  done
  fail "no free port"
}

# curl through nginx with the example server's host name.
fetch() {
  curl -s -o "$work/body" -D "$work/headers" -A "$ua" -H 'Host: s.example.com' "$@"
}
status_of() { sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$work/headers"; }
location_of() { sed -n 's/^[Ll]ocation: *\(.*\)\r$/\1/p' "$work/headers"; }
json_field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$2"; }

# --- 0. the packages, and a machine we may install them on --------------------
begin "packages built"
mkdir -p "$work"
rm -f "$work"/*.log "$work/nginx.pid"
debs=()
for p in "${packages[@]}"; do
  files=("$root"/build/deb/"${p}"_*.deb)
  [ ${#files[@]} -eq 1 ] && [ -f "${files[0]}" ] || fail "expected one build/deb/${p}_*.deb (make deb)"
  debs+=("${files[0]}")
done
for p in "${packages[@]}"; do
  if installed "$p" && [ ! -f "$marker" ]; then
    fail "$p is installed on this machine and not by this test; it would be purged. Run the test on a throwaway machine."
  fi
done
trap on_exit EXIT
if [ -f "$marker" ]; then
  say "purging what an earlier run left"
  "${apt_get[@]}" purge "${packages[@]}" >>"$work/apt.log" 2>&1
fi
abi=$(dpkg-query -W -f='${Provides}' "$(dpkg-query -S /usr/sbin/nginx | cut -d: -f1)" | grep -o 'nginx-abi-[^ ,]*')
dpkg-deb -f "${debs[1]}" Depends | grep -q "$abi" || fail "the module does not depend on $abi"
for d in "${debs[@]}"; do say "$(dpkg-deb -f "$d" Package Version | paste -sd' ')"; done

# --- 1. install -----------------------------------------------------------------
begin "apt-get install ./build/deb/*.deb"
touch "$marker"
"${apt_get[@]}" install --no-install-recommends "${debs[@]}" >>"$work/apt.log" 2>&1 ||
  fail "apt-get install failed (target/deb-test/apt.log)"
for p in "${packages[@]}"; do installed "$p" || fail "$p is not installed"; done

begin "the installed layout"
getent passwd shortlinkd | grep -q ':/var/lib/shortlinkd:/usr/sbin/nologin$' || fail "no system user shortlinkd"
getent group shortlinkd >/dev/null || fail "no group shortlinkd"
[ -x /usr/bin/shortlinkd ] || fail "no /usr/bin/shortlinkd"
expect_stat /var/lib/shortlinkd "750 shortlinkd:shortlinkd"
expect_stat /var/spool/shortlinkd "2770 shortlinkd:www-data"
expect_stat /etc/shortlinkd/key "640 root:shortlinkd"
expect_stat /etc/shortlinkd/shortlinkd.toml "644 root:root"
grep -qE '^[0-9a-f]{64}$' /etc/shortlinkd/key || fail "the key is not 64 hex characters"
runuser -u shortlinkd -- test -r /etc/shortlinkd/key || fail "the daemon cannot read the key"
runuser -u www-data -- test -r /etc/shortlinkd/key && fail "the nginx workers' user can read the key"
runuser -u nobody -- test -r /etc/shortlinkd/key && fail "another user can read the key"
runuser -u www-data -- test -w /var/spool/shortlinkd || fail "the nginx workers cannot write the spool"
runuser -u nobody -- test -w /var/spool/shortlinkd && fail "another user can write the spool"
runuser -u www-data -- test -x /var/lib/shortlinkd && fail "the nginx workers can enter the data directory"
dpkg-query -W -f='${Conffiles}\n' shortlinkd | grep -q ' /etc/shortlinkd/shortlinkd.toml ' ||
  fail "shortlinkd.toml is not a conffile"
link=/etc/nginx/modules-enabled/50-mod-http-shortlink.conf
[ "$(readlink "$link")" = /usr/share/nginx/modules-available/mod-http-shortlink.conf ] ||
  fail "$link is not the symlink to the modules-available snippet"
grep -qx 'load_module modules/ngx_http_shortlink_module.so;' "$link" || fail "$link has no load_module line"
[ -f /usr/lib/nginx/modules/ngx_http_shortlink_module.so ] || fail "no module in /usr/lib/nginx/modules"
grep -q -- '--socket-group' "$unit" && fail "the unit overrides socket_group with a flag"
api_sock=$(sed -n 's/^api_socket *= *"\(.*\)"/\1/p' /etc/shortlinkd/shortlinkd.toml)
ipc_sock=$(sed -n 's/^ipc_socket *= *"\(.*\)"/\1/p' /etc/shortlinkd/shortlinkd.toml)
[ -n "$api_sock" ] && [ -n "$ipc_sock" ] || fail "no api_socket/ipc_socket in shortlinkd.toml"
# systemd applies StateDirectoryMode= at start: the package must agree with it.
[ "$(unit_value StateDirectoryMode)" = 0750 ] || fail "the unit's StateDirectoryMode is not the package's 0750"

begin "a reinstall keeps the user, directories and key"
key_before=$(sha256sum </etc/shortlinkd/key)
"${apt_get[@]}" install --reinstall --no-install-recommends "${debs[@]}" >>"$work/apt.log" 2>&1 ||
  fail "apt-get install --reinstall failed"
[ "$(sha256sum </etc/shortlinkd/key)" = "$key_before" ] || fail "the reinstall changed the key"
expect_stat /etc/shortlinkd/key "640 root:shortlinkd"
expect_stat /var/spool/shortlinkd "2770 shortlinkd:www-data"
[ -L "$link" ] || fail "the reinstall dropped $link"

# --- 2. the daemon as its unit says -------------------------------------------------
begin "shortlinkd started as the unit says"
start_daemon
[ "$(ps -o user= -p "$daemon_pid" | tr -d ' ')" = shortlinkd ] || fail "shortlinkd does not run as user shortlinkd"
# socket_group = "www-data" from shortlinkd.toml, no flag in the unit.
expect_stat "$ipc_sock" "660 shortlinkd:www-data"
expect_stat "$api_sock" "660 shortlinkd:www-data"
expect_stat /var/lib/shortlinkd/control.sock "600 shortlinkd:shortlinkd"
expect_stat "$(dirname "$ipc_sock")" "711 shortlinkd:shortlinkd"

begin "an API key from the packaged CLI"
api_key=$(runuser -u shortlinkd -- /usr/bin/shortlinkd --config /etc/shortlinkd/shortlinkd.toml \
  key create --name deb-test --scopes links:write,links:read,stats:read)
[ -n "$api_key" ] || fail "shortlinkd key create printed no key"

# --- 3. nginx with the packaged snippets --------------------------------------------
begin "nginx -t on Debian's nginx.conf with docs/install.md's step 3"
conf_d=/etc/nginx/conf.d/shortlink.conf
site_link=/etc/nginx/sites-enabled/shortlink
[ ! -e "$conf_d" ] && [ ! -L "$site_link" ] || fail "$conf_d or $site_link exists already"
guide_files=("$conf_d" "$site_link")
ln -s /etc/nginx/snippets/shortlink-http.conf "$conf_d"
ln -s /etc/nginx/sites-available/shortlink "$site_link"
/usr/sbin/nginx -t 2>&1 | sed 's/^/    /'
/usr/sbin/nginx -t -q || fail "nginx -t failed on /etc/nginx/nginx.conf"
# grep -c reads all of nginx -T: with -q it stops at the first match, and
# nginx's SIGPIPE would fail the pipeline (pipefail).
/usr/sbin/nginx -T -q 2>/dev/null | grep -c '^shortlink_key_file  */etc/shortlinkd/key;' >/dev/null ||
  fail "nginx -T does not show the http{} snippet through $conf_d"

begin "nginx -t with the packaged snippets on a free port"
port=$(free_port)
site=/etc/nginx/sites-available/shortlink
sed -E -e "s/^([[:space:]]*listen[[:space:]]+)80;/\\1127.0.0.1:$port;/" \
  -e "s|/var/log/nginx/shortlink.log|$work/shortlink.log|" "$site" >"$work/shortlink-site.conf"
grep -q "listen *127.0.0.1:$port;" "$work/shortlink-site.conf" || fail "no 'listen 80;' to move in $site"
cat >"$nginx_conf" <<CONF
# Debian's nginx.conf in short, with the packaged module and snippets.
user www-data;
worker_processes 2;
pid $work/nginx.pid;
error_log $work/error.log info;
include /etc/nginx/modules-enabled/*.conf;
events { worker_connections 256; }
http {
    include /etc/nginx/mime.types;
    access_log $work/access.log;
    include /etc/nginx/snippets/shortlink-http.conf;
    include $work/shortlink-site.conf;
}
CONF
/usr/sbin/nginx -t -c "$nginx_conf" 2>&1 | sed 's/^/    /'
/usr/sbin/nginx -t -q -c "$nginx_conf" || fail "nginx -t failed"
/usr/sbin/nginx -T -q -c "$nginx_conf" 2>/dev/null | grep -c "^# configuration file $link:" >/dev/null ||
  fail "nginx -T does not show $link"

begin "nginx on 127.0.0.1:$port"
/usr/sbin/nginx -c "$nginx_conf" || fail "nginx did not start"
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.1
done

# --- 4. a link through the packaged layout ------------------------------------------
begin "create a link through nginx"
target=https://example.org/from-the-packages
fetch -X POST "http://127.0.0.1:$port/api/v1/links" -H "X-Api-Key: $api_key" \
  -H 'Content-Type: application/json' -d "{\"url\": \"$target\"}"
[ "$(status_of)" = 201 ] || fail "POST /api/v1/links: $(status_of) $(cat "$work/body")"
code=$(json_field code "$work/body")
[ -n "$code" ] || fail "no code in $(cat "$work/body")"
[ "$(json_field short_url "$work/body")" = "http://s.example.com/$code" ] ||
  fail "short_url is not built from the Host nginx passed: $(cat "$work/body")"
say "created http://s.example.com/$code -> $target"

begin "the redirect through /usr/sbin/nginx"
for cache in MISS HIT; do
  fetch "http://127.0.0.1:$port/$code"
  [ "$(status_of)" = 302 ] && [ "$(location_of)" = "$target" ] ||
    fail "GET /$code: $(status_of) Location '$(location_of)'"
  say "GET /$code -> $(status_of) $(location_of)"
  grep -q "code=$code .*cache=$cache " "$work/shortlink.log" || fail "no cache=$cache line in the access log"
done
fetch "http://127.0.0.1:$port/no-such-link"
[ "$(status_of)" = 302 ] && [ "$(location_of)" = https://example.com/ ] ||
  fail "an unknown code did not go to the fallback: $(status_of) $(location_of)"

# --- 5. clicks through the packaged spool ----------------------------------------------
begin "clicks spooled by nginx while the daemon is down"
stop_daemon || fail "shortlinkd did not stop cleanly"
for _ in 1 2; do
  fetch "http://127.0.0.1:$port/$code"
  [ "$(status_of)" = 302 ] || fail "a cached link did not redirect with the daemon down: $(status_of)"
done
stop_nginx || fail "nginx did not quit"
spooled=$(find /var/spool/shortlinkd -maxdepth 1 -type f -name '*.spool' -user www-data | wc -l)
[ "$spooled" -gt 0 ] || fail "no spool file from the nginx workers in /var/spool/shortlinkd"
say "$spooled spool file(s) written by www-data"

begin "the restarted daemon imports the spool"
start_daemon
left=$(find /var/spool/shortlinkd -maxdepth 1 -type f | wc -l)
[ "$left" -eq 0 ] || fail "$left file(s) left in /var/spool/shortlinkd: $(ls -l /var/spool/shortlinkd)"
curl -sf --unix-socket "$api_sock" -H "X-Api-Key: $api_key" -o "$work/body" \
  "http://localhost/api/v1/links/$code" || fail "GET /api/v1/links/$code over $api_sock"
clicks=$(json_field clicks "$work/body")
[ "$clicks" = 4 ] || fail "the link has $clicks clicks, expected 4: $(cat "$work/body")"
say "4 clicks counted, the spooled ones included"
stop_daemon || fail "shortlinkd did not stop cleanly"
grep -E ' (ERROR|WARN) ' "$work/shortlinkd.log" && fail "shortlinkd logged errors or warnings"
# The one [error] expected: the workers' note of the outage made on purpose.
grep -E '\[(emerg|alert|crit|error)\]|exited on signal' "$work/error.log" |
  grep -v 'shortlink: daemon link down: ' && fail "nginx logged errors"

# --- 6. remove, then purge ------------------------------------------------------------
begin "apt-get remove keeps the data, the key and the configuration"
"${apt_get[@]}" remove "${packages[@]}" >>"$work/apt.log" 2>&1 || fail "apt-get remove failed"
[ ! -e /usr/bin/shortlinkd ] || fail "/usr/bin/shortlinkd is still there"
[ -f /var/lib/shortlinkd/shortlink.db ] || fail "remove deleted the database"
[ -f /etc/shortlinkd/key ] && [ -f /etc/shortlinkd/shortlinkd.toml ] || fail "remove deleted the key or the config"
[ ! -e "$link" ] && [ -L "$link.removed" ] || fail "remove did not set $link aside as Debian's modules do"
for p in "$conf_d" "$site_link"; do
  [ ! -e "$p" ] && [ ! -L "$p" ] || fail "remove left $p, which enables what is gone"
done
debian_nginx_serves

begin "a reinstall of the module puts the links back"
"${apt_get[@]}" install --no-install-recommends "${debs[1]}" >>"$work/apt.log" 2>&1 ||
  fail "apt-get install of the module again failed"
[ -L "$link" ] || fail "the reinstall did not enable the module again"
[ "$(readlink "$conf_d")" = /etc/nginx/snippets/shortlink-http.conf ] ||
  fail "the reinstall did not put $conf_d back"
[ "$(readlink "$site_link")" = /etc/nginx/sites-available/shortlink ] ||
  fail "the reinstall did not put $site_link back"
/usr/sbin/nginx -t -q || fail "nginx -t fails with the module and its links back"
# The one-line file older guides had the operator write in conf.d: purge
# must disable it too.
rm "$conf_d"
echo 'include snippets/shortlink-http.conf;' >"$conf_d"
/usr/sbin/nginx -t -q || fail "nginx -t fails with the older conf.d file"

begin "apt-get purge deletes them"
"${apt_get[@]}" purge "${packages[@]}" >>"$work/apt.log" 2>&1 || fail "apt-get purge failed"
rm -f "$marker"
for p in /var/lib/shortlinkd /var/spool/shortlinkd /run/shortlinkd /etc/shortlinkd "$link" "$link.removed" \
  /etc/nginx/snippets/shortlink-http.conf /etc/nginx/sites-available/shortlink "$conf_d" "$site_link" \
  /var/lib/libnginx-mod-http-shortlink \
  /etc/systemd/system/multi-user.target.wants/shortlinkd.service; do
  [ ! -e "$p" ] && [ ! -L "$p" ] || fail "purge left $p"
done
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'not-installed' ||
    [ -z "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" ] || fail "$p is not purged"
done
guide_files=()
debian_nginx_serves
step="done"
