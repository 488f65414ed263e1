#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mldsa.sh: the ML-DSA module signatures of Linux 7.3 (issue 31), on the
# two ML-DSA variants of tests/qemu/kernels.sh: 7.3-mldsa (CRYPTO_MLDSA,
# module signatures enforced) and 7.3-mldsa-waive (the same with
# CONFIG_PKCS7_WAIVE_AUTHATTRS_REJECTION_FOR_MLDSA).  Both trust the same
# three ML-DSA certificates (44, 65, 87): ML-DSA-65 is CONFIG_MODULE_SIG_KEY
# (certificate only), 44 and 87 are CONFIG_SYSTEM_TRUSTED_KEYS.
#
#	tests/qemu/mldsa.sh [VER...]     (default: both variants)
#
# The keys are made once, in the cache (mldsa_keys), with OpenSSL 3.5 in
# the Debian 13 root (tests/release/chroot.sh): Debian 12's OpenSSL 3.0 has
# no ML-DSA.  It parses the certificates, which is all the kernel's build
# needs of them (extract-cert), so the kernels are built on this machine.
# A fourth key ("other", ML-DSA-65) is trusted by neither kernel: the
# wrong-key twins.
#
# The kernel's own sign-file, built in the Debian 13 root against OpenSSL
# 3.5, adds signed attributes to an ML-DSA signature (scripts/sign-file.c,
# "flags &= ~CMS_NOATTR" below OpenSSL 4): its modules must load on the
# waiver kernel and be rejected by the other, which shows that the two
# kernels differ as they should before modsign's signatures are judged.
#
# Each kernel boots once under QEMU with every case of its own; the
# results are asserted as in run.sh.  Prints "PASS name", "FAIL name:
# reason" and "SKIP name: reason" lines, ends with "N passed, N failed".
#
# Environment: MODSIGN_CACHE, KBUILD_JOBS, QEMU_TIMEOUT (as run.sh).

set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/cache.sh"
. "$here/kernels.sh"
B=$repo/build/qemu-mldsa

log() { echo "qemu-mldsa: $*" >&2; }

# ---------------------------------------------------------------------------
# The keys

# The recipe run in the Debian 13 root: KEYDIR gets kNAME.pem (0600) and
# cNAME.pem for each "NAME ALGORITHM".  The certificate's extensions are
# those of the kernel's own certs/default_x509.genkey.
KEYS="44:ml-dsa-44 65:ml-dsa-65 87:ml-dsa-87 other:ml-dsa-65"
keygen_script()
{
	cat <<-'EOF'
	set -e
	dir=$1
	shift
	umask 077
	for k in "$@"; do
		name=${k%%:*}
		openssl req -new -x509 -newkey "${k#*:}" -nodes -days 36500 \
			-subj "/CN=modsign qemu mldsa $name" \
			-addext basicConstraints=critical,CA:FALSE \
			-addext keyUsage=digitalSignature \
			-addext subjectKeyIdentifier=hash \
			-addext authorityKeyIdentifier=keyid \
			-keyout "$dir/k$name.pem" -out "$dir/c$name.pem"
		chmod 644 "$dir/c$name.pem"
	done
	EOF
}

# mldsa_keys: set KEYDIR to the cached key set, made when missing.
mldsa_keys()
{
	local key

	key=$({ keygen_script; echo "$KEYS"; } | cache_key)
	KEYDIR=$(cache_dir qemu-mldsa-keys "$key")
	cache_lock qemu-mldsa-keys
	if ! cache_ready "$KEYDIR"; then
		rm -rf "$KEYDIR"
		mkdir -p "$KEYDIR"
		chmod 700 "$KEYDIR"
		"$repo/tests/release/chroot.sh" trixie bash -c "$(keygen_script)" sh \
			"$KEYDIR" $KEYS > "$KEYDIR/keygen.log" 2>&1 || {
			log "cannot make the ML-DSA keys: $(tail -n 3 "$KEYDIR/keygen.log")"
			return 1
		}
		cache_done qemu-mldsa-keys "$key"
	fi
	exec 9>&-
}

