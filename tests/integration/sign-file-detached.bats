#!/usr/bin/env bats
# One module's detached signature: sign-file's -d (the .p7s alone, the
# module left as it was) and -p (the .p7s and the signed module), with an
# RSA key (PKCS#1 v1.5 is deterministic) byte for byte what the kernel's
# own sign-file makes from the same PEM key.  The flow these serve, over
# trees of modules, is attach.bats.  Each case has its own daemon on a
# key made at run time.

load ../common

setup() {
	case_setup
	make_pem_key "$T/rsa.pem" rsa:2048
	start_daemon "$T/sock" --key "default=$T/rsa.pem"
	export MODSIGN_SERVER=unix:$T/sock
	cp "$(real_modules 1)" "$T/m.ko"
	"$C" strip "$T/m.ko"
	cp "$T/m.ko" "$T/ref.ko"
}

teardown() { case_teardown; }

@test "sign-file-d-p7s-identical" {
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	sf -d sha256 modsign:default rsa.pem.crt m.ko
	cmp ref.ko.p7s m.ko.p7s
}

@test "sign-file-d-p7s-identical-twin-other-module" {
	# The comparison notices a module one byte different.
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	flip_bit_at m.ko 100
	sf -d sha256 modsign:default rsa.pem.crt m.ko
	run cmp -s ref.ko.p7s m.ko.p7s
	assert_failure
}

@test "sign-file-d-p7s-identical-sha3-256" {
	ref -d sha3-256 rsa.pem rsa.pem.crt ref.ko
	sf -d sha3-256 modsign:default rsa.pem.crt m.ko
	cmp ref.ko.p7s m.ko.p7s
	# Twin: the same module's SHA-256 signature is other bytes.
	sf -d sha256 modsign:default rsa.pem.crt m.ko
	run cmp -s ref.ko.p7s m.ko.p7s
	assert_failure
}

@test "sign-file-d-leaves-module-alone" {
	touch -d '2020-01-02 03:04:05.123456789' m.ko
	before=$(stat -c '%s %y %i' m.ko)
	sum=$(sha m.ko)
	sf -d sha256 modsign:default rsa.pem.crt m.ko
	assert_equal "$(stat -c '%s %y %i' m.ko)" "$before"
	assert_equal "$(sha m.ko)" "$sum"
	[ -s m.ko.p7s ]
}

@test "sign-file-d-keyid-identical" {
	ref -d -k sha256 rsa.pem rsa.pem.crt ref.ko
	sf -d -k sha256 modsign:default rsa.pem.crt m.ko
	cmp ref.ko.p7s m.ko.p7s
	# Twin: without -k the signer is named otherwise.
	sf -d sha256 modsign:default rsa.pem.crt m.ko
	run cmp -s ref.ko.p7s m.ko.p7s
	assert_failure
}

@test "sign-file-p-identical" {
	ref -p sha256 rsa.pem rsa.pem.crt ref.ko
	sf -p sha256 modsign:default rsa.pem.crt m.ko
	cmp ref.ko.p7s m.ko.p7s
	cmp ref.ko m.ko
	# Twin: the module really was signed (it differs from the unsigned).
	"$C" strip ref.ko
	run cmp -s ref.ko m.ko
	assert_failure
}

@test "sign-file-p-identical-sha3-512" {
	ref -p sha3-512 rsa.pem rsa.pem.crt ref.ko
	sf -p sha3-512 modsign:default rsa.pem.crt m.ko
	cmp ref.ko.p7s m.ko.p7s
	cmp ref.ko m.ko
	"$C" verify --cert rsa.pem.crt m.ko
	# Twin: a bit of the signed module changed fails verify.
	flip_bit_at m.ko 100
	run "$C" verify --cert rsa.pem.crt m.ko
	assert_failure
}

@test "sign-file-p-dest-names-p7s-after-module" {
	ref -p sha256 rsa.pem rsa.pem.crt ref.ko ref-out.ko
	sf -p sha256 modsign:default rsa.pem.crt m.ko out.ko
	cmp ref.ko.p7s m.ko.p7s
	cmp ref-out.ko out.ko
	[ ! -e out.ko.p7s ] && [ ! -e ref-out.ko.p7s ]
	cmp m.ko ref.ko # the source untouched by both
}

@test "sign-file-d-wrong-cert-writes-nothing" {
	make_pem_key other.pem rsa:2048
	run sf -d sha256 modsign:default other.pem.crt m.ko
	assert_failure
	[ ! -e m.ko.p7s ]
	assert_equal "${#lines[@]}" 1
	assert_output --partial "m.ko"
}

@test "sign-file-d-replaces-p7s-atomically" {
	# An existing .p7s (even a link elsewhere) is replaced, not written through.
	echo keep >elsewhere
	ln -s elsewhere m.ko.p7s
	sf -d sha256 modsign:default rsa.pem.crt m.ko
	[ ! -L m.ko.p7s ]
	assert_equal "$(cat elsewhere)" keep
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	cmp ref.ko.p7s m.ko.p7s
}

@test "sign-file-unknown-option-refused" {
	run sf -x sha256 modsign:default rsa.pem.crt m.ko
	assert_failure
	assert_output --partial "'-x' is not supported"
}
