# escape: leave files behind in /tmp, /dev/shm, $HOME, the workdir or its parent for the next run
# expect: pass
# repeat: 2
# Run twice in a row (see README): each run asserts no mcp_escape_residue_* from an earlier
# run exists anywhere it can look, that a writable /tmp or /dev/shm starts empty, and then
# leaves a marker wherever it can write (a file in /dev/shm is also what a POSIX
# shm_open() segment is).
import os
import sys
import tempfile

PREFIX = "mcp_escape_residue_"
cwd = os.path.realpath(os.getcwd())
places = list(dict.fromkeys(["/tmp", "/dev/shm", "/var/tmp", os.path.dirname(cwd),
                             os.path.expanduser("~"), cwd, tempfile.gettempdir()]))


def can_write(d):
    # A real attempt: access(2) ignores Landlock, so it cannot answer this.
    probe = os.path.join(d, f".{PREFIX}probe_{os.getpid()}")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return False
    os.unlink(probe)
    return True


problems = []
listings = {}
for d in places:
    try:
        listings[d] = os.listdir(d)
    except OSError:
        continue
    old = [n for n in listings[d] if n.startswith(PREFIX)]
    if old:
        problems.append(f"{d}: {old}")


def owned_by_runs(d, names):
    # What a run can leave has the runs' uid. Entries of other users are the
    # host's, not residue: in the posture without a mount namespace /dev/shm
    # is the host's, where podman keeps its root-owned libpod_lock.
    mine = []
    for n in names:
        try:
            if os.lstat(os.path.join(d, n)).st_uid == os.getuid():
                mine.append(n)
        except OSError:
            mine.append(n)  # cannot tell: count it
    return mine


def fresh_out(d, name):
    # out/ is made in every run's working directory before the code runs
    # (/tmp where it is the working directory): fresh when it is that folder
    # and empty. Anything in it would be residue.
    p = os.path.join(d, name)
    return (name == "out" and os.path.realpath(d) == os.path.realpath(os.getcwd())
            and os.path.isdir(p) and not os.path.islink(p) and not os.listdir(p))


# A /tmp or /dev/shm we can write to is private to this run (or purged of the
# runs' entries before it), so it must start without anything of the runs' uid
# but the run's own empty out/.
for d in ("/tmp", "/dev/shm"):
    left_there = [n for n in owned_by_runs(d, listings.get(d, [])) if not fresh_out(d, n)]
    if left_there and can_write(d):
        problems.append(f"writable {d} not empty at start: {sorted(left_there)[:10]}")
if problems:
    print("ESCAPED: residue from an earlier run:", "; ".join(problems))
    sys.exit(1)

left = []
for d in places:
    try:
        with open(os.path.join(d, f"{PREFIX}{os.getpid()}"), "w") as f:
            f.write("left by residue_check.py\n")
        left.append(d)
    except OSError:
        pass
print("left markers in:", left)
print("PASS")
