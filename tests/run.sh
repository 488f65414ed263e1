#!/bin/bash
# The whole test suite: unit tests, integration tests against real daemons
# and real modules, the Debian 13 lane, the kernels booted in QEMU and the
# packaged guests.  Prints one line per check, each suite's time, and ends
# with "N passed, N failed"; exits non-zero on any failure.
#   tests/run.sh [PATTERN]   run only suites whose name matches PATTERN
#
# Two lanes run side by side (the machines have two CPUs):
#   the foreground lane, in order: the unit tests and the integration
#     suites, many of them timing-bound (timeouts, floods, a farm);
#   the background lane, at a lower priority (nice), so that it takes
#     what the first leaves idle and never starves a timed case: the
#     QEMU kernels, the Debian 13 lane and the packaged guests, long
#     and mostly waiting on an emulated machine, a chroot or the archive.
# Each suite's output is kept apart and printed whole when it ends.
# Environment: MODSIGN_SKIP_QEMU=1 leaves out the QEMU and guest suites;
# MODSIGN_SERIAL=1 runs the background lane after the foreground one.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-$REPO/build}
export B
filter=${1:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$REPO/tests/fixtures.sh" || { echo "FAIL fixtures: cannot prepare real modules and sign-file"; echo "0 passed, 1 failed"; exit 1; }

# The suites: "NAME COMMAND...", one per line, per lane.
fg=() bg=() kernels=()
for t in "$B"/tests/test-*; do
	[[ $t != *.d ]] && [ -x "$t" ] && fg+=("$(basename "$t") $t")
done
for t in "$REPO"/tests/integration/*.sh "$REPO"/tests/integration/*.bats; do
	[ -e "$t" ] || continue
	case $(basename "$t") in
	vm.bats) [ -z "${MODSIGN_SKIP_QEMU:-}" ] && bg+=("vm.bats $REPO/tests/bats-lines $t") ;;
	*.bats) fg+=("$(basename "$t") $REPO/tests/bats-lines $t") ;;
	*) fg+=("$(basename "$t") $t") ;;
	esac
done
bg+=("release-trixie $REPO/tests/release/lane.sh trixie")
if [ -z "${MODSIGN_SKIP_QEMU:-}" ]; then
	for v in 6.1 6.12 7.3; do
		kernels+=("qemu-$v $REPO/tests/qemu/run.sh $v")
	done
	# The two ML-DSA variants of 7.3 (issue 31), one suite.
	kernels+=("qemu-7.3-mldsa $REPO/tests/qemu/mldsa.sh")
	# An unpatched 6.12 signing through modsign-pkcs11.so (issue 32).
	kernels+=("qemu-6.12-pkcs11 $REPO/tests/qemu/pkcs11.sh")
fi

# run_suite "NAME COMMAND...": run it, its output and time kept in $out.
run_suite() {
	local name=${1%% *} start=$SECONDS rc
	# shellcheck disable=SC2086 # the command is words
	${1#* } >"$out/$name.log" 2>&1 </dev/null
	rc=$?
	{
		grep -E '^(PASS|FAIL|SKIP) ' "$out/$name.log"
		# A suite that dies without reporting a failure still fails.
		if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$out/$name.log"; then
			echo "FAIL $name: exited $rc; last lines:"
			tail -n 5 "$out/$name.log" | sed 's/^/   /'
		fi
	} >"$out/$name.result"
	echo "$name $((SECONDS - start))" >>"$out/times"
}

selected() { [ -z "$filter" ] || [[ ${1%% *} == *$filter* ]]; }

# run_lane SUITE...: each selected suite in order, its result printed
# when it ends.
run_lane() {
	local s
	for s; do
		selected "$s" || continue
		run_suite "$s"
		echo "== ${s%% *}"
		cat "$out/${s%% *}.result"
		echo "   ($(awk -v n="${s%% *}" '$1 == n { print $2 }' "$out/times") s)"
	done
}

start=$SECONDS
if [ -n "${MODSIGN_SERIAL:-}" ]; then
	run_lane "${fg[@]}" "${bg[@]}" "${kernels[@]}"
else
	# The kernels apart from the guests and the lane: in a fresh-cache
	# run each chain alone took longer than the foreground (74 min).
	(renice -n 10 -p "$BASHPID" >/dev/null; run_lane "${bg[@]}") >"$out/bg.txt" &
	bgpid=$!
	(renice -n 10 -p "$BASHPID" >/dev/null; run_lane "${kernels[@]}") >"$out/kernels.txt" &
	kpid=$!
	run_lane "${fg[@]}"
	wait "$bgpid" "$kpid"
	cat "$out/bg.txt" "$out/kernels.txt"
fi

echo "== times (s), slowest first; $((SECONDS - start)) s in all"
sort -k2,2nr "$out/times" | awk '{ printf "   %-32s %5d\n", $1, $2 }'
passed=$(cat "$out"/*.result 2>/dev/null | grep -c '^PASS ')
failed=$(cat "$out"/*.result 2>/dev/null | grep -c '^FAIL ')
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
