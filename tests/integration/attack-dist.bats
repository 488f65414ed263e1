#!/usr/bin/env bats
# Attacks on the distribution flow and the server pool (review of the
# client since 1ac1a36): whoever can write the signature tree that attach
# reads, or runs a server of the pool, tries to hang or mislead root's
# client.  Each case has its twin that must still work, and its own
# daemon on a key made at run time.

load ../common
load dist

BOUND=30 # seconds: a case that takes longer is the hang it checks for

setup() {
	case_setup
	dist_setup
}

teardown() { case_teardown; }

# ---- 1. a FIFO in the signature tree -------------------------------------
# The signature files were read O_NOFOLLOW but blocking: a FIFO planted at
# a signature's name held root's attach (or sign-file -s) for ever.

@test "fifo-in-signature-tree-refused-at-once" {
	"$C" sign --detached sigs --recursive tree
	rm sigs/kernel/fs/b.ko.p7s
	mkfifo sigs/kernel/fs/b.ko.p7s
	cp -a pristine rebuilt
	run timeout "$BOUND" "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	refute [ "$status" -eq 124 ]
	assert_failure 1
	assert_output "modsign-client: sigs/kernel/fs/b.ko.p7s: cannot read signature: not a regular file"
	cmp pristine/kernel/fs/b.ko rebuilt/kernel/fs/b.ko
	"$C" verify --cert rsa.pem.crt rebuilt/kernel/fs/a.ko rebuilt/kernel/net/c.ko
	run timeout "$BOUND" "$C" sign-file -s sigs/kernel/fs/b.ko.p7s sha256 rsa.pem.crt \
		rebuilt/kernel/fs/b.ko
	refute [ "$status" -eq 124 ]
	assert_failure 1
	assert_output --partial "b.ko.p7s: cannot read signature: not a regular file"
}

@test "fifo-twin-regular-signature-attached" {
	"$C" sign --detached sigs --recursive tree
	cp -a pristine rebuilt
	run timeout "$BOUND" "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_success
	"$C" verify --cert rsa.pem.crt $(find rebuilt -name '*.ko')
}

# ---- 2. a server of the pool that trickles its replies --------------------
# trickle_proxy SOCK DELAY CHUNK [replay]: a server at SOCK that passes each request
# to the real daemon and sends each reply with a signature back CHUNK
# bytes at a time, DELAY seconds apart (other replies, `cert`'s, at once) (one byte every 0.5 s: a frame never stalls for a
# whole --stall-timeout, yet never ends).  Counts the replies it began in
# $T/proxy.count.  With replay, every reply carries the signature of
# the first (a server of the pool that answers for another module); with
# hold, no reply with a signature is passed on until $T/proxy.go exists
# (a slow server, made deterministic), and $T/proxy.held says one waits;
# $T/proxy.asked counts the sign requests passed on.
trickle_proxy() {
	cat >"$T/proxy.py" <<'PY'
import json, os, socket, struct, sys, threading, time
path, daemon, delay, chunk = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
mode = sys.argv[5] if len(sys.argv) > 5 else ""
replay = mode == "replay"
saved = []
count = os.path.join(os.path.dirname(path), "proxy.count")
go = os.path.join(os.path.dirname(path), "proxy.go")
held = os.path.join(os.path.dirname(path), "proxy.held")
asked = os.path.join(os.path.dirname(path), "proxy.asked")
n_sign = 0
lock = threading.Lock()
n = 0
def read_frame(s):
    h = b""
    while len(h) < 4:
        b = s.recv(4 - len(h))
        if not b:
            return None
        h += b
    ln = struct.unpack(">I", h)[0]
    d = b""
    while len(d) < ln:
        b = s.recv(ln - len(d))
        if not b:
            return None
        d += b
    return h + d
def serve(c):
    global n
    up = socket.socket(socket.AF_UNIX)
    up.connect(daemon)
    def pump():
        global n_sign
        while True:
            f = read_frame(c)
            if f is None:
                return
            if json.loads(f[4:]).get("op") == "sign":
                with lock:
                    n_sign += 1
                    open(asked, "w").write(str(n_sign))
            up.sendall(f)
    threading.Thread(target=pump, daemon=True).start()
    try:
        while True:
            f = read_frame(up)
            if f is None:
                return
            with lock:
                n += 1
                open(count, "w").write(str(n))
                msg = json.loads(f[4:])
                if replay and "signature" in msg:
                    # every module gets the first module's signature
                    saved.append(msg["signature"])
                    msg["signature"] = saved[0]
                    body = json.dumps(msg).encode()
                    f = struct.pack(">I", len(body)) + body
            if mode == "hold" and "signature" in msg:  # not holding the lock
                open(held, "w").close()
                while not os.path.exists(go):
                    time.sleep(0.05)
            if "signature" not in msg:
                c.sendall(f)
                continue
            for i in range(0, len(f), chunk):
                c.sendall(f[i:i + chunk])
                time.sleep(delay)
    except OSError:
        pass
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
	python3 "$T/proxy.py" "$1" "$T/sock" "$2" "$3" ${4:-} 3>&- &
	PROXY=$!
	DAEMON_PIDS+=("$PROXY")
	local i
	for i in $(seq 50); do [ -S "$1" ] && return 0; sleep 0.1; done
	return 1
}

