#!/usr/bin/env bats
# Attacks on the audit log: a loop of refused unauthenticated peers (UNIX
# peers outside the allow-list, TLS peers without a good certificate) must
# not fill it, yet every refusal is counted; a full disk must not leave a
# torn record that glues to the next one, nor a journal entry saying "ok"
# for a signature withheld; a module name that is not UTF-8 must still give
# a line that is UTF-8 JSON.  Each has a twin.

load ../common

N=300

# The three refusal floods (N refused UNIX peers, 300 from 100 uids, N
# refused TLS handshakes) run once, in setup_file, each against a daemon
# of its own that the cases below share: each flood is read by four to
# seven cases (the log while flooded, the summary SIGHUP writes, the
# daemon's own log, the twins), and running it per case would repeat its
# 300 refused connections or handshakes as many times.  What a case reads
# while the flood is fresh is a copy (*.flood*) taken before the SIGHUP;
# the twins sign on the shared daemon with modules in their own $T.
setup_file() {
	F=$(mktemp -d /tmp/modsign-audit-floods.XXXXXX)
	chmod 755 "$F" # nobody and the uids below connect to sockets in it
	export F
	cd "$F" || return 1

	modsignd_start "$F/unix.log" --listen "unix:$F/unix.sock" --key default=ephemeral:ecdsa-p256 \
		--allow uid:0 --socket-mode 0666 --audit-log "$F/unix.jsonl" || return 1
	export UNIX_PID=$MODSIGND_PID
	# One process as nobody connects N times and reads each refusal: once
	# it has read the last, the daemon has counted them all (it audits
	# first).
	runuser -u nobody -- python3 - "$F/unix.sock" "$N" <<'PY' || return 1
import socket, sys
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.recv(4096)
    s.close()
PY
	cp "$F/unix.jsonl" "$F/unix.flood.jsonl"
	cp "$F/unix.log" "$F/unix.flood.log"
	# The summary is written when the interval ends, on SIGHUP and at exit.
	kill -HUP "$UNIX_PID"

	modsignd_start "$F/many.log" --listen "unix:$F/many.sock" --key default=ephemeral:ecdsa-p256 \
		--allow uid:0 --socket-mode 0666 --audit-log "$F/many.jsonl" || return 1
	export MANY_PID=$MODSIGND_PID
	# 100 uids no rule names, 3 connections each, interleaved; root forks
	# a child per connection that drops to its uid.
	python3 - "$F/many.sock" <<'PY' || return 1
import os, socket, sys
for rnd in range(3):
    for uid in range(61000, 61100):
        pid = os.fork()
        if pid == 0:
            os.setgroups([]); os.setgid(65534); os.setuid(uid)
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1]); s.recv(4096); os._exit(0)
        os.waitpid(pid, 0)
PY
	kill -HUP "$MANY_PID"

	(mkdir "$F/pki" && cd "$F/pki" && pki ca && pki rogue-ca &&
		issue_server host ca IP:127.0.0.1 && issue builder ca && issue rogue rogue-ca) || return 1
	PORT=$(free_port) || return 1
	export PORT
	modsignd_start "$F/tls.log" --listen "unix:$F/tls.sock" --key default=ephemeral:ecdsa-p256 \
		--listen "tls:127.0.0.1:$PORT" --tls-cert "$F/pki/host.crt" --tls-key "$F/pki/host.key" \
		--tls-client-ca "$F/pki/ca.crt" --allow uid:0 --allow cn:builder --audit-log "$F/tls.jsonl" || return 1
	export TLS_PID=$MODSIGND_PID
	DAEMON_PID=$TLS_PID wait_port "$PORT" || return 1
	# The records of the flood are those after wait_port's probe.
	export TLS_BASE
	TLS_BASE=$(wc -l <"$F/tls.jsonl")
	# Half with no certificate, half with one from another CA; each waits
	# for the daemon's verdict (its alert) before the next.
	python3 - "$PORT" "$N" "$F/pki" <<'PY' || return 1
import socket, ssl, sys
port, n, pki = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for i in range(n):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(pki + "/ca.crt")
    ctx.check_hostname = False
    if i % 2:
        ctx.load_cert_chain(pki + "/rogue.crt", pki + "/rogue.key")
    with socket.create_connection(("127.0.0.1", port)) as raw:
        try:
            with ctx.wrap_socket(raw) as s:
                s.recv(1)
        except (ssl.SSLError, OSError):
            pass
