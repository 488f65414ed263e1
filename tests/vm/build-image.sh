#!/bin/bash
# Build (once) and cache the Debian 12 guest that tests/vm/run.sh boots:
#   build/vm/image/rootfs.img   ext4: minbase Debian 12 + systemd + Debian's
#                               6.1 kernel + what the packages depend on
#   build/vm/image/vmlinuz, initrd.img   that kernel and its initramfs
# The rootfs comes from mmdebstrap and the archive apt already uses; it is
# rebuilt only when its inputs (this script, the package list) change.
#   tests/vm/build-image.sh PACKAGE...   extra packages (the .debs' Depends)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
IMG=$REPO/build/vm/image

# What the tests use in the guest besides the packages' own dependencies:
# iproute2 (a dummy interface), openssl (certificates), softhsm2 (a token),
# kmod (modinfo).  No procps: the units must not need it.
guest_pkgs=(systemd systemd-sysv udev linux-image-amd64 initramfs-tools kmod
	iproute2 openssl softhsm2 passwd e2fsprogs "$@")

# The archive: the URIs and suites of apt's own deb822 sources.
mirrors() {
	awk '/^URIs:/ { u = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) print "deb " u " " $i " main" }' \
		/etc/apt/sources.list.d/debian.sources
}

key=$( { cat "$0"; printf '%s\n' "${guest_pkgs[@]}" | sort -u; mirrors; } | sha256sum | cut -c1-16)
if [ -f "$IMG/stamp" ] && [ "$(cat "$IMG/stamp")" = "$key" ]; then
	exit 0
fi

# An mmdebstrap that was killed can leave /proc and /sys mounted in root.
{ findmnt -rno TARGET | grep "^$IMG/" || true; } | sort -r | xargs -r umount -l
rm -rf "$IMG" && mkdir -p "$IMG"
root=$IMG/root
mapfile -t srcs < <(mirrors)
inc=$(printf '%s,' "${guest_pkgs[@]}")
echo "vm-image: mmdebstrap bookworm (${#guest_pkgs[@]} packages) ..." >&2
mmdebstrap --variant=minbase --mode=root --include="${inc%,}" \
	--aptopt='APT::Install-Recommends "false"' \
	--customize-hook='echo modsign-vm >"$1/etc/hostname"' \
	--customize-hook='echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" >"$1/etc/fstab"' \
	--customize-hook='upload '"$REPO"'/tests/vm/vm-check-runner.service /etc/systemd/system/vm-check-runner.service' \
	--customize-hook='chroot "$1" systemctl enable vm-check-runner.service' \
	--customize-hook='chroot "$1" passwd -d root' \
	bookworm "$root" "${srcs[@]}" >"$IMG/mmdebstrap.log" 2>&1 ||
	{ tail -n 20 "$IMG/mmdebstrap.log" >&2; exit 1; }

cp "$root"/boot/vmlinuz-* "$IMG/vmlinuz"
cp "$root"/boot/initrd.img-* "$IMG/initrd.img"
# The guest kernel's modules stay in the image (the initramfs loads
# virtio_blk and ext4 from its own copy).
mke2fs -q -t ext4 -L modsign-vm -d "$root" "$IMG/rootfs.img" 3G
rm -rf "$root"
echo "$key" >"$IMG/stamp"
