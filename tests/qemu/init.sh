#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the modsign QEMU test initramfs (busybox-static).  For each line
# "CASE FILE MODNAME ..." of /cases.txt, load /modules/FILE and print
#
#	MODTEST-BEGIN name=CASE
#	(whatever the kernel prints while loading it)
#	MODTEST name=CASE rc=... errno=...
#
# then reboot, which ends QEMU (-no-reboot).  Compressed modules are
# decompressed here, as kmod does in userspace, and then loaded: their
# signature covers the uncompressed module.
export PATH=/bin
mount -t proc proc /proc
# The kernel's messages of each case are read from its log buffer (dmesg
# -c) and printed before the case's result line, not left to the console:
# 7.x prints on the serial console asynchronously, often after the result.
dmesg -n 1
dmesg -c > /dev/null
echo "MODTEST-START"
while read -r name file modname rest; do
	echo "MODTEST-BEGIN name=$name"
	path=/modules/$file
	case $file in
	*.xz | *.gz)
		case $file in
		*.xz) xz -dc "$path" ;;
		*) gunzip -c "$path" ;;
		esac > /tmp/module.ko ||
			echo "MODTEST-NOTE name=$name decompression failed"
		path=/tmp/module.ko
		;;
	esac
	out=$(/modload "$name" "$path" "$modname")
	dmesg -c
	echo "$out"
	rm -f /tmp/module.ko
done < /cases.txt
echo "MODTEST-DONE"
reboot -f
sleep 5
poweroff -f
