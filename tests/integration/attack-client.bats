#!/usr/bin/env bats
# Attacks on the client by the users and servers around it: a FIFO at a
# module's name (review of the issue-13 fixes, 8d47504), a TLS key others
# can read, and issue 27's review (284953e): another user's configuration
# read by root, and a server's escape sequences printed.  Each has a twin
# that must still work.

load ../common

# ---- files the client reads: a module, its own TLS key ----------------------

@test "fifo-at-module-name-refused-at-once" {
	mkdir -m 0777 u
	runuser -u nobody -- mkfifo u/m.ko
	run timeout 20 "$C" --server unix:/nonexistent sign "$T/u/m.ko"
	assert_failure
	refute [ "$status" -eq 124 ]
	assert_output --partial "not a regular file"
	run timeout 20 "$C" --server unix:/nonexistent sign-file sha256 modsign:default \
		/dev/null "$T/u/m.ko" "$T/out.ko"
	refute [ "$status" -eq 124 ]
}

@test "fifo-twin-regular-module-signs" {
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256
	mkdir -m 0777 u
	fresh u/m.ko
	run timeout 20 "$C" --server "unix:$T/d.sock" sign "$T/u/m.ko"
	assert_success
}

@test "client-tls-key-readable-by-others-refused" {
	# The builder's own TLS key is as secret as the daemon's: refused by
	# the same check when group or others may read it.
	tls_pki
	tls_daemon d
	chmod 0644 builder-1.key
	run as builder-1 status
	assert_failure
	assert_output --partial "builder-1.key: mode 0644"
	# Twin: 0600, served.
	chmod 0600 builder-1.key
	run as builder-1 status
	assert_success
}

# ---- issue 27: a client among hostile users and servers -----------------

# fake_server SOCK MODE [TOUCH]: a modsignd look-alike on unix:SOCK that
# answers status, log and (refusing) every other op, per
# docs/PROTOCOL.md; MODE evil puts escape sequences (OSC, CSI, C1 in UTF-8
# and as raw bytes), DEL and a forged line in every string, honest gives
# UTF-8 in several scripts and a checkpoint note as the daemon writes it.
# TOUCH, if given, is created on each connection; with FAKE_CERT (a DER
# file) set, cert answers with it.
fake_server() {
	cat >fake.py <<'PY'
import base64, json, os, socket, struct, sys
path, mode = sys.argv[1], sys.argv[2]
touch = sys.argv[3] if len(sys.argv) > 3 else None
cert = os.environ.get("FAKE_CERT")
RAW = "@RAW9B@"  # a byte 0x9B outside UTF-8, put in after json.dumps
FORGED = "\nall modules verified OK"
if mode == "evil":
    status = {"version": "\x1b]0;owned\x07", "keys": [{
        "name": "k\x1b[2J\x1b[H", "algorithm": "\u009b2J", "backend": "file" + RAW,
        "subject": "CN=x" + FORGED, "key_id": "\x7f", "serial": "01", "default": True,
        "health": "unavailable", "health_error": "\x1b]0;t\x07" + FORGED}]}
    log = {"vkey": "\x1b]0;owned\x07k+00000000+AAAA" + FORGED,
           "checkpoint": "k\n1\n\x1b[2J\u009b2J" + RAW + FORGED + "\n"}
    error = "unknown key \u009b2J " + RAW + FORGED
else:
    status = {"version": "0.1", "keys": [{
        "name": "default", "algorithm": "ecdsa-p256", "backend": "ephemeral",
        "subject": "CN=J\u00fcrgen M\u00fcller, O=\u7f72\u540d \U0001f511",
        "key_id": "ab", "serial": "01", "default": True, "health": "ok"}]}
    log = {"vkey": "modsign.example/log+0badf00d+AAAA",
           "checkpoint": "modsign.example/log\n3\nq83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=\n"
                         "\n\u2014 modsign.example/log C6vwDQAA\n"}
    error = "unknown key \u00abother\u00bb"
def reply(req):
    out = {"v": 1, "id": req.get("id", 0)}
    if req.get("op") == "status":
        out.update(ok=True, **status)
    elif req.get("op") == "log":
        out.update(ok=True, **log)
    elif req.get("op") == "cert" and cert:
        out.update(ok=True, key="default",
                   cert=base64.b64encode(open(cert, "rb").read()).decode())
    else:
        out.update(ok=False, error=error)
    b = json.dumps(out, ensure_ascii=False).encode().replace(RAW.encode(), b"\x9b")
    return struct.pack(">I", len(b)) + b
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
while True:
    c, _ = s.accept()
    if touch:
        open(touch, "w").close()
    buf = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        buf += d
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
            n = struct.unpack(">I", buf[:4])[0]
            c.sendall(reply(json.loads(buf[4:4 + n])))
            buf = buf[4 + n:]
    c.close()
PY
	python3 fake.py "$@" 3>&- &
	DAEMON_PIDS+=($!)
	eventually 10 test -S "$1"
}

