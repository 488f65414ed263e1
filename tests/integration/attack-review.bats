#!/usr/bin/env bats
# Attacks from the review of the issue-13 fixes (8d47504), each shown to
# succeed there: silent sockets from the client's own address, junk from
# 65 addresses hiding a certificate's refusal, a FIFO at a module's name,
# a key file another user owns, a duplicate key name --check-config
# passed, look-alike characters in a certificate's name.

load ../common

# A CA, a server certificate for localhost, and builder-1 (allowed) and
# stranger (verified, but no rule names it).
tls_pki() {
	pki farm-ca
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >san.ext
	issue signing-host farm-ca -extfile san.ext
	issue builder-1 farm-ca
	issue stranger farm-ca
}

# tls_daemon ARGS...: UNIX and TLS listeners, root and cn:builder-1 allowed.
tls_daemon() {
	PORT=$(free_port)
	start_daemon "$T/d.sock" --listen "tls:127.0.0.1:$PORT" \
		--key default=ephemeral:ecdsa-p256 --tls-cert signing-host.crt \
		--tls-key signing-host.key --tls-client-ca farm-ca.crt \
		--allow uid:0 --allow cn:builder-1 "$@"
}

as() { # CERT-NAME CLIENT-ARGS...
	local who=$1
	shift
	"$C" --server "tls:localhost:$PORT" --tls-ca farm-ca.crt --tls-cert "$who.crt" \
		--tls-key "$who.key" "$@"
}

fresh() { cp "$(real_modules 1)" "$1" && "$C" strip "$1" >/dev/null; }

@test "same-source-silent-sockets-do-not-lock-out" {
	tls_pki
	tls_daemon
	# 40 raw sockets from the builder's own address (over its share of
	# 32), silent, each reopened as soon as the daemon closes it.
	cat >hold.py <<'PY'
import os, selectors, socket, sys
port, n, stop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
sel = selectors.DefaultSelector()
def one():
    s = socket.socket(); s.setblocking(False); s.bind(("127.0.0.1", 0))
    s.connect_ex(("127.0.0.1", port)); sel.register(s, selectors.EVENT_READ)
for _ in range(n): one()
open(stop + ".up", "w").close()
while not os.path.exists(stop):
    for key, _ in sel.select(0.2):
        try: data = key.fileobj.recv(4096)
        except OSError: data = b""
        if not data:
            sel.unregister(key.fileobj); key.fileobj.close(); one()
PY
	python3 hold.py "$PORT" 40 "$T/stop" 3>&- &
	holder=$!
	eventually 10 test -e stop.up
	ok=0
	for i in 1 2 3 4 5; do
		fresh "m$i.ko"
		as builder-1 sign "m$i.ko" && ok=$((ok + 1))
	done
	touch stop
	wait "$holder"
	echo "$ok of 5 signed"
	assert_equal "$ok" 5
	run "$C" --server "unix:$T/d.sock" verify "$T"/m*.ko
	assert_success
}

@test "verified-name-refusal-recorded-past-the-table" {
	tls_pki
	tls_daemon --audit-log "$T/audit.jsonl"
	# Junk handshakes from 70 addresses fill the table of unauthenticated
	# sources (64) and its shared entry.
	python3 - "$PORT" <<'PY'
import socket, sys
for i in range(1, 71):
    s = socket.socket(); s.bind(("127.0.5.%d" % i, 0))
    s.connect(("127.0.0.1", int(sys.argv[1])))
    try:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        while s.recv(4096): pass
    except ConnectionResetError:
        pass
    s.close()
PY
	fresh s.ko
	for i in 1 2 3; do
		run as stranger sign s.ko
		assert_failure
		assert_output --partial "not named by the policy"
	done
	n=$(grep -c '"identity":"cn:stranger"' audit.jsonl || true)
	echo "cn:stranger in $n records"
	assert_equal "$n" 3
}

@test "fifo-at-module-name-refused-at-once" {
	mkdir -m 0777 u
	runuser -u nobody -- mkfifo u/m.ko
	run timeout 20 "$C" --server unix:/nonexistent sign "$T/u/m.ko"
	assert_failure
	refute [ "$status" -eq 124 ]
	assert_output --partial "not a regular file"
	run timeout 20 "$C" --server unix:/nonexistent sign-file sha256 modsign:default \
		/dev/null "$T/u/m.ko" "$T/out.ko"
	refute [ "$status" -eq 124 ]
}

@test "fifo-twin-regular-module-signs" {
	start_daemon "$T/d.sock" --key default=ephemeral:ecdsa-p256
	mkdir -m 0777 u
	fresh u/m.ko
	run timeout 20 "$C" --server "unix:$T/d.sock" sign "$T/u/m.ko"
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

@test "check-config-refuses-duplicate-key-name" {
	printf 'key = default=ephemeral:ecdsa-p256\n' >c.conf
	run "$MODSIGND" --config c.conf --key default=ephemeral:rsa2048 --check-config
	assert_failure
	assert_output --partial "duplicate key name"
	# Twin: two names.
	run "$MODSIGND" --config c.conf --key other=ephemeral:rsa2048 --check-config
	assert_success
}

@test "cn-with-zero-width-space-refused" {
	tls_pki
	ZWSP=$'\xe2\x80\x8b'
	openssl req -new -utf8 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=builder${ZWSP}-1" -keyout zw.key -out zw.csr 2>/dev/null
	openssl x509 -req -in zw.csr -CA farm-ca.crt -CAkey farm-ca.key -CAcreateserial \
		-days 30 -out zw.crt 2>/dev/null
	printf 'allow = cn:builder%s-1\n' "$ZWSP" >zw.conf
	tls_daemon --config "$T/zw.conf"
	fresh z.ko
	run as zw sign z.ko
	assert_failure
	run as builder-1 sign z.ko
	assert_success
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

@test "client-tls-key-readable-by-others-refused" {
	# The builder's own TLS key is as secret as the daemon's: refused by
	# the same check when group or others may read it.
	tls_pki
	tls_daemon
	chmod 0644 builder-1.key
	run as builder-1 status
	assert_failure
	assert_output --partial "builder-1.key: mode 0644"
	# Twin: 0600, served.
	chmod 0600 builder-1.key
	run as builder-1 status
	assert_success
}
