#!/bin/bash
# make bench: sign every module of Debian's linux-image package with the
# kernel's scripts/sign-file and with modsign, side by side, and write the
# tables to docs/PERFORMANCE.md.
#
#   tests/bench/run.sh
#
# Environment:
#   BENCH_MODULES=N        sign only the first N modules (default: all)
#   BENCH_PERPROC_MODULES=N  one-process-per-module runs over the first N only
#                          (default: all; the rate is what is compared)
#   BENCH_SWEEP_MODULES=N  modules in the concurrency sweep (default 1000)
#   BENCH_OUT=FILE         where to write the report (default docs/PERFORMANCE.md)
#   BENCH_NO_KBUILD=1      skip the kbuild view
#   BENCH_KBUILD_ONLY=1    only the kbuild view (tests/bench/kbuild.sh),
#                          whose section replaces the one in BENCH_OUT
#   BENCH_KBUILD_MODULES=N, BENCH_KBUILD_ROUNDS=N  its size (1000, 3)
#   BENCH_TLOG_ONLY=1      only the transparency log's cost (RSA-2048 batch
#                          with and without --transparency-log), whose
#                          section replaces the one in BENCH_OUT
#   BENCH_TLOG_ROUNDS=N    rounds of that comparison (default 3)
#   BENCH_MLDSA_ONLY=1     only the ML-DSA batch against openssl speed, in
#                          the Debian 13 root (tests/bench/mldsa.sh)
#   BENCH_NO_MLDSA=1       the full run without it (keeps the last section)
#   BENCH_MLDSA_MODULES=N, BENCH_MLDSA_ROUNDS=N, BENCH_MLDSA_SECONDS=N
#                          its size (all modules, 1 round, openssl speed -seconds 3)
#   BENCH_PKCS11_ONLY=1    only the PKCS#11 module path: the kernel's
#                          sign-file through pkcs11-provider and
#                          modsign-pkcs11.so (tests/bench/modpath.sh)
#   BENCH_PKCS11_MODULES=N its size (default 500)
#   BENCH_PERCALL_ONLY=1   only one call of the per-module path: time and
#                          page faults (tests/bench/modpath.sh)
#   BENCH_PERCALL_REPS=N   calls of each program (default 100)
# Each *_ONLY section replaces its namesake in BENCH_OUT (or is added at
# its end); the other sections are kept as they are.
#
# Every signing run is verified with modsign-client verify --cert; a
# failure anywhere stops the bench with a non-zero exit and no report.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
BUILT_CLIENT=$B/modsign-client
BUILT_MODSIGND=$B/modsignd
SF=$B/fixtures/sign-file
OUT=${BENCH_OUT:-$REPO/docs/PERFORMANCE.md}
. "$REPO/tests/helpers.sh" # modsignd_start
. "$REPO/tests/bench/kbuild.sh" # the kbuild view
. "$REPO/tests/bench/modpath.sh" # the PKCS#11 module path, one call's cost
NMOD=${BENCH_MODULES:-0}
SWEEP_N=${BENCH_SWEEP_MODULES:-1000}
PERPROC_N=${BENCH_PERPROC_MODULES:-0}
NPROC=$(nproc)
SOFTHSM=/usr/lib/softhsm/libsofthsm2.so
# The QEMU test's 6.1 tree, in the cache outside the clone (tests/qemu/build-kernel.sh).
. "$REPO/tests/cache.sh"
KDIR=$(ls -d "$MODSIGN_CACHE"/kernel-6.1-*/linux-source-6.1 2>/dev/null | head -n 1)
KDIR=${KDIR:-$MODSIGN_CACHE/kernel-6.1-none/linux-source-6.1}

# Work on tmpfs when it has room: the runs then measure signing, not the disk.
. "$REPO/tests/bench/workdir.sh"
bench_workdir bench

# Run copies of the programs, so that a rebuild during the bench changes
# nothing under it.
[ -x "$BUILT_CLIENT" ] && [ -x "$BUILT_MODSIGND" ] || { echo "bench: build first (make all)" >&2; exit 1; }
mkdir "$W/bin"
cp "$BUILT_CLIENT" "$BUILT_MODSIGND" "$W/bin/"
CLIENT=$W/bin/modsign-client
MODSIGND=$W/bin/modsignd
# The floor of any one-process-per-module signer: a program that does nothing.
printf 'int main(void) { return 0; }\n' >"$W/empty.c"
gcc -O2 -static-pie -o "$W/bin/empty" "$W/empty.c" || { echo "bench: cannot build an empty static program" >&2; exit 1; }
EMPTY=$W/bin/empty

log() { echo "bench: $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"$1\", ($2) }"; }  # FORMAT EXPRESSION

# ---- material ---------------------------------------------------------------

prepare_modules() {
	"$REPO/tests/fixtures.sh"
	[ -x "$SF" ] || die "no $SF"
	(cd "$B/fixtures/modules" && find . -name '*.ko' | sort) >"$W/all.list"
	if [ "$NMOD" -gt 0 ]; then head -n "$NMOD" "$W/all.list" >"$W/list"; else cp "$W/all.list" "$W/list"; fi
	head -n "$SWEEP_N" "$W/list" >"$W/sweep.list"
	if [ "$PERPROC_N" -gt 0 ]; then head -n "$PERPROC_N" "$W/list" >"$W/pp.list"; else cp "$W/list" "$W/pp.list"; fi
	NPP=$(wc -l <"$W/pp.list")
	mkdir "$W/stripped"
	(cd "$B/fixtures/modules" && xargs -a "$W/list" cp --parents -t "$W/stripped")
	(cd "$W/stripped" && xargs -a "$W/list" "$CLIENT" strip >/dev/null)
	N=$(wc -l <"$W/list")
	MB=$(du -sm "$W/stripped" | cut -f1)
	log "$N modules, $MB MB, stripped, in $W"
}

# A PEM file with a private key and its certificate (as certs/signing_key.pem),
# and the certificate alone in NAME.crt.
make_key() { # NAME openssl-req-newkey-args...
	local name=$1
	shift
	openssl req -new -nodes -utf8 -x509 -batch -days 30 -sha256 \
		-subj "/O=modsign bench/CN=bench $name" \
		-addext "basicConstraints=critical,CA:FALSE" -addext "keyUsage=digitalSignature" \
		-addext "extendedKeyUsage=codeSigning" -addext "subjectKeyIdentifier=hash" \
		-keyout "$W/$name.pem" -out "$W/$name.crt" "$@" 2>/dev/null || die "key $name"
	cat "$W/$name.crt" >>"$W/$name.pem"
	chmod 600 "$W/$name.pem"
}

