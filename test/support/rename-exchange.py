#!/usr/bin/env python3
"""Swaps two paths with renameat2(RENAME_EXCHANGE) in a tight loop until SIGTERM (or stdin closes).

Usage: rename-exchange.py A B. Prints "ready" once it has swapped once, and on exit "swaps N" (how many
exchanges succeeded; an even count leaves A and B where they started). Used by the stress suites and
tests as a real concurrent attacker: a folder of the workspace exchanged with a symlink to an outside
folder, atomically, thousands of times a second.
"""
import ctypes
import os
import signal
import sys

AT_FDCWD = -100
RENAME_EXCHANGE = 2

libc = ctypes.CDLL(None, use_errno=True)
renameat2 = libc.renameat2
renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]

a = os.fsencode(sys.argv[1])
b = os.fsencode(sys.argv[2])
stop = False


def on_term(_sig, _frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)
swaps = 0
failures = 0
announced = False
while not stop:
    if renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
        swaps += 1
        if not announced:
            announced = True
            sys.stdout.write("ready\n")
            sys.stdout.flush()
    else:
        failures += 1
        if failures > 1000 and swaps == 0:
            sys.stdout.write("error %s\n" % os.strerror(ctypes.get_errno()))
            sys.stdout.flush()
            break
# Leave the two paths where they started.
if swaps % 2 == 1 and renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
    swaps += 1
sys.stdout.write("swaps %d\n" % swaps)
sys.stdout.flush()
