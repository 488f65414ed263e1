#!/bin/bash
# Runs inside the guest (Debian 12 or 13) of tests/vm/run.sh, as root, from
# vm-check-runner.service, after multi-user.target.  The payload disk
# (/payload, read-only) holds the .debs, real modules, a TLS PKI and a
# SoftHSM2 token.  Each check prints "ok NAME" or "not ok NAME: why";
# tests/integration/vm.bats turns each into a case.  Each positive check
# has its refused or tampered twin next to it.  The run ends with "done".
set -u
P=/payload
W=/root/w
CONF=/etc/modsignd/modsignd.conf
CRED=/run/credentials/modsignd.service
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$W" && cd "$W" || exit 1

# check NAME COMMAND...: run it, report (and how long it took, as a
# comment), keep its output in $W/NAME.out.
check() {
	local name=$1 out t0=$SECONDS
	shift
	out=$("$@" 2>&1)
	if [ $? -eq 0 ]; then
		echo "ok $name"
	else
		echo "not ok $name: $(printf '%s' "$out" | tail -n 4 | tr '\n' ' ' | cut -c1-400)"
		# The guest is gone after the run: what its units said, with the result.
		journalctl -n 15 --no-pager -o short-monotonic -u 'modsign*' 2>&1 | sed 's/^/#   /'
	fi
	echo "# $name: $((SECONDS - t0)) s, at $SECONDS s"
	printf '%s\n' "$out" >"$W/$name.out"
}
fail() { echo "$*" >&2; return 1; }
# eventually SECONDS COMMAND...: true once COMMAND is, within SECONDS.
eventually() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.5
	done
}
sha() { sha256sum "$1" | cut -c1-64; }
mainpid() { systemctl show -p MainPID --value modsignd.service; }
fresh() { cp "$(ls $P/modules/*.ko | head -n "${2:-1}" | tail -n 1)" "$1"; }
C=modsign-client

# sign_verify FILE [CLIENT-ARGS...]: root signs FILE; it verifies with the
# daemon's certificate (fetched the same way), and a copy with one byte
# changed does not.
sign_verify() {
	local f=$1
	shift
	fresh "$f"
	$C "$@" sign "$f" || return 1
	$C "$@" cert >"$f.crt" || return 1
	$C verify --cert "$f.crt" "$f" || return 1
}
tampered_refused() {
	local f=$1
	cp "$f" "$f.bad"
	printf '\x55' | dd of="$f.bad" bs=1 seek=4096 conv=notrunc status=none
	! $C verify --cert "$f.crt" "$f.bad"
}

# ---- install ------------------------------------------------------------------
echo "# guest: $(uname -r), systemd $(systemctl --version | head -n1 | cut -d' ' -f2)"
# The units must not need procps (absent from minimal and container
# images): bookworm's guest has no /bin/kill; trixie's has procps anyway
# (ucf depends on it), so its kill is hidden here, the way it is absent
# there, for everything below (reload among it).
[ ! -e /usr/bin/kill ] || mount --bind /dev/null /usr/bin/kill
check guest-has-no-procps-kill sh -c '! /bin/kill -l'
check apt-install apt-get install -y --no-install-recommends \
	"$(ls $P/debs/modsignd_*.deb)" "$(ls $P/debs/modsign-client_*.deb)"
check group-created getent group modsign
check socket-listening-after-install sh -c 'systemctl -q is-active modsignd.socket && test -S /run/modsignd/modsignd.sock'
check socket-is-0660-root-modsign sh -c '[ "$(stat -c %a:%U:%G /run/modsignd/modsignd.sock)" = 660:root:modsign ]'
# Socket activation: nothing runs until the first client, which starts it.
check service-idle-before-first-use sh -c '! systemctl -q is-active modsignd.service'
check first-use-activates sh -c "$C status && systemctl -q is-active modsignd.service"
check default-config-keeps-root sign_verify root.ko
check root-tampered-twin-refused tampered_refused root.ko