# ---- issue 27, point 4: whose configuration the client reads ----------------

# conf_in HOME OWNER MODE SERVER: HOME/.config/modsign/client.conf naming
# SERVER, the whole HOME owned by OWNER, the file mode MODE.
conf_in() {
	mkdir -p "$1/.config/modsign"
	printf 'server = %s\n' "$4" >"$1/.config/modsign/client.conf"
	chown -R "$2" "$1"
	chmod "$3" "$1/.config/modsign/client.conf"
}

# in_root_home DIR CMD...: CMD in a mount namespace of its own where
# root's home (the password database's, /root) is DIR: root's own config
# is planted there, never in the machine's /root.  need_mount_ns first.
in_root_home() {
	local dir=$1
	shift
	unshare -m sh -c 'mount --bind "$0" /root && exec "$@"' "$dir" "$@"
}

# client_as_nobody HOME CMD-ARGS...: the client run by nobody with HOME.
client_as_nobody() {
	local home=$1 c
	shift
	c=$(nobody_client)
	runuser -u nobody -- env -u MODSIGN_CONFIG -u MODSIGN_SERVER HOME="$home" "$c" "$@"
}

@test "client-config-as-root-home-of-another-user-not-read" {
	need_mount_ns
	# Root with another user's HOME (sudo -E, su without -) read her
	# client.conf: her server answered root's status, cert and sign.
	fake_server "$T/hers.sock" honest "$T/hers.used"
	conf_in "$T/alice" nobody 0644 "unix:$T/hers.sock"
	mkdir roothome
	run in_root_home "$T/roothome" env -u MODSIGN_CONFIG -u MODSIGN_SERVER \
		HOME="$T/alice" "$C" status
	refute_output --partial "hers.sock"
	[ ! -e hers.used ]
	# The same file named by $MODSIGN_CONFIG (kept by sudo -E): refused
	# as another user's.
	run env -u MODSIGN_SERVER MODSIGN_CONFIG="$T/alice/.config/modsign/client.conf" \
		"$C" status
	assert_failure
	assert_output --partial "client.conf: owner uid 65534: neither root nor uid 0"
	[ ! -e hers.used ]
}

@test "client-config-twin-root-reads-its-own-with-another-home" {
	need_mount_ns
	fake_server "$T/hers.sock" honest "$T/hers.used"
	fake_server "$T/roots.sock" honest
	conf_in "$T/alice" nobody 0644 "unix:$T/hers.sock"
	conf_in "$T/roothome" root 0600 "unix:$T/roots.sock"
	run in_root_home "$T/roothome" env -u MODSIGN_CONFIG -u MODSIGN_SERVER \
		HOME="$T/alice" "$C" status
	assert_success
	assert_output --partial "server: unix:$T/roots.sock"
	[ ! -e hers.used ]
}

