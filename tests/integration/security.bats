#!/usr/bin/env bats
# Security properties of a running daemon: a uid outside the allow-list is
# refused; a one-time private key never reaches the disk (every syscall
# that could put bytes in a file is traced); the daemon is not dumpable, so
# its own uid cannot ptrace it or read its environment; its memory is
# locked.  Each has a twin.

load ../common

setup() {
	case_setup
	mod=$(real_modules 1)
}

# ---- the allow-list ---------------------------------------------------------
# Socket mode 0666: the file permission lets nobody in, the policy must not.
allow_root_only() {
	start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --allow uid:0 --socket-mode 0666
	mkdir -m 0777 nb
	cp "$mod" nb/m.ko
	chown nobody:nogroup nb/m.ko
	NC=$(nobody_client)
}

@test "allow-list-refuses-nobody" {
	allow_root_only
	run nobody "$NC" --server "unix:$T/sock" status
	assert_failure
	assert_output --partial "permission denied"
	run grep -q "uid:65534.*refused\|refused.*uid:65534\|uid=65534.*refused" modsignd.log
	assert_success
}

@test "allow-list-refuses-nobody-sign" {
	allow_root_only
	before=$(sha nb/m.ko)
	run nobody "$NC" --server "unix:$T/sock" sign "$T/nb/m.ko"
	assert_failure
	assert_equal "$(sha nb/m.ko)" "$before"
}

@test "allow-list-admits-root" {
	allow_root_only
	run "$C" --server "unix:$T/sock" status
	assert_success
}

@test "allow-list-admits-nobody-when-allowed" {
	# Twin: the same peer, allowed, is served.
	start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --allow user:nobody --socket-mode 0666
	mkdir -m 0777 nb
	cp "$mod" nb/m.ko
	chown nobody:nogroup nb/m.ko
	NC=$(nobody_client)
	run nobody "$NC" --server "unix:$T/sock" sign "$T/nb/m.ko"
	assert_success
}

# ---- the private key never reaches the disk ---------------------------------
# Trace every syscall that creates, names or fills a file, with the path
# behind each fd (-y).  The daemon's stderr is a pipe, so every legitimate
# write goes to a socket, an anonymous pipe or an eventfd; any fd that names
# a path is a file (or a device: only /dev/null and terminals are allowed).
TRACED=sendto,sendmsg,sendmmsg,open,openat,openat2,creat,rename,renameat,renameat2,link,linkat,symlink,symlinkat,mknod,mknodat,truncate,ftruncate,write,pwrite64,writev,pwritev,pwritev2,sendfile,copy_file_range,splice,memfd_create,process_vm_writev
analyze() { # STRACE_OUTPUT: prints a summary; exits 1 on any file write
	python3 - "$1" <<'PY'
import re, sys
bad, writes, sock_writes, secret = [], 0, 0, 0
wflags = re.compile(r'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND|O_TMPFILE')
benign = re.compile(r'^(socket|pipe|anon_inode):|^/dev/(null|pts/\d+|tty\w*)$|^(UNIX|TCP|UDP)')
for line in open(sys.argv[1], errors='replace'):
    m = re.match(r'^\d+\s+([a-z0-9_]+)\((.*)$', line)
    if not m or 'resumed>' in line:
        continue
    call, args = m.groups()
    if 'PRIVATE KEY' in args:
        secret += 1
    if call in ('open', 'openat', 'openat2', 'creat'):
        if call == 'creat' or wflags.search(args):
            bad.append(line.strip())
    elif call in ('write', 'pwrite64', 'writev', 'pwritev', 'pwritev2', 'ftruncate',
                  'sendfile', 'copy_file_range', 'splice', 'sendto', 'sendmsg', 'sendmmsg'):
        writes += 1
        # the fd written to: first argument, or the third for copy_file_range/splice
        fds = re.findall(r'(?:^|, )-?\d+<([^>]*)>', args)
        target = fds[-1] if call in ('copy_file_range', 'splice') and len(fds) > 1 else (fds[0] if fds else '?')
        if target.startswith('socket:') or target.startswith('UNIX'):
            sock_writes += 1
        if not benign.search(target):
            bad.append(line.strip())
    else:  # rename, link, mknod, truncate, memfd_create, ...
        bad.append(line.strip())
print("%d writes (%d to sockets), %d file operations, %d PEM private keys" % (writes, sock_writes, len(bad), secret))
for b in bad[:5]:
    print("   " + b[:200])
sys.exit(1 if bad or secret or sock_writes == 0 else 0)
PY
}

