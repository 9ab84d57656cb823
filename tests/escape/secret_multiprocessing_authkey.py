# escape: learn the multiprocessing authkey once and speak to other runs' managers and listeners
# expect: pass
# repeat: 2
# distinct: authkey
# Each run prints its authkey on a DISTINCT line; the harness checks that no two runs share one.
import multiprocessing

key = multiprocessing.current_process().authkey
if len(key) < 32:
    print(f"UNEXPECTED: authkey of {len(key)} bytes")
    raise SystemExit(1)
print("DISTINCT authkey", key.hex())
print("PASS")
