# escape: open kernel and cgroup control files for writing (core_pattern, sysrq-trigger, cgroup.procs, oom_score_adj)
# expect: pass
import errno
import os
import sys

# Landlock answers EACCES, a read-only mount EROFS, plain permissions EACCES/EPERM;
# ETXTBSY: the file is a running executable.
DENIED = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ETXTBSY)
escaped, unexpected = [], []


def attempt(what, action, undo=None):
    try:
        action()
    except OSError as e:
        if e.errno not in DENIED:
            unexpected.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)}")
        return
    escaped.append(what)
    if undo:
        try:
            undo()
        except OSError:
            pass


def probe_dir(d):
    p = os.path.join(d, f"mcp_escape_probe_{os.getpid()}")
    attempt(f"create a file in {d}", lambda: os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)),
            lambda: os.unlink(p))
    attempt(f"mkdir in {d}", lambda: os.mkdir(p + ".d"), lambda: os.rmdir(p + ".d"))
    attempt(f"symlink in {d}", lambda: os.symlink("/", p + ".l"), lambda: os.unlink(p + ".l"))
    attempt(f"mkfifo in {d}", lambda: os.mkfifo(p + ".p"), lambda: os.unlink(p + ".p"))


def probe_file(f):
    # Opening for writing is the attack: nothing is ever written, nothing truncated.
    attempt(f"open {f} for writing", lambda: os.close(os.open(f, os.O_WRONLY | os.O_APPEND)))
    attempt(f"truncate {f} to its own size", lambda: os.truncate(f, os.stat(f).st_size))


def report():
    if escaped:
        print("ESCAPED:", "; ".join(escaped))
        sys.exit(1)
    if unexpected:
        print("UNEXPECTED:", "; ".join(unexpected))
        sys.exit(1)
    print("PASS")


# Files are only opened O_WRONLY, never written: opening is what must be refused.
files = ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sysrq-trigger",
         "/proc/sys/vm/drop_caches", "/proc/sys/kernel/hostname", "/proc/sys/net/ipv4/ip_forward",
         "/sys/kernel/uevent_helper", "/sys/kernel/mm/transparent_hugepage/enabled",
         "/proc/self/oom_score_adj", "/proc/self/uid_map", "/proc/self/setgroups",
         "/proc/self/attr/current", "/proc/1/oom_score_adj"]
# Our cgroup and its parent: moving into the parent (cgroup.procs) or raising memory.max /
# pids.max would escape the run's limits.
try:
    with open("/proc/self/cgroup") as f:
        rel = [l.strip().split(":", 2)[2] for l in f if l.startswith("0::")]
except OSError:
    rel = []
for r in rel:
    for d in {os.path.normpath("/sys/fs/cgroup" + r), os.path.dirname(os.path.normpath("/sys/fs/cgroup" + r))}:
        for name in ("cgroup.procs", "cgroup.threads", "memory.max", "memory.high", "pids.max",
                     "cpu.max", "cgroup.subtree_control", "cgroup.freeze", "cgroup.kill"):
            files.append(os.path.join(d, name))
for f in files:
    if os.path.exists(f):
        attempt(f"open {f} for writing", lambda f=f: os.close(os.open(f, os.O_WRONLY)))
if os.path.isdir("/sys/fs/cgroup"):
    probe_dir("/sys/fs/cgroup")  # creating a cgroup
report()
