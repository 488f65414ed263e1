#!/usr/bin/env bats
# The Debian packages under a real systemd, for each release: make deb's
# .debs built on that release, installed with apt in a guest of that
# release under QEMU TCG (bookworm: Debian 12, systemd 252, linux 6.1;
# trixie: Debian 13, systemd 257, linux 6.12) and checked there by
# tests/vm/guest-check.sh; one case per check and release, named
# RELEASE/CHECK.
#
# One guest per release for the whole file (setup_file): a boot, an
# install and the checks take minutes under TCG, and the checks are steps
# of one administrator's day on one machine (install, use, restart,
# reload, enable TLS, add a token, remove, purge), each with its twin.
# The two guests run one after the other: each wants both CPUs, and under
# TCG two side by side make each one's timed checks (the watchdog's) race.

load ../common

RELEASES=(bookworm trixie)

setup_file() {
	local r t0
	if [ -n "${MODSIGN_SKIP_VM:-}${MODSIGN_SKIP_QEMU:-}" ]; then
		echo skip >"$BATS_FILE_TMPDIR/skip"
		return 0
	fi
	for r in "${RELEASES[@]}"; do
		t0=$SECONDS
		# A release whose run fails is reported by its cases; the other
		# still runs (bats runs setup_file under errexit).
		local rc=0
		"$REPO/tests/vm/run.sh" "$r" "$BATS_FILE_TMPDIR/$r" >"$BATS_FILE_TMPDIR/$r.log" 2>&1 || rc=$?
		echo "$rc" >"$BATS_FILE_TMPDIR/$r.rc"
		echo "vm $r: $((SECONDS - t0)) s in all" >>"$BATS_FILE_TMPDIR/$r.log"
	done
}

# guest RELEASE/NAME: RELEASE's guest check NAME passed; its line, the
# run's log and the end of the guest's console otherwise.
guest() {
	local r=${1%%/*} name=${1#*/}
	local R=$BATS_FILE_TMPDIR/$r/results
	[ ! -e "$BATS_FILE_TMPDIR/skip" ] || skip "MODSIGN_SKIP_VM"
	grep -qx "ok $name" "$R" 2>/dev/null && return 0
	grep "^not ok $name:" "$R" 2>/dev/null || echo "no result for $1 (run.sh $r exited $(cat "$BATS_FILE_TMPDIR/$r.rc"))"
	tail -n 5 "$BATS_FILE_TMPDIR/$r.log"
	return 1
}

run_completes() {
	[ ! -e "$BATS_FILE_TMPDIR/skip" ] || skip "MODSIGN_SKIP_VM"
	run cat "$BATS_FILE_TMPDIR/$1.log"
	assert_equal "$(cat "$BATS_FILE_TMPDIR/$1.rc")" 0
}

# Every check RELEASE's guest ran is a case here: none is reported by
# nobody.
every_check_is_a_case() {
	[ ! -e "$BATS_FILE_TMPDIR/skip" ] || skip "MODSIGN_SKIP_VM"
	local names
	names=$(sed -n 's/^\(not \)\{0,1\}ok \([^:]*\).*/\2/p' "$BATS_FILE_TMPDIR/$1/results" | sort)
	run comm -23 <(echo "$names") <(grep -o "^@test \"$1/[^\"]*\"" "$BATS_TEST_FILENAME" | cut -d/ -f2 | tr -d '"' | sort)
	assert_output ""
}

# Both releases run the same checks: a case listed for one is listed for
# the other.
@test "vm-same-cases-for-each-release" {
	local r
	for r in "${RELEASES[@]}"; do
		grep -o "^@test \"$r/[^\"]*\"" "$BATS_TEST_FILENAME" | cut -d/ -f2 >"$BATS_TEST_TMPDIR/$r"
	done
	run diff "$BATS_TEST_TMPDIR/bookworm" "$BATS_TEST_TMPDIR/trixie"
	assert_output ""
}

