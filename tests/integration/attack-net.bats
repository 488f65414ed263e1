#!/usr/bin/env bats
# Unauthenticated network peers must not lock out signing: raw TCP sockets
# that never finish a TLS handshake, from one source or many, idle
# connections, and TLS peers refused for the connection limit (who must be
# answered in TLS, never in plaintext).
#
# Each case runs its own daemon and its own flood (a few seconds of
# silent sockets); a case holds the assertions one flood answers together.

load ../common

setup() {
	case_setup
	pki farm-ca
	pki rogue-ca
	issue_server signing-host farm-ca DNS:localhost,IP:127.0.0.1
	issue builder-1 farm-ca
	issue rogue rogue-ca
	BG_PIDS=()
}

# The floods and holders a case starts in the background (with 3>&-: bats
# waits for every holder of its fd 3) are killed before its daemons stop.
teardown() {
	local p

	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	case_teardown
}

# flood HOST PORT SOURCES PER-SOURCE DIR: keep PER-SOURCE raw TCP
# connections from each of SOURCES (comma-separated local addresses) open,
# sending nothing, and reopen each one the daemon closes.  DIR/ready
# appears once the daemon has closed 20 of them (it is saturated: the
# baseline refuses at its connection limit, the fix drops handshakes over
# the listener's budget, or silent ones at the handshake timeout), DIR/closed-500 once it has closed 500; on DIR/stop, writes
# DIR/result: closes=N plaintext=N where plaintext counts closed
# connections that received bytes that are not a TLS record (content
# types 20..23).
flood() {
	exec python3 - "$@" <<'PY'
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
        if closes == 500:
            open(d + "/closed-500", "w").close()
open(d + "/result.tmp", "w").write("closes=%d plaintext=%d\n" % (closes, plaintext))
os.rename(d + "/result.tmp", d + "/result")
PY
}

# flooded DIR SOURCES PER-SOURCE [DAEMON-ARGS...]: a tls_daemon "d" with
# --max-connections 16 and a flood of it until stop_flood DIR; returns once
# the flood saturates it (flood-saturates-daemon,
# per-source-excess-closed-at-once).
flooded() {
	local dir=$1 sources=$2 per=$3
	shift 3
	tls_daemon d --max-connections 16 "$@"
	mkdir -p "$dir"
	flood 127.0.0.1 "$PORT" "$sources" "$per" "$dir" 2>"$dir/err" 3>&- &
	FLOOD_PID=$!
	BG_PIDS+=("$FLOOD_PID")
	run eventually 30 test -e "$dir/ready"
	assert_success
}
# stop_flood DIR: stops the flood and waits for DIR/result.  Not under
# run: the flood is a child of the case's shell, not of run's subshell.
stop_flood() {
	touch "$1/stop"
	wait "$FLOOD_PID"
	cat "$1/result"
}
flood_field() { sed -n "s/.*$2=\([0-9]*\).*/\1/p" "$1/result"; }

# ---- a flood from many sources against both listeners ----------------------
# 400 silent sockets from ten addresses: more than --max-connections (16),
# more than the default handshake budget of the listener (128) and of each
# source (32).
MANY=$(seq -s, -f '127.0.0.%g' 2 11)

@test "flood-unix-sign" {
	flooded flood "$MANY" 40
	# flood-unix-status
	run "$C" --server "unix:$T/d.sock" status
	assert_success
	fresh u.ko
	run "$C" --server "unix:$T/d.sock" sign u.ko
	assert_success
	# flood-unix-signature-verifies
	"$C" --server "unix:$T/d.sock" cert >d.pem
	run "$C" verify --cert d.pem u.ko
	assert_success
}

@test "flood-tls-sign" {
	flooded flood "$MANY" 40
	# flood-tls-sign-1..3
	for i in 1 2 3; do
		fresh "t$i.ko"
		run as builder-1 sign "t$i.ko"
		assert_success
	done
	# flood-tls-signature-verifies
	"$C" --server "unix:$T/d.sock" cert >d.pem
	run "$C" verify --cert d.pem t1.ko t2.ko t3.ko
	assert_success
}

# Twin: the flood does not weaken authentication.
@test "flood-tls-rogue-still-refused" {
	flooded flood "$MANY" 40
	fresh r.ko
	run as rogue sign r.ko
	assert_failure
}

