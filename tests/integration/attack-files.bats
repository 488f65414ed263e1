#!/usr/bin/env bats
# Attacks on the files the client writes, by a user (nobody) who owns a
# directory or a module that root signs:
#  - a directory on the path swapped for a symbolic link to a directory
#    nobody cannot write, while root's client is between its checks and its
#    link and rename (made deterministic: the client runs under gdb, and the
#    swap happens at its breakpoint on linkat);
#  - a FIFO, or a file whose flock someone holds, at the temporary name
#    .NAME.modsign-tmp: the client must finish, with one line naming it;
#  - sign-file SRC DEST with a set-uid, world-writable SRC of nobody's: DEST
#    is root's new file, mode per umask, not a copy of SRC's owner and mode.
# Each has a twin that must still work: a symlinked directory named by the
# caller, a stale temporary name of a dead writer, in-place re-signing that
# keeps owner and mode.  Each case has its own daemon and modules.

load ../common

BOUND=30 # seconds; the client's own wait for a held temp name is 10 s

setup() {
	case_setup
	HOLDER=
	start_daemon "$T/sock" --key default=ephemeral:rsa2048
	export MODSIGN_SERVER=unix:$T/sock
	"$C" cert >"$T/cert.pem"
	local mods
	mapfile -t mods < <(real_modules 2)
	cp "${mods[0]}" "$T/a.ko"
	cp "${mods[1]}" "$T/b.ko"
	"$C" strip "$T/a.ko" "$T/b.ko" 2>/dev/null
	chmod 644 "$T/a.ko" "$T/b.ko"
}

teardown() {
	if [ -n "$HOLDER" ]; then
		kill "$HOLDER" 2>/dev/null
		wait "$HOLDER" 2>/dev/null
	fi
	case_teardown
}

as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

assert_signed_by_us() { # FILE
	run "$C" verify --cert "$T/cert.pem" "$1"
	assert_success
}

assert_owner_mode() { # FILE "OWNER MODE"
	assert_equal "$(stat -c '%U %a' "$1")" "$2"
}

# nobody_dir DIR: DIR/m.ko, both nobody's (DIR mode 0755).
nobody_dir() {
	mkdir -m 0755 "$1"
	cp "$T/a.ko" "$1/m.ko"
	chown -R nobody:nogroup "$1"
}

# ---- 1. a directory on the path swapped at the client's linkat ----------
# nobody owns $T/att; root signs nobody's module $T/att/sub/m.ko.  At the
# client's first linkat, nobody renames sub away and puts a symlink to
# root's $T/victim in its place.  Resolved by path, the new file would be
# linked into $T/victim and renamed over root's m.ko, owned by nobody.
# Sets VICTIM_SHA; asserts that the swap happened.
swap_at_linkat() {
	cat >"$T/swap.py" <<'PY'
import os, sys
att, victim = sys.argv[1], sys.argv[2]
sub = os.path.join(att, "sub")
if not os.path.islink(sub):  # once: later breakpoints change nothing
    os.rename(sub, os.path.join(att, "sub.moved"))
    os.symlink(victim, sub)
PY
	chmod 644 "$T/swap.py"
	cat >"$T/gdb.cmds" <<EOF
set breakpoint pending on
set pagination off
break linkat
commands
silent
shell setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 $T/swap.py $T/att $T/victim
continue
end
run
EOF
	mkdir -m 0755 "$T/att" "$T/att/sub" "$T/victim"
	cp "$T/a.ko" "$T/att/sub/m.ko"
	chown -R nobody:nogroup "$T/att"
	cp "$T/b.ko" "$T/victim/m.ko"
	VICTIM_SHA=$(sha "$T/victim/m.ko")
	run timeout "$BOUND" gdb -q -batch -nx -x "$T/gdb.cmds" --args "$C" sign "$T/att/sub/m.ko" 3>&-
	# swap-breakpoint-reached: the attack was made.
	assert [ -L "$T/att/sub" ]
}

@test "swap-victim-untouched" {
	swap_at_linkat
	assert_equal "$(sha "$T/victim/m.ko")" "$VICTIM_SHA"
	# swap-victim-still-roots
	assert_owner_mode "$T/victim/m.ko" "root 644"
	# swap-no-temp-in-victim-dir
	assert_equal "$(find "$T/victim" -name '.*modsign-tmp')" ""
}

# What was opened and hashed is what was signed, where it was opened.
@test "swap-opened-module-signed-in-opened-dir" {
	swap_at_linkat
	assert_signed_by_us "$T/att/sub.moved/m.ko"
	# swap-opened-module-keeps-owner
	assert_owner_mode "$T/att/sub.moved/m.ko" "nobody 644"
}

