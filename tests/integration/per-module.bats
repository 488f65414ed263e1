#!/usr/bin/env bats
# kbuild's per-module path: one `modsign-client sign-file` process per
# module.  There is one client, dynamically linked as Debian requires (a
# second, leaner build saved less than 10% of this path:
# docs/PERFORMANCE.md, "One client or two"); what it signs this way is the
# kernel's sign-file's output, byte for byte.
#
# One daemon for the file (setup_file), with a PEM key as kbuild's
# certs/signing_key.pem: every case signs with it and only reads it.

load ../common

setup_file() {
	local F=$BATS_FILE_TMPDIR

	openssl req -new -nodes -x509 -batch -days 2 -sha256 -subj "/CN=per-module test" \
		-addext "keyUsage=digitalSignature" -newkey rsa:2048 \
		-keyout "$F/key.pem" -out "$F/cert.pem" 2>/dev/null
	cat "$F/cert.pem" >>"$F/key.pem"
	chmod 600 "$F/key.pem"
	file_daemon_start --key default="$F/key.pem"
}

teardown_file() {
	file_daemon_stop
}

setup() {
	file_daemon_case
	SF=$REPO/build/fixtures/sign-file
}

@test "client-is-dynamic" {
	# Linked as Debian requires: against the shared libraries, none linked in.
	run readelf -d "$CLIENT"
	assert_output --partial "libcrypto"
	run sh -c "readelf -l '$CLIENT' | grep -q 'Requesting program interpreter'"
	assert_success
	run sh -c "nm '$CLIENT' 2>/dev/null | grep -q ' T SHA256_Init'"
	assert_failure
	run sh -c "nm -D '$CLIENT' | grep -q EVP_DigestInit_ex"
	assert_success
}

@test "per-module-identical-to-sign-file" {
	# One process per module, as kbuild calls it: the same bytes as the
	# kernel's sign-file with the same key (PKCS#1 v1.5 is deterministic).
	fresh a.ko s.ko
	"$C" sign-file sha512 modsign:default "$F/cert.pem" a.ko
	"$SF" sha512 "$F/key.pem" "$F/cert.pem" s.ko
	cmp a.ko s.ko
	run "$C" verify --cert "$F/cert.pem" a.ko
	assert_success
}

@test "per-module-differs-by-hash" {
	# Twin: another hash makes other bytes.
	fresh a.ko b.ko
	"$C" sign-file sha512 modsign:default "$F/cert.pem" a.ko
	"$C" sign-file sha256 modsign:default "$F/cert.pem" b.ko
	run cmp a.ko b.ko
	assert_failure
}

@test "per-module-tampered-fails" {
	fresh t.ko
	"$C" sign-file sha512 modsign:default "$F/cert.pem" t.ko
	flip_bit_at t.ko 100
	run "$C" verify --cert "$F/cert.pem" t.ko
	assert_failure
}

@test "unknown-command-usage" {
	fresh u.ko
	sum=$(sha u.ko)
	run "$C" frobnicate u.ko
	assert_equal "$status" 2
	assert_output --partial "unknown command 'frobnicate'"
	assert_equal "$(sha u.ko)" "$sum"
}

@test "bad-address-says" {
	fresh u.ko
	sum=$(sha u.ko)
	run "$C" --server "$F/sock" sign u.ko
	assert_failure
	assert_output --partial "unsupported address"
	assert_equal "$(sha u.ko)" "$sum"
}

# half_close half|open: three sign requests, then the replies and whether
# the daemon hung up.
half_close() { # half|open: three sign requests, then the replies and whether the daemon hung up
	python3 - "$F/sock" "$1" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
def frame(o):
    b = json.dumps(o).encode(); return struct.pack(">I", len(b)) + b
s.sendall(b"".join(frame({"v": 1, "id": i + 1, "op": "sign", "hash": "sha256",
                          "digest": "%064x" % (i + 1), "module": "half%d" % i}) for i in range(3)))
if sys.argv[2] == "half":
    s.shutdown(socket.SHUT_WR)
s.settimeout(20)
buf, replies, errors = b"", 0, 0
while replies < 3:
    c = s.recv(65536)
    if not c: break
    buf += c
    while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
        n = struct.unpack(">I", buf[:4])[0]
        errors += not json.loads(buf[4:4 + n]).get("ok"); replies += 1; buf = buf[4 + n:]
s.settimeout(2)  # every reply is in: does the daemon hang up?
try: eof = int(s.recv(1) == b"")
except socket.timeout: eof = 0
print("replies=%d errors=%d eof=%d" % (replies, errors, eof))
PY
}

