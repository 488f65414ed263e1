#!/bin/bash
# The systemd side: units that verify and rate 2.0 or lower on systemd's
# exposure scale, READY=1 only once keys are loaded, STATUS= and watchdog
# pings, and a clean STOPPING=1.
. "$(dirname "$0")/../lib.sh"

U=$REPO/systemd
score=$(systemd-analyze security --offline=true "$U/modsignd.service" 2>/dev/null |
	sed -n 's/.*Overall exposure level for modsignd.service: \([0-9.]*\).*/\1/p')
check "service-exposure-${score:-?}-at-most-2.0" awk -v s="${score:-99}" 'BEGIN { exit !(s <= 2.0) }'
# The twin: the same unit without its hardening rates worse.
grep -v -E '^(Protect|Private|Restrict|SystemCall|Capability|NoNew|Lock|Memory|UMask|Device|IPAddress|Remove|Keyring|Ambient|ProcSubset)' \
	"$U/modsignd.service" >"$T/bare.service"
bare=$(systemd-analyze security --offline=true "$T/bare.service" 2>/dev/null |
	sed -n 's/.*Overall exposure level for bare.service: \([0-9.]*\).*/\1/p')
check "unhardened-twin-rates-worse (${bare:-?})" awk -v s="${bare:-0}" 'BEGIN { exit !(s > 2.0) }'
for u in modsignd.service modsignd.socket modsignd-tls.socket; do
	# Only complaints about the binary not being installed here are allowed.
	systemd-analyze verify --man=no "$U/$u" 2>&1 | grep -v -e "is not executable" -e "^$" >"$T/verify.out"
	check "unit-verifies $u" test ! -s "$T/verify.out"
done
check tls-socket-is-named-tls grep -q '^FileDescriptorName=tls' "$U/modsignd-tls.socket"
check service-is-type-notify grep -q '^Type=notify' "$U/modsignd.service"

# sd_notify: listen where NOTIFY_SOCKET points and record what arrives.
python3 - "$T/notify" >"$T/notify.log" 2>&1 <<'PY' &
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
for _ in $(seq 1 100); do [ -S "$T/notify" ] && break; sleep 0.05; done
NOTIFY_SOCKET=$T/notify bash -c 'export WATCHDOG_PID=$$ WATCHDOG_USEC=1000000; exec "$0" "$@"' \
	"$MODSIGND" --listen "unix:$T/sock" --key default=ephemeral:rsa4096 2>"$T/d.log" &
pid=$!
for _ in $(seq 1 400); do grep -q READY=1 "$T/notify.log" && break; sleep 0.05; done
check notify-ready grep -q "READY=1" "$T/notify.log"
check ready-after-keys-loaded grep -q "key default: ephemeral rsa4096" "$T/d.log"
check serves-when-ready "$CLIENT" --server "unix:$T/sock" status
# Three pings, each within the 1 s watchdog interval of the one before
# (the listener stamps each message with its monotonic time).
pings() { test "$(grep -c WATCHDOG=1 "$T/notify.log")" -ge 3; }
eventually 5 pings
gap=$(awk '/WATCHDOG=1/ { if (n++) { g = $1 - t; if (g > max) max = g } t = $1 } END { printf "%.3f", max + 0 }' "$T/notify.log")
check "notify-watchdog ($(grep -c WATCHDOG=1 "$T/notify.log") pings, longest gap ${gap} s)" \
	test "$(grep -c WATCHDOG=1 "$T/notify.log")" -ge 3 -a "$(echo "$gap > 0 && $gap < 1.0" | bc)" -eq 1
check notify-status grep -q "STATUS=.*signature(s) given" "$T/notify.log"
kill -TERM $pid
wait $pid
check exits-0-on-sigterm test $? -eq 0
wait $listener
check notify-stopping grep -q "STOPPING=1" "$T/notify.log"
# Twin: a daemon that cannot load its key never says READY=1.
: >"$T/notify.log"
python3 -c "
import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind('$T/notify2'); s.settimeout(3)
try: print(s.recv(4096).decode())
except socket.timeout: pass" >"$T/notify2.log" &
l2=$!
for _ in $(seq 1 100); do [ -S "$T/notify2" ] && break; sleep 0.05; done
NOTIFY_SOCKET=$T/notify2 "$MODSIGND" --listen "unix:$T/sock2" --key default=/nonexistent.pem 2>/dev/null
wait $l2
refute no-ready-without-keys grep -q "READY=1" "$T/notify2.log"
