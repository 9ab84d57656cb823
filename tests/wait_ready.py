#!/usr/bin/python3
"""Waits until the server on 127.0.0.1:PORT answers /readyz with 200, for at
most about 60 s. Used by the test scripts that start the built server over
HTTP (tests/conformance, tests/clients).

With PID and LOG (the server's pid and its stderr file), ready means that
this server listens: it is alive, its log says "listening" and the port
answers; never merely that something on the port answers (another test's
server, when ours could not bind the port it was given).

Usage: wait_ready.py PORT [PID LOG]
Exit status: 0 ready; 3 the server ended because the port was taken
(listen_failed: start it again on another); 1 otherwise.
"""
import os
import sys
import time
import urllib.request

port = sys.argv[1]
pid = int(sys.argv[2]) if len(sys.argv) > 3 else None
log = sys.argv[3] if len(sys.argv) > 3 else None


def log_has(needle):
    try:
        with open(log, errors="replace") as f:
            return needle in f.read()
    except OSError:
        return False


def alive():
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (our child, not yet reaped by the shell) has ended too.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


for _ in range(600):
    if pid is not None and not alive():
        sys.exit(3 if log_has('"event":"listen_failed"') else 1)
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1).status == 200:
            if pid is None or log_has('"event":"listening"'):
                sys.exit(0)
    except Exception:
        pass
    time.sleep(0.1)
sys.exit(1)
