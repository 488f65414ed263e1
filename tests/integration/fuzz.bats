#!/usr/bin/env bats
# Every fuzz target for a few seconds (tests/fuzz/run-brief.sh), a case
# each: it fails on any crash, sanitizer report or broken contract; and the
# harness's own twins (a planted crash is caught, a seed signature
# verifies, its flipped copy does not).  `make fuzz` runs them longer.

load ../common

setup_file() {
	export FUZZ_SECONDS=${FUZZ_SECONDS:-10}
	# Build once for the file; each case's run-brief.sh then finds it made.
	make -s -C "$REPO" fuzz-build >"$BATS_FILE_TMPDIR/build.log" 2>&1 || true
}

setup() {
	[ -z "${MODSIGN_IN_SANITIZERS:-}" ] || skip "not again under sanitizers.bats"
	case_setup
}

fuzz() { # TARGET: run-brief.sh's verdict on it
	run "$REPO/tests/fuzz/run-brief.sh" "$1"
	assert_success
	assert_line --partial "PASS fuzz-$1 "
}

@test "fuzz-proto-frame" { fuzz proto-frame; }
@test "fuzz-request" { fuzz request; }
@test "fuzz-modsig" { fuzz modsig; }
@test "fuzz-pkcs7-verify" { fuzz pkcs7-verify; }
@test "fuzz-base64-hex" { fuzz base64-hex; }
@test "fuzz-certgen" { fuzz certgen; }
@test "fuzz-certfp" { fuzz certfp; }
@test "fuzz-conf" { fuzz conf; }
@test "fuzz-tlog" { fuzz tlog; }

@test "fuzz-harness-twins" {
	run "$REPO/tests/fuzz/run-brief.sh" harness
	assert_success
	assert_line "PASS fuzz-harness-notices-crash"
	assert_line "PASS fuzz-pkcs7-seed-verifies"
	assert_line "PASS fuzz-pkcs7-tampered-seed-rejected"
}