@test "flood-refusals-not-logged-per-connection" {
	# Dropping unauthenticated peers costs a counter, not a log line each:
	# 500 closed connections leave fewer than 100 lines.
	local lines closes
	flooded flood "$MANY" 40
	run eventually 60 test -e flood/closed-500
	assert_success
	lines=$(wc -l <modsignd.log)
	stop_flood flood >/dev/null
	closes=$(flood_field flood closes)
	[ "$lines" -lt 100 ] && [ "${closes:-0}" -ge 500 ] ||
		{ echo "$closes connections closed, $lines log lines"; false; }
}

@test "flood-refused-peers-get-no-plaintext" {
	flooded flood "$MANY" 40
	stop_flood flood >/dev/null
	[ "$(flood_field flood plaintext)" = 0 ] || { echo "flood: $(cat flood/result)"; false; }
}

# ---- one source's flood does not block another ------------------------------
# 80 silent sockets from one address: over its share of key exchanges (32),
# which they do not count against (they sent nothing), under the
# listener's budget (128); they are closed at the handshake timeout.

@test "per-source-other-address-signs" {
	flooded flood 127.0.0.2 80
	fresh s.ko
	run as builder-1 sign s.ko
	assert_success
	# per-source-other-address-signature-verifies
	"$C" --server "unix:$T/d.sock" cert >d.pem
	run "$C" verify --cert d.pem s.ko
	assert_success
}

@test "per-source-unix-status" {
	flooded flood 127.0.0.2 80
	run "$C" --server "unix:$T/d.sock" status
	assert_success
}

# Twin: the budget does not weaken authentication.
@test "per-source-rogue-still-refused" {
	flooded flood 127.0.0.2 80
	fresh r.ko
	run as rogue sign r.ko
	assert_failure
}

@test "per-source-refused-get-no-plaintext" {
	flooded flood 127.0.0.2 80
	stop_flood flood >/dev/null
	[ "$(flood_field flood plaintext)" = 0 ] || { echo "flood: $(cat flood/result)"; false; }
}

# ---- silent sockets from the builder's own address --------------------------
# Found in the review of the issue-13 fixes (8d47504): the builder shares
# its address's quota of handshakes with whoever opens sockets from it.

@test "same-source-silent-sockets-do-not-lock-out" {
	tls_daemon d
	# 40 raw sockets from the builder's own address (over its share of
	# 32), silent, each reopened as soon as the daemon closes it.
	cat >hold.py <<'PY'
import os, selectors, socket, sys
port, n, stop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
sel = selectors.DefaultSelector()
def one():
    s = socket.socket(); s.setblocking(False); s.bind(("127.0.0.1", 0))
    s.connect_ex(("127.0.0.1", port)); sel.register(s, selectors.EVENT_READ)
for _ in range(n): one()
open(stop + ".up", "w").close()
while not os.path.exists(stop):
    for key, _ in sel.select(0.2):
        try: data = key.fileobj.recv(4096)
        except OSError: data = b""
        if not data:
            sel.unregister(key.fileobj); key.fileobj.close(); one()
PY
	python3 hold.py "$PORT" 40 "$T/stop" 3>&- &
	holder=$!
	eventually 10 test -e stop.up
	ok=0
	for i in 1 2 3 4 5; do
		fresh "m$i.ko"
		as builder-1 sign "m$i.ko" && ok=$((ok + 1))
	done
	touch stop
	wait "$holder"
	echo "$ok of 5 signed"
	assert_equal "$ok" 5
	run "$C" --server "unix:$T/d.sock" verify "$T"/m*.ko
	assert_success
}

# unread_hello ORDER: with the daemon stopped (SIGSTOP), builder-1 connects
# and sends its ClientHello, and a silent socket from the same address
# connects after it (ORDER silent-after) or before it (silent-first); the
# daemon goes on (SIGCONT) and the builder finishes its handshake and asks
# for status.  Prints "ok", "refused MSG" or "failed: WHY".  The stop
# makes the daemon find the builder's ClientHello waiting unread when the
# silent socket pushes its source over its share, whatever the machine's
# speed: the race that made same-source-silent-sockets-do-not-lock-out
# fail on a loaded machine, made certain.
unread_hello() {
	PYTHONPATH="$REPO/tests" python3 - "$PORT" "$DAEMON_PID" "$1" <<'PY'
import os, signal, socket, sys
from tlspeer import Peer, STATUS, client_ctx
port, pid, order = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
p = Peer(client_ctx("farm-ca.crt", "builder-1"))
silent = []
os.kill(pid, signal.SIGSTOP)
try:
    if order == "silent-first":
        silent.append(socket.create_connection(("127.0.0.1", port)))
    p.raw = raw = socket.create_connection(("127.0.0.1", port))
    raw.sendall(p.hello())
    if order == "silent-after":
        silent.append(socket.create_connection(("127.0.0.1", port)))
finally:
    os.kill(pid, signal.SIGCONT)
raw.settimeout(10)
try:
    p.handshake()
    p.send(STATUS)
    r = p.recv_frame()
    print("ok" if r.get("ok") else "refused " + str(r.get("error")))
except Exception as e:
    print("failed: %s" % e)
PY
}

