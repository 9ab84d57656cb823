# Shared by setup.sh and test.sh.
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
