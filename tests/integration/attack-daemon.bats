#!/usr/bin/env bats
# Attacks on the daemon's own ground: key files others can read, key
# material in swappable memory, client certificates that are not client
# leafs or whose names lie in a log, and settings that silently lose.  Each
# attack has a twin that the daemon must still accept.  Each case makes
# its own keys and starts its own daemon.

load ../common

# try_start NAME ARGS...: run modsignd on $T/NAME.sock until it is ready
# (STARTED=1, then stopped again) or exits (STARTED=0, RC its status); its
# stderr is in $T/NAME.err.  A daemon that neither gets ready nor exits
# within modsignd_start's bound is killed, with RC=hung: not a refusal.
try_start() {
	local name=$1
	shift
	STARTED=0 RC=
	if modsignd_start "$T/$name.err" --listen "unix:$T/$name.sock" "$@" 2>/dev/null; then
		STARTED=1
		stop_daemon "$MODSIGND_PID"
	elif kill -0 "$MODSIGND_PID" 2>/dev/null; then
		stop_daemon "$MODSIGND_PID"
		RC=hung
	else
		RC=0
		wait "$MODSIGND_PID" || RC=$?
	fi
}

assert_refused() { # by the last try_start
	[ "$STARTED" = 0 ] && [ -n "$RC" ] && [ "$RC" != 0 ] && [ "$RC" != hung ] ||
		{ echo "not refused: STARTED=$STARTED RC=$RC"; false; }
}

assert_started() { # by the last try_start
	[ "$STARTED" = 1 ] || { echo "did not start: RC=$RC"; cat "$T/$1.err"; false; }
}

assert_one_line() { # FILE
	assert_equal "$(wc -l <"$1")" 1
}

# ---- 7. key files with loose permissions ----------------------------------
# loose_key_refused MODE: a PEM key file with MODE is refused at start and
# by --check-config, in a line naming the file and its mode.
loose_key_refused() {
	local mode=$1
	make_pem_key "$T/key.pem" rsa:2048 # mode 0600
	cp "$T/key.pem" "$T/loose-$mode.pem"
	chmod "$mode" "$T/loose-$mode.pem"
	try_start "loose-$mode" --key default="$T/loose-$mode.pem"
	# key-file-mode-MODE-refused-at-start
	assert_refused
	# key-file-mode-MODE-refusal-names-file-and-mode
	run grep -q "loose-$mode.pem: mode $mode: group or others may read or write it" "$T/loose-$mode.err"
	assert_success
	printf 'key = default=%s\n' "$T/loose-$mode.pem" >"$T/loose-$mode.conf"
	# key-file-mode-MODE-refused-by-check-config
	run "$MODSIGND" --config "$T/loose-$mode.conf" --check-config
	assert_failure
}

@test "key-file-mode-0644-refused" { loose_key_refused 0644; }
@test "key-file-mode-0640-refused" { loose_key_refused 0640; }
@test "key-file-mode-0620-refused" { loose_key_refused 0620; }
@test "key-file-mode-0604-refused" { loose_key_refused 0604; }

@test "key-file-check-config-error-is-one-line-naming-mode" {
	make_pem_key "$T/key.pem" rsa:2048
	chmod 0644 "$T/key.pem"
	printf 'key = default=%s\n' "$T/key.pem" >"$T/loose.conf"
	"$MODSIGND" --config "$T/loose.conf" --check-config >/dev/null 2>"$T/loose-cc.err" || true
	assert_one_line "$T/loose-cc.err"
	run grep -q 'key.pem: mode 0644' "$T/loose-cc.err"
	assert_success
}

@test "key-file-start-error-is-one-line" {
	make_pem_key "$T/key.pem" rsa:2048
	chmod 0644 "$T/key.pem"
	try_start loose --key default="$T/key.pem"
	assert_one_line "$T/loose.err"
}

# Twins: 0600 and 0400 are fine, at start and in --check-config.
tight_key_accepted() { # MODE
	local mode=$1
	make_pem_key "$T/key.pem" rsa:2048
	chmod "$mode" "$T/key.pem"
	printf 'key = default=%s\n' "$T/key.pem" >"$T/tight.conf"
	# twin-key-file-mode-MODE-passes-check-config
	run "$MODSIGND" --config "$T/tight.conf" --check-config
	assert_success
	try_start "tight-$mode" --key default="$T/key.pem"
	assert_started "tight-$mode"
}

@test "twin-key-file-mode-0600-accepted" { tight_key_accepted 0600; }
@test "twin-key-file-mode-0400-accepted" { tight_key_accepted 0400; }

# The TLS key, read the same way.
server_pki() { # a CA and a server certificate for localhost, in $T
	pki ca
	issue_server server ca DNS:localhost,IP:127.0.0.1
	TLS_CA=ca # the CA "as" trusts (common.bash)
}
tlsargs() { echo --tls-cert "$T/server.crt" --tls-client-ca "$T/ca.crt" --tls-key "$T/$1"; }
tls_conf() { # KEY: a config with the TLS key KEY
	printf 'key = default=ephemeral:ecdsa-p256\ntls-cert = %s\ntls-key = %s\ntls-client-ca = %s\n' \
		"$T/server.crt" "$T/$1" "$T/ca.crt"
}

