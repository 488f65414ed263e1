#!/usr/bin/env bats
# modsign-pkcs11.so (docs/PKCS11.md) with the real consumers:
# pkcs11-tool, p11-kit, openssl through libp11's engine.  One daemon for
# the file (its cases only sign and read): keys rsa (a file key, so the
# certificate is known beforehand), ec and other; root is granted rsa
# and ec, nobody rsa alone, other no one.

load ../common
load pkcs11

setup_file() {
	local d=$BATS_FILE_TMPDIR

	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=p11-rsa \
		-keyout "$d/rsa.key" -out "$d/rsa.crt" 2>/dev/null
	cat "$d/rsa.key" "$d/rsa.crt" >"$d/rsa.pem"
	chmod 600 "$d/rsa.pem"
	chmod 755 "$d"
	file_daemon_start --key "rsa=$d/rsa.pem" --key ec=ephemeral:ecdsa-p256 \
		--key other=ephemeral:ecdsa-p256 --allow uid:0=rsa,ec --allow uid:65534=rsa \
		--socket-mode 0666
	MODSIGN_SERVER=unix:$d/sock "$C" cert --key ec >"$d/ec.crt"
	# Two more servers for the slot cases: a (key alpha), b (key beta).
	for s in a:alpha b:beta; do
		start_daemon "$d/${s%:*}" --key "${s#*:}=ephemeral:ecdsa-p256" --allow uid:0 \
			--socket-mode 0666
		echo "$DAEMON_PID" >>"$d/slot-daemons.pid"
		MODSIGN_SERVER=unix:$d/${s%:*} "$C" cert --key "${s#*:}" >"$d/${s#*:}.crt"
	done
}

teardown_file() {
	local p

	for p in $(cat "$BATS_FILE_TMPDIR/slot-daemons.pid"); do stop_daemon "$p"; done
	file_daemon_stop
}

setup() {
	file_daemon_case
	echo "the data a tool signs" >data
	openssl dgst -sha256 -binary data >data.sha256
	echo "the data a tool signs, changed" >tampered
}

p11() { pkcs11-tool --module "$P11" "$@"; }
# sign MECH KEY IN OUT [pkcs11-tool options]
p11sign() { p11 --sign -m "$1" --id "$(hexid "$2")" -i "$3" -o "$4" "${@:5}"; }
pub() { openssl x509 -in "$F/$1.crt" -pubkey -noout >"$1.pub"; echo "$1.pub"; }
# pub_of CERT: its public key into CERT's name with .pub, which is echoed.
pub_of() { openssl x509 -in "$1" -pubkey -noout >"${1%.crt}.pub"; echo "${1%.crt}.pub"; }
# In a pseudo-terminal, so the module's reason goes to its stderr.
tty_run() { script -qec "$*" /dev/null; }

@test "pkcs11-list-objects-granted-only" {
	run p11 --list-slots --list-objects
	assert_success
	assert_output --partial "token label        : modsign"
	assert_output --regexp "Certificate Object; type = X.509 cert
  label:      rsa"
	assert_output --partial "Private Key Object; RSA"
	assert_output --partial "Private Key Object; EC"
	assert_output --partial "label:      ec"
	# Twin: the key root is not granted is no object of its token.
	refute_output --partial "label:      other"
}

@test "pkcs11-certificate-is-the-daemons" {
	p11 --read-object --type cert --id "$(hexid rsa)" -o rsa.der
	openssl x509 -inform DER -in rsa.der -outform PEM -out rsa.pem
	run cmp rsa.pem "$F/rsa.crt"
	assert_success
	# Twin: the EC key's certificate is another.
	run cmp rsa.pem "$F/ec.crt"
	assert_failure
}

@test "pkcs11-sign-rsa-pkcs-digestinfo" {
	{ printf '\x30\x31\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x01\x05\x00\x04\x20'
	  cat data.sha256; } >di
	p11sign RSA-PKCS rsa di sig
	run openssl dgst -sha256 -verify "$(pub rsa)" -signature sig data
	assert_success
	run openssl dgst -sha256 -verify rsa.pub -signature sig tampered
	assert_failure
}

@test "pkcs11-sign-sha256-rsa-pkcs" {
	p11sign SHA256-RSA-PKCS rsa data sig
	run openssl dgst -sha256 -verify "$(pub rsa)" -signature sig data
	assert_success
	run openssl dgst -sha256 -verify rsa.pub -signature sig tampered
	assert_failure
}

