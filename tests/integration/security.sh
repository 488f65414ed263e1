#!/bin/bash
# Security properties of a running daemon: a uid outside the allow-list is
# refused; a one-time private key never reaches the disk (every syscall
# that could put bytes in a file is traced); the daemon is not dumpable, so
# its own uid cannot ptrace it or read its environment; its key material
# is locked in memory (OpenSSL secure heap, VmLck).  Each has a twin.
. "$(dirname "$0")/../lib.sh"
C=$CLIENT
mod=$(real_modules 1)

# ---- the allow-list --------------------------------------------------------
# Socket mode 0666: the file permission lets nobody in, the policy must not.
start_daemon "$T/sock" --key default=ephemeral:ecdsa-p256 --allow uid:0 --socket-mode 0666 || exit 1
mkdir -m 0777 "$T/nb"
cp "$mod" "$T/nb/m.ko" && chown nobody:nogroup "$T/nb/m.ko"
before=$(sha "$T/nb/m.ko")
refute allow-list-refuses-nobody runuser -u nobody -- "$(nobody_client)" --server "unix:$T/sock" status
cp "$T/last.out" "$T/refused.out"
check allow-list-says-permission-denied grep -q "permission denied" "$T/refused.out"
refute allow-list-refuses-nobody-sign runuser -u nobody -- "$(nobody_client)" --server "unix:$T/sock" sign "$T/nb/m.ko"
check allow-list-module-untouched test "$(sha "$T/nb/m.ko")" = "$before"
check allow-list-refusal-logged grep -q "uid:65534.*refused\|refused.*uid:65534\|uid=65534.*refused" "$T/modsignd.log"
check allow-list-admits-root $C --server "unix:$T/sock" status
# Twin: the same peer, allowed, is served.
start_daemon "$T/sock2" --key default=ephemeral:ecdsa-p256 --allow user:nobody --socket-mode 0666 || exit 1
check allow-list-admits-nobody-when-allowed runuser -u nobody -- "$(nobody_client)" --server "unix:$T/sock2" sign "$T/nb/m.ko"

# ---- the private key never reaches the disk ---------------------------------
# Trace every syscall that creates, names or fills a file, with the path
# behind each fd (-y).  The daemon's stderr is a pipe, so every legitimate
# write goes to a socket, an anonymous pipe or an eventfd; any fd that names a path
# is a file (or a device: only /dev/null and terminals are allowed).
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
{ strace -f -qq -y -s 256 -e trace=$TRACED -o "$T/strace.out" \
	"$MODSIGND" --listen "unix:$T/tsock" --key default=ephemeral:rsa2048 --key ec=ephemeral:ecdsa-p384 \
	2>&1 | cat >"$T/traced.log"; } &