# ---------------------------------------------------------------------------
# The cases
#
# Every module is the external test module (tests/qemu/modules), built
# against the kernel that loads it, signed by
#   sign-file  the kernel's scripts/sign-file built against OpenSSL 3.5 in
#              the Debian 13 root, sha512: signed attributes (the "attrs"
#              form of OpenSSL 3.5's kbuild)
#   openssl-pure  the same turned into the pure form with openssl's pure
#              ML-DSA signature of the module (sign_file_script)
#   pure       modsign-client sign --key KEY: pure ML-DSA, no attributes
#   attrs      modsign-client sign --key KEY $MLDSA_ATTRS_OPT: the signed-
#              attributes form, as sign-file's
# with the daemon's or the test's key KEY (44, 65, 87: trusted; other: not),
# then, for TWIN "tamper", one byte of the signed module changed.  The last
# two columns are what the kernel without and with the waiver must do:
#   load       load (its init prints)
#   unsigned   reject, "Loading of unsigned module is rejected"
#   authattrs  reject, "Invalid module sig (has authattrs)"
#   nokey      reject, "Loading of module with unavailable key is rejected"
#   reject     reject (EKEYREJECTED), whatever the kernel prints
case_table()
{
	cat <<-'EOF'
	# NAME                          SIGNER     KEY    TWIN    NO-WAIVER  WAIVER
	unsigned                        -          -      -       unsigned   unsigned
	sign-file-mldsa44               sign-file  44     -       authattrs  load
	sign-file-mldsa65               sign-file  65     -       authattrs  load
	sign-file-mldsa87               sign-file  87     -       authattrs  load
	sign-file-mldsa44-tampered      sign-file  44     tamper  authattrs  reject
	sign-file-mldsa65-tampered      sign-file  65     tamper  authattrs  reject
	sign-file-mldsa87-tampered      sign-file  87     tamper  authattrs  reject
	sign-file-otherkey              sign-file  other  -       authattrs  nokey
	openssl-pure-mldsa44            openssl-pure  44  -       load       load
	openssl-pure-mldsa65            openssl-pure  65  -       load       load
	openssl-pure-mldsa87            openssl-pure  87  -       load       load
	openssl-pure-mldsa65-tampered   openssl-pure  65  tamper  reject     reject
	openssl-pure-otherkey           openssl-pure  other  -    nokey      nokey
	pure-mldsa44                    pure       44     -       load       load
	pure-mldsa65                    pure       65     -       load       load
	pure-mldsa87                    pure       87     -       load       load
	pure-mldsa44-tampered           pure       44     tamper  reject     reject
	pure-mldsa65-tampered           pure       65     tamper  reject     reject
	pure-mldsa87-tampered           pure       87     tamper  reject     reject
	pure-otherkey                   pure       other  -       nokey      nokey
	attrs-mldsa44                   attrs      44     -       authattrs  load
	attrs-mldsa65                   attrs      65     -       authattrs  load
	attrs-mldsa87                   attrs      87     -       authattrs  load
	attrs-mldsa44-tampered          attrs      44     tamper  authattrs  reject
	attrs-mldsa65-tampered          attrs      65     tamper  authattrs  reject
	attrs-mldsa87-tampered          attrs      87     tamper  authattrs  reject
	attrs-otherkey                  attrs      other  -       authattrs  nokey
	EOF
}

# expectation WORD: check_case's "load:..." or "reject:..." for WORD.
expectation()
{
	case $1 in
	load) echo "load:modsign_test: init ran" ;;
	unsigned) echo "reject:Loading of unsigned module is rejected" ;;
	authattrs) echo "reject:Invalid module sig (has authattrs)" ;;
	nokey) echo "reject:Loading of module with unavailable key is rejected" ;;
	reject) echo "reject:" ;;
	esac
}

# The form option of modsign-client for the signed-attributes form.
MLDSA_ATTRS_OPT=${MLDSA_ATTRS_OPT:---signed-attrs}

npass=0
nfail=0
pass() { echo "PASS $KVER/$1"; npass=$((npass + 1)); }
fail() { echo "FAIL $KVER/$1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $KVER/$1: $2"; }
summary()
{
	echo "$npass passed, $nfail failed"
	[ "$nfail" -eq 0 ]
}
abort() { fail "$1" "$2"; stop_signer; summary; exit 1; }

. "$here/guest.sh"

# ---------------------------------------------------------------------------
# The signers