@test "client-half-closes" {
	# One module per run: the client half-closes after its last request.
	fresh h.ko
	strace -qq -f -e trace=shutdown -o half.strace \
		"$C" sign-file sha256 modsign:default "$F/cert.pem" h.ko
	run grep -Eq "shutdown\(.*SHUT_WR\) *= 0" half.strace
	assert_success
	run "$C" verify --cert "$F/cert.pem" h.ko
	assert_success
}

@test "daemon-answers-half-closed-then-hangs-up" {
	# ... and the daemon answers what it read, then hangs up at once
	# instead of waking again for the client's close (docs/PROTOCOL.md).
	run half_close half
	assert_output "replies=3 errors=0 eof=1"
}

@test "daemon-keeps-open-connection" {
	# Twin: a client that keeps its end open keeps a connection that
	# takes more requests.
	run half_close open
	assert_output "replies=3 errors=0 eof=0"
}

@test "as-sign-file-signs" {
	# Invoked as scripts/sign-file (the unpatched kbuild's name).
	ln -s "$CLIENT" sign-file
	fresh c.ko
	./sign-file sha256 whatever.pem "$F/cert.pem" c.ko
	run "$C" verify --cert "$F/cert.pem" c.ko
	assert_success
}

@test "as-sign-file-other-cert" {
	# Twin: a certificate that is not the daemon's is refused, module
	# untouched.
	ln -s "$CLIENT" sign-file
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj /CN=other -keyout other.key -out other.pem 2>/dev/null
	fresh c.ko
	sum=$(sha c.ko)
	run ./sign-file sha256 whatever.pem other.pem c.ko
	assert_failure
	assert_equal "$(sha c.ko)" "$sum"
}

# ---- lazy loading (lib/dlopen.h, issue 34) -----------------------------------

# libs_of CMD...: CMD's status, with the sonames of every library its
# process mapped (the loader's own account, LD_DEBUG=files: linked and
# dlopen()ed alike) in ./libs, one a line.
libs_of() {
	local rc=0

	rm -f ld.*
	LD_DEBUG=files LD_DEBUG_OUTPUT=$PWD/ld "$@" || rc=$?
	cat ld.* | sed -n 's/.*file=\(lib[^ ]*\) \[0\];  \(needed\|dynamically\).*/\1/p' |
		sort -u >libs
	return $rc
}

# extra_libs: the libraries in ./libs beyond what every call maps: the
# client's libcrypto, json-c and libc, and what those link themselves
# (Debian 13's libcrypto links zlib and libzstd: there they are never
# the client's to leave out).
extra_libs() {
	local f

	{
		printf '%s\n' libcrypto.so.3 libjson-c.so.5 libc.so.6
		for f in $(ldd "$CLIENT" | awk '$1 ~ /^lib(crypto|json-c)\.so/ { print $3 }'); do
			ldd "$f" | awk '/=>/ { print $1 }'
		done
	} | sort -u >base
	comm -23 libs base
}

@test "client-links-only-libcrypto-json-c" {
	# What the per-module call needs; the rest is loaded on first use.
	run sh -c "readelf -d '$CLIENT' | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | xargs"
	assert_output "libc.so.6 libcrypto.so.3 libjson-c.so.5"
}

@test "lazy-plain-module-loads-no-tls-p11-or-compressor" {
	# kbuild's call on an uncompressed module over the local socket maps
	# none of libssl, p11-kit (libffi), liblzma, libzstd, zlib (but those
	# libcrypto links itself: extra_libs).
	fresh a.ko
	run libs_of "$C" sign-file sha256 modsign:default "$F/cert.pem" a.ko
	assert_success
	run grep -q '^libcrypto\.so\.3$' libs # the account is there at all
	assert_success
	run extra_libs
	assert_output ""
	run "$C" verify --cert "$F/cert.pem" a.ko
	assert_success
}

# lazy_compressed EXT TOOL... SONAME: a .ko.EXT signed maps SONAME, and
# nothing else beyond what every call maps.
lazy_compressed() {
	local ext=$1 soname=${*: -1}

	fresh m.ko
	"${@:2:$#-2}" m.ko
	run libs_of "$C" sign-file sha256 modsign:default "$F/cert.pem" "m.ko.$ext"
	assert_success
	run grep -qx "$soname" libs
	assert_success
	extra_libs >extra
	run grep -vx "$soname" extra
	assert_failure
	run "$C" verify --cert "$F/cert.pem" "m.ko.$ext"
	assert_success
}

@test "lazy-xz-module-loads-liblzma" { lazy_compressed xz xz --check=crc32 liblzma.so.5; }
@test "lazy-zst-module-loads-libzstd" { lazy_compressed zst zstd -q --rm libzstd.so.1; }
@test "lazy-gz-module-loads-zlib" { lazy_compressed gz gzip -n libz.so.1; }

