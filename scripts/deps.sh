#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the demo need, only
# when some are missing. Idempotent; as root without prompts (sudo otherwise).
set -euo pipefail

packages=(
  # building nginx and the module (bindgen needs libclang)
  libclang-dev libpcre2-dev libssl-dev zlib1g-dev make gcc pkg-config
  # the demo and the README's curl lines
  curl
  # benchmarks (make bench, make bench-smoke)
  wrk python3
  # the admin UI's browser tests: headless Chromium driven over WebDriver
  # (fonts so the screenshots kept on failure are legible)
  chromium chromium-driver fonts-dejavu-core
)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
