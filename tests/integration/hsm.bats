#!/usr/bin/env bats
# Keys on a PKCS#11 token: a SoftHSM2 token with RSA-4096 and ECDSA P-384
# keys made on it and their certificates stored on it, reached through
# p11-kit's proxy as a real HSM would be.  Real modules are signed through
# modsignd and checked with modsign-client, openssl cms and modinfo; a
# software key imported into the token must sign byte for byte as the same
# key from a file.  Then the token fails (wrong PIN, token gone, key
# deleted): requests for that key fail naming it, the module is untouched,
# the other keys keep signing, and the key recovers.
#
# The token is built once, in setup_file: an RSA-4096 key pair generated
# on SoftHSM2, an RSA-4096 key made by openssl and imported, two P-384
# pairs and the certificates made with them take seconds, and every case
# would make the same ones.  No case uses that token itself: each copies
# its directory into its own $T, points SOFTHSM2_CONF there and starts its
# own daemon, so a case that takes the token away, deletes a key or
# changes the PIN harms no other case, and no case depends on another.

load ../common

SOFTHSM=/usr/lib/softhsm/libsofthsm2.so
URI="pkcs11:token=modsign;object"

# On the token of $SOFTHSM2_CONF, logged in.
p11() { pkcs11-tool --module "$SOFTHSM" --token-label modsign --login --pin 1234 "$@" >/dev/null 2>&1; }

# A self-signed certificate made by the token key LABEL (GnuTLS through
# p11-kit; the PIN in the environment of this one command only).
token_cert() { # LABEL HASH OUT.pem
	printf 'cn = "modsign hsm %s"\norganization = "modsign tests"\nexpiration_days = 3650\nsigning_key\nserial = %d\n' \
		"$1" "$RANDOM" >"$3.tmpl"
	GNUTLS_PIN=1234 certtool --generate-self-signed --hash "$2" --template "$3.tmpl" \
		--load-privkey "pkcs11:token=modsign;object=$1;type=private" --outfile "$3" >/dev/null 2>&1
}
store_cert() { # PEM ID LABEL
	openssl x509 -in "$1" -outform der -out "$1.der" && p11 --write-object "$1.der" --type cert --id "$2" --label "$3"
}
import_key() { # PEM ID LABEL DIR
	openssl pkey -in "$1" -outform der -out "$4/$3.key.der" &&
		p11 --write-object "$4/$3.key.der" --type privkey --id "$2" --label "$3"
}

