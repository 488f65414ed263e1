#!/bin/bash
# Unauthenticated network peers must not lock out signing: raw TCP sockets
# that never finish a TLS handshake, from one source or many, idle
# connections, and TLS peers refused for the connection limit (who must be
# answered in TLS, never in plaintext).
. "$(dirname "$0")/../lib.sh"

C=$CLIENT
cd "$T" || exit 1

pki farm-ca
pki rogue-ca
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >san.ext
issue signing-host farm-ca -extfile san.ext
issue builder-1 farm-ca
issue rogue rogue-ca

fresh() { cp "$(real_modules 1)" "$1"; $C strip "$1"; }

# tls_daemon NAME PORT [ARGS...]: a daemon with a UNIX and a TLS listener,
# root and cn:builder-1 allowed; its UNIX socket is $T/NAME.sock.
tls_daemon() {
	local name=$1 port=$2
	shift 2
	start_daemon "$T/$name.sock" --listen "tls:127.0.0.1:$port" \
		--key default=ephemeral:ecdsa-p256 --tls-cert signing-host.crt \
		--tls-key signing-host.key --tls-client-ca farm-ca.crt \
		--allow uid:0 --allow cn:builder-1 "$@" && wait_port "$port"
}
tls() { # PORT CERT-NAME CLIENT-ARGS...
	local port=$1 who=$2
	shift 2
	$C --server "tls:localhost:$port" --tls-ca farm-ca.crt --tls-cert "$who.crt" \
		--tls-key "$who.key" "$@"
}

# flood.py HOST PORT SOURCES PER-SOURCE DIR: keep PER-SOURCE raw TCP
# connections from each of SOURCES (comma-separated local addresses) open,
# sending nothing, and reopen each one the daemon closes.  DIR/ready
# appears once the daemon has closed 20 of them (it is saturated: the
# baseline refuses at its connection limit, the fix drops over-budget
# handshakes); on DIR/stop, writes DIR/result: closes=N plaintext=N where
# plaintext counts closed connections that received bytes that are not a
# TLS record (content types 20..23).
cat >flood.py <<'PY'
import os, selectors, socket, sys, time
host, port, sources, per, d = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), int(sys.argv[4]), sys.argv[5]
sel = selectors.DefaultSelector()
closes = plaintext = 0
def open_one(src):
    while True:
        s = socket.socket(); s.setblocking(False)
        try:
            s.bind((src, 0))
            s.connect_ex((host, port))
            sel.register(s, selectors.EVENT_READ, [src, b""])
            return
        except OSError:
            s.close(); time.sleep(0.01)  # out of ports for a moment
for src in sources:
    for _ in range(per):
        open_one(src)
while not os.path.exists(d + "/stop"):
    for key, _ in sel.select(0.2):
        s, data = key.fileobj, key.data
        try:
            b = s.recv(4096)
        except OSError:
            b = b""
        if b:
            data[1] += b
            if len(data[1]) < 65536:
                continue
        closes += 1
        if data[1] and data[1][0] not in (20, 21, 22, 23):
            plaintext += 1
        sel.unregister(s); s.close()
        open_one(data[0])
        if closes == 20:
            open(d + "/ready", "w").close()
open(d + "/result.tmp", "w").write("closes=%d plaintext=%d\n" % (closes, plaintext))
os.rename(d + "/result.tmp", d + "/result")
PY

# start_flood DIR PORT SOURCES PER-SOURCE: run flood.py until stop_flood DIR.
start_flood() {
	mkdir -p "$1"
	python3 flood.py 127.0.0.1 "$2" "$3" "$4" "$1" 2>"$1/err" &
	FLOOD_PID=$!
}
stop_flood() {
	touch "$1/stop"
	wait "$FLOOD_PID"
	cat "$1/result" 2>/dev/null
}
flood_field() { sed -n "s/.*$2=\([0-9]*\).*/\1/p" "$1/result"; }
flood_ready() { eventually 30 test -e "$1/ready"; }

# ---- a flood from many sources against both listeners ----------------------
# 400 silent sockets from ten addresses: more than --max-connections (16),
# more than the default handshake budget of the listener (128) and of each
# source (32).
PORT=$(free_port)
tls_daemon many "$PORT" --max-connections 16 || exit 1
SOURCES=$(seq -s, -f '127.0.0.%g' 2 11)
start_flood flood1 "$PORT" "$SOURCES" 40
check flood-saturates-daemon flood_ready flood1
check flood-unix-status $C --server "unix:$T/many.sock" status
fresh u.ko
check flood-unix-sign $C --server "unix:$T/many.sock" sign u.ko
$C --server "unix:$T/many.sock" cert >many.pem
check flood-unix-signature-verifies $C verify --cert many.pem u.ko
for i in 1 2 3; do
	fresh "t$i.ko"
	check "flood-tls-sign-$i" tls "$PORT" builder-1 sign "t$i.ko"
