#!/usr/bin/env bats
# Attacks on the distribution flow and the server pool (review of the
# client since 1ac1a36): whoever can write the signature tree that attach
# reads, or runs a server of the pool, tries to hang or mislead root's
# client.  Each case has its twin that must still work, and its own
# daemon on a key made at run time.

load ../common

BOUND=30 # seconds: a case that takes longer is the hang it checks for

setup() {
	case_setup
	make_pem_key "$T/rsa.pem" rsa:2048
	start_daemon "$T/sock" --key "default=$T/rsa.pem"
	export MODSIGN_SERVER=unix:$T/sock
	mkdir -p tree/kernel/fs tree/kernel/net
	local mods=($(real_modules 3)) i=0
	for d in kernel/fs/a.ko kernel/fs/b.ko kernel/net/c.ko; do
		cp "${mods[i++]}" "tree/$d"
		"$C" strip "tree/$d"
	done
	cp -a tree pristine
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
