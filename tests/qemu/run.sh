#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh: the modsign kernel test.  Builds a tiny kernel VER (one of
# tests/qemu/kernels.sh's table; default 6.1) with its kernel-patches/VER/
# series, signs modules through modsignd in every way the matrix below
# names, boots the kernel under QEMU (TCG) with an initramfs that loads each
# module, and asserts each result from what the guest kernel printed.
# Nothing is ever loaded into this machine's kernel.
#
#	tests/qemu/run.sh [VER]
#
# The kernel tree is built and kept in the cache outside the clone
# (build-kernel.sh), locked for the whole run; build/qemu-VER/ is the run's
# own scratch.  The matrix is the same for every kernel; what differs is in
# kernels.sh's table (the extra hashes add their cases).
#
# Prints "PASS name" or "FAIL name: reason" per case and ends with
# "N passed, N failed"; exits non-zero on any failure.
#
# Environment:
#   MODSIGND, MODSIGN_CLIENT  the programs (default build/modsignd and
#                             build/modsign-client, built by "make")
#   MODSIGN_QEMU_NO_APT=1     do not apt-get install missing packages
#   MODSIGN_QEMU_NO_MAKE=1    do not run "make" at the top of the repo
#   KBUILD_JOBS               parallel kernel build jobs (default 2)
#   QEMU_TIMEOUT              seconds the guest may run (default 180)
#   SOFTHSM                   SoftHSM2's PKCS#11 module for the token set-up
#                             (default /usr/lib/softhsm/libsofthsm2.so)

set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/cache.sh"
. "$here/kernels.sh"
kernel_select "${1:-6.1}" || exit 2
B=$repo/build/qemu-$KVER
ksrc= # the cached tree, from build-kernel.sh
MODSIGND=${MODSIGND:-$repo/build/modsignd}
MODSIGN_CLIENT=${MODSIGN_CLIENT:-$repo/build/modsign-client}
SOCK=$B/run/modsignd.sock
export MODSIGN_SERVER=unix:$SOCK

REPO=$repo
. "$repo/tests/helpers.sh" # modsignd_start
. "$here/guest.sh"

npass=0
nfail=0
daemon_pid=
hsm_ok=

log() { echo "qemu-test: $*" >&2; }
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }

summary()
{
	echo "$npass passed, $nfail failed"
	[ "$nfail" -eq 0 ]
}

# A step that the rest of the run depends on failed: report and stop.
abort() { fail "$1" "$2"; stop_signer; summary; exit 1; }

# ---------------------------------------------------------------------------
# Setup

