#!/bin/bash
# kbuild's per-module path: one `modsign-client sign-file` process per
# module.  There is one client, dynamically linked as Debian requires (a
# second, leaner build saved less than 10% of this path:
# docs/PERFORMANCE.md, "One client or two"); what it signs this way is the
# kernel's sign-file's output, byte for byte.
. "$(dirname "$0")/../lib.sh"

# A PEM file with key and certificate, as kbuild's certs/signing_key.pem:
# the daemon signs with it, and so does the kernel's sign-file.
openssl req -new -nodes -x509 -batch -days 2 -sha256 -subj "/CN=per-module test" \
	-addext "keyUsage=digitalSignature" -newkey rsa:2048 \
	-keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
cat "$T/cert.pem" >>"$T/key.pem"
chmod 600 "$T/key.pem"
start_daemon "$T/sock" --key default="$T/key.pem" || exit 1
export MODSIGN_SERVER=unix:$T/sock
SF=$REPO/build/fixtures/sign-file

# Linked as Debian requires: against the shared libraries, none linked in.
readelf -d "$CLIENT" >"$T/client.dyn" 2>&1
check client-is-dynamic grep -q "NEEDED.*libcrypto" "$T/client.dyn"
check client-has-interpreter sh -c "readelf -l '$CLIENT' | grep -q 'Requesting program interpreter'"
refute client-no-static-libcrypto sh -c "nm '$CLIENT' 2>/dev/null | grep -q ' T SHA256_Init'"
check client-hashes-with-evp sh -c "nm -D '$CLIENT' | grep -q EVP_DigestInit_ex"

# One process per module, as kbuild calls it: the same bytes as the
# kernel's sign-file with the same key (RSA PKCS#1 v1.5 is deterministic).
mod=$(real_modules 1)
for f in a s b t; do cp "$mod" "$T/$f.ko"; $CLIENT strip "$T/$f.ko"; done
check per-module-sign-file "$CLIENT" sign-file sha512 modsign:default "$T/cert.pem" "$T/a.ko"
check kernel-sign-file "$SF" sha512 "$T/key.pem" "$T/cert.pem" "$T/s.ko"
check per-module-identical-to-sign-file cmp "$T/a.ko" "$T/s.ko"
check per-module-verifies "$CLIENT" verify --cert "$T/cert.pem" "$T/a.ko"
# twin: another hash makes other bytes, and a tampered module fails
check per-module-sha256 "$CLIENT" sign-file sha256 modsign:default "$T/cert.pem" "$T/b.ko"
refute per-module-differs-by-hash cmp "$T/a.ko" "$T/b.ko"
cp "$T/a.ko" "$T/t.ko"
flip_byte "$T/t.ko" 100
refute per-module-tampered-fails "$CLIENT" verify --cert "$T/cert.pem" "$T/t.ko"

# Unknown commands and addresses are refused, module untouched.
cp "$T/b.ko" "$T/u.ko"
sum=$(sha "$T/u.ko")
"$CLIENT" frobnicate "$T/u.ko" >"$T/out" 2>&1
rc=$?
check unknown-command-usage test $rc -eq 2
check unknown-command-says grep -q "unknown command 'frobnicate'" "$T/out"
"$CLIENT" --server "$T/sock" sign "$T/u.ko" >"$T/out" 2>&1
check bad-address-says grep -q "unsupported address" "$T/out"
check bad-address-untouched test "$(sha "$T/u.ko")" = "$sum"

# One module per run: the client half-closes after its last request, and
# the daemon answers what it read, then hangs up at once instead of waking
# again for the client's close (docs/PROTOCOL.md).  The twin: a client that
# keeps its end open keeps a connection that takes more requests.
cp "$mod" "$T/h.ko"
$CLIENT strip "$T/h.ko"
strace -qq -f -e trace=shutdown -o "$T/half.strace" \
	"$CLIENT" sign-file sha256 modsign:default "$T/cert.pem" "$T/h.ko"
check client-half-closes grep -Eq "shutdown\(.*SHUT_WR\) *= 0" "$T/half.strace"
check half-closed-signature-verifies "$CLIENT" verify --cert "$T/cert.pem" "$T/h.ko"
half_close() { # half|open: three sign requests, then the replies and whether the daemon hung up
	python3 - "$T/sock" "$1" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
def frame(o):
    b = json.dumps(o).encode(); return struct.pack(">I", len(b)) + b
s.sendall(b"".join(frame({"v": 1, "id": i + 1, "op": "sign", "hash": "sha256",
                          "digest": "%064x" % (i + 1), "module": "half%d" % i}) for i in range(3)))
if sys.argv[2] == "half":
    s.shutdown(socket.SHUT_WR)
s.settimeout(20)
buf, replies, errors = b"", 0, 0
while replies < 3:
    c = s.recv(65536)
    if not c: break
    buf += c
    while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
        n = struct.unpack(">I", buf[:4])[0]
        errors += not json.loads(buf[4:4 + n]).get("ok"); replies += 1; buf = buf[4 + n:]
s.settimeout(2)  # every reply is in: does the daemon hang up?
try: eof = int(s.recv(1) == b"")
except socket.timeout: eof = 0
print("replies=%d errors=%d eof=%d" % (replies, errors, eof))
PY
}
half_close half >"$T/half.out" 2>&1
check daemon-answers-half-closed-then-hangs-up grep -qx "replies=3 errors=0 eof=1" "$T/half.out"
half_close open >"$T/open.out" 2>&1
check daemon-keeps-open-connection grep -qx "replies=3 errors=0 eof=0" "$T/open.out"

# Invoked as scripts/sign-file (the unpatched kbuild's name).
ln -s "$CLIENT" "$T/sign-file"
cp "$T/b.ko" "$T/c.ko"
$CLIENT strip "$T/c.ko"
check as-sign-file-signs "$T/sign-file" sha256 whatever.pem "$T/cert.pem" "$T/c.ko"
check as-sign-file-verifies "$CLIENT" verify --cert "$T/cert.pem" "$T/c.ko"
# twin: a certificate that is not the daemon's is refused, module untouched
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=other \
	-keyout "$T/other.key" -out "$T/other.pem" 2>/dev/null
$CLIENT strip "$T/c.ko"
sum=$(sha "$T/c.ko")
refute as-sign-file-other-cert "$T/sign-file" sha256 whatever.pem "$T/other.pem" "$T/c.ko"
check as-sign-file-other-cert-untouched test "$(sha "$T/c.ko")" = "$sum"
