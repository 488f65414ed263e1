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
#
# The same cases run Debian 12's dkms 3.0 (tests/run.sh) and Debian 13's
# dkms 3.2 (tests/release/lane.sh): on 13 the kernel's modules are .ko.xz
# and dkms 3.2 installs its own compressed as well (it follows the
# modules installed for that kernel: the case's install tree holds one),
# and the shipped post_transaction runs the check after each install.
# The check's own cases (dkms-check-*) need no dkms run.

load ../common
load dkms

setup_file() { dkms_file_setup; }

setup() {
	case_setup
	dkms_case_setup "$C"
}

teardown() { case_teardown; }

# installed_unsigned_said: the module is installed with no signature at
# all, and the check says so (after the install as well, on dkms 3.2):
# it fails naming the module, its output in $output.
installed_unsigned_said() {
	unpack "$MOD" >got.ko
	run split_module got.ko x y
	assert_failure
	post_transaction_said FAIL
	run dkms_check
	assert_failure
	assert_output --partial "modsign-client: $MOD: not signed"
}

@test "dkms-signs-byte-identical-to-sign-file" {
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	dkms_install_enrolled daemon
	assert_output --partial "Signing key: pkcs11:object=dkms"
	refute_output --partial "modsign-client:"
	refute_output --partial "generating self signed certificate"
	refute_output --partial "Failed to sign"
	no_key_made "$ENROLLED"
	assert_equal "$(modinfo -F signer "$MOD")" "dkms test key"
	signed_as_sign_file
	post_transaction_said OK
	run dkms_check
	assert_success
	assert_output "$MOD: OK (sha256)"
}

@test "dkms-daemon-down-unsigned-and-said" {
	# The certificate is there (enrolled earlier); the daemon is not.
	# Neither dkms fails on its signer: 3.0 ignores its status, 3.2 warns.
	dkms_install_enrolled file
	assert_output --partial "modsign-client: $T/dkms/$PKG/$VER/build/$PKG.ko: not signed: cannot connect to modsignd at unix:$T/sock: "
	if dkms32; then
		assert_output --partial "Warning: Failed to sign module '$T/dkms/$PKG/$VER/build/$PKG.ko'!"
	fi
	# Installed unsigned, not signed with another key (none made); the
	# check says so, after dkms 3.2's install as well.
	[ -f "$MOD" ]
	no_key_made "$ENROLLED"
	installed_unsigned_said
	assert_output --partial "zz-modsign-dkms-check: kernel $KVER: the DKMS modules above are not signed"
	assert_output --partial "modsign-client sign --key NAME --cert $T/modsign.der $MOD"
}