@test "pool-trickling-server-dropped-batch-completes" {
	# Before: the client read the trickled frame to its end in one call,
	# each byte restarting the socket's timeout: the whole batch waited on
	# that server, and the stall timeout never fired.
	trickle_proxy "$T/slow.sock" 0.5 1
	run timeout "$BOUND" "$C" --server "unix:$T/slow.sock" --server "unix:$T/sock" \
		--stall-timeout 1 sign --recursive tree
	refute [ "$status" -eq 124 ]
	assert_success
	assert_output --partial "unix:$T/slow.sock: "
	assert_output --partial "sent to the other server"
	"$C" verify --cert rsa.pem.crt $(find tree -name '*.ko')
}

@test "pool-twin-reply-in-two-pieces-used" {
	# A reply split in two with a pause shorter than the stall timeout is a
	# reply, not a stall: that server signs its share.
	trickle_proxy "$T/slow.sock" 0.3 200
	run timeout "$BOUND" "$C" --server "unix:$T/slow.sock" --server "unix:$T/sock" \
		--stall-timeout 2 sign --recursive tree
	assert_success
	refute_output --partial "sent to the other server"
	[ "$(cat proxy.count)" -ge 1 ]
	"$C" verify --cert rsa.pem.crt $(find tree -name '*.ko')
}

# ---- 3. servers of the pool that sign with different keys ----------------
# Hosts that each make their own key (ephemeral:, the recommended kind),
# or one host given the wrong key file: a batch spread over them came out
# signed by both keys, exit 0, and a kernel that embeds one certificate
# refuses part of its modules.

# all_by CERT: every module of tree/ verifies with CERT.
all_by() { "$C" verify --cert "$1" $(find tree -name '*.ko') >/dev/null 2>&1; }

@test "pool-servers-with-different-keys-never-mixed" {
	# No certificate given and two servers disagree: which is honest is
	# not known, so nothing is signed (row 64: the first to answer is
	# not trusted more than the other).
	start_daemon "$T/sock2" --key default=ephemeral:rsa2048
	run timeout "$BOUND" "$C" --server "unix:$T/sock" --server "unix:$T/sock2" \
		sign --recursive tree
	refute [ "$status" -eq 124 ]
	assert_failure 1
	assert_output "modsign-client: unix:$T/sock and unix:$T/sock2 have different certificates for key 'default'; name the one to sign with (sign --cert FILE, or cert in the config); no module signed"
	diff -r pristine tree
}

@test "pool-servers-with-different-keys-cert-given-other-dropped" {
	start_daemon "$T/sock2" --key default=ephemeral:rsa2048
	run timeout "$BOUND" "$C" --server "unix:$T/sock2" --server "unix:$T/sock" \
		sign --cert rsa.pem.crt --recursive tree
	assert_success
	assert_output "modsign-client: unix:$T/sock2: not used: its key 'default' is not the certificate rsa.pem.crt
modsign-client: using unix:$T/sock"
	all_by rsa.pem.crt
}

@test "pool-servers-with-different-keys-config-cert-other-dropped" {
	# The config's cert pins as --cert does.
	start_daemon "$T/sock2" --key default=ephemeral:rsa2048
	printf 'server = unix:%s\nserver = unix:%s\ncert = %s\n' \
		"$T/sock2" "$T/sock" "$T/rsa.pem.crt" >client.conf
	run env -u MODSIGN_SERVER MODSIGN_CONFIG="$T/client.conf" timeout "$BOUND" "$C" \
		sign --recursive tree
	assert_success
	assert_output "modsign-client: unix:$T/sock2: not used: its key 'default' is not the certificate $T/rsa.pem.crt
modsign-client: using unix:$T/sock"
	all_by rsa.pem.crt
}

