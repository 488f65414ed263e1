#!/usr/bin/env bats
# Attacks by a server of the pool on root's client (review of the client
# since 1ac1a36): a server that trickles its replies, signs with another
# key, holds no key or refuses, or answers with another module's
# signature must neither hang the client nor get a wrong signature
# written.  Each case has its twin that must still work, and its own
# daemon on a key made at run time; the misbehaving server is
# trickle_proxy (dist.bash) or a fake member in front of it.

load ../common
load dist

setup() {
	case_setup
	dist_setup
}

teardown() { case_teardown; }

# ---- 1. a server of the pool that trickles its replies --------------------
# A server that sends a reply one byte every 0.5 s (trickle_proxy,
# dist.bash): a frame never stalls for a whole --stall-timeout, yet never
# ends.

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

# ---- 2. servers of the pool that sign with different keys ----------------
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

# ---- 2b. a member of the pool that holds no key, or refuses -------------
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

# ---- 3. a server that answers with another module's signature -----------
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
