#!/usr/bin/env bats
# A signal arriving at any moment never kills the daemon.  Libraries start
# threads of their own (p11-kit loading opensc, whose GLib starts one
# before the daemon's server exists; a constructor, before main): a
# process-directed SIGHUP may go to such a thread, and its default action
# ends the daemon and destroys its one-time keys.  tests/preload-thread.c
# is such a library: a thread started before main() with every signal
# unblocked.  Each case aims the signal at that very thread (tgkill), the
# one place the daemon's own mask cannot reach; the twin checks the thread
# is there, unblocked, so that the case could fail.

load ../common

setup_file() {
	gcc -shared -fPIC -O2 -o "$BATS_FILE_TMPDIR/preload-thread.so" \
		"$REPO/tests/preload-thread.c" -lpthread
}

setup() {
	case_setup
	LD_PRELOAD=$BATS_FILE_TMPDIR/preload-thread.so \
		start_daemon "$T/sock" --key default=ephemeral:rsa2048
	export MODSIGN_SERVER=unix:$T/sock
	LIB_TID=$(lib_thread "$DAEMON_PID")
}

# lib_thread PID: the thread id of the preloaded library's thread in PID.
lib_thread() {
	grep -lx lib-thread /proc/"$1"/task/*/comm | head -n1 | cut -d/ -f5
}

# tgkill PID TID SIG [N]: send SIG to the one thread TID of PID, and to
# the process (kill), N times (default: once, to the thread only).
tgkill() {
	python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid, tid, sig = (int(a) for a in sys.argv[1:4])
n = int(sys.argv[4]) if len(sys.argv) > 4 else 0
if libc.syscall(234, pid, tid, sig) != 0: sys.exit(1)
for i in range(n):
    os.kill(pid, sig)
    if libc.syscall(234, pid, tid, sig) != 0: sys.exit(1)' "$@"
}

# sigbit SIG FIELD TID: whether SIG's bit is set in FIELD (SigBlk, SigCgt)
# of the thread TID of the daemon.
sigbit() {
	local mask
	mask=$(awk -v f="$2:" '$1 == f { print $2 }' "/proc/$DAEMON_PID/task/$3/status")
	(((0x$mask >> ($1 - 1)) & 1))
}

@test "twin-library-thread-runs-unblocked" {
	[ -n "$LIB_TID" ]
	# The library's thread takes SIGHUP: the default action would be its
	# (the process's) end, unless the daemon handles it.
	run sigbit 1 SigBlk "$LIB_TID"
	assert_failure
	# ...and the daemon's main thread blocks it (the signalfd reads it).
	sigbit 1 SigBlk "$DAEMON_PID"
}

@test "sighup-to-library-thread-reloads-and-keeps-daemon" {
	local h0
	h0=$(hups)
	tgkill "$DAEMON_PID" "$LIB_TID" 1
	eventually 30 hups_since "$h0"
	! gone
	fresh m.ko
	"$C" sign m.ko
	"$C" verify m.ko
}

@test "sighup-storm-to-process-keeps-daemon" {
	tgkill "$DAEMON_PID" "$LIB_TID" 1 50
	eventually 30 hups_since 0
	! gone
	fresh m.ko
	"$C" sign m.ko
}

@test "sigterm-to-library-thread-stops-cleanly" {
	local rc=0
	tgkill "$DAEMON_PID" "$LIB_TID" 15
	wait "$DAEMON_PID" || rc=$?
	DAEMON_PIDS=()
	assert_equal "$rc" 0
	grep -q "stopped; one-time keys destroyed" "$T/modsignd.log"
}
