#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing (Debian packages and the
# pinned npm packages of the client tests), builds, then runs every test
# registered with CTest (unit, integration over each transport with the chaos
# tests, escape suite, official-SDK client, conformance, the bench's short
# runs, the sanitizer leg, the fuzz targets, the image; the soak runs on
# demand: ctest -L soak). The sanitizer tree builds beside the main build,
# the image beside the tests at a lower CPU priority; two tests run side by
# side, the legs that use both cores alone (TEST_SLOTS=N: N slots, at least
# 2). Ends with a table of each leg's time.
# Run as root (or with sudo available).
#
# Usage: scripts/test.sh [--quick] [CTEST_ARGS...]
#   --quick  the presubmit (about 4 minutes after a build here, two tests
#            side by side; at most 10): unit tests,
#            format, layers, clang-tidy on the C++ files changed against main,
#            one integration test of each suite, the escape suite in the root
#            posture. The whole suite is for before a merge.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ "${1:-}" == "--help" || "${1:-}" == "-h" ]]; then
  sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 0
fi
quick=0
if [[ "${1:-}" == "--quick" ]]; then
  quick=1
  shift
fi
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
# The sanitizer tree (the ASan server and the fuzz targets: the sanitizer
# leg's and the fuzz leg's) builds beside the main build: it starts the
# suite's longest chain (build, then the sanitizer leg), and compiling beside
# a compile slows no timing-bound test. Its log: build-asan.log. A failure
# here shows again in CTest's sanitizer_tree step, which builds what is left.
asan_pid=
if ((!quick)); then
  "$ROOT/scripts/sanitize.sh" --build &
  asan_pid=$!
fi
build
[[ -n $asan_pid ]] && { wait "$asan_pid" || say "The sanitizer tree did not build (see build-asan.log)"; }
build_s=$((SECONDS - started))
cd "$BUILD_DIR"
log=$BUILD_DIR/ctest-output.log
# Foreground slots, two by default: a test that mostly waits on its servers
# takes one, so two run side by side; a leg that keeps both cores busy by
# itself or measures time takes two and runs alone (tests/CMakeLists.txt,
# MCP_EXEC_WHOLE_MACHINE_TESTS). The two builds take none, hence two jobs
# more.
slots=${TEST_SLOTS:-2}
[[ $slots =~ ^[0-9]+$ ]] && ((slots >= 2)) ||
  { echo "test.sh: TEST_SLOTS must be a number of at least 2 (the legs that use both cores take two), not $slots" >&2; exit 2; }
spec=$BUILD_DIR/ctest-resources.json
printf '{"version": {"major": 1, "minor": 0}, "local": [{"fg": [{"id": "0", "slots": %d}]}]}\n' \
  "$slots" >"$spec"
parallel=(-j "$((slots + 2))" --resource-spec-file "$spec")
rc=0
started=$SECONDS
if ((quick)); then
  say "The presubmit: unit, format, layers, tidy on the changed files, an integration test per suite, escape (root)"
  : >"$log"
  # One integration test of each suite (a suite is a feature's tests): the first listed.
  picked=$(ctest -N -L integration | sed -n 's/^ *Test *#[0-9]*: \([A-Za-z0-9_]*\)\.\([A-Za-z0-9_/]*\)$/\1.\2/p' |
    awk -F. '!seen[$1]++' | sed 's/[.]/[.]/' | paste -sd'|')
  ctest --output-on-failure --timeout 900 "${parallel[@]}" -L unit "$@" 2>&1 | tee -a "$log" || rc=$?
  ctest --output-on-failure --timeout 900 "${parallel[@]}" -R "^(format|layers|escape_root|${picked})\$" \
    "$@" 2>&1 | tee -a "$log" || rc=$?
  mapfile -t changed < <(cd "$ROOT" && { git diff --name-only main -- 'src/*.cc' 'embed/*.cc'; git ls-files --others --exclude-standard -- 'src/*.cc' 'embed/*.cc'; } | sort -u)
  existing=()
  for f in "${changed[@]}"; do [[ -f "$ROOT/$f" ]] && existing+=("$f"); done
  if ((${#existing[@]})); then
    "$ROOT/scripts/check-tidy" "$BUILD_DIR" "${existing[@]}" 2>&1 | tee -a "$log" || rc=1
  else
    echo "check-tidy: no C++ file of src/ or embed/ changed against main" | tee -a "$log"
  fi
else
  say "Running the test suite"
  # The soak (label soak) runs on demand, not in the gate: ctest -L soak.
  ctest --output-on-failure --timeout 900 "${parallel[@]}" -LE soak "$@" 2>&1 | tee "$log" || rc=$?
fi
tests_s=$((SECONDS - started))
# Each leg's time, slowest first.
"$ROOT/scripts/leg-table" "$BUILD_DIR" "$log" "setup=$setup_s" "build=$build_s" "tests=$tests_s" || true
exit "$rc"
