# escape: (root posture) reach the host's /tmp or /dev/shm: both must be fresh private mounts
# expect: pass
# posture: root
import os
import sys

problems = []
for d in ("/tmp", "/dev/shm"):
    names = os.listdir(d)
    # The working directory (/tmp here) starts with an empty out/, made for
    # the run before its code; anything in it would be residue.
    if d == os.getcwd() and "out" in names and os.path.isdir(os.path.join(d, "out")) \
            and not os.path.islink(os.path.join(d, "out")) and not os.listdir(os.path.join(d, "out")):
        names.remove("out")
    if names:
        problems.append(f"{d} is not empty at start: {sorted(names)[:10]}")
    path = os.path.join(d, "mcp_escape_private_probe")
    try:  # a real write: access(2) ignores Landlock
        with open(path, "w") as f:
            f.write("x")
        os.unlink(path)
    except OSError as e:
        problems.append(f"{d} is not writable (expected a private tmpfs): {e.strerror}")
with open("/proc/self/mountinfo") as f:
    mounts = {l.split()[4]: l.split(" - ")[1].split()[0] for l in f}
for d in ("/tmp", "/dev/shm"):
    if mounts.get(d) != "tmpfs":
        problems.append(f"{d} is not its own tmpfs mount ({mounts.get(d)})")
if problems:
    print("ESCAPED:", "; ".join(problems))
    sys.exit(1)
print("PASS")
