#!/usr/bin/env bats
# Compressed modules (.ko.xz, .ko.zst, .ko.gz), as Debian 13 installs
# them: verified, re-signed and stripped in place, recompressed as the
# kernel's modules_install does; corrupt, truncated, mislabelled and
# oversized ones refused and left as they were; --recursive over Debian
# 13's real /usr/lib/modules/VERSION (tests/fixtures-compressed.sh), with
# Debian's own certificate.  Every positive has a twin that must fail.
#
# One daemon for the file (setup_file): the cases only sign with its
# one-time RSA key (deterministic, so that signatures compare byte for
# byte) and do not change it.  The ownership cases start their own, open
# to nobody.

load ../common

setup_file() {
	local F=$BATS_FILE_TMPDIR

	"$REPO/tests/fixtures-compressed.sh" >"$F/fixz"
	file_daemon_start --key default=ephemeral:rsa2048
	"$CLIENT" --server "unix:$F/sock" cert >"$F/cert.pem"
	cp "$(real_modules 1)" "$F/orig.ko"
	"$CLIENT" --server "unix:$F/sock" strip "$F/orig.ko"
}

teardown_file() {
	file_daemon_stop
}

setup() {
	file_daemon_case
	cp "$F/orig.ko" orig.ko
	FIXZ=$(cat "$F/fixz")
	TREE=$(echo "$FIXZ"/modules/*)
}

# pack EXT FILE: FILE compressed by the kernel's own command
# (scripts/Makefile.modinst) into FILE.EXT, FILE removed.
pack() {
	case $1 in
	xz) xz --check=crc32 --lzma2=dict=1MiB -f "$2" ;;
	zst) zstd --rm -f -q "$2" ;;
	gz) gzip -n -f "$2" ;;
	esac
}

# unpack FILE.EXT: its content, by the tool, on stdout.
unpack() {
	case $1 in
	*.xz) xz -dc "$1" ;;
	*.zst) zstd -dcq "$1" ;;
	*.gz) gzip -dc "$1" ;;
	esac
}

# sign_in_place EXT: m.ko.EXT signed in place is the plain module signed,
# once decompressed by the tool, byte for byte; the tool's check passes.
sign_in_place() {
	cp orig.ko m.ko && pack "$1" m.ko
	cp orig.ko plain.ko
	run "$C" sign m.ko."$1"
	assert_success
	"$C" sign plain.ko
	run "$C" verify --cert "$F/cert.pem" m.ko."$1"
	assert_success
	assert_output "m.ko.$1: OK (sha256)"
	unpack m.ko."$1" >kernel-view.ko
	run cmp kernel-view.ko plain.ko
	assert_success
	# The file itself is the tool's, byte for byte: zstd's, and xz's in
	# the multi-threaded format of xz 5.6+ (-T2 here on Debian 12's 5.4).
	# gzip's deflate is its own, not zlib's: only its decoding is checked.
	case $1 in
	xz) xz -T2 --check=crc32 --lzma2=dict=1MiB -c plain.ko >tool.xz ;;
	zst) zstd -q -c plain.ko >tool.zst ;;
	esac
	if [ "$1" != gz ]; then
		run cmp tool."$1" m.ko."$1"
		assert_success
	fi
	# Twin: a byte of the body changed under the signature, recompressed.
	flip_bit_at kernel-view.ko 4096
	cp kernel-view.ko bad.ko && pack "$1" bad.ko
	run "$C" verify --cert "$F/cert.pem" bad.ko."$1"
	assert_failure
	assert_output --partial "bad.ko.$1: BAD signature"
}

@test "sign-in-place-xz-is-plain-signed-byte-for-byte" { sign_in_place xz; }
@test "sign-in-place-zst-is-plain-signed-byte-for-byte" { sign_in_place zst; }
@test "sign-in-place-gz-is-plain-signed-byte-for-byte" { sign_in_place gz; }

@test "recompressed-as-modules-install-tool-checks-pass" {
	for z in xz zst gz; do
		cp orig.ko m.ko && pack $z m.ko
		"$C" sign m.ko.$z
	done
	run xz -t m.ko.xz
	assert_success
	run xz -lvv m.ko.xz
	assert_output --partial "CRC32"
	assert_output --partial "--lzma2=dict=1MiB"
	run zstd -tq m.ko.zst
	assert_success
	run gzip -t m.ko.gz
	assert_success
	# gzip -n: no name, no time stamp (bytes 4-7 of the header are 0).
	assert_equal "$(od -An -tx1 -j4 -N4 m.ko.gz | tr -d ' ')" 00000000
	# Twin: the tool's check fails on a flipped byte.
	flip_bit_at m.ko.xz 200
	run xz -t m.ko.xz
	assert_failure
}

@test "strip-compressed-in-place" {
	for z in xz zst gz; do
		cp orig.ko m.ko && "$C" sign m.ko && pack $z m.ko
		run "$C" strip m.ko.$z
		assert_success
		unpack m.ko.$z >s.ko
		run cmp s.ko orig.ko
		assert_success
		# Twin: nothing left to verify.
		run "$C" verify --cert "$F/cert.pem" m.ko.$z
		assert_failure
		assert_output "modsign-client: m.ko.$z: not signed"
	done
}

# refused_untouched FILE WHY: every command refuses FILE in one line that
# names it and WHY, and FILE keeps its bytes, mode and inode.
refused_untouched() {
	local f=$1 why=$2 before inode
	before=$(sha "$f")
	inode=$(stat -c %i "$f")
	for cmd in "verify --cert $F/cert.pem" sign strip; do
		# shellcheck disable=SC2086 # the command is words
		run $C $cmd "$f"
		assert_failure
		assert_output "modsign-client: $f: $why"
		assert_equal "$(sha "$f")" "$before"
		assert_equal "$(stat -c %i "$f")" "$inode"
	done
	run ls -A
	refute_output --partial modsign-tmp
}

@test "corrupt-xz-refused-untouched" {
	cp orig.ko m.ko && pack xz m.ko
	flip_bit_at m.ko.xz 3000
	refused_untouched m.ko.xz "corrupt xz data"
}

@test "corrupt-zst-and-gz-refused-untouched" {
	for z in zst gz; do
		cp orig.ko m.ko && pack $z m.ko
		flip_bit_at m.ko.$z 3000
	done
	refused_untouched m.ko.zst "corrupt zstd data"
	refused_untouched m.ko.gz "corrupt gzip data"
}

@test "truncated-compressed-refused-untouched" {
	for z in xz zst gz; do
		cp orig.ko m.ko && pack $z m.ko
		truncate -s -1 m.ko.$z
	done
	refused_untouched m.ko.xz "truncated xz data"
	refused_untouched m.ko.zst "truncated zstd data"
	refused_untouched m.ko.gz "truncated gzip data"
}

@test "data-after-the-stream-refused-untouched" {
	cp orig.ko m.ko && pack xz m.ko
	printf 'x' >>m.ko.xz
	refused_untouched m.ko.xz "corrupt xz data"
}

@test "decompression-bomb-refused" {
	# 300 MiB of zeros in 10 KiB: over the 256 MiB bound, refused before
	# more is held; the twin (a real module) signs in every case above.
	head -c 300M /dev/zero | zstd -q >b.ko.zst
	refused_untouched b.ko.zst "zstd data decompresses to more than 256 MiB: refused"
}

# elf_of_mib FILE MIB: a valid ELF module of MIB MiB for modfile.h, its
# section header table at its end and zeros before it: a small file once
# compressed (a few KiB of zstd for 64 MiB), a large one decompressed.
elf_of_mib() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
size = int(sys.argv[2]) << 20
hdr = bytearray(64)
hdr[0:7] = b"\x7fELF\x02\x01\x01"
struct.pack_into("<Q", hdr, 0x28, size - 64)  # e_shoff: one header, at the end
struct.pack_into("<HH", hdr, 0x3a, 64, 1)     # e_shentsize, e_shnum
with open(sys.argv[1], "wb") as f:
    f.write(hdr)
    f.truncate(size)
PY
}

# A tree of crafted small modules, each just under the bound above
# (64 MiB each, as the attack review's 24 that held 1.58 GB), in one
# batch: the client holds their decompressed copies (memfds) only within
# BATCH_MAX_DECOMPRESSED_HELD (256 MiB) plus one module, not a window of
# them (here all 12: 768 MiB, what 53c8c59 held).  Measured as the sum of
# its memfds, sampled (tests/memfd-peak.py: the peak RSS does not see
# them).  Twin: every module is signed and verifies; the batch did not
# stall at the budget.
@test "decompression-bombs-in-one-batch-held-within-budget" {
	local n=12 peak
	elf_of_mib b.ko 64
	zstd -q --rm b.ko
	for i in $(seq 1 $n); do cp b.ko.zst "b$i.ko.zst"; done
	rm b.ko.zst
	run python3 "$REPO/tests/memfd-peak.py" peak "$C" sign b*.ko.zst
	assert_success
	peak=$(cat peak)
	echo "peak of decompressed modules held: $((peak >> 20)) MiB" >&3
	[ "$peak" -le $(((256 + 64 + 1) << 20)) ]
	[ "$peak" -ge $((64 << 20)) ] # the sampler saw them at all
	run "$C" verify --cert "$F/cert.pem" b*.ko.zst
	assert_success
	assert_equal "$(grep -c ': OK (sha256)$' <<<"$output")" "$n"
}

@test "name-that-lies-refused" {
	cp orig.ko m.ko && pack zst m.ko
	mv m.ko.zst m.ko.xz
	refused_untouched m.ko.xz "zstd data, but its name does not end in .zst"
	cp orig.ko plain.ko.xz
	refused_untouched plain.ko.xz "not xz data, though its name ends in .xz"
	mv m.ko.xz m.ko
	refused_untouched m.ko "zstd data, but its name does not end in .zst"
	# Twin: its own name.
	mv m.ko m.ko.zst
	run "$C" sign m.ko.zst
	assert_success
}

@test "debian13-tree-verifies-recursively-with-debians-cert" {
	local n
	n=$(find "$TREE" -name '*.ko.xz' | wc -l)
	[ "$n" -gt 4000 ]
	run "$C" verify --cert "$FIXZ/debian.pem" --recursive "$TREE"
	assert_success
	assert_equal "$(grep -c ': OK (sha256)$' <<<"$output")" "$n"
	# Twin: the same tree against another certificate.
	run "$C" verify --cert "$F/cert.pem" --recursive "$TREE/kernel/fs/fat"
	assert_failure
	assert_output --partial "vfat.ko.xz: signed by a different key"
}

@test "debian13-tree-one-tampered-module-named" {
	local m
	cp -a "$TREE/kernel/fs" t
	m=t/fat/vfat.ko.xz
	xz -dc "$m" >v.ko
	flip_bit_at v.ko 4096
	xz --check=crc32 --lzma2=dict=1MiB -c v.ko >"$m"
	run "$C" verify --cert "$FIXZ/debian.pem" --recursive t
	assert_failure
	assert_equal "$(grep -vc ': OK (sha256)$' <<<"$output")" 1
	assert_output --partial "modsign-client: $m: BAD signature: module or signature modified"
	# Twin: the others of the tree all pass.
	assert_equal "$(grep -c ': OK (sha256)$' <<<"$output")" \
		"$(($(find t -name '*.ko.xz' | wc -l) - 1))"
}

@test "recursive-follows-no-symlink-out-of-the-tree" {
	mkdir -p t/sub out
	cp orig.ko t/sub/a.ko && pack xz t/sub/a.ko
	"$C" sign t/sub/a.ko.xz
	cp orig.ko out/evil.ko && pack xz out/evil.ko   # unsigned: would fail
	ln -s "$T/out/evil.ko.xz" t/sub/link.ko.xz
	ln -s "$T/out" t/linkdir
	run "$C" verify --cert "$F/cert.pem" --recursive t
	assert_success
	assert_output "t/sub/a.ko.xz: OK (sha256)"
	run "$C" sign --recursive t
	assert_success
	run "$C" verify --cert "$F/cert.pem" out/evil.ko.xz
	assert_failure
	assert_output --partial "not signed"
	# Twin: the same module as a file of the tree is found (and fails).
	cp out/evil.ko.xz t/sub/evil.ko.xz
	run "$C" verify --cert "$F/cert.pem" --recursive t
	assert_failure
	assert_output --partial "t/sub/evil.ko.xz: not signed"
}

# A directory another user can change could be swapped for a link to a
# directory outside the tree between the walk and the opens (the attack
# review: root's strip --recursive then stripped a module elsewhere).
@test "recursive-refuses-a-tree-another-user-can-change" {
	mkdir -p t/z
	cp orig.ko t/z/af_key.ko
	"$C" sign t/z/af_key.ko
	before=$(sha256sum <t/z/af_key.ko)
	chown nobody t/z
	run "$C" strip --recursive t
	assert_failure
	assert_output --partial "t: directory t/z can be changed by a user other than you and root"
	assert_equal "$(sha256sum <t/z/af_key.ko)" "$before"
	chown root t/z && chmod g+w t/z
	run "$C" strip --recursive t
	assert_failure
	assert_output --partial "directory t/z can be changed"
	assert_equal "$(sha256sum <t/z/af_key.ko)" "$before"
	# Twin: the same tree, root's and 0755 again, is stripped.
	chmod 0755 t/z
	run "$C" strip --recursive t
	assert_success
	run "$C" verify --cert "$F/cert.pem" t/z/af_key.ko
	assert_failure
	assert_output --partial "not signed"
}

@test "recursive-sign-and-strip-mixed-tree" {
	mkdir -p t/a t/b
	cp orig.ko t/a/x.ko
	cp orig.ko t/a/y.ko && pack xz t/a/y.ko
	cp orig.ko t/b/z.ko && pack zst t/b/z.ko
	cp orig.ko t/b/w.ko && pack gz t/b/w.ko
	echo notamodule >t/b/readme.txt.xz
	run "$C" sign --recursive t
	assert_success
	run "$C" verify --cert "$F/cert.pem" --recursive t
	assert_success
	assert_equal "$(grep -c ': OK (sha256)$' <<<"$output")" 4
	run "$C" strip --recursive t
	assert_success
	# Twin: stripped, nothing verifies.
	run "$C" verify --cert "$F/cert.pem" --recursive t
	assert_failure
	assert_equal "$(grep -c ': not signed$' <<<"$output")" 4
}

@test "debian13-module-strip-then-attach-is-debians-file" {
	local m=$TREE/kernel/fs/fat/vfat.ko.xz
	xz -dc "$m" >v.ko
	split_module v.ko v.body v.sig
	mkdir -p sigs/w && cp v.sig sigs/w/vfat.ko.xz.p7s
	mkdir w && cp "$m" w/vfat.ko.xz
	"$C" strip w/vfat.ko.xz
	run "$C" attach --from sigs --cert "$FIXZ/debian.pem" w/vfat.ko.xz
	assert_success
	# Re-encoded as Debian's xz 5.8 encoded it: Debian's file, byte for byte.
	run cmp w/vfat.ko.xz "$m"
	assert_success
	# Twin: another module's signature is refused, the module untouched.
	"$C" strip w/vfat.ko.xz
	before=$(sha w/vfat.ko.xz)
	xz -dc "$TREE/kernel/fs/fat/msdos.ko.xz" >o.ko
	split_module o.ko o.body sigs/w/vfat.ko.xz.p7s
	run "$C" attach --from sigs --cert "$FIXZ/debian.pem" w/vfat.ko.xz
	assert_failure
	assert_output --partial "w/vfat.ko.xz: module differs from the one that was signed"
	assert_equal "$(sha w/vfat.ko.xz)" "$before"
}

# ---- ownership (issue 33) ----------------------------------------------------

# own_case MODE: nobody's own m.ko.xz, mode MODE, in root's group (root
# copied it in and changed only its owner), in a directory nobody can
# write; a daemon that signs for nobody.
own_case() {
	mkdir -m 777 w
	cp orig.ko w/m.ko && pack xz w/m.ko
	chown nobody:root w/m.ko.xz
	chmod "$1" w/m.ko.xz
	start_daemon "$T/s" --key default=ephemeral:rsa2048 --socket-mode 0666 --allow user:nobody
	NC=$(nobody_client)
}

@test "own-module-in-foreign-group-0644-signs-owner-kept" {
	own_case 0644
	run nobody "$NC" --server "unix:$T/s" sign "$T/w/m.ko.xz"
	assert_success
	# The owner kept; the group nobody's own, which the mode gives nothing more.
	assert_equal "$(stat -c '%U %G %a' w/m.ko.xz)" "nobody nogroup 644"
	run nobody "$NC" --server "unix:$T/s" verify --key default "$T/w/m.ko.xz"
	assert_success
}

# 0604: root's group is denied what others may read; nobody's group in
# its place would let root's group's members read it.
@test "own-module-in-foreign-group-0604-refused-says-group" {
	own_case 0604
	before=$(sha w/m.ko.xz)
	run nobody "$NC" --server "unix:$T/s" sign "$T/w/m.ko.xz"
	assert_failure
	assert_output --partial "cannot keep its group 'root' (you are not in it; the owner is kept)"
	assert_output --partial "mode 0604 gives that group less than others"
	assert_equal "$(sha w/m.ko.xz)" "$before"
	assert_equal "$(stat -c '%U %G %a' w/m.ko.xz)" "nobody root 604"
}

@test "own-module-in-foreign-group-0664-refused-says-group" {
	own_case 0664
	before=$(sha w/m.ko.xz)
	run nobody "$NC" --server "unix:$T/s" sign "$T/w/m.ko.xz"
	assert_failure
	assert_output --partial "cannot keep its group 'root' (you are not in it; the owner is kept)"
	assert_output --partial "mode 0664 gives that group more than others"
	refute_output --partial "cannot keep the owner"
	assert_equal "$(sha w/m.ko.xz)" "$before"
	assert_equal "$(stat -c '%U %G %a' w/m.ko.xz)" "nobody root 664"
}
