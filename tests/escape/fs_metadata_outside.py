# escape: change metadata outside the working directory (chmod/chown/utime/xattr to same values) to lock other runs out
# expect: pass
# posture: root container
# Not in the docker posture (no namespaces, one uid for server and runs):
# there a run can chmod/utime the server's own folders, which Landlock does
# not cover; the server sets their modes again before every run. A known
# limitation, written down in SECURITY.md.
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


# Landlock does not cover chmod, chown, utime or xattrs. Where the server's uid owns the
# workdir tree (container posture), a run could chmod 000 its parent or a sibling run and
# break every later run. Values are set to what they already are: harmless if it succeeds.
import json
import stat

DENIED = DENIED + (errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOENT)
cwd = os.path.realpath(os.getcwd())
parent = os.path.dirname(cwd)
targets = {parent, os.path.dirname(parent), "/etc/passwd", "/usr/bin", os.path.dirname(json.__file__)}
for d in (parent, os.path.dirname(parent)):
    try:
        targets.update(os.path.join(d, n) for n in os.listdir(d))
    except OSError:
        pass
if os.environ.get("MPLCONFIGDIR"):
    targets.update({os.environ["MPLCONFIGDIR"], os.path.dirname(os.environ["MPLCONFIGDIR"])})
for t in sorted(targets):
    t = os.path.realpath(t)
    if t == cwd or t.startswith(cwd + "/") or t == "/":
        continue
    try:
        st = os.stat(t)
    except OSError:
        continue
    attempt(f"chmod {t}", lambda: os.chmod(t, stat.S_IMODE(st.st_mode)))
    attempt(f"chown {t}", lambda: os.chown(t, st.st_uid, st.st_gid))
    attempt(f"utime {t}", lambda: os.utime(t, ns=(st.st_atime_ns, st.st_mtime_ns)))
    attempt(f"setxattr {t}", lambda: os.setxattr(t, "user.mcp_escape", b"1"),
            lambda: os.removexattr(t, "user.mcp_escape"))
report()
