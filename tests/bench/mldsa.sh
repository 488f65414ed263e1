#!/bin/bash
# make bench's ML-DSA rows (issue 31): the batch of modsign-client sign with
# ML-DSA-44, -65 and -87 keys (the pure form, from the module's external mu:
# the default) against `openssl speed -multi NPROC ML-DSA-NN` in the same
# run.  ML-DSA needs OpenSSL >= 3.5, so this runs in the Debian 13 root
# (tests/release/chroot.sh), where the daemon and the client are built from
# the copy of the checkout; the modules come from the host's bench.
#
#   tests/bench/mldsa.sh --inside MODULES ROUNDS SECONDS   (in the root)
#
# /out (the host's directory, RELEASE_OUT) holds list (paths, one a line)
# and mods/ (the stripped modules); the section goes to /out/mldsa.md.
# run.sh's mldsa_view calls it (BENCH_MLDSA_ONLY=1 tests/bench/run.sh).
#
# Per algorithm and round: openssl speed, the batch, openssl speed again;
# the limit is the higher of the two around the batch (other work can only
# lower it).  Every batch is verified with modsign-client verify --cert.
# CPU per module (ms) from /proc: the whole machine, the daemon, the client.
set -euo pipefail
[ "${1:-}" = --inside ] || { echo "usage: $0 --inside MODULES ROUNDS SECONDS (see run.sh)" >&2; exit 2; }
NMOD=$2 ROUNDS=$3 SECS=$4
REPO=/src
. "$REPO/tests/helpers.sh" # modsignd_start
O=/out
W=$(mktemp -d /tmp/mldsa-bench.XXXXXX)
NPROC=$(nproc)
ALGS=(44 65 87)

log() { echo "bench mldsa: $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"$1\", ($2) }"; }
busy_jiffies() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
pid_jiffies() { awk '{print $14 + $15}' "/proc/$1/stat"; }
per_module_ms() { calc %.2f "1000 * ($1) / $(getconf CLK_TCK) / $2"; }

openssl list -public-key-algorithms 2>/dev/null | grep ML-DSA-65 > /dev/null ||
	die "OpenSSL $(openssl version | cut -d' ' -f2) has no ML-DSA"
log "building in the Debian 13 root"
make -j"$NPROC" all >"$W/make.log" 2>&1 || { tail -n 20 "$W/make.log" >&2; die "make all"; }
MODSIGND=$REPO/build/modsignd
CLIENT=$REPO/build/modsign-client

head -n "$NMOD" "$O/list" >"$W/list"
N=$(wc -l <"$W/list")
mapfile -t FILES <"$W/list"

args=(--listen "unix:$W/sock" --allow uid:"$(id -u)")
for a in "${ALGS[@]}"; do args+=(--key "mldsa$a=ephemeral:mldsa$a"); done
modsignd_start "$W/modsignd.log" "${args[@]}" || die "modsignd did not start"
DPID=$MODSIGND_PID
trap 'kill $DPID 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
export MODSIGN_SERVER=unix:$W/sock
for a in "${ALGS[@]}"; do "$CLIENT" cert --key "mldsa$a" >"$W/mldsa$a.crt" || die "cert mldsa$a"; done

speed() { # NN [-multi N]: ML-DSA-NN signatures per second
	openssl speed -seconds "$SECS" "${@:2}" "ML-DSA-$1" >"$W/speed.txt" 2>/dev/null || true
	awk -v a="ML-DSA-$1" '$1 == a && NF >= 7 {print $(NF-1)}' "$W/speed.txt" | tail -n 1
}

batch() { # NN: sets RATE, BUSY, DMS, CMS
	local s e b0 b1 d0 d1 t
	rm -rf "$W/run" && cp -a "$O/mods" "$W/run"
	b0=$(busy_jiffies) d0=$(pid_jiffies "$DPID")
	s=$(now)
	# The client's own CPU time (user + system), from bash's time.
	t=$( { TIMEFORMAT='%U %S'; time (cd "$W/run" && "$CLIENT" sign --key "mldsa$1" "${FILES[@]}" >"$W/cmd.log" 2>&1); } 2>&1) ||
		{ tail -n 5 "$W/cmd.log" >&2; die "batch ML-DSA-$1"; }
	e=$(now)
	b1=$(busy_jiffies) d1=$(pid_jiffies "$DPID")
	RATE=$(calc %.1f "$N / ($e - $s)")
	BUSY=$(per_module_ms "$b1 - $b0" "$N")
	DMS=$(per_module_ms "$d1 - $d0" "$N")
	CMS=$(calc %.2f "1000 * (${t% *} + ${t#* }) / $N")
	(cd "$W/run" && "$CLIENT" verify --cert "$W/mldsa$1.crt" "${FILES[@]}") >"$W/verify.log" 2>&1 ||
		{ tail -n 5 "$W/verify.log" >&2; die "verification of the ML-DSA-$1 batch"; }
}