@test "client-config-twin-user-own-0600-read" {
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256 --allow uid:65534 \
		--socket-mode 0666
	conf_in "$T/nb" nobody 0600 "unix:$T/d.sock"
	run client_as_nobody "$T/nb" status
	assert_success
	assert_output --partial "server: unix:$T/d.sock"
	# Readable by all is fine (ssh's rule is about writing), and so is a
	# file of root's in the user's home.
	chmod 0644 nb/.config/modsign/client.conf
	run client_as_nobody "$T/nb" status
	assert_success
	chown root nb/.config/modsign/client.conf
	run client_as_nobody "$T/nb" status
	assert_success
	assert_output --partial "server: unix:$T/d.sock"
}

@test "client-config-uid-0-that-is-no-root-reads-its-users-own" {
	# Review of issue 27's fix: a uid 0 that is no root (fakeroot, under
	# which package builds run kbuild's modules_install; unshare -r, a
	# rootless container) took root's home from the password database,
	# could not search it and stopped, exit 2, where 284953e read its
	# user's own ~/.config/modsign/client.conf.
	runuser -u nobody -- unshare -r true 2>/dev/null || skip "no user namespace for nobody"
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256 --allow uid:65534 \
		--socket-mode 0666
	conf_in "$T/nb" nobody 0600 "unix:$T/d.sock"
	run runuser -u nobody -- unshare -r env -u MODSIGN_CONFIG -u MODSIGN_SERVER \
		HOME="$T/nb" "$(nobody_client)" status
	assert_success
	assert_output --partial "server: unix:$T/d.sock"
	if command -v fakeroot >/dev/null; then
		run runuser -u nobody -- env -u MODSIGN_CONFIG -u MODSIGN_SERVER \
			HOME="$T/nb" fakeroot "$(nobody_client)" status
		assert_success
		assert_output --partial "server: unix:$T/d.sock"
	fi
	# Twin: the same uid 0 with another user's HOME still reads no file
	# of hers (in its namespace her uid is no one's: 65534).
	conf_in "$T/alice" daemon 0644 "unix:$T/d.sock"
	run runuser -u nobody -- unshare -r env -u MODSIGN_CONFIG -u MODSIGN_SERVER \
		HOME="$T/alice" "$(nobody_client)" status
	assert_failure
	assert_output --partial "client.conf: owner uid 65534: neither root nor uid 0"
}

@test "client-config-home-it-cannot-search-is-no-config" {
	# A user keeping a HOME it may not search (`sudo -u builder` without
	# -H, setpriv: HOME=/root) stopped with "Permission denied", exit 2,
	# after the fix of row 61; as ssh, such a home holds no file of its
	# own and the system's (or none) is read.  policy.bats's
	# supplementary-group-allows runs the client so.
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256 --allow uid:65534 \
		--socket-mode 0666
	[ "$(stat -c %a /root)" = 700 ] || skip "/root is searchable here"
	run runuser -u nobody -- env -u MODSIGN_CONFIG HOME=/root \
		MODSIGN_SERVER="unix:$T/d.sock" "$(nobody_client)" status
	assert_success
	assert_output --partial "server: unix:$T/d.sock"
	# Twin: a home it can search still has its file checked, not skipped.
	conf_in "$T/alice" daemon 0644 "unix:$T/d.sock"
	run client_as_nobody "$T/alice" status
	assert_failure
	assert_output --partial "client.conf: owner uid 1: neither root nor uid 65534"
}

@test "client-config-writable-by-group-or-others-refused" {
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256 --allow uid:65534 \
		--socket-mode 0666
	conf_in "$T/nb" nobody 0664 "unix:$T/d.sock"
	run client_as_nobody "$T/nb" status
	assert_failure
	assert_output --partial "client.conf: mode 0664: group or others may write it"
	refute_output --partial "server: unix:$T/d.sock"
	chmod 0646 nb/.config/modsign/client.conf
	run client_as_nobody "$T/nb" status
	assert_failure
	assert_output --partial "client.conf: mode 0646"
}