@test "same-source-unread-hello-not-taken-for-silent" {
	# A share of one handshake per source: the silent socket that comes
	# after the builder must go, not the builder whose hello is unread.
	tls_daemon d --max-handshakes-per-source 1
	for i in 1 2 3; do
		run unread_hello silent-after
		assert_output "ok"
	done
}

@test "same-source-twin-older-silent-socket-dropped" {
	tls_daemon d --max-handshakes-per-source 1
	run unread_hello silent-first
	assert_output "ok"
}

# late_hello N: builder-1 connects from 127.0.0.1 and stays silent while
# N more silent sockets from the same address connect, then sends its
# ClientHello and asks for status; prints what unread_hello prints.  A
# handshake from 127.0.0.2 made in between shows the daemon has accepted
# the N sockets (it accepts in order), so that what it did with them is
# done, however fast the machine: a builder that is slow to send its
# first flight after connecting (descheduled on a loaded machine) is the
# oldest silent socket of its address.
late_hello() {
	PYTHONPATH="$REPO/tests" python3 - "$PORT" "$1" <<'PY'
import json, socket, struct, sys
from tlspeer import STATUS, client_ctx
port, n = int(sys.argv[1]), int(sys.argv[2])
ctx = client_ctx("farm-ca.crt", "builder-1")
def status(raw):
    raw.settimeout(10)
    s = ctx.wrap_socket(raw, server_hostname="localhost")
    s.sendall(STATUS)
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
        b = s.recv(65536)
        if not b: raise EOFError("connection closed")
        buf += b
    r = json.loads(buf[4:])
    return "ok" if r.get("ok") else "refused " + str(r.get("error"))
builder = socket.create_connection(("127.0.0.1", port))
silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
other = socket.socket(); other.bind(("127.0.0.2", 0)); other.connect(("127.0.0.1", port))
status(other)
try:
    print(status(builder))
except Exception as e:
    print("failed: %s" % e)
PY
}

@test "same-source-builder-silent-after-connect-not-dropped" {
	# 40 silent sockets after it from its own address (over the share of
	# 32): the builder, silent for a moment after connecting, is the
	# oldest of them.
	tls_daemon d
	run late_hello 40
	assert_output "ok"
}

@test "same-source-twin-under-the-share-signs" {
	tls_daemon d
	run late_hello 20
	assert_output "ok"
}

# ---- the connection limit, refused over TLS; slots kept for UNIX ------------
# --max-connections 4: TLS peers may hold 3, the fourth slot is local's.
# holder PORT UNIX DIR opens 5 TLS connections as builder-1, one after
# another, and says for each in DIR/lines what came back: "ok" (a status
# reply), "tls-refused MSG" (an error frame inside TLS) or "plaintext"
# (bytes that are no TLS record); then DIR/ready.  On DIR/go it opens a
# UNIX connection too, then DIR/ready2; on DIR/stop it exits.
holder() {
	PYTHONPATH="$REPO/tests" exec python3 - "$@" <<'PY'
import os, socket, sys, time
from tlspeer import Peer, STATUS as req, client_ctx, frame_of
port, unix, d = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = client_ctx("farm-ca.crt", "builder-1")
held, out = [], open(d + "/lines", "w")
def tls_conn():
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    p = Peer(ctx, raw)
    try:
        p.handshake()
        p.send(req)
        r = p.recv_frame()
    except Exception as e:
        r = None
    if p.first and p.first[0] not in (20, 21, 22, 23):
        return "plaintext %r" % p.first[:40]
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
}

# held: a daemon "lim" with --max-connections 4 and a holder that has
# tried its 5 TLS connections; nth N: what the Nth got.
held() {
	tls_daemon lim --max-connections 4
	mkdir -p hold
	holder "$PORT" "$T/lim.sock" hold 2>hold/err 3>&- &
	BG_PIDS+=($!)
	run eventually 60 test -e hold/ready
	assert_success
}
nth() { sed -n "${1}p" hold/lines; }

