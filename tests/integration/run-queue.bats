#!/usr/bin/env bats
# tests/run.sh's own accounting (review 20), on a copy of it in a tree of
# stub suites: a suite that a lane took from the queue and never finished
# counts as failed, not as missing.  Seconds; no daemon, nothing built.

load ../common

setup() {
	case_setup
	R=$T/repo
	mkdir -p "$R/tests/integration" "$R/tests/release" "$T/build/tests" "$T/cache"
	cp "$REPO/tests/run.sh" "$REPO/tests/cache.sh" "$R/tests/"
	printf '#!/bin/sh\nexit 0\n' >"$R/tests/fixtures.sh"
	# The foreground lane busy with a unit test, so that the other lanes
	# take the queue.
	printf '#!/bin/sh\nsleep 3\necho PASS rq-unit\n' >"$T/build/tests/test-rq-unit"
	printf '#!/bin/sh\necho PASS rq-ok\n' >"$R/tests/integration/rq-ok.sh"
	chmod +x "$R/tests/fixtures.sh" "$T/build/tests/test-rq-unit" "$R/tests/integration/rq-ok.sh"
}

teardown() { case_teardown; }

# rq_run: the copy of run.sh on the stub suites named rq-*.
rq_run() { B=$T/build MODSIGN_CACHE=$T/cache MODSIGN_SKIP_QEMU=1 "$R/tests/run.sh" rq-; }

@test "run-queue-suite-whose-lane-died-fails" {
	# A suite that ends its lane (the lane's shell killed: the OOM
	# killer, a suite's kill gone astray): its result was never written,
	# and the run said "2 passed, 0 failed" and exited 0.
	cat >"$R/tests/integration/rq-lane-killer.sh" <<'SH'
#!/bin/bash
# The lane: the parent of run_suite's subshell, our parent.
lane=$(ps -o ppid= -p "$PPID" | tr -d ' ')
echo "PASS rq-lane-killer-started"
kill -9 "$lane"
sleep 5
echo "FAIL rq-lane-killer: its lane lived"
SH
	chmod +x "$R/tests/integration/rq-lane-killer.sh"
	run rq_run
	assert_failure
	assert_output --partial "FAIL rq-lane-killer.sh: never finished"
	assert_output --partial "PASS rq-ok"
}

@test "run-queue-twin-every-suite-finished-passes" {
	run rq_run
	assert_success
	assert_output --partial "PASS rq-ok"
	assert_output --partial "PASS rq-unit"
	assert_output --partial "2 passed, 0 failed"
}
