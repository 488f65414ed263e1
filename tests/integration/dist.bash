# Loaded by the distribution flow's case files (attach.bats and
# attack-dist.bats: load dist, after ../common): what their cases start
# from.

# dist_setup [MODSIGND ARGS...], in setup after case_setup: an RSA-2048
# key and its certificate (rsa.pem, rsa.pem.crt), the case's own modsignd
# on $T/sock with that key as its default and ARGS (MODSIGN_SERVER names
# it), and tree/ as modules_install lays it out, two levels, three real
# modules stripped of any signature (kernel/fs/a.ko, kernel/fs/b.ko,
# kernel/net/c.ko), copied to pristine/.
dist_setup() {
	make_pem_key "$T/rsa.pem" rsa:2048
	start_daemon "$T/sock" --key "default=$T/rsa.pem" "$@"
	export MODSIGN_SERVER=unix:$T/sock
	mkdir -p tree/kernel/fs tree/kernel/net
	local mods=($(real_modules 3)) d i=0
	for d in kernel/fs/a.ko kernel/fs/b.ko kernel/net/c.ko; do
		cp "${mods[i++]}" "tree/$d"
		"$C" strip "tree/$d"
	done
	cp -a tree pristine
}
