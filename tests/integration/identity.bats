#!/usr/bin/env bats
# With an RSA key (PKCS#1 v1.5 is deterministic), a module signed through
# modsignd must be byte for byte what the kernel's own scripts/sign-file
# makes from the same key, hash and module: on hundreds of real modules.
#
# One daemon and one set of stripped modules for the whole file
# (setup_file): its RSA-4096 keys take seconds to make, and every case
# only reads them.  Each case compares in its own $T.

load ../common

setup_file() {
	local F=$BATS_FILE_TMPDIR i=0 m

	export N=${IDENTITY_MODULES:-300}
	make_pem_key "$F/rsa.pem" rsa:2048
	make_pem_key "$F/rsa4k.pem" rsa:4096
	# A multi-prime key (4 primes, RFC 8017): the signature depends only
	# on the modulus and exponent, so sign-file's and modsignd's must
	# still agree.
	make_pem_key "$F/rsa4k4p.pem" rsa:4096-4p
	file_daemon_start --key "default=$F/rsa.pem" --key "big=$F/rsa4k.pem" \
		--key "mp=$F/rsa4k4p.pem"
	mkdir "$F/mods"
	while read -r m; do
		cp "$m" "$F/mods/$i.ko"
		i=$((i + 1))
	done < <(real_modules "$N")
	# Debian's modules arrive signed by Debian's key: remove that first.
	"$CLIENT" --server "unix:$F/sock" strip "$F"/mods/*.ko
}

teardown_file() {
	file_daemon_stop
}

setup() {
	file_daemon_case
}

# compare KEYNAME PEM HASH [-k]: every module signed by sign-file and by
# one batch call of the client (many requests in flight on one
# connection), then compared byte for byte.
compare() {
	local key=$1 pem=$2 hash=$3 k=${4:-} bad=0 f n

	cp -r "$F/mods" a
	cp -r "$F/mods" b
	for f in a/*.ko; do
		"$FIX/sign-file" $k "$hash" "$pem" "$pem.crt" "$f" || bad=$((bad + 1))
	done
	"$CLIENT" sign --key "$key" --hash "$hash" ${k:+--keyid} b/*.ko || bad=$((bad + 1))
	# One diff for the two trees, not a cmp per module; a file only one
	# of them has (a temporary left behind) differs too.
	diff -rq a b >differs || true
	cat differs
	bad=$((bad + $(wc -l <differs)))
	n=$(ls a/*.ko | wc -l)
	echo "$bad of $n real modules differ"
	[ "$bad" -eq 0 ] && [ "$n" -ge "$((N * 9 / 10))" ]
}

@test "identical-to-sign-file default sha256" {
	compare default "$F/rsa.pem" sha256
}

@test "identical-to-sign-file default sha512" {
	compare default "$F/rsa.pem" sha512
}

@test "identical-to-sign-file big sha384" {
	compare big "$F/rsa4k.pem" sha384
}

# SHA-3 (CONFIG_MODULE_SIG_SHA3_*, kernels 6.7 and later): the fixture
# sign-file is 6.1's, but it asks OpenSSL for the hash by name, and
# OpenSSL 3 makes SHA-3 CMS as 6.12's sign-file does.
@test "identical-to-sign-file default sha3-256" {
	compare default "$F/rsa.pem" sha3-256
}

@test "identical-to-sign-file big sha3-384" {
	compare big "$F/rsa4k.pem" sha3-384
}

@test "identical-to-sign-file default sha3-512 keyid" {
	compare default "$F/rsa.pem" sha3-512 -k
}

@test "identical-to-sign-file mp sha256" {
	# It must really be a 4-prime key (and big a 2-prime one), or this
	# comparison proves nothing.
	run "$CLIENT" status
	assert_output --partial "key mp: rsa4096-4p, file"
	assert_output --partial "key big: rsa4096, file"
	compare mp "$F/rsa4k4p.pem" sha256
}

@test "identical-to-sign-file default sha256 keyid" {
	compare default "$F/rsa.pem" sha256 -k
}

@test "identity-check-detects-one-bit" {
	# The tampered twin: the comparison must notice a single flipped bit.
	cp "$F/mods/0.ko" a.ko
	"$CLIENT" sign a.ko
	cp a.ko twin.ko
	flip_bit_at twin.ko -100
	run cmp -s a.ko twin.ko
	assert_failure
}

@test "sign-file-mode-identical" {
	# sign-file mode (the argument order of scripts/sign-file), writing
	# to a separate destination and leaving the source alone.
	cp "$F/mods/0.ko" sf.ko
	cp "$F/mods/0.ko" ref.ko
	"$FIX/sign-file" sha256 "$F/rsa.pem" "$F/rsa.pem.crt" ref.ko
	"$CLIENT" sign-file sha256 modsign:default "$F/rsa.pem.crt" sf.ko dest.ko
	cmp ref.ko dest.ko
	cmp sf.ko "$F/mods/0.ko"
}

@test "sign-file-mode-identical sha3-256" {
	cp "$F/mods/0.ko" sf.ko
	cp "$F/mods/0.ko" ref.ko
	"$FIX/sign-file" sha3-256 "$F/rsa.pem" "$F/rsa.pem.crt" ref.ko
	"$CLIENT" sign-file sha3-256 modsign:default "$F/rsa.pem.crt" sf.ko dest.ko
	cmp ref.ko dest.ko
	# The twin: the same module signed with SHA-256 is not the same bytes.
	"$CLIENT" sign-file sha256 modsign:default "$F/rsa.pem.crt" sf.ko dest256.ko
	run cmp -s ref.ko dest256.ko
	assert_failure
}

@test "invoked-as-sign-file-identical" {
	cp "$F/mods/0.ko" sf.ko
	cp "$F/mods/0.ko" ref.ko
	"$FIX/sign-file" sha256 "$F/rsa.pem" "$F/rsa.pem.crt" ref.ko
	ln -s "$CLIENT" sign-file
	./sign-file sha256 whatever.pem "$F/rsa.pem.crt" sf.ko
	cmp ref.ko sf.ko
}
