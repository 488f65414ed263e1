#!/bin/bash
# Attacks on the daemon's own ground: key files others can read, key
# material in swappable memory, client certificates that are not client
# leafs or whose names lie in a log, and settings that silently lose.  Each
# attack has a twin that the daemon must still accept.
. "$(dirname "$0")/../lib.sh"

cd "$T" || exit 1
mod=$(real_modules 1)
fresh() { cp "$mod" "$1" && "$CLIENT" strip "$1"; }

# try_start NAME ARGS...: run modsignd on $T/NAME.sock until it either
# listens (STARTED=1, then stopped again) or exits (STARTED=0, RC its
# status); its stderr is in $T/NAME.err.
try_start() {
	local name=$1 pid
	shift
	"$MODSIGND" --listen "unix:$T/$name.sock" "$@" 2>"$T/$name.err" &
	pid=$!
	DAEMON_PIDS+=($pid)
	eventually 60 eval "[ -S '$T/$name.sock' ] || ! kill -0 $pid 2>/dev/null"
	if [ -S "$T/$name.sock" ]; then
		STARTED=1
		stop_daemon "$pid"
	else
		STARTED=0
		wait "$pid"
		RC=$?
	fi
}
refused() { [ "$STARTED" = 0 ] && [ "$RC" != 0 ]; }
started() { [ "$STARTED" = 1 ]; }
one_line() { [ "$(wc -l <"$1")" -eq 1 ]; }

# ---- 7. key files with loose permissions ----------------------------------
make_pem_key "$T/key.pem" rsa:2048 # mode 0600
for mode in 0644 0640 0620 0604; do
	cp "$T/key.pem" "$T/loose-$mode.pem" && chmod "$mode" "$T/loose-$mode.pem"
	try_start loose-$mode --key default="$T/loose-$mode.pem"
	check "key-file-mode-$mode-refused-at-start" refused
	check "key-file-mode-$mode-refusal-names-file-and-mode" \
		grep -q "loose-$mode.pem: mode $mode: group or others may read or write it" \
		"$T/loose-$mode.err"
	printf 'key = default=%s\n' "$T/loose-$mode.pem" >"$T/loose-$mode.conf"
	refute "key-file-mode-$mode-refused-by-check-config" \
		"$MODSIGND" --config "$T/loose-$mode.conf" --check-config
done
"$MODSIGND" --config "$T/loose-0644.conf" --check-config >/dev/null 2>"$T/loose-cc.err"
check key-file-check-config-error-is-one-line-naming-mode \
	eval "one_line '$T/loose-cc.err' && grep -q 'loose-0644.pem: mode 0644' '$T/loose-cc.err'"
check key-file-start-error-is-one-line one_line "$T/loose-0644.err"
# Twins: 0600 and 0400 are fine, at start and in --check-config.
for mode in 0600 0400; do
	cp "$T/key.pem" "$T/tight-$mode.pem" && chmod "$mode" "$T/tight-$mode.pem"
	printf 'key = default=%s\n' "$T/tight-$mode.pem" >"$T/tight-$mode.conf"
	check "twin-key-file-mode-$mode-passes-check-config" \
		"$MODSIGND" --config "$T/tight-$mode.conf" --check-config
	try_start tight-$mode --key default="$T/tight-$mode.pem"
	check "twin-key-file-mode-$mode-accepted" started
done

# The TLS key, read the same way.
pki ca
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >san.ext
issue server ca -extfile san.ext
cp server.key server-loose.key && chmod 0644 server-loose.key
tlsargs() { echo --tls-cert "$T/server.crt" --tls-client-ca "$T/ca.crt" --tls-key "$T/$1"; }
# shellcheck disable=SC2046
try_start tlskey-loose --key default=ephemeral:ecdsa-p256 $(tlsargs server-loose.key)
check tls-key-mode-0644-refused-at-start refused
check tls-key-refusal-names-file-and-mode \
	eval "one_line '$T/tlskey-loose.err' && grep -q 'server-loose.key: mode 0644' '$T/tlskey-loose.err'"
printf 'key = default=ephemeral:ecdsa-p256\ntls-cert = %s\ntls-key = %s\ntls-client-ca = %s\n' \
	"$T/server.crt" "$T/server-loose.key" "$T/ca.crt" >tlskey-loose.conf