@test "tls-limit-admits-three" {
	held
	assert_equal "$(sed -n 1,3p hold/lines | tr '\n' ' ')" "ok ok ok "
}

@test "tls-limit-refused-over-tls" {
	held
	assert_equal "$(nth 4)" "tls-refused too many connections, try again later"
}

@test "tls-limit-refused-never-plaintext" {
	held
	run cat hold/lines
	refute_output --partial plaintext
}

@test "tls-limit-unix-slot-kept" {
	held
	run "$C" --server "unix:$T/lim.sock" status
	assert_success
}

# Twin: the reserved slot is local's, but the limit still holds for local
# peers once every slot is taken.
@test "tls-limit-unix-takes-reserved-slot" {
	held
	touch hold/go
	run eventually 10 test -e hold/ready2
	assert_success
	run grep -qx "unix ok" hold/lines
	assert_success
	# tls-limit-unix-refused-when-all-taken
	run "$C" --server "unix:$T/lim.sock" status
	assert_failure
}

# ---- idle connections are closed; active ones are not ------------------------
# idler PORT UNIX DIR: silent and finished connections, UNIX and TLS,
# authenticated and not; DIR/NAME appears when the daemon closes NAME.  Two
# active clients send a status request every 0.2 s until DIR/stop and
# report into DIR/NAME.replies.
idler() {
	exec python3 - "$@" <<'PY'
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
}

IDLERS="unix-silent unix-after-request tls-handshake-silent tls-after-request"
all_closed() { for n in $IDLERS; do [ -e "idle/$n" ] || return 1; done; }

# idling: a daemon with 2 s timeouts and an idler that connected to it.
# A daemon without these options (the baseline) runs with its defaults, a
# 30 s handshake timeout and no idle timeout: the cases below, which give
# the daemon 20 s in all, fail on it.
idling() {
	local timeouts=(--idle-timeout 2 --handshake-timeout 2)
	"$MODSIGND" --help | grep -q -- --idle-timeout || timeouts=()
	tls_daemon idle "${timeouts[@]}"
	mkdir -p idle
	idler "$PORT" "$T/idle.sock" idle 2>idle/err 3>&- &
	IDLE_PID=$!
	BG_PIDS+=("$IDLE_PID")
	run eventually 20 test -e idle/started
	assert_success
}

@test "idle-connections-closed" {
	idling
	eventually 20 all_closed || true
	# idle-unix-silent-closed, idle-unix-after-request-closed,
	# idle-tls-handshake-silent-closed, idle-tls-after-request-closed
	local open=
	for n in $IDLERS; do [ -e "idle/$n" ] || open+=" idle-$n"; done
	[ -z "$open" ] || { echo "not closed after 20 s:$open"; false; }
}

# Twins: the active clients, connected as long as the idle ones, are not
# cut (the idle ones were closed after the timeout had passed).
@test "idle-active-clients-not-cut" {
	idling
	eventually 20 all_closed || true
	# idle-unix-active-not-cut, idle-tls-active-not-cut
	for n in unix-active tls-active; do
		[ ! -e "idle/$n" ] || { echo "idle-$n: $(cat "idle/$n")"; false; }
	done
	touch idle/stop
	wait "$IDLE_PID" || true
	# idle-active-clients-served
	[ -s idle/unix-active.replies ] && [ -s idle/tls-active.replies ] ||
		{ echo "replies: $(cat idle/*.replies 2>/dev/null | tr '\n' ' ')"; false; }
}

# ---- on SIGTERM, silent handshakes are not waited for ------------------------
# The daemon waits up to 10 s for requests in flight; a peer that never
# finishes its handshake has none, and must not hold the exit that long.

# silent PORT DIR N: N raw connections to PORT that send nothing; DIR/held
# once they are open, until DIR/stop.
silent() {
	exec python3 - "$@" <<'PY'
import os, socket, sys, time
s = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(int(sys.argv[3]))]
open(sys.argv[2] + "/held", "w").close()
while not os.path.exists(sys.argv[2] + "/stop"): time.sleep(0.05)
PY
}

