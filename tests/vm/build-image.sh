#!/bin/bash
# Build (once per machine) and cache the guest of RELEASE that
# tests/vm/run.sh boots, in the cache outside the clone (tests/cache.sh):
#   $MODSIGN_CACHE/vm-image-RELEASE-KEY/rootfs.img   ext4: minbase Debian of
#       RELEASE + systemd + Debian's kernel + what the packages depend on
#   .../vmlinuz, initrd.img   that kernel and its initramfs
# KEY hashes the inputs (the release, this script, the runner unit, the
# package list, the mirror); a change is a new image.  Prints the
# directory.  The rootfs comes from mmdebstrap and the archive apt already
# uses: this machine's own sources for its own release (updates and
# security included, as its packages were built against them), the
# release's suite from the same mirror for another.
#   tests/vm/build-image.sh RELEASE PACKAGE...   extra packages (the .debs' Depends)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/cache.sh"

release=$1
shift
# What the tests use in the guest besides the packages' own dependencies:
# iproute2 (a dummy interface), openssl (certificates), softhsm2 (a token),
# kmod (modinfo).  No procps: the units must not need it.
guest_pkgs=(systemd systemd-sysv udev linux-image-amd64 initramfs-tools kmod
	iproute2 openssl softhsm2 passwd e2fsprogs "$@")

mirrors() {
	if [ "$release" = "$(. /etc/os-release && echo "$VERSION_CODENAME")" ]; then
		debian_mirrors
	else
		debian_mirrors "$release"
	fi
}

key=$({ echo "$release"; cat "$0" "$REPO/tests/vm/vm-check-runner.service"
	printf '%s\n' "${guest_pkgs[@]}" | sort -u; mirrors; } | cache_key)
if cache_begin "vm-image-$release" "$key"; then
	echo "$CACHE_DIR"
	exit 0
fi
IMG=$CACHE_DIR
root=$IMG/root
mapfile -t srcs < <(mirrors)
inc=$(printf '%s,' "${guest_pkgs[@]}")
echo "vm-image: mmdebstrap $release (${#guest_pkgs[@]} packages) ..." >&2
start=$SECONDS
fds_closed mmdebstrap --variant=minbase --mode=root --include="${inc%,}" \
	--aptopt='APT::Install-Recommends "false"' \
	--customize-hook='echo modsign-vm >"$1/etc/hostname"' \
	--customize-hook='echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" >"$1/etc/fstab"' \
	--customize-hook='upload '"$REPO"'/tests/vm/vm-check-runner.service /etc/systemd/system/vm-check-runner.service' \
	--customize-hook='chroot "$1" systemctl enable vm-check-runner.service' \
	--customize-hook='chroot "$1" passwd -d root' \
	"$release" "$root" "${srcs[@]}" >"$IMG/mmdebstrap.log" 2>&1 ||
	{ tail -n 20 "$IMG/mmdebstrap.log" >&2; exit 1; }

cp "$root"/boot/vmlinuz-* "$IMG/vmlinuz"
cp "$root"/boot/initrd.img-* "$IMG/initrd.img"
# The guest kernel's modules stay in the image (bookworm's /lib/modules,
# trixie's /usr/lib/modules; the initramfs loads virtio_blk and ext4 from
# its own copy).
# stdout is the directory this script prints: mke2fs says "Creating
# regular file" there when it makes the file.
mke2fs -q -t ext4 -L modsign-vm -d "$root" "$IMG/rootfs.img" 3G >&2
rm -rf "$root"
echo "vm-image: $release made in $((SECONDS - start)) s" >&2
cache_done "vm-image-$release" "$key"
echo "$IMG"
