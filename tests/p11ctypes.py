"""modsign-pkcs11.so through its function list (ctypes): what the tests'
callers of it share (tests/p11-fork.py, tests/p11-attack.py; each runs as
"python3 tests/NAME.py", which puts tests/ first on sys.path, so a plain
"import p11ctypes" finds this file whatever the cwd).

load(MODULE) first; then fn(NAME, ARGTYPES...) is that entry of the list
(every one returns a CK_RV), and the helpers below call through it.
check() prints a PASS or FAIL line and counts the FAILs in fails; a
caller exits 1 if any (a forked child counts its own)."""
import ctypes as C

ULONG = C.c_ulong
OK = 0
CKF_SERIAL_SESSION, CKA_CLASS, CKA_LABEL, CKO_PRIVATE_KEY = 4, 0, 3, 3
CKM_SHA256_RSA_PKCS, CKM_ECDSA, CKM_ECDSA_SHA256 = 0x40, 0x1041, 0x1044
# Indices into CK_FUNCTION_LIST after its CK_VERSION (PKCS#11 2.40 order).
IDX = dict(Initialize=0, Finalize=1, GetInfo=2, OpenSession=12, CloseSession=13,
           GetSessionInfo=15, GetAttributeValue=24, FindObjectsInit=26, FindObjects=27,
           FindObjectsFinal=28, SignInit=42, Sign=43, SignUpdate=44)

_flist = None
fails = 0


def load(path):
    """Load the module at PATH and take its function list."""
    global _flist
    _flist = C.POINTER(C.c_void_p)()
    C.CDLL(path).C_GetFunctionList(C.byref(_flist))


def fn(name, *argtypes):
    ptr = C.cast(_flist, C.POINTER(C.c_void_p))[1 + IDX[name]]
    return C.CFUNCTYPE(ULONG, *argtypes)(ptr)


class Attr(C.Structure):
    _fields_ = [("type", ULONG), ("p", C.c_void_p), ("len", ULONG)]


class Mech(C.Structure):
    _fields_ = [("m", ULONG), ("p", C.c_void_p), ("len", ULONG)]


def check(name, ok, why=""):
    global fails
    if ok:
        print(f"PASS {name}", flush=True)
    else:
        fails += 1
        print(f"FAIL {name}: {why}", flush=True)


def open_session(slot):
    """C_OpenSession of SLOT: (its rv, the session's handle)."""
    h = ULONG()
    rv = fn("OpenSession", ULONG, ULONG, C.c_void_p, C.c_void_p, C.POINTER(ULONG))(
        slot, CKF_SERIAL_SESSION, None, None, C.byref(h))
    return rv, h.value


def find_private_key(h, name):
    """The handle of the private key labelled NAME in session H, or None
    unless exactly one is found."""
    cls, label = ULONG(CKO_PRIVATE_KEY), C.c_char_p(name.encode())
    t = (Attr * 2)(Attr(CKA_CLASS, C.cast(C.byref(cls), C.c_void_p), C.sizeof(cls)),
                   Attr(CKA_LABEL, C.cast(label, C.c_void_p), len(name.encode())))
    fn("FindObjectsInit", ULONG, C.c_void_p, ULONG)(h, t, 2)
    o, n = ULONG(), ULONG()
    fn("FindObjects", ULONG, C.POINTER(ULONG), ULONG, C.POINTER(ULONG))(h, C.byref(o), 1,
                                                                       C.byref(n))
    fn("FindObjectsFinal", ULONG)(h)
    return o.value if n.value == 1 else None


def sign_init(h, mech, key):
    """C_SignInit in session H with mechanism MECH (no parameter), KEY."""
    m = Mech(mech, None, 0)
    return fn("SignInit", ULONG, C.POINTER(Mech), ULONG)(h, C.byref(m), key)


def sign(h, data, sig, sig_len):
    """C_Sign of the bytes DATA into the buffer SIG; SIG_LEN a ULONG."""
    return fn("Sign", ULONG, C.c_char_p, ULONG, C.c_void_p, C.POINTER(ULONG))(
        h, data, len(data), sig, C.byref(sig_len))
