# escape: leave state in the interpreter (sys.modules, builtins, module attributes, environ, sys.path, caches) for the next run
# expect: pass
# repeat: 2
# Run twice in a row (see README): each run first asserts that no marker from an earlier
# run is visible, then plants them all. The second run fails if anything carried over.
import builtins
import functools
import json
import linecache
import os
import sys

import numpy

found = []
if "mcp_escape_marker" in sys.modules:
    found.append("sys.modules['mcp_escape_marker']")
if hasattr(builtins, "mcp_escape_marker"):
    found.append("builtins.mcp_escape_marker")
if hasattr(json, "_mcp_marker"):
    found.append("json._mcp_marker")
if hasattr(numpy, "_mcp_marker"):
    found.append("numpy._mcp_marker")
if getattr(json.dumps, "__doc__", "") == "mcp_escape_marker":
    found.append("json.dumps replaced")
if "MCP_ESCAPE_MARKER" in os.environ:
    found.append("os.environ['MCP_ESCAPE_MARKER']")
if "/mcp_escape_marker" in sys.path:
    found.append("sys.path entry")
if "mcp_escape_marker.py" in linecache.cache:
    found.append("linecache entry")
if "mcp_escape_global" in globals():
    found.append("a global of __main__")
if any(getattr(h, "__name__", "") == "mcp_escape_hook" for h in sys.meta_path):
    found.append("sys.meta_path hook")
if getattr(sys, "_mcp_marker", None):
    found.append("sys._mcp_marker")
if found:
    print("LEAKED from an earlier run:", found)
    print("ESCAPED: cross-run state")
    sys.exit(1)

# Plant everything for the next run to find.
sys.modules["mcp_escape_marker"] = type(sys)("mcp_escape_marker")
builtins.mcp_escape_marker = True
json._mcp_marker = numpy._mcp_marker = sys._mcp_marker = True
_orig = json.dumps


@functools.wraps(_orig)
def _dumps(*a, **k):
    return _orig(*a, **k)


_dumps.__doc__ = "mcp_escape_marker"
json.dumps = _dumps
os.environ["MCP_ESCAPE_MARKER"] = "1"
sys.path.append("/mcp_escape_marker")
linecache.cache["mcp_escape_marker.py"] = (1, None, ["x\n"], "mcp_escape_marker.py")
mcp_escape_global = True


class mcp_escape_hook:
    @staticmethod
    def find_spec(*a, **k):
        return None


sys.meta_path.append(mcp_escape_hook)
print("PASS")
