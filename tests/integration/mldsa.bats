#!/usr/bin/env bats
# ML-DSA (FIPS 204) keys, issue 31: one-time mldsa44/65/87 keys and a PEM
# file key; the pure form made from the module's external mu (the client
# sends mu and tr, the daemon signs mu), which the 7.x kernel verifies
# without signed attributes, and the signed-attributes form (sign
# --signed-attrs, sign-file -a) for kernels built with
# CONFIG_PKCS7_WAIVE_AUTHATTRS_REJECTION_FOR_MLDSA.  openssl checks what
# the client checks: pkeyutl -verify -rawin of the raw signature over the
# whole module (pure), cms -verify (signed attributes).  Every positive
# case has a tampered, wrong-key or refused twin.
#
# Needs OpenSSL >= 3.5: run in the Debian 13 lane (tests/release/lane.sh).
# Where OpenSSL has no ML-DSA (Debian 12, tests/run.sh) only the cases
# for that run: the daemon refuses such a key in one line at start-up.
#
# One daemon with every key for the cases that only sign and read
# (setup_file): ML-DSA key generation takes milliseconds.

load ../common

have_mldsa() { openssl list -public-key-algorithms 2>/dev/null | grep -q ML-DSA-65; }
need_mldsa() { have_mldsa || skip "OpenSSL $(openssl version | cut -d' ' -f2) has no ML-DSA"; }

setup_file() {
	local F=$BATS_FILE_TMPDIR

	have_mldsa || return 0
	make_pem_key "$F/file.pem" ml-dsa-65 "modsign ML-DSA file key"
	file_daemon_start --key default=ephemeral:mldsa65 --key m44=ephemeral:mldsa44 \
		--key m87=ephemeral:mldsa87 --key other=ephemeral:mldsa65 \
		--key rsa=ephemeral:rsa2048 --key "file=$F/file.pem"
	cp "$(real_modules 1)" "$F/orig.ko"
	"$CLIENT" --server "unix:$F/sock" strip "$F/orig.ko"
	for k in default m44 m87 other rsa file; do
		"$CLIENT" --server "unix:$F/sock" cert --key "$k" >"$F/$k.pem"
	done
}

teardown_file() {
	have_mldsa && file_daemon_stop
	return 0
}

setup() {
	file_daemon_case
	have_mldsa && cp "$F/orig.ko" orig.ko
	return 0
}

