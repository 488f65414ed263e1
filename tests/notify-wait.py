#!/usr/bin/python3
# notify-wait.py SOCKET READY_FILE: bind an sd_notify(3) datagram socket at
# SOCKET and wait for a daemon to send READY=1 on it; then create
# READY_FILE and exit 0.  tests/helpers.sh's modsignd_start() starts the
# daemon with NOTIFY_SOCKET=SOCKET and watches READY_FILE; it kills this
# process if the daemon dies first.
import os
import socket
import sys

path, ready = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
while True:
    msg = s.recv(4096).decode("utf-8", "replace")
    if "READY=1" in msg.split("\n"):
        break
os.close(os.open(ready, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
