#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-kernel.sh: the tiny module-signing kernel VER of tests/qemu/kernels.sh,
# built in the cache outside the clone: Debian's linux-source-BASE extracted
# into $MODSIGN_CACHE/kernel-VER-KEY, kernel-patches/BASE/ applied in the
# order of its series file, configured and built.  Prints the tree's path.
#
# KEY (kernels.sh's kernel_key) hashes every input: the package version,
# the patches, the config fragment, the table row and these scripts.  A new
# KEY extracts, patches and configures a new tree and drops the old ones
# (tests/cache.sh); the same KEY runs "make" on the existing tree, which is
# a no-op, or relinks vmlinux when the certificates changed (they are new
# with every ephemeral modsignd key).
#
# The certificates are named by fixed paths inside the tree,
#   certs/modsign_cert.pem     CONFIG_MODULE_SIG_KEY (certificate only)
#   certs/modsign_trusted.pem  CONFIG_SYSTEM_TRUSTED_KEYS (more certificates)
# so that new keys change no configuration option and rebuild nothing but
# certs/ and the vmlinux link.
#
# The tree is locked (cache_lock kernel-VER) for as long as this script
# runs, or, with MODSIGN_KERNEL_LOCKED=1, by the caller, which then holds
# the lock for as long as it uses the tree (run.sh: the whole matrix).
#
# Usage: build-kernel.sh VER CERT_PEM TRUSTED_PEM
# Environment: KBUILD_JOBS (default 2), MODSIGN_CACHE.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/cache.sh"
. "$here/kernels.sh"
jobs=${KBUILD_JOBS:-2}

# Only the tree's path goes to stdout; everything else to stderr.
exec 3>&1 1>&2
[ $# -eq 3 ] || { echo "usage: build-kernel.sh VER CERT_PEM TRUSTED_PEM" >&2; exit 2; }
kernel_select "$1"
cert=$2
trusted=$3

log() { echo "build-kernel: $*" >&2; }

prepare_tree()
{
	local p

	log "extracting $KTARBALL ($KPACKAGE $KPKGVERSION) into $top"
	rm -rf "$top"
	mkdir -p "$top"
	tar -C "$top" -xf "$KTARBALL"
	[ -d "$ksrc" ] || { log "no ${ksrc##*/}/ in $KTARBALL"; exit 1; }

	# Keys that ship with the pristine tree (selftest keys); the private
	# key scan of run.sh reports only keys that are not in this list.
	(cd "$ksrc" && grep -rlI -e '-----BEGIN [A-Z ]*PRIVATE KEY-----' . ||
		true) | sort > "$top/pristine-private-keys.txt"

	while read -r p; do
		[ -n "$p" ] || continue
		log "applying $p"
		patch -d "$ksrc" -p1 --quiet --forward < "$KSERIES/$p"
	done < "$KSERIES/series"

	log "configuring"
	make -C "$ksrc" -s tinyconfig > "$top/config.log" 2>&1
	{
		cat "$here/kconfig.fragment"
		[ -z "$KFRAGMENT" ] || echo "$KFRAGMENT"
	} > "$top/fragment.config"
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
	local key

	[ "${MODSIGN_KERNEL_LOCKED:-}" = 1 ] || cache_lock "kernel-$KVER"
	kernel_tarball || { log "cannot get $KPACKAGE from $KSUITE"; exit 1; }
	key=$(kernel_key)
	top=$(cache_dir "kernel-$KVER" "$key")
	ksrc=$top/linux-source-$KBASE
	if cache_ready "$top"; then
		log "tree up to date ($top)"
	else
		prepare_tree
	fi

	install_if_changed "$cert" "$ksrc/certs/modsign_cert.pem"
	install_if_changed "$trusted" "$ksrc/certs/modsign_trusted.pem"
	kbuild
	# Complete once it has been built: a build stopped half-way is
	# extracted again by the next run.
	cache_ready "$top" || cache_done "kernel-$KVER" "$key"
	echo "$ksrc" >&3
}

kbuild()
{
	log "make -j$jobs"
	make -C "$ksrc" -j"$jobs" > "$top/build.log" 2>&1 || {
		tail -n 40 "$top/build.log" >&2
		log "kernel build failed, see $top/build.log"
		exit 1
	}
}

main "$@"
