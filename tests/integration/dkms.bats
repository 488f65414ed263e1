#!/usr/bin/env bats
# DKMS signs through modsignd as the README's "Signing DKMS modules" sets
# it up: Debian's own dkms builds a real DKMS package (v4l2loopback-dkms's
# source, from the archive) for Debian linux-headers of a kernel that is
# not the running one, runs modsign-client as its sign_file with
# mok_signing_key=pkcs11:object=dkms, and installs the module.  Each case
# has its own daemon, DKMS tree and install tree (dkms --dkmstree,
# --sourcetree, --installtree, --no-depmod): nothing reaches /var/lib/dkms
# or /lib/modules, and nothing is ever loaded.  DKMS reads its signing
# settings only from /etc/dkms/framework.conf.d: the case's snippet (the
# shipped example, dkms/modsign.conf, with the case's paths) is bound over
# /etc/dkms in a mount namespace of its own, as is the case's root home
# over /root, whose .config/modsign/client.conf is where the client finds
# the daemon (root's config file, read whatever $HOME says).  dkms runs
# under env -i with PATH alone, as apt's kernel hooks run it.

load ../common
load dkms

setup_file() { dkms_file_setup; }

setup() {
	case_setup
	make_pem_key "$T/rsa.pem" rsa:2048 "dkms test key"
	mkdir -p src "modules/$KVER" etc-dkms/framework.conf.d home/.config/modsign
	cp -a "$SRC" src/
	sed -e "s|^sign_file=.*|sign_file=$C|" \
	    -e "s|/var/lib/dkms/modsign.der|$T/modsign.der|" \
		"$REPO/dkms/modsign.conf" >etc-dkms/framework.conf.d/modsign.conf
	echo "server = unix:$T/sock" >home/.config/modsign/client.conf
	MOD=$T/modules/$KVER/updates/dkms/$PKG.ko
}

teardown() { case_teardown; }

# The shipped check (dkms/zz-modsign-dkms-check) on the case's tree.
dkms_check() {
	PATH=$B:$PATH MODSIGN_DKMS_TREE=$T/modules MODSIGN_DKMS_CERT=$T/modsign.der \
		"$REPO/dkms/zz-modsign-dkms-check" "$KVER"
}

# The certificate to enrol, as the README has the user fetch it.
enrol_cert() {
	MODSIGN_SERVER=unix:$T/sock "$C" cert --key dkms --der >"$T/modsign.der"
}

@test "dkms-signs-byte-identical-to-sign-file" {
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	enrol_cert
	before=$(sha modsign.der)
	run dkms_install
	cat dkms.out
	assert_success
	run cat dkms.out
	assert_output --partial "Signing key: pkcs11:object=dkms"
	refute_output --partial "modsign-client:"
	refute_output --partial "generating self signed certificate"
	# DKMS made no key and left the certificate alone.
	assert_equal "$(sha modsign.der)" "$before"
	run find "$T" -name 'pkcs11:*'
	assert_output ""
	assert_equal "$(modinfo -F signer "$MOD")" "dkms test key"
	# The kernel's own sign-file, same key, over the same unsigned bytes.
	split_module "$MOD" ref.ko ref.sig
	ref sha256 rsa.pem rsa.pem.crt ref.ko
	cmp ref.ko "$MOD"
	run dkms_check
	assert_success
	assert_output "$MOD: OK (sha256)"
}

@test "dkms-daemon-down-unsigned-and-said" {
	# The certificate is there (enrolled earlier); the daemon is not.
	openssl x509 -in rsa.pem.crt -outform DER -out modsign.der
	run dkms_install
	cat dkms.out
	# dkms 3.0 ignores its signer's status: the build "succeeds".
	assert_success
	run cat dkms.out
	assert_output --partial "modsign-client: $T/dkms/$PKG/$VER/build/$PKG.ko: not signed: cannot connect to modsignd at unix:$T/sock: "
	# Installed unsigned, not signed with another key; the check says so.
	[ -f "$MOD" ]
	assert_equal "$(modinfo -F signer "$MOD")" ""
	run dkms_check
	assert_failure
	assert_output --partial "modsign-client: $MOD: not signed"
	assert_output --partial "zz-modsign-dkms-check: kernel $KVER: the DKMS modules above are not signed"
}

@test "dkms-key-not-granted-refused" {
	# Root may use the key "other" only.
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem" --key other=ephemeral:rsa2048 \
		--allow uid:0=other
	openssl x509 -in rsa.pem.crt -outform DER -out modsign.der
	run dkms_install
	cat dkms.out
	run cat dkms.out
	assert_output --partial "modsign-client: $T/dkms/$PKG/$VER/build/$PKG.ko: modsignd refused: permission denied: key dkms is not granted to uid:0"
	assert_equal "$(modinfo -F signer "$MOD")" ""
	run dkms_check
	assert_failure
	assert_output --partial "$MOD: not signed"
}

@test "dkms-env-reset-server-from-config-file" {
	# The environment that apt's hooks reset does not reach the client:
	# with the config file pointing elsewhere, MODSIGN_SERVER set in the
	# caller's environment is lost under env -i and nothing is signed ...
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	enrol_cert
	echo "server = unix:$T/elsewhere" >home/.config/modsign/client.conf
	export MODSIGN_SERVER=unix:$T/sock
	run dkms_install
	run cat dkms.out
	assert_output --partial "cannot connect to modsignd at unix:$T/elsewhere"
	assert_equal "$(modinfo -F signer "$MOD")" ""
	# ... and the environment, where it is kept, wins over the file.
	DKMS_ENV=MODSIGN_SERVER=unix:$T/sock run dkms_install
	run cat dkms.out
	refute_output --partial "modsign-client:"
	assert_equal "$(modinfo -F signer "$MOD")" "dkms test key"
}

# DKMS's call itself, without DKMS: HASH first, the key an RFC 7512 URI
# with other attributes and percent-encoding ("dk%6Ds" is "dkms").
@test "dkms-call-form-pkcs11-uri-identical" {
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	cp "$(real_modules 1)" m.ko
	"$C" strip m.ko
	cp m.ko ref.ko
	ref sha256 rsa.pem rsa.pem.crt ref.ko
	MODSIGN_SERVER=unix:$T/sock "$C" sha256 \
		'pkcs11:token=modsign;object=dk%6Ds;type=private' rsa.pem.crt m.ko
	cmp ref.ko m.ko
}

@test "dkms-call-form-pkcs11-uri-refused" {
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem" --key other=ephemeral:rsa2048
	cp "$(real_modules 1)" m.ko
	"$C" strip m.ko
	sum=$(sha m.ko)
	export MODSIGN_SERVER=unix:$T/sock
	# Another key's name: the certificate given is not its key's.
	run "$C" sha256 pkcs11:object=other rsa.pem.crt m.ko
	assert_failure
	# Not a private key, an empty name, a NUL in it, no URI at all.
	for k in 'pkcs11:object=dkms;type=cert' 'pkcs11:object=' 'pkcs11:object=dk%00ms' \
		'pkcs11:object=%zz'; do
		run "$C" sha256 "$k" rsa.pem.crt m.ko
		assert_failure 2
		assert_output "modsign-client: key '$k': not a pkcs11: URI of a daemon key (pkcs11:object=NAME, RFC 7512)"
	done
	assert_equal "$(sha m.ko)" "$sum"
	# The name of no hash is still a command.
	run "$C" sha1 pkcs11:object=dkms rsa.pem.crt m.ko
	assert_failure 2
	assert_output --partial "unknown command 'sha1'"
}
