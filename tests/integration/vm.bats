#!/usr/bin/env bats
# The Debian packages under a real systemd: make deb's .debs installed with
# apt in a Debian 12 guest (systemd 252, Debian's 6.1 kernel, QEMU TCG) and
# checked there by tests/vm/guest-check.sh; one case per check.
#
# One guest for the whole file (setup_file): a boot, an install and the
# checks take minutes under TCG, and the checks are steps of one
# administrator's day on one machine (install, use, restart, reload,
# enable TLS, add a token, remove, purge), each with its twin.

load ../common

setup_file() {
	if [ -n "${MODSIGN_SKIP_VM:-}${MODSIGN_SKIP_QEMU:-}" ]; then
		echo skip >"$BATS_FILE_TMPDIR/skip"
		return 0
	fi
	"$REPO/tests/vm/run.sh" "$BATS_FILE_TMPDIR/vm" >"$BATS_FILE_TMPDIR/run.log" 2>&1
	echo $? >"$BATS_FILE_TMPDIR/run.rc"
}

# guest NAME: the guest's check NAME passed; its line, the run's log and
# the end of the guest's console otherwise.
guest() {
	local R=$BATS_FILE_TMPDIR/vm/results
	[ ! -e "$BATS_FILE_TMPDIR/skip" ] || skip "MODSIGN_SKIP_VM"
	grep -qx "ok $1" "$R" 2>/dev/null && return 0
	grep "^not ok $1:" "$R" 2>/dev/null || echo "no result for $1 (run.sh exited $(cat "$BATS_FILE_TMPDIR/run.rc"))"
	tail -n 5 "$BATS_FILE_TMPDIR/run.log"
	return 1
}

@test "vm-run-completes" {
	[ ! -e "$BATS_FILE_TMPDIR/skip" ] || skip "MODSIGN_SKIP_VM"
	run cat "$BATS_FILE_TMPDIR/run.log"
	assert_equal "$(cat "$BATS_FILE_TMPDIR/run.rc")" 0
}

# Every check the guest ran is a case here: none is reported by nobody.
@test "vm-every-guest-check-is-a-case" {
	[ ! -e "$BATS_FILE_TMPDIR/skip" ] || skip "MODSIGN_SKIP_VM"
	local names
	names=$(sed -n 's/^\(not \)\{0,1\}ok \([^:]*\).*/\2/p' "$BATS_FILE_TMPDIR/vm/results" | sort)
	run comm -23 <(echo "$names") <(grep -o '^@test "vm [^"]*"' "$BATS_TEST_FILENAME" | cut -d' ' -f3 | tr -d '"' | sort)
	assert_output ""
}

@test "vm guest-has-no-procps-kill" { guest guest-has-no-procps-kill; }
@test "vm apt-install" { guest apt-install; }
@test "vm group-created" { guest group-created; }
@test "vm socket-listening-after-install" { guest socket-listening-after-install; }
@test "vm socket-is-0660-root-modsign" { guest socket-is-0660-root-modsign; }
@test "vm service-idle-before-first-use" { guest service-idle-before-first-use; }
@test "vm first-use-activates" { guest first-use-activates; }
@test "vm default-config-keeps-root" { guest default-config-keeps-root; }
@test "vm root-tampered-twin-refused" { guest root-tampered-twin-refused; }
@test "vm metrics-file-readable-by-others" { guest metrics-file-readable-by-others; }
@test "vm metrics-dir-not-writable-by-others" { guest metrics-dir-not-writable-by-others; }
@test "vm group-member-signs" { guest group-member-signs; }
@test "vm outsider-refused-module-untouched" { guest outsider-refused-module-untouched; }
@test "vm restart-then-signs" { guest restart-then-signs; }
@test "vm stop-keeps-socket" { guest stop-keeps-socket; }
@test "vm start-after-stop-signs" { guest start-after-stop-signs; }
@test "vm sigkill-restarted-by-systemd" { guest sigkill-restarted-by-systemd; }
@test "vm sigkill-then-signs" { guest sigkill-then-signs; }
@test "vm reload-rereads-policy-keeps-key" { guest reload-rereads-policy-keeps-key; }
@test "vm reload-back-member-signs" { guest reload-back-member-signs; }
@test "vm reload-then-signs" { guest reload-then-signs; }
@test "vm journal-grant-fields" { guest journal-grant-fields; }
@test "vm journal-refusal-fields" { guest journal-refusal-fields; }
@test "vm watchdog-live-daemon-kept" { guest watchdog-live-daemon-kept; }
@test "vm watchdog-restarts-stopped-daemon" { guest watchdog-restarts-stopped-daemon; }
@test "vm watchdog-then-signs" { guest watchdog-then-signs; }
@test "vm tls-socket-enable-now-while-running" { guest tls-socket-enable-now-while-running; }
@test "vm tls-loopback-signs" { guest tls-loopback-signs; }
@test "vm tls-nonlocal-refused-by-socket-lists" { guest tls-nonlocal-refused-by-socket-lists; }
@test "vm tls-widened-list-serves-nonlocal" { guest tls-widened-list-serves-nonlocal; }
@test "vm exposure-at-most-2.0" { guest exposure-at-most-2.0; }
@test "vm exposure-twin-handoff-worse" { guest exposure-twin-handoff-worse; }
@test "vm hsm-key-signs-under-sandbox" { guest hsm-key-signs-under-sandbox; }
@test "vm hsm-wrong-pin-refused" { guest hsm-wrong-pin-refused; }
@test "vm apt-remove" { guest apt-remove; }
@test "vm remove-nothing-running" { guest remove-nothing-running; }
@test "vm remove-keeps-config" { guest remove-keeps-config; }
@test "vm purge-with-member" { guest purge-with-member; }
@test "vm purge-keeps-group-in-use" { guest purge-keeps-group-in-use; }
@test "vm purge-keeps-audit-log" { guest purge-keeps-audit-log; }
@test "vm purge-leaves-nothing" { guest purge-leaves-nothing; }
@test "vm reinstall-after-purge" { guest reinstall-after-purge; }
@test "vm reinstall-signs" { guest reinstall-signs; }
@test "vm purge-unused" { guest purge-unused; }
@test "vm purge-removes-unused-group" { guest purge-removes-unused-group; }
@test "vm purge-again-leaves-nothing" { guest purge-again-leaves-nothing; }
