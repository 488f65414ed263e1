#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-kernel.sh: extract Debian's linux-source-6.1 under build/kernel/,
# apply kernel-patches/6.1/ in the order of its series file, configure a
# tiny module-signing kernel and build it.
#
# The tree is extracted, patched and configured again only when an input
# changes: the patches, the config fragment, this script or the source
# tarball.  Their hash is kept in build/kernel/stamp.  Otherwise "make" runs
# on the existing tree, which is a no-op, or relinks vmlinux when the
# certificates changed (they are new with every ephemeral modsignd key).
#
# The certificates are named by fixed paths inside the tree,
#   certs/modsign_cert.pem     CONFIG_MODULE_SIG_KEY (certificate only)
#   certs/modsign_trusted.pem  CONFIG_SYSTEM_TRUSTED_KEYS (more certificates)
# so that new keys change no configuration option and rebuild nothing but
# certs/ and the vmlinux link.
#
# Usage: build-kernel.sh CERT_PEM TRUSTED_PEM
# Environment: KBUILD_JOBS (default 2), MODSIGN_KERNEL_TARBALL.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
top=$repo/build/kernel
tarball=${MODSIGN_KERNEL_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
ksrc=$top/linux-source-6.1
jobs=${KBUILD_JOBS:-2}

cert=$1
trusted=$2

log() { echo "build-kernel: $*" >&2; }

inputs_hash()
{
	local p

	{
		stat -c '%n %s %Y' "$tarball"
		dpkg-query -W -f '${Package} ${Version}\n' linux-source-6.1 \
			2>/dev/null || true
		cat "$repo/kernel-patches/6.1/series"
		while read -r p; do
			cat "$repo/kernel-patches/6.1/$p"
		done < "$repo/kernel-patches/6.1/series"
		cat "$here/kconfig.fragment" "$here/build-kernel.sh"
	} | sha256sum | cut -d' ' -f1
}

prepare_tree()
{
	local p

	log "extracting $tarball"
	rm -rf "$ksrc" "$top/stamp"
	mkdir -p "$top"
	tar -C "$top" -xf "$tarball"
	[ -d "$ksrc" ] || { log "no linux-source-6.1/ in $tarball"; exit 1; }

	# Keys that ship with the pristine tree (selftest keys); the private
	# key scan of run.sh reports only keys that are not in this list.
	(cd "$ksrc" && grep -rlI -e '-----BEGIN [A-Z ]*PRIVATE KEY-----' . ||
		true) | sort > "$top/pristine-private-keys.txt"

	while read -r p; do
		[ -n "$p" ] || continue
		log "applying $p"
		patch -d "$ksrc" -p1 --quiet --forward < "$repo/kernel-patches/6.1/$p"
	done < "$repo/kernel-patches/6.1/series"

	log "configuring"
	make -C "$ksrc" -s tinyconfig > "$top/config.log" 2>&1
	cp "$here/kconfig.fragment" "$top/fragment.config"
	cat >> "$top/fragment.config" <<-EOF
	CONFIG_MODULE_SIG_KEY="certs/modsign_cert.pem"
	CONFIG_SYSTEM_TRUSTED_KEYS="certs/modsign_trusted.pem"
	EOF
	(cd "$ksrc" && scripts/kconfig/merge_config.sh -m .config \
		"$top/fragment.config" >> "$top/config.log" 2>&1)
	make -C "$ksrc" -s olddefconfig
	check_config
}

# Fail loudly when olddefconfig dropped an option of the fragment.
check_config()
{
	local opt bad=0

	while read -r opt; do
		case $opt in
		CONFIG_*=*) ;;
		*) continue ;;
		esac
		grep -qxF "$opt" "$ksrc/.config" || {
			log "option not set as asked: $opt"
			bad=1
		}
	done < "$top/fragment.config"
	return $bad
}

# Copy a file into the tree only if its contents changed, so that make
# sees a new timestamp only when there is something to rebuild.
install_if_changed()
{
	cmp -s "$1" "$2" || cp "$1" "$2"
}

main()
{
	local want

	[ -r "$tarball" ] || { log "$tarball missing"; exit 1; }
	want=$(inputs_hash)
	if [ ! -f "$ksrc/.config" ] || [ "$(cat "$top/stamp" 2>/dev/null)" != "$want" ]; then
		prepare_tree
		echo "$want" > "$top/stamp"
	else
		log "tree up to date (stamp $want)"
	fi

	install_if_changed "$cert" "$ksrc/certs/modsign_cert.pem"
	install_if_changed "$trusted" "$ksrc/certs/modsign_trusted.pem"

	log "make -j$jobs"
	make -C "$ksrc" -j"$jobs" > "$top/build.log" 2>&1 || {
		tail -n 40 "$top/build.log" >&2
		log "kernel build failed, see $top/build.log"
		exit 1
	}
}

main "$@"