@test "pkcs11-sign-sha384-and-512-rsa-pkcs" {
	for h in 384 512; do
		p11sign "SHA$h-RSA-PKCS" rsa data "sig$h"
		run openssl dgst "-sha$h" -verify "$(pub rsa)" -signature "sig$h" data
		assert_success
		run openssl dgst "-sha$h" -verify rsa.pub -signature "sig$h" tampered
		assert_failure
	done
}

@test "pkcs11-sign-ecdsa-digest" {
	p11sign ECDSA ec data.sha256 sig --signature-format openssl
	run openssl dgst -sha256 -verify "$(pub ec)" -signature sig data
	assert_success
	run openssl dgst -sha256 -verify ec.pub -signature sig tampered
	assert_failure
}

@test "pkcs11-sign-ecdsa-sha256-raw-r-s" {
	# PKCS#11's own form: r||s, 64 bytes for P-256.
	p11sign ECDSA-SHA256 ec data sig
	assert_equal "$(stat -c %s sig)" 64
	p11sign ECDSA-SHA256 ec data sig.der --signature-format openssl
	run openssl dgst -sha256 -verify "$(pub ec)" -signature sig.der data
	assert_success
	run openssl dgst -sha256 -verify ec.pub -signature sig.der tampered
	assert_failure
}

@test "pkcs11-hash-and-sign-sends-only-the-digest" {
	head -c 50000000 /dev/urandom >big
	p11sign SHA256-RSA-PKCS rsa big sig
	run grep -c "\"digest\":\"$(sha big)\",\"module\":\"pkcs11:object=rsa\",\"program\":\"pkcs11-tool\"" \
		"$F/modsignd.log"
	assert_output 1
	run openssl dgst -sha256 -verify "$(pub rsa)" -signature sig big
	assert_success
	# Twin: an input never signed has no record.
	head -c 1000 /dev/urandom >unsigned
	run grep -c "\"digest\":\"$(sha unsigned)\"" "$F/modsignd.log"
	assert_output 0
}

@test "pkcs11-key-not-granted-cannot-sign" {
	run p11sign ECDSA other data.sha256 sig
	assert_failure
	assert_output --partial "not found"
	[ ! -s sig ]
	# Twin: the granted key next to it signs.
	run p11sign ECDSA ec data.sha256 sig
	assert_success
}

@test "pkcs11-bogus-digestinfo-refused" {
	# A DigestInfo of SHA-1 (not allowed), and one cut short.
	{ printf '\x30\x21\x30\x09\x06\x05\x2b\x0e\x03\x02\x1a\x05\x00\x04\x14'
	  head -c 20 data.sha256; } >sha1-di
	run tty_run pkcs11-tool --module "$P11" --sign -m RSA-PKCS --id "$(hexid rsa)" -i sha1-di -o sig
	assert_failure
	assert_output --partial "CKM_RSA_PKCS input is not a DigestInfo"
	run grep -c '"key":"rsa".*"result":"ok"' "$F/modsignd.log"
	before=$output
	{ printf '\x30\x31\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x01\x05\x00\x04\x20'
	  head -c 31 data.sha256; } >short-di
	run p11sign RSA-PKCS rsa short-di sig
	assert_failure
	run grep -c '"key":"rsa".*"result":"ok"' "$F/modsignd.log"
	assert_output "$before"
}

@test "pkcs11-huge-input-to-prehashed-mechanism-refused" {
	# pkcs11-tool hands 200 bytes to C_Sign, 1 MB to C_SignUpdate.
	head -c 200 /dev/zero >long
	head -c 1000000 /dev/zero >huge
	for f in long huge; do
		run tty_run pkcs11-tool --module "$P11" --sign -m ECDSA --id "$(hexid ec)" -i $f -o sig
		assert_failure
		assert_output --partial "a digest is expected"
		assert_output --partial "CKR_DATA_LEN_RANGE"
	done
	# Twin: the same bytes through a hash-and-sign mechanism are data.
	run p11sign ECDSA-SHA256 ec huge sig
	assert_success
}

