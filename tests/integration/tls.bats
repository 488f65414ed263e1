#!/usr/bin/env bats
# Build farms: mutual TLS on loopback, per-client key policy, the audit log,
# the config file, SIGHUP and socket activation.  Each refusal has its
# granted twin (the same daemon serving the same request from a builder
# the policy names).
#
# The PKI (two CAs, the signing host, five builders, one of them expired)
# is made once for the file (setup_file): a dozen openssl runs that every
# case only reads.  Each case starts its own daemon in its own $T.

load ../common

setup_file() {
	local P=$BATS_FILE_TMPDIR/pki

	mkdir "$P"
	cd "$P" || return 1
	pki farm-ca
	pki rogue-ca
	issue_server signing-host farm-ca DNS:localhost,IP:127.0.0.1
	issue builder-1 farm-ca
	issue builder-2 farm-ca
	issue stranger farm-ca
	issue rogue rogue-ca
	# Builder-1's name without an extended key usage: the daemon refuses it.
	issue_cn builder-1-no-eku builder-1 farm-ca basicConstraints=CA:FALSE
	# Certificates for the signing host that the client refuses (the
	# farm CA's, with the name it asks for, but not a server's) and their
	# twins: see "the server's identity".
	issue_cn builder-shaped localhost farm-ca basicConstraints=CA:FALSE
	issue_cn cn-only localhost farm-ca extendedKeyUsage=serverAuth
	issue no-eku-host farm-ca subjectAltName=DNS:localhost
	issue client-eku-host farm-ca subjectAltName=DNS:localhost extendedKeyUsage=clientAuth
	issue_server localhost-host farm-ca DNS:localhost
	issue_server ip-host farm-ca IP:127.0.0.1
	issue_server partial-wildcard farm-ca 'DNS:s*.farm.test'
	issue_server full-wildcard farm-ca 'DNS:*.farm.test'
	issue ca-true-host farm-ca subjectAltName=DNS:localhost,IP:127.0.0.1 \
		extendedKeyUsage=serverAuth basicConstraints=critical,CA:TRUE
	issue_server short-address farm-ca DNS:127.1
	issue_server other-address farm-ca IP:177.0.0.1
	# An expired certificate: openssl ca can set dates in the past.
	mkdir -p ca/new && : >ca/index && echo 1000 >ca/serial
	cat >ca.cnf <<-CNF
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
	printf 'extendedKeyUsage=clientAuth\n' >old-builder.ext
	openssl ca -batch -config ca.cnf -in old-builder.csr -out old-builder.crt \
		-extfile old-builder.ext -startdate 20200101000000Z -enddate 20200201000000Z \
		>/dev/null 2>&1
}

setup() {
	case_setup
	P=$BATS_FILE_TMPDIR/pki
	TLS_PKI=$P # tls, as: the client trusts $P/farm-ca.crt
	PORT=$(free_port)
	cat >modsignd.conf <<-CONF
	# modsignd.conf for the test: every option has a key of its own name.
	listen = unix:$T/sock
	listen = tls:127.0.0.1:$PORT
	key = default=ephemeral:rsa2048
	key = ec=ephemeral:ecdsa-p384
	tls-cert = $P/signing-host.crt
	tls-key = $P/signing-host.key
	tls-client-ca = $P/farm-ca.crt
	allow = uid:0
	allow = cn:builder-1
	allow = cn:builder-2=ec
	allow = cn:old-builder
	audit-log = $T/audit.jsonl
	organization = modsign farm
	CONF
}

# farm_daemon: the daemon of modsignd.conf, ready on both listeners; its
# two certificates in rsa.pem and ec.pem.
farm_daemon() {
	modsignd_start "$T/modsignd.log" --config modsignd.conf || return 1
	DAEMON_PID=$MODSIGND_PID
	DAEMON_PIDS+=("$MODSIGND_PID")
	wait_port "$PORT" || { echo "nothing listens on 127.0.0.1:$PORT"; return 1; }
	"$C" --server "unix:$T/sock" cert >rsa.pem
	"$C" --server "unix:$T/sock" cert --key ec >ec.pem
}

# ---- the config file ---------------------------------------------------------
@test "check-config-ok" {
	run "$MODSIGND" --config modsignd.conf --check-config
	assert_success
}

# A server certificate of old (no subjectAltName, no EKU), which every
# client now refuses: said at start and by --check-config, not refused.
@test "check-config-warns-server-cert-clients-refuse" {
	for cert in builder-shaped no-eku-host ca-true-host; do
		sed "s|$P/signing-host\.|$P/$cert.|" modsignd.conf >old.conf
		run "$MODSIGND" --config old.conf --check-config
		assert_success
		assert_output --partial "$P/$cert.crt: modsign-client refuses it"
	done
}

@test "twin-check-config-server-cert-clients-take" {
	run "$MODSIGND" --config modsignd.conf --check-config
	assert_success
	refute_output --partial "refuses it"
}

@test "check-config-rejects-bad-line" {
	printf 'listen unix:/x\n' >bad1.conf
	run "$MODSIGND" --config bad1.conf --check-config
	assert_failure
}

@test "check-config-names-line" {
	printf 'listen unix:/x\n' >bad1.conf
	run "$MODSIGND" --config bad1.conf --check-config
	assert_output --partial "bad1.conf:1: expected 'key = value'"
}

@test "check-config-names-unknown-setting" {
	printf 'key = default=ephemeral\nfrobnicate = 1\n' >bad2.conf
	run "$MODSIGND" --config bad2.conf --check-config
	assert_output --partial "unknown setting 'frobnicate'"
}

@test "check-config-rejects-bad-rule" {
	printf 'key = default=ephemeral\nallow = cn:x=\n' >bad3.conf
	run "$MODSIGND" --config bad3.conf --check-config
	assert_failure
}

