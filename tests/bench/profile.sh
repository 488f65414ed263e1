#!/bin/bash
# Where a batch's time goes (issue 34): modsignd and one `modsign-client
# sign` batch over the UNIX socket on the same machine, profiled together
# with perf, and variants of them compared with each other and with
# `openssl speed -multi $(nproc)` in the same run.  Not part of make
# check: it measures, it asserts nothing but that every module verifies.
#
#   tests/bench/profile.sh [VARIANT...]
#
# A VARIANT is NAME:BINDIR:WORKERS: the modsignd and modsign-client in
# BINDIR, the daemon run with --workers WORKERS (empty: its default, one
# per CPU).  Default: "cur:build:" alone (profile only, no A/B).  With
# two or more, every round runs each variant once per key, in an order
# that turns with the round (the machine's load drifts), between two
# `openssl speed` runs of the key's algorithm; the report gives medians.
#
# Environment:
#   PROFILE_MODULES=N   modules per batch (default 4000: the first N of
#                       the Debian package's, stripped, on tmpfs)
#   PROFILE_ROUNDS=N    A/B rounds (default 3)
#   PROFILE_KEYS="rsa4096 p384 rsa2048"   keys, in this order
#   PROFILE_PERF=0      no perf profile (default 1: of the first variant)
#   PROFILE_FREQ=N      perf's sampling rate (default 499 Hz)
#   BENCH_KEEP=1        keep the working directory (perf.*.data)
#
# Output (stdout): markdown rows for docs/PERFORMANCE.md, "Where the
# batch's time goes".  perf's shares are of the samples of the daemon's
# and the client's threads only (--percentage relative): on a machine
# other people's work shares, those shares hold where absolute rates do
# not.  The machine's load average is printed with every A/B row.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
NMOD=${PROFILE_MODULES:-4000}
ROUNDS=${PROFILE_ROUNDS:-3}
KEYS=${PROFILE_KEYS:-rsa4096 p384 rsa2048}
FREQ=${PROFILE_FREQ:-499}
NPROC=$(nproc)
. "$REPO/tests/helpers.sh" # modsignd_start
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=("cur:$B:")

. "$REPO/tests/bench/workdir.sh"
bench_workdir profile

log() { echo "profile: $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"$1\", ($2) }"; }
load() { cut -d' ' -f1 /proc/loadavg; }
median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ---- material ---------------------------------------------------------------

"$REPO/tests/fixtures.sh" >&2
(cd "$B/fixtures/modules" && find . -name '*.ko' | sort | awk -v n="$NMOD" 'NR <= n') >"$W/list"
N=$(wc -l <"$W/list")
mkdir "$W/stripped"
(cd "$B/fixtures/modules" && xargs -a "$W/list" cp --parents -t "$W/stripped")
(cd "$W/stripped" && xargs -a "$W/list" "$B/modsign-client" strip >/dev/null)
log "$N modules, $(du -sm "$W/stripped" | cut -f1) MB stripped, in $W"

declare -A KEYARGS=([rsa2048]="-newkey rsa:2048" [rsa4096]="-newkey rsa:4096"
	[p384]="-newkey ec -pkeyopt ec_paramgen_curve:secp384r1")
declare -A SPEEDALG=([rsa2048]=rsa2048 [rsa4096]=rsa4096 [p384]=ecdsap384)
for k in $KEYS; do
	[ -n "${KEYARGS[$k]:-}" ] || die "unknown key $k"
	# shellcheck disable=SC2086 # the arguments are words
	openssl req -new -nodes -utf8 -x509 -batch -days 30 -sha256 \
		-subj "/O=modsign profile/CN=profile $k" \
		-addext "basicConstraints=critical,CA:FALSE" -addext "keyUsage=digitalSignature" \
		-addext "extendedKeyUsage=codeSigning" -addext "subjectKeyIdentifier=hash" \
		-keyout "$W/$k.pem" -out "$W/$k.crt" ${KEYARGS[$k]} 2>/dev/null || die "key $k"
	cat "$W/$k.crt" >>"$W/$k.pem"
	chmod 600 "$W/$k.pem"
