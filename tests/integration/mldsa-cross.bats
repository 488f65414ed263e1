#!/usr/bin/env bats
# A Debian 12 client (this machine's build, OpenSSL 3.0: no ML-DSA) signs
# through a Debian 13 daemon (built and run in the cached trixie root,
# OpenSSL 3.5) with an ML-DSA-65 key, issue 31: the client computes each
# module's mu with SHAKE256 alone, the daemon signs it.  The daemon
# listens on a unix socket in a directory both see (chroot.sh's
# RELEASE_OUT, its /out).  The client cannot check ML-DSA itself: it
# writes the signature after checking its form and signer, warning once,
# and its verify says in one line it cannot (exit status 3); openssl 3.5
# in the trixie root checks the signature over the whole module, and
# refuses it over a tampered one.
#
# Runs on Debian 12 (tests/run.sh); skipped where this machine's OpenSSL
# has ML-DSA (nothing to cross) or there is no trixie root to run in.

load ../common

setup_file() {
	local F=$BATS_FILE_TMPDIR i

	openssl list -public-key-algorithms 2>/dev/null | grep -q ML-DSA-65 && return 0
	mkdir -p "$F/out"
	# The daemon's pid first, then the daemon in place of the shell: it
	# is stopped by that pid (no pid namespace), and chroot.sh cleans up.
	RELEASE_OUT=$F/out "$REPO/tests/release/chroot.sh" trixie bash -c '
		make -j2 >/out/build.log 2>&1 || exit 1
		echo $$ >/out/pid
		exec build/modsignd --listen unix:/out/sock --key default=ephemeral:mldsa65 \
			--key other=ephemeral:mldsa65 --allow uid:0' >"$F/daemon.log" 2>&1 3>&- &
	for i in $(seq 600); do
		[ -S "$F/out/sock" ] && break
		sleep 0.5
	done
	cp "$(real_modules 1)" "$F/orig.ko"
	"$CLIENT" strip "$F/orig.ko"
}

teardown_file() {
	local F=$BATS_FILE_TMPDIR

	[ -e "$F/out/pid" ] && kill "$(cat "$F/out/pid")" 2>/dev/null
	wait 2>/dev/null
	return 0
}

setup() {
	openssl list -public-key-algorithms 2>/dev/null | grep -q ML-DSA-65 &&
		skip "this OpenSSL has ML-DSA: no Debian 12 client to cross"
	case_setup
	F=$BATS_FILE_TMPDIR
	[ -S "$F/out/sock" ] || fail "the Debian 13 daemon did not start: $(tail -n 3 "$F/daemon.log" "$F/out/build.log" 2>&1)"
	export MODSIGN_SERVER=unix:$F/out/sock
	cp "$F/orig.ko" orig.ko
}

teardown() { case_teardown; }

# in_trixie CMD: CMD run by bash in the trixie root, $F/out as /out.
in_trixie() {
	RELEASE_OUT=$F/out "$REPO/tests/release/chroot.sh" trixie bash -c "$1"
}

# raw_sig P7S OUT: the signature value of the PKCS#7 (its last OCTET STRING).
raw_sig() {
	local line off hl l
	line=$(openssl asn1parse -inform DER -in "$1" | grep 'prim: OCTET STRING' | tail -n 1)
	off=${line%%:*} hl=$(sed -E 's/.*hl= *([0-9]+).*/\1/' <<<"$line")
	l=$(sed -E 's/.* l= *([0-9]+).*/\1/' <<<"$line")
	dd if="$1" of="$2" bs=1 skip=$((${off// /} + hl)) count="$l" status=none
}

@test "debian12-client-signs-through-debian13-daemon" {
	"$C" status | grep -q "default (default): mldsa65, ephemeral"
	"$C" cert >"$F/out/cert.pem"
	cp orig.ko "$F/out/body"
	run "$C" sign-file -d sha512 modsign:default "$F/out/cert.pem" orig.ko
	assert_success
	assert_output --partial "cannot check ML-DSA signatures here"
	raw_sig orig.ko.p7s "$F/out/raw.sig"
	run in_trixie 'openssl x509 -in /out/cert.pem -noout -pubkey >/tmp/pub.pem &&
		openssl pkeyutl -verify -pubin -inkey /tmp/pub.pem -rawin -in /out/body -sigfile /out/raw.sig'
	assert_success
	assert_output --partial "Signature Verified Successfully"
	# twin: the same signature over the module with one byte more
	printf x >>"$F/out/body"
	run in_trixie 'openssl x509 -in /out/cert.pem -noout -pubkey >/tmp/pub.pem &&
		openssl pkeyutl -verify -pubin -inkey /tmp/pub.pem -rawin -in /out/body -sigfile /out/raw.sig'
	assert_failure
}

@test "debian12-verify-says-it-cannot-check-mldsa" {
	"$C" cert >cert.pem
	"$C" sign orig.ko
	run "$C" verify --cert cert.pem orig.ko
	[ "$status" -eq 3 ] || fail "exit $status, not 3: $output"
	assert_output --partial "cannot check an ML-DSA signature here"
	[ "${#lines[@]}" -eq 1 ]
	# twin: a module that is not signed is a failure (1), not "cannot"
	cp "$F/orig.ko" plain.ko
	run "$C" verify --cert cert.pem plain.ko
	assert_equal "$status" 1
}

@test "debian12-client-pinned-to-another-key-refused" {
	"$C" cert --key other >other.pem
	run "$C" sign-file sha512 modsign:default other.pem orig.ko
	assert_failure
	cmp -s orig.ko "$F/orig.ko"
}
