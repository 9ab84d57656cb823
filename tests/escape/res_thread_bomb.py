# escape: start threads until something gives (threads count against the process limit)
# expect: pass
# timeout: 60
import sys
import threading

LIMIT = 5000
stop = threading.Event()
threads, error = [], None
threading.stack_size(256 << 10)  # keep the memory limit out of the way: test the task limit
try:
    for _ in range(LIMIT):
        t = threading.Thread(target=stop.wait, daemon=True)
        t.start()
        threads.append(t)
except (RuntimeError, MemoryError, OSError) as e:  # "can't start new thread"
    error = e
stop.set()
for t in threads:
    t.join()
print(f"started {len(threads)} threads before {error!r}")
if error is None:
    print(f"ESCAPED: {LIMIT} threads and no limit hit")
    sys.exit(1)
# The limit is released: a new thread starts again.
t = threading.Thread(target=lambda: None)
t.start()
t.join()
print("PASS")