done

# ---- daemons: one per variant, copies of its programs ------------------------

declare -A VBIN VDPID
i=0
for v in "${VARIANTS[@]}"; do
	IFS=: read -r name dir workers <<<"$v"
	mkdir "$W/v$i"
	cp "$dir/modsignd" "$dir/modsign-client" "$W/v$i/" || die "variant $v: no programs in $dir"
	args=(--listen "unix:$W/v$i/sock" --allow uid:"$(id -u)")
	for k in $KEYS; do args+=(--key "$k=$W/$k.pem"); done
	[ -z "$workers" ] || args+=(--workers "$workers")
	MODSIGND=$W/v$i/modsignd modsignd_start "$W/v$i/modsignd.log" "${args[@]}" ||
		die "variant $name: modsignd did not start"
	PIDS+=("$MODSIGND_PID")
	VBIN[$name]=$W/v$i
	VDPID[$name]=$MODSIGND_PID
	NAMES+=("$name")
	i=$((i + 1))
done

# ---- one batch ----------------------------------------------------------------

# CPU ns of the daemon's threads (schedstat: ns, not the jiffies of
# stat): the event loop (the main thread) and all of them.
loop_ns() { awk '{ print $1 }' "/proc/$1/task/$1/schedstat"; }
all_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ n += $1 } END { printf "%.0f\n", n }'; }

# batch NAME KEY [PERF-PREFIX]: sign the modules in a fresh copy, verify
# them; sets RATE, and CPU ms per module: C_MS (client), L_MS (loop),
# S_MS (signing threads).
batch() {
	local name=$1 key=$2 perf=${3:-} bin=${VBIN[$1]} dpid=${VDPID[$1]} s e l0 l1 a0 a1 files pp=
	local pre=()
	# shellcheck disable=SC2054 # dwarf,8192 is one argument
	[ -z "$perf" ] || pre=(perf record -q -F "$FREQ" --call-graph dwarf,8192 -o "$perf.client.data")
	rm -rf "$W/run"
	cp -a "$W/stripped" "$W/run"
	mapfile -t files <"$W/list"
	l0=$(loop_ns "$dpid")
	a0=$(all_ns "$dpid")
	if [ -n "$perf" ]; then
		perf record -q -F "$FREQ" --call-graph dwarf,8192 -p "$dpid" -o "$perf.daemon.data" 2>/dev/null &
		pp=$!
		sleep 0.5
	fi
	s=$(now)
	(cd "$W/run" && /usr/bin/time -f '%U %S' -o "$W/client.time" \
		"${pre[@]}" \
		"$bin/modsign-client" --server "unix:$bin/sock" sign --key "$key" --hash sha256 \
		"${files[@]}") >"$W/cmd.log" 2>&1 || { tail -n 5 "$W/cmd.log" >&2; die "$name $key batch"; }
	e=$(now)
	if [ -n "$pp" ]; then
		kill -INT "$pp"
		wait "$pp" || true
	fi
	l1=$(loop_ns "$dpid")
	a1=$(all_ns "$dpid")
	(cd "$W/run" && "$bin/modsign-client" verify --cert "$W/$key.crt" "${files[@]}") \
		>"$W/verify.log" 2>&1 || { tail -n 5 "$W/verify.log" >&2; die "$name $key: verification"; }
	RATE=$(calc %.1f "$N / ($e - $s)")
	# The client's own time includes perf's when profiled; not used then.
	C_MS=$(awk -v n="$N" '{ printf "%.3f", 1000 * ($1 + $2) / n }' "$W/client.time")
	L_MS=$(calc %.3f "($l1 - $l0) / 1e6 / $N")
	S_MS=$(calc %.3f "(($a1 - $a0) - ($l1 - $l0)) / 1e6 / $N")
	log "$name $key: $RATE/s, CPU ms/module: client $C_MS, loop $L_MS, signing threads $S_MS (load $(load))"
}

