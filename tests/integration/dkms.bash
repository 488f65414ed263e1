# Loaded (load dkms) by the suites that have Debian's dkms build a real
# DKMS package (v4l2loopback-dkms's source, from the archive) for Debian
# linux-headers of a kernel that is not the running one, in a case's own
# trees and mount namespace (dkms.bats, pkcs11-consumers.bats; the why is
# at the top of dkms.bats).  After load ../common.

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
# dkms_file_setup: the setup_file of such a suite: KVER, SRC and VER
# exported for its cases.
dkms_file_setup() {
	command -v dkms >/dev/null || {
		echo "dkms missing: tests/install-deps.sh dkms" >&2
		return 1
	}
	. "$REPO/tests/cache.sh"
	KVER=$(headers_version)
	SRC=$(dkms_source)
	VER=${SRC##*/$PKG-}
	export KVER SRC VER
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

