#!/bin/bash
# Who may sign: SO_PEERCRED against --allow, not socket permissions alone.
. "$(dirname "$0")/../lib.sh"

C=$CLIENT
mkdir "$T/w"
chmod 777 "$T/w"
cp "$(real_modules 1)" "$T/w/m.ko"
chown nobody:nogroup "$T/w/m.ko"
nobody() { runuser -u nobody -- "$@"; }
NC=$(nobody_client)

# Default policy: root and the daemon's uid only, even on a 0666 socket.
start_daemon "$T/s1" --key default=ephemeral:rsa2048 --socket-mode 0666 || exit 1
check root-allowed-by-default $C --server unix:$T/s1 status
refute nobody-refused-by-default nobody $NC --server unix:$T/s1 sign "$T/w/m.ko"
nobody $NC --server unix:$T/s1 sign "$T/w/m.ko" 2>"$T/err"
check refusal-says-why grep -q "not allowed by the daemon's policy" "$T/err"
check refusal-is-logged grep -q "uid=65534 .*refused: not allowed by policy" "$T/modsignd.log"
refute refused-module-untouched $C --server unix:$T/s1 verify --key default "$T/w/m.ko"

# Socket file mode is a second fence: 0660 root:root keeps nobody out at connect().
start_daemon "$T/s2" --key default=ephemeral:rsa2048 --allow user:nobody || exit 1
check socket-mode-default-0660 test "$(stat -c %a "$T/s2")" = 660
refute socket-mode-blocks-others nobody $NC --server unix:$T/s2 status

# Allowed by user name, by uid, by group.
start_daemon "$T/s3" --key default=ephemeral:rsa2048 --allow user:nobody --socket-mode 0666 || exit 1
check user-rule-allows nobody $NC --server unix:$T/s3 sign "$T/w/m.ko"
check user-rule-signature-verifies nobody $NC --server unix:$T/s3 verify --key default "$T/w/m.ko"
start_daemon "$T/s4" --key default=ephemeral:rsa2048 --allow uid:65534 --socket-mode 0666 || exit 1
check uid-rule-allows nobody $NC --server unix:$T/s4 status
refute uid-rule-excludes-root $C --server unix:$T/s4 status
start_daemon "$T/s5" --key default=ephemeral:rsa2048 --allow group:nogroup --socket-mode 0666 || exit 1
check group-rule-allows nobody $NC --server unix:$T/s5 status
start_daemon "$T/s6" --key default=ephemeral:rsa2048 --allow group:daemon --socket-mode 0666 || exit 1
refute group-rule-excludes-others nobody $NC --server unix:$T/s6 status
# Supplementary groups count (SO_PEERGROUPS).
check supplementary-group-allows setpriv --reuid=65534 --regid=65534 --groups=1 -- $NC --server unix:$T/s6 status

# Bad rules stop the daemon at start with a clear error.
refute bad-rule-refused $MODSIGND --listen unix:$T/s7 --key default=ephemeral:rsa2048 --allow host:x
refute unknown-user-refused $MODSIGND --listen unix:$T/s7 --key default=ephemeral:rsa2048 --allow user:no-such-user-here