# Twin: the same, no swap: signed in place through nobody's directory.
@test "noswap-signs-in-place" {
	mkdir -m 0755 "$T/att2"
	nobody_dir "$T/att2/sub"
	chown nobody:nogroup "$T/att2"
	run "$C" sign "$T/att2/sub/m.ko"
	assert_success
	# noswap-signed
	assert_signed_by_us "$T/att2/sub/m.ko"
	# noswap-keeps-owner
	assert_owner_mode "$T/att2/sub/m.ko" "nobody 644"
}

# Twin: a symlinked directory the caller names (/lib on merged /usr) is
# followed once; the module it leads to is signed.
@test "symlinked-dir-signs" {
	mkdir "$T/real"
	cp "$T/a.ko" "$T/real/m.ko"
	ln -s real "$T/lnk"
	run "$C" sign "$T/lnk/m.ko"
	assert_success
	# symlinked-dir-module-signed
	assert_signed_by_us "$T/real/m.ko"
	# symlinked-dir-link-kept
	assert [ -L "$T/lnk" ]
}

# Twin: the module itself a symlink is still refused in place.
@test "symlinked-module-refused" {
	mkdir "$T/real"
	cp "$T/a.ko" "$T/real/m.ko"
	ln -s real/m.ko "$T/mlink.ko"
	run "$C" sign "$T/mlink.ko"
	assert_failure
}

# ---- 2. the temporary name: a FIFO, a held flock, a stale file ----------
# assert_bounded_refusal DIR: sign DIR/m.ko under timeout; the client ends
# by itself (not killed by timeout), fails, says one line naming the
# temporary name, and leaves the module as it was.
assert_bounded_refusal() {
	local dir=$1 before
	before=$(sha "$dir/m.ko")
	run timeout "$BOUND" "$C" sign "$dir/m.ko"
	# NAME-finishes-within-bound (124: timeout's TERM, 137: its KILL)
	assert_not_equal "$status" 124
	assert_not_equal "$status" 137
	# NAME-refused
	assert_failure
	# NAME-one-line-naming-file
	assert_equal "$(printf '%s\n' "$output" | wc -l)" 1
	assert_output --partial ".m.ko.modsign-tmp"
	# NAME-module-untouched
	assert_equal "$(sha "$dir/m.ko")" "$before"
}

# A FIFO planted by nobody in nobody's directory, root signing nobody's module.
@test "temp-fifo-refused" {
	nobody_dir "$T/fifo"
	as_nobody mkfifo "$T/fifo/.m.ko.modsign-tmp"
	assert_bounded_refusal "$T/fifo"
}

# hold_lock FILE: nobody takes FILE's flock and keeps it until $HOLDER is
# killed.  The lock is on fd 9, which bash opens and then execs sleep
# with: one process (setpriv and bash exec too), so killing $HOLDER
# releases it (setpriv itself, not as_nobody: a function run in the
# background is a subshell of its own).
hold_lock() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- bash -c 'exec 9<"$1"; flock -x 9; exec sleep 600' _ "$1" \
		</dev/null >/dev/null 2>&1 3>&- &
	HOLDER=$!
	eventually 10 bash -c "! flock -n -x '$1' true"
}

# A regular file of nobody's there, whose flock nobody holds (for ever).
@test "temp-flock-held-refused" {
	nobody_dir "$T/held"
	as_nobody cp "$T/held/m.ko" "$T/held/.m.ko.modsign-tmp"
	hold_lock "$T/held/.m.ko.modsign-tmp"
	assert_bounded_refusal "$T/held"
}

# The same lock, once its holder is gone: a dead writer's, taken over.
@test "temp-flock-released-signs" {
	nobody_dir "$T/held"
	as_nobody cp "$T/held/m.ko" "$T/held/.m.ko.modsign-tmp"
	hold_lock "$T/held/.m.ko.modsign-tmp"
	kill "$HOLDER"
	wait "$HOLDER" 2>/dev/null || true
	HOLDER=
	run "$C" sign "$T/held/m.ko"
	assert_success
	# temp-flock-released-signed
	assert_signed_by_us "$T/held/m.ko"
	# temp-flock-released-temp-removed
	assert [ ! -e "$T/held/.m.ko.modsign-tmp" ]
}

# A file of someone else's at the name is not taken for a dead writer's.
@test "temp-foreign-owner-refused" {
	mkdir "$T/foreign"
	cp "$T/a.ko" "$T/foreign/m.ko"
	cp "$T/a.ko" "$T/foreign/.m.ko.modsign-tmp"
	chown nobody:nogroup "$T/foreign/.m.ko.modsign-tmp"
	assert_bounded_refusal "$T/foreign"
	# temp-foreign-owner-left-alone
	assert [ -e "$T/foreign/.m.ko.modsign-tmp" ]
}