# ---- a good builder ----------------------------------------------------------
@test "tls-status" {
	farm_daemon
	run as builder-1 status
	assert_success
}

# A report that cannot be written is an error (SIGPIPE is ignored over TLS).
status_to() { as builder-1 status >"$1"; }

@test "tls-status-to-full-disk-fails" {
	farm_daemon
	run status_to /dev/full
	assert_failure
}

@test "tls-status-to-full-disk-says-why" {
	farm_daemon
	run status_to /dev/full
	assert_output --partial "cannot write to stdout: No space left"
}

@test "tls-status-to-dev-null-succeeds" {
	farm_daemon
	run status_to /dev/null
	assert_success
}

@test "tls-sign" {
	farm_daemon
	fresh b1.ko
	run as builder-1 sign b1.ko
	assert_success
}

@test "tls-signature-verifies" {
	farm_daemon
	fresh b1.ko
	as builder-1 sign b1.ko
	run "$C" verify --cert rsa.pem b1.ko
	assert_success
}

@test "tls-sign-ec-over-ip" {
	farm_daemon
	fresh b1ec.ko
	run tls --server "tls:127.0.0.1:$PORT" --tls-cert "$P/builder-1.crt" --tls-key "$P/builder-1.key" \
		sign --key ec --hash sha384 b1ec.ko
	assert_success
}

@test "tls-ec-signature-verifies" {
	farm_daemon
	fresh b1ec.ko
	tls --server "tls:127.0.0.1:$PORT" --tls-cert "$P/builder-1.crt" --tls-key "$P/builder-1.key" \
		sign --key ec --hash sha384 b1ec.ko
	run "$C" verify --cert ec.pem b1ec.ko
	assert_success
}

@test "audit-has-digest-of-signed-module" {
	farm_daemon
	fresh b1.ko
	as builder-1 sign b1.ko
	split_module b1.ko b1.body b1.p7
	body_digest=$(sha b1.body)
	audited() { grep -q "\"identity\":\"cn:builder-1\".*\"digest\":\"$body_digest\".*\"result\":\"ok\"" audit.jsonl; }
	# The daemon audits after it has answered: the client may exit first.
	eventually 30 audited || { echo "digest $body_digest"; cat audit.jsonl; false; }
}

# ---- the client's config file and environment do the same -------------------
client_conf() {
	cat >client.conf <<-CONF
	server = tls:localhost:$PORT
	tls-ca = $P/farm-ca.crt
	tls-cert = $P/builder-1.crt
	tls-key = $P/builder-1.key
	CONF
}

@test "client-config-file" {
	farm_daemon
	client_conf
	fresh cf.ko
	run env MODSIGN_CONFIG="$T/client.conf" "$C" sign cf.ko
	assert_success
}

@test "client-config-signature-verifies" {
	farm_daemon
	client_conf
	fresh cf.ko
	env MODSIGN_CONFIG="$T/client.conf" "$C" sign cf.ko
	run "$C" verify --cert rsa.pem cf.ko
	assert_success
}

@test "client-env" {
	farm_daemon
	fresh env.ko
	run env MODSIGN_SERVER="tls:localhost:$PORT" MODSIGN_TLS_CA="$P/farm-ca.crt" \
		MODSIGN_TLS_CERT="$P/builder-1.crt" MODSIGN_TLS_KEY="$P/builder-1.key" "$C" sign env.ko
	assert_success
}

# ---- failover: the first server is down; the client says which one answered -
failover() {
	fresh fo.ko
	"$C" --server tls:localhost:1 --server "tls:localhost:$PORT" --tls-ca "$P/farm-ca.crt" \
		--tls-cert "$P/builder-1.crt" --tls-key "$P/builder-1.key" sign fo.ko 2>fo.err
}

@test "failover-signs" {
	farm_daemon
	failover
	run "$C" verify --cert rsa.pem fo.ko
	assert_success
}

@test "failover-says-which" {
	farm_daemon
	failover
	run cat fo.err
	assert_output --partial "using tls:localhost:$PORT"
}

# A name that does not resolve is named with the resolver's reason (it was
# "No route to host"); the twin, a name that resolves to a closed port,
# still says what connect(2) said.
@test "unresolvable-host-named" {
	run "$C" --server tls:no-such-host.invalid:7787 --tls-ca "$P/farm-ca.crt" status
	assert_failure
	assert_output "modsign-client: cannot connect to modsignd at tls:no-such-host.invalid:7787: cannot resolve no-such-host.invalid: Name or service not known"
}

@test "resolvable-host-closed-port-refused" {
	run "$C" --server tls:localhost:1 --tls-ca "$P/farm-ca.crt" status
	assert_failure
	assert_output "modsign-client: cannot connect to modsignd at tls:localhost:1: Connection refused"
}

# ---- refusals: each audited, module untouched ---------------------------------
# refused REASON-IN-AUDIT CLIENT-ARGS...: the request fails, the module
# is unchanged, and the audit log gains a record with the reason.  (n0,
# not lines: run sets the array lines.)
refused() {
	local reason=$1 before n0
	shift
	fresh r.ko
	before=$(sha r.ko)
	n0=$(cat audit.jsonl 2>/dev/null | wc -l)
	run "$@" sign r.ko
	assert_failure
	assert_equal "$(sha r.ko)" "$before"
	# The daemon audits after it has answered: the client may exit first.
	audited_since() { tail -n +$((n0 + 1)) audit.jsonl | grep -q -- "$reason"; }
	eventually 30 audited_since ||
		{ echo "no audit record with '$reason': $(tail -n 2 audit.jsonl)"; false; }
}

@test "tls-refuses-no-certificate" {
	farm_daemon
	refused "TLS handshake failed: peer did not return a certificate" tls
}

@test "tls-refuses-other-ca" {
	farm_daemon
	refused "unable to get local issuer\|unknown ca" as rogue
}

