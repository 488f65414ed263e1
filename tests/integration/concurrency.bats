#!/usr/bin/env bats
# Many clients at once, many requests on one connection, and SIGTERM
# letting in-flight requests finish; then batch inputs and progress.
# Each case has its own daemon (one-time keys: cheap to make) and its own
# copies of the modules, but for the SIGTERM cases (see setup_file).

load ../common

# two_keys: a daemon with an RSA and an EC key, their certificates in
# rsa.pem and ec.pem, and 200 real modules in m/ (unique names: different
# directories hold modules of the same name), listed in $T/list.
two_keys() {
	start_daemon "$T/sock" --key default=ephemeral:rsa2048 --key ec=ephemeral:ecdsa-p384
	export MODSIGN_SERVER=unix:$T/sock
	"$C" cert >"$T/rsa.pem"
	"$C" cert --key ec >"$T/ec.pem"
	modules_once 200 "$T/m"
	ls "$T"/m/*.ko >"$T/list"
}

# modules_once N DIR: DIR gets the first N real modules under names of
# their own (copy_modules), copied from this file's one set of them, made
# by the first case that asks.
modules_once() {
	local src=$BATS_FILE_TMPDIR/src-$1
	if [ ! -d "$src" ]; then
		mkdir "$src.new" && copy_modules "$1" "$src.new" &&
			[ "$(ls "$src.new" | wc -l)" -eq "$1" ] && mv "$src.new" "$src"
	fi
	cp -a "$src" "$2"
}

# concurrent_sign: 16 processes signing different modules at the same
# time, both keys; $bad is how many of them failed.
concurrent_sign() {
	local p pids=() i=0 key
	split -n l/16 "$T/list" "$T/part."
	for p in "$T"/part.*; do
		key=$([ $((i % 2)) -eq 0 ] && echo default || echo ec)
		"$C" sign --key $key $(cat "$p") 2>>"$T/err" 3>&- &
		pids+=($!)
		i=$((i + 1))
	done
	bad=0
	for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
}

@test "16-concurrent-clients-all-succeed" {
	two_keys
	concurrent_sign
	assert_equal "$bad" 0
}

@test "concurrent-signatures-all-verify" {
	local rsa ec
	two_keys
	concurrent_sign
	# Half the processes signed with each key: what the RSA certificate
	# does not verify, the EC one must.
	verdicts "$T/rsa.pem" $(cat "$T/list") >"$T/v.rsa"
	awk '$1 == "fail" { print $3 }' "$T/v.rsa" >"$T/not-rsa"
	verdicts "$T/ec.pem" $(cat "$T/not-rsa") >"$T/v.ec"
	grep '^fail' "$T/v.ec" || true
	rsa=$(grep -c '^ok' "$T/v.rsa" || true)
	ec=$(grep -c '^ok' "$T/v.ec" || true)
	assert_equal "$((rsa + ec))" 200
}

# One connection, 200 requests in flight: the daemon log shows one peer pid.
batch() {
	two_keys
	"$C" sign --hash sha512 $(cat "$T/list")
}

@test "batch-verifies" {
	batch
	run "$C" verify --cert "$T/rsa.pem" $(cat "$T/list")
	assert_success
}

@test "batch-uses-one-connection" {
	batch
	# client pids seen in the audit of the 200 requests
	assert_equal "$(grep '"hash":"sha512"' "$T/modsignd.log" | grep -o 'pid=[0-9]*' | sort -u | wc -l)" 1
}

@test "batch-audited-every-module" {
	batch
	assert_equal "$(grep -c '"hash":"sha512"' "$T/modsignd.log")" 200
}

# SIGTERM mid-batch: requests in flight finish, then the daemon exits; the
# client names every module it did not sign, and none is damaged.
#
# One signal for the six cases below (setup_file): how far the batch got
# differs from run to run, and the cases must read the same run, so that
# exactly one of the two exit-status cases applies.  setup_file puts what
# they read in $BATS_FILE_TMPDIR: the daemon's tree (T) and sigterm.vars.
setup_file() {
	T=$BATS_FILE_TMPDIR
	DAEMON_PIDS=()
	sigterm_batch >"$T/sigterm.summary"
	echo "crc=$crc drc=$drc signed=$signed untouched=$untouched damaged=$damaged" >"$T/sigterm.vars"
}

teardown_file() {
	[ -s "$BATS_FILE_TMPDIR/daemon.pid" ] && stop_daemon "$(cat "$BATS_FILE_TMPDIR/daemon.pid")"
	true
}

# sigterm_batch: the signal goes once the first module of the batch is
# signed, not after a fixed sleep, which on a slow machine can come before
# the client has connected.  Sets $crc (the client's exit), $drc (the
# daemon's), and counts the modules $signed, $untouched and $damaged.
sigterm_batch() {
	local cpid end
	two_keys
	echo "$DAEMON_PID" >"$T/daemon.pid"
	cp -a "$T/m" "$T/before"
	touch "$T/term.stamp" # after the copies: only modules written later are newer
	"$C" sign --key default --hash sha384 $(cat "$T/list") 2>"$T/term.err" 3>&- &
	cpid=$!
	# Polled every 10 ms, not with eventually's 100: the batch must still
	# be under way when the signal comes.
	end=$(($(date +%s) + 30))
	until [ -n "$(find "$T/m" -name '*.ko' -newer "$T/term.stamp" -print -quit)" ] ||
		[ "$(date +%s)" -gt "$end" ]; do
		sleep 0.01
	done
	kill -TERM "$DAEMON_PID"
	crc=0
	wait "$cpid" || crc=$?
	drc=0
	wait "$DAEMON_PID" || drc=$?
	: >"$T/daemon.pid"
	# Each module as it was, or signed by this batch (sha384), or damaged
	# (anything else, a module gone included).
	(cd "$T/before" && sha256sum -- *.ko) | (cd "$T/m" && sha256sum -c - 2>/dev/null) >"$T/same" || true
	untouched=$(grep -c ': OK$' "$T/same" || true)
	grep -v ': OK$' "$T/same" | sed 's/: FAILED.*$//' >"$T/changed" || true
	signed=0
	[ ! -s "$T/changed" ] ||
		signed=$(cd "$T/m" && verdicts "$T/rsa.pem" $(cat "$T/changed") | grep -c '^ok sha384 ' || true)
	damaged=$((200 - untouched - signed))
	echo "$signed signed, $untouched untouched, $damaged damaged; client exit $crc, daemon exit $drc"
}

# sigterm_result: the shared run's results, and its summary for a failing
# case's output.
sigterm_result() {
	F=$BATS_FILE_TMPDIR
	. "$F/sigterm.vars"
	cat "$F/sigterm.summary"
	[ -n "$untouched" ] # (the run left its results)
}

@test "daemon-exits-0-on-sigterm" {
	sigterm_result
	assert_equal "$drc" 0
}

@test "sigterm-no-module-damaged" {
	sigterm_result
	assert_equal "$damaged" 0
}

# The next two apply when the signal left modules unsigned, the third
# when the daemon had finished the whole batch before it: that one skips
# (or they do).
@test "sigterm-client-exits-nonzero" {
	sigterm_result
	[ "$untouched" -gt 0 ] || skip "every module was signed before the signal"
	[ "$crc" -ne 0 ]
}

@test "sigterm-client-names-unsigned" {
	sigterm_result
	[ "$untouched" -gt 0 ] || skip "every module was signed before the signal"
	named=$(grep -c 'not signed' "$F/term.err")
	[ "$named" -ge "$untouched" ] || { echo "$named named"; false; }
}

@test "sigterm-client-exits-zero-when-all-signed" {
	sigterm_result
	[ "$untouched" -eq 0 ] || skip "not every module was signed before the signal"
	assert_equal "$crc" 0
}

@test "no-temp-files-left" {
	sigterm_result
	run bash -c "ls -a '$F/m' | grep modsign-"
	assert_failure
}

# ---- batch inputs and progress ------------------------------------------
# make_tree: a daemon with one key (its certificate in rsa2.pem) and a tree of
# 15 modules in two directories, a file that is not a module, and a link
# to a directory.
make_tree() {
	local m
	start_daemon "$T/sock2" --key default=ephemeral:rsa2048
	export MODSIGN_SERVER=unix:$T/sock2
	"$C" cert >"$T/rsa2.pem"
	mkdir -p "$T/tree/a/b" "$T/tree/c"
	for m in $(real_modules 12); do cp "$m" "$T/tree/a/b/"; done
	for m in $(real_modules 3); do cp "$m" "$T/tree/c/x-$(basename "$m")"; done
	echo "not a module" >"$T/tree/c/README"
	ln -s "$T/tree/c" "$T/tree/link"
}

stripped_tree() {
	make_tree
	"$C" strip $(find "$T/tree" -name '*.ko')
}

@test "recursive-signs-tree" {
	make_tree
	run "$C" sign --recursive "$T/tree"
	assert_success
}

@test "recursive-all-verify" {
	make_tree
	"$C" sign --recursive "$T/tree"
	run "$C" verify --cert "$T/rsa2.pem" $(find "$T/tree" -name '*.ko')
	assert_success
}

@test "recursive-skips-other-files" {
	make_tree
	"$C" sign --recursive "$T/tree"
	run grep -q "not a module" "$T/tree/c/README"
	assert_success
}

@test "recursive-does-not-follow-links" {
	make_tree
	"$C" sign --recursive "$T/tree"
	# The audit's JSON writes '/' as '\/': unescaped first, or this could
	# never match (concurrency.sh's grep never did).
	assert_equal "$(sed 's|\\/|/|g' "$T/modsignd.log" | grep -c "\"module\":\"$T/tree/link/")" 0
}

@test "stdin-signs-listed" {
	stripped_tree
	find "$T/tree" -name '*.ko' >"$T/listed"
	run "$C" sign --stdin <"$T/listed"
	assert_success
}

@test "stdin-all-verify" {
	stripped_tree
	find "$T/tree" -name '*.ko' | "$C" sign --stdin
	run "$C" verify --cert "$T/rsa2.pem" $(find "$T/tree" -name '*.ko')
	assert_success
}

@test "dash-reads-stdin" {
	stripped_tree
	find "$T/tree/a" -name '*.ko' >"$T/listed"
	run "$C" sign - <"$T/listed"
	assert_success
}

@test "dash-left-others-unsigned" {
	stripped_tree
	find "$T/tree/a" -name '*.ko' | "$C" sign -
	run "$C" verify --cert "$T/rsa2.pem" $(find "$T/tree/c" -name '*.ko')
	assert_failure
}

# Progress on a terminal, not on a pipe.
@test "progress-on-terminal" {
	stripped_tree
	script -qfec "$C sign -r '$T/tree'" /dev/null >"$T/tty.out" 2>&1
	run grep -q "signed 15/15" "$T/tty.out"
	assert_success
}

@test "no-progress-on-pipe" {
	stripped_tree
	"$C" sign -r "$T/tree" 2>"$T/pipe.err" | cat
	run grep -q "signed" "$T/pipe.err"
	assert_failure
}

# kbuild's batch call over a pool of two servers, up to 1024 requests in
# flight on each, `sign-file --batch -p` holding three descriptors per
# module in flight: past a soft limit of 1024 descriptors, which the
# client raises to the hard limit.  A hard limit of 1024 too: the window
# shrinks to what it holds, and every module is signed (on b52612d the
# modules that could not be opened failed).  Twin: a limit below what
# even one module per server needs: the modules are named, each is whole
# or untouched.
pool_fd_setup() {
	make_pem_key "$T/k.pem" rsa:2048
	openssl x509 -in "$T/k.pem" -outform DER -out "$T/k.der"
	start_daemon "$T/s1" --key "default=$T/k.pem"
	start_daemon "$T/s2" --key "default=$T/k.pem"
	modules_once 1500 "$T/m"
	"$C" strip "$T"/m/*.ko 2>/dev/null || true
	cp -a "$T/m" "$T/orig"
	ls "$T"/m/*.ko >"$T/list"
}


@test "pool-batch-past-1024-descriptors-soft-limit-raised" {
	pool_fd_setup
	run bash -c 'ulimit -S -n 1024 && "$0" --server "unix:$1/s1" --server "unix:$1/s2" sign-file --batch -p sha256 modsign:default "$1/k.der" <"$1/list"' "$C" "$T"
	assert_success
	run "$C" verify --cert "$T/k.der" $(cat "$T/list")
	assert_success
	assert_equal "$(ls "$T"/m/*.ko.p7s | wc -l)" 1500
}

@test "pool-batch-hard-limit-1024-window-shrinks-all-signed" {
	pool_fd_setup
	run bash -c 'ulimit -n 1024 && "$0" --server "unix:$1/s1" --server "unix:$1/s2" sign-file --batch -p sha256 modsign:default "$1/k.der" <"$1/list"' "$C" "$T"
	assert_success
	refute_output --partial "Too many open files"
	run "$C" verify --cert "$T/k.der" $(cat "$T/list")
	assert_success
	assert_equal "$(ls "$T"/m/*.ko.p7s | wc -l)" 1500
}

@test "pool-batch-limit-below-one-module-per-server-named" {
	pool_fd_setup
	run bash -c 'ulimit -n 12 && "$0" --server "unix:$1/s1" --server "unix:$1/s2" sign-file --batch -p sha256 modsign:default "$1/k.der" <"$1/list"' "$C" "$T"
	assert_failure
	assert_output --partial "Too many open files"
	# Each module is signed and verifies, or is untouched.
	verdicts "$T/k.der" $(cat "$T/list") >"$T/v"
	assert_equal "$(wc -l <"$T/v")" 1500
	awk '$1 == "fail" { sub(".*/", "", $3); print $3 }' "$T/v" >"$T/unsigned"
	[ -s "$T/unsigned" ]
	run bash -c 'cd "$1/orig" && sha256sum -- $(cat "$1/unsigned") | (cd "$1/m" && sha256sum -c --quiet -)' _ "$T"
	assert_success
}
