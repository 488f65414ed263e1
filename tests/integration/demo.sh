#!/bin/bash
# `make demo`, the README's first command, runs tests/demo.sh: it must
# succeed, sign and verify its module, catch the tampered copy, and leave
# nothing behind (its EXIT trap once failed under set -e, so the demo
# exited 1 after doing everything right).
. "$(dirname "$0")/../lib.sh"

before=$(ls -d /tmp/modsign-demo.* 2>/dev/null | wc -l)
check demo-exits-0 bash "$REPO/tests/demo.sh"
cp "$T/last.out" "$T/demo.out"
check demo-signed-module-verifies grep -q "af_key.ko: OK (sha256)" "$T/demo.out"
check demo-tampered-copy-caught grep -q "tampered.ko: BAD signature" "$T/demo.out"
refute demo-tampered-copy-not-ok grep -q "tampered.ko: OK" "$T/demo.out"
check demo-key-destroyed grep -q "one-time keys destroyed" "$T/demo.out"
check demo-leaves-no-directory test "$(ls -d /tmp/modsign-demo.* 2>/dev/null | wc -l)" -eq "$before"