@test "tls-refuses-expired" {
	farm_daemon
	refused "certificate has expired" as old-builder
}

# A certificate with no extended key usage is fit for every purpose: the
# farm CA's certificate for anything else would pass for a builder.
@test "tls-client-cert-without-eku-refused" {
	farm_daemon
	refused "unsuitable certificate purpose" as builder-1-no-eku
}

@test "tls-refuses-unnamed-builder" {
	farm_daemon
	refused "cn:stranger is not named by the policy" as stranger
}

@test "tls-refuses-key-not-granted" {
	farm_daemon
	refused "key default is not granted to cn:builder-2" as builder-2
}

@test "key-refusal-audit-has-module-and-digest" {
	farm_daemon
	refused "key default is not granted to cn:builder-2" as builder-2
	run bash -c "grep 'not granted to cn:builder-2' audit.jsonl | grep -q '\"digest\":\"[0-9a-f]\{64\}\".*\"module\":\"r.ko\"'"
	assert_success || cat audit.jsonl
}

# The twin of tls-refuses-key-not-granted: the key that is granted.
@test "tls-granted-key-works" {
	farm_daemon
	fresh b2.ko
	run as builder-2 sign --key ec b2.ko
	assert_success
}

@test "tls-granted-key-verifies" {
	farm_daemon
	fresh b2.ko
	as builder-2 sign --key ec b2.ko
	run "$C" verify --cert ec.pem b2.ko
	assert_success
}

# Every kind of record the suite makes, then each line checked: JSON with
# every field.
@test "audit-lines-are-json" {
	farm_daemon
	fresh a.ko && as builder-1 sign a.ko
	fresh b.ko && as builder-1 sign --key ec --hash sha384 b.ko
	fresh c.ko && as builder-2 sign --key ec c.ko
	refused "TLS handshake failed: peer did not return a certificate" tls
	refused "unable to get local issuer\|unknown ca" as rogue
	refused "certificate has expired" as old-builder
	refused "cn:stranger is not named by the policy" as stranger
	refused "key default is not granted to cn:builder-2" as builder-2
	three_ok() { [ "$(grep -c '"result":"ok"' audit.jsonl)" -ge 3 ]; }
	eventually 30 three_ok
	run python3 -c "
import json, sys
need = {'time', 'identity', 'key', 'key_id', 'hash', 'digest', 'module', 'result'}
n = 0
for line in open('$T/audit.jsonl'):
    rec = json.loads(line); n += 1
    assert need <= rec.keys(), rec
assert n >= 8, n
"
	assert_success
}

# ---- the server's identity ---------------------------------------------------
# The daemon shows one of setup_file's server certificates; builder-1
# asks for HOST.  The client must refuse any certificate of the farm CA
# that is not a server's for that name: the name only in subjectAltName
# (never the CN), no partial wildcard, serverAuth required.
farm_showing() { # CERT: farm_daemon(), its TLS certificate $P/CERT.crt
	sed -i "s|$P/signing-host\.|$P/$1.|" modsignd.conf && farm_daemon
}
# to HOST CLIENT-ARGS...: builder-1 to tls:HOST:$PORT; sign.farm.test
# is 127.0.0.1 (in_farm_dns; the case calls need_mount_ns first).
to() {
	local host=$1 via=()
	shift
	[ "$host" != sign.farm.test ] || via=(in_farm_dns)
	"${via[@]}" "$C" --server "tls:$host:$PORT" --tls-ca "$P/farm-ca.crt" \
		--tls-cert "$P/builder-1.crt" --tls-key "$P/builder-1.key" "$@"
}
# in_farm_dns CMD...: CMD in a mount namespace of its own whose /etc/hosts
# gives sign.farm.test the address 127.0.0.1; the machine's is untouched.
in_farm_dns() {
	printf '127.0.0.1 sign.farm.test\n' >"$T/hosts"
	unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$T/hosts" "$@"
}
# server_refused WHY: the last run failed, WHY said, nothing signed.
server_refused() {
	assert_failure
	assert_output --partial "$1"
	run grep -c '"result":"ok"' audit.jsonl
	assert_output 0
}

# The builders' certificates of old: CN=localhost, no subjectAltName, no EKU.
@test "tls-server-builder-shaped-cert-refused" {
	farm_showing builder-shaped
	run to localhost status
	server_refused "certificate verify failed"
}

# serverAuth, but the name only in the CN.
@test "tls-server-name-only-in-cn-refused" {
	farm_showing cn-only
	run to localhost status
	server_refused "hostname mismatch"
}

@test "tls-server-cert-without-eku-refused" {
	farm_showing no-eku-host
	run to localhost status
	server_refused "unsuitable certificate purpose"
}

# A builder's certificate (clientAuth) with the server's name in it.
# OpenSSL's ssl_server purpose refused it already: kept as a guard.
@test "tls-server-clientauth-only-cert-refused" {
	farm_showing client-eku-host
	run to localhost status
	server_refused "unsuitable certificate purpose"
}

@test "tls-server-partial-wildcard-refused" {
	farm_showing partial-wildcard
	need_mount_ns
	fresh w.ko
	run to sign.farm.test sign w.ko
	server_refused "hostname mismatch"
}

@test "twin-tls-server-full-wildcard-accepted" {
	farm_showing full-wildcard
	need_mount_ns
	fresh w.ko
	run to sign.farm.test sign w.ko
	assert_success
	run "$C" verify --cert rsa.pem w.ko
	assert_success
}

@test "twin-tls-server-dns-san-serverauth-accepted" {
	farm_showing localhost-host
	run to localhost status
	assert_success
}

@test "twin-tls-server-ip-san-accepted" {
	farm_showing ip-host
	run to 127.0.0.1 status
	assert_success
	# tls-server-ip-san-is-no-dns-name
	run to localhost status
	assert_failure
	assert_output --partial "hostname mismatch"
}

