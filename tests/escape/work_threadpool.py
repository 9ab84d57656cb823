# escape: (workload) concurrent.futures ThreadPoolExecutor(8) map
# expect: pass
import hashlib
from concurrent.futures import ThreadPoolExecutor


def work(i):
    return hashlib.sha256(str(i).encode() * 1000).hexdigest()


with ThreadPoolExecutor(8) as pool:
    results = list(pool.map(work, range(200)))
assert results == [work(i) for i in range(200)]
print("PASS")