refute tls-key-mode-0644-refused-by-check-config "$MODSIGND" --config tlskey-loose.conf --check-config
# shellcheck disable=SC2046
try_start tlskey-tight --key default=ephemeral:ecdsa-p256 $(tlsargs server.key)
check twin-tls-key-mode-0600-accepted started
sed "s|$T/server-loose.key|$T/server.key|" tlskey-loose.conf >tlskey-tight.conf
check twin-tls-key-mode-0600-passes-check-config \
	"$MODSIGND" --config tlskey-tight.conf --check-config

# ---- 8. key material in swappable memory -----------------------------------
start_daemon "$T/mem.sock" --key default=ephemeral:rsa2048 --key file="$T/key.pem" || exit 1
mem_pid=$DAEMON_PID
fresh "$T/mem1.ko" && fresh "$T/mem2.ko"
check mem-daemon-signs-with-one-time-key "$CLIENT" --server "unix:$T/mem.sock" sign "$T/mem1.ko"
check mem-daemon-signs-with-file-key "$CLIENT" --server "unix:$T/mem.sock" sign --key file "$T/mem2.ko"
# smaps' Locked is proportional like Pss (a library page shared with other
# processes counts a share), so a mapping is wholly locked when Locked ==
# Pss.  The kernel's [vdso]/[vvar]/[vsyscall] cannot be locked and hold
# nothing of ours.
unlocked_mappings() { # PID: print mappings with resident pages not locked
	python3 - "$1" <<'PY'
import sys
bad, cur, f = [], None, {}
def done():
    if cur and f.get("Rss", 0) > 0 and f.get("Locked", 0) != f.get("Pss", 0) \
       and not any(k in cur for k in ("[vdso]", "[vvar]", "[vsyscall]")):
        bad.append(f"{cur.strip()} Rss={f['Rss']} Pss={f['Pss']} Locked={f['Locked']}")
for line in open(f"/proc/{sys.argv[1]}/smaps"):
    k = line.split()[0]
    if not k.endswith(":"):
        done(); cur, f = line, {}
    elif line.split()[-1] == "kB":
        f[k[:-1]] = int(line.split()[1])
done()
print("\n".join(bad[:5])); sys.exit(1 if bad else 0)
PY
}
check mem-every-resident-mapping-is-locked unlocked_mappings "$mem_pid"
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
echo "# VmRSS $(status_kb "$mem_pid" VmRSS) kB, VmLck $(status_kb "$mem_pid" VmLck) kB (reserved, MCL_ONFAULT)"
# The primes of the file key, as OpenSSL holds them (little-endian limbs)
# or as DER/PEM decoding leaves them (big-endian): wherever they are in
# the running daemon's memory, that memory must be locked (VmFlags "lo").
primes_in_unlocked_memory() { # PID KEYFILE
	python3 - "$1" "$2" <<'PY'
import re, sys
from cryptography.hazmat.primitives.serialization import load_pem_private_key
pid, key = sys.argv[1], load_pem_private_key(open(sys.argv[2], "rb").read(), None)
nums = key.private_numbers()
needles = []
for n in (nums.p, nums.q):
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    needles += [b[:32], b[::-1][:32]]
maps, cur = [], None
for line in open(f"/proc/{pid}/smaps"):
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
    if m:
        cur = [int(m[1], 16), int(m[2], 16), m[3], line.strip(), False]
        maps.append(cur)
    elif line.startswith("VmFlags:"):
        cur[4] = " lo" in line or line.split()[1:].count("lo") > 0
hits = unlocked = 0
with open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for lo, hi, perm, desc, locked in maps:
        if "r" not in perm or "[v" in desc:
            continue
        try:
            mem.seek(lo); data = mem.read(hi - lo)
        except OSError:
            continue
        for nd in needles:
            c = data.count(nd)
            hits += c
            if c and not locked:
                unlocked += c
                print("unlocked:", desc)
print(f"{hits} copies of prime bytes, {unlocked} in unlocked memory")
sys.exit(0 if hits and not unlocked else 1)
PY
}
check mem-rsa-primes-only-in-locked-memory primes_in_unlocked_memory "$mem_pid" "$T/key.pem"
stop_daemon "$mem_pid"