# A server certificate that can issue others, as a signing host's: the
# daemon refuses a builder's (attack-daemon: tls-ca-true-client-cert-refused).
@test "tls-server-ca-true-cert-refused" {
	farm_showing ca-true-host
	run to localhost status
	server_refused "has CA markings"
}

# "127.1" is 127.0.0.1 to getaddrinfo() (inet_aton()), but no address to
# OpenSSL: the client connected to 127.0.0.1 and took a certificate with
# DNS:127.1, a name, for it.
@test "tls-server-short-address-refused" {
	farm_showing short-address
	run to 127.1 status
	server_refused "127.1: an IPv4 address must be written a.b.c.d"
}

# "0177.0.0.1" is 127.0.0.1 to getaddrinfo() (octal) and 177.0.0.1 to
# OpenSSL: the client connected to one address and checked another's.
@test "tls-server-octal-address-refused" {
	farm_showing other-address
	run to 0177.0.0.1 status
	server_refused "0177.0.0.1: an IPv4 address must be written a.b.c.d"
}

# RFC 6066 3: no literal address as a server name (SNI).  openssl
# s_server -trace shows the ClientHello's extensions.
sni_of() { # HOST: the trace of builder-1's ClientHello to tls:HOST:$PORT
	local pid
	timeout 20 openssl s_server -trace -naccept 1 -tls1_3 -accept "$PORT" \
		-cert "$P/signing-host.crt" -key "$P/signing-host.key" \
		< <(sleep 20) >trace.out 2>&1 & # stdin open: at EOF it stops
	pid=$!
	eventually 30 grep -q ACCEPT trace.out
	timeout 5 "$C" --server "tls:$1:$PORT" --tls-ca "$P/farm-ca.crt" \
		--tls-cert "$P/builder-1.crt" --tls-key "$P/builder-1.key" status >/dev/null 2>&1
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	grep -ac 'extension_type=server_name' trace.out
}

@test "tls-client-sends-no-sni-for-an-address" {
	run sni_of 127.0.0.1
	assert_output 0
}

@test "twin-tls-client-sends-sni-for-a-name" {
	run sni_of localhost
	assert_output 1
}

# ---- SIGHUP: new policy, same keys ------------------------------------------
# hup (common.bash) waits for the daemon's line about the SIGHUP, logged on
# its main thread just before acting on it; it serves no request in
# between: once the line is there, one attempt.

# The policy grows: builder-2 may use the default key, stranger any.
grow_policy() {
	sed -i 's/^allow = cn:builder-2=ec$/allow = cn:builder-2=ec,default\nallow = cn:stranger/' modsignd.conf
	hup
}

@test "sighup-grants-new-rule" {
	farm_daemon
	# Twin: refused before the SIGHUP.
	fresh pre.ko
	run as stranger sign pre.ko
	assert_failure
	grow_policy
	fresh hup.ko
	run as stranger sign hup.ko
	assert_success
}

@test "sighup-keeps-one-time-key" {
	farm_daemon
	grow_policy
	fresh hup.ko
	as stranger sign hup.ko
	run "$C" verify --cert rsa.pem hup.ko
	assert_success
}

@test "sighup-same-certificate" {
	farm_daemon
	grow_policy
	"$C" --server "unix:$T/sock" cert >after.pem
	run cmp rsa.pem after.pem
	assert_success
}

@test "sighup-bad-policy-logged" {
	farm_daemon
	grow_policy
	echo 'allow = nonsense' >>modsignd.conf
	hup
	eventually 30 grep -q "keeping the old policy" modsignd.log || { tail -n 3 modsignd.log; false; }
}

@test "sighup-bad-policy-keeps-old" {
	farm_daemon
	grow_policy
	echo 'allow = nonsense' >>modsignd.conf
	hup
	eventually 30 grep -q "keeping the old policy" modsignd.log
	run as stranger status
	assert_success
}

# ---- socket activation -------------------------------------------------------
# systemd-socket-activate binds both sockets and execs the daemon in its
# own process, with the fds named local and tls.
activated() {
	systemd-socket-activate -l "$T/act.sock" -l "127.0.0.1:$PORT" --fdname=local:tls \
		"$MODSIGND" --key default=ephemeral:rsa2048 --tls-cert "$P/signing-host.crt" \
		--tls-key "$P/signing-host.key" --tls-client-ca "$P/farm-ca.crt" --allow uid:0 \
		--allow cn:builder-1 2>>activate.log 3>&- &
	DAEMON_PID=$!
	DAEMON_PIDS+=($!)
	eventually 30 test -S act.sock
}

@test "socket-activated-unix" {
	activated
	run "$C" --server "unix:$T/act.sock" status
	assert_success
}

@test "socket-activated-tls" {
	activated
	run as builder-1 status
	assert_success
}

@test "socket-activation-logged" {
	activated
	# The daemon logs it before it serves: one answer, and the line is there.
	"$C" --server "unix:$T/act.sock" status >/dev/null
	run grep -q "using 2 socket(s) from systemd" activate.log
	assert_success || cat activate.log
}

@test "socket-activated-tls-still-checks-certs" {
	activated
	run as rogue status
	assert_failure
}

