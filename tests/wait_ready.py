#!/usr/bin/python3
"""Waits until the server on 127.0.0.1:PORT answers /readyz with 200, for at
most about 60 s. Exit status 0 when it did. Used by the test scripts that
start the built server over HTTP (tests/conformance, tests/clients).

Usage: wait_ready.py PORT
"""
import sys
import time
import urllib.request

for _ in range(600):
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/readyz", timeout=1).status == 200:
            sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