@test "pool-twin-servers-with-the-same-key-both-used" {
	start_daemon "$T/sock2" --key "default=$T/rsa.pem" --audit-log "$T/audit2.log"
	run timeout "$BOUND" "$C" --server "unix:$T/sock" --server "unix:$T/sock2" \
		sign --recursive tree
	assert_success
	assert_output ""
	[ "$(grep -c '"result":"ok"' audit2.log)" -ge 1 ]
	all_by rsa.pem.crt
}

# ---- 3b. a member of the pool that holds no key, or refuses -------------
# fake_member SOCK MODE: a server of the pool at SOCK that never signs.
# `cert` is passed to the real daemon ($T/sock), so it shows the honest
# certificate, except in nokey mode ("unknown key") and silent mode
# (nothing is ever answered); latecert answers `cert` after 1 s and passes
# each `sign` to the real daemon.  Each `sign` is answered at once: garbage,
# random bytes as the signature with the honest cert_sha256 copied;
# nofp, the same without a cert_sha256; nokey, random bytes too; refuse,
# a refusal.  $T/fake.asked counts the sign requests it got.
fake_member() {
	cat >"$T/fake.py" <<'PY'
import base64, hashlib, json, os, socket, struct, sys, threading, time
path, daemon, mode = sys.argv[1], sys.argv[2], sys.argv[3]
asked = os.path.join(os.path.dirname(path), "fake.asked")
lock = threading.Lock()
n_sign = 0
def read_frame(s):
    h = b""
    while len(h) < 4:
        b = s.recv(4 - len(h))
        if not b:
            return None
        h += b
    ln = struct.unpack(">I", h)[0]
    d = b""
    while len(d) < ln:
        b = s.recv(ln - len(d))
        if not b:
            return None
        d += b
    return json.loads(d)
def send(s, msg):
    body = json.dumps(msg).encode()
    s.sendall(struct.pack(">I", len(body)) + body)
def honest(req):
    up = socket.socket(socket.AF_UNIX)
    up.connect(daemon)
    send(up, req)
    reply = read_frame(up)
    up.close()
    return reply
fp = hashlib.sha256(base64.b64decode(honest({"v": 1, "id": 1, "op": "cert"})["cert"])).hexdigest()
def serve(c):
    global n_sign
    while True:
        try:
            req = read_frame(c)
        except OSError:
            return
        if req is None or mode == "silent":
            if req is None:
                return
            continue
        rid = req.get("id", 0)
        if req.get("op") == "cert" and mode == "latecert":
            time.sleep(1)
        if req.get("op") == "cert" and mode == "nokey":
            send(c, {"v": 1, "id": rid, "ok": False, "error": "unknown key 'default'"})
        elif req.get("op") != "sign":
            send(c, honest(req))
        else:
            with lock:
                n_sign += 1
                open(asked, "w").write(str(n_sign))
            if mode == "latecert":
                send(c, honest(req))
                continue
            if mode == "refuse":
                send(c, {"v": 1, "id": rid, "ok": False,
                         "error": "module %s not allowed for this client" % req.get("module")})
                continue
            r = {"v": 1, "id": rid, "ok": True, "key": "default",
                 "signature": base64.b64encode(os.urandom(256)).decode()}
            if mode == "garbage":
                r["cert_sha256"] = fp
            send(c, r)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
	python3 "$T/fake.py" "$1" "$T/sock" "$2" 3>&- &
	DAEMON_PIDS+=($!)
	local i
	for i in $(seq 50); do [ -S "$1" ] && return 0; sleep 0.1; done
	return 1
}

# Point 2 of issue 27: a member holding no key that answers every `sign`
# at once with random bytes had the honest host dropped ("signs with
# another key than the first reply") and its garbage written, exit 0.
@test "pool-member-random-signatures-never-written" {
	fake_member "$T/fake.sock" nofp
	run timeout "$BOUND" "$C" --server "unix:$T/fake.sock" --server "unix:$T/sock" \
		sign --recursive tree
	refute [ "$status" -eq 124 ]
	assert_success
	assert_output --partial "unix:$T/fake.sock: its signature is malformed"
	refute_output --partial "unix:$T/sock:"
	all_by rsa.pem.crt
}