# ---- revocation, pins and trusted intermediates -------------------------------
# A PKI of its own, made once for the file on first use: a root, two
# issuing sub-CAs (a and b) under it, and from sub-CA a (an `openssl ca`
# with a database, so that it can revoke and issue CRLs) builder-1's stolen
# certificate (revoked), its re-issued one, and builder-2; from sub-CA b,
# a certificate for the same name builder-1.  Leaves carry the clientAuth
# EKU; each NAME.crt is the leaf and its sub-CA, as a builder sends it.
# CRLs: empty.crl (nothing revoked yet), revoked.crl (the stolen one),
# expired.crl (revoked.crl's content, past its next update).
rev_pki() {
	R=$BATS_FILE_TMPDIR/rev
	[ -e "$R/done" ] || (mkdir -p "$R" && cd "$R" && rev_pki_make)
}
rev_pki_make() {
	local ca='basicConstraints=critical,CA:TRUE' use='keyUsage=critical,keyCertSign,cRLSign'
	printf 'extendedKeyUsage=clientAuth\n' >leaf.ext
	pki rev-root
	issue sub-a rev-root "$ca" "$use"
	issue sub-b rev-root "$ca" "$use"
	mkdir -p a/new && : >a/index && echo 1000 >a/serial && echo 1000 >a/crlnumber
	cat >a.cnf <<-CNF
	[ ca ]
	default_ca = a
	[ a ]
	dir = a
	database = a/index
	new_certs_dir = a/new
	serial = a/serial
	crlnumber = a/crlnumber
	certificate = sub-a.crt
	private_key = sub-a.key
	default_md = sha256
	default_days = 30
	default_crl_days = 30
	policy = any
	unique_subject = no
	x509_extensions = leaf
	[ any ]
	commonName = supplied
	[ leaf ]
	extendedKeyUsage = clientAuth
	CNF
	for who in stolen:builder-1 new:builder-1 b2:builder-2; do
		openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-subj "/CN=${who#*:}" -keyout "${who%%:*}.key" -out "${who%%:*}.csr" 2>/dev/null
		openssl ca -batch -config a.cnf -in "${who%%:*}.csr" -out "${who%%:*}.leaf" \
			>/dev/null 2>&1 || return 1
		openssl x509 -in "${who%%:*}.leaf" >"${who%%:*}.crt" && cat sub-a.crt >>"${who%%:*}.crt"
	done
	openssl ca -batch -config a.cnf -gencrl -out empty.crl >/dev/null 2>&1 || return 1
	openssl ca -batch -config a.cnf -revoke stolen.leaf -crl_reason keyCompromise \
		>/dev/null 2>&1 || return 1
	openssl ca -batch -config a.cnf -gencrl -out revoked.crl >/dev/null 2>&1 || return 1
	openssl ca -batch -config a.cnf -gencrl -out expired.crl -crl_lastupdate 20200101000000Z \
		-crl_nextupdate 20200201000000Z >/dev/null 2>&1 || return 1
	issue builder-1 sub-b && cat builder-1.crt sub-b.crt >other-b1.crt &&
		mv builder-1.key other-b1.key
	cat rev-root.crt sub-a.crt sub-b.crt >all-cas.crt
	touch done
}

# rev_daemon CLIENT-CA RULE... [-- ARGS...]: a daemon trusting CLIENT-CA
# (a file of $R) for TLS peers, with an allow rule per RULE and ARGS.
rev_daemon() {
	local ca=$1 args=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=(--allow "$1"); shift; done
	[ "${1:-}" = -- ] && shift
	PORT=$(free_port)
	modsignd_start "$T/modsignd.log" --listen "unix:$T/sock" --listen "tls:127.0.0.1:$PORT" \
		--key default=ephemeral:ecdsa-p256 --tls-cert "$P/signing-host.crt" \
		--tls-key "$P/signing-host.key" --tls-client-ca "$R/$ca" \
		--audit-log "$T/audit.jsonl" --allow uid:0 "${args[@]}" "$@" || return 1
	DAEMON_PID=$MODSIGND_PID
	DAEMON_PIDS+=("$MODSIGND_PID")
	wait_port "$PORT"
}

# rev_as WHO ARGS...: the client over TLS with $R/WHO's certificate.
rev_as() {
	local who=$1
	shift
	"$C" --server "tls:localhost:$PORT" --tls-ca "$P/farm-ca.crt" --tls-cert "$R/$who.crt" \
		--tls-key "$R/$who.key" "$@"
}

