#!/bin/bash
# The test lane of another Debian release (tests/run.sh's release-RELEASE):
# in a throw-away root of that release (tests/release/chroot.sh), build
# with its compiler and -Werror, run every unit test, and the integration
# suites whose outcome depends on what the release ships.  Prints the
# suites' lines as "PASS RELEASE/SUITE: name" (the rest as the suite
# printed it) and each suite's time; exits non-zero on any failure.
#   tests/release/lane.sh RELEASE [SUITE...]
# SUITEs (names from the list below, "unit" for the unit tests) run only
# those, after the build and the fixtures: for working on one of them.
#
# The suites, and the release-dependent thing each one exercises:
#   unit tests          the compiler, OpenSSL's and json-c's API and ABI
#   basic               OpenSSL's keys, CMS and x509 text; kmod's modinfo
#   identity            byte for byte against that release's kernel's
#                       sign-file, on that release's linux-image modules
#   sign-file-detached  the same sign-file's -d and -p
#   hsm                 softhsm2, opensc, p11-kit's proxy, gnutls' certtool
#   tls                 OpenSSL's TLS 1.3 and s_client; systemd's
#                       systemd-socket-activate
#   systemd             systemd-analyze's exposure scores of the units
#   errors              OpenSSL's and libc's error paths and messages
#   make-demo           the README's first command, on that release
#   mldsa               OpenSSL 3.5's ML-DSA keys, mu signing and CMS
#                       (issue 31; on Debian 12 only its refusal case runs)
#   compressed          liblzma, libzstd, zlib and kmod; the release's
#                       real installed /usr/lib/modules/VERSION (.ko.xz)
#                       verified with --recursive against Debian's key
#   dkms                dkms 3.2 on the release's headers: sign_file,
#                       .ko.xz installs, post_transaction (issue 33)
#   pkcs11-module       modsign-pkcs11.so under that release's p11-kit,
#                       libp11 engine and pkcs11-provider (Debian 13 has
#                       it; sign-file's pkcs11: keys through it)
#   pkcs11-consumers    the same module under that release's sbsigntool,
#                       pesign (Debian 13: 116 on NSS 3.110) and OVMF
#                       (its snakeoil Secure Boot), and pkcs11-provider
#   pkcs11-dkms         dkms 3.2 with its default sign_file, 6.12's
#                       sign-file, signing through that provider and the
#                       module: what it does when the token has no key
#   per-module          the client's libraries loaded on first use, against
#                       what that release's libcrypto links itself
#                       (Debian 13's: zlib and libzstd; issue 34)
# The other suites (attack-*, concurrency, faults, load, tlog, ...) test the
# daemon's own logic on the same libraries; they run on this machine's
# release in tests/run.sh, and would cost make check minutes here for
# little that differs.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
release=${1:?usage: tests/release/lane.sh RELEASE [SUITE...]}
shift
all=(unit basic identity sign-file-detached hsm tls systemd errors make-demo mldsa
	compressed dkms pkcs11-module pkcs11-consumers pkcs11-dkms per-module)

if [ "${1:-}" != --inside ]; then
	for s; do
		[[ " ${all[*]} " == *" $s "* ]] ||
			{ echo "lane: no suite '$s' (${all[*]})" >&2; exit 2; }
	done
	start=$SECONDS
	"$REPO/tests/release/chroot.sh" "$release" tests/release/lane.sh "$release" --inside "$@"
	rc=$?
	echo "   ($release lane: $((SECONDS - start)) s)"
	exit "$rc"
fi
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=("${all[@]}")

# Inside the root, in /src.  identity on 50 modules, not 300: what differs
# between releases is sign-file and OpenSSL, the same on every module.
export IDENTITY_MODULES=50
failed=0
log=$(mktemp)

# report NAME RC: NAME's lines from $log, prefixed; a suite that exits
# non-zero without a FAIL line still fails (as in tests/run.sh).
report() {
	local name=$1 rc=$2
	sed -nE "s#^(PASS|FAIL|SKIP) #\\1 $release/$name: #p" "$log"
	grep -q '^FAIL ' "$log" && failed=1
	if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
		echo "FAIL $release/$name: exited $rc; last lines:"
		tail -n 5 "$log" | sed 's/^/   /'
		failed=1
	fi
}

start=$SECONDS
if ! make -j2 all unit >"$log" 2>&1; then
	echo "FAIL $release/build: make all unit; last lines:"
	tail -n 20 "$log" | sed 's/^/   /'
	exit 1
fi
echo "PASS $release/build: make all unit"
echo "   (build: $((SECONDS - start)) s)"

start=$SECONDS
if ! tests/fixtures.sh >"$log" 2>&1; then
	echo "FAIL $release/fixtures: cannot prepare real modules and sign-file"
	tail -n 5 "$log" | sed 's/^/   /'
	exit 1
fi
echo "   (fixtures: $((SECONDS - start)) s)"

# unit_tests: every unit test binary, each reported as a suite.
unit_tests() {
	local t
	for t in build/tests/test-*; do
		[[ $t != *.d ]] && [ -x "$t" ] || continue
		"$t" >"$log" 2>&1
		report "$(basename "$t")" $?
	done
}

for s in "${suites[@]}"; do
	start=$SECONDS
	if [ "$s" = unit ]; then
		unit_tests
	else
		tests/bats-lines "tests/integration/$s.bats" >"$log" 2>&1
		report "$s" $?
	fi
	echo "   ($s: $((SECONDS - start)) s)"
done
rm -f "$log"
exit "$failed"
