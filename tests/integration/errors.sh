#!/bin/bash
# Bad input: a one-line error naming the file and the reason, a non-zero
# exit, and the file exactly as it was.  Then the daemon against garbage.
. "$(dirname "$0")/../lib.sh"

start_daemon "$T/sock" --key default=ephemeral:rsa2048 --key other=ephemeral:ecdsa-p256 \
	--allow uid:0 --allow user:nobody --socket-mode 0666 || exit 1
export MODSIGN_SERVER=unix:$T/sock
C=$CLIENT
mod=$(real_modules 1)
cp "$mod" "$T/good.ko"
$C strip "$T/good.ko"
$C cert >"$T/cert.pem"

# bad_input NAME FILE EXPECTED-REASON CLIENT-ARGS...: the client fails with
# exactly one line that names FILE (or $NAMED, what was wrong when it is not
# the file) and the reason; FILE is byte for byte what it was.
bad_input() {
	local name=$1 file=$2 reason=$3
	shift 3
	local before=absent
	[ -e "$file" ] && before=$(sha "$file")
	if "$@" >"$T/out" 2>"$T/err"; then
		fail "$name" "exit 0"
		return
	fi
	local after=absent
	[ -e "$file" ] && after=$(sha "$file")
	if [ "$before" != "$after" ]; then
		fail "$name" "file changed"
	elif [ "$(wc -l <"$T/err")" -ne 1 ]; then
		fail "$name" "expected one line, got: $(cat "$T/err")"
	elif ! grep -q -- "${NAMED:-$(basename "$file")}" "$T/err" || ! grep -q -- "$reason" "$T/err"; then
		fail "$name" "message lacks file or reason: $(cat "$T/err")"
	else
		pass "$name"
	fi
}

bad_input missing-file "$T/nosuch.ko" "No such file" $C sign "$T/nosuch.ko"
echo "not a module" >"$T/text.ko"
bad_input not-elf "$T/text.ko" "not an ELF file" $C sign "$T/text.ko"
xz -k -c "$T/good.ko" >"$T/comp.ko.xz"
bad_input compressed-module "$T/comp.ko.xz" "decompress" $C sign "$T/comp.ko.xz"

cp "$T/good.ko" "$T/signed.ko"
$C sign "$T/signed.ko"
for cut in 1 20 40 200; do
	head -c -$cut "$T/signed.ko" >"$T/trunc$cut.ko"
	bad_input "truncated-trailer-$cut" "$T/trunc$cut.ko" "truncated or corrupt signature" $C sign "$T/trunc$cut.ko"
done
head -c 5000 "$T/good.ko" >"$T/short.ko"
bad_input truncated-module "$T/short.ko" "truncated module" $C sign "$T/short.ko"
# sig_len larger than the file
python3 - "$T/signed.ko" "$T/badlen.ko" <<'PY'
import sys, struct
d = bytearray(open(sys.argv[1], 'rb').read())
m = len(b"~Module signature appended~\n")
d[-m-4:-m] = struct.pack(">I", len(d) + 10)
open(sys.argv[2], 'wb').write(d)
PY
bad_input corrupt-sig-len "$T/badlen.ko" "corrupt signature trailer" $C sign "$T/badlen.ko"
python3 - "$T/signed.ko" "$T/badtype.ko" <<'PY'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
d[-28-12+2] = 1   # id_type PKEY_ID_X509
open(sys.argv[2], 'wb').write(d)
PY
bad_input not-pkcs7-trailer "$T/badtype.ko" "not PKCS#7" $C sign "$T/badtype.ko"
bad_input verify-corrupt-trailer "$T/badlen.ko" "corrupt signature trailer" $C verify --cert "$T/cert.pem" "$T/badlen.ko"

cp "$T/good.ko" "$T/ro.ko"
chmod 0444 "$T/ro.ko"
bad_input read-only-file "$T/ro.ko" "read-only" $C sign "$T/ro.ko"
mkdir "$T/rodir"
cp "$T/good.ko" "$T/rodir/m.ko"
chown nobody "$T/rodir/m.ko"
chmod 0555 "$T/rodir"
bad_input read-only-directory "$T/rodir/m.ko" "cannot create a file in its directory" \
	runuser -u nobody -- "$(nobody_client)" sign "$T/rodir/m.ko"

bad_input unknown-key "$T/good.ko" "unknown key" $C sign --key nosuch "$T/good.ko"
NAMED=md5 bad_input refuses-md5 "$T/good.ko" "md5" $C sign --hash md5 "$T/good.ko"
NAMED=sha1 bad_input refuses-sha1 "$T/good.ko" "sha1" $C sign --hash sha1 "$T/good.ko"
NAMED=sha1 bad_input sign-file-refuses-sha1 "$T/good.ko" "sha1" $C sign-file sha1 k "$T/cert.pem" "$T/good.ko"
$C cert --key other >"$T/other.pem"
bad_input sign-file-wrong-cert "$T/good.ko" "not the certificate given" \
	$C sign-file sha256 modsign:default "$T/other.pem" "$T/good.ko"
NAMED=nosock bad_input no-daemon "$T/good.ko" "cannot connect" $C --server unix:$T/nosock sign "$T/good.ko"
# With no daemon the error names the socket; it is still one line.
refute no-daemon-status $C --server unix:$T/nosock status

