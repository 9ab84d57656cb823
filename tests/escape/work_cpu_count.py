# escape: (workload) os.cpu_count, sched_getaffinity, platform, time and resource queries work
# expect: pass
import os
import platform
import resource
import time

n = os.cpu_count()
assert isinstance(n, int) and n >= 1, n
assert len(os.sched_getaffinity(0)) >= 1
assert platform.machine()
assert time.time() > 1.6e9 and time.monotonic() > 0 and time.process_time() >= 0
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
assert 0 < soft <= hard
print("cpus", n, "nofile", soft, hard, "loadavg", os.getloadavg())
print("PASS")
