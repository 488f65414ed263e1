#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pkcs11.sh: an unpatched kernel tree signs its modules through modsignd
# with nothing but its own configuration (issue 32): Debian 13's
# linux-source-6.12, no kernel-patches/, CONFIG_MODULE_SIG_KEY a pkcs11:
# URI, built and "make modules_install"ed in the Debian 13 root
# (tests/release/chroot.sh), where the tree's own extract-cert and
# sign-file, built against OpenSSL 3.5, reach modsign-pkcs11.so through
# Debian 13's pkcs11-provider; then booted under QEMU (signatures
# enforced), every installed module loaded, the twins rejected.
#
#	tests/qemu/pkcs11.sh        (tests/run.sh's qemu-6.12-pkcs11)
#
# The kernel's trusted key is the one its build fetched from the token
# (certs/signing_key.x509 made by extract-cert from the URI): the
# certificate of the daemon's key "kbuild", a file key made once in the
# cache, so that the tree, built once, stays valid.  The daemon holds
#   kbuild   granted to root: CONFIG_MODULE_SIG_KEY="pkcs11:object=kbuild"
#   other    granted to root, trusted by no kernel: the other-key twin
#   nogrant  granted to no one: modules_install with it must fail
# The twins: a module signed by "other" through the same path, an
# installed module with one byte changed, an unsigned module: rejected;
# modules_install with the key not granted fails and signs nothing.
#
# Cached (tests/cache.sh), by the hash of every input: the keys
# (qemu-pkcs11-keys) and the built tree (kernel-6.12-pkcs11: the package
# version, kconfig.fragment, the 6.12 row of kernels.sh, this file's
# build recipe, the certificate, the root's compiler and OpenSSL).  A
# warm run builds modsign in the root, installs and signs the modules,
# and boots.  Prints "PASS name" / "FAIL name: reason" lines, ends with
# "N passed, N failed".
#
# Environment: MODSIGN_CACHE, KBUILD_JOBS (default 2), QEMU_TIMEOUT.

set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/cache.sh"
. "$here/kernels.sh"
NAME=6.12-pkcs11
B=$repo/build/qemu-$NAME

log() { echo "qemu-pkcs11: $*" >&2; }

# The options added to kconfig.fragment and the 6.12 row's: the key is
# the token's; the modules (besides the fragment's test_module) are hash
# algorithms whose core is built in (CRYPTO_SHA256=y): no dependencies,
# so any load order works.
pkcs11_fragment()
{
	cat <<-'EOF'
	CONFIG_MODULE_SIG_KEY="pkcs11:object=kbuild"
	CONFIG_CRYPTO_MD4=m
	CONFIG_CRYPTO_MD5=m
	CONFIG_CRYPTO_RMD160=m
	CONFIG_CRYPTO_WP512=m
	EOF
}

# ---------------------------------------------------------------------------
# Inside the Debian 13 root (pkcs11.sh --inside KEYDIR, in /src)