# The metrics file of the shipped configuration: in the unit's own
# directory (the daemon's user's, 0755: modsignd refuses one others may
# write), 0644 under UMask=0077, so that node_exporter (another user)
# reads it; the twin: nobody may write the directory.
M=/run/modsignd/metrics
metrics_readable() {
	local uid
	uid=$(sed -n 's/^Uid:\t\([0-9]*\).*/\1/p' "/proc/$(mainpid)/status")
	eventually 10 test -s $M/modsignd.prom || fail "no $M/modsignd.prom"
	[ "$(stat -c %u:%a $M)" = "$uid:755" ] || fail "$M: $(stat -c %u:%a $M), daemon uid $uid"
	[ "$(stat -c %a $M/modsignd.prom)" = 644 ] || fail "mode $(stat -c %a $M/modsignd.prom)"
	# The count of the signature just made: the file is rewritten every 5 s.
	eventually 15 runuser -u nobody -- grep -q '^modsignd_signatures_issued_total{key="default"} [1-9]' \
		$M/modsignd.prom ||
		fail "as nobody: $(runuser -u nobody -- grep -m1 -e issued_total -e denied $M/modsignd.prom 2>&1)"
}
check metrics-file-readable-by-others metrics_readable
check metrics-dir-not-writable-by-others sh -c "! runuser -u nobody -- touch $M/planted"

# The rest restarts the daemon a dozen times: a 2048-bit one-time key
# keeps that quick under TCG (the 4096-bit default was made above).
sed -i 's/^key = default=ephemeral:rsa4096$/key = default=ephemeral:rsa2048/' $CONF
systemctl restart modsignd.service

# ---- who may sign -------------------------------------------------------------
useradd -m -G modsign builder
useradd -m outsider
member_signs() {
	fresh /home/builder/b.ko 2 && chown builder: /home/builder/b.ko
	runuser -u builder -- $C sign /home/builder/b.ko || return 1
	$C cert >b.crt && $C verify --cert b.crt /home/builder/b.ko
}
outsider_refused() {
	local before
	fresh /home/outsider/o.ko 3 && chown outsider: /home/outsider/o.ko
	before=$(sha /home/outsider/o.ko)
	runuser -u outsider -- $C sign /home/outsider/o.ko 2>o.err && return 1
	cat o.err
	grep -q "Permission denied" o.err && [ "$(sha /home/outsider/o.ko)" = "$before" ]
}
check group-member-signs member_signs
check outsider-refused-module-untouched outsider_refused

# ---- the service's life -------------------------------------------------------
# Each is followed by a signature.  The socket must survive every one of
# them (RuntimeDirectory= of the service used to delete it).
socket_there() { test -S /run/modsignd/modsignd.sock; }
restart_signs() { systemctl restart modsignd.service && socket_there && sign_verify r1.ko; }
stop_keeps_socket() { systemctl stop modsignd.service && socket_there && systemctl -q is-active modsignd.socket; }
start_signs() { systemctl start modsignd.service && sign_verify r2.ko; }
check restart-then-signs restart_signs
check stop-keeps-socket stop_keeps_socket
check start-after-stop-signs start_signs
# SIGKILL: Restart= brings it back by itself, before any client asks.
killed_restarts() {
	local pid n0
	pid=$(mainpid)
	n0=$(systemctl show -p NRestarts --value modsignd.service)
	kill -KILL "$pid"
	eventually 30 sh -c "[ \"\$(systemctl show -p NRestarts --value modsignd.service)\" -gt $n0 ] && systemctl -q is-active modsignd.service" ||
		fail "not restarted: $(systemctl status modsignd.service --no-pager | head -n 5)"
	[ "$(mainpid)" != "$pid" ] && socket_there
}
check sigkill-restarted-by-systemd killed_restarts
check sigkill-then-signs sign_verify r3.ko

