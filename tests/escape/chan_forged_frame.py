# escape: forge frames on the tool channel (not JSON, a call without a tool, a reply-shaped frame) to confuse the supervisor
# expect: pass
# upstreams: yes
# posture: root container
# skip-why: without Landlock the docker posture refuses a stdio upstream (its runs could read the upstream's /proc/<pid>/environ)
# The supervisor answers a frame it cannot take with an error and closes the
# channel: the run loses its tools, nothing else does.
import json
import os
import struct

import mcp_exec_runtime
import mcp_tools

fd = mcp_exec_runtime.tools._tools["fd"]
print("NOTE: a call before works:", mcp_tools.everything.echo(message="before"))


def frame(body):
    os.write(fd, struct.pack("<I", len(body)) + body)


def reply():
    head = os.read(fd, 4)
    if len(head) < 4:
        return None
    n = struct.unpack("<I", head)[0]
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            break
        data += chunk
    return json.loads(data)


frame(json.dumps({"id": 7, "ok": True, "value": "i am the supervisor"}).encode())
r = reply()
print("NOTE: reply to a reply-shaped frame:", r)
if not r or r.get("ok"):
    print("ESCAPED: a forged frame was taken")
    raise SystemExit(1)
try:
    mcp_tools.everything.echo(message="after")
    print("ESCAPED: the channel stayed open after a forged frame")
    raise SystemExit(1)
except mcp_tools.ToolError as e:
    print("NOTE: after the forged frame:", e)
print("PASS")
