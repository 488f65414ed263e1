#!/bin/bash
# Make (once per machine) a Debian root of another release to build and
# test modsign in, the way sbuild does: mmdebstrap from the archive apt
# already uses, with what tests/install-deps.sh installs for the groups
# below.  Kept in the cache outside the clone (tests/cache.sh), keyed by
# the release, this script, those groups' packages and the mirror; prints its
# directory.  Never touches this machine's apt sources.
#   tests/release/root.sh RELEASE [GROUP...]   (default groups: build test deb dkms kbuild
#                                               provider qemu)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/cache.sh"

release=$1
shift
groups=("${@:-build}")
# qemu: OVMF and qemu-system-x86 for pkcs11-consumers.bats's Secure Boot
# boots (and busybox-static, 2 MB, with them: one group, one switch).
[ $# -gt 0 ] || groups=(build test deb dkms kbuild provider qemu)

# The key: the packages of those groups, not all of install-deps.sh, so
# that a package added to another group (the bench's, the guests') makes
# no new root.
key=$({ echo "$release ${groups[*]}"; cat "$0"
	"$REPO/tests/install-deps.sh" --list "${groups[@]}"
	debian_mirrors "$release"; } | cache_key) || exit 1
if cache_begin "root-$release" "$key"; then
	echo "$CACHE_DIR"
	exit 0
fi
dir=$CACHE_DIR
mapfile -t srcs < <(debian_mirrors "$release")
echo "release-root: mmdebstrap $release (${groups[*]}) ..." >&2
start=$SECONDS
fds_closed mmdebstrap --variant=apt --mode=root \
	--aptopt='APT::Install-Recommends "false"' \
	--customize-hook='upload '"$REPO"'/tests/install-deps.sh /tmp/install-deps.sh' \
	--customize-hook='chroot "$1" bash /tmp/install-deps.sh '"${groups[*]}" \
	--customize-hook='rm -f "$1/tmp/install-deps.sh"' \
	"$release" "$dir/root" "${srcs[@]}" >"$dir/mmdebstrap.log" 2>&1 ||
	{ tail -n 20 "$dir/mmdebstrap.log" >&2; exit 1; }
echo "release-root: $release made in $((SECONDS - start)) s" >&2
cache_done "root-$release" "$key"
echo "$dir"