@test "dkms-key-not-granted-refused" {
	# Root may use the key "other" only.
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem" --key other=ephemeral:rsa2048 \
		--allow uid:0=other
	dkms_install_enrolled file
	assert_output --partial "modsign-client: $T/dkms/$PKG/$VER/build/$PKG.ko: modsignd refused: permission denied: key dkms is not granted to uid:0"
	no_key_made "$ENROLLED"
	installed_unsigned_said
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

# ---- the check alone (dkms/zz-modsign-dkms-check), on a tree made here ----

# put_module NAME [signed]: a real module at $DKMSD/NAME (compressed for
# its suffix), unsigned or signed with the case's key "dkms".
put_module() {
	local plain=${1%.ko*}.ko
	mkdir -p "$DKMSD"
	cp "$(real_modules 1)" "$T/$plain.tmp"
	"$C" strip "$T/$plain.tmp"
	[ "${2:-}" != signed ] || MODSIGN_SERVER=unix:$T/sock "$C" sign --key dkms "$T/$plain.tmp"
	EXT=${1#"$plain"} pack "$T/$plain.tmp" >"$DKMSD/$1"
	rm "$T/$plain.tmp"
}

@test "dkms-check-follows-symlinked-modules" {
	# dkms 3.0's symlink_modules installs links to DKMS's tree: modprobe
	# follows them, so does the check.
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	enrol_cert
	put_module s.ko signed
	put_module u.ko
	mkdir store
	mv "$DKMSD/s.ko" "$DKMSD/u.ko" store/
	ln -s "$T/store/s.ko" "$DKMSD/s.ko"
	run dkms_check
	assert_success
	assert_output "$DKMSD/s.ko: OK (sha256)"
	# Twin: a link to an unsigned module is named, and the hint signs
	# the file it leads to.
	ln -s ../../../../store/u.ko "$DKMSD/u.ko"
	run dkms_check
	assert_failure
	assert_output --partial "modsign-client: $DKMSD/u.ko: not signed"
	assert_output --partial "--cert $T/modsign.der $T/store/u.ko"
	refute_output --partial "$DKMSD/s.ko: not signed"
}

@test "dkms-check-takes-no-backup-name" {
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	enrol_cert
	put_module m.ko signed
	# Not modules modprobe loads: a backup, an editor's, a signature.
	put_module m.ko.orig
	put_module m.ko.bak
	echo not-a-module >"$DKMSD/m.ko.p7s"
	run dkms_check
	assert_success
	assert_output "$DKMSD/m.ko: OK (sha256)"
	# Twin: an unsigned module under a kernel module name is taken.
	put_module n.ko.xz
	run dkms_check
	assert_failure
	assert_output --partial "modsign-client: $DKMSD/n.ko.xz: not signed"
	refute_output --partial "m.ko.orig"
}

@test "dkms-check-hint-signs-compressed-modules" {
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	enrol_cert
	put_module a.ko.xz
	put_module b.ko.zst
	put_module c.ko.gz
	put_module d.ko
	run dkms_check
	assert_failure
	hint=${lines[-1]}
	assert_equal "$hint" \
		"modsign-client sign --key NAME --cert $T/modsign.der $DKMSD/a.ko.xz $DKMSD/b.ko.zst $DKMSD/c.ko.gz $DKMSD/d.ko"
	# What it says to run, with the key's name, signs them all where
	# they lie; the check then passes.
	MODSIGN_SERVER=unix:$T/sock PATH=$B:$PATH sh -c "${hint/NAME/dkms}"
	run dkms_check
	assert_success
	assert_equal "$(grep -c ': OK (sha256)$' <<<"$output")" 4
	# Twin: the same modules signed by another key fail again.
	start_daemon "$T/sock2" --key dkms=ephemeral:rsa2048
	MODSIGN_SERVER=unix:$T/sock2 "$C" sign --key dkms "$DKMSD/a.ko.xz"
	run dkms_check
	assert_failure
	assert_output --partial "$DKMSD/a.ko.xz: signed by a different key"
	assert_equal "${lines[-1]}" \
		"modsign-client sign --key NAME --cert $T/modsign.der $DKMSD/a.ko.xz"
}

@test "dkms-check-hint-quotes-odd-names" {
	# Module names with a space, a newline, a quote and a shell command:
	# the hint, which the user runs as root, was the paths as they are,
	# so it split them, and ran the command (review 20); a newline split
	# the name into two paths, the second taken from the working
	# directory.
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	enrol_cert
	put_module 'a b.ko'
	put_module "c';touch pwned;'.ko"
	put_module 'd;touch pwned;.ko'
	put_module $'e\nf.ko'
	run dkms_check
	assert_failure
	hint="modsign-client sign --key NAME${output##*modsign-client sign --key NAME}"
	MODSIGN_SERVER=unix:$T/sock PATH=$B:$PATH sh -c "${hint/NAME/dkms}"
	[ ! -e pwned ]
	run dkms_check
	assert_success
	assert_equal "$(grep -c ': OK (sha256)$' <<<"$output")" 4
	# Twin: a plain name is still shown bare (copied into the hint as is).
	put_module g.ko
	run dkms_check
	assert_failure
	assert_equal "${lines[-1]}" "modsign-client sign --key NAME --cert $T/modsign.der $DKMSD/g.ko"
}

@test "dkms-check-hint-names-a-link-target-ending-in-newline" {
	# A module installed as a link to a file whose name ends in a
	# newline: the hint took the target as $(readlink -f), which drops
	# every trailing newline, so it named another file (here an unsigned
	# decoy beside it), and running it signed that one (review 21).
	start_daemon "$T/sock" --key "dkms=$T/rsa.pem"
	enrol_cert
	put_module u.ko
	put_module decoy.ko
	mkdir store
	mv "$DKMSD/u.ko" "$T/store/u"$'\n'
	mv "$DKMSD/decoy.ko" "$T/store/u"
	cp "$T/store/u" decoy.before
	ln -s "$T/store/u"$'\n' "$DKMSD/u.ko"
	run dkms_check
	assert_failure
	hint="modsign-client sign --key NAME${output##*modsign-client sign --key NAME}"
	MODSIGN_SERVER=unix:$T/sock PATH=$B:$PATH sh -c "${hint/NAME/dkms}"
	cmp decoy.before "$T/store/u"
	run dkms_check
	assert_success
	assert_output "$DKMSD/u.ko: OK (sha256)"
}

@test "dkms-resign-after-key-change-as-readme" {
	# Installed, signed by the old key; the daemon now has a new one.
	start_daemon "$T/sock" --key dkms=ephemeral:rsa2048
	put_module a.ko.xz signed
	put_module b.ko signed
	start_daemon "$T/sock2" --key "dkms=$T/rsa.pem"
	MODSIGN_SERVER=unix:$T/sock2 "$C" cert --key dkms --der >modsign.der
	run dkms_check
	assert_failure
	assert_output --partial "$DKMSD/a.ko.xz: signed by a different key"
	assert_output --partial "$DKMSD/b.ko: signed by a different key"
	# The README's re-signing, then the check passes.
	MODSIGN_SERVER=unix:$T/sock2 "$C" sign --key dkms --cert "$T/modsign.der" \
		--recursive "$DKMSD"
	run dkms_check
	assert_success
	assert_equal "$(grep -c ': OK (sha256)$' <<<"$output")" 2
	assert_equal "$(modinfo -F signer "$DKMSD/a.ko.xz")" "dkms test key"
}