PY
	cp "$F/tls.jsonl" "$F/tls.flood.jsonl"
	kill -HUP "$TLS_PID"
}

teardown_file() {
	local p

	for p in "${UNIX_PID:-}" "${MANY_PID:-}" "${TLS_PID:-}"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	for p in "${UNIX_PID:-}" "${MANY_PID:-}" "${TLS_PID:-}"; do
		[ -n "$p" ] && { wait "$p" 2>/dev/null || eventually 15 gone "$p" || true; }
	done
	cd /
	if [ -n "${KEEP_T:-}" ]; then echo "kept $F" >&3; else rm -rf "${F:?}"; fi
}

teardown() {
	# A disk-full case's tmpfs: its daemon must be gone before it unmounts.
	if mountpoint -q "$T/full" 2>/dev/null; then
		for p in "${DAEMON_PIDS[@]}"; do stop_daemon "$p"; done
		umount "$T/full"
	fi
	case_teardown
}

# lines_json FILE: every line decodes as strict UTF-8 and parses as JSON.
lines_json() {
	python3 - "$1" <<'PY'
import json, sys
for i, raw in enumerate(open(sys.argv[1], 'rb'), 1):
    try:
        json.loads(raw.decode('utf-8'))
    except Exception as e:
        sys.exit("line %d: %s: %r" % (i, e, raw[:120]))
PY
}

# refusals FILE PATTERN: "RECORDS TOTAL": the records whose result (or, in
# a summary, one of whose "reasons") matches PATTERN, and the refusals
# they stand for (a summary counts "count", or its matching reasons').
refusals() {
	python3 - "$1" "$2" <<'PY'
import json, re, sys
recs = tot = 0
for line in open(sys.argv[1], 'rb'):
    r = json.loads(line.decode('utf-8', 'replace'))
    if re.search(sys.argv[2], r.get('result') or ''):
        recs += 1
        tot += r['count'] if r.get('summary') else 1
        continue
    n = sum(c for k, c in (r.get('reasons') or {}).items() if re.search(sys.argv[2], k))
    if n:
        recs += 1
        tot += n
print(recs, tot)
PY
}

# total_is WANT FILE PATTERN: the refusals FILE's records stand for are WANT.
total_is() {
	local recs tot
	read -r recs tot < <(refusals "$2" "$3")
	[ "$tot" -eq "$1" ]
}

# The TLS flood's records (after wait_port's probe) in FILE: tls_new FILE.
tls_new() { tail -n +$((TLS_BASE + 1)) "$1" >"$T/tls.new"; echo "$T/tls.new"; }
TLS_REFUSED="certificate|TLS handshake failed|issuer|unknown ca"
tls_total_at_least() {
	local recs tot
	read -r recs tot < <(refusals "$(tls_new "$F/tls.jsonl")" "$TLS_REFUSED")
	[ "$tot" -ge "$1" ]
}

# ---- a loop of refused UNIX peers (setup_file) -----------------------------------

@test "audit-unix-refusal-flood-bounded" {
	local size recs tot
	size=$(stat -c %s "$F/unix.flood.jsonl")
	read -r recs tot < <(refusals "$F/unix.flood.jsonl" "not allowed by policy")
	[ "$recs" -le 2 ] && [ "$size" -lt 4096 ] ||
		{ echo "$N refusals gave $recs records, $size bytes"; false; }
}

@test "audit-unix-refusal-flood-log-bounded" {
	# The daemon's own log (stderr, the journal) is bounded the same way:
	# the refused uid appears in the first record and its log line, not N
	# times.
	local lines
	lines=$(grep -c 'uid:65534\|uid=65534' "$F/unix.flood.log")
	[ "$lines" -le 4 ] || { echo "$N refusals gave $lines log lines naming uid 65534"; false; }
}

@test "audit-unix-refusal-summary-counts-all" {
	run eventually 10 total_is "$N" "$F/unix.jsonl" "not allowed by policy"
	assert_success
}

