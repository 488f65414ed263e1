#!/usr/bin/env python3
"""modsign-pkcs11.so's PKCS#11 3.0 interfaces through ctypes:
C_GetInterfaceList offers "PKCS 11" 3.0 then 2.40; C_GetInterface finds
each (2.40's is C_GetFunctionList's list), and refuses a version, a name
or a flag it does not have; the 3.0 list works (C_Initialize,
C_GetSlotList) and its 3.0-only functions other than the two lookups
return CKR_FUNCTION_NOT_SUPPORTED.  Prints PASS/FAIL lines; exits 1 on
any FAIL.  Usage: p11-interface.py MODULE."""
import ctypes as C
import sys

OK, BAD, TOO_SMALL, NOT_SUPPORTED = 0, 0x7, 0x150, 0x54
CKF_INTERFACE_FORK_SAFE = 1
# Indices into a function list after its CK_VERSION: 2.40 has 68, 3.0
# adds 24 (C_GetInterfaceList 68, C_GetInterface 69, C_LoginUser 70,
# C_SessionCancel 71, C_MessageEncryptInit 72, ... C_MessageSignInit 82,
# ... C_MessageVerifyFinal 91).
INITIALIZE, FINALIZE, GET_SLOT_LIST = 0, 1, 4
GET_INTERFACE_LIST, GET_INTERFACE, LOGIN_USER, SESSION_CANCEL = 68, 69, 70, 71
MESSAGE_SIGN_INIT, MESSAGE_VERIFY_FINAL = 82, 91

lib = C.CDLL(sys.argv[1])
fails = 0


class Version(C.Structure):
    _fields_ = [("major", C.c_ubyte), ("minor", C.c_ubyte)]


class Interface(C.Structure):
    _fields_ = [("name", C.c_char_p), ("functions", C.c_void_p), ("flags", C.c_ulong)]


def check(name, ok, why=""):
    global fails
    if ok:
        print(f"PASS {name}")
    else:
        fails += 1
        print(f"FAIL {name}: {why}")


def version_of(flist):
    v = C.cast(flist, C.POINTER(Version)).contents
    return (v.major, v.minor)


def fn(flist, index, *argtypes):
    ptr = C.cast(flist, C.POINTER(C.c_void_p))[1 + index]
    return C.CFUNCTYPE(C.c_ulong, *argtypes)(ptr)


get_list = lib.C_GetInterfaceList
get_list.argtypes = [C.POINTER(Interface), C.POINTER(C.c_ulong)]
get_if = lib.C_GetInterface
get_if.argtypes = [C.c_char_p, C.POINTER(Version), C.POINTER(C.POINTER(Interface)), C.c_ulong]

n = C.c_ulong(0)
rv = get_list(None, C.byref(n))
check("p11-interface-list-count", rv == OK and n.value == 2, f"rv 0x{rv:x}, {n.value}")
one = C.c_ulong(1)
rv = get_list((Interface * 1)(), C.byref(one))
check("p11-interface-list-too-small-refused", rv == TOO_SMALL and one.value == 2,
      f"rv 0x{rv:x}")
lst = (Interface * 2)()
rv = get_list(lst, C.byref(n))
got = [(i.name, version_of(i.functions), i.flags) for i in lst] if rv == OK else rv
check("p11-interface-list-3.0-then-2.40",
      got == [(b"PKCS 11", (3, 0), 0), (b"PKCS 11", (2, 40), 0)], f"{got}")

v2 = C.c_void_p()
lib.C_GetFunctionList(C.byref(v2))


def lookup(name, version=None, flags=0):
    p = C.POINTER(Interface)()
    rv = get_if(name, C.byref(Version(*version)) if version else None, C.byref(p), flags)
    return rv, (p.contents if rv == OK else None)


rv, it = lookup(b"PKCS 11")
check("p11-interface-default-is-3.0", rv == OK and version_of(it.functions) == (3, 0),
      f"rv 0x{rv:x}")
f3 = it.functions if it else None
rv, it = lookup(None)
check("p11-interface-no-name-is-3.0", rv == OK and it.functions == f3, f"rv 0x{rv:x}")
rv, it = lookup(b"PKCS 11", (2, 40))
check("p11-interface-2.40-is-the-function-list", rv == OK and it.functions == v2.value,
      f"rv 0x{rv:x}")
rv, it = lookup(b"PKCS 11", (3, 0))
check("p11-interface-3.0-by-version", rv == OK and it.functions == f3, f"rv 0x{rv:x}")
# Twins: what it does not offer is not found.
for name, args in (("version-3.1", (b"PKCS 11", (3, 1))),
                   ("vendor-name", (b"Vendor NSS", None)),
                   ("fork-safe-flag", (b"PKCS 11", None, CKF_INTERFACE_FORK_SAFE))):
    rv, _ = lookup(*args)
    check(f"p11-interface-{name}-refused", rv == BAD, f"rv 0x{rv:x}")
rv = get_if(b"PKCS 11", None, None, 0)
check("p11-interface-null-out-refused", rv == BAD, f"rv 0x{rv:x}")

if f3:
    rv = fn(f3, INITIALIZE, C.c_void_p)(None)
    check("p11-interface-3.0-initialize", rv == OK, f"rv 0x{rv:x}")
    n = C.c_ulong(0)
    rv = fn(f3, GET_SLOT_LIST, C.c_ubyte, C.c_void_p, C.POINTER(C.c_ulong))(1, None, C.byref(n))
    check("p11-interface-3.0-slot-list", rv == OK and n.value >= 1, f"rv 0x{rv:x}")
    n = C.c_ulong(0)
    rv = fn(f3, GET_INTERFACE_LIST, C.c_void_p, C.POINTER(C.c_ulong))(None, C.byref(n))
    check("p11-interface-3.0-lists-itself", rv == OK and n.value == 2, f"rv 0x{rv:x}")
    for i in (LOGIN_USER, SESSION_CANCEL, MESSAGE_SIGN_INIT, MESSAGE_VERIFY_FINAL):
        rv = fn(f3, i)()
        check(f"p11-interface-3.0-function-{i}-not-supported", rv == NOT_SUPPORTED,
              f"rv 0x{rv:x}")
    rv = fn(f3, FINALIZE, C.c_void_p)(None)
    check("p11-interface-3.0-finalize", rv == OK, f"rv 0x{rv:x}")
sys.exit(1 if fails else 0)
