#!/usr/bin/env bats
# The main job against a real daemon: one-time RSA (2-, 3- and 4-prime)
# and ECDSA keys and a PEM file key; sign, verify, re-sign, strip; openssl
# and modinfo agree; every positive check has a tampered twin that must
# fail.
#
# One daemon with every key for the cases that only sign and read
# (setup_file): making its one-time RSA-4096 (4-prime) and RSA-3072
# (3-prime) keys takes seconds, more under the sanitizers, and the cases
# do not change it.  Each case copies the stripped module into its own $T
# and signs what it needs there.  The cases that stop a daemon, or need
# none, start their own.

load ../common

setup_file() {
	local F=$BATS_FILE_TMPDIR

	make_pem_key "$F/file.pem" rsa:2048 "modsign file key"
	file_daemon_start --key default=ephemeral:rsa2048 --key p384=ephemeral:ecdsa-p384 \
		--key p256=ephemeral:ecdsa-p256 --key "file=$F/file.pem" --key mp=ephemeral:rsa4096-4p \
		--key mp3=ephemeral:rsa3072-3p \
		--organization "modsign tests" --common-name "one-time test key" --email "t@example.org"
	# Debian's module arrives signed by Debian's key: remove that first.
	cp "$(real_modules 1)" "$F/orig.ko"
	"$CLIENT" --server "unix:$F/sock" strip "$F/orig.ko"
}

teardown_file() {
	file_daemon_stop
}

setup() {
	file_daemon_case
	cp "$F/orig.ko" orig.ko
}

# orig_signed KEY HASH FILE: orig.ko, signed by KEY with HASH, as FILE.
orig_signed() {
	cp orig.ko "$3"
	"$C" sign --key "$1" --hash "$2" "$3"
}

# is_ok / is_refused CHECK COMMAND...: one of several checks in a case
# passes when COMMAND succeeds (is_ok) or fails (is_refused, a tampered
# twin); on failure the case's first line of diagnostics names CHECK.
is_ok() {
	local check=$1
	shift
	run "$@"
	[ "$status" -eq 0 ] || fail "$check: exit $status: $(tail -n 2 <<<"$output")"
}
is_refused() {
	local check=$1
	shift
	run "$@"
	[ "$status" -ne 0 ] || fail "$check: succeeded, must not"
}

# ---- status -----------------------------------------------------------------
# status lists every key with algorithm, backend, subject and key id.

@test "status-lists-keys" {
	run "$C" status
	assert_success
	assert_output --partial "key p384: ecdsa-p384, ephemeral"
}

@test "status-default-key" {
	run "$C" status
	assert_output --partial "key default (default): rsa2048, ephemeral"
}

# A multi-prime key says so; a 2-prime one (the file key) does not.
@test "status-multi-prime-key" {
	run "$C" status
	assert_output --partial "key mp: rsa4096-4p, ephemeral"
}

@test "status-three-prime-key" {
	run "$C" status
	assert_output --partial "key mp3: rsa3072-3p, ephemeral"
}

@test "status-two-prime-file-key" {
	run "$C" status
	assert_output --partial "key file: rsa2048, file"
}

@test "status-without-daemon" {
	run "$C" --server "unix:$T/nosuch" status
	assert_failure
}

# ---- certificates -----------------------------------------------------------
# The certificate of a one-time key carries the kernel's extensions and the
# subject the options asked for.

cert_text() {
	"$C" cert >default.pem
	openssl x509 -in default.pem -noout -text >cert.txt
}

@test "cert-basic-constraints" {
	cert_text
	run grep -A1 "Basic Constraints: critical" cert.txt
	assert_success
}

@test "cert-ca-false" {
	cert_text
	run grep -q "CA:FALSE" cert.txt
	assert_success
}

@test "cert-key-usage" {
	cert_text
	run grep -A1 "Key Usage" cert.txt
	assert_success
}

@test "cert-skid" {
	cert_text
	run grep -q "Subject Key Identifier" cert.txt
	assert_success
}

@test "cert-akid" {
	cert_text
	run grep -q "Authority Key Identifier" cert.txt
	assert_success
}

@test "cert-subject" {
	cert_text
	run grep -q "Subject: O = modsign tests, CN = one-time test key, emailAddress = t@example.org" cert.txt
	assert_success
}

@test "cert-der-is-file-key" {
	"$C" cert --key file --der >file.der
	openssl x509 -in "$F/file.pem.crt" -outform DER >want.der
	run cmp file.der want.der
	assert_success
}