@test "audit-unix-summary-names-source-and-interval" {
	eventually 10 grep -q '"summary":true' "$F/unix.jsonl" || true
	run python3 - "$F/unix.jsonl" "$N" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary":true' in l]
assert s and s[0]['identity'] == 'uid:65534' and s[0]['count'] == int(sys.argv[2]) - 1, s
assert s[0]['first'] <= s[0]['last'] and s[0]['interval_s'] > 0, s
PY
	assert_success
}

# Twins: an allowed client's signatures, and its refused requests, are
# recorded one by one, on the daemon that was flooded.
@test "audit-allowed-signatures-each-recorded" {
	mkdir ok
	for i in 1 2 3 4 5; do fresh "ok/ok$i.ko"; done
	run "$C" --server "unix:$F/unix.sock" sign "$T"/ok/*.ko
	assert_success
	assert_equal "$(grep -c '"module":"[^"]*/ok[1-5].ko","result":"ok"' "$F/unix.jsonl")" 5
}

@test "audit-authenticated-refusals-each-recorded" {
	local before
	fresh nk.ko
	"$C" --server "unix:$F/unix.sock" cert >cert.pem
	before=$(grep -c '"result":"unknown key"' "$F/unix.jsonl" || true)
	# kbuild's per-module sign-file sends the request (sign and --batch
	# ask each server for the key's certificate first, and send none).
	for i in 1 2 3 4 5; do
		run "$C" --server "unix:$F/unix.sock" sign-file sha256 modsign:nokey cert.pem nk.ko
		assert_failure
	done
	assert_equal "$(grep -c '"result":"unknown key"' "$F/unix.jsonl")" $((before + 5))
}

@test "audit-unix-log-is-json" {
	run lines_json "$F/unix.jsonl"
	assert_success
}

# ---- many sources: the table of sources is bounded, the rest share one entry --

@test "audit-many-sources-all-counted" {
	run eventually 10 total_is 300 "$F/many.jsonl" "not allowed by policy|local users past the table"
	assert_success
}

@test "audit-many-sources-records-bounded" {
	local recs tot
	eventually 10 total_is 300 "$F/many.jsonl" "not allowed by policy|local users past the table" || true
	read -r recs tot < <(refusals "$F/many.jsonl" "not allowed by policy|local users past the table")
	[ "$recs" -le 130 ] || { echo "300 refusals from 100 uids gave $recs records (total $tot)"; false; }
}

@test "audit-many-sources-share-one-entry" {
	# Local users have a table of their own: the slot past it is "uid:*".
	run eventually 10 grep -q '"identity":"uid:\*".*"summary":true' "$F/many.jsonl"
	assert_success
}

@test "audit-many-sources-log-is-json" {
	run lines_json "$F/many.jsonl"
	assert_success
}

# ---- a loop of TLS peers without a good certificate (setup_file) ---------------

@test "audit-tls-refusal-flood-bounded" {
	local recs tot
	read -r recs tot < <(refusals "$(tls_new "$F/tls.flood.jsonl")" "$TLS_REFUSED")
	[ "$recs" -le 6 ] || { echo "$N refused handshakes gave $recs records"; false; }
}

@test "audit-tls-refusal-summary-counts-all" {
	run eventually 10 tls_total_at_least "$N"
	assert_success
}

@test "audit-tls-summary-source-is-address" {
	run eventually 10 grep -q '"identity":"tls:127.0.0.1".*"summary":true,"count":' "$F/tls.jsonl"
	assert_success
}

# Twin: a builder with a good certificate is served and recorded.
@test "audit-tls-builder-signs" {
	fresh tb.ko
	run "$C" --server "tls:127.0.0.1:$PORT" --tls-ca "$F/pki/ca.crt" \
		--tls-cert "$F/pki/builder.crt" --tls-key "$F/pki/builder.key" sign "$T/tb.ko"
	assert_success
	# audit-tls-builder-recorded
	run grep -q '"identity":"cn:builder".*"module":"[^"]*/tb.ko","result":"ok"' "$F/tls.jsonl"
	assert_success
}

@test "audit-tls-log-is-json" {
	run lines_json "$F/tls.jsonl"
	assert_success
}

# ---- many reasons from two addresses, then a name the policy refuses -------------