@test "tls-key-mode-0644-refused" {
	server_pki
	cp server.key server-loose.key
	chmod 0644 server-loose.key
	# shellcheck disable=SC2046
	try_start tlskey-loose --key default=ephemeral:ecdsa-p256 $(tlsargs server-loose.key)
	# tls-key-mode-0644-refused-at-start
	assert_refused
	# tls-key-refusal-names-file-and-mode
	assert_one_line "$T/tlskey-loose.err"
	run grep -q 'server-loose.key: mode 0644' "$T/tlskey-loose.err"
	assert_success
	# tls-key-mode-0644-refused-by-check-config
	tls_conf server-loose.key >tlskey-loose.conf
	run "$MODSIGND" --config tlskey-loose.conf --check-config
	assert_failure
}

@test "twin-tls-key-mode-0600-accepted" {
	server_pki
	# shellcheck disable=SC2046
	try_start tlskey-tight --key default=ephemeral:ecdsa-p256 $(tlsargs server.key)
	assert_started tlskey-tight
	# twin-tls-key-mode-0600-passes-check-config
	tls_conf server.key >tlskey-tight.conf
	run "$MODSIGND" --config tlskey-tight.conf --check-config
	assert_success
}

@test "key-file-owned-by-another-user-refused" {
	make_pem_key k.pem rsa:2048
	chown nobody k.pem
	# Refused at start (a daemon that takes the key would serve, so the
	# attempt is bounded: 124 is the daemon that accepted it).
	run timeout 20 "$MODSIGND" --listen "unix:$T/d.sock" --key "default=$T/k.pem"
	assert_failure
	refute [ "$status" -eq 124 ]
	assert_output --partial "k.pem: owner uid 65534"
	: >e.conf
	run "$MODSIGND" --config e.conf --key "default=$T/k.pem" --check-config
	assert_failure
	assert_output --partial "k.pem: owner uid 65534"
	# Twin: the same file, root's, is taken.
	chown root k.pem
	run "$MODSIGND" --config e.conf --key "default=$T/k.pem" --check-config
	assert_success
}

@test "key-file-symlink-refused-naming-it" {
	make_pem_key k.pem rsa:2048
	ln -s k.pem link.pem
	: >e.conf
	run "$MODSIGND" --config e.conf --key "default=$T/link.pem" --check-config
	assert_failure
	assert_output --partial "link.pem: a symbolic link"
}

@test "key-file-fifo-refused-at-once" {
	# A FIFO where a key or PIN file should be held the daemon's start
	# (and --check-config) for ever.
	mkfifo k.pem
	: >e.conf
	run timeout 20 "$MODSIGND" --config e.conf --key "default=$T/k.pem" --check-config
	assert_failure
	refute [ "$status" -eq 124 ]
	assert_output --partial "k.pem: not a regular file"
}

# ---- 8. key material in swappable memory -----------------------------------
# mem_daemon: a daemon with a one-time RSA key and the RSA file key
# $T/key.pem, each of which has signed a module.  Sets MEM_PID.
mem_daemon() {
	make_pem_key "$T/key.pem" rsa:2048
	start_daemon "$T/mem.sock" --key default=ephemeral:rsa2048 --key file="$T/key.pem"
	MEM_PID=$DAEMON_PID
	fresh "$T/mem1.ko"
	fresh "$T/mem2.ko"
	# mem-daemon-signs-with-one-time-key
	run "$C" --server "unix:$T/mem.sock" sign "$T/mem1.ko"
	assert_success
	# mem-daemon-signs-with-file-key
	run "$C" --server "unix:$T/mem.sock" sign --key file "$T/mem2.ko"
	assert_success
}

# smaps' Locked is proportional like Pss (a library page shared with other
# processes counts a share), so a mapping is wholly locked when Locked ==
# Pss.  The kernel's [vdso]/[vvar]/[vsyscall] cannot be locked and hold
# nothing of ours.
unlocked_mappings() { # PID: print mappings with resident pages not locked
	python3 - "$1" <<'PY'
import sys
bad, cur, f = [], None, {}
def done():
    if cur and f.get("Rss", 0) > 0 and f.get("Locked", 0) != f.get("Pss", 0) \
       and not any(k in cur for k in ("[vdso]", "[vvar]", "[vsyscall]")):
        bad.append(f"{cur.strip()} Rss={f['Rss']} Pss={f['Pss']} Locked={f['Locked']}")
for line in open(f"/proc/{sys.argv[1]}/smaps"):
    k = line.split()[0]
    if not k.endswith(":"):
        done(); cur, f = line, {}
    elif line.split()[-1] == "kB":
        f[k[:-1]] = int(line.split()[1])
done()
print("\n".join(bad[:5])); sys.exit(1 if bad else 0)
PY
}
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

@test "mem-every-resident-mapping-is-locked" {
	mem_daemon
	echo "# VmRSS $(status_kb "$MEM_PID" VmRSS) kB, VmLck $(status_kb "$MEM_PID" VmLck) kB (reserved, MCL_ONFAULT)" >&3
	run unlocked_mappings "$MEM_PID"
	assert_success
}