@test "pkcs11-p11-kit-list-modules" {
	# p11-kit reads a user's module files, never root's: as nobody, with
	# a home of its own and a copy of the module it can read.
	mkdir -p h/.config/pkcs11/modules bin
	cp "$P11" bin/
	chmod -R a+rX h bin
	run nobody env HOME="$T/h" p11-kit list-modules
	assert_success
	refute_output --partial "modsign"
	echo "module: $T/bin/modsign-pkcs11.so" >h/.config/pkcs11/modules/modsign.module
	chmod a+r h/.config/pkcs11/modules/modsign.module
	run nobody env HOME="$T/h" p11-kit list-modules
	assert_success
	# p11-kit 0.24 (Debian 12) prints "NAME: PATH", 0.25 (Debian 13)
	# "module: NAME" and "path: PATH".
	assert_output --regexp "(modsign: |module: modsign
 +path: )$T/bin/modsign-pkcs11.so"
	assert_output --partial "library-description: modsignd client"
	assert_output --partial "token: modsign"
	# Nobody is granted rsa alone: through p11-kit's proxy it sees that,
	# from a daemon whose socket it can reach (the file's is in a
	# directory private to root).
	start_daemon "$T/s" --key "rsa=$F/rsa.pem" --key ec=ephemeral:ecdsa-p256 \
		--allow uid:0 --allow uid:65534=rsa --socket-mode 0666
	run nobody env HOME="$T/h" MODSIGN_SERVER="unix:$T/s" pkcs11-tool --module /usr/lib/x86_64-linux-gnu/p11-kit-proxy.so \
		--token-label modsign --list-objects
	assert_output --partial "label:      rsa"
	refute_output --partial "label:      ec"
}

@test "pkcs11-openssl-engine-pkeyutl" {
	export PKCS11_MODULE_PATH=$P11
	run openssl pkeyutl -engine pkcs11 -keyform engine -inkey "pkcs11:object=rsa" \
		-sign -in data.sha256 -pkeyopt digest:sha256 -out sig
	assert_success
	run openssl dgst -sha256 -verify "$(pub rsa)" -signature sig data
	assert_success
	run openssl dgst -sha256 -verify rsa.pub -signature sig tampered
	assert_failure
	# Twin: a key not granted is not there to sign with.
	run openssl pkeyutl -engine pkcs11 -keyform engine -inkey "pkcs11:object=other" \
		-sign -in data.sha256 -out sig2
	assert_failure
}

@test "pkcs11-openssl-engine-cms" {
	export PKCS11_MODULE_PATH=$P11
	run openssl cms -sign -engine pkcs11 -keyform engine -inkey "pkcs11:object=ec;type=private" \
		-signer "$F/ec.crt" -binary -in data -outform DER -out data.p7s -nodetach
	assert_success
	run openssl cms -verify -binary -inform DER -in data.p7s -CAfile "$F/ec.crt" \
		-purpose any -out verified
	assert_success
	run cmp verified data
	assert_success
	# Twin: one byte of the signed content changed, verification fails.
	flip_bit_in data.p7s "the data a tool signs"
	run openssl cms -verify -binary -inform DER -in data.p7s -CAfile "$F/ec.crt" -purpose any
	assert_failure
}

@test "pkcs11-initialize-finalize-and-fork" {
	# Each step's refusal twin is in the script: a second C_Initialize,
	# a forked child before its own C_Initialize, calls after C_Finalize.
	run python3 "$REPO/tests/p11-fork.py" "$P11" ec
	assert_success
	assert_output --partial "PASS p11-child-not-initialized"
	assert_output --partial "PASS p11-parent-signs-after-child"
	refute_output --partial "FAIL"
}

# two_servers [ENTRY...]: a client config naming the file's daemons a
# (key alpha) and b (key beta), both granting root, then ENTRY..., the
# module's only configuration.
two_servers() {
	(umask 077; printf 'server = %s\n' "unix:$F/a" "unix:$F/b" "$@" >"$T/client.conf")
	export MODSIGN_CONFIG=$T/client.conf
	unset MODSIGN_SERVER
	cp "$F/alpha.crt" "$F/beta.crt" .
}

@test "pkcs11-one-slot-per-server" {
	two_servers
	run p11 --list-slots
	assert_success
	assert_output --partial "Slot 0 (0x1): unix:$F/a"
	assert_output --partial "Slot 1 (0x2): unix:$F/b"
	run p11 --slot 1 --list-objects
	assert_success
	assert_output --partial "label:      alpha"
	refute_output --partial "label:      beta"
	run p11 --slot 2 --list-objects
	assert_success
	assert_output --partial "label:      beta"
	refute_output --partial "label:      alpha"
	# Each slot signs with its own server's key.
	p11sign ECDSA-SHA256 alpha data sig.a --slot 1 --signature-format openssl
	run openssl dgst -sha256 -verify "$(pub_of alpha.crt)" -signature sig.a data
	assert_success
	p11sign ECDSA-SHA256 beta data sig.b --slot 2 --signature-format openssl
	run openssl dgst -sha256 -verify "$(pub_of beta.crt)" -signature sig.b data
	assert_success
	# Twin: server a's key asked on server b's slot is not found, and
	# nothing is signed.
	run p11sign ECDSA-SHA256 alpha data sig.x --slot 2
	assert_failure
	assert_output --partial "not found"
	[ ! -s sig.x ]
}