install_deps()
{
	local pkgs="linux-source qemu-system-x86 busybox-static bc flex bison
		libelf-dev libssl-dev cpio xz-utils kmod gcc make libc6-dev
		binutils openssl patch pkg-config softhsm2 opensc gnutls-bin
		p11-kit-modules zstd" p missing=

	for p in $pkgs; do
		dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null |
			grep 'install ok installed' > /dev/null || missing="$missing $p"
	done
	[ -n "$missing" ] || return 0
	[ "${MODSIGN_QEMU_NO_APT:-}" = 1 ] && {
		log "missing packages:$missing (MODSIGN_QEMU_NO_APT=1)"
		return 1
	}
	log "installing$missing"
	local sudo=
	[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
	$sudo apt-get update -q > "$B/apt.log" 2>&1 &&
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
			$missing >> "$B/apt.log" 2>&1
}

start_signer()
{
	local hsm_args=()

	[ -z "$hsm_ok" ] || hsm_args=(--key "hsm=$HSM_URI" --pin-file "$HSM/pin")
	: > "$B/modsignd.log"
	rm -rf "$B/run"
	mkdir -p "$B/run"
	chmod 700 "$B/run"
	# The one-shot keys: they exist only in this daemon's memory.  The
	# HSM key stays on the token; the daemon reads the PIN from a file.
	modsignd_start "$B/modsignd.log" --listen "unix:$SOCK" \
		--key default=ephemeral:rsa3072 \
		--key ecdsa=ephemeral:ecdsa-p384 \
		--key other=ephemeral:rsa2048 \
		--key mp=ephemeral:rsa4096-4p \
		"${hsm_args[@]}" \
		--allow "uid:$(id -u)" || return 1
	daemon_pid=$MODSIGND_PID
}

stop_signer()
{
	[ -n "$daemon_pid" ] || return 0
	kill -TERM "$daemon_pid" 2> /dev/null
	wait "$daemon_pid" 2> /dev/null
	daemon_pid=
}

# ---------------------------------------------------------------------------
# The host side of the matrix: build, sign, install

# cases: "name file modname expectation" lines for the guest.
cases=$B/cases.txt

# The article's one-shot workflow: the certificate of the daemon's key is
# CONFIG_MODULE_SIG_KEY, modules_install signs through modsign-client.
oneshot_install()
{
	local inst=$B/inst-oneshot m

	rm -rf "$inst"
	kmake modules_install INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_CMD="$MODSIGN_CLIENT sign-file" ||
		abort oneshot-modules_install "make modules_install failed: $(tail -n 3 "$B/make.log")"
	m=$(find_mod "$inst" test_module)
	[ -n "$m" ] || abort oneshot-modules_install "test_module not installed"
	has_sig "$m" || abort oneshot-modules_install "$m is not signed"
	pass oneshot-modules_install
	add_case oneshot-rsa-sha256 oneshot.ko.xz test_module "load:Hello, world" "$m"
}

# Without MODULE_SIGN_CMD, a certificate-only CONFIG_MODULE_SIG_KEY must stop
# modules_install with a clear error instead of calling sign-file.
certonly_refuses()
{
	local inst=$B/inst-nocmd

	rm -rf "$inst"
	if kmake modules_install INSTALL_MOD_PATH="$inst"; then
		fail certonly-without-sign-cmd "modules_install succeeded"
	elif ! grep -q 'has no private key; set MODULE_SIGN_CMD' "$B/make.log"; then
		fail certonly-without-sign-cmd "no clear error: $(tail -n 2 "$B/make.log")"
	elif [ -n "$(find_mod "$inst" test_module 2> /dev/null)" ]; then
		fail certonly-without-sign-cmd "a module was installed anyway"
	else
		pass certonly-without-sign-cmd
	fi
}

# Without MODULE_SIGN_CMD and with a key file, the signing command is the
# one of unpatched 6.1.  "make -n" prints it without running it, so the
# "key" only needs the PEM header that scripts/Makefile.modinst looks for.
#
# (This case failed in 2 of ~8 full runs: "sed | grep -q" under pipefail.
# grep -q leaves at the first match; sed, still writing its second 4 KiB
# of make -n's output, then dies of SIGPIPE and fails the pipeline.  The
# match is read with "grep >/dev/null", which reads to the end.)
default_is_sign_file()
{
	local fake=$B/not-a-key.pem want r=0

	# A placeholder with a key's armour (not a key; spelt at run time so
	# that no tracked file looks like one).
	local armour="PRIVATE KEY"
	printf -- '-----BEGIN %s-----\nmake -n only\n-----END %s-----\n' "$armour" "$armour" > "$fake"
	want="scripts/sign-file sha256 \"$fake\" certs/signing_key.x509 $B/inst-dry/"
	rm -rf "$B/inst-dry"
	kmake -n modules_install INSTALL_MOD_PATH="$B/inst-dry" \
		CONFIG_MODULE_SIG_KEY="$fake" || r=$?
	rm -f "$fake"
	cp "$B/make.log" "$B/make-dry.log" # kept: later kmake calls overwrite make.log
	# (6.12's Makefile.modinst makes the directories while it is parsed,
	# even under make -n: no module may be there.)
	# (7.x names the tree's own files through $(objtree), "." in the tree:
	# ./scripts/sign-file ... ./certs/signing_key.x509, the same command.)
	if sed 's|\./scripts/sign-file|scripts/sign-file|; s| \./certs/| certs/|' "$B/make.log" |
		grep -F "$want" > /dev/null &&
		[ -z "$(find "$B/inst-dry" -name '*.ko*' 2> /dev/null)" ]; then
		pass default-sign-cmd-unchanged
	else
		fail default-sign-cmd-unchanged "make -n (exit $r, $(wc -l < "$B/make-dry.log") lines) did not show: $want; it showed: $(grep -m1 -o 'scripts/sign-file.*' "$B/make-dry.log" | cut -c1-300); $(find "$B/inst-dry" -name '*.ko*' 2> /dev/null | wc -l) modules installed"
	fi
}

# The distribution flow: modules_install, strip (the signature goes with
# the debug information), modules_sign.  XZ is the configured compression;
# the other flavours override the options on the command line, which is all
# another CONFIG_MODULE_COMPRESS_* choice changes for scripts/Makefile.modinst.
resign_flow()
{
	local flavour=$1 inst=$B/inst-$1 m u over=

	case $flavour in
	ko) over="CONFIG_MODULE_COMPRESS_XZ=" ;;
	gz) over="CONFIG_MODULE_COMPRESS_XZ= CONFIG_MODULE_COMPRESS_GZIP=y" ;;
	zst) over="CONFIG_MODULE_COMPRESS_XZ= CONFIG_MODULE_COMPRESS_ZSTD=y" ;;
	esac
	rm -rf "$inst"
	kmake modules_install $over INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_CMD="$MODSIGN_CLIENT sign-file" || {
		fail "modules_sign-$flavour" "modules_install failed"
		return
	}
	m=$(find_mod "$inst" test_module)
	u=${m%.$flavour}
	[ "$flavour" = ko ] && u=$m
	case $m in
	*.ko.$flavour | *.$flavour) ;;
	*) fail "modules_sign-$flavour" "installed as $m"; return ;;
	esac
	case $flavour in
	xz) xz -d "$m" && strip --strip-debug "$u" &&
		xz --check=crc32 --lzma2=dict=1MiB "$u" ;;
	gz) gzip -d "$m" && strip --strip-debug "$u" && gzip -n "$u" ;;
	zst) zstd -dq --rm "$m" && strip --strip-debug "$u" && zstd -q --rm "$u" ;;
	ko) strip --strip-debug "$m" ;;
	esac
	if has_sig "$m"; then
		fail "modules_sign-$flavour" "strip left the signature in place"
		return
	fi
	[ "$flavour" = zst ] && cp "$m" "$B/stripped-zst.ko.zst"
	kmake modules_sign $over INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_CMD="$MODSIGN_CLIENT sign-file" || {
		fail "modules_sign-$flavour" "make modules_sign failed: $(grep -m2 -i 'error\|fail' "$B/make.log" | tr '\n' ' ')"
		return
	}
	if [ "$flavour" != ko ] && { [ ! -f "$m" ] || [ -e "$u" ]; }; then
		fail "modules_sign-$flavour" "$m not recompressed by modules_sign"
		return
	fi
	has_sig "$m" || { fail "modules_sign-$flavour" "$m not signed by modules_sign"; return; }
	if [ "$flavour" = zst ]; then
		# busybox cannot decompress zstd: done here, as kmod does in
		# userspace before init_module; the guest loads the result.  The
		# twin is the stripped module before modules_sign.
		zstd -dcq "$m" > "$B/resign-zst.ko" &&
			zstd -dcq "$B/stripped-zst.ko.zst" > "$B/stripped-zst.ko" ||
			{ fail modules_sign-zst "cannot decompress $m"; return; }
		m=$B/resign-zst.ko
		add_case modules_sign-zst-stripped-not-resigned stripped-zst.ko test_module \
			"reject:Loading of unsigned module is rejected" "$B/stripped-zst.ko"
	fi
	add_case "modules_sign-$flavour" "resign-$flavour.${m##*.}" test_module \
		"load:Hello, world" "$m"
}