@test "pool-member-random-signatures-copied-fingerprint-never-written" {
	# Copying the honest cert_sha256 passed the fingerprint check: its
	# share was written as it came.
	fake_member "$T/fake.sock" garbage
	find tree -name '*.ko' | sort >list
	run timeout "$BOUND" "$C" --server "unix:$T/fake.sock" --server "unix:$T/sock" \
		sign --recursive tree
	assert_success
	assert_output --partial "unix:$T/fake.sock: its signature is malformed"
	all_by rsa.pem.crt
	cp -a pristine tree2
	run timeout "$BOUND" "$C" --server "unix:$T/fake.sock" --server "unix:$T/sock" \
		sign-file --batch sha256 modsign:default rsa.pem.crt < <(sed s/^tree/tree2/ list)
	assert_success
	"$C" verify --cert rsa.pem.crt $(find tree2 -name '*.ko')
}

@test "pool-member-random-signatures-alone-nothing-written" {
	# The garbage member is the only server: each module named, none
	# written, exit 1.
	fake_member "$T/fake.sock" garbage
	run timeout "$BOUND" "$C" --server "unix:$T/fake.sock" sign --recursive tree
	assert_failure 1
	assert_equal "$(grep -c ': malformed signature from modsignd$' <<<"$output")" 3
	diff -r pristine tree
}

@test "pool-twin-all-honest-byte-identical" {
	# Two honest servers, same key: every module signed, byte for byte
	# what one server alone makes (RSA PKCS#1 v1.5 is deterministic).
	start_daemon "$T/sock2" --key "default=$T/rsa.pem" --audit-log "$T/audit2.log"
	cp -a pristine alone
	"$C" sign --recursive alone
	run timeout "$BOUND" "$C" --server "unix:$T/sock" --server "unix:$T/sock2" \
		sign --recursive tree
	assert_success
	assert_output ""
	diff -r alone tree
	cp -a pristine tree2
	find tree2 -name '*.ko' | sort >list
	run timeout "$BOUND" "$C" --server "unix:$T/sock" --server "unix:$T/sock2" \
		sign-file --batch sha256 modsign:default rsa.pem.crt <list
	assert_success
	assert_output ""
	diff -r alone tree2
}

# Point 3 of issue 27: one member failed a whole batch.
@test "pool-member-refusing-fails-over" {
	# It refused (its policy) each module it got: those failed, exit 1,
	# though the honest host could sign them.
	fake_member "$T/fake.sock" refuse
	run timeout "$BOUND" "$C" --server "unix:$T/fake.sock" --server "unix:$T/sock" \
		sign --recursive tree
	assert_success
	assert_output ""
	[ "$(cat fake.asked)" -ge 1 ]
	all_by rsa.pem.crt
}

@test "pool-twin-refused-by-every-server-named-once" {
	# A refusal every server makes stands: each module named once, with
	# the reason, none written, and the batch ends.
	fake_member "$T/fake.sock" refuse
	run timeout "$BOUND" "$C" --server "unix:$T/fake.sock" --server "unix:$T/fake.sock" \
		sign --recursive tree
	refute [ "$status" -eq 124 ]
	assert_failure 1
	assert_equal "${#lines[@]}" 3
	assert_equal "$(grep -c 'modsignd refused: module .* not allowed for this client$' <<<"$output")" 3
	diff -r pristine tree
}

@test "pool-batch-member-unknown-key-at-cert-not-used" {
	# sign-file --batch asked `cert` of the first server only: "unknown
	# key" there failed the batch at once.
	fake_member "$T/fake.sock" nokey
	find tree -name '*.ko' | sort >list
	run timeout "$BOUND" "$C" --server "unix:$T/fake.sock" --server "unix:$T/sock" \
		sign-file --batch sha256 modsign:default rsa.pem.crt <list
	assert_success
	assert_output "modsign-client: unix:$T/fake.sock: not used: cert: unknown key 'default'
modsign-client: using unix:$T/sock"
	[ ! -e fake.asked ]
	all_by rsa.pem.crt
}

