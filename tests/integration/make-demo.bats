#!/usr/bin/env bats
# `make demo`, the README's first command, runs tests/demo.sh: it must
# succeed, sign and verify its module, catch the tampered copy, and leave
# nothing behind (its EXIT trap once failed under set -e, so the demo
# exited 1 after doing everything right).  One case: the demo is one run,
# and each assertion reads what that run printed.

load ../common

@test "demo-exits-0" {
	before=$(ls -d /tmp/modsign-demo.* 2>/dev/null | wc -l)
	run bash "$REPO/tests/demo.sh"
	assert_success
	# demo-signed-module-verifies
	assert_output --partial "af_key.ko: OK (sha256)"
	# demo-tampered-copy-caught, and not taken for good
	assert_output --partial "tampered.ko: BAD signature"
	refute_output --partial "tampered.ko: OK"
	# demo-key-destroyed
	assert_output --partial "one-time keys destroyed"
	# demo-leaves-no-directory
	assert_equal "$(ls -d /tmp/modsign-demo.* 2>/dev/null | wc -l)" "$before"
}