@test "sigterm-does-not-wait-for-silent-handshakes" {
	tls_daemon term
	mkdir -p term
	silent "$PORT" term 4 3>&- &
	BG_PIDS+=($!)
	run eventually 10 test -e term/held
	assert_success
	# sigterm-with-silent-handshakes-still-signs
	fresh term.ko
	run "$C" --server "unix:$T/term.sock" sign term.ko
	assert_success
	kill "$DAEMON_PID"
	run eventually 5 gone
	assert_success
}

# ---- key exchange: cheap groups only (issue 28, point 1) --------------------
# hello GROUP: a handshake as builder-1 offering GROUP only, under run.
hello() {
	run timeout 20 openssl s_client -connect "127.0.0.1:$PORT" -groups "$1" \
		-cert builder-1.crt -key builder-1.key -CAfile farm-ca.crt </dev/null
}

@test "groups-ffdhe-hellos-refused" {
	# A recorded ClientHello asking for ffdhe8192 cost the daemon 134.6 ms
	# of CPU each: no finite-field group is taken at all.
	tls_daemon d
	for g in ffdhe8192 ffdhe2048 P-521; do
		hello "$g"
		assert_failure
		assert_output --partial "handshake failure"
	done
}

@test "groups-twin-x25519-p256-p384-taken" {
	tls_daemon d
	for g in X25519 P-256 P-384; do
		hello "$g"
		assert_success
		assert_output --regexp "Server Temp Key: (X25519|ECDH)"
	done
}

@test "groups-client-offers-no-ffdhe" {
	# A server that takes only ffdhe2048 finds no group in common with
	# the client: it never agrees to the costly exchange either.
	PORT=$(free_port)
	openssl s_server -accept "127.0.0.1:$PORT" -groups ffdhe2048 -cert signing-host.crt \
		-key signing-host.key -Verify 1 -CAfile farm-ca.crt -naccept 1 -brief \
		>s_server.log 2>&1 3>&- &
	BG_PIDS+=($!)
	run eventually 10 bash -c "ss -Hltn \"sport = :$PORT\" | grep -q ."
	assert_success
	run timeout 20 "$C" --server "tls:localhost:$PORT" --tls-ca farm-ca.crt \
		--tls-cert builder-1.crt --tls-key builder-1.key status
	assert_failure
	run cat s_server.log
	assert_output --partial "no suitable key share"
}

# ---- connections per identity and per source (issue 28, point 4) -----------
# hold_tls_from DIR SOURCE CERT:N...: from local address SOURCE, N TLS
# connections as CERT (then the next CERT:N), one after another, each asking
# for status and kept open; DIR/lines says for each "ok" or "tls-refused
# MSG" (an error frame inside TLS) or "failed"; then DIR/ready, and it
# holds them until DIR/stop.
hold_tls_from() {
	exec python3 - "$@" <<'PY'
import json, os, socket, ssl, struct, sys, time
d, src, port = sys.argv[1], sys.argv[2], int(os.environ["PORT"])
req = json.dumps({"v": 1, "id": 1, "op": "status"}).encode()
held, out = [], open(d + "/lines", "w")
def one(ctx):
    try:
        raw = socket.socket(); raw.bind((src, 0)); raw.connect(("127.0.0.1", port))
        raw.settimeout(10)
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        s.sendall(struct.pack(">I", len(req)) + req)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
            b = s.recv(65536)
            if not b: return "failed: closed"
            buf += b
        held.append(s)
        r = json.loads(buf[4:])
        return "ok" if r.get("ok") else "tls-refused " + str(r.get("error"))
    except Exception as e:
        return "failed: %s" % e
for spec in sys.argv[3:]:
    name, n = spec.split(":")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations("farm-ca.crt")
    ctx.load_cert_chain(name + ".crt", name + ".key")
    for _ in range(int(n)):
        out.write(one(ctx) + "\n"); out.flush()
open(d + "/ready", "w").close()
while not os.path.exists(d + "/stop"): time.sleep(0.05)
PY
}

