#!/usr/bin/env bats
# A signing farm, tested as one: every host a network namespace of its
# own with an address on one bridge (198.18.0.0/24, inside the
# benchmarking range 198.18.0.0/15; no address of the machine's own
# network is touched), the builder's /etc/hosts (ip netns exec reads
# /etc/netns/NAME/hosts) giving the signing service one name,
# sign.farm.test, with one address per signing host:
#
#   builder 198.18.0.10 ──┐            ┌── sign-1 198.18.0.1  modsignd
#                         ├── bridge ──┼── sign-2 198.18.0.2  modsignd
#                         │            ├── sign-3 198.18.0.3  modsignd
#                         │            ├── rogue  198.18.0.9  modsignd, a CA
#                         │            │                      the builder does not trust
#                         │            └── hsm    198.18.0.100 p11-kit server over a
#                         │                                   SoftHSM2 token, on TCP 5555
#
# Each signing host runs modsignd with mutual TLS, the same RSA-4096 key
# and its own audit log and metrics file.  The key is a PEM file on each
# host, or (the hsm cases) the token's, reached through p11-kit-client.so
# over the host's socket forwarded to the HSM host (socat in place of
# the SSH forwarding p11-kit documents for remote hosts).  Each case builds the
# namespaces and starts the daemons it needs, and tears all of it down,
# on failure too.  Each failure case has its twin.

load ../common

SOFTHSM=/usr/lib/softhsm/libsofthsm2.so
P11_CLIENT=/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so

p11() { pkcs11-tool --module "$SOFTHSM" --token-label modsign --login --pin 1234 "$@" >/dev/null 2>&1; }