# raw_sig P7S OUT: the signature value of the PKCS#7 (its last OCTET STRING).
raw_sig() {
	local line off hl l
	line=$(openssl asn1parse -inform DER -in "$1" | grep 'prim: OCTET STRING' | tail -n 1)
	off=${line%%:*} hl=$(sed -E 's/.*hl= *([0-9]+).*/\1/' <<<"$line")
	l=$(sed -E 's/.* l= *([0-9]+).*/\1/' <<<"$line")
	dd if="$1" of="$2" bs=1 skip=$((${off// /} + hl)) count="$l" status=none
}

# sign_request KEY MU TR: a raw sign request with "mu" and "tr" (hex),
# the daemon's reply on stdout.
sign_request() {
	python3 - "$F/sock" "$@" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
req = {"v": 1, "id": 7, "op": "sign", "key": sys.argv[2], "mu": sys.argv[3],
       "tr": sys.argv[4], "module": "raw.ko"}
p = json.dumps(req).encode()
s.sendall(struct.pack('>I', len(p)) + p)
n = struct.unpack('>I', s.recv(4, socket.MSG_WAITALL))[0]
print(s.recv(n, socket.MSG_WAITALL).decode())
PY
}

# tr_of CERT: tr = SHAKE256(public key, 64) in hex, by python's hashlib.
tr_of() {
	openssl x509 -in "$1" -noout -pubkey | openssl pkey -pubin -outform DER |
		python3 -c 'import hashlib,sys
d = sys.stdin.buffer.read()
# SubjectPublicKeyInfo: the key is the BIT STRING at the end
import re
n = {1334: 1312, 1974: 1952, 2614: 2592}[len(d)]
print(hashlib.shake_256(d[-n:]).hexdigest(64))'
}

@test "status-shows-mldsa-algorithms" {
	need_mldsa
	run "$C" status
	assert_success
	assert_output --partial "default (default): mldsa65, ephemeral"
	assert_output --partial "m44: mldsa44, ephemeral"
	assert_output --partial "m87: mldsa87, ephemeral"
	assert_output --partial "file: mldsa65, file"
}

@test "unknown-mldsa-variant-refused" {
	run "$MODSIGND" --listen "unix:$T/s" --key k=ephemeral:mldsa99
	assert_failure
	assert_output --partial "unknown key algorithm"
}

@test "pure-form-verifies-each-variant" {
	need_mldsa
	for k in default m44 m87 file; do
		cp orig.ko "$k.ko"
		"$C" sign --key "$k" "$k.ko"
		run "$C" verify --cert "$F/$k.pem" "$k.ko"
		assert_success
		# twin: another key's certificate
		run "$C" verify --cert "$F/other.pem" "$k.ko"
		assert_failure
		assert_output --partial "signed by a different key"
	done
}

@test "pure-form-tampered-module-rejected" {
	need_mldsa
	"$C" sign orig.ko
	flip_bit_at orig.ko 200
	run "$C" verify --cert "$F/default.pem" orig.ko
	assert_failure
	assert_output --partial "BAD signature"
}

@test "pure-form-openssl-verifies-whole-module" {
	need_mldsa
	cp orig.ko body
	"$C" sign-file -d sha512 modsign:default "$F/default.pem" orig.ko
	raw_sig orig.ko.p7s raw.sig
	openssl x509 -in "$F/default.pem" -noout -pubkey >pub.pem
	run openssl pkeyutl -verify -pubin -inkey pub.pem -rawin -in body -sigfile raw.sig
	assert_success
	# twin: one byte more
	printf x >>body
	run openssl pkeyutl -verify -pubin -inkey pub.pem -rawin -in body -sigfile raw.sig
	assert_failure
}

@test "pure-form-signeddata-fields" {
	need_mldsa
	"$C" sign-file -d sha512 modsign:m87 "$F/m87.pem" orig.ko
	run openssl asn1parse -inform DER -in orig.ko.p7s
	assert_output --partial ":ML-DSA-87"
	assert_output --partial ":sha512"
	refute_output --partial ":messageDigest"
	refute_output --partial ":ML-DSA-65"
}

@test "signed-attrs-form-openssl-cms-verifies" {
	need_mldsa
	cp orig.ko body
	"$C" sign-file -a -d sha512 modsign:default "$F/default.pem" orig.ko
	run openssl asn1parse -inform DER -in orig.ko.p7s
	assert_output --partial ":messageDigest"
	run cms_verify orig.ko.p7s body "$F/default.pem"
	assert_success
	printf x >>body
	run cms_verify orig.ko.p7s body "$F/default.pem"
	assert_failure
}

@test "signed-attrs-form-sign-and-verify" {
	need_mldsa
	"$C" sign --signed-attrs orig.ko
	run "$C" verify --cert "$F/default.pem" orig.ko
	assert_success
	run "$C" verify --cert "$F/other.pem" orig.ko
	assert_failure
	flip_bit_at orig.ko 200
	run "$C" verify --cert "$F/default.pem" orig.ko
	assert_failure
}

@test "mu-request-with-the-keys-tr-signed" {
	need_mldsa
	local mu
	mu=$(python3 -c 'print("ab" * 64)')
	run sign_request default "$mu" "$(tr_of "$F/default.pem")"
	assert_output --partial '"ok":true'
	assert_output --partial '"signature"'
	# the audit record says what the digest is
	grep -q '"hash":"mldsa-mu","digest":"'"$mu"'"' "$F/modsignd.log"
}

@test "mu-request-with-another-certificates-tr-refused" {
	need_mldsa
	local mu
	mu=$(python3 -c 'print("ab" * 64)')
	run sign_request default "$mu" "$(tr_of "$F/other.pem")"
	assert_output --partial "is not key default's"
	refute_output --partial '"signature"'
	grep -q "is not key default's" "$F/modsignd.log"
}

@test "mu-request-for-an-rsa-key-refused" {
	need_mldsa
	local mu
	mu=$(python3 -c 'print("ab" * 64)')
	run sign_request rsa "$mu" "$(tr_of "$F/default.pem")"
	assert_output --partial "not an ML-DSA key"
	refute_output --partial '"signature"'
}

@test "sign-file-forms-and-batch" {
	need_mldsa
	cp orig.ko a.ko; cp orig.ko b.ko; cp orig.ko c.ko
	"$C" sign-file -p sha512 modsign:default "$F/default.pem" a.ko
	[ -s a.ko.p7s ]
	"$C" sign-file -k sha512 modsign:default "$F/default.pem" b.ko
	printf '%s\n' c.ko | "$C" sign-file --batch sha512 modsign:default "$F/default.pem"
	run "$C" verify --cert "$F/default.pem" a.ko b.ko c.ko
	assert_success
	# -s: a signature made before, attached once it verifies; twin: the
	# wrong certificate
	cp orig.ko d.ko; cp orig.ko e.ko
	"$C" sign-file -s a.ko.p7s sha512 "$F/default.pem" d.ko
	run "$C" verify --cert "$F/default.pem" d.ko
	assert_success
	run "$C" sign-file -s a.ko.p7s sha512 "$F/other.pem" e.ko
	assert_failure
	# twin: a batch pinned to a certificate the daemon's key is not
	cp orig.ko f.ko
	run "$C" sign-file sha512 modsign:default "$F/other.pem" f.ko
	assert_failure
}

@test "detached-then-attach" {
	need_mldsa
	mkdir sigs
	"$C" sign --detached sigs orig.ko
	cp orig.ko g.ko
	run "$C" attach --from sigs --cert "$F/default.pem" orig.ko
	assert_success
	run "$C" verify --cert "$F/default.pem" orig.ko
	assert_success
	# twin: attached only once it verifies with the certificate given
	run "$C" attach --from sigs --cert "$F/other.pem" g.ko
	assert_failure
}

@test "mldsa-key-refused-without-openssl-3.5" {
	have_mldsa && skip "this OpenSSL has ML-DSA"
	run "$MODSIGND" --listen "unix:$T/s" --key k=ephemeral:mldsa65
	assert_failure
	assert_output --partial "ML-DSA keys need OpenSSL >= 3.5"
	[ "${#lines[@]}" -eq 1 ]
}

@test "mldsa-check-config-refuses-without-openssl-3.5" {
	have_mldsa && skip "this OpenSSL has ML-DSA"
	: >empty.conf
	run "$MODSIGND" --config empty.conf --check-config --listen "unix:$T/s" \
		--key k=ephemeral:mldsa65
	assert_failure
	assert_output --partial "key k=ephemeral:mldsa65: ML-DSA keys need OpenSSL >= 3.5"
	[ "${#lines[@]}" -eq 1 ]
}

@test "check-config-accepts-what-this-openssl-makes" {
	# twin: a one-time key this OpenSSL can make passes; an unknown one not
	: >empty.conf
	run "$MODSIGND" --config empty.conf --check-config --listen "unix:$T/s" \
		--key k=ephemeral:ecdsa-p384
	assert_success
	if have_mldsa; then
		run "$MODSIGND" --config empty.conf --check-config --listen "unix:$T/s" \
			--key k=ephemeral:mldsa65
		assert_success
	fi
	run "$MODSIGND" --config empty.conf --check-config --listen "unix:$T/s" \
		--key k=ephemeral:rsa
	assert_failure
	assert_output --partial "unknown key algorithm"
}
