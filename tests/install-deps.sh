#!/bin/bash
# Install the Debian packages that building and testing modsign need.
# Idempotent and quiet when everything is already there.
set -euo pipefail

pkgs=(
	gcc make pkg-config libssl-dev libjson-c-dev openssl   # build
	libsystemd-dev libp11-dev libp11-kit-dev p11-kit softhsm2 opensc  # daemon: journal, sd_notify, PKCS#11
	systemd                                                # systemd-socket-activate, systemd-analyze
	p11-kit-modules gnutls-bin                             # tests/integration/hsm.bats: p11-kit proxy, certtool
	iproute2 socat                                         # tests/integration/farm.bats: namespaces, the HSM link
	kmod xz-utils python3 util-linux man-db                # tests: modinfo, xz, runuser, man
	linux-source                                           # reference sign-file
	qemu-system-x86 busybox-static bc flex bison libelf-dev cpio dwarves  # tests/qemu
	clang-14 libclang-rt-14-dev valgrind strace                  # fuzzers, sanitizers, security
	bats bats-assert bats-support                          # tests/integration/*.bats
	golang-go golang-golang-x-mod-dev                      # tests/tlog-go: the independent transparency log check
	debhelper dpkg-dev lintian                             # make deb
	mmdebstrap qemu-utils e2fsprogs                        # make vm-check (tests/vm)
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
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
