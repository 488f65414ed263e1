# SPDX-License-Identifier: GPL-2.0
#
# kernels.sh: the kernels the QEMU test builds, one row each, and what
# build-kernel.sh and run.sh need to know of one.  Sourced (after
# tests/cache.sh); sourcing it starts nothing.
#
# A row is what differs between kernels; everything else (the common
# kconfig.fragment, the matrix, the make targets, the compression
# overrides of run.sh's compress_over) is the same for all of them.
#
#   VER        the argument of run.sh (and the name of the cached tree)
#   PACKAGE    Debian's source package linux-source-BASE; its
#              /usr/src/PACKAGE.tar.xz holds linux-source-BASE/, and the
#              series is kernel-patches/BASE/.  Used as installed when it
#              is, else the candidate of SUITE is downloaded (tests/cache.sh).
#              A variant of a kernel (VER BASE-NAME) is the same source
#              with another FRAGMENT: a tree of its own in the cache
#   SUITE      where that candidate comes from
#   EXTRA      hashes this kernel verifies beyond sha256/384/512: each one
#              gets a guest case (sha3-*: CONFIG_CRYPTO_SHA3 below)
#   FRAGMENT   options added to kconfig.fragment, comma-separated
#
# 6.12 moved module compression behind CONFIG_MODULE_COMPRESS and installs
# compressed modules only with CONFIG_MODULE_COMPRESS_ALL; with both set,
# the CONFIG_MODULE_COMPRESS_{XZ,GZIP,ZSTD} overrides of run.sh work as on
# 6.1, where the XZ choice alone compresses.  7.3 (trixie-backports) is
# configured as 6.12: the common fragment sticks as it is (7.x's ML-DSA
# key types matter only when the kernel makes its own key, and the SHA-1
# module hash it dropped is not one the fragment uses).
#
# The two ML-DSA variants of 7.3 (tests/qemu/mldsa.sh, issue 31) verify
# ML-DSA module signatures (CRYPTO_MLDSA) and differ in one option: the
# kernel without PKCS7_WAIVE_AUTHATTRS_REJECTION_FOR_MLDSA takes only the
# pure form (no signed attributes, the whole module signed), the one with
# it also takes the signed-attributes form that OpenSSL 3.5's sign-file
# makes.  Their certificates are ML-DSA ones made by mldsa.sh.
kernel_table()
{
	cat <<-'EOF'
	# VER  PACKAGE            SUITE             EXTRA                       FRAGMENT
	6.1    linux-source-6.1   bookworm          -                           -
	6.12   linux-source-6.12  trixie            sha3-256,sha3-384,sha3-512  CONFIG_MODULE_COMPRESS=y,CONFIG_MODULE_COMPRESS_ALL=y,CONFIG_CRYPTO_SHA3=y
	7.3    linux-source-7.3   trixie-backports  sha3-256,sha3-384,sha3-512  CONFIG_MODULE_COMPRESS=y,CONFIG_MODULE_COMPRESS_ALL=y,CONFIG_CRYPTO_SHA3=y
	7.3-mldsa        linux-source-7.3  trixie-backports  -  CONFIG_MODULE_COMPRESS=y,CONFIG_MODULE_COMPRESS_ALL=y,CONFIG_CRYPTO_MLDSA=y
	7.3-mldsa-waive  linux-source-7.3  trixie-backports  -  CONFIG_MODULE_COMPRESS=y,CONFIG_MODULE_COMPRESS_ALL=y,CONFIG_CRYPTO_MLDSA=y,CONFIG_PKCS7_WAIVE_AUTHATTRS_REJECTION_FOR_MLDSA=y
	EOF
}

# kernel_select VER: set KVER, KPACKAGE, KBASE (the source's version),
# KSUITE, KEXTRA_HASHES (space separated), KFRAGMENT (one option a line)
# and KSERIES from VER's row.
kernel_select()
{
	local row

	row=$(kernel_table | awk -v v="$1" '$1 == v')
	[ -n "$row" ] || {
		echo "no kernel '$1' (known: $(kernel_table | awk '!/^#/ { printf "%s ", $1 }'))" >&2
		return 1
	}
	set -- $row
	KVER=$1
	KPACKAGE=$2
	KBASE=${2#linux-source-}
	KSUITE=$3
	KEXTRA_HASHES=${4//,/ }
	KFRAGMENT=${5//,/$'\n'}
	[ "$KEXTRA_HASHES" != - ] || KEXTRA_HASHES=
	[ "$KFRAGMENT" != - ] || KFRAGMENT=
	KSERIES=$repo/kernel-patches/$KBASE
	[ -f "$KSERIES/series" ] || { echo "no $KSERIES/series" >&2; return 1; }
}

# kernel_tarball: set KTARBALL and KPKGVERSION: the installed package's
# tarball, or the SUITE candidate's, downloaded into the cache and
# extracted there (the download is repeated at most daily, as the private
# apt lists are refreshed).
kernel_tarball()
{
	local d=$MODSIGN_CACHE/src-$KPACKAGE deb

	KTARBALL=/usr/src/$KPACKAGE.tar.xz
	KPKGVERSION=$(dpkg-query -W -f '${Version}' "$KPACKAGE" 2> /dev/null)
	if [ -n "$KPKGVERSION" ] && [ -r "$KTARBALL" ]; then
		return 0
	fi
	mkdir -p "$d"
	deb=$(find "$d" -maxdepth 1 -name "${KPACKAGE}_*.deb" -mmin -1440 -print -quit)
	if [ -z "$deb" ]; then
		rm -rf "$d"/*.deb "$d/x"
		apt_suite_download "$d" "$KSUITE" "$KPACKAGE" || return 1
		deb=$(find "$d" -maxdepth 1 -name "${KPACKAGE}_*.deb" -print -quit)
	fi
	[ -n "$deb" ] || return 1
	KPKGVERSION=$(dpkg-deb -f "$deb" Version)
	KTARBALL=$d/x/usr/src/$KPACKAGE.tar.xz
	[ -r "$KTARBALL" ] || { rm -rf "$d/x" && dpkg-deb -x "$deb" "$d/x"; } || return 1
}

# kernel_key: the cache key of VER's tree: the package version, the
# series, the fragment, this row and the code that builds it (this file's
# functions, not its other rows: a kernel added to the table rebuilds no
# other kernel).
kernel_key()
{
	local p

	{
		echo "$KPACKAGE $KPKGVERSION"
		kernel_table | awk -v v="$KVER" '$1 == v'
		cat "$KSERIES/series"
		while read -r p; do
			[ -z "$p" ] || cat "$KSERIES/$p"
		done < "$KSERIES/series"
		cat "$repo/tests/qemu/kconfig.fragment" "$repo/tests/qemu/build-kernel.sh"
		declare -f kernel_select kernel_tarball kernel_key
	} | cache_key
}