# capped SOURCE CERT:N... [-- DAEMON-ARGS...]: a daemon "cap" with
# --max-connections 16 (12 TLS slots; by default 9 per identity and 9 per
# source), builder-1 and builder-2 allowed, and hold_tls_from SOURCE.
capped() {
	local src=$1 specs=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do specs+=("$1"); shift; done
	[ $# -eq 0 ] || shift
	issue builder-2 farm-ca
	export PORT
	tls_daemon cap --max-connections 16 --allow cn:builder-2 "$@"
	mkdir -p cap
	hold_tls_from cap "$src" "${specs[@]}" 2>cap/err 3>&- &
	BG_PIDS+=($!)
	run eventually 60 test -e cap/ready
	assert_success
}
count_lines() { grep -cx "$1" cap/lines || true; }

@test "per-identity-cap-refused-over-tls" {
	# One builder tries to hold all 12 TLS slots from 127.0.0.2.
	mkdir -m 0700 m
	capped 127.0.0.2 builder-1:12 -- --metrics-file "$T/m/d.prom"
	assert_equal "$(count_lines ok)" 9
	assert_equal "$(sed -n 10p cap/lines)" \
		"tls-refused too many connections for cn:builder-1 (9), try again later"
	# per-identity-cap-refusals-counted: the 10th to 12th
	run eventually 15 grep -qx "modsignd_tls_connections_capped_total 3" m/d.prom
	assert_success
	# per-identity-cap-other-builder-signs: another builder, elsewhere
	fresh b2.ko
	run "$C" --server "tls:localhost:$PORT" --tls-ca farm-ca.crt \
		--tls-cert builder-2.crt --tls-key builder-2.key sign b2.ko
	assert_success
}

@test "per-source-cap-refused-over-tls" {
	# Two builders from one address, 5 connections each: 9 for the address.
	capped 127.0.0.2 builder-1:5 builder-2:5
	assert_equal "$(count_lines ok)" 9
	assert_equal "$(sed -n 10p cap/lines)" \
		"tls-refused too many connections from this address (9), try again later"
}

# Twin: under both caps, the same builder from another address still signs.
@test "per-source-cap-twin-other-address-signs" {
	capped 127.0.0.2 builder-1:5 builder-2:4
	assert_equal "$(count_lines ok)" 9
	fresh b1.ko
	run as builder-1 sign b1.ko
	assert_success
}

# ---- the rate of new handshakes per source (issue 28, point 1) ---------------
# hellos N: N ClientHellos from 127.0.0.2, each on its own connection, sent
# at once; then a handshake as builder-1 from 127.0.0.1, which the daemon
# reads after them (it reads in order of arrival), so that it has by then
# answered or held back each of the N.  Prints "answered=K" (those whose
# ServerHello came), then waits up to 60 s for the rest and prints
# "in the end answered=K".
hellos() {
	PYTHONPATH="$REPO/tests" python3 - "$PORT" "$1" <<'PY'
import select, socket, sys, time
from tlspeer import Peer, STATUS, client_ctx
port, n = int(sys.argv[1]), int(sys.argv[2])
ctx = client_ctx("farm-ca.crt", "builder-1")
flood = []
for _ in range(n):
    hello = Peer(ctx).hello()
    s = socket.socket(); s.bind(("127.0.0.2", 0)); s.connect(("127.0.0.1", port))
    s.sendall(hello); flood.append(s)
b = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                    server_hostname="localhost")
b.sendall(STATUS); b.recv(65536)
def answered():
    r, _, _ = select.select(flood, [], [], 0)
    return len(r)
print("answered=%d" % answered(), flush=True)
end = time.time() + 60
while answered() < n and time.time() < end: time.sleep(0.1)
print("in the end answered=%d" % answered())
PY
}

@test "handshake-rate-replayed-hellos-wait" {
	# Two key exchanges a second from one address, five at once: 20
	# hellos at once are answered 5 at first, the rest as tokens come.
	mkdir -m 0700 m
	tls_daemon d --handshake-rate 2 --handshake-burst 5 --metrics-file "$T/m/d.prom"
	run hellos 20
	echo "$output"
	n=$(sed -n 's/^answered=//p' <<<"$output")
	[ "$n" -ge 5 ] && [ "$n" -lt 20 ]
	# handshake-rate-deferred-not-refused: each is answered in the end
	assert_line "in the end answered=20"
	# handshake-rate-deferred-counted (at least the 20 - n held back)
	run eventually 15 awk -v n=$((20 - n)) \
		'$1 == "modsignd_tls_handshakes_deferred_total" && $2 >= n { f = 1 } END { exit !f }' m/d.prom
	assert_success
}

# Twin: the rate is the address's; a builder elsewhere signs at once.
@test "handshake-rate-twin-other-address-signs" {
	tls_daemon d --handshake-rate 2 --handshake-burst 5
	run hellos 20
	fresh r.ko
	run as builder-1 sign r.ko
	assert_success
}