@test "pool-batch-member-silent-at-cert-not-used" {
	# One that never answered failed it after 120 s.
	fake_member "$T/fake.sock" silent
	find tree -name '*.ko' | sort >list
	run timeout "$BOUND" "$C" --server "unix:$T/fake.sock" --server "unix:$T/sock" \
		--stall-timeout 1 sign-file --batch sha256 modsign:default rsa.pem.crt <list
	refute [ "$status" -eq 124 ]
	assert_success
	assert_output "modsign-client: unix:$T/fake.sock: not used: no answer to cert (stalled)
modsign-client: using unix:$T/sock"
	all_by rsa.pem.crt
}

# kbuild's per-module calls (review of dd63b44): one process per module,
# on the server its path picks; that server refusing it or returning
# what does not verify failed the module (exit 1, modules_install
# stopped) though the next server could sign it.
per_module_all() { # SERVER... : sign-file each module of tree/, exit status of the last failure
	local m rc=0 a=()
	for m in "$@"; do a+=(--server "$m"); done
	for m in $(find tree -name '*.ko' | sort); do
		"$C" "${a[@]}" sign-file sha256 modsign:default rsa.pem.crt "$m" || rc=$?
	done
	return $rc
}

@test "pool-per-module-member-garbage-fails-over" {
	fake_member "$T/fake.sock" garbage
	run timeout "$BOUND" bash -c "$(declare -f per_module_all); C=$C; \
		per_module_all unix:$T/fake.sock unix:$T/sock"
	assert_success
	[ "$(cat fake.asked)" -ge 1 ]
	all_by rsa.pem.crt
}

@test "pool-per-module-member-refusing-fails-over" {
	fake_member "$T/fake.sock" refuse
	run timeout "$BOUND" bash -c "$(declare -f per_module_all); C=$C; \
		per_module_all unix:$T/fake.sock unix:$T/sock"
	assert_success
	[ "$(cat fake.asked)" -ge 1 ]
	all_by rsa.pem.crt
}

@test "pool-twin-per-module-garbage-alone-module-untouched" {
	# The only server: each module named once, none written, exit 1.
	fake_member "$T/fake.sock" garbage
	run timeout "$BOUND" bash -c "$(declare -f per_module_all); C=$C; \
		per_module_all unix:$T/fake.sock"
	assert_failure 1
	assert_equal "${#lines[@]}" 3
	assert_equal "$(grep -c ': malformed signature from modsignd$' <<<"$output")" 3
	diff -r pristine tree
}

@test "pool-twin-per-module-refused-by-every-server-asked-once-each" {
	# A refusal every server makes stands: each server asked once per
	# module, no loop, none written.
	fake_member "$T/fake.sock" refuse
	run timeout "$BOUND" bash -c "$(declare -f per_module_all); C=$C; \
		per_module_all unix:$T/fake.sock unix:$T/fake.sock"
	assert_failure 1
	assert_equal "$(cat fake.asked)" 6
	assert_equal "$(grep -c 'modsignd refused: module .* not allowed for this client$' <<<"$output")" 6
	diff -r pristine tree
}

@test "pool-members-silent-at-cert-cost-one-stall-not-one-each" {
	# Review of dd63b44: the `cert` replies were read one after the
	# other, each read with a stall timeout of its own: two silent
	# members held the batch for two stalls, n for n (up to 64).
	fake_member "$T/fake.sock" silent
	find tree -name '*.ko' | sort >list
	local t0=$(date +%s%N)
	run timeout "$BOUND" "$C" --server "unix:$T/fake.sock" --server "unix:$T/fake.sock" \
		--server "unix:$T/fake.sock" --server "unix:$T/sock" \
		--stall-timeout 2 sign-file --batch sha256 modsign:default rsa.pem.crt <list
	local ms=$((($(date +%s%N) - t0) / 1000000))
	assert_success
	assert_equal "$(grep -c 'not used: no answer to cert (stalled)$' <<<"$output")" 3
	echo "took $ms ms" >&2
	[ "$ms" -lt 3500 ]
	all_by rsa.pem.crt
}

@test "pool-twin-members-answering-cert-late-within-the-stall-used" {
	# One deadline for all, the stall timeout: members whose `cert` comes
	# late, within it, are used, however many.
	fake_member "$T/late.sock" latecert
	run timeout "$BOUND" "$C" --server "unix:$T/late.sock" --server "unix:$T/late.sock" \
		--server "unix:$T/sock" --stall-timeout 2 sign --recursive tree
	assert_success
	assert_output ""
	[ "$(cat fake.asked)" -ge 1 ]
	all_by rsa.pem.crt
}

