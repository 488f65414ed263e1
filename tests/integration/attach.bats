#!/usr/bin/env bats
# The distribution flow (issue 19), over a tree of modules: signatures
# made apart from their modules (sign --detached into a signature tree,
# sign-file --batch -d/-p), then attached where the package is built
# (attach --from, sign-file -s), each signature verified over the module
# it goes into.  (One module's sign-file -d and -p alone:
# sign-file-detached.bats; attacks on the flow: attack-sigtree.bats and
# attack-pool.bats.)  With an RSA key
# (PKCS#1 v1.5 is deterministic), the results are byte for byte what the
# kernel's own sign-file makes from the same PEM key.  Each case has its
# own daemon on a key made at run time.

load ../common
load dist

setup() {
	case_setup
	dist_setup --audit-log "$T/audit.log"
	mkdir ref
	cp tree/kernel/fs/a.ko m.ko
	cp m.ko ref.ko
}

teardown() { case_teardown; }

# ko_list DIR: the modules under DIR, their paths relative to it, sorted.
ko_list() { (cd "$1" && find . -name '*.ko' | sed 's|^\./||' | sort); }
# The signature the kernel's sign-file makes for module $1 (path under tree/).
ref_p7s() {
	cp "pristine/$1" ref/x.ko
	ref -d sha256 rsa.pem rsa.pem.crt ref/x.ko
	cat ref/x.ko.p7s
}
ref_signed() { # MODULE: sign-file's signed copy, in ref/x.ko
	cp "pristine/$1" ref/x.ko
	ref sha256 rsa.pem rsa.pem.crt ref/x.ko
}

# --- sign-file -s ---------------------------------------------------------

@test "sign-file-s-identical-to-sign-file" {
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	cp ref.ko theirs.ko
	ref -s ref.ko.p7s sha256 rsa.pem.crt theirs.ko
	sf -s ref.ko.p7s sha256 rsa.pem.crt m.ko
	cmp theirs.ko m.ko
	"$C" verify --cert rsa.pem.crt m.ko
	# Twin: the comparison sees an unsigned module as different.
	run cmp -s ref.ko m.ko
	assert_failure
}

@test "sign-file-s-other-module-refused" {
	# sign-file -s appends the signature to a module one byte different and
	# calls it signed; modsign verifies first and leaves it alone.
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	flip_bit_at m.ko 100
	cp m.ko blind.ko
	ref -s ref.ko.p7s sha256 rsa.pem.crt blind.ko
	sum=$(sha m.ko)
	run sf -s ref.ko.p7s sha256 rsa.pem.crt m.ko
	assert_failure 1
	assert_output "modsign-client: m.ko: module differs from the one that was signed"
	assert_equal "$(sha m.ko)" "$sum"
	run "$C" verify --cert rsa.pem.crt blind.ko
	assert_failure
}

@test "sign-file-s-other-key-refused" {
	make_pem_key other.pem rsa:2048
	ref -d sha256 other.pem other.pem.crt ref.ko
	sum=$(sha m.ko)
	run sf -s ref.ko.p7s sha256 rsa.pem.crt m.ko
	assert_failure 1
	assert_output "modsign-client: m.ko: signature was made by another key than rsa.pem.crt"
	assert_equal "$(sha m.ko)" "$sum"
	# Twin: with its own certificate it is attached.
	sf -s ref.ko.p7s sha256 other.pem.crt m.ko
	"$C" verify --cert other.pem.crt m.ko
}

@test "sign-file-s-other-hash-refused" {
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	run sf -s ref.ko.p7s sha512 rsa.pem.crt m.ko
	assert_failure 1
	assert_output --partial "signature is made with sha256, not sha512"
	cmp m.ko ref.ko
}

@test "sign-file-s-sha3-identical-other-hash-refused" {
	ref -d sha3-384 rsa.pem rsa.pem.crt ref.ko
	cp ref.ko theirs.ko
	ref -s ref.ko.p7s sha3-384 rsa.pem.crt theirs.ko
	cp m.ko m2.ko
	sf -s ref.ko.p7s sha3-384 rsa.pem.crt m.ko
	cmp theirs.ko m.ko
	run "$C" verify --cert rsa.pem.crt m.ko
	assert_output "m.ko: OK (sha3-384)"
	# Twin: the same signature given as the SHA-2 of its length.
	run sf -s ref.ko.p7s sha384 rsa.pem.crt m2.ko
	assert_failure 1
	assert_output --partial "signature is made with sha3-384, not sha384"
	cmp m2.ko ref.ko
}

@test "sign-file-s-garbage-refused" {
	head -c 300 /dev/urandom >junk.p7s
	run sf -s junk.p7s sha256 rsa.pem.crt m.ko
	assert_failure 1
	assert_equal "${#lines[@]}" 1
	assert_output --partial "m.ko: malformed PKCS#7 signature"
	cmp m.ko ref.ko
	: >empty.p7s
	run sf -s empty.p7s sha256 rsa.pem.crt m.ko
	assert_failure 1
	assert_output "modsign-client: empty.p7s: cannot read signature: empty file"
}

