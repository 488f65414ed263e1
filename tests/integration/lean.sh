#!/bin/bash
# The per-module client is the lean build: statically linked, it signs over
# UNIX sockets without libcrypto's shared object, and hands every other
# command, and tls: servers, to modsign-client-full found next to it (or in
# ../libexec/modsign).  Without the full client those fail with one line
# that says so; signing does not need it.
. "$(dirname "$0")/../lib.sh"

FULL=$(dirname "$CLIENT")/modsign-client-full
start_daemon "$T/sock" --key default=ephemeral:rsa2048 || exit 1
export MODSIGN_SERVER=unix:$T/sock
$CLIENT cert >"$T/cert.pem"

# Linked as make built it: statically (the default), or against shared
# libraries with CLIENT_LINK=dynamic or a sanitizer build; either way never
# libssl, and none of OpenSSL's EVP or provider code.  The full client is
# the twin that has them.
readelf -d "$CLIENT" >"$T/lean.dyn" 2>&1
readelf -d "$FULL" >"$T/full.dyn" 2>&1
if readelf -l "$CLIENT" | grep -q "Requesting program interpreter"; then
	nm -D "$CLIENT" >"$T/lean.syms" 2>&1
	pass "lean-client-dynamic (CLIENT_LINK=dynamic or sanitizers)"
else
	nm "$CLIENT" >"$T/lean.syms" 2>&1
	refute lean-client-static grep -q "(NEEDED)" "$T/lean.dyn"
fi
nm -D "$FULL" >"$T/full.syms" 2>&1
refute lean-client-no-libssl grep -Eq "NEEDED.*libssl" "$T/lean.dyn"
check lean-client-has-symbols grep -q "SHA256_Init" "$T/lean.syms"
refute lean-client-no-evp grep -Eq "EVP_Digest|EVP_MD_fetch|OSSL_PROVIDER_" "$T/lean.syms"
check full-client-links-libssl grep -Eq "NEEDED.*libssl" "$T/full.dyn"
check full-client-hashes-with-evp grep -q "EVP_DigestInit_ex" "$T/full.syms"

# A lone copy of the lean client: signs, verifies nothing.
mkdir "$T/lone"
cp "$CLIENT" "$T/lone/modsign-client"
mod=$(real_modules 1)
cp "$mod" "$T/a.ko"
$CLIENT strip "$T/a.ko"
cp "$T/a.ko" "$T/b.ko"
check lone-lean-signs "$T/lone/modsign-client" sign "$T/a.ko"
check lone-lean-sign-file "$T/lone/modsign-client" sign-file sha256 modsign:default "$T/cert.pem" "$T/b.ko"
check signed-by-lean-verifies "$CLIENT" verify --cert "$T/cert.pem" "$T/a.ko" "$T/b.ko"
sum=$(sha "$T/a.ko")
"$T/lone/modsign-client" verify --cert "$T/cert.pem" "$T/a.ko" >"$T/out" 2>&1
rc=$?
check lone-verify-fails test $rc -eq 1
check lone-verify-says-why grep -q "^modsign-client: verify needs modsign-client-full, which is not installed next to modsign-client" "$T/out"
check lone-verify-one-line test "$(wc -l <"$T/out")" -eq 1
"$T/lone/modsign-client" --server tls:127.0.0.1:1 sign "$T/a.ko" >"$T/out" 2>&1
check lone-tls-says-why grep -q "a tls: server needs modsign-client-full" "$T/out"
check lone-tls-module-untouched test "$(sha "$T/a.ko")" = "$sum"

# Unknown commands and addresses are refused by the lean client as by the
# full one, without a hand-over.
"$T/lone/modsign-client" frobnicate "$T/a.ko" >"$T/out" 2>&1
rc=$?
check lone-unknown-command-usage test $rc -eq 2
check lone-unknown-command-says grep -q "unknown command 'frobnicate'" "$T/out"
"$T/lone/modsign-client" --server "$T/sock" sign "$T/a.ko" >"$T/out" 2>&1
check lone-bad-address-says grep -q "unsupported address" "$T/out"
check lone-bad-address-untouched test "$(sha "$T/a.ko")" = "$sum"

