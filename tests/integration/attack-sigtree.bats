#!/usr/bin/env bats
# Attacks through the signature tree and the modules' paths (review of the
# client since 1ac1a36): whoever can write the signature tree that attach
# reads, or a directory on a module's path, or name a module, tries to
# hang or mislead root's client, or have it write where a link leads.
# Each case has its twin that must still work, and its own daemon on a
# key made at run time.

load ../common
load dist

setup() {
	case_setup
	dist_setup
}

teardown() { case_teardown; }

# ---- 1. a FIFO in the signature tree -------------------------------------
# The signature files were read O_NOFOLLOW but blocking: a FIFO planted at
# a signature's name held root's attach (or sign-file -s) for ever.

@test "fifo-in-signature-tree-refused-at-once" {
	"$C" sign --detached sigs --recursive tree
	rm sigs/kernel/fs/b.ko.p7s
	mkfifo sigs/kernel/fs/b.ko.p7s
	cp -a pristine rebuilt
	run timeout "$BOUND" "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	refute [ "$status" -eq 124 ]
	assert_failure 1
	assert_output "modsign-client: sigs/kernel/fs/b.ko.p7s: cannot read signature: not a regular file"
	cmp pristine/kernel/fs/b.ko rebuilt/kernel/fs/b.ko
	"$C" verify --cert rsa.pem.crt rebuilt/kernel/fs/a.ko rebuilt/kernel/net/c.ko
	run timeout "$BOUND" "$C" sign-file -s sigs/kernel/fs/b.ko.p7s sha256 rsa.pem.crt \
		rebuilt/kernel/fs/b.ko
	refute [ "$status" -eq 124 ]
	assert_failure 1
	assert_output --partial "b.ko.p7s: cannot read signature: not a regular file"
}

@test "fifo-twin-regular-signature-attached" {
	"$C" sign --detached sigs --recursive tree
	cp -a pristine rebuilt
	run timeout "$BOUND" "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_success
	"$C" verify --cert rsa.pem.crt $(find rebuilt -name '*.ko')
}

# ---- 2. a module name with a newline or an escape sequence ---------------
# Whoever can name a file in a tree root signs or attaches (--recursive)
# chose what root's terminal and build log showed: a newline let a name
# print a line of its own ("modsign-client: ... OK"), an ESC sequence
# could rewrite the terminal.

@test "module-name-with-newline-stays-one-line" {
	local evil=$'kernel/fs/x\nmodsign-client: all modules attached\e[2J.ko'
	"$C" sign --detached sigs --recursive tree
	cp -a pristine rebuilt
	cp pristine/kernel/fs/a.ko "rebuilt/$evil"
	run timeout "$BOUND" "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_failure 1
	assert_equal "${#lines[@]}" 1
	assert_output 'modsign-client: sigs/kernel/fs/x\x0amodsign-client: all modules attached\x1b[2J.ko.p7s: cannot read signature: No such file or directory'
}

@test "module-name-twin-plain-utf8-name-printed-as-is" {
	"$C" sign --detached sigs --recursive tree
	cp -a pristine rebuilt
	cp pristine/kernel/fs/a.ko "rebuilt/kernel/fs/é b.ko"
	run timeout "$BOUND" "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_failure 1
	assert_output "modsign-client: sigs/kernel/fs/é b.ko.p7s: cannot read signature: No such file or directory"
}

# ---- 3. two modules, one signature file ----------------------------------
# Two --recursive trees with the same layout (or one module named twice)
# map to the same place in the signature tree: the second signature was
# written over the first, exit 0, and the tree then held one module's
# signature under the other's name.

@test "detached-two-modules-one-signature-path-refused" {
	mkdir -p A/kernel B/kernel
	cp pristine/kernel/fs/a.ko A/kernel/x.ko
	cp pristine/kernel/fs/b.ko B/kernel/x.ko
	run "$C" sign --detached sigs --recursive A --recursive B
	assert_failure 1
	assert_output "modsign-client: B/kernel/x.ko: its signature would go where A/kernel/x.ko's goes (sigs/kernel/x.ko.p7s); not signed"
	cp -a A rebuilt
	"$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	"$C" verify --cert rsa.pem.crt rebuilt/kernel/x.ko
}