@test "pkcs11-uri-with-and-without-token-attributes" {
	two_servers
	export PKCS11_MODULE_PATH=$P11
	# pkcs11:object=NAME alone: whichever slot holds it.
	run openssl pkeyutl -engine pkcs11 -keyform engine -inkey "pkcs11:object=beta" \
		-sign -in data.sha256 -out sig
	assert_success
	run openssl pkeyutl -verify -pubin -inkey "$(pub_of beta.crt)" -in data.sha256 -sigfile sig
	assert_success
	# With the token's attributes: the serial, SHA-256 of the server
	# entry cut to 16 hex digits, names server b's slot.
	serial_b=$(printf %s "unix:$F/b" | sha256sum | cut -c1-16)
	run p11 --list-token-slots
	assert_output --partial "serial num         : $serial_b"
	run openssl pkeyutl -engine pkcs11 -keyform engine \
		-inkey "pkcs11:token=modsign;serial=$serial_b;object=beta" -sign -in data.sha256 -out sig2
	assert_success
	run openssl pkeyutl -verify -pubin -inkey beta.pub -in data.sha256 -sigfile sig2
	assert_success
	# Twin: server a's key under server b's serial is not there.
	run openssl pkeyutl -engine pkcs11 -keyform engine \
		-inkey "pkcs11:token=modsign;serial=$serial_b;object=alpha" -sign -in data.sha256 -out sig3
	assert_failure
	[ ! -s sig3 ]
}

@test "pkcs11-dead-server-is-an-empty-token" {
	# Slot 3's server is not there: no objects and its reason, while the
	# others still list and sign.
	two_servers "unix:$T/gone"
	run tty_run pkcs11-tool --module "$P11" --slot 3 --list-objects
	assert_output --partial "unix:$T/gone"
	refute_output --partial "label:"
	run p11sign ECDSA-SHA256 beta data sig --slot 2
	assert_success
	# Twin: a key asked on the dead server's slot signs nothing, though
	# another server holds it.
	run p11sign ECDSA-SHA256 beta data sig.x --slot 3
	assert_failure
	[ ! -s sig.x ]
}

@test "pkcs11-interface-3.0" {
	run python3 "$REPO/tests/p11-interface.py" "$P11"
	assert_success
	assert_output --partial "PASS p11-interface-default-is-3.0"
	# The refused twins are in the script: a version, a name, a flag the
	# module does not offer.
	assert_output --partial "PASS p11-interface-version-3.1-refused"
	refute_output --partial "FAIL"
}

@test "pkcs11-sign-after-buffer-too-small-signs-the-data" {
	# C_Sign with a one-byte buffer is CKR_BUFFER_TOO_SMALL and the
	# operation goes on; the call again with room signs the data, not the
	# data hashed twice (review 20: the data was hashed before the size
	# check, so the retry signed data||data).
	run python3 "$REPO/tests/p11-attack.py" "$P11" short-buffer rsa data sig
	assert_success
	run openssl dgst -sha256 -verify "$(pub rsa)" -signature sig data
	assert_success
	# Twin: the signature is not of other data.
	run openssl dgst -sha256 -verify rsa.pub -signature sig tampered
	assert_failure
}

@test "pkcs11-sign-update-wrapping-length-refused" {
	# One byte, then (CK_ULONG)-1 bytes to CKM_ECDSA: the sum wraps to
	# 0, which passed the bound and copied past the digest's buffer.
	run python3 "$REPO/tests/p11-attack.py" "$P11" update-wraps ec
	assert_success
	assert_output --partial "PASS p11-update-wrapping-length-refused"
	# Twin (in the script): the one byte before it is taken.
	assert_output --partial "PASS p11-update-one-byte"
}

@test "pkcs11-object-handle-of-another-slot-refused" {
	# Slot 2's beta, by its handle, in a slot 1 session: no object there,
	# not slot 1's object of the same index (alpha, whose server signs).
	two_servers
	run python3 "$REPO/tests/p11-attack.py" "$P11" cross-slot alpha beta
	assert_success
	assert_output --partial "PASS p11-cross-slot-key-refused"
	assert_output --partial "PASS p11-cross-slot-object-refused"
	# Twin (in the script): each handle signs in its own slot's session.
	assert_output --partial "PASS p11-cross-slot-twin-own-slot-signs-a"
	assert_output --partial "PASS p11-cross-slot-twin-own-slot-signs-b"
}

