#!/bin/bash
# Run every fuzz target for FUZZ_SECONDS (default 10) on its seed corpus
# and print "PASS fuzz-NAME (...)" or "FAIL fuzz-NAME: why"; exits 1 if
# any failed.  run-brief.sh NAME... runs only those targets, and
# "harness" names the harness's own twins (tests/integration/fuzz.bats
# runs each as a case).  New inputs go
# to a scratch directory, not into the committed corpus; a crashing input
# is kept in build/fuzz/crashes/.  `make fuzz` runs this with 60 s each.
#
# FUZZ_SEED (default 1) fixes libFuzzer's random seed, so that a brief run
# in `make check` mutates the same inputs in much the same order each time
# (not exactly: json-c seeds its hash tables and OpenSSL its RNG on their
# own, which moves coverage a little).  A gate that fails at random on what
# a lucky mutation found is one nobody can run again to see why; exploring
# new ground is `make fuzz`'s job, which passes FUZZ_SEED=0 (a new seed
# each run, printed with any failure).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
FB=$REPO/build/fuzz
SECS=${FUZZ_SECONDS:-10}
SEED=${FUZZ_SEED:-1}
cd "$REPO"

if ! make -s fuzz-build >"$FB.build.log" 2>&1; then
	echo "FAIL fuzz-build: $(grep -m3 -E 'error|not found' "$FB.build.log" | tr '\n' ' ')"
	exit 1
fi
T=$(mktemp -d /tmp/modsign-fuzz.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$FB/crashes"

status=0
wanted() { # NAME: asked for, or nothing was asked for
	local w
	[ ${#WANTED[@]} -eq 0 ] && return 0
	for w in "${WANTED[@]}"; do [ "$w" = "$1" ] && return 0; done
	return 1
}
WANTED=("$@")

# run NAME: fuzz one target; libFuzzer exits non-zero on a crash, a leak,
# a sanitizer report, a broken contract (abort), a timeout or OOM.
run() {
	local name=$1 bin=$FB/fuzz-$1 seeds=$REPO/tests/fuzz/corpus/$1 execs cov
	mkdir -p "$T/$name"
	"$bin" -seed="$SEED" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$T/$name-" "$T/$name" "$seeds" >"$T/$name.log" 2>&1
	local rc=$?
	execs=$(awk '/stat::number_of_executed_units/{print $2}' "$T/$name.log")
	cov=$(grep -o 'cov: [0-9]*' "$T/$name.log" | tail -n1 | cut -d' ' -f2)
	if [ $rc -eq 0 ] && [ "${execs:-0}" -gt 0 ]; then
		echo "PASS fuzz-$name ($execs execs in ${SECS}s, $(ls "$T/$name" | wc -l) new inputs, cov ${cov:-?})"
	else
		cp "$T/$name"-* "$FB/crashes/" 2>/dev/null
		echo "FAIL fuzz-$name: exit $rc: $(grep -m1 -E 'ERROR|contract broken|SUMMARY' "$T/$name.log")" \
			"(input kept in build/fuzz/crashes/; $(grep -m1 -o 'Seed: [0-9]*' "$T/$name.log"))"
		tail -n 30 "$T/$name.log" | sed 's/^/   /'
		status=1
	fi
}

for bin in "$FB"/fuzz-*; do
	[ -x "$bin" ] && [ -f "$bin" ] && wanted "${bin##*/fuzz-}" && run "${bin##*/fuzz-}"
done
wanted harness || exit "$status"

# The tampered twins of the harness itself: a crash is noticed, a seed
# signature verifies against the fixed certificate, its flipped copy not.
printf 'CANARY!' >"$T/canary"
if MODSIGN_FUZZ_CANARY=1 "$FB/fuzz-proto-frame" "$T/canary" >"$T/canary.log" 2>&1; then
	echo "FAIL fuzz-harness-notices-crash: a crashing input passed"
	status=1
else
	echo "PASS fuzz-harness-notices-crash"
fi
seed=$REPO/tests/fuzz/corpus/pkcs7-verify/rsa-sha256
if MODSIGN_FUZZ_EXPECT=0 "$FB/fuzz-pkcs7-verify" "$seed" >"$T/seed.log" 2>&1; then
	echo "PASS fuzz-pkcs7-seed-verifies"
else
	echo "FAIL fuzz-pkcs7-seed-verifies: $(grep -m1 contract "$T/seed.log")"
	status=1
fi
python3 -c 'import sys; d=bytearray(open(sys.argv[1],"rb").read()); d[-10]^=1; open(sys.argv[2],"wb").write(d)' \
	"$seed" "$T/tampered"
if MODSIGN_FUZZ_EXPECT=0 "$FB/fuzz-pkcs7-verify" "$T/tampered" >"$T/tampered.log" 2>&1; then
	echo "FAIL fuzz-pkcs7-tampered-seed-rejected: a flipped signature verified"
	status=1
else
	echo "PASS fuzz-pkcs7-tampered-seed-rejected"
fi
exit "$status"
