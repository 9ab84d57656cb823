# shellcheck shell=bash
# Shared by setup.sh, test.sh, sanitize.sh and fuzz.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Installs the Debian packages listed in the given files that are missing.
# A line "package|command" is satisfied by that command on PATH too (Node.js
# from another vendor bundles npm and conflicts with Debian's npm package).
# Idempotent: nothing is fetched when everything is there.
install_packages() {
  local wanted=() missing=() line pkg cmd
  for list in "$@"; do
    while read -r line; do
      [[ -z "$line" || "$line" == \#* ]] && continue
      wanted+=("$line")
    done <"$list"
  done
  for line in "${wanted[@]}"; do
    pkg=${line%%|*}
    cmd=${line#*|}
    [[ "$cmd" != "$line" ]] && command -v "$cmd" >/dev/null && continue
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    say "Debian packages: all ${#wanted[@]} present"
    return
  fi
  say "Installing ${#missing[@]} missing Debian packages: ${missing[*]}"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "run as root (or install sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
  say "Building into $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}

# The sanitizer tree (build-asan/, or ASAN_BUILD_DIR): clang, AddressSanitizer
# and UndefinedBehaviorSanitizer (every report fatal), at -O1 -g1 as the
# sanitizers' own docs build (reports keep their file:line). It holds both
# the server of the sanitizer leg (sanitize.sh) and the libFuzzer targets
# (fuzz.sh), whose libraries also carry the fuzzer's coverage hooks (no-ops
# in the server): configured the same way by both, the second builds only
# its own few files instead of the whole tree again. A unity build (each
# library's sources compiled together): the headers and templates they share
# are compiled once per library, 293 CPU seconds for the tree instead of 430
# here. The shipped build (Dockerfile, build/) compiles file by file.
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-$ROOT/build-asan}
configure_sanitizer_tree() {
  local cache=$ASAN_BUILD_DIR/CMakeCache.txt
  # A tree configured by gcc (as build-asan/ was before): CMake keeps the
  # compiler of its cache, so that cache goes and the tree is made anew.
  if [[ -f $cache ]] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang' "$cache"; then
    rm -rf "$cache" "$ASAN_BUILD_DIR/CMakeFiles"
  fi
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$ASAN_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DMCP_EXEC_SANITIZE=ON -DMCP_EXEC_FUZZ=ON \
    -DBUILD_TESTING=OFF -DMCP_EXEC_SANITIZER_REPORTS="$ASAN_BUILD_DIR/sanitizer-reports" \
    -DCMAKE_UNITY_BUILD=ON
}