# The primes of the file key, as OpenSSL holds them (little-endian limbs)
# or as DER/PEM decoding leaves them (big-endian): wherever they are in
# the running daemon's memory, that memory must be locked (VmFlags "lo").
primes_in_unlocked_memory() { # PID KEYFILE
	python3 - "$1" "$2" <<'PY'
import re, sys
from cryptography.hazmat.primitives.serialization import load_pem_private_key
pid, key = sys.argv[1], load_pem_private_key(open(sys.argv[2], "rb").read(), None)
nums = key.private_numbers()
needles = []
for n in (nums.p, nums.q):
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    needles += [b[:32], b[::-1][:32]]
maps, cur = [], None
for line in open(f"/proc/{pid}/smaps"):
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
    if m:
        cur = [int(m[1], 16), int(m[2], 16), m[3], line.strip(), False]
        maps.append(cur)
    elif line.startswith("VmFlags:"):
        cur[4] = " lo" in line or line.split()[1:].count("lo") > 0
hits = unlocked = 0
with open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for lo, hi, perm, desc, locked in maps:
        if "r" not in perm or "[v" in desc:
            continue
        try:
            mem.seek(lo); data = mem.read(hi - lo)
        except OSError:
            continue
        for nd in needles:
            c = data.count(nd)
            hits += c
            if c and not locked:
                unlocked += c
                print("unlocked:", desc)
print(f"{hits} copies of prime bytes, {unlocked} in unlocked memory")
sys.exit(0 if hits and not unlocked else 1)
PY
}

@test "mem-rsa-primes-only-in-locked-memory" {
	mem_daemon
	run primes_in_unlocked_memory "$MEM_PID" "$T/key.pem"
	assert_success
}

# No lock, no daemon: root without CAP_IPC_LOCK and a 1 MiB RLIMIT_MEMLOCK
# (MEMLOCK= in the environment to change it), by a wrapper as $MODSIGND.
nolock_wrapper() {
	cat >"$T/nolock-wrapper" <<SH
#!/bin/sh
exec prlimit --memlock=\${MEMLOCK:-1048576} setpriv --bounding-set -ipc_lock --inh-caps -ipc_lock -- "$MODSIGND" "\$@"
SH
	chmod 755 "$T/nolock-wrapper"
	MODSIGND=$T/nolock-wrapper
}

lacks_ipc_lock() { # CAP_IPC_LOCK is bit 14
	local eff
	eff=$(setpriv --bounding-set -ipc_lock --inh-caps -ipc_lock -- awk '/^CapEff:/{print $2}' /proc/self/status)
	[ -n "$eff" ] && [ $(((0x$eff >> 14) & 1)) -eq 0 ]
}

@test "mem-test-setpriv-drops-cap-ipc-lock" {
	run lacks_ipc_lock
	assert_success
}

@test "mem-cannot-lock-refuses-to-start" {
	nolock_wrapper
	try_start nolock --key default=ephemeral:ecdsa-p256
	assert_refused
	# mem-cannot-lock-says-so-in-one-line
	assert_one_line "$T/nolock.err"
	run grep -q 'cannot lock memory against swap' "$T/nolock.err"
	assert_success
}

@test "twin-mem-no-cap-but-enough-limit-starts" {
	# Raising the hard limit needs CAP_SYS_RESOURCE, which some containers lack.
	prlimit --memlock=unlimited true 2>/dev/null || skip "cannot raise RLIMIT_MEMLOCK here"
	nolock_wrapper
	MEMLOCK=unlimited try_start nolock-unlimited --key default=ephemeral:ecdsa-p256
	assert_started nolock-unlimited
}

@test "twin-mem-with-cap-ipc-lock-starts" {
	try_start withcap --key default=ephemeral:ecdsa-p256
	assert_started withcap
}

# ---- 9. TLS client certificates ---------------------------------------------
RLO=$'\xe2\x80\xae' NEL=$'\xc2\x85'

# tls_conf_daemon CN...: a TLS daemon on $PORT, from a config file whose
# policy allows root and each CN, so that only the certificate checks can
# refuse them; its PKI is server_pki's.
tls_conf_daemon() {
	PORT=$(free_port)
	{
		echo "key = default=ephemeral:ecdsa-p256"
		echo "listen = tls:127.0.0.1:$PORT"
		echo "tls-cert = $T/server.crt"
		echo "tls-key = $T/server.key"
		echo "tls-client-ca = $T/ca.crt"
		echo "allow = uid:0"
		for cn in "$@"; do echo "allow = cn:$cn"; done
	} >tls.conf
	start_daemon "$T/tls.sock" --config "$T/tls.conf"
	# tls-daemon-listens
	wait_port "$PORT"
}


# A leaf without any extended key usage: tls.bats, tls-client-cert-without-eku-refused.
@test "twin-tls-leaf-with-clientauth-accepted" {
	server_pki
	issue client-leaf ca 'extendedKeyUsage=clientAuth' 'basicConstraints=critical,CA:FALSE'
	tls_conf_daemon client-leaf
	run as client-leaf status
	assert_success
}

@test "tls-ca-true-client-cert-refused" {
	server_pki
	issue ca-leaf ca 'basicConstraints=critical,CA:TRUE' 'extendedKeyUsage=clientAuth'
	tls_conf_daemon ca-leaf
	run as ca-leaf status
	assert_failure
	# tls-ca-true-refusal-logged: after the alert that ended the client,
	# so waited for (it once came after the grep on a loaded machine)
	run eventually 30 grep -q "unsuitable certificate purpose" "$T/modsignd.log"
	assert_success
}

