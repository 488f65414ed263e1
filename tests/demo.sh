#!/bin/bash
# make demo: the one-shot workflow in a minute.  A one-time key made in
# modsignd's memory signs a real kernel module; we verify it, ask modinfo
# what the kernel will see, and stop the daemon, which destroys the key.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
B=$REPO/build
"$REPO/tests/fixtures.sh"

dir=$(mktemp -d /tmp/modsign-demo.XXXXXX)
pid=
# set -e holds inside the trap too: the daemon is usually gone by now.
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
export MODSIGN_SERVER=unix:$dir/modsignd.sock
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "start modsignd with a one-time RSA-4096 key (never written to disk)"
"$B/modsignd" --listen "$MODSIGN_SERVER" --key default=ephemeral:rsa4096 \
	--organization "modsign demo" --common-name "demo one-time key" &
pid=$!
for _ in $(seq 1 600); do [ -S "$dir/modsignd.sock" ] && break; sleep 0.05; done
run "$B/modsign-client" status

say "a real module from Debian's linux-image package"
mod=$(find "$REPO/build/fixtures/modules" -name 'af_key.ko' | head -n1)
cp "$mod" "$dir/af_key.ko"
run modinfo -F signer "$dir/af_key.ko"
run "$B/modsign-client" strip "$dir/af_key.ko"

say "sign it: only its sha256 digest goes to the daemon"
run "$B/modsign-client" sign "$dir/af_key.ko"
run "$B/modsign-client" cert >"$dir/signing_key.x509"
run "$B/modsign-client" verify --cert "$dir/signing_key.x509" "$dir/af_key.ko"

say "what the kernel will see"
modinfo "$dir/af_key.ko" | grep -E '^(sig_id|signer|sig_key|sig_hashalgo):'

say "a changed byte is caught"
cp "$dir/af_key.ko" "$dir/tampered.ko"
printf 'X' | dd of="$dir/tampered.ko" bs=1 seek=4096 conv=notrunc status=none
run "$B/modsign-client" verify --cert "$dir/signing_key.x509" "$dir/tampered.ko" || true

say "stop the daemon: the one-time key is gone"
kill -TERM $pid
wait $pid
echo "A new key next time; the signed module stays valid for the kernel that embeds this certificate."
