#!/bin/bash
# With an RSA key (PKCS#1 v1.5 is deterministic), a module signed through
# modsignd must be byte for byte what the kernel's own scripts/sign-file
# makes from the same key, hash and module: on hundreds of real modules.
. "$(dirname "$0")/../lib.sh"

N=${IDENTITY_MODULES:-300}
make_pem_key "$T/rsa.pem" rsa:2048 || { fail identity-setup "openssl req"; exit 1; }
make_pem_key "$T/rsa4k.pem" rsa:4096 || { fail identity-setup "openssl req"; exit 1; }
# A multi-prime key (4 primes, RFC 8017): the signature depends only on the
# modulus and exponent, so sign-file's and modsignd's must still agree.
make_pem_key "$T/rsa4k4p.pem" rsa:4096-4p || { fail identity-setup "openssl req"; exit 1; }
start_daemon "$T/sock" --key default=$T/rsa.pem --key big=$T/rsa4k.pem --key mp=$T/rsa4k4p.pem || exit 1
export MODSIGN_SERVER=unix:$T/sock

mkdir "$T/mods"
i=0
while read -r m; do
	cp "$m" "$T/mods/$i.ko"
	i=$((i + 1))
done < <(real_modules "$N")
# Debian's modules arrive signed by Debian's key: remove that first.
"$CLIENT" strip "$T"/mods/*.ko || fail identity-strip

# compare KEYNAME PEM HASH [-k]: every module, both ways, byte for byte.
compare() {
	local key=$1 pem=$2 hash=$3 k=${4:-} bad=0 f
	rm -rf "$T/a" "$T/b"
	cp -r "$T/mods" "$T/a"
	cp -r "$T/mods" "$T/b"
	for f in "$T"/a/*.ko; do
		"$FIX/sign-file" $k "$hash" "$pem" "$pem.crt" "$f" || bad=$((bad + 1))
	done
	# One batch invocation: many requests in flight on one connection.
	"$CLIENT" sign --key "$key" --hash "$hash" ${k:+--keyid} "$T"/b/*.ko || bad=$((bad + 1))
	for f in "$T"/a/*.ko; do
		cmp -s "$f" "$T/b/$(basename "$f")" || { bad=$((bad + 1)); echo "differs: $f"; }
	done
	local n
	n=$(ls "$T"/a/*.ko | wc -l)
	if [ "$bad" -eq 0 ] && [ "$n" -ge "$((N * 9 / 10))" ]; then
		pass "identical-to-sign-file $key $hash ${k:+keyid }($n real modules)"
	else
		fail "identical-to-sign-file $key $hash ${k:+keyid }" "$bad of $n differ"
	fi
}

compare default "$T/rsa.pem" sha256
compare default "$T/rsa.pem" sha512
compare big "$T/rsa4k.pem" sha384
# ... and it must really be a 4-prime key, or that comparison proves nothing.
"$CLIENT" status >"$T/status"
check identity-mp-is-4-prime grep -q "key mp: rsa4096-4p, file" "$T/status"
check identity-big-is-2-prime grep -q "key big: rsa4096, file" "$T/status"
compare mp "$T/rsa4k4p.pem" sha256
compare default "$T/rsa.pem" sha256 -k

# The tampered twin: the comparison must notice a single flipped bit.
f=$(ls "$T"/b/*.ko | head -n1)
cp "$f" "$T/twin.ko"
flip_byte "$T/twin.ko" -100
refute "identity-check-detects-one-bit" cmp -s "$f" "$T/twin.ko"

# sign-file mode (argument order of scripts/sign-file) is identical too,
# including writing to a separate destination.
cp "$T/mods/0.ko" "$T/sf.ko"
cp "$T/mods/0.ko" "$T/ref.ko"
"$FIX/sign-file" sha256 "$T/rsa.pem" "$T/rsa.pem.crt" "$T/ref.ko"
check "sign-file-mode-identical" bash -c "'$CLIENT' sign-file sha256 modsign:default '$T/rsa.pem.crt' '$T/sf.ko' '$T/dest.ko' && cmp '$T/ref.ko' '$T/dest.ko' && cmp '$T/sf.ko' '$T/mods/0.ko'"
ln -s "$CLIENT" "$T/sign-file"
check "invoked-as-sign-file-identical" bash -c "'$T/sign-file' sha256 whatever.pem '$T/rsa.pem.crt' '$T/sf.ko' && cmp '$T/ref.ko' '$T/sf.ko'"