@test "tls-ca-true-with-clientauth-refused" {
	server_pki
	issue ca-client-leaf ca 'basicConstraints=CA:TRUE' 'extendedKeyUsage=clientAuth'
	tls_conf_daemon ca-client-leaf
	run as ca-client-leaf status
	assert_failure
	# tls-ca-true-refusal-logged: after the alert that ended the client,
	# so waited for (it once came after the grep on a loaded machine)
	run eventually 30 grep -q "unsuitable certificate purpose" "$T/modsignd.log"
	assert_success
}

# OpenSSL's own ssl_client purpose refuses this one already; kept as a guard.
@test "tls-serverauth-only-client-cert-refused" {
	server_pki
	issue server-eku-leaf ca 'extendedKeyUsage=serverAuth'
	tls_conf_daemon server-eku-leaf
	run as server-eku-leaf status
	assert_failure
}

# A signature is logged and audited with the identity: the name would show.
# bad_cn_refused NAME CN: a client certificate with CN is refused for
# signing, logged as such, and CN's bytes are nowhere in the log.
bad_cn_refused() {
	local name=$1 cn=$2
	server_pki
	issue_cn "$name" "$cn" ca
	tls_conf_daemon "$cn"
	fresh "$T/$name.ko"
	run as "$name" sign "$T/$name.ko"
	assert_failure
	# tls-bad-cn-refusal-logged
	run grep -q "no usable common name" "$T/modsignd.log"
	assert_success
}

@test "tls-cn-with-bidi-override-refused" {
	bad_cn_refused rlo-leaf "builder${RLO}gpj.ko"
	# tls-log-holds-no-bidi-override
	run env LC_ALL=C grep -q "$RLO" "$T/modsignd.log"
	assert_failure
}

@test "tls-cn-with-c1-control-refused" {
	bad_cn_refused nel-leaf "builder${NEL}x"
	# tls-log-holds-no-c1-control
	run env LC_ALL=C grep -q "$NEL" "$T/modsignd.log"
	assert_failure
}

@test "cn-with-zero-width-space-refused" {
	tls_pki
	ZWSP=$'\xe2\x80\x8b'
	issue_cn zw "builder${ZWSP}-1" farm-ca
	printf 'allow = cn:builder%s-1\n' "$ZWSP" >zw.conf
	tls_daemon d --config "$T/zw.conf"
	fresh z.ko
	run as zw sign z.ko
	assert_failure
	run as builder-1 sign z.ko
	assert_success
}

@test "cn-with-fields-in-name-quoted-in-audit-and-log" {
	# Issue 28, 8: a CA-issued name that holds "addr=..." read as a second
	# address in the audit record's peer field and in the log lines:
	# cn=builder-1 addr=10.9.9.9:1 addr=127.0.0.1:60202.
	tls_pki
	issue_cn forged 'builder-1 addr=10.9.9.9:1' farm-ca
	tls_daemon d --audit-log "$T/audit.jsonl"
	fresh f.ko
	run as forged sign f.ko
	assert_failure
	assert_output --partial 'cn:"builder-1 addr=10.9.9.9:1" is not named by the policy'
	stop_daemon "$DAEMON_PID"
	run grep -c 'addr=10.9.9.9:1 addr=' audit.jsonl modsignd.log
	assert_output --partial 'audit.jsonl:0'
	assert_output --partial 'modsignd.log:0'
	run python3 - audit.jsonl <<'PY'
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if 'builder-1 ' in l]
assert recs and recs[0]['identity'] == 'cn:"builder-1 addr=10.9.9.9:1"', recs
assert re.fullmatch(r'cn="builder-1 addr=10\.9\.9\.9:1" addr=127\.0\.0\.1:\d+', recs[0]['peer']), recs
PY
	assert_success
	run grep -c 'cn="builder-1 addr=10.9.9.9:1" addr=127.0.0.1:[0-9]*: refused' modsignd.log
	assert_output 1
}

# Twin: a plain name reads as before, unquoted.
@test "cn-twin-plain-name-unquoted" {
	tls_pki
	tls_daemon d --audit-log "$T/audit.jsonl"
	fresh p.ko
	run as builder-1 sign p.ko
	assert_success
	run grep -cE '"identity":"cn:builder-1","peer":"cn=builder-1 addr=127\.0\.0\.1:[0-9]+".*"result":"ok"' audit.jsonl
	assert_output 1
}

# ---- 10. configuration -------------------------------------------------------
@test "conf-single-option-twice-in-file-refused" {
	printf 'key = default=ephemeral:ecdsa-p256\naudit-log = %s/a1\n# the second\naudit-log = %s/a2\n' \
		"$T" "$T" >dup.conf
	run "$MODSIGND" --config dup.conf --check-config
	assert_failure
	# conf-twice-error-names-option-and-both-lines
	assert_output --partial "dup.conf:4: 'audit-log' given twice (first on line 2)"
	# conf-single-option-twice-in-file-refused-at-start
	try_start dup --config "$T/dup.conf"
	assert_refused
}