# reasons_daemon [OPTION...]: a TLS daemon ($PORT) whose CA issued builder
# (allowed) and revoked (verified, named by no rule: a revoked builder's),
# its audit log audit.jsonl.
reasons_daemon() {
	pki ca
	issue_server host ca IP:127.0.0.1
	issue builder ca
	issue revoked ca
	PORT=$(free_port)
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256 \
		--listen "tls:127.0.0.1:$PORT" --tls-cert host.crt --tls-key host.key \
		--tls-client-ca ca.crt --allow uid:0 --allow cn:builder --audit-log "$T/audit.jsonl" "$@"
	wait_port "$PORT"
}

# many_reasons ADDR...: from each loopback ADDR, 34 handshakes that fail
# each for a reason of its own (a ClientHello, then a fatal alert of
# every kind TLS has).
many_reasons() {
	python3 - "$PORT" "$@" <<'PY'
import socket, ssl, sys
port = int(sys.argv[1])
def hello():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    try: ctx.wrap_bio(i, o).do_handshake()
    except ssl.SSLWantReadError: pass
    return o.read()
for addr in sys.argv[2:]:
    for d in [10, 20, 21, 22, 30, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 60,
              70, 71, 80, 86, 90, 100, 109, 110, 111, 112, 113, 114, 115, 116, 120, 200]:
        s = socket.socket(); s.bind((addr, 0)); s.connect(("127.0.0.1", port))
        try:
            s.sendall(hello() + bytes([0x15, 3, 3, 0, 2, 2, d])); s.settimeout(5)
            while s.recv(4096): pass
        except OSError: pass
        s.close()
PY
}

# hammer NAME N: N handshakes with NAME's certificate, each read to the end
# (the daemon's refusal, then its close).
hammer() {
	PYTHONPATH="$REPO/tests" python3 - "$PORT" "$1" "$2" <<'PY'
import socket, ssl, sys
from tlspeer import client_ctx
port, who, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ctx = client_ctx("ca.crt", who)
for _ in range(n):
    with socket.create_connection(("127.0.0.1", port)) as raw:
        try:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                while s.recv(4096): pass
        except (ssl.SSLError, OSError):
            pass
PY
}

# records FILE JQ-LIKE-PYTHON-EXPR: how many records of FILE satisfy EXPR (r).
records() {
	python3 -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) if eval(sys.argv[2], {}, {"r": json.loads(l)})))' "$1" "$2"
}

@test "audit-reasons-flood-then-refused-name-bounded" {
	# Issue 28, 2: 34 reasons from each of two addresses filled the 64
	# (source, reason) slots, and then every refusal of a verified name
	# was recorded in full: one record per handshake, for ever.
	reasons_daemon
	many_reasons 127.0.0.2 127.0.0.3
	hammer revoked 100
	# The refusals are counted before the daemon closes: all are in.
	local all name
	all=$(wc -l <audit.jsonl)
	name=$(records audit.jsonl 'r["identity"] == "cn:revoked"')
	echo "records: $all in all, $name of cn:revoked"
	# The probe of wait_port, the first of 4 reasons per address, one of
	# the name.
	[ "$name" -eq 1 ]
	[ "$all" -le 10 ]
	# The summaries (SIGHUP ends the interval) count every refusal.
	kill -HUP "$DAEMON_PID"
	run eventually 10 grep -q '"identity":"cn:revoked".*"summary":true,"count":99,' audit.jsonl
	assert_success
	run python3 - audit.jsonl <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary":true' in l]
a = [r for r in s if r['identity'] == 'tls:127.0.0.2']
assert len(a) == 1 and a[0]['count'] == 30, a
assert a[0]['result'] == 'several reasons (see "reasons")', a
assert a[0]['reasons'] == {'other': 30}, a
PY
	assert_success
	[ "$(wc -l <audit.jsonl)" -le 14 ]
}

