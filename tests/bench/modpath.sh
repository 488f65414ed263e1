# The per-module path seen two more ways (sourced by tests/bench/run.sh,
# whose helpers it uses: make_key, timed, calc, log, die, ...):
#
# - The PKCS#11 module path (issue 32): the kernel's own sign-file, one
#   process per module as kbuild starts it, with a pkcs11: key through
#   OpenSSL's pkcs11-provider and build/modsign-pkcs11.so, against the same
#   sign-file with the key file, in the same run (BENCH_PKCS11_ONLY=1,
#   BENCH_PKCS11_MODULES=N, default 500).  RSA output is compared byte for
#   byte, every run verified.
# - One call (issue 34): the time and the page faults of one call, one at a
#   time, of an empty static program, modsign-client --version,
#   modsign-client sign-file, sign-file with the key file and sign-file
#   through the PKCS#11 module (BENCH_PERCALL_ONLY=1, BENCH_PERCALL_REPS=N,
#   default 100): what a call costs on this machine.

# P11 (build/modsign-pkcs11.so) and provider_dir (pkcs11-provider's
# directory, from bookworm-backports into the cache on Debian 12): the
# same as the module's bats suites.
. "$REPO/tests/integration/pkcs11.bash"

# The module the per-call rows sign: the median size.
median_module() {
	(cd "$W/stripped" && xargs -a "$W/list" ls -l) | sort -n -k5 | awk '{a[NR]=$NF} END {print a[int(NR/2)+1]}'
}

# A daemon for these runs alone, with the RSA file keys; sets DPID (timed's).
modpath_daemon() {
	modsignd_start "$W/modsignd-modpath.log" --listen "unix:$W/mp.sock" --allow uid:"$(id -u)" \
		--key rsa2048="$W/rsa2048.pem" --key rsa4096="$W/rsa4096.pem" || die "modsignd did not start"
	DPID=$MODSIGND_PID
	PIDS+=($DPID)
	export MODSIGN_SERVER=unix:$W/mp.sock
}

# The kernel's sign-file with a CONFIG_MODULE_SIG_KEY-style URI, through the
# provider (PROV, provider_dir) and the module.
run_p11_signfile() {
	OPENSSL_MODULES=$PROV PKCS11_PROVIDER_MODULE=$P11 \
		xargs -a "$W/p11.list" -P "$NPROC" -I{} "$SF" sha256 "pkcs11:object=$KEY" "$CERT" {}
}
run_p11_keyfile() { xargs -a "$W/p11.list" -P "$NPROC" -I{} "$SF" sha256 "$W/$KEY.pem" "$CERT" {}; }
run_p11_client() { xargs -a "$W/p11.list" -P "$NPROC" -I{} "$CLIENT" sign-file sha256 "modsign:$KEY" "$CERT" {}; }

declare -A P11R
pkcs11_view() {
	local k n m
	n=${BENCH_PKCS11_MODULES:-500}
	head -n "$n" "$W/list" >"$W/p11.list"
	P11_N=$(wc -l <"$W/p11.list")
	P11_MISSING=
	PROV=$(provider_dir) || { P11_MISSING="no pkcs11-provider (bookworm-backports unreachable)"; return 0; }
	[ -e "$P11" ] || die "no $P11 (make all)"
	for k in rsa2048 rsa4096; do
		KEY=$k CERT=$W/$k.crt
		# The same three runs twice, alternated: the machine's speed
		# drifts; the best of each counts.
		for m in 1 2; do
			timed "$W/p11.list" "$CERT" "$k sign-file, key file" run_p11_keyfile
			P11R[$k.file.$m]=$(calc %.1f "$P11_N / $SECS") P11R[$k.file.cpu.$m]=$BUSY_MS
			mv "$W/run" "$W/ref"
			timed "$W/p11.list" "$CERT" "$k sign-file through pkcs11-provider and modsign-pkcs11.so" run_p11_signfile
			P11R[$k.p11.$m]=$(calc %.1f "$P11_N / $SECS") P11R[$k.p11.cpu.$m]=$BUSY_MS P11R[$k.p11.dms.$m]=$DAEMON_MS
			# RSA PKCS#1 v1.5 is deterministic: the token path must give
			# sign-file's bytes (sign-file had only the pkcs11: URI, so
			# they came through the module).
			(cd "$W/ref" && xargs -a "$W/p11.list" sha256sum) >"$W/ref.sums"
			(cd "$W/run" && sha256sum -c --quiet "$W/ref.sums") >/dev/null 2>&1 ||
				die "$k: sign-file through the PKCS#11 module differs from sign-file with the key file"
			rm -rf "$W/ref"
			timed "$W/p11.list" "$CERT" "$k modsign-client sign-file" run_p11_client
			P11R[$k.client.$m]=$(calc %.1f "$P11_N / $SECS") P11R[$k.client.cpu.$m]=$BUSY_MS
		done
	done
}

