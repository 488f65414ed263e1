#!/usr/bin/env bats
# modsign-pkcs11.so (docs/PKCS11.md) with the consumers that are not
# pkcs11-module.bats's: sbsign and pesign (through NSS) signing an EFI
# kernel image (and OVMF booting it with Secure Boot enforcing), openssl
# pkeyutl and cms through OpenSSL's pkcs11-provider; on Debian 12 and in
# the Debian 13 lane (its pesign 116, NSS 3.110, OVMF 2025.02).  DKMS
# through the module is pkcs11-dkms.bats.
#
# One daemon for the file (the cases only sign and read):
# keys sb (Debian's OVMF "snakeoil" key, the one key the db of
# OVMF_VARS_4M.snakeoil.fd trusts: its private key ships in the ovmf
# package for exactly this), rsa (a file key: a certificate OVMF does not
# trust), ec, and other; root is granted sb, rsa and ec, other no one.

load ../common
load pkcs11

OVMF_CODE=/usr/share/OVMF/OVMF_CODE_4M.snakeoil.fd
OVMF_VARS=/usr/share/OVMF/OVMF_VARS_4M.snakeoil.fd
SNAKEOIL=/usr/share/ovmf/PkKek-1-snakeoil

# The EFI kernel image of the release's linux-image package (the one
# tests/fixtures.sh takes the modules of), its Debian signature removed,
# kept in the cache under the fixtures' own key (their package and
# version: no apt-cache run, seconds each where apt keeps no cache), one
# name per release, as the fixtures (the Debian 13 lane's must not drop
# Debian 12's).  A root made by mmdebstrap (that lane's) has no apt
# lists: the package comes from the release's private configuration
# then, as the fixtures' did (tests/cache.sh apt_suite).
efi_image() {
	local pkg key dir release apt=()

	release=$(. /etc/os-release && echo "$VERSION_CODENAME")
	pkg=$(cat "$FIX/modules.stamp")
	key=$(readlink -f "$FIX" | cache_key)
	dir=$(cache_dir "efi-image-$release" "$key")
	cache_lock "efi-image-$release"
	if ! cache_ready "$dir"; then
		ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1 || apt=(apt_suite "$release")
		rm -rf "$dir" && mkdir -p "$dir" &&
			(cd "$dir" && "${apt[@]}" apt-get -o APT::Sandbox::User=root download -q "$pkg" \
				>download.log 2>&1) &&
			dpkg-deb --fsys-tarfile "$dir"/*.deb |
			tar -xO --wildcards './boot/vmlinuz-*' >"$dir/vmlinuz.efi" &&
			sbattach --remove "$dir/vmlinuz.efi" >/dev/null &&
			rm "$dir"/*.deb && cache_done "efi-image-$release" "$key" || {
			cat "$dir/download.log" >&2
			exec 9>&-
			return 1
		}
	fi
	exec 9>&-
	echo "$dir/vmlinuz.efi"
}

setup_file() {
	local d=$BATS_FILE_TMPDIR

	. "$REPO/tests/cache.sh"   # efi_image's cache_key, cache_dir
	PROV=$(provider_dir) || return 1
	EFI=$(efi_image) || return 1
	export PROV EFI
	# The snakeoil key, its passphrase ("snakeoil", README.Debian) removed
	# for the daemon, in the file's private directory.
	(umask 077 && openssl pkey -in "$SNAKEOIL.key" -passin pass:snakeoil -out "$d/sb.pem" &&
		cat "$SNAKEOIL.pem" >>"$d/sb.pem") || return 1
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=p11-rsa \
		-keyout "$d/rsa.key" -out "$d/rsa.crt" 2>/dev/null
	(umask 077 && cat "$d/rsa.key" "$d/rsa.crt" >"$d/rsa.pem")
	file_daemon_start --key "sb=$d/sb.pem" --key "rsa=$d/rsa.pem" \
		--key ec=ephemeral:ecdsa-p256 --key other=ephemeral:ecdsa-p256 --allow uid:0=sb,rsa,ec
	MODSIGN_SERVER=unix:$d/sock "$C" cert --key ec >"$d/ec.crt"
}

teardown_file() { file_daemon_stop; }

setup() {
	file_daemon_case
	echo "the data a tool signs" >data
	openssl dgst -sha256 -binary data >data.sha256
	echo "the data a tool signs, changed" >tampered
}

pub() { openssl x509 -in "$F/$1.crt" -pubkey -noout >"$1.pub"; echo "$1.pub"; }

# ---- sbsign ------------------------------------------------------------------

# p11_sbsign KEY CERT IN OUT: sbsign through libp11's engine and the module.
p11_sbsign() {
	PKCS11_MODULE_PATH=$P11 sbsign --engine pkcs11 --key "pkcs11:object=$1;type=private" \
		--cert "$2" --output "$4" "$3"
}

@test "p11-sbsign-efi-image-sbverify" {
	run sbverify --list "$EFI"
	assert_output --partial "No signature table present"
	run p11_sbsign sb "$SNAKEOIL.pem" "$EFI" vmlinuz.efi
	assert_success
	run sbverify --cert "$SNAKEOIL.pem" vmlinuz.efi
	assert_success
	assert_output --partial "Signature verification OK"
	grep -q '"key":"sb",.*"module":"pkcs11:object=sb","program":"sbsign","result":"ok"' "$F/modsignd.log"
	# Twin: against another certificate, sbverify refuses it.
	run sbverify --cert "$F/rsa.crt" vmlinuz.efi
	assert_failure
	assert_output --partial "Signature verification failed"
}

@test "p11-sbsign-tampered-image-refused" {
	p11_sbsign sb "$SNAKEOIL.pem" "$EFI" vmlinuz.efi
	# A byte of the kernel's code (0x10000, past the headers) changed.
	flip_bit_at vmlinuz.efi 65536
	run sbverify --cert "$SNAKEOIL.pem" vmlinuz.efi
	assert_failure
	# Twin: the image as signed verifies.
	p11_sbsign sb "$SNAKEOIL.pem" "$EFI" ok.efi
	run sbverify --cert "$SNAKEOIL.pem" ok.efi
	assert_success
}

@test "p11-sbsign-key-not-granted-refused" {
	# "other" is the daemon's, but not root's: the token has no such key.
	run p11_sbsign other "$F/rsa.crt" "$EFI" other.efi
	assert_failure
	assert_output --partial "private key was not found at: pkcs11:object=other"
	[ ! -e other.efi ]
	run grep -c '"key":"other"' "$F/modsignd.log"
	assert_output 0
}

# uefi_boot IMAGE CONSOLE: IMAGE as the removable-media loader of a FAT
# disk (CONSOLE.d/esp), booted by OVMF with the snakeoil PK/KEK/db and
# Secure Boot enforcing (SMM, the secure flash); returns once the EFI
# stub or the firmware's refusal is on CONSOLE (the kernel then has no
# root: it is stopped), at most 180 s later.  Two run side by side.
uefi_boot() {
	local d=$T/$2.d pid i
	mkdir -p "$d/esp/EFI/BOOT"
	cp "$1" "$d/esp/EFI/BOOT/BOOTX64.EFI"
	cp "$OVMF_VARS" "$d/vars.fd"
	: >"$2"
	qemu-system-x86_64 -machine q35,smm=on -accel tcg -m 512 -nodefaults -display none \
		-global driver=cfi.pflash01,property=secure,value=on \
		-drive "if=pflash,format=raw,unit=0,readonly=on,file=$OVMF_CODE" \
		-drive "if=pflash,format=raw,unit=1,file=$d/vars.fd" \
		-drive "file=fat:$d/esp,format=raw,if=virtio,readonly=on" \
		-serial "file:$2" -no-reboot </dev/null >"$d/qemu.log" 2>&1 3>&- &
	pid=$!
	for ((i = 0; i < 360; i++)); do
		grep -qaE 'EFI stub: |Access Denied|Security Violation' "$2" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
}

# secure_boot_verdict TRUSTED UNTRUSTED: both images booted side by side
# (uefi_boot, consoles NAME.console): OVMF must start TRUSTED's EFI stub
# with Secure Boot enabled and refuse UNTRUSTED, the twin, signed with a
# key its db does not hold ("Access Denied", no EFI stub).  The verdict
# of every consumer that signs an EFI image.
secure_boot_verdict() {
	uefi_boot "$1" "${1%.efi}.console" &
	uefi_boot "$2" "${2%.efi}.console"
	wait
	run cat -v "${1%.efi}.console"
	assert_output --partial "EFI stub: UEFI Secure Boot is enabled."
	refute_output --partial "Access Denied"
	# The firmware refuses to start the twin.
	run cat -v "${2%.efi}.console"
	assert_output --partial "Access Denied"
	refute_output --partial "EFI stub"
}

@test "p11-uefi-secure-boot-ovmf" {
	# tests/run.sh's switch for every QEMU suite (the qemu group of
	# tests/install-deps.sh, ovmf with it, may be absent then).
	[ -z "${MODSIGN_SKIP_QEMU:-}" ] || skip "MODSIGN_SKIP_QEMU"
	p11_sbsign sb "$SNAKEOIL.pem" "$EFI" sb.efi
	# The twin: signed through the module too, but with a key the
	# firmware's db does not hold.
	p11_sbsign rsa "$F/rsa.crt" "$EFI" rsa.efi
	run sbverify --cert "$F/rsa.crt" rsa.efi
	assert_success
	secure_boot_verdict sb.efi rsa.efi
}

# ---- pesign (NSS) ------------------------------------------------------------
# pesign reaches the module through NSS: a private NSS database with the
# module added (modutil), the token named by its label and the key by
# the certificate object's CKA_LABEL, the daemon's key name (NSS itself
# lists it as "modsign:NAME", which pesign does not take).  No login, no
# import: the token has no CKF_LOGIN_REQUIRED, so NSS asks no PIN, and
# pesign finds the certificate and its private key (same CKA_ID) on it.
# NSS signs a DigestInfo with CKM_RSA_PKCS; pesign signs twice (once to
# size the signature), so a run is two sign requests.

# p11_pesign KEY IN OUT: pesign with KEY through the module.
p11_pesign() {
	if [ ! -d "$T/nss" ]; then
		mkdir "$T/nss" && certutil -N --empty-password -d "sql:$T/nss" &&
			modutil -dbdir "sql:$T/nss" -add modsign -libfile "$P11" -force \
				</dev/null >/dev/null || return 1
	fi
	pesign --certdir "$T/nss" -t modsign -c "$1" -s -i "$2" -o "$3"
}

@test "p11-pesign-efi-image-sbverify" {
	local signed='"key":"sb",.*"module":"pkcs11:object=sb","program":"pesign","result":"ok"' n

	n=$(grep -c "$signed" "$F/modsignd.log") || true
	run p11_pesign sb "$EFI" vmlinuz.efi
	assert_success
	run sbverify --cert "$SNAKEOIL.pem" vmlinuz.efi
	assert_success
	assert_output --partial "Signature verification OK"
	# The file's daemon: two more than before this case (pesign signs twice).
	run grep -c "$signed" "$F/modsignd.log"
	assert_output $((n + 2))
	# Twin: against another certificate, sbverify refuses it.
	run sbverify --cert "$F/rsa.crt" vmlinuz.efi
	assert_failure
	assert_output --partial "Signature verification failed"
}

@test "p11-pesign-tampered-image-refused" {
	p11_pesign sb "$EFI" vmlinuz.efi
	cp vmlinuz.efi ok.efi
	# A byte of the kernel's code (0x10000, past the headers) changed.
	flip_bit_at vmlinuz.efi 65536
	run sbverify --cert "$SNAKEOIL.pem" vmlinuz.efi
	assert_failure
	# Twin: the image as signed verifies.
	run sbverify --cert "$SNAKEOIL.pem" ok.efi
	assert_success
}

@test "p11-pesign-key-not-granted-refused" {
	# "other" is the daemon's, but not root's: the token has no such
	# certificate, and pesign stops before opening its output.
	run p11_pesign other "$EFI" other.efi
	assert_failure
	assert_output --partial "pesign: Could not find certificate other"
	[ ! -e other.efi ]
	run grep -c '"key":"other"' "$F/modsignd.log"
	assert_output 0
	# NSS's own nickname for a token's certificate is no pesign -c.
	run p11_pesign modsign:sb "$EFI" nick.efi
	assert_failure
	[ ! -e nick.efi ]
	# Twin: the granted key next to it signs.
	run p11_pesign rsa "$EFI" rsa.efi
	assert_success
	run sbverify --cert "$F/rsa.crt" rsa.efi
	assert_success
}

@test "p11-pesign-ec-key-fails-output-left-unsigned" {
	# pesign (0.112, 116) signs with sha256WithRSAEncryption alone: NSS refuses
	# an EC key before calling the module, after pesign has written its
	# output.  Its status, not the file, says whether it signed.
	run p11_pesign ec "$EFI" ec.efi
	assert_failure
	assert_output --partial "error signing data: security library: invalid algorithm"
	run sbverify --list ec.efi
	assert_output --partial "No signature table present"
	run grep -c '"key":"ec",.*"program":"pesign"' "$F/modsignd.log"
	assert_output 0
	# Twin: an RSA key of the same token signs.
	run p11_pesign rsa "$EFI" rsa.efi
	assert_success
	run sbverify --list rsa.efi
	refute_output --partial "No signature table present"
}

@test "p11-pesign-uefi-secure-boot-ovmf" {
	[ -z "${MODSIGN_SKIP_QEMU:-}" ] || skip "MODSIGN_SKIP_QEMU"
	p11_pesign sb "$EFI" sb.efi
	# The twin: signed by pesign through the module too, with a key the
	# firmware's db does not hold.
	p11_pesign rsa "$EFI" rsa.efi
	secure_boot_verdict sb.efi rsa.efi
}

# ---- openssl through pkcs11-provider -----------------------------------------

# ossl ARGS...: openssl with the provider and the module, as a user's
# OPENSSL_MODULES (or the installed provider) and PKCS11_PROVIDER_MODULE
# (or p11-kit's proxy) give them.
ossl() {
	OPENSSL_MODULES=$PROV PKCS11_PROVIDER_MODULE=$P11 \
		openssl "$1" -provider pkcs11 -provider default "${@:2}"
}

@test "p11-provider-pkeyutl-rsa-and-ec" {
	for k in rsa ec; do
		run ossl pkeyutl -sign -inkey "pkcs11:object=$k;type=private" -in data.sha256 \
			-pkeyopt digest:sha256 -out "$k.sig"
		assert_success
		run openssl dgst -sha256 -verify "$(pub $k)" -signature "$k.sig" data
		assert_success
		# Twin: the signature is not one over other data.
		run openssl dgst -sha256 -verify "$k.pub" -signature "$k.sig" tampered
		assert_failure
	done
	grep -q '"key":"ec",.*"digest":"'"$(sha256sum data | cut -c1-64)"'","module":"pkcs11:object=ec","program":"openssl"' \
		"$F/modsignd.log"
}

@test "p11-provider-pkeyutl-key-not-granted" {
	run ossl pkeyutl -sign -inkey "pkcs11:object=other;type=private" -in data.sha256 \
		-pkeyopt digest:sha256 -out other.sig
	assert_failure
	# OpenSSL 3.0 "Could not read", 3.5 "Could not find".
	assert_output --regexp "Could not (read|find) private key from pkcs11:object=other"
	[ ! -s other.sig ]
	# Twin: the key next to it, granted, signs.
	run ossl pkeyutl -sign -inkey "pkcs11:object=rsa;type=private" -in data.sha256 \
		-pkeyopt digest:sha256 -out rsa.sig
	assert_success
}

@test "p11-provider-dgst-sign-hashes-locally" {
	# openssl dgst -sign: the provider hashes or hands the module data to
	# hash; either way the daemon sees the digest.
	head -c 3000000 /dev/urandom >big
	run ossl dgst -sha256 -sign "pkcs11:object=rsa;type=private" -out big.sig big
	assert_success
	run openssl dgst -sha256 -verify "$(pub rsa)" -signature big.sig big
	assert_success
	run grep -c "\"digest\":\"$(sha big)\",\"module\":\"pkcs11:object=rsa\",\"program\":\"openssl\"" \
		"$F/modsignd.log"
	assert_output 1
	run openssl dgst -sha256 -verify rsa.pub -signature big.sig data
	assert_failure
}

@test "p11-provider-cms-sign-verify" {
	for k in rsa ec; do
		run ossl cms -sign -inkey "pkcs11:object=$k;type=private" -signer "$F/$k.crt" \
			-binary -in data -outform DER -out "$k.p7s" -nodetach
		assert_success
		run openssl cms -verify -binary -inform DER -in "$k.p7s" -CAfile "$F/$k.crt" \
			-purpose any -out verified
		assert_success
		cmp verified data
		# Twin: one byte of the signed content changed.
		flip_bit_in "$k.p7s" "the data a tool signs"
		run openssl cms -verify -binary -inform DER -in "$k.p7s" -CAfile "$F/$k.crt" \
			-purpose any -out /dev/null
		assert_failure
	done
	# Twin: signed with rsa, it does not verify against ec's certificate.
	ossl cms -sign -inkey "pkcs11:object=rsa;type=private" -signer "$F/rsa.crt" \
		-binary -in data -outform DER -out r.p7s -nodetach
	run openssl cms -verify -binary -inform DER -in r.p7s -CAfile "$F/ec.crt" -purpose any \
		-out /dev/null
	assert_failure
}

# ---- what the module does not do (docs/PKCS11.md) ----------------------------

@test "p11-module-only-signs" {
	p11() { pkcs11-tool --module "$P11" "$@"; }
	run p11 --keypairgen -m RSA-PKCS-KEY-PAIR-GEN --key-type rsa:2048 --label new
	assert_failure
	assert_output --partial "C_GenerateKeyPair failed: rv = CKR_FUNCTION_NOT_SUPPORTED"
	openssl pkeyutl -encrypt -pubin -inkey "$(pub rsa)" -in data -out enc
	run p11 --decrypt -m RSA-PKCS --id "$(hexid rsa)" -i enc -o dec
	assert_failure
	assert_output --partial "C_DecryptInit failed: rv = CKR_FUNCTION_NOT_SUPPORTED"
	[ ! -s dec ]
	run p11 --list-objects --type privkey
	assert_output --regexp "label:      rsa
  ID:         $(hexid rsa)
  Usage:      sign
  Access:     sensitive, always sensitive, never extractable"
	refute_output --partial "label:      new"
	# Twin: the same token signs with the same key.
	run p11 --sign -m SHA256-RSA-PKCS --id "$(hexid rsa)" -i data -o sig
	assert_success
	run openssl dgst -sha256 -verify rsa.pub -signature sig data
	assert_success
}
