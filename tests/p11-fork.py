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

OK, NOT_INIT, ALREADY = 0, 0x190, 0x191
CKF_SERIAL_SESSION, CKA_CLASS, CKA_LABEL, CKO_PRIVATE_KEY, CKM_ECDSA = 4, 0, 3, 3, 0x1041
# Indices into CK_FUNCTION_LIST after its CK_VERSION (PKCS#11 2.40 order).
IDX = dict(Initialize=0, Finalize=1, GetInfo=2, OpenSession=12, CloseSession=13,
           FindObjectsInit=26, FindObjects=27, FindObjectsFinal=28, SignInit=42, Sign=43)

lib = C.CDLL(sys.argv[1])
key = sys.argv[2].encode()
flist = C.POINTER(C.c_void_p)()
lib.C_GetFunctionList(C.byref(flist))
fails = 0


def fn(name, *argtypes):
    ptr = C.cast(flist, C.POINTER(C.c_void_p))[1 + IDX[name]]
    return C.CFUNCTYPE(C.c_ulong, *argtypes)(ptr)


class Attr(C.Structure):
    _fields_ = [("type", C.c_ulong), ("p", C.c_void_p), ("len", C.c_ulong)]


class Mech(C.Structure):
    _fields_ = [("m", C.c_ulong), ("p", C.c_void_p), ("len", C.c_ulong)]


def check(name, got, want):
    global fails
    if got == want:
        print(f"PASS {name}")
    else:
        fails += 1
        print(f"FAIL {name}: rv 0x{got:x}, expected 0x{want:x}")


init = fn("Initialize", C.c_void_p)
fin = fn("Finalize", C.c_void_p)
info = C.create_string_buffer(256)
getinfo = fn("GetInfo", C.c_void_p)


def session():
    h = C.c_ulong()
    rv = fn("OpenSession", C.c_ulong, C.c_ulong, C.c_void_p, C.c_void_p,
            C.POINTER(C.c_ulong))(1, CKF_SERIAL_SESSION, None, None, C.byref(h))
    return rv, h.value


def sign(h):
    cls = C.c_ulong(CKO_PRIVATE_KEY)
    t = (Attr * 2)(Attr(CKA_CLASS, C.cast(C.byref(cls), C.c_void_p), C.sizeof(cls)),
                   Attr(CKA_LABEL, C.cast(C.c_char_p(key), C.c_void_p), len(key)))
    fn("FindObjectsInit", C.c_ulong, C.c_void_p, C.c_ulong)(h, t, 2)
    o, n = C.c_ulong(), C.c_ulong()
    fn("FindObjects", C.c_ulong, C.POINTER(C.c_ulong), C.c_ulong,
       C.POINTER(C.c_ulong))(h, C.byref(o), 1, C.byref(n))
    fn("FindObjectsFinal", C.c_ulong)(h)
    if n.value != 1:
        return 0xffff
    m = Mech(CKM_ECDSA, None, 0)
    rv = fn("SignInit", C.c_ulong, C.POINTER(Mech), C.c_ulong)(h, C.byref(m), o.value)
    if rv:
        return rv
    sig, sl = C.create_string_buffer(256), C.c_ulong(256)
    return fn("Sign", C.c_ulong, C.c_char_p, C.c_ulong, C.c_void_p,
              C.POINTER(C.c_ulong))(h, b"\x01" * 32, 32, sig, C.byref(sl))


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
    os._exit(1 if fails else 0)
_, status = os.waitpid(pid, 0)
fails += status != 0
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
sys.exit(1 if fails else 0)
