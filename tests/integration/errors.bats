#!/usr/bin/env bats
# Bad input: a one-line error naming the file and the reason, a non-zero
# exit, and the file exactly as it was.  Then the daemon against garbage.
# Each case has its own daemon (two one-time keys: cheap to make).

load ../common

setup() {
	case_setup
	start_daemon "$T/sock" --key default=ephemeral:rsa2048 --key other=ephemeral:ecdsa-p256 \
		--allow uid:0 --allow user:nobody --socket-mode 0666
	export MODSIGN_SERVER=unix:$T/sock
	cp "$(real_modules 1)" "$T/good.ko"
	"$C" strip "$T/good.ko"
}

teardown() {
	# A disk-full case's tmpfs: its daemon must be gone before it unmounts.
	if mountpoint -q "$T/small" 2>/dev/null; then
		for p in "${DAEMON_PIDS[@]}"; do stop_daemon "$p"; done
		umount "$T/small"
	fi
	case_teardown
}

digest() { if [ -e "$1" ]; then sha "$1"; else echo absent; fi; }

# bad_input FILE EXPECTED-REASON COMMAND...: the command fails with exactly
# one line on stderr that names FILE (or $NAMED, what was wrong when it is
# not the file) and the reason; FILE is byte for byte what it was.
bad_input() {
	local file=$1 reason=$2 before
	shift 2
	before=$(digest "$file")
	status=0
	"$@" >"$T/out" 2>"$T/err" || status=$?
	output=$(cat "$T/err")
	assert_failure
	assert_equal "$(digest "$file")" "$before"
	assert_equal "$(wc -l <"$T/err")" 1
	assert_output --partial "${NAMED:-$(basename "$file")}"
	assert_output --partial "$reason"
}

signed_copy() { # FILE: good.ko, signed
	cp "$T/good.ko" "$1"
	"$C" sign "$1"
}

@test "missing-file" {
	bad_input "$T/nosuch.ko" "No such file" "$C" sign "$T/nosuch.ko"
}

@test "not-elf" {
	echo "not a module" >"$T/text.ko"
	bad_input "$T/text.ko" "not an ELF file" "$C" sign "$T/text.ko"
}

# A .ko.xz is signed now (compressed.bats); xz data under a plain .ko
# name is not guessed at.
@test "compressed-data-named-as-plain-module" {
	xz -k -c "$T/good.ko" >"$T/comp.ko"
	bad_input "$T/comp.ko" "xz data, but its name does not end in .xz" "$C" sign "$T/comp.ko"
}

truncated_trailer() { # CUT: a signed module without its last CUT bytes
	signed_copy "$T/signed.ko"
	head -c "-$1" "$T/signed.ko" >"$T/trunc$1.ko"
	bad_input "$T/trunc$1.ko" "truncated or corrupt signature" "$C" sign "$T/trunc$1.ko"
}

@test "truncated-trailer-1" { truncated_trailer 1; }
@test "truncated-trailer-20" { truncated_trailer 20; }
@test "truncated-trailer-40" { truncated_trailer 40; }
@test "truncated-trailer-200" { truncated_trailer 200; }

@test "truncated-module" {
	head -c 5000 "$T/good.ko" >"$T/short.ko"
	bad_input "$T/short.ko" "truncated module" "$C" sign "$T/short.ko"
}

badlen() { # a signed module whose sig_len is larger than the file
	signed_copy "$T/signed.ko"
	python3 - "$T/signed.ko" "$T/badlen.ko" <<'PY'
import sys, struct
d = bytearray(open(sys.argv[1], 'rb').read())
m = len(b"~Module signature appended~\n")
d[-m-4:-m] = struct.pack(">I", len(d) + 10)
open(sys.argv[2], 'wb').write(d)
PY
}

@test "corrupt-sig-len" {
	badlen
	bad_input "$T/badlen.ko" "corrupt signature trailer" "$C" sign "$T/badlen.ko"
}

@test "not-pkcs7-trailer" {
	signed_copy "$T/signed.ko"
	python3 - "$T/signed.ko" "$T/badtype.ko" <<'PY'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
d[-28-12+2] = 1   # id_type PKEY_ID_X509
open(sys.argv[2], 'wb').write(d)
PY
	bad_input "$T/badtype.ko" "not PKCS#7" "$C" sign "$T/badtype.ko"
}

