#!/usr/bin/env bats
# The systemd side: units that verify and rate 2.0 or lower on systemd's
# exposure scale, READY=1 only once keys are loaded, STATUS= and watchdog
# pings, and a clean STOPPING=1.
#
# The notify cases do not use modsignd_start: what they test is the
# notify protocol itself, so each case binds its own NOTIFY_SOCKET and
# records every datagram that arrives, stamped with its monotonic time.

load ../common

U=$REPO/systemd

exposure() { # UNIT-FILE: systemd's overall exposure level for it
	systemd-analyze security --offline=true "$1" 2>/dev/null |
		sed -n "s/.*Overall exposure level for $(basename "$1"): \([0-9.]*\).*/\1/p"
}

# ---- the units ----------------------------------------------------------------
@test "service-exposure-at-most-2.0" {
	score=$(exposure "$U/modsignd.service")
	awk -v s="${score:-99}" 'BEGIN { exit !(s <= 2.0) }' || { echo "exposure ${score:-?}"; false; }
}

# The twin: the same unit without its hardening rates worse.
@test "unhardened-twin-rates-worse" {
	grep -v -E '^(Protect|Private|Restrict|SystemCall|Capability|NoNew|Lock|Memory|UMask|Device|IPAddress|Remove|Keyring|Ambient|ProcSubset)' \
		"$U/modsignd.service" >bare.service
	bare=$(exposure "$T/bare.service")
	awk -v s="${bare:-0}" 'BEGIN { exit !(s > 2.0) }' || { echo "exposure ${bare:-?}"; false; }
}

# Only complaints about the binary not being installed here are allowed.
unit_verifies() {
	systemd-analyze verify --man=no "$U/$1" 2>&1 | grep -v -e "is not executable" -e "^$" >verify.out || true
	[ ! -s verify.out ] || { cat verify.out; false; }
}

@test "unit-verifies modsignd.service" {
	unit_verifies modsignd.service
}

@test "unit-verifies modsignd.socket" {
	unit_verifies modsignd.socket
}

@test "unit-verifies modsignd-tls.socket" {
	unit_verifies modsignd-tls.socket
}

@test "unit-verifies modsignd-tls-handoff.service" {
	unit_verifies modsignd-tls-handoff.service
}

# The IP lists that filter socket-activated TLS connections are the
# socket's (the VM checks that they do: tests/vm); the service's own deny
# everything covers sockets it would open itself.
@test "tls-socket-carries-the-ip-lists" {
	run grep -c -E '^IPAddress(Deny=any|Allow=localhost)$' "$U/modsignd-tls.socket"
	assert_output 2
	run grep -q '^IPAddressDeny=any' "$U/modsignd.service"
	assert_success
}

# The socket's directory is the socket unit's: a RuntimeDirectory= of the
# service deleted it on every stop (checked for real in tests/vm).  Only
# the metrics file's subdirectory is the service's, readable by others.
@test "service-runtime-directory-is-only-metrics" {
	run grep -E '^RuntimeDirectory(Mode)?=' "$U/modsignd.service"
	assert_output $'RuntimeDirectory=modsignd/metrics\nRuntimeDirectoryMode=0755'
}

# The shipped configuration writes its metrics file there.
@test "example-config-metrics-in-runtime-directory" {
	run grep -x 'metrics-file = /run/modsignd/metrics/modsignd.prom' "$REPO/systemd/modsignd.conf.example"
	assert_success
}

@test "tls-socket-is-named-tls" {
	run grep -q '^FileDescriptorName=tls' "$U/modsignd-tls.socket"
	assert_success
}

@test "service-is-type-notify" {
	run grep -q '^Type=notify' "$U/modsignd.service"
	assert_success
}

# ---- sd_notify ------------------------------------------------------------------
# notified_daemon: a listener at $T/notify recording each datagram in
# notify.log (until STOPPING=1 or 25 s), and the daemon (pid) with a 1 s
# watchdog and a key that takes a while to make (RSA-4096), started with
# NOTIFY_SOCKET pointing there; returns once READY=1 arrived or 20 s
# passed (the cases say which).
notified_daemon() {
	python3 - "$T/notify" >notify.log 2>&1 3>&- <<-'PY' &
	import socket, sys, time
	s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
	s.bind(sys.argv[1]); s.settimeout(30)
	end = time.time() + 25
	while time.time() < end:
	    try:
	        msg = s.recv(4096).decode()
	    except socket.timeout:
	        break
	    print(f"{time.monotonic():.3f} " + msg.replace("\n", " | "), flush=True)
	    if "STOPPING=1" in msg:
	        break
	PY
	listener=$!
	DAEMON_PIDS+=("$listener")
	eventually 30 test -S notify
	NOTIFY_SOCKET=$T/notify bash -c 'export WATCHDOG_PID=$$ WATCHDOG_USEC=1000000; exec "$0" "$@"' \
		"$MODSIGND" --listen "unix:$T/sock" --key default=ephemeral:rsa4096 2>d.log 3>&- &
	pid=$!
	DAEMON_PIDS+=("$pid")
	eventually 20 grep -q READY=1 notify.log || true
}

@test "notify-ready" {
	notified_daemon
	run grep -q "READY=1" notify.log
	assert_success
}

@test "ready-after-keys-loaded" {
	notified_daemon
	run grep -q "key default: ephemeral rsa4096" d.log
	assert_success
}

@test "serves-when-ready" {
	notified_daemon
	run "$CLIENT" --server "unix:$T/sock" status
	assert_success
}

# Three pings, each within the 1 s watchdog interval of the one before
# (the listener stamps each message with its monotonic time).
@test "notify-watchdog" {
	notified_daemon
	pings() { test "$(grep -c WATCHDOG=1 notify.log)" -ge 3; }
	eventually 5 pings || true
	n=$(grep -c WATCHDOG=1 notify.log || true)
	gap=$(awk '/WATCHDOG=1/ { if (n++) { g = $1 - t; if (g > max) max = g } t = $1 } END { printf "%.3f", max + 0 }' notify.log)
	[ "$n" -ge 3 ] && awk -v g="$gap" 'BEGIN { exit !(g > 0 && g < 1.0) }' ||
		{ echo "$n pings, longest gap $gap s"; cat notify.log; false; }
}

@test "notify-status" {
	notified_daemon
	eventually 30 grep -q "STATUS=.*signature(s) given" notify.log || { cat notify.log; false; }
}

@test "exits-0-on-sigterm" {
	notified_daemon
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
}

@test "notify-stopping" {
	notified_daemon
	kill -TERM "$pid"
	wait "$pid" || true
	# The listener exits on STOPPING=1 (or after 25 s).
	wait "$listener" || true
	run grep -q "STOPPING=1" notify.log
	assert_success || cat notify.log
}

# Twin of notify-ready: a daemon that cannot load its key never says READY=1.
@test "no-ready-without-keys" {
	python3 -c "
import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind('$T/notify2'); s.settimeout(3)
try: print(s.recv(4096).decode())
except socket.timeout: pass" >notify2.log 3>&- &
	l2=$!
	DAEMON_PIDS+=("$l2")
	eventually 30 test -S notify2
	NOTIFY_SOCKET=$T/notify2 "$MODSIGND" --listen "unix:$T/sock2" --key default=/nonexistent.pem 2>/dev/null || true
	wait "$l2" || true
	run grep -q "READY=1" notify2.log
	assert_failure
}
