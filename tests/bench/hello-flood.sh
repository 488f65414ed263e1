#!/bin/bash
# A builder's latency while one address replays recorded ClientHellos at
# the TLS listener (issue 28, point 1; docs/PERFORMANCE.md, "Replayed
# ClientHellos").  Not part of make check: it measures, it asserts nothing.
#
#   tests/bench/hello-flood.sh [BUILD-DIR]     (default: build/)
#
# For each server key (ECDSA P-256; RSA-4096) and each group (ffdhe8192,
# what the attack asked for; X25519, the cheapest): a ClientHello made by
# `openssl s_client -groups GROUP` is recorded once, then sent COUNT times
# (default 300) from 127.0.0.2, 30 connections at a time, each closed and
# the next opened once the daemon answers or hangs up.  0.5 s after the
# first 30 are sent, builder-1 on 127.0.0.1 asks `status` over TLS, then
# root over the UNIX socket: the wall time of each is printed, and the
# daemon's CPU time from the flood's start until both are answered.  The
# daemon: a one-time ECDSA P-256 signing key, default limits.
#
#   BENCH_KEEP=1   keep the working directory (its daemon.log)
#   SOURCES=N      send from 127.0.0.2 .. 127.0.0.(N+1), round robin
#                  (default 1: one address); each has a bucket of its own
#   SERVERS="signing-host-rsa:RSA-4096"  GROUPS_="X25519"  a subset
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$(realpath "${1:-$REPO/build}")
COUNT=${COUNT:-300}
SOURCES=${SOURCES:-1}
CONC=${CONC:-30}
. "$REPO/tests/helpers.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/modsign-hello-flood.XXXXXX")
MODSIGND=$B/modsignd
CLIENT=$B/modsign-client
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${BENCH_KEEP:-}" ] && echo "kept $W" >&2 || rm -rf "$W"
}
trap cleanup EXIT
cd "$W"
pki farm-ca
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >san.ext
issue_server signing-host farm-ca DNS:localhost,IP:127.0.0.1
# The same for an RSA-4096 server key: 5 ms of the event loop a handshake.
openssl req -new -newkey rsa:4096 -nodes -subj /CN=signing-host-rsa -keyout signing-host-rsa.key \
	-out signing-host-rsa.csr 2>/dev/null
openssl x509 -req -in signing-host-rsa.csr -CA farm-ca.crt -CAkey farm-ca.key -CAcreateserial \
	-days 30 -out signing-host-rsa.crt -extfile san.ext 2>/dev/null
issue builder-1 farm-ca

# record GROUP FILE: the first TLS record openssl's client sends offering
# GROUP only.
record() {
	python3 - "$1" "$2" <<'PY'
import socket, struct, subprocess, sys
group, out = sys.argv[1], sys.argv[2]
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
p = subprocess.Popen(["openssl", "s_client", "-connect", "127.0.0.1:%d" % l.getsockname()[1],
                      "-groups", group], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
c, _ = l.accept(); buf = b""
while len(buf) < 5 or len(buf) < 5 + struct.unpack(">H", buf[3:5])[0]:
    buf += c.recv(65536)
open(out, "wb").write(buf[:5 + struct.unpack(">H", buf[3:5])[0]])
c.close(); p.kill()
PY
}

# flood FILE PORT: COUNT connections from 127.0.0.2, each sent FILE, 30
# at a time (under the per-source handshake budget of 32, so that none is
# dropped for it): a connection is closed, and the next opened, once the
# daemon has answered it or hung up.
flood() {
	python3 - "$1" "$2" "$COUNT" "$SOURCES" "$CONC" 2>>flood.err <<'PY' &
import selectors, socket, sys, time
hello, port, n = open(sys.argv[1], "rb").read(), int(sys.argv[2]), int(sys.argv[3])
sources = int(sys.argv[4])
sel, sent = selectors.DefaultSelector(), 0
def one():
    global sent
    s = socket.socket(); s.bind(("127.0.0.%d" % (2 + sent % sources), 0)); s.connect(("127.0.0.1", port))
    s.sendall(hello); sel.register(s, selectors.EVENT_READ); sent += 1
for _ in range(int(sys.argv[5])): one()
open("flood.up", "w").close()
while sel.get_map():
    for key, _ in sel.select():
        sel.unregister(key.fileobj); key.fileobj.close()
        if sent < n: one()
time.sleep(3600)
PY
	FLOOD=$!
	PIDS+=("$FLOOD")
}

cpu_ms() { awk '{ print ($14 + $15) * 1000 / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }
elapsed() { # COMMAND...: wall time in ms, and "ok" or "failed"
	local t0 t1 r=ok
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || r=failed
	t1=$(date +%s%N)
	echo "$(((t1 - t0) / 1000000)) ms $r"
}

echo "| server key | hellos from one address | builder's TLS status | root's UNIX status | daemon CPU over the flood |"
echo "|---|---|---|---|---|"
for server in ${SERVERS:-signing-host:ECDSA-P256 signing-host-rsa:RSA-4096}; do
for group in ${GROUPS_:-ffdhe8192 X25519}; do
	record "$group" "$group.hello"
	PORT=$(free_port)
	MODSIGND_START_TIMEOUT=60 modsignd_start daemon.log --listen "unix:$W/d.sock" \
		--listen "tls:127.0.0.1:$PORT" --key default=ephemeral:ecdsa-p256 \
		--tls-cert "${server%:*}.crt" --tls-key "${server%:*}.key" \
		--tls-client-ca farm-ca.crt --allow uid:0 --allow cn:builder-1
	PIDS+=("$MODSIGND_PID")
	cpu0=$(cpu_ms "$MODSIGND_PID")
	flood "$group.hello" "$PORT"
	until [ -e flood.up ]; do sleep 0.05; done
	rm flood.up
	sleep 0.5
	tls=$(elapsed "$CLIENT" --server "tls:localhost:$PORT" --tls-ca farm-ca.crt \
		--tls-cert builder-1.crt --tls-key builder-1.key status)
	unix=$(elapsed "$CLIENT" --server "unix:$W/d.sock" status)
	cpu1=$(cpu_ms "$MODSIGND_PID")
	echo "| ${server#*:} | $COUNT × $group from $SOURCES address(es) ($(stat -c %s "$group.hello") B each) | $tls | $unix | $(awk "BEGIN { print $cpu1 - $cpu0 }") ms |"
	kill "$FLOOD" "$MODSIGND_PID"
	wait "$FLOOD" "$MODSIGND_PID" 2>/dev/null || true
done
done