# A module built outside the tree (M=), signed with modsign-client sign.
extmod_cases()
{
	local ext=$B/ext k=$B/ext/modsign_test.ko f

	rm -rf "$ext"
	mkdir -p "$ext"
	cp "$here/modules/modsign_test.c" "$here/modules/Kbuild" "$ext/"
	kmake M="$ext" modules || abort extmod-build "make M= failed: $(tail -n 3 "$B/make.log")"
	has_sig "$k" && abort extmod-build "freshly built module is already signed"

	add_case unsigned unsigned.ko modsign_test \
		"reject:Loading of unsigned module is rejected" "$k"

	for f in default:sha256:extmod-rsa-sha256 default:sha512:rsa-sha512 \
		ecdsa:sha256:ecdsa-p384-sha256 ecdsa:sha384:ecdsa-p384-sha384 \
		ecdsa:sha512:ecdsa-p384-sha512 mp:sha256:rsa4096-4p-sha256 \
		other:sha256:otherkey; do
		set -- ${f//:/ }
		cp "$k" "$ext/$3.ko"
		"$MODSIGN_CLIENT" sign --key "$1" --hash "$2" "$ext/$3.ko" \
			2> "$B/sign.log" && has_sig "$ext/$3.ko" || {
			fail "$3" "modsign-client sign --key $1 --hash $2 failed: $(head -c 200 "$B/sign.log")"
			continue
		}
		case $3 in
		otherkey) add_case otherkey otherkey.ko modsign_test \
			"reject:Loading of module with unavailable key is rejected" "$ext/$3.ko" ;;
		*) add_case "$3" "$3.ko" modsign_test "load:modsign_test: init ran" "$ext/$3.ko" ;;
		esac
	done

	# Every positive case has a tampered twin.
	for f in extmod-rsa-sha256:tampered-rsa ecdsa-p384-sha384:tampered-ecdsa \
		rsa4096-4p-sha256:tampered-rsa4096-4p; do
		set -- ${f//:/ }
		[ -f "$ext/$1.ko" ] || continue
		cp "$ext/$1.ko" "$ext/$2.ko"
		overwrite_in_string "$ext/$2.ko" MODSIGN-TAMPER-TARGET ||
			{ fail "$2" "marker not found"; continue; }
		add_case "$2" "$2.ko" modsign_test "reject:" "$ext/$2.ko"
	done

	# The hook must never sign with a key the kernel being built does not
	# trust: sign-file mode refuses a daemon key whose certificate is not
	# the <x509> argument (certs/signing_key.x509).
	cp "$k" "$ext/foreign.ko"
	if "$MODSIGN_CLIENT" sign-file sha256 modsign:other \
		"$ksrc/certs/signing_key.x509" "$ext/foreign.ko" 2> "$B/sign.log"; then
		fail sign-file-refuses-foreign-cert "signed with key 'other'"
	elif has_sig "$ext/foreign.ko"; then
		fail sign-file-refuses-foreign-cert "failed but left a signature"
	else
		pass sign-file-refuses-foreign-cert
	fi

	# The plain modsign-client sign (default key and hash) of an M= module.
	cp "$k" "$ext/extmod-default.ko"
	if "$MODSIGN_CLIENT" sign "$ext/extmod-default.ko" 2> "$B/sign.log"; then
		add_case extmod-default extmod-default.ko modsign_test \
			"load:modsign_test: init ran" "$ext/extmod-default.ko"
	else
		fail extmod-default "modsign-client sign failed: $(head -c 200 "$B/sign.log")"
	fi
}

