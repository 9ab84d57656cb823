#!/usr/bin/env bash
# The sanitizer leg: builds the server with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc, every UB fatal, leaks checked when the
# supervisor and the zygote exit) into build-asan/, then runs the
# integration tests (the binary built with the main build, every test of it)
# against that server, and fails on a failed test or on any sanitizer report.
#
# Usage: scripts/sanitize.sh [--help] [GTEST_FILTER]
#   GTEST_FILTER  a --gtest_filter pattern (default: every integration test).
# Environment: BUILD_DIR (the main build, default build/), ASAN_BUILD_DIR
# (default build-asan/). CTest runs it as the `sanitizer_integration` test.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ "${1:-}" == "--help" || "${1:-}" == "-h" ]]; then
  sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 0
fi
filter=${1:-*}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-$ROOT/build-asan}
reports=$ASAN_BUILD_DIR/sanitizer-reports
tests_bin=$BUILD_DIR/tests/integration_tests
[[ -x "$tests_bin" ]] || { echo "sanitize.sh: $tests_bin is not built (run scripts/test.sh or build $BUILD_DIR first)" >&2; exit 1; }

say "Building the ASan + UBSan server into $ASAN_BUILD_DIR"
start=$SECONDS
# -O1 -g1, as AddressSanitizer's own docs build: half the compile time of
# -O2 -g (6 minutes instead of 12 here), and reports keep their file:line.
build_log=$ASAN_BUILD_DIR.log
if ! { cmake -S "$ROOT" -B "$ASAN_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DMCP_EXEC_SANITIZE=ON \
         -DBUILD_TESTING=OFF -DMCP_EXEC_SANITIZER_REPORTS="$reports" &&
       cmake --build "$ASAN_BUILD_DIR" --target mcp-exec -j "$(nproc)"; } >"$build_log" 2>&1; then
  tail -40 "$build_log" >&2
  echo "sanitize.sh: the ASan build failed (log: $build_log)" >&2
  exit 1
fi
say "Built in $((SECONDS - start)) s"

rm -rf "$reports"
mkdir -p "$reports"
say "Running the integration tests ($filter) against $ASAN_BUILD_DIR/mcp-exec"
rc=0
MCP_EXEC_TEST_BIN=$ASAN_BUILD_DIR/mcp-exec "$tests_bin" --gtest_filter="$filter" \
  --gtest_brief=1 || rc=$?
found=$(find "$reports" -type f | sort)
if [[ -n "$found" ]]; then
  echo "sanitize.sh: sanitizer reports:" >&2
  for f in $found; do
    echo "----- $f" >&2
    cat "$f" >&2
  done
  rc=1
fi
if ((rc == 0)); then
  say "Sanitizer leg: every test passed, no sanitizer report"
else
  say "Sanitizer leg FAILED (test status $rc; reports: $(echo "$found" | grep -c . || true))"
fi
exit "$rc"
