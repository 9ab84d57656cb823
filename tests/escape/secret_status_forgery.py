# escape: forge the runner's report on its status pipe, close stdout/stderr, and run on past the deadline
# expect: timed_out
# timeout: 3
# The answer must come at the deadline with the whole tree killed, never early with exit 0.
import os
import struct
import time

for record in (struct.pack("iiii", 0, 0, 0, 0),                        # the old report
               struct.pack("IIii240s", 0x4d435856, 1, 0, 0, b""),       # a fake verdict
               struct.pack("II", 0x4d43584e, 1)):                       # a fake note
    try:
        os.write(1000, record)
    except OSError:
        pass  # the supervisor reads no more than its bound
os.close(1)
os.close(2)
time.sleep(60)