# No lock, no daemon: root without CAP_IPC_LOCK and a 1 MiB RLIMIT_MEMLOCK.
nocap() { setpriv --bounding-set -ipc_lock --inh-caps -ipc_lock -- "$@"; }
MODSIGND_REAL=$MODSIGND
MODSIGND="$T/nolock-wrapper"
cat >"$MODSIGND" <<SH
#!/bin/sh
exec prlimit --memlock=\${MEMLOCK:-1048576} setpriv --bounding-set -ipc_lock --inh-caps -ipc_lock -- "$MODSIGND_REAL" "\$@"
SH
chmod 755 "$MODSIGND"
try_start nolock --key default=ephemeral:ecdsa-p256
check mem-cannot-lock-refuses-to-start refused
check mem-cannot-lock-says-so-in-one-line \
	eval "one_line '$T/nolock.err' && grep -q 'cannot lock memory against swap' '$T/nolock.err'"
lacks_ipc_lock() { # CAP_IPC_LOCK is bit 14
	local eff
	eff=$(nocap awk '/^CapEff:/{print $2}' /proc/self/status)
	[ -n "$eff" ] && [ $(((0x$eff >> 14) & 1)) -eq 0 ]
}
check mem-test-setpriv-drops-cap-ipc-lock lacks_ipc_lock
# Raising the hard limit needs CAP_SYS_RESOURCE, which some containers lack.
if prlimit --memlock=unlimited true 2>/dev/null; then
	MEMLOCK=unlimited try_start nolock-unlimited --key default=ephemeral:ecdsa-p256
	check twin-mem-no-cap-but-enough-limit-starts started
else
	echo "SKIP twin-mem-no-cap-but-enough-limit-starts (cannot raise RLIMIT_MEMLOCK here)"
fi
MODSIGND=$MODSIGND_REAL
try_start withcap --key default=ephemeral:ecdsa-p256
check twin-mem-with-cap-ipc-lock-starts started

# ---- 9. TLS client certificates ---------------------------------------------
# issue_utf8 NAME CN [x509 ARGS]: like issue, with a UTF-8 common name.
issue_utf8() {
	local name=$1 cn=$2
	shift 2
	openssl req -new -utf8 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
		-keyout "$name.key" -out "$name.csr" 2>/dev/null
	openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
		-days 30 -out "$name.crt" "$@" 2>/dev/null
}
printf 'basicConstraints=critical,CA:TRUE\n' >ca-true.ext
printf 'basicConstraints=CA:TRUE\nextendedKeyUsage=clientAuth\n' >ca-true-eku.ext
printf 'extendedKeyUsage=serverAuth\n' >server-eku.ext
printf 'extendedKeyUsage=clientAuth\nbasicConstraints=critical,CA:FALSE\n' >client-eku.ext
issue plain-leaf ca
issue client-leaf ca -extfile client-eku.ext
issue ca-leaf ca -extfile ca-true.ext
issue ca-client-leaf ca -extfile ca-true-eku.ext
issue server-eku-leaf ca -extfile server-eku.ext
RLO=$'\xe2\x80\xae' NEL=$'\xc2\x85'
issue_utf8 rlo-leaf "builder${RLO}gpj.ko"
issue_utf8 nel-leaf "builder${NEL}x"
PORT=$(free_port)
{
	echo "key = default=ephemeral:ecdsa-p256"
	echo "listen = tls:127.0.0.1:$PORT"
	echo "tls-cert = $T/server.crt"
	echo "tls-key = $T/server.key"
	echo "tls-client-ca = $T/ca.crt"
	echo "allow = uid:0"
	for cn in plain-leaf client-leaf ca-leaf ca-client-leaf server-eku-leaf \
		"builder${RLO}gpj.ko" "builder${NEL}x"; do
		echo "allow = cn:$cn"
	done
} >tls.conf
start_daemon "$T/tls.sock" --config "$T/tls.conf" || exit 1
wait_port "$PORT" || fail tls-daemon-listens
as() { local who=$1; shift; "$CLIENT" --server "tls:localhost:$PORT" --tls-ca ca.crt \
	--tls-cert "$who.crt" --tls-key "$who.key" "$@"; }