# The hashes this kernel verifies beyond sha256/384/512 (kernels.sh's
# EXTRA: SHA-3 on 6.12), each through the daemon's RSA and ECDSA keys
# (modsign-client sign --hash) and the last one in sign-file mode; twins:
# the first hash's modules tampered.  The kernel's own sign-file signs with
# the first hash as the reference that the kernel takes that hash at all.
extra_hash_cases()
{
	local ext=$B/ext k=$B/ext/modsign_test.ko h f name first= last=

	for h in $KEXTRA_HASHES; do
		first=${first:-$h}
		last=$h
		for f in default:rsa ecdsa:ecdsa-p384; do
			set -- ${f//:/ }
			name=$2-$h
			cp "$k" "$ext/$name.ko"
			"$MODSIGN_CLIENT" sign --key "$1" --hash "$h" "$ext/$name.ko" \
				2> "$B/sign.log" && has_sig "$ext/$name.ko" || {
				fail "$name" "modsign-client sign --key $1 --hash $h failed: $(head -c 200 "$B/sign.log")"
				rm -f "$ext/$name.ko" # no twin for what was not signed
				continue
			}
			add_case "$name" "$name.ko" modsign_test "load:modsign_test: init ran" \
				"$ext/$name.ko"
		done
	done
	[ -n "$first" ] || return 0

	for name in rsa-$first ecdsa-p384-$first; do
		[ -f "$ext/$name.ko" ] || continue
		cp "$ext/$name.ko" "$ext/tampered-$name.ko"
		overwrite_in_string "$ext/tampered-$name.ko" MODSIGN-TAMPER-TARGET ||
			{ fail "tampered-$name" "marker not found"; continue; }
		add_case "tampered-$name" "tampered-$name.ko" modsign_test "reject:" \
			"$ext/tampered-$name.ko"
	done

	cp "$k" "$ext/sign-file-$last.ko"
	if "$MODSIGN_CLIENT" sign-file "$last" modsign:default \
		"$ksrc/certs/signing_key.x509" "$ext/sign-file-$last.ko" 2> "$B/sign.log" &&
		has_sig "$ext/sign-file-$last.ko"; then
		add_case "sign-file-$last" "sign-file-$last.ko" modsign_test \
			"load:modsign_test: init ran" "$ext/sign-file-$last.ko"
	else
		fail "sign-file-$last" "modsign-client sign-file $last failed: $(head -c 200 "$B/sign.log")"
	fi

	name=kernel-sign-file-$first
	[ -f "$REF/key.pem" ] || { fail "$name" "no reference key"; return; }
	cp "$k" "$ext/$name.ko"
	"$ksrc/scripts/sign-file" "$first" "$REF/key.pem" "$REF/cert.pem" \
		"$ext/$name.ko" 2> "$B/sign.log"
	rm -f "$REF/key.pem"
	has_sig "$ext/$name.ko" ||
		{ fail "$name" "the kernel's sign-file failed: $(head -c 200 "$B/sign.log")"; return; }
	add_case "$name" "$name.ko" modsign_test "load:modsign_test: init ran" "$ext/$name.ko"
	cp "$ext/$name.ko" "$ext/tampered-$name.ko"
	overwrite_in_string "$ext/tampered-$name.ko" MODSIGN-TAMPER-TARGET ||
		{ fail "tampered-$name" "marker not found"; return; }
	add_case "tampered-$name" "tampered-$name.ko" modsign_test "reject:" \
		"$ext/tampered-$name.ko"
}

# The reference signer's key (extra_hash_cases): made for this run with
# openssl, its certificate one of the kernel's trusted ones, the key
# deleted as soon as sign-file has used it, before the private-key scan.
REF=$B/ref
reference_key()
{
	rm -rf "$REF"
	mkdir -p "$REF"
	chmod 700 "$REF"
	openssl req -new -x509 -newkey rsa:3072 -nodes -days 2 -sha256 \
		-subj "/CN=modsign qemu sign-file reference" \
		-addext basicConstraints=critical,CA:FALSE \
		-addext keyUsage=digitalSignature \
		-keyout "$REF/key.pem" -out "$REF/cert.pem" > "$REF/openssl.log" 2>&1 &&
		cat "$REF/cert.pem" >> "$B/trusted.pem"
}

# The distribution flow with a reproducible build (issue 19): the same
# external module built twice from the same inputs in the same tree; the
# first build is signed detached (only its signature leaves the signing
# host), the signature tree is attached to the second build, which the
# guest loads.  Twins: the second build changed by one byte is refused at
# attach and left unsigned; the same module forced with that signature by
# the kernel's sign-file -s (which checks nothing) is rejected by the guest.
repro_build() # DIR: make M=DIR modules from the test module's sources, stripped
{
	rm -rf "$1"
	mkdir -p "$1"
	cp "$here/modules/modsign_test.c" "$here/modules/Kbuild" "$1/"
	kmake M="$1" modules && strip --strip-debug "$1/modsign_test.ko"
}

reproducible_attach()
{
	local a=$B/repro-build/a b=$B/repro-build/b sigs=$B/repro-sigs src=$B/repro-src

	# The same inputs and the same place: build, keep, clean, build again.
	repro_build "$src" && mkdir -p "$a" && cp "$src/modsign_test.ko" "$a/" &&
		kmake M="$src" clean && repro_build "$src" && mkdir -p "$b" &&
		cp "$src/modsign_test.ko" "$b/" ||
		{ fail repro-build "make M= failed: $(tail -n 3 "$B/make.log" | tr '\n' ' ')"; return; }
	cmp -s "$a/modsign_test.ko" "$b/modsign_test.ko" ||
		{ fail repro-build "two builds of the same inputs differ"; return; }
	rm -rf "$sigs"
	"$MODSIGN_CLIENT" sign --detached "$sigs" --recursive "$a" 2> "$B/sign.log" &&
		[ -f "$sigs/modsign_test.ko.p7s" ] && ! has_sig "$a/modsign_test.ko" ||
		{ fail repro-detached "sign --detached failed: $(head -c 200 "$B/sign.log")"; return; }
	cp "$b/modsign_test.ko" "$B/repro-changed.ko"
	overwrite_in_string "$B/repro-changed.ko" MODSIGN-TAMPER-TARGET ||
		{ fail repro-changed "marker not found"; return; }
	"$MODSIGN_CLIENT" attach --from "$sigs" --cert "$B/cert.pem" --recursive "$b" \
		2> "$B/sign.log" && has_sig "$b/modsign_test.ko" ||
		{ fail repro-attach "attach failed: $(head -c 200 "$B/sign.log")"; return; }
	pass repro-attach
	add_case repro-attached repro-attached.ko modsign_test \
		"load:modsign_test: init ran" "$b/modsign_test.ko"
	# The twin at attach: a module one byte different is refused, untouched.
	mkdir -p "$B/repro-build/c" && cp "$B/repro-changed.ko" "$B/repro-build/c/modsign_test.ko"
	if "$MODSIGN_CLIENT" attach --from "$sigs" --cert "$B/cert.pem" \
		--recursive "$B/repro-build/c" 2> "$B/sign.log"; then
		fail repro-changed-refused-at-attach "attach accepted a changed module"
	elif ! grep -q "module differs from the one that was signed" "$B/sign.log" ||
		! cmp -s "$B/repro-changed.ko" "$B/repro-build/c/modsign_test.ko"; then
		fail repro-changed-refused-at-attach "no reason, or the module was touched: $(head -c 200 "$B/sign.log")"
	else
		pass repro-changed-refused-at-attach
	fi
	# The twin in the guest: forced in with the kernel's sign-file -s.
	"$ksrc/scripts/sign-file" -s "$sigs/modsign_test.ko.p7s" sha256 "$B/cert.pem" \
		"$B/repro-changed.ko" 2> "$B/sign.log" && has_sig "$B/repro-changed.ko" ||
		{ fail repro-forced "sign-file -s failed: $(head -c 200 "$B/sign.log")"; return; }
	add_case repro-forced-wrong-signature repro-forced.ko modsign_test "reject:" \
		"$B/repro-changed.ko"
}

# ---------------------------------------------------------------------------
# The batch hook (kernel-patches/0004): MODULE_SIGN_BATCH_CMD is called once
# with every module's path on its standard input.  The guest decompresses
# xz itself (busybox; CONFIG_MODULE_DECOMPRESS is off, as kmod decompresses
# in userspace) and gets zstd modules decompressed here (busybox has no
# zstd, and 6.1 cannot decompress zstd modules in the kernel).

BATCH_CMD="$MODSIGN_CLIENT sign-file --batch"

# compress_over FLAVOUR: the make arguments of that compression (xz is
# the configured one; the others override it on the command line, which is
# all another CONFIG_MODULE_COMPRESS_* choice changes for Makefile.modinst).
compress_over()
{
	case $1 in
	ko) echo "CONFIG_MODULE_COMPRESS_XZ=" ;;
	xz) ;;
	gz) echo "CONFIG_MODULE_COMPRESS_XZ= CONFIG_MODULE_COMPRESS_GZIP=y" ;;
	zst) echo "CONFIG_MODULE_COMPRESS_XZ= CONFIG_MODULE_COMPRESS_ZSTD=y" ;;
	esac
}

