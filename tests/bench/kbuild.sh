# The kbuild view of make bench (sourced by tests/bench/run.sh, which
# provides W, B, CLIENT, MODSIGND, NPROC, KDIR, the stripped modules and
# the key files $W/rsa2048.* and $W/rsa4096.*, and log, die, now, calc,
# speed_of and met).
#
# `make -j$NPROC modules_install` of the patched test kernel
# (tests/qemu/build-kernel.sh) with real modules: Debian's, stripped, as an
# external module tree (M=) whose modules.order lists them, which kbuild
# installs, signs and compresses as it would its own.  Four ways to sign
# (none, scripts/sign-file, MODULE_SIGN_CMD with modsign-client once per
# module, MODULE_SIGN_BATCH_CMD with one modsign-client for all), two
# compressions (off, xz), two file keys (RSA-4096, RSA-2048); every run's
# modules are verified afterwards.
#
# Environment: BENCH_KBUILD_MODULES (default 1000), BENCH_KBUILD_ROUNDS
# (default 3; the median is reported).

KB_N=${BENCH_KBUILD_MODULES:-1000}
KB_ROUNDS=${BENCH_KBUILD_ROUNDS:-3}
KB_KEYS=(rsa4096 rsa2048)
KB_COMPS=(off xz)
KB_HOWS=(off signfile percmd batch)
declare -gA KB_SECS KB_CPU KB_SPEED KB_ALLSECS KB_ALLCPU KB_CALL KB_CALLCPU KB_ALLCALL KB_ALLCALLCPU

# The test kernel's tree as symlinks, with certs/signing_key.x509 a file
# of its own (set per key by kb_cert): the tree's own certificate belongs
# to a one-time key that is gone, and the tree itself is left alone
# (tests/qemu/run.sh uses it).  kbuild resolves the top Makefile's link, so
# it treats the copy as an O= build directory of the real tree: it reads
# the real tree (scripts, the makefiles) and modules_install writes only
# under INSTALL_MOD_PATH.  The files a QEMU run rewrites are copied.
shadow_tree() {
	local f
	cp -as "$KDIR" "$W/ktree" || die "cp -as $KDIR"
	for f in modules.order modules.builtin modules.builtin.modinfo include/config/auto.conf \
		include/config/kernel.release; do
		if [ -e "$KDIR/$f" ]; then
			cp --remove-destination "$KDIR/$f" "$W/ktree/$f" || die "copy $f"
		fi
	done
}

kb_cert() { # KEY: its certificate is the one the tree embeds
	rm -f "$W/ktree/certs/signing_key.x509"
	openssl x509 -in "$W/$1.crt" -outform DER -out "$W/ktree/certs/signing_key.x509" ||
		die "certs/signing_key.x509"
}

# One daemon per key, whose default key it is: kbuild hands the client the
# certificate-only CONFIG_MODULE_SIG_KEY, which names no daemon key.
kb_daemons() {
	local k
	for k in "${KB_KEYS[@]}"; do
		modsignd_start "$W/kb-$k.log" --listen "unix:$W/kb-$k.sock" \
			--key default="$W/$k.pem" --allow uid:"$(id -u)" || die "modsignd for $k"
		KB_DPID[$k]=$MODSIGND_PID
		PIDS+=($MODSIGND_PID)
	done
}