# Twin: the first refusal of each source and of the name is recorded in
# full, and a refused name in a fresh interval is recorded again.
@test "audit-twin-refused-name-recorded-each-interval" {
	reasons_daemon
	many_reasons 127.0.0.2
	hammer revoked 2
	run records audit.jsonl 'r["identity"] == "tls:127.0.0.2" and not r.get("summary") and r["peer"].startswith("127.0.0.2:") and r["result"] == "TLS handshake failed: sslv3 alert unexpected message"'
	assert_output 1
	run records audit.jsonl 'r["identity"] == "cn:revoked" and r["result"] == "permission denied: cn:revoked is not named by the policy" and r["peer"].startswith("cn=revoked addr=127.0.0.1:")'
	assert_output 1
	kill -HUP "$DAEMON_PID"
	eventually 10 grep -q '"identity":"cn:revoked".*"summary":true,"count":1,' audit.jsonl
	hammer revoked 1
	run records audit.jsonl 'r["identity"] == "cn:revoked" and not r.get("summary")'
	assert_output 2
	# The builder the policy names signs, recorded as ever.
	fresh b.ko
	run "$C" --server "tls:127.0.0.1:$PORT" --tls-ca ca.crt --tls-cert builder.crt \
		--tls-key builder.key sign "$T/b.ko"
	assert_success
	run records audit.jsonl 'r["identity"] == "cn:builder" and r["result"] == "ok"'
	assert_output 1
}

# hammer_with_data NAME N: N handshakes with NAME's certificate, each
# sending, with its Finished, a byte of a request and close_notify in one
# write, then reading to the end.
hammer_with_data() {
	PYTHONPATH="$REPO/tests" python3 - "$PORT" "$1" "$2" <<'PY'
import socket, ssl, sys
from tlspeer import Peer, client_ctx
port, who, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ctx = client_ctx("ca.crt", who)
for _ in range(n):
    p = Peer(ctx, server_hostname="127.0.0.1")
    with socket.create_connection(("127.0.0.1", port)) as s:
        p.raw = s
        s.settimeout(10)
        try:
            p.handshake()
            p.obj.write(b"\0")
            try:
                p.obj.unwrap()
            except ssl.SSLWantReadError:
                pass
            s.sendall(p.outg.read())
            while s.recv(4096): pass
        except (ssl.SSLError, OSError):
            pass
PY
}

@test "audit-refused-name-with-data-log-bounded" {
	# A refused name's connection that sends a byte of a request and
	# close_notify with its Finished: the daemon logged "disconnected
	# mid-request" for each, while its audit records were bounded.
	reasons_daemon
	hammer_with_data revoked 40
	kill -HUP "$DAEMON_PID"
	run eventually 10 grep -q '"identity":"cn:revoked".*"summary":true,"count":39,' audit.jsonl
	assert_success
	run grep -c 'cn=revoked' "$T/modsignd.log"
	echo "log lines naming cn=revoked: $output"
	[ "$output" -le 3 ]
}

# Twin: a builder the policy names that hangs up mid-request is still
# logged, each time.
@test "audit-twin-admitted-disconnect-mid-request-logged" {
	reasons_daemon
	hammer_with_data builder 3
	run eventually 10 test "$(grep -c 'cn=builder addr=127.0.0.1:[0-9]*: disconnected mid-request' "$T/modsignd.log")" -eq 3
	assert_success
}

# junk ADDR...: from each loopback ADDR, one handshake that fails (a
# ClientHello, then a fatal alert).
junk() {
	python3 - "$PORT" "$@" <<'PY'
import socket, ssl, sys
port = int(sys.argv[1])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
for addr in sys.argv[2:]:
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    try: ctx.wrap_bio(i, o).do_handshake()
    except ssl.SSLWantReadError: pass
    s = socket.socket(); s.bind((addr, 0)); s.connect(("127.0.0.1", port))
    try:
        s.sendall(o.read() + bytes([0x15, 3, 3, 0, 2, 2, 10])); s.settimeout(5)
        while s.recv(4096): pass
    except OSError: pass
    s.close()
PY
}

