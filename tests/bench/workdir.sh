# Sourced by the bench scripts: bench_workdir NAME makes $W, a scratch
# directory on tmpfs when it has room (3 GB, the stripped modules), else
# under $B/bench, and a trap that kills $PIDS and removes $W at exit
# (kept with BENCH_KEEP=1).
bench_workdir() {
	if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR==2 {print $4}')" -gt 3000000 ]; then
		W=$(mktemp -d "/dev/shm/modsign-$1.XXXXXX")
	else
		mkdir -p "$B/bench" && W=$(mktemp -d "$B/bench/$1.XXXXXX")
	fi
	PIDS=()
	trap bench_cleanup EXIT
}

bench_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${BENCH_KEEP:-}" ] && echo "kept $W" >&2 || rm -rf "$W"
}
