#!/usr/bin/env bash
# Runs every core/fuzz target with cargo fuzz (libFuzzer + AddressSanitizer).
#   scripts/fuzz.sh smoke [SECONDS]   each target for SECONDS (default 20): make test
#   scripts/fuzz.sh runs  [N]         each target for N executions (default 10,000,000)
# Corpora live in target/fuzz-corpus/<target> (kept between runs, never
# committed); a crash leaves its input in core/fuzz/artifacts/<target>/ and
# fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-smoke}
case "$mode" in
  smoke) limit=(-max_total_time="${2:-20}") ;;
  runs)  limit=(-runs="${2:-10000000}") ;;
  *) echo "usage: $0 smoke [SECONDS] | runs [N]" >&2; exit 2 ;;
esac

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz from crates.io"
  cargo install --locked cargo-fuzz
fi

# cargo fuzz passes -Zsanitizer=address, a nightly flag. The machine has one
# stable toolchain; RUSTC_BOOTSTRAP lets that compiler accept the flag (its
# sanitizer runtime ships with the standard library on x86_64 Linux).
export RUSTC_BOOTSTRAP=1
targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' core/fuzz/Cargo.toml | grep -v '^shortlink-core-fuzz$')
status=0
for t in $targets; do
  corpus="target/fuzz-corpus/$t"
  mkdir -p "$corpus"
  log="target/fuzz-corpus/$t.log"
  if (cd core && cargo fuzz run "$t" "../$corpus" -- "${limit[@]}" -print_final_stats=1) >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    echo "fuzz $t: ${runs:-?} executions, no finding"
  else
    echo "fuzz $t: FAILED (log: $log)"
    grep -E "panicked|ERROR: |SUMMARY" "$log" | head -5 || tail -20 "$log"
    status=1
  fi
done
exit $status
