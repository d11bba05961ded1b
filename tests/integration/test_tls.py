#!/usr/bin/env python3
"""test_tls.py WEIR_BIN - tls: and tls-listen: against real peers.

Certificates are made here with the openssl command (a CA; a server for
localhost and 127.0.0.1; a second server certificate for the reload; a
client; an expired one; one for another host name). The peers are
`openssl s_server`, `openssl s_client`, socat's OPENSSL address and
Python's ssl module; every transfer is checked by its SHA-256. Waits are
for events (a port listening, a log line, an exit), bounded by deadlines.
The engine is whatever WEIR_ENGINE says (meson test --setup epoll).
"""
import base64
import hashlib
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

WEIR = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="weir-tls-")
PROCS = []
FAILED = []


def path(name):
    return os.path.join(TMP, name)


def run(args, **kw):
    return subprocess.run(args, cwd=TMP, check=True, capture_output=True, **kw)


def deadline_wait(pred, what, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


# ---- certificates ----

CA_CNF = """[ca]
default_ca = d
[d]
dir = .
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = p
copy_extensions = copy
[p]
commonName = supplied
organizationName = optional
"""


def make_certs():
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
         "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
         "-subj", "/CN=weir test CA"])
    with open(path("ca.cnf"), "w") as f:
        f.write(CA_CNF)
    open(path("index.txt"), "w").close()
    with open(path("serial"), "w") as f:
        f.write("1000\n")

    def leaf(name, subj, san, start=None, end=None):
        run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout",
             name + ".key", "-out", name + ".csr", "-subj", subj,
             "-addext", "subjectAltName=" + san])
        dates = (["-startdate", start, "-enddate", end] if start
                 else ["-days", "30"])
        run(["openssl", "ca", "-batch", "-config", "ca.cnf", "-cert",
             "ca.pem", "-keyfile", "ca.key", "-in", name + ".csr", "-out",
             name + ".pem", "-notext"] + dates)

    here = "DNS:localhost,IP:127.0.0.1"
    leaf("server", "/CN=localhost/O=first", here)
    leaf("server2", "/CN=localhost/O=second", here)
    leaf("client", "/CN=client", "DNS:client")
    leaf("expired", "/CN=localhost", here, "20200101000000Z",
         "20200201000000Z")
    leaf("wrong", "/CN=elsewhere.example", "DNS:elsewhere.example")


def make_file(name, size):
    data = os.urandom(size)
    with open(path(name), "wb") as f:
        f.write(data)
    return hashlib.sha256(data).hexdigest()


