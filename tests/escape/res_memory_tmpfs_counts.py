# escape: keep memory outside the limit in the run's tmpfs: 200 MiB in /tmp, then 400 MiB of heap
# expect: reason memory
# posture: root
# skip-why: tmpfs counted in the memory limit needs a per-run cgroup; here only root may write the server's memory cgroup
# tmpfs pages are the run's memory too: with its cgroup they count against the same limit.
import os

with open(os.path.join(os.getcwd(), "fill"), "wb") as f:
    for _ in range(200):
        f.write(b"x" * 2**20)
block = bytearray(400 * 2**20)
for i in range(0, len(block), 4096):
    block[i] = 1
print("ESCAPED: 600 MiB held under a 512 MiB limit")
