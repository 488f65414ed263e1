#!/usr/bin/env bats
# The transparency log (issue 17, docs/TRANSPARENCY.md): every issued
# signature a leaf of a C2SP tiled Merkle log with signed checkpoints,
# audited offline by "modsign-client log verify" and by Go's
# golang.org/x/mod/sumdb/{note,tlog} (tests/tlog-go).  Every check that
# passes has a tampered twin that must fail: an edited, removed or moved
# entry, a truncated tile, a fork, another key's checkpoint, a rollback.
# Each case has its own daemon and log directory.

load ../common

setup() {
	case_setup
	openssl genpkey -algorithm ed25519 -out "$T/log.pem" 2>/dev/null
	chmod 600 "$T/log.pem"
	for m in $(real_modules 4); do cp "$m" "$T/"; done
	MODS=($(cd "$T" && ls *.ko))
	"$C" --server unix:/nonexistent strip "${MODS[@]}" 2>/dev/null || true
	export MODSIGN_SERVER=unix:$T/sock
}

teardown() { case_teardown; }

# tlog_daemon [DIR]: a daemon logging into DIR (default $T/log).
tlog_daemon() {
	start_daemon "$T/sock" --key "default=${SIGNING_KEY:-ephemeral:rsa2048}" \
		--transparency-log "${1:-$T/log}" --log-key "$T/log.pem" \
		--log-origin example.org/modsign-test
}

# tlog_signed N: the first N modules signed (into the log), the vkey saved.
tlog_signed() {
	tlog_daemon
	"$C" sign "${MODS[@]:0:$1}"
	"$C" log vkey >vkey
}

lv() { "$C" log verify --vkey-file vkey "$@"; }

# bundle OP ARGS: rewrite the entry bundle of the log's partial tile 0:
# edit I (one hex digit of entry I's digest), drop I, swap I J.
bundle() {
	python3 - "$T/log/tile/entries/000.p/$(sed -n 2p log/checkpoint)" "$@" <<'PY'
import sys
path, op, *args = sys.argv[1:]
d = open(path, 'rb').read()
es = []
while d:
    n = d[0] << 8 | d[1]
    es.append(d[2:2 + n])
    d = d[2 + n:]
i = int(args[0])
if op == 'edit':
    k = es[i].index(b'"digest":"') + 10
    es[i] = es[i][:k] + (b'0' if es[i][k:k + 1] != b'0' else b'1') + es[i][k + 1:]
elif op == 'drop':
    del es[i]
elif op == 'swap':
    j = int(args[1])
    es[i], es[j] = es[j], es[i]
open(path, 'wb').write(b''.join(len(e).to_bytes(2, 'big') + e for e in es))
PY
}

go_check() {
	local bin=$BATS_FILE_TMPDIR/tlog-go # built from this checkout, once per run
	if [ ! -x "$bin" ]; then
		GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$BATS_FILE_TMPDIR/gocache \
			bash -c 'cd "$1" && go build -o "$2" ./tests/tlog-go' - "$REPO" "$bin" || return 1
	fi
	"$bin" "$@"
}

# ---- the layout ---------------------------------------------------------------

@test "tlog-layout-c2sp" {
	tlog_signed 3
	[ -f log/checkpoint ]
	[ "$(sed -n 1p log/checkpoint)" = example.org/modsign-test ]
	[ "$(sed -n 2p log/checkpoint)" = 3 ]
	[ "$(stat -c %s log/tile/0/000.p/3)" = 96 ]
	[ -f log/tile/entries/000.p/3 ]
	# The signature line: an em dash, the key name, base64 of 68 bytes.
	run grep -c "^— example.org/modsign-test [A-Za-z0-9+/]\{91\}=\$" log/checkpoint
	assert_output 1
	# Twin: the entry is the documented record, canonical.
	run python3 -c 'import sys,json; d=open(sys.argv[1],"rb").read(); d=d[2:2+(d[0]<<8|d[1])]; o=json.loads(d)
assert list(o)==["index","time","key","key_id","cert_sha256","hash","digest","module","client","sig_sha256"], list(o)
assert json.dumps(o,separators=(",",":"),ensure_ascii=False).encode()==d' log/tile/entries/000.p/3
	assert_success
}

