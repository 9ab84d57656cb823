# escape: (workload) 32 plain threads with a lock, a barrier and a condition
# expect: pass
import threading

N = 32
counter = 0
lock = threading.Lock()
barrier = threading.Barrier(N)


def worker():
    global counter
    barrier.wait(timeout=10)  # all 32 exist at the same time
    for _ in range(1000):
        with lock:
            counter += 1


threads = [threading.Thread(target=worker) for _ in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert counter == N * 1000
print("PASS")
