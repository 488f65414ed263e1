#!/bin/bash
# Attacks on the audit log: a loop of refused unauthenticated peers (UNIX
# peers outside the allow-list, TLS peers without a good certificate) must
# not fill it, yet every refusal is counted; a full disk must not leave a
# torn record that glues to the next one, nor a journal entry saying "ok"
# for a signature withheld; a module name that is not UTF-8 must still give
# a line that is UTF-8 JSON.  Each has a twin.
. "$(dirname "$0")/../lib.sh"
C=$CLIENT
N=300
mod=$(real_modules 1)
$C --server unix:/nonexistent strip "$mod" >/dev/null 2>&1 # no-op if unsigned

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

# refusals FILE PATTERN: "RECORDS TOTAL": the records whose result matches
# PATTERN, and the refusals they stand for (a summary counts "count").
refusals() {
	python3 - "$1" "$2" <<'PY'
import json, re, sys
recs = tot = 0
for line in open(sys.argv[1], 'rb'):
    r = json.loads(line.decode('utf-8', 'replace'))
    if re.search(sys.argv[2], r.get('result') or ''):
        recs += 1
        tot += r['count'] if r.get('summary') else 1
print(recs, tot)
PY
}

hup() { kill -HUP "$1"; }

# ---- a loop of refused UNIX peers ----------------------------------------------
start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --allow uid:0 --socket-mode 0666 \
	--audit-log "$T/unix.jsonl" || exit 1
upid=$DAEMON_PID
# One process as nobody connects N times and reads each refusal: once it
# has read the last, the daemon has counted them all (it audits first).
runuser -u nobody -- python3 - "$T/sock" "$N" <<'PY'
import socket, sys
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.recv(4096)
    s.close()
PY
size=$(stat -c %s "$T/unix.jsonl")
read -r recs tot < <(refusals "$T/unix.jsonl" "not allowed by policy")
check "audit-unix-refusal-flood-bounded ($recs records, $size bytes)" test "$recs" -le 2 -a "$size" -lt 4096
# The daemon's own log (stderr, the journal) is bounded the same way: the
# refused uid appears in the first record and its log line, not N times.
loglines=$(grep -c 'uid:65534\|uid=65534' "$T/modsignd.log")
check audit-unix-refusal-flood-log-bounded test "$loglines" -le 4
# The summary is written when the interval ends, on SIGHUP and at exit.
hup "$upid"
summed() { read -r recs tot < <(refusals "$T/unix.jsonl" "not allowed by policy"); [ "$tot" -eq "$N" ]; }
check audit-unix-refusal-summary-counts-all eventually 10 summed
check audit-unix-summary-names-source-and-interval python3 -c "
import json
s = [json.loads(l) for l in open('$T/unix.jsonl') if '\"summary\":true' in l]
assert s and s[0]['identity'] == 'uid:65534' and s[0]['count'] == $N - 1, s
assert s[0]['first'] <= s[0]['last'] and s[0]['interval_s'] > 0, s
"
# Twin: an allowed client's signatures, and its refused requests, are
# recorded one by one.
mkdir "$T/ok"
for i in 1 2 3 4 5; do cp "$mod" "$T/ok/ok$i.ko"; done
$C --server "unix:$T/sock" sign "$T"/ok/*.ko >/dev/null 2>&1
check audit-allowed-signatures-each-recorded test "$(grep -c '"module":"[^"]*/ok[1-5].ko","result":"ok"' "$T/unix.jsonl")" -eq 5
for i in 1 2 3 4 5; do $C --server "unix:$T/sock" sign --key nokey "$T/ok/ok$i.ko" >/dev/null 2>&1; done
check audit-authenticated-refusals-each-recorded test "$(grep -c '"result":"unknown key"' "$T/unix.jsonl")" -eq 5
check audit-unix-log-is-json lines_json "$T/unix.jsonl"
stop_daemon "$upid"

# ---- many sources: the table of sources is bounded, the rest share one entry --
start_daemon "$T/msock" --key default=ephemeral:ecdsa-p256 --allow uid:0 --socket-mode 0666 \
	--audit-log "$T/many.jsonl" || exit 1
