#!/bin/bash
# Keys on a PKCS#11 token: a SoftHSM2 token in a temporary directory with
# RSA-4096 and ECDSA P-384 keys made on it and their certificates stored on
# it, reached through p11-kit's proxy as a real HSM would be.  Real modules
# are signed through modsignd and checked with modsign-client, openssl cms
# and modinfo; a software key imported into the token must sign byte for
# byte as the same key from a file.  Then the token fails (wrong PIN, token
# gone, key deleted): requests for that key fail naming it, the module is
# untouched, the other keys keep signing, and the key recovers.
. "$(dirname "$0")/../lib.sh"

SOFTHSM=/usr/lib/softhsm/libsofthsm2.so
for tool in softhsm2-util pkcs11-tool certtool; do
	command -v $tool >/dev/null || { fail hsm-tools "$tool missing (tests/install-deps.sh)"; exit 1; }
done
[ -e "$SOFTHSM" ] || { fail hsm-tools "$SOFTHSM missing"; exit 1; }

export SOFTHSM2_CONF=$T/softhsm2.conf
mkdir -p "$T/tokens" "$T/away"
printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
	"$T/tokens" >"$SOFTHSM2_CONF"
softhsm2-util --init-token --free --label modsign --so-pin 0000 --pin 1234 >/dev/null ||
	{ fail hsm-token "cannot make a SoftHSM2 token"; exit 1; }
p11() { pkcs11-tool --module "$SOFTHSM" --token-label modsign --login --pin 1234 "$@" >/dev/null 2>&1; }

# A self-signed certificate made by the token key LABEL (GnuTLS through
# p11-kit; the PIN in the environment of this one test command only).
token_cert() { # LABEL HASH OUT.pem
	printf 'cn = "modsign hsm %s"\norganization = "modsign tests"\nexpiration_days = 3650\nsigning_key\nserial = %d\n' \
		"$1" "$RANDOM" >"$T/$1.tmpl"
	GNUTLS_PIN=1234 certtool --generate-self-signed --hash "$2" --template "$T/$1.tmpl" \
		--load-privkey "pkcs11:token=modsign;object=$1;type=private" --outfile "$3" >/dev/null 2>&1
}
store_cert() { # PEM ID LABEL
	openssl x509 -in "$1" -outform der -out "$1.der" && p11 --write-object "$1.der" --type cert --id "$2" --label "$3"
}
import_key() { # PEM ID LABEL
	openssl pkey -in "$1" -outform der -out "$T/$3.key.der" &&
		p11 --write-object "$T/$3.key.der" --type privkey --id "$2" --label "$3"
}

p11 --keypairgen --key-type rsa:4096 --label rsa --id 01 &&
	p11 --keypairgen --key-type EC:secp384r1 --label ec --id 02 &&
	token_cert rsa sha256 "$T/rsa.pem" && store_cert "$T/rsa.pem" 01 rsa &&
	token_cert ec sha384 "$T/ec.pem" && store_cert "$T/ec.pem" 02 ec ||
	{ fail hsm-keys "cannot make keys and certificates on the token"; exit 1; }
make_pem_key "$T/imp.pem" rsa:4096 "modsign imported"
import_key "$T/imp.pem" 03 imp && store_cert "$T/imp.pem" 03 imp ||
	{ fail hsm-import "cannot import a key into the token"; exit 1; }
umask 077
echo 1234 >"$T/pin"

URI="pkcs11:token=modsign;object"
start_daemon "$T/sock" --key rsa="$URI=rsa" --key ec="$URI=ec;type=private" \
	--key imp="$URI=imp" --key file="$T/imp.pem" --key soft=ephemeral:ecdsa-p256 \
	--pin-file "$T/pin" --allow uid:0 || { fail hsm-daemon "modsignd did not start"; exit 1; }
HSMD=$DAEMON_PID
export MODSIGN_SERVER=unix:$T/sock
C=$CLIENT

status_of() { # KEY FIELD: the field in the key's block of `status`
	$C status | awk -v k="key $1" -v f="  $2:" 'index($0, k) == 1 { on = 1; next }
		/^key / { on = 0 } on && index($0, f) == 1 { sub(f " *", ""); print }'
}
$C status >"$T/status"
check status-backend-pkcs11 grep -q "^key rsa: rsa4096, pkcs11" "$T/status"
refute status-backend-pkcs11-tampered grep -q "^key soft: .*pkcs11" "$T/status"
check status-health-ok test "$(status_of rsa health)" = ok
refute status-health-ok-tampered test "$(status_of rsa health)" = unavailable
check status-ec-p384 grep -q "^key ec: ecdsa-p384, pkcs11" "$T/status"