# reload: the policy is re-read, the one-time key kept.  The twin: after
# a reload that drops the group rule, the member is refused; the
# certificate is the one from before the reload.
reload_applies_policy() {
	local pid
	$C cert >pre.crt && pid=$(mainpid)
	sed -i 's/^allow = group:modsign/#allow = group:modsign/' $CONF
	systemctl reload modsignd.service || return 1
	fresh /home/builder/late.ko && chown builder: /home/builder/late.ko
	eventually 20 sh -c '! runuser -u builder -- modsign-client sign /home/builder/late.ko' ||
		fail "member still signs after the reload"
	$C cert >post.crt && cmp pre.crt post.crt && [ "$(mainpid)" = "$pid" ]
}
reload_back() {
	sed -i 's/^#allow = group:modsign/allow = group:modsign/' $CONF
	systemctl reload modsignd.service &&
		eventually 20 runuser -u builder -- $C sign /home/builder/late.ko
}
check reload-rereads-policy-keeps-key reload_applies_policy
check reload-back-member-signs reload_back
check reload-then-signs sign_verify r4.ko

# The journal: a grant and a refusal (the member after the reload), each
# an entry with its structured fields.
journal_entry() { # ok|refused: the last such audit entry, its fields
	journalctl -u modsignd.service -o verbose --no-pager \
		--output-fields=MODSIGN_RESULT,MODSIGN_IDENTITY,MODSIGN_KEY,MODSIGN_MODULE,MODSIGN_DIGEST,PRIORITY |
		awk -v want="$1" '
		function flush() { if (rec ~ /MODSIGN_RESULT=/ && ((rec ~ /MODSIGN_RESULT=ok\n/) == (want == "ok"))) last = rec }
		/^[^ ]/ { flush(); rec = ""; next }
		{ rec = rec $0 "\n" }
		END { flush(); printf "%s", last }'
}
grant_fields() {
	journal_entry ok | tee entry.txt
	grep -q 'MODSIGN_IDENTITY=uid:0' entry.txt && grep -q 'MODSIGN_KEY=default' entry.txt &&
		grep -q 'MODSIGN_MODULE=.*\.ko' entry.txt && grep -Eq 'MODSIGN_DIGEST=[0-9a-f]{64}' entry.txt &&
		grep -q 'PRIORITY=6' entry.txt
}
# A policy refusal happens at the connection, before any request: it names
# who was refused and why, at warning priority; no key or module yet.
refusal_fields() {
	journal_entry refused | tee entry.txt
	grep -q "MODSIGN_IDENTITY=.*$(id -u builder)" entry.txt &&
		grep -q 'MODSIGN_RESULT=.*not allowed by policy' entry.txt && grep -q 'PRIORITY=4' entry.txt
}
check journal-grant-fields grant_fields
check journal-refusal-fields refusal_fields

# ---- the watchdog ---------------------------------------------------------------
# A daemon that stops answering (SIGSTOP) is killed and restarted by
# systemd's watchdog; the twin: one that runs keeps its pid as long.
mkdir -p /etc/systemd/system/modsignd.service.d
printf '[Service]\nWatchdogSec=4s\n' >/etc/systemd/system/modsignd.service.d/watchdog.conf
systemctl daemon-reload
systemctl restart modsignd.service
watchdog_keeps_live_daemon() {
	local pid
	pid=$(mainpid)
	sleep 12
	[ "$(mainpid)" = "$pid" ] || fail "a live daemon was restarted"
}
watchdog_restarts_stopped() {
	local pid
	pid=$(mainpid)
	kill -STOP "$pid"
	eventually 60 sh -c "[ \"\$(systemctl show -p MainPID --value modsignd.service)\" != $pid ] && systemctl -q is-active modsignd.service" ||
		fail "not restarted"
	journalctl -u modsignd.service --no-pager | grep -q "Watchdog timeout"
}
check watchdog-live-daemon-kept watchdog_keeps_live_daemon
check watchdog-restarts-stopped-daemon watchdog_restarts_stopped
check watchdog-then-signs sign_verify r5.ko
rm /etc/systemd/system/modsignd.service.d/watchdog.conf
systemctl daemon-reload

