#!/usr/bin/env python3
"""Callers of modsign-pkcs11.so that break its rules, through its function
list (ctypes); each case prints PASS/FAIL lines and exits 1 on any FAIL.
Usage: p11-attack.py MODULE CASE ARGS...

  short-buffer KEY DATA OUT  C_Sign (CKM_SHA256_RSA_PKCS, slot 1) first
      with a one-byte buffer (CKR_BUFFER_TOO_SMALL, the operation goes
      on), then with room: the signature, written to OUT, must be of DATA
      (the caller checks it), not of DATA hashed twice.
  update-wraps KEY  C_SignUpdate (CKM_ECDSA, slot 1) of one byte, then of
      (CK_ULONG)-1 bytes: CKR_DATA_LEN_RANGE, never a copy past the
      digest's buffer (the sum wraps to 0).
  cross-slot KEY_A KEY_B  a handle of slot 2's key KEY_B used in a slot 1
      session: no object there (CKR_KEY_HANDLE_INVALID,
      CKR_OBJECT_HANDLE_INVALID), not slot 1's object of that index;
      twin: KEY_A's handle in its own session signs.
  stale-session KEY_B  a session of slot 1 closed, then one of slot 2
      opened: the closed one's handle is invalid, not the new session
      (which would sign with slot 2's KEY_B for the stale holder); twin:
      the new handle signs.
  fork-mid-call HANG KEY_B  slot 1 is a server at HANG (made here) that
      takes the connection and never answers; a thread opens a session
      on it (the module's lock held while it waits), and the process
      forks: the child's C_Initialize must not wait on the lock of a
      thread it does not have (SIGALRM after 10 s); twin: the child then
      signs with KEY_B on slot 2.
  fork-mid-load MARK KEY_B  slot 1 is a tls: server, and the module's
      dlopen() of libssl.so.3 is held (tests/preload-dlopen-hold.c,
      which creates MARK when it holds it); a thread opens a session on
      slot 1 (lib/dlopen.c's lock held while libssl loads), and the
      process forks: the child's own session on slot 1, which loads
      libssl, must not wait on that lock (SIGALRM after 10 s); twin: the
      child then signs with KEY_B on slot 2."""
import ctypes as C
import os
import signal
import socket
import sys
import threading
import time

import p11ctypes as p11
from p11ctypes import (CKA_LABEL, CKM_ECDSA, CKM_ECDSA_SHA256, CKM_SHA256_RSA_PKCS, OK, ULONG,
                       Attr, check, fn, sign_init)

DATA_LEN_RANGE, KEY_HANDLE_INVALID = 0x21, 0x60
OBJECT_HANDLE_INVALID, SESSION_HANDLE_INVALID, BUFFER_TOO_SMALL = 0x82, 0xb3, 0x150

p11.load(sys.argv[1])


def session(slot):
    rv, h = p11.open_session(slot)
    assert rv == OK, f"C_OpenSession({slot}): 0x{rv:x}"
    return h


def private_key(h, name):
    o = p11.find_private_key(h, name)
    assert o is not None, f"key {name} not found"
    return o


def signs(h, key):
    """C_SignInit (CKM_ECDSA_SHA256) with the key handle KEY in session H,
    then C_Sign of b"data": the first rv that is not CKR_OK, or CKR_OK."""
    sig, n = C.create_string_buffer(256), ULONG(256)
    return sign_init(h, CKM_ECDSA_SHA256, key) or p11.sign(h, b"data", sig, n)


def short_buffer(key, data_file, out_file):
    h = session(1)
    data = open(data_file, "rb").read()
    check("p11-short-buffer-sign-init", sign_init(h, CKM_SHA256_RSA_PKCS,
                                                  private_key(h, key)) == OK)
    buf, n = C.create_string_buffer(1024), ULONG(1)
    rv = p11.sign(h, data, buf, n)
    check("p11-short-buffer-too-small", rv == BUFFER_TOO_SMALL and n.value == 256,
          f"rv 0x{rv:x}, {n.value}")
    n = ULONG(1024)
    rv = p11.sign(h, data, buf, n)
    check("p11-short-buffer-then-signs", rv == OK, f"rv 0x{rv:x}")
    open(out_file, "wb").write(buf.raw[:n.value])


def update_wraps(key):
    h = session(1)
    check("p11-update-wraps-sign-init", sign_init(h, CKM_ECDSA, private_key(h, key)) == OK)
    update = fn("SignUpdate", ULONG, C.c_char_p, ULONG)
    check("p11-update-one-byte", update(h, b"\x01", 1) == OK)
    rv = update(h, b"\x01", ULONG(-1).value)
    check("p11-update-wrapping-length-refused", rv == DATA_LEN_RANGE, f"rv 0x{rv:x}")