@test "tlog-sign-reply-has-log-index" {
	tlog_signed 2
	run python3 - "$T/sock" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
req = json.dumps({"v": 1, "id": 7, "op": "sign", "hash": "sha256", "digest": "00" * 32, "module": "x.ko"}).encode()
s.sendall(struct.pack(">I", len(req)) + req)
n = struct.unpack(">I", s.recv(4))[0]
b = b""
while len(b) < n: b += s.recv(n - len(b))
print(json.loads(b).get("log_index"))
PY
	assert_output 2
	[ "$(sed -n 2p log/checkpoint)" = 3 ]
}

@test "tlog-refusals-not-logged" {
	tlog_signed 1
	run "$C" sign --key nosuchkey "${MODS[1]}"
	assert_failure
	[ "$(sed -n 2p log/checkpoint)" = 1 ]
}

# ---- log verify: the directory, inclusion ------------------------------------

@test "tlog-verify-dir-and-modules" {
	tlog_signed 3
	run lv --dir log "${MODS[@]:0:3}"
	assert_success
	assert_output --partial "${MODS[0]}: in the log, entry"
	assert_output --partial "(inclusion proof of 2 hashes checked)"
	assert_output --partial "example.org/modsign-test: OK, 3 entries, every tile checked"
}

@test "tlog-verify-module-not-in-log" {
	tlog_signed 3
	# Twin: a module signed by another daemon (no log) is not in it.
	make_pem_key other.pem rsa:2048
	start_daemon "$T/sock2" --key "default=$T/other.pem"
	"$C" --server "unix:$T/sock2" sign "${MODS[3]}"
	run lv --dir log "${MODS[3]}"
	assert_failure
	assert_output --partial "${MODS[3]}: NOT in the log"
}

@test "tlog-verify-module-changed-after-signing" {
	tlog_signed 1
	# Twin of inclusion: the same signature on another module body.
	flip_bit_at "${MODS[0]}" 200
	run lv --dir log "${MODS[0]}"
	assert_failure
	assert_output --partial "NOT in the log"
}

@test "tlog-edited-entry" {
	tlog_signed 3
	bundle edit 1
	run lv --dir log
	assert_failure
	assert_output --partial "does not match the entries"
	assert_equal "${#lines[@]}" 1
}

@test "tlog-removed-entry" {
	tlog_signed 3
	bundle drop 1
	run lv --dir log
	assert_failure
	assert_output --partial "entry 1: says index 2"
}

@test "tlog-reordered-entries" {
	tlog_signed 3
	bundle swap 0 1
	run lv --dir log
	assert_failure
	assert_output --partial "entry 0: says index 1"
}

@test "tlog-truncated-tile" {
	tlog_signed 3
	truncate -s 64 log/tile/0/000.p/3
	run lv --dir log
	assert_failure
	assert_output --partial "tile/0/000.p/3: 64 bytes, expected 96"
}

# ---- checkpoints: signature, fork, rollback -----------------------------------

@test "tlog-checkpoint-signature" {
	tlog_signed 2
	run lv --checkpoint log/checkpoint
	assert_success
	# Twin: one digit of the size changed.
	sed '2s/2/3/' log/checkpoint >forged
	run lv --checkpoint forged
	assert_failure
	assert_output --partial "BAD signature"
}

@test "tlog-checkpoint-other-key" {
	tlog_signed 2
	# A log of the same origin signed by a key that is not the log's.
	stop_daemon "$DAEMON_PID"
	openssl genpkey -algorithm ed25519 -out other.pem 2>/dev/null && chmod 600 other.pem
	start_daemon "$T/sock2" --key default=ephemeral:rsa2048 --transparency-log "$T/log2" \
		--log-key "$T/other.pem" --log-origin example.org/modsign-test
	MODSIGN_SERVER=unix:$T/sock2 "$C" sign "${MODS[@]:0:2}"
	run lv --dir log2
	assert_failure
	assert_output --partial "not signed by example.org/modsign-test"
	run lv --dir log
	assert_success
}