# ---- sign and verify with every key and hash --------------------------------
# sign_verify KEY HASH: the checks the old suite ran for each KEY-HASH
# (sign, verify, openssl-cms-verify, body-unchanged) and their tampered
# twins (a changed body, a changed signature, another key's certificate,
# openssl on a changed body), one explicit assertion each.
sign_verify() {
	local key=$1 hash=$2 other=default

	[ "$key" = default ] && other=p384
	"$C" cert --key "$key" >key.crt
	"$C" cert --key "$other" >other.crt
	cp orig.ko m.ko
	is_ok sign "$C" sign --key "$key" --hash "$hash" m.ko
	is_ok verify "$C" verify --cert key.crt m.ko
	# openssl agrees, from the module's own bytes.
	split_module m.ko m.body m.p7
	is_ok openssl-cms-verify cms_verify m.p7 m.body key.crt
	is_ok body-unchanged cmp m.body orig.ko
	# tampered twins
	cp m.ko bad-body.ko
	flip_bit_at bad-body.ko 1000
	is_refused verify-rejects-changed-body "$C" verify --cert key.crt bad-body.ko
	cp m.ko bad-sig.ko
	flip_bit_at bad-sig.ko -60
	is_refused verify-rejects-changed-signature "$C" verify --cert key.crt bad-sig.ko
	is_refused verify-rejects-other-key "$C" verify --cert other.crt m.ko
	is_refused openssl-rejects-changed-body cms_verify m.p7 bad-body.ko key.crt
}

@test "sign-verify default-sha256" {
	sign_verify default sha256
}

@test "sign-verify default-sha384" {
	sign_verify default sha384
}

@test "sign-verify default-sha512" {
	sign_verify default sha512
}

@test "sign-verify p384-sha256" {
	sign_verify p384 sha256
}

@test "sign-verify p384-sha384" {
	sign_verify p384 sha384
}

@test "sign-verify p384-sha512" {
	sign_verify p384 sha512
}

@test "sign-verify p256-sha256" {
	sign_verify p256 sha256
}

@test "sign-verify p256-sha384" {
	sign_verify p256 sha384
}

@test "sign-verify p256-sha512" {
	sign_verify p256 sha512
}

@test "sign-verify file-sha256" {
	sign_verify file sha256
}

@test "sign-verify file-sha384" {
	sign_verify file sha384
}

@test "sign-verify file-sha512" {
	sign_verify file sha512
}

@test "sign-verify mp-sha256" {
	sign_verify mp sha256
}

@test "sign-verify mp-sha384" {
	sign_verify mp sha384
}

@test "sign-verify mp-sha512" {
	sign_verify mp sha512
}

@test "sign-verify mp3-sha256" {
	sign_verify mp3 sha256
}

@test "sign-verify mp3-sha384" {
	sign_verify mp3 sha384
}

@test "sign-verify mp3-sha512" {
	sign_verify mp3 sha512
}

# SHA-3 (CONFIG_MODULE_SIG_SHA3_*, kernels 6.7 and later), for each kind
# of key: RSA (2-prime, multi-prime, a PEM file) and ECDSA on both curves.
@test "sign-verify default-sha3-256" {
	sign_verify default sha3-256
}

@test "sign-verify default-sha3-384" {
	sign_verify default sha3-384
}

@test "sign-verify default-sha3-512" {
	sign_verify default sha3-512
}

@test "sign-verify p384-sha3-256" {
	sign_verify p384 sha3-256
}

@test "sign-verify p384-sha3-384" {
	sign_verify p384 sha3-384
}

@test "sign-verify p384-sha3-512" {
	sign_verify p384 sha3-512
}

@test "sign-verify p256-sha3-256" {
	sign_verify p256 sha3-256
}

@test "sign-verify file-sha3-384" {
	sign_verify file sha3-384
}

@test "sign-verify mp-sha3-512" {
	sign_verify mp sha3-512
}

# rename_digest_oid MOD: in MOD's signature, the digest algorithm
# SHA-256 renamed SHA3-256 (their OIDs differ in the last byte only),
# both places it is named; the signature value left as it was.
rename_digest_oid() {
	python3 - "$1" <<'PY'
import struct, sys
f = sys.argv[1]; d = bytearray(open(f, 'rb').read())
magic = b"~Module signature appended~\n"
n = struct.unpack(">I", d[-len(magic)-4:-len(magic)])[0]
end = len(d) - len(magic) - 12
sig = bytes(d[end - n:end])
sha256 = bytes.fromhex("0609608648016503040201")
sha3_256 = bytes.fromhex("0609608648016503040208")
assert sig.count(sha256) == 2, sig.count(sha256)
d[end - n:end] = sig.replace(sha256, sha3_256)
open(f, 'wb').write(d)
PY
}