p11_best() { # KEY WHAT: the better of the two runs, and its CPU per module
	local a=${P11R[$1.$2.1]} b=${P11R[$1.$2.2]}
	awk "BEGIN { exit !($a >= $b) }" && echo "$a | ${P11R[$1.$2.cpu.1]}" || echo "$b | ${P11R[$1.$2.cpu.2]}"
}

pkcs11_report() {
	echo '## The PKCS#11 module path: the kernel'"'"'s sign-file through modsign-pkcs11.so'
	echo
	if [ -n "$P11_MISSING" ]; then
		echo "Not measured: $P11_MISSING."
		return
	fi
	local k l f p c
	cat <<EOF
An unpatched kbuild with \`CONFIG_MODULE_SIG_KEY="pkcs11:object=KEY"\`: the
kernel's own sign-file (6.1's scripts/sign-file, unpatched) started once
per module, $NPROC at once (\`xargs -P $NPROC\`), over the first $P11_N modules;
OpenSSL loads pkcs11-provider (bookworm-backports, from the cache, through
\`OPENSSL_MODULES\`), which loads \`build/modsign-pkcs11.so\`
(\`PKCS11_PROVIDER_MODULE\`), which asks modsignd over its UNIX socket for
the signature of the digest. Against the same sign-file with the key file
and \`modsign-client sign-file\`, in the same run, alternated, two runs
each (the better counts); the output of the module path is byte for byte
that of sign-file with the key file, and every run is verified.

CPU per module: busy time of all CPUs (\`/proc/stat\`; other work on the machine
included, so read it against the load below), ms.

| key | how | modules/s | CPU per module | vs sign-file with the key file |
|---|---|---|---|---|
EOF
	for k in rsa2048 rsa4096; do
		case $k in rsa2048) l=RSA-2048 ;; *) l=RSA-4096 ;; esac
		f=$(p11_best $k file) p=$(p11_best $k p11) c=$(p11_best $k client)
		echo "| $l | sign-file, key file | ${f% |*} | ${f#*| } ms | 1.00x |"
		echo "| $l | sign-file, \`pkcs11:object=$k\` through the module | ${p% |*} | ${p#*| } ms | $(calc %.2fx "${p% |*} / ${f% |*}") |"
		echo "| $l | \`modsign-client sign-file\` (for comparison) | ${c% |*} | ${c#*| } ms | $(calc %.2fx "${c% |*} / ${f% |*}") |"
	done
	cat <<EOF

Every run, modules/s (first, second): RSA-2048 key file ${P11R[rsa2048.file.1]}, ${P11R[rsa2048.file.2]}; module ${P11R[rsa2048.p11.1]}, ${P11R[rsa2048.p11.2]}; client ${P11R[rsa2048.client.1]}, ${P11R[rsa2048.client.2]}. RSA-4096 key file ${P11R[rsa4096.file.1]}, ${P11R[rsa4096.file.2]}; module ${P11R[rsa4096.p11.1]}, ${P11R[rsa4096.p11.2]}; client ${P11R[rsa4096.client.1]}, ${P11R[rsa4096.client.2]}. The daemon's share of the module path's CPU, ms per module: RSA-2048 ${P11R[rsa2048.p11.dms.1]}, ${P11R[rsa2048.p11.dms.2]}; RSA-4096 ${P11R[rsa4096.p11.dms.1]}, ${P11R[rsa4096.p11.dms.2]}. One call's cost, each program alone: the next section.
EOF
}

# ---- one call ---------------------------------------------------------------

# percall NAME COMMAND...: COMMAND (which may name @N@, replaced by the
# call's number) REPS times one after the other: the mean wall time, then
# the median of minor and major page faults and of the peak RSS over the
# first 20 calls (/usr/bin/time: a second pass, its own start not counted).
declare -A PC
percall() {
	local name=$1 i s e c d0 d1
	shift
	s=$(now) d0=$(daemon_jiffies)
	# CPU time of the calls: the subshell's reaped children (cutime +
	# cstime), less sensitive to other work than the wall time.
	c=$( (for i in $(seq 1 "$PC_REPS"); do "${@//@N@/$i}" >/dev/null 2>>"$W/pc.err" || exit 1; done
		awk '{print $16 + $17}' "/proc/$BASHPID/stat")) || die "one call: $name"
	e=$(now) d1=$(daemon_jiffies)
	PC[$name.ms]=$(calc %.2f "1000 * ($e - $s) / $PC_REPS")
	PC[$name.cpu]=$(per_module_ms "$c" "$PC_REPS")
	PC[$name.dms]=$(per_module_ms "$d1 - $d0" "$PC_REPS")
	: >"$W/pc.$name"
	for i in $(seq 1 20); do
		/usr/bin/time -a -o "$W/pc.$name" -f '%R %F %M' "${@//@N@/t$i}" >/dev/null 2>>"$W/pc.err" || die "one call: $name"
	done
	PC[$name.minor]=$(median $(cut -d' ' -f1 "$W/pc.$name"))
	PC[$name.major]=$(median $(cut -d' ' -f2 "$W/pc.$name"))
	PC[$name.rss]=$(calc %.1f "$(median $(cut -d' ' -f3 "$W/pc.$name")) / 1024")
	log "one call, $name: ${PC[$name.ms]} ms, CPU ${PC[$name.cpu]} ms (daemon ${PC[$name.dms]} ms), ${PC[$name.minor]} minor and ${PC[$name.major]} major page faults"
}

percall_view() {
	local mod i
	PC_REPS=${BENCH_PERCALL_REPS:-100}
	[ -x /usr/bin/time ] || die "no /usr/bin/time (tests/install-deps.sh bench)"
	mod=$(median_module)
	PC_MOD=$(basename "$mod") PC_SIZE=$(stat -c %s "$W/stripped/$mod")
	rm -rf "$W/pc" && mkdir "$W/pc"
	for i in $(seq 1 "$PC_REPS") $(seq -f t%g 1 20); do
		for p in c s p; do cp "$W/stripped/$mod" "$W/pc/$p$i.ko"; done
	done
	PROV=${PROV:-$(provider_dir)} || PROV=
	percall empty "$EMPTY"
	percall version "$CLIENT" --version
	percall client "$CLIENT" sign-file sha256 modsign:rsa4096 "$W/rsa4096.crt" "$W/pc/c@N@.ko"
	percall signfile "$SF" sha256 "$W/rsa4096.pem" "$W/rsa4096.crt" "$W/pc/s@N@.ko"
	[ -z "$PROV" ] || OPENSSL_MODULES=$PROV PKCS11_PROVIDER_MODULE=$P11 \
		percall p11 "$SF" sha256 pkcs11:object=rsa4096 "$W/rsa4096.crt" "$W/pc/p@N@.ko"
	"$CLIENT" verify --cert "$W/rsa4096.crt" "$W"/pc/*.ko >"$W/verify.log" 2>&1 ||
		{ tail -n 5 "$W/verify.log" >&2; die "one call: verification"; }
	# Twin: a signed module changed by one byte must not verify.
	printf '\1' | dd of="$W/pc/c1.ko" bs=1 seek=100 conv=notrunc status=none
	"$CLIENT" verify --cert "$W/rsa4096.crt" "$W/pc/c1.ko" >/dev/null 2>&1 &&
		die "one call: a changed module verified"
	return 0
}

percall_report() { # LOAD-AT-START
	local r n
	cat <<EOF
## One call of the per-module path: page faults and time

What one call costs on this machine, each program alone, one call after
the other (no parallelism): \`$PC_MOD\` ($PC_SIZE bytes, the median size),
RSA-4096, sha256. Time: the mean wall time of $PC_REPS calls (the shell's fork and
exec included), and their mean CPU time (user + system of the calls, from
the reaping shell's \`cutime\` + \`cstime\`; modsignd's, from its
\`/proc/PID/stat\`, apart), which other work on the machine moves less. Page faults and peak RSS: the median of 20 calls under
\`/usr/bin/time -f '%R %F %M'\` (minor: a page mapped without I/O, which on
a virtual machine costs a trap to the host; major: read from the disk).

| program | ms per call | CPU ms per call | of modsignd | minor page faults | major page faults | peak RSS, MiB |
|---|---|---|---|---|---|---|
EOF
	for r in "empty|an empty statically linked program (\`-static-pie\`)" \
		"version|\`modsign-client --version\`" \
		"client|\`modsign-client sign-file\` (the daemon signs)" \
		"signfile|kernel \`sign-file\`, key file" \
		"p11|kernel \`sign-file\`, \`pkcs11:\` key through pkcs11-provider and modsign-pkcs11.so"; do
		n=${r%%|*}
		[ -n "${PC[$n.ms]:-}" ] || continue
		echo "| ${r#*|} | ${PC[$n.ms]} | ${PC[$n.cpu]} | ${PC[$n.dms]} | ${PC[$n.minor]} | ${PC[$n.major]} | ${PC[$n.rss]} |"
	done
	cat <<EOF

Beyond the empty program, in CPU time: \`modsign-client --version\` costs $(calc %.2f "${PC[version.cpu]} - ${PC[empty.cpu]}") ms and
$(calc %d "${PC[version.minor]} - ${PC[empty.minor]}") minor faults more (dynamic loading, relocation, library
start-up), the signing call $(calc %.2f "${PC[client.cpu]} - ${PC[version.cpu]}") ms and $(calc %d "${PC[client.minor]} - ${PC[version.minor]}") faults more than that (plus
the daemon's ${PC[client.dms]} ms); sign-file with the key file $(calc %.2f "${PC[signfile.cpu]} - ${PC[empty.cpu]}") ms and $(calc %d "${PC[signfile.minor]} - ${PC[empty.minor]}") faults.
The programs and libraries are in the page cache, hence no major faults.
Load average ($NPROC CPUs) at the start of these calls: $1; at their end:
$(cut -d' ' -f1-3 /proc/loadavg); the times move with it, the faults do not.
EOF
}

# BENCH_PKCS11_ONLY / BENCH_PERCALL_ONLY: those sections alone, each in
# place of its namesake in BENCH_OUT.
# The full run calls it too, after its report, with both set.
modpath_only() {
	[ -e "$W/rsa2048.pem" ] || make_key rsa2048 -newkey rsa:2048
	[ -e "$W/rsa4096.pem" ] || make_key rsa4096 -newkey rsa:4096
	modpath_daemon
	local load0
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	if [ -n "${BENCH_PKCS11_ONLY:-}" ]; then
		pkcs11_view
		{ pkcs11_report; echo; echo "Load average at the start: $load0; at the end: $(cut -d' ' -f1-3 /proc/loadavg) (${NPROC} CPUs)."; } >"$W/p11.md"
		put_section "$W/p11.md"
	fi
	if [ -n "${BENCH_PERCALL_ONLY:-}" ]; then
		load0=$(cut -d' ' -f1-3 /proc/loadavg)
		percall_view
		percall_report "$load0" >"$W/percall.md"
		put_section "$W/percall.md"
	fi
}
