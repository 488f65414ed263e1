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

# run_bats FILE: a bats case file, its TAP turned into PASS/FAIL lines in
# $log.suite (a skipped case is neither); a run that reports fewer cases
# than its plan (a case file that died, a case that hung bats up) fails.
run_bats() {
	local tap=$log.suite.tap planned ran rc

	bats --tap "$1" >"$tap" 2>&1
	rc=$?
	# A failed case's first diagnostics (bats-assert's "-- ... --" block)
	# go on its FAIL line.
	awk '
	function flush() { if (f != "") print "FAIL " f (d != "" ? ":" d : ""); f = ""; d = "" }
	/^ok [0-9]+ .* # skip/ { flush(); sub(/^ok [0-9]+ /, ""); print "SKIP " $0; next }
	/^ok [0-9]+ / { flush(); sub(/^ok [0-9]+ /, ""); print "PASS " $0; next }
	/^not ok [0-9]+ / { flush(); sub(/^not ok [0-9]+ /, ""); f = $0; n = 0; next }
	/^# / && f != "" && n < 6 && !/^# \(in test file/ { sub(/^# +/, " "); d = d $0; n++; next }
	END { flush() }' "$tap" >"$log.suite"
	planned=$(sed -nE 's/^1\.\.([0-9]+)$/\1/p' "$tap" | head -n1)
	ran=$(grep -cE '^(not )?ok [0-9]+ ' "$tap")
	if [ -z "$planned" ] || [ "$ran" -ne "$planned" ]; then
		echo "FAIL $(basename "$1"): ran $ran of ${planned:-no} planned cases" >>"$log.suite"
		tail -n 5 "$tap" | sed 's/^/   /' >>"$log.suite"
		return 1
	fi
	return "$rc"
}

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
	*.bats) run_bats "$s" ;;
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