@test "lazy-tls-server-loads-libssl" {
	# Nothing listens on port 1: the call fails, after libssl is loaded.
	fresh a.ko
	sum=$(sha a.ko)
	run libs_of "$C" --server tls:127.0.0.1:1 --tls-ca "$F/cert.pem" \
		sign-file sha256 modsign:default "$F/cert.pem" a.ko
	assert_failure
	run grep -qx libssl.so.3 libs
	assert_success
	run extra_libs
	assert_output libssl.so.3
	assert_equal "$(sha a.ko)" "$sum"
}

@test "lazy-pkcs11-key-loads-p11-kit" {
	fresh a.ko
	run libs_of "$C" sign-file sha256 pkcs11:object=default "$F/cert.pem" a.ko
	assert_success
	run grep -qx libp11-kit.so.0 libs
	assert_success
	extra_libs >extra
	run xargs <extra
	assert_output "libffi.so.8 libp11-kit.so.0"
	run "$C" verify --cert "$F/cert.pem" a.ko
	assert_success
}

@test "lazy-liblzma-unloadable-one-line-module-untouched" {
	# liblzma's file made empty for this process alone (a mount
	# namespace): one line naming it, a failure, not a byte written.
	[ "$(id -u)" = 0 ] || skip "needs root for a mount namespace"
	lib=$(readlink -f "$(ldconfig -p | awk '$1 == "liblzma.so.5" { print $NF; exit }')")
	[ -f "$lib" ]
	fresh m.ko
	xz --check=crc32 m.ko
	cp m.ko.xz before.xz
	run unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$lib" \
		"$C" sign-file sha256 modsign:default "$F/cert.pem" m.ko.xz
	assert_failure
	assert_equal "${#lines[@]}" 1
	assert_output --regexp "m\.ko\.xz: .*cannot load liblzma\.so\.5: .*liblzma"
	cmp before.xz m.ko.xz
}

# audited MODULE: the daemon's audit records of the module at MODULE.
audited() { sed 's|\\/|/|g' "$F/modsignd.log" | grep -c "^modsignd: audit: .*\"module\":\"$1\"" || true; }

# unloadable SONAME CMD...: CMD with SONAME's file made empty for it
# alone (a mount namespace: only root makes one).
unloadable() {
	local lib

	lib=$(readlink -f "$(ldconfig -p | awk -v s="$1" '$1 == s { print $NF; exit }')")
	[ -f "$lib" ] || return 1
	shift
	unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$lib" "$@"
}

@test "lazy-liblzma-unloadable-dest-xz-no-request-no-audit" {
	# A plain module signed to a DEST in another format: that format's
	# library is loaded before the signature is asked for, so a library
	# that cannot load is one line naming DEST, and the daemon audits no
	# signature of a file never written.
	[ "$(id -u)" = 0 ] || skip "needs root for a mount namespace"
	# dlerror() names the file as the loader found it, by the search path.
	lib=$(ldconfig -p | awk '$1 == "liblzma.so.5" { print $NF; exit }')
	fresh m.ko
	sum=$(sha m.ko)
	run unloadable liblzma.so.5 "$C" sign-file sha256 modsign:default "$F/cert.pem" \
		"$T/m.ko" "$T/out.ko.xz"
	assert_failure
	assert_output "modsign-client: $T/out.ko.xz: xz: cannot load liblzma.so.5: $lib: file too short"
	assert_equal "$(audited "$T/m.ko")" 0
	[ ! -e out.ko.xz ]
	assert_equal "$(ls -A)" "m.ko"
	assert_equal "$(sha m.ko)" "$sum"
}

@test "twin-liblzma-loadable-dest-xz-signed-one-audit" {
	fresh m.ko
	sum=$(sha m.ko)
	run "$C" sign-file sha256 modsign:default "$F/cert.pem" "$T/m.ko" "$T/out.ko.xz"
	assert_success
	assert_output ""
	assert_equal "$(audited "$T/m.ko")" 1
	run "$C" verify --cert "$F/cert.pem" out.ko.xz
	assert_output "out.ko.xz: OK (sha256)"
	assert_equal "$(sha m.ko)" "$sum"
}

@test "dest-xz-on-a-full-filesystem-one-reason" {
	# The commit's line for a module it could not compress: the reason
	# once, not followed by strerror of the same errno.
	[ "$(id -u)" = 0 ] || skip "needs root for a mount namespace"
	fresh m.ko
	mkdir full
	run unshare -m sh -c 'mount -t tmpfs -o size=4k tmpfs full && exec "$@"' sh \
		"$C" sign-file sha256 modsign:default "$F/cert.pem" "$T/m.ko" "$T/full/out.ko.xz"
	assert_failure
	# (4 KiB: the module compressed is 5.5 KiB.)
	assert_output "modsign-client: $T/full/out.ko.xz: cannot compress the new module: xz: No space left on device"
	assert_equal "$(ls -A full)" ""
}