@test "verify-corrupt-trailer" {
	badlen
	"$C" cert >"$T/cert.pem"
	bad_input "$T/badlen.ko" "corrupt signature trailer" "$C" verify --cert "$T/cert.pem" "$T/badlen.ko"
}

@test "read-only-file" {
	cp "$T/good.ko" "$T/ro.ko"
	chmod 0444 "$T/ro.ko"
	bad_input "$T/ro.ko" "read-only" "$C" sign "$T/ro.ko"
}

@test "read-only-directory" {
	mkdir "$T/rodir"
	cp "$T/good.ko" "$T/rodir/m.ko"
	chown nobody "$T/rodir/m.ko"
	chmod 0555 "$T/rodir"
	bad_input "$T/rodir/m.ko" "cannot create a file in its directory" \
		runuser -u nobody -- "$(nobody_client)" sign "$T/rodir/m.ko"
}

@test "unknown-key" {
	# Found when the pool asks each server for the key's certificate,
	# before any module is sent: the key is named, not the module.
	NAMED="key 'nosuch'" bad_input "$T/good.ko" "unknown key" "$C" sign --key nosuch "$T/good.ko"
}

@test "refuses-md5" {
	NAMED=md5 bad_input "$T/good.ko" "md5" "$C" sign --hash md5 "$T/good.ko"
}

@test "refuses-sha1" {
	NAMED=sha1 bad_input "$T/good.ko" "sha1" "$C" sign --hash sha1 "$T/good.ko"
}

@test "refuses-sha3-224" {
	# SHA-3 is allowed as the kernel offers it (256, 384, 512); 224 is
	# not, and the one line says which are.
	NAMED=sha3-224 bad_input "$T/good.ko" "use one of sha256, sha384, sha512, sha3-256" \
		"$C" sign --hash sha3-224 "$T/good.ko"
}

@test "sign-file-refuses-sha3-224" {
	"$C" cert >"$T/cert.pem"
	NAMED=sha3-224 bad_input "$T/good.ko" "not allowed" \
		"$C" sign-file sha3-224 k "$T/cert.pem" "$T/good.ko"
}

@test "sign-file-refuses-sha1" {
	"$C" cert >"$T/cert.pem"
	NAMED=sha1 bad_input "$T/good.ko" "sha1" "$C" sign-file sha1 k "$T/cert.pem" "$T/good.ko"
}

@test "sign-file-wrong-cert" {
	"$C" cert --key other >"$T/other.pem"
	bad_input "$T/good.ko" "not the certificate given" \
		"$C" sign-file sha256 modsign:default "$T/other.pem" "$T/good.ko"
}

@test "no-daemon" {
	NAMED=nosock bad_input "$T/good.ko" "cannot connect" "$C" --server "unix:$T/nosock" sign "$T/good.ko"
}

@test "no-daemon-status" {
	run "$C" --server "unix:$T/nosock" status
	assert_failure
}

