#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""pure-pkcs7.py SIGNED_MODULE RAW_SIGNATURE: turn a module signed by the
kernel's sign-file with an ML-DSA key under OpenSSL 3.5 (signed attributes:
scripts/sign-file.c drops CMS_NOATTR below OpenSSL 4) into the pure form
that sign-file makes with OpenSSL 4: the signer's signed attributes taken
out and its signature replaced by RAW_SIGNATURE, the pure ML-DSA signature
of the whole module (openssl pkeyutl -sign -rawin, empty context).  The
module file is rewritten in place.

This is the test's reference for the pure form, made without modsign, so
that the kernel without the waiver is shown to load something before
modsign's signatures are judged (tests/qemu/mldsa.sh).
"""
import struct
import sys

MAGIC = b"~Module signature appended~\n"


def tlv(buf, off):
    """(tag, header length, content length) of the DER element at off."""
    tag = buf[off]
    n = buf[off + 1]
    if n < 0x80:
        return tag, 2, n
    k = n & 0x7F
    return tag, 2 + k, int.from_bytes(buf[off + 2:off + 2 + k], "big")


def children(buf):
    """The DER elements of a constructed element's content, as bytes."""
    out, off = [], 0
    while off < len(buf):
        _, h, n = tlv(buf, off)
        out.append(buf[off:off + h + n])
        off += h + n
    return out


def content(elem):
    _, h, n = tlv(elem, 0)
    return elem[h:h + n]


def encode(tag, body):
    n = len(body)
    if n < 0x80:
        return bytes([tag, n]) + body
    ln = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(ln)]) + ln + body


def main():
    path, rawsig = sys.argv[1], open(sys.argv[2], "rb").read()
    data = open(path, "rb").read()
    assert data.endswith(MAGIC), "not a signed module"
    info = data[-len(MAGIC) - 12:-len(MAGIC)]
    sig_len = struct.unpack(">I", info[8:12])[0]
    start = len(data) - len(MAGIC) - 12 - sig_len
    module, p7 = data[:start], data[start:start + sig_len]

    ci = children(content(p7))                 # contentType, [0] SignedData
    sd = children(content(content(ci[1])))     # SignedData's fields
    signers = children(content(sd[-1]))
    assert len(signers) == 1, "one signer expected"
    si = children(content(signers[0]))
    si = [e for e in si if e[0] != 0xA0]       # no signedAttrs
    assert si[-1][0] == 0x04, "signature not last"
    si[-1] = encode(0x04, rawsig)
    sd[-1] = encode(0x31, encode(0x30, b"".join(si)))
    p7 = encode(0x30, ci[0] + encode(0xA0, encode(0x30, b"".join(sd))))
    info = info[:8] + struct.pack(">I", len(p7))
    open(path, "wb").write(module + p7 + info + MAGIC)


if __name__ == "__main__":
    main()
