#!/bin/bash
# The whole test suite: unit tests, integration tests against real daemons
# and real modules, the Debian 13 lane, the kernels booted in QEMU and the
# packaged guests.  Prints one line per check, each suite's time, and ends
# with "N passed, N failed"; exits non-zero on any failure.
#   tests/run.sh [PATTERN]   run only suites whose name matches PATTERN
#
# Three lanes run side by side (the machines have two CPUs):
#   the foreground lane: the unit tests, then the integration suites,
#     many of them timing-bound (timeouts, floods, a farm), taken one at a
#     time from a queue, longest first (the last run's times, kept in the
#     cache, or a fixed list of the long ones on a fresh machine);
#   the kernels lane (the QEMU kernels, then the Debian 13 lane) and the
#     background lane (the packaged guests), at a lower priority (nice),
#     so that they take what the first leaves idle and never starve a
#     timed case: long and mostly waiting on an emulated machine, a chroot
#     or the archive.  When one of them is done it takes suites from the
#     same queue, at the foreground's priority: warm, the kernels are done
#     in minutes and the queue is shared; cold, the foreground takes it all.
# Each suite's output is kept apart and printed whole when it ends; the
# summary gives each suite's time and the CPU time it used.
# Environment: MODSIGN_SKIP_QEMU=1 leaves out the QEMU and guest suites;
# MODSIGN_SERIAL=1 runs everything in one lane, in order.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-$REPO/build}
export B
filter=${1:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$REPO/tests/fixtures.sh" || { echo "FAIL fixtures: cannot prepare real modules and sign-file"; echo "0 passed, 1 failed"; exit 1; }

# The suites: "NAME COMMAND...", per lane; the integration suites in a
# queue any lane may take from.
fg=() bg=() kernels=() queued=()
for t in "$B"/tests/test-*; do
	[[ $t != *.d ]] && [ -x "$t" ] && fg+=("$(basename "$t") $t")
done
for t in "$REPO"/tests/integration/*.sh "$REPO"/tests/integration/*.bats; do
	[ -e "$t" ] || continue
	case $(basename "$t") in
	vm.bats) [ -z "${MODSIGN_SKIP_QEMU:-}" ] && bg+=("vm.bats $REPO/tests/bats-lines $t") ;;
	*.bats) queued+=("$(basename "$t") $REPO/tests/bats-lines $t") ;;
	*) queued+=("$(basename "$t") $t") ;;
	esac
done
if [ -z "${MODSIGN_SKIP_QEMU:-}" ]; then
	for v in 6.1 6.12 7.3; do
		kernels+=("qemu-$v $REPO/tests/qemu/run.sh $v")
	done
	# The two ML-DSA variants of 7.3 (issue 31), one suite.
	kernels+=("qemu-7.3-mldsa $REPO/tests/qemu/mldsa.sh")
	# An unpatched 6.12 signing through modsign-pkcs11.so (issue 32).
	kernels+=("qemu-6.12-pkcs11 $REPO/tests/qemu/pkcs11.sh")
fi
# The Debian 13 lane after the kernels, not after the guests: warm, the
# kernels take ~12 minutes and the guests ~25, which with the lane after
# them (~13) made theirs the longest lane.
kernels+=("release-trixie $REPO/tests/release/lane.sh trixie")

# Where the last run's suite times are kept: the queue's order.
. "$REPO/tests/cache.sh"
TIMES=$MODSIGN_CACHE/suite-times
# The long suites, first on a machine with no times yet.
long_first="sanitizers.bats concurrency.bats farm.bats tlog.bats faults.bats attack-net.bats hsm.bats"

# queue_fill SUITE...: writes the selected ones to $out/queue, longest
# first.
queue_fill() {
	local s name t
	for s; do
		selected "$s" || continue
		name=${s%% *}
		t=$(awk -v n="$name" '$1 == n { t = $2 } END { print t + 0 }' "$TIMES" 2>/dev/null)
		[ "$t" -gt 0 ] 2>/dev/null ||
			case " $long_first " in *" $name "*) t=100000 ;; *) t=0 ;; esac
		printf '%s\t%s\n' "$t" "$s"
	done | sort -s -t $'\t' -k1,1nr | cut -f2- >"$out/queue"
}

# queue_take: prints the next queued suite and drops it from the queue;
# fails when the queue is empty.  Lanes take under a lock.
queue_take() {
	local s
	{
		flock 9
		s=$(head -n 1 "$out/queue")
		[ -n "$s" ] && sed -i 1d "$out/queue"
	} 9>"$out/queue.lock"
	[ -n "$s" ] && echo "$s"
}

# run_queue: runs queued suites until none is left, at the foreground's
# priority (a lane that was nice is done with its own work by then).
run_queue() {
	local s
	renice -n 0 -p "$BASHPID" >/dev/null 2>&1 || true
	while s=$(queue_take); do
		run_lane "$s"
	done
}

# cpu_seconds FILE: the children's user + system seconds in the output of
# bash's `times` (its second line: "XmY.YYYs XmY.YYYs").
cpu_seconds() {
	sed -n 2p "$1" 2>/dev/null | awk '{
		n = 0
		for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }
		printf "%d", n
	}'
}

# run_suite "NAME COMMAND...": run it, its output, time and CPU time kept
# in $out.
run_suite() {
	local name=${1%% *} start=$SECONDS rc
	# shellcheck disable=SC2086 # the command is words
	(${1#* } >"$out/$name.log" 2>&1 </dev/null; rc=$?; times >"$out/$name.cpu"; exit $rc)
	rc=$?
	{
		grep -E '^(PASS|FAIL|SKIP) ' "$out/$name.log"
		# A suite that dies without reporting a failure still fails.
		if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$out/$name.log"; then
			echo "FAIL $name: exited $rc; last lines:"
			tail -n 5 "$out/$name.log" | sed 's/^/   /'
		fi
	} >"$out/$name.result"
	echo "$name $((SECONDS - start)) $(cpu_seconds "$out/$name.cpu")" >>"$out/times"
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
	run_lane "${fg[@]}" "${queued[@]}" "${bg[@]}" "${kernels[@]}"
else
	queue_fill "${queued[@]}"
	(renice -n 10 -p "$BASHPID" >/dev/null; run_lane "${bg[@]}"; run_queue) >"$out/bg.txt" &
	bgpid=$!
	(renice -n 10 -p "$BASHPID" >/dev/null; run_lane "${kernels[@]}"; run_queue) >"$out/kernels.txt" &
	kpid=$!
	run_lane "${fg[@]}"
	run_queue
	wait "$bgpid" "$kpid"
	cat "$out/bg.txt" "$out/kernels.txt"
fi

# A suite with no result never finished: its lane died under it (killed,
# or a suite's kill gone astray), after taking it from the queue.  It
# fails; else it was only missing from the count, and the run passed.
for s in "${fg[@]}" "${queued[@]}" "${bg[@]}" "${kernels[@]}"; do
	if ! selected "$s" || [ -e "$out/${s%% *}.result" ]; then continue; fi
	echo "FAIL ${s%% *}: never finished (its lane ended before it did)" >"$out/${s%% *}.result"
	echo "== ${s%% *}"
	cat "$out/${s%% *}.result"
done

# The times of this run order the next run's queue (a whole run only).
if [ -z "$filter" ] && mkdir -p "$(dirname "$TIMES")" 2>/dev/null; then
	cp "$out/times" "$TIMES.$$" && mv "$TIMES.$$" "$TIMES"
fi

echo "== times: wall and CPU (s), slowest first; $((SECONDS - start)) s in all"
sort -k2,2nr "$out/times" | awk '{ printf "   %-32s %5d %6d\n", $1, $2, $3 }'
passed=$(cat "$out"/*.result 2>/dev/null | grep -c '^PASS ')
failed=$(cat "$out"/*.result 2>/dev/null | grep -c '^FAIL ')
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
