#!/usr/bin/env bats
# Who may sign: SO_PEERCRED against --allow, not socket permissions alone.
# Each case starts the daemon its rule needs; nobody signs a module of its
# own in a directory it can write.

load ../common

setup() {
	case_setup
	mkdir -m 777 w
	cp "$(real_modules 1)" w/m.ko
	chown nobody:nogroup w/m.ko
	NC=$(nobody_client)
}

daemon_with() { # SOCKET-MODE|- ALLOW-RULE...: a daemon on $T/s
	local mode=$1 args=()
	shift
	[ "$mode" = - ] || args+=(--socket-mode "$mode")
	for a in "$@"; do args+=(--allow "$a"); done
	start_daemon "$T/s" --key default=ephemeral:ecdsa-p256 "${args[@]}"
}

@test "root-allowed-by-default" {
	daemon_with 0666
	run "$C" --server "unix:$T/s" status
	assert_success
}

@test "nobody-refused-by-default" {
	daemon_with 0666
	run nobody "$NC" --server "unix:$T/s" sign "$T/w/m.ko"
	assert_failure
	assert_output --partial "not allowed by the daemon's policy"
	run grep -q "uid=65534 .*refused: not allowed by policy" modsignd.log
	assert_success
	# The refused module is untouched: not signed by anyone.
	run "$C" --server "unix:$T/s" verify --key default "$T/w/m.ko"
	assert_failure
}

@test "socket-mode-default-0660" {
	daemon_with - user:nobody
	assert_equal "$(stat -c %a "$T/s")" 660
	run nobody "$NC" --server "unix:$T/s" status
	assert_failure
}

@test "user-rule-allows" {
	daemon_with 0666 user:nobody
	run nobody "$NC" --server "unix:$T/s" sign "$T/w/m.ko"
	assert_success
	run nobody "$NC" --server "unix:$T/s" verify --key default "$T/w/m.ko"
	assert_success
}

@test "uid-rule-allows-and-excludes-root" {
	daemon_with 0666 uid:65534
	run nobody "$NC" --server "unix:$T/s" status
	assert_success
	run "$C" --server "unix:$T/s" status
	assert_failure
}

@test "group-rule-allows" {
	daemon_with 0666 group:nogroup
	run nobody "$NC" --server "unix:$T/s" status
	assert_success
}

@test "group-rule-excludes-others" {
	daemon_with 0666 group:daemon
	run nobody "$NC" --server "unix:$T/s" status
	assert_failure
}

@test "supplementary-group-allows" {
	daemon_with 0666 group:daemon
	# gid 1 (daemon) only as a supplementary group: SO_PEERGROUPS.
	run setpriv --reuid=65534 --regid=65534 --groups=1 -- "$NC" --server "unix:$T/s" status
	assert_success
}

@test "bad-rule-refused" {
	run "$MODSIGND" --listen "unix:$T/s" --key default=ephemeral:ecdsa-p256 --allow host:x
	assert_failure
	assert_output --partial "allow host:x"
}

@test "unknown-user-refused" {
	run "$MODSIGND" --listen "unix:$T/s" --key default=ephemeral:ecdsa-p256 --allow user:no-such-user-here
	assert_failure
	assert_output --partial "no-such-user-here"
}
