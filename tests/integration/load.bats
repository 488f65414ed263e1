#!/usr/bin/env bats
# Load: 64 clients at once, 10,240 signatures against one daemon (one-time
# ECDSA P-256 key: signing cost stays small, the daemon's loop, queue and
# memory are what is measured).  Every signature verifies, every one is
# audited, and the daemon's memory does not grow between the first round
# and the last.  Then the same over mutual TLS on loopback: 16 builders
# at once, three rounds.
#
# The load runs once for the file (setup_file), against one daemon per
# transport: it is the flood that every case reads (its failures, its
# audit lines, its signed modules, the daemon's RSS between rounds), and
# thousands of signatures per case would make the suite many times slower
# for nothing.  setup_file only records what happened (in $F/*.result);
# each case asserts on its part, and a tampered twin flips bytes in its
# own copy in $T.  The names give the default sizes (LOAD_CLIENTS,
# LOAD_MODULES, LOAD_ROUNDS, LOAD_TLS_CLIENTS change them).

load ../common

# round DIR TAG N CLIENT...: clients 1..N sign their modules in DIR/cI at
# once, each with CLIENT...; prints the number of clients that failed.
round() {
	local dir=$1 tag=$2 n=$3 pids=() bad=0 i p
	shift 3
	for i in $(seq 1 "$n"); do
		"$@" sign "$dir/c$i"/*.ko 2>>"$dir/err.$tag" 3>&- &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
	echo "$bad"
}
max() { echo $(($1 > $2 ? $1 : $2)); }
# copies DIR N: N clients' directories of unsigned modules under DIR
copies() {
	local i
	for i in $(seq 1 "$2"); do
		mkdir -p "$1/c$i"
		cp "$F"/orig/*.ko "$1/c$i"
	done
}

# The unix socket run: ROUNDS rounds of CLIENTS clients.
unix_load() {
	local D=$F/unix bad start
	mkdir "$D"
	T=$D
	start_daemon "$D/sock" --key default=ephemeral:ecdsa-p256 || return 1
	echo "$DAEMON_PID" >"$F/daemon.pid"
	"$C" --server "unix:$D/sock" cert >"$D/cert.pem"
	copies "$D" "$CLIENTS"
	start=$(date +%s.%N)
	# The working set is taken as the larger RSS after rounds 1 and 2: how
	# many requests overlap at the peak depends on scheduling, so one round
	# alone can fall short of it.
	bad=$(round "$D" 1 "$CLIENTS" "$C" --server "unix:$D/sock")
	rss_before=$(rss)
	bad=$((bad + $(round "$D" 2 "$CLIENTS" "$C" --server "unix:$D/sock")))
	rss_before=$(max "$rss_before" "$(rss)")
	for r in $(seq 3 "$ROUNDS"); do
		bad=$((bad + $(round "$D" "$r" "$CLIENTS" "$C" --server "unix:$D/sock")))
	done
	rss_after=$(rss)
	status_rc=0
	"$C" --server "unix:$D/sock" status >"$D/status.out" 2>&1 || status_rc=$?
	stop_daemon "$DAEMON_PID"
	cat >"$F/unix.result" <<-EOF
	bad=$bad
	rss_before=$rss_before
	rss_after=$rss_after
	status_rc=$status_rc
	secs=$(echo "$(date +%s.%N) - $start" | bc)
	EOF
}

# The mutual TLS run: three rounds of TLS_CLIENTS builders.
tls_load() {
	local D=$F/tls bad port
	mkdir "$D"
	T=$D
	(cd "$D" && pki load-ca &&
		issue_server load-host load-ca IP:127.0.0.1 && issue load-builder load-ca) || return 1
	port=$(free_port)
	start_daemon "$D/tsock" --listen "tls:127.0.0.1:$port" --key default=ephemeral:ecdsa-p256 \
		--tls-cert "$D/load-host.crt" --tls-key "$D/load-host.key" --tls-client-ca "$D/load-ca.crt" \
		--allow cn:load-builder || return 1
	echo "$DAEMON_PID" >"$F/tdaemon.pid"
	wait_port "$port" || return 1
	TC=("$C" --server "tls:127.0.0.1:$port" --tls-ca "$D/load-ca.crt"
		--tls-cert "$D/load-builder.crt" --tls-key "$D/load-builder.key")
	"${TC[@]}" cert >"$D/tcert.pem"
	copies "$D" "$TLS_CLIENTS"
	bad=$(round "$D" 1 "$TLS_CLIENTS" "${TC[@]}")
	rss_before=$(rss)
	copies "$D" "$TLS_CLIENTS"
	bad=$((bad + $(round "$D" 2 "$TLS_CLIENTS" "${TC[@]}")))
	rss_before=$(max "$rss_before" "$(rss)")
	copies "$D" "$TLS_CLIENTS"
	bad=$((bad + $(round "$D" 3 "$TLS_CLIENTS" "${TC[@]}")))
	rss_after=$(rss)
	stop_daemon "$DAEMON_PID"
	cat >"$F/tls.result" <<-EOF
	bad=$bad
	rss_before=$rss_before
	rss_after=$rss_after
	EOF
}

setup_file() {
	export F=$BATS_FILE_TMPDIR
	export CLIENTS=${LOAD_CLIENTS:-64}
	export PER_CLIENT=${LOAD_MODULES:-40}
	ROUNDS=${LOAD_ROUNDS:-4}
	[ "$ROUNDS" -ge 3 ] || ROUNDS=3 # two to find the working set, one to compare
	export ROUNDS
	export TOTAL=$((CLIENTS * PER_CLIENT * ROUNDS))
	export TLS_CLIENTS=${LOAD_TLS_CLIENTS:-16}
	export TLS_TOTAL=$((TLS_CLIENTS * PER_CLIENT * 3))
	DAEMON_PIDS=()

	# Small real modules: the client's hashing and writing stay cheap.
	find "$FIX/modules" -name '*.ko' -size -24k | sort | head -n "$PER_CLIENT" >"$F/mods"
	mkdir "$F/orig"
	xargs cp -t "$F/orig" <"$F/mods"
	"$C" strip "$F"/orig/*.ko # Debian's modules come signed: keep the bodies
	unix_load
	tls_load
}

teardown_file() {
	local f
	for f in "$BATS_FILE_TMPDIR/daemon.pid" "$BATS_FILE_TMPDIR/tdaemon.pid"; do
		[ -e "$f" ] && stop_daemon "$(cat "$f")"
	done
	return 0
}

setup() {
	case_setup
	U=$F/unix
	TD=$F/tls
}

audited_ok() { # DIR: the signatures the daemon of DIR audited as ok
	grep -cE 'audit: .*(result="ok"|"result":"ok")' "$1/modsignd.log" || true; }
# unverified CERT DIR N: how many of clients 1..N in DIR hold a module that does not verify
unverified() {
	local bad=0 i
	for i in $(seq 1 "$3"); do
		"$C" verify --cert "$1" "$2/c$i"/*.ko >/dev/null 2>>"$T/verify.err" || bad=$((bad + 1))
	done
	echo "$bad"
}
# The daemon's RSS may grow by 5% or 1 MiB (allocator noise), no more.
rss_limit() { echo $(($1 + ($1 / 20 > 1024 ? $1 / 20 : 1024))); }

# ---- the unix socket run --------------------------------------------------------
@test "load-64-clients-all-succeed" {
	. "$F/unix.result"
	[ "$bad" -eq 0 ] || { echo "$bad of $CLIENTS clients failed; $TOTAL signatures in $secs s"; tail -n 3 "$U"/err.*; false; }
}

@test "load-every-signature-audited" {
	n=$(audited_ok "$U")
	assert_equal "$n" "$TOTAL"
}

@test "load-no-failed-signature-audited" {
	run grep -E 'audit: .*(result="(signing failed|client gone)"|"result":"(signing failed|client gone)")' "$U/modsignd.log"
	assert_failure
}

# Every module verifies (the client by the kernel's rules); a sample also
# through openssl from the module's own bytes.
@test "load-every-module-verifies" {
	vbad=$(unverified "$U/cert.pem" "$U" "$CLIENTS")
	[ "$vbad" -eq 0 ] || { echo "$vbad of $CLIENTS clients hold a module that does not verify"; tail -n 3 verify.err; false; }
}

@test "load-sample-openssl-verifies-and-body-intact" {
	obad=0
	for f in $(ls "$U"/c*/*.ko | shuf -n 20 --random-source=<(yes)); do
		split_module "$f" s.body s.p7
		openssl cms -verify -binary -inform DER -in s.p7 -content s.body -certfile "$U/cert.pem" \
			-nointern -noverify -out /dev/null 2>/dev/null || { obad=$((obad + 1)); echo "does not verify: $f"; }
		cmp -s s.body "$F/orig/$(basename "$f")" || { obad=$((obad + 1)); echo "body differs: $f"; }
	done
	assert_equal "$obad" 0
}