: >"$W/rows.md"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for a in "${ALGS[@]}"; do
	for r in $(seq "$ROUNDS"); do
		s1=$(speed "$a" -multi "$NPROC")
		batch "$a"
		s2=$(speed "$a" -multi "$NPROC")
		# Without -multi, openssl speed divides by its user CPU time:
		# the CPU one signature costs, whatever else runs.
		s0=$(speed "$a")
		[ -n "$s1" ] && [ -n "$s2" ] && [ -n "$s0" ] || { cat "$W/speed.txt" >&2; die "cannot read openssl speed ML-DSA-$a"; }
		lim=$(calc %.1f "$s1 > $s2 ? $s1 : $s2")
		sig=$(calc %.2f "1000 * $NPROC / $lim")
		one=$(calc %.3f "1000 / $s0")
		log "ML-DSA-$a round $r: batch $RATE/s, openssl speed $s1 and $s2/s ($(calc %.0f%% "100 * $RATE / $lim")); CPU per module: machine $BUSY, daemon $DMS, client $CMS ms"
		# The most a batch can do when the client's work (reading and
		# hashing the modules into mu) shares the CPUs with the signing.
		bound=$(calc %.1f "1000 * $NPROC / ($sig + $CMS)")
		echo "| ML-DSA-$a | $r | $RATE | $s1 | $s2 | $(calc %.0f%% "100 * $RATE / $lim") | $(awk "BEGIN { exit !($RATE >= 0.85 * $lim) }" && echo met || echo '**not met**') | $BUSY | $DMS | $CMS | $sig | $bound ($(calc %.0f%% "100 * $RATE / $bound")) | $one | $(calc %.0f%% "100 * $one / $DMS") | $(calc %.0f%% "100 * $one / ($DMS + $CMS)") |" >>"$W/rows.md"
	done
done

cat >"$O/mldsa.md" <<EOF
## ML-DSA: the batch against \`openssl speed\` (Debian 13)

In the Debian 13 root (\`tests/release/chroot.sh trixie\`: $(openssl version | cut -d' ' -f1-2), gcc
$(gcc -dumpversion)), modsignd and modsign-client built there from this checkout;
one daemon with three one-time keys (\`ephemeral:mldsa44\`, \`-65\`, \`-87\`),
default workers. \`modsign-client sign --key mldsaNN\` of $N stripped
modules in one batch, the pure form (the client computes the module's
external mu, the daemon signs those 64 bytes), verified with
\`modsign-client verify --cert\` over all files. The limit: \`openssl speed
-seconds $SECS -multi $NPROC ML-DSA-NN\` (sign/s) just before and just after
each batch, the higher of the two. Load average in the root at the start:
$LOAD0; at the end: $(cut -d' ' -f1-3 /proc/loadavg).

CPU per module, ms: all CPUs (busy time from \`/proc/stat\`, other work
included), the daemon (\`/proc/PID/stat\`), the client (its user + system
time); "one signature" is what \`openssl speed -multi\` spends per signature on
one CPU (NPROC / limit). The client and the daemon share the $NPROC CPUs,
so the batch can at best reach NPROC / (one signature + the client's CPU
per module): the column "bound with the client's CPU", and the batch's
share of it. What is left
between the batch and that bound is the daemon's own work beyond the
signature (the daemon's column minus one signature) and other work on
the machine.

Both rates are wall-clock rates: with \`-multi\` openssl speed counts
signatures per second of wall time, so other work on the machine lowers
the limit and the batch alike, but not by the same share (the batch has
three busy threads, openssl speed two). The last three columns are CPU
times, which the load moves less (it still does, on a loaded virtual
machine: cache misses, stolen time): the CPU of one signature from \`openssl speed
-seconds $SECS ML-DSA-NN\` without \`-multi\` (which divides by its user CPU
time), its share of the daemon's CPU per module, and of the daemon's and
the client's together: the ratio to the limit the batch would reach on an
idle machine with its client on it.

| algorithm | round | batch, modules/s | speed before | speed after | batch / limit | target ≥ 85% | CPU, all | daemon | client | one signature | bound with the client's CPU (batch / bound) | one signature, CPU | of the daemon's | of daemon + client |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
$(cat "$W/rows.md")
EOF
log "wrote $O/mldsa.md"