# A SoftHSM2 token with an RSA-4096 key and a certificate made by it, as in
# tests/integration/hsm.bats.  Sets HSM_KEY (a modsignd --key argument).
make_hsm() {
	HSM_KEY=
	for t in softhsm2-util pkcs11-tool certtool; do command -v $t >/dev/null || return 0; done
	[ -e "$SOFTHSM" ] || return 0
	export SOFTHSM2_CONF=$W/softhsm2.conf
	mkdir "$W/tokens"
	softhsm_conf "$W"
	softhsm2-util --init-token --free --label bench --so-pin 0000 --pin 1234 >/dev/null || die softhsm
	pkcs11-tool --module "$SOFTHSM" --token-label bench --login --pin 1234 \
		--keypairgen --key-type rsa:4096 --label rsa --id 01 >/dev/null 2>&1 || die "token key"
	printf 'cn = "bench hsm"\norganization = "modsign bench"\nexpiration_days = 30\nsigning_key\n' >"$W/hsm.tmpl"
	GNUTLS_PIN=1234 certtool --generate-self-signed --hash sha256 --template "$W/hsm.tmpl" \
		--load-privkey "pkcs11:token=bench;object=rsa;type=private" --outfile "$W/hsm.crt" \
		>/dev/null 2>&1 || die "token certificate"
	(umask 077 && echo 1234 >"$W/pin")
	HSM_KEY="hsm=pkcs11:token=bench;object=rsa"
}

# CA, server and client certificates for TLS on loopback (as tests/integration/tls.bats):
# the server's with its names in subjectAltName and serverAuth, the
# client's with clientAuth (tests/helpers.sh: issue).
make_pki() {
	mkdir "$W/pki"
	(cd "$W/pki" && pki ca &&
		issue_cn server bench-server ca subjectAltName=DNS:localhost,IP:127.0.0.1 \
			extendedKeyUsage=serverAuth &&
		issue_cn client bench-client ca) || die pki
}

start_bench_daemon() {
	local args=(--listen "unix:$W/sock" --listen "tls:127.0.0.1:$PORT"
		--tls-cert "$W/pki/server.crt" --tls-key "$W/pki/server.key" --tls-client-ca "$W/pki/ca.crt"
		--allow uid:"$(id -u)" --allow cn:bench-client
		--key rsa2048="$W/rsa2048.pem" --key rsa4096="$W/rsa4096.pem" --key p384="$W/p384.pem"
		--key rsa4096p4="$W/rsa4096p4.pem"
		--key default="$W/rsa4096.pem") # for kbuild: the certificate names no key
	[ -n "$HSM_KEY" ] && args+=(--key "$HSM_KEY" --cert "hsm=$W/hsm.crt" --pin-file "$W/pin")
	modsignd_start "$W/modsignd.log" "${args[@]}" || die "modsignd did not start"
	DPID=$MODSIGND_PID
	PIDS+=($DPID)
}

# ---- one signing run -----------------------------------------------------------

fresh_run() { # LIST: a stripped copy of the modules of LIST in $W/run
	rm -rf "$W/run"
	mkdir "$W/run"
	(cd "$W/stripped" && xargs -a "$1" cp --parents -t "$W/run")
}

verify_run() { # CERT LIST WHAT
	local files
	mapfile -t files <"$2"
	(cd "$W/run" && "$CLIENT" verify --cert "$1" "${files[@]}") >"$W/verify.log" 2>&1 ||
		{ tail -n 5 "$W/verify.log" >&2; die "verification after $3"; }
}

# timed LIST CERT WHAT COMMAND...: run COMMAND in a fresh copy, verify, set SECS.
# CPU time of the whole machine (all CPUs, busy jiffies) and of the daemon.
busy_jiffies() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
daemon_jiffies() { awk '{print $14 + $15}' "/proc/$DPID/stat"; }
# ms of CPU per module from jiffies over COUNT modules
per_module_ms() { calc %.2f "1000 * ($1) / $(getconf CLK_TCK) / $2"; }

# ... and sets BUSY_MS / DAEMON_MS: CPU per module, all CPUs and the daemon.
timed() {
	local list=$1 cert=$2 what=$3 s e b0 b1 d0 d1
	shift 3
	fresh_run "$list"
	b0=$(busy_jiffies); d0=$(daemon_jiffies)
	s=$(now)
	(cd "$W/run" && "$@") >"$W/cmd.log" 2>&1 || { tail -n 5 "$W/cmd.log" >&2; die "$what"; }
	e=$(now)
	b1=$(busy_jiffies); d1=$(daemon_jiffies)
	SECS=$(calc %.3f "$e - $s")
	BUSY_MS=$(per_module_ms "$b1 - $b0" "$(wc -l <"$list")")
	DAEMON_MS=$(per_module_ms "$d1 - $d0" "$(wc -l <"$list")")
	verify_run "$cert" "$list" "$what"
	log "$what: $(wc -l <"$list") modules in $SECS s"
}

run_empty() { xargs -a "$W/pp.list" -P "$NPROC" -I{} "$EMPTY" {}; }
run_signfile() { xargs -a "$W/pp.list" -P "$NPROC" -I{} "$SF" sha256 "$KEYPEM" "$CERT" {}; }
run_perproc() { xargs -a "$W/pp.list" -P "$NPROC" -I{} "$CLIENT" sign-file sha256 "modsign:$KEY" "$CERT" {}; }
run_batch() { # [LIST [CLIENT-GLOBAL-ARGS...]]
	local list=${1:-$W/list} files
	shift || true
	mapfile -t files <"$list"
	"$CLIENT" "$@" sign --key "$KEY" --hash sha256 "${files[@]}"
}

# ---- sections ------------------------------------------------------------------

# openssl speed's signatures per second on all CPUs.  Other work on the
# machine can only lower it, so the limit is the highest of three
# measurements: at the start of the run, just before the algorithm's batch
# and just after it.  On these virtual machines the host's load moves the
# rate from minute to minute, so the report also compares the batch with the
# higher of the two taken around it (AROUND), for context; the targets are
# judged against LIMIT.
speed_of() { # rsa2048|rsa4096|rsa4096p4|ecdsap384
	local alg
	case $1 in rsa4096p4) alg=(-primes 4 rsa4096) ;; *) alg=("$1") ;; esac
	openssl speed -seconds 3 -multi "$NPROC" "${alg[@]}" 2>/dev/null >"$W/speed.$1.txt" || true
	awk '/^rsa [0-9]+ bits|ecdsa \(nistp384\)/ {print $(NF-1)}' "$W/speed.$1.txt"
}
declare -A SPEED0 SPEED1 SPEED2 LIMIT AROUND
openssl_limits() {
	local a
	log "openssl speed -seconds 3 -multi $NPROC"
	for a in rsa2048 rsa4096 rsa4096p4 ecdsap384; do
		SPEED0[$a]=$(speed_of $a)
		[ -n "${SPEED0[$a]}" ] || { cat "$W/speed.$a.txt" >&2; die "cannot read openssl speed $a"; }
	done
}
speed_alg() { # KEY: its openssl speed algorithm
	case $1 in rsa2048 | rsa4096p4) echo "$1" ;; p384) echo ecdsap384 ;; *) echo rsa4096 ;; esac
}
limit_before() { # KEY
	local a
	a=$(speed_alg "$1")
	[ -n "${SPEED1[$a]:-}" ] || SPEED1[$a]=$(speed_of $a)
}
limit_after() { # KEY: measure again, set LIMIT[KEY] to the higher of the two
	local a
	a=$(speed_alg "$1")
	[ -n "${SPEED2[$a]:-}" ] || SPEED2[$a]=$(speed_of $a)
	AROUND[$1]=$(calc %.1f "${SPEED1[$a]:-0} > ${SPEED2[$a]:-0} ? ${SPEED1[$a]:-0} : ${SPEED2[$a]:-0}")
	LIMIT[$1]=$(calc %.1f "${AROUND[$1]} > ${SPEED0[$a]} ? ${AROUND[$1]} : ${SPEED0[$a]}")
	[ "${AROUND[$1]}" != 0.0 ] || die "cannot read openssl speed $a"
}

