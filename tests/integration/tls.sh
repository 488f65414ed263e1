#!/bin/bash
# Build farms: mutual TLS on loopback, per-client key policy, the audit log,
# the config file, SIGHUP and socket activation.
. "$(dirname "$0")/../lib.sh"

C=$CLIENT
cd "$T" || exit 1
PORT=$(free_port)

# ---- a CA, the server, and builders (pki, issue: tests/lib.sh) -------------
pki farm-ca
pki rogue-ca
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >san.ext
issue signing-host farm-ca -extfile san.ext
issue builder-1 farm-ca
issue builder-2 farm-ca
issue stranger farm-ca
issue rogue rogue-ca
# An expired certificate: openssl ca can set dates in the past.
mkdir -p ca/new && : >ca/index && echo 1000 >ca/serial
cat >ca.cnf <<CNF
[ ca ]
default_ca = farm
[ farm ]
dir = ca
database = ca/index
new_certs_dir = ca/new
serial = ca/serial
certificate = farm-ca.crt
private_key = farm-ca.key
default_md = sha256
policy = any
[ any ]
commonName = supplied
CNF
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=old-builder" \
	-keyout old-builder.key -out old-builder.csr 2>/dev/null
openssl ca -batch -config ca.cnf -in old-builder.csr -out old-builder.crt \
	-startdate 20200101000000Z -enddate 20200201000000Z >/dev/null 2>&1

cat >modsignd.conf <<CONF
# modsignd.conf for the test: every option has a key of its own name.
listen = unix:$T/sock
listen = tls:127.0.0.1:$PORT
key = default=ephemeral:rsa2048
key = ec=ephemeral:ecdsa-p384
tls-cert = $T/signing-host.crt
tls-key = $T/signing-host.key
tls-client-ca = $T/farm-ca.crt
allow = uid:0
allow = cn:builder-1
allow = cn:builder-2=ec
allow = cn:old-builder
audit-log = $T/audit.jsonl
organization = modsign farm
CONF
check check-config-ok $MODSIGND --config modsignd.conf --check-config
printf 'listen unix:/x\n' >bad1.conf
refute check-config-rejects-bad-line $MODSIGND --config bad1.conf --check-config
$MODSIGND --config bad1.conf --check-config 2>err
check check-config-names-line grep -q "bad1.conf:1: expected 'key = value'" err
printf 'key = default=ephemeral\nfrobnicate = 1\n' >bad2.conf
$MODSIGND --config bad2.conf --check-config 2>err
check check-config-names-unknown-setting grep -q "unknown setting 'frobnicate'" err
printf 'key = default=ephemeral\nallow = cn:x=\n' >bad3.conf
refute check-config-rejects-bad-rule $MODSIGND --config bad3.conf --check-config

"$MODSIGND" --config modsignd.conf 2>>modsignd.log &
DAEMON_PID=$!
DAEMON_PIDS+=($!)
for _ in $(seq 1 200); do [ -S sock ] && break; sleep 0.05; done
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done
$C --server unix:$T/sock cert >rsa.pem
$C --server unix:$T/sock cert --key ec >ec.pem

tls() { $C --server tls:localhost:$PORT --tls-ca farm-ca.crt "$@"; }
as() { local who=$1; shift; tls --tls-cert $who.crt --tls-key $who.key "$@"; }
fresh() { cp "$(real_modules 1)" "$1"; $C strip "$1"; }

# ---- a good builder --------------------------------------------------------
fresh b1.ko
check tls-status as builder-1 status
# A report that cannot be written is an error (SIGPIPE is ignored over TLS).
status_to() { as builder-1 status >"$1"; }
refute tls-status-to-full-disk-fails status_to /dev/full
cp "$T/last.out" "$T/full.err"
check tls-status-to-full-disk-says-why grep -q "cannot write to stdout: No space left" "$T/full.err"
check tls-status-to-dev-null-succeeds status_to /dev/null
check tls-sign as builder-1 sign b1.ko
check tls-signature-verifies $C verify --cert rsa.pem b1.ko
fresh b1ec.ko
check tls-sign-ec-over-ip tls --server tls:127.0.0.1:$PORT --tls-cert builder-1.crt --tls-key builder-1.key sign --key ec --hash sha384 b1ec.ko
check tls-ec-signature-verifies $C verify --cert ec.pem b1ec.ko
split_module b1.ko b1.body b1.p7
body_digest=$(sha256sum b1.body | cut -d' ' -f1)
check audit-has-digest-of-signed-module grep -q "\"identity\":\"cn:builder-1\".*\"digest\":\"$body_digest\".*\"result\":\"ok\"" audit.jsonl

# The client's config file and environment do the same.
cat >client.conf <<CONF
server = tls:localhost:$PORT
tls-ca = $T/farm-ca.crt
tls-cert = $T/builder-1.crt
tls-key = $T/builder-1.key
CONF
fresh cf.ko
check client-config-file env MODSIGN_CONFIG=$T/client.conf $C sign cf.ko
check client-config-signature-verifies $C verify --cert rsa.pem cf.ko
fresh env.ko
check client-env env MODSIGN_SERVER=tls:localhost:$PORT MODSIGN_TLS_CA=farm-ca.crt MODSIGN_TLS_CERT=builder-1.crt MODSIGN_TLS_KEY=builder-1.key $C sign env.ko