@test "audit-local-user-refusal-not-hidden-by-addresses" {
	# 64 addresses took the refusal table's slots and a 65th the 4
	# reasons of the slot past it; a local user the policy refuses was
	# then only counted there, as "other" under "*": who it was, lost.
	reasons_daemon --socket-mode 0666
	local a=()
	for i in $(seq 1 64); do a+=("127.0.1.$i"); done
	junk "${a[@]}"
	many_reasons 127.0.2.1
	nobody_client >/dev/null
	for _ in 1 2 3; do
		run runuser -u nobody -- "$T/bin/modsign-client" --server "unix:$T/d.sock" status
		assert_failure
	done
	run records audit.jsonl 'r["identity"] == "uid:65534" and not r.get("summary") and r["result"] == "permission denied: not allowed by policy"'
	assert_output 1
	run grep -c 'uid=65534 pid=[0-9]*: refused: not allowed by policy' "$T/modsignd.log"
	assert_output 1
	kill -HUP "$DAEMON_PID"
	run eventually 10 grep -q '"identity":"uid:65534".*"summary":true,"count":2,' audit.jsonl
	assert_success
}

@test "verified-name-refusal-recorded-past-the-table" {
	tls_pki
	tls_daemon d --audit-log "$T/audit.jsonl"
	# Junk handshakes from 70 addresses fill the table of unauthenticated
	# sources (64) and its shared entry.
	python3 - "$PORT" <<'PY'
import socket, sys
for i in range(1, 71):
    s = socket.socket(); s.bind(("127.0.5.%d" % i, 0))
    s.connect(("127.0.0.1", int(sys.argv[1])))
    try:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        while s.recv(4096): pass
    except ConnectionResetError:
        pass
    s.close()
PY
	fresh s.ko
	for i in 1 2 3; do
		run as stranger sign s.ko
		assert_failure
		assert_output --partial "not named by the policy"
	done
	# Its first refusal is recorded in full, in the names' own table (issue
	# 28, 2: not one record per attempt); the others are counted.
	n=$(grep -c '"identity":"cn:stranger","peer":"cn=stranger addr=127.0.0.1:[0-9]*",.*"result":"permission denied' audit.jsonl || true)
	echo "cn:stranger in $n full records"
	assert_equal "$n" 1
	kill -HUP "$DAEMON_PID"
	run eventually 10 grep -q '"identity":"cn:stranger".*"summary":true,"count":2,' audit.jsonl
	assert_success
}

# ---- a full disk ---------------------------------------------------------------

