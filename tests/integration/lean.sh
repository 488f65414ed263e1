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

# Linked as make built it: no shared objects at all unless CLIENT_LINK=dynamic
# (or a sanitizer build); in every build, never libcrypto's or libssl's.
readelf -d "$CLIENT" >"$T/lean.dyn" 2>&1
readelf -d "$FULL" >"$T/full.dyn" 2>&1
if [[ $B == */san ]] || [ "${CLIENT_LINK:-static}" = dynamic ]; then
	pass "lean-client-static (not a static build)"
else
	refute lean-client-static grep -q "(NEEDED)" "$T/lean.dyn"
fi
refute lean-client-no-libcrypto grep -Eq "NEEDED.*lib(crypto|ssl)" "$T/lean.dyn"
check full-client-links-libssl grep -Eq "NEEDED.*libssl" "$T/full.dyn"

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

# The installed layout: bin/modsign-client finds libexec/modsign/modsign-client-full.
mkdir -p "$T/inst/bin" "$T/inst/libexec/modsign"
cp "$CLIENT" "$T/inst/bin/modsign-client"
cp "$FULL" "$T/inst/libexec/modsign/modsign-client-full"
check installed-layout-verify "$T/inst/bin/modsign-client" verify --cert "$T/cert.pem" "$T/a.ko"
"$T/inst/bin/modsign-client" status >"$T/status" 2>&1
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
