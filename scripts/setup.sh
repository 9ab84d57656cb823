#!/usr/bin/env bash
# Sets up mcp-exec on a Debian machine and proves it works: installs the
# missing Debian packages, builds, then runs a real exec through the server
# over stdio. Run as root (or with sudo available).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
install_packages "$ROOT/scripts/deps/build.txt" "$ROOT/scripts/deps/runtime.txt"
build
say "Running a real exec through $BUILD_DIR/mcp-exec (stdio)"
"$ROOT/scripts/try-exec" 'import numpy, pandas, sys
print("hello from mcp-exec: Python", sys.version.split()[0], "numpy", numpy.__version__, "pandas", pandas.__version__)
print(pandas.DataFrame({"x": [1, 2, 3]}).x.sum())'