@test "conf-single-option-twice-on-cli-refused" {
	printf 'key = default=ephemeral:ecdsa-p256\n' >one.conf
	run "$MODSIGND" --config one.conf --check-config --audit-log "$T/a1" --audit-log "$T/a2"
	assert_failure
	# conf-twice-on-cli-error-names-option
	assert_output --partial "--audit-log given twice on the command line"
	# conf-single-option-twice-on-cli-refused-at-start
	try_start dupcli --key default=ephemeral:ecdsa-p256 --workers 1 --workers 2
	assert_refused
}

# Twins: repeatable options repeat; the command line overrides the file.
twin_conf() {
	printf 'key = default=ephemeral:ecdsa-p256\nkey = b=ephemeral:ecdsa-p256\nallow = uid:0\nallow = uid:1\naudit-log = %s/a1\n' \
		"$T" >"$1"
}

@test "twin-conf-repeatable-options-repeat" {
	twin_conf twin.conf
	run "$MODSIGND" --config twin.conf --check-config
	assert_success
}

@test "twin-conf-cli-overrides-file-once" {
	twin_conf twin.conf
	run "$MODSIGND" --config twin.conf --check-config --audit-log "$T/a2"
	assert_success
}

# SIGHUP names what it does not apply.
# grep -c prints 0 and fails when there is none yet.
policy_reloads() { grep -c "policy reloaded" "$T/modsignd.log" || true; }
reloaded_since() { [ "$(policy_reloads)" -gt "$1" ]; }

# hup_conf CHANGE...: apply sed CHANGEs to hup.conf, SIGHUP the daemon and
# wait for it to have reloaded.
hup_conf() {
	local before
	before=$(policy_reloads)
	sed -i "$@" hup.conf
	kill -HUP "$DAEMON_PID"
	# twin-sighup-...-reloaded
	run eventually 20 reloaded_since "$before"
	assert_success
}

@test "twin-sighup-allow-only-change-reloaded" {
	twin_conf hup.conf
	start_daemon "$T/hup.sock" --config "$T/hup.conf"
	hup_conf -e '$a allow = uid:2'
	# twin-sighup-allow-only-change-warns-nothing
	run grep -q "not applied" "$T/modsignd.log"
	assert_failure
}

@test "sighup-names-options-not-applied" {
	twin_conf hup.conf
	start_daemon "$T/hup.sock" --config "$T/hup.conf"
	hup_conf -e "s|^audit-log = .*|audit-log = $T/elsewhere|" -e "s|^key = b=.*|key = b=ephemeral:rsa2048|"
	run grep -q "SIGHUP: .*hup.conf: changed key, audit-log: not applied until modsignd restarts" \
		"$T/modsignd.log"
	assert_success
}

@test "check-config-refuses-duplicate-key-name" {
	printf 'key = default=ephemeral:ecdsa-p256\n' >c.conf
	run "$MODSIGND" --config c.conf --key default=ephemeral:rsa2048 --check-config
	assert_failure
	assert_output --partial "duplicate key name"
	# Twin: two names.
	run "$MODSIGND" --config c.conf --key other=ephemeral:rsa2048 --check-config
	assert_success
}

@test "cn-rule-in-quoted-form-refused" {
	# The log shows CN `builder 1` as cn:"builder 1"; that text copied into
	# a rule named another certificate, CN `"builder 1"` with its quotes,
	# and the daemon took it.
	: >c.conf
	run "$MODSIGND" --config c.conf --key default=ephemeral:ecdsa-p256 --allow 'cn:"builder 1"' --check-config
	assert_failure
	assert_output --partial 'not quoted as the log shows it'
	run "$MODSIGND" --config c.conf --key default=ephemeral:ecdsa-p256 --allow 'cn:"builder 1"=default' --check-config
	assert_failure
	# Twin: the name's own bytes, a space and a quote inside, are a rule.
	run "$MODSIGND" --config c.conf --key default=ephemeral:ecdsa-p256 --allow 'cn:builder 1' \
		--allow 'cn:b"1' --check-config
	assert_success
}

# ---- files the daemon writes: the audit log and the metrics file ------------
# Their directories are opened once at start and must be the daemon's own,
# writable by neither group nor others; nothing in them is opened but a
# regular file.  A FIFO planted at a name the daemon opens must not stop
# its event loop: it still signs, and SIGTERM still ends it.

# signs_within SECS SOCK: a fresh module signed by the daemon on SOCK within
# SECS seconds (a blocked event loop does not answer).
signs_within() {
	fresh "$T/m-$RANDOM.ko"
	timeout "$1" "$C" --server "unix:$2" sign "$(ls -t "$T"/m-*.ko | head -n1)"
}

# stops_within SECS PID: SIGTERM ends the daemon within SECS seconds.
stops_within() {
	local end=$(($(date +%s) + $1))
	kill -TERM "$2"
	while kill -0 "$2" 2>/dev/null; do
		[ "$(date +%s)" -le "$end" ] || { kill -KILL "$2"; echo "SIGTERM ignored"; return 1; }
		sleep 0.1
	done
}