# ---- review of e7928b9 (h-adm) ------------------------------------------------
# empty_conns N: from 127.0.0.1 (builder-1's own address), N TCP
# connections that send nothing and hang up, half with a FIN, half with a
# reset, one after another, each given time to be seen by the daemon.
empty_conns() {
	python3 - "$PORT" "$1" <<'PY'
import socket, struct, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.connect(("127.0.0.1", port))
    if i % 2:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close(); time.sleep(0.05)
PY
}

@test "handshake-rate-empty-connections-take-no-token" {
	# A port scan or TCP health check from a builder's address: connect
	# and hang up, not a byte sent.  On e7928b9 each took a token (and the
	# ones past the burst were deferred), so the builder's own handshake
	# then waited for the rate.
	mkdir -m 0700 m
	tls_daemon d --handshake-rate 1 --handshake-burst 2 --metrics-file "$T/m/d.prom"
	run empty_conns 12
	assert_success
	fresh e.ko
	run as builder-1 sign e.ko
	assert_success
	run eventually 15 grep -q '^modsignd_signatures_issued_total{.*} 1$' m/d.prom
	assert_success
	run grep -x "modsignd_tls_handshakes_deferred_total 0" m/d.prom
	assert_success
}

# Deferred handshakes and one that sent a byte and stopped hold nothing for
# ever: each ends at --handshake-timeout, counted as timed out, and the
# address's token and share come back for a builder behind it.
@test "handshake-timeout-ends-deferred-and-one-byte-handshakes" {
	mkdir -m 0700 m
	tls_daemon d --handshake-timeout 2 --handshake-rate 1 --handshake-burst 1 \
		--max-handshakes-per-source 1 --metrics-file "$T/m/d.prom"
	run python3 - "$PORT" <<'PY'
import socket, ssl, sys, time
port = int(sys.argv[1])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.load_verify_locations("farm-ca.crt")
conns = []
s = socket.socket(); s.bind(("127.0.0.2", 0)); s.connect(("127.0.0.1", port))
s.sendall(b"\x16"); conns.append(s)      # one byte, then nothing: the share
time.sleep(0.3)
for _ in range(3):                       # whole hellos: deferred
    inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx.wrap_bio(inc, outg, server_hostname="localhost")
    try: o.do_handshake()
    except ssl.SSLWantReadError: pass
    s = socket.socket(); s.bind(("127.0.0.2", 0)); s.connect(("127.0.0.1", port))
    s.sendall(outg.read()); conns.append(s)
t0 = time.time(); ended = []
for s in conns:
    s.settimeout(10)
    try:
        while s.recv(65536): pass
    except OSError: pass
    ended.append(time.time() - t0)
print("ended after %.1f s at most" % max(ended))
print("all ended" if max(ended) < 8 else "held")
PY
	echo "$output"
	assert_line "all ended"
	run eventually 15 awk '$1 == "modsignd_tls_handshakes_timed_out_total" && $2 >= 1 { f = 1 } END { exit !f }' m/d.prom
	assert_success
	# the address's builder signs afterwards
	run python3 - "$PORT" <<'PY'
import json, socket, ssl, struct, sys
port = int(sys.argv[1])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.load_verify_locations("farm-ca.crt")
ctx.load_cert_chain("builder-1.crt", "builder-1.key")
raw = socket.socket(); raw.bind(("127.0.0.2", 0)); raw.connect(("127.0.0.1", port)); raw.settimeout(10)
s = ctx.wrap_socket(raw, server_hostname="localhost")
req = json.dumps({"v": 1, "id": 1, "op": "status"}).encode()
s.sendall(struct.pack(">I", len(req)) + req)
print("ok" if json.loads(s.recv(65536)[4:]).get("ok") else "refused")
PY
	assert_output ok
}

