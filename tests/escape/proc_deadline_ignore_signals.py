# escape: outlive the deadline by ignoring or handling every catchable signal while spinning the CPU
# expect: timed_out
# timeout: 2
import signal

for s in signal.valid_signals():
    if s in (signal.SIGKILL, signal.SIGSTOP):
        continue
    try:
        signal.signal(s, signal.SIG_IGN)
    except (OSError, ValueError, RuntimeError):
        pass
print("spinning", flush=True)
n = 0
while True:
    n += 1
