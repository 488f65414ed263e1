# Loaded by every bats case file (load ../common): one case, one fresh
# directory ($T) and the daemons it starts, stopped in teardown.  A file
# that needs more in setup or teardown defines its own and calls
# case_setup / case_teardown.  Helpers shared with the bash suites, QEMU
# and bench are in tests/helpers.sh.
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