# The daemon and the module, built in the root once per state of their
# sources (minutes when the machine is busy), kept in the cache
# (qemu-pkcs11-bin) by the hash of the sources, the compiler and OpenSSL.
BINS="build/modsignd build/modsign-pkcs11.so"
modsign_bins()
{
	local key d

	key=$({ find Makefile lib modsignd modsign-client pkcs11-module -type f |
		LC_ALL=C sort | xargs sha256sum; gcc --version | head -n 1
		openssl version; } | cache_key)
	d=$(cache_dir qemu-pkcs11-bin "$key")
	cache_lock qemu-pkcs11-bin
	if ! cache_ready "$d"; then
		make -j"${KBUILD_JOBS:-2}" $BINS > /out/make.log 2>&1 ||
			{ log "make failed: $(tail -n 3 /out/make.log)"; return 1; }
		rm -rf "$d" && mkdir -p "$d" && cp $BINS "$d/" &&
			cache_done qemu-pkcs11-bin "$key" || return 1
	fi
	exec 9>&-
	mkdir -p build && cp "$d"/* build/
}

# The daemon on a socket in the root's /run; its audit log goes to /out.
start_daemon()
{
	local keydir=$1 k i

	modsign_bins || return 1
	(
		umask 077
		for k in kbuild other; do
			cat "$keydir/k$k.pem" "$keydir/c$k.pem" > "/tmp/$k.pem"
		done
	)
	build/modsignd --listen unix:/run/modsignd.sock \
		--key kbuild=/tmp/kbuild.pem --key other=/tmp/other.pem \
		--key nogrant=ephemeral:ecdsa-p256 --allow uid:0=kbuild,other \
		> /out/modsignd.log 2>&1 &
	daemon=$!
	export MODSIGN_SERVER=unix:/run/modsignd.sock
	export PKCS11_PROVIDER_MODULE=/src/build/modsign-pkcs11.so
	for i in $(seq 100); do
		[ -S /run/modsignd.sock ] && return 0
		kill -0 "$daemon" 2> /dev/null || break
		sleep 0.2
	done
	log "the daemon did not start: $(tail -n 3 /out/modsignd.log)"
	return 1
}

# tree_key: the hash of the tree's inputs.
tree_key()
{
	{
		echo "$KPACKAGE $KPKGVERSION"
		kernel_table | awk '$1 == "6.12"'
		cat "$here/kconfig.fragment" "$1/ckbuild.pem"
		declare -f pkcs11_fragment prepare_tree tree_key
		gcc --version | head -n 1
		openssl version
	} | cache_key
}

# prepare_tree: extract, configure (tinyconfig, the fragments: no patch)
# and build the tree in $top with the daemon up: extract-cert fetches
# the certificate from the token.
prepare_tree()
{
	local opt bad=0

	rm -rf "$top"
	mkdir -p "$top"
	tar -C "$top" -xf "$KTARBALL"
	make -C "$ksrc" -s tinyconfig > "$top/config.log" 2>&1
	{
		cat "$here/kconfig.fragment"
		[ -z "$KFRAGMENT" ] || echo "$KFRAGMENT"
		pkcs11_fragment
	} > "$top/fragment.config"
	(cd "$ksrc" && scripts/kconfig/merge_config.sh -m .config \
		"$top/fragment.config" >> "$top/config.log" 2>&1)
	make -C "$ksrc" -s olddefconfig >> "$top/config.log" 2>&1
	while read -r opt; do
		[[ $opt == CONFIG_*=* ]] || continue
		grep -qxF "$opt" "$ksrc/.config" || { log "not set as asked: $opt"; bad=1; }
	done < "$top/fragment.config"
	[ "$bad" = 0 ] || return 1
	log "building the kernel (make -j${KBUILD_JOBS:-2})"
	make -C "$ksrc" -j"${KBUILD_JOBS:-2}" > "$top/build.log" 2>&1 ||
		{ tail -n 20 "$top/build.log" >&2; return 1; }
}

inside()
{
	local keydir=$1 key rc

	start_daemon "$keydir" || return 1
	kernel_select 6.12 && kernel_tarball || return 1
	cache_lock "kernel-$NAME"
	key=$(tree_key "$keydir")
	top=$(cache_dir "kernel-$NAME" "$key")
	ksrc=$top/linux-source-$KBASE
	if ! cache_ready "$top"; then
		prepare_tree || { log "kernel build failed, see $top"; return 1; }
		cache_done "kernel-$NAME" "$key"
	fi
	echo "$ksrc" > /out/tree

	make -C "$ksrc" modules_install INSTALL_MOD_PATH=/out/inst \
		> /out/modules_install.log 2>&1
	echo $? > /out/modules_install.rc

	# The twins' modules: unsigned, and signed by "other" through the
	# same sign-file, provider and module.
	cp "$ksrc/lib/test_module.ko" /out/unsigned.ko
	cp "$ksrc/lib/test_module.ko" /out/other-key.ko
	"$ksrc/scripts/sign-file" sha256 pkcs11:object=other "$keydir/cother.pem" \
		/out/other-key.ko > /out/other-key.log 2>&1
	echo $? > /out/other-key.rc

	# The key root is not granted: make modules_install must fail.
	make -C "$ksrc" modules_install INSTALL_MOD_PATH=/out/inst-nogrant \
		CONFIG_MODULE_SIG_KEY=pkcs11:object=nogrant > /out/nogrant.log 2>&1
	echo $? > /out/nogrant.rc

	kill "$daemon"
	wait "$daemon"
	return 0
}

if [ "${1:-}" = --inside ]; then
	inside "$2"
	exit
fi

# ---------------------------------------------------------------------------
# On this machine

npass=0
nfail=0
pass() { echo "PASS $NAME/$1"; npass=$((npass + 1)); }
fail() { echo "FAIL $NAME/$1: $2"; nfail=$((nfail + 1)); }
summary()
{
	echo "$npass passed, $nfail failed"
	[ "$nfail" -eq 0 ]
}
abort() { fail "$1" "$2"; summary; exit 1; }

. "$here/guest.sh"

# pkcs11_keys: set KEYDIR to the cached keys (RSA: the fragment's key
# type), made when missing; kNAME.pem (0600) and cNAME.pem.
pkcs11_keys()
{
	local key k

	key=$(echo "qemu-pkcs11 rsa:2048 kbuild other" | cache_key)
	KEYDIR=$(cache_dir qemu-pkcs11-keys "$key")
	cache_lock qemu-pkcs11-keys
	if ! cache_ready "$KEYDIR"; then
		rm -rf "$KEYDIR"
		mkdir -p "$KEYDIR"
		chmod 700 "$KEYDIR"
		for k in kbuild other; do
			(umask 077 && openssl req -new -x509 -newkey rsa:2048 -nodes \
				-days 36500 -subj "/CN=modsign qemu pkcs11 $k" \
				-addext basicConstraints=critical,CA:FALSE \
				-addext keyUsage=digitalSignature \
				-addext subjectKeyIdentifier=hash \
				-addext authorityKeyIdentifier=keyid \
				-keyout "$KEYDIR/k$k.pem" -out "$KEYDIR/c$k.pem") \
				2> /dev/null || return 1
			chmod 644 "$KEYDIR/c$k.pem"
		done
		cache_done qemu-pkcs11-keys "$key"
	fi
	exec 9>&-
}

# ksrc for guest.sh: the tree's bzImage, and gen_init_cpio built here
# (the tree's is linked against Debian 13's libc).
guest_tree()
{
	local tree=$1

	ksrc=$B/kernel
	mkdir -p "$ksrc/usr" "$ksrc/arch/x86/boot"
	cp "$tree/arch/x86/boot/bzImage" "$ksrc/arch/x86/boot/" &&
		gcc -O2 -o "$ksrc/usr/gen_init_cpio" "$tree/usr/gen_init_cpio.c"
}

# The installed modules, each signed by kbuild through the module (one
# audit record by sign-file each), each a guest case that must load.
installed_cases()
{
	local m n count=0 recs

	[ "$(cat "$B/out/modules_install.rc")" = 0 ] ||
		abort modules-install "make modules_install failed: $(tail -n 3 "$B/out/modules_install.log" | tr '\n' ' ')"
	while read -r m; do
		n=${m##*/}
		n=${n%%.ko*}
		has_sig "$m" || { fail "signed-$n" "installed unsigned"; continue; }
		count=$((count + 1))
		case $n in
		test_module) add_case "load-$n" "$n.ko.xz" "$n" "load:Hello, world" "$m" ;;
		*) add_case "load-$n" "$n.ko.xz" "$n" "load:" "$m" ;;
		esac
	done < <(find "$B/out/inst" -name '*.ko*' | sort)
	[ "$count" -ge 5 ] || fail modules-installed "$count modules, expected 5"
	recs=$(grep -c '"module":"pkcs11:object=kbuild","program":"sign-file","result":"ok"' \
		"$B/out/modsignd.log")
	if [ "$recs" = "$count" ]; then
		pass "modules-install-signed-by-sign-file-via-token"
	else
		fail modules-install-signed-by-sign-file-via-token \
			"$recs audit records by sign-file, $count modules"
	fi
}

