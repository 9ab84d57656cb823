# escape: write into sibling run directories and the server's cache next to the working directory
# expect: pass
import errno
import os
import sys

# Landlock answers EACCES, a read-only mount EROFS, plain permissions EACCES/EPERM;
# ETXTBSY: the file is a running executable.
DENIED = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ETXTBSY)
# procfs answers ENOENT to any attempt to create an entry in /proc.
DENIED = DENIED + (errno.ENOENT,)
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


# Most telling while other runs are live (the harness may run it next to a slow run).
# Layout today: <workdir root>/mcp-exec-XXXXXX/run-XXXXXX, and the server's cache in
# <workdir root>/mcp-exec-cache-<uid>: siblings and the parent's siblings are attacked.
cwd = os.path.realpath(os.getcwd())
parent = os.path.dirname(cwd)
grandparent = os.path.dirname(parent)
entries = []
for d in (parent, grandparent):
    try:
        entries += [os.path.join(d, n) for n in os.listdir(d)]
    except OSError as e:
        print(f"{d} not listable ({e.strerror})")
# MPLCONFIGDIR and the like point into the server's cache directory, a likely sibling.
for key in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
    if os.environ.get(key):
        entries += [os.environ[key], os.path.dirname(os.environ[key])]
seen = set()
for path in entries:
    real = os.path.realpath(path)
    if real in seen or real == cwd or real.startswith(cwd + "/"):
        continue
    seen.add(real)
    try:
        if os.path.isdir(real):
            probe_dir(real)
            try:  # Reading another run's files is a leak too; only reported, the write is the failure.
                print(f"NOTE: {real} is listable ({len(os.listdir(real))} entries)")
            except OSError:
                pass
        elif os.path.isfile(real):
            probe_file(real)
    except OSError as e:
        if e.errno not in DENIED + (errno.ENOENT,):  # a sibling run may vanish meanwhile
            unexpected.append(f"{real}: {e}")
print(f"probed {len(seen)} paths next to {cwd}")
report()