# The SHA-256 of $R/WHO's leaf, as a pin names it.
fp() { openssl x509 -in "$R/$1.crt" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' | tr A-F a-f; }

@test "crl-revoked-builder-refused" {
	rev_pki
	rev_daemon sub-a.crt cn:builder-1 -- --tls-crl "$R/revoked.crl"
	refused "certificate revoked" rev_as stolen
}

@test "crl-unrevoked-builder-signs" {
	rev_pki
	rev_daemon sub-a.crt cn:builder-1 -- --tls-crl "$R/revoked.crl"
	fresh ok.ko
	run rev_as new sign ok.ko
	assert_success
}

@test "crl-in-client-ca-file-refused-at-start" {
	rev_pki
	cat "$R/sub-a.crt" "$R/revoked.crl" >ca-and-crl.pem
	: >empty.conf
	run "$MODSIGND" --listen "tls:127.0.0.1:$(free_port)" --key default=ephemeral:ecdsa-p256 \
		--tls-cert "$P/signing-host.crt" --tls-key "$P/signing-host.key" \
		--tls-client-ca ca-and-crl.pem --allow cn:builder-1 --config empty.conf --check-config
	assert_failure
	assert_output --partial "holds a CRL, which would not be checked there"
}

# The daemon of such a file either does not start or refuses the revoked
# builder; never does it sign for it (909c901 did: the CRL went unread).
@test "crl-in-client-ca-file-never-admits-revoked" {
	rev_pki
	cat "$R/all-cas.crt" "$R/revoked.crl" >"$R/ca-and-crl.pem"
	if rev_daemon ca-and-crl.pem cn:builder-1; then
		fresh r.ko
		run rev_as stolen sign r.ko
		assert_failure
	else
		grep -q "holds a CRL" modsignd.log
	fi
}

@test "crl-expired-refuses-builders" {
	rev_pki
	rev_daemon sub-a.crt cn:builder-1 -- --tls-crl "$R/expired.crl"
	grep -q "past their next update" modsignd.log
	refused "CRL has expired" rev_as new
}

@test "check-config-checks-crl" {
	rev_pki
	printf 'not a CRL\n' >bad.crl
	: >empty.conf
	run "$MODSIGND" --key default=ephemeral:ecdsa-p256 --tls-cert "$P/signing-host.crt" \
		--tls-key "$P/signing-host.key" --tls-client-ca "$R/sub-a.crt" \
		--tls-crl bad.crl --config empty.conf --check-config
	assert_failure
	assert_output --partial "bad.crl: holds no PEM CRL"
	# Twin: the CRL of another PKI is refused, the right one passes.
	run "$MODSIGND" --key default=ephemeral:ecdsa-p256 --tls-cert "$P/signing-host.crt" \
		--tls-key "$P/signing-host.key" --tls-client-ca "$P/farm-ca.crt" \
		--tls-crl "$R/revoked.crl" --config empty.conf --check-config
	assert_failure
	assert_output --partial "is not signed by a CA of --tls-client-ca"
	run "$MODSIGND" --key default=ephemeral:ecdsa-p256 --tls-cert "$P/signing-host.crt" \
		--tls-key "$P/signing-host.key" --tls-client-ca "$R/sub-a.crt" \
		--tls-crl "$R/revoked.crl" --config empty.conf --check-config
	assert_success
}

# rev_hup: SIGHUP, and wait for the reload to be over.
rev_hup() {
	local n0
	n0=$(grep -c "policy reloaded\|keeping the old policy" modsignd.log || true)
	kill -HUP "$DAEMON_PID"
	reloaded() { [ "$(grep -c "policy reloaded\|keeping the old policy" modsignd.log)" -gt "$n0" ]; }
	eventually 30 reloaded
}

@test "crl-sighup-revokes-without-restart" {
	rev_pki
	cp "$R/empty.crl" crl.pem
	rev_daemon sub-a.crt cn:builder-1 -- --tls-crl "$T/crl.pem"
	fresh before.ko
	run rev_as stolen sign before.ko
	assert_success
	cp "$R/revoked.crl" crl.pem
	rev_hup
	refused "certificate revoked" rev_as stolen
	fresh after.ko
	run rev_as new sign after.ko
	assert_success
}

# hold_silent_tls WHO DIR: a silent TLS connection as $R/WHO, in the
# background; DIR/rc once it ended: 124 if it was still open after 15 s.
hold_silent_tls() {
	mkdir -p "$2"
	(
		timeout 15 openssl s_client -connect "127.0.0.1:$PORT" -servername localhost \
			-CAfile "$P/farm-ca.crt" -cert "$R/$1.crt" -key "$R/$1.key" -quiet \
			< <(sleep 20) >"$2/out" 2>&1
		echo $? >"$2/rc"
	) 3>&- &
}

# tls_connected N: the daemon's debug log (MODSIGND_DEBUG) says N TLS
# handshakes ended admitted.
tls_connected() {
	[ "$(grep -c ': TLS connected$' modsignd.log)" -eq "$1" ]
}

@test "crl-sighup-closes-revoked-connections" {
	rev_pki
	cp "$R/empty.crl" crl.pem
	MODSIGND_DEBUG=1 rev_daemon sub-a.crt cn:builder-1 -- --tls-crl "$T/crl.pem"
	hold_silent_tls stolen stolen-conn
	hold_silent_tls new new-conn
	# Both admitted (said at debug level only): waited for, not slept
	# for, since on a loaded machine a handshake can take seconds.
	eventually 30 tls_connected 2
	cp "$R/revoked.crl" crl.pem
	rev_hup
	eventually 30 test -e stolen-conn/rc
	grep -q "closing: its certificate is now revoked" modsignd.log
	# Twin: the unrevoked builder's connection stays.
	run test -e new-conn/rc
	assert_failure
}

@test "crl-sighup-bad-crl-keeps-old" {
	rev_pki
	cp "$R/revoked.crl" crl.pem
	rev_daemon sub-a.crt cn:builder-1 -- --tls-crl "$T/crl.pem"
	printf 'garbage\n' >crl.pem
	rev_hup
	run grep -c "SIGHUP: keeping the CRLs in force: $T/crl.pem: holds no PEM CRL" modsignd.log
	assert_output 1
	refused "certificate revoked" rev_as stolen
	fresh ok.ko
	run rev_as new sign ok.ko
	assert_success
}

@test "pin-sha256-refuses-stolen-same-cn" {
	rev_pki
	rev_daemon sub-a.crt "sha256:$(fp new)/cn:builder-1"
	refused "cn:builder-1 is not named by the policy" rev_as stolen
}

@test "pin-sha256-admits-pinned-cert" {
	rev_pki
	rev_daemon sub-a.crt "sha256:$(fp new)/cn:builder-1=default"
	fresh ok.ko
	run rev_as new sign ok.ko
	assert_success
}

@test "audit-records-client-cert" {
	rev_pki
	rev_daemon all-cas.crt cn:builder-1 -- --transparency-log "$T/tlog" --log-key ephemeral
	fresh new.ko
	rev_as new sign new.ko
	fresh stolen.ko
	rev_as stolen sign stolen.ko
	# Both certificates are builder-1's; each record says which one signed.
	eventually 30 grep -q stolen.ko audit.jsonl
	for who in new stolen; do
		serial=$(openssl x509 -in "$R/$who.crt" -noout -serial | sed 's/.*=//' | tr A-F a-f)
		run jq -r --arg m "$who.ko" 'select(.module == $m) | [.identity, .client_cert_sha256,
			.client_serial, .client_issuer, .client_issuer_sha256] | join(" ")' audit.jsonl
		assert_output "cn:builder-1 $(fp "$who") $serial CN=sub-a $(fp sub-a)"
		# And so does the transparency log's entry.
		run grep -raq "\"module\":\"$who.ko\",\"client\":\"cn:builder-1\",\"client_cert_sha256\":\"$(fp "$who")\",\"client_serial\":\"$serial\",\"client_issuer\":\"CN=sub-a\",\"client_issuer_sha256\":\"$(fp sub-a)\"" tlog
		assert_success
	done
	# The log verifies, and finds both modules in it.
	"$C" --server "unix:$T/sock" log vkey >vkey
	run "$C" log verify --vkey-file vkey --dir tlog new.ko stolen.ko
	assert_success
}