@test "sign-file-s-dest-leaves-source" {
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	cp ref.ko theirs.ko
	ref -s ref.ko.p7s sha256 rsa.pem.crt theirs.ko
	sf -s ref.ko.p7s sha256 rsa.pem.crt m.ko out.ko
	cmp theirs.ko out.ko
	cmp ref.ko m.ko
}

@test "sign-file-s-replaces-old-signature" {
	make_pem_key other.pem rsa:2048
	ref sha256 other.pem other.pem.crt m.ko
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	cp ref.ko theirs.ko
	ref -s ref.ko.p7s sha256 rsa.pem.crt theirs.ko
	sf -s ref.ko.p7s sha256 rsa.pem.crt m.ko
	cmp theirs.ko m.ko
	# Twin: sign-file -s appends after the old signature: not a module
	# the kernel takes, and not ours.
	cp ref.ko twice.ko
	ref sha256 other.pem other.pem.crt twice.ko
	ref -s ref.ko.p7s sha256 rsa.pem.crt twice.ko
	run cmp -s twice.ko m.ko
	assert_failure
}

@test "sign-file-s-with-d-refused" {
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	run sf -s -d ref.ko.p7s sha256 rsa.pem.crt m.ko
	assert_failure 2
	assert_output --partial "'-s' attaches a signature, '-d' would make one"
	cmp m.ko ref.ko
}

@test "sign-file-s-symlink-signature-refused" {
	ref -d sha256 rsa.pem rsa.pem.crt ref.ko
	ln -s ref.ko.p7s link.p7s
	run sf -s link.p7s sha256 rsa.pem.crt m.ko
	assert_failure 1
	assert_output "modsign-client: link.p7s: cannot read signature: is a symbolic link"
	cmp m.ko ref.ko
}

# --- sign-file --batch -d / -p ------------------------------------------------

@test "batch-d-writes-p7s-as-sign-file" {
	ko_list tree | sed 's|^|tree/|' >list
	before=$(cd tree && sha256sum $(ko_list .))
	sf --batch -d sha256 modsign:default rsa.pem.crt <list
	assert_equal "$(cd tree && sha256sum $(ko_list .))" "$before"
	for m in $(ko_list pristine); do
		cmp <(ref_p7s "$m") "tree/$m.p7s"
	done
	# Twin: one module's .p7s is not another's.
	run cmp -s tree/kernel/fs/a.ko.p7s tree/kernel/fs/b.ko.p7s
	assert_failure
}

@test "batch-p-signs-and-writes-p7s" {
	ko_list tree | sed 's|^|tree/|' >list
	sf --batch -p sha256 modsign:default rsa.pem.crt <list
	for m in $(ko_list pristine); do
		ref_signed "$m"
		cmp ref/x.ko "tree/$m"
		cmp <(ref_p7s "$m") "tree/$m.p7s"
	done
	run cmp -s pristine/kernel/fs/a.ko tree/kernel/fs/a.ko
	assert_failure
}

@test "batch-s-refused" {
	echo m.ko | { run sf --batch -s sha256 modsign:default rsa.pem.crt; echo "$output" >out; echo "$status" >rc; }
	assert_equal "$(cat rc)" 2
	grep -q "use 'attach --from DIR'" out
	cmp m.ko ref.ko
}

# --- sign --detached ------------------------------------------------------------

@test "detached-tree-mirrors-recursive" {
	"$C" sign --detached sigs --recursive tree
	assert_equal "$(cd sigs && find . -type f | sed 's|^\./||' | sort)" \
		"$(ko_list pristine | sed 's/$/.p7s/')"
	for m in $(ko_list pristine); do
		cmp <(ref_p7s "$m") "sigs/$m.p7s"
		cmp "pristine/$m" "tree/$m" # never touched
	done
	# The audit log has them like any other signature: one "ok" each.
	assert_equal "$(grep -c '"result":"ok"' audit.log)" 3
}

@test "detached-tree-suffix-sig-debian-layout" {
	"$C" sign --detached sigs --suffix .sig --recursive tree
	[ -f sigs/kernel/net/c.ko.sig ]
	[ ! -e sigs/kernel/net/c.ko.p7s ]
	cmp <(ref_p7s kernel/net/c.ko) sigs/kernel/net/c.ko.sig
	run "$C" sign --suffix .sig tree/kernel/net/c.ko
	assert_failure 2
	assert_output --partial "--suffix is for --detached DIR"
	run "$C" sign --detached sigs --suffix a/b tree/kernel/net/c.ko
	assert_failure 2
}

@test "detached-paths-from-stdin" {
	# Relative paths keep their place; absolute ones lose only their '/'.
	echo tree/kernel/fs/a.ko >list
	echo "$T/tree/kernel/net/c.ko" >>list
	"$C" sign --detached sigs --stdin <list
	[ -f sigs/tree/kernel/fs/a.ko.p7s ]
	[ -f "sigs/${T#/}/tree/kernel/net/c.ko.p7s" ]
	cmp <(ref_p7s kernel/fs/a.ko) sigs/tree/kernel/fs/a.ko.p7s
}