@test "bookworm/vm-run-completes" { run_completes bookworm; }
@test "bookworm/vm-every-guest-check-is-a-case" { every_check_is_a_case bookworm; }
@test "bookworm/guest-has-no-procps-kill" { guest bookworm/guest-has-no-procps-kill; }
@test "bookworm/apt-install" { guest bookworm/apt-install; }
@test "bookworm/group-created" { guest bookworm/group-created; }
@test "bookworm/socket-listening-after-install" { guest bookworm/socket-listening-after-install; }
@test "bookworm/socket-is-0660-root-modsign" { guest bookworm/socket-is-0660-root-modsign; }
@test "bookworm/service-idle-before-first-use" { guest bookworm/service-idle-before-first-use; }
@test "bookworm/first-use-activates" { guest bookworm/first-use-activates; }
@test "bookworm/default-config-keeps-root" { guest bookworm/default-config-keeps-root; }
@test "bookworm/root-tampered-twin-refused" { guest bookworm/root-tampered-twin-refused; }
@test "bookworm/metrics-file-readable-by-others" { guest bookworm/metrics-file-readable-by-others; }
@test "bookworm/metrics-dir-not-writable-by-others" { guest bookworm/metrics-dir-not-writable-by-others; }
@test "bookworm/group-member-signs" { guest bookworm/group-member-signs; }
@test "bookworm/outsider-refused-module-untouched" { guest bookworm/outsider-refused-module-untouched; }
@test "bookworm/restart-then-signs" { guest bookworm/restart-then-signs; }
@test "bookworm/stop-keeps-socket" { guest bookworm/stop-keeps-socket; }
@test "bookworm/start-after-stop-signs" { guest bookworm/start-after-stop-signs; }
@test "bookworm/sigkill-restarted-by-systemd" { guest bookworm/sigkill-restarted-by-systemd; }
@test "bookworm/sigkill-then-signs" { guest bookworm/sigkill-then-signs; }
@test "bookworm/reload-rereads-policy-keeps-key" { guest bookworm/reload-rereads-policy-keeps-key; }
@test "bookworm/reload-back-member-signs" { guest bookworm/reload-back-member-signs; }
@test "bookworm/reload-then-signs" { guest bookworm/reload-then-signs; }
@test "bookworm/journal-grant-fields" { guest bookworm/journal-grant-fields; }
@test "bookworm/journal-refusal-fields" { guest bookworm/journal-refusal-fields; }
@test "bookworm/watchdog-live-daemon-kept" { guest bookworm/watchdog-live-daemon-kept; }
@test "bookworm/watchdog-restarts-stopped-daemon" { guest bookworm/watchdog-restarts-stopped-daemon; }
@test "bookworm/watchdog-then-signs" { guest bookworm/watchdog-then-signs; }
@test "bookworm/tls-socket-enable-now-while-running" { guest bookworm/tls-socket-enable-now-while-running; }
@test "bookworm/tls-loopback-signs" { guest bookworm/tls-loopback-signs; }
@test "bookworm/tls-nonlocal-refused-by-socket-lists" { guest bookworm/tls-nonlocal-refused-by-socket-lists; }
@test "bookworm/tls-widened-list-serves-nonlocal" { guest bookworm/tls-widened-list-serves-nonlocal; }
@test "bookworm/exposure-at-most-2.0" { guest bookworm/exposure-at-most-2.0; }
@test "bookworm/exposure-twin-handoff-worse" { guest bookworm/exposure-twin-handoff-worse; }
@test "bookworm/hsm-key-signs-under-sandbox" { guest bookworm/hsm-key-signs-under-sandbox; }
@test "bookworm/hsm-wrong-pin-refused" { guest bookworm/hsm-wrong-pin-refused; }
@test "bookworm/apt-remove" { guest bookworm/apt-remove; }
@test "bookworm/remove-nothing-running" { guest bookworm/remove-nothing-running; }
@test "bookworm/remove-keeps-config" { guest bookworm/remove-keeps-config; }
@test "bookworm/purge-with-member" { guest bookworm/purge-with-member; }
@test "bookworm/purge-keeps-group-in-use" { guest bookworm/purge-keeps-group-in-use; }
@test "bookworm/purge-keeps-audit-log" { guest bookworm/purge-keeps-audit-log; }
@test "bookworm/purge-leaves-nothing" { guest bookworm/purge-leaves-nothing; }
@test "bookworm/reinstall-after-purge" { guest bookworm/reinstall-after-purge; }
@test "bookworm/reinstall-signs" { guest bookworm/reinstall-signs; }
@test "bookworm/purge-unused" { guest bookworm/purge-unused; }
@test "bookworm/purge-removes-unused-group" { guest bookworm/purge-removes-unused-group; }
@test "bookworm/purge-again-leaves-nothing" { guest bookworm/purge-again-leaves-nothing; }