# ---- signing ----------------------------------------------------------------
mkdir "$T/m"
for m in $(real_modules 6); do cp "$m" "$T/m/"; done
$C strip "$T"/m/*.ko 2>/dev/null
mkdir "$T/rsa" "$T/ec" "$T/imp" "$T/file"
for d in rsa ec imp file; do cp "$T"/m/*.ko "$T/$d/"; done
$C cert --key rsa >"$T/rsa.served.pem"
check cert-from-token cmp <(openssl x509 -in "$T/rsa.pem" -outform der) \
	<(openssl x509 -in "$T/rsa.served.pem" -outform der)
refute cert-from-token-tampered cmp <(openssl x509 -in "$T/ec.pem" -outform der) \
	<(openssl x509 -in "$T/rsa.served.pem" -outform der)

check sign-rsa4096-token $C sign --key rsa "$T"/rsa/*.ko
check sign-p384-token $C sign --key ec --hash sha384 "$T"/ec/*.ko
check verify-rsa4096 $C verify --cert "$T/rsa.pem" "$T"/rsa/*.ko
refute verify-rsa4096-other-cert $C verify --cert "$T/ec.pem" "$T"/rsa/*.ko
check verify-p384 $C verify --cert "$T/ec.pem" "$T"/ec/*.ko
refute verify-p384-other-cert $C verify --cert "$T/rsa.pem" "$T"/ec/*.ko

cms_verify() { # MOD CERT
	split_module "$1" "$T/body" "$T/sig" &&
		openssl cms -verify -binary -inform DER -in "$T/sig" -content "$T/body" \
			-certfile "$2" -nointern -noverify -out /dev/null
}
first=$(ls "$T"/rsa/*.ko | head -1)
check openssl-cms-rsa cms_verify "$first" "$T/rsa.pem"
cp "$first" "$T/tampered.ko"
flip_byte "$T/tampered.ko" 100
refute openssl-cms-rsa-tampered cms_verify "$T/tampered.ko" "$T/rsa.pem"
efirst=$(ls "$T"/ec/*.ko | head -1)
check openssl-cms-p384 cms_verify "$efirst" "$T/ec.pem"
refute openssl-cms-p384-wrong-cert cms_verify "$efirst" "$T/rsa.pem"

serial=$(openssl x509 -in "$T/rsa.pem" -noout -serial | cut -d= -f2)
modinfo_ok() { # MOD SIGNER HASH
	modinfo "$1" >"$T/modinfo" && grep -q "signer: *$2\$" "$T/modinfo" &&
		grep -q "sig_hashalgo: *$3\$" "$T/modinfo" && grep -q "sig_id: *PKCS#7" "$T/modinfo"
}
check modinfo-rsa modinfo_ok "$first" "modsign hsm rsa" sha256
refute modinfo-rsa-unsigned modinfo_ok "$(ls "$T"/m/*.ko | head -1)" "modsign hsm rsa" sha256
check modinfo-p384 modinfo_ok "$efirst" "modsign hsm ec" sha384
check modinfo-sig-key-is-serial bash -c "modinfo -F sig_key '$first' | tr -d ':\n' | grep -qix '0*$serial'"

# The same RSA key in the token and in a file: the same bytes (PKCS#1 v1.5
# is deterministic), module for module.
$C sign --key imp "$T"/imp/*.ko && $C sign --key file "$T"/file/*.ko
same_bytes() { for f in "$T"/imp/*.ko; do cmp -s "$f" "$T/file/$(basename "$f")" || return 1; done; }
check rsa-token-equals-file same_bytes
refute rsa-other-token-key-differs cmp -s "$first" "$T/file/$(basename "$first")"

# ---- several clients at once ---------------------------------------------------
small=$(ls -S "$T"/m/*.ko | tail -1)
for c in 1 2 3 4; do
	mkdir "$T/c$c"
	for i in $(seq 1 25); do cp "$small" "$T/c$c/m$i.ko"; done
done
concurrent() {
	local pids=() rc=0
	for c in 1 2 3 4; do
		$C sign --key "$1" "$T/c$c"/*.ko & pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return $rc
}
check concurrent-4-clients concurrent rsa
check concurrent-all-verify $C verify --cert "$T/rsa.pem" "$T"/c[1-4]/*.ko
flip_byte "$T/c3/m7.ko" 200
refute concurrent-tampered-fails $C verify --cert "$T/rsa.pem" "$T/c3/m7.ko"

# ---- failures ------------------------------------------------------------------
# fails_naming NAME KEY REASON: signing with KEY fails with one line naming
# the key and REASON, and the module is byte for byte what it was.
fails_naming() {
	local name=$1 key=$2 reason=$3 mod="$T/victim.ko" before after
	cp "$small" "$mod"
	before=$(sha "$mod")
	if $C sign --key "$key" "$mod" 2>"$T/err"; then
		fail "$name" "signed"
		return
	fi
	after=$(sha "$mod")
	if [ "$before" != "$after" ]; then
		fail "$name" "module changed"
	elif ! grep -q "key $key" "$T/err" || ! grep -q -- "$reason" "$T/err"; then
		fail "$name" "error lacks key or reason: $(cat "$T/err")"
	else
		pass "$name"
	fi
}
signs() { # KEY [HASH]
	cp "$small" "$T/probe-$1.ko" && $C sign --key "$1" ${2:+--hash $2} "$T/probe-$1.ko" &&
		$C cert --key "$1" >"$T/probe-$1.pem" && $C verify --cert "$T/probe-$1.pem" "$T/probe-$1.ko"
}
recovers() { # KEY: within a few retry intervals
	for _ in 1 2 3 4 5 6; do
		sleep 0.6
		signs "$1" 2>/dev/null && return 0
	done
	return 1
}

# Token gone: SoftHSM2 sees its token directory vanish.
mv "$T"/tokens/* "$T/away/"
fails_naming token-gone-fails rsa "token not present"
check token-gone-other-key-signs signs soft
check token-gone-file-key-signs signs file
check token-gone-status-unavailable test "$(status_of rsa health)" != ok
refute token-gone-status-tampered test "$(status_of soft health)" != ok
mv "$T"/away/* "$T/tokens/"
check token-back-recovers recovers rsa
check token-back-status-ok test "$(status_of rsa health)" = ok
check token-back-ec-recovers signs ec sha384

# Key deleted from the token, then put back (the imported key).
p11 --delete-object --type privkey --id 03
fails_naming key-deleted-fails imp "private key"
check key-deleted-other-key-signs signs rsa
refute key-deleted-not-signed signs imp
import_key "$T/imp.pem" 03 imp
check key-restored-recovers recovers imp
cp "$small" "$T/again-imp.ko"; cp "$small" "$T/again-file.ko"
$C sign --key imp "$T/again-imp.ko"; $C sign --key file "$T/again-file.ko"
check key-restored-same-bytes cmp "$T/again-imp.ko" "$T/again-file.ko"

# Wrong PIN: the token goes away and comes back while the PIN file is
# wrong, so the daemon must log in again.
echo 9999 >"$T/pin"
mv "$T"/tokens/* "$T/away/"
fails_naming pin-token-gone rsa "token not present"
mv "$T"/away/* "$T/tokens/"
sleep 1.1
fails_naming wrong-pin-fails rsa "refused the PIN"
check wrong-pin-other-key-signs signs soft
grep -q 9999 "$T/modsignd.log" && fail wrong-pin-not-logged "PIN in the log" || pass wrong-pin-not-logged
echo 1234 >"$T/pin"
check right-pin-recovers recovers rsa

# A long outage: the module is reloaded each second a few times, then less
# and less often (SoftHSM2 keeps about 20 KiB at each reload, so a reload
# a second grew the daemon by a megabyte a minute); SIGHUP says the token
# is back, and the next request reloads at once.
#
# Requests go on until the 7th reload, noting when each one appeared. The
# gaps are 1, 1, 1, 1, 2 and then 4 s; after the 7th the next is 8 s away,
# so a token put back then is not seen until that reload or a SIGHUP.
# (A fixed 12 s of requests once ended right as the 7th reload fell due.)
reloads() { grep -c "PKCS#11 module .* reloaded" "$T/modsignd.log"; }
ms() { echo $(($(date +%s%N) / 1000000)); }
r0=$(reloads) n=0 t0=$(ms)
declare -a at=()
mv "$T"/tokens/* "$T/away/"
while [ "$n" -lt 7 ] && [ $(($(ms) - t0)) -lt 40000 ]; do
	signs rsa 2>/dev/null
	now=$(($(reloads) - r0))
	while [ "$n" -lt "$now" ]; do n=$((n + 1)) && at[n]=$(($(ms) - t0)); done
	sleep 0.3
done
gap=$((${at[7]:-0} - ${at[6]:-0})) span=$((${at[7]:-0} - ${at[1]:-0}))
check "long-outage-reloads-back-off (7th reload ${gap} ms after the 6th, ${span} ms after the 1st)" \
	test "$n" -ge 7 -a "$gap" -ge 3000 -a "$span" -ge 8000
check long-outage-logged grep -q "token still gone, reloading less often" "$T/modsignd.log"
mv "$T"/away/* "$T/tokens/"
refute long-outage-token-back-waits-for-its-turn signs rsa
# The daemon logs the SIGHUP on its main thread just before acting on it,
# and serves no request in between: once the line is there, the first
# request must sign (the next scheduled reload is 8 s away).
hups() { grep -c "SIGHUP: re-reading the policy" "$T/modsignd.log"; }
h0=$(hups)
kill -HUP "$HSMD"
hup_seen() { [ "$(hups)" -gt "$h0" ]; }
eventually 5 hup_seen
check sighup-after-outage-signs-at-once signs rsa
check daemon-still-running kill -0 "$HSMD"

# ---- start-up ------------------------------------------------------------------
# startup_fails NAME REASON ARGS...: modsignd exits non-zero with REASON.
startup_fails() {
	local name=$1 reason=$2
	shift 2
	if timeout 30 "$MODSIGND" --listen "unix:$T/sock2" "$@" >"$T/out2" 2>&1; then
		fail "$name" "exit 0"
	elif ! grep -q -- "$reason" "$T/out2"; then
		fail "$name" "no '$reason': $(tail -n 2 "$T/out2")"
	else
		pass "$name"
	fi
}
echo 0000 >"$T/badpin"
startup_fails wrong-pin-at-start "refused the PIN" --key rsa="$URI=rsa" --pin-file "$T/badpin"
check wrong-pin-at-start-names-key grep -q "key rsa" "$T/out2"
chmod 644 "$T/pin"
startup_fails pin-file-mode-refused "group or others" --key rsa="$URI=rsa" --pin-file "$T/pin"
chmod 600 "$T/pin"
startup_fails pin-in-uri-refused "no PIN in the URI" --key rsa="$URI=rsa;pin-value=1234"
refute pin-in-uri-not-logged grep -q "pin-value=1234" "$T/out2"
startup_fails no-pin-refused "needs a PIN" --key rsa="$URI=rsa"
startup_fails no-such-key "no private key" --key x="$URI=nosuch" --pin-file "$T/pin"
startup_fails cert-without-key "no PKCS#11 key" --key rsa="$URI=rsa" --pin-file "$T/pin" \
	--cert other="$T/rsa.pem"

# A key with no certificate on the token takes one from --cert; the module
# named in the URI (module-path=), the PIN from a systemd credential.
p11 --keypairgen --key-type EC:secp384r1 --label nocert --id 04
token_cert nocert sha384 "$T/nocert.pem"
NC="pkcs11:token=modsign;object=nocert?module-path=$SOFTHSM"
mkdir -m 700 "$T/creds"
cp "$T/pin" "$T/creds/pkcs11-pin"
chmod 400 "$T/creds/pkcs11-pin"
startup_fails token-without-cert "give --cert" --key nc="$NC" --pin-file "$T/pin"
startup_fails cert-not-matching "does not match" --key nc="$NC" --pin-file "$T/pin" \
	--cert nc="$T/ec.pem"
startup_fails bad-module "cannot load the PKCS#11 module" --key nc="$URI=nocert" \
	--pin-file "$T/pin" --pkcs11-module "$T/nosuch.so"
startup_fails module-path-before-option "give --cert" --key nc="$NC" --pin-file "$T/pin" \
	--pkcs11-module "$T/nosuch.so"
CREDENTIALS_DIRECTORY=$T/creds start_daemon "$T/sock3" --key nc="pkcs11:token=modsign;object=nocert" \
	--cert nc="$T/nocert.pem" --pkcs11-module "$SOFTHSM" --allow uid:0 ||
	fail cert-option-daemon "did not start"
cp "$small" "$T/nc.ko"
check cert-option-signs env MODSIGN_SERVER="unix:$T/sock3" $C sign --key nc --hash sha384 "$T/nc.ko"
check cert-option-verifies $C verify --cert "$T/nocert.pem" "$T/nc.ko"
refute cert-option-verify-tampered $C verify --cert "$T/ec.pem" "$T/nc.ko"
check pkcs11-module-option-and-credential \
	env MODSIGN_SERVER="unix:$T/sock3" $C status

# A URI naming the key by CKA_ID alone; its certificate found by that id.
start_daemon "$T/sock4" --key byid="pkcs11:token=modsign;id=%03;type=private" \
	--pin-file "$T/pin" --allow uid:0 || fail uri-by-id-daemon "did not start"
cp "$small" "$T/byid.ko"
cp "$small" "$T/byid-file.ko"
check uri-by-id-signs env MODSIGN_SERVER="unix:$T/sock4" $C sign "$T/byid.ko"
$C sign --key file "$T/byid-file.ko"
check uri-by-id-same-bytes cmp "$T/byid.ko" "$T/byid-file.ko"
refute uri-by-id-other-key-differs cmp -s "$T/byid.ko" "$T/probe-rsa.ko"
