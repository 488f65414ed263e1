"""A TLS client for the attack tests' Python peers, driven by hand.

The heredoc Python of the .bats files imports it (PYTHONPATH=$REPO/tests):
a client context from a CA and a certificate's name, the status request
as one frame (4-byte big-endian length, then JSON), and Peer, a handshake
over memory BIOs whose every send and read on the raw socket the test
orders itself.
"""
import json, ssl, struct


def client_ctx(ca, name):
    """A client context that trusts CA and shows NAME.crt with NAME.key."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(name + ".crt", name + ".key")
    return ctx


def frame(msg):
    """MSG as one request frame: its JSON's length, big-endian, then it."""
    b = json.dumps(msg).encode()
    return struct.pack(">I", len(b)) + b


def frame_of(buf):
    """The message of the first whole frame in BUF, or None."""
    if len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
        return json.loads(buf[4:4 + struct.unpack(">I", buf[:4])[0]])


STATUS = frame({"v": 1, "id": 1, "op": "status"})


class Peer:
    """A TLS client over memory BIOs and the raw socket RAW (which may
    be set later, once hello() has made the ClientHello).  first: the
    first bytes the peer read from RAW (b"" until then)."""

    def __init__(self, ctx, raw=None, server_hostname="localhost"):
        self.raw, self.first = raw, b""
        self.inc, self.outg = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.outg,
                                server_hostname=server_hostname)

    def hello(self):
        """The ClientHello, to be sent by the caller."""
        try: self.obj.do_handshake()
        except ssl.SSLWantReadError: pass
        return self.outg.read()

    def pump(self):
        """Sends what is pending, then reads once from RAW into the
        TLS object; returns what came (b"" at the end)."""
        if self.outg.pending: self.raw.sendall(self.outg.read())
        b = self.raw.recv(65536)
        if not self.first: self.first = b
        if not b: self.inc.write_eof()
        else: self.inc.write(b)
        return b

    def handshake(self):
        """Finishes the handshake; what it writes last (the client's
        Finished) stays pending for the next send."""
        while True:
            try: self.obj.do_handshake(); return
            except ssl.SSLWantReadError:
                if not self.pump(): raise

    def send(self, data):
        """DATA inside TLS, with what is pending, in one write to RAW."""
        self.obj.write(data); self.raw.sendall(self.outg.read())

    def recv_frame(self):
        """The next frame's message; raises at the end of the stream."""
        buf = b""
        while frame_of(buf) is None:
            try: buf += self.obj.read(65536)
            except ssl.SSLWantReadError:
                if not self.pump(): raise
        return frame_of(buf)
