# Loaded by every bats case file (load ../common): one case, one fresh
# directory ($T) and the daemons it starts, stopped in teardown.  A file
# that needs more in setup or teardown defines its own and calls
# case_setup / case_teardown.  Then the cases' own vocabulary, the words
# more than one file uses: modules, users, sign-file, TLS peers, the
# daemon's log and memory.  Helpers shared with the bash scripts, QEMU and
# bench are in tests/helpers.sh.  A helper one file alone needs stays in
# that file, under a name no other file gives to something else.
#
# bats reports a case when every process holding its fd 3 has exited: a
# process a case leaves running in the background must not inherit it
# (run it with 3>&-; modsignd_start does).

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
B=${B:-$REPO/build}
MODSIGND=${MODSIGND:-$B/modsignd}
CLIENT=${CLIENT:-$B/modsign-client}
FIX=$REPO/build/fixtures
C=$CLIENT

bats_load_library bats-support
bats_load_library bats-assert
. "$REPO/tests/helpers.sh"

# Other users (nobody) must be able to enter $T: bats's own temporary
# directories are private to their owner.
case_setup() {
	T=$(mktemp -d /tmp/modsign-case.XXXXXX)
	chmod 755 "$T"
	DAEMON_PIDS=()
	cd "$T" || return 1
}

case_teardown() {
	local p

	for p in "${DAEMON_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${DAEMON_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	cd /
	if [ -n "${KEEP_T:-}" ]; then echo "kept $T" >&3; else rm -rf "$T"; fi
}

setup() { case_setup; }
teardown() { case_teardown; }

# One daemon for a whole file, for files whose cases only read what it
# signs with (say why in the file): file_daemon_start ARGS... in setup_file
# starts modsignd on unix:$BATS_FILE_TMPDIR/sock with ARGS, logging to
# $BATS_FILE_TMPDIR/modsignd.log; file_daemon_stop is the teardown_file;
# file_daemon_case, in setup, gives the case its own $T, $F for the
# file's directory and MODSIGN_SERVER for the daemon.
file_daemon_start() {
	T=$BATS_FILE_TMPDIR
	DAEMON_PIDS=()
	start_daemon "$T/sock" "$@" || return 1
	echo "$DAEMON_PID" >"$T/daemon.pid"
}

file_daemon_stop() {
	stop_daemon "$(cat "$BATS_FILE_TMPDIR/daemon.pid")"
}

file_daemon_case() {
	case_setup
	F=$BATS_FILE_TMPDIR
	export MODSIGN_SERVER=unix:$F/sock
}

# ---- modules -----------------------------------------------------------------

# fresh FILE...: each FILE an unsigned copy of a real module.
fresh() {
	local f mod
	mod=$(real_modules 1)
	for f; do cp "$mod" "$f" && "$C" strip "$f" >/dev/null || return 1; done
}

# copy_modules N DIR: the first N real modules copied into DIR (which
# must exist) under names of their own, NNNN-NAME.ko (modules of
# different directories share names), by one process: a process per
# module cost more than signing it, under the sanitizers' build most.
copy_modules() {
	real_modules "$1" | python3 -c '
import shutil, sys
for i, p in enumerate(sys.stdin.read().split()):
    shutil.copyfile(p, "%s/%04d-%s" % (sys.argv[1], i, p.rsplit("/", 1)[1]))' "$2"
}

# verdicts CERT FILE...: verify's verdict on each module, from one call,
# a line each: "ok HASH PATH" or "fail - PATH".
verdicts() {
	"$C" verify --json --cert "$@" 2>/dev/null | python3 -c '
import json, sys
for m in json.load(sys.stdin)["modules"]:
    print("ok " + m["hash"] if m["ok"] else "fail -", m["module"])'
}

# cms_verify P7 CONTENT CERT: openssl's own verdict on the signature.
cms_verify() {
	openssl cms -verify -binary -inform DER -in "$1" -content "$2" -certfile "$3" \
		-nointern -noverify -out /dev/null
}

