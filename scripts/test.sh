#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing (Debian packages and the
# pinned npm packages of the client tests), builds, then runs every test
# registered with CTest (unit, integration over each transport with the chaos
# tests, escape suite, official-SDK client, conformance, the bench's short
# runs, the sanitizer leg, the fuzz targets; the soak runs on demand:
# ctest -L soak). Run as root (or with sudo available).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
started=$SECONDS
install_packages "$ROOT/scripts/deps/build.txt" "$ROOT/scripts/deps/runtime.txt" "$ROOT/scripts/deps/test.txt"
# The pinned npm packages of the Node-based tests (official MCP SDK client,
# conformance suite, Inspector CLI and mcp-remote, Kubernetes schemas, the
# code-mode tests' upstream server-everything): installed when missing or stale.
for dir in tests/client tests/conformance tests/clients tests/deploy tests/upstreams; do
  if [[ ! "$ROOT/$dir/node_modules/.package-lock.json" -nt "$ROOT/$dir/package-lock.json" ]]; then
    say "Installing the pinned npm packages of $dir"
    (cd "$ROOT/$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done
setup_s=$((SECONDS - started))
started=$SECONDS
build
build_s=$((SECONDS - started))
say "Running the test suite"
cd "$BUILD_DIR"
# The soak (label soak) runs on demand, not in the gate: ctest -L soak.
log=$BUILD_DIR/ctest-output.log
rc=0
ctest --output-on-failure --timeout 900 -LE soak "$@" 2>&1 | tee "$log" || rc=$?
# Each leg's wall time, slowest first.
"$ROOT/scripts/leg-table" "$BUILD_DIR" "$log" "setup=$setup_s" "build=$build_s" || true
exit "$rc"