@test "metrics-tmp-fifo-does-not-stop-daemon" {
	mkdir -m 0755 m
	mkfifo m/modsignd.prom.tmp
	start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --metrics-file "$T/m/modsignd.prom"
	# Both are tried before either is asserted: a daemon stuck in open()
	# ignores SIGTERM, and teardown's kill would wait for it for ever.
	local signed=0 stopped=0
	signs_within 20 "$T/sock" || signed=$?
	stops_within 15 "$DAEMON_PID" || stopped=$?
	# metrics-tmp-fifo-daemon-still-signs
	assert_equal "$signed" 0
	# metrics-tmp-fifo-sigterm-stops
	assert_equal "$stopped" 0
	# metrics-tmp-fifo-file-written
	run grep -q '^modsignd_signatures_issued_total{key="default"}' m/modsignd.prom
	assert_success
}

@test "twin-metrics-file-0644-under-umask-077" {
	mkdir -m 0755 m
	umask 077
	start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --metrics-file "$T/m/modsignd.prom"
	run signs_within 20 "$T/sock"
	assert_success
	# twin-metrics-file-mode-0644 (node_exporter reads it as another user)
	assert_equal "$(stat -c %a m/modsignd.prom)" 644
	# twin-metrics-file-readable-by-nobody
	run setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
		grep -c '^modsignd_key_up' "$T/m/modsignd.prom"
	assert_success
}

# dir_refused WHAT CHANGE WHY: modsignd refuses to start when the directory
# of its --WHAT file was changed by CHANGE (a shell command on $T/d), in
# one line "DIR: WHY".
dir_refused() {
	local what=$1 change=$2 why=$3
	mkdir -m 0755 d
	eval "$change"
	try_start "$what" --key default=ephemeral:ecdsa-p256 "--$what" "$T/d/f"
	assert_refused
	assert_one_line "$T/$what.err"
	run grep -qF "$T/d: $why" "$T/$what.err"
	assert_success
}

@test "metrics-dir-group-writable-refused" {
	dir_refused metrics-file "chmod 0775 d" "group or others may write it"
}

@test "metrics-dir-other-writable-sticky-refused" {
	dir_refused metrics-file "chmod 1777 d" "group or others may write it"
}

@test "metrics-dir-foreign-owner-refused" {
	dir_refused metrics-file "chown nobody d" "not owned by the daemon's own user"
}

@test "audit-dir-group-writable-refused" {
	dir_refused audit-log "chmod 0775 d" "group or others may write it"
}

@test "audit-dir-foreign-owner-refused" {
	dir_refused audit-log "chown nobody d" "not owned by the daemon's own user"
}

# As systemd's DynamicUser= makes /var/log/modsignd: a link to the
# daemon's own directory.
@test "twin-audit-dir-through-symlink-accepted" {
	mkdir -m 0700 private
	mkdir -m 0755 private/d
	ln -s private/d d
	try_start audit-log --key default=ephemeral:ecdsa-p256 --audit-log "$T/d/audit.jsonl"
	assert_started audit-log
	# twin-audit-dir-through-symlink-file-made
	[ -f private/d/audit.jsonl ]
}

@test "audit-fifo-at-start-refused" {
	mkdir -m 0755 d
	mkfifo d/audit.jsonl
	try_start audit --key default=ephemeral:ecdsa-p256 --audit-log "$T/d/audit.jsonl"
	assert_refused
	assert_one_line "$T/audit.err"
	run grep -qF "audit log $T/d/audit.jsonl: not a regular file" "$T/audit.err"
	assert_success
}

# rotate_to WHAT: the log moved to audit.jsonl.1, WHAT put in its place
# (a FIFO or nothing), SIGHUP, and the daemon done with its reload.
rotate_to() {
	local before
	before=$(grep -c "policy reloaded" "$T/modsignd.log" || true)
	mv d/audit.jsonl d/audit.jsonl.1
	[ "$1" = fifo ] && mkfifo d/audit.jsonl
	kill -HUP "$DAEMON_PID"
	run eventually 20 reloaded_since "$before"
	assert_success
}

@test "audit-fifo-at-reopen-keeps-old-log" {
	mkdir -m 0755 d
	start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/d/audit.jsonl"
	run signs_within 20 "$T/sock"
	assert_success
	rotate_to fifo
	local signed=0 stopped=0
	signs_within 20 "$T/sock" || signed=$?
	stops_within 15 "$DAEMON_PID" || stopped=$?
	# audit-fifo-at-reopen-still-signs
	assert_equal "$signed" 0
	# audit-fifo-at-reopen-sigterm-stops
	assert_equal "$stopped" 0
	# audit-fifo-at-reopen-recorded-in-old-log
	assert_equal "$(grep -c '"result":"ok"' d/audit.jsonl.1)" 2
	# audit-fifo-at-reopen-says-why
	run grep -qF \
		"cannot reopen the audit log $T/d/audit.jsonl (the old one stays in use): not a regular file" \
		"$T/modsignd.log"
	assert_success
}

@test "twin-audit-rotated-reopened" {
	mkdir -m 0755 d
	start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/d/audit.jsonl"
	run signs_within 20 "$T/sock"
	assert_success
	rotate_to nothing
	run signs_within 20 "$T/sock"
	assert_success
	# twin-audit-rotated-new-log-has-the-new-record
	assert_equal "$(grep -c '"result":"ok"' d/audit.jsonl)" 1
	assert_equal "$(grep -c '"result":"ok"' d/audit.jsonl.1)" 1
}

