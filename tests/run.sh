#!/bin/bash
# The whole test suite: unit tests, integration tests against real daemons
# and real modules, and the kernel booted in QEMU.  Prints one line per
# check and ends with "N passed, N failed"; exits non-zero on any failure.
#   tests/run.sh [PATTERN]   run only suites whose name matches PATTERN
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-$REPO/build}
export B
filter=${1:-}
log=$(mktemp)
trap 'rm -f "$log" "$log.suite"' EXIT

"$REPO/tests/fixtures.sh" || { echo "FAIL fixtures: cannot prepare real modules and sign-file"; echo "0 passed, 1 failed"; exit 1; }

suites=()
for t in "$B"/tests/test-*; do [[ $t != *.d ]] && [ -x "$t" ] && suites+=("$t"); done
for t in "$REPO"/tests/integration/*.sh "$REPO"/tests/integration/*.bats; do
	[ -e "$t" ] && suites+=("$t")
done
[ -z "${MODSIGN_SKIP_QEMU:-}" ] && [ -x "$REPO/tests/qemu/run.sh" ] && suites+=("$REPO/tests/qemu/run.sh")

for s in "${suites[@]}"; do
	name=$(basename "$s")
	[ -n "$filter" ] && [[ $name != *$filter* ]] && continue
	echo "== $name"
	start=$SECONDS
	case $s in
	*.bats) "$REPO/tests/bats-lines" "$s" >"$log.suite" 2>&1 ;;
	*) "$s" >"$log.suite" 2>&1 ;;
	esac
	rc=$?
	grep -E '^(PASS|FAIL|SKIP) ' "$log.suite" | tee -a "$log"
	# A suite that dies without reporting a failure still fails.
	if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$log.suite"; then
		echo "FAIL $name: exited $rc; last lines:" | tee -a "$log"
		tail -n 5 "$log.suite" | sed 's/^/   /'
	fi
	echo "   ($((SECONDS - start)) s)"
done

passed=$(grep -c '^PASS ' "$log")
failed=$(grep -c '^FAIL ' "$log")
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
