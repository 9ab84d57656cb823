#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) against the built server's streamable HTTP
# transport: every server scenario that applies to a server with one tool and
# no resources or prompts, once without and once with an auth token. The
# suite has no option for extra headers; auth-header.mjs adds X-MCP-AUTH.
# Usage: MCP_EXEC_BIN=build/mcp-exec tests/conformance/run.sh
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${MCP_EXEC_BIN:?set MCP_EXEC_BIN to the built mcp-exec}
CLI="$HERE/node_modules/.bin/conformance"
[[ -x "$CLI" ]] || { echo "conformance suite not installed: run scripts/test.sh (npm ci in tests/conformance)" >&2; exit 1; }
SCENARIOS=(server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection)
passed=0 failed=0

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_ready() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, time, urllib.request
for _ in range(600):
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/readyz", timeout=1).status == 200:
            sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
PY
}

for token in "" "conformance-$RANDOM$RANDOM"; do
  port=$(free_port)
  log=$(mktemp)
  env -i PATH="$PATH" MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR="127.0.0.1:$port" \
    ${token:+MCP_EXEC_AUTH_TOKEN=$token} "$BIN" 2>"$log" &
  server=$!
  if ! wait_ready "$port"; then
    echo "the server did not become ready; its log:" >&2
    cat "$log" >&2
    kill "$server" 2>/dev/null
    exit 1
  fi
  label=$([[ -n $token ]] && echo "with auth token" || echo "without auth token")
  for scenario in "${SCENARIOS[@]}"; do
    if (cd "$HERE" && MCP_EXEC_AUTH_TOKEN="$token" NODE_OPTIONS="${token:+--import $HERE/auth-header.mjs}" \
          timeout 120 "$CLI" server --url "http://127.0.0.1:$port/mcp" --scenario "$scenario" >"$log.out" 2>&1); then
      passed=$((passed + 1))
      echo "PASS $scenario ($label)"
    else
      failed=$((failed + 1))
      echo "FAIL $scenario ($label):"
      sed 's/\x1b\[[0-9;]*m//g' "$log.out"
    fi
  done
  # The suite must also be refused without the token when one is set.
  if [[ -n $token ]]; then
    if (cd "$HERE" && timeout 120 "$CLI" server --url "http://127.0.0.1:$port/mcp" --scenario server-initialize >/dev/null 2>&1); then
      failed=$((failed + 1))
      echo "FAIL server-initialize without the token was accepted"
    else
      passed=$((passed + 1))
      echo "PASS server-initialize without the token is refused"
    fi
  fi
  kill -TERM "$server"
  wait "$server" || { echo "the server did not exit 0 on SIGTERM" >&2; failed=$((failed + 1)); }
  rm -f "$log" "$log.out"
done
echo "conformance: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