# The twins: other key, tampered, unsigned; the key not granted.
twin_cases()
{
	local m

	[ "$(cat "$B/out/other-key.rc")" = 0 ] && has_sig "$B/out/other-key.ko" &&
		add_case other-key other-key.ko test_module \
			"reject:Loading of module with unavailable key is rejected" "$B/out/other-key.ko" ||
		fail other-key "sign-file with pkcs11:object=other failed: $(tail -n 2 "$B/out/other-key.log")"
	m=$(find_mod "$B/out/inst" test_module)
	xz -dc "$m" > "$B/tampered.ko" && overwrite_in_string "$B/tampered.ko" "Hello, world" &&
		add_case tampered tampered.ko test_module reject: "$B/tampered.ko" ||
		fail tampered "cannot make the tampered module"
	add_case unsigned unsigned.ko test_module \
		"reject:Loading of unsigned module is rejected" "$B/out/unsigned.ko"

	if [ "$(cat "$B/out/nogrant.rc")" = 0 ]; then
		fail nogrant-modules-install-fails "make modules_install succeeded"
	elif ! grep -q 'sign-file' "$B/out/nogrant.log"; then
		fail nogrant-modules-install-fails "no sign-file error in its output"
	elif [ -n "$(find "$B/out/inst-nogrant" -name '*.ko*' 2> /dev/null |
		while read -r m; do has_sig "$m" && echo "$m"; done)" ]; then
		fail nogrant-modules-install-fails "a module was signed"
	else
		pass nogrant-modules-install-fails
	fi
}

main()
{
	local t0=$(date +%s) t1 name file mod expect

	cases=$B/cases.txt
	rm -rf "$B"
	mkdir -p "$B/out" "$B/initrd/modules"
	: > "$cases"
	pkcs11_keys || abort keys "cannot make the keys"
	RELEASE_OUT=$B/out "$repo/tests/release/chroot.sh" trixie \
		tests/qemu/pkcs11.sh --inside "$KEYDIR" > "$B/inside.log" 2>&1 < /dev/null ||
		abort root "the Debian 13 part failed: $(tail -n 5 "$B/inside.log" | tr '\n' ' ')"
	t1=$(date +%s)
	log "Debian 13 part (build, modules_install) $((t1 - t0))s"
	guest_tree "$(cat "$B/out/tree")" || abort guest-tree "no bzImage or gen_init_cpio"
	installed_cases
	twin_cases
	make_initramfs
	boot_guest
	if tr -d '\r' < "$B/console.log" | grep "Loaded X.509 cert 'modsign qemu pkcs11 kbuild" > /dev/null; then
		pass trusted-key-from-the-token
	else
		fail trusted-key-from-the-token "the kernel did not load the kbuild certificate"
	fi
	while read -r name file mod expect; do
		check_case "$name" "$expect"
	done < "$cases"
	log "whole run $(($(date +%s) - t0))s"
	summary
}

main "$@"