# guest_file NAME FILE: what the guest gets of an installed module FILE,
# copied to $B/NAME.ko or $B/NAME.ko.xz; prints that path.
guest_file()
{
	case $2 in
	*.zst) zstd -dcq "$2" > "$B/$1.ko" && echo "$B/$1.ko" ;;
	*.xz) cp "$2" "$B/$1.ko.xz" && echo "$B/$1.ko.xz" ;;
	*) cp "$2" "$B/$1.ko" && echo "$B/$1.ko" ;;
	esac
}

# unpacked FILE: the module FILE (possibly compressed) on stdout.
unpacked()
{
	case $1 in
	*.xz) xz -dc "$1" ;;
	*.zst) zstd -dcq "$1" ;;
	*) cat "$1" ;;
	esac
}

# batch_case NAME FILE MODNAME EXPECT: a guest case for installed FILE.
batch_case()
{
	local g

	g=$(guest_file "$1" "$2") || { fail "$1" "cannot unpack $2"; return; }
	add_case "$1" "${g##*/}" "$3" "$4" "$g"
}

# batch_install FLAVOUR: make -j2 modules_install of the in-tree modules,
# stripped (INSTALL_MOD_STRIP=1; test_module has debug information), signed
# by one batch call, then compressed.  The guest loads the result; its
# tampered twin is rejected.
batch_install()
{
	local flavour=$1 name=batch-install-$1 inst=$B/inst-batch-$1 m t

	rm -rf "$inst"
	kmake -j2 modules_install $(compress_over "$flavour") INSTALL_MOD_STRIP=1 \
		INSTALL_MOD_PATH="$inst" MODULE_SIGN_BATCH_CMD="$BATCH_CMD" || {
		fail "$name" "make modules_install failed: $(tail -n 3 "$B/make.log" | tr '\n' ' ')"
		return
	}
	m=$(find_mod "$inst" test_module)
	case $flavour:$m in
	ko:*.ko | xz:*.ko.xz | zst:*.ko.zst) ;;
	*) fail "$name" "installed as '$m'"; return ;;
	esac
	if [ "$(grep -c '^  SIGN ' "$B/make.log")" != 1 ] ||
		! grep -q "^  SIGN    $(wc -l < "$ksrc/modules.order") modules in " "$B/make.log"; then
		fail "$name" "not one SIGN line for all modules: $(grep '^  SIGN' "$B/make.log" | head -n 3 | tr '\n' ' ')"
		return
	fi
	has_sig "$m" || { fail "$name" "$m not signed"; return; }
	unpacked "$m" > "$B/$name.plain"
	if has_section "$B/$name.plain" .debug_; then
		fail "$name" "INSTALL_MOD_STRIP=1 did not strip $m"
		return
	fi
	pass "$name-host"
	batch_case "$name" "$m" test_module "load:Hello, world"
	t=$B/$name-tampered.ko
	cp "$B/$name.plain" "$t"
	overwrite_in_string "$t" "Hello, world" || { fail "$name-tampered" "string not found"; return; }
	add_case "$name-tampered" "${t##*/}" test_module "reject:" "$t"
}

# batch_resign FLAVOUR: the distribution flow through the batch hook:
# modules_install, every module decompressed, stripped and compressed
# again (the signature goes with the debug information), then make -j2
# modules_sign, which decompresses all, signs them in one call and
# compresses them again.  Twin: the stripped module before modules_sign.
batch_resign()
{
	local flavour=$1 name=batch-modules_sign-$1 inst=$B/inst-batch-sign-$1 m u

	rm -rf "$inst"
	kmake -j2 modules_install $(compress_over "$flavour") INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_BATCH_CMD="$BATCH_CMD" || {
		fail "$name" "modules_install failed: $(tail -n 3 "$B/make.log" | tr '\n' ' ')"
		return
	}
	m=$(find_mod "$inst" test_module)
	u=${m%.$flavour}
	case $flavour in
	xz) xz -d "$m" && strip --strip-debug "$u" && xz --check=crc32 --lzma2=dict=1MiB "$u" ;;
	zst) zstd -dq --rm "$m" && strip --strip-debug "$u" && zstd -q --rm "$u" ;;
	esac || { fail "$name" "cannot strip $m"; return; }
	if has_sig "$m"; then
		fail "$name" "strip left the signature in place"
		return
	fi
	batch_case "$name-stripped-not-resigned" "$m" test_module \
		"reject:Loading of unsigned module is rejected"
	kmake -j2 modules_sign $(compress_over "$flavour") INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_BATCH_CMD="$BATCH_CMD" || {
		fail "$name" "make modules_sign failed: $(grep -m2 -i 'error\|fail' "$B/make.log" | tr '\n' ' ')"
		return
	}
	if [ ! -f "$m" ] || [ -e "$u" ]; then
		fail "$name" "$m not recompressed by modules_sign"
		return
	fi
	has_sig "$m" || { fail "$name" "$m not signed by modules_sign"; return; }
	[ "$(grep -c '^  SIGN ' "$B/make.log")" = 1 ] ||
		{ fail "$name" "not one SIGN line in modules_sign"; return; }
	batch_case "$name" "$m" test_module "load:Hello, world"
}