# Failover: the first server is down; the client says which one answered.
fresh fo.ko
$C --server tls:localhost:1 --server tls:localhost:$PORT --tls-ca farm-ca.crt \
	--tls-cert builder-1.crt --tls-key builder-1.key sign fo.ko 2>fo.err
check failover-signs $C verify --cert rsa.pem fo.ko
check failover-says-which grep -q "using tls:localhost:$PORT" fo.err

# ---- refusals: each audited, module untouched -----------------------------
refused() { # NAME REASON-IN-AUDIT CLIENT-ARGS...
	local name=$1 reason=$2
	shift 2
	fresh r.ko
	local before lines
	before=$(sha r.ko)
	lines=$(wc -l <audit.jsonl)
	if "$@" sign r.ko >out 2>err; then fail "$name" "signed"; return; fi
	[ "$(sha r.ko)" = "$before" ] || { fail "$name" "module changed"; return; }
	# The daemon audits after it has answered: the client may exit first.
	audited_since() { tail -n +$((lines + 1)) audit.jsonl | grep -q -- "$reason"; }
	eventually 5 audited_since ||
		{ fail "$name" "no audit record with '$reason': $(tail -n 2 audit.jsonl)"; return; }
	pass "$name ($(tr "\n" " " <err | head -c 160))"
}
refused tls-refuses-no-certificate "TLS handshake failed: peer did not return a certificate" tls
refused tls-refuses-other-ca "unable to get local issuer\|unknown ca" as rogue
refused tls-refuses-expired "certificate has expired" as old-builder
refused tls-refuses-unnamed-builder "cn:stranger is not named by the policy" as stranger
refused tls-refuses-key-not-granted "key default is not granted to cn:builder-2" as builder-2
check key-refusal-audit-has-module-and-digest bash -c "grep 'not granted to cn:builder-2' audit.jsonl | grep -q '\"digest\":\"[0-9a-f]\{64\}\".*\"module\":\"r.ko\"'"
fresh b2.ko
check tls-granted-key-works as builder-2 sign --key ec b2.ko
check tls-granted-key-verifies $C verify --cert ec.pem b2.ko
check audit-lines-are-json python3 -c "
import json, sys
need = {'time', 'identity', 'key', 'key_id', 'hash', 'digest', 'module', 'result'}
n = 0
for line in open('$T/audit.jsonl'):
    rec = json.loads(line); n += 1
    assert need <= rec.keys(), rec
assert n >= 8, n
"

# ---- SIGHUP: new policy, same keys ----------------------------------------
sed -i 's/^allow = cn:builder-2=ec$/allow = cn:builder-2=ec,default\nallow = cn:stranger/' modsignd.conf
# The daemon logs the SIGHUP on its main thread just before acting on it,
# and serves no request in between: once the line is there, one attempt.
hups() { grep -c "SIGHUP: re-reading the policy" modsignd.log; }
hup() { # signal, and wait until the daemon says it has it
	local h0
	h0=$(hups)
	kill -HUP $DAEMON_PID
	hup_seen() { [ "$(hups)" -gt "$h0" ]; }
	eventually 5 hup_seen
}
hup
fresh hup.ko
check sighup-grants-new-rule as stranger sign hup.ko
check sighup-keeps-one-time-key $C verify --cert rsa.pem hup.ko
check sighup-same-certificate cmp rsa.pem <($C --server unix:$T/sock cert)
echo 'allow = nonsense' >>modsignd.conf
hup
check sighup-bad-policy-logged eventually 5 grep -q "keeping the old policy" modsignd.log
check sighup-bad-policy-keeps-old as stranger status
stop_daemon $DAEMON_PID

# ---- socket activation ------------------------------------------------------
APORT=$((PORT + 1))
systemd-socket-activate -l "$T/act.sock" -l 127.0.0.1:$APORT --fdname=local:tls \
	"$MODSIGND" --key default=ephemeral:rsa2048 --tls-cert signing-host.crt \
	--tls-key signing-host.key --tls-client-ca farm-ca.crt --allow uid:0 \
	--allow cn:builder-1 2>>activate.log &
DAEMON_PIDS+=($!)
for _ in $(seq 1 100); do [ -S act.sock ] && break; sleep 0.05; done
check socket-activated-unix $C --server unix:$T/act.sock status
check socket-activated-tls $C --server tls:localhost:$APORT --tls-ca farm-ca.crt \
	--tls-cert builder-1.crt --tls-key builder-1.key status
check socket-activation-logged grep -q "using 2 socket(s) from systemd" activate.log
refute socket-activated-tls-still-checks-certs $C --server tls:localhost:$APORT \
	--tls-ca farm-ca.crt --tls-cert rogue.crt --tls-key rogue.key status