@test "trixie/vm-run-completes" { run_completes trixie; }
@test "trixie/vm-every-guest-check-is-a-case" { every_check_is_a_case trixie; }
@test "trixie/guest-has-no-procps-kill" { guest trixie/guest-has-no-procps-kill; }
@test "trixie/apt-install" { guest trixie/apt-install; }
@test "trixie/group-created" { guest trixie/group-created; }
@test "trixie/socket-listening-after-install" { guest trixie/socket-listening-after-install; }
@test "trixie/socket-is-0660-root-modsign" { guest trixie/socket-is-0660-root-modsign; }
@test "trixie/service-idle-before-first-use" { guest trixie/service-idle-before-first-use; }
@test "trixie/first-use-activates" { guest trixie/first-use-activates; }
@test "trixie/default-config-keeps-root" { guest trixie/default-config-keeps-root; }
@test "trixie/root-tampered-twin-refused" { guest trixie/root-tampered-twin-refused; }
@test "trixie/metrics-file-readable-by-others" { guest trixie/metrics-file-readable-by-others; }
@test "trixie/metrics-dir-not-writable-by-others" { guest trixie/metrics-dir-not-writable-by-others; }
@test "trixie/group-member-signs" { guest trixie/group-member-signs; }
@test "trixie/outsider-refused-module-untouched" { guest trixie/outsider-refused-module-untouched; }
@test "trixie/restart-then-signs" { guest trixie/restart-then-signs; }
@test "trixie/stop-keeps-socket" { guest trixie/stop-keeps-socket; }
@test "trixie/start-after-stop-signs" { guest trixie/start-after-stop-signs; }
@test "trixie/sigkill-restarted-by-systemd" { guest trixie/sigkill-restarted-by-systemd; }
@test "trixie/sigkill-then-signs" { guest trixie/sigkill-then-signs; }
@test "trixie/reload-rereads-policy-keeps-key" { guest trixie/reload-rereads-policy-keeps-key; }
@test "trixie/reload-back-member-signs" { guest trixie/reload-back-member-signs; }
@test "trixie/reload-then-signs" { guest trixie/reload-then-signs; }
@test "trixie/journal-grant-fields" { guest trixie/journal-grant-fields; }
@test "trixie/journal-refusal-fields" { guest trixie/journal-refusal-fields; }
@test "trixie/watchdog-live-daemon-kept" { guest trixie/watchdog-live-daemon-kept; }
@test "trixie/watchdog-restarts-stopped-daemon" { guest trixie/watchdog-restarts-stopped-daemon; }
@test "trixie/watchdog-then-signs" { guest trixie/watchdog-then-signs; }
@test "trixie/tls-socket-enable-now-while-running" { guest trixie/tls-socket-enable-now-while-running; }
@test "trixie/tls-loopback-signs" { guest trixie/tls-loopback-signs; }
@test "trixie/tls-nonlocal-refused-by-socket-lists" { guest trixie/tls-nonlocal-refused-by-socket-lists; }
@test "trixie/tls-widened-list-serves-nonlocal" { guest trixie/tls-widened-list-serves-nonlocal; }
@test "trixie/exposure-at-most-2.0" { guest trixie/exposure-at-most-2.0; }
@test "trixie/exposure-twin-handoff-worse" { guest trixie/exposure-twin-handoff-worse; }
@test "trixie/hsm-key-signs-under-sandbox" { guest trixie/hsm-key-signs-under-sandbox; }
@test "trixie/hsm-wrong-pin-refused" { guest trixie/hsm-wrong-pin-refused; }
@test "trixie/apt-remove" { guest trixie/apt-remove; }
@test "trixie/remove-nothing-running" { guest trixie/remove-nothing-running; }
@test "trixie/remove-keeps-config" { guest trixie/remove-keeps-config; }
@test "trixie/purge-with-member" { guest trixie/purge-with-member; }
@test "trixie/purge-keeps-group-in-use" { guest trixie/purge-keeps-group-in-use; }
@test "trixie/purge-keeps-audit-log" { guest trixie/purge-keeps-audit-log; }
@test "trixie/purge-leaves-nothing" { guest trixie/purge-leaves-nothing; }
@test "trixie/reinstall-after-purge" { guest trixie/reinstall-after-purge; }
@test "trixie/reinstall-signs" { guest trixie/reinstall-signs; }
@test "trixie/purge-unused" { guest trixie/purge-unused; }
@test "trixie/purge-removes-unused-group" { guest trixie/purge-removes-unused-group; }
@test "trixie/purge-again-leaves-nothing" { guest trixie/purge-again-leaves-nothing; }