def sha(name):
    with open(path(name), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ---- processes and ports ----

_next_port = [0]


def free_port():
    """A free loopback port below the kernel's ephemeral range: a port the
    kernel hands out for bind(0) can be taken by any test's outgoing
    connection before the server listens on it."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        high = int(f.read().split()[0])
    low = 10000
    if high <= low + 1000:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return port
    span = high - low
    if _next_port[0] == 0:
        _next_port[0] = (os.getpid() * 2654435761) % span + 1
    for _ in range(span):
        port = low + _next_port[0] % span
        _next_port[0] += 1
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port")


def listening(port):
    """True once something listens on 127.0.0.1:port (/proc/net/tcp)."""
    want = "0100007F:%04X" % port
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == want and fields[3] == "0A":
                return True
    return False


def spawn(args, **kw):
    p = subprocess.Popen(args, cwd=TMP, **kw)
    PROCS.append(p)
    return p


def s_server(port, cert, key, out, extra=()):
    # Its stdin stays open: s_server ends the connection at stdin's EOF.
    p = spawn(["openssl", "s_server", "-quiet", "-naccept", "1", "-accept",
               "127.0.0.1:%d" % port, "-cert", cert, "-key", key] +
              list(extra), stdin=subprocess.PIPE,
              stdout=open(path(out), "wb"), stderr=subprocess.DEVNULL)
    deadline_wait(lambda: listening(port), "s_server on %d" % port)
    return p


class Weir:
    def __init__(self, name, body):
        self.log = path(name + ".log")
        self.conf = path(name + ".conf")
        with open(self.conf, "w") as f:
            f.write(body)
        self.p = spawn([WEIR, "-v", "-c", self.conf],
                       stdout=subprocess.DEVNULL,
                       stderr=open(self.log, "wb"))

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def wait_log(self, needle, count=1, timeout=30.0):
        deadline_wait(lambda: self.text().count(needle) >= count,
                      "'%s' in %s:\n%s" % (needle, self.log, self.text()),
                      timeout)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(30)
        assert rc == 0, "weir exited %d:\n%s" % (rc, self.text())
        text = self.text()
        assert "ERROR" not in text and "Sanitizer" not in text and \
            "runtime error" not in text, text


def pipe(*addrs, timeout=60):
    r = subprocess.run([WEIR, "pipe"] + list(addrs), cwd=TMP,
                       capture_output=True, text=True, timeout=timeout)
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, \
        r.stderr
    return r


def client_ctx(cert=None):
    ctx = ssl.create_default_context(cafile=path("ca.pem"))
    if cert:
        ctx.load_cert_chain(path(cert + ".pem"), path(cert + ".key"))
    return ctx


def tls_read(port, cert=None, server_name="localhost", alpn=None,
             want_alpn=None):
    """Reads a tls-listen sink to its end; (sha, the server cert's O).
    With alpn, offers those protocols and checks the one chosen."""
    ctx = client_ctx(cert)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    with socket.create_connection(("127.0.0.1", port), 30) as raw:
        with ctx.wrap_socket(raw, server_hostname=server_name) as s:
            if alpn:
                assert s.selected_alpn_protocol() == want_alpn, \
                    "ALPN chose %r" % s.selected_alpn_protocol()
            org = dict(x[0] for x in s.getpeercert()["subject"])
            h = hashlib.sha256()
            while True:
                b = s.recv(1 << 16)
                if not b:
                    break
                h.update(b)
            return h.hexdigest(), org.get("organizationName")


# ---- the tests ----

def test_sink_into_s_server():
    want = make_file("sink.bin", 8 << 20)
    port = free_port()
    srv = s_server(port, "server.pem", "server.key", "sink.out")
    r = pipe("file:sink.bin", "tls:127.0.0.1:%d,ca=ca.pem" % port)
    assert r.returncode == 0, r.stderr
    srv.stdin.close()
    srv.wait(30)
    assert sha("sink.out") == want, "s_server got other bytes"
    # A name instead of the address: SNI and the name check.
    port = free_port()
    srv = s_server(port, "server.pem", "server.key", "sink2.out")
    r = pipe("file:sink.bin", "openssl:localhost:%d,ca=ca.pem" % port)
    assert r.returncode == 0, r.stderr
    srv.stdin.close()
    srv.wait(30)
    assert sha("sink2.out") == want


def test_tls_source():
    # A Python TLS server: s_server, given a file on stdin, stopped after
    # its first record here unless slowed down (under strace it sent all).
    want = make_file("src.bin", 4 << 20)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(path("server.pem"), path("server.key"))
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)

    def serve():
        c, _ = ls.accept()
        with ctx.wrap_socket(c, server_side=True) as s:
            with open(path("src.bin"), "rb") as f:
                s.sendall(f.read())
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    r = pipe("tls:localhost:%d,ca=ca.pem" % ls.getsockname()[1],
             "file:src.out")
    th.join(30)
    ls.close()
    assert r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr)
    assert sha("src.out") == want, "the tls source read other bytes"


def test_broadcast_over_tls():
    open(path("live.log"), "w").close()
    port = free_port()
    w = Weir("bcast", """[pipeline live]
source = file:%s
follow = yes
sink = tls-listen:127.0.0.1:%d,cert=%s,key=%s
""" % (path("live.log"), port, path("server.pem"), path("server.key")))
    w.wait_log("listening on")
    raw = socket.create_connection(("127.0.0.1", port), 30)
    s = client_ctx().wrap_socket(raw, server_hostname="localhost")
    w.wait_log("is a branch of the broadcast")
    lines = b"".join(b"line %d\n" % i for i in range(1000))
    with open(path("live.log"), "ab") as f:
        f.write(lines)
    got = b""
    s.settimeout(30)
    while len(got) < len(lines):
        b = s.recv(1 << 16)
        assert b, "the broadcast ended early"
        got += b
    assert got == lines
    s.close()
    w.stop()


def test_clients_of_tls_listen():
    want = make_file("serve.bin", 6 << 20)
    small = make_file("small.bin", 300 << 10)  # a size plain TCP splices
    port, port2 = free_port(), free_port()
    w = Weir("serve", """[pipeline files]
source = file:%s
sink = tls-listen:127.0.0.1:%d,cert=%s,key=%s,handshake_timeout=2s

[pipeline small]
source = file:%s
sink = tls-listen:127.0.0.1:%d,cert=%s,key=%s,alpn=h2:http/1.1
""" % (path("serve.bin"), port, path("server.pem"), path("server.key"),
       path("small.bin"), port2, path("server.pem"), path("server.key")))
    w.wait_log("listening on", 2)
    assert tls_read(port2)[0] == small, "a small file over TLS"
    # ALPN: the server's first protocol that the client offers, or none.
    assert tls_read(port2, alpn=["spdy/1", "http/1.1"],
                    want_alpn="http/1.1")[0] == small, "ALPN http/1.1"
    assert tls_read(port2, alpn=["spdy/1"], want_alpn=None)[0] == small, \
        "no ALPN in common"

    r = subprocess.run(["openssl", "s_client", "-quiet", "-verify_return_error",
                        "-CAfile", "ca.pem", "-servername", "localhost",
                        "-connect", "127.0.0.1:%d" % port], cwd=TMP,
                       stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(r.stdout).hexdigest() == want, "s_client"
    r = subprocess.run(["socat", "-u", "OPENSSL:127.0.0.1:%d,cafile=ca.pem" %
                        port, "-"], cwd=TMP, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(r.stdout).hexdigest() == want, "socat"
    assert tls_read(port)[0] == want, "python ssl"
    # A peer that never says hello: the handshake times out, the
    # connection is closed, and the others were served meanwhile.
    mute = socket.create_connection(("127.0.0.1", port), 30)
    assert tls_read(port)[0] == want, "served beside a mute peer"
    mute.settimeout(60)
    assert mute.recv(1) == b"", "the mute peer's connection stayed"
    mute.close()
    w.wait_log("the handshake did not finish within 2.0 s")
    w.stop()


def echo_upstream():
    """A plain TCP server that sends back what it reads, then closes."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)

    def serve():
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            with c:
                while True:
                    b = c.recv(1 << 16)
                    if not b:
                        break
                    c.sendall(b)
    threading.Thread(target=serve, daemon=True).start()
    return ls


def test_proxy_to_plain_upstream():
    want = make_file("proxy.bin", 4 << 20)
    up = echo_upstream()
    port = free_port()
    w = Weir("proxy", """[pipeline px]
source = tls-listen:127.0.0.1:%d,cert=%s,key=%s
sink = tcp:127.0.0.1:%d
""" % (port, path("server.pem"), path("server.key"), up.getsockname()[1]))
    w.wait_log("listening on")
    r = subprocess.run(["socat", "-t", "30", "OPENSSL:127.0.0.1:%d,cafile="
                        "ca.pem,commonname=localhost" % port, "-"], cwd=TMP,
                       stdin=open(path("proxy.bin"), "rb"),
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(r.stdout).hexdigest() == want, \
        "%d bytes came back" % len(r.stdout)
    # Plain TCP into tls-listen: refused with the reason.
    plain = socket.create_connection(("127.0.0.1", port), 30)
    plain.sendall(b"GET / HTTP/1.0\r\n\r\n")
    plain.settimeout(60)
    try:
        while plain.recv(1 << 16):
            pass
    except ConnectionError:
        pass
    plain.close()
    w.wait_log("does not speak TLS on this port")
    w.stop()
    up.close()


def test_mutual_tls():
    want = make_file("mtls.bin", 1 << 20)
    port = free_port()
    w = Weir("mtls", """[pipeline files]
source = file:%s
sink = tls-listen:127.0.0.1:%d,cert=%s,key=%s,ca=%s
""" % (path("mtls.bin"), port, path("server.pem"), path("server.key"),
       path("ca.pem")))
    w.wait_log("listening on")
    assert tls_read(port, cert="client")[0] == want
    r = subprocess.run(["openssl", "s_client", "-quiet", "-CAfile", "ca.pem",
                        "-cert", "client.pem", "-key", "client.key",
                        "-connect", "127.0.0.1:%d" % port], cwd=TMP,
                       stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=60)
    assert hashlib.sha256(r.stdout).hexdigest() == want, "s_client with cert"
    # Without a certificate: refused, and said why, once a minute.
    for _ in range(2):
        try:
            got = tls_read(port)[0]
        except (ssl.SSLError, ConnectionError):
            got = None
        assert got != want, "a client without a certificate was served"
    w.wait_log("the client must present a certificate")
    text = w.text()
    assert "peer did not return a certificate" in text, text
    assert text.count("TLS handshake with 127.0.0.1 failed") == 1, text
    # Another reason from the same peer is said at once: the limit is per
    # address and reason, not per peer.
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port), 30) as plain:
            plain.sendall(b"GET / HTTP/1.0\r\n\r\n")
            plain.settimeout(30)
            try:
                plain.recv(100)
            except OSError:
                pass
    w.wait_log("the peer does not speak TLS on this port")
    text = w.text()
    assert text.count("TLS handshake with 127.0.0.1 failed") == 2, text
    # What the limit held back is counted, and said at exit: one more
    # without a certificate, two more plain-text ones.
    w.stop()
    text = w.text()
    assert re.search(r"1 more TLS handshake failed \([^)]*did not return a "
                     r"certificate", text), text
    assert re.search(r"2 more TLS handshakes failed \([^)]*(wrong version|"
                     r"http request|packet length)", text), text


def expect_verify_failure(cert, key, target, needle, hint):
    port = free_port()
    srv = s_server(port, cert, key, "verify.out")
    r = pipe("file:verify.in", target % port)
    srv.stdin.close()
    srv.wait(30)
    assert r.returncode != 0, "verified: " + r.stderr
    assert "TLS handshake with 127.0.0.1 failed: " + needle in r.stderr, \
        r.stderr
    assert hint in r.stderr, r.stderr


def test_verify_failures():
    make_file("verify.in", 4096)
    expect_verify_failure("wrong.pem", "wrong.key",
                          "tls:localhost:%d,ca=ca.pem",
                          "certificate verify failed: hostname mismatch",
                          "set sni= to one")
    expect_verify_failure("expired.pem", "expired.key",
                          "tls:127.0.0.1:%d,ca=ca.pem",
                          "certificate verify failed: certificate has "
                          "expired", "renew it")
    expect_verify_failure("server.pem", "server.key", "tls:127.0.0.1:%d",
                          "certificate verify failed: unable to get local "
                          "issuer certificate", "set ca= or verify=no")
    # With ca= set, the hint is not to set it: the server's CA is not in it.
    expect_verify_failure("server.pem", "server.key",
                          "tls:127.0.0.1:%d,ca=client.pem",
                          "certificate verify failed: unable to get local "
                          "issuer certificate", "is not issued by a CA in ca=")
    # verify=no takes what it gets.
    want = sha("verify.in")
    port = free_port()
    srv = s_server(port, "wrong.pem", "wrong.key", "verify.out")
    r = pipe("file:verify.in", "tls:127.0.0.1:%d,verify=no" % port)
    assert r.returncode == 0, r.stderr
    srv.stdin.close()
    srv.wait(30)
    assert sha("verify.out") == want


def test_check():
    conf = path("check.conf")

    def check(sink):
        with open(conf, "w") as f:
            f.write("[pipeline c]\nsource = file:%s\nsink = %s\n" %
                    (path("verify.in"), sink))
        return subprocess.run([WEIR, "--check", "-c", conf], cwd=TMP,
                              capture_output=True, text=True)

    ok = check("tls-listen:127.0.0.1:1,cert=server.pem,key=server.key")
    assert ok.returncode == 0, ok.stderr
    for sink, needle in [
            ("tls-listen:127.0.0.1:1,cert=server.pem,key=client.key",
             "does not belong to cert"),
            ("tls-listen:127.0.0.1:1,cert=nothere.pem,key=server.key",
             "No such file"),
            ("tls-listen:127.0.0.1:1,cert=ca.cnf,key=server.key",
             "cert ca.cnf"),
            ("tls-listen:127.0.0.1:1", "needs cert="),
            ("tls:127.0.0.1:1,min_version=1.1", "not a version"),
            ("tcp:127.0.0.1:1,cert=server.pem", "applies to tls"),
            ("tls:127.0.0.1:1,cafile=ca.pem", "ca=FILE")]:
        r = check(sink)
        assert r.returncode == 78, sink + ": " + r.stderr
        assert conf + ":3: " in r.stderr and needle in r.stderr, \
            sink + ": " + r.stderr


def test_reload_swaps_certificate():
    size = 48 << 20
    want = make_file("big.bin", size)
    shutil.copy(path("server.pem"), path("live.pem"))
    shutil.copy(path("server.key"), path("live.key"))
    port = free_port()
    w = Weir("reload", """[pipeline files]
source = file:%s
sink = tls-listen:127.0.0.1:%d,cert=%s,key=%s
high_water_mark = 256KiB
""" % (path("big.bin"), port, path("live.pem"), path("live.key")))
    w.wait_log("listening on")
    raw = socket.create_connection(("127.0.0.1", port), 30)
    s = client_ctx().wrap_socket(raw, server_hostname="localhost")
    assert dict(x[0] for x in s.getpeercert()["subject"])[
        "organizationName"] == "first"
    h = hashlib.sha256()
    got = 0
    while got < (1 << 20):
        b = s.recv(1 << 16)
        assert b, "the first transfer ended early"
        h.update(b)
        got += len(b)
    # The first client holds the rest back while the files change.
    shutil.copy(path("server2.key"), path("live.key.new"))
    shutil.copy(path("server2.pem"), path("live.pem.new"))
    os.replace(path("live.key.new"), path("live.key"))
    os.replace(path("live.pem.new"), path("live.pem"))
    w.p.send_signal(signal.SIGHUP)
    w.wait_log("reloaded ")
    sha2, org = tls_read(port)
    assert org == "second", "a new client got the old certificate"
    assert sha2 == want
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        h.update(b)
        got += len(b)
    s.close()
    assert got == size and h.hexdigest() == want, \
        "the running transfer lost bytes: %d of %d" % (got, size)
    w.stop()


def main():
    tests = [test_sink_into_s_server, test_tls_source,
             test_broadcast_over_tls, test_clients_of_tls_listen,
             test_proxy_to_plain_upstream, test_mutual_tls,
             test_verify_failures, test_check,
             test_reload_swaps_certificate]
    try:
        make_certs()
        for t in tests:
            try:
                t()
                print("ok    " + t.__name__, flush=True)
            except Exception as e:  # report every test, then fail
                FAILED.append(t.__name__)
                print("FAIL  %s: %r" % (t.__name__, e), flush=True)
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(TMP, ignore_errors=True)
    if FAILED:
        print("failed: " + ", ".join(FAILED))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
