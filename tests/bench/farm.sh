#!/bin/bash
# make bench-farm (also the end of make bench): one batch of all of
# Debian's modules over a farm of one, two and three signing hosts, and the
# time to finish a batch of three hosts in which one is killed (kill -9)
# halfway.  The farm is tests/integration/farm.bats's: network namespaces
# on one bridge, mutual TLS, one RSA-4096 key in a PEM file on each host,
# the builder's name for the service with every host's address.  Prints a
# Markdown section on stdout; with BENCH_OUT=FILE, it also replaces that
# section ("## A farm of signing hosts") in FILE.
#
# The hosts share this machine's cores: more hosts add no CPU here, so
# what the runs show is what the pool costs and what a host lost mid-batch
# costs, not how a farm of real machines scales.
#
#   BENCH_MODULES=N   the first N modules only (default: all)
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
. "$REPO/tests/helpers.sh"
NMOD=${BENCH_MODULES:-0}
OUT=${BENCH_OUT:+$(realpath -m "$BENCH_OUT")} # the runs work in $W
W=$(mktemp -d "${TMPDIR:-/tmp}/modsign-bench-farm.XXXXXX")
mkdir "$W/bin"
cp "$B/modsign-client" "$B/modsignd" "$W/bin/"
CLIENT=$W/bin/modsign-client
MODSIGND=$W/bin/modsignd
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	farm_net_down
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

log() { echo "bench-farm: $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"$1\", ($2) }"; }

prepare() {
	(cd "$B/fixtures/modules" && find . -name '*.ko' | sort) >"$W/all.list"
	if [ "$NMOD" -gt 0 ]; then head -n "$NMOD" "$W/all.list" >"$W/list"; else cp "$W/all.list" "$W/list"; fi
	mkdir "$W/stripped"
	(cd "$B/fixtures/modules" && xargs -a "$W/list" cp --parents -t "$W/stripped")
	(cd "$W/stripped" && xargs -a "$W/list" "$CLIENT" strip >/dev/null)
	N=$(wc -l <"$W/list")
	cd "$W"
	pki farm-ca
	for n in 1 2 3; do
		issue_server "sign-$n" farm-ca DNS:sign.farm.test
	done
	issue builder farm-ca
	make_pem_key "$W/key.pem" rsa:4096 "modsign bench farm" || die key
	cp key.pem.crt farm.crt
}

# The farm: builder, and signing hosts 1..3 each with a daemon.
farm_up() {
	farm_net_up "$(printf '%04x' $((RANDOM % 65536)))" || die "namespaces"
	farm_host builder 198.18.0.10 || die "builder namespace"
	for n in 1 2 3; do
		farm_host "s$n" "198.18.0.$n" || die "host $n"
		start_host "$n"
	done
}

start_host() { # N
	MODSIGND=ip modsignd_start "$W/modsignd-$1.log" netns exec "mf${FARM_TAG}s$1" "$MODSIGND" \
		--listen "tls:198.18.0.$1:7787" --key "default=$W/key.pem" \
		--tls-cert "$W/sign-$1.crt" --tls-key "$W/sign-$1.key" --tls-client-ca "$W/farm-ca.crt" \
		--allow cn:builder --audit-log "$W/audit-$1.jsonl" || die "modsignd $1"
	PIDS+=("$MODSIGND_PID")
	printf -v "PID_$1" %s "$MODSIGND_PID"
}

fresh_run() { # a stripped copy of the modules of $W/list in $W/run
	rm -rf "$W/run"
	mkdir "$W/run"
	(cd "$W/stripped" && xargs -a "$W/list" cp --parents -t "$W/run")
}

batch() { # the builder signs every module of $W/run
	(cd "$W/run" && ip netns exec "mf${FARM_TAG}builder" "$CLIENT" \
		--server tls:sign.farm.test:7787 --tls-ca "$W/farm-ca.crt" \
		--tls-cert "$W/builder.crt" --tls-key "$W/builder.key" sign --stdin <"$W/list") 2>"$W/client.err"
}

verified() {
	(cd "$W/run" && xargs -a "$W/list" "$CLIENT" verify --cert "$W/farm.crt" >/dev/null 2>&1) ||
		die "$1: a module does not verify"
}

oks() { cat "$W"/audit-*.jsonl 2>/dev/null | grep -c '"result":"ok"' || true; }

run_hosts() { # K: a batch over hosts 1..K; prints its seconds
	local addrs=() t0 t1
	for n in $(seq 1 "$1"); do addrs+=("198.18.0.$n"); done
	farm_hosts_file builder "${addrs[@]}"
	fresh_run
	t0=$(now)
	batch || die "$1 hosts: $(tail -n 3 "$W/client.err")"
	t1=$(now)
	verified "$1 hosts"
	calc %.2f "$t1 - $t0"
}

# Three hosts, host 2 killed once the farm has issued half the batch.
run_killed() {
	local t0 t1 before cpid rc=0
	farm_hosts_file builder 198.18.0.1 198.18.0.2 198.18.0.3
	fresh_run
	before=$(oks)
	t0=$(now)
	batch &
	cpid=$!
	until [ $(($(oks) - before)) -ge $((N / 2)) ]; do
		kill -0 "$cpid" 2>/dev/null || break
		sleep 0.02
	done
	kill -9 "$PID_2"
	wait "$cpid" || rc=$?
	t1=$(now)
	[ "$rc" -eq 0 ] || die "killed run: exit $rc: $(tail -n 3 "$W/client.err")"
	verified "killed run"
	calc %.2f "$t1 - $t0"
}

section() {
	cat <<-EOF
	## A farm of signing hosts

	\`make bench-farm\` (tests/bench/farm.sh), run of $(date -u '+%Y-%m-%d %H:%M') UTC:
	$N Debian modules, one \`modsign-client sign\` batch from the builder
	namespace over \`tls:sign.farm.test:7787\`, RSA-4096 key in a PEM file on
	each host, $(nproc) cores shared by every host (so more hosts add no CPU
	here: the rows show what the pool and a lost host cost, not scaling).

	| hosts in the name | seconds | modules/s |
	|---|---|---|
	| 1 | $T1 | $(calc %.0f "$N / $T1") |
	| 2 | $T2 | $(calc %.0f "$N / $T2") |
	| 3 | $T3 | $(calc %.0f "$N / $T3") |
	| 3, one killed (kill -9) at half the batch | $TK | $(calc %.0f "$N / $TK") |

	Every run's modules verify.  The killed run's client moved the killed
	host's outstanding requests to the others and exited 0.
	EOF
}

prepare
log "$N modules"
farm_up
T1=$(run_hosts 1); log "1 host: $T1 s"
T2=$(run_hosts 2); log "2 hosts: $T2 s"
T3=$(run_hosts 3); log "3 hosts: $T3 s"
TK=$(run_killed); log "3 hosts, one killed: $TK s"
section | tee "$W/section.md"
if [ -n "$OUT" ]; then
	python3 - "$OUT" "$W/section.md" <<-'PY'
	import re, sys
	out, sec = sys.argv[1], open(sys.argv[2]).read()
	try:
	    doc = open(out).read()
	except FileNotFoundError:
	    doc = ""
	pat = re.compile(r"^## A farm of signing hosts\n.*?(?=^## |\Z)", re.S | re.M)
	doc = pat.sub(lambda m: sec + "\n", doc) if pat.search(doc) else doc.rstrip("\n") + "\n\n" + sec
	open(out, "w").write(doc)
	PY
fi
