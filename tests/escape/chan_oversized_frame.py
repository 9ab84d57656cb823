# escape: send frames far larger than any call (a 4 GiB length, then a real 8 MiB body) to make the supervisor buffer them
# expect: pass
# upstreams: yes
# posture: root container
# skip-why: without Landlock the docker posture refuses a stdio upstream (its runs could read the upstream's /proc/<pid>/environ)
# A length past the bound is refused before a byte of the body is read, and
# the channel closes.
import json
import os
import struct

import mcp_exec_runtime
import mcp_tools

fd = mcp_exec_runtime.tools._tools["fd"]
os.write(fd, struct.pack("<I", 0xFFFFFFFF))
n = struct.unpack("<I", os.read(fd, 4))[0]
r = json.loads(os.read(fd, n))
print("NOTE:", r)
if r.get("ok") or "bytes" not in r.get("error", ""):
    print("ESCAPED: the oversized frame was not refused")
    raise SystemExit(1)
try:
    os.write(fd, struct.pack("<I", 8 << 20) + b"x" * (8 << 20))
    print("NOTE: the supervisor took 8 MiB after refusing (it should have closed)")
except OSError as e:
    print("NOTE: write after the refusal:", e)
try:
    mcp_tools.everything.echo(message="still?")
    print("ESCAPED: the channel stayed open")
    raise SystemExit(1)
except mcp_tools.ToolError as e:
    print("NOTE:", e)
print("PASS")