# The kernel's sign-file, built against OpenSSL 3.5 in the Debian 13 root,
# signs /out/NAME.ko with key KEY for each NAME:KEY:SIGNER argument
# (sha512, as kbuild's default for 7.x; the signed attributes carry it).
# For SIGNER openssl-pure, openssl also signs the unsigned module in the
# pure form (pkeyutl -rawin: the whole module, empty context) into
# /out/NAME.sig, which pure-pkcs7.py puts in place of sign-file's
# signature: the pure form of OpenSSL 4's sign-file, made without modsign.
sign_file_script()
{
	cat <<-'EOF'
	set -e
	ksrc=$1 keydir=$2
	shift 2
	gcc -O2 -o /tmp/sign-file -I"$ksrc/scripts" -I"$ksrc/tools/include/uapi" \
		"$ksrc/scripts/sign-file.c" -lcrypto
	for a in "$@"; do
		IFS=: read -r name key signer <<< "$a"
		[ "$signer" = sign-file ] ||
			openssl pkeyutl -sign -rawin -inkey "$keydir/k$key.pem" \
				-in "/out/$name.ko" -out "/out/$name.sig"
		/tmp/sign-file sha512 "$keydir/k$key.pem" "$keydir/c$key.pem" "/out/$name.ko"
	done
	EOF
}

# The daemon, built and run in the Debian 13 root (its ML-DSA needs
# OpenSSL 3.5), on a socket in /out, which is $SIGNER on this side; the
# client is this machine's (OpenSSL 3.0: it computes mu, SHAKE256, only).
# Its keys are the test's (a file key is its key and certificate: put
# together in the root's /tmp, a tmpfs gone with it): default is ML-DSA-65,
# the kernels' own CONFIG_MODULE_SIG_KEY, so that kbuild's sign-file mode
# and batch use it.  The daemon is built in the root at every run: the
# first thing to cache (by the hash of its sources) once its cases run.
SIGNER=$repo/build/qemu-mldsa/signer
daemon_script()
{
	cat <<-'EOF'
	set -e
	keydir=$1
	echo $$ > /out/pid
	make -j2 build/modsignd > /out/make.log 2>&1
	umask 077
	for k in 44 65 87 other; do
		cat "$keydir/k$k.pem" "$keydir/c$k.pem" > "/tmp/$k.pem"
	done
	exec build/modsignd --listen unix:/out/modsignd.sock \
		--key default=/tmp/65.pem --key mldsa44=/tmp/44.pem \
		--key mldsa87=/tmp/87.pem --key other=/tmp/other.pem \
		--allow uid:0
	EOF
}

# The daemon's name of key KEY of the table.
daemon_key()
{
	case $1 in
	65) echo default ;;
	other) echo other ;;
	*) echo "mldsa$1" ;;
	esac
}

signer_pid=
start_signer()
{
	local end=$(($(date +%s) + 600)) pid

	rm -rf "$SIGNER"
	mkdir -p "$SIGNER"
	chmod 700 "$SIGNER"
	RELEASE_OUT=$SIGNER "$repo/tests/release/chroot.sh" trixie \
		bash -c "$(daemon_script)" sh "$KEYDIR" > "$SIGNER/daemon.log" 2>&1 < /dev/null &
	pid=$!
	export MODSIGN_SERVER=unix:$SIGNER/modsignd.sock
	until [ -S "$SIGNER/modsignd.sock" ] &&
		"$MODSIGN_CLIENT" status > /dev/null 2>&1; do
		if ! kill -0 "$pid" 2> /dev/null || [ "$(date +%s)" -gt "$end" ]; then
			log "the daemon did not start: $(tail -n 3 "$SIGNER/daemon.log" "$SIGNER/make.log" 2> /dev/null | tr '\n' ' ')"
			stop_signer
			return 1
		fi
		sleep 0.5
	done
	signer_pid=$(cat "$SIGNER/pid")
}

stop_signer()
{
	local p

	p=$(cat "$SIGNER/pid" 2> /dev/null) || return 0
	kill -TERM "$p" 2> /dev/null
	while kill -0 "$p" 2> /dev/null; do sleep 0.1; done
	rm -f "$SIGNER/pid"
	signer_pid=
}

# ---------------------------------------------------------------------------
# One kernel

