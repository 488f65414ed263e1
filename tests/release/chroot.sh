#!/bin/bash
# Run a command on this checkout inside a Debian root of another release
# (tests/release/root.sh), in a private mount namespace: the cached root is
# the lower layer of an overlay whose upper layer is thrown away after the
# command, so every run starts from the same root; the checkout (its
# files, not build/) is copied to /src, the cache outside the clone is
# bind-mounted at its own path (the lane keeps its fixture there), the
# cached root itself read-only, and the command runs in /src as root.
# Nothing is mounted outside the namespace.  Not a containment boundary:
# root in the chroot is root (/dev and /sys are the host's).
# What the command leaves in /out reaches the host directory $RELEASE_OUT
# (bind-mounted there when set: e.g. the release's .debs, for tests/vm/).
#   [RELEASE_OUT=DIR] tests/release/chroot.sh RELEASE COMMAND...
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/cache.sh"

release=$1
shift
root=$("$REPO/tests/release/root.sh" "$release")/root
# Held for as long as the overlay is up: a run with other inputs (another
# worktree) must not drop this root under it (tests/cache.sh cache_done).
cache_use "${root%/root}" || { echo "the cached $release root went away: run again" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/release-$release.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/upper" "$work/work" "$work/merged"

# The checkout as git sees it (tracked and new files, not build/).
(cd "$REPO" && git ls-files -coz --exclude-standard | grep -zv '^build/' |
	tar --null -T - -cf "$work/src.tar")

export MODSIGN_CACHE RELEASE_OUT=${RELEASE_OUT:+$(realpath "$RELEASE_OUT")}
unshare -m --propagation private bash -euc '
	root=$1 work=$2
	shift 2
	m=$work/merged
	mount -t overlay overlay -o "lowerdir=$root,upperdir=$work/upper,workdir=$work/work" "$m"
	mount -t proc proc "$m/proc"
	mount --rbind /dev "$m/dev"
	mount --rbind /sys "$m/sys"
	mount -t tmpfs tmpfs "$m/tmp"
	mount -t tmpfs tmpfs "$m/run"
	# The host network, so its resolver and its names (localhost); a
	# link in the root is replaced, never followed to a host file.
	cp --remove-destination /etc/resolv.conf "$m/etc/resolv.conf"
	cp --remove-destination /etc/hosts "$m/etc/hosts"
	mkdir -p "$m/src" "$m$MODSIGN_CACHE"
	mount --bind "$MODSIGN_CACHE" "$m$MODSIGN_CACHE"
	# The overlay lower layer must not change under it: read-only.
	mount --bind "${root%/root}" "$m${root%/root}"
	mount -o remount,bind,ro "$m${root%/root}"
	if [ -n "$RELEASE_OUT" ]; then
		mkdir -p "$m/out"
		mount --bind "$RELEASE_OUT" "$m/out"
	fi
	tar -C "$m/src" -xf "$work/src.tar"
	exec chroot "$m" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root TERM=dumb LANG=C.UTF-8 MODSIGN_CACHE="$MODSIGN_CACHE" \
		CI="${CI:-}" MODSIGN_SKIP_QEMU="${MODSIGN_SKIP_QEMU:-}" \
		bash -c "cd /src && exec \"\$@\"" sh "$@"
' sh "$root" "$work" "$@"