# ---- TLS, enabled later ---------------------------------------------------------
# The TLS key reaches the DynamicUser daemon as a credential; the socket
# is enabled while the service runs; loopback is served, a non-local
# address refused by the socket's own IP lists, and served once they are
# widened.
install -d -m 0755 /etc/modsignd/tls
install -m 0644 $P/pki/ca.crt $P/pki/server.crt /etc/modsignd/tls/
install -m 0600 $P/pki/server.key /etc/modsignd/tls/
printf '[Service]\nLoadCredential=tls-key:/etc/modsignd/tls/server.key\n' \
	>/etc/systemd/system/modsignd.service.d/tls.conf
cat >>$CONF <<CNF
tls-cert = /etc/modsignd/tls/server.crt
tls-key = $CRED/tls-key
tls-client-ca = /etc/modsignd/tls/ca.crt
allow = cn:builder-01
CNF
systemctl daemon-reload
systemctl restart modsignd.service
# tls ADDRESS ARGS...: the builder's client over TLS, bounded (a SYN the
# socket's lists drop is never answered).
# The first connection after a socket's (re)start starts the hand-off
# service and the daemon's TLS side in an emulated guest the host may
# starve: the handshake gets 25 s (the client's default, 10 s, timed out
# once under a loaded make check), the whole call 30.
tls() {
	timeout 30 $C --server "tls:$1:7787" --tls-ca $P/pki/ca.crt --tls-cert $P/pki/builder.crt \
		--tls-key tls.key --stall-timeout 25 "${@:2}"
}
install -m 0600 $P/pki/builder.key tls.key
tls_signs() { # ADDRESS FILE
	fresh "$2"
	tls "$1" sign "$2" || return 1
	$C cert >"$2.crt" && $C verify --cert "$2.crt" "$2"
}
nonlocal_refused() {
	local before
	fresh nl.ko && before=$(sha nl.ko)
	tls 198.18.0.1 sign nl.ko && fail "served a non-local address"
	[ "$(sha nl.ko)" = "$before" ]
}
enable_tls_while_running() {
	systemctl -q is-active modsignd.service || fail "precondition: modsignd is not running"
	systemctl enable --now modsignd-tls.socket && systemctl -q is-active modsignd-tls.socket
}
check tls-socket-enable-now-while-running enable_tls_while_running
check tls-loopback-signs tls_signs 127.0.0.1 t1.ko
ip link add dummy0 type dummy && ip addr add 198.18.0.1/24 dev dummy0 && ip link set dummy0 up
check tls-nonlocal-refused-by-socket-lists nonlocal_refused
mkdir -p /etc/systemd/system/modsignd-tls.socket.d
printf '[Socket]\nIPAddressAllow=198.18.0.0/15\n' >/etc/systemd/system/modsignd-tls.socket.d/farm.conf
systemctl daemon-reload
widened_serves() { systemctl restart modsignd-tls.socket && tls_signs 198.18.0.1 t2.ko; }
check tls-widened-list-serves-nonlocal widened_serves

