#!/bin/bash
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
# keeps owner and mode.
. "$(dirname "$0")/../lib.sh"
C=$CLIENT
BOUND=30 # seconds; the client's own wait for a held temp name is 10 s

start_daemon "$T/sock" --key default=ephemeral:rsa2048 || exit 1
export MODSIGN_SERVER=unix:$T/sock
$C cert >"$T/cert.pem" || exit 1
mapfile -t mods < <(real_modules 2)
cp "${mods[0]}" "$T/a.ko" && cp "${mods[1]}" "$T/b.ko"
$C strip "$T/a.ko" "$T/b.ko" 2>/dev/null
chmod 644 "$T/a.ko" "$T/b.ko"

signed_by_us() { $C verify --cert "$T/cert.pem" "$1"; }
owner_mode() { test "$(stat -c '%U %a' "$1")" = "$2"; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

# ---- 1. a directory on the path swapped at the client's linkat ----------
# nobody owns $T/att; root signs nobody's module $T/att/sub/m.ko.  At the
# client's first linkat, nobody renames sub away and puts a symlink to
# root's $T/victim in its place.  Resolved by path, the new file would be
# linked into $T/victim and renamed over root's m.ko, owned by nobody.
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
victim_sha=$(sha "$T/victim/m.ko")
timeout $BOUND gdb -q -batch -nx -x "$T/gdb.cmds" --args "$C" sign "$T/att/sub/m.ko" \
	>"$T/swap.out" 2>&1
check swap-breakpoint-reached test -L "$T/att/sub"
check swap-victim-untouched test "$(sha "$T/victim/m.ko")" = "$victim_sha"
check swap-victim-still-roots owner_mode "$T/victim/m.ko" "root 644"
check swap-no-temp-in-victim-dir test -z "$(find "$T/victim" -name '.*modsign-tmp')"
# What was opened and hashed is what was signed, where it was opened.
check swap-opened-module-signed-in-opened-dir signed_by_us "$T/att/sub.moved/m.ko"
check swap-opened-module-keeps-owner owner_mode "$T/att/sub.moved/m.ko" "nobody 644"

# Twin: the same, no swap: signed in place through nobody's directory.
mkdir -m 0755 "$T/att2" "$T/att2/sub"
cp "$T/a.ko" "$T/att2/sub/m.ko"
chown -R nobody:nogroup "$T/att2"
check noswap-signs-in-place $C sign "$T/att2/sub/m.ko"
check noswap-signed signed_by_us "$T/att2/sub/m.ko"
check noswap-keeps-owner owner_mode "$T/att2/sub/m.ko" "nobody 644"
# Twin: a symlinked directory the caller names (/lib on merged /usr) is
# followed once; the module it leads to is signed.
mkdir "$T/real"
cp "$T/a.ko" "$T/real/m.ko"
ln -s real "$T/lnk"
check symlinked-dir-signs $C sign "$T/lnk/m.ko"
check symlinked-dir-module-signed signed_by_us "$T/real/m.ko"
check symlinked-dir-link-kept test -L "$T/lnk"
# Twin: the module itself a symlink is still refused in place.
ln -s real/m.ko "$T/mlink.ko"
refute symlinked-module-refused $C sign "$T/mlink.ko"

# ---- 2. the temporary name: a FIFO, a held flock, a stale file ----------
# bounded NAME DIR: sign DIR/m.ko under timeout; passes when the client
# ends by itself (not killed by timeout), fails, says one line naming the
# temporary name, and leaves the module as it was.
bounded() {
	local name=$1 dir=$2 rc before lines
	before=$(sha "$dir/m.ko")
	timeout $BOUND $C sign "$dir/m.ko" >"$T/$name.out" 2>&1
	rc=$?
	check "$name-finishes-within-bound" test $rc -ne 124 -a $rc -ne 137
	check "$name-refused" test $rc -ne 0 -a $rc -ne 124
	lines=$(wc -l <"$T/$name.out")
	check "$name-one-line-naming-file" test "$lines" -eq 1 -a -n "$(grep -F ".m.ko.modsign-tmp" "$T/$name.out")"
	check "$name-module-untouched" test "$(sha "$dir/m.ko")" = "$before"
	sed 's/^/   /' "$T/$name.out"
}

# A FIFO planted by nobody in nobody's directory, root signing nobody's module.
mkdir -m 0755 "$T/fifo"
cp "$T/a.ko" "$T/fifo/m.ko"
chown -R nobody:nogroup "$T/fifo"
as_nobody mkfifo "$T/fifo/.m.ko.modsign-tmp"
bounded temp-fifo "$T/fifo"

# A regular file of nobody's there, whose flock nobody holds (for ever).
mkdir -m 0755 "$T/held"
cp "$T/a.ko" "$T/held/m.ko"
chown -R nobody:nogroup "$T/held"
as_nobody cp "$T/held/m.ko" "$T/held/.m.ko.modsign-tmp"
# The lock is on fd 9, which bash opens and then execs sleep with: one
# process (setpriv and bash exec too), so killing $! releases it.
setpriv --reuid=nobody --regid=nogroup --clear-groups -- bash -c \
	'exec 9<"$1"; flock -x 9; exec sleep 600' _ "$T/held/.m.ko.modsign-tmp" \
	</dev/null >/dev/null 2>&1 &
holder=$!
eventually 10 bash -c "! flock -n -x '$T/held/.m.ko.modsign-tmp' true"
bounded temp-flock-held "$T/held"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
# The same lock, once its holder is gone: a dead writer's, taken over.
check temp-flock-released-signs $C sign "$T/held/m.ko"
check temp-flock-released-signed signed_by_us "$T/held/m.ko"
check temp-flock-released-temp-removed test ! -e "$T/held/.m.ko.modsign-tmp"

# A file of someone else's at the name is not taken for a dead writer's.
mkdir "$T/foreign"
cp "$T/a.ko" "$T/foreign/m.ko"
cp "$T/a.ko" "$T/foreign/.m.ko.modsign-tmp"
chown nobody:nogroup "$T/foreign/.m.ko.modsign-tmp"
bounded temp-foreign-owner "$T/foreign"
check temp-foreign-owner-left-alone test -e "$T/foreign/.m.ko.modsign-tmp"

# Twins: a stale file of a dead writer of the same owner is removed and
# the module signed; root's own, and (in place) the module owner's.
mkdir "$T/stale"
cp "$T/a.ko" "$T/stale/m.ko"
cp "$T/a.ko" "$T/stale/.m.ko.modsign-tmp"
check temp-stale-signs timeout $BOUND $C sign "$T/stale/m.ko"
check temp-stale-signed signed_by_us "$T/stale/m.ko"
check temp-stale-removed test ! -e "$T/stale/.m.ko.modsign-tmp"
mkdir -m 0755 "$T/stale2"
cp "$T/a.ko" "$T/stale2/m.ko"
cp "$T/a.ko" "$T/stale2/.m.ko.modsign-tmp"
chown -R nobody:nogroup "$T/stale2"
check temp-stale-module-owner-signs timeout $BOUND $C sign "$T/stale2/m.ko"
check temp-stale-module-owner-signed signed_by_us "$T/stale2/m.ko"
check temp-stale-module-owner-removed test ! -e "$T/stale2/.m.ko.modsign-tmp"

# ---- 3. sign-file SRC DEST: DEST is the caller's new file -------------------
mkdir -m 0755 "$T/nbsrc" "$T/rootdst"
cp "$T/a.ko" "$T/nbsrc/src.ko"
chown -R nobody:nogroup "$T/nbsrc"
chmod 4777 "$T/nbsrc/src.ko"
src_sha=$(sha "$T/nbsrc/src.ko")
sf() { $C sign-file sha256 modsign:default "$T/cert.pem" "$@"; }
check dest-signs bash -c "umask 022; $(declare -f sf); C=$C T=$T sf '$T/nbsrc/src.ko' '$T/rootdst/d.ko'"
check dest-roots-mode-per-umask owner_mode "$T/rootdst/d.ko" "root 644"
refute dest-no-setuid test -u "$T/rootdst/d.ko"
check dest-signed signed_by_us "$T/rootdst/d.ko"
check dest-src-untouched test "$(sha "$T/nbsrc/src.ko")" = "$src_sha"
check dest-umask-077 bash -c "umask 077; $(declare -f sf); C=$C T=$T sf '$T/nbsrc/src.ko' '$T/rootdst/e.ko'"
check dest-umask-077-mode owner_mode "$T/rootdst/e.ko" "root 600"
# An existing DEST (nobody's, world-writable) is replaced, atomically, by
# root's new file (as sign-file's own replace-the-original path does).
cp "$T/a.ko" "$T/rootdst/x.ko"
chown nobody:nogroup "$T/rootdst/x.ko"
chmod 0666 "$T/rootdst/x.ko"
check dest-existing-signs bash -c "umask 022; $(declare -f sf); C=$C T=$T sf '$T/nbsrc/src.ko' '$T/rootdst/x.ko'"
check dest-existing-replaced-by-roots owner_mode "$T/rootdst/x.ko" "root 644"
check dest-existing-signed signed_by_us "$T/rootdst/x.ko"

# Twin: re-signed in place (no DEST, or DEST the same), owner and mode kept.
mkdir -m 0755 "$T/inplace"
cp "$T/a.ko" "$T/inplace/m.ko"
cp "$T/a.ko" "$T/inplace/n.ko"
chown nobody:nogroup "$T/inplace/m.ko" "$T/inplace/n.ko"
chmod 0640 "$T/inplace/m.ko"
chmod 0604 "$T/inplace/n.ko"
check inplace-signs bash -c "umask 077; $(declare -f sf); C=$C T=$T sf '$T/inplace/m.ko'"
check inplace-keeps-owner-mode owner_mode "$T/inplace/m.ko" "nobody 640"
check inplace-signed signed_by_us "$T/inplace/m.ko"
check inplace-same-dest-signs bash -c "umask 077; $(declare -f sf); C=$C T=$T sf '$T/inplace/n.ko' '$T/inplace/n.ko'"
check inplace-same-dest-keeps-owner-mode owner_mode "$T/inplace/n.ko" "nobody 604"
check inplace-resign-signs $C sign "$T/inplace/m.ko"
check inplace-resign-keeps-owner-mode owner_mode "$T/inplace/m.ko" "nobody 640"