done
check flood-tls-signature-verifies $C verify --cert many.pem t1.ko t2.ko t3.ko
# Twin: the flood does not weaken authentication.
fresh r.ko
refute flood-tls-rogue-still-refused tls "$PORT" rogue sign r.ko
# Dropping unauthenticated peers costs a counter, not a log line each.
lines=$(wc -l <modsignd.log)
stop_flood flood1 >flood1.res
closes=$(flood_field flood1 closes)
check "flood-refusals-not-logged-per-connection ($closes closed, $lines log lines)" \
	test "$lines" -lt 100 -a "${closes:-0}" -ge 20
check "flood-refused-peers-get-no-plaintext ($(cat flood1.res))" \
	test "$(flood_field flood1 plaintext)" = 0
stop_daemon "$DAEMON_PID"

# ---- one source's flood does not block another ------------------------------
PORT=$(free_port)
tls_daemon src "$PORT" --max-connections 16 || exit 1
# 80 from one address: over its budget (32), under the listener's (128).
start_flood flood2 "$PORT" 127.0.0.2 80
check per-source-excess-closed-at-once flood_ready flood2
fresh s.ko
check per-source-other-address-signs tls "$PORT" builder-1 sign s.ko
$C --server "unix:$T/src.sock" cert >src.pem
check per-source-other-address-signature-verifies $C verify --cert src.pem s.ko
check per-source-unix-status $C --server "unix:$T/src.sock" status
fresh r.ko
refute per-source-rogue-still-refused tls "$PORT" rogue sign r.ko
stop_flood flood2 >flood2.res
check "per-source-refused-get-no-plaintext ($(cat flood2.res))" \
	test "$(flood_field flood2 plaintext)" = 0
stop_daemon "$DAEMON_PID"

# ---- the connection limit, refused over TLS; slots kept for UNIX ------------
# --max-connections 4: TLS peers may hold 3, the fourth slot is local's.
# holder.py opens 5 TLS connections as builder-1, one after another, and
# says for each what came back: "ok" (a status reply), "tls-refused MSG"
# (an error frame inside TLS) or "plaintext" (bytes that are no TLS
# record); then DIR/ready.  On DIR/go it opens a UNIX connection too,
# then DIR/ready2; on DIR/stop it exits.
cat >holder.py <<'PY'
import json, os, socket, ssl, struct, sys, time
port, unix, d = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations("farm-ca.crt")
ctx.load_cert_chain("builder-1.crt", "builder-1.key")
req = json.dumps({"v": 1, "id": 1, "op": "status"}).encode()
req = struct.pack(">I", len(req)) + req
held, out = [], open(d + "/lines", "w")
def frame_of(buf):
    if len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
        return json.loads(buf[4:4 + struct.unpack(">I", buf[:4])[0]])
def tls_conn():
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, outg, server_hostname="localhost")
    first = b""
    def pump():
        nonlocal first
        if outg.pending: raw.sendall(outg.read())
        b = raw.recv(65536)
        if not first: first = b
        if not b: inc.write_eof()
        else: inc.write(b)
        return b
    try:
        while True:
            try: obj.do_handshake(); break
            except ssl.SSLWantReadError:
                if not pump(): raise
        obj.write(req); raw.sendall(outg.read())
        buf = b""
        while frame_of(buf) is None:
            try: buf += obj.read(65536)
            except ssl.SSLWantReadError:
                if not pump(): break
    except Exception as e:
        buf = b""
    if first and first[0] not in (20, 21, 22, 23):
        return "plaintext %r" % first[:40]
    r = frame_of(buf)
    if r is None: return "nothing"
    held.append(raw)
    return "ok" if r.get("ok") else "tls-refused " + str(r.get("error"))
for i in range(5):
    out.write(tls_conn() + "\n"); out.flush()
open(d + "/ready", "w").close()
while not os.path.exists(d + "/go"): time.sleep(0.05)
u = socket.socket(socket.AF_UNIX); u.connect(unix); u.sendall(req)
buf = b""
while frame_of(buf) is None:
    b = u.recv(65536)
    if not b: break
    buf += b
out.write("unix " + ("ok" if frame_of(buf) and frame_of(buf).get("ok") else "refused") + "\n")
out.close()
open(d + "/ready2", "w").close()
while not os.path.exists(d + "/stop"): time.sleep(0.05)
PY
PORT=$(free_port)
tls_daemon lim "$PORT" --max-connections 4 || exit 1
mkdir -p hold
python3 holder.py "$PORT" "$T/lim.sock" hold 2>hold/err &
HOLD_PID=$!
eventually 60 test -e hold/ready
nth() { sed -n "${1}p" hold/lines; }
check "tls-limit-admits-three ($(sed -n 1,3p hold/lines | tr '\n' ' '))" \
	test "$(sed -n 1,3p hold/lines | tr '\n' ' ')" = "ok ok ok "
check "tls-limit-refused-over-tls ($(nth 4))" \
	grep -qx "tls-refused too many connections, try again later" <(nth 4)
