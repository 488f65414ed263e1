#!/bin/bash
# The main job against a real daemon: one-time RSA (2-, 3- and 4-prime)
# and ECDSA keys and a PEM file key; sign, verify, re-sign, strip; openssl and modinfo agree; every
# positive check has a tampered twin that must fail.
. "$(dirname "$0")/../lib.sh"

make_pem_key "$T/file.pem" rsa:2048 "modsign file key" || { fail basic-setup; exit 1; }
start_daemon "$T/sock" --key default=ephemeral:rsa2048 --key p384=ephemeral:ecdsa-p384 \
	--key p256=ephemeral:ecdsa-p256 --key file=$T/file.pem --key mp=ephemeral:rsa4096-4p \
	--key mp3=ephemeral:rsa3072-3p \
	--organization "modsign tests" --common-name "one-time test key" --email "t@example.org" || exit 1
export MODSIGN_SERVER=unix:$T/sock
C=$CLIENT

mod=$(real_modules 1)
cp "$mod" "$T/orig.ko"
$C strip "$T/orig.ko"

# status lists every key with algorithm, backend, subject and key id.
$C status >"$T/status" 2>&1
check status-lists-keys grep -q "key p384: ecdsa-p384, ephemeral" "$T/status"
check status-default-key grep -q "key default (default): rsa2048, ephemeral" "$T/status"
# A multi-prime key says so; a 2-prime one (the file key) does not.
check status-multi-prime-key grep -q "key mp: rsa4096-4p, ephemeral" "$T/status"
check status-three-prime-key grep -q "key mp3: rsa3072-3p, ephemeral" "$T/status"
check status-two-prime-file-key grep -q "key file: rsa2048, file" "$T/status"
refute status-without-daemon $C --server unix:$T/nosuch status

# The certificate of a one-time key carries the kernel's extensions and
# the subject the options asked for.
$C cert >"$T/default.pem"
$C cert --key p384 >"$T/p384.pem"
$C cert --key file --der >"$T/file.der"
openssl x509 -in "$T/default.pem" -noout -text >"$T/cert.txt"
check cert-basic-constraints grep -A1 "Basic Constraints: critical" "$T/cert.txt"
check cert-ca-false grep -q "CA:FALSE" "$T/cert.txt"
check cert-key-usage grep -A1 "Key Usage" "$T/cert.txt"
check cert-skid grep -q "Subject Key Identifier" "$T/cert.txt"
check cert-akid grep -q "Authority Key Identifier" "$T/cert.txt"
check cert-subject grep -q "Subject: O = modsign tests, CN = one-time test key, emailAddress = t@example.org" "$T/cert.txt"
check cert-der-is-file-key cmp "$T/file.der" <(openssl x509 -in "$T/file.pem.crt" -outform DER)

for key in default p384 p256 file mp mp3; do
	for hash in sha256 sha384 sha512; do
		n=$key-$hash
		cp "$T/orig.ko" "$T/$n.ko"
		$C cert --key $key >"$T/$key.crt"
		check "sign $n" $C sign --key $key --hash $hash "$T/$n.ko"
		check "verify $n" $C verify --cert "$T/$key.crt" "$T/$n.ko"
		# openssl agrees, from the module's own bytes.
		split_module "$T/$n.ko" "$T/$n.body" "$T/$n.p7"
		check "openssl-cms-verify $n" openssl cms -verify -binary -inform DER -in "$T/$n.p7" \
			-content "$T/$n.body" -certfile "$T/$key.crt" -nointern -noverify -out /dev/null
		check "body-unchanged $n" cmp "$T/$n.body" "$T/orig.ko"
		# tampered twins
		cp "$T/$n.ko" "$T/$n.bad-body.ko"; flip_byte "$T/$n.bad-body.ko" 1000
		refute "verify-rejects-changed-body $n" $C verify --cert "$T/$key.crt" "$T/$n.bad-body.ko"
		cp "$T/$n.ko" "$T/$n.bad-sig.ko"; flip_byte "$T/$n.bad-sig.ko" -60
		refute "verify-rejects-changed-signature $n" $C verify --cert "$T/$key.crt" "$T/$n.bad-sig.ko"
		other=$([ $key = default ] && echo p384 || echo default)
		$C cert --key $other >"$T/other.crt"
		refute "verify-rejects-other-key $n" $C verify --cert "$T/other.crt" "$T/$n.ko"
		refute "openssl-rejects-changed-body $n" openssl cms -verify -binary -inform DER -in "$T/$n.p7" \
			-content "$T/$n.bad-body.ko" -certfile "$T/$key.crt" -nointern -noverify -out /dev/null
	done
done

# modinfo reads what the kernel will: signer, key, hash.
modinfo "$T/p384-sha384.ko" >"$T/modinfo"
check modinfo-signer grep -q "^signer: *one-time test key" "$T/modinfo"
check modinfo-hash grep -q "^sig_hashalgo: *sha384" "$T/modinfo"
check modinfo-sig-key grep -q "^sig_key: *[0-9A-F:]*$" "$T/modinfo"
serial=$(openssl x509 -in "$T/p384.crt" -noout -serial | cut -d= -f2)
check modinfo-sig-key-is-serial bash -c "grep '^sig_key' '$T/modinfo' | tr -d ':' | grep -qi '$serial'"
modinfo "$T/orig.ko" >"$T/modinfo.unsigned"
refute modinfo-unsigned-has-no-signer grep -q "^signer:" "$T/modinfo.unsigned"

