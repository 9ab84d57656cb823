# escape: run with root's uid/gid or a root supplementary group
# expect: pass
import os
import sys

ruid, euid, suid = os.getresuid()
rgid, egid, sgid = os.getresgid()
groups = os.getgroups()
print(f"uid {ruid}/{euid}/{suid} gid {rgid}/{egid}/{sgid} groups {groups}")
with open("/proc/self/status") as f:
    status = dict(l.rstrip("\n").split(":\t", 1) for l in f if ":\t" in l)
# Real, effective, saved and filesystem ids (status lists all four).
fs_ids = [int(x) for x in status["Uid"].split() + status["Gid"].split()]
bad = []
if 0 in (ruid, euid, suid, rgid, egid, sgid) or 0 in fs_ids:
    bad.append(f"a root id: Uid {status['Uid']} Gid {status['Gid']}")
if 0 in groups:
    bad.append(f"supplementary group 0 in {groups}")
if bad:
    print("ESCAPED:", "; ".join(bad))
    sys.exit(1)
if euid != 65532:
    print(f"NOTE: runs as uid {euid}, not 65532")
print("PASS")
