#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang and runs each one:
# first over its checked-in regression inputs, then for SECONDS on a scratch
# copy of its seed corpus. One summary line per target; non-zero exit if any
# failed. See --help and tests/fuzz/README.md.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# The targets build in the sanitizer tree (lib.sh): after the sanitizer leg,
# only their own files are left to compile. What fuzzing leaves (logs,
# findings, scratch corpora) goes to build-fuzz/.
TREE=$ASAN_BUILD_DIR
BUILD=$ROOT/build-fuzz
FUZZ_DIR=$ROOT/tests/fuzz

all_targets() {
  local f
  for f in "$FUZZ_DIR"/fuzz_*.cc; do
    f=${f##*/}
    echo "${f%.cc}"
  done
}

usage() {
  cat <<EOF
Usage: scripts/fuzz.sh SECONDS [TARGET...]

Builds the libFuzzer targets of tests/fuzz with clang++ in the sanitizer
tree, build-asan/ or ASAN_BUILD_DIR (the one scripts/sanitize.sh builds the
server in: -DMCP_EXEC_FUZZ=ON, -O1 -g1; -fsanitize=fuzzer,address,undefined,
every report fatal), then for each TARGET (default: all), FUZZ_PARALLEL
at a time:
  1. runs it once over each input in tests/fuzz/regressions/TARGET/ (all
     must pass);
  2. fuzzes it for SECONDS seconds (-max_total_time) on a scratch copy of
     tests/fuzz/corpus/TARGET/ in build-fuzz/scratch/ (nothing new is
     written into the tree), with tests/fuzz/dict/TARGET.dict if there is
     one.
A crash, an AddressSanitizer or UndefinedBehaviorSanitizer report, a leak,
an input slower than FUZZ_TIMEOUT or memory past the RSS limit fails the
target. Prints one line per target:
  TARGET: ok, N execs, corpus M inputs (S s)
  TARGET: FAILED (build-fuzz/findings/TARGET/crash-...; see build-fuzz/logs/TARGET.log)
  TARGET: FAILED (regression tests/fuzz/regressions/TARGET/...; ...)
and under a failed one, indented: the target's complaint, the sanitizer's
summary, the first frames of the stack and the input's first 256 bytes,
and copies the failing input to build-fuzz/findings/TARGET/, naming it in
the line (a target whose regressions fail is not fuzzed). Exit status: 0 if every target passed, 1 if any failed (or the
build did), 2 on bad usage.

Environment: FUZZ_JOBS build parallelism (default: nproc), FUZZ_PARALLEL
targets fuzzed side by side (default: nproc), FUZZ_MAX_LEN
longest input in bytes (default 65536), FUZZ_TIMEOUT seconds one input may
take (default 25), FUZZ_RSS_LIMIT_MB (default 2048); ASAN_OPTIONS and
UBSAN_OPTIONS replace the script's (halt_on_error=1, leaks detected).

Targets: $(all_targets | tr '\n' ' ')
EOF
}

if [[ $# -ge 1 && ( $1 == -h || $1 == --help ) ]]; then
  usage
  exit 0
fi
if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ || $1 -lt 1 ]]; then
  usage >&2
  exit 2
fi
SECONDS_EACH=$1
shift
mapfile -t known < <(all_targets)
targets=("$@")
((${#targets[@]})) || targets=("${known[@]}")
for t in "${targets[@]}"; do
  if [[ ! " ${known[*]} " == *" $t "* ]]; then
    echo "fuzz.sh: unknown target $t (known: ${known[*]})" >&2
    exit 2
  fi
done

JOBS=${FUZZ_JOBS:-$(nproc)}
MAX_LEN=${FUZZ_MAX_LEN:-65536}
TIMEOUT=${FUZZ_TIMEOUT:-25}
RSS_LIMIT=${FUZZ_RSS_LIMIT_MB:-2048}
mkdir -p "$BUILD/logs"

build_log=$BUILD/logs/build.log
echo "fuzz: building ${targets[*]} in ${TREE#"$ROOT"/} (log: $build_log)"
build_start=$(date +%s)
if ! {
  configure_sanitizer_tree && cmake --build "$TREE" --target "${targets[@]}" -j "$JOBS"
} >"$build_log" 2>&1; then
  tail -n 30 "$build_log" >&2
  echo "fuzz: the build failed (see $build_log)" >&2
  exit 1
fi
echo "fuzz: built in $(($(date +%s) - build_start)) s"

# Every report is fatal and leaves a stack; leaks count.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:symbolize=1}
if command -v llvm-symbolizer >/dev/null; then
  export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer)}
fi

# Why a target failed, under its line: the target's own complaint, the
# sanitizer's summary, the first frames of the stack and the input (hex, at
# most 256 bytes), so that a log that shows only this leg's output (CI's)
# says what broke without the machine it ran on.
why_failed() {
  local log=$1 input=$2
  {
    grep -E '^fuzz_[a-z_]+: |^SUMMARY: |ERROR: (Address|UndefinedBehavior|Leak)Sanitizer|runtime error: ' \
      "$log" | grep -v ': Running ' | head -n 6
    grep -E '^ +#[0-9]+ ' "$log" |
      grep -v -E 'libFuzzer|fuzzer::|__sanitizer|nptl/|sysdeps/|stdlib/|libc\.so|_start|__libc' |
      head -n 6 | cut -c 1-200
    if [[ -n $input && -f $input ]]; then
      echo "input ($(wc -c <"$input") bytes):"
      head -c 256 "$input" | od -An -c | head -n 16
    fi
  } | sed 's/^/    /'
}

# One target: its regressions, then SECONDS_EACH seconds of fuzzing; prints
# its one line; status 1 if it failed.
fuzz_one() {
  local t=$1 bin log findings scratch common regressions bad before start rc elapsed artifact what execs corpus
  bin=$TREE/tests/fuzz/$t
  log=$BUILD/logs/$t.log
  findings=$BUILD/findings/$t
  scratch=$BUILD/scratch/$t
  mkdir -p "$findings"
  : >"$log"
  common=(-max_len="$MAX_LEN" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_LIMIT")
  if [[ -f $FUZZ_DIR/dict/$t.dict ]]; then
    common+=(-dict="$FUZZ_DIR/dict/$t.dict")
  fi

  # 1. The regression inputs: each run once, all must pass.
  regressions=()
  if [[ -d $FUZZ_DIR/regressions/$t ]]; then
    mapfile -t regressions < <(find "$FUZZ_DIR/regressions/$t" -type f ! -name '.*' | sort)
  fi
  if ((${#regressions[@]})); then
    echo "== regressions: ${#regressions[@]} inputs" >>"$log"
    if ! "$bin" "${common[@]}" -runs=1 "${regressions[@]}" >>"$log" 2>&1; then
      bad=$(grep -o 'Running: .*' "$log" | tail -n 1 | sed 's/^Running: //' || true)
      cp -f "$bad" "$findings/" 2>/dev/null || true
      echo "$t: FAILED (regression ${bad#"$ROOT"/}; copied to build-fuzz/findings/$t/; see ${log#"$ROOT"/})"
      why_failed "$log" "$bad"
      return 1
    fi
  fi

  # 2. Fuzzing, on a copy of the seeds: what it finds stays in build-fuzz.
  rm -rf "$scratch"
  mkdir -p "$scratch"
  if [[ -d $FUZZ_DIR/corpus/$t ]]; then
    find "$FUZZ_DIR/corpus/$t" -type f ! -name '.*' -exec cp -f {} "$scratch/" \;
  fi
  echo "== fuzzing for $SECONDS_EACH s" >>"$log"
  before=$(find "$findings" -type f | wc -l)
  start=$(date +%s)
  rc=0
  "$bin" "${common[@]}" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
    -artifact_prefix="$findings/" "$scratch" >>"$log" 2>&1 || rc=$?
  elapsed=$(($(date +%s) - start))
  if ((rc != 0)); then
    artifact=$(grep -o 'Test unit written to .*' "$log" | tail -n 1 | sed 's/^Test unit written to //' ||
      true)
    if [[ -z $artifact && $(find "$findings" -type f | wc -l) -gt $before ]]; then
      artifact=$(ls -t "$findings" | head -n 1)
      artifact=$findings/$artifact
    fi
    what=${artifact:+${artifact#"$ROOT"/}}
    echo "$t: FAILED (${what:-exit status $rc, no input saved}; see ${log#"$ROOT"/})"
    why_failed "$log" "$artifact"
    return 1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$' ||
    echo "?")
  corpus=$(find "$scratch" -type f | wc -l)
  echo "$t: ok, $execs execs, corpus $corpus inputs ($elapsed s)"
}

# The targets side by side, FUZZ_PARALLEL at a time (default: the cores;
# each libFuzzer process is one thread, so one at a time left a core idle
# for the leg's whole length); their lines in the targets' order.
PARALLEL=${FUZZ_PARALLEL:-$(nproc)}
((PARALLEL >= 1)) || PARALLEL=1
pids=()
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= PARALLEL)); do wait -n || true; done
  fuzz_one "$t" >"$BUILD/logs/$t.line" &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  wait "${pids[$i]}" || failed=1
  cat "$BUILD/logs/${targets[$i]}.line"
done
exit "$failed"
