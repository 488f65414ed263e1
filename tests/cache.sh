# Test material that depends only on its inputs (kernel trees and builds,
# Debian roots, guest images, real modules) is made once per machine and
# kept outside the clone, so that a fresh clone on the same machine reuses
# it.  Each thing lives in $MODSIGN_CACHE/NAME-KEY, KEY a hash of every
# input; a changed input is a new KEY, hence a new build, and the old
# directories of that NAME are removed once the new one is complete and
# no one uses them (cache_done).
# Functions only; sourcing this file starts nothing.
#
#   MODSIGN_CACHE   default /var/cache/modsign-tests (root: the tests run
#                   as root), else ${XDG_CACHE_HOME:-~/.cache}/modsign-tests

if [ -z "${MODSIGN_CACHE:-}" ]; then
	if [ "$(id -u)" -eq 0 ]; then
		MODSIGN_CACHE=/var/cache/modsign-tests
	else
		MODSIGN_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/modsign-tests
	fi
fi

# cache_key: the 16 hex digits naming stdin (the inputs, concatenated).
cache_key() { sha256sum | cut -c1-16; }

# cache_dir NAME KEY: the directory for NAME built from KEY.
cache_dir() { echo "$MODSIGN_CACHE/$1-$2"; }

# cache_ready DIR: DIR was completed (cache_done) and may be used as is.
# Marks it used now (its .complete's time), for cache_done's grace period.
cache_ready() {
	[ -f "$1/.complete" ] || return 1
	touch -c "$1/.complete" 2> /dev/null
	return 0
}

# cache_use DIR: hold a shared lock on DIR (fd 8) for the rest of the
# calling shell, so that no cache_done drops it while it is used; fails
# when DIR is not complete (it was dropped before the lock was taken).
cache_use() {
	# The braces: a bare `exec 8<F 2>/dev/null` would silence the
	# caller's stderr for good (every later message of tests/vm/run.sh
	# and tests/release/chroot.sh was lost so).
	{ exec 8<"$1/.complete"; } 2> /dev/null || return 1
	flock -s 8
}

# cache_done NAME KEY: mark NAME-KEY complete and drop NAME's other keys
# that no one uses: another run (a worktree with other inputs, a second
# clone) may be using an older key right now.  A key is kept while a
# cache_use lock is held on it, or when it was used (cache_ready) in the
# last CACHE_GRACE_MIN minutes, which covers users that hold no lock (the
# fixtures the suites read through build/fixtures for a whole run).  One
# dropped is renamed under an exclusive lock, then removed, so that a
# user arriving late finds it absent, never half-removed.  The caller
# holds cache_lock NAME, so nobody is building another key of NAME.
CACHE_GRACE_MIN=${CACHE_GRACE_MIN:-180}
cache_done() {
	local d trash
	touch "$MODSIGN_CACHE/$1-$2/.complete"
	for d in "$MODSIGN_CACHE/$1"-*; do
		[ "$d" = "$MODSIGN_CACHE/$1-$2" ] && continue
		[[ ${d#"$MODSIGN_CACHE/$1"-} =~ ^[0-9a-f]{16}$ ]] || continue
		trash=$MODSIGN_CACHE/.dropped-${d##*/}-$$
		if [ -f "$d/.complete" ]; then
			[ -z "$(find "$d/.complete" -mmin -"$CACHE_GRACE_MIN")" ] || continue
			flock -n -x "$d/.complete" mv "$d" "$trash" 2> /dev/null || continue
		else
			mv "$d" "$trash" || continue
		fi
		rm -rf "$trash"
	done
}

# cache_begin NAME KEY: take NAME's lock (cache_lock) and set CACHE_DIR to
# NAME-KEY's directory.  Returns 0 when it is complete (use it as is), else
# 1 with CACHE_DIR empty and ready to be made: what a killed run left there
# (mmdebstrap's /proc and /sys mounts, half a root) is gone.
cache_begin() {
	CACHE_DIR=$(cache_dir "$1" "$2")
	cache_lock "$1"
	cache_ready "$CACHE_DIR" && return 0
	{ findmnt -rno TARGET | grep "^$CACHE_DIR/" || true; } | sort -r | xargs -r umount -l
	rm -rf "$CACHE_DIR" && mkdir -p "$CACHE_DIR"
	return 1
}

# cache_lock NAME: hold an exclusive lock on NAME for the rest of the
# calling shell (fd 9), so that two suites building the same thing side by
# side build it once.
cache_lock() {
	mkdir -p "$MODSIGN_CACHE"
	exec 9>"$MODSIGN_CACHE/.$1.lock"
	flock 9
}

# debian_mirrors [SUITE...]: "deb URI SUITE main" lines for the archive
# apt already uses (its deb822 sources' first Debian URI), for SUITEs
# (default: the suites those sources name).  For mmdebstrap and for a
# private apt configuration; this machine's own sources are never changed.
debian_mirrors() {
	local uri
	# A root made by mmdebstrap (tests/release/root.sh) has a one-line
	# sources.list instead.
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		uri=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' \
			/etc/apt/sources.list.d/debian.sources)
	else
		uri=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list)
	fi
	if [ $# -eq 0 ]; then
		awk '/^URIs:/ { u = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) print "deb " u " " $i " main" }' \
			/etc/apt/sources.list.d/debian.sources
		return
	fi
	local s
	for s in "$@"; do echo "deb $uri $s main"; done
}

# apt_suite SUITE[,SUITE...] apt-get|apt-cache ARGS...: the program run
# with a private apt configuration for those suites, kept in
# $MODSIGN_CACHE/apt-SUITES (lists refreshed daily); e.g. apt-cache show.
apt_suite() {
	local suites=$1 prog=$2 dir opts
	shift 2
	dir=$MODSIGN_CACHE/apt-${suites//,/+}
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	debian_mirrors ${suites//,/ } |
		sed 's|^deb |deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] |' \
			>"$dir/sources.list"
	opts=(-o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts=-
		-o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache"
		-o Dir::State::status=/dev/null -o APT::Get::List-Cleanup=0)
	if [ -z "$(find "$dir/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null)" ]; then
		apt-get "${opts[@]}" update -q >"$dir/update.log" 2>&1 ||
			{ tail -n 5 "$dir/update.log" >&2; return 1; }
	fi
	"$prog" "${opts[@]}" "$@"
}

# apt_suite_download DEST SUITE[,SUITE...] PACKAGE...: download PACKAGEs
# (their candidate version in those suites) into DEST (apt_suite).
apt_suite_download() {
	local dest=$1 suites=$2 log
	shift 2
	log=$MODSIGN_CACHE/apt-${suites//,/+}/download.log
	mkdir -p "$dest" "${log%/*}"
	(cd "$dest" && apt_suite "$suites" apt-get download -q "$@" >/dev/null 2>"$log") ||
		{ tail -n 5 "$log" >&2; return 1; }
}

# fds_closed COMMAND...: run COMMAND with fds 3 to 9 closed.  mmdebstrap
# hands apt a hook "cat >&N" with N its lowest free fd, and dash (/bin/sh)
# takes one digit only: under bats (fds 3-5) with cache_lock's fd 9, N
# was 11, "Bad fd number", and the image was never made.
fds_closed() { "$@" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; }
