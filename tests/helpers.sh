# Helpers shared by every test: the bats cases (tests/common.bash), the
# bash scripts (tests/hsm-bench.sh), the QEMU run and the bench.  Functions
# only: sourcing this file starts nothing and sets no shell options.
# Callers set REPO, MODSIGND, CLIENT and FIX (test_paths does, for a
# script); T is the caller's own directory (script_tmpdir makes one).

# test_paths: REPO, B, MODSIGND, CLIENT and FIX for a script under tests/
# of the checkout that holds this file.
test_paths() {
	REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	B=${B:-$REPO/build}
	MODSIGND=${MODSIGND:-$B/modsignd}
	CLIENT=${CLIENT:-$B/modsign-client}
	FIX=$REPO/build/fixtures
}

# script_tmpdir: for a bash script, one temporary directory $T that other
# users may enter, and an EXIT trap that stops the daemons of DAEMON_PIDS
# and removes $T (kept, and named on stderr, with KEEP_T set).
script_tmpdir() {
	T=$(mktemp -d /tmp/modsign-test.XXXXXX) || return 1
	chmod 755 "$T"
	DAEMON_PIDS=()
	trap script_cleanup EXIT
}

script_cleanup() {
	local p
	for p in "${DAEMON_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -n "${KEEP_T:-}" ]; then echo "kept $T" >&2; else rm -rf "$T"; fi
}

# modsignd_start LOG ARGS...: start "$MODSIGND" ARGS... in the background,
# its stderr appended to LOG, and return once it is ready to serve, which
# it says with READY=1 on its notify socket (sd_notify(3)) once its keys
# are loaded and its listeners bound: the one readiness rule for tests,
# QEMU and bench.  Sets MODSIGND_PID.  Returns 1, with the log's last
# lines on stderr, if the daemon exits first or is not ready within
# MODSIGND_START_TIMEOUT seconds (default 60: a sanitized or traced daemon
# making RSA-4096 keys is slow).
modsignd_start() {
	local log=$1 dir wpid end
	shift
	dir=$(mktemp -d "${TMPDIR:-/tmp}/modsignd-notify.XXXXXX") || return 1
	# 3>&-: bats waits for every holder of its fd 3 (see common.bash).
	python3 "$REPO/tests/notify-wait.py" "$dir/notify" "$dir/ready" 3>&- &
	wpid=$!
	until [ -S "$dir/notify" ]; do
		kill -0 "$wpid" 2>/dev/null || { rm -rf "$dir"; return 1; }
		sleep 0.01
	done
	NOTIFY_SOCKET=$dir/notify "$MODSIGND" "$@" 2>>"$log" 3>&- &
	MODSIGND_PID=$!
	end=$(($(date +%s) + ${MODSIGND_START_TIMEOUT:-60}))
	until [ -e "$dir/ready" ]; do
		if ! kill -0 "$MODSIGND_PID" 2>/dev/null || [ "$(date +%s)" -gt "$end" ]; then
			kill "$wpid" 2>/dev/null
			wait "$wpid" 2>/dev/null
			rm -rf "$dir"
			echo "modsignd did not start:" >&2
			tail -n 5 "$log" >&2
			return 1
		fi
		sleep 0.02
	done
	wait "$wpid" 2>/dev/null
	rm -rf "$dir"
}

# start_daemon SOCK ARGS...: modsignd on unix:SOCK with ARGS, logging to
# $T/modsignd.log; sets DAEMON_PID and adds it to DAEMON_PIDS, which the
# caller's cleanup stops.
start_daemon() {
	local sock=$1
	shift
	modsignd_start "$T/modsignd.log" --listen "unix:$sock" "$@" || return 1
	DAEMON_PID=$MODSIGND_PID
	DAEMON_PIDS+=("$MODSIGND_PID")
}

# A copy of the client that other
# users can run: the checkout may sit in a directory only its owner can
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
# issue NAME CA [EXTENSION...]: NAME.crt for CN=NAME from CA, with the
# x509v3 EXTENSIONs (config lines: 'subjectAltName=DNS:x'); without any, a
# builder's: extendedKeyUsage=clientAuth, which the daemon requires of a
# client certificate.  A certificate made wrong on purpose says so in its
# EXTENSIONs ('basicConstraints=CA:FALSE' alone: no EKU at all).
issue() { local name=$1; shift; issue_cn "$name" "$name" "$@"; }
# issue_server NAME CA SAN: a signing host's certificate, the identity the
# client checks in subjectAltName=SAN (never the CN) and serverAuth.
issue_server() { issue "$1" "$2" "subjectAltName=$3" extendedKeyUsage=serverAuth; }
# issue_cn NAME CN CA [EXTENSION...]: like issue, for a common name
# (UTF-8) other than NAME.
issue_cn() {
	local name=$1 cn=$2 ca=$3
	shift 3
	[ $# -gt 0 ] || set -- extendedKeyUsage=clientAuth
	for ext; do # the openssl options of the old issue() are no extensions
		case $ext in -*) echo "issue_cn $name: '$ext': an extension line, not an option" >&2
			return 1 ;; esac
	done
	printf '%s\n' "$@" >"$name.ext"
	openssl req -new -utf8 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
		-keyout "$name.key" -out "$name.csr" 2>/dev/null
	openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial \
		-days 30 -out "$name.crt" -extfile "$name.ext" 2>/dev/null
}