setup_file() {
	local P=$BATS_FILE_TMPDIR/pki

	mkdir "$P"
	cd "$P" || return 1
	pki farm-ca
	pki rogue-ca
	for n in 1 2 3; do
		issue_server "sign-$n" farm-ca "DNS:sign.farm.test,DNS:sign-$n.farm.test"
	done
	issue_server rogue rogue-ca DNS:sign.farm.test
	issue builder farm-ca
	# One key for the farm, the kind a distribution signs with: RSA-4096
	# is slow enough (about 100 signatures/s on this machine) that a batch
	# is still running when a host is killed.
	make_pem_key "$P/farm-key.pem" rsa:4096 "modsign farm key"
	# 400 real modules, unsigned, and their reference signatures: the
	# same modules signed by one daemon alone, which a farm's output must
	# equal byte for byte (RSA signatures are deterministic).  Made once:
	# cases only copy them.
	mkdir "$P/unsigned" "$P/ref"
	real_modules 400 | xargs cp -t "$P/unsigned/"
	"$C" strip "$P"/unsigned/*.ko >/dev/null
	cp "$P"/unsigned/*.ko "$P/ref/"
	# The HSM: a SoftHSM2 token holding the same key (imported), so that
	# its signatures are the reference's too.  Cases copy it.
	mkdir "$P/tokens"
	softhsm_conf "$P"
	SOFTHSM2_CONF=$P/softhsm2.conf softhsm2-util --init-token --free --label modsign \
		--so-pin 0000 --pin 1234 >/dev/null || return 1
	openssl pkey -in "$P/farm-key.pem" -outform der -out "$P/farm-key.der"
	openssl x509 -in "$P/farm-key.pem.crt" -outform der -out "$P/farm-key.crt.der"
	SOFTHSM2_CONF=$P/softhsm2.conf p11 --write-object "$P/farm-key.der" --type privkey --id 01 --label farm &&
		SOFTHSM2_CONF=$P/softhsm2.conf p11 --write-object "$P/farm-key.crt.der" --type cert --id 01 --label farm ||
		return 1
	T=$BATS_FILE_TMPDIR
	DAEMON_PIDS=()
	start_daemon "$T/ref.sock" --key "default=$P/farm-key.pem" || return 1
	"$C" --server "unix:$T/ref.sock" sign "$P"/ref/*.ko
	stop_daemon "$DAEMON_PID"
}

setup() {
	case_setup
	P=$BATS_FILE_TMPDIR/pki
	TAG=$(printf '%04x' $((RANDOM % 65536)))
	GROUPS_TO_KILL=()
	farm_net_up "$TAG" || return 1
	host builder 198.18.0.10
	hosts_file builder 198.18.0.1 198.18.0.2 198.18.0.3
}

teardown() {
	local p ns

	for p in "${DAEMON_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; done
	for p in "${GROUPS_TO_KILL[@]}"; do kill -- "-$p" 2>/dev/null; done
	farm_net_down
	case_teardown
}

# host NAME ADDR, hosts_file NAME ADDR...: tests/helpers.sh's farm_host
# and farm_hosts_file (the builder's sign.farm.test has every ADDR).
host() { farm_host "$@"; }
hosts_file() { farm_hosts_file "$@"; }

# signer N ADDR [CERT]: host sign-N at ADDR running modsignd on
# tls:ADDR:7787 with the farm key and its own audit log, audit-N.jsonl;
# its pid in PID_N.  CERT (default sign-N) is the TLS certificate it shows.
signer() {
	local n=$1 addr=$2 cert=${3:-sign-$1}
	host "s$n" "$addr" || return 1
	# modsignd_start runs "$MODSIGND" ARGS: here ip, which execs modsignd
	# in the namespace (same pid, so kill -9 kills the daemon).
	MODSIGND=ip modsignd_start "$T/modsignd-$n.log" netns exec "mf${TAG}s$n" "$MODSIGND" \
		--listen "tls:$addr:7787" --key "default=$P/farm-key.pem" \
		--tls-cert "$P/$cert.crt" --tls-key "$P/$cert.key" --tls-client-ca "$P/farm-ca.crt" \
		--allow cn:builder --audit-log "$T/audit-$n.jsonl" \
		--metrics-file "$T/metrics-$n.prom" || return 1
	DAEMON_PIDS+=("$MODSIGND_PID")
	printf -v "PID_$n" %s "$MODSIGND_PID"
}
farm() { # N: signing hosts 1..N
	local n
	for n in $(seq 1 "$1"); do signer "$n" "198.18.0.$n" || return 1; done
}

# builder ARGS...: the client on the builder, its pool the name's addresses.
builder() {
	ip netns exec "mf${TAG}builder" "$C" --server tls:sign.farm.test:7787 \
		--tls-ca "${CA:-$P/farm-ca.crt}" --tls-cert "$P/builder.crt" \
		--tls-key "$P/builder.key" "$@"
}

# mods N: the first N of the file's modules in mods/, unsigned, and their
# reference signatures in ref/.
mods() {
	mkdir -p mods ref
	(cd "$P/unsigned" && ls | head -n "$1") >names
	sed "s|^|$P/unsigned/|" names | xargs cp -t mods/
	sed "s|^|$P/ref/|" names | xargs cp -t ref/
	sha256sum mods/*.ko >unsigned.sum
}

# Every module signed as the reference.  (Both checks below take a few
# processes per directory, not one or three per module: up to 400.)
same_as_reference() {
	(cd ref && sha256sum -- *.ko) | sed 's|  |  mods/|' >whole.sum
	sha256sum mods/*.ko | grep -vxF -f whole.sum | sed 's/^/differs: /' | grep . && return 1
	return 0
}

# Each module untouched (as before the batch) or whole: signed as the
# reference.  Never half-written.
untouched_or_whole() {
	(cd ref && sha256sum -- *.ko) | sed 's|  |  mods/|' >whole.sum
	sha256sum mods/*.ko | grep -vxF -f unsigned.sum -f whole.sum | sed 's/^/neither: /' | grep . && return 1
	return 0
}

oks() { grep -c '"result":"ok"' "$1" 2>/dev/null || true; }

# busiest_after K: wait until one signing host has issued K signatures
# (mid-batch); print its number.
busiest_after() {
	local n
	for _ in $(seq 1 600); do
		for n in 1 2 3; do
			[ "$(oks "audit-$n.jsonl")" -ge "$1" ] && { echo "$n"; return 0; }
		done
		sleep 0.01
	done
	return 1
}

# mid_batch SIGNAL WHOM CLIENT...: `CLIENT... sign mods/*.ko` in the
# background, its standard error in client.err; once a host has issued 20
# signatures (mid-batch), SIGNAL to WHOM: "busiest", that host (its
# number left in $victim), or the hosts numbered in WHOM ("1 2 3").
# $rc: the client's exit status.
mid_batch() {
	local sig=$1 whom=$2 cpid n v pids=()
	shift 2
	"$@" sign mods/*.ko 2>client.err &
	cpid=$!
	victim=$(busiest_after 20)
	[ "$whom" = busiest ] && whom=$victim
	for n in $whom; do v=PID_$n && pids+=("${!v}"); done
	kill -"$sig" "${pids[@]}"
	rc=0
	wait "$cpid" || rc=$?
}

# kill9_mid_batch_completes NAMED CLIENT...: the busiest host of CLIENT's
# pool killed mid-batch: exit 0, every module as the reference, the killed
# host named (NAMED: a grep pattern, %s its number) and its share cut short.
kill9_mid_batch_completes() {
	local named=$1
	shift
	mid_batch 9 busiest "$@"
	cat client.err
	[ "$rc" -eq 0 ]
	same_as_reference
	grep -q "$(printf "$named" "$victim")" client.err
	# The killed host issued some, not all: it died mid-batch.
	[ "$(oks "audit-$victim.jsonl")" -lt "$(wc -l <names)" ]
}

# kill9_mid_batch_fails HOSTS CLIENT...: every host of CLIENT's pool (the
# numbers HOSTS) killed mid-batch: exit 1, "not signed", no module half-written.
kill9_mid_batch_fails() {
	mid_batch 9 "$@"
	[ "$rc" -eq 1 ]
	grep -q "not signed" client.err
	untouched_or_whole
}

@test "farm-pool-spreads-over-every-address" {
	farm 3
	mods 150
	run builder sign mods/*.ko
	assert_success
	same_as_reference
	# Every host took part (each gets 32 at once before any reply).
	for n in 1 2 3; do [ "$(oks "audit-$n.jsonl")" -gt 0 ]; done
}

# The union of the audit logs holds each issued signature once: a batch
# without failure issues exactly one per module.
@test "farm-audit-union-once-per-module" {
	farm 3
	mods 150
	builder sign mods/*.ko
	cat audit-*.jsonl | grep '"result":"ok"' | python3 -c '
import json, sys, collections
c = collections.Counter(json.loads(l)["digest"] for l in sys.stdin)
assert len(c) == 150, len(c)
assert set(c.values()) == {1}, c.most_common(3)
'
}

# kill -9 of the busiest host mid-batch: its outstanding requests go to
# the others, the batch ends with every module signed as one server would
# have, exit 0.  (The client of commit 10d6258 fails this: it fails over
# only when it connects.)
@test "farm-kill9-mid-batch-completes" {
	farm 3
	mods 400
	kill9_mid_batch_completes "sign.farm.test:7787 (198.18.0.%s)" builder
	# Audit union: every module at least once; a module twice only when
	# the killed host issued it and its reply was lost (sent again), and
	# never twice by one host.
	cat audit-*.jsonl | grep '"result":"ok"' | python3 -c '
import json, sys, collections
c = collections.Counter(json.loads(l)["digest"] for l in sys.stdin)
assert len(c) == 400, len(c)
assert max(c.values()) <= 2, c.most_common(3)
'
	for f in audit-*.jsonl; do
		dups=$(grep '"result":"ok"' "$f" | python3 -c '
import json, sys, collections
c = collections.Counter(json.loads(l)["digest"] for l in sys.stdin)
print(sum(1 for v in c.values() if v > 1))')
		[ "$dups" -eq 0 ]
	done
}

# Twin: the pool is only the host that is killed; the batch fails, and
# each module is untouched or whole.
@test "farm-kill9-only-host-fails-modules-whole" {
	farm 1
	hosts_file builder 198.18.0.1
	mods 300
	kill9_mid_batch_fails 1 builder
}

# SIGSTOP: a stall, not a close (the kernel still accepts and buffers).
# With a 1 s stall timeout the batch finishes well within its bound.
@test "farm-sigstop-mid-batch-completes-bounded" {
	farm 3
	mods 300
	start=$(date +%s)
	mid_batch STOP busiest builder --stall-timeout 1
	cat client.err
	[ "$rc" -eq 0 ]
	[ $(($(date +%s) - start)) -lt 60 ]
	same_as_reference
	grep -q "198.18.0.$victim).*no reply (stalled)" client.err
}

# Twin: without a stall timeout that fires (60 s), the stopped host holds
# its requests: after 8 s the batch has not finished; its modules are
# untouched or whole.
@test "farm-sigstop-without-stall-timeout-hangs" {
	farm 3
	mods 300
	mid_batch STOP busiest timeout 8 ip netns exec "mf${TAG}builder" "$C" --stall-timeout 60 \
		--server tls:sign.farm.test:7787 --tls-ca "$P/farm-ca.crt" \
		--tls-cert "$P/builder.crt" --tls-key "$P/builder.key"
	[ "$rc" -eq 124 ]
	untouched_or_whole
}

# A host whose certificate the builder does not trust is named and never
# used: it issues nothing.
@test "farm-untrusted-host-skipped" {
	farm 2
	signer 9 198.18.0.9 rogue
	hosts_file builder 198.18.0.1 198.18.0.2 198.18.0.9
	mods 100
	run builder sign mods/*.ko
	assert_success
	assert_output --partial "sign.farm.test:7787 (198.18.0.9): not used: TLS: certificate verify failed"
	same_as_reference
	[ "$(oks audit-9.jsonl)" -eq 0 ]
}

# Twin: the same host, its CA trusted, is used.
@test "farm-trusted-host-used" {
	farm 2
	signer 9 198.18.0.9 rogue
	hosts_file builder 198.18.0.1 198.18.0.2 198.18.0.9
	cat "$P/farm-ca.crt" "$P/rogue-ca.crt" >both-ca.crt
	mods 100
	CA=$T/both-ca.crt run builder sign mods/*.ko
	assert_success
	same_as_reference
	[ "$(oks audit-9.jsonl)" -gt 0 ]
}

# kbuild's one call per module: each picks a host by its path and fails
# over at connect; with one host down every module is still signed.
@test "farm-per-module-fails-over-at-connect" {
	farm 3
	mods 12
	kill -9 "$PID_2"
	wait "$PID_2" 2>/dev/null || true
	builder cert >farm.crt
	for f in mods/*.ko; do
		builder sign-file sha256 modsign:default farm.crt "$f" || return 1
	done
	same_as_reference
}

# Twin: with every host down the call fails and the module is untouched.
@test "farm-per-module-all-down-fails" {
	farm 1
	hosts_file builder 198.18.0.1
	mods 1
	builder cert >farm.crt
	kill -9 "$PID_1"
	f=$(ls mods/*.ko)
	run builder sign-file sha256 modsign:default farm.crt "$f"
	assert_failure
	untouched_or_whole
	grep -q "$(sha "$f")  $f" unsigned.sum
}

# ---- a pool of several `server` lines ---------------------------------------
# builder_conf N...: the builder's config file, one `server` line per host
# N, each by its own name (sign-N.farm.test, in the builder's /etc/hosts
# and in host N's certificate); the builder's client reads it
# (MODSIGN_CONFIG) and is given no --server.
builder_conf() {
	local n ns=mf${TAG}builder
	{
		echo "127.0.0.1 localhost"
		for n in "$@"; do echo "198.18.0.$n sign-$n.farm.test"; done
	} >"/etc/netns/$ns/hosts"
	{
		for n in "$@"; do echo "server = tls:sign-$n.farm.test:7787"; done
		printf 'tls-ca = %s\ntls-cert = %s\ntls-key = %s\n' \
			"$P/farm-ca.crt" "$P/builder.crt" "$P/builder.key"
	} >client.conf
}
conf_builder() { # ARGS...: the client on the builder, its pool the config's servers
	ip netns exec "mf${TAG}builder" env MODSIGN_CONFIG="$T/client.conf" "$C" "$@"
}

# Three `server` lines, the busiest host killed mid-batch: its requests go
# to the other lines' hosts, every module is signed once, as the
# reference, exit 0; the killed host named by its line.
@test "farm-config-server-lines-pool-kill9-mid-batch-completes" {
	farm 3
	builder_conf 1 2 3
	mods 400
	kill9_mid_batch_completes \
		"^modsign-client: tls:sign-%s.farm.test:7787: .*sent to the other servers" conf_builder
	refute grep -q "not signed" client.err
	# Every line's host took part, the killed one only until it died.
	for n in 1 2 3; do [ "$(oks "audit-$n.jsonl")" -gt 0 ]; done
}

# Twin: every listed server gone mid-batch (each killed): the batch fails
# with one line saying no server is left, each server named by its line
# as it went, the rest not signed, and each module untouched or whole.
@test "farm-config-server-lines-all-gone-fails-naming-them" {
	farm 3
	builder_conf 1 2 3
	mods 400
	kill9_mid_batch_fails "1 2 3" conf_builder
	grep -v 'not signed' client.err
	for n in 1 2 3; do grep -q "^modsign-client: tls:sign-$n.farm.test:7787: " client.err; done
	grep -q "; no server left: all 3 of the pool failed\$" client.err
	# Started again with all of them down: refused at once, each named.
	cp "$P/unsigned/$(head -n1 names)" x.ko
	run conf_builder sign x.ko
	assert_failure
	for n in 1 2 3; do
		assert_output --partial "cannot connect to modsignd at tls:sign-$n.farm.test:7787: "
	done
	cmp x.ko "$P/unsigned/$(head -n1 names)"
}

# ---- watching a farm: status --json and verify --json ------------------------
# status --json asks every address of the pool: one host down is one
# entry with ok false, and the farm still serves (exit 0).
@test "farm-status-json-one-host-down" {
	farm 3
	kill -9 "$PID_3"
	wait "$PID_3" 2>/dev/null || true
	run builder status --json
	assert_success
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert (d["up"], d["total"]) == (2, 3), d
down = [s for s in d["servers"] if not s["ok"]]
assert len(down) == 1 and "198.18.0.3" in down[0]["server"] and down[0]["error"], down
for s in d["servers"]:
    if s["ok"]:
        assert [k["health"] for k in s["keys"]] == ["ok"], s
' "$output"
}

# Twin: every host down: exit 1, up 0.
@test "farm-status-json-all-down-fails" {
	farm 1
	hosts_file builder 198.18.0.1
	kill -9 "$PID_1"
	wait "$PID_1" 2>/dev/null || true
	run builder status --json
	assert_failure
	python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert d["up"] == 0, d' "$output"
}

@test "farm-verify-json-all-ok" {
	farm 2
	mods 5
	builder sign mods/*.ko
	builder cert >farm.crt
	run "$C" verify --json --cert farm.crt mods/*.ko
	assert_success
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["failed"] == 0 and len(d["modules"]) == 5, d
assert all(m["ok"] and m["hash"] == "sha256" for m in d["modules"]), d
' "$output"
}

# Twin: one module changed after signing is the one failure, named.
@test "farm-verify-json-names-tampered" {
	farm 2
	mods 5
	builder sign mods/*.ko
	builder cert >farm.crt
	bad=$(ls mods/*.ko | head -n 1)
	flip_bit_at "$bad" 2000
	run "$C" verify --json --cert farm.crt mods/*.ko
	assert_failure
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["failed"] == 1, d
bad = [m for m in d["modules"] if not m["ok"]]
assert [m["module"] for m in bad] == [sys.argv[2]] and "BAD signature" in bad[0]["error"], bad
' "$output" "$bad"
}

# ---- each daemon's counters, Prometheus text format ---------------------------
# metric FILE NAME{LABELS}: the value of one sample.
metric() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# Every line is a comment or NAME{LABELS} VALUE (the text exposition
# format node_exporter's textfile collector reads).
well_formed() {
	! grep -vE '^(# (HELP|TYPE) [a-z0-9_]+ .+|[a-z0-9_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [0-9.e+-]+)$' "$1"
}

issued_sum() {
	local n sum=0 v
	for n in 1 2 3; do
		v=$(metric "metrics-$n.prom" 'modsignd_signatures_issued_total{key="default"}')
		sum=$((sum + ${v:-0}))
	done
	[ "$sum" -eq "$1" ]
}

# The hosts' issued counters add up to the batch, and match their audit logs.
@test "farm-metrics-issued-add-up" {
	farm 3
	mods 60
	builder sign mods/*.ko
	eventually 12 issued_sum 60
	for n in 1 2 3; do
		well_formed "metrics-$n.prom"
		assert_equal "$(metric "metrics-$n.prom" 'modsignd_signatures_issued_total{key="default"}')" \
			"$(oks "audit-$n.jsonl")"
		assert_equal "$(metric "metrics-$n.prom" modsignd_requests_in_flight)" 0
		assert_equal "$(metric "metrics-$n.prom" 'modsignd_key_up{key="default",backend="file"}')" 1
	done
}

# Twin: a refused batch (a key no host has) counts as refused, by reason,
# and issues nothing.
@test "farm-metrics-refused-counted-not-issued" {
	farm 1
	hosts_file builder 198.18.0.1
	mods 4
	# kbuild's per-module calls send the requests (a batch asks each host
	# for the key's certificate first, and sends none).
	local m
	for m in mods/*.ko; do
		run builder sign-file sha256 modsign:nosuch "$P/farm-key.pem.crt" "$m"
		assert_failure
	done
	refused() { [ "$(metric metrics-1.prom 'modsignd_signatures_refused_total{key="",reason="unknown_key"}')" = 4 ]; }
	eventually 12 refused
	well_formed metrics-1.prom
	assert_equal "$(metric metrics-1.prom 'modsignd_signatures_issued_total{key="default"}')" 0
}

# ---- the HSM host: p11-kit server, reached over a forwarded socket -----------
# hsm_host: namespace hsm at 198.18.0.100 runs `p11-kit server` over a copy
# of the file's SoftHSM2 token, its socket exported on TCP 5555 (socat, in
# place of the SSH forwarding p11-kit documents for remote hosts).
hsm_host() {
	cp -a "$P/tokens" "$T/tokens"
	softhsm_conf "$T"
	echo 1234 >"$T/pin"
	chmod 600 "$T/pin"
	host hsm 198.18.0.100 || return 1
	ip netns exec "mf${TAG}hsm" env SOFTHSM2_CONF="$T/softhsm2.conf" \
		p11-kit server -f --provider "$SOFTHSM" -n "$T/p11.sock" "pkcs11:token=modsign" \
		>"$T/p11-kit.log" 2>&1 3>&- &
	eventually 30 test -S "$T/p11.sock" || return 1
	# setsid: a process group of its own, so that a cut ends it and the
	# connections it forked, and nothing else.
	ip netns exec "mf${TAG}hsm" setsid socat TCP-LISTEN:5555,bind=198.18.0.100,reuseaddr,fork \
		"UNIX-CONNECT:$T/p11.sock" 2>/dev/null 3>&- &
	GROUPS_TO_KILL+=($!)
}

# link_up N: signing host N's end of the link: its local socket forwarded
# to the HSM host; the pid (its group's) in FWD_N.
link_up() {
	ip netns exec "mf${TAG}s$1" setsid socat "UNIX-LISTEN:$T/hsm-$1.sock,fork,unlink-early" \
		TCP:198.18.0.100:5555 2>/dev/null 3>&- &
	printf -v "FWD_$1" %s "$!"
	GROUPS_TO_KILL+=($!)
	eventually 30 test -S "$T/hsm-$1.sock"
}
link_cut() { kill -- "-$(eval echo "\$FWD_$1")"; }

# hsm_signer N: signing host N whose key default is the token's, through
# p11-kit-client.so; and a key of its own, soft, off the token.  With
# HSM_DEBUG=rpc, p11-kit-client.so logs each call it sends over the link
# (p11-kit's own debug output, "rpc_C_Sign: C_Sign: enter") to
# modsignd-N.log.
hsm_signer() {
	local n=$1 addr=198.18.0.$1
	host "s$n" "$addr" || return 1
	link_up "$n" || return 1
	MODSIGND=ip modsignd_start "$T/modsignd-$n.log" netns exec "mf${TAG}s$n" \
		env P11_KIT_SERVER_ADDRESS="unix:path=$T/hsm-$n.sock" \
		P11_KIT_DEBUG="${HSM_DEBUG:-}" "$MODSIGND" \
		--listen "tls:$addr:7787" --pkcs11-module "$P11_CLIENT" --pin-file "$T/pin" \
		--key "default=pkcs11:token=modsign;object=farm;type=private" \
		--key soft=ephemeral:ecdsa-p256 \
		--tls-cert "$P/sign-$n.crt" --tls-key "$P/sign-$n.key" --tls-client-ca "$P/farm-ca.crt" \
		--allow cn:builder --audit-log "$T/audit-$n.jsonl" \
		--metrics-file "$T/metrics-$n.prom" || return 1
	DAEMON_PIDS+=("$MODSIGND_PID")
	printf -v "PID_$n" %s "$MODSIGND_PID"
}

host1_signs() { # KEY FILE: host 1 alone signs FILE with KEY (the builder's
	# name now has host 1's address only)
	hosts_file builder 198.18.0.1
	builder sign --key "$1" "$2" 2>>host1.err
}

# The link from host 1 to the HSM cut mid-batch: host 1 answers at once
# that the key's token is gone, the client sends those requests to host 2,
# the batch completes byte for byte; host 1's other key keeps signing; the
# link restored, the key comes back by itself.
@test "farm-hsm-link-cut-mid-batch-completes-and-recovers" {
	hsm_host
	hsm_signer 1
	hsm_signer 2
	hosts_file builder 198.18.0.1 198.18.0.2
	mods 150
	builder sign mods/*.ko 2>client.err &
	cpid=$!
	for _ in $(seq 1 600); do [ "$(oks audit-1.jsonl)" -ge 10 ] && break; sleep 0.01; done
	link_cut 1
	rc=0
	wait "$cpid" || rc=$?
	cat client.err
	[ "$rc" -eq 0 ]
	same_as_reference
	grep -q "198.18.0.1).*signing with key default failed" client.err
	[ "$(oks audit-1.jsonl)" -lt 150 ]
	# While cut: refused at once, the other key still signs.
	cp "$P/unsigned/$(head -n1 names)" x.ko
	start=$(date +%s%N)
	refute host1_signs default x.ko
	[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 3000 ]
	grep -q "signing with key default failed" host1.err
	host1_signs soft x.ko
	# Restored: back by itself (re-opened at most once a second).
	link_up 1
	cp "$P/unsigned/$(head -n1 names)" y.ko
	eventually 20 host1_signs default y.ko
	cmp y.ko "ref/$(head -n1 names)"
	refused() { [ "$(metric metrics-1.prom 'modsignd_signatures_refused_total{key="default",reason="token_unavailable"}')" -ge 1 ]; }
	eventually 12 refused
}

# Twin: the only signing host cut from the HSM: the batch fails fast,
# naming the key, modules untouched or whole.
@test "farm-hsm-link-cut-only-host-fails-fast" {
	hsm_host
	hsm_signer 1
	hosts_file builder 198.18.0.1
	mods 20
	link_cut 1
	start=$(date +%s)
	run builder sign mods/*.ko
	assert_failure
	[ $(($(date +%s) - start)) -lt 15 ]
	assert_output --partial "signing with key default failed: PKCS#11 token unavailable"
	untouched_or_whole
}

# ---- the token link's cost: sessions and handles reused ----------------------
# rpc_calls LOG FROM [CALL]: the PKCS#11 calls p11-kit-client.so sent over
# the link (HSM_DEBUG=rpc) after line FROM of LOG: CALL alone, else all.
# p11-kit writes a debug line in three writes, so another thread's line
# may land inside one: every occurrence is counted, not lines.
rpc_calls() {
	tail -n +"$(($2 + 1))" "$1" | { grep -oE " ${3:-C_[A-Za-z]+}: enter" || true; } | wc -l
}

# pkcs11_use FILE: key default's "opens logins lookups sign_calls".
pkcs11_use() {
	local c
	for c in opens logins object_lookups sign_calls; do
		metric "$1" "modsignd_pkcs11_${c}_total{key=\"default\"}"
	done | paste -sd' '
}

# stop_signer N: SIGTERM, which writes the metrics file a last time.
stop_signer() {
	local pid
	pid=$(eval echo "\$PID_$1")
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

# A batch of 200 over the link costs C_SignInit and C_Sign per signature
# and nothing else: libp11's session pool and the key's kept object
# handle are reused (no C_OpenSession, C_Login or C_FindObjects per
# signature), and the daemon's counters show it: sign calls grow by the
# batch, opens, logins and lookups stay as they were at start.
@test "farm-hsm-open-reused-two-calls-per-signature" {
	hsm_host
	HSM_DEBUG=rpc hsm_signer 1
	hosts_file builder 198.18.0.1
	mods 200
	n=$(ls mods/*.ko | wc -l)
	eventually 10 test -s metrics-1.prom
	read -r opens logins lookups calls < <(pkcs11_use metrics-1.prom)
	[ "$opens" -ge 1 ]
	[ "$logins" -ge 1 ]
	[ "$lookups" -ge 1 ]
	mark=$(wc -l <modsignd-1.log)
	builder sign mods/*.ko
	same_as_reference
	stop_signer 1
	log=modsignd-1.log
	echo "over the link: $(rpc_calls $log "$mark") calls for $n signatures"
	assert_equal "$(rpc_calls $log "$mark" C_SignInit)" "$n"
	assert_equal "$(rpc_calls $log "$mark" C_Sign)" "$n"
	assert_equal "$(rpc_calls $log "$mark" C_OpenSession)" 0
	assert_equal "$(rpc_calls $log "$mark" C_Login)" 0
	assert_equal "$(rpc_calls $log "$mark" C_FindObjectsInit)" 0
	# and nothing else but the daemon's exit (C_CloseAllSessions, C_Finalize)
	assert_equal "$(rpc_calls $log "$mark")" $((2 * n + 2))
	assert_equal "$(pkcs11_use metrics-1.prom)" "$opens $logins $lookups $((calls + n))"
}

# Twin: the link cut and restored between two batches: the counters show
# exactly the one re-open that brought the key back (one more open, one
# more login, a new session over the link), and the second batch reuses
# it as the first did.
@test "farm-hsm-link-cut-restored-counts-exactly-the-reopen" {
	hsm_host
	HSM_DEBUG=rpc hsm_signer 1
	hosts_file builder 198.18.0.1
	mods 100
	eventually 10 test -s metrics-1.prom
	read -r opens logins _ _ < <(pkcs11_use metrics-1.prom)
	mkdir one two
	ls mods/*.ko | head -n 50 | xargs mv -t one/
	mv mods/*.ko two/
	builder sign one/*.ko
	link_cut 1
	cut=$(wc -l <modsignd-1.log)
	cp "$P/unsigned/$(head -n1 names)" x.ko
	refute host1_signs default x.ko
	link_up 1
	eventually 20 host1_signs default x.ko
	assert [ "$(rpc_calls modsignd-1.log "$cut" C_OpenSession)" -ge 1 ]
	mark=$(wc -l <modsignd-1.log)
	builder sign two/*.ko
	stop_signer 1
	mv one/*.ko two/*.ko mods/
	same_as_reference
	read -r opens2 logins2 _ _ < <(pkcs11_use metrics-1.prom)
	assert_equal "$opens2" $((opens + 1))
	assert_equal "$logins2" $((logins + 1))
	assert_equal "$(rpc_calls modsignd-1.log "$mark" C_OpenSession)" 0
	assert_equal "$(rpc_calls modsignd-1.log "$mark" C_SignInit)" 50
}