# A batch with a key the guest does not trust ('other', whose certificate
# is not built in): the batch signs, the guest rejects.  And a batch whose
# key is not certs/signing_key.x509: refused, which stops an in-tree
# modules_install with the client's own message.
batch_wrong_key()
{
	local inst=$B/inst-batch-other m

	rm -rf "$inst"
	"$MODSIGN_CLIENT" cert --key other > "$B/other-cert.pem" ||
		{ fail batch-otherkey "no certificate for key 'other'"; return; }
	if kmake -j2 modules_install INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_BATCH_CMD="$here/sign-with-key.sh $MODSIGN_CLIENT other $B/other-cert.pem --batch" &&
		m=$(find_mod "$inst" test_module) && has_sig "$m"; then
		batch_case batch-otherkey "$m" test_module \
			"reject:Loading of module with unavailable key is rejected"
	else
		fail batch-otherkey "modules_install with key 'other' failed: $(tail -n 3 "$B/make.log" | tr '\n' ' ')"
	fi
	rm -rf "$inst"
	if kmake -j2 modules_install INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_BATCH_CMD="$here/sign-with-key.sh $MODSIGN_CLIENT other $B/cert.pem --batch"; then
		fail batch-foreign-cert-stops-install "modules_install succeeded"
	elif ! grep -q "the daemon's key 'other' is not this certificate; no module signed" "$B/make.log"; then
		fail batch-foreign-cert-stops-install "not the client's message: $(tail -n 3 "$B/make.log" | tr '\n' ' ')"
	elif [ -n "$(find "$inst" -name '*.ko.xz' 2> /dev/null)" ]; then
		fail batch-foreign-cert-stops-install "modules were compressed after the failed call"
	else
		pass batch-foreign-cert-stops-install
	fi
}

# External (M=) modules through the batch hook, xz-compressed: loaded by the
# guest.  A failed call does not stop their installation (kbuild's rule for
# external modules) but warns; the module it left unsigned is rejected.
batch_extmod()
{
	local ext=$B/ext inst=$B/inst-batch-ext m

	rm -rf "$inst"
	kmake -j2 M="$ext" modules_install INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_BATCH_CMD="$BATCH_CMD" || {
		fail batch-extmod "make M= modules_install failed: $(tail -n 3 "$B/make.log" | tr '\n' ' ')"
		return
	}
	# extra/ on 6.1, updates/ on 6.12 and 7.3 (INSTALL_MOD_DIR's default)
	m=$(find "$inst" -name modsign_test.ko.xz -print -quit)
	if [ -z "$m" ] || ! has_sig "$m"; then
		fail batch-extmod "modsign_test.ko.xz not installed signed"
		return
	fi
	batch_case batch-extmod "$m" modsign_test "load:modsign_test: init ran"

	rm -rf "$inst"
	if ! kmake -j2 M="$ext" modules_install INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_BATCH_CMD="$here/sign-with-key.sh $MODSIGN_CLIENT other $B/cert.pem --batch"; then
		fail batch-extmod-failed-call-warns "make stopped: $(tail -n 3 "$B/make.log" | tr '\n' ' ')"
		return
	fi
	m=$(find "$inst" -name modsign_test.ko.xz -print -quit)
	if ! grep -q "^warning: .* failed; modules in .* may be unsigned" "$B/make.log"; then
		fail batch-extmod-failed-call-warns "no warning: $(tail -n 3 "$B/make.log" | tr '\n' ' ')"
	elif [ -z "$m" ] || has_sig "$m"; then
		fail batch-extmod-failed-call-warns "module missing or signed: '$m'"
	else
		pass batch-extmod-failed-call-warns
		batch_case batch-extmod-unsigned "$m" modsign_test \
			"reject:Loading of unsigned module is rejected"
	fi
}

# The tree's own scripts/Makefile.modinst, put back after the comparison
# below (also when the run is stopped in the middle of it).
modinst_saved=
restore_modinst()
{
	[ -n "$modinst_saved" ] || return 0
	cp -p "$modinst_saved" "$ksrc/scripts/Makefile.modinst"
	modinst_saved=
}

# Without MODULE_SIGN_BATCH_CMD, make -n prints exactly what it printed
# before 0004: the tree's scripts/Makefile.modinst against the same file
# with 0004 taken out again (0004 changes no other file make reads), for
# each way of installing.  Twin: with the variable set the output differs.
batch_unset_unchanged()
{
	local cur=$ksrc/scripts/Makefile.modinst old=$B/Makefile.modinst-0003 how out bad=

	awk '/^diff --git/ { on = ($3 == "a/scripts/Makefile.modinst") } on' \
		"$KSERIES"/0004-*.patch > "$B/0004-modinst.diff" &&
		patch -s -R -o "$old" "$cur" < "$B/0004-modinst.diff" ||
		{ fail batch-unset-make-n-unchanged "cannot take 0004 out of $cur"; return; }
	cp -p "$cur" "$B/Makefile.modinst-0004"
	modinst_saved=$B/Makefile.modinst-0004
	for how in install nocmd strip xz zst sign-ko sign-xz ext ext-sign; do
		local args=(INSTALL_MOD_PATH="$B/inst-dry-$how")
		[ $how = nocmd ] || args+=(MODULE_SIGN_CMD="$MODSIGN_CLIENT sign-file")
		case $how in
		install | nocmd) args+=(modules_install) ;;
		strip) args+=(modules_install INSTALL_MOD_STRIP=1) ;;
		xz) args+=(modules_install CONFIG_MODULE_COMPRESS_XZ=y) ;;
		zst) args+=(modules_install $(compress_over zst)) ;;
		sign-ko) args+=(modules_sign $(compress_over ko)) ;;
		sign-xz) args+=(modules_sign) ;;
		ext) args+=(M="$B/ext" modules_install) ;;
		ext-sign) args+=(M="$B/ext" modules_sign) ;;
		esac
		for out in 0003 0004; do
			cp "$B/Makefile.modinst-$out" "$cur"
			make -C "$ksrc" -n "${args[@]}" > "$B/make-n-$how.$out" 2>&1
		done
		cmp -s "$B/make-n-$how.0003" "$B/make-n-$how.0004" || bad="$bad $how"
	done
	restore_modinst
	# The twin, with the tree's own Makefile.modinst.
	make -C "$ksrc" -n modules_install INSTALL_MOD_PATH="$B/inst-dry-install" \
		MODULE_SIGN_CMD="$MODSIGN_CLIENT sign-file" MODULE_SIGN_BATCH_CMD="$BATCH_CMD" \
		> "$B/make-n-batch" 2>&1
	if [ -n "$bad" ]; then
		fail batch-unset-make-n-unchanged "make -n differs for:$bad (see $B/make-n-*)"
	elif ! grep -q 'sign-file --batch' "$B/make-n-batch" ||
		cmp -s "$B/make-n-batch" "$B/make-n-install.0004"; then
		fail batch-unset-make-n-unchanged "twin: MODULE_SIGN_BATCH_CMD changed nothing in make -n"
	elif [ ! -s "$B/make-n-install.0004" ] || ! grep -q "sign-file sha256" "$B/make-n-install.0004"; then
		fail batch-unset-make-n-unchanged "make -n printed no signing command"
	else
		pass batch-unset-make-n-unchanged
	fi
}