@test "tlog-daemon-refuses-other-keys-checkpoint" {
	tlog_signed 1
	stop_daemon "$DAEMON_PID"
	openssl genpkey -algorithm ed25519 -out log.pem 2>/dev/null
	run "$MODSIGND" --listen "unix:$T/sock" --key default=ephemeral:rsa2048 \
		--transparency-log "$T/log" --log-key "$T/log.pem" --log-origin example.org/modsign-test
	assert_failure
	assert_output --partial "not signed by this log key"
}

@test "tlog-consistent-with-older-checkpoint" {
	tlog_signed 1
	cp log/checkpoint old
	"$C" sign "${MODS[@]:1:2}"
	run lv --dir log --old old
	assert_success
	assert_output --partial "consistent with old"
}

@test "tlog-forked-log" {
	# Two logs under one key and origin: two checkpoints of one size.
	tlog_signed 1
	cp log/checkpoint a
	stop_daemon "$DAEMON_PID"
	tlog_daemon "$T/fork"
	"$C" sign "${MODS[1]}"
	run lv --dir fork --old a
	assert_failure
	assert_output --partial "same size 1, another root: the log forked"
	# And once the fork has grown past the older checkpoint.
	"$C" sign "${MODS[2]}"
	run lv --dir fork --old a
	assert_failure
	assert_output --partial "not a prefix of this log: forked or rewritten"
}

@test "tlog-rolled-back-after-restart" {
	tlog_signed 1
	cp -a log snapshot
	"$C" sign "${MODS[1]}"
	cp log/checkpoint seen   # an auditor's copy
	stop_daemon "$DAEMON_PID"
	rm -rf log && mv snapshot log
	tlog_daemon
	run lv --dir log --old seen
	assert_failure
	assert_output --partial "has 2 entries, the log only 1: rolled back"
	# Signing on does not hide it: the same size, another root.
	"$C" sign "${MODS[2]}"
	run lv --dir log --old seen
	assert_failure
	assert_output --partial "the log forked"
}

# ---- durability -----------------------------------------------------------------

@test "tlog-restart-continues-tree" {
	tlog_signed 2
	cp log/checkpoint old
	stop_daemon "$DAEMON_PID"
	tlog_daemon
	"$C" sign "${MODS[2]}"
	[ "$(sed -n 2p log/checkpoint)" = 3 ]
	run lv --dir log --old old "${MODS[@]:0:3}"
	assert_success
}

@test "tlog-torn-tail-cut-on-restart" {
	tlog_signed 2
	kill -9 "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true
	# What a commit cut short by kill -9 leaves: tiles past the checkpoint.
	head -c 160 /dev/urandom >log/tile/0/000.p/5
	printf '\0\3abc' >log/tile/entries/000.p/3
	head -c 8192 /dev/urandom >log/tile/0/001
	tlog_daemon
	[ ! -e log/tile/0/000.p/5 ] && [ ! -e log/tile/entries/000.p/3 ] && [ ! -e log/tile/0/001 ]
	"$C" sign "${MODS[2]}"
	run lv --dir log "${MODS[@]:0:3}"
	assert_success
}

@test "tlog-lost-tile-refuses-start" {
	tlog_signed 2
	stop_daemon "$DAEMON_PID"
	# Twin: a tile the checkpoint covers is cut: refuse, never serve it.
	truncate -s 32 log/tile/0/000.p/2
	run "$MODSIGND" --listen "unix:$T/sock" --key default=ephemeral:rsa2048 \
		--transparency-log "$T/log" --log-key "$T/log.pem" --log-origin example.org/modsign-test
	assert_failure
	assert_output --partial "tile/0/000.p/2: missing or of the wrong size"
}

# logged_at_least N: the log's checkpoint counts N or more entries.
logged_at_least() {
	[ "$(sed -n 2p log/checkpoint 2>/dev/null)" -ge "$1" ] 2>/dev/null
}

