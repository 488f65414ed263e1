# Shared helpers for the integration tests (sourced, bash).
#
# Each check prints "PASS name" or "FAIL name: why"; tests/run.sh counts
# them.  Every test runs in its own temporary directory with its own daemon.

set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${B:-$REPO/build}
MODSIGND=${MODSIGND:-$B/modsignd}
CLIENT=${CLIENT:-$B/modsign-client}
FIX=$REPO/build/fixtures

T=$(mktemp -d /tmp/modsign-test.XXXXXX)
chmod 755 "$T"
DAEMON_PIDS=()

cleanup() {
	for p in "${DAEMON_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP_T:-}" ] && echo "kept $T" >&2 || rm -rf "$T"
}
trap cleanup EXIT

# A copy of the client that other users can run: the checkout may sit in a directory only its owner can
# enter, such as a fresh clone under mktemp -d.
nobody_client() {
	if [ ! -x "$T/bin/modsign-client" ]; then
		mkdir -p "$T/bin"
		cp "$CLIENT" "$T/bin/modsign-client"
		chmod 755 "$T/bin" "$T/bin/modsign-client"
	fi
	echo "$T/bin/modsign-client"
}

# TLS material in the current directory: NAME.key and NAME.crt.
pki() { # NAME: a self-signed CA
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
		-subj "/CN=$1" -keyout "$1.key" -out "$1.crt" 2>/dev/null
}
issue() { # NAME CA [EXTRA openssl-x509 ARGS]: a certificate for CN=NAME from CA
	local name=$1 ca=$2
	shift 2
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
		-keyout "$name.key" -out "$name.csr" 2>/dev/null
	openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial \
		-days 30 -out "$name.crt" "$@" 2>/dev/null
}

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1${2:+: $2}"; }

# check NAME COMMAND...: passes when the command succeeds.
check() {
	local name=$1
	shift
	if "$@" >"$T/last.out" 2>&1; then pass "$name"; else fail "$name" "$(tail -n 3 "$T/last.out" | tr '\n' ' ')"; fi
}

# refute NAME COMMAND...: passes when the command fails (the tampered twin).
refute() {
	local name=$1
	shift
	if "$@" >"$T/last.out" 2>&1; then fail "$name" "unexpectedly succeeded"; else pass "$name"; fi
}

# eventually SECS COMMAND...: succeeds as soon as COMMAND does, retrying
# every 0.1 s for up to SECS seconds; for what the daemon does
# asynchronously (a SIGHUP, a slot freed), which a fixed sleep only
# usually waits long enough for.
eventually() {
	local end=$(($(date +%s%N) / 1000000 + $1 * 1000))
	shift
	until "$@"; do
		[ $(($(date +%s%N) / 1000000)) -lt "$end" ] || return 1
		sleep 0.1
	done
}

# start_daemon SOCK ARGS...: start modsignd, wait until it answers.
start_daemon() {
	local sock=$1 stale
	shift
	# inode and change time: a new socket may reuse the old one's inode
	stale=$(stat -c '%i %z' "$sock" 2>/dev/null)
	"$MODSIGND" --listen "unix:$sock" "$@" 2>>"$T/modsignd.log" &
	DAEMON_PIDS+=($!)
	DAEMON_PID=$!
	# The socket appears once the keys are loaded (the daemon may not
	# allow us to ask it, so do not rely on status); a stale one left by a
	# killed daemon must first be replaced.
	for _ in $(seq 1 400); do
		[ -S "$sock" ] && [ "$(stat -c '%i %z' "$sock" 2>/dev/null)" != "$stale" ] && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "modsignd did not start:" >&2
	cat "$T/modsignd.log" >&2
	return 1
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on, below the
# kernel's ephemeral range (so that no outgoing connection takes it).
free_port() {
	local lo p
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
	for _ in $(seq 1 50); do
		p=$((10000 + RANDOM % (lo - 10000)))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	return 1
}

# wait_port PORT: until something listens on 127.0.0.1:PORT and $DAEMON_PID
# lives; fails after 5 s or if the daemon died (say, the port was taken).
wait_port() {
	for _ in $(seq 1 100); do
		kill -0 "$DAEMON_PID" 2>/dev/null || return 1
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

stop_daemon() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# A PEM file with a private key and its certificate, as certs/signing_key.pem.
make_pem_key() { # FILE ALG(rsa:2048|rsa:4096-4p|ec:secp384r1) [CN]
	local f=$1 alg=$2 cn=${3:-modsign test key} opt
	case $alg in
	rsa:*-*p)
		local n=${alg##*-}
		opt=(-newkey "${alg%-*}" -pkeyopt "rsa_keygen_primes:${n%p}")
		;;
	rsa:*) opt=(-newkey "$alg") ;;
	ec:*) opt=(-newkey ec -pkeyopt "ec_paramgen_curve:${alg#ec:}") ;;
	esac
	sed -e "s/@BITS@/2048/; s/@DAYS@/3650/; s/@HASH@/sha256/; s/@ORGANIZATION@/modsign tests/" \
	    -e "s/@COMMON_NAME@/$cn/; s/@EMAIL@//" -e '/^[A-Za-z]* = $/d' \
	    "$REPO/keygen/x509.genkey.in" >"$f.genkey"
	openssl req -new -nodes -utf8 -x509 -batch -config "$f.genkey" "${opt[@]}" \
		-keyout "$f" -out "$f.crt" 2>/dev/null || return 1
	cat "$f.crt" >>"$f"
	chmod 600 "$f"
}

# Real modules from Debian's linux-image package (tests/fixtures.sh).
real_modules() { # COUNT
	find "$FIX/modules" -name '*.ko' | sort | head -n "$1"
}

sha() { sha256sum "$1" | cut -d' ' -f1; }

# The PKCS#7 in a signed module, and the module without it.
split_module() { # MOD OUT_BODY OUT_SIG
	python3 - "$@" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
magic = b"~Module signature appended~\n"
assert d.endswith(magic), "not signed"
n = struct.unpack(">I", d[-len(magic)-4:-len(magic)])[0]
end = len(d) - len(magic) - 12
open(sys.argv[2], 'wb').write(d[:end - n])
open(sys.argv[3], 'wb').write(d[end - n:end])
PY
}

flip_byte() { # FILE OFFSET (negative: from the end)
	python3 - "$1" "$2" <<'PY'
import sys
f, off = sys.argv[1], int(sys.argv[2])
d = bytearray(open(f, 'rb').read())
d[off] ^= 0x01
open(f, 'wb').write(d)
PY
}