# ---- 4. a module name with a newline or an escape sequence ---------------
# Whoever can name a file in a tree root signs or attaches (--recursive)
# chose what root's terminal and build log showed: a newline let a name
# print a line of its own ("modsign-client: ... OK"), an ESC sequence
# could rewrite the terminal.

@test "module-name-with-newline-stays-one-line" {
	local evil=$'kernel/fs/x\nmodsign-client: all modules attached\e[2J.ko'
	"$C" sign --detached sigs --recursive tree
	cp -a pristine rebuilt
	cp pristine/kernel/fs/a.ko "rebuilt/$evil"
	run timeout "$BOUND" "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_failure 1
	assert_equal "${#lines[@]}" 1
	assert_output 'modsign-client: sigs/kernel/fs/x\x0amodsign-client: all modules attached\x1b[2J.ko.p7s: cannot read signature: No such file or directory'
}

@test "module-name-twin-plain-utf8-name-printed-as-is" {
	"$C" sign --detached sigs --recursive tree
	cp -a pristine rebuilt
	cp pristine/kernel/fs/a.ko "rebuilt/kernel/fs/é b.ko"
	run timeout "$BOUND" "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_failure 1
	assert_output "modsign-client: sigs/kernel/fs/é b.ko.p7s: cannot read signature: No such file or directory"
}

# ---- 5. two modules, one signature file ----------------------------------
# Two --recursive trees with the same layout (or one module named twice)
# map to the same place in the signature tree: the second signature was
# written over the first, exit 0, and the tree then held one module's
# signature under the other's name.

@test "detached-two-modules-one-signature-path-refused" {
	mkdir -p A/kernel B/kernel
	cp pristine/kernel/fs/a.ko A/kernel/x.ko
	cp pristine/kernel/fs/b.ko B/kernel/x.ko
	run "$C" sign --detached sigs --recursive A --recursive B
	assert_failure 1
	assert_output "modsign-client: B/kernel/x.ko: its signature would go where A/kernel/x.ko's goes (sigs/kernel/x.ko.p7s); not signed"
	cp -a A rebuilt
	"$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	"$C" verify --cert rsa.pem.crt rebuilt/kernel/x.ko
}

@test "detached-twin-two-trees-distinct-paths-both-signed" {
	mkdir -p A/kernel B/kernel
	cp pristine/kernel/fs/a.ko A/kernel/x.ko
	cp pristine/kernel/fs/b.ko B/kernel/y.ko
	run "$C" sign --detached sigs --recursive A --recursive B
	assert_success
	assert_output ""
	[ -f sigs/kernel/x.ko.p7s ] && [ -f sigs/kernel/y.ko.p7s ]
}

# ---- 6. a server that answers with another module's signature -----------
# A compromised or broken server of the pool replies to each request with
# the signature it made for the first: sign-file wrote each module with a
# signature of another, exit 0, and the kernel refused them at load.

@test "pool-reply-with-another-modules-signature-refused" {
	trickle_proxy "$T/replay.sock" 0 1048576 replay
	find tree -name '*.ko' | sort >list
	run timeout "$BOUND" "$C" --server "unix:$T/replay.sock" \
		sign-file --batch sha256 modsign:default rsa.pem.crt <list
	refute [ "$status" -eq 124 ]
	assert_failure 1
	# The first reply's module got its own signature; the two others are
	# named and untouched (which is first is the daemon's order).
	assert_equal "$(grep -c ': the signature from modsignd does not match the module; not signed$' <<<"$output")" 2
	local m signed=0
	for m in $(cat list); do
		if grep -qF "$m: the signature" <<<"$output"; then
			cmp "pristine/${m#tree/}" "$m"
		else
			"$C" verify --cert rsa.pem.crt "$m"
			signed=$((signed + 1))
		fi
	done
	assert_equal "$signed" 1
}

@test "pool-twin-honest-proxy-signs-all" {
	trickle_proxy "$T/replay.sock" 0 1048576
	find tree -name '*.ko' | sort >list
	run timeout "$BOUND" "$C" --server "unix:$T/replay.sock" \
		sign-file --batch sha256 modsign:default rsa.pem.crt <list
	assert_success
	"$C" verify --cert rsa.pem.crt $(cat list)
}