# audit_log_on_full_disk: a daemon whose audit log is on a 1 MiB tmpfs
# ($T/full) that is then filled; signs modules until one is refused, which
# is $withheld, with the client's output in full.out.  Skips the case where no tmpfs
# can be mounted.
audit_log_on_full_disk() {
	local f first
	mkdir full
	mount -t tmpfs -o size=1m,mode=0755 tmpfs full 2>/dev/null || skip "cannot mount tmpfs here"
	start_daemon "$T/fsock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/full/audit.jsonl"
	mkdir fm
	fresh m.ko
	for i in $(seq -w 1 40); do cp m.ko "fm/m$i-$(printf 'x%.0s' $(seq 1 150)).ko"; done
	first=$(ls "$T"/fm/*.ko | head -n1)
	# disk-full-audit-first-signs
	run "$C" --server "unix:$T/fsock" sign "$first"
	assert_success
	dd if=/dev/zero of=full/filler bs=4k 2>/dev/null || true
	# The last page of the log has room for a few records; the one that
	# crosses into the next page is written in part, then fails.
	withheld=
	for f in $(ls "$T"/fm/*.ko | tail -n +2); do
		if ! "$C" --server "unix:$T/fsock" sign "$f" >full.out 2>&1; then withheld=$f; break; fi
	done
	# disk-full-audit-withholds
	[ -n "$withheld" ] || { echo "all 40 signed on a full disk"; false; }
}

@test "disk-full-audit-withholds" {
	audit_log_on_full_disk
	# disk-full-audit-says-why
	run cat full.out
	assert_output --partial "audit log unavailable"
	"$C" --server "unix:$T/fsock" cert >fcert.pem
	# disk-full-audit-module-unsigned
	run "$C" verify --cert fcert.pem "$withheld"
	assert_failure
	# disk-full-audit-still-withholds
	run "$C" --server "unix:$T/fsock" sign "$withheld"
	assert_failure
}

@test "disk-room-again-audit-signs" {
	audit_log_on_full_disk
	rm -f full/filler
	run "$C" --server "unix:$T/fsock" sign "$withheld"
	assert_success
	# disk-full-audit-file-one-record-of-withheld: the file has the later
	# signature of that module, and no other record of it.
	assert_equal "$(grep -c "\"module\":\"[^\"]*/${withheld##*/}\"" full/audit.jsonl)" 1
}

@test "disk-full-audit-lines-are-json" {
	# The record torn by the full disk must not glue to the next one.
	audit_log_on_full_disk
	rm -f full/filler
	run "$C" --server "unix:$T/fsock" sign "$withheld"
	assert_success
	run lines_json full/audit.jsonl
	assert_success
}

@test "disk-full-journal-says-withheld" {
	# The daemon's stderr (the journal without journald): "withheld", never
	# "ok", for the requests the file could not hold.
	audit_log_on_full_disk
	rm -f full/filler
	run "$C" --server "unix:$T/fsock" sign "$withheld"
	assert_success
	stop_daemon "$DAEMON_PID"
	grep "audit: .*\"module\":\"[^\"]*/${withheld##*/}\"" modsignd.log >withheld.lines || true
	run cat withheld.lines
	assert_output --partial '"result":"withheld: audit log unavailable'
	# disk-full-journal-ok-only-once: the later signature's.
	assert_equal "$(grep -c '"result":"ok"' withheld.lines)" 1
}

# ---- a torn last record, left by a crash ------------------------------------------

torn_tail() {
	printf '{"time":"2026-01-01T00:00:00.000Z","identity":"uid:0","result":"ok"}\n{"time":"2026-01-01T00:00:01.0' >torn.jsonl
	start_daemon "$T/csock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/torn.jsonl"
	fresh after-crash.ko
	# torn-tail-daemon-signs
	run "$C" --server "unix:$T/csock" sign after-crash.ko
	assert_success
}

@test "torn-tail-lines-are-json" {
	torn_tail
	run lines_json torn.jsonl
	assert_success
}

# Twin: the whole record before the torn one is kept.
@test "torn-tail-keeps-whole-records" {
	torn_tail
	assert_equal "$(wc -l <torn.jsonl)" 2
	run grep -c '"time":"2026-01-01T00:00:00.000Z"' torn.jsonl
	assert_output 1
}

# ---- a module name that is not UTF-8 -----------------------------------------------

# utf8_signed: a daemon that signed u/\xff\xfe.ko, then u/été.ko
# (utf8-bad-name-signs, utf8-good-name-signs).
utf8_signed() {
	start_daemon "$T/usock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/utf8.jsonl"
	mkdir u
	fresh u/$'\xff\xfe.ko'
	fresh u/$'\xc3\xa9t\xc3\xa9.ko'
	run "$C" --server "unix:$T/usock" sign u/$'\xff\xfe.ko'
	assert_success
	run "$C" --server "unix:$T/usock" sign u/$'\xc3\xa9t\xc3\xa9.ko'
	assert_success
}

@test "utf8-bad-name-log-is-utf8-json" {
	utf8_signed
	run lines_json utf8.jsonl
	assert_success
}

@test "utf8-bad-name-replaced-and-kept" {
	utf8_signed
	run python3 - utf8.jsonl <<'PY'
import json, sys
r = [json.loads(l.decode('utf-8')) for l in open(sys.argv[1], 'rb')]
assert r[0]['module'].endswith('/\ufffd\ufffd.ko'), r[0]
assert bytes.fromhex(r[0]['module_hex']).endswith(b'/\xff\xfe.ko'), r[0]
PY
	assert_success
}

# Twin: a name that is UTF-8 is recorded as it is, with no hex.
@test "utf8-good-name-kept-as-is" {
	utf8_signed
	run python3 - utf8.jsonl <<'PY'
import json, sys
r = [json.loads(l.decode('utf-8', 'replace')) for l in open(sys.argv[1], 'rb')]
assert r[1]['module'].endswith('/\u00e9t\u00e9.ko') and 'module_hex' not in r[1], r[1]
PY
	assert_success
}

@test "utf8-bad-name-stderr-is-utf8" {
	utf8_signed
	stop_daemon "$DAEMON_PID"
	run python3 -c "
import sys
for i, l in enumerate(open(sys.argv[1], 'rb'), 1):
    try: l.decode('utf-8')
    except UnicodeDecodeError as e: sys.exit('line %d: %s: %r' % (i, e, l[:120]))
" modsignd.log
	assert_success
}