setup_file() {
	local F=$BATS_FILE_TMPDIR tool m

	for tool in softhsm2-util pkcs11-tool certtool; do
		command -v $tool >/dev/null || { echo "hsm-tools: $tool missing (tests/install-deps.sh)" >&2; return 1; }
	done
	[ -e "$SOFTHSM" ] || { echo "hsm-tools: $SOFTHSM missing" >&2; return 1; }
	export SOFTHSM2_CONF=$F/softhsm2.conf
	mkdir "$F/tokens"
	softhsm_conf "$F"
	softhsm2-util --init-token --free --label modsign --so-pin 0000 --pin 1234 >/dev/null ||
		{ echo "hsm-token: cannot make a SoftHSM2 token" >&2; return 1; }
	p11 --keypairgen --key-type rsa:4096 --label rsa --id 01 &&
		p11 --keypairgen --key-type EC:secp384r1 --label ec --id 02 &&
		token_cert rsa sha256 "$F/rsa.pem" && store_cert "$F/rsa.pem" 01 rsa &&
		token_cert ec sha384 "$F/ec.pem" && store_cert "$F/ec.pem" 02 ec ||
		{ echo "hsm-keys: cannot make keys and certificates on the token" >&2; return 1; }
	make_pem_key "$F/imp.pem" rsa:4096 "modsign imported"
	import_key "$F/imp.pem" 03 imp "$F" && store_cert "$F/imp.pem" 03 imp ||
		{ echo "hsm-import: cannot import a key into the token" >&2; return 1; }
	# A key with no certificate on the token (its certificate only in a
	# file, for --cert); no case names it but those about --cert.
	p11 --keypairgen --key-type EC:secp384r1 --label nocert --id 04 &&
		token_cert nocert sha384 "$F/nocert.pem" ||
		{ echo "hsm-nocert: cannot make the key without a certificate" >&2; return 1; }
	# Debian's modules arrive signed by Debian's key: strip (offline).
	mkdir "$F/m"
	for m in $(real_modules 6); do cp "$m" "$F/m/"; done
	"$CLIENT" strip "$F"/m/*.ko
	cp "$(ls -S "$F"/m/*.ko | tail -1)" "$F/small.ko"
}

setup() {
	case_setup
	F=$BATS_FILE_TMPDIR
	umask 077
	cp -a "$F/tokens" "$T/tokens"
	mkdir "$T/away"
	softhsm_conf "$T"
	export SOFTHSM2_CONF=$T/softhsm2.conf
	echo 1234 >"$T/pin"
	chmod 600 "$T/pin"
}

# The daemon most cases use: three keys on the token, the imported one
# also from its file, and a software key, off the token.
main_daemon() {
	start_daemon "$T/sock" --key rsa="$URI=rsa" --key ec="$URI=ec;type=private" \
		--key imp="$URI=imp" --key file="$F/imp.pem" --key soft=ephemeral:ecdsa-p256 \
		--pin-file "$T/pin" --allow uid:0
	HSMD=$DAEMON_PID
	export MODSIGN_SERVER=unix:$T/sock
}

status_of() { # KEY FIELD: the field in the key's block of `status`
	"$C" status | awk -v k="key $1" -v f="  $2:" 'index($0, k) == 1 { on = 1; next }
		/^key / { on = 0 } on && index($0, f) == 1 { sub(f " *", ""); print }'
}

# modules DIR...: the stripped modules in each $T/DIR.
modules() {
	local d
	for d in "$@"; do mkdir "$T/$d" && cp "$F"/m/*.ko "$T/$d/"; done
}
first() { ls "$T/$1"/*.ko | head -1; }

# ---- status -------------------------------------------------------------------
@test "status-backend-pkcs11" {
	main_daemon
	"$C" status >status
	run grep "^key rsa: rsa4096, pkcs11" status
	assert_success
}

@test "status-backend-pkcs11-tampered" {
	main_daemon
	"$C" status >status
	run grep "^key soft: .*pkcs11" status
	assert_failure
}

@test "status-health-ok" {
	main_daemon
	assert_equal "$(status_of rsa health)" ok
}

@test "status-health-ok-tampered" {
	main_daemon
	run status_of rsa health
	refute_output unavailable
}

@test "status-ec-p384" {
	main_daemon
	"$C" status >status
	run grep "^key ec: ecdsa-p384, pkcs11" status
	assert_success
}

# ---- signing ----------------------------------------------------------------
@test "cert-from-token" {
	main_daemon
	"$C" cert --key rsa >served.pem
	cmp <(openssl x509 -in "$F/rsa.pem" -outform der) <(openssl x509 -in served.pem -outform der)
}

@test "cert-from-token-tampered" {
	main_daemon
	"$C" cert --key rsa >served.pem
	run cmp <(openssl x509 -in "$F/ec.pem" -outform der) <(openssl x509 -in served.pem -outform der)
	assert_failure
}

@test "sign-rsa4096-token" {
	main_daemon
	modules rsa
	run "$C" sign --key rsa "$T"/rsa/*.ko
	assert_success
}

@test "sign-p384-token" {
	main_daemon
	modules ec
	run "$C" sign --key ec --hash sha384 "$T"/ec/*.ko
	assert_success
}

@test "verify-rsa4096" {
	main_daemon
	modules rsa
	"$C" sign --key rsa "$T"/rsa/*.ko
	run "$C" verify --cert "$F/rsa.pem" "$T"/rsa/*.ko
	assert_success
}

@test "verify-rsa4096-other-cert" {
	main_daemon
	modules rsa
	"$C" sign --key rsa "$T"/rsa/*.ko
	run "$C" verify --cert "$F/ec.pem" "$T"/rsa/*.ko
	assert_failure
}

@test "verify-p384" {
	main_daemon
	modules ec
	"$C" sign --key ec --hash sha384 "$T"/ec/*.ko
	run "$C" verify --cert "$F/ec.pem" "$T"/ec/*.ko
	assert_success
}

@test "verify-p384-other-cert" {
	main_daemon
	modules ec
	"$C" sign --key ec --hash sha384 "$T"/ec/*.ko
	run "$C" verify --cert "$F/rsa.pem" "$T"/ec/*.ko
	assert_failure
}

@test "openssl-cms-rsa" {
	main_daemon
	modules rsa
	"$C" sign --key rsa "$T"/rsa/*.ko
	run cms_verify_module "$(first rsa)" "$F/rsa.pem"
	assert_success
}

@test "openssl-cms-rsa-tampered" {
	main_daemon
	modules rsa
	"$C" sign --key rsa "$T"/rsa/*.ko
	cp "$(first rsa)" tampered.ko
	flip_bit_at tampered.ko 100
	run cms_verify_module tampered.ko "$F/rsa.pem"
	assert_failure
}

@test "openssl-cms-p384" {
	main_daemon
	modules ec
	"$C" sign --key ec --hash sha384 "$T"/ec/*.ko
	run cms_verify_module "$(first ec)" "$F/ec.pem"
	assert_success
}

@test "openssl-cms-p384-wrong-cert" {
	main_daemon
	modules ec
	"$C" sign --key ec --hash sha384 "$T"/ec/*.ko
	run cms_verify_module "$(first ec)" "$F/rsa.pem"
	assert_failure
}

modinfo_ok() { # MOD SIGNER HASH
	modinfo "$1" >"$T/modinfo" && grep -q "signer: *$2\$" "$T/modinfo" &&
		grep -q "sig_hashalgo: *$3\$" "$T/modinfo" && grep -q "sig_id: *PKCS#7" "$T/modinfo"
}

@test "modinfo-rsa" {
	main_daemon
	modules rsa
	"$C" sign --key rsa "$T"/rsa/*.ko
	run modinfo_ok "$(first rsa)" "modsign hsm rsa" sha256
	assert_success
}

@test "modinfo-rsa-unsigned" {
	main_daemon
	modules m
	run modinfo_ok "$(first m)" "modsign hsm rsa" sha256
	assert_failure
}

@test "modinfo-p384" {
	main_daemon
	modules ec
	"$C" sign --key ec --hash sha384 "$T"/ec/*.ko
	run modinfo_ok "$(first ec)" "modsign hsm ec" sha384
	assert_success
}

@test "modinfo-sig-key-is-serial" {
	local serial key
	main_daemon
	modules rsa
	"$C" sign --key rsa "$T"/rsa/*.ko
	serial=$(openssl x509 -in "$F/rsa.pem" -noout -serial | cut -d= -f2)
	key=$(modinfo -F sig_key "$(first rsa)" | tr -d ':\n')
	# The same number, but for leading zeros.
	echo "$key" | grep -qix "0*$serial" || { echo "sig_key $key, serial $serial"; false; }
}

# The same RSA key in the token and in a file: the same bytes (PKCS#1 v1.5
# is deterministic), module for module.
same_bytes() { # DIR DIR
	local f
	for f in "$T/$1"/*.ko; do cmp "$f" "$T/$2/$(basename "$f")" || return 1; done
}

@test "rsa-token-equals-file" {
	main_daemon
	modules imp file
	"$C" sign --key imp "$T"/imp/*.ko
	"$C" sign --key file "$T"/file/*.ko
	run same_bytes imp file
	assert_success
}

@test "sha3-token-rsa-equals-file-ec-verifies" {
	# SHA-3 through the token: the RSA DigestInfo is made here, the
	# token signs it raw, so the bytes are the file key's; ECDSA signs
	# the bare digest.  Twin: one flipped bit fails verify.
	main_daemon
	modules imp file ec
	"$C" sign --key imp --hash sha3-256 "$T"/imp/*.ko
	"$C" sign --key file --hash sha3-256 "$T"/file/*.ko
	run same_bytes imp file
	assert_success
	"$C" sign --key ec --hash sha3-384 "$T"/ec/*.ko
	"$C" cert --key ec >"$T/ec.crt"
	run "$C" verify --cert "$T/ec.crt" "$T"/ec/*.ko
	assert_success
	assert_equal "$(grep -c 'OK (sha3-384)' <<<"$output")" "$(ls "$T"/ec/*.ko | wc -l)"
	flip_bit_at "$(first ec)" 100
	run "$C" verify --cert "$T/ec.crt" "$(first ec)"
	assert_failure
}

@test "rsa-other-token-key-differs" {
	main_daemon
	modules rsa file
	"$C" sign --key rsa "$T"/rsa/*.ko
	"$C" sign --key file "$T"/file/*.ko
	run cmp -s "$(first rsa)" "$T/file/$(basename "$(first rsa)")"
	assert_failure
}

# ---- several clients at once ---------------------------------------------------
# Four clients, each signing 25 copies of a small module at the same time.
concurrent() { # KEY
	local pids=() rc=0 c i
	for c in 1 2 3 4; do
		mkdir "$T/c$c"
		for i in $(seq 1 25); do cp "$F/small.ko" "$T/c$c/m$i.ko"; done
	done
	for c in 1 2 3 4; do
		"$C" sign --key "$1" "$T/c$c"/*.ko 3>&- &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=1; done
	return $rc
}

@test "concurrent-4-clients" {
	main_daemon
	run concurrent rsa
	assert_success
}

@test "concurrent-all-verify" {
	main_daemon
	concurrent rsa
	run "$C" verify --cert "$F/rsa.pem" "$T"/c[1-4]/*.ko
	assert_success
}

@test "concurrent-tampered-fails" {
	main_daemon
	concurrent rsa
	flip_bit_at "$T/c3/m7.ko" 200
	run "$C" verify --cert "$F/rsa.pem" "$T/c3/m7.ko"
	assert_failure
}

# ---- failures ------------------------------------------------------------------
# fails_naming KEY REASON: signing with KEY fails with one line naming the
# key and REASON, and the module is byte for byte what it was.
fails_naming() {
	local key=$1 reason=$2 mod="$T/victim.ko" before
	cp "$F/small.ko" "$mod"
	before=$(sha "$mod")
	run "$C" sign --key "$key" "$mod"
	assert_failure
	assert_equal "$(sha "$mod")" "$before"
	assert_output --partial "key $key"
	assert_output --partial "$reason"
}
signs() { # KEY [HASH]
	cp "$F/small.ko" "$T/probe-$1.ko" && "$C" sign --key "$1" ${2:+--hash $2} "$T/probe-$1.ko" &&
		"$C" cert --key "$1" >"$T/probe-$1.pem" && "$C" verify --cert "$T/probe-$1.pem" "$T/probe-$1.ko"
}
# A key that was unavailable is tried again at most once a second: it
# signs again within a few of those.
recovers() { # KEY
	eventually 15 signs "$1" 2>/dev/null
}

# Token gone: SoftHSM2 sees its token directory vanish; the first request
# for a key on it finds out.
token_gone() {
	mv "$T"/tokens/* "$T/away/"
	fails_naming rsa "token unavailable"
}
token_back() { mv "$T"/away/* "$T/tokens/"; }

@test "token-gone-fails" {
	main_daemon
	token_gone
}

@test "token-gone-other-key-signs" {
	main_daemon
	token_gone
	run signs soft
	assert_success
}

@test "token-gone-file-key-signs" {
	main_daemon
	token_gone
	run signs file
	assert_success
}

@test "token-gone-status-unavailable" {
	main_daemon
	token_gone
	run status_of rsa health
	refute_output ok
}

@test "token-gone-status-tampered" {
	main_daemon
	token_gone
	run status_of soft health
	assert_output ok
}

@test "token-back-recovers" {
	main_daemon
	token_gone
	token_back
	run recovers rsa
	assert_success
}

@test "token-back-status-ok" {
	main_daemon
	token_gone
	token_back
	recovers rsa
	assert_equal "$(status_of rsa health)" ok
}

@test "token-back-ec-recovers" {
	main_daemon
	token_gone
	token_back
	recovers rsa
	run signs ec sha384
	assert_success
}

# Key deleted from the token (the imported key), then put back.
key_deleted() {
	p11 --delete-object --type privkey --id 03
}

@test "key-deleted-fails" {
	main_daemon
	key_deleted
	fails_naming imp "private key"
}

@test "key-deleted-other-key-signs" {
	main_daemon
	key_deleted
	fails_naming imp "private key"
	run signs rsa
	assert_success
}

@test "key-deleted-not-signed" {
	main_daemon
	key_deleted
	fails_naming imp "private key"
	run signs imp
	assert_failure
}

@test "key-restored-recovers" {
	main_daemon
	key_deleted
	fails_naming imp "private key"
	import_key "$F/imp.pem" 03 imp "$T"
	run recovers imp
	assert_success
}

@test "key-restored-same-bytes" {
	main_daemon
	key_deleted
	fails_naming imp "private key"
	import_key "$F/imp.pem" 03 imp "$T"
	recovers imp
	cp "$F/small.ko" again-imp.ko
	cp "$F/small.ko" again-file.ko
	"$C" sign --key imp again-imp.ko
	"$C" sign --key file again-file.ko
	run cmp again-imp.ko again-file.ko
	assert_success
}

# Wrong PIN: the token goes away and comes back while the PIN file is
# wrong, so the daemon must log in again.  Until the key is tried again
# (at most once a second) a request still finds it gone.
pin_token_gone() {
	echo 9999 >"$T/pin"
	token_gone
}
pin_refused() {
	local out
	out=$("$C" sign --key rsa "$T/victim.ko" 2>&1)
	[[ $out == *"refused the PIN"* ]]
}
wrong_pin() {
	pin_token_gone
	token_back
	eventually 15 pin_refused || { echo "never refused the PIN"; tail -n 5 "$T/modsignd.log"; false; }
	fails_naming rsa "refused the PIN"
}

@test "pin-token-gone" {
	main_daemon
	pin_token_gone
}

@test "wrong-pin-fails" {
	main_daemon
	wrong_pin
}

@test "wrong-pin-other-key-signs" {
	main_daemon
	wrong_pin
	run signs soft
	assert_success
}

@test "wrong-pin-not-logged" {
	main_daemon
	wrong_pin
	run grep 9999 "$T/modsignd.log"
	assert_failure
}

@test "right-pin-recovers" {
	main_daemon
	wrong_pin
	echo 1234 >"$T/pin"
	run recovers rsa
	assert_success
}

# A long outage: the module is reloaded each second a few times, then less
# and less often (SoftHSM2 keeps about 20 KiB at each reload, so a reload
# a second grew the daemon by a megabyte a minute); SIGHUP says the token
# is back, and the next request reloads at once.
#
# Requests go on until the 7th reload, noting when each one appeared. The
# gaps are 1, 1, 1, 1, 2 and then 4 s; after the 7th the next is 8 s away,
# so a token put back then is not seen until that reload or a SIGHUP.
# (A fixed 12 s of requests once ended right as the 7th reload fell due.)
# The times are lower bounds the daemon sets: a slower machine only makes
# the gaps longer.
# (grep -c prints 0 but fails when there is none: the case's set -e.)
pkcs11_reloads() { grep -c "PKCS#11 module .* reloaded" "$T/modsignd.log" || true; }
ms() { echo $(($(date +%s%N) / 1000000)); }
reload_seen() { # one request; true once the 7th reload is in the log
	local now
	signs rsa 2>/dev/null || true
	now=$(($(pkcs11_reloads) - r0))
	while [ "$n" -lt "$now" ]; do n=$((n + 1)) && at[n]=$(($(ms) - t0)); done
	[ "$n" -ge 7 ]
}
long_outage() { # sets n and at[1..n], the reloads' times in ms
	r0=$(pkcs11_reloads) n=0 t0=$(ms)
	at=()
	mv "$T"/tokens/* "$T/away/"
	eventually 60 reload_seen || { echo "$n reloads in 60 s"; false; }
}
# After the 7th reload the token comes back; a SIGHUP, logged.
outage_then_hup() {
	long_outage
	token_back
	hup "$HSMD"
}

@test "long-outage-reloads-back-off" {
	local gap span
	main_daemon
	long_outage
	gap=$((${at[7]:-0} - ${at[6]:-0})) span=$((${at[7]:-0} - ${at[1]:-0}))
	[ "$n" -ge 7 ] && [ "$gap" -ge 3000 ] && [ "$span" -ge 8000 ] ||
		{ echo "$n reloads; the 7th ${gap} ms after the 6th, ${span} ms after the 1st"; false; }
}

@test "long-outage-logged" {
	main_daemon
	long_outage
	run grep -q "token still gone, reloading less often" "$T/modsignd.log"
	assert_success
}

@test "long-outage-token-back-waits-for-its-turn" {
	main_daemon
	long_outage
	token_back
	run signs rsa
	assert_failure
}

@test "sighup-after-outage-signs-at-once" {
	# Once the line is there, the first request must sign (the next
	# scheduled reload is 8 s away).
	main_daemon
	outage_then_hup
	run signs rsa
	assert_success
}

@test "daemon-still-running" {
	main_daemon
	outage_then_hup
	signs rsa
	run kill -0 "$HSMD"
	assert_success
}

# ---- start-up ------------------------------------------------------------------
# startup_fails REASON ARGS...: modsignd exits non-zero saying REASON; its
# output in $output.
startup_fails() {
	local reason=$1
	shift
	run timeout 30 "$MODSIGND" --listen "unix:$T/sock2" "$@" 3>&-
	assert_failure
	refute [ "$status" -eq 124 ]
	assert_output --partial "$reason"
}

@test "wrong-pin-at-start" {
	echo 0000 >badpin
	startup_fails "refused the PIN" --key rsa="$URI=rsa" --pin-file "$T/badpin"
}

@test "wrong-pin-at-start-names-key" {
	echo 0000 >badpin
	startup_fails "refused the PIN" --key rsa="$URI=rsa" --pin-file "$T/badpin"
	assert_output --partial "key rsa"
}

@test "pin-file-mode-refused" {
	chmod 644 "$T/pin"
	startup_fails "group or others" --key rsa="$URI=rsa" --pin-file "$T/pin"
}

@test "pin-in-uri-refused" {
	startup_fails "no PIN in the URI" --key rsa="$URI=rsa;pin-value=1234"
}

@test "pin-in-uri-not-logged" {
	startup_fails "no PIN in the URI" --key rsa="$URI=rsa;pin-value=1234"
	refute_output --partial "pin-value=1234"
}

@test "no-pin-refused" {
	startup_fails "needs a PIN" --key rsa="$URI=rsa"
}

@test "no-such-key" {
	startup_fails "no private key" --key x="$URI=nosuch" --pin-file "$T/pin"
}

@test "cert-without-key" {
	startup_fails "no PKCS#11 key" --key rsa="$URI=rsa" --pin-file "$T/pin" \
		--cert other="$F/rsa.pem"
}

# A key with no certificate on the token takes one from --cert; the module
# named in the URI (module-path=), the PIN from a systemd credential.
NC="pkcs11:token=modsign;object=nocert?module-path=$SOFTHSM"

@test "token-without-cert" {
	startup_fails "give --cert" --key nc="$NC" --pin-file "$T/pin"
}

@test "cert-not-matching" {
	startup_fails "does not match" --key nc="$NC" --pin-file "$T/pin" --cert nc="$F/ec.pem"
}

@test "bad-module" {
	startup_fails "cannot load the PKCS#11 module" --key nc="$URI=nocert" \
		--pin-file "$T/pin" --pkcs11-module "$T/nosuch.so"
}

@test "module-path-before-option" {
	startup_fails "give --cert" --key nc="$NC" --pin-file "$T/pin" \
		--pkcs11-module "$T/nosuch.so"
}

# The PIN in a systemd credential (no --pin-file), the module from
# --pkcs11-module, the certificate from --cert.
cert_option_daemon() {
	mkdir -m 700 creds
	cp pin creds/pkcs11-pin
	chmod 400 creds/pkcs11-pin
	CREDENTIALS_DIRECTORY=$T/creds start_daemon "$T/sock3" \
		--key nc="pkcs11:token=modsign;object=nocert" --cert nc="$F/nocert.pem" \
		--pkcs11-module "$SOFTHSM" --allow uid:0
	export MODSIGN_SERVER=unix:$T/sock3
	cp "$F/small.ko" nc.ko
}

@test "cert-option-signs" {
	cert_option_daemon
	run "$C" sign --key nc --hash sha384 nc.ko
	assert_success
}

@test "cert-option-verifies" {
	cert_option_daemon
	"$C" sign --key nc --hash sha384 nc.ko
	run "$C" verify --cert "$F/nocert.pem" nc.ko
	assert_success
}

@test "cert-option-verify-tampered" {
	cert_option_daemon
	"$C" sign --key nc --hash sha384 nc.ko
	run "$C" verify --cert "$F/ec.pem" nc.ko
	assert_failure
}

@test "pkcs11-module-option-and-credential" {
	cert_option_daemon
	run "$C" status
	assert_success
}

# A URI naming the key by CKA_ID alone; its certificate found by that id.
# The imported key: the main daemon's file key is the same one.
byid_daemon() {
	start_daemon "$T/sock4" --key byid="pkcs11:token=modsign;id=%03;type=private" \
		--pin-file "$T/pin" --allow uid:0
	cp "$F/small.ko" byid.ko
	cp "$F/small.ko" byid-file.ko
}

@test "uri-by-id-signs" {
	byid_daemon
	run env MODSIGN_SERVER="unix:$T/sock4" "$C" sign byid.ko
	assert_success
}

@test "uri-by-id-same-bytes" {
	byid_daemon
	main_daemon
	MODSIGN_SERVER="unix:$T/sock4" "$C" sign byid.ko
	"$C" sign --key file byid-file.ko
	run cmp byid.ko byid-file.ko
	assert_success
}

@test "uri-by-id-other-key-differs" {
	byid_daemon
	main_daemon
	MODSIGN_SERVER="unix:$T/sock4" "$C" sign byid.ko
	signs rsa
	run cmp -s byid.ko "$T/probe-rsa.ko"
	assert_failure
}
