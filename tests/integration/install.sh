#!/bin/bash
# make install honours PREFIX and DESTDIR; what it installs works.
. "$(dirname "$0")/../lib.sh"

make -s -C "$REPO" install DESTDIR="$T/root" PREFIX=/opt/ms >"$T/install.log" 2>&1
check install-succeeds test $? -eq 0
for f in sbin/modsignd bin/modsign-client share/man/man8/modsignd.8 share/man/man1/modsign-client.1 \
	share/man/man5/modsignd.conf.5 share/modsign/x509.genkey.in lib/systemd/system/modsignd.service \
	lib/systemd/system/modsignd.socket lib/systemd/system/modsignd-tls.socket; do
	check "installed $f" test -s "$T/root/opt/ms/$f"
done
refute nothing-outside-destdir test -e /opt/ms/sbin/modsignd
check unit-points-at-prefix grep -q "^ExecStart=/opt/ms/sbin/modsignd " "$T/root/opt/ms/lib/systemd/system/modsignd.service"
check installed-daemon-runs "$T/root/opt/ms/sbin/modsignd" --version
check installed-client-runs "$T/root/opt/ms/bin/modsign-client" --version
# One client, nothing beside it: status runs in it.
refute installed-no-libexec test -e "$T/root/opt/ms/libexec"
"$T/root/opt/ms/bin/modsign-client" --server "unix:$T/nosuch" status >"$T/status.out" 2>&1
check installed-client-status grep -q "cannot connect to modsignd at unix:$T/nosuch" "$T/status.out"
for m in "$T"/root/opt/ms/share/man/man*/*; do
	MANWIDTH=80 man --warnings -l "$m" >/dev/null 2>"$T/man.err"
	check "man-page-renders-cleanly $(basename "$m")" test ! -s "$T/man.err"
done
