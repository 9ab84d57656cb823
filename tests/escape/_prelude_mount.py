# Shared by the fs_mount_* snippets: the folders the escape suite mounts
# (tests/integration/postures.h: data/ read-only, results/ read-write, at
# their host paths in every posture), and attempts that must be refused.
import errno
import os

BASE = "/var/tmp/mcp-exec-test-mounts"
DATA = BASE + "/data"
RESULTS = BASE + "/results"
# EACCES: permissions or Landlock; EPERM: seccomp; EROFS: a read-only mount;
# EXDEV: a link or rename across mounts (or across Landlock's rules).
DENIED = (errno.EACCES, errno.EPERM, errno.EROFS, errno.EXDEV)
escaped, unexpected = [], []
assert os.path.isfile(DATA + "/rain.csv"), "the mounted folder is missing"


def attempt(what, action):
    try:
        action()
    except OSError as e:
        if e.errno not in DENIED:
            unexpected.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)}")
        return
    escaped.append(what)


def verdict(what):
    if escaped:
        print(f"ESCAPED: {what}:", escaped)
        raise SystemExit(1)
    if unexpected:
        print("UNEXPECTED:", unexpected)
        raise SystemExit(2)