spid=$!
for _ in $(seq 1 200); do [ -S "$T/tsock" ] && break; sleep 0.05; done
dpid=$(pgrep -n -f "^$MODSIGND --listen unix:$T/tsock")
mkdir "$T/tm"
for m in $(real_modules 20); do cp "$m" "$T/tm/"; done
check traced-daemon-signs $C --server "unix:$T/tsock" sign "$T"/tm/*.ko
check traced-daemon-signs-ec $C --server "unix:$T/tsock" sign --key ec --hash sha384 "$T"/tm/*.ko
$C --server "unix:$T/tsock" cert >/dev/null && $C --server "unix:$T/tsock" status >/dev/null
kill -TERM "$dpid"
wait $spid
summary=$(analyze "$T/strace.out")
arc=$?
if [ $arc -eq 0 ]; then pass "key-never-reaches-disk ($(head -n1 <<<"$summary"))"; else fail key-never-reaches-disk "$(tr '\n' ' ' <<<"$summary")"; fi
check traced-daemon-stopped-cleanly grep -q "one-time keys destroyed" "$T/traced.log"
# Twins: the same trace and analysis catch a key written to a new file,
# and a write to a file opened before tracing began.
strace -f -qq -y -s 256 -e trace=$TRACED -o "$T/twin1.out" \
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$T/leak.pem" 2>/dev/null
refute key-trace-catches-key-file analyze "$T/twin1.out"
strace -f -qq -y -s 256 -e trace=$TRACED -o "$T/twin2.out" bash -c 'echo secret >&3' 3>"$T/opened-before"
refute key-trace-catches-write-to-open-file analyze "$T/twin2.out"

# ---- not dumpable: no ptrace, no /proc/PID/environ for its own uid ----------
chown nobody "$T/nb"
nobody_client >/dev/null # makes $T/bin, copies other users can run
cp "$MODSIGND" "$T/bin/modsignd" && chmod 755 "$T/bin/modsignd"
# modsignd locks all its memory: the unit gives it LimitMEMLOCK=256M.
# Where the hard limit cannot be raised (no CAP_SYS_RESOURCE, as in some
# containers) nobody gets CAP_IPC_LOCK instead, and so do the twin and the
# tracer below: a target holding a capability the tracer lacks is refused
# for that alone, which would hide what PR_SET_DUMPABLE does.
if prlimit --memlock=unlimited true 2>/dev/null; then
	as_nobody() { prlimit --memlock=unlimited runuser -u nobody -- "$@"; }
else
	as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups \
		--inh-caps +ipc_lock --ambient-caps +ipc_lock -- env PATH=/usr/bin:/bin "$@"; }
fi
as_nobody env MODSIGN_TEST_SECRET=hunter2 "$T/bin/modsignd" --listen "unix:$T/nb/s" \
	--key default=ephemeral:ecdsa-p256 --allow user:nobody 2>"$T/nobody.log" &
DAEMON_PIDS+=($!)
for _ in $(seq 1 200); do [ -S "$T/nb/s" ] && break; sleep 0.05; done
npid=$(pgrep -u nobody -f "unix:$T/nb/s" | head -n1)
# The wrapper (runuser, setpriv) may not pass a SIGTERM on: stop the daemon itself.
[ -n "$npid" ] && DAEMON_PIDS+=("$npid")
as_nobody sleep 300 &
DAEMON_PIDS+=($!)
for _ in $(seq 1 100); do pgrep -u nobody -f "^sleep 300$" >/dev/null && break; sleep 0.05; done
twin=$(pgrep -u nobody -f "^sleep 300$" | tail -n1)
[ -n "$twin" ] && DAEMON_PIDS+=("$twin")
ptrace_attach() { # PID: as nobody, PTRACE_ATTACH then detach; exit 0 if allowed
	as_nobody python3 - "$1" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
    print("ptrace:", os.strerror(ctypes.get_errno())); sys.exit(1)
os.waitpid(pid, 0); libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
PY
}
check "daemon-runs-as-nobody (pid ${npid:-none})" test -n "$npid"
refute daemon-environ-unreadable-by-own-uid as_nobody cat "/proc/$npid/environ"
refute daemon-mem-unreadable-by-own-uid as_nobody python3 -c "open('/proc/$npid/mem','rb')"
refute daemon-ptrace-attach-refused-to-own-uid ptrace_attach "$npid"
check daemon-core-limit-zero bash -c "grep -q '^Max core file size *0 *0' /proc/$npid/limits"
# Twins: an ordinary process of the same uid gives all of that away.
check twin-environ-readable-by-own-uid as_nobody cat "/proc/$twin/environ"
if [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" -eq 0 ]; then
	check twin-ptrace-attach-allowed-to-own-uid ptrace_attach "$twin"
else
	echo "SKIP twin-ptrace-attach-allowed-to-own-uid (Yama ptrace_scope > 0)"
fi

# ---- key material locked in memory (OpenSSL secure heap) --------------------
vmlck() { awk '/^VmLck:/{print $2}' "/proc/$1/status"; }
check "secure-heap-locked-as-root (VmLck $(vmlck $DAEMON_PID) kB)" \
	test "$(vmlck $DAEMON_PID)" -gt 0
check "secure-heap-locked-as-nobody (VmLck $(vmlck "$npid") kB)" test "$(vmlck "$npid")" -gt 0
refute twin-ordinary-process-has-no-locked-memory test "$(vmlck "$twin")" -gt 0
# TODO(pkcs11): the PIN never appears in /proc/PID/cmdline, environ or a log.