# The empty program, one process per module, as the per-module runs: the
# most that any signer started once per module can reach on this machine.
# Measured next to each key's per-module runs; other work can only lower
# it, so the highest is the ceiling.
FLOOR=0
floor_run() {
	local s e r b0 b1
	b0=$(busy_jiffies)
	s=$(now)
	(cd "$W/stripped" && run_empty) || die "empty program"
	e=$(now)
	b1=$(busy_jiffies)
	r=$(calc %.1f "$NPP / ($e - $s)")
	FLOOR=$(calc %.1f "$r > $FLOOR ? $r : $FLOOR")
	CPU[$KEY.empty]=$(per_module_ms "$b1 - $b0" "$NPP")
	log "empty static program, one process per module: $r/s, ${CPU[$KEY.empty]} ms CPU each"
}

# The same program one at a time: what a process start costs when it has a
# CPU to itself.  On these virtual machines it costs much more CPU when
# every CPU starts processes at once, which is what bounds the per-module
# rows; the report shows both.
floor_serial() {
	local b0 b1
	b0=$(busy_jiffies)
	(cd "$W/stripped" && xargs -a "$W/pp.list" -P 1 -I{} "$EMPTY" {}) || die "empty program"
	b1=$(busy_jiffies)
	CPU[empty1]=$(per_module_ms "$b1 - $b0" "$NPP")
	log "empty static program, one at a time: ${CPU[empty1]} ms CPU each"
}

declare -A RATE CPU
main_runs() { # KEY LABEL
	KEY=$1
	local label=$2 lim sf
	KEYPEM=$W/$KEY.pem
	CERT=$W/$KEY.crt
	if [ "$KEY" = hsm ]; then
		# sign-file reaches a token only through OpenSSL's pkcs11 engine.
		if [ -e "$(openssl version -e | sed 's/.*"\(.*\)"/\1/')/pkcs11.so" ]; then
			KEYPEM="pkcs11:token=bench;object=rsa;pin-value=1234"
			timed "$W/pp.list" "$CERT" "$label sign-file" run_signfile
			RATE[$KEY.a]=$(calc %.1f "$NPP / $SECS")
		else
			RATE[$KEY.a]=
		fi
	else
		timed "$W/pp.list" "$CERT" "$label sign-file" run_signfile
		RATE[$KEY.a]=$(calc %.1f "$NPP / $SECS")
		CPU[$KEY.a]=$BUSY_MS
		# RSA signatures are deterministic: modsign must make the same bytes.
		[ "$KEY" != p384 ] && mv "$W/run" "$W/ref"
	fi
	timed "$W/pp.list" "$CERT" "$label modsign-client sign-file" run_perproc
	RATE[$KEY.b]=$(calc %.1f "$NPP / $SECS")
	CPU[$KEY.b]=$BUSY_MS
	CPU[$KEY.daemon]=$DAEMON_MS
	floor_run
	limit_before "$KEY"
	timed "$W/list" "$CERT" "$label modsign-client sign (batch)" run_batch
	RATE[$KEY.c]=$(calc %.1f "$N / $SECS")
	limit_after "$KEY"
	lim=${LIMIT[$KEY]}
	if [ -d "$W/ref" ]; then
		(cd "$W/ref" && xargs -a "$W/pp.list" sha256sum) >"$W/ref.sums"
		(cd "$W/run" && sha256sum -c --quiet "$W/ref.sums") >/dev/null 2>&1 || die "$label: batch output differs from sign-file's"
		RATE[$KEY.same]=yes
		rm -rf "$W/ref"
	fi
	sf=${RATE[$KEY.a]:-${RATE[rsa4096.a]}}
	{
		local m r
		for m in a b c; do
			r=${RATE[$KEY.$m]}
			[ -n "$r" ] || continue
			case $m in
			a) echo -n "| $label | sign-file, one process per module, $NPROC at once" ;;
			b) echo -n "| $label | modsign-client sign-file, one process per module, $NPROC at once" ;;
			c) echo -n "| $label | modsign-client sign, one batch" ;;
			esac
			echo " | $r | $(calc %.2fx "$r / $sf")$([ -z "${RATE[$KEY.a]}" ] && echo '*') | $(calc %.0f%% "100 * $r / $lim") | yes |"
		done
	} >>"$W/main.md"
}

sweep() { # KEY
	KEY=$1
	local k s e i files pids rc
	for k in 1 2 4 8 32; do
		fresh_run "$W/sweep.list"
		rm -f "$W"/share.*
		split -n "r/$k" -d -a 2 "$W/sweep.list" "$W/share."
		s=$(now)
		pids=()
		for i in "$W"/share.*; do
			(cd "$W/run" && run_batch "$i" >/dev/null 2>>"$W/cmd.log") &
			pids+=($!)
		done
		rc=0
		for i in "${pids[@]}"; do wait "$i" || rc=1; done
		e=$(now)
		[ $rc = 0 ] || die "sweep $KEY $k clients"
		verify_run "$W/$KEY.crt" "$W/sweep.list" "sweep $KEY $k clients"
		SWEEP[$KEY.$k]=$(calc %.1f "$SWEEP_COUNT / ($e - $s)")
		log "sweep $KEY $k clients: ${SWEEP[$KEY.$k]}/s"
	done
}

# The daemon's resident memory with 64 idle clients, each of which has had
# one status round trip so that the daemon has accepted and checked it.
rss_64() {
	RSS_BEFORE=$(awk '/^VmRSS/ {print $2}' /proc/$DPID/status)
	python3 - "$W/sock" 64 "$W/held" <<'PY' &
import json, os, socket, struct, sys, time
path, n, flag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conns = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    msg = json.dumps({"v": 1, "id": i + 1, "op": "status"}).encode()
    s.sendall(struct.pack(">I", len(msg)) + msg)
    hdr = b""
    while len(hdr) < 4:
        hdr += s.recv(4 - len(hdr))
    want, got = struct.unpack(">I", hdr)[0], b""
    while len(got) < want:
        got += s.recv(want - len(got))
    assert json.loads(got)["ok"], got
    conns.append(s)
open(flag, "w").close()
time.sleep(60)
PY
	local py=$!
	PIDS+=($py)
	for _ in $(seq 1 200); do [ -e "$W/held" ] && break; sleep 0.05; done
	[ -e "$W/held" ] || die "64 clients did not connect"
	sleep 0.5
	RSS_64=$(awk '/^VmRSS/ {print $2}' /proc/$DPID/status)
	RSS_FDS=$(ls /proc/$DPID/fd | wc -l)
	kill $py
	wait $py 2>/dev/null || true
}