@test "detached-twin-two-trees-distinct-paths-both-signed" {
	mkdir -p A/kernel B/kernel
	cp pristine/kernel/fs/a.ko A/kernel/x.ko
	cp pristine/kernel/fs/b.ko B/kernel/y.ko
	run "$C" sign --detached sigs --recursive A --recursive B
	assert_success
	assert_output ""
	[ -f sigs/kernel/x.ko.p7s ] && [ -f sigs/kernel/y.ko.p7s ]
}

# ---- 4. a directory of the signature tree swapped for a link -------------
# sign --detached made the tree's directories one level at a time with
# O_NOFOLLOW, then wrote each signature by its path: whoever can write in
# the tree swapped a directory for a link once the directories were made
# and before the signatures came back, and root's signatures were written
# where the link led.  A proxy holds the replies until the swap is made.

# held_start ARGS...: modsign-client ARGS (standard input from
# $HELD_STDIN, else /dev/null) through a server that holds its signatures
# until proxy.go exists; returns once the daemon has signed the first
# request and the client has asked for all three modules of tree/ (each
# is opened, and the signature tree's directories are made, before its
# request is sent).  $SIGNER is the client, its output goes to
# signer.out.
held_start() {
	trickle_proxy "$T/hold.sock" 0 1048576 hold
	"$C" --server "unix:$T/hold.sock" "$@" <"${HELD_STDIN:-/dev/null}" \
		>signer.out 2>&1 3>&- &
	SIGNER=$!
	eventually "$BOUND" [ -e proxy.held ]
	eventually "$BOUND" [ "$(cat proxy.asked 2>/dev/null)" = 3 ]
}

# held_end: the held signatures let go; $rc, the client's exit status.
held_end() {
	touch proxy.go
	rc=0
	wait "$SIGNER" || rc=$?
}

# held_swapped DIR MOVED START...: START... (a held_start), and while the
# signatures are held, DIR moved to MOVED and a link to outside/ put in
# its place; then held_end.  Nothing is written where the link leads.
held_swapped() {
	local dir=$1 moved=$2
	shift 2
	mkdir outside
	"$@"
	mv "$dir" "$moved"
	ln -s "$T/outside" "$dir"
	held_end
	[ -z "$(ls outside)" ]
}

detached_held() { held_start sign --detached sigs --recursive tree; }

@test "detached-dir-swapped-for-link-before-write-not-followed" {
	held_swapped sigs/kernel/fs sigs/kernel/fs.made detached_held
	[ -z "$(ls sigs/kernel/fs.made)" ]
	assert_equal "$rc" 1
	run cat signer.out
	assert_line "modsign-client: sigs/kernel/fs/a.ko.p7s: a directory on its path in the signature tree is a link or not a directory"
	assert_line "modsign-client: sigs/kernel/fs/b.ko.p7s: a directory on its path in the signature tree is a link or not a directory"
	assert_equal "${#lines[@]}" 2
	# The module whose directory was left alone is signed.
	cp pristine/kernel/net/c.ko c.ko
	"$C" sign-file -s sigs/kernel/net/c.ko.p7s sha256 rsa.pem.crt c.ko
	"$C" verify --cert rsa.pem.crt c.ko
}

@test "detached-twin-replies-held-no-swap-all-signed" {
	detached_held
	held_end
	assert_equal "$rc" 0
	assert_equal "$(cat signer.out)" ""
	cp -a pristine rebuilt
	"$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	"$C" verify --cert rsa.pem.crt $(find rebuilt -name '*.ko')
}

# attach --from read each signature O_NOFOLLOW, but by its path: a link
# in place of a directory of the tree was followed, to files the tree's
# owner never made there.
@test "attach-link-in-tree-component-not-followed" {
	"$C" sign --detached sigs --recursive tree
	mv sigs/kernel/fs elsewhere
	ln -s "$T/elsewhere" sigs/kernel/fs
	cp -a pristine rebuilt
	run "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_failure 1
	assert_line "modsign-client: sigs/kernel/fs/a.ko.p7s: cannot read signature: a directory on its path in the signature tree is a link or not a directory"
	assert_equal "${#lines[@]}" 2
	cmp pristine/kernel/fs/a.ko rebuilt/kernel/fs/a.ko
	cmp pristine/kernel/fs/b.ko rebuilt/kernel/fs/b.ko
	"$C" verify --cert rsa.pem.crt rebuilt/kernel/net/c.ko
}

