# escape: allocate (and touch) 2 GiB with a bytearray, past the 512 MiB memory limit
# expect: pass
# timeout: 30
# Assumes the limit makes the allocation itself fail (address-space/data rlimit), the
# usual way a 512 MiB limit surfaces in Python. If the implementation relies on a cgroup
# alone the process is killed instead: res_memory_uncaught.py covers that outcome.
import sys

SIZE = 2 << 30
try:
    b = bytearray(SIZE)  # calloc: pages may stay untouched until written
    for i in range(0, SIZE, 4096):
        b[i] = 1
except MemoryError:
    print("MemoryError as expected")
    print("PASS")
    sys.exit(0)
print(f"ESCAPED: allocated and touched {SIZE >> 20} MiB")
sys.exit(1)