@test "sha3-claimed-over-sha256-refused" {
	# A signature that says SHA3-256 but was made over the SHA-256
	# digest: verify hashes as the signature says and must refuse, for
	# RSA (the DigestInfo names SHA-256) and ECDSA (a bare digest).
	local key
	for key in default p256; do
		"$C" cert --key "$key" >"$key.crt"
		orig_signed "$key" sha256 "$key.ko"
		is_ok "$key-sha256-verifies" "$C" verify --cert "$key.crt" "$key.ko"
		cp "$key.ko" "$key-liar.ko"
		rename_digest_oid "$key-liar.ko"
		run "$C" verify --cert "$key.crt" "$key-liar.ko"
		[ "$status" -ne 0 ] || fail "$key: a SHA-256 signature passed as SHA3-256"
		assert_output --partial "BAD signature"
		# The twin of the twin: renamed back it verifies again, so the
		# refusal was the renaming's and nothing else's.
		python3 -c 'import sys; f=sys.argv[1]; d=open(f,"rb").read(); open(f,"wb").write(d.replace(bytes.fromhex("0609608648016503040208"), bytes.fromhex("0609608648016503040201")))' "$key-liar.ko"
		is_ok "$key-renamed-back-verifies" "$C" verify --cert "$key.crt" "$key-liar.ko"
	done
}

@test "sha3-verify-names-the-hash" {
	orig_signed p384 sha3-384 m.ko
	"$C" cert --key p384 >p384.crt
	run "$C" verify --cert p384.crt m.ko
	assert_success
	assert_output "m.ko: OK (sha3-384)"
}

# ---- modinfo ----------------------------------------------------------------
# modinfo reads what the kernel will: signer, key, hash.

modinfo_p384() {
	orig_signed p384 sha384 m.ko
	modinfo m.ko >modinfo.txt
}

@test "modinfo-signer" {
	modinfo_p384
	run grep -q "^signer: *one-time test key" modinfo.txt
	assert_success
}

@test "modinfo-hash" {
	modinfo_p384
	run grep -q "^sig_hashalgo: *sha384" modinfo.txt
	assert_success
}

@test "modinfo-sig-key" {
	modinfo_p384
	run grep -q "^sig_key: *[0-9A-F:]*$" modinfo.txt
	assert_success
}

@test "modinfo-sig-key-is-serial" {
	modinfo_p384
	"$C" cert --key p384 >p384.crt
	serial=$(openssl x509 -in p384.crt -noout -serial | cut -d= -f2)
	run bash -c "grep '^sig_key' modinfo.txt | tr -d ':' | grep -qi '$serial'"
	assert_success
}

@test "modinfo-unsigned-has-no-signer" {
	modinfo orig.ko >modinfo.txt
	run grep -q "^signer:" modinfo.txt
	assert_failure
}

# ---- --keyid ----------------------------------------------------------------
# The signer is named by subjectKeyIdentifier.  (kmod's modinfo cannot
# name an SKID signer; the kernel can.)

keyid_signed() {
	cp orig.ko keyid.ko
	"$C" sign --keyid keyid.ko
	"$C" cert >default.pem
	split_module keyid.ko keyid.body keyid.p7
}

@test "keyid-verify" {
	keyid_signed
	run "$C" verify --cert default.pem keyid.ko
	assert_success
}

@test "keyid-signer-is-skid" {
	keyid_signed
	skid=$(openssl x509 -in default.pem -noout -ext subjectKeyIdentifier | tail -n1 | tr -d ' :' | tr A-F a-f)
	run bash -c "od -An -tx1 -v keyid.p7 | tr -d ' \n' | grep -q '8014$skid'"
	assert_success
}

@test "keyid-in-signer-version-3" {
	keyid_signed
	run bash -c "openssl cms -cmsout -print -inform DER -in keyid.p7 | grep -q 'subjectKeyIdentifier'"
	assert_success
}

# ---- re-signing -------------------------------------------------------------
# Re-signing replaces the signature, never stacks a second one.

resigned() {
	orig_signed default sha256 resign.ko
	"$C" sign --key p384 --hash sha512 resign.ko
}

@test "resign-verifies-new-key" {
	resigned
	"$C" cert --key p384 >p384.crt
	run "$C" verify --cert p384.crt resign.ko
	assert_success
}

@test "resign-old-key-gone" {
	resigned
	"$C" cert >default.pem
	run "$C" verify --cert default.pem resign.ko
	assert_failure
}

@test "resign-one-signature" {
	resigned
	assert_equal "$(grep -c -a "~Module signature appended~" resign.ko)" 1
}

@test "resign-body-is-original" {
	resigned
	split_module resign.ko resign.body resign.p7
	run cmp resign.body orig.ko
	assert_success
}

@test "sign-twice-same-size" {
	orig_signed default sha256 once.ko
	cp once.ko twice.ko
	"$C" sign twice.ko
	assert_equal "$(stat -c %s twice.ko)" "$(stat -c %s once.ko)"
}

