#!/bin/bash
# Real test material, cached under build/fixtures:
#   modules/   the ~4000 modules of Debian's linux-image package
#   sign-file  the kernel's scripts/sign-file, built from Debian's linux-source
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
FIX=$REPO/build/fixtures
mkdir -p "$FIX"
cd "$FIX"

if [ ! -f modules.stamp ]; then
	pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
	rm -rf modules deb && mkdir deb
	(cd deb && apt-get download -q "$pkg" >/dev/null 2>&1)
	dpkg-deb -x deb/*.deb deb/x
	mv deb/x/lib/modules/*/kernel modules
	rm -rf deb
	echo "$pkg" >modules.stamp
fi

if [ ! -x sign-file ]; then
	src=$(ls /usr/src/linux-source-*.tar.xz | sort -V | tail -n1)
	top=$(basename "$src" .tar.xz)
	rm -rf ref && mkdir ref
	tar -C ref -xJf "$src" "$top/scripts/sign-file.c" "$top/scripts/ssl-common.h"
	gcc -O2 -o sign-file "ref/$top/scripts/sign-file.c" -I"ref/$top/scripts" \
		-lcrypto -Wno-deprecated-declarations
	rm -rf ref
fi
