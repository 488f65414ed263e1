#!/usr/bin/env python3
"""modsign-pkcs11.so's lifecycle through its function list (ctypes): a
second C_Initialize, C_Finalize and again, 8 threads at once, and fork as p11-kit asks
(the child sees CKR_CRYPTOKI_NOT_INITIALIZED until its own C_Initialize;
the parent's connection still signs).  Prints PASS/FAIL lines; exits 1
on any FAIL.  Usage: p11-fork.py MODULE KEY (a granted EC key's name)."""
import ctypes as C
import os
import sys
import threading

import p11ctypes as p11
from p11ctypes import CKM_ECDSA, OK, fn

NOT_INIT, ALREADY = 0x190, 0x191

p11.load(sys.argv[1])
key = sys.argv[2]


def check(name, got, want):
    p11.check(name, got == want, f"rv 0x{got:x}, expected 0x{want:x}")


init = fn("Initialize", C.c_void_p)
fin = fn("Finalize", C.c_void_p)
info = C.create_string_buffer(256)
getinfo = fn("GetInfo", C.c_void_p)


def session():
    return p11.open_session(1)


def sign(h):
    o = p11.find_private_key(h, key)
    if o is None:
        return 0xffff
    rv = p11.sign_init(h, CKM_ECDSA, o)
    if rv:
        return rv
    sig, sl = C.create_string_buffer(256), C.c_ulong(256)
    return p11.sign(h, b"\x01" * 32, sig, sl)


check("p11-first-initialize", init(None), OK)
check("p11-second-initialize-refused", init(None), ALREADY)
rv, h = session()
check("p11-session", rv, OK)
check("p11-sign-before-fork", sign(h), OK)
pid = os.fork()
if pid == 0:
    sys.stdout.flush()
    check("p11-child-not-initialized", getinfo(info), NOT_INIT)
    check("p11-child-session-refused", session()[0], NOT_INIT)
    check("p11-child-initialize", init(None), OK)
    rv, ch = session()
    check("p11-child-session", rv, OK)
    check("p11-child-signs-on-its-own-connection", sign(ch), OK)
    sys.stdout.flush()
    os._exit(1 if p11.fails else 0)
_, status = os.waitpid(pid, 0)
p11.fails += status != 0
check("p11-parent-signs-after-child", sign(h), OK)
# Threads (ctypes drops the GIL in foreign calls): 8 sessions signing at
# once through the one connection, every signature made.
results = []


def worker():
    rv, th = session()
    results.extend(sign(th) if rv == OK else rv for _ in range(10))


threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check("p11-threads-all-sign", sum(r != OK for r in results) + (len(results) != 80), 0)
check("p11-finalize", fin(None), OK)
check("p11-after-finalize-not-initialized", getinfo(info), NOT_INIT)
check("p11-initialize-again", init(None), OK)
rv, h = session()
check("p11-session-again", rv, OK)
check("p11-sign-again", sign(h), OK)
check("p11-finalize-again", fin(None), OK)
sys.exit(1 if p11.fails else 0)