# batch_stopped SIGNAL N: a batch of N modules (in many/) signed with a
# key that outlives the daemon, the daemon sent SIGNAL once the log holds
# 300 of them, past a full tile (not after a fixed time: on a loaded
# machine the client may still be hashing then); $drc is the daemon's exit status, signed_mods and
# unsigned_mods what the batch left.
batch_stopped() {
	make_pem_key rsa.pem rsa:2048
	SIGNING_KEY=$T/rsa.pem
	tlog_daemon
	"$C" log vkey >vkey
	mkdir many
	copy_modules "$2" many
	"$C" strip many/*.ko 2>/dev/null
	"$C" sign many/*.ko 2>/dev/null &
	eventually 120 logged_at_least 300
	kill -"$1" "$DAEMON_PID"
	wait "$DAEMON_PID" && drc=0 || drc=$?
	wait || true
	verdicts rsa.pem many/*.ko >verdicts
	[ "$(wc -l <verdicts)" -eq "$2" ] || { echo "verify gave $(wc -l <verdicts) verdicts of $2"; return 1; }
	mapfile -t signed_mods < <(awk '$1 == "ok" { print $3 }' verdicts)
	mapfile -t unsigned_mods < <(awk '$1 == "fail" { print $3 }' verdicts)
}

@test "tlog-kill9-loses-no-released-signature" {
	batch_stopped KILL 2000
	tlog_daemon
	# Every module that got its signature is in the log.
	run lv --dir log "${signed_mods[@]}"
	assert_success
	# Past a full tile (256 leaves): Go reads the full and the level-1 tiles.
	if command -v go >/dev/null; then
		run go_check log "$(cat vkey)"
		assert_success
	fi
	echo "# ${#signed_mods[@]} released before kill -9, $(sed -n 2p log/checkpoint) in the log" >&3
	[ "${#signed_mods[@]}" -gt 0 ]
}

# SIGTERM with commits in flight: the syncer thread finishes the one it
# has, the daemon exits 0, and every signature it released is in the log,
# which the next start continues.  Twin: a module that got no signature
# is not found in it.
@test "tlog-sigterm-mid-batch-commit-in-flight" {
	batch_stopped TERM 2000
	[ "$drc" -eq 0 ]
	[ "${#signed_mods[@]}" -gt 0 ]
	run lv --dir log "${signed_mods[@]}"
	assert_success
	tlog_daemon
	"$C" sign "${MODS[0]}"
	run lv --dir log "${signed_mods[@]}" "${MODS[0]}"
	assert_success
	echo "# ${#signed_mods[@]} released before SIGTERM, ${#unsigned_mods[@]} not" >&3
	[ "${#unsigned_mods[@]}" -gt 0 ] || skip "the batch ended before SIGTERM"
	run lv --dir log "${unsigned_mods[0]}"
	assert_failure
}

@test "tlog-withheld-when-log-fails" {
	tlog_signed 1
	# The level-0 tile directory replaced by a file: the next commit fails.
	rm -rf log/tile/0 && touch log/tile/0
	run "$C" sign "${MODS[1]}"
	assert_failure
	assert_output --partial "transparency log unavailable"
	# Twin: the module got no signature.
	run "$C" verify --cert <("$C" cert) "${MODS[1]}"
	assert_failure
}

# ---- keys and the online client -------------------------------------------------

@test "tlog-log-key-mode" {
	chmod 644 log.pem
	run "$MODSIGND" --listen "unix:$T/sock" --key default=ephemeral:rsa2048 \
		--transparency-log "$T/log" --log-key "$T/log.pem"
	assert_failure
	assert_output --partial "log key"
	chmod 600 log.pem
	tlog_daemon
}

@test "tlog-log-key-not-ed25519" {
	make_pem_key rsa.pem rsa:2048
	run "$MODSIGND" --listen "unix:$T/sock" --key default=ephemeral:rsa2048 \
		--transparency-log "$T/log" --log-key "$T/rsa.pem"
	assert_failure
	assert_output --partial "not an Ed25519 key"
}

@test "tlog-log-origin-invalid" {
	run "$MODSIGND" --listen "unix:$T/sock" --key default=ephemeral:rsa2048 \
		--transparency-log "$T/log" --log-key "$T/log.pem" --log-origin "two words"
	assert_failure
	assert_output --partial "--log-origin 'two words': a key name"
	[ ! -e log ]
}

@test "tlog-vkey-format" {
	tlog_signed 1
	run "$C" log vkey
	assert_output --regexp '^example.org/modsign-test\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$'
	# The same key as the file's: Ed25519 public key after the 0x01.
	want=$(openssl pkey -in log.pem -pubout -outform DER | tail -c 32 | base64)
	got=$(cut -d+ -f3- vkey | base64 -d | tail -c 32 | base64)
	assert_equal "$got" "$want"
}

@test "tlog-online-verify" {
	tlog_signed 2
	run "$C" log verify
	assert_success
	assert_output --partial "OK, 2 entries, every tile checked (online)"
	# The modules and an older checkpoint, against the daemon alone.
	cp log/checkpoint old
	"$C" sign "${MODS[2]}"
	run lv --old old "${MODS[@]:0:3}"
	assert_success
	assert_output --partial "${MODS[2]}: in the log, entry 2"
	assert_output --partial "every tile checked (online), consistent with old"
	# Twin: against another log's verifier key.
	run "$C" log verify --vkey "example.org/modsign-test+00000000+AQ$(head -c 32 /dev/zero | base64 | cut -c2-)"
	assert_failure
}

@test "tlog-online-tampered-tile" {
	tlog_signed 3
	# What the daemon serves is checked as a copy is.
	bundle swap 0 2
	run lv
	assert_failure
	assert_output --partial "entry 0: says index 2"
}

# log_get PATH...: the daemon's "log" request for each PATH, one line
# each: the path, then the error or the file's size.
log_get() {
	python3 - "$T/sock" "$@" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
for p in sys.argv[2:]:
    req = json.dumps({"v": 1, "id": 7, "op": "log", "path": p}).encode()
    s.sendall(struct.pack(">I", len(req)) + req)
    n = struct.unpack(">I", s.recv(4))[0]
    b = b""
    while len(b) < n: b += s.recv(n - len(b))
    r = json.loads(b)
    print(p, r.get("error") or r.get("size"))
PY
}

# The log op serves tiles only: no other name, no symbolic link (at a
# tile the checkpoint covers: 2 hashes of 3, so that it is opened).
@test "tlog-online-serves-tiles-only" {
	tlog_signed 3
	# A commit at size 2 left its partial, or the three came in one.
	ln -sfn "$T/log.pem" log/tile/0/000.p/2
	run log_get "tile/0/../../log.pem" checkpoint tile/0/000.p/2 tile/0/000.p/3
	assert_line "tile/0/../../log.pem not a tile path"
	assert_line "checkpoint not a tile path"
	assert_line "tile/0/000.p/2 Too many levels of symbolic links"
	assert_line "tile/0/000.p/3 96"
}

# While a commit is synced (modsignd/syncer.c), its tiles are on disk and
# no published checkpoint covers them yet; a failed sync cuts them back.
# The daemon serves none of them: planted here as a commit of 2 more
# leaves and of 256 more leaves them before its checkpoint is renamed into
# place, which is the state the daemon is in for that while (the commit
# itself in flight: unit test-translog).  Twin: the tiles of the
# published checkpoint are served.
@test "tlog-online-tiles-ahead-of-checkpoint-refused" {
	tlog_signed 3
	head -c 160 /dev/urandom >log/tile/0/000.p/5
	printf '\0\3abc' >log/tile/entries/000.p/5
	head -c 8192 /dev/urandom >log/tile/0/000
	mkdir -p log/tile/1/000.p && head -c 32 /dev/urandom >log/tile/1/000.p/1
	run log_get tile/0/000.p/5 tile/entries/000.p/5 tile/0/000 tile/1/000.p/1 \
		tile/0/000.p/3 tile/entries/000.p/3
	assert_line "tile/0/000.p/5 no such tile"
	assert_line "tile/entries/000.p/5 no such tile"
	assert_line "tile/0/000 no such tile"
	assert_line "tile/1/000.p/1 no such tile"
	# Twin: what checkpoint 3 covers.
	assert_line "tile/0/000.p/3 96"
	assert_line --regexp "^tile/entries/000.p/3 [0-9]+$"
}

# ---- the independent implementation ----------------------------------------------

@test "tlog-go-crosscheck" {
	command -v go >/dev/null || skip "golang-go not installed (tests/install-deps.sh)"
	tlog_signed 2
	cp log/checkpoint old
	"$C" sign "${MODS[@]:2:2}"
	# Our proofs too: four inclusions and the consistency with old.
	lv --dir log --old old --proofs proofs "${MODS[@]}"
	run go_check log "$(cat vkey)" old proofs
	assert_success
	assert_output "OK 4
proofs OK 5"
}

@test "tlog-go-crosscheck-twin-bad-proof" {
	command -v go >/dev/null || skip "golang-go not installed (tests/install-deps.sh)"
	tlog_signed 3
	lv --dir log --proofs proofs "${MODS[1]}"
	# One hash of our inclusion proof changed.
	python3 -c 'import sys,base64; f=open(sys.argv[1]).read().split(); h=bytearray(base64.b64decode(f[3])); h[0]^=1; f[3]=base64.b64encode(h).decode(); open(sys.argv[1],"w").write(" ".join(f)+"\n")' proofs
	run go_check log "$(cat vkey)" - proofs
	assert_failure
	assert_output --regexp "FAIL our inclusion proof [0-2]/3"
}

@test "tlog-go-crosscheck-twin-edited" {
	command -v go >/dev/null || skip "golang-go not installed (tests/install-deps.sh)"
	tlog_signed 3
	bundle edit 2
	run go_check log "$(cat vkey)"
	assert_failure
	assert_output --partial "differs from the checkpoint"
}

@test "tlog-go-crosscheck-twin-other-key" {
	command -v go >/dev/null || skip "golang-go not installed (tests/install-deps.sh)"
	tlog_signed 1
	stop_daemon "$DAEMON_PID"
	# A new log (a one-time key starts only an empty one) of the origin.
	rm -rf log
	start_daemon "$T/sock" --key default=ephemeral:rsa2048 --transparency-log "$T/log" \
		--log-key ephemeral --log-origin example.org/modsign-test
	"$C" sign "${MODS[0]}"
	run go_check log "$(cat vkey)"
	assert_failure
	assert_output --partial "no verifiable signatures"
}

# The distribution flow (issue 19): a detached signature is logged like any
# other, and the module it is later attached to is found in the log.
@test "tlog-detached-then-attached-in-log" {
	SIGNING_KEY=$T/k.pem
	make_pem_key k.pem rsa:2048
	tlog_daemon
	"$C" log vkey >vkey
	mkdir rebuilt && cp "${MODS[@]:0:2}" rebuilt/
	"$C" sign --detached sigs "${MODS[@]:0:2}"
	cmp "${MODS[0]}" "rebuilt/${MODS[0]}" # sign --detached left it alone
	"$C" attach --from sigs --cert k.pem.crt --recursive rebuilt
	run lv --dir log rebuilt/*.ko
	assert_success
	assert_output --partial "rebuilt/${MODS[1]}: in the log, entry"
	assert_output --partial "OK, 2 entries"
}

@test "tlog-attached-signature-not-logged-not-in-log" {
	# Twin: the same key's signature made outside the daemon (sign-file -d
	# with the key file), attached: a valid module, but not in the log.
	SIGNING_KEY=$T/k.pem
	make_pem_key k.pem rsa:2048
	tlog_daemon
	"$C" log vkey >vkey
	"$C" sign "${MODS[0]}"
	"$FIX/sign-file" -d sha256 k.pem k.pem.crt "${MODS[1]}"
	"$C" attach --from . --cert k.pem.crt "${MODS[1]}"
	"$C" verify --cert k.pem.crt "${MODS[1]}"
	run lv --dir log "${MODS[1]}"
	assert_failure
	assert_output --partial "${MODS[1]}: NOT in the log"
}

# ---- what the daemon loads from its directory (issue 27) -------------------------

# plant_unsigned DIR N SIZE: a log of N entries of SIZE bytes, with the
# tiles that hash to them, under a checkpoint nobody signed: issue 27's.
plant_unsigned() {
	python3 - "$@" example.org/modsign-test <<'PY'
import base64, hashlib, os, sys
d, n, size, origin = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
es = [(b'{"index":%d}' % i).ljust(size, b' ') for i in range(n)]
leaves = [hashlib.sha256(b'\0' + e).digest() for e in es]
def mth(h):
    if len(h) == 1: return h[0]
    k = 1
    while k << 1 < len(h): k <<= 1
    return hashlib.sha256(b'\1' + mth(h[:k]) + mth(h[k:])).digest()
for t in ('0', 'entries'): os.makedirs(f'{d}/tile/{t}/000.p', exist_ok=True)
open(f'{d}/tile/0/000.p/{n}', 'wb').write(b''.join(leaves))
open(f'{d}/tile/entries/000.p/{n}', 'wb').write(b''.join(len(e).to_bytes(2, 'big') + e for e in es))
root = base64.b64encode(mth(leaves)).decode()
open(f'{d}/checkpoint', 'w').write(f'{origin}\n{n}\n{root}\n\n\u2014 {origin} AAAAAA==\n')
PY
}

# modsignd_run DIR [LOG-KEY]: the daemon started on DIR in the foreground,
# given 10 s to refuse (a daemon that starts is killed then).
modsignd_run() {
	timeout 10 "$MODSIGND" --listen "unix:$T/sock" --key default=ephemeral:rsa2048 \
		--transparency-log "$1" --log-key "${2:-$T/log.pem}" --log-origin example.org/modsign-test
}

# Row 51: 64 entries of 65,535 bytes (TLOG_MAX_ENTRY is 16 KiB) under an
# unsigned checkpoint: a one-time key took it, and the fourth signature
# wrote past the entry bundle (ASan: heap-buffer-overflow in
# translog_append).  Refused at start now.
@test "tlog-ephemeral-key-refuses-crafted-log" {
	plant_unsigned "$T/log" 64 65535
	run modsignd_run "$T/log" ephemeral
	assert_failure
	assert_output --partial "transparency log $T/log: checkpoint: a log of 64 entries, which a one-time log key (--log-key ephemeral) never continues"
}

# Row 52: the decision for one-time keys: a log they did not sign is never
# continued, their own earlier run's included (its key is gone).
@test "tlog-ephemeral-key-restart-on-its-log-refused" {
	start_daemon "$T/sock" --key default=ephemeral:rsa2048 --transparency-log "$T/log" \
		--log-key ephemeral --log-origin example.org/modsign-test
	"$C" sign "${MODS[0]}"
	stop_daemon "$DAEMON_PID"
	run modsignd_run "$T/log" ephemeral
	assert_failure
	assert_output --partial "a log of 1 entries, which a one-time log key (--log-key ephemeral) never continues"
	# Twin: a one-time key in an empty directory logs and is audited.
	rm -rf log
	start_daemon "$T/sock" --key default=ephemeral:rsa2048 --transparency-log "$T/log" \
		--log-key ephemeral --log-origin example.org/modsign-test
	"$C" sign "${MODS[@]:0:2}"
	run "$C" log verify "${MODS[@]:0:2}"
	assert_success
	assert_output --partial "OK, 2 entries"
}

# Row 53: a log directory that group or others may write, or another
# user's: whoever can write it chooses what the daemon loads.
@test "tlog-group-writable-dir-refused" {
	tlog_signed 1
	stop_daemon "$DAEMON_PID"
	chmod 0775 log
	run modsignd_run "$T/log"
	assert_failure
	assert_output --partial "transparency log $T/log: group or others may write it (chmod go-w)"
	chmod 0755 log && chown nobody log
	run modsignd_run "$T/log"
	assert_failure
	assert_output --partial "transparency log $T/log: not owned by the daemon's own user"
	# Twin: the daemon's own 0755 directory goes on.
	chown "$(id -u)" log
	tlog_daemon
	"$C" sign "${MODS[1]}"
	run lv --dir log "${MODS[@]:0:2}"
	assert_success
}

# Row 70: a tile directory inside the log that group or others may write
# (or another user's): its tiles are theirs to swap.  Withheld, and why.
@test "tlog-group-writable-tile-dir-withheld" {
	tlog_signed 1
	chmod g+w log/tile/entries
	run "$C" sign "${MODS[1]}"
	assert_failure
	assert_output --partial "transparency log unavailable"
	grep -q "tile/entries/000.p/1: a directory on its path is not the daemon's own" modsignd.log
	# Twin: its mode back, the next signature is logged and released.
	chmod g-w log/tile/entries
	"$C" sign "${MODS[1]}"
	run lv --dir log "${MODS[@]:0:2}"
	assert_success
	assert_output --partial "OK, 2 entries"
}

# Row 71: a log left broken withholds every signature; the daemon's
# systemd status said nothing of it (only the journal, group by group).
@test "tlog-broken-log-status-says-why" {
	python3 - "$T/notify" >notify.log 2>&1 3>&- <<-'PY' &
	import socket, sys, time
	s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
	s.bind(sys.argv[1]); s.settimeout(30)
	end = time.time() + 40
	while time.time() < end:
	    try:
	        msg = s.recv(4096).decode()
	    except socket.timeout:
	        break
	    print(msg.replace("\n", " | "), flush=True)
	PY
	DAEMON_PIDS+=($!)
	eventually 30 test -S notify
	NOTIFY_SOCKET=$T/notify "$MODSIGND" --listen "unix:$T/sock" --key default=ephemeral:rsa2048 \
		--transparency-log "$T/log" --log-key "$T/log.pem" \
		--log-origin example.org/modsign-test 2>>modsignd.log 3>&- &
	DAEMON_PIDS+=($!)
	eventually 60 grep -q READY=1 notify.log
	"$C" sign "${MODS[0]}"
	cp log/checkpoint published
	echo >>log/checkpoint
	mkdir log/tile/0/000.p/2.tmp # where the next commit writes: it fails
	run "$C" sign "${MODS[1]}"
	assert_failure
	eventually 30 grep -q "STATUS=.*transparency log broken, signatures withheld: checkpoint: not the one this daemon published (1 entries)" notify.log ||
		{ cat notify.log; false; }
	# Twin: the published checkpoint back, it signs and the status is plain.
	cp published log/checkpoint
	rmdir log/tile/0/000.p/2.tmp
	"$C" sign "${MODS[1]}"
	# The status is sent each tick (1 s): polled, not slept for, since a
	# loaded machine can be late by more than a tick.
	eventually 10 status_plain
}

# status_plain: the daemon's last notification is a STATUS= without
# "broken".
status_plain() {
	tail -n 1 notify.log | grep "STATUS=" | grep -v broken >/dev/null
}

# Row 54: an older checkpoint's files put back while the daemon runs, and
# one commit made to fail: its reload continued from the older tree, and
# "log verify" said a released module was NOT in the log.
@test "tlog-rollback-without-restart-refused" {
	tlog_signed 1
	cp log/checkpoint old
	"$C" sign "${MODS[1]}"
	cp log/checkpoint published
	cp old log/checkpoint
	mkdir log/tile/0/000.p/3.tmp # where the next commit writes: it fails
	run "$C" sign "${MODS[2]}"
	assert_failure
	assert_output --partial "transparency log unavailable"
	rmdir log/tile/0/000.p/3.tmp
	run "$C" sign "${MODS[2]}"
	assert_failure
	assert_output --partial "transparency log unavailable"
	grep -q "checkpoint: not the one this daemon published (2 entries)" modsignd.log
	[ "$("$C" log checkpoint | sed -n 2p)" = 2 ]
	# Twin: the published checkpoint back, the log goes on from it.
	cp published log/checkpoint
	"$C" sign "${MODS[2]}"
	run lv --dir log "${MODS[@]:0:3}"
	assert_success
	assert_output --partial "OK, 3 entries"
}

# Row 55: a FIFO at a tile the checkpoint covers stopped the event loop
# in open(2) when a client asked for it ("log"); one at the checkpoint
# hung the start.  Refused at once now.
@test "tlog-fifo-at-tile-refused-at-once" {
	tlog_signed 3
	rm log/tile/entries/000.p/3 && mkfifo log/tile/entries/000.p/3
	run log_get tile/entries/000.p/3 tile/0/000.p/3
	assert_line "tile/entries/000.p/3 no such tile"
	# Twin: the other tiles are served, and the daemon signs on.
	assert_line "tile/0/000.p/3 96"
	run timeout 20 "$C" sign "${MODS[3]}"
	assert_success
}

@test "tlog-fifo-at-checkpoint-refused-at-start" {
	tlog_signed 1
	stop_daemon "$DAEMON_PID"
	mv log/checkpoint cp && mkfifo log/checkpoint
	run modsignd_run "$T/log"
	assert_failure
	assert_output --partial "transparency log $T/log: checkpoint: not a regular file"
	# Twin: the checkpoint back, the daemon starts and continues.
	rm log/checkpoint && mv cp log/checkpoint
	tlog_daemon
	"$C" sign "${MODS[1]}"
	run lv --dir log "${MODS[@]:0:2}"
	assert_success
}
