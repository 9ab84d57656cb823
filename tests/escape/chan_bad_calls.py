# escape: call through the raw channel what mcp_tools would not send: a tool outside the allow list, another upstream, arguments of the wrong shape, a non-object
# expect: pass
# upstreams: yes
# posture: root container
# skip-why: without Landlock the docker posture refuses a stdio upstream (its runs could read the upstream's /proc/<pid>/environ)
# Every check is the supervisor's: the run's own module decides nothing.
import json
import os
import struct

import mcp_exec_runtime

fd = mcp_exec_runtime.tools._tools["fd"]


def call(req):
    body = json.dumps(req).encode()
    os.write(fd, struct.pack("<I", len(body)) + body)
    n = struct.unpack("<I", os.read(fd, 4))[0]
    data = b""
    while len(data) < n:
        data += os.read(fd, n - len(data))
    return json.loads(data)


bad = [
    {"id": 1, "op": "call", "server": "everything", "tool": "get-env", "arguments": {}},
    {"id": 2, "op": "call", "server": "everything", "tool": "toggle-simulated-logging"},
    {"id": 3, "op": "call", "server": "other", "tool": "echo", "arguments": {"message": "x"}},
    {"id": 4, "op": "call", "server": "everything", "tool": "echo", "arguments": {"message": 5}},
    {"id": 5, "op": "call", "server": "everything", "tool": "echo", "arguments": ["x"]},
    {"id": 6, "op": "call", "server": "everything", "tool": "get-sum",
     "arguments": {"a": 1, "b": 2, "extra": "x" * 10}},
    {"id": 7, "op": "shell", "command": "id"},
]
taken = []
for req in bad:
    r = call(req)
    print("NOTE:", req.get("tool") or req["op"], "->", r.get("ok"), (r.get("error") or "")[:100])
    if r.get("ok") and req["id"] != 6:
        taken.append(req["id"])
if taken:
    print("ESCAPED: the supervisor forwarded", taken)
    raise SystemExit(1)
print("PASS")