@test "intermediate-only-trust-admits-its-builder" {
	rev_pki
	rev_daemon sub-a.crt cn:builder-1
	fresh ok.ko
	run rev_as new sign ok.ko
	assert_success
}

@test "intermediate-only-trust-refuses-other-sub-ca" {
	rev_pki
	rev_daemon sub-a.crt cn:builder-1
	refused "unable to get\|unknown ca" rev_as other-b1
}

@test "issuer-pin-refuses-other-sub-ca" {
	rev_pki
	rev_daemon all-cas.crt "issuer-sha256:$(fp sub-a)/cn:builder-1"
	refused "cn:builder-1 is not named by the policy" rev_as other-b1
}

@test "issuer-pin-admits-own-sub-ca" {
	rev_pki
	rev_daemon all-cas.crt "issuer-sha256:$(fp sub-a)/cn:builder-1"
	fresh ok.ko
	run rev_as new sign ok.ko
	assert_success
}

@test "serial-pin-refuses-other-serial" {
	rev_pki
	serial=$(openssl x509 -in "$R/new.crt" -noout -serial | sed 's/.*=//')
	rev_daemon sub-a.crt "issuer-sha256:$(fp sub-a)/serial:$serial/cn:builder-1"
	refused "cn:builder-1 is not named by the policy" rev_as stolen
	fresh ok.ko
	run rev_as new sign ok.ko
	assert_success
}

# A builder's own certificate named in tls-client-ca (trusted alone, a
# partial chain) is an anchor, not an issuer: one without basicConstraints
# but with keyCertSign (or a v1 self-signed one) was taken for a CA by
# OpenSSL, so builder-1 minted a certificate for builder-2 and signed as it
# (aa34a59: X509_V_FLAG_PARTIAL_CHAIN stops the chain at any certificate of
# the file).  Twin: builder-1's own certificate is still admitted.
@test "anchor-leaf-without-ca-true-cannot-mint-names" {
	rev_pki
	mkdir -p "$R/mint" && (cd "$R/mint" && mint_pki) || return 1
	rev_daemon mint/anchors.crt cn:builder-2 cn:kcs-b1
	refused "invalid CA certificate" rev_as mint/minted
	fresh ok.ko
	run rev_as mint/kcs-b1 sign ok.ko
	assert_success
}

# The same with builder-3's v1 self-signed certificate, which OpenSSL
# takes for a "V1 root" (so did 909c901, without partial chains).  A v1
# certificate has no extended key usage, so it is no client leaf itself
# (row 100); twin: a builder of the sub-CA in the same file signs.
@test "v1-self-signed-anchor-cannot-mint-names" {
	rev_pki
	mkdir -p "$R/mint" && (cd "$R/mint" && mint_pki) || return 1
	rev_daemon mint/anchors.crt cn:builder-2 cn:builder-1
	refused "invalid CA certificate" rev_as mint/v1-minted
	fresh ok.ko
	run rev_as new sign ok.ko
	assert_success
}

mint_pki() {
	[ -e done ] && return 0
	cp "$R/sub-a.crt" "$R/sub-a.key" . &&
		issue kcs-b1 sub-a keyUsage=digitalSignature,keyCertSign extendedKeyUsage=clientAuth
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj /CN=builder-2 -keyout minted.key -out minted.csr 2>/dev/null
	openssl x509 -req -in minted.csr -CA kcs-b1.crt -CAkey kcs-b1.key -CAcreateserial \
		-days 30 -extfile "$R/leaf.ext" -out minted.leaf 2>/dev/null
	cat minted.leaf kcs-b1.crt >minted.crt
	# builder-3's v1 self-signed certificate: OpenSSL's "V1 root"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj /CN=builder-3 -keyout v1.key -out v1.csr 2>/dev/null
	openssl x509 -req -in v1.csr -key v1.key -days 30 -out v1.crt 2>/dev/null
	openssl x509 -req -in minted.csr -CA v1.crt -CAkey v1.key -CAcreateserial \
		-days 30 -extfile "$R/leaf.ext" -out v1-minted.leaf 2>/dev/null
	cat v1-minted.leaf v1.crt >v1-minted.crt && cp minted.key v1-minted.key
	cat "$R/rev-root.crt" "$R/sub-a.crt" kcs-b1.crt v1.crt >anchors.crt
	touch done
}

# scoped_crls: in $R, CRLs of sub-a that OpenSSL does not read as the
# complete list of its revocations: delta-empty.crl, a delta CRL newer than
# revoked.crl and from before stolen was revoked (so empty); reasons.crl,
# one covering keyCompromise only; indirect.crl, an indirect CRL.
scoped_crls() {
	[ -e "$R/scoped-done" ] && return 0
	(
		cd "$R" || exit 1
		mkdir -p a-empty && cp a/crlnumber a-empty/ &&
			sed 's/^R\t\([^\t]*\)\t[^\t]*\t/V\t\1\t\t/' a/index >a-empty/index
		sed 's|^database = a/index|database = a-empty/index|; s|^crlnumber = a/crlnumber|crlnumber = a-empty/crlnumber|' \
			a.cnf >a-scoped.cnf
		cat >>a-scoped.cnf <<-CNF
		[ delta ]
		deltaCRL = critical,DER:02:02:03:E8
		[ reasons ]
		issuingDistributionPoint = critical, @rsec
		[ rsec ]
		onlysomereasons = keyCompromise
		[ indirect ]
		issuingDistributionPoint = critical, @isec
		[ isec ]
		indirectCRL = TRUE
		CNF
		sleep 1 # a lastUpdate after revoked.crl's
		openssl ca -batch -config a-scoped.cnf -gencrl -crlexts delta -out delta-empty.crl \
			>/dev/null 2>&1 || exit 1
		openssl ca -batch -config a-scoped.cnf -gencrl -crlexts reasons -out reasons.crl \
			>/dev/null 2>&1 || exit 1
		openssl ca -batch -config a-scoped.cnf -gencrl -crlexts indirect -out indirect.crl \
			>/dev/null 2>&1 || exit 1
		touch scoped-done
	)
}