# sign_rows: sign $B/ext/NAME.ko for every row of the table, as its SIGNER
# says; the rows whose signer is unavailable are skipped (and dropped from
# the table the guest gets, $B/rows).
sign_rows()
{
	local name signer key twin rest sf=() f

	while read -r name signer key twin rest; do
		f=$B/ext/$name.ko
		cp "$B/ext/modsign_test.ko" "$f"
		case $signer in
		-) ;;
		sign-file | openssl-pure) sf+=("$name:$key:$signer") ;;
		pure | attrs)
			if [ -z "$signer_pid" ]; then
				skip "$name" "$signer_why"
				continue
			fi
			local opt=
			[ "$signer" = pure ] || opt=$MLDSA_ATTRS_OPT
			"$MODSIGN_CLIENT" sign --key "$(daemon_key "$key")" $opt "$f" \
				2> "$B/sign.log" && has_sig "$f" || {
				fail "$name" "modsign-client sign failed: $(head -c 200 "$B/sign.log")"
				continue
			}
			;;
		esac
		echo "$name $signer $key $twin $rest" >&3
	done < <(case_table | grep -v '^#') 3> "$B/rows"

	[ ${#sf[@]} -eq 0 ] ||
		RELEASE_OUT=$B/ext "$repo/tests/release/chroot.sh" trixie \
			bash -c "$(sign_file_script)" sh "$ksrc" "$KEYDIR" "${sf[@]}" \
			> "$B/sign-file.log" 2>&1 ||
		abort sign-file "the kernel's sign-file failed: $(tail -n 3 "$B/sign-file.log" | tr '\n' ' ')"
	while read -r name signer rest; do
		[ "$signer" != openssl-pure ] ||
			"$here/pure-pkcs7.py" "$B/ext/$name.ko" "$B/ext/$name.sig" ||
			fail "$name" "cannot make the pure form"
	done < "$B/rows"
}

# guest_cases: the rows of $B/rows as guest cases, the twins tampered.
guest_cases()
{
	local name signer key twin nowaive waive want f

	while read -r name signer key twin nowaive waive; do
		f=$B/ext/$name.ko
		want=$nowaive
		[ -z "$waiver" ] || want=$waive
		if [ "$signer" != - ] && ! has_sig "$f"; then
			fail "$name" "not signed"
			continue
		fi
		if [ "$twin" = tamper ]; then
			overwrite_in_string "$f" MODSIGN-TAMPER-TARGET ||
				{ fail "$name" "marker not found"; continue; }
		fi
		add_case "$name" "$name.ko" modsign_test "$(expectation "$want")" "$f"
	done < "$B/rows"
}

# built_tree: the tree of the selected kernel when it is complete and has
# these certificates: then nothing is to be made, and build-kernel.sh's
# "make", which finds that out in a minute and a half here, is skipped.
built_tree()
{
	local top

	kernel_tarball 2> /dev/null || return 1
	top=$(cache_dir "kernel-$KVER" "$(kernel_key)")
	cache_ready "$top" &&
		cmp -s "$CERT" "$top/linux-source-$KBASE/certs/modsign_cert.pem" &&
		cmp -s "$TRUSTED" "$top/linux-source-$KBASE/certs/modsign_trusted.pem" &&
		[ -f "$top/linux-source-$KBASE/arch/x86/boot/bzImage" ] &&
		echo "$top/linux-source-$KBASE"
}

# kernel_run VER: build VER (once: its certificates never change), build
# the test module against it, sign it every way, boot, check.
kernel_run()
{
	local name file mod expect t0

	kernel_select "$1" || abort kernel "no kernel $1"
	B=$repo/build/qemu-$KVER
	cases=$B/cases.txt
	rm -rf "$B"
	mkdir -p "$B/initrd/modules" "$B/ext"
	: > "$cases"
	t0=$(date +%s)
	ksrc=$(built_tree) || ksrc=$("$here/build-kernel.sh" "$KVER" "$CERT" "$TRUSTED") &&
		[ -d "$ksrc" ] ||
		abort kernel-build "see the build.log next to the tree in $MODSIGN_CACHE"
	log "kernel $KVER ready in $(($(date +%s) - t0))s ($ksrc)"
	waiver=
	grep -qx 'CONFIG_PKCS7_WAIVE_AUTHATTRS_REJECTION_FOR_MLDSA=y' "$ksrc/.config" &&
		waiver=1

	cp "$here/modules/modsign_test.c" "$here/modules/Kbuild" "$B/ext/"
	kmake M="$B/ext" modules || abort extmod-build "make M= failed: $(tail -n 3 "$B/make.log")"
	sign_rows
	guest_cases
	if [ -n "$signer_pid" ]; then
		batch_cases
	else
		skip batch-in-tree "$signer_why"
		skip batch-extmod "$signer_why"
	fi

	make_initramfs
	boot_guest
	while read -r name file mod expect; do
		check_case "$name" "$expect"
	done < "$cases"
}

# batch NAME MODNAME TEXT [MAKE ARGS...]: make modules_install (with the
# extra ARGS) signing through MODULE_SIGN_BATCH_CMD with the kernel's own
# key, ML-DSA-65, in the default (pure) form: module MODNAME loads on
# either kernel and prints TEXT; its tampered twin is rejected.
batch()
{
	local name=$1 mod=$2 text=$3 inst=$B/inst-$1 m

	shift 3
	rm -rf "$inst"
	kmake -j2 "$@" modules_install INSTALL_MOD_PATH="$inst" \
		MODULE_SIGN_BATCH_CMD="$MODSIGN_CLIENT sign-file --batch" || {
		fail "$name" "make modules_install failed: $(tail -n 3 "$B/make.log" | tr '\n' ' ')"
		return
	}
	m=$(find_mod "$inst" "$mod")
	[ -n "$m" ] && has_sig "$m" || { fail "$name" "$mod not installed signed"; return; }
	case $m in
	*.xz) xz -dc "$m" ;;
	*) cat "$m" ;;
	esac > "$B/$name.ko"
	add_case "$name" "$name.ko" "$mod" "load:$text" "$B/$name.ko"
	cp "$B/$name.ko" "$B/$name-tampered.ko"
	overwrite_in_string "$B/$name-tampered.ko" "$text" ||
		{ fail "$name-tampered" "'$text' not found"; return; }
	add_case "$name-tampered" "$name-tampered.ko" "$mod" "reject:" "$B/$name-tampered.ko"
}

