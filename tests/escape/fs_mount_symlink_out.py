# escape: follow symlinks inside a mounted host folder (MCP_EXEC_MOUNTS) out of it: to /etc/shadow, to a file and a folder beside it on the host, to the server's binary
# expect: pass
# The suite mounts /var/tmp/mcp-exec-test-mounts/data read-only at the same
# path in runs (tests/integration/postures.h); secret/ lies beside it on the
# host and is in no mount. Where runs have a minimal root a link resolves in
# it (secret/ and the binary are not there); where they have none, Landlock
# refuses what lies outside the granted folder.
import os

BASE = "/var/tmp/mcp-exec-test-mounts"
DATA = BASE + "/data"
assert os.path.isfile(DATA + "/rain.csv"), "the mounted folder is missing"
escaped = []
for name in ("link_shadow", "link_secret", "link_server"):
    try:
        with open(f"{DATA}/{name}", "rb") as f:
            escaped.append(f"{name}: {f.read(30)!r}")
    except OSError:
        pass
for path in (DATA + "/link_secret_dir", BASE + "/secret", DATA + "/link_secret_dir/token.txt",
             os.path.realpath(DATA + "/link_secret")):
    try:
        if os.path.isdir(path):
            escaped.append(f"{path} lists {os.listdir(path)}")
        else:
            with open(path, "rb") as f:
                escaped.append(f"{path}: {f.read(30)!r}")
    except OSError:
        pass
if escaped:
    print("ESCAPED: a link led out of the mounted folder:", escaped)
    raise SystemExit(1)
print("PASS")
