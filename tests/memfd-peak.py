#!/usr/bin/env python3
"""memfd-peak.py OUT COMMAND [ARG...]: run COMMAND, and write to OUT the
most bytes its memfds (memfd_create(2): a compressed module's
decompressed copy, modsign-client/modfile.h) held at once, sampled every
millisecond or so from /proc/PID/fd; exits with COMMAND's status.

Why not the peak RSS (/usr/bin/time -f %M, VmHWM): a memfd's pages are
shared memory, counted in a process's RSS only where it maps them, and
the client reads them with pread(2), never mapped.  Sampling can miss a
peak shorter than a sample; a batch holds its modules from their hash to
their signature's write, far longer.
"""
import os
import subprocess
import sys
import time


def memfd_bytes(fd_dir):
    total = 0
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return 0
    for name in names:
        path = os.path.join(fd_dir, name)
        try:
            if os.readlink(path).startswith("/memfd:"):
                total += os.stat(path).st_size
        except OSError:  # closed meanwhile
            pass
    return total


def main():
    out, cmd = sys.argv[1], sys.argv[2:]
    proc = subprocess.Popen(cmd)
    fd_dir = "/proc/%d/fd" % proc.pid
    peak = 0
    while proc.poll() is None:
        peak = max(peak, memfd_bytes(fd_dir))
        time.sleep(0.001)
    with open(out, "w") as f:
        f.write("%d\n" % peak)
    sys.exit(proc.returncode)


main()