# The per-identity and per-source counts come back on every close: six
# rounds of three connections as builder-1 under a cap of two (two
# admitted, one refused over TLS), each round closed, a SIGHUP between
# them: each round the same, never locked out.
@test "per-identity-cap-counts-given-back-on-close" {
	issue builder-2 farm-ca
	tls_daemon cap --max-connections 16 --max-connections-per-identity 2
	run python3 - "$PORT" "$MODSIGND_PID" <<'PY'
import json, os, signal, socket, ssl, struct, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.load_verify_locations("farm-ca.crt")
ctx.load_cert_chain("builder-1.crt", "builder-1.key")
req = json.dumps({"v": 1, "id": 1, "op": "status"}).encode()
def one():
    raw = socket.socket(); raw.bind(("127.0.0.3", 0)); raw.connect(("127.0.0.1", port))
    raw.settimeout(10)
    s = ctx.wrap_socket(raw, server_hostname="localhost")
    s.sendall(struct.pack(">I", len(req)) + req)
    r = json.loads(s.recv(65536)[4:])
    return s, "ok" if r.get("ok") else "refused"
for rnd in range(6):
    held = [one() for _ in range(3)]
    print("round %d: %s" % (rnd, " ".join(r for _, r in held)), flush=True)
    for s, _ in held: s.close()
    if rnd == 2: os.kill(pid, signal.SIGHUP)
    time.sleep(0.5)
PY
	echo "$output"
	assert_equal "$(grep -c ': ok ok refused$' <<<"$output")" 6
}

# A ClientHello whose key share is for a group the daemon does not take
# (x448) but whose list has X25519 gets a HelloRetryRequest; the second
# ClientHello does the one key exchange of the handshake, which took one
# token: with a burst of 1 nothing waits (a HelloRetryRequest makes the
# daemon do no key exchange of its own: it is not charged twice, and
# needs not be).
@test "handshake-rate-hello-retry-one-token" {
	mkdir -m 0700 m
	tls_daemon d --handshake-rate 1 --handshake-burst 1 --metrics-file "$T/m/d.prom"
	run timeout 20 openssl s_client -connect "127.0.0.1:$PORT" -groups x448:X25519 \
		-CAfile farm-ca.crt -cert builder-1.crt -key builder-1.key -msg </dev/null
	# two ClientHellos: the first answered by a HelloRetryRequest
	assert_equal "$(grep -c 'Handshake .*, ClientHello$' <<<"$output")" 2
	assert_output --partial "New, TLSv1.3"
	assert_output --partial "Verify return code: 0 (ok)"
	sleep 6 # a metrics write (every 5 s) after the handshake
	run grep -qx "modsignd_tls_handshakes_deferred_total 0" m/d.prom
	assert_success
}

# The source table recycles entries that hold nothing: a flood from more
# addresses than it has entries (12 + 128 * 16 + 1024 here) must not
# recycle the entry of an address that holds connections, which would
# reset its count and let it past its cap (or make its closes count
# below zero).
@test "per-source-cap-survives-a-table-of-flooding-addresses" {
	issue builder-2 farm-ca
	tls_daemon cap --max-connections 16 --allow cn:builder-2
	run timeout 120 python3 - "$PORT" <<'PY'
import json, socket, ssl, struct, sys, time
port = int(sys.argv[1])
req = json.dumps({"v": 1, "id": 1, "op": "status"}).encode()
def ctx_of(name):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); c.load_verify_locations("farm-ca.crt")
    c.load_cert_chain(name + ".crt", name + ".key"); return c
ctx = {n: ctx_of(n) for n in ("builder-1", "builder-2")}
def one(name):
    raw = socket.socket(); raw.bind(("127.0.0.3", 0)); raw.connect(("127.0.0.1", port))
    raw.settimeout(10)
    s = ctx[name].wrap_socket(raw, server_hostname="localhost")
    s.sendall(struct.pack(">I", len(req)) + req)
    r = json.loads(s.recv(65536)[4:])
    return s, "ok" if r.get("ok") else "refused: " + r.get("error", "")
held = [one("builder-1") for _ in range(5)] + [one("builder-2") for _ in range(4)]
print("held:", " ".join(r for _, r in held))
# 4000 other addresses, one byte each then a hang-up: an entry each
for i in range(4000):
    f = socket.socket(); f.bind(("127.2.%d.%d" % (i // 250, 1 + i % 250), 0))
    f.connect(("127.0.0.1", port)); f.send(b"\x16"); f.close()
    if i % 100 == 99: time.sleep(0.02)
time.sleep(1)
s, r = one("builder-2")
print("tenth:", r)
for s2, _ in held: s2.close()
s.close(); time.sleep(0.5)
again = [one(n) for n in ["builder-1"] * 5 + ["builder-2"] * 5]
print("again:", " ".join(r.split(":")[0] for _, r in again))
PY
	echo "$output"
	assert_line "held: ok ok ok ok ok ok ok ok ok"
	assert_line "tenth: refused: too many connections from this address (9), try again later"
	assert_line "again: ok ok ok ok ok ok ok ok ok refused"
}