@test "detached-dotdot-refused" {
	mkdir sub
	run "$C" sign --detached sub/sigs ../"$(basename "$T")"/m.ko
	assert_failure 1
	assert_output --partial "a path with '..' has no place in the signature tree"
	[ -z "$(find sub -type f)" ]
	# Twin: the same module by a plain path has its place.
	"$C" sign --detached sub/sigs m.ko
	[ -f sub/sigs/m.ko.p7s ]
}

@test "detached-link-in-tree-not-followed" {
	mkdir -p sigs/kernel elsewhere
	ln -s "$T/elsewhere" sigs/kernel/fs
	run "$C" sign --detached sigs --recursive tree
	assert_failure 1
	assert_output --partial "sigs/kernel/fs/a.ko.p7s: cannot make its directory"
	[ -z "$(ls elsewhere)" ]
	# The module that has a place is still signed.
	cmp <(ref_p7s kernel/net/c.ko) sigs/kernel/net/c.ko.p7s
}

@test "detached-refused-by-daemon-writes-nothing" {
	stop_daemon "$DAEMON_PID"
	start_daemon "$T/sock" --key "default=$T/rsa.pem" --allow uid:65534
	run "$C" sign --detached sigs --recursive tree
	assert_failure 1
	assert_output --partial "not allowed by the daemon's policy"
	[ -z "$(find sigs -type f 2>/dev/null)" ]
}

# --- attach --from ----------------------------------------------------------------

@test "attach-from-tree-as-sign-file" {
	"$C" sign --detached sigs --recursive tree
	cp -a pristine rebuilt
	"$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	for m in $(ko_list pristine); do
		ref_signed "$m"
		cmp ref/x.ko "rebuilt/$m"
	done
	"$C" verify --cert rsa.pem.crt $(find rebuilt -name '*.ko')
}

@test "attach-from-tree-sha3-as-sign-file" {
	"$C" sign --detached sigs --hash sha3-256 --recursive tree
	cp -a pristine rebuilt
	cp -a pristine twin
	# Twin first: pinned to another hash, nothing is attached.
	run "$C" attach --from sigs --cert rsa.pem.crt --hash sha256 --recursive twin
	assert_failure 1
	assert_output --partial "signature is made with sha3-256, not sha256"
	diff -r pristine twin
	"$C" attach --from sigs --cert rsa.pem.crt --hash sha3-256 --recursive rebuilt
	for m in $(ko_list pristine); do
		cp "pristine/$m" ref/x.ko
		ref sha3-256 rsa.pem rsa.pem.crt ref/x.ko
		cmp ref/x.ko "rebuilt/$m"
	done
	"$C" verify --cert rsa.pem.crt $(find rebuilt -name '*.ko')
}

@test "attach-from-tree-one-module-rebuilt-differently" {
	"$C" sign --detached sigs --suffix .sig --recursive tree
	cp -a pristine rebuilt
	flip_bit_at rebuilt/kernel/fs/b.ko 200
	sum=$(sha rebuilt/kernel/fs/b.ko)
	run "$C" attach --from sigs --suffix .sig --cert rsa.pem.crt --recursive rebuilt
	assert_failure 1
	assert_output "modsign-client: rebuilt/kernel/fs/b.ko: module differs from the one that was signed"
	assert_equal "$(sha rebuilt/kernel/fs/b.ko)" "$sum"
	# The others are attached, whole.
	"$C" verify --cert rsa.pem.crt rebuilt/kernel/fs/a.ko rebuilt/kernel/net/c.ko
}

@test "attach-missing-signature-named" {
	"$C" sign --detached sigs --recursive tree
	rm sigs/kernel/net/c.ko.p7s
	cp -a pristine rebuilt
	run "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_failure 1
	assert_output "modsign-client: sigs/kernel/net/c.ko.p7s: cannot read signature: No such file or directory"
	cmp pristine/kernel/net/c.ko rebuilt/kernel/net/c.ko
}

@test "attach-signature-swapped-between-modules-refused" {
	"$C" sign --detached sigs --recursive tree
	cp sigs/kernel/fs/a.ko.p7s sigs/kernel/fs/b.ko.p7s
	cp -a pristine rebuilt
	run "$C" attach --from sigs --cert rsa.pem.crt rebuilt/kernel/fs/b.ko
	assert_failure 1
	# Without --recursive the tree path is the path given.
	assert_output --partial "sigs/rebuilt/kernel/fs/b.ko.p7s: cannot read signature"
	run "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_failure 1
	assert_output "modsign-client: rebuilt/kernel/fs/b.ko: module differs from the one that was signed"
}

@test "attach-needs-from-and-cert" {
	run "$C" attach --cert rsa.pem.crt m.ko
	assert_failure 2
	assert_output --partial "--from DIR is required"
	run "$C" attach --from sigs m.ko
	assert_failure 2
	assert_output --partial "--cert CERT is required"
}