# kb_args KEY COMP HOW: the make arguments, as a user would configure it
# (docs/KERNEL.md): for modsign CONFIG_MODULE_SIG_KEY names the
# certificate, for sign-file the key file.
kb_args() {
	local key=$1 comp=$2 how=$3
	KB_ARGS=(CONFIG_MODULE_COMPRESS_GZIP= CONFIG_MODULE_COMPRESS_ZSTD= MODULE_SIGN_CMD=)
	case $comp in
	off) KB_ARGS+=(CONFIG_MODULE_COMPRESS_XZ=) ;;
	xz) KB_ARGS+=(CONFIG_MODULE_COMPRESS_XZ=y) ;;
	esac
	case $how in
	off) KB_ARGS+=(CONFIG_MODULE_SIG_ALL=) ;;
	signfile) KB_ARGS+=(CONFIG_MODULE_SIG_KEY="$W/$key.pem") ;;
	percmd) KB_ARGS+=(CONFIG_MODULE_SIG_KEY="$W/$key.crt" MODULE_SIGN_CMD="$CLIENT sign-file") ;;
	# The batch call timed on its own (/usr/bin/time, which passes its
	# status on): see kb_call.
	batch) KB_ARGS+=(CONFIG_MODULE_SIG_KEY="$W/$key.crt"
		MODULE_SIGN_BATCH_CMD="/usr/bin/time -o $W/kb.call -f '%e %U %S' $CLIENT sign-file --batch") ;;
	esac
}