mpid=$DAEMON_PID
# 100 uids no rule names, 3 connections each, interleaved; root forks a
# child per connection that drops to its uid.
python3 - "$T/msock" <<'PY'
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
hup "$mpid"
many_summed() { read -r recs tot < <(refusals "$T/many.jsonl" "not allowed by policy|sources past the table"); [ "$tot" -eq 300 ]; }
check audit-many-sources-all-counted eventually 10 many_summed
check "audit-many-sources-records-bounded ($recs records)" test "$recs" -le 130
check audit-many-sources-share-one-entry grep -q '"identity":"\*".*"summary":true' "$T/many.jsonl"
check audit-many-sources-log-is-json lines_json "$T/many.jsonl"
stop_daemon "$mpid"

# ---- a loop of TLS peers without a good certificate ---------------------------
(mkdir "$T/pki" && cd "$T/pki" && pki ca && pki rogue-ca && printf 'subjectAltName=IP:127.0.0.1\n' >san.ext &&
	issue host ca -extfile san.ext && issue builder ca && issue rogue rogue-ca) || { fail tls-setup; exit 1; }
PORT=$(free_port)
start_daemon "$T/tsock" --key default=ephemeral:ecdsa-p256 --listen "tls:127.0.0.1:$PORT" \
	--tls-cert "$T/pki/host.crt" --tls-key "$T/pki/host.key" --tls-client-ca "$T/pki/ca.crt" \
	--allow uid:0 --allow cn:builder --audit-log "$T/tls.jsonl" || exit 1
tpid=$DAEMON_PID
wait_port "$PORT" || { fail tls-daemon-listens; exit 1; }
base=$(wc -l <"$T/tls.jsonl")
# Half with no certificate, half with one from another CA; each waits for
# the daemon's verdict (its alert) before the next.
python3 - "$PORT" "$N" "$T/pki" <<'PY'
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
hs() { tail -n +$((base + 1)) "$T/tls.jsonl" >"$T/tls.new"; refusals "$T/tls.new" "certificate|TLS handshake failed|issuer|unknown ca"; }
read -r recs tot < <(hs)
check "audit-tls-refusal-flood-bounded ($recs records)" test "$recs" -le 6
hup "$tpid"
tls_summed() { read -r recs tot < <(hs); [ "$tot" -ge "$N" ]; }
check audit-tls-refusal-summary-counts-all eventually 10 tls_summed
check audit-tls-summary-source-is-address grep -q '"identity":"tls:127.0.0.1".*"summary":true,"count":' "$T/tls.jsonl"
# Twin: a builder with a good certificate is served and recorded.
cp "$mod" "$T/tb.ko"
check audit-tls-builder-signs $C --server "tls:127.0.0.1:$PORT" --tls-ca "$T/pki/ca.crt" \
	--tls-cert "$T/pki/builder.crt" --tls-key "$T/pki/builder.key" sign "$T/tb.ko"
check audit-tls-builder-recorded grep -q '"identity":"cn:builder".*"module":"[^"]*/tb.ko","result":"ok"' "$T/tls.jsonl"
check audit-tls-log-is-json lines_json "$T/tls.jsonl"
stop_daemon "$tpid"

