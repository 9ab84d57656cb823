#!/usr/bin/env bash
# The sanitizer leg: builds the server with AddressSanitizer and
# UndefinedBehaviorSanitizer (clang, every UB fatal, leaks checked when the
# supervisor and the zygote exit) into build-asan/, the tree fuzz.sh builds
# its targets in too (lib.sh, configure_sanitizer_tree), then runs the
# integration tests (the binary built with the main build, every test of it)
# against that server, and fails on a failed test or on any sanitizer report.
#
# Usage: scripts/sanitize.sh [--help] [--build | GTEST_FILTER]
#   GTEST_FILTER  a --gtest_filter pattern (default: every integration test).
#   --build       only build the tree: the server and the fuzz targets
#                 (CTest's sanitizer_tree step, before this leg and fuzz).
# Environment: BUILD_DIR (the main build, default build/), ASAN_BUILD_DIR
# (default build-asan/), SANITIZE_SHARDS (test processes side by side,
# default: the cores, at most 4). CTest runs it as `sanitizer_integration`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ "${1:-}" == "--help" || "${1:-}" == "-h" ]]; then
  sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 0
fi
# Builds the given targets in the sanitizer tree, saying how long it took.
build_tree() {
  say "Building $* (ASan + UBSan) into $ASAN_BUILD_DIR"
  local start=$SECONDS build_log=$ASAN_BUILD_DIR.log
  if ! { configure_sanitizer_tree &&
         cmake --build "$ASAN_BUILD_DIR" --target "$@" -j "$(nproc)"; } >"$build_log" 2>&1; then
    tail -40 "$build_log" >&2
    echo "sanitize.sh: the ASan build failed (log: $build_log)" >&2
    exit 1
  fi
  say "Built in $((SECONDS - start)) s"
}
if [[ "${1:-}" == "--build" ]]; then
  targets=(mcp-exec)
  for f in "$ROOT"/tests/fuzz/fuzz_*.cc; do
    f=${f##*/}
    targets+=("${f%.cc}")
  done
  build_tree "${targets[@]}"
  exit 0
fi
filter=${1:-*}
reports=$ASAN_BUILD_DIR/sanitizer-reports
tests_bin=$BUILD_DIR/tests/integration_tests
[[ -x "$tests_bin" ]] || { echo "sanitize.sh: $tests_bin is not built (run scripts/test.sh or build $BUILD_DIR first)" >&2; exit 1; }

build_tree mcp-exec

rm -rf "$reports"
mkdir -p "$reports"
# The tests in shards run side by side (gtest's GTEST_TOTAL_SHARDS): one at a
# time they keep two cores half idle (10 min of CPU in 11 min here), each
# waiting on its server. Each shard's output is printed when it ends.
shards=${SANITIZE_SHARDS:-$(nproc)}
((shards >= 1 && shards <= 4)) || shards=$((shards < 1 ? 1 : 4))
say "Running the integration tests ($filter) against $ASAN_BUILD_DIR/mcp-exec in $shards shards"
rc=0
pids=()
for ((i = 0; i < shards; i++)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i MCP_EXEC_TEST_BIN=$ASAN_BUILD_DIR/mcp-exec \
    "$tests_bin" --gtest_filter="$filter" --gtest_brief=1 >"$ASAN_BUILD_DIR/shard-$i.log" 2>&1 &
  pids+=($!)
done
for ((i = 0; i < shards; i++)); do
  shard_rc=0
  wait "${pids[$i]}" || shard_rc=$?
  echo "----- shard $((i + 1)) of $shards: exit $shard_rc"
  cat "$ASAN_BUILD_DIR/shard-$i.log"
  ((shard_rc == 0)) || rc=$shard_rc
done
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
