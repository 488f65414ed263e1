# Loaded (load pkcs11) by the suites of modsign-pkcs11.so (docs/PKCS11.md):
# pkcs11-module.bats (the module with pkcs11-tool, p11-kit, libp11's
# engine, sign-file) and pkcs11-consumers.bats (sbsign, DKMS, openssl
# through the provider).  After load ../common.

P11=${P11:-$B/modsign-pkcs11.so}

# hexid NAME: the CKA_ID of key NAME as pkcs11-tool's --id takes it.
hexid() { printf %s "$1" | od -An -tx1 | tr -d ' \n'; }

# OpenSSL's pkcs11-provider: the kernel's sign-file loads it for a
# pkcs11: key.  The system's when there is one (Debian 13's package, in
# the lane's root: tests/install-deps.sh's provider group); Debian 12 has
# it only in bookworm-backports: the package is fetched once into the
# cache with a private apt configuration (tests/cache.sh), never
# installed.  OPENSSL_MODULES points at the one used.
# provider_dir: the directory of its pkcs11.so.
provider_dir() {
	local d
	. "$REPO/tests/cache.sh"
	d=$(openssl version -m | sed -n 's/^MODULESDIR: "\(.*\)"$/\1/p')
	if [ -e "$d/pkcs11.so" ]; then
		echo "$d"
		return
	fi
	d=$(cache_dir pkcs11-provider "$(echo bookworm-backports pkcs11-provider | cache_key)")
	# Two suites use it: the first makes it, the other waits.
	cache_lock pkcs11-provider
	if ! cache_ready "$d"; then
		rm -rf "$d" && mkdir -p "$d"
		apt_suite_download "$d/deb" bookworm-backports pkcs11-provider >&2 &&
			dpkg-deb -x "$d"/deb/*.deb "$d/x" && cache_done pkcs11-provider "${d##*-}" ||
			{ exec 9>&-; return 1; }
	fi
	exec 9>&-
	echo "$d/x/usr/lib/x86_64-linux-gnu/ossl-modules"
}
