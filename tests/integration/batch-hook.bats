#!/usr/bin/env bats
# kbuild's batch hook (kernel-patches/0004): MODULE_SIGN_BATCH_CMD is
# "modsign-client sign-file --batch", called once with <hash> <key>
# <certificate> and the paths of all the modules on standard input.  What
# the kernel tree does with it (modules_install, modules_sign, M=,
# compression, the guest loading the result) is tests/qemu/run.sh's.
#
# One daemon for the file (setup_file), with PEM keys as kbuild's
# certs/signing_key.pem: every case signs with them and only reads them.

load ../common

setup_file() {
	local F=$BATS_FILE_TMPDIR

	make_pem_key "$F/key.pem" rsa:2048 "batch hook test"
	make_pem_key "$F/other.pem" rsa:2048 "batch hook other"
	file_daemon_start --key default="$F/key.pem" --key other="$F/other.pem"
}

teardown_file() {
	file_daemon_stop
}

setup() {
	file_daemon_case
	SF=$REPO/build/fixtures/sign-file
}

# stripped_copies N DIR: N real modules without their signatures under
# DIR, their paths (as kbuild passes them, absolute) in DIR.list
stripped_copies() {
	local n=$1 d=$2 m i=0
	mkdir -p "$d"
	: >"$d.list"
	while read -r m; do
		i=$((i + 1))
		cp "$m" "$d/$i-${m##*/}"
		echo "$T/$d/$i-${m##*/}" >>"$d.list"
	done < <(real_modules "$n")
	"$C" strip "$d"/*.ko >/dev/null
}

# audited_under PREFIX: the daemon's audit records of modules under PREFIX
# (the record escapes '/' as JSON allows).
audited_under() { sed 's|\\/|/|g' "$F/modsignd.log" | grep -c "^modsignd: audit: .*\"module\":\"$1" || true; }

sums() { (cd "$1" && sha256sum -- *.ko); }

@test "batch-signs-every-module" {
	stripped_copies 40 m
	run "$C" sign-file --batch sha256 "$F/key.pem" "$F/key.pem.crt" <m.list
	assert_success
	assert_output ""
	run "$C" verify --cert "$F/key.pem.crt" m/*.ko
	assert_success
	assert_equal "$(grep -c ': OK (' <<<"$output")" 40
	assert_equal "$(audited_under "$T/m/")" 40
}

@test "batch-same-bytes-as-sign-file" {
	# Each module as the kernel's sign-file signs it (RSA PKCS#1 v1.5 is
	# deterministic).  Twin: the stripped module differs from both.
	stripped_copies 10 b
	cp -r b s
	"$C" sign-file --batch sha512 "$F/key.pem" "$F/key.pem.crt" <b.list
	for f in s/*.ko; do "$SF" sha512 "$F/key.pem" "$F/key.pem.crt" "$f"; done
	assert_equal "$(sums b)" "$(sums s)"
	stripped_copies 1 u
	run cmp u/1-*.ko b/1-*.ko
	assert_failure
}

@test "batch-same-bytes-as-sign-file-sha3-256" {
	# As above with CONFIG_MODULE_SIG_SHA3_256's hash.  Twin: the
	# SHA-256 signatures of the same modules differ from both.
	stripped_copies 5 b
	cp -r b s
	cp -r b t
	"$C" sign-file --batch sha3-256 "$F/key.pem" "$F/key.pem.crt" <b.list
	for f in s/*.ko; do "$SF" sha3-256 "$F/key.pem" "$F/key.pem.crt" "$f"; done
	assert_equal "$(sums b)" "$(sums s)"
	for f in t/*.ko; do "$SF" sha256 "$F/key.pem" "$F/key.pem.crt" "$f"; done
	run cmp t/1-*.ko b/1-*.ko
	assert_failure
}

@test "batch-wrong-cert-refused" {
	# The certificate kbuild embeds is not the daemon's key: refused once,
	# before any module is sent, and every module is left as it was.
	stripped_copies 20 w
	before=$(sums w)
	run "$C" sign-file --batch sha256 "$F/key.pem" "$F/other.pem.crt" <w.list
	assert_equal "$status" 1
	assert_output --partial "$F/other.pem.crt: the daemon's key 'default' is not this certificate; no module signed"
	assert_equal "${#lines[@]}" 1
	assert_equal "$(sums w)" "$before"
	# ... and the daemon never saw one of them.
	assert_equal "$(audited_under "$T/w/")" 0
}

@test "batch-named-key-with-its-cert" {
	# Twin of the refusal: modsign:NAME with that key's certificate signs.
	stripped_copies 5 n
	run "$C" sign-file --batch sha256 modsign:other "$F/other.pem.crt" <n.list
	assert_success
	run "$C" verify --cert "$F/other.pem.crt" n/*.ko
	assert_success
	run "$C" sign-file --batch sha256 modsign:other "$F/key.pem.crt" <n.list
	assert_equal "$status" 1
	assert_output --partial "the daemon's key 'other' is not this certificate"
}

@test "batch-bad-path-named-others-signed" {
	# A missing file and a file that is not a module in the list: both
	# named, every other module signed, exit status 1 once all are done.
	stripped_copies 12 p
	echo "not a module" >p/text.ko
	text=$(sha p/text.ko)
	{
		head -n 6 p.list
		echo "$T/p/missing.ko"
		echo "$T/p/text.ko"
		tail -n 6 p.list
	} >list
	run "$C" sign-file --batch sha256 "$F/key.pem" "$F/key.pem.crt" <list
	assert_equal "$status" 1
	assert_line --partial "$T/p/missing.ko: No such file or directory"
	assert_line --partial "$T/p/text.ko: "
	assert_equal "${#lines[@]}" 2
	assert_equal "$(sha p/text.ko)" "$text"
	run "$C" verify --cert "$F/key.pem.crt" $(cat p.list)
	assert_success
	assert_equal "$(grep -c ': OK (' <<<"$output")" 12
}

@test "batch-exit-status" {
	# 0 when all are signed (the cases above), 1 when the daemon cannot
	# be reached (every module untouched), 2 for usage errors.
	stripped_copies 3 e
	before=$(sums e)
	run env MODSIGN_SERVER=unix:$T/nothing.sock "$C" sign-file --batch sha256 "$F/key.pem" "$F/key.pem.crt" <e.list
	assert_equal "$status" 1
	assert_output --partial "nothing.sock"
	assert_equal "$(sums e)" "$before"
	run "$C" sign-file --batch md5 "$F/key.pem" "$F/key.pem.crt" <e.list
	assert_equal "$status" 2
	assert_output --partial "hash 'md5' not allowed"
	run "$C" sign-file --batch sha256 "$F/key.pem" <e.list
	assert_equal "$status" 2
	run "$C" sign-file --batch sha256 "$F/key.pem" "$F/key.pem.crt" </dev/null
	assert_equal "$status" 2
	assert_output --partial "no modules on standard input"
	run "$C" sign-file --batch sha256 "$F/key.pem" "$T/no-cert.pem" <e.list
	assert_equal "$status" 1
	assert_output --partial "$T/no-cert.pem: cannot read certificate"
	assert_equal "$(sums e)" "$before"
}

@test "batch-progress-only-on-a-terminal" {
	# make's output is often a log file: no status line there.  Twin: on a
	# terminal (script(1) gives it one) the status line shows.
	stripped_copies 30 t
	run "$C" sign-file --batch sha256 "$F/key.pem" "$F/key.pem.crt" <t.list
	assert_success
	refute_output --partial "signed 30/30"
	stripped_copies 30 u
	run script -qec "'$C' sign-file --batch sha256 '$F/key.pem' '$F/key.pem.crt' <u.list" /dev/null
	assert_success
	assert_output --partial "signed 30/30"
	run "$C" verify --cert "$F/key.pem.crt" u/*.ko
	assert_success
}
