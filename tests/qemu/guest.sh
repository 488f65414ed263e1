# SPDX-License-Identifier: GPL-2.0
#
# guest.sh: what the QEMU kernel tests (run.sh, mldsa.sh) share: helpers on
# module files, the guest's cases, its initramfs, its boot and the check of
# each case from what the guest kernel printed.  Sourced; sourcing it
# starts nothing.
#
# The caller sets B (its scratch directory), cases (the file of
# "name file modname expectation" lines, the guest's /cases.txt), ksrc
# (the kernel tree), here (tests/qemu) and defines log, pass, fail and
# abort NAME REASON (report and stop).

# ---------------------------------------------------------------------------
# Helpers on modules

# has_sig FILE: FILE (possibly compressed) ends in the module signature marker.
has_sig()
{
	case $1 in
	*.xz) xz -dc "$1" ;;
	*.gz) gzip -dc "$1" ;;
	*.zst) zstd -dcq "$1" ;;
	*) cat "$1" ;;
	esac | tail -c 28 | cmp -s - <(printf '~Module signature appended~\n')
}

# find_mod DIR NAME: the installed file of module NAME under DIR.
find_mod() { find "$1" -name "$2.ko*" -print -quit; }

# overwrite_in_string FILE STRING: one byte inside STRING in FILE (its
# first occurrence) overwritten with an X.
overwrite_in_string()
{
	local off

	off=$(grep -boa -m1 "$2" "$1" | cut -d: -f1)
	[ -n "$off" ] || return 1
	printf 'X' | dd of="$1" bs=1 seek=$((off + 3)) conv=notrunc status=none
}

kmake() { make -C "$ksrc" "$@" > "$B/make.log" 2>&1; }

# add_case NAME FILE MODNAME EXPECT PATH: a guest case: load PATH as FILE and
# expect EXPECT ("load:TEXT" or "reject:TEXT", TEXT printed by the kernel).
add_case() { echo "$1 $2 $3 $4" >> "$cases"; cp "$5" "$B/initrd/modules/$2"; }

# ---------------------------------------------------------------------------
# The guest

make_initramfs()
{
	local spec=$B/initramfs.list f

	gcc -static -Os -Wall -Wextra -o "$B/modload" "$here/modload.c" ||
		abort initramfs "cannot build modload"
	{
		cat <<-EOF
		dir /dev 0755 0 0
		nod /dev/console 0600 0 0 c 5 1
		dir /proc 0755 0 0
		dir /tmp 01777 0 0
		dir /bin 0755 0 0
		file /bin/busybox /bin/busybox 0755 0 0
		file /init $here/init.sh 0755 0 0
		file /modload $B/modload 0755 0 0
		file /cases.txt $cases 0644 0 0
		dir /modules 0755 0 0
		EOF
		for f in sh mount xz gunzip reboot poweroff sleep cat rm dmesg; do
			echo "slink /bin/$f busybox 0777 0 0"
		done
		for f in "$B"/initrd/modules/*; do
			echo "file /modules/${f##*/} $f 0644 0 0"
		done
	} > "$spec"
	"$ksrc/usr/gen_init_cpio" "$spec" | gzip -n -9 > "$B/initramfs.cpio.gz" ||
		abort initramfs "gen_init_cpio failed"
}

boot_guest()
{
	local rc=0 t0

	t0=$(date +%s)
	timeout "${QEMU_TIMEOUT:-180}" qemu-system-x86_64 -accel tcg -m 256 \
		-nographic -no-reboot \
		-kernel "$ksrc/arch/x86/boot/bzImage" \
		-initrd "$B/initramfs.cpio.gz" \
		-append 'console=ttyS0 panic=-1 loglevel=7 no_timer_check' \
		< /dev/null > "$B/console.log" 2>&1 || rc=$?
	log "guest ran $(($(date +%s) - t0))s (exit $rc), log in $B/console.log"
	grep -q '^MODTEST-DONE' "$B/console.log" ||
		abort boot "guest did not finish (exit $rc): $(tail -n 3 "$B/console.log" | tr -d '\r' | tr '\n' ' ')"
	pass boot
}

# check_case NAME EXPECT: assert a case from the console log.  The kernel's
# messages for a case are those between its MODTEST-BEGIN and its result.
check_case()
{
	local name=$1 expect=$2 seg res want=${2#*:}

	seg=$(tr -d '\r' < "$B/console.log" |
		sed -n "/^MODTEST-BEGIN name=$name\$/,/^MODTEST name=$name /p")
	res=$(echo "$seg" | grep "^MODTEST name=$name " | tail -n 1)
	if [ -z "$res" ]; then
		fail "$name" "no result line in the guest log"
		return
	fi
	case $expect in
	load:*)
		if [[ $res != *" rc=0 "* ]]; then
			fail "$name" "not loaded: ${res#MODTEST name=$name }"
		elif ! grep -qF "$want" <<< "$seg"; then
			fail "$name" "loaded but '$want' not printed"
		else
			pass "$name"
		fi
		;;
	reject:*)
		if [[ $res != *" rc=-1 errno=EKEYREJECTED"* ]]; then
			fail "$name" "expected EKEYREJECTED, got ${res#MODTEST name=$name }"
		elif [ -n "$want" ] && ! grep -qF "$want" <<< "$seg"; then
			fail "$name" "rejected but the kernel did not print '$want'"
		else
			pass "$name"
		fi
		;;
	esac
}
