#!/usr/bin/env bats
# DKMS signing through modsign-pkcs11.so (docs/PKCS11.md, "DKMS"): Debian's
# dkms with its own default sign_file, the kernel's scripts/sign-file of
# linux-kbuild, which loads OpenSSL's "pkcs11" provider for the pkcs11:
# mok_signing_key, whose default module, p11-kit's proxy, loads the
# module.  Nothing else: no sign_file line, no OPENSSL_CONF, no
# environment (dkms runs under env -i, as apt's hooks run it).
#
# The same cases run Debian 12's dkms 3.0.10 with 6.1's sign-file
# (tests/run.sh, bookworm-backports' provider from the cache) and Debian
# 13's dkms 3.2.2 with 6.12's sign-file and trixie's provider (the Debian
# 13 lane, tests/release/lane.sh); the trees, the namespace and the
# install tree are dkms.bats's (tests/integration/dkms.bash), where 3.2
# installs .ko.xz and runs the shipped snippet's post_transaction check.
# What a user installs is bound over the system's paths in dkms_run's
# namespace: the provider's pkcs11.so in OpenSSL's modules directory
# (where both packages put it), modsign.module in p11-kit's module
# directory (the client package's), and root's client.conf naming the
# daemon.  Each case has its own daemon.

load ../common
load pkcs11
load dkms

setup_file() {
	dkms_file_setup || return 1
	PROV=$(provider_dir) || return 1
	export PROV
}

setup() {
	local ossl=/usr/lib/x86_64-linux-gnu/ossl-modules

	case_setup
	# The shipped snippet without its sign_file line: DKMS's default.
	dkms_case_setup -
	mkdir -p ossl p11-kit
	cp -a "$ossl/." ossl/
	[ -e ossl/pkcs11.so ] || ln -s "$PROV/pkcs11.so" ossl/pkcs11.so
	echo "module: $P11" >p11-kit/modsign.module
	DKMS_BINDS="$T/ossl=$ossl $T/p11-kit=/usr/share/p11-kit/modules"
	BUILT=$T/dkms/$PKG/$VER/build/$PKG.ko
}

teardown() { case_teardown; }

# The sign-file DKMS runs by default on Debian: linux-kbuild-VER's, VER
# the kernel's version up to its last dot (dkms 3.0.10, 3.2.2), which is
# bookworm's linux-kbuild-6.1; trixie's is linux-kbuild-6.12.117+deb13,
# not linux-kbuild-6.12, so dkms 3.2.2 falls back to the headers' build
# link of its install tree, which leads to the same program.
kbuild_sign_file() {
	local f=/usr/lib/linux-kbuild-${KVER%.*}/scripts/sign-file
	[ -f "$f" ] || f=$T/modules/$KVER/build/scripts/sign-file
	echo "$f"
}

# unsigned_installed: the module is installed, with no signature at all.
unsigned_installed() {
	[ -f "$MOD" ]
	run "$C" verify --cert rsa.pem.crt "$MOD"
	assert_failure
	assert_output --partial "$MOD: not signed"
}

@test "p11-dkms-default-sign-file-signs-verifies" {
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	dkms_install_enrolled daemon
	assert_output --partial "Sign command: $(kbuild_sign_file)"
	assert_equal "$(readlink -f "$(kbuild_sign_file)")" \
		"$(readlink -f "/usr/src/linux-headers-$KVER/scripts/sign-file")"
	assert_output --partial "Signing key: pkcs11:object=dkms"
	refute_output --partial "sign-file:"
	refute_output --partial "Failed to sign"
	no_key_made "$ENROLLED"
	grep -q '"module":"pkcs11:object=dkms","program":"sign-file","result":"ok"' modsignd.log
	# The module installed (dkms 3.2: .ko.xz) verifies with the daemon
	# key's certificate, the one enrolled.
	run "$C" verify --cert modsign.der "$MOD"
	assert_success
	assert_output "$MOD: OK (sha256)"
	post_transaction_said OK
	signed_as_sign_file
	# Twin: against another key's certificate it does not verify.
	make_pem_key other.pem rsa:2048 "another key"
	run "$C" verify --cert other.pem.crt "$MOD"
	assert_failure
	assert_output --partial "$MOD: signed by a different key"
	# Twin: the installed module with a byte of its code changed under
	# its signature (compressed again, as an attacker would) fails with
	# the right certificate, and the post-install check says so.
	flip_bit_at got.ko $((0x400))
	pack got.ko >"$MOD"
	run "$C" verify --cert modsign.der "$MOD"
	assert_failure
	assert_output --partial "$MOD: BAD signature"
	run dkms_check
	assert_failure
	assert_output --partial "$MOD: BAD signature"
}

# dkms_failed_said: what dkms says when its sign-file fails with no key on
# the token.  The kernel's sign-file (6.1.192 and 6.12.117 alike) finds no
# key, goes on without one and fails adding the signer, exit 1: dkms 3.0
# ignores the status, 3.2 prints a warning with sign-file's output (3.2.2
# lines 1508-1509); neither fails the build.  The module's reason (no such
# key, cannot connect) goes to the journal, its stderr not being a
# terminal.
dkms_failed_said() {
	run cat dkms.out
	assert_output --partial "private key does not match certificate"
	assert_output --partial "sign-file: CMS_add1_signer"
	if dkms32; then
		assert_output --partial "Warning: Failed to sign module '$BUILT'!"
	fi
}

@test "p11-dkms-daemon-down-unsigned-and-said" {
	# The certificate is there (enrolled earlier); the daemon is not.
	dkms_install_enrolled file
	dkms_failed_said
	# Installed unsigned, not signed with another key (none made); on
	# 3.2 the snippet's post_transaction check says so.
	unsigned_installed
	no_key_made "$ENROLLED"
	post_transaction_said FAIL
}

@test "p11-dkms-key-not-granted-unsigned" {
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem" --key other=ephemeral:rsa2048 \
		--allow uid:0=other
	dkms_install_enrolled file
	dkms_failed_said
	# The token had no such key: nothing was asked of the daemon.
	run grep -c '"key":"dkms"' modsignd.log
	assert_output 0
	unsigned_installed
	no_key_made "$ENROLLED"
	post_transaction_said FAIL
}

@test "p11-dkms-no-certificate-makes-none" {
	# No certificate at mok_certificate: dkms makes a key and certificate
	# only for a key that is not pkcs11: (3.0.10 line 975, 3.2.2 line
	# 1243), so it makes neither and signs nothing.
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	dkms_install_enrolled none
	assert_output --partial "Certificate file $T/modsign.der not found and can't be generated, modules won't be signed"
	refute_output --partial "generating self signed certificate"
	[ ! -e modsign.der ]
	run find "$T" -name 'pkcs11:*'
	assert_output ""
	run grep -c '"key":"dkms"' modsignd.log
	assert_output 0
	unsigned_installed
}