# kb_verify KEY COMP HOW: every module installed (compressed as asked) and
# signed by KEY, or, signing off, none signed.  kbuild ignores a failed
# signing command for M= modules, so only this check tells.
kb_verify() {
	local key=$1 comp=$2 how=$3 files ok unsigned n
	rm -rf "$W/kbv"
	mkdir "$W/kbv"
	case $comp in
	off) find "$W/kbx" -name '*.ko' >"$W/kbv.list" ;;
	xz)
		[ -z "$(find "$W/kbx" -name '*.ko')" ] || die "kbuild $key $comp $how: uncompressed modules left"
		find "$W/kbx" -name '*.ko.xz' -exec cp -t "$W/kbv" {} +
		xz -d "$W/kbv"/*.xz || die "kbuild $key $comp $how: xz -d"
		find "$W/kbv" -name '*.ko' >"$W/kbv.list"
		;;
	esac
	n=$(wc -l <"$W/kbv.list")
	[ "$n" -eq "$KB_N" ] || die "kbuild $key $comp $how: $n of $KB_N modules installed"
	mapfile -t files <"$W/kbv.list"
	ok=$("$CLIENT" verify --cert "$W/$key.crt" "${files[@]}" 2>"$W/kbv.err" | grep -c ': OK (') || true
	if [ "$how" = off ]; then
		unsigned=$(grep -c ': not signed$' "$W/kbv.err") || true
		[ "$ok" -eq 0 ] && [ "$unsigned" -eq "$n" ] ||
			die "kbuild $key $comp off: $ok signed, $unsigned of $n unsigned"
	else
		[ "$ok" -eq "$n" ] || die "kbuild $key $comp $how: $ok of $n modules verify"
	fi
	rm -rf "$W/kbv"
}

# kb_run KEY COMP HOW: one make -j$NPROC modules_install into $W/kbx; its
# wall time, and the CPU of the make process tree (user + system of make
# and every process it waited for: the signing commands, not the daemon).
kb_run() {
	local key=$1 comp=$2 how=$3 s e cpu
	kb_args "$key" "$comp" "$how"
	rm -rf "$W/kbx" "$W/kb.call"
	s=$(now)
	MODSIGN_SERVER=unix:$W/kb-$key.sock /usr/bin/time -f '%U %S' -o "$W/kb.time" \
		make -C "$W/ktree" -s -j"$NPROC" M="$W/kbext" DEPMOD=true modules_install \
		INSTALL_MOD_PATH="$W/kbx" "${KB_ARGS[@]}" >"$W/kb.log" 2>&1 ||
		{ tail -n 5 "$W/kb.log" >&2; die "modules_install ($key $comp $how)"; }
	e=$(now)
	grep -q 'warning: .* failed' "$W/kb.log" && { tail -n 5 "$W/kb.log" >&2; die "kbuild $key $comp $how: the signing command failed"; }
	cpu=$(awk 'END { printf "%.2f", $1 + $2 }' "$W/kb.time")
	kb_verify "$key" "$comp" "$how"
	KB_ALLSECS[$key.$comp.$how]="${KB_ALLSECS[$key.$comp.$how]:-} $(calc %.3f "$e - $s")"
	KB_ALLCPU[$key.$comp.$how]="${KB_ALLCPU[$key.$comp.$how]:-} $cpu"
	if [ "$how" = batch ]; then
		[ -s "$W/kb.call" ] || die "kbuild $key $comp batch: the batch command was not called"
		KB_ALLCALL[$key.$comp]="${KB_ALLCALL[$key.$comp]:-} $(awk 'END { print $1 }' "$W/kb.call")"
		KB_ALLCALLCPU[$key.$comp]="${KB_ALLCALLCPU[$key.$comp]:-} $(awk 'END { printf "%.2f", $2 + $3 }' "$W/kb.call")"
	fi
	log "kbuild $key $comp $how: $(calc %.2f "$e - $s") s, make tree CPU $cpu s"
}

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

kbuild_view() {
	local k c h round
	KB_DONE=
	if [ -n "${BENCH_NO_KBUILD:-}" ]; then KBUILD_NOTE="skipped (BENCH_NO_KBUILD)"; return; fi
	# tests/qemu/run.sh relinks vmlinux with new certificates on every run:
	# give a build in progress some time to finish.
	for _ in $(seq 1 90); do
		[ -f "$KDIR/vmlinux" ] && [ -s "$KDIR/modules.order" ] && break
		[ -d "$KDIR" ] || break
		sleep 2
	done
	if [ ! -f "$KDIR/vmlinux" ] || [ ! -s "$KDIR/modules.order" ]; then
		KBUILD_NOTE="skipped: no built test kernel in $MODSIGN_CACHE/kernel-6.1-*/ (tests/qemu/run.sh builds one)"
		return
	fi
	grep -q MODULE_SIGN_BATCH_CMD "$KDIR/scripts/Makefile.modinst" ||
		die "$KDIR lacks kernel-patches/0004 (run tests/qemu/build-kernel.sh)"
	head -n "$KB_N" "$W/all.list" >"$W/kb.list"
	[ "$(wc -l <"$W/kb.list")" -eq "$KB_N" ] || die "fewer than $KB_N modules"
	mkdir "$W/kbext"
	(cd "$B/fixtures/modules" && xargs -a "$W/kb.list" cp --parents -t "$W/kbext")
	(cd "$W/kbext" && xargs -a "$W/kb.list" "$CLIENT" strip >/dev/null)
	sed "s|^\./|$W/kbext/|" "$W/kb.list" >"$W/kbext/modules.order"
	KB_MB=$(du -sm "$W/kbext" | cut -f1)
	shadow_tree
	declare -gA KB_DPID
	kb_daemons
	for k in "${KB_KEYS[@]}"; do KB_SPEED[$k]=$(speed_of "$k"); done
	# Interleaved: every way in every round, so that a change of the load
	# on the machine weighs on all of them alike.
	for round in $(seq 1 "$KB_ROUNDS"); do
		for k in "${KB_KEYS[@]}"; do
			kb_cert "$k"
			for c in "${KB_COMPS[@]}"; do
				for h in "${KB_HOWS[@]}"; do kb_run "$k" "$c" "$h"; done
			done
		done
	done
	# The crypto floor: openssl speed around the runs; other work can only
	# lower it, so the higher of the two.
	for k in "${KB_KEYS[@]}"; do
		KB_SPEED[$k]=$(calc %.1f "$(speed_of "$k") > ${KB_SPEED[$k]} ? $(speed_of "$k") : ${KB_SPEED[$k]}")
		for c in "${KB_COMPS[@]}"; do
			for h in "${KB_HOWS[@]}"; do
				KB_SECS[$k.$c.$h]=$(median "${KB_ALLSECS[$k.$c.$h]}")
				KB_CPU[$k.$c.$h]=$(median "${KB_ALLCPU[$k.$c.$h]}")
			done
			KB_CALL[$k.$c]=$(median "${KB_ALLCALL[$k.$c]}")
			KB_CALLCPU[$k.$c]=$(median "${KB_ALLCALLCPU[$k.$c]}")
		done
	done
	for k in "${KB_KEYS[@]}"; do kill "${KB_DPID[$k]}" 2>/dev/null || true; done
	rm -rf "$W/kbx" "$W/kbext" "$W/ktree"
	KB_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
	KB_DONE=yes
}