@test "pool-reply-with-another-modules-signature-server-dropped" {
	# With another server in the pool, the one that answered for another
	# module is dropped and its requests signed elsewhere: the batch
	# completes, every module with its own signature.
	trickle_proxy "$T/replay.sock" 0 1048576 replay
	find tree -name '*.ko' | sort >list
	run timeout "$BOUND" "$C" --server "unix:$T/replay.sock" --server "unix:$T/sock" \
		sign-file --batch sha256 modsign:default rsa.pem.crt <list
	assert_success
	assert_output --partial "unix:$T/replay.sock: its signature does not match the module"
	"$C" verify --cert rsa.pem.crt $(cat list)
}

# ---- 7. a directory of the signature tree swapped for a link -------------
# sign --detached made the tree's directories one level at a time with
# O_NOFOLLOW, then wrote each signature by its path: whoever can write in
# the tree swapped a directory for a link once the directories were made
# and before the signatures came back, and root's signatures were written
# where the link led.  A proxy holds the replies until the swap is made.

# held_start ARGS...: modsign-client ARGS (standard input from
# $HELD_STDIN, else /dev/null) through a server that holds its signatures
# until proxy.go exists; returns once the daemon has signed the first
# request and the client has asked for all three modules of tree/ (each
# is opened, and the signature tree's directories are made, before its
# request is sent).  $SIGNER is the client, its output goes to
# signer.out.
held_start() {
	trickle_proxy "$T/hold.sock" 0 1048576 hold
	"$C" --server "unix:$T/hold.sock" "$@" <"${HELD_STDIN:-/dev/null}" \
		>signer.out 2>&1 3>&- &
	SIGNER=$!
	eventually "$BOUND" [ -e proxy.held ]
	eventually "$BOUND" [ "$(cat proxy.asked 2>/dev/null)" = 3 ]
}

# held_end: the held signatures let go; $rc, the client's exit status.
held_end() {
	touch proxy.go
	rc=0
	wait "$SIGNER" || rc=$?
}

# held_swapped DIR MOVED START...: START... (a held_start), and while the
# signatures are held, DIR moved to MOVED and a link to outside/ put in
# its place; then held_end.  Nothing is written where the link leads.
held_swapped() {
	local dir=$1 moved=$2
	shift 2
	mkdir outside
	"$@"
	mv "$dir" "$moved"
	ln -s "$T/outside" "$dir"
	held_end
	[ -z "$(ls outside)" ]
}

detached_held() { held_start sign --detached sigs --recursive tree; }

@test "detached-dir-swapped-for-link-before-write-not-followed" {
	held_swapped sigs/kernel/fs sigs/kernel/fs.made detached_held
	[ -z "$(ls sigs/kernel/fs.made)" ]
	assert_equal "$rc" 1
	run cat signer.out
	assert_line "modsign-client: sigs/kernel/fs/a.ko.p7s: a directory on its path in the signature tree is a link or not a directory"
	assert_line "modsign-client: sigs/kernel/fs/b.ko.p7s: a directory on its path in the signature tree is a link or not a directory"
	assert_equal "${#lines[@]}" 2
	# The module whose directory was left alone is signed.
	cp pristine/kernel/net/c.ko c.ko
	"$C" sign-file -s sigs/kernel/net/c.ko.p7s sha256 rsa.pem.crt c.ko
	"$C" verify --cert rsa.pem.crt c.ko
}

@test "detached-twin-replies-held-no-swap-all-signed" {
	detached_held
	held_end
	assert_equal "$rc" 0
	assert_equal "$(cat signer.out)" ""
	cp -a pristine rebuilt
	"$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	"$C" verify --cert rsa.pem.crt $(find rebuilt -name '*.ko')
}

# attach --from read each signature O_NOFOLLOW, but by its path: a link
# in place of a directory of the tree was followed, to files the tree's
# owner never made there.
@test "attach-link-in-tree-component-not-followed" {
	"$C" sign --detached sigs --recursive tree
	mv sigs/kernel/fs elsewhere
	ln -s "$T/elsewhere" sigs/kernel/fs
	cp -a pristine rebuilt
	run "$C" attach --from sigs --cert rsa.pem.crt --recursive rebuilt
	assert_failure 1
	assert_line "modsign-client: sigs/kernel/fs/a.ko.p7s: cannot read signature: a directory on its path in the signature tree is a link or not a directory"
	assert_equal "${#lines[@]}" 2
	cmp pristine/kernel/fs/a.ko rebuilt/kernel/fs/a.ko
	cmp pristine/kernel/fs/b.ko rebuilt/kernel/fs/b.ko
	"$C" verify --cert rsa.pem.crt rebuilt/kernel/net/c.ko
}