# What the lean and the full client sign is the same, byte for byte
# (RSA PKCS#1 v1.5 is deterministic).
for f in l1 f1 l2 f2; do cp "$mod" "$T/$f.ko"; $CLIENT strip "$T/$f.ko"; done
"$CLIENT" sign "$T/l1.ko" && "$FULL" sign "$T/f1.ko"
check lean-full-sign-identical cmp "$T/l1.ko" "$T/f1.ko"
"$CLIENT" sign-file sha512 modsign:default "$T/cert.pem" "$T/l2.ko" &&
	"$FULL" sign-file sha512 modsign:default "$T/cert.pem" "$T/f2.ko"
check lean-full-sign-file-identical cmp "$T/l2.ko" "$T/f2.ko"
refute lean-full-differ-by-hash cmp "$T/l1.ko" "$T/l2.ko"

# One module per run: the client half-closes after its last request, and
# the daemon answers what it read, then hangs up at once instead of waking
# again for the client's close (docs/PROTOCOL.md).  The twin: a client that
# keeps its end open keeps a connection that takes more requests.
cp "$mod" "$T/h.ko"
$CLIENT strip "$T/h.ko"
strace -qq -f -e trace=shutdown -o "$T/half.strace" \
	"$CLIENT" sign-file sha256 modsign:default "$T/cert.pem" "$T/h.ko"
check lean-client-half-closes grep -Eq "shutdown\(.*SHUT_WR\) *= 0" "$T/half.strace"
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

# The installed layout: bin/modsign-client finds libexec/modsign/modsign-client-full.
mkdir -p "$T/inst/bin" "$T/inst/libexec/modsign"
cp "$CLIENT" "$T/inst/bin/modsign-client"
cp "$FULL" "$T/inst/libexec/modsign/modsign-client-full"
check installed-layout-verify "$T/inst/bin/modsign-client" verify --cert "$T/cert.pem" "$T/a.ko"
# global options before the command travel with the hand-over
env -u MODSIGN_SERVER "$T/inst/bin/modsign-client" --server "unix:$T/sock" status >"$T/status" 2>&1
check installed-layout-status grep -q "key default (default): rsa2048" "$T/status"
# twin: a tampered module still fails through the hand-over
cp "$T/a.ko" "$T/t.ko"
flip_byte "$T/t.ko" 100
refute installed-layout-verify-tampered "$T/inst/bin/modsign-client" verify --cert "$T/cert.pem" "$T/t.ko"

# Invoked as scripts/sign-file (the unpatched kbuild's name), lean too.
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

# Only a trustworthy full client is run: not one anybody may rewrite, and
# not the lean client itself under the full one's name (that would exec
# itself forever).
mkdir "$T/loose" "$T/loop"
cp "$CLIENT" "$T/loose/modsign-client"
cp "$FULL" "$T/loose/modsign-client-full"
chmod 0777 "$T/loose/modsign-client-full"
"$T/loose/modsign-client" verify --cert "$T/cert.pem" "$T/a.ko" >"$T/out" 2>&1
check writable-full-refused grep -q "needs modsign-client-full.*Operation not permitted" "$T/out"
chmod 0755 "$T/loose/modsign-client-full"
check safe-full-accepted "$T/loose/modsign-client" verify --cert "$T/cert.pem" "$T/a.ko"
cp "$CLIENT" "$T/loop/modsign-client"
ln "$T/loop/modsign-client" "$T/loop/modsign-client-full"
timeout 20 "$T/loop/modsign-client" status >"$T/out" 2>&1
rc=$?
check self-as-full-no-loop test $rc -eq 1
check self-as-full-says grep -q "needs modsign-client-full" "$T/out"
