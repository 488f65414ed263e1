# Loaded (load dkms) by the suites that have Debian's dkms build a real
# DKMS package (v4l2loopback-dkms's source, from the archive) for Debian
# linux-headers of a kernel that is not the running one, in a case's own
# trees and mount namespace (dkms.bats with modsign-client as DKMS's
# sign_file, pkcs11-dkms.bats with DKMS's default sign_file through the
# PKCS#11 module; the why is at the top of dkms.bats).  After load
# ../common.

PKG=v4l2loopback

# The source of v4l2loopback-dkms as this release's archive ships it, kept
# in the cache under its version: only the package is an input.  Through
# this machine's apt, or a private configuration for the release (the
# Debian 13 lane's root has no apt lists; tests/cache.sh apt_suite).
candidate() {
	"$@" apt-cache policy v4l2loopback-dkms 2>/dev/null |
		awk '/Candidate:/ && $2 != "(none)" { print $2 }'
}
dkms_source() {
	local ver key dir apt=()

	ver=$(candidate)
	if [ -z "$ver" ]; then
		apt=(apt_suite "$(. /etc/os-release && echo "$VERSION_CODENAME")")
		ver=$(candidate "${apt[@]}")
	fi
	[ -n "$ver" ] || {
		echo "v4l2loopback-dkms: not in this release's archive" >&2
		return 1
	}
	key=$(echo "v4l2loopback-dkms $ver" | cache_key)
	dir=$(cache_dir dkms-src "$key")
	cache_lock dkms-src
	if ! cache_ready "$dir"; then
		rm -rf "$dir" && mkdir -p "$dir" || return 1
		(cd "$dir" && "${apt[@]}" apt-get download -q "v4l2loopback-dkms=$ver" \
			>download.log 2>&1 && dpkg-deb -x v4l2loopback-dkms_*.deb root) || {
			cat "$dir/download.log" >&2
			return 1
		}
		cache_done dkms-src "$key"
	fi
	exec 9>&-
	ls -d "$dir"/root/usr/src/$PKG-*
}

# The newest Debian headers that are not the running kernel's
# (tests/install-deps.sh installs linux-headers-amd64).
headers_version() {
	local d v best=

	for d in /usr/src/linux-headers-*; do
		v=${d#/usr/src/linux-headers-}
		[ -f "$d/.config" ] && [ -e "/lib/modules/$v/build" ] || continue
		[ "$v" != "$(uname -r)" ] || continue
		best=$(printf '%s\n' $best "$v" | sort -V | tail -n1)
	done
	[ -n "$best" ] || { echo "no linux-headers-*-amd64 but the running kernel's" >&2; return 1; }
	echo "$best"
}
# dkms_file_setup: the setup_file of such a suite: KVER, SRC, VER, EXT
# and DKMS_VER exported for its cases.
dkms_file_setup() {
	command -v dkms >/dev/null || {
		echo "dkms missing: tests/install-deps.sh dkms" >&2
		return 1
	}
	. "$REPO/tests/cache.sh"
	KVER=$(headers_version)
	SRC=$(dkms_source)
	VER=${SRC##*/$PKG-}
	EXT=$(module_ext)
	DKMS_VER=$(dkms --version | sed 's/^dkms-//')
	export KVER SRC VER EXT DKMS_VER
}

# The suffix the kernel's own modules are installed with, from its
# CONFIG_MODULE_COMPRESS_* (Debian 12: none; 13: .xz).
module_ext() {
	case $(grep '^CONFIG_MODULE_COMPRESS_[A-Z]*=y' "/usr/src/linux-headers-$KVER/.config") in
	*_XZ=y) echo .xz ;;
	*_ZSTD=y) echo .zst ;;
	*_GZIP=y) echo .gz ;;
	esac
}