speed() { # KEY: signatures/s of openssl speed on every CPU
	openssl speed -seconds 2 -multi "$NPROC" "${SPEEDALG[$1]}" 2>/dev/null |
		awk '/^rsa [0-9]+ bits|ecdsa \(nistp384\)/ { print $(NF-1) }'
}

# ---- the profile ----------------------------------------------------------------

# share FILE SYMBOL...: perf's inclusive share (%) of the first of the
# symbols that the profile has, from its --children report.
share() {
	local f=$1 s
	shift
	for s in "$@"; do
		awk -v s="$s" '$3 == "[.]" && ($4 == s) { print $1; found = 1; exit } END { if (!found) exit 1 }' "$f" &&
			return 0
	done
	echo "0%"
}

profile() { # KEY
	local key=$1 name=${NAMES[0]} p c d
	p=$W/perf.$key
	batch "$name" "$key" "$p"
	PROFILED_RATE=$RATE
	c=$W/perf.$key.client.txt
	d=$W/perf.$key.daemon.txt
	perf report -i "$p.client.data" --children --sort sym -g none -q --stdio 2>/dev/null |
		sed 's/^ *//' >"$c"
	perf report -i "$p.daemon.data" --children --sort sym -g none -q --stdio 2>/dev/null |
		sed 's/^ *//' >"$d"
	# Samples of each thread: the client, the daemon's loop and workers.
	local cs ds
	cs=$(perf report -i "$p.client.data" --sort pid -g none -q --stdio -F sample 2>/dev/null |
		awk '{ n += $1 } END { print n + 0 }')
	perf report -i "$p.daemon.data" --sort pid -g none -q --stdio -F sample,pid 2>/dev/null |
		awk 'NF == 2' >"$W/perf.$key.threads"
	ds=$(awk '{ n += $1 } END { print n + 0 }' "$W/perf.$key.threads")
	{
		echo
		echo "#### $key: $N modules, $PROFILED_RATE/s while profiled (load $(load))"
		echo
		echo "| thread | share of the samples |"
		echo "|---|---|"
		echo "| modsign-client | $(calc %.1f%% "100 * $cs / ($cs + $ds)") |"
		awk -v dpid="${VDPID[$name]}" -v tot="$((cs + ds))" '{
			split($2, a, ":"); what = a[1] == dpid ? "modsignd event loop (main thread)" : "modsignd signing thread " a[1]
			printf "| %s | %.1f%% |\n", what, 100 * $1 / tot }' "$W/perf.$key.threads"
		echo
		echo "Client, inclusive share of its own samples:"
		echo
		echo "| where | share |"
		echo "|---|---|"
		echo "| checking each returned signature (reply_signature: CMS parse + public-key verify) | $(share "$c" reply_signature pkcs7_verify_digest) |"
		echo "| of which the public-key operation (verify_raw) | $(share "$c" verify_raw) |"
		echo "| opening each module (modfile_open) | $(share "$c" modfile_open) |"
		echo "| hashing it (digest_fd: pread, SHA-256) | $(share "$c" digest_fd) |"
		echo "| of which SHA-256 | $(share "$c" SHA256_Update) |"
		echo "| new file, all but the signature (modfile_prepare: O_TMPFILE, copy_file_range) | $(share "$c" modfile_prepare copy_body) |"
		echo "| signature written, linked, renamed (item_write) | $(share "$c" item_write modfile_commit) |"
		echo "| closing (item_close: the replaced module's pages freed) | $(share "$c" item_close modfile_close) |"
		echo "| request built and sent (rpc_sign_request, conn_send) | $(share "$c" rpc_sign_request) + $(share "$c" conn_send) |"
		echo "| reply read and parsed (conn_recv) | $(share "$c" conn_recv) |"
		echo "| waiting (poll) | $(share "$c" __poll poll) |"
		echo "| all system calls | $(awk '$3 == "[k]" && $4 == "entry_SYSCALL_64_after_hwframe" { print $1; exit }' "$c") |"
		echo
		echo "Daemon, inclusive share of its own samples:"
		echo
		echo "| where | share |"
		echo "|---|---|"
		echo "| signing (job_run: key_sign, CMS around it) | $(share "$d" key_sign job_run) |"
		echo "| of which the private-key operation (sign_raw) | $(share "$d" sign_raw) |"
		echo "| of which RSA blinding (BN_BLINDING_convert_ex) | $(share "$d" BN_BLINDING_convert_ex) |"
		echo "| event loop (server_run) | $(share "$d" server_run serve) |"
		echo "| of which reading and parsing requests (conn_readable) | $(share "$d" conn_readable) |"
		echo "| of which replies, audit, group commit (finish_group) | $(share "$d" finish_group) |"
		echo "| of which epoll_wait | $(share "$d" epoll_wait) |"
		echo "| hand-offs: workq_push + workq_take_done | $(share "$d" workq_push) + $(share "$d" workq_take_done) |"
		echo "| locks (pthread_mutex_lock + pthread_cond_wait) | $(share "$d" ___pthread_mutex_lock pthread_mutex_lock) + $(share "$d" ___pthread_cond_wait pthread_cond_wait) |"
		echo
		echo "Top entries (self), client then daemon:"
		echo
		echo '```'
		perf report -i "$p.client.data" --no-children --sort dso,sym -g none -q --stdio 2>/dev/null |
			grep -v "^$" | awk "NR <= 12"
		echo '---'
		perf report -i "$p.daemon.data" --no-children --sort dso,sym -g none -q --stdio 2>/dev/null |
			grep -v "^$" | awk "NR <= 12"
		echo '```'
	}
}