# One bad file among good ones: the good ones are signed, exit is 1.
mixed_batch() {
	local m
	mkdir "$T/mix"
	for m in $(real_modules 5); do cp "$m" "$T/mix/"; done
	echo "not a module" >"$T/text.ko"
	cp "$T/text.ko" "$T/mix/zz-text.ko"
	run "$C" sign "$T"/mix/*.ko
}

@test "mixed-batch-exit-nonzero" {
	mixed_batch
	assert_failure
}

@test "mixed-batch-good-ones-signed" {
	mixed_batch
	"$C" cert >"$T/cert.pem"
	run "$C" verify --cert "$T/cert.pem" $(ls "$T"/mix/*.ko | grep -v zz-text)
	assert_success
}

@test "mixed-batch-bad-untouched" {
	mixed_batch
	run cmp "$T/mix/zz-text.ko" "$T/text.ko"
	assert_success
}

# A disk that fills up while writing: a 200 KiB tmpfs holding a module of
# 150-190 KiB, which has no room for the signed copy next to it.
small_disk() {
	local big
	mkdir "$T/small"
	mount -t tmpfs -o size=200k tmpfs "$T/small" 2>/dev/null || skip "cannot mount tmpfs here"
	big=$(find "$FIX/modules" -name '*.ko' -size +150k -size -190k | head -n1)
	cp "$big" "$T/small/big.ko"
}

@test "disk-full" {
	small_disk
	bad_input "$T/small/big.ko" "No space left" "$C" sign "$T/small/big.ko"
}

@test "disk-full-no-litter" {
	small_disk
	run "$C" sign "$T/small/big.ko"
	assert_failure
	run ls -A "$T/small"
	assert_output big.ko
}

# ---- the daemon against hostile peers ----------------------------------
# hostile SCENARIO [ARG]: one hostile peer's attempt against $T/sock, in
# python; exits 0 if the daemon did what it should, else 1 with what it
# got (an exception, say an unexpected hang-up, fails too).
hostile() {
	python3 - "$T/sock" "$@" <<'PY'
import socket, struct, json, os, sys, time
path, what = sys.argv[1], sys.argv[2]
def conn(timeout=10):
    s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(timeout); return s
def frame(obj):
    b = json.dumps(obj).encode(); return struct.pack(">I", len(b)) + b
def reply(s):
    h = b""
    while len(h) < 4:
        c = s.recv(4 - len(h))
        if not c: return None
        h += c
    n = struct.unpack(">I", h)[0]; b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: return None
        b += c
    return json.loads(b)
def result(ok, *got):
    if not ok:
        print("got:", *got)
    sys.exit(0 if ok else 1)
SIGN = {"op": "sign", "hash": "sha256", "digest": "00" * 32, "module": "x"}
REJECTS = [
    ({"op": "sign", "hash": "md5", "digest": "00" * 16, "module": "x"}, "not allowed"),
    ({"op": "sign", "hash": "sha256", "digest": "00" * 31, "module": "x"}, "digest length"),
    ({"op": "sign", "hash": "sha256", "digest": "zz" * 32, "module": "x"}, "digest"),
    ({"op": "sign", "hash": "sha256", "digest": "00" * 32}, "module"),
    ({"op": "sign", "key": "nosuch", "hash": "sha256", "digest": "00" * 32, "module": "x"}, "unknown key"),
    ({"op": "launch"}, "unknown operation"),
    ({"op": "status", "v": 2}, "version"),
    ({"op": "sign", "key": 5, "hash": "sha256", "digest": "00" * 32, "module": "x"}, "key"),
    ({"op": "sign", "hash": "sha3-224", "digest": "00" * 28, "module": "x"}, "not allowed (sha256, sha384, sha512, sha3-256, sha3-384, sha3-512)"),
    ({"op": "sign", "hash": "sha3-384", "digest": "00" * 32, "module": "x"}, "digest length")]

if what == "garbage":  # not a frame we accept
    s = conn(); s.sendall(os.urandom(4096)); r = reply(s)
    result(r is not None and r.get("ok") is False, r)
elif what in ("oversized", "oversized-hangup"):
    s = conn(); s.sendall(struct.pack(">I", 0xffffffff) + b"{}"); r = reply(s)
    if what == "oversized":
        result(r is not None and "out of bounds" in r.get("error", ""), r)
    r2 = reply(s)
    result(r2 is None, "after", r, "then", r2)
elif what == "bad-json":  # not JSON inside a good frame: error, connection stays usable
    s = conn(); s.sendall(struct.pack(">I", 5) + b"hello" + frame({"v": 1, "id": 7, "op": "status"}))
    r1, r2 = reply(s), reply(s)
    result(r1 and r1.get("ok") is False and r2 and r2.get("id") == 7 and r2.get("ok"), r1, r2)
elif what == "reject":  # semantic errors
    i = int(sys.argv[3]); req, want = REJECTS[i]
    m = {"v": 1, "id": i + 1}; m.update(req)
    s = conn(); s.sendall(frame(m)); r = reply(s)
    result(r and r.get("ok") is False and want in r.get("error", ""), "want", repr(want), r)
elif what == "slow":
    # A slow client holds a half-sent frame open; another is answered
    # meanwhile.  The daemon drops a peer that drips for 30 s, so one
    # that served its peers in turn would answer only after dropping the
    # slow one: it must still be connected when the answer comes.  (The
    # 60 s timeout only bounds a hang.)
    slow = conn(); slow.sendall(struct.pack(">I", 200) + b'{"v":1,')
    t = time.time(); s = conn(60)
    s.sendall(frame({"v": 1, "id": 9, "op": "sign", "hash": "sha256", "digest": "11" * 32, "module": "y"}))
    r = reply(s); took = time.time() - t
    slow.setblocking(False)
    try:
        still = slow.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        still = True
    result(r and r.get("ok") and still, r and {k: v for k, v in r.items() if k != "signature"},
           "slow client still connected:", still, "after %.1f s" % took)
elif what == "all":
    # Every peer above, then more: truncated requests and hang-ups, a
    # request whose reply is never read, a slow client, many garbage
    # connections at once.
    s = conn(); s.sendall(os.urandom(4096)); reply(s)
    s = conn(); s.sendall(struct.pack(">I", 0xffffffff) + b"{}"); reply(s); reply(s)
    s = conn(); s.sendall(struct.pack(">I", 5) + b"hello" + frame({"v": 1, "id": 7, "op": "status"})); reply(s); reply(s)
    s = conn()
    for i, (req, want) in enumerate(REJECTS):
        m = {"v": 1, "id": i + 1}; m.update(req); s.sendall(frame(m)); reply(s)
    for _ in range(50):
        s = conn(); s.sendall(struct.pack(">I", 100) + b'{"v":1'); s.close()
    s = conn(); s.sendall(frame(dict(SIGN, v=1, id=1))); s.close()
    slow = conn(); slow.sendall(struct.pack(">I", 200) + b'{"v":1,')
    s = conn(); s.sendall(frame({"v": 1, "id": 9, "op": "sign", "hash": "sha256", "digest": "11" * 32, "module": "y"})); reply(s)
    socks = [conn() for _ in range(100)]
    for c in socks: c.sendall(os.urandom(64))
    for c in socks: c.close()
    s = conn(); s.sendall(frame({"v": 1, "id": 1, "op": "status"}))
    r = reply(s)
    result(r and r.get("ok"), r)
else:
    sys.exit("no scenario " + what)
PY
}

@test "daemon-answers-garbage-with-error" {
	run hostile garbage
	assert_success
}

@test "daemon-refuses-oversized-frame" {
	run hostile oversized
	assert_success
}

@test "daemon-hangs-up-after-oversized-frame" {
	run hostile oversized-hangup
	assert_success
}

@test "daemon-skips-bad-json-frame" {
	run hostile bad-json
	assert_success
}

@test "daemon-rejects-not-allowed-0" { run hostile reject 0; assert_success; }
@test "daemon-rejects-digest-length-1" { run hostile reject 1; assert_success; }
@test "daemon-rejects-digest-2" { run hostile reject 2; assert_success; }
@test "daemon-rejects-module-3" { run hostile reject 3; assert_success; }
@test "daemon-rejects-unknown-key-4" { run hostile reject 4; assert_success; }
@test "daemon-rejects-unknown-operation-5" { run hostile reject 5; assert_success; }
@test "daemon-rejects-version-6" { run hostile reject 6; assert_success; }
@test "daemon-rejects-key-7" { run hostile reject 7; assert_success; }
@test "daemon-rejects-sha3-224-8" { run hostile reject 8; assert_success; }
@test "daemon-rejects-sha3-384-digest-length-9" { run hostile reject 9; assert_success; }

@test "slow-client-does-not-block-others" {
	run hostile slow
	assert_success
}

@test "daemon-serves-after-hostile-peers" {
	run hostile all
	assert_success
}

@test "daemon-alive-after-hostile" {
	hostile all
	run kill -0 "$DAEMON_PID"
	assert_success
}

@test "daemon-still-signs" {
	hostile all
	run "$C" sign "$T/good.ko"
	assert_success
}

@test "daemon-memory-bounded" {
	local before after
	before=$(rss)
	hostile all
	"$C" sign "$T/good.ko"
	after=$(rss)
	[ "$after" -lt $((before + 8192)) ] || { echo "VmRSS $before -> $after KiB"; false; }
}