# After the one-shot flow and the daemon's exit, no private key may be
# left on disk: neither in the kernel tree nor where modules went.
scan_private_keys()
{
	local found pristine=${ksrc%/*}/pristine-private-keys.txt

	[ -f "$pristine" ] || {
		fail no-private-key-on-disk "$pristine missing"
		return
	}
	found=$({
		(cd "$ksrc" && grep -rlI -e '-----BEGIN [A-Z ]*PRIVATE KEY-----' . |
			sort | comm -23 - "$pristine")
		grep -rlI -e '-----BEGIN [A-Z ]*PRIVATE KEY-----' "$B"
	} 2> /dev/null)
	if [ -n "$found" ]; then
		fail no-private-key-on-disk "$(echo $found)"
	else
		pass no-private-key-on-disk
	fi
}

# ---------------------------------------------------------------------------
# The HSM distribution flow

HSM=$B/hsm
HSM_LABEL=modsign-qemu
HSM_CN="modsign qemu hsm rsa4096"
HSM_URI="pkcs11:token=$HSM_LABEL;object=hsm"
SOFTHSM=${SOFTHSM:-/usr/lib/softhsm/libsofthsm2.so}

# A fresh SoftHSM2 token under build/qemu/hsm/ for every run, with an
# RSA-4096 key generated on it and a self-signed certificate made by that
# key (certtool through p11-kit) stored next to it, as docs/HSM.md brings up
# a real HSM.  The PIN is random and goes to the daemon only in a 0600 file.
hsm_setup()
{
	local pin p11="pkcs11-tool --module $SOFTHSM --token-label $HSM_LABEL --login"

	rm -rf "$HSM"
	mkdir -p "$HSM/tokens"
	chmod 700 "$HSM"
	export SOFTHSM2_CONF=$HSM/softhsm2.conf
	printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
		"$HSM/tokens" > "$SOFTHSM2_CONF"
	pin=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	(umask 077 && echo "$pin" > "$HSM/pin")
	printf 'cn = "%s"\norganization = "modsign qemu test"\nexpiration_days = 3650\nsigning_key\nserial = %d\n' \
		"$HSM_CN" "$RANDOM" > "$HSM/cert.tmpl"
	{
		softhsm2-util --init-token --free --label "$HSM_LABEL" \
			--so-pin "so-$pin" --pin "$pin" &&
		$p11 --pin "$pin" --keypairgen --key-type rsa:4096 --label hsm --id 4b &&
		GNUTLS_PIN=$pin certtool --generate-self-signed --hash sha256 \
			--template "$HSM/cert.tmpl" --outfile "$HSM/cert.pem" \
			--load-privkey "$HSM_URI;type=private" &&
		openssl x509 -in "$HSM/cert.pem" -outform der -out "$HSM/cert.der" &&
		$p11 --pin "$pin" --write-object "$HSM/cert.der" --type cert \
			--label hsm --id 4b
	} > "$HSM/setup.log" 2>&1
}

# The PIN reaches the daemon only through --pin-file: never its argv, its
# environment or its log.
hsm_pin_private()
{
	local pin

	pin=$(cat "$HSM/pin")
	if [ "$(stat -c %a "$HSM/pin")" != 600 ]; then
		fail hsm-pin-file "$HSM/pin is mode $(stat -c %a "$HSM/pin")"
	elif tr '\0' '\n' < "/proc/$daemon_pid/cmdline" | grep -F "$pin" > /dev/null ||
		tr '\0' '\n' < "/proc/$daemon_pid/environ" | grep -F "$pin" > /dev/null; then
		fail hsm-pin-file "the PIN is in the daemon's argv or environment"
	elif grep -qF "$pin" "$B/modsignd.log"; then
		fail hsm-pin-file "the PIN is in the daemon's log"
	else
		pass hsm-pin-file
	fi
}

# has_section FILE NAME: FILE has an ELF section whose name starts with NAME.
# (Not "readelf | grep -q": with pipefail, readelf's SIGPIPE fails it.)
has_section()
{
	local sections

	sections=$(readelf -SW "$1") && grep -qF " $2" <<< "$sections"
}

# What a distribution's package build does: install, split the debug
# information out of each module (objcopy --only-keep-debug, strip
# --strip-debug; the signature goes too), then make modules_sign with the
# key in the HSM.  The kernel was configured with the one-shot key's
# certificate (certs/signing_key.x509); the HSM certificate is one of its
# CONFIG_SYSTEM_TRUSTED_KEYS, so sign-with-key.sh hands modsign-client
# sign-file "modsign:hsm" and the HSM certificate in place of the
# configured key and certificate.  Plain .ko: the flows above cover the
# compressed ones.
hsm_flow()
{
	local inst=$B/inst-hsm m dbg twin=$B/hsm-stripped-twin.ko sum signer

	rm -rf "$inst" "$twin"
	kmake modules_install CONFIG_MODULE_COMPRESS_XZ= INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_CMD="$MODSIGN_CLIENT sign-file" || {
		fail hsm-modules_sign "modules_install failed: $(tail -n 3 "$B/make.log")"
		return
	}
	m=$(find_mod "$inst" test_module)
	case $m in
	*.ko) ;;
	*) fail hsm-modules_sign "installed as '$m'"; return ;;
	esac
	if ! has_section "$m" .debug_info; then
		fail hsm-strip-debug "$m has no debug information to strip"
		return
	fi
	# In a tree of their own, as a -dbg package has them:
	# /usr/lib/debug/lib/modules/VERSION/.../MODULE.ko.debug
	dbg=$inst/usr/lib/debug/${m#$inst/}.debug
	mkdir -p "${dbg%/*}"
	sum=$(sha256sum < "$m")
	objcopy --only-keep-debug "$m" "$dbg" && strip --strip-debug "$m" || {
		fail hsm-strip-debug "objcopy or strip failed"
		return
	}
	if [ "$(sha256sum < "$m")" = "$sum" ]; then
		fail hsm-strip-debug "strip did not change $m"
	elif has_section "$m" .debug_; then
		fail hsm-strip-debug "$m still has debug sections"
	elif ! has_section "$dbg" .debug_info; then
		fail hsm-strip-debug "$dbg has no debug information"
	elif has_sig "$m"; then
		fail hsm-strip-debug "strip left the signature in place"
	else
		pass hsm-strip-debug
	fi
	cp "$m" "$twin"

	kmake modules_sign CONFIG_MODULE_COMPRESS_XZ= INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_CMD="$here/sign-with-key.sh $MODSIGN_CLIENT hsm $HSM/cert.pem" || {
		fail hsm-modules_sign "make modules_sign failed: $(grep -m2 -i 'error\|fail\|refuse' "$B/make.log" | tr '\n' ' ')"
		return
	}
	has_sig "$m" || { fail hsm-modules_sign "$m not signed by modules_sign"; return; }
	pass hsm-modules_sign
	signer=$(modinfo -F signer "$m" 2> /dev/null)
	if [ "$signer" = "$HSM_CN" ] &&
		[ "$(modinfo -F sig_hashalgo "$m")" = sha256 ]; then
		pass hsm-modinfo-signer
	else
		fail hsm-modinfo-signer "modinfo says signer '$signer', not '$HSM_CN'"
	fi
	add_case hsm-resigned-stripped hsm-resigned.ko test_module \
		"load:Hello, world" "$m"
	add_case hsm-stripped-not-resigned hsm-stripped-twin.ko test_module \
		"reject:Loading of unsigned module is rejected" "$twin"
}

# ---------------------------------------------------------------------------

main()
{
	local t0 t1 name file mod expect

	t0=$(date +%s)
	mkdir -p "$B"
	install_deps || abort setup "cannot install the packages needed"
	if [ "${MODSIGN_QEMU_NO_MAKE:-}" != 1 ]; then
		make -C "$repo" > "$B/repo-make.log" 2>&1 ||
			abort setup "make at the top of the repo failed, see $B/repo-make.log"
	fi
	[ -x "$MODSIGND" ] && [ -x "$MODSIGN_CLIENT" ] ||
		abort setup "$MODSIGND or $MODSIGN_CLIENT missing"

	if hsm_setup; then
		hsm_ok=1
		pass hsm-token
	else
		fail hsm-token "cannot make the SoftHSM2 token, see $HSM/setup.log"
	fi
	if ! start_signer; then
		[ -n "$hsm_ok" ] ||
			abort modsignd-start "daemon did not answer, see $B/modsignd.log"
		# Keep the rest of the matrix: start again without the HSM key.
		fail hsm-daemon "modsignd did not start with the HSM key: $(tail -n 2 "$B/modsignd.log" | tr '\n' ' ')"
		stop_signer
		hsm_ok=
		start_signer ||
			abort modsignd-start "daemon did not answer, see $B/modsignd.log"
	fi
	"$MODSIGN_CLIENT" cert > "$B/cert.pem" &&
		"$MODSIGN_CLIENT" cert --key ecdsa > "$B/trusted.pem" &&
		"$MODSIGN_CLIENT" cert --key mp >> "$B/trusted.pem" &&
		grep -q 'BEGIN CERTIFICATE' "$B/cert.pem" ||
		abort modsign-client-cert "cannot get the certificates"
	# The HSM key's certificate, as the daemon serves it from the token,
	# joins the trusted certificates the kernel embeds.
	if [ -n "$hsm_ok" ]; then
		hsm_pin_private
		if "$MODSIGN_CLIENT" cert --key hsm > "$B/hsm-cert.pem" 2> "$B/sign.log" &&
			cmp -s <(openssl x509 -in "$B/hsm-cert.pem" -outform der) "$HSM/cert.der"; then
			cat "$B/hsm-cert.pem" >> "$B/trusted.pem"
		else
			fail hsm-cert "the daemon does not serve the token's certificate: $(head -c 200 "$B/sign.log")"
			hsm_ok=
		fi
	fi

	[ -z "$KEXTRA_HASHES" ] || reference_key ||
		fail sign-file-reference-key "cannot make the reference key: $(tail -n 2 "$B/ref/openssl.log" | tr '\n' ' ')"

	t1=$(date +%s)
	# The tree is this run's until it ends (the certificates are).
	cache_lock "kernel-$KVER"
	ksrc=$(MODSIGN_KERNEL_LOCKED=1 "$here/build-kernel.sh" "$KVER" \
		"$B/cert.pem" "$B/trusted.pem") && [ -d "$ksrc" ] ||
		abort kernel-build "see the build.log next to the tree in $MODSIGN_CACHE"
	log "kernel $KVER ready in $(($(date +%s) - t1))s ($ksrc)"
	# The in-tree test module gets debug information (CONFIG_DEBUG_INFO is
	# off in this kernel) so that stripping it is what a package build
	# does.  Only lib/test_module.o is recompiled.
	kmake modules CFLAGS_test_module.o=-g ||
		abort test-module-debug "make modules with -g failed: $(tail -n 3 "$B/make.log")"

	rm -rf "$B/initrd" "$cases"
	mkdir -p "$B/initrd/modules"
	: > "$cases"
	certonly_refuses
	default_is_sign_file
	oneshot_install
	resign_flow ko
	resign_flow xz
	resign_flow gz
	resign_flow zst
	extmod_cases
	extra_hash_cases
	reproducible_attach
	batch_unset_unchanged
	batch_install ko
	batch_install xz
	batch_install zst
	batch_resign xz
	batch_resign zst
	batch_wrong_key
	batch_extmod
	[ -z "$hsm_ok" ] || hsm_flow

	# "make distclean to get rid of the keys" becomes "stop the daemon".
	stop_signer
	scan_private_keys

	make_initramfs
	boot_guest
	while read -r name file mod expect; do
		check_case "$name" "$expect"
	done < "$cases"
	log "whole run $(($(date +%s) - t0))s"
	summary
}

trap 'restore_modinst; stop_signer' EXIT
main "$@"
