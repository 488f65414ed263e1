#!/bin/bash
# Real test material of the running Debian release (12 or 13), made once per
# machine in the cache outside the clone (tests/cache.sh) and reached through
# the symlink build/fixtures:
#   modules/       the ~4000 modules of the release's linux-image package,
#                  plain .ko (13 ships .ko.xz: decompressed here, the suites
#                  sign plain modules)
#   modules.stamp  that package's name
#   sign-file      the kernel's scripts/sign-file, built from the release's
#                  linux-source
# Keyed by the linux-image package and version, the linux-source package and
# version, and this script.  Offline, the newest complete fixture of the
# release is used as is.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/cache.sh"
link=$REPO/build/fixtures

release=$(. /etc/os-release && echo "$VERSION_CODENAME")
src=$(ls /usr/src/linux-source-*.tar.xz | sort -V | tail -n1)
srcpkg=$(basename "$src" .tar.xz)   # the package, linux-source-6.12, ships it
cache_lock "fixtures-$release"

# image_dep [apt_suite RELEASE]: the versioned linux-image package the
# metapackage depends on, e.g. "linux-image-6.12.57+deb13-amd64 (= 6.12.57-1)",
# as this machine's apt sees it, or a private configuration for the release
# (a root made by mmdebstrap has no apt lists).
image_dep() {
	"$@" apt-cache show --no-all-versions linux-image-amd64 2>/dev/null |
		sed -n 's/^Depends: //p' | tr ',' '\n' | grep -o 'linux-image-[0-9].*' | head -n1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
apt=()
dep=$(image_dep) || true
if [ -z "$dep" ]; then
	apt=(apt_suite "$release")
	dep=$(image_dep "${apt[@]}") || true
fi
if [ -n "$dep" ]; then
	key=$({ echo "$dep"; dpkg-query -W -f='${Package} ${Version}\n' "$srcpkg"
		cat "$0"; } | cache_key)
	dir=$(cache_dir "fixtures-$release" "$key")
else
	dir=
	for d in $(ls -td "$MODSIGN_CACHE/fixtures-$release"-* 2>/dev/null); do
		cache_ready "$d" && { dir=$d; break; }
	done
	[ -n "$dir" ] || { echo "fixtures: cannot find Debian's linux-image-amd64 for $release" >&2; exit 1; }
	echo "fixtures: offline, using $dir" >&2
fi

if ! cache_ready "$dir"; then
	echo "fixtures: $release: $dep and $srcpkg's sign-file ..." >&2
	rm -rf "$dir" && mkdir -p "$dir/deb"
	(cd "$dir/deb" && "${apt[@]}" apt-get -o APT::Sandbox::User=root download -q "${dep%% *}" >/dev/null)
	dpkg-deb -x "$dir"/deb/*.deb "$dir/deb/x"
	# /lib/modules on 12, /usr/lib/modules on 13.
	mv "$(find "$dir/deb/x" -maxdepth 5 -type d -path '*/modules/*/kernel' | head -n1)" "$dir/modules"
	find "$dir/modules" -name '*.ko.xz' -print0 | xargs -0 -r -n 256 -P 2 xz -d
	rm -rf "$dir/deb"
	echo "${dep%% *}" >"$dir/modules.stamp"

	top=$(basename "$src" .tar.xz)
	tar -C "$tmp" -xJf "$src" "$top/scripts/sign-file.c" "$top/scripts/ssl-common.h"
	gcc -O2 -o "$dir/sign-file" "$tmp/$top/scripts/sign-file.c" -I"$tmp/$top/scripts" \
		-lcrypto -Wno-deprecated-declarations
	cache_done "fixtures-$release" "$key"
fi

# build/fixtures was a directory before the cache: replace it by the link.
mkdir -p "$REPO/build"
[ -L "$link" ] || rm -rf "$link"
ln -sfn "$dir" "$link"
