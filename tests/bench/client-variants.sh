#!/bin/bash
# One client or two: the per-module path of make bench (one
# `modsign-client sign-file` process per module, xargs -P NPROC, against a
# running daemon) for several client binaries, in the same run, the
# variants interleaved, REPS times; prints the median rate and CPU per
# module of each.  docs/PERFORMANCE.md "One client or two" comes from it.
#
#   tests/bench/client-variants.sh NAME=BINARY...
#
# Environment: MODSIGND, VARIANT_TOOL (a client that strips and verifies),
# VARIANT_MODULES=N (default 500), VARIANT_REPS=N (default 7),
# VARIANT_KEYS="rsa4096 rsa2048", VARIANT_JOBS="NPROC 1".
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
NMOD=${VARIANT_MODULES:-500}
REPS=${VARIANT_REPS:-7}
KEYS=${VARIANT_KEYS:-rsa4096 rsa2048}
JOBS=${VARIANT_JOBS:-$(nproc) 1}
MODSIGND=$(realpath "${MODSIGND:-$B/modsignd}")
# strips and verifies (a client that has those commands itself)
TOOL=$(realpath "${VARIANT_TOOL:-$B/modsign-client}")
W=$(mktemp -d /dev/shm/modsign-variants.XXXXXX)
DPID=
trap '[ -n "$DPID" ] && kill $DPID 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT

declare -A BIN
NAMES=()
for a in "$@"; do
	NAMES+=("${a%%=*}")
	cp "${a#*=}" "$W/${a%%=*}"
	BIN[${a%%=*}]=$W/${a%%=*}
done
cp "$MODSIGND" "$W/modsignd"
printf 'int main(void) { return 0; }\n' >"$W/empty.c"
gcc -O2 -static-pie -o "$W/empty" "$W/empty.c"

"$REPO/tests/fixtures.sh" >/dev/null
(cd "$B/fixtures/modules" && find . -name '*.ko' | sort) >"$W/all.list"
sed -n "1,${NMOD}p" "$W/all.list" >"$W/list"
mkdir "$W/stripped"
(cd "$B/fixtures/modules" && xargs -a "$W/list" cp --parents -t "$W/stripped")
(cd "$W/stripped" && xargs -a "$W/list" "$TOOL" strip)

for k in $KEYS; do
	case $k in rsa4096) a=rsa:4096 ;; rsa2048) a=rsa:2048 ;; esac
	openssl req -new -nodes -x509 -batch -days 3 -sha256 -subj "/CN=variants $k" \
		-addext "keyUsage=digitalSignature" -newkey "$a" -keyout "$W/$k.pem" -out "$W/$k.crt" 2>/dev/null
	cat "$W/$k.crt" >>"$W/$k.pem"
done
args=(--listen "unix:$W/sock" --allow uid:"$(id -u)")
for k in $KEYS; do args+=(--key "$k=$W/$k.pem"); done
"$W/modsignd" "${args[@]}" 2>"$W/modsignd.log" &
DPID=$!
for _ in $(seq 1 400); do [ -S "$W/sock" ] && break; sleep 0.05; done
export MODSIGN_SERVER=unix:$W/sock

busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
now() { date +%s.%N; }
declare -A RATE CPU CCPU DCPU
daemon() { awk '{print $14 + $15}' "/proc/$DPID/stat"; }
# user + system seconds of the shell's children, from `times`
# (a builtin with a redirection runs in this shell; in a pipe it would not)
children() {
	times >"$W/times"
	awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += 60 * t[1] + t[2] } print s }' "$W/times"
}
one() { # KEY JOBS NAME
	local k=$1 j=$2 n=$3 s e b0 b1 d0 d1 c
	rm -rf "$W/run" && cp -r "$W/stripped" "$W/run"
	b0=$(busy); d0=$(daemon); s=$(now)
	if [ "$n" = empty ]; then
		c=$(cd "$W/run" && xargs -a "$W/list" -P "$j" -I{} "$W/empty" {} && children)
	else
		c=$(cd "$W/run" && xargs -a "$W/list" -P "$j" -I{} "${BIN[$n]}" sign-file sha512 \
			"modsign:$k" "$W/$k.crt" {} && children)
	fi
	e=$(now); b1=$(busy); d1=$(daemon)
	CCPU[$k.$j.$n]+="$(awk "BEGIN {printf \"%.3f\", 1000 * $c / $NMOD}") "
	DCPU[$k.$j.$n]+="$(awk "BEGIN {printf \"%.3f\", 1000 * ($d1 - $d0) / $(getconf CLK_TCK) / $NMOD}") "
	if [ "$n" != empty ]; then
		(cd "$W/run" && xargs -a "$W/list" "$TOOL" verify --cert "$W/$k.crt" >/dev/null) ||
			{ echo "variants: $n did not sign" >&2; exit 1; }
	fi
	RATE[$k.$j.$n]+="$(awk "BEGIN {printf \"%.1f\", $NMOD / ($e - $s)}") "
	CPU[$k.$j.$n]+="$(awk "BEGIN {printf \"%.3f\", 1000 * ($b1 - $b0) / $(getconf CLK_TCK) / $NMOD}") "
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

all=("${NAMES[@]}" empty)
for k in $KEYS; do
	for j in $JOBS; do
		for r in $(seq 1 "$REPS"); do
			# rotate the order, so that no variant always runs first
			for i in $(seq 0 $((${#all[@]} - 1))); do
				one "$k" "$j" "${all[$(((i + r) % ${#all[@]}))]}"
			done
		done
	done
done

echo "# $NMOD modules, sign-file sha512, $REPS runs each, medians; $(nproc) CPUs"
printf '| key | jobs | client | modules/s | ms per module | CPU ms per module: machine | client | daemon | runs (modules/s) |\n|---|---|---|---|---|---|---|---|---|\n'
for k in $KEYS; do
	for j in $JOBS; do
		for n in "${all[@]}"; do
			m=$(echo "${RATE[$k.$j.$n]}" | median)
			printf '| %s | %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %s|\n' "$k" "$j" "$n" "$m" \
				"$(awk "BEGIN {print 1000 / $m}")" "$(echo "${CPU[$k.$j.$n]}" | median)" \
				"$(echo "${CCPU[$k.$j.$n]}" | median)" "$(echo "${DCPU[$k.$j.$n]}" | median)" \
				"${RATE[$k.$j.$n]}"
		done
	done
done