# ---- strip ------------------------------------------------------------------
# strip gives back the original bytes; an unsigned module does not verify.

@test "strip" {
	orig_signed default sha256 strip.ko
	run "$C" strip strip.ko
	assert_success
}

@test "strip-restores-original" {
	orig_signed default sha256 strip.ko
	"$C" strip strip.ko
	run cmp strip.ko orig.ko
	assert_success
}

@test "verify-unsigned" {
	orig_signed default sha256 strip.ko
	"$C" strip strip.ko
	"$C" cert >default.pem
	run "$C" verify --cert default.pem strip.ko
	assert_failure
}

@test "strip-unsigned-is-noop" {
	orig_signed default sha256 strip.ko
	"$C" strip strip.ko
	run "$C" strip strip.ko
	assert_success
	run cmp strip.ko orig.ko
	assert_success
}

# ---- files keep their mode and owner ----------------------------------------
# Mode and owner are kept; no temporary file is left behind.

mode_signed() {
	cp orig.ko mode.ko
	chmod 0640 mode.ko
	chown 65534:65534 mode.ko
	"$C" sign mode.ko
}

@test "keeps-mode" {
	mode_signed
	assert_equal "$(stat -c %a mode.ko)" 640
}

@test "keeps-owner" {
	mode_signed
	assert_equal "$(stat -c %u:%g mode.ko)" 65534:65534
}

@test "no-temp-files-left" {
	mode_signed
	run bash -c "ls -a | grep modsign-"
	assert_failure
}

# ---- verify --key -----------------------------------------------------------
# verify --key fetches the certificate from the daemon.

@test "verify-with-daemon-cert" {
	orig_signed p384 sha256 m.ko
	run "$C" verify --key p384 m.ko
	assert_success
}

@test "verify-with-daemon-cert-other-key" {
	orig_signed p384 sha256 m.ko
	run "$C" verify --key default m.ko
	assert_failure
}

# ---- many modules in one invocation -----------------------------------------

many() {
	mkdir many
	cp $(real_modules 40) many/
	"$C" cert --key p384 >p384.crt
}

@test "sign-many" {
	many
	run "$C" sign --key p384 many/*.ko
	assert_success
	assert_equal "$(ls many/*.ko | wc -l)" 40
}

@test "verify-many" {
	many
	"$C" sign --key p384 many/*.ko
	run "$C" verify --cert p384.crt many/*.ko
	assert_success
}

@test "verify-many-one-tampered" {
	many
	"$C" sign --key p384 many/*.ko
	flip_bit_at "$(ls many/*.ko | head -n1)" 2000
	run "$C" verify --cert p384.crt many/*.ko
	assert_failure
}

# ---- servers ----------------------------------------------------------------
# MODSIGN_SERVER and --server agree; a list falls over to the next one.

@test "server-fallback" {
	run "$C" --server "unix:$T/nosuch" --server "unix:$F/sock" status
	assert_success
}

@test "server-fallback-says-which" {
	run "$C" --server "unix:$T/nosuch" --server "unix:$F/sock" status
	assert_output --partial "server: unix:$F/sock"
}

# ---- one-time keys die with the daemon --------------------------------------
# Stopping the daemon destroys its one-time keys: a new start has new ones.
# These stop a daemon of their own.

own_daemon_stopped() {
	start_daemon "$T/sock" --key default=ephemeral:rsa2048
	export MODSIGN_SERVER=unix:$T/sock
	"$C" cert >before.pem
	stop_daemon "$DAEMON_PID"
}

@test "daemon-exits-cleanly" {
	own_daemon_stopped
	run grep -q "one-time keys destroyed" modsignd.log
	assert_success
}

@test "socket-removed" {
	own_daemon_stopped
	assert [ ! -e "$T/sock" ]
}

@test "new-start-new-key" {
	own_daemon_stopped
	start_daemon "$T/sock" --key default=ephemeral:rsa2048
	"$C" cert >after.pem
	run cmp before.pem after.pem
	assert_failure
}

# ---- algorithms modsignd does not make --------------------------------------
# Too small, or a prime count it does not offer for the size: the start
# stops with a line naming the key.

refuses_algorithm() { # ALG
	run timeout 30 "$MODSIGND" --listen "unix:$T/s-alg" --key "k=ephemeral:$1"
	assert_failure
	assert_output --partial "key k=ephemeral:$1: unknown key algorithm"
}

@test "refuses-algorithm rsa1024" {
	refuses_algorithm rsa1024
}

@test "refuses-algorithm rsa2048-3p" {
	refuses_algorithm rsa2048-3p
}

@test "refuses-algorithm rsa4096-5p" {
	refuses_algorithm rsa4096-5p
}