@test "pkcs11-closed-session-handle-not-reused" {
	# A session closed, another (of slot 2) opened: the stale handle
	# was the first free index, so the same number named the new
	# session, and a thread still holding it signed in another's.
	two_servers
	run python3 "$REPO/tests/p11-attack.py" "$P11" stale-session beta
	assert_success
	assert_output --partial "PASS p11-stale-session-handle-refused"
	# Twin (in the script): the new handle signs.
	assert_output --partial "PASS p11-stale-session-twin-new-handle-signs"
}

@test "pkcs11-fork-while-a-thread-waits-in-a-call" {
	# A thread waits in C_OpenSession on a server that never answers,
	# holding the module's lock, and the process forks: the child's copy
	# of the lock was held by a thread the child does not have, so its
	# C_Initialize waited for ever (killed by SIGALRM after 10 s).
	(umask 077; printf 'server = %s\n' "unix:$T/hang" "unix:$F/b" >"$T/client.conf")
	export MODSIGN_CONFIG=$T/client.conf
	unset MODSIGN_SERVER
	run timeout 60 python3 "$REPO/tests/p11-attack.py" "$P11" fork-mid-call "$T/hang" beta
	assert_success
	assert_output --partial "PASS p11-fork-mid-call-child-initializes"
	# Twin (in the script): the child then signs on the live slot.
	assert_output --partial "PASS p11-fork-mid-call-twin-child-signs"
}

@test "pkcs11-fork-while-a-thread-loads-libssl" {
	# A thread's first tls: server loads libssl (lib/dlopen.c, its lock
	# held; here held for good by tests/preload-dlopen-hold.c), and the
	# process forks: the child's copy of that lock was held by a thread
	# the child does not have, so its own first TLS connection, after
	# its C_Initialize, waited for ever (killed by SIGALRM after 10 s).
	# Nothing listens on port 1: the child's connection is refused once
	# libssl is loaded.
	gcc -shared -fPIC -O2 -o "$T/hold.so" "$REPO/tests/preload-dlopen-hold.c"
	(umask 077; printf 'server = %s\n' tls:127.0.0.1:1 "unix:$F/b" >"$T/client.conf")
	export MODSIGN_CONFIG=$T/client.conf
	unset MODSIGN_SERVER
	run env LD_PRELOAD="$T/hold.so" HOLD_DLOPEN=libssl.so.3 HOLD_DLOPEN_MARK="$T/held" \
		timeout 60 python3 "$REPO/tests/p11-attack.py" "$P11" fork-mid-load "$T/held" beta
	assert_success
	assert_output --partial "PASS p11-fork-mid-load-thread-inside-the-load"
	assert_output --partial "PASS p11-fork-mid-load-child-loads-libssl"
	# Twin (in the script): the child then signs on the live slot.
	assert_output --partial "PASS p11-fork-mid-load-twin-child-signs"
}

# program_daemon: a daemon with an audit log and a transparency log.
program_daemon() {
	openssl genpkey -algorithm ed25519 -out "$T/log.pem" 2>/dev/null
	chmod 600 "$T/log.pem"
	start_daemon "$T/s" --key ec=ephemeral:ecdsa-p256 --allow uid:0 \
		--audit-log "$T/audit.jsonl" --transparency-log "$T/log" --log-key "$T/log.pem" \
		--log-origin example.org/p11
	export MODSIGN_SERVER=unix:$T/s
}

@test "pkcs11-audit-and-tlog-name-the-program" {
	program_daemon
	p11sign ECDSA-SHA256 ec data sig
	run grep -c '"module":"pkcs11:object=ec","program":"pkcs11-tool","result":"ok"' audit.jsonl
	assert_output 1
	run grep -c '"module":"pkcs11:object=ec","program":"pkcs11-tool","client":"uid:0"' \
		log/tile/entries/000.p/1
	assert_output 1
	# Twin: a request of the client names no program.
	fresh m.ko
	"$C" sign --key ec m.ko
	run grep -c '"module":"[^"]*m.ko","result":"ok"' audit.jsonl
	assert_output 1
	run grep -c '"program"' audit.jsonl
	assert_output 1
}