@test "attach-twin-tree-itself-a-link-followed" {
	# DIR itself is the caller's to name, a link or not: it is resolved
	# once, and only what lies below it is walked without links.
	"$C" sign --detached sigs --recursive tree
	ln -s sigs sigs-link
	cp -a pristine rebuilt
	run "$C" attach --from sigs-link --cert rsa.pem.crt --recursive rebuilt
	assert_success
	assert_output ""
	"$C" verify --cert rsa.pem.crt $(find rebuilt -name '*.ko')
}

# ---- 8. one signature file, spelled two ways -----------------------------
# Row 44's check compared the signature paths as strings: "./kernel/x.ko"
# (or "kernel//x.ko") and A's "kernel/x.ko" are one file in the tree, so
# the second module's signature was written over the first's, exit 0.

@test "detached-one-signature-path-spelled-two-ways-refused" {
	mkdir -p A/kernel kernel
	cp pristine/kernel/fs/a.ko A/kernel/x.ko
	cp pristine/kernel/fs/b.ko kernel/x.ko
	run "$C" sign --detached sigs --recursive A ./kernel//x.ko
	assert_failure 1
	assert_output "modsign-client: A/kernel/x.ko: its signature would go where ./kernel//x.ko's goes (sigs/kernel/x.ko.p7s); not signed"
	cp -a kernel rebuilt
	"$C" sign-file -s sigs/kernel/x.ko.p7s sha256 rsa.pem.crt rebuilt/x.ko
}

@test "detached-twin-spelled-path-has-its-place" {
	mkdir kernel
	cp pristine/kernel/fs/b.ko kernel/x.ko
	run "$C" sign --detached sigs ./kernel//./x.ko
	assert_success
	assert_output ""
	assert_equal "$(cd sigs && find . -type f)" "./kernel/x.ko.p7s"
}

# ---- 9. sign-file -d/-p: a module's directory swapped for a link --------
# The .p7s went to its path as it was when the signature came back, the
# module was read (and, -p, replaced) in the directory opened at the
# start: whoever owns a directory on the module's path swapped it for a
# link in between, and root's .p7s was written where the link led (row 1,
# for the signature file).  Now it goes beside the module that was read.

# batch_swapped OPT: sign-file --batch OPT over tree/, kernel/fs swapped
# for a link to outside/ while the signatures are held.
batch_swapped() {
	find tree -name '*.ko' | sort >list
	HELD_STDIN=list held_swapped tree/kernel/fs tree/kernel/fs.read \
		held_start sign-file --batch "$1" sha256 modsign:default rsa.pem.crt
	assert_equal "$rc" 0
	assert_equal "$(cat signer.out)" ""
	cp pristine/kernel/fs/a.ko pristine/kernel/fs/b.ko .
	"$C" sign-file -s tree/kernel/fs.read/a.ko.p7s sha256 rsa.pem.crt a.ko
	"$C" sign-file -s tree/kernel/fs.read/b.ko.p7s sha256 rsa.pem.crt b.ko
}

@test "batch-d-dir-swapped-for-link-p7s-beside-the-module-read" {
	batch_swapped -d
	cmp pristine/kernel/fs/a.ko tree/kernel/fs.read/a.ko
}

@test "batch-p-dir-swapped-for-link-p7s-beside-the-module-signed" {
	batch_swapped -p
	"$C" verify --cert rsa.pem.crt tree/kernel/fs.read/a.ko tree/kernel/fs.read/b.ko
}

@test "batch-twin-replies-held-no-swap-p7s-beside-each-module" {
	find tree -name '*.ko' | sort >list
	HELD_STDIN=list held_start sign-file --batch -d sha256 modsign:default rsa.pem.crt
	held_end
	assert_equal "$rc" 0
	[ -f tree/kernel/fs/a.ko.p7s ] && [ -f tree/kernel/fs/b.ko.p7s ] &&
		[ -f tree/kernel/net/c.ko.p7s ]
}