kb_label() {
	case $1 in
	off) echo "unsigned (\`CONFIG_MODULE_SIG_ALL=\`)" ;;
	signfile) echo "scripts/sign-file, once per module" ;;
	percmd) echo "\`MODULE_SIGN_CMD\`: modsign-client sign-file, once per module" ;;
	batch) echo "\`MODULE_SIGN_BATCH_CMD\`: modsign-client sign-file --batch, once" ;;
	esac
}

kb_share() { calc %.2f "${KB_SECS[$1.$2.$3]} - ${KB_SECS[$1.$2.off]}"; }   # KEY COMP HOW
kb_scpu() { calc %.2f "${KB_CPU[$1.$2.$3]} - ${KB_CPU[$1.$2.off]}"; }      # KEY COMP HOW

# kb_call KEY COMP, kb_callcpu KEY COMP: the batch's signing share and the
# build's signing CPU taken from the one call itself: its wall time (make
# runs nothing beside it, so that is what it adds to the run) and its user
# + system CPU.  The difference of two runs cannot tell them: it is within
# the runs' noise, and the unsigned run pays for a shell per module
# (kbuild's no-op cmd_sign, ":") that the batch path does not run.
kb_call() { echo "${KB_CALL[$1.$2]}"; }
kb_callcpu() { echo "${KB_CALLCPU[$1.$2]}"; }
kb_floor() { calc %.3f "$KB_N / ${KB_SPEED[$1]}"; }                       # KEY

