#!/usr/bin/python3
"""scripts/try-exec, the README's smoke test: prints the result of a real
exec, and when the server cannot start (a bad flag, a bad setting) shows the
server's own message instead of hiding it (issue 26, point 8).

Usage: try_exec_test.py SOURCE_DIR MCP_EXEC_BIN
"""
import os
import subprocess
import sys

source, binary = sys.argv[1], sys.argv[2]
script = os.path.join(source, "scripts", "try-exec")
env = {"PATH": "/usr/bin:/bin", "MCP_EXEC_BIN": binary}
failures = []


def run(*args):
    return subprocess.run([script, *args], env=env, capture_output=True, text=True, timeout=120)


r = run("print(6 * 7)")
if r.returncode != 0 or '"stdout": "42\\n"' not in r.stdout:
    failures.append("a real exec: %r %r" % (r.stdout, r.stderr))
r = run("print(1)", "--bogus")
if r.returncode == 0 or 'unknown argument "--bogus"' not in r.stderr:
    failures.append("a bad flag shows the server's message: %r" % r.stderr)
r = run("print(1)", "--memory-limit=100")
if "did you mean --memory-limit-mb?" not in r.stderr:
    failures.append("a mistyped flag shows the suggestion: %r" % r.stderr)
r = run("print(1)", "--memory-limit-mb=1")
if r.returncode == 0 or "--memory-limit-mb must be between" not in r.stderr:
    failures.append("a setting that cannot work shows why: %r" % r.stderr)
# The Go server's lenient values start, with their meaning and a warning.
r = run("print(1)", "--default-timeout-s=400")
if r.returncode != 0 or "MCP_EXEC_MAX_TIMEOUT_S" not in r.stderr or "server warning" not in r.stderr:
    failures.append("a default above the max runs and the warning is shown: %r %r" % (r.stdout, r.stderr))
for f in failures:
    print("FAIL", f)
print("try-exec: %d checks failed" % len(failures) if failures else "try-exec: 5 checks passed")
sys.exit(1 if failures else 0)
