#!/bin/bash
# Install the Debian packages that building and testing modsign need, on
# Debian 12 or 13 (the names below are the same on both: unversioned
# clang, libclang-rt-dev).  Idempotent and quiet when everything is there.
#   tests/install-deps.sh [GROUP...]   default: every group
#   tests/install-deps.sh --list GROUP...   print their packages, install
#                                            nothing (tests/release/root.sh's
#                                            cache key: the root's packages,
#                                            not this whole file)
# The Debian 13 lane (tests/release/) installs "build test deb dkms kbuild
# provider qemu" in its root.
set -euo pipefail

declare -A group=(
	[build]="gcc make pkg-config libssl-dev libjson-c-dev openssl
		libsystemd-dev libp11-dev libp11-kit-dev p11-kit
		liblzma-dev libzstd-dev zlib1g-dev"
	# softhsm2/opensc/p11-kit-modules/gnutls-bin: PKCS#11 tokens, the
	# p11-kit proxy, certtool; systemd: systemd-socket-activate;
	# iproute2/socat: namespaces and the HSM link; linux-source: the
	# reference sign-file; kmod/xz-utils/zstd: modinfo, compressed modules;
	# libengine-pkcs11-openssl: openssl through modsign-pkcs11.so;
	# sbsigntool: sbsign/sbverify through it; pesign, libnss3-tools
	# (certutil, modutil): pesign through NSS (pkcs11-consumers.bats).
	[test]="softhsm2 opensc p11-kit-modules gnutls-bin systemd iproute2 socat
		libengine-pkcs11-openssl sbsigntool pesign libnss3-tools
		kmod xz-utils zstd python3 util-linux man-db linux-source
		bats bats-assert bats-support strace jq"
	[fuzz]="clang libclang-rt-dev valgrind"
	# ovmf: UEFI with Secure Boot and its snakeoil keys (pkcs11-consumers.bats).
	[qemu]="qemu-system-x86 busybox-static ovmf"
	# What a kernel tree needs to build (tests/qemu; the Debian 13 root
	# builds the unpatched 6.12 of tests/qemu/pkcs11.sh with it).
	[kbuild]="bc flex bison libelf-dev cpio dwarves"
	# OpenSSL's pkcs11 provider (sign-file's pkcs11: keys): Debian 13
	# only, for its root (tests/release/root.sh); on Debian 12 the suites
	# fetch bookworm-backports' into the cache, so no default group.
	[provider]="pkcs11-provider"
	[go]="golang-go golang-golang-x-mod-dev"   # tests/tlog-go
	[deb]="debhelper dpkg-dev lintian"
	[vm]="mmdebstrap qemu-utils e2fsprogs"     # tests/vm
	# tests/integration/dkms.bats: Debian's dkms and the newest Debian
	# kernel's headers (never the running kernel's tree: the suite
	# installs into its own); v4l2loopback-dkms's source is fetched into
	# the cache, not installed (its postinst would build for every kernel).
	[dkms]="dkms linux-headers-amd64"
	# make bench (tests/bench/): /usr/bin/time for one call's page faults.
	[bench]="time"
)
list=
[ "${1:-}" != --list ] || { list=1; shift; }
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(build test fuzz qemu kbuild go deb vm dkms bench)

pkgs=()
for g in "${groups[@]}"; do
	[ -n "${group[$g]:-}" ] || { echo "install-deps: no group '$g'" >&2; exit 2; }
	read -r -a p <<<"$(echo ${group[$g]})"
	pkgs+=("${p[@]}")
done
[ -z "$list" ] || { echo "${pkgs[*]}"; exit 0; }
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" > /dev/null ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