@test "client-config-of-another-user-refused" {
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256 --allow uid:65534 \
		--socket-mode 0666
	conf_in "$T/nb" nobody 0644 "unix:$T/d.sock"
	chown daemon nb/.config/modsign/client.conf
	run client_as_nobody "$T/nb" status
	assert_failure
	assert_output --partial "client.conf: owner uid $(id -u daemon): neither root nor uid 65534"
	refute_output --partial "server: unix:$T/d.sock"
}

@test "client-config-fifo-refused-at-once" {
	# A FIFO at ~/.config/modsign/client.conf held the client for ever.
	mkdir -p nb/.config/modsign
	mkfifo nb/.config/modsign/client.conf
	chown -R nobody nb
	run timeout 20 runuser -u nobody -- env -u MODSIGN_CONFIG HOME="$T/nb" \
		"$(nobody_client)" --server unix:/nonexistent status
	refute [ "$status" -eq 124 ]
	assert_failure
	assert_output --partial "client.conf: not a regular file"
	# Named by $MODSIGN_CONFIG, as root: the same.
	run timeout 20 env MODSIGN_CONFIG="$T/nb/.config/modsign/client.conf" "$C" status
	refute [ "$status" -eq 124 ]
	assert_output --partial "client.conf: not a regular file"
}

@test "client-config-symlink-not-followed" {
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256
	printf 'server = unix:%s\n' "$T/d.sock" >real.conf
	ln -s real.conf link.conf
	run env MODSIGN_CONFIG="$T/link.conf" "$C" status
	assert_failure
	assert_output --partial "link.conf: a symbolic link"
	# Twin: the file itself.
	run env MODSIGN_CONFIG="$T/real.conf" "$C" status
	assert_success
}

@test "client-config-fifo-or-device-never-opened" {
	# Review of issue 27's fix: a FIFO (or device) named as the config
	# was refused, but only after open(2), which has effects of its own:
	# a FIFO's writer blocked in open is let go, a watchdog device armed
	# (reboot), a serial line's DTR raised.  $MODSIGN_CONFIG (which
	# sudo -E keeps) names any path.  Nothing but a regular file is opened.
	mkfifo trap.conf
	(exec 3>trap.conf && touch "$T/writer-released") 3>&- &
	local writer=$!
	sleep 0.5 # the writer is in open(2), waiting for a reader
	run env MODSIGN_CONFIG="$T/trap.conf" "$C" status
	assert_failure
	assert_output --partial "trap.conf: not a regular file"
	sleep 0.5
	kill "$writer" 2>/dev/null || true
	wait "$writer" 2>/dev/null || true
	[ ! -e writer-released ]
	# Twin: the regular file beside it is read.
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256
	printf 'server = unix:%s\n' "$T/d.sock" >real.conf
	run env MODSIGN_CONFIG="$T/real.conf" "$C" status
	assert_success
	assert_output --partial "server: unix:$T/d.sock"
}

# ---- issue 27, point 7: what a server says reaches no terminal raw ----------

# no_raw_controls FILE [note]: FILE holds no control a terminal acts on
# (C0 but newline, DEL, C1 in UTF-8 or as a byte outside it) and, unless
# it is a note (several lines of the server's by nature), no line that
# starts as the forged one.
no_raw_controls() {
	python3 - "$@" <<'PY'
import sys
t = open(sys.argv[1], "rb").read().decode("utf-8", "surrogateescape")
bad = sorted({hex(ord(c)) for c in t if (ord(c) < 0x20 and c != "\n")
              or 0x7f <= ord(c) <= 0x9f or 0xdc80 <= ord(c) <= 0xdc9f})
forged = [l for l in t.split("\n") if l.startswith("all modules verified OK")
          and sys.argv[2:] != ["note"]]
if bad or forged:
    print("raw controls:", bad, "forged lines:", forged)
    sys.exit(1)
PY
}

