#!/usr/bin/env bash
# The API against its own OpenAPI document: schemathesis (PyPI, pinned in
# scripts/deps.sh) with every check, against a throwaway daemon on SQLite,
# bounded in examples per operation and in time (SCHEMATHESIS_SECONDS, default
# 150: the fuzzing phase repeats until then). Any finding fails.
#
#   scripts/api-contract.sh [EXAMPLES]     (default 30 per operation)
#
# One worker: with two, hypothesis (in schemathesis) once failed on its
# own ("AST constructor recursion depth mismatch", Python's ast parsing
# in two threads), which is no finding about the API.
#
# The daemon is the release build (make build); its log and schemathesis's
# report stay in target/api-contract/ for a failed run.
set -euo pipefail
cd "$(dirname "$0")/.."

examples=${1:-30}
bin=${SHORTLINKD_BIN:-build/bin/shortlinkd}
[ -x "$bin" ] || { echo "api-contract: $bin is missing; run make build" >&2; exit 1; }
st() { python3 -m schemathesis.cli "$@"; }
st --version >/dev/null 2>&1 || { echo "api-contract: schemathesis is missing; run make deps" >&2; exit 1; }

out=target/api-contract
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
daemon_pid=
cleanup() {
  [ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A free loopback port below the ephemeral range.
port=$(python3 - <<'EOF'
import random, socket
for _ in range(200):
    p = random.randint(20000, 30000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
EOF
)
base="http://127.0.0.1:$port"

"$bin" keygen "$work/key" >/dev/null
flags=(--data-dir "$work" --key-file "$work/key" --api-listen "127.0.0.1:$port" --base-url "http://s.test")
"$bin" serve "${flags[@]}" >"$out/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do
  curl -fsS "$base/api/v1/health" >/dev/null 2>&1 && break
  kill -0 "$daemon_pid" 2>/dev/null || { echo "api-contract: the daemon exited; see $out/daemon.log" >&2; exit 1; }
  sleep 0.1
done
key=$("$bin" "${flags[@]}" key create --name contract --scopes links:write,links:read,stats:read,admin)

# A link and a user for the operations that read one, so that not every
# generated request meets a 404.
curl -fsS -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"url":"https://example.com/contract","alias":"contract-link"}' "$base/api/v1/links"

echo "api-contract: schemathesis, $examples examples per operation, daemon at $base"
set +e
st --config-file scripts/schemathesis.toml run "$base/api/v1/openapi.json" \
  --url "$base" \
  --header "Authorization: Bearer $key" \
  --checks all \
  --phases examples,coverage,fuzzing \
  --max-examples "$examples" \
  --max-time "${SCHEMATHESIS_SECONDS:-150}" \
  --workers 1 \
  --seed 1 \
  --generation-database none \
  --request-timeout 10 \
  --no-color \
  --report junit --report-dir "$out" >"$out/schemathesis.txt" 2>&1
rc=$?
set -e
tail -n 40 "$out/schemathesis.txt"
if [ $rc -ne 0 ]; then
  echo "api-contract: schemathesis found problems (exit $rc); full output in $out/schemathesis.txt" >&2
  exit $rc
fi