# cms_verify_module MOD CERT: cms_verify on the signature a module carries.
cms_verify_module() {
	split_module "$1" "$T/body" "$T/sig" && cms_verify "$T/sig" "$T/body" "$2"
}

# sf ARGS...: the client's sign-file; ref ARGS...: the kernel's own
# (tests/fixtures.sh builds it).
sf() { "$C" sign-file "$@"; }
ref() { "$FIX/sign-file" "$@"; }

# ---- users -------------------------------------------------------------------

# nobody CMD...: CMD run by nobody (runuser: nobody's own groups).
nobody() { runuser -u nobody -- "$@"; }

# ---- TLS peers ---------------------------------------------------------------
# The test PKI (pki, issue in tests/helpers.sh) in directory $TLS_PKI (the
# current directory when unset): the CA $TLS_CA (farm-ca), the signing
# host's certificate $TLS_SERVER (signing-host), a builder's NAME.crt and
# NAME.key.  A file whose PKI is named otherwise sets these once.

# tls_pki: in the current directory, the CA farm-ca, the signing host's
# certificate for localhost, builder-1 (the one tls_daemon allows) and
# stranger (verified, but no rule names it).
tls_pki() {
	pki farm-ca
	issue_server signing-host farm-ca DNS:localhost,IP:127.0.0.1
	issue builder-1 farm-ca
	issue stranger farm-ca
}

# tls ARGS...: the client over TLS to localhost:$PORT, trusting the CA.
tls() {
	"$C" --server "tls:localhost:$PORT" --tls-ca "${TLS_PKI:+$TLS_PKI/}${TLS_CA:-farm-ca}.crt" "$@"
}

# as NAME ARGS...: tls with NAME's certificate and key.
as() {
	local who=$1
	shift
	tls --tls-cert "${TLS_PKI:+$TLS_PKI/}$who.crt" --tls-key "${TLS_PKI:+$TLS_PKI/}$who.key" "$@"
}

# tls_daemon NAME [ARGS...]: a daemon with a UNIX listener on $T/NAME.sock
# and a TLS one on 127.0.0.1:$PORT (a free port, set here), key
# default=ephemeral:ecdsa-p256, the signing host's certificate, client
# certificates from the CA, root and cn:builder-1 allowed, then ARGS;
# returns once something answers on $PORT.
tls_daemon() {
	local name=$1 p=${TLS_PKI:+$TLS_PKI/}
	shift
	PORT=$(free_port)
	start_daemon "$T/$name.sock" --listen "tls:127.0.0.1:$PORT" \
		--key default=ephemeral:ecdsa-p256 --tls-cert "$p${TLS_SERVER:-signing-host}.crt" \
		--tls-key "$p${TLS_SERVER:-signing-host}.key" --tls-client-ca "$p${TLS_CA:-farm-ca}.crt" \
		--allow uid:0 --allow cn:builder-1 "$@" || return 1
	wait_port "$PORT"
}

# ---- the daemon's log, memory and end ----------------------------------------
# (grep -c prints 0 but fails when there is none: the case's set -e.)

# hups: the SIGHUPs the case's daemon logged in $T/modsignd.log.
hups() { grep -c "SIGHUP: re-reading the policy" "$T/modsignd.log" || true; }
hups_since() { [ "$(hups)" -gt "$1" ]; } # COUNT: more SIGHUPs logged than COUNT

# hup [PID]: SIGHUP the daemon PID ($DAEMON_PID), and wait until it logs
# it: on its main thread just before acting on it, serving no request in
# between.
hup() {
	local h0
	h0=$(hups)
	kill -HUP "${1:-$DAEMON_PID}"
	eventually 30 hups_since "$h0"
}

# rss [PID]: the resident set of PID ($DAEMON_PID), in KiB.
rss() { awk '/^VmRSS:/{print $2}' "/proc/${1:-$DAEMON_PID}/status"; }

# gone [PID]: PID ($DAEMON_PID) has exited (a zombie counts: it is not
# ours to reap).
gone() {
	local p=${1:-$DAEMON_PID}
	[ ! -e "/proc/$p" ] || grep -q '^[0-9]* (.*) Z' "/proc/$p/stat" 2>/dev/null
}