# need_mount_ns: skip the case where unshare -m cannot make a mount
# namespace (a case that binds a file over /etc/hosts or /root in one).
need_mount_ns() {
	unshare -m true 2>/dev/null || skip "no mount namespace here (unshare -m)"
}

# eventually SECS COMMAND...: succeeds as soon as COMMAND does, retrying
# every 0.1 s for up to SECS seconds; for what the daemon does
# asynchronously (a SIGHUP, a slot freed), which a fixed sleep only
# usually waits long enough for.  A try that fails is expected (a file
# not made yet is what it waits for): its stderr is dropped, but the last
# try's, so that a wait that times out says why.  (A background server's
# "grep: trace.out: No such file" once reached a case's captured output
# on a loaded machine and failed it.)
eventually() {
	local end=$(($(date +%s%N) / 1000000 + $1 * 1000))
	shift
	until "$@" 2>/dev/null; do
		if [ $(($(date +%s%N) / 1000000)) -ge "$end" ]; then
			"$@"
			return
		fi
		sleep 0.1
	done
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
# lives; fails after 30 s or at once if the daemon died (say, the port was
# taken).  30, not 5: a one-time RSA key made on a loaded machine can
# take seconds before the daemon listens.
wait_port() {
	for _ in $(seq 1 600); do
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
make_pem_key() { # FILE ALG(rsa:2048|rsa:4096-4p|ec:secp384r1|ml-dsa-65) [CN]
	local f=$1 alg=$2 cn=${3:-modsign test key} opt
	case $alg in
	rsa:*-*p)
		local n=${alg##*-}
		opt=(-newkey "${alg%-*}" -pkeyopt "rsa_keygen_primes:${n%p}")
		;;
	rsa:*) opt=(-newkey "$alg") ;;
	ec:*) opt=(-newkey ec -pkeyopt "ec_paramgen_curve:${alg#ec:}") ;;
	ml-dsa-*) opt=(-newkey "$alg") ;; # OpenSSL >= 3.5
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

# flip_bit_at FILE OFFSET: the low bit of the byte at OFFSET (negative:
# from the end) inverted, in place.
flip_bit_at() {
	python3 - "$1" "$2" <<'PY'
import sys
f, off = sys.argv[1], int(sys.argv[2])
d = bytearray(open(f, 'rb').read())
d[off] ^= 0x01
open(f, 'wb').write(d)
PY
}

# flip_bit_in FILE TEXT: flip_bit_at the first byte of TEXT's first
# occurrence in FILE; fails, saying so, where FILE holds no TEXT.
flip_bit_in() {
	local off
	off=$(LC_ALL=C grep -obUaF -m1 -- "$2" "$1" | head -n1 | cut -d: -f1)
	[ -n "$off" ] || { echo "flip_bit_in: no '$2' in $1" >&2; return 1; }
	flip_bit_at "$1" "$off"
}

# softhsm_conf DIR: DIR/softhsm2.conf, a SoftHSM2 configuration whose
# tokens are files in DIR/tokens (made by the caller).
softhsm_conf() {
	printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
		"$1/tokens" >"$1/softhsm2.conf"
}

# A farm of hosts as network namespaces on one bridge, addresses in
# 198.18.0.0/24 (tests/integration/farm.bats, tests/bench/farm.sh).  The
# veth pairs are made inside the namespaces (ip -n), so nothing appears in
# the machine's own network namespace.  farm_net_up TAG makes the bridge's
# namespace mf${TAG}lan and sets FARM_TAG and FARM_NETNS (the namespaces
# made, for farm_net_down).
farm_net_up() {
	FARM_TAG=$1
	FARM_NETNS=()
	ip netns add "mf${FARM_TAG}lan" || return 1
	FARM_NETNS+=("mf${FARM_TAG}lan")
	ip -n "mf${FARM_TAG}lan" link add br0 type bridge || return 1
	ip -n "mf${FARM_TAG}lan" link set br0 up
}

# farm_host NAME ADDR: namespace mf${FARM_TAG}NAME whose eth0 has ADDR/24.
farm_host() {
	local ns=mf${FARM_TAG}$1
	ip netns add "$ns" || return 1
	FARM_NETNS+=("$ns")
	ip -n "mf${FARM_TAG}lan" link add "p-$1" type veth peer name eth0 netns "$ns" || return 1
	ip -n "mf${FARM_TAG}lan" link set "p-$1" master br0 up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$2/24" dev eth0
	ip -n "$ns" link set eth0 up
}

# farm_hosts_file NAME ADDR...: /etc/hosts of namespace NAME (ip netns
# exec reads /etc/netns/NS/hosts): sign.farm.test has every ADDR.
farm_hosts_file() {
	local ns=mf${FARM_TAG}$1 a
	shift
	mkdir -p "/etc/netns/$ns"
	{
		echo "127.0.0.1 localhost"
		for a in "$@"; do echo "$a sign.farm.test"; done
	} >"/etc/netns/$ns/hosts"
}

# farm_net_down: every process in the namespaces killed, the namespaces
# and their /etc/netns directories removed.
farm_net_down() {
	local ns
	for ns in "${FARM_NETNS[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
		rm -rf "/etc/netns/$ns"
	done
	FARM_NETNS=()
}