def cross_slot(key_a, key_b):
    ha, hb = session(1), session(2)
    ka, kb = private_key(ha, key_a), private_key(hb, key_b)
    rv = sign_init(ha, CKM_ECDSA_SHA256, kb)
    check("p11-cross-slot-key-refused", rv == KEY_HANDLE_INVALID,
          f"rv 0x{rv:x}: slot 2's handle {kb} names an object of slot 1")
    label = C.create_string_buffer(64)
    t = Attr(CKA_LABEL, C.cast(label, C.c_void_p), 64)
    rv = fn("GetAttributeValue", ULONG, ULONG, C.POINTER(Attr), ULONG)(ha, kb, C.byref(t), 1)
    check("p11-cross-slot-object-refused", rv == OBJECT_HANDLE_INVALID,
          f"rv 0x{rv:x}, label {label.raw[:t.len] if rv == OK else b''}")
    # Twin: each handle in its own slot's session signs.
    for name, h, k in (("a", ha, ka), ("b", hb, kb)):
        rv = signs(h, k)
        check(f"p11-cross-slot-twin-own-slot-signs-{name}", rv == OK, f"rv 0x{rv:x}")


def stale_session(key_b):
    old = session(1)
    check("p11-stale-session-close", fn("CloseSession", ULONG)(old) == OK)
    new = session(2)
    info = (ULONG * 4)()
    rv = fn("GetSessionInfo", ULONG, C.c_void_p)(old, info)
    check("p11-stale-session-handle-refused", rv == SESSION_HANDLE_INVALID,
          f"rv 0x{rv:x}: closed handle {old} is the new session {new} of slot {info[0]}")
    rv = signs(new, private_key(new, key_b))
    check("p11-stale-session-twin-new-handle-signs", rv == OK, f"rv 0x{rv:x}")


def fork_while_held(case, held, key_b, in_child=lambda: None):
    """The fork cases' frame: a thread opens a session on slot 1, HELD()
    returns once it holds the lock CASE is about, and the process forks.
    The child, killed by SIGALRM if it waits 10 s on the lock of a thread
    it does not have, initializes, runs IN_CHILD, and signs with KEY_B on
    slot 2 (the twin); the parent checks its status.  The thread is still
    held: the process leaves without it."""
    threading.Thread(target=lambda: session(1), daemon=True).start()
    held()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(10)
        rv = fn("Initialize", C.c_void_p)(None)
        check(f"p11-{case}-child-initializes", rv == OK, f"rv 0x{rv:x}")
        in_child()
        h = session(2)
        rv = signs(h, private_key(h, key_b))
        check(f"p11-{case}-twin-child-signs", rv == OK, f"rv 0x{rv:x}")
        os._exit(1 if p11.fails else 0)
    _, status = os.waitpid(pid, 0)
    check(f"p11-{case}-child-done", status == 0,
          f"child status 0x{status:x} (signal {status & 0x7f}: 14 is SIGALRM, it hung)")
    os._exit(1 if p11.fails else 0)


def fork_mid_call(hang, key_b):
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(hang)
    srv.listen(8)
    conns = []  # taken, kept open, never answered
    threading.Thread(target=lambda: conns.extend(srv.accept() for _ in iter(int, 1)),
                     daemon=True).start()
    # The thread's session waits on the silent server, the module's lock held.
    fork_while_held("fork-mid-call", lambda: time.sleep(1), key_b)


def fork_mid_load(mark, key_b):
    def inside_the_load():
        for _ in range(100):
            if os.path.exists(mark):
                break
            time.sleep(0.1)
        check("p11-fork-mid-load-thread-inside-the-load", os.path.exists(mark))

    def loads_libssl():
        session(1)  # its server refuses: a token without objects, libssl loaded
        check("p11-fork-mid-load-child-loads-libssl", True)

    fork_while_held("fork-mid-load", inside_the_load, key_b, loads_libssl)


CASES = {"fork-mid-load": fork_mid_load, "fork-mid-call": fork_mid_call, "stale-session": stale_session, "short-buffer": short_buffer, "update-wraps": update_wraps, "cross-slot": cross_slot}
assert fn("Initialize", C.c_void_p)(None) == OK
CASES[sys.argv[2]](*sys.argv[3:])
fn("Finalize", C.c_void_p)(None)
sys.exit(1 if p11.fails else 0)