tls_vs_unix() {
	KEY=rsa2048
	local tls=(--server "tls:localhost:$PORT" --tls-ca "$W/pki/ca.crt"
		--tls-cert "$W/pki/client.crt" --tls-key "$W/pki/client.key")
	timed "$W/list" "$W/rsa2048.crt" "RSA-2048 batch over UNIX" run_batch "$W/list" --server "unix:$W/sock"
	UNIX_RATE=$(calc %.1f "$N / $SECS")
	timed "$W/list" "$W/rsa2048.crt" "RSA-2048 batch over TLS" run_batch "$W/list" "${tls[@]}"
	TLS_RATE=$(calc %.1f "$N / $SECS")
}

# The transparency log's cost (docs/TRANSPARENCY.md): the RSA-2048 batch
# of all modules on three daemons alike but for their log (none, one on
# tmpfs with the work directory, one on the disk under build/ where each
# commit's syncfs and fsyncs reach the device), alternated round by round
# (the machine's speed drifts), the best round of each.  Each log is
# audited afterwards.
tlog_daemon() { # NAME [DIR]: a daemon on unix:$W/NAME, with a log in DIR
	local args=(--listen "unix:$W/$1" --allow uid:"$(id -u)" --key rsa2048="$W/rsa2048.pem")
	[ -n "${2:-}" ] && rm -rf "$2" && args+=(--transparency-log "$2" --log-key "$W/log.pem"
		--log-origin bench.invalid/modsign)
	modsignd_start "$W/modsignd-$1.log" "${args[@]}" || die "modsignd $1 did not start"
	PIDS+=($MODSIGND_PID)
	TLOG_PID[$1]=$MODSIGND_PID
}

tlog_rate() { # NAME WHAT: the batch's rate on the daemon NAME
	local dpid=${DPID:-}
	DPID=${TLOG_PID[$1]} # timed's daemon CPU: this one's
	timed "$W/tlog.list" "$W/rsa2048.crt" "RSA-2048 batch, $2" run_batch "$W/tlog.list" --server "unix:$W/$1"
	DPID=$dpid
	TLOG_RATE=$(calc %.1f "$TLOG_N / $SECS")
	TLOG_CPU="$BUSY_MS / $DAEMON_MS"
	log "  $TLOG_RATE/s; CPU per module: machine $BUSY_MS ms, daemon $DAEMON_MS ms"
}

