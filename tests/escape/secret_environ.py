# escape: find the server's secrets (MCP_EXEC_AUTH_TOKEN, other tokens) in our own environment
# expect: pass
import os
import re
import subprocess
import sys

SUSPICIOUS = re.compile(r"^MCP_EXEC_|AUTH|TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|PRIVATE_KEY", re.I)
leaks = [k for k in os.environ if SUSPICIOUS.search(k)]
leaks += [f"value of {k}" for k, v in os.environ.items() if "MCP_EXEC_AUTH_TOKEN" in v]

# The environment block the process was started with (the zygote's exec), not just os.environ.
# Runs are non-dumpable (so other runs cannot look into their /proc entries), which makes
# /proc/self/environ root's: EACCES is fine, and what a child sees is checked below.
try:
    with open("/proc/self/environ", "rb") as f:
        block = f.read()
except PermissionError:
    block = b""
for entry in block.split(b"\0"):
    key = entry.split(b"=", 1)[0].decode("utf-8", "replace")
    if entry and (SUSPICIOUS.search(key) or b"MCP_EXEC_AUTH_TOKEN" in entry):
        leaks.append(f"/proc/self/environ: {key}")

# What a child process sees.
out = subprocess.run(["env"], capture_output=True, check=True).stdout.decode()
for line in out.splitlines():
    key = line.split("=", 1)[0]
    if SUSPICIOUS.search(key) or "MCP_EXEC_AUTH_TOKEN" in line:
        leaks.append(f"child env: {key}")

if leaks:
    print("ESCAPED: secrets in the environment:", sorted(set(leaks)))
    sys.exit(1)
print("environment keys:", sorted(os.environ))
print("PASS")
