# For bash scripts that report "PASS name" / "FAIL name: why" lines
# (tests/hsm-bench.sh); the integration suites are bats files
# (tests/common.bash).  A script runs in one temporary directory, $T.

set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${B:-$REPO/build}
MODSIGND=${MODSIGND:-$B/modsignd}
CLIENT=${CLIENT:-$B/modsign-client}
FIX=$REPO/build/fixtures

T=$(mktemp -d /tmp/modsign-test.XXXXXX)
chmod 755 "$T"
DAEMON_PIDS=()

cleanup() {
	for p in "${DAEMON_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP_T:-}" ] && echo "kept $T" >&2 || rm -rf "$T"
}
trap cleanup EXIT

. "$REPO/tests/helpers.sh"

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1${2:+: $2}"; }

# check NAME COMMAND...: passes when the command succeeds.
check() {
	local name=$1
	shift
	if "$@" >"$T/last.out" 2>&1; then pass "$name"; else fail "$name" "$(tail -n 3 "$T/last.out" | tr '\n' ' ')"; fi
}

# refute NAME COMMAND...: passes when the command fails (the tampered twin).
refute() {
	local name=$1
	shift
	if "$@" >"$T/last.out" 2>&1; then fail "$name" "unexpectedly succeeded"; else pass "$name"; fi
}