# --check-config runs as the operator, not as the daemon's (dynamic) user,
# before the unit makes the directories: it leaves them to the start and
# creates nothing in them.
@test "twin-check-config-leaves-file-dirs-to-start" {
	mkdir -m 0755 d
	chown nobody d
	: >empty.conf
	run "$MODSIGND" --config empty.conf --key default=ephemeral:ecdsa-p256 --check-config \
		--audit-log "$T/d/audit.jsonl" --metrics-file "$T/nodir/modsignd.prom"
	assert_success
	# twin-check-config-creates-no-audit-log
	[ ! -e d/audit.jsonl ]
}

# ---- apt purge: the audit log kept, as the dynamic user left it -----------
# postrm, run as root, moves /var/log/private/modsignd aside.  Its contents
# are the dynamic user's: whatever it left there (names starting with a
# dot, subdirectories, a hard link to a file elsewhere) must neither fail
# the purge nor lead root's chown to anything outside.  The script runs
# with /var/log under $T and its group removal cut out.

# purge_with LOG-SETUP: a log directory made by LOG-SETUP (a shell command
# in $T/var/log/private/modsignd, nobody's), then postrm purge; its status
# in $PURGE_RC, its stderr in purge.err, the kept directory in $KEPT.
purge_with() {
	mkdir -p -m 0700 var/log/private
	mkdir -m 0755 var/log/private/modsignd
	(cd var/log/private/modsignd && eval "$1")
	chown -hR nobody var/log/private/modsignd
	ln -s private/modsignd var/log/modsignd
	sed -e "s#/var/log#$T/var/log#g" -e 's/^\tif getent group modsign >\/dev\/null; then/\tif false; then/' \
		"$REPO/debian/modsignd.postrm" >postrm
	PURGE_RC=0
	# PURGE_PRE: run first in the shell that then becomes postrm (its $$)
	sh -c "${PURGE_PRE:-:}; exec sh postrm purge" 2>purge.err || PURGE_RC=$?
	KEPT=$(tr -d '\r' <purge.err | sed -n 's/^modsignd: purge keeps the audit log: //p')
}

# kept_roots_alone: the kept directory is root's, 0700, and so is all in it.
kept_roots_alone() {
	[ -n "$KEPT" ] || { cat purge.err; return 1; }
	[ "$(stat -c %U:%a "$KEPT")" = root:700 ] || { stat -c %U:%a "$KEPT"; return 1; }
	[ -z "$(find "$KEPT" ! -user root)" ] || { find "$KEPT" ! -user root; return 1; }
}

@test "purge-log-of-dot-names-only-kept" {
	purge_with 'echo "{}" >.audit.jsonl'
	# purge-dot-names-only-succeeds (on cf45d72: chown of "DIR/*", exit 1)
	assert_equal "$PURGE_RC" 0
	# purge-dot-names-only-roots-alone (on cf45d72: left 0755, nobody's file)
	run kept_roots_alone
	assert_success
	[ -f "$KEPT/.audit.jsonl" ]
}

@test "purge-log-subdirectory-files-chowned" {
	purge_with 'mkdir old && echo "{}" >old/audit.jsonl.1'
	assert_equal "$PURGE_RC" 0
	# purge-subdirectory-roots-alone (on cf45d72: old/audit.jsonl.1 nobody's)
	run kept_roots_alone
	assert_success
}

# A hard link the dynamic user made to a file elsewhere (its own, or any
# where fs.protected_hardlinks is 0: a set-uid binary loses its bit when
# root chowns it): the file is left as it is.
@test "purge-log-hard-link-not-chowned" {
	echo outside >outside
	purge_with "ln $T/outside linked; echo '{}' >audit.jsonl"
	assert_equal "$PURGE_RC" 0
	# purge-hard-link-target-untouched (on cf45d72: root's)
	assert_equal "$(stat -c %U outside)" nobody
}

# The name the log is moved to already taken, and the one tried next
# (postrm's first fallback was NAME.$$): the log is never moved into a
# directory found there (mv without -T did: NAME.$$/modsignd, while the
# purge named NAME.$$).  date is pinned so the name is known.
@test "purge-name-taken-not-moved-into" {
	mkdir bin
	printf '#!/bin/sh\necho 20260101T000000Z\n' >bin/date
	chmod 755 bin/date
	local base=var/log/modsignd.purged-20260101T000000Z
	PATH=$T/bin:$PATH PURGE_PRE="mkdir -p $base $base.1 $base.\$\$" purge_with 'echo "{}" >audit.jsonl'
	assert_equal "$PURGE_RC" 0
	# purge-name-taken-log-where-said (on cf45d72: in NAME.PID/modsignd)
	[ -f "$KEPT/audit.jsonl" ] || { echo "said $KEPT"; find var/log; false; }
	run kept_roots_alone
	assert_success
	# purge-name-taken-directories-found-left-empty
	[ -z "$(ls -A "$T/$base")" ] && [ -z "$(ls -A "$T/$base.1")" ]
}