@test "server-escapes-in-status-not-printed-raw" {
	fake_server "$T/evil.sock" evil
	"$C" --server "unix:$T/evil.sock" status >out 2>&1 || true
	cat -v out
	no_raw_controls out
	grep -q 'subject: CN=x\\x0aall modules verified OK' out
	"$C" --server "unix:$T/evil.sock" status --json >json 2>&1 || true
	cat -v json
	no_raw_controls json
	# Still JSON, with the server's controls as escapes of the same
	# characters (and U+FFFD for the byte that is not UTF-8).
	python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["servers"][0]["keys"][0]
assert k["algorithm"] == "\u009b2J" and k["backend"] == "file\ufffd", k' json
}

@test "server-escapes-in-log-vkey-checkpoint-not-printed-raw" {
	fake_server "$T/evil.sock" evil
	"$C" --server "unix:$T/evil.sock" log vkey >out 2>&1 || true
	cat -v out
	no_raw_controls out
	grep -qF 'AAAA\x0aall modules verified OK' out
	# A checkpoint is a note of several lines: the server's lines are
	# shown as lines, their controls escaped.
	"$C" --server "unix:$T/evil.sock" log checkpoint >cp 2>&1 || true
	cat -v cp
	no_raw_controls cp note
	grep -qxF '\x1b[2J\xc2\x9b2J\x9b' cp
}

@test "server-c1-in-error-message-not-printed-raw" {
	# The one escaping of messages (row 43) showed C0 and DEL only: a
	# server's refusal passed C1 CSI (U+009B, or 0x9B) to the terminal.
	fake_server "$T/evil.sock" evil
	run "$C" --server "unix:$T/evil.sock" cert --key other
	assert_failure
	echo "$output" >out
	cat -v out
	no_raw_controls out
	assert_output --partial 'unknown key \xc2\x9b2J \x9b\x0aall modules verified OK'
}

@test "server-twin-honest-utf8-printed-intact" {
	fake_server "$T/honest.sock" honest
	run "$C" --server "unix:$T/honest.sock" status
	assert_success
	assert_output --partial $'subject: CN=J\u00fcrgen M\u00fcller, O=\u7f72\u540d \U0001f511'
	"$C" --server "unix:$T/honest.sock" status --json >json
	python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["servers"][0]["keys"][0]
assert k["subject"] == "CN=J\u00fcrgen M\u00fcller, O=\u7f72\u540d \U0001f511", k' json
	# The checkpoint byte for byte, newlines and the note's em dash kept.
	"$C" --server "unix:$T/honest.sock" log checkpoint >cp
	printf 'modsign.example/log\n3\nq83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=\n\n\xe2\x80\x94 modsign.example/log C6vwDQAA\n' >want
	cmp cp want
	run "$C" --server "unix:$T/honest.sock" cert --key other
	assert_output --partial $'unknown key \u00abother\u00bb'
}

@test "server-der-certificate-not-written-to-a-terminal" {
	# cert --der is the server's bytes as they are: a subject with an
	# OSC sequence went to the terminal raw.  On a terminal (script gives
	# one) it is refused before anything is asked.
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -utf8 \
		-subj "/CN=a"$'\e'"]0;owned"$'\a' -keyout k.pem -outform DER -out c.der 2>/dev/null
	FAKE_CERT=$T/c.der fake_server "$T/evil.sock" evil "$T/evil.used"
	# (the terminal ends its lines with CR LF: the CR is its own)
	script -qec "$C --server unix:$T/evil.sock cert --der" /dev/null 2>&1 |
		sed 's/\r$//' >out || true
	cat -v out
	no_raw_controls out
	grep -q "cert --der: binary not written to a terminal" out
	[ ! -e evil.used ]
}

@test "server-twin-der-certificate-written-to-a-file" {
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256
	"$C" --server "unix:$T/d.sock" cert --der >c.der
	"$C" --server "unix:$T/d.sock" cert >c.pem
	openssl x509 -inform DER -in c.der -outform PEM | cmp - c.pem
}