best() { awk "BEGIN { print ($1 > $2) ? $1 : $2 }"; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The batch of all modules takes about a second, as long as the noise of
# this machine's neighbours: the comparison signs BENCH_TLOG_COPIES
# copies of them (3) in one batch, each a tree of its own.
tlog_list() {
	local i
	: >"$W/tlog.list"
	for i in $(seq "${BENCH_TLOG_COPIES:-3}"); do
		[ -d "$W/stripped/tlog$i" ] ||
			(cd "$W/stripped" && mkdir "tlog$i" && xargs -a "$W/list" cp --parents -t "tlog$i")
		sed "s|^\./|./tlog$i/|" "$W/list" >>"$W/tlog.list"
	done
	TLOG_N=$(wc -l <"$W/tlog.list")
}

tlog_on_off() {
	local i disk=$B/bench/tlog
	declare -gA TLOG_PID
	openssl genpkey -algorithm ed25519 -out "$W/log.pem" 2>/dev/null && chmod 600 "$W/log.pem"
	mkdir -p "$B/bench"
	tlog_daemon tlog-none
	tlog_daemon tlog-shm "$W/tlog"
	tlog_daemon tlog-disk "$disk"
	KEY=rsa2048
	tlog_list
	TLOG_OFF=0 TLOG_SHM=0 TLOG_DISK=0 TLOG_ROUNDS=${BENCH_TLOG_ROUNDS:-3}
	local off=() shm=() dsk=() pshm=() pdsk=() cpu=()
	for i in $(seq "$TLOG_ROUNDS"); do
		tlog_rate tlog-none "no transparency log" && TLOG_OFF=$(best "$TLOG_RATE" "$TLOG_OFF") && off+=("$TLOG_RATE")
		cpu[0]+=" $TLOG_CPU;"
		tlog_rate tlog-shm "transparency log on tmpfs" && TLOG_SHM=$(best "$TLOG_RATE" "$TLOG_SHM") && shm+=("$TLOG_RATE")
		cpu[1]+=" $TLOG_CPU;"
		tlog_rate tlog-disk "transparency log on disk" && TLOG_DISK=$(best "$TLOG_RATE" "$TLOG_DISK") && dsk+=("$TLOG_RATE")
		cpu[2]+=" $TLOG_CPU;"
		# The same round's rates side by side: the machine's speed
		# drifts between rounds more than the log costs.
		pshm+=("$(calc %.4f "${shm[-1]} / ${off[-1]}")") pdsk+=("$(calc %.4f "${dsk[-1]} / ${off[-1]}")")
		log "round $i, best so far: no log $TLOG_OFF, log on tmpfs $TLOG_SHM, on disk $TLOG_DISK modules/s"
	done
	TLOG_OFF_MED=$(median "${off[@]}") TLOG_SHM_MED=$(median "${shm[@]}") TLOG_DISK_MED=$(median "${dsk[@]}")
	TLOG_SHM_PAIR=$(median "${pshm[@]}") TLOG_DISK_PAIR=$(median "${pdsk[@]}")
	TLOG_ALL="no log ${off[*]}; tmpfs ${shm[*]}; disk ${dsk[*]}"
	TLOG_CPUS="no log${cpu[0]%;}; tmpfs${cpu[1]%;}; disk${cpu[2]%;}"
	for d in "tlog-shm:$W/tlog" "tlog-disk:$disk"; do
		"$CLIENT" --server "unix:$W/${d%%:*}" log vkey >"$W/tlog.vkey"
		"$CLIENT" log verify --dir "${d#*:}" --vkey-file "$W/tlog.vkey" >/dev/null ||
			die "the bench's transparency log ${d#*:} does not verify"
	done
	TLOG_ENTRIES=$(sed -n 2p "$disk/checkpoint")
	TLOG_FS=$(df -PT "$disk" | awk 'NR==2 {print $2}')
	rm -rf "$disk"
}

tlog_met() { # RATE BASE
	awk "BEGIN { exit !($1 >= 0.95 * $2) }" && echo met || echo "**not met**"
}

tlog_report() {
	cat <<EOF
## The transparency log's cost

RSA-2048 batch (\`modsign-client sign\`, one connection) of $TLOG_N modules
(all $N, ${BENCH_TLOG_COPIES:-3} copies of each in trees of their own) on
three daemons alike but for \`--transparency-log\` (docs/TRANSPARENCY.md),
alternated, $TLOG_ROUNDS rounds; each log audited with \`modsign-client log
verify\` afterwards ($TLOG_ENTRIES entries in the one on disk).

| daemon | modules/s, median | vs no log | vs no log, median of the rounds' pairs | best | vs no log |
|---|---|---|---|---|---|
| no transparency log | $TLOG_OFF_MED | | | $TLOG_OFF | |
| log on tmpfs (the work directory) | $TLOG_SHM_MED | $(calc %+.1f%% "100 * ($TLOG_SHM_MED / $TLOG_OFF_MED - 1)") | $(calc %+.1f%% "100 * ($TLOG_SHM_PAIR - 1)") | $TLOG_SHM | $(calc %+.1f%% "100 * ($TLOG_SHM / $TLOG_OFF - 1)") |
| log on disk ($TLOG_FS, under build/) | $TLOG_DISK_MED | $(calc %+.1f%% "100 * ($TLOG_DISK_MED / $TLOG_OFF_MED - 1)") | $(calc %+.1f%% "100 * ($TLOG_DISK_PAIR - 1)") | $TLOG_DISK | $(calc %+.1f%% "100 * ($TLOG_DISK / $TLOG_OFF - 1)") |

Every round, modules/s: $TLOG_ALL.

CPU per module, ms, all CPUs / the daemon, every round: $TLOG_CPUS.

Target, within 5% of the rate without a log (medians; and the median of
the rounds' pairs): on tmpfs $(tlog_met "$TLOG_SHM_MED" "$TLOG_OFF_MED"), $(tlog_met "$TLOG_SHM_PAIR" 1); on disk $(tlog_met "$TLOG_DISK_MED" "$TLOG_OFF_MED"), $(tlog_met "$TLOG_DISK_PAIR" 1).
EOF
}

# BENCH_TLOG_ONLY: the transparency log's section alone, in place of the
# one BENCH_OUT has, or at its end.
tlog_only() {
	local f=$W/report.md
	make_key rsa2048 -newkey rsa:2048
	tlog_on_off
	tlog_report >"$W/tlog.md"
	[ -f "$OUT" ] || die "no $OUT to put the transparency log section in"
	awk '/^## / { skip = /^## The transparency log/ } !skip' "$OUT" >"$f"
	{ echo; cat "$W/tlog.md"; } >>"$f"
	cp "$f" "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
	log "wrote the transparency log section of $OUT"
}

# put_section FILE: FILE's section (its first line "## TITLE...") in place
# of the one of BENCH_OUT whose heading starts alike, or at its end; the
# other sections are kept as they are.
put_section() {
	local head f=$W/report.md
	head=$(head -n 1 "$1")
	[ -f "$OUT" ] || die "no $OUT to put the section in"
	awk -v sec="$1" -v head="$head" '
		function emit(l) { while ((getline l < sec) > 0) print l; done = 1 }
		/^## / { if (skip && !done) { emit(); print "" } skip = (index($0, head) == 1) }
		!skip
		END { if (skip && !done) emit(); else if (!done) { print ""; emit() } }' "$OUT" >"$f"
	cp "$f" "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
	log "wrote \"${head#\#\# }\" in $OUT"
}

# ML-DSA batch against openssl speed (issue 31), in the Debian 13 root:
# tests/bench/mldsa.sh there, on these stripped modules.
mldsa_view() {
	local n=${BENCH_MLDSA_MODULES:-$N}
	rm -rf "$W/ml" && mkdir -p "$W/ml/mods"
	head -n "$n" "$W/list" >"$W/ml/list"
	(cd "$W/stripped" && xargs -a "$W/ml/list" cp --parents -t "$W/ml/mods")
	log "ML-DSA in the Debian 13 root: $n modules"
	RELEASE_OUT=$W/ml "$REPO/tests/release/chroot.sh" trixie tests/bench/mldsa.sh --inside \
		"$n" "${BENCH_MLDSA_ROUNDS:-1}" "${BENCH_MLDSA_SECONDS:-3}" || die "ML-DSA in the Debian 13 root"
	[ -s "$W/ml/mldsa.md" ] || die "tests/bench/mldsa.sh wrote no section"
}

# Where one `modsign-client sign-file` of a mid-sized module spends its time.
breakdown() {
	local reps=100 mod i s e
	mod=$(median_module)
	BD_MOD=$(basename "$mod")
	BD_SIZE=$(stat -c %s "$W/stripped/$mod")
	rm -rf "$W/bd" && mkdir "$W/bd"
	for i in $(seq 1 $reps); do cp "$W/stripped/$mod" "$W/bd/c$i.ko"; cp "$W/stripped/$mod" "$W/bd/s$i.ko"; done
	export MODSIGN_SERVER=unix:$W/sock
	per() { calc %.2f "1000 * ($2 - $1) / $reps"; }
	s=$(now); for i in $(seq 1 $reps); do "$CLIENT" --version >/dev/null; done; e=$(now)
	BD_VERSION=$(per "$s" "$e")
	s=$(now); for i in $(seq 1 $reps); do "$EMPTY"; done; e=$(now)
	BD_EMPTY=$(per "$s" "$e")
	s=$(now); for i in $(seq 1 $reps); do "$CLIENT" sign-file sha256 modsign:rsa4096 "$W/rsa4096.crt" "$W/bd/c$i.ko"; done; e=$(now)
	BD_SIGN=$(per "$s" "$e")
	s=$(now); for i in $(seq 1 $reps); do "$SF" sha256 "$W/rsa4096.pem" "$W/rsa4096.crt" "$W/bd/s$i.ko"; done; e=$(now)
	BD_SF=$(per "$s" "$e")
	s=$(now); for i in $(seq 1 $reps); do sha256sum "$W/stripped/$mod" >/dev/null; done; e=$(now)
	BD_SHA=$(per "$s" "$e")
	s=$(now); for i in $(seq 1 $reps); do /bin/true; done; e=$(now)
	BD_TRUE=$(per "$s" "$e")
	"$CLIENT" verify --cert "$W/rsa4096.crt" "$W"/bd/*.ko >/dev/null 2>&1 || die "breakdown: verification"

	BD_CG=
	command -v valgrind >/dev/null || return 0
	cp "$W/stripped/$mod" "$W/bd/cg-c.ko"
	cp "$W/stripped/$mod" "$W/bd/cg-s.ko"
	cg() { # NAME COMMAND...: instructions, and the inclusive cost of some functions
		local name=$1
		shift
		valgrind --tool=callgrind --callgrind-out-file="$W/cg.$name" "$@" >/dev/null 2>"$W/cg.$name.err" ||
			die "callgrind $name"
		CG[$name]=$(awk '/Collected :/ {print $NF}' "$W/cg.$name.err")
		callgrind_annotate --inclusive=yes --threshold=100 "$W/cg.$name" 2>/dev/null >"$W/cg.$name.txt" || true
	}
	fn() { # NAME REGEX: summed inclusive Ir of the first matching line
		awk -v re="$2" '$0 ~ re { gsub(",", "", $1); print $1; exit }' "$W/cg.$1.txt"
	}
	cg version "$CLIENT" --version
	cg sign "$CLIENT" sign-file sha256 modsign:rsa4096 "$W/rsa4096.crt" "$W/bd/cg-c.ko"
	cg signfile "$SF" sha256 "$W/rsa4096.pem" "$W/rsa4096.crt" "$W/bd/cg-s.ko"
	local row n
	for row in "${CG_ROWS[@]}"; do
		for n in version sign signfile; do CGF[$n.${row%%|*}]=$(fn $n "${row#*|}"); done
	done
	BD_CG=yes
}

# Rows of the callgrind table: label|regex of the callgrind_annotate line.
CG_ROWS=(
	'dynamic loading and relocation (`_dl_start`)|:_dl_start \\['
	'static-pie self-relocation (`_dl_relocate_static_pie`)|:_dl_relocate_static_pie \\['
	'`main`|:main \\['
	'`OPENSSL_init_crypto`|:OPENSSL_init_crypto \\['
	'reading the certificate (`PEM_read_bio_X509`)|:PEM_read_bio_X509 \\['
	'reading the private key (`PEM_read_bio_PrivateKey`)|:PEM_read_bio_PrivateKey \\['
	'hashing the module (`SHA256_Update`, `digest_fd`)|:(SHA256_Update|digest_fd) \\['
	'RSA private key operation|:(RSA_sign|rsa_ossl_private_encrypt|RSA_private_encrypt) \\['
	'`OPENSSL_cleanup` at exit|:OPENSSL_cleanup \\['
)

# ---- the report -----------------------------------------------------------------

# How far below the highest of an algorithm's three openssl speed rates the
# lowest fell in this run, in percent.
spread() { # rsa2048|rsa4096|rsa4096p4|ecdsap384
	local a=$1
	awk -v x="${SPEED0[$a]}" -v y="${SPEED1[$a]:-${SPEED0[$a]}}" -v z="${SPEED2[$a]:-${SPEED0[$a]}}" \
		'BEGIN { hi = x; lo = x; if (y > hi) hi = y; if (z > hi) hi = z; if (y < lo) lo = y; if (z < lo) lo = z; printf "%.0f", 100 * (hi - lo) / hi }'
}

met() { awk "BEGIN { exit !($1) }" && echo "**met**" || echo "**not met**"; }

report() {
	local cpu date commit f
	cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n1)
	date=$(date -u '+%Y-%m-%d %H:%M UTC')
	commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')
	f=$W/report.md
	cat >"$f" <<EOF
# Performance

Written by \`make bench\` (\`tests/bench/run.sh\`); do not edit by hand, run
it again. The bench is not part of \`make check\`.

| | |
|---|---|
| date | $date |
| CPU | $cpu, $NPROC CPUs (\`lscpu\`) |
| kernel | $(uname -r) |
| OpenSSL | $(openssl version | cut -d' ' -f1-2) |
| modsign | commit $commit$(git -C "$REPO" diff --quiet HEAD -- lib modsign-client modsignd 2>/dev/null || echo ' with uncommitted changes in lib/, modsign-client/ or modsignd/') |
| modules | $N of Debian's $(cat "$B/fixtures/modules.stamp"), $MB MB, signatures stripped with \`modsign-client strip\` |
| load | other work on the machine during the run: see the note below |

Every run signs the same stripped copies (on tmpfs) with sha256 and is then
checked with \`modsign-client verify --cert\` over all files; any failure
stops the bench. The RSA runs of sign-file and of the modsign batch are also
compared byte for byte (RSA PKCS#1 v1.5 is deterministic). modsignd runs
with its default workers (one per CPU) and the file keys below, the same key
file for sign-file and for modsignd; the client talks to it over a UNIX
socket unless said otherwise.

EOF
	kbuild_report >>"$f"
	cat >>"$f" <<EOF

## The limit: \`openssl speed -seconds 3 -multi $NPROC\`, this run

Measured at the start of the run and just before and just after the batch
of that algorithm; other work on the machine can only lower the rate, so
the highest of the three is the limit the tables compare with. The host's
load moves it from minute to minute: in this run the lowest of the three
was $(spread rsa4096)% below the highest for RSA-4096, $(spread rsa4096p4)% for the
4-prime key.

| algorithm | at the start | before the batch | after the batch | limit, signatures/s on all $NPROC CPUs |
|---|---|---|---|---|
| RSA-2048 | ${SPEED0[rsa2048]} | ${SPEED1[rsa2048]} | ${SPEED2[rsa2048]} | ${LIMIT[rsa2048]} |
| RSA-4096 | ${SPEED0[rsa4096]} | ${SPEED1[rsa4096]} | ${SPEED2[rsa4096]} | ${LIMIT[rsa4096]} |
| RSA-4096, 4 primes (\`-primes 4\`) | ${SPEED0[rsa4096p4]} | ${SPEED1[rsa4096p4]} | ${SPEED2[rsa4096p4]} | ${LIMIT[rsa4096p4]} |
| ECDSA P-384 | ${SPEED0[ecdsap384]} | ${SPEED1[ecdsap384]} | ${SPEED2[ecdsap384]} | ${LIMIT[p384]} |

## Signing all modules

$([ "$NPP" != "$N" ] && echo "The one-process-per-module runs (sign-file and \`modsign-client sign-file\`) sign the first $NPP modules by path (\`BENCH_PERPROC_MODULES\`, to keep the bench within its time on a loaded machine); the batch signs all $N. The rates are compared.")

| key | how | modules/s | vs sign-file | vs openssl speed | verified |
|---|---|---|---|---|---|
$(cat "$W/main.md")
EOF
	cat >>"$f" <<EOF

The ceiling of the one-process-per-module rows: an empty statically linked
program started the same way (\`xargs -P $NPROC\`, one process per module;
the best of one run after each key's per-module runs) runs at $FLOOR/s, $(calc %.2fx "$FLOOR / ${RATE[rsa2048.a]}") sign-file's RSA-2048 rate and
$(calc %.2fx "$FLOOR / ${RATE[rsa4096.a]}") its RSA-4096 rate. No signer started once per module
can go faster here, whatever it does; the signing itself comes on top.
EOF
	cat >>"$f" <<EOF

Where the CPU goes, per module, in the one-process-per-module runs above
(busy time of all CPUs from \`/proc/stat\`, the daemon's from its
\`/proc/PID/stat\`; the machine is saturated in these runs, so CPU per module
decides the rate). "Any client" is what a signer whose client did nothing
but start would reach: the empty program plus this daemon's share.

| key | sign-file | modsign, all | of which modsignd | an empty process | the client's own work | any client, at best |
|---|---|---|---|---|---|---|
EOF
	local k l
	for k in rsa2048 rsa4096 rsa4096p4 p384; do
		case $k in rsa2048) l=RSA-2048 ;; rsa4096) l=RSA-4096 ;; rsa4096p4) l="RSA-4096, 4 primes" ;; *) l="ECDSA P-384" ;; esac
		[ -n "${CPU[$k.a]:-}" ] && [ -n "${CPU[$k.b]:-}" ] || continue
		echo "| $l | ${CPU[$k.a]} ms | ${CPU[$k.b]} ms | ${CPU[$k.daemon]} ms | ${CPU[$k.empty]} ms | $(calc %.2f "${CPU[$k.b]} - ${CPU[$k.daemon]} - ${CPU[$k.empty]}") ms | $(calc %.2fx "${CPU[$k.a]} / (${CPU[$k.empty]} + ${CPU[$k.daemon]})") sign-file |" >>"$f"
	done
	cat >>"$f" <<EOF

Started one at a time, the empty process costs ${CPU[empty1]} ms of CPU;
$NPROC at once, $(calc %.2f "(${CPU[rsa2048.empty]} + ${CPU[rsa4096.empty]}) / 2") ms each (the mean of the RSA-2048 and RSA-4096 rows above): on this
machine starting processes on all CPUs at once makes each start
$(calc %.0f%% "100 * ((${CPU[rsa2048.empty]} + ${CPU[rsa4096.empty]}) / 2 / ${CPU[empty1]} - 1)") dearer, which weighs more on a signer whose per-module cost is
mostly its process start.  One at a time, see the last section.
EOF
	cat >>"$f" <<EOF

"RSA-4096, 4 primes" is a multi-prime RSA key (RFC 8017; \`openssl genpkey
-pkeyopt rsa_keygen_primes:4\`, or modsignd's one-time \`ephemeral:rsa4096-4p\`):
four 1024-bit primes whose product is an ordinary 4096-bit modulus. The
certificate and the signatures are those of any RSA-4096 key (the kernel
checks them with the modulus and exponent only; sign-file's output is
byte for byte the same as modsign's), but \`openssl speed\` signs
$(calc %.1fx "${LIMIT[rsa4096p4]} / ${LIMIT[rsa4096]}") as many per second here. sign-file is given the same key
file; the limit is \`openssl speed -primes 4\`. See docs/SECURITY.md for
when such a key is not allowed (FIPS 186).
EOF
	if [ -n "$HSM_KEY" ]; then
		cat >>"$f" <<EOF

SoftHSM2 (RSA-4096 key made on a SoftHSM2 token, reached through p11-kit as
in \`tests/integration/hsm.bats\`): its limit column is OpenSSL's RSA-4096 rate,
which SoftHSM2 uses underneath.$([ -z "${RATE[hsm.a]}" ] && echo ' sign-file can reach a token only through OpenSSL'"'"'s pkcs11 engine (`libengine-pkcs11-openssl`), which is not installed, so the ratios marked * are to sign-file with the RSA-4096 file key.')
EOF
	else
		echo -e "\nSoftHSM2 is not installed: no token row." >>"$f"
	fi
	cat >>"$f" <<EOF

## Concurrent clients

$SWEEP_COUNT modules (the first $SWEEP_COUNT by path; a subset to keep the
bench short), split round-robin between K clients, each one
\`modsign-client sign\` batch over its share, all at once.

| clients | RSA-2048 modules/s | RSA-4096 modules/s |
|---|---|---|
EOF
	for k in 1 2 4 8 32; do echo "| $k | ${SWEEP[rsa2048.$k]} | ${SWEEP[rsa4096.$k]} |" >>"$f"; done
	cat >>"$f" <<EOF

## Daemon memory

modsignd with the keys above (and the TLS listener), after all the runs:
VmRSS $(calc %.1f "$RSS_BEFORE / 1024") MiB idle, $(calc %.1f "$RSS_64 / 1024") MiB with 64 idle
clients connected (a Python process holding 64 UNIX connections, each after
one \`status\` round trip; the daemon had $RSS_FDS open descriptors).

## TLS on loopback

RSA-2048 batch of all $N modules, one after the other in the same daemon:

| transport | modules/s |
|---|---|
| UNIX socket | $UNIX_RATE |
| mutual TLS on 127.0.0.1 | $TLS_RATE |
| TLS / UNIX | $(calc %.0f%% "100 * $TLS_RATE / $UNIX_RATE") |
EOF
	{ echo; tlog_report; } >>"$f"
	cat >>"$f" <<EOF

## One module, one process: where the time goes

\`$BD_MOD\` ($BD_SIZE bytes, the median size), RSA-4096, mean wall time of
100 runs one after the other (no parallelism). \`perf stat\` has no hardware
counters on this virtual machine, so instruction counts are from
\`valgrind --tool=callgrind\` (client process only: the daemon's signature
is not in them).

| step | ms |
|---|---|
| \`/bin/true\` (fork + exec of a trivial dynamically linked program) | $BD_TRUE |
| an empty statically linked program (fork + exec alone) | $BD_EMPTY |
| \`modsign-client --version\` (exec of the client) | $BD_VERSION |
| \`modsign-client sign-file\` (+ read, hash, connect, daemon's RSA-4096 signature, write, rename) | $BD_SIGN |
| \`sha256sum\` of the module (hashing alone, plus its own exec) | $BD_SHA |
| kernel \`sign-file\`, same module and key | $BD_SF |
| RSA-4096 signature alone (1 / per-CPU \`openssl speed\` rate) | $(calc %.2f "1000 * $NPROC / ${LIMIT[rsa4096]}") |

Derived: exec $(calc %.2f "$BD_VERSION") ms; the rest of the sign (read,
hash, connect, request, write, rename) $(calc %.2f "$BD_SIGN - $BD_VERSION") ms, of which the
daemon's signature is about $(calc %.2f "1000 * $NPROC / ${LIMIT[rsa4096]}") ms.
One module at a time, \`modsign-client sign-file\` is $(calc %.2fx "$BD_SF / $BD_SIGN") as fast
as sign-file with RSA-4096 (the per-module target is for $NPROC at once).
EOF
	if [ -n "$BD_CG" ]; then
		cat >>"$f" <<EOF

| callgrind, instructions | \`modsign-client --version\` | \`modsign-client sign-file\` | kernel \`sign-file\` |
|---|---|---|---|
| total | ${CG[version]} | ${CG[sign]} | ${CG[signfile]} |
EOF
		local row
		for row in "${CG_ROWS[@]}"; do
			echo "| ${row%%|*} | ${CGF[version.${row%%|*}]:--} | ${CGF[sign.${row%%|*}]:--} | ${CGF[signfile.${row%%|*}]:--} |" >>"$f"
		done
		cat >>"$f" <<EOF

(Inclusive costs from \`callgrind_annotate --inclusive=yes\`; "-" where the
function is not on the path. Under valgrind OpenSSL sees fewer CPU features,
so the SHA-256 and RSA counts are for its portable code.)
EOF
	fi
	cat >>"$f" <<'EOF'

Why the per-module client looks like this: kbuild starts the signing
command once per module, so a module costs a process start plus whatever
the program does before and after its one request: mapping and
relocating the shared libraries (`_dl_start`) and libcrypto's provider
start-up (`EVP_MD_fetch`, `OPENSSL_init_crypto`) come on top of the
request itself.  `modsign-client` is one dynamically linked program, as
Debian requires; a second, lean build for this path saved less than 10%
of it once linked dynamically too (see "One client or two" below).
EOF
	local r4b=${RATE[rsa4096.b]} r4a=${RATE[rsa4096.a]} r2b=${RATE[rsa2048.b]} r2a=${RATE[rsa2048.a]}
	local m4b=${RATE[rsa4096p4.b]} m4a=${RATE[rsa4096p4.a]} m4c=${RATE[rsa4096p4.c]}
	cat >>"$f" <<EOF

## Targets (issue 6)

| target | measured | |
|---|---|---|
| RSA-4096 batch ≥ 85% of \`openssl speed\` on all CPUs (the highest of the run's three; against the two around the batch: $(calc %.0f%% "100 * ${RATE[rsa4096.c]} / ${AROUND[rsa4096]}")) | $(calc %.0f%% "100 * ${RATE[rsa4096.c]} / ${LIMIT[rsa4096]}") | $(awk "BEGIN { exit !(${RATE[rsa4096.c]} > ${LIMIT[rsa4096]}) }" && echo "**undetermined**: the batch beat the measured limit, so \`openssl speed\` lost CPU to other work; not a valid limit in this run" || met "${RATE[rsa4096.c]} >= 0.85 * ${LIMIT[rsa4096]}") |
| RSA-4096 per-module path ≥ 2x sign-file | $(calc %.2fx "$r4b / $r4a") | $(met "$r4b >= 2 * $r4a") |
| (not a target: the per-module path with a 4-prime RSA-4096 key, sign-file with the same key; ≥ 2x?) | $(calc %.2fx "$m4b / $m4a") | $(met "$m4b >= 2 * $m4a") |
| (not a target: the 4-prime RSA-4096 batch vs \`openssl speed -primes 4\`; ≥ 85%?) | $(calc %.0f%% "100 * $m4c / ${LIMIT[rsa4096p4]}") | $(awk "BEGIN { exit !($m4c > ${LIMIT[rsa4096p4]}) }" && echo "**undetermined**: the batch beat the measured limit" || met "$m4c >= 0.85 * ${LIMIT[rsa4096p4]}") |
| RSA-2048 per-module path ≥ 3x sign-file | $(calc %.2fx "$r2b / $r2a") | $(met "$r2b >= 3 * $r2a") |
| (ceiling of any per-module path: an empty static program) | $(calc %.2fx "$FLOOR / $r2a") RSA-2048, $(calc %.2fx "$FLOOR / $r4a") RSA-4096 | |
| daemon RSS ≤ 32 MiB with 64 clients | $(calc %.1f "$RSS_64 / 1024") MiB | $(met "$RSS_64 <= 32768") |
| TLS on loopback ≥ 80% of UNIX (batch) | $(calc %.0f%% "100 * $TLS_RATE / $UNIX_RATE") | $(met "$TLS_RATE >= 0.8 * $UNIX_RATE") |

## Note on noise

The machine is a $NPROC-CPU virtual machine. Load average at the start of
the run: $LOAD_START; at the end: $(cut -d' ' -f1-3 /proc/loadavg). Other
work (test suites, kernel builds) may have shared the CPUs, so compare the
ratios within one run rather than the absolute rates between runs.
EOF
	# "One client or two" is written from tests/bench/client-variants.sh,
	# "Replayed ClientHellos" from tests/bench/hello-flood.sh, "Sign
	# window and group commit" by hand, the ML-DSA, PKCS#11 module and
	# one-call sections by their BENCH_*_ONLY runs, not by this run:
	# carry them over.
	[ -f "$OUT" ] && awk '/^## / {on = /^## (One client or two|Replayed ClientHellos|Sign window and group commit|ML-DSA|The PKCS#11 module path|One call of the per-module path|Where the batch.s time goes)/; if (on) print ""} on' "$OUT" >>"$f"
	mkdir -p "$(dirname "$OUT")"
	cp "$f" "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
	log "wrote $OUT"
}

# BENCH_KBUILD_ONLY: the kbuild view alone, its section put first in place
# of the one BENCH_OUT has (the other sections are kept as they are).
kbuild_only() {
	local f=$W/report.md
	make_key rsa2048 -newkey rsa:2048
	make_key rsa4096 -newkey rsa:4096
	kbuild_view
	[ -n "$KB_DONE" ] || die "$KBUILD_NOTE"
	kbuild_report >"$W/kbuild.md"
	[ -f "$OUT" ] || die "no $OUT to put the kbuild section in"
	awk -v sec="$W/kbuild.md" '
		/^## / && !done { while ((getline l < sec) > 0) print l; print ""; done = 1 }
		/^## / { skip = /^## The kbuild view/ }
		!skip' "$OUT" >"$f"
	cp "$f" "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
	log "wrote the kbuild section of $OUT"
}

main() {
	local s0
	s0=$(now)
	LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
	PORT=$((20000 + RANDOM % 20000))
	prepare_modules
	if [ -n "${BENCH_TLOG_ONLY:-}" ]; then
		tlog_only
		log "done in $(calc %.0f "$(now) - $s0") s"
		return
	fi
	if [ -n "${BENCH_MLDSA_ONLY:-}" ]; then
		mldsa_view
		put_section "$W/ml/mldsa.md"
		log "done in $(calc %.0f "$(now) - $s0") s"
		return
	fi
	if [ -n "${BENCH_PKCS11_ONLY:-}" ] || [ -n "${BENCH_PERCALL_ONLY:-}" ]; then
		modpath_only
		log "done in $(calc %.0f "$(now) - $s0") s"
		return
	fi
	if [ -n "${BENCH_KBUILD_ONLY:-}" ]; then
		kbuild_only
		log "done in $(calc %.0f "$(now) - $s0") s"
		return
	fi
	make_key rsa2048 -newkey rsa:2048
	make_key rsa4096 -newkey rsa:4096
	make_key rsa4096p4 -newkey rsa:4096 -pkeyopt rsa_keygen_primes:4
	make_key p384 -newkey ec -pkeyopt ec_paramgen_curve:secp384r1
	make_hsm
	make_pki
	start_bench_daemon
	export MODSIGN_SERVER=unix:$W/sock
	openssl_limits
	: >"$W/main.md"
	main_runs rsa2048 RSA-2048
	main_runs rsa4096 RSA-4096
	main_runs rsa4096p4 "RSA-4096, 4 primes"
	main_runs p384 "ECDSA P-384"
	[ -n "$HSM_KEY" ] && main_runs hsm "SoftHSM2 RSA-4096"
	floor_serial
	declare -gA SWEEP
	SWEEP_COUNT=$(wc -l <"$W/sweep.list")
	sweep rsa2048
	sweep rsa4096
	tls_vs_unix
	tlog_on_off
	rss_64
	kbuild_view
	declare -gA CG CGF
	breakdown
	report
	# The sections the BENCH_*_ONLY runs write alone, each in place of the
	# one carried over from the last run; BENCH_NO_MLDSA=1 keeps that one.
	BENCH_PKCS11_ONLY=1 BENCH_PERCALL_ONLY=1 modpath_only
	[ -n "${BENCH_NO_MLDSA:-}" ] || { mldsa_view && put_section "$W/ml/mldsa.md"; }
	log "done in $(calc %.0f "$(now) - $s0") s"
}

main "$@"
