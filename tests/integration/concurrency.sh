#!/bin/bash
# Many clients at once, many requests on one connection, and SIGTERM
# letting in-flight requests finish.
. "$(dirname "$0")/../lib.sh"

start_daemon "$T/sock" --key default=ephemeral:rsa2048 --key ec=ephemeral:ecdsa-p384 || exit 1
export MODSIGN_SERVER=unix:$T/sock
C=$CLIENT
$C cert >"$T/rsa.pem"
$C cert --key ec >"$T/ec.pem"
mkdir "$T/m"
for m in $(real_modules 200); do cp "$m" "$T/m/$(echo "$m" | md5sum | cut -c1-12).ko"; done
ls "$T"/m/*.ko >"$T/list"

# 16 processes signing different modules at the same time, both keys.
split -n l/16 "$T/list" "$T/part."
pids=()
i=0
for p in "$T"/part.*; do
	key=$([ $((i % 2)) -eq 0 ] && echo default || echo ec)
	$C sign --key $key $(cat "$p") 2>>"$T/err" &
	pids+=($!)
	i=$((i + 1))
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
check "16-concurrent-clients-all-succeed" test "$bad" -eq 0
ok=0
for f in $(cat "$T/list"); do
	$C verify --cert "$T/rsa.pem" "$f" >/dev/null 2>&1 || $C verify --cert "$T/ec.pem" "$f" >/dev/null 2>&1 || { ok=1; echo "bad: $f"; }
done
check "concurrent-signatures-all-verify" test "$ok" -eq 0

# One connection, 200 requests in flight: the daemon log shows one peer pid.
$C sign --hash sha512 $(cat "$T/list")
check batch-verifies $C verify --cert "$T/rsa.pem" $(cat "$T/list")
pids_seen=$(grep '"hash":"sha512"' "$T/modsignd.log" | grep -o 'pid=[0-9]*' | sort -u | wc -l)
check "batch-uses-one-connection (200 requests, $pids_seen client)" test "$pids_seen" -eq 1
check "batch-audited-every-module" test "$(grep -c '"hash":"sha512"' "$T/modsignd.log")" -eq 200

# SIGTERM mid-batch: requests in flight finish, then the daemon exits; the
# client names every module it did not sign, and none is damaged.
# The signal goes once the first module of the batch is signed, not after
# a fixed sleep, which on a slow machine can come before the client has
# connected.
for f in $(cat "$T/list"); do cp "$f" "$f.before"; done
touch "$T/term.stamp" # after the copies: only modules written later are newer
$C sign --key default --hash sha384 $(cat "$T/list") 2>"$T/term.err" &
cpid=$!
for _ in $(seq 1 1000); do
	[ -n "$(find "$T/m" -name '*.ko' -newer "$T/term.stamp" -print -quit)" ] && break
	sleep 0.01
done
kill -TERM "$DAEMON_PID"
wait "$cpid"
crc=$?
wait "$DAEMON_PID"
drc=$?
check "daemon-exits-0-on-sigterm" test "$drc" -eq 0
damaged=0 signed=0 untouched=0
for f in $(cat "$T/list"); do
	if cmp -s "$f" "$f.before"; then
		untouched=$((untouched + 1))
	elif $C verify --cert "$T/rsa.pem" "$f" 2>/dev/null | grep -q sha384; then
		signed=$((signed + 1))
	else
		damaged=$((damaged + 1))
	fi
done
check "sigterm-no-module-damaged ($signed signed, $untouched untouched)" test "$damaged" -eq 0
if [ "$untouched" -gt 0 ]; then
	check "sigterm-client-exits-nonzero" test "$crc" -ne 0
	check "sigterm-client-names-unsigned" test "$(grep -c 'not signed' "$T/term.err")" -ge "$untouched"
else
	check "sigterm-client-exits-zero-when-all-signed" test "$crc" -eq 0
fi
check no-temp-files-left bash -c "! ls -a '$T/m' | grep -q modsign-"

# ---- batch inputs and progress ------------------------------------------
start_daemon "$T/sock2" --key default=ephemeral:rsa2048 || exit 1
export MODSIGN_SERVER=unix:$T/sock2
$C cert >"$T/rsa2.pem"
mkdir -p "$T/tree/a/b" "$T/tree/c"
for m in $(real_modules 12); do cp "$m" "$T/tree/a/b/"; done
for m in $(real_modules 3); do cp "$m" "$T/tree/c/x-$(basename "$m")"; done
echo "not a module" >"$T/tree/c/README"
ln -s "$T/tree/c" "$T/tree/link"
check recursive-signs-tree $C sign --recursive "$T/tree"
check recursive-all-verify $C verify --cert "$T/rsa2.pem" $(find "$T/tree" -name '*.ko')
check recursive-skips-other-files grep -q "not a module" "$T/tree/c/README"
check recursive-does-not-follow-links test "$(grep -c '"module":"'"$T"'/tree/link' "$T/modsignd.log")" -eq 0
$C strip $(find "$T/tree" -name '*.ko')
find "$T/tree" -name '*.ko' | check stdin-signs-listed $C sign --stdin
check stdin-all-verify $C verify --cert "$T/rsa2.pem" $(find "$T/tree" -name '*.ko')
$C strip $(find "$T/tree" -name '*.ko')
find "$T/tree/a" -name '*.ko' | check dash-reads-stdin $C sign -
refute dash-left-others-unsigned $C verify --cert "$T/rsa2.pem" $(find "$T/tree/c" -name '*.ko')
# Progress on a terminal, not on a pipe.
$C strip $(find "$T/tree" -name '*.ko')
script -qfec "$C sign -r '$T/tree'" /dev/null >"$T/tty.out" 2>&1
check progress-on-terminal grep -q "signed 15/15" "$T/tty.out"
$C strip $(find "$T/tree" -name '*.ko')
$C sign -r "$T/tree" 2>"$T/pipe.err" | cat
refute no-progress-on-pipe grep -q "signed" "$T/pipe.err"
