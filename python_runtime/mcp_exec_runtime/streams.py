"""Streams kept flushed: what the code printed is in the pipe before a
deadline, a kill or a crash."""

import os
import sys
import threading

# The runner's native flusher thread (embed/python.cc) calls
# _flush_streams() every 50 ms, so that what the code printed before a
# deadline, a kill or a crash is in the pipe without making every print a
# write. It takes the GIL only then, so the code never waits for it; and a
# fork never happens mid-flush (a child would inherit a held buffer lock).
_flush_lock = threading.Lock()


def _flush_streams():
    with _flush_lock:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass


def _guard_flush_across_fork():
    os.register_at_fork(before=_flush_lock.acquire, after_in_parent=_flush_lock.release,
                        after_in_child=_flush_lock.release)


def _crash_flush():
    """Called by the native crash handler (a fatal signal): best effort."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