@test "key-never-reaches-disk" {
	local spid dpid summary
	{ strace -f -qq -y -s 256 -e trace=$TRACED -o strace.out \
		"$MODSIGND" --listen "unix:$T/tsock" --key default=ephemeral:rsa2048 \
		--key ec=ephemeral:ecdsa-p384 2>&1 | cat >traced.log; } 3>&- &
	spid=$!
	eventually 30 test -S tsock
	dpid=$(pgrep -n -f "^$MODSIGND --listen unix:$T/tsock")
	mkdir tm
	for m in $(real_modules 20); do cp "$m" tm/; done
	# traced-daemon-signs, traced-daemon-signs-ec
	"$C" --server "unix:$T/tsock" sign tm/*.ko
	"$C" --server "unix:$T/tsock" sign --key ec --hash sha384 tm/*.ko
	"$C" --server "unix:$T/tsock" cert >/dev/null
	"$C" --server "unix:$T/tsock" status >/dev/null
	kill -TERM "$dpid"
	wait "$spid"
	run analyze strace.out
	assert_success
	# traced-daemon-stopped-cleanly
	run grep -q "one-time keys destroyed" traced.log
	assert_success
}

# Twins: the same trace and analysis catch a key written to a new file,
# and a write to a file opened before tracing began.
@test "key-trace-catches-key-file" {
	strace -f -qq -y -s 256 -e trace=$TRACED -o twin1.out \
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out leak.pem 2>/dev/null
	run analyze twin1.out
	assert_failure
}

@test "key-trace-catches-write-to-open-file" {
	strace -f -qq -y -s 256 -e trace=$TRACED -o twin2.out bash -c 'echo secret >&4' 4>opened-before
	run analyze twin2.out
	assert_failure
}

# ---- not dumpable: no ptrace, no /proc/PID/environ for its own uid ----------
# modsignd locks all its memory: the unit gives it LimitMEMLOCK=256M.
# Where the hard limit cannot be raised (no CAP_SYS_RESOURCE, as in some
# containers) nobody gets CAP_IPC_LOCK instead, and so do the twin and the
# tracer below: a target holding a capability the tracer lacks is refused
# for that alone, which would hide what PR_SET_DUMPABLE does.
# nobody_memlocked CMD...: CMD as nobody, free to lock all its memory.
nobody_memlocked() {
	if prlimit --memlock=unlimited true 2>/dev/null; then
		prlimit --memlock=unlimited runuser -u nobody -- "$@"
	else
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
			--inh-caps +ipc_lock --ambient-caps +ipc_lock -- env PATH=/usr/bin:/bin "$@"
	fi
}

# The daemon as nobody (npid) and, as the twin, an ordinary process of the
# same uid (twin); both stopped by their own pids in teardown: the
# wrappers do not pass a SIGTERM on.
nobody_daemon() {
	mkdir -m 0755 nb
	chown nobody nb
	nobody_client >/dev/null # makes $T/bin, copies other users can run
	cp "$MODSIGND" bin/modsignd
	chmod 755 bin/modsignd
	nobody_memlocked env MODSIGN_TEST_SECRET=hunter2 "$T/bin/modsignd" --listen "unix:$T/nb/s" \
		--key default=ephemeral:ecdsa-p256 --allow user:nobody 2>nobody.log 3>&- &
	DAEMON_PIDS+=($!)
	eventually 10 test -S nb/s
	npid=$(pgrep -u nobody -f "unix:$T/nb/s" | head -n1)
	[ -n "$npid" ]
	DAEMON_PIDS+=("$npid")
	nobody_memlocked sleep 300 3>&- &
	DAEMON_PIDS+=($!)
	eventually 30 pgrep -u nobody -f "^sleep 300$" >/dev/null
	twin=$(pgrep -u nobody -f "^sleep 300$" | tail -n1)
	DAEMON_PIDS+=("$twin")
}

ptrace_attach() { # PID: as nobody, PTRACE_ATTACH then detach; exit 0 if allowed
	nobody_memlocked python3 - "$1" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
    print("ptrace:", os.strerror(ctypes.get_errno())); sys.exit(1)
os.waitpid(pid, 0); libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
PY
}

@test "daemon-environ-unreadable-by-own-uid" {
	nobody_daemon
	run nobody_memlocked cat "/proc/$npid/environ"
	assert_failure
	refute_output --partial hunter2
	# Twin: an ordinary process of the same uid gives it away.
	run nobody_memlocked cat "/proc/$twin/environ"
	assert_success
}

@test "daemon-mem-unreadable-by-own-uid" {
	nobody_daemon
	run nobody_memlocked python3 -c "open('/proc/$npid/mem','rb')"
	assert_failure
	run nobody_memlocked python3 -c "open('/proc/$twin/mem','rb')"
	assert_success
}

@test "daemon-ptrace-attach-refused-to-own-uid" {
	nobody_daemon
	run ptrace_attach "$npid"
	assert_failure
	if [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" -ne 0 ]; then
		skip "twin: Yama ptrace_scope > 0 refuses every uid"
	fi
	run ptrace_attach "$twin"
	assert_success
}

@test "daemon-core-limit-zero" {
	nobody_daemon
	run grep -q '^Max core file size *0 *0' "/proc/$npid/limits"
	assert_success
}

# ---- memory locked ------------------------------------------------------------
vmlck() { awk '/^VmLck:/{print $2}' "/proc/$1/status"; }

@test "memory-locked-as-root" {
	start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256
	[ "$(vmlck "$DAEMON_PID")" -gt 0 ] || { echo "VmLck $(vmlck "$DAEMON_PID") kB"; false; }
}

@test "memory-locked-as-nobody" {
	nobody_daemon
	[ "$(vmlck "$npid")" -gt 0 ] || { echo "VmLck $(vmlck "$npid") kB"; false; }
	# Twin: an ordinary process has none.
	assert_equal "$(vmlck "$twin")" 0
}
