# escape: renice or re-pin processes outside the run (another run, the next spare, the server)
# expect: pass
# prelude: syscalls
# setpriority and sched_setaffinity on anything but the caller itself are refused by
# seccomp in every posture; where runs have their own pid namespace, no other run is
# even visible.
me = os.getpid()
targets = [1, os.getppid()] + list(range(2, 400))
for pid in sorted(set(targets)):
    if pid == me:
        continue
    expect(f"setpriority(PRIO_PROCESS, {pid})", (errno.EPERM,),
           lambda pid=pid: os.setpriority(os.PRIO_PROCESS, pid, 19))
    expect(f"sched_setaffinity({pid})", (errno.EPERM,),
           lambda pid=pid: os.sched_setaffinity(pid, {0}))
expect("setpriority(PRIO_PGRP, 0)", (errno.EPERM,), lambda: os.setpriority(os.PRIO_PGRP, 0, 19))
expect("setpriority(PRIO_USER, 0)", (errno.EPERM,), lambda: os.setpriority(os.PRIO_USER, 0, 19))
# The caller itself may still be niced and pinned.
os.nice(1)
os.sched_setaffinity(0, os.sched_getaffinity(0))
report()