@test "pkcs11-program-name-sanitised-or-refused" {
	# A caller named with an escape sequence, a newline and 100 bytes
	# more: the module sends one word of printable ASCII, cut at 64.
	mkdir bin
	name=$(printf 'evil\033[31m\nname%0100d' 0)
	ln -s "$(command -v pkcs11-tool)" "bin/$name"
	run "bin/$name" --module "$P11" --sign -m ECDSA-SHA256 --id "$(hexid ec)" -i data -o sig
	assert_success
	want=$(printf 'evil_[31m_name%0100d' 0 | head -c 64)
	run grep -cF "\"program\":\"$want\",\"result\":\"ok\"" "$F/modsignd.log"
	assert_output 1
	# Twin: a peer sending such a name itself is refused, and the
	# record of the refusal is one whole JSON line, without the name.
	run python3 -c '
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
req = {"v": 1, "id": 5, "op": "sign", "key": "ec", "hash": "sha256", "digest": "00" * 32,
       "module": "raw-refused.ko", "program": "evil\x1b[31m\nname"}
b = json.dumps(req).encode(); s.sendall(struct.pack(">I", len(b)) + b)
n = struct.unpack(">I", s.recv(4))[0]; d = b""
while len(d) < n: d += s.recv(n - len(d))
print(json.loads(d)["error"])' "$F/sock"
	assert_output --partial 'bad "program"'
	run python3 -c 'import json,sys
lines=[l for l in open(sys.argv[1], encoding="utf-8") if "raw-refused.ko" in l]
r=[json.loads(l[l.index("{"):]) for l in lines]
assert len(r)==1 and "\"program\"" in r[0]["result"] and "program" not in r[0], r
print("whole")' "$F/modsignd.log"
	assert_success
	assert_output "whole"
}

# The kernel's sign-file, unpatched, with a CONFIG_MODULE_SIG_KEY-style URI.
p11_sign_file() { # HASH URI CERT MODULE
	OPENSSL_MODULES=$PROV PKCS11_PROVIDER_MODULE=$P11 "$FIX/sign-file" "$@"
}

@test "pkcs11-kernel-sign-file-byte-identical" {
	PROV=$(provider_dir) || skip "no pkcs11-provider (bookworm-backports unreachable)"
	for m in $(real_modules 3); do
		n=$(basename "$m")
		cp "$m" "p11-$n"
		"$C" strip "p11-$n" >/dev/null
		cp "p11-$n" "ref-$n"
		"$FIX/sign-file" sha256 "$F/rsa.pem" "$F/rsa.crt" "ref-$n"
		PKCS11_PROVIDER_DEBUG=file:$T/provider.log,level:1 \
			run p11_sign_file sha256 "pkcs11:object=rsa" "$F/rsa.crt" "p11-$n"
		assert_success
		run cmp "ref-$n" "p11-$n"
		assert_success
		run cms_verify_module "p11-$n" "$F/rsa.crt"
		assert_success
	done
	grep -q '"module":"pkcs11:object=rsa","program":"sign-file","result":"ok"' "$F/modsignd.log"
	# The provider took the module's PKCS#11 3.0 interface (C_GetInterface),
	# never falling back to C_GetFunctionList.
	grep -q "Populating Interfaces with 'PKCS 11', version 3.0" provider.log
	run grep -c "Falling back to C_GetFunctionList" provider.log
	assert_output 0
	# Twin: a byte of the signed module's code changed, it no longer verifies.
	flip_bit_at "p11-$n" 100
	run cms_verify_module "p11-$n" "$F/rsa.crt"
	assert_failure
}

@test "pkcs11-kernel-sign-file-ecdsa-and-refused-key" {
	PROV=$(provider_dir) || skip "no pkcs11-provider (bookworm-backports unreachable)"
	m=$(real_modules 1)
	cp "$m" ec.ko
	"$C" strip ec.ko >/dev/null
	cp ec.ko other.ko
	run p11_sign_file sha256 "pkcs11:object=ec" "$F/ec.crt" ec.ko
	assert_success
	run "$C" verify --key ec ec.ko
	assert_success
	run "$C" verify --key rsa ec.ko
	assert_failure
	# Twin: the key root is not granted: sign-file fails, the module
	# stays unsigned.
	"$C" cert --key other >other.crt 2>/dev/null || openssl x509 -in "$F/ec.crt" -out other.crt
	run p11_sign_file sha256 "pkcs11:object=other" other.crt other.ko
	assert_failure
	run "$C" verify --key other other.ko
	assert_failure
}
