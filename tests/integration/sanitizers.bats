#!/usr/bin/env bats
# The unit tests and the basic, errors and concurrency suites once more,
# against the ASan+UBSan build (make SAN=1: build/san), failing on any
# sanitizer report, leaks included; then the daemon of the normal build
# once under valgrind: no memory errors, no definite leaks.  Each has a
# twin showing the detector does report a planted bug.  A case per unit
# test and per suite: its failure output lists the suite's own FAIL lines.

load ../common

SB=$REPO/build/san
SAN_FLAGS=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)

# san_key: names the sanitized build's inputs: every source file and the
# Makefile (their contents), the compiler and the libraries' headers.
san_key() {
	{
		git -C "$REPO" ls-files -z -- Makefile '*.c' '*.h' '*.in' |
			(cd "$REPO" && xargs -0 sha256sum)
		gcc --version
		dpkg-query -W libssl-dev libjson-c-dev libp11-dev libsystemd-dev \
			liblzma-dev libzstd-dev zlib1g-dev
	} | cache_key
}

# san_build: one sanitized build for the file (every case runs its
# programs), made once per set of inputs and kept in the cache outside
# the clone (it took a minute of two CPUs per run).
san_build() {
	local key

	key=$(san_key) || return 1
	if cache_begin san-build "$key"; then
		rm -rf "$SB" && cp -a "$CACHE_DIR" "$SB" && rm "$SB/.complete"
	else
		make -s -C "$REPO" SAN=1 all unit &&
			cp -a "$SB/." "$CACHE_DIR/" && cache_done san-build "$key"
	fi
	local rc=$?
	exec 9>&- # cache_begin's lock: not for the daemons the cases start
	return $rc
}

setup_file() {
	. "$REPO/tests/cache.sh"
	san_build >"$BATS_FILE_TMPDIR/build.log" 2>&1
	echo $? >"$BATS_FILE_TMPDIR/build.rc"
}

setup() {
	[ -z "${MODSIGN_IN_SANITIZERS:-}" ] || skip "never under itself"
	case_setup
	export MODSIGN_IN_SANITIZERS=1
	# Every sanitized process writes its reports to $LOGS/<tool>.<pid>;
	# children run as nobody (errors) must be able to write there too.
	LOGS=$T/san
	mkdir -m 1777 "$LOGS"
	export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:exitcode=86:log_path=$LOGS/asan"
	export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$LOGS/ubsan"
	export LSAN_OPTIONS="exitcode=86"
}

reports() { find "$1" -type f -size +0 | sort; }

# sanitized COMMAND...: runs it; fails on a FAIL line it prints, on its
# exit status, or on any sanitizer report written meanwhile.
sanitized() {
	run "$@"
	echo "$output" | grep '^FAIL ' || true
	reports "$LOGS" | head -n 3 | xargs -r grep -m1 -h -E 'ERROR|SUMMARY|runtime error' || true
	refute_line --regexp '^FAIL '
	assert_success
	assert_equal "$(reports "$LOGS" | wc -l)" 0
}

@test "san-build" {
	run cat "$BATS_FILE_TMPDIR/build.log"
	assert_equal "$(cat "$BATS_FILE_TMPDIR/build.rc")" 0
}

@test "san:unit-tests-no-reports" {
	local t

	for t in "$SB"/tests/test-*; do
		[[ $t == *.d ]] && continue
		sanitized "$t"
		assert_line --regexp '^PASS '
	done
}

suite() { # NAME: an integration suite against the sanitized build
	sanitized env B="$SB" MODSIGND="$SB/modsignd" CLIENT="$SB/modsign-client" \
		"$REPO/tests/bats-lines" "$REPO/tests/integration/$1.bats"
	assert_line --regexp '^PASS '
}

@test "san:basic-no-reports" { suite basic; }
@test "san:errors-no-reports" { suite errors; }
@test "san:concurrency-no-reports" { suite concurrency; }

@test "san-detects-planted-oob" {
	# Twin: the same options catch a planted overflow ...
	printf '#include <stdlib.h>\nint main(int c, char **v) { char *p = malloc(4); p[c + 3] = 1; (void)v; return p[0]; }\n' >oob.c
	gcc "${SAN_FLAGS[@]}" -g -o oob oob.c
	run ./oob
	assert_failure
	[ "$(reports "$LOGS" | wc -l)" -ge 1 ]
}

@test "san-detects-planted-leak" {
	# ... and a planted leak (non-dumpable, as the daemon makes itself:
	# LeakSanitizer must cope).
	printf '#include <stdlib.h>\n#include <sys/prctl.h>\nint main(void) { prctl(PR_SET_DUMPABLE, 0); void *volatile p = malloc(77); p = 0; return 0; }\n' >leak.c
	gcc "${SAN_FLAGS[@]}" -g -o leak leak.c
	run ./leak
	assert_failure
	[ "$(reports "$LOGS" | wc -l)" -ge 1 ]
}

@test "valgrind-daemon-no-errors-no-leaks" {
	# The normal build's daemon under valgrind: start, sign, refuse
	# garbage, SIGTERM.  --errors-for-leak-kinds=definite: a definite leak
	# is an error.
	local vpid vrc
	make_pem_key file.pem rsa:2048 "valgrind file key"
	valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \
		--track-fds=no --log-file="$T/valgrind.log" \
		"$REPO/build/modsignd" --listen "unix:$T/vsock" --key default=ephemeral:ecdsa-p256 \
		--key "file=$T/file.pem" --workers 2 2>vg-daemon.log 3>&- &
	vpid=$!
	DAEMON_PIDS+=("$vpid")
	eventually 60 test -S vsock
	export MODSIGN_SERVER=unix:$T/vsock
	mkdir vm
	for m in $(real_modules 20); do cp "$m" vm/; done
	# valgrind-daemon-signs, valgrind-daemon-signs-file-key
	"$REPO/build/modsign-client" sign vm/*.ko
	"$REPO/build/modsign-client" sign --key file --hash sha512 vm/*.ko
	"$REPO/build/modsign-client" cert >v.pem
	"$REPO/build/modsign-client" status >/dev/null
	python3 - "$T/vsock" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
for p in [b'[1]', b'{"v":1,"id":1,"op":"sign","hash":"sha1"}', b'{"v":1', b'{"v":1,"id":2,"op":"sign","hash":"sha256","digest":"00","module":"x"}']:
    s.sendall(struct.pack('>I', len(p)) + p)
s.sendall(struct.pack('>I', 10) + b'{"v":')  # half a request, then hang up
s.close()
PY
	kill -TERM "$vpid"
	vrc=0
	wait "$vpid" || vrc=$?
	echo "valgrind exit $vrc"
	assert_equal "$vrc" 0
	run grep -q "ERROR SUMMARY: 0 errors" valgrind.log
	assert_success
	run bash -c "grep -q 'All heap blocks were freed' valgrind.log || grep -q 'definitely lost: 0 bytes' valgrind.log"
	assert_success
	# valgrind-daemon-stopped-cleanly
	run grep -q "one-time keys destroyed" vg-daemon.log
	assert_success
}

@test "valgrind-detects-planted-leak" {
	# Twin: the same valgrind options fail a program that leaks.
	printf '#include <stdlib.h>\n#include <sys/prctl.h>\nint main(void) { prctl(PR_SET_DUMPABLE, 0); void *volatile p = malloc(77); p = 0; return 0; }\n' >leak.c
	gcc -g -o leak-plain leak.c
	run valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \
		--log-file="$T/vg-twin.log" ./leak-plain
	assert_failure
}