# --keyid: the signer is named by subjectKeyIdentifier; modinfo shows it.
cp "$T/orig.ko" "$T/keyid.ko"
$C sign --keyid "$T/keyid.ko"
skid=$(openssl x509 -in "$T/default.pem" -noout -ext subjectKeyIdentifier | tail -n1 | tr -d ' :')
check keyid-verify $C verify --cert "$T/default.pem" "$T/keyid.ko"
# (kmod's modinfo cannot name an SKID signer; the kernel can.)
split_module "$T/keyid.ko" "$T/keyid.body" "$T/keyid.p7"
skid=$(echo "$skid" | tr A-F a-f)
check keyid-signer-is-skid bash -c "od -An -tx1 -v '$T/keyid.p7' | tr -d ' \n' | grep -q '8014$skid'"
check keyid-in-signer-version-3 bash -c "openssl cms -cmsout -print -inform DER -in '$T/keyid.p7' | grep -q 'subjectKeyIdentifier'"

# Re-signing replaces the signature, never stacks a second one.
cp "$T/default-sha256.ko" "$T/resign.ko"
$C sign --key p384 --hash sha512 "$T/resign.ko"
check resign-verifies-new-key $C verify --cert "$T/p384.crt" "$T/resign.ko"
refute resign-old-key-gone $C verify --cert "$T/default.pem" "$T/resign.ko"
check resign-one-signature test "$(grep -c -a "~Module signature appended~" "$T/resign.ko")" -eq 1
split_module "$T/resign.ko" "$T/resign.body" "$T/resign.p7"
check resign-body-is-original cmp "$T/resign.body" "$T/orig.ko"
cp "$T/default-sha256.ko" "$T/twice.ko"
$C sign "$T/twice.ko"
check sign-twice-same-size test "$(stat -c %s "$T/twice.ko")" -eq "$(stat -c %s "$T/default-sha256.ko")"

# strip gives back the original bytes; an unsigned module does not verify.
cp "$T/default-sha256.ko" "$T/strip.ko"
check strip $C strip "$T/strip.ko"
check strip-restores-original cmp "$T/strip.ko" "$T/orig.ko"
refute verify-unsigned $C verify --cert "$T/default.pem" "$T/strip.ko"
check strip-unsigned-is-noop $C strip "$T/strip.ko"

# Mode and owner are kept; no temporary file is left behind.
cp "$T/orig.ko" "$T/mode.ko"
chmod 0640 "$T/mode.ko"
chown 65534:65534 "$T/mode.ko"
$C sign "$T/mode.ko"
check keeps-mode test "$(stat -c %a "$T/mode.ko")" = 640
check keeps-owner test "$(stat -c %u:%g "$T/mode.ko")" = 65534:65534
check no-temp-files-left bash -c "! ls -a '$T' | grep -q modsign-"

# verify --key fetches the certificate from the daemon.
check verify-with-daemon-cert $C verify --key p384 "$T/p384-sha256.ko"
refute verify-with-daemon-cert-other-key $C verify --key default "$T/p384-sha256.ko"

# Several modules in one invocation, all verify.
mkdir "$T/many"
for m in $(real_modules 40); do cp "$m" "$T/many/"; done
check sign-many $C sign --key p384 "$T"/many/*.ko
check verify-many $C verify --cert "$T/p384.crt" "$T"/many/*.ko
flip_byte "$(ls "$T"/many/*.ko | head -n1)" 2000
refute verify-many-one-tampered $C verify --cert "$T/p384.crt" "$T"/many/*.ko

# MODSIGN_SERVER and --server agree; a list falls over to the next one.
check server-fallback $CLIENT --server unix:$T/nosuch --server unix:$T/sock status
check server-fallback-says-which bash -c "'$CLIENT' --server unix:$T/nosuch --server unix:$T/sock status | grep -q 'server: unix:$T/sock'"

# Stopping the daemon destroys its one-time keys: a new start has new ones.
before=$($C cert | sha256sum)
stop_daemon "$DAEMON_PID"
check daemon-exits-cleanly grep -q "one-time keys destroyed" "$T/modsignd.log"
check socket-removed test ! -e "$T/sock"
start_daemon "$T/sock" --key default=ephemeral:rsa2048 || exit 1
check new-start-new-key test "$before" != "$($C cert | sha256sum)"

# An algorithm modsignd does not make (too small, or a prime count it does
# not offer for the size) stops the start with a line naming the key.
for alg in rsa1024 rsa2048-3p rsa4096-5p; do
	if timeout 30 "$MODSIGND" --listen "unix:$T/s-alg" --key "k=ephemeral:$alg" >"$T/alg.out" 2>&1; then
		fail "refuses-algorithm $alg" "exit 0"
	else
		check "refuses-algorithm $alg" grep -q "key k=ephemeral:$alg: unknown key algorithm" "$T/alg.out"
	fi
done
