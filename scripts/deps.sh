#!/usr/bin/env bash
# Installs the Debian packages a target needs, only when some are missing,
# after checking the Rust toolchain. Idempotent; as root without prompts
# (sudo otherwise).
#   scripts/deps.sh              every group: what `make test` needs
#   scripts/deps.sh build        building nginx and the module (make build, make module)
#   scripts/deps.sh build demo   and what `make demo` runs
# Groups: build, demo, cluster, test, bench, browser (see below).
set -euo pipefail
cd "$(dirname "$0")/.."

# --- Rust: at least the workspace's rust-version ---------------------------
# Debian 12's own rustc (1.63) is older than the workspace needs, so the
# toolchain comes from rustup, not apt.
need=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' Cargo.toml | head -n 1)
how="Install a current stable toolchain with rustup (https://rustup.rs):
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
    . \"\$HOME/.cargo/env\"
or, where rustup is there already: rustup update stable"
have=$( (rustc --version 2>/dev/null || true) | sed -n 's/^rustc \([0-9][0-9.]*\).*/\1/p')
if ! command -v cargo >/dev/null 2>&1 || [ -z "$have" ]; then
  echo "deps.sh: no Rust toolchain (cargo and rustc $need or newer) on PATH." >&2
  echo "$how" >&2
  exit 1
fi
# sort -V puts the older first: the toolchain is new enough when that is $need.
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; then
  echo "deps.sh: rustc $have is older than the workspace's rust-version $need ($(command -v rustc))." >&2
  echo "$how" >&2
  exit 1
fi

# --- Debian packages by group -----------------------------------------------
group_packages() {
  case "$1" in
    # building nginx and the module (bindgen needs libclang; nginx's headers
    # include PCRE2, OpenSSL and zlib ones)
    build) echo libclang-dev libpcre2-dev libssl-dev zlib1g-dev make gcc pkg-config ;;
    # the demo, the README's curl lines and the package test
    demo) echo curl ;;
    # make demo-cluster and the PostgreSQL benchmarks: a private cluster
    # from initdb/pg_ctl (/usr/lib/postgresql/15/bin), never the system one
    cluster) echo postgresql ;;
    # PostgreSQL for several nodes: tests and demos start private clusters
    # (initdb/pg_ctl from /usr/lib/postgresql/15/bin), never the system one
    test) echo curl postgresql ;;
    # benchmarks (make bench, make bench-smoke)
    bench) echo wrk python3 postgresql ;;
    # the admin UI's browser tests: headless Chromium driven over WebDriver
    # (fonts so the screenshots kept on failure are legible)
    browser) echo chromium chromium-driver fonts-dejavu-core ;;
    *) echo "deps.sh: unknown group '$1' (build, demo, cluster, test, bench, browser)" >&2; return 1 ;;
  esac
}

# --- Python packages by group (PyPI, pinned) ----------------------------------
python_packages() {
  case "$1" in
    # the OpenAPI document is checked by the validator the API issue names
    test) echo openapi-spec-validator==0.7.2 schemathesis==4.32.5 ;;
  esac
}

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(build demo cluster test bench browser)
for g in "${groups[@]}"; do
  for pkg in $(python_packages "$g"); do
    name=${pkg%%==*}
    if ! python3 -m pip show -q "$name" >/dev/null 2>&1; then
      echo "installing (python, $g): $pkg"
      # Debian's own python3 is "externally managed" (PEP 668): a CI
      # machine is a throwaway, so install beside it there.
      python3 -m pip install --quiet --disable-pip-version-check "$pkg" 2>/dev/null ||
        python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$pkg"
    fi
  done
done
packages=()
for g in "${groups[@]}"; do
  list=$(group_packages "$g")
  read -ra more <<<"$list"
  packages+=("${more[@]}")
done

missing=()
declare -A seen=()
for p in "${packages[@]}"; do
  [ -z "${seen[$p]:-}" ] || continue
  seen[$p]=1
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "installing (${groups[*]}): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
