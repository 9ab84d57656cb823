# escape: allocate a 4 GiB numpy array (filled, so every page is touched)
# expect: pass
# timeout: 30
import sys

import numpy as np

try:
    a = np.ones((4 << 30) // 8, dtype=np.float64)
except MemoryError as e:  # numpy raises _ArrayMemoryError, a MemoryError
    print(f"MemoryError as expected: {e}")
    print("PASS")
    sys.exit(0)
print(f"ESCAPED: allocated {a.nbytes >> 20} MiB")
sys.exit(1)