# In-tree modules and the M= module through the batch hook.
batch_cases()
{
	batch batch-in-tree test_module "Hello, world"
	batch batch-extmod modsign_test "modsign_test: init ran" M="$B/ext"
}

# ---------------------------------------------------------------------------

main()
{
	local t0 v

	t0=$(date +%s)
	KVER=mldsa # the name of what fails before a kernel is chosen
	mkdir -p "$repo/build/qemu-mldsa"
	if [ "${MODSIGN_QEMU_NO_MAKE:-}" != 1 ]; then
		make -C "$repo" > "$repo/build/qemu-mldsa/repo-make.log" 2>&1 ||
			abort setup "make at the top of the repo failed"
	fi
	mldsa_keys || abort keys "cannot make the ML-DSA keys"
	CERT=$KEYDIR/c65.pem
	TRUSTED=$repo/build/qemu-mldsa/trusted.pem
	cat "$KEYDIR/c44.pem" "$KEYDIR/c87.pem" > "$TRUSTED"

	# modsign's ML-DSA (issue 31): until it has it (its one-line refusal
	# where OpenSSL has none, lib/mldsa.h's MLDSA_NEEDS, is in this
	# machine's build), its cases are skipped, by name.
	if ! grep -qaF 'ML-DSA keys need OpenSSL' "$MODSIGN_CLIENT"; then
		signer_why="this modsign has no ML-DSA"
	elif ! start_signer; then
		signer_why="the daemon did not start"
		fail modsignd-start "see $SIGNER/daemon.log and $SIGNER/make.log"
	fi

	[ $# -gt 0 ] || set -- 7.3-mldsa 7.3-mldsa-waive
	for v in "$@"; do
		kernel_run "$v"
	done
	stop_signer
	log "whole run $(($(date +%s) - t0))s"
	summary
}

MODSIGN_CLIENT=${MODSIGN_CLIENT:-$repo/build/modsign-client}
signer_why=
trap stop_signer EXIT
main "$@"