# pack FILE: FILE on stdout as dkms 3.2.2 compresses it for $EXT (its
# compress_*_opts defaults), or as it is.
pack() {
	case $EXT in
	.xz) xz --check=crc32 --lzma2=dict=1MiB -c "$1" ;;
	.zst) zstd -q -T0 -c "$1" ;;
	.gz) gzip -c "$1" ;;
	*) cat "$1" ;;
	esac
}

# unpack FILE: its content, by the tool its name says, on stdout.
unpack() {
	case $1 in
	*.xz) xz -dc "$1" ;;
	*.zst) zstd -dcq "$1" ;;
	*.gz) gzip -dc "$1" ;;
	*) cat "$1" ;;
	esac
}

# dkms 3.2 or later: post_transaction runs (3.0 has none).
dkms32() { [ "$(printf '3.2\n%s\n' "$DKMS_VER" | sort -V | head -n1)" = 3.2 ]; }

# dkms_case_setup SIGN_FILE|-: in the case's $T (case_setup), the trees a
# dkms run takes: the package's source; the shipped framework.conf.d
# snippet (dkms/modsign.conf) with the case's sign_file ("-": its line
# dropped, DKMS's default, the kernel's sign-file), certificate and check
# (its post_transaction line otherwise as shipped); root's client.conf
# naming unix:$T/sock; the key rsa.pem ("dkms test key").  The install
# tree as the kernel's packages make it: the headers' build link (where
# dkms 3.2 looks for them: $install_tree/VERSION; 3.0 in /lib/modules),
# and the kernel's own modules as its linux-image installs them (one
# stands for all): dkms 3.2 compresses its modules like them.  Sets MOD,
# the module DKMS installs, and DKMSD, its directory.
dkms_case_setup() {
	local sign_file=(-e "s|^sign_file=.*|sign_file=$1|")
	[ "$1" != - ] || sign_file=(-e '/^sign_file=/d')

	make_pem_key "$T/rsa.pem" rsa:2048 "dkms test key"
	mkdir -p src "modules/$KVER" etc-dkms/framework.conf.d home/.config/modsign
	cp -a "$SRC" src/
	sed "${sign_file[@]}" \
	    -e "s|/var/lib/dkms/modsign.der|$T/modsign.der|" \
	    -e "s|^post_transaction=\"|post_transaction=\"PATH=$B:\\\$PATH |" \
	    -e "s|/etc/kernel/postinst.d/zz-modsign-dkms-check|$REPO/dkms/zz-modsign-dkms-check|" \
		"$REPO/dkms/modsign.conf" >etc-dkms/framework.conf.d/modsign.conf
	echo "server = unix:$T/sock" >home/.config/modsign/client.conf
	ln -s "/lib/modules/$KVER/build" "modules/$KVER/build"
	if [ -n "$EXT" ]; then
		mkdir -p "modules/$KVER/kernel"
		pack "$(real_modules 1)" >"modules/$KVER/kernel/installed.ko$EXT"
	fi
	MOD=$T/modules/$KVER/updates/dkms/$PKG.ko$EXT
	DKMSD=$T/modules/$KVER/updates/dkms
}

# dkms_run ARGS...: Debian's dkms in the case's namespace (its
# framework.conf.d, its root home), its environment reset as apt's hooks
# reset it (env -i; DKMS_ENV adds to it), on the case's trees.
# DKMS_BINDS: more "DIR=TARGET" binds, space-separated, for what a case
# installs on the system as a package would (no spaces in the paths).
dkms_run() {
	DKMS_BINDS="$T/etc-dkms=/etc/dkms $T/home=/root ${DKMS_BINDS:-}" \
	unshare -m --propagation private sh -c \
		'for b in $DKMS_BINDS; do mount --bind "${b%%=*}" "${b#*=}" || exit 1; done
		exec "$@"' \
		dkms-run env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ${DKMS_ENV:-} \
		dkms "$@" --dkmstree "$T/dkms" --sourcetree "$T/src" \
		--installtree "$T/modules" --no-depmod
}