# The section of docs/PERFORMANCE.md, on stdout.
kbuild_report() {
	local k c h l
	echo "## The kbuild view: \`make -j$NPROC modules_install\` of $KB_N modules"
	echo
	if [ -z "$KB_DONE" ]; then
		echo "$KBUILD_NOTE."
		return
	fi
	cat <<EOF
The first $KB_N of Debian's modules by path ($KB_MB MB, signatures
stripped) installed by the patched test kernel's (\`tests/qemu/build-kernel.sh\`,
kernel-patches 0001-0004) \`make -j$NPROC M=DIR modules_install\`, DIR an
external module tree whose \`modules.order\` lists them: kbuild installs,
signs and compresses them as it would its own, under \`extra/\`.  Configured
as a user would (docs/KERNEL.md): sign-file with \`CONFIG_MODULE_SIG_KEY\`
naming the key file; modsign with it naming the certificate and
\`MODULE_SIGN_CMD="modsign-client sign-file"\` or
\`MODULE_SIGN_BATCH_CMD="modsign-client sign-file --batch"\`, modsignd (its
default workers, one per CPU) holding the same key file.  Compression off or
\`CONFIG_MODULE_COMPRESS_XZ=y\` on the command line; depmod left out
(\`DEPMOD=true\`).  After every run each installed module is decompressed
if need be and checked with \`modsign-client verify --cert\` (unsigned: none
signed); a failure stops the bench.  $KB_ROUNDS round(s), the ways
interleaved; medians.

- *signing share*: the run's seconds minus the unsigned run's, same key and
  compression.
- *crypto floor*: $KB_N modules divided by \`openssl speed -multi $NPROC\`
  signatures per second, measured in this run (the higher of before and
  after the runs): RSA-4096 ${KB_SPEED[rsa4096]}/s, $(kb_floor rsa4096) s;
  RSA-2048 ${KB_SPEED[rsa2048]}/s, $(kb_floor rsa2048) s.
- *the build's signing CPU*: user + system CPU of the make process tree
  (make and every process it waited for, \`/usr/bin/time\`; modsignd is not
  in it) minus the unsigned run's.
- *the call* (batch only): the one \`MODULE_SIGN_BATCH_CMD\` call timed by
  \`/usr/bin/time\` around it, wall and user + system CPU.  make runs
  nothing beside it, so its wall time is what it adds to the build; the
  difference of two runs cannot show it, being within their noise, and the
  unsigned run pays for one shell per module (kbuild's no-op \`cmd_sign\`)
  that the batch path does not start.  The targets take the batch's share
  and CPU from the call.

| key | compression | signing | seconds | signing share | share / crypto floor | the build's signing CPU |
|---|---|---|---|---|---|---|
EOF
	for k in "${KB_KEYS[@]}"; do
		case $k in rsa2048) l=RSA-2048 ;; *) l=RSA-4096 ;; esac
		for c in "${KB_COMPS[@]}"; do
			for h in "${KB_HOWS[@]}"; do
				if [ "$h" = batch ]; then
					echo "| $l | $c | $(kb_label $h) | ${KB_SECS[$k.$c.$h]} | $(kb_share $k $c $h) s; the call: $(kb_call $k $c) s | $(calc %.2fx "$(kb_call $k $c) / $(kb_floor $k)") (the call) | $(kb_scpu $k $c $h) s; the call: $(kb_callcpu $k $c) s |"
				elif [ "$h" = off ]; then
					echo "| $l | $c | $(kb_label $h) | ${KB_SECS[$k.$c.$h]} | | | (make tree: ${KB_CPU[$k.$c.$h]} s) |"
				else
					echo "| $l | $c | $(kb_label $h) | ${KB_SECS[$k.$c.$h]} | $(kb_share $k $c $h) s | $(calc %.2fx "$(kb_share $k $c $h) / $(kb_floor $k)") | $(kb_scpu $k $c $h) s |"
				fi
			done
		done
	done
	cat <<EOF

Targets (issue 16), for each compression:

| target | off | xz |
|---|---|---|
EOF
	kb_target "RSA-4096: batch signing share ≤ 1.25x the crypto floor" \
		'$(kb_call rsa4096 $c) / $(kb_floor rsa4096)' '%.2fx' '<= 1.25'
	kb_target "RSA-4096: batch signing share ≥ 3.5x smaller than sign-file's" \
		'$(kb_share rsa4096 $c signfile) / $(kb_call rsa4096 $c)' '%.1fx smaller' '>= 3.5'
	kb_target "RSA-4096: the build's signing CPU ≤ a tenth of sign-file's" \
		'$(kb_callcpu rsa4096 $c) / $(kb_scpu rsa4096 $c signfile)' '%.3f of it' '<= 0.1'
	kb_target "RSA-2048: batch signing share ≥ 10x smaller than sign-file's" \
		'$(kb_share rsa2048 $c signfile) / $(kb_call rsa2048 $c)' '%.1fx smaller' '>= 10'
	cat <<EOF

Load average when the kbuild runs ended: $KB_LOAD (other work on the
$NPROC CPUs lengthens every run; a signing share is the difference of two
runs' medians).
EOF
}

# kb_target TEXT EXPR FORMAT CONDITION: one row; EXPR is evaluated per
# compression $c.  A batch call timed at 0 s makes a ratio meaningless:
# said, not judged.
kb_target() {
	local text=$1 expr=$2 fmt=$3 cond=$4 c v row="| $1 |"
	for c in "${KB_COMPS[@]}"; do
		if awk "BEGIN { exit !($(kb_call rsa4096 $c) <= 0 || $(kb_call rsa2048 $c) <= 0) }"; then
			row="$row undetermined (a batch call of 0 s) |"
			continue
		fi
		v=$(eval "calc %.4f \"$expr\"")
		row="$row $(calc "$fmt" "$v") $(met "$v $cond") |"
	done
	echo "$row"
}
