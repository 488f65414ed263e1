#!/bin/bash
# Concurrent signing on a SoftHSM2 token: CLIENTS clients, each signing
# SIGS copies of a small real module, against one modsignd binary.
#   tests/hsm-bench.sh [MODSIGND] [WORKERS] [CLIENTS] [SIGS]
# Prints one line per key: signatures, seconds, signatures per second.
# docs/HSM.md has its figures for libp11's session pool (and, measured
# once, for one signature at a time per key).
. "$(dirname "$0")/helpers.sh"
set -uo pipefail
test_paths
script_tmpdir || exit 1
MODSIGND=${1:-$MODSIGND}
WORKERS=${2:-$(nproc)}
CLIENTS=${3:-4}
SIGS=${4:-200}
SOFTHSM=/usr/lib/softhsm/libsofthsm2.so

export SOFTHSM2_CONF=$T/softhsm2.conf
mkdir "$T/tokens"
softhsm_conf "$T"
softhsm2-util --init-token --free --label bench --so-pin 0000 --pin 1234 >/dev/null
p11() { pkcs11-tool --module "$SOFTHSM" --token-label bench --login --pin 1234 "$@" >/dev/null 2>&1; }
p11 --keypairgen --key-type rsa:4096 --label rsa --id 01
p11 --keypairgen --key-type EC:secp384r1 --label ec --id 02
for k in rsa ec; do
	printf 'cn = "bench %s"\nexpiration_days = 30\nsigning_key\n' $k >"$T/$k.tmpl"
	GNUTLS_PIN=1234 certtool --generate-self-signed --template "$T/$k.tmpl" \
		--load-privkey "pkcs11:token=bench;object=$k;type=private" --outfile "$T/$k.pem" >/dev/null 2>&1
done
umask 077
echo 1234 >"$T/pin"
start_daemon "$T/sock" --key rsa="pkcs11:token=bench;object=rsa" --key ec="pkcs11:token=bench;object=ec" \
	--cert rsa="$T/rsa.pem" --cert ec="$T/ec.pem" --pin-file "$T/pin" --workers "$WORKERS" \
	--allow uid:0 || exit 1
export MODSIGN_SERVER=unix:$T/sock
small=$(ls -S $(real_modules 50) | tail -1)
for c in $(seq 1 "$CLIENTS"); do
	mkdir "$T/c$c"
	for i in $(seq 1 "$SIGS"); do cp "$small" "$T/c$c/m$i.ko"; done
done
for k in rsa ec; do
	start=$(date +%s.%N)
	pids=()
	for c in $(seq 1 "$CLIENTS"); do "$CLIENT" sign --key $k "$T/c$c"/*.ko & pids+=($!); done
	wait "${pids[@]}"
	end=$(date +%s.%N)
	"$CLIENT" verify --cert "$T/$k.pem" "$T"/c1/m1.ko >/dev/null || echo "$k: verify FAILED"
	awk -v n=$((CLIENTS * SIGS)) -v s="$start" -v e="$end" -v k=$k -v w="$WORKERS" \
		'BEGIN { printf "%s: %d signatures, %d workers, %.2f s, %.0f/s\n", k, n, w, e - s, n / (e - s) }'
done