check "tls-limit-refused-never-plaintext ($(nth 5))" bash -c "! grep -q plaintext hold/lines"
check tls-limit-unix-slot-kept $C --server "unix:$T/lim.sock" status
# Twin: the reserved slot is local's, but the limit still holds for local
# peers once every slot is taken.
touch hold/go
eventually 10 test -e hold/ready2
check tls-limit-unix-takes-reserved-slot grep -qx "unix ok" hold/lines
refute tls-limit-unix-refused-when-all-taken $C --server "unix:$T/lim.sock" status
touch hold/stop
wait "$HOLD_PID"
stop_daemon "$DAEMON_PID"

# ---- idle connections are closed; active ones are not ------------------------
# idler.py: silent and finished connections, UNIX and TLS, authenticated
# and not; DIR/NAME appears when the daemon closes NAME.  Two active
# clients send a status request every 0.2 s until DIR/stop and report
# into DIR/NAME.replies.
cat >idler.py <<'PY'
import json, os, socket, ssl, struct, sys, threading, time
port, unix, d = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations("farm-ca.crt")
ctx.load_cert_chain("builder-1.crt", "builder-1.key")
req = json.dumps({"v": 1, "id": 1, "op": "status"}).encode()
req = struct.pack(">I", len(req)) + req
def reply(s):
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
        b = s.recv(65536)
        if not b: raise EOFError
        buf += b
def unix_conn():
    s = socket.socket(socket.AF_UNIX); s.connect(unix); return s
def tls_conn():
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
def raw_conn():
    return socket.create_connection(("127.0.0.1", port))
def idle(name, s, ask):
    try:
        if ask: s.sendall(req); reply(s)
        while s.recv(65536): pass
    except (OSError, EOFError, ssl.SSLError):
        pass
    open(d + "/" + name, "w").close()
def active(name, s):
    n = 0
    try:
        while not os.path.exists(d + "/stop"):
            s.sendall(req); reply(s); n += 1; time.sleep(0.2)
        open(d + "/" + name + ".replies", "w").write("%d\n" % n)
    except (OSError, EOFError, ssl.SSLError) as e:
        open(d + "/" + name, "w").write("cut after %d: %r\n" % (n, e))
ts = [threading.Thread(target=idle, args=a) for a in [
    ("unix-silent", unix_conn(), False), ("unix-after-request", unix_conn(), True),
    ("tls-handshake-silent", raw_conn(), False), ("tls-after-request", tls_conn(), True)]]
ts += [threading.Thread(target=active, args=a) for a in [
    ("unix-active", unix_conn()), ("tls-active", tls_conn())]]
for t in ts: t.daemon = True; t.start()
open(d + "/started", "w").close()
for t in ts[4:]: t.join()
PY
PORT=$(free_port)
# A daemon without these options (the baseline) runs with its defaults,
# a 30 s handshake timeout and no idle timeout: the checks below, which
# give the daemon 20 s in all, fail on it.
timeouts=(--idle-timeout 2 --handshake-timeout 2)
"$MODSIGND" --help | grep -q -- --idle-timeout || timeouts=()
tls_daemon idle "$PORT" "${timeouts[@]}" || exit 1
mkdir -p idle
python3 idler.py "$PORT" "$T/idle.sock" idle 2>idle/err &
IDLE_PID=$!
eventually 20 test -e idle/started
IDLERS="unix-silent unix-after-request tls-handshake-silent tls-after-request"
all_closed() { for n in $IDLERS; do [ -e "idle/$n" ] || return 1; done; }
eventually 20 all_closed
for n in $IDLERS; do
	check "idle-$n-closed" test -e "idle/$n"
done
# Twins: the active clients, connected as long as the idle ones, are not
# cut (the idle ones were closed after the timeout had passed).
refute idle-unix-active-not-cut test -e idle/unix-active
refute idle-tls-active-not-cut test -e idle/tls-active
touch idle/stop
wait "$IDLE_PID"
check "idle-active-clients-served ($(cat idle/*.replies 2>/dev/null | tr '\n' ' '))" \
	test -s idle/unix-active.replies -a -s idle/tls-active.replies
stop_daemon "$DAEMON_PID"

# ---- on SIGTERM, silent handshakes are not waited for ------------------------
# The daemon waits up to 10 s for requests in flight; a peer that never
# finishes its handshake has none, and must not hold the exit that long.
PORT=$(free_port)
tls_daemon term "$PORT" || exit 1
mkdir -p term
python3 - "$PORT" term <<'PY' &
import os, socket, sys, time
s = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(4)]
open(sys.argv[2] + "/held", "w").close()
while not os.path.exists(sys.argv[2] + "/stop"): time.sleep(0.05)
PY
TERM_PY=$!
eventually 10 test -e term/held
fresh term.ko
check sigterm-with-silent-handshakes-still-signs $C --server "unix:$T/term.sock" sign term.ko
kill "$DAEMON_PID"
gone() { ! kill -0 "$DAEMON_PID" 2>/dev/null; }
check sigterm-does-not-wait-for-silent-handshakes eventually 5 gone
touch term/stop
wait "$TERM_PY"
stop_daemon "$DAEMON_PID"