# Tampered twins: one flipped byte in one module (a copy of client 7's),
# one module missing from the audit count.
@test "load-tampered-module-fails-verify" {
	cp -r "$U/c7" c7
	flip_bit_at "$(ls c7/*.ko | head -n1)" 3000
	run "$C" verify --cert "$U/cert.pem" c7/*.ko
	assert_failure
}

@test "load-audit-count-would-notice-a-missing-line" {
	n=$(audited_ok "$U")
	[ "$((n - 1))" -ne "$TOTAL" ]
}

# Memory: after the first two rounds the daemon has its working set;
# 5,120 more signatures later it must hold no more (5% or 1 MiB of slack
# for allocator noise).
@test "load-daemon-rss-does-not-grow" {
	. "$F/unix.result"
	limit=$(rss_limit "$rss_before")
	[ "$rss_after" -le "$limit" ] ||
		{ echo "after rounds 1-2: $rss_before KiB, after $TOTAL: $rss_after KiB, limit $limit"; false; }
}

@test "load-daemon-still-answers" {
	. "$F/unix.result"
	assert_equal "$status_rc" 0 || cat "$U/status.out"
}

@test "load-daemon-exits-cleanly" {
	run grep -q "one-time keys destroyed" "$U/modsignd.log"
	assert_success
}

# ---- the same over mutual TLS on loopback --------------------------------------
@test "tls-load-16-builders-all-succeed" {
	. "$F/tls.result"
	[ "$bad" -eq 0 ] || { echo "$bad client runs of $((TLS_CLIENTS * 3)) failed"; tail -n 3 "$TD"/err.*; false; }
}

@test "tls-load-every-signature-audited" {
	n=$(audited_ok "$TD")
	assert_equal "$n" "$TLS_TOTAL"
}

@test "tls-load-audit-names-the-builder" {
	run grep -q "load-builder" "$TD/modsignd.log"
	assert_success
}

@test "tls-load-every-module-verifies" {
	vbad=$(unverified "$TD/tcert.pem" "$TD" "$TLS_CLIENTS")
	[ "$vbad" -eq 0 ] || { echo "$vbad of $TLS_CLIENTS builders hold a module that does not verify"; tail -n 3 verify.err; false; }
}

@test "tls-load-tampered-module-fails-verify" {
	cp -r "$TD/c3" c3
	flip_bit_at "$(ls c3/*.ko | head -n1)" 3000
	run "$C" verify --cert "$TD/tcert.pem" c3/*.ko
	assert_failure
}

@test "tls-load-daemon-rss-does-not-grow" {
	. "$F/tls.result"
	limit=$(rss_limit "$rss_before")
	[ "$rss_after" -le "$limit" ] ||
		{ echo "after rounds 1-2: $rss_before KiB, after 3: $rss_after KiB, limit $limit"; false; }
}
