# escape: hold more than the memory limit as a whole run: four forked children of 400 MiB each (RLIMIT_AS is per process)
# expect: reason memory
# posture: root
# skip-why: a whole-run memory bound needs a per-run cgroup; here only root may write the server's memory cgroup, and the other postures run as uid 65532
# The run's cgroup (root posture here: the server's memory cgroup is delegated; the other
# postures run as a uid that may not write cgroups, where only per-process rlimits hold, as
# doctor and SECURITY.md say) must hold all of the run's processes under one limit.
import os

pids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray(400 * 2**20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        os._exit(0)
    pids.append(pid)
statuses = [os.waitpid(p, 0)[1] for p in pids]
if all(s == 0 for s in statuses):
    print("ESCAPED: four children held 1600 MiB together")
print("statuses", statuses)
