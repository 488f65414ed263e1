#!/usr/bin/env bats
# make install honours PREFIX and DESTDIR; what it installs works.  One
# install for the file (setup_file: it runs make), read by every case.

load ../common

setup_file() {
	make -s -C "$REPO" install DESTDIR="$BATS_FILE_TMPDIR/root" PREFIX=/opt/ms \
		>"$BATS_FILE_TMPDIR/install.log" 2>&1
	echo $? >"$BATS_FILE_TMPDIR/install.rc"
}

setup() {
	case_setup
	R=$BATS_FILE_TMPDIR/root/opt/ms
}

@test "install-succeeds" {
	run cat "$BATS_FILE_TMPDIR/install.log"
	assert_equal "$(cat "$BATS_FILE_TMPDIR/install.rc")" 0
}

@test "installed-files" {
	local f missing=()

	for f in sbin/modsignd bin/modsign-client share/man/man8/modsignd.8 \
		share/man/man1/modsign-client.1 share/man/man5/modsignd.conf.5 \
		share/modsign/x509.genkey.in lib/systemd/system/modsignd.service \
		lib/systemd/system/modsignd.socket lib/systemd/system/modsignd-tls.socket; do
		[ -s "$R/$f" ] || missing+=("$f")
	done
	echo "missing: ${missing[*]}"
	assert_equal "${#missing[@]}" 0
}

@test "nothing-outside-destdir" {
	run test -e /opt/ms/sbin/modsignd
	assert_failure
}

@test "unit-points-at-prefix" {
	run grep -q "^ExecStart=/opt/ms/sbin/modsignd " "$R/lib/systemd/system/modsignd.service"
	assert_success
}

@test "installed-programs-run" {
	run "$R/sbin/modsignd" --version
	assert_success
	run "$R/bin/modsign-client" --version
	assert_success
}

@test "installed-client-status" {
	# One client, nothing beside it: status runs in it.
	run test -e "$BATS_FILE_TMPDIR/root/opt/ms/libexec"
	assert_failure
	run "$R/bin/modsign-client" --server "unix:$T/nosuch" status
	assert_failure
	assert_output --partial "cannot connect to modsignd at unix:$T/nosuch"
}

@test "man-pages-render-cleanly" {
	local m bad=()

	for m in "$R"/share/man/man*/*; do
		MANWIDTH=80 man --warnings -l "$m" >/dev/null 2>man.err
		[ -s man.err ] && bad+=("$(basename "$m"): $(head -n1 man.err)")
	done
	printf '%s\n' "${bad[@]}"
	assert_equal "${#bad[@]}" 0
}

@test "installed-pkcs11-module-and-p11-kit-file" {
	local so
	so=$(find "$R/lib" -path '*/pkcs11/modsign-pkcs11.so')
	[ -n "$so" ]
	run cat "$R/share/p11-kit/modules/modsign.module"
	assert_output "module: ${so#"$BATS_FILE_TMPDIR/root"}"
	# It exports the PKCS#11 entry point and nothing of the client's.
	run nm -D --defined-only "$so"
	assert_output --partial "T C_GetFunctionList"
	refute_output --partial "conn_open"
}