@test "twin-purge-keeps-audit-log-roots-alone" {
	purge_with 'echo "{\"result\":\"ok\"}" >audit.jsonl && echo "{}" >audit.jsonl.1 && ln -s /etc/passwd l'
	assert_equal "$PURGE_RC" 0
	run kept_roots_alone
	assert_success
	# twin-purge-log-content-kept
	run grep -c '"result":"ok"' "$KEPT/audit.jsonl"
	assert_output 1
	# twin-purge-link-itself-chowned-not-its-target
	assert_equal "$(stat -c %U /etc/passwd)" root
	# twin-purge-private-dir-emptied, the link in /var/log gone
	[ ! -e var/log/private/modsignd ] && [ ! -L var/log/modsignd ]
}

# ---- the metrics file over the audit log -------------------------------------
# The metrics file is rewritten by rename every 5 s, its temporary
# NAME.tmp unlinked first: named as the audit log (or a rotation of it,
# or with the log as its temporary) in the same directory, it replaced the
# record of what the keys signed with counters, silently.  Refused at
# start, in one line; the twin: both in one directory under other names.

# metrics_over_audit METRICS-NAME [AUDIT-NAME]: start with both in $T/d
# (the audit log through a link to it, as DynamicUser= makes it).
metrics_over_audit() {
	mkdir -m 0755 d
	ln -s d dl
	try_start mo --key default=ephemeral:ecdsa-p256 --audit-log "$T/dl/${2:-audit.jsonl}" \
		--metrics-file "$T/d/$1"
}

@test "metrics-file-same-as-audit-log-refused" {
	metrics_over_audit audit.jsonl
	# metrics-same-as-audit-refused (on cf45d72: started, the log replaced)
	assert_refused
	assert_one_line "$T/mo.err"
	run grep -qF "metrics file $T/d/audit.jsonl: it would replace the audit log $T/dl/audit.jsonl" "$T/mo.err"
	assert_success
}

@test "metrics-file-over-rotated-audit-log-refused" {
	metrics_over_audit audit.jsonl.1
	assert_refused
}

@test "metrics-temporary-is-audit-log-refused" {
	metrics_over_audit m.prom m.prom.tmp
	assert_refused
}

@test "twin-metrics-and-audit-in-one-directory-start" {
	metrics_over_audit modsignd.prom
	assert_started mo
}

# ---- the audit log file itself ------------------------------------------------
# Its directory is the daemon's own (row 58), but a file found there that
# others may write (a logrotate "create 0666", another user's) let them
# append forged records or cut real ones: nobody appended a record with
# "result":"ok" to a log the daemon had taken.  Refused at start, in one
# line; on SIGHUP the old file stays in use.

# audit_file_refused CHANGE: $T/d/audit.jsonl made, changed by CHANGE.
audit_file_refused() {
	mkdir -m 0755 d
	: >d/audit.jsonl
	chmod 0640 d/audit.jsonl
	eval "$1"
	try_start af --key default=ephemeral:ecdsa-p256 --audit-log "$T/d/audit.jsonl"
	assert_refused
	assert_one_line "$T/af.err"
	run grep -qF "audit log $T/d/audit.jsonl: not the daemon's own, or group or others may write it" "$T/af.err"
	assert_success
}

@test "audit-file-other-writable-refused" {
	audit_file_refused "chmod 0666 d/audit.jsonl"
}

@test "audit-file-group-writable-refused" {
	audit_file_refused "chmod 0660 d/audit.jsonl"
}

@test "audit-file-foreign-owner-refused" {
	audit_file_refused "chown nobody d/audit.jsonl"
}

@test "audit-file-other-writable-at-reopen-keeps-old-log" {
	mkdir -m 0755 d
	start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/d/audit.jsonl"
	run signs_within 20 "$T/sock"
	assert_success
	local before
	before=$(grep -c "policy reloaded" "$T/modsignd.log" || true)
	mv d/audit.jsonl d/audit.jsonl.1
	: >d/audit.jsonl
	chmod 0666 d/audit.jsonl
	kill -HUP "$DAEMON_PID"
	run eventually 20 reloaded_since "$before"
	assert_success
	run signs_within 20 "$T/sock"
	assert_success
	# audit-file-other-writable-at-reopen-recorded-in-old-log
	assert_equal "$(grep -c '"result":"ok"' d/audit.jsonl.1)" 2
	[ ! -s d/audit.jsonl ]
	run grep -qF "cannot reopen the audit log $T/d/audit.jsonl (the old one stays in use): not the daemon's own" \
		"$T/modsignd.log"
	assert_success
}

@test "twin-audit-file-0640-own-taken" {
	mkdir -m 0755 d
	echo '{"earlier":1}' >d/audit.jsonl
	chmod 0640 d/audit.jsonl
	start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --audit-log "$T/d/audit.jsonl"
	run signs_within 20 "$T/sock"
	assert_success
	assert_equal "$(grep -c '"result":"ok"' d/audit.jsonl)" 1
}

# The directory of the audit log or metrics file is reached through links
# (private_dir_of()): a path whose directory is no directory is named as
# such, not as "a symbolic link is not followed", which is untrue there.
@test "metrics-dir-not-a-directory-named" {
	: >d
	try_start nd --key default=ephemeral:ecdsa-p256 --metrics-file "$T/d/m.prom"
	assert_refused
	assert_one_line "$T/nd.err"
	run grep -qxF "modsignd: $T/d: not a directory" "$T/nd.err"
	assert_success
}
