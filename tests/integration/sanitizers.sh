#!/bin/bash
# The unit tests and the basic, errors and concurrency suites once more,
# against the ASan+UBSan build (make SAN=1: build/san), failing on any
# sanitizer report, leaks included; then the daemon of the normal build
# once under valgrind: no memory errors, no definite leaks.  Each check
# has a twin showing the detector does report a planted bug.
[ -n "${MODSIGN_IN_SANITIZERS:-}" ] && exit 0 # never under itself
. "$(dirname "$0")/../lib.sh"
export MODSIGN_IN_SANITIZERS=1
SB=$REPO/build/san
SAN_FLAGS=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)

if ! make -s -C "$REPO" SAN=1 all unit >"$T/build.log" 2>&1; then
	fail san-build "$(grep -m3 -E 'error|Error' "$T/build.log" | tr '\n' ' ')"
	exit 1
fi
pass san-build

# Every sanitized process writes its reports to $LOGS/<tool>.<pid>;
# children run as nobody (errors.sh) must be able to write there too.
LOGS=$T/san
mkdir -m 1777 "$LOGS"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:exitcode=86:log_path=$LOGS/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$LOGS/ubsan"
export LSAN_OPTIONS="exitcode=86"

reports() { find "$1" -type f -size +0 | sort; }

# run_sanitized NAME COMMAND...: the command's own PASS/FAIL lines, marked
# "san:", then whether the sanitizers reported anything while it ran.
run_sanitized() {
	local name=$1 before after
	shift
	before=$(reports "$LOGS" | wc -l)
	"$@" 2>"$T/$name.err" | sed -E 's/^(PASS|FAIL) /\1 san:/' | grep -E '^(PASS|FAIL) '
	local rc=${PIPESTATUS[0]}
	after=$(reports "$LOGS" | wc -l)
	if [ "$after" -ne "$before" ]; then
		fail "san:$name-no-reports" "$((after - before)) report(s): $(reports "$LOGS" | tail -n1 | xargs grep -m1 -h -E 'ERROR|SUMMARY|runtime error')"
	elif [ "$rc" -ne 0 ]; then
		fail "san:$name-exit" "exit $rc: $(tail -n2 "$T/$name.err" | tr '\n' ' ')"
	else
		pass "san:$name-no-reports"
	fi
}

for t in "$SB"/tests/test-*; do
	[[ $t == *.d ]] && continue
	run_sanitized "unit-$(basename "$t")" "$t"
done
for s in basic errors concurrency; do
	suite=("$REPO/tests/integration/$s.sh")
	[ -e "${suite[0]}" ] || suite=("$REPO/tests/bats-lines" "$REPO/tests/integration/$s.bats")
	run_sanitized "$s" env B="$SB" MODSIGND="$SB/modsignd" CLIENT="$SB/modsign-client" \
		"${suite[@]}"
done

# Twin: the same options catch a planted overflow and a planted leak.
printf '#include <stdlib.h>\nint main(int c, char **v) { char *p = malloc(4); p[c + 3] = 1; (void)v; return p[0]; }\n' >"$T/oob.c"
# (non-dumpable, as the daemon makes itself: LeakSanitizer must cope)
printf '#include <stdlib.h>\n#include <sys/prctl.h>\nint main(void) { prctl(PR_SET_DUMPABLE, 0); void *volatile p = malloc(77); p = 0; return 0; }\n' >"$T/leak.c"
mkdir -m 1777 "$T/twin"
for bug in oob leak; do
	gcc "${SAN_FLAGS[@]}" -g -o "$T/$bug" "$T/$bug.c"
	ASAN_OPTIONS=${ASAN_OPTIONS//$LOGS/$T/twin} "$T/$bug" >/dev/null 2>&1
	check "san-detects-planted-$bug" test "$(reports "$T/twin" | wc -l)" -ge 1
	rm -f "$T"/twin/*
done

# The normal build's daemon under valgrind: start, sign, refuse garbage,
# SIGTERM.  --errors-for-leak-kinds=definite: a definite leak is an error.
VG=(valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99
	--track-fds=no --log-file="$T/valgrind.log")
make_pem_key "$T/file.pem" rsa:2048 "valgrind file key"
"${VG[@]}" "$REPO/build/modsignd" --listen "unix:$T/vsock" --key default=ephemeral:ecdsa-p256 \
	--key file="$T/file.pem" --workers 2 2>"$T/vg-daemon.log" &
vpid=$!
for _ in $(seq 1 600); do [ -S "$T/vsock" ] && break; kill -0 $vpid 2>/dev/null || break; sleep 0.1; done
export MODSIGN_SERVER=unix:$T/vsock
mkdir "$T/vm"
for m in $(real_modules 20); do cp "$m" "$T/vm/"; done
check valgrind-daemon-signs "$REPO/build/modsign-client" sign "$T"/vm/*.ko
check valgrind-daemon-signs-file-key "$REPO/build/modsign-client" sign --key file --hash sha512 "$T"/vm/*.ko
"$REPO/build/modsign-client" cert >"$T/v.pem" && "$REPO/build/modsign-client" status >/dev/null
python3 - "$T/vsock" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
for p in [b'[1]', b'{"v":1,"id":1,"op":"sign","hash":"sha1"}', b'{"v":1', b'{"v":1,"id":2,"op":"sign","hash":"sha256","digest":"00","module":"x"}']:
    s.sendall(struct.pack('>I', len(p)) + p)
s.sendall(struct.pack('>I', 10) + b'{"v":')  # half a request, then hang up
s.close()
PY
kill -TERM $vpid
wait $vpid
vrc=$?
check "valgrind-daemon-exit-0 (exit $vrc)" test "$vrc" -eq 0
check valgrind-no-errors grep -q "ERROR SUMMARY: 0 errors" "$T/valgrind.log"
check valgrind-no-definite-leaks bash -c "grep -q 'All heap blocks were freed' '$T/valgrind.log' || grep -q 'definitely lost: 0 bytes' '$T/valgrind.log'"
check valgrind-daemon-stopped-cleanly grep -q "one-time keys destroyed" "$T/vg-daemon.log"
# Twin: the same valgrind options fail a program that leaks.
gcc -g -o "$T/leak-plain" "$T/leak.c"
refute valgrind-detects-planted-leak valgrind --leak-check=full --errors-for-leak-kinds=definite \
	--error-exitcode=99 --log-file="$T/vg-twin.log" "$T/leak-plain"