# One bad file among good ones: the good ones are signed, exit is 1.
mkdir "$T/mix"
for m in $(real_modules 5); do cp "$m" "$T/mix/"; done
cp "$T/text.ko" "$T/mix/zz-text.ko"
refute mixed-batch-exit-nonzero $C sign "$T"/mix/*.ko
check mixed-batch-good-ones-signed $C verify --cert "$T/cert.pem" $(ls "$T"/mix/*.ko | grep -v zz-text)
check mixed-batch-bad-untouched cmp "$T/mix/zz-text.ko" "$T/text.ko"

# A disk that fills up while writing: the original stays intact.
if mkdir "$T/small" && mount -t tmpfs -o size=200k tmpfs "$T/small" 2>/dev/null; then
	big=$(find "$FIX/modules" -name '*.ko' -size +150k -size -190k | head -n1)
	cp "$big" "$T/small/big.ko"
	bad_input disk-full "$T/small/big.ko" "No space left" $C sign "$T/small/big.ko"
	check disk-full-no-litter bash -c "[ \$(ls -A '$T/small' | wc -l) -eq 1 ]"
	umount "$T/small"
else
	echo "SKIP disk-full (cannot mount tmpfs here)"
fi

# ---- the daemon against hostile peers ----------------------------------
rss() { awk '/VmRSS/{print $2}' /proc/$DAEMON_PID/status; }
rss_before=$(rss)
python3 - "$T/sock" <<'PY' >"$T/hostile.out" 2>&1
import socket, struct, json, os, sys, time
path = sys.argv[1]
def conn():
    s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(10); return s
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
def result(name, ok): print(("PASS " if ok else "FAIL ") + name)

# garbage: not a frame we accept
s = conn(); s.sendall(os.urandom(4096)); r = reply(s)
result("daemon-answers-garbage-with-error", r is not None and r.get("ok") is False)
# oversized frame
s = conn(); s.sendall(struct.pack(">I", 0xffffffff) + b"{}"); r = reply(s)
result("daemon-refuses-oversized-frame", r is not None and "out of bounds" in r.get("error", ""))
result("daemon-hangs-up-after-oversized-frame", reply(s) is None)
# not JSON inside a good frame: error, connection stays usable
s = conn(); s.sendall(struct.pack(">I", 5) + b"hello" + frame({"v": 1, "id": 7, "op": "status"}))
r1, r2 = reply(s), reply(s)
result("daemon-skips-bad-json-frame", r1 and r1.get("ok") is False and r2 and r2.get("id") == 7 and r2.get("ok"))
# semantic errors
s = conn()
for i, (req, want) in enumerate([
        ({"op": "sign", "hash": "md5", "digest": "00" * 16, "module": "x"}, "not allowed"),
        ({"op": "sign", "hash": "sha256", "digest": "00" * 31, "module": "x"}, "digest length"),
        ({"op": "sign", "hash": "sha256", "digest": "zz" * 32, "module": "x"}, "digest"),
        ({"op": "sign", "hash": "sha256", "digest": "00" * 32}, "module"),
        ({"op": "sign", "key": "nosuch", "hash": "sha256", "digest": "00" * 32, "module": "x"}, "unknown key"),
        ({"op": "launch"}, "unknown operation"),
        ({"op": "status", "v": 2}, "version"),
        ({"op": "sign", "key": 5, "hash": "sha256", "digest": "00" * 32, "module": "x"}, "key")]):
    m = {"v": 1, "id": i + 1}; m.update(req)
    s.sendall(frame(m)); r = reply(s)
    result("daemon-rejects-" + want.replace(" ", "-") + "-%d" % i, r and r.get("ok") is False and want in r.get("error", ""))
# truncated request, then hang up; a client that disconnects mid-request
for _ in range(50):
    s = conn(); s.sendall(struct.pack(">I", 100) + b'{"v":1'); s.close()
# a request whose reply is never read
s = conn(); s.sendall(frame({"v": 1, "id": 1, "op": "sign", "hash": "sha256", "digest": "00" * 32, "module": "x"})); s.close()
# a slow client holds a half-sent frame open; others are served meanwhile
slow = conn(); slow.sendall(struct.pack(">I", 200) + b'{"v":1,')
t = time.time(); s = conn(); s.sendall(frame({"v": 1, "id": 9, "op": "sign", "hash": "sha256", "digest": "11" * 32, "module": "y"}))
r = reply(s)
result("slow-client-does-not-block-others", r and r.get("ok") and time.time() - t < 5)
# many garbage connections at once
socks = [conn() for _ in range(100)]
for c in socks: c.sendall(os.urandom(64))
for c in socks: c.close()
s = conn(); s.sendall(frame({"v": 1, "id": 1, "op": "status"}))
r = reply(s)
result("daemon-serves-after-hostile-peers", r and r.get("ok"))
PY
cat "$T/hostile.out" | grep -E '^(PASS|FAIL)'
grep -q Traceback "$T/hostile.out" && fail hostile-peer-script "$(tail -n 3 "$T/hostile.out")"
check daemon-alive-after-hostile kill -0 "$DAEMON_PID"
check daemon-still-signs $C sign "$T/good.ko"
rss_after=$(rss)
check "daemon-memory-bounded (${rss_before} -> ${rss_after} KiB)" test "$rss_after" -lt $((rss_before + 8192))