# OpenSSL (without X509_V_FLAG_USE_DELTAS) reads a delta CRL as a complete
# one and prefers the newest: a base CRL that revokes stolen and a newer,
# empty delta admitted stolen (aa34a59).  Such a file is refused.
@test "crl-delta-never-hides-a-revocation" {
	rev_pki
	scoped_crls || return 1
	cat "$R/revoked.crl" "$R/delta-empty.crl" >base-and-delta.crl
	if rev_daemon sub-a.crt cn:builder-1 -- --tls-crl "$T/base-and-delta.crl"; then
		fresh r.ko
		run rev_as stolen sign r.ko
		assert_failure
	fi
	grep -q "base-and-delta.crl: the CRL of /CN=sub-a is a delta CRL" modsignd.log
}

# CRLs of one scope (some reasons only, or indirect) are skipped by OpenSSL
# for the CA's other CRL; were they taken, the revocations they alone hold
# would be ignored.  Refused at start, as --check-config says.
@test "crl-scoped-refused-at-start" {
	rev_pki
	scoped_crls || return 1
	: >empty.conf
	for kind in reasons indirect delta-empty; do
		run "$MODSIGND" --key default=ephemeral:ecdsa-p256 --tls-cert "$P/signing-host.crt" \
			--tls-key "$P/signing-host.key" --tls-client-ca "$R/sub-a.crt" \
			--tls-crl "$R/$kind.crl" --config empty.conf --check-config
		assert_failure
		assert_output --partial "$kind.crl: the CRL of /CN=sub-a is a"
	done
}

# hold_finished_proxy LPORT DIR: forwards 127.0.0.1:LPORT to the daemon's
# $PORT, but holds the client's third encrypted record (its Finished, after
# Certificate and CertificateVerify: OpenSSL writes one record each) until
# DIR/release exists; DIR/held once it holds it.  The daemon has verified
# the certificate by then and waits for the end of the handshake.
hold_finished_proxy() {
	python3 - "$1" "$PORT" "$2" 3>&- <<'PY' &
import os, socket, sys, threading, time
lport, dport, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", lport)); ls.listen(1); ls.settimeout(30)
open(os.path.join(d, "listening"), "w").close()
c, _ = ls.accept()
ls.close()
s = socket.create_connection(("127.0.0.1", dport))
def down():
    try:
        while (b := s.recv(65536)):
            c.sendall(b)
    except OSError:
        pass
    try:
        c.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
threading.Thread(target=down, daemon=True).start()
def up():
  buf, n_app, passing = b"", 0, False
  while (b := c.recv(65536)):
    if passing:
        s.sendall(b); continue
    buf += b
    while len(buf) >= 5 and len(buf) >= 5 + int.from_bytes(buf[3:5], "big"):
        n = 5 + int.from_bytes(buf[3:5], "big")
        rec, buf = buf[:n], buf[n:]
        if rec[0] == 0x17:
            n_app += 1
        if n_app == 3 and not passing:
            open(os.path.join(d, "held"), "w").close()
            while not os.path.exists(os.path.join(d, "release")):
                time.sleep(0.05)
            passing = True
        s.sendall(rec)
    if passing and buf:
        s.sendall(buf); buf = b""
  s.shutdown(socket.SHUT_WR)
try:
    up()
except OSError:
    pass
c.close()
time.sleep(1)
PY
}

# A handshake whose certificate was verified before a SIGHUP that revokes
# it, and that ends after: close_revoked() passed it by (not admitted yet)
# and the handshake's end did not look again, so stolen was admitted, and
# signed, with its certificate revoked (aa34a59).
@test "crl-sighup-revokes-handshake-in-flight" {
	rev_pki
	cp "$R/empty.crl" crl.pem
	rev_daemon sub-a.crt cn:builder-1 -- --tls-crl "$T/crl.pem"
	local dport=$PORT lport
	lport=$(free_port)
	mkdir -p px
	hold_finished_proxy "$lport" px
	eventually 30 test -e px/listening
	fresh r.ko
	before=$(sha r.ko)
	PORT=$lport
	(set +e; rev_as stolen sign r.ko >px/out 2>&1; echo $? >px/rc) 3>&- &
	eventually 30 test -e px/held
	PORT=$dport
	cp "$R/revoked.crl" crl.pem
	rev_hup
	touch px/release
	eventually 10 test -e px/rc
	cat px/out
	run cat px/rc
	refute_output 0
	assert_equal "$(sha r.ko)" "$before"
	# Twin: the same way in, with the certificate not revoked, signs.
	cp "$R/empty.crl" crl.pem
	rev_hup
	rm -rf px && mkdir px
	lport=$(free_port)
	hold_finished_proxy "$lport" px
	eventually 30 test -e px/listening
	PORT=$lport
	(set +e; rev_as new sign r.ko >px/out 2>&1; echo $? >px/rc) 3>&- &
	eventually 30 test -e px/held
	touch px/release
	eventually 10 test -e px/rc
	run cat px/rc
	assert_output 0
}
