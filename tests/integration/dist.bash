# Loaded by the distribution flow's case files (attach.bats,
# attack-pool.bats and attack-sigtree.bats: load dist, after ../common):
# what their cases start from, and the server in front of the daemon that
# the attacks on the flow use.

BOUND=30 # seconds: a case that takes longer is the hang it checks for

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

# trickle_proxy SOCK DELAY CHUNK [replay|hold]: a server at SOCK that
# passes each request to the real daemon ($T/sock) and sends each reply
# with a signature back CHUNK bytes at a time, DELAY seconds apart (other
# replies, `cert`'s, at once).  Counts the replies it began in
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