# dkms_install: add, build (where it signs) and install, from a fresh
# DKMS tree; the output of all three in dkms.out.
dkms_install() {
	rm -rf "$T/dkms" "$T/modules/$KVER/updates"
	mkdir -p "$T/dkms"
	{ dkms_run add "$PKG/$VER" &&
		dkms_run build "$PKG/$VER" -k "$KVER" &&
		dkms_run install "$PKG/$VER" -k "$KVER"; } >"$T/dkms.out" 2>&1
}

# enrol_cert: the certificate of the daemon's key dkms at $T/modsign.der,
# fetched from the daemon at unix:$T/sock as the README has the user do.
enrol_cert() {
	MODSIGN_SERVER=unix:$T/sock "$C" cert --key dkms --der >"$T/modsign.der"
}

# dkms_install_enrolled daemon|file|none: dkms_install over a certificate
# enrolled at DKMS's mok_certificate, $T/modsign.der: the daemon's
# (enrol_cert), rsa.pem's own as enrolled earlier ("file": the daemon is
# down or refuses root the key), or none at all.  ENROLLED is its sha256
# (no_key_made's argument), empty for none.  Whatever the signer did,
# dkms must install (3.0 ignores sign_file's status, 3.2 warns): dkms.out
# is shown in a failing case's log, and is $output after.
dkms_install_enrolled() {
	ENROLLED=
	case $1 in
	daemon) enrol_cert ;;
	file) openssl x509 -in "$T/rsa.pem.crt" -outform DER -out "$T/modsign.der" ;;
	none) ;;
	*) echo "dkms_install_enrolled: $1: not daemon, file or none" >&2; return 1 ;;
	esac
	[ "$1" = none ] || ENROLLED=$(sha "$T/modsign.der")
	run dkms_install
	cat "$T/dkms.out"
	assert_success
	run cat "$T/dkms.out"
}

# signed_as_sign_file: the module DKMS installed is, to the byte, the
# kernel's own sign-file's signature with the key file rsa.pem over the
# same unsigned bytes, compressed as dkms compresses.  Leaves got.ko, the
# installed module uncompressed, in the working directory.
signed_as_sign_file() {
	unpack "$MOD" >got.ko
	split_module got.ko ref.ko ref.sig
	ref sha256 rsa.pem rsa.pem.crt ref.ko
	cmp ref.ko got.ko
	pack ref.ko >ref.out
	cmp ref.out "$MOD"
}

# The shipped check (dkms/zz-modsign-dkms-check) on the case's tree.
dkms_check() {
	PATH=$B:$PATH MODSIGN_DKMS_TREE=$T/modules MODSIGN_DKMS_CERT=$T/modsign.der \
		"$REPO/dkms/zz-modsign-dkms-check" "$KVER"
}

# no_key_made: DKMS made no key (a file named after the pkcs11: URI) and
# left the certificate (sha $1) alone.
no_key_made() {
	assert_equal "$(sha "$T/modsign.der")" "$1"
	run find "$T" -name 'pkcs11:*'
	assert_output ""
}

# post_transaction_said OK|FAIL: on dkms 3.2, the shipped post_transaction
# ran the check after the install: "done", or "bad exit status: 1" with
# the check's lines in its log (dkms exits 0 either way).  Nothing on 3.0.
post_transaction_said() {
	dkms32 || return 0
	run cat "$T/dkms.out"
	assert_output --partial "Executing post-transaction command..."
	if [ "$1" = OK ]; then
		assert_output --regexp "Executing post-transaction command\.*\.* done\."
		run cat "$T/dkms/post_transaction.log"
		assert_output --partial "$MOD: OK (sha256)"
		assert_output --partial "# exit code: 0"
	else
		assert_output --partial "(bad exit status: 1)"
		run cat "$T/dkms/post_transaction.log"
		assert_output --partial "modsign-client: $MOD: not signed"
		assert_output --partial "zz-modsign-dkms-check: kernel $KVER: the DKMS modules above are not signed"
		assert_output --partial "# exit code: 1"
	fi
}