# Twins: a stale file of a dead writer of the same owner is removed and
# the module signed; root's own, and (in place) the module owner's.
@test "temp-stale-signs" {
	mkdir "$T/stale"
	cp "$T/a.ko" "$T/stale/m.ko"
	cp "$T/a.ko" "$T/stale/.m.ko.modsign-tmp"
	run timeout "$BOUND" "$C" sign "$T/stale/m.ko"
	assert_success
	# temp-stale-signed
	assert_signed_by_us "$T/stale/m.ko"
	# temp-stale-removed
	assert [ ! -e "$T/stale/.m.ko.modsign-tmp" ]
}

@test "temp-stale-module-owner-signs" {
	mkdir -m 0755 "$T/stale2"
	cp "$T/a.ko" "$T/stale2/m.ko"
	cp "$T/a.ko" "$T/stale2/.m.ko.modsign-tmp"
	chown -R nobody:nogroup "$T/stale2"
	run timeout "$BOUND" "$C" sign "$T/stale2/m.ko"
	assert_success
	# temp-stale-module-owner-signed
	assert_signed_by_us "$T/stale2/m.ko"
	# temp-stale-module-owner-removed
	assert [ ! -e "$T/stale2/.m.ko.modsign-tmp" ]
}

# ---- 3. sign-file SRC DEST: DEST is the caller's new file -------------------
# sf_umask UMASK ARGS...: the client's sign-file with the daemon's key,
# under UMASK.
sf_umask() {
	(
		umask "$1"
		shift
		sf sha256 modsign:default "$T/cert.pem" "$@"
	)
}

# nobody's set-uid, world-writable SRC, and root's directory for DEST.
# Sets SRC_SHA.
nobody_src() {
	mkdir -m 0755 "$T/nbsrc" "$T/rootdst"
	cp "$T/a.ko" "$T/nbsrc/src.ko"
	chown -R nobody:nogroup "$T/nbsrc"
	chmod 4777 "$T/nbsrc/src.ko"
	SRC_SHA=$(sha "$T/nbsrc/src.ko")
}

@test "dest-roots-mode-per-umask" {
	nobody_src
	# dest-signs
	run sf_umask 022 "$T/nbsrc/src.ko" "$T/rootdst/d.ko"
	assert_success
	assert_owner_mode "$T/rootdst/d.ko" "root 644"
	# dest-no-setuid
	refute [ -u "$T/rootdst/d.ko" ]
	# dest-signed
	assert_signed_by_us "$T/rootdst/d.ko"
	# dest-src-untouched
	assert_equal "$(sha "$T/nbsrc/src.ko")" "$SRC_SHA"
}

@test "dest-umask-077-mode" {
	nobody_src
	# dest-umask-077
	run sf_umask 077 "$T/nbsrc/src.ko" "$T/rootdst/e.ko"
	assert_success
	assert_owner_mode "$T/rootdst/e.ko" "root 600"
}

# An existing DEST (nobody's, world-writable) is replaced, atomically, by
# root's new file (as sign-file's own replace-the-original path does).
@test "dest-existing-replaced-by-roots" {
	nobody_src
	cp "$T/a.ko" "$T/rootdst/x.ko"
	chown nobody:nogroup "$T/rootdst/x.ko"
	chmod 0666 "$T/rootdst/x.ko"
	# dest-existing-signs
	run sf_umask 022 "$T/nbsrc/src.ko" "$T/rootdst/x.ko"
	assert_success
	assert_owner_mode "$T/rootdst/x.ko" "root 644"
	# dest-existing-signed
	assert_signed_by_us "$T/rootdst/x.ko"
}

# Twins: re-signed in place (no DEST, or DEST the same), owner and mode kept.
# inplace_module NAME MODE: nobody's $T/inplace/NAME.ko with MODE.
inplace_module() {
	mkdir -m 0755 "$T/inplace"
	cp "$T/a.ko" "$T/inplace/$1.ko"
	chown nobody:nogroup "$T/inplace/$1.ko"
	chmod "$2" "$T/inplace/$1.ko"
}

@test "inplace-keeps-owner-mode" {
	inplace_module m 0640
	# inplace-signs
	run sf_umask 077 "$T/inplace/m.ko"
	assert_success
	assert_owner_mode "$T/inplace/m.ko" "nobody 640"
	# inplace-signed
	assert_signed_by_us "$T/inplace/m.ko"
}

@test "inplace-same-dest-keeps-owner-mode" {
	inplace_module n 0604
	# inplace-same-dest-signs
	run sf_umask 077 "$T/inplace/n.ko" "$T/inplace/n.ko"
	assert_success
	assert_owner_mode "$T/inplace/n.ko" "nobody 604"
}

@test "inplace-resign-keeps-owner-mode" {
	inplace_module m 0640
	run sf_umask 077 "$T/inplace/m.ko"
	assert_success
	# inplace-resign-signs: the signed module signed again, by sign.
	run "$C" sign "$T/inplace/m.ko"
	assert_success
	assert_owner_mode "$T/inplace/m.ko" "nobody 640"
}