# ---- a full disk -----------------------------------------------------------------
if mkdir "$T/full" && mount -t tmpfs -o size=1m tmpfs "$T/full" 2>/dev/null; then
	trap 'umount "$T/full" 2>/dev/null; cleanup' EXIT
	start_daemon "$T/fsock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/full/audit.jsonl" || exit 1
	fpid=$DAEMON_PID
	mkdir "$T/fm"
	for i in $(seq -w 1 40); do cp "$mod" "$T/fm/m$i-$(printf 'x%.0s' $(seq 1 150)).ko"; done
	first=$(ls "$T"/fm/*.ko | head -n1)
	check disk-full-audit-first-signs $C --server "unix:$T/fsock" sign "$first"
	dd if=/dev/zero of="$T/full/filler" bs=4k 2>/dev/null
	# The last page of the log has room for a few records; the one that
	# crosses into the next page is written in part, then fails.
	withheld=
	for f in $(ls "$T"/fm/*.ko | tail -n +2); do
		if ! $C --server "unix:$T/fsock" sign "$f" >"$T/full.out" 2>&1; then withheld=$f; break; fi
	done
	check disk-full-audit-withholds test -n "$withheld"
	check disk-full-audit-says-why grep -q "audit log unavailable" "$T/full.out"
	$C --server "unix:$T/fsock" cert >"$T/fcert.pem"
	refute disk-full-audit-module-unsigned $C verify --cert "$T/fcert.pem" "$withheld"
	refute disk-full-audit-still-withholds $C --server "unix:$T/fsock" sign "$withheld"
	rm -f "$T/full/filler"
	check disk-room-again-audit-signs $C --server "unix:$T/fsock" sign "$withheld"
	check disk-full-audit-lines-are-json lines_json "$T/full/audit.jsonl"
	w=${withheld##*/}
	# The file has the later signature of that module, and no other record of it.
	check disk-full-audit-file-one-record-of-withheld test "$(grep -c "\"module\":\"[^\"]*/$w\"" "$T/full/audit.jsonl")" -eq 1
	# The daemon's stderr (the journal without journald): "withheld", never "ok",
	# for the requests the file could not hold.
	stop_daemon "$fpid"
	grep "audit: .*\"module\":\"[^\"]*/$w\"" "$T/modsignd.log" >"$T/withheld.lines"
	check disk-full-journal-says-withheld grep -q '"result":"withheld: audit log unavailable' "$T/withheld.lines"
	check disk-full-journal-ok-only-once test "$(grep -c '"result":"ok"' "$T/withheld.lines")" -eq 1
	umount "$T/full"
else
	echo "SKIP disk-full-audit (cannot mount tmpfs here)"
fi

# ---- a torn last record, left by a crash -------------------------------------------
printf '{"time":"2026-01-01T00:00:00.000Z","identity":"uid:0","result":"ok"}\n{"time":"2026-01-01T00:00:01.0' >"$T/torn.jsonl"
start_daemon "$T/csock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/torn.jsonl" || exit 1
cp "$mod" "$T/after-crash.ko"
check torn-tail-daemon-signs $C --server "unix:$T/csock" sign "$T/after-crash.ko"
check torn-tail-lines-are-json lines_json "$T/torn.jsonl"
check torn-tail-keeps-whole-records test "$(wc -l <"$T/torn.jsonl")" -eq 2
stop_daemon "$DAEMON_PID"

# ---- a module name that is not UTF-8 ------------------------------------------------
start_daemon "$T/usock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/utf8.jsonl" || exit 1
mkdir "$T/u"
cp "$mod" "$T/u/"$'\xff\xfe.ko'
cp "$mod" "$T/u/"$'\xc3\xa9t\xc3\xa9.ko'
check utf8-bad-name-signs $C --server "unix:$T/usock" sign "$T/u/"$'\xff\xfe.ko'
check utf8-good-name-signs $C --server "unix:$T/usock" sign "$T/u/"$'\xc3\xa9t\xc3\xa9.ko'
check utf8-bad-name-log-is-utf8-json lines_json "$T/utf8.jsonl"
check utf8-bad-name-replaced-and-kept python3 -c "
import json
r = [json.loads(l.decode('utf-8')) for l in open('$T/utf8.jsonl', 'rb')]
assert r[0]['module'].endswith('/\ufffd\ufffd.ko'), r[0]
assert bytes.fromhex(r[0]['module_hex']).endswith(b'/\xff\xfe.ko'), r[0]
"
# Twin: a name that is UTF-8 is recorded as it is, with no hex.
check utf8-good-name-kept-as-is python3 -c "
import json
r = [json.loads(l.decode('utf-8')) for l in open('$T/utf8.jsonl', 'rb')]
assert r[1]['module'].endswith('/\u00e9t\u00e9.ko') and 'module_hex' not in r[1], r[1]
"
stop_daemon "$DAEMON_PID"
check utf8-bad-name-stderr-is-utf8 python3 -c "
for l in open('$T/modsignd.log', 'rb'):
    l.decode('utf-8')
"
