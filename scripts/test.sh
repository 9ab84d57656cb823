#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing (Debian packages and the
# pinned npm packages of the client tests), builds, then runs every test
# registered with CTest (unit, integration over stdio, escape suite,
# official-SDK client). Run as root (or with sudo available).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
install_packages "$ROOT/scripts/deps/build.txt" "$ROOT/scripts/deps/runtime.txt" "$ROOT/scripts/deps/test.txt"
if [[ ! -d "$ROOT/tests/client/node_modules/@modelcontextprotocol/sdk" ]]; then
  say "Installing the pinned npm packages of tests/client"
  (cd "$ROOT/tests/client" && npm ci --no-audit --no-fund --loglevel=error)
fi
build
say "Running the test suite"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 900 "$@"