echo "Run of $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(openssl version | cut -d' ' -f1-2), load at start $(load)."
if [ "${PROFILE_PERF:-1}" = 1 ]; then
	command -v perf >/dev/null || die "no perf (linux-perf)"
	for k in $KEYS; do profile "$k"; done
fi

# ---- A/B ------------------------------------------------------------------------

[ ${#NAMES[@]} -gt 1 ] || exit 0
declare -A R CC LL SS SP
for r in $(seq 1 "$ROUNDS"); do
	for k in $KEYS; do
		sp0=$(speed "$k")
		# The order turns with the round: no variant always runs first.
		for j in $(seq 0 $((${#NAMES[@]} - 1))); do
			name=${NAMES[$(((j + r) % ${#NAMES[@]}))]}
			batch "$name" "$k"
			R[$name.$k]+="$RATE "
			CC[$name.$k]+="$C_MS "
			LL[$name.$k]+="$L_MS "
			SS[$name.$k]+="$S_MS "
		done
		sp1=$(speed "$k")
		SP[$k]+="$(calc %.1f "$sp0 > $sp1 ? $sp0 : $sp1") "
		log "round $r $k: openssl speed $sp0, $sp1"
	done
done
echo
echo "A/B: $N modules, $ROUNDS rounds, variants alternated; the limit is the higher of"
echo "\`openssl speed -seconds 2 -multi $NPROC\` just before and just after each round's batches."
echo "Load average at the end: $(load)."
echo
# The signing threads' share of the CPU that the batch took: its ratio to
# openssl speed where the CPUs are the bottleneck and the signature costs
# what openssl speed's does; the figure that the machine's load moves least.
echo "| key | variant | modules/s, median | limit, median | ratio | CPU ms/module: client / loop / signing threads (medians) | signing's share of the CPU | every round, modules/s |"
echo "|---|---|---|---|---|---|---|---|"
for k in $KEYS; do
	lim=$(tr ' ' '\n' <<<"${SP[$k]}" | grep . | median)
	for name in "${NAMES[@]}"; do
		m=$(tr ' ' '\n' <<<"${R[$name.$k]}" | grep . | median)
		c=$(tr ' ' '\n' <<<"${CC[$name.$k]}" | grep . | median)
		l=$(tr ' ' '\n' <<<"${LL[$name.$k]}" | grep . | median)
		s=$(tr ' ' '\n' <<<"${SS[$name.$k]}" | grep . | median)
		echo "| $k | $name | $m | $lim | $(calc %.2f "$m / $lim") | $c / $l / $s | $(calc %.2f "$s / ($c + $l + $s)") | ${R[$name.$k]}|"
	done
done
