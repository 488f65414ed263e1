#!/bin/bash
# make vm-check's machine: the Debian packages of RELEASE (make deb, run on
# that release) installed the way a user installs them, in a guest of that
# release booted under QEMU (TCG) with its own kernel and systemd
# (bookworm: 6.1 and 252, trixie: 6.12 and 257), and checked there by
# tests/vm/guest-check.sh.  The guest's results ("ok NAME" / "not ok NAME:
# why", then "done") arrive on its second serial port:
#   tests/vm/run.sh RELEASE OUT-DIR   writes OUT-DIR/results, OUT-DIR/console.log
# Each run boots a fresh copy-on-write overlay of the cached image
# (tests/vm/build-image.sh), so nothing of one run reaches the next.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
release=$1
OUT=$(realpath -m "$2")
# The guest's whole run: ~460 s under a CI's own load (2 CPUs, TCG); a
# machine loaded by other work too took over 900 (all later cases lost).
: "${VM_TIMEOUT:=1800}"

rm -rf "$OUT" && mkdir -p "$OUT"
P=$OUT/payload
mkdir -p "$P/debs" "$P/modules" "$P/pki" "$P/token/tokens"

# The packages, as `make deb` builds them on RELEASE (its lintian gate
# included): on this machine when it runs RELEASE, else in a root of
# RELEASE (tests/release/), which leaves them in /out.
t0=$SECONDS
if [ "$release" = "$(. /etc/os-release && echo "$VERSION_CODENAME")" ]; then
	make -s -C "$REPO" deb >"$OUT/deb.log" 2>&1 || { tail -n 20 "$OUT/deb.log" >&2; exit 1; }
	cp "$REPO"/build/deb/modsignd_*.deb "$REPO"/build/deb/modsign-client_*.deb "$P/debs/"
else
	RELEASE_OUT=$P/debs "$REPO/tests/release/chroot.sh" "$release" sh -c \
		'make -s deb && cp build/deb/modsignd_*.deb build/deb/modsign-client_*.deb /out/' \
		>"$OUT/deb.log" 2>&1 || { tail -n 20 "$OUT/deb.log" >&2; exit 1; }
fi
echo "vm $release: packages built in $((SECONDS - t0)) s" >&2

# The guest: RELEASE with what those packages depend on, nothing more
# (first alternatives, no versions: apt in the guest checks those).
t0=$SECONDS
mapfile -t deps < <(for d in "$P"/debs/*.deb; do dpkg-deb -f "$d" Depends; done |
	tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g' | sort -u)
. "$REPO/tests/cache.sh"
IMG=$("$REPO/tests/vm/build-image.sh" "$release" "${deps[@]}")
# Held while the guest runs (tests/cache.sh cache_done).
cache_use "$IMG" || { echo "the cached $release image went away: run again" >&2; exit 1; }
echo "vm $release: image ready in $((SECONDS - t0)) s" >&2

# Real modules from Debian's linux-image (tests/fixtures.sh).
"$REPO/tests/fixtures.sh" >/dev/null
mapfile -t mods < <(find "$REPO/build/fixtures/modules" -name '*.ko' | sort)
cp "${mods[@]:0:4}" "$P/modules/"

# The TLS PKI: a builders' CA, the signing host's certificate for the
# guest's loopback and its dummy interface, a builder's client certificate.
pki() {
	cd "$P/pki"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
		-subj /CN=vm-ca -keyout ca.key -out ca.crt
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=signing-host \
		-keyout server.key -out server.csr
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:198.18.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >server.ext
	openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
		-extfile server.ext -out server.crt
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=builder-01 \
		-keyout builder.key -out builder.csr
	printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n' >builder.ext
	openssl x509 -req -in builder.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
		-extfile builder.ext -out builder.crt
	rm -f ./*.csr ./*.ext ca.key
}
(pki) >"$OUT/pki.log" 2>&1 || { cat "$OUT/pki.log" >&2; exit 1; }

# A SoftHSM2 token with an RSA key made on it and its certificate next to
# it, made here (TCG is slow) and copied to the guest's token directory.
# Its PIN is made for this run.
token() {
	local M=/usr/lib/softhsm/libsofthsm2.so pin
	pin=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
	export SOFTHSM2_CONF=$P/token/softhsm2.conf
	printf 'directories.tokendir = %s\nobjectstore.backend = file\n' "$P/token/tokens" >"$SOFTHSM2_CONF"
	softhsm2-util --init-token --free --label vm --so-pin "$pin$pin" --pin "$pin"
	pkcs11-tool --module $M --token-label vm --login --pin "$pin" \
		--keypairgen --key-type rsa:2048 --label vmkey --id 01
	printf 'cn = "modsign vm token key"\norganization = "modsign tests"\nexpiration_days = 30\nsigning_key\n' >"$P/token/tmpl"
	GNUTLS_PIN=$pin certtool --generate-self-signed --template "$P/token/tmpl" \
		--load-privkey 'pkcs11:token=vm;object=vmkey;type=private' --outfile "$P/token/vmkey.pem"
	openssl x509 -in "$P/token/vmkey.pem" -outform der -out "$P/token/vmkey.der"
	pkcs11-tool --module $M --token-label vm --login --pin "$pin" \
		--write-object "$P/token/vmkey.der" --type cert --label vmkey --id 01
	printf '%s\n' "$pin" >"$P/token/pin"
	rm -f "$SOFTHSM2_CONF" "$P/token/tmpl" "$P/token/vmkey.der"
}
(token) >"$OUT/token.log" 2>&1 || { cat "$OUT/token.log" >&2; exit 1; }

cp "$REPO/tests/vm/guest-check.sh" "$P/"
mke2fs -q -t ext4 -L vm-payload -d "$P" "$OUT/payload.img" 64M

t0=$SECONDS
qemu-img create -q -f qcow2 -F raw -b "$IMG/rootfs.img" "$OUT/overlay.qcow2"
: >"$OUT/results"
timeout "$VM_TIMEOUT" qemu-system-x86_64 -accel tcg -m 2048 -smp 2 \
	-display none -monitor none -no-reboot \
	-kernel "$IMG/vmlinuz" -initrd "$IMG/initrd.img" \
	-append "root=/dev/vda rw console=ttyS0 panic=-1 systemd.show_status=0" \
	-drive file="$OUT/overlay.qcow2",if=virtio,format=qcow2 \
	-drive file="$OUT/payload.img",if=virtio,format=raw,readonly=on \
	-serial file:"$OUT/console.log" -serial file:"$OUT/results" \
	-nic none </dev/null >"$OUT/qemu.log" 2>&1 || echo "vm: qemu exited $?" >&2
rm -f "$OUT/overlay.qcow2"
echo "vm $release: guest ran in $((SECONDS - t0)) s" >&2
# A serial port ends its lines with CR LF.
sed -i 's/\r$//' "$OUT/results"
grep -q '^done' "$OUT/results" || { echo "vm: the guest did not finish its checks (console: $OUT/console.log)" >&2; exit 1; }