# ---- exposure --------------------------------------------------------------------
exposure() { # UNIT MAX|-MIN: its exposure is at most MAX (at least MIN)
	local s
	s=$(systemd-analyze security "$1" --no-pager 2>/dev/null |
		sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
	echo "exposure of $1: ${s:-?}"
	awk -v s="${s:-x}" -v lim="$2" 'BEGIN { if (s == "x") exit 1; exit !(lim < 0 ? s >= -lim : s <= lim) }'
}
check exposure-at-most-2.0 exposure modsignd.service 2.0
# The twin: the same analysis rates an unsandboxed unit of ours worse.
check exposure-twin-handoff-worse exposure modsignd-tls-handoff.service -2.1

# ---- a PKCS#11 key, its PIN a credential ------------------------------------------
# The token's files go where Debian's softhsm2 keeps them; the daemon
# (DynamicUser, the whole sandbox) reaches them as a member of softhsm.
cp -a $P/token/tokens/. /var/lib/softhsm/tokens/
chown -R root:softhsm /var/lib/softhsm/tokens
chmod -R g+rwX /var/lib/softhsm/tokens
install -m 0600 $P/token/pin /etc/modsignd/pkcs11-pin
cat >/etc/systemd/system/modsignd.service.d/hsm.conf <<'UNIT'
[Service]
LoadCredential=pkcs11-pin:/etc/modsignd/pkcs11-pin
SupplementaryGroups=softhsm
ReadWritePaths=/var/lib/softhsm/tokens
UNIT
cat >>$CONF <<'CNF'
key = hsm=pkcs11:token=vm;object=vmkey;type=private
pkcs11-module = /usr/lib/softhsm/libsofthsm2.so
CNF
systemctl daemon-reload
systemctl restart modsignd.service
hsm_signs() {
	fresh h.ko
	$C sign --key hsm h.ko && $C verify --cert $P/token/vmkey.pem h.ko
}
hsm_wrong_pin() {
	echo 000000 >/etc/modsignd/pkcs11-pin
	systemctl restart modsignd.service
	fresh hw.ko
	! $C sign --key hsm hw.ko 2>hw.err || fail "signed with a wrong PIN"
	cat hw.err
	# The failed starts repeat (Restart=on-failure, and each connection
	# to the socket activates it): stop them before the PIN is put back,
	# lest a start that read the wrong one answer for the next (it did,
	# once in a CI run: "control process exited with error code").
	systemctl stop modsignd.socket modsignd.service
	systemctl reset-failed modsignd.service modsignd.socket
	install -m 0600 $P/token/pin /etc/modsignd/pkcs11-pin
	systemctl start modsignd.socket modsignd.service
}
check hsm-key-signs-under-sandbox hsm_signs
check hsm-wrong-pin-refused hsm_wrong_pin

# ---- remove and purge -------------------------------------------------------------
none_running() {
	! grep -qx modsignd /proc/[0-9]*/comm 2>/dev/null &&
		! systemctl -q is-active modsignd.service modsignd.socket modsignd-tls.socket
}
check apt-remove apt-get remove -y modsignd modsign-client
check remove-nothing-running none_running
check remove-keeps-config test -f $CONF
# What the operator put there is theirs: purge does not delete keys.
rm -rf /etc/systemd/system/modsignd.service.d /etc/systemd/system/modsignd-tls.socket.d \
	/etc/modsignd/tls /etc/modsignd/pkcs11-pin
systemctl daemon-reload
# builder is still a member: the group stays (the twin of group-removed).
check purge-with-member apt-get purge -y modsignd modsign-client
check purge-keeps-group-in-use getent group modsign
# The audit log outlives the package (the keys may): moved aside, root's
# alone, and the purge says where.
audit_log_kept() {
	local d
	# (apt ends the lines of maintainer scripts with CR LF)
	d=$(tr -d '\r' <purge-with-member.out | sed -n 's/^modsignd: purge keeps the audit log: //p')
	[ -n "$d" ] || fail "purge did not say where the audit log went"
	[ "$(stat -c %U:%a "$d")" = root:700 ] || fail "$d: $(stat -c %U:%a "$d")"
	[ "$(find "$d" ! -user root | wc -l)" = 0 ] || fail "$d: files not root's"
	grep -q '"result":"ok"' "$d/audit.jsonl"
}
check purge-keeps-audit-log audit_log_kept
gone() {
	local f left=()
	for f in /etc/modsignd /etc/modsign /var/log/modsignd /var/log/private/modsignd \
		/run/modsignd /lib/systemd/system/modsignd.service /usr/bin/modsign-client \
		/etc/systemd/system/sockets.target.wants/modsignd.socket; do
		[ -e "$f" ] || [ -L "$f" ] && left+=("$f")
	done
	[ ${#left[@]} -eq 0 ] || fail "left behind: ${left[*]}"
	! systemctl list-unit-files --no-pager | grep -q modsign || fail "units still known"
}
check purge-leaves-nothing gone
gpasswd -d builder modsign >/dev/null
check reinstall-after-purge apt-get install -y --no-install-recommends \
	"$(ls $P/debs/modsignd_*.deb)" "$(ls $P/debs/modsign-client_*.deb)"
check reinstall-signs sign_verify again.ko
check purge-unused apt-get purge -y modsignd modsign-client
no_group() { ! getent group modsign; }
check purge-removes-unused-group no_group
check purge-again-leaves-nothing gone
echo done