check twin-tls-leaf-without-eku-accepted as plain-leaf status
check twin-tls-leaf-with-clientauth-accepted as client-leaf status
refute tls-ca-true-client-cert-refused as ca-leaf status
refute tls-ca-true-with-clientauth-refused as ca-client-leaf status
check tls-ca-true-refusal-logged grep -q "unsuitable certificate purpose" "$T/modsignd.log"
# OpenSSL's own ssl_client purpose refuses this one already; kept as a guard.
refute tls-serverauth-only-client-cert-refused as server-eku-leaf status
# A signature is logged and audited with the identity: the name would show.
fresh "$T/rlo.ko" && fresh "$T/nel.ko"
refute tls-cn-with-bidi-override-refused as rlo-leaf sign "$T/rlo.ko"
refute tls-cn-with-c1-control-refused as nel-leaf sign "$T/nel.ko"
check tls-bad-cn-refusal-logged grep -q "no usable common name" "$T/modsignd.log"
check tls-log-holds-no-bidi-override eval "! LC_ALL=C grep -q '$RLO' '$T/modsignd.log'"
check tls-log-holds-no-c1-control eval "! LC_ALL=C grep -q '$NEL' '$T/modsignd.log'"
stop_daemon "$DAEMON_PID"

# ---- 10. configuration -------------------------------------------------------
printf 'key = default=ephemeral:ecdsa-p256\naudit-log = %s/a1\n# the second\naudit-log = %s/a2\n' \
	"$T" "$T" >dup.conf
refute conf-single-option-twice-in-file-refused "$MODSIGND" --config dup.conf --check-config
"$MODSIGND" --config dup.conf --check-config >/dev/null 2>dup.err
check conf-twice-error-names-option-and-both-lines \
	grep -q "dup.conf:4: 'audit-log' given twice (first on line 2)" dup.err
try_start dup --config "$T/dup.conf"
check conf-single-option-twice-in-file-refused-at-start refused
printf 'key = default=ephemeral:ecdsa-p256\n' >one.conf
refute conf-single-option-twice-on-cli-refused \
	"$MODSIGND" --config one.conf --check-config --audit-log "$T/a1" --audit-log "$T/a2"
"$MODSIGND" --config one.conf --check-config --audit-log "$T/a1" --audit-log "$T/a2" >/dev/null 2>dup2.err
check conf-twice-on-cli-error-names-option grep -q -- "--audit-log given twice on the command line" dup2.err
try_start dupcli --key default=ephemeral:ecdsa-p256 --workers 1 --workers 2
check conf-single-option-twice-on-cli-refused-at-start refused
# Twins: repeatable options repeat; the command line overrides the file.
printf 'key = default=ephemeral:ecdsa-p256\nkey = b=ephemeral:ecdsa-p256\nallow = uid:0\nallow = uid:1\naudit-log = %s/a1\n' \
	"$T" >twin.conf
check twin-conf-repeatable-options-repeat "$MODSIGND" --config twin.conf --check-config
check twin-conf-cli-overrides-file-once "$MODSIGND" --config twin.conf --check-config --audit-log "$T/a2"

# SIGHUP names what it does not apply.
cp twin.conf hup.conf
start_daemon "$T/hup.sock" --config "$T/hup.conf" || exit 1
hup_pid=$DAEMON_PID
reloads() { grep -c "policy reloaded" "$T/modsignd.log"; }
before=$(reloads)
echo "allow = uid:2" >>hup.conf
kill -HUP "$hup_pid"
eventually 20 eval "[ \$(reloads) -gt $before ]"
check twin-sighup-allow-only-change-reloaded eval "[ \$(reloads) -gt $before ]"
refute twin-sighup-allow-only-change-warns-nothing grep -q "not applied" "$T/modsignd.log"
before=$(reloads)
sed -i -e "s|^audit-log = .*|audit-log = $T/elsewhere|" -e "s|^key = b=.*|key = b=ephemeral:rsa2048|" hup.conf
kill -HUP "$hup_pid"
eventually 20 eval "[ \$(reloads) -gt $before ]"
check sighup-names-options-not-applied \
	grep -q "SIGHUP: .*hup.conf: changed key, audit-log: not applied until modsignd restarts" \
	"$T/modsignd.log"
stop_daemon "$hup_pid"
