# escape: flood the tool channel with thousands of calls and never read the answers, to stall the supervisor or other runs
# expect: pass
# upstreams: yes
# posture: root container
# skip-why: without Landlock the docker posture refuses a stdio upstream (its runs could read the upstream's /proc/<pid>/environ)
# The supervisor's thread for this channel blocks on its own socket until the
# run ends; the count bound refuses calls past MCP_EXEC_MAX_TOOL_CALLS. The
# harness then checks that the server still runs code.
import json
import os
import struct
import time

import mcp_exec_runtime

fd = mcp_exec_runtime.tools._tools["fd"]
os.set_blocking(fd, False)
sent = 0
t0 = time.monotonic()
while time.monotonic() - t0 < 3:
    body = json.dumps({"id": sent, "op": "call", "server": "everything", "tool": "echo",
                       "arguments": {"message": "x" * 1000}}).encode()
    try:
        os.write(fd, struct.pack("<I", len(body)) + body)
        sent += 1
    except BlockingIOError:
        time.sleep(0.01)
print("NOTE: frames written without reading:", sent)
print("PASS")