@test "attach-twin-tree-itself-a-link-followed" {
	# DIR itself is the caller's to name, a link or not: it is resolved
	# once, and only what lies below it is walked without links.
	"$C" sign --detached sigs --recursive tree
	ln -s sigs sigs-link
	cp -a pristine rebuilt
	run "$C" attach --from sigs-link --cert rsa.pem.crt --recursive rebuilt
	assert_success
	assert_output ""
	"$C" verify --cert rsa.pem.crt $(find rebuilt -name '*.ko')
}

# ---- 5. one signature file, spelled two ways -----------------------------
# Row 44's check compared the signature paths as strings: "./kernel/x.ko"
# (or "kernel//x.ko") and A's "kernel/x.ko" are one file in the tree, so
# the second module's signature was written over the first's, exit 0.

@test "detached-one-signature-path-spelled-two-ways-refused" {
	mkdir -p A/kernel kernel
	cp pristine/kernel/fs/a.ko A/kernel/x.ko
	cp pristine/kernel/fs/b.ko kernel/x.ko
	run "$C" sign --detached sigs --recursive A ./kernel//x.ko
	assert_failure 1
	assert_output "modsign-client: A/kernel/x.ko: its signature would go where ./kernel//x.ko's goes (sigs/kernel/x.ko.p7s); not signed"
	cp -a kernel rebuilt
	"$C" sign-file -s sigs/kernel/x.ko.p7s sha256 rsa.pem.crt rebuilt/x.ko
}

@test "detached-twin-spelled-path-has-its-place" {
	mkdir kernel
	cp pristine/kernel/fs/b.ko kernel/x.ko
	run "$C" sign --detached sigs ./kernel//./x.ko
	assert_success
	assert_output ""
	assert_equal "$(cd sigs && find . -type f)" "./kernel/x.ko.p7s"
}

# ---- 6. sign-file -d/-p: a module's directory swapped for a link --------
# The .p7s went to its path as it was when the signature came back, the
# module was read (and, -p, replaced) in the directory opened at the
# start: whoever owns a directory on the module's path swapped it for a
# link in between, and root's .p7s was written where the link led (row 1,
# for the signature file).  Now it goes beside the module that was read.

# batch_swapped OPT: sign-file --batch OPT over tree/, kernel/fs swapped
# for a link to outside/ while the signatures are held.
batch_swapped() {
	find tree -name '*.ko' | sort >list
	HELD_STDIN=list held_swapped tree/kernel/fs tree/kernel/fs.read \
		held_start sign-file --batch "$1" sha256 modsign:default rsa.pem.crt
	assert_equal "$rc" 0
	assert_equal "$(cat signer.out)" ""
	cp pristine/kernel/fs/a.ko pristine/kernel/fs/b.ko .
	"$C" sign-file -s tree/kernel/fs.read/a.ko.p7s sha256 rsa.pem.crt a.ko
	"$C" sign-file -s tree/kernel/fs.read/b.ko.p7s sha256 rsa.pem.crt b.ko
}

@test "batch-d-dir-swapped-for-link-p7s-beside-the-module-read" {
	batch_swapped -d
	cmp pristine/kernel/fs/a.ko tree/kernel/fs.read/a.ko
}

@test "batch-p-dir-swapped-for-link-p7s-beside-the-module-signed" {
	batch_swapped -p
	"$C" verify --cert rsa.pem.crt tree/kernel/fs.read/a.ko tree/kernel/fs.read/b.ko
}

@test "batch-twin-replies-held-no-swap-p7s-beside-each-module" {
	find tree -name '*.ko' | sort >list
	HELD_STDIN=list held_start sign-file --batch -d sha256 modsign:default rsa.pem.crt
	held_end
	assert_equal "$rc" 0
	[ -f tree/kernel/fs/a.ko.p7s ] && [ -f tree/kernel/fs/b.ko.p7s ] &&
		[ -f tree/kernel/net/c.ko.p7s ]
}
