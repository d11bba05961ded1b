#!/usr/bin/env python3
"""test_serve_http.py WEIR_BIN SOURCE_ROOT - http-listen against real clients.

One weir serves a dir source and a file source over HTTP; curl and wget
fetch from it (GET, HEAD, ranges, resume after a cut, If-Modified-Since,
ETags, HTTP/1.0, one connection kept for 100 requests), raw sockets send
what curl would tidy up (pipelined requests, every traversal form of the
fuzz seeds, a slow head). An https-listen sink serves the same root to
curl --cacert and openssl s_client over TLS; with index=yes a directory
is an HTML listing. Every body is compared by its SHA-256 or byte
for byte. Waits are for events (a port listening, a log line, a close),
bounded by deadlines. The engine is whatever WEIR_ENGINE says (meson test
--setup epoll).
"""
import hashlib
import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

WEIR = os.path.abspath(sys.argv[1])
SEEDS = os.path.join(sys.argv[2], "fuzz", "corpus", "http")
TMP = tempfile.mkdtemp(prefix="weir-serve-http-")
ROOT = os.path.join(TMP, "root")
PROCS = []
FAILED = []
ODD_DIR = "d <&> \u00e9"
ODD_FILE = "x & <y> \"q\" \u00e9.txt"
# Written outside the root: no answer may hold it.
SECRET = b"weir-outside-the-root-5f1c"


def path(*names):
    return os.path.join(TMP, *names)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def deadline_wait(pred, what, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


_TAKEN = []


def free_port():
    """A free loopback port below the kernel's ephemeral range, so that no
    test's outgoing connection takes it before weir listens on it."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        high = int(f.read().split()[0])
    low = 10000
    span = max(high - low, 1)
    start = (os.getpid() * 2654435761) % span
    for i in range(span):
        port = low + (start + i) % span
        if port in _TAKEN:
            continue
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            _TAKEN.append(port)
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port")


def listening(port):
    want = "0100007F:%04X" % port
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == want and fields[3] == "0A":
                return True
    return False


class Weir:
    def __init__(self, name, body, ports):
        self.log = path(name + ".log")
        conf = path(name + ".conf")
        with open(conf, "w") as f:
            f.write(body)
        self.p = subprocess.Popen([WEIR, "-v", "-c", conf], cwd=TMP,
                                  stdout=subprocess.DEVNULL,
                                  stderr=open(self.log, "wb"))
        PROCS.append(self.p)
        for port in ports:
            deadline_wait(lambda: listening(port) or self.p.poll() is not None,
                          "weir on %d" % port)
            assert self.p.poll() is None, self.text()

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def wait_log(self, needle):
        deadline_wait(lambda: needle in self.text(), "'%s' in the log" % needle)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(30)
        text = self.text()
        assert rc == 0, "weir exited %d:\n%s" % (rc, text)
        assert "Sanitizer" not in text and "runtime error" not in text, text


def curl(*args):
    r = subprocess.run(["curl", "-sS", "--noproxy", "*"] + list(args),
                       cwd=TMP, capture_output=True, timeout=60)
    assert r.returncode == 0, "curl %s: %s" % (args, r.stderr)
    return r.stdout


def curl_head(url, *args):
    """The status and the headers (lower-case names) of a HEAD."""
    out = curl("-I", *args, url).decode("latin-1")
    lines = out.split("\r\n")
    heads = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            heads[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), heads


def raw(port, data, bufsize=1 << 20):
    """Sends data on one connection and reads until weir closes it."""
    with socket.create_connection(("127.0.0.1", port), 30) as s:
        s.sendall(data)
        got = b""
        while True:
            b = s.recv(bufsize)
            if not b:
                return got
            got += b


def answers(blob, head_only=()):
    """The answers in blob, in order: (status, headers, body) each; those
    whose index is in head_only answered a HEAD (no body)."""
    out = []
    while blob:
        head, sep, rest = blob.partition(b"\r\n\r\n")
        assert sep, "a head without its end: %r" % blob[:200]
        lines = head.decode("latin-1").split("\r\n")
        heads = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            heads[k.strip().lower()] = v.strip()
        n = 0 if len(out) in head_only else int(heads.get("content-length", "0"))
        out.append((int(lines[0].split()[1]), heads, rest[:n]))
        blob = rest[n:]
    return out


def make_tree():
    os.makedirs(path("root", "sub"))
    with open(path("root", "big.bin"), "wb") as f:
        f.write(os.urandom(3 << 20))
    with open(path("root", "a.txt"), "wb") as f:
        f.write(b"hello from a\n")
    with open(path("root", "b.txt"), "wb") as f:
        f.write(b"and from b\n")
    with open(path("root", "page.html"), "wb") as f:
        f.write(b"<p>hi</p>\n")
    with open(path("root", "sub", "c.txt"), "wb") as f:
        f.write(b"c in sub\n")
    with open(path("root", ".hidden"), "wb") as f:
        f.write(SECRET)
    with open(path("secret.txt"), "wb") as f:
        f.write(SECRET)
    os.symlink("../../secret.txt", path("root", "sub", "escape"))
    os.symlink("../a.txt", path("root", "sub", "inside"))
    # For the listings: names HTML and URLs give a meaning to, a
    # directory of them, and a symlink to a directory outside the root.
    os.makedirs(path("root", ODD_DIR))
    with open(path("root", ODD_DIR, ODD_FILE), "wb") as f:
        f.write(b"odd\n")
    os.makedirs(path("outside"))
    with open(path("outside", "secret-in-dir.txt"), "wb") as f:
        f.write(SECRET)
    os.symlink("../../outside", path("root", "sub", "outdir"))


def content(name):
    with open(path("root", name), "rb") as f:
        return f.read()


# ---- the tests; W is the weir they share ----

W = {}


def test_get_head_types():
    u = "http://127.0.0.1:%d" % W["dir"]
    assert sha(curl(u + "/big.bin")) == sha(content("big.bin"))
    assert curl(u + "/sub/c.txt") == content("sub/c.txt")
    # A symlink that stays in the root is followed.
    assert curl(u + "/sub/inside") == content("a.txt")
    status, h = curl_head(u + "/big.bin")
    assert status == 200 and h["content-length"] == str(3 << 20), h
    assert h["accept-ranges"] == "bytes" and h["server"] == "weir", h
    assert h["content-type"] == "application/octet-stream", h
    assert re.fullmatch(r'"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"', h["etag"]), h
    assert curl_head(u + "/page.html")[1]["content-type"] == "text/html"
    assert curl_head(u + "/a.txt")[1]["content-type"] == "text/plain"
    # The file source, at its path=, without a Server header.
    f = "http://127.0.0.1:%d" % W["file"]
    assert curl(f + "/files/a.txt") == content("a.txt")
    assert "server" not in curl_head(f + "/files/a.txt")[1]
    assert curl("-o", "/dev/null", "-w", "%{http_code}",
                f + "/a.txt") == b"404"


def test_ranges():
    u = "http://127.0.0.1:%d/big.bin" % W["dir"]
    data = content("big.bin")
    for r, want in (("100-199", data[100:200]), ("0-0", data[:1]),
                    ("3000000-", data[3000000:]), ("-4096", data[-4096:]),
                    ("1048570-99999999", data[1048570:])):
        got = curl("-r", r, u)
        assert sha(got) == sha(want), "range %s: %d bytes" % (r, len(got))
    out = curl("-i", "-r", "100-199", u).decode("latin-1")
    assert out.startswith("HTTP/1.1 206"), out[:100]
    assert "Content-Range: bytes 100-199/%d" % len(data) in out, out[:400]
    code = curl("-o", "/dev/null", "-w", "%{http_code}", "-r",
                "%d-" % len(data), u)
    assert code == b"416", code


def test_resume_curl_and_wget():
    u = "http://127.0.0.1:%d/big.bin" % W["dir"]
    data = content("big.bin")
    # A download cut after its first MiB, resumed from there.
    with open(path("part.bin"), "wb") as f:
        f.write(data[:1 << 20])
    curl("-C", "-", "-o", path("part.bin"), u)
    with open(path("part.bin"), "rb") as f:
        assert sha(f.read()) == sha(data)
    os.makedirs(path("wget"))
    with open(path("wget", "big.bin"), "wb") as f:
        f.write(data[:777777])
    r = subprocess.run(["wget", "-q", "-c", "--no-proxy", u],
                       cwd=path("wget"), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with open(path("wget", "big.bin"), "rb") as f:
        assert sha(f.read()) == sha(data)


def test_conditional():
    u = "http://127.0.0.1:%d/a.txt" % W["dir"]
    code = ["-o", "/dev/null", "-w", "%{http_code}"]
    mtime = os.stat(path("root", "a.txt")).st_mtime
    # -z DATE: If-Modified-Since.
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT",
                          time.gmtime(mtime + 3600))
    earlier = time.strftime("%a, %d %b %Y %H:%M:%S GMT",
                            time.gmtime(mtime - 3600))
    assert curl(*code, "-z", later, u) == b"304"
    assert curl("-z", earlier, u) == content("a.txt")
    tag = curl_head(u)[1]["etag"]
    assert curl(*code, "-H", "If-None-Match: " + tag, u) == b"304"
    assert curl(*code, "-H", 'If-None-Match: W/"x", ' + tag, u) == b"304"
    assert curl("-H", 'If-None-Match: "other"', u) == content("a.txt")
    # If-Range: the range only while the file is the one named.
    assert curl("-r", "0-4", "-H", "If-Range: " + tag, u) == b"hello"
    assert curl("-r", "0-4", "-H", 'If-Range: "old"', u) == content("a.txt")
    # If-Match (strong comparison) and If-Unmodified-Since: 412 when the
    # file is not the one the client meant.
    assert curl("-H", "If-Match: " + tag, u) == content("a.txt")
    assert curl("-H", 'If-Match: "x", ' + tag, u) == content("a.txt")
    assert curl("-H", "If-Match: *", u) == content("a.txt")
    assert curl(*code, "-H", 'If-Match: "other"', u) == b"412"
    assert curl(*code, "-H", "If-Match: W/" + tag, u) == b"412"
    assert curl(*code, "-H", "If-Unmodified-Since: " + earlier, u) == b"412"
    assert curl("-H", "If-Unmodified-Since: " + later, u) == content("a.txt")
    assert curl("-r", "0-4", "-H", "If-Match: " + tag, u) == b"hello"
    # The obsolete date forms a recipient still reads: RFC 850's and
    # asctime's.
    t = time.gmtime(mtime + 3600)
    for form in ("%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"):
        assert curl(*code, "-H", "If-Modified-Since: " +
                    time.strftime(form, t), u) == b"304", form


def test_http10_and_keepalive():
    port = W["dir"]
    u = "http://127.0.0.1:%d" % port
    out = subprocess.run(["curl", "-sv", "--http1.0", u + "/a.txt"],
                         capture_output=True, timeout=60)
    assert out.stdout == content("a.txt")
    assert b"HTTP/1.0" in out.stderr and b"Connection: close" in out.stderr
    # 100 URLs on one command line: one connection, reused 99 times.
    urls = [u + ("/a.txt" if i % 2 else "/b.txt") for i in range(100)]
    out = subprocess.run(["curl", "-sv", "--noproxy", "*"] + urls,
                         capture_output=True, timeout=60)
    want = b"".join(content("a.txt" if i % 2 else "b.txt")
                    for i in range(100))
    assert sha(out.stdout) == sha(want)
    reused = out.stderr.count(b"Re-using existing connection")
    assert reused == 99, out.stderr[-2000:]
    # Pipelined: three requests in one write, answered in order.
    req = (b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n"
           b"HEAD /b.txt HTTP/1.1\r\nHost: x\r\n\r\n"
           b"GET /sub/c.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    got = answers(raw(port, req), head_only=(1,))
    assert [a[0] for a in got] == [200, 200, 200], got
    assert got[0][2] == content("a.txt") and got[2][2] == content("sub/c.txt")
    assert got[1][1]["content-length"] == str(len(content("b.txt")))
    # 500 small requests in one write, more than the request buffer holds:
    # every one answered, in order, on the one connection.
    one = b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n"
    last = b"GET /b.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    got = answers(raw(port, one * 499 + last))
    assert len(got) == 500 and all(a[0] == 200 for a in got), len(got)
    assert all(a[2] == content("a.txt") for a in got[:499])
    assert got[499][2] == content("b.txt")


def test_errors():
    port = W["dir"]
    host = b"Host: x\r\n"
    for req, status in (
            (b"POST /a.txt HTTP/1.1\r\n" + host + b"\r\n", 405),
            (b"GET / HTTP/1.1\r\n" + host + b"\r\n", 404),
            (b"GET /sub HTTP/1.1\r\n" + host + b"\r\n", 404),
            (b"GET /nope HTTP/1.1\r\n" + host + b"\r\n", 404),
            (b"GET /a.txt HTTP/1.1\r\n\r\n", 400),  # no Host
            (b"GET /a.txt HTTP/1.1\r\n" + host + host + b"\r\n", 400),
            (b"GET /a.txt HTTP/2.0\r\n" + host + b"\r\n", 505),
            (b"BLAH\r\n\r\n", 400),
            (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", 414),
            (b"GET /a.txt HTTP/1.1\r\n" + host +
             b"X-Big: " + b"b" * 9000 + b"\r\n\r\n", 431)):
        got = answers(raw(port, req))
        assert got[0][0] == status, (req[:40], got)
        if status == 405:
            assert got[0][1]["allow"] == "GET, HEAD"


def test_traversal_refused():
    port = W["dir"]
    seeds = sorted(n for n in os.listdir(SEEDS) if n.startswith("trav_"))
    assert len(seeds) >= 10, seeds
    for name in seeds:
        with open(os.path.join(SEEDS, name), "rb") as f:
            req = f.read()
        got = raw(port, req.replace(b"\r\n\r\n",
                                    b"\r\nConnection: close\r\n\r\n", 1))
        status = answers(got)[0][0]
        assert status in (400, 404), "%s: %d" % (name, status)
        assert SECRET not in got and b"root:x:" not in got, name
    # A symlink out of the root, and curl's own spellings.
    u = "http://127.0.0.1:%d" % port
    for p in ("/sub/escape", "/.hidden", "/../secret.txt",
              "/%2e%2e/secret.txt", "/sub/..%2f..%2fsecret.txt"):
        out = curl("--path-as-is", "-w", "%{http_code}", u + p)
        assert out[-3:] in (b"400", b"404") and SECRET not in out, (p, out)


def test_slow_head_cut():
    """A head sent a byte at a time is cut at header_timeout (1 s here),
    however long the client would go on."""
    port = W["dir"]
    s = socket.create_connection(("127.0.0.1", port), 30)
    head = b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"z" * 500
    cut = False
    try:
        for b in head:
            s.sendall(bytes([b]))
            time.sleep(0.1)
    except (BrokenPipeError, ConnectionResetError):
        cut = True
    if not cut:
        s.settimeout(30)
        try:
            cut = s.recv(1024) == b""
        except ConnectionResetError:
            cut = True
    s.close()
    assert cut, "a 50 s head was not cut"


def test_shrinking_file():
    """A file cut short while it is sent ends its answer short: the
    connection closes with the bytes sent so far, a prefix of the file."""
    port = W["dir"]
    data = os.urandom(8 << 20)
    with open(path("root", "shrink.bin"), "wb") as f:
        f.write(data)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /shrink.bin HTTP/1.1\r\nHost: x\r\n\r\n")
    first = s.recv(4096)
    assert first.startswith(b"HTTP/1.1 200"), first[:100]
    os.truncate(path("root", "shrink.bin"), 1 << 20)
    got = first
    s.settimeout(30)
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        got += b
    s.close()
    body = got.partition(b"\r\n\r\n")[2]
    assert len(body) < len(data), "all %d bytes came" % len(body)
    assert body == data[:len(body)], "the body is not the file's prefix"


def test_access_log():
    """Every answer above has its line, in order per connection; the
    fields are the request's."""
    def count(name):
        if not os.path.exists(path(name)):
            return 0
        with open(path(name), "rb") as f:
            return f.read().count(b"\n")

    # The writer thread is behind the answers by a wake-up at most.
    deadline_wait(lambda: count("access.json") >= 150 and
                  count("access.log") >= 3, "the access logs")
    with open(path("access.json")) as f:
        lines = [json.loads(x) for x in f]
    ranged = [x for x in lines if x["range"] == "bytes=100-199"]
    assert ranged and ranged[0]["status"] == 206 and \
        ranged[0]["bytes"] == 100 and \
        ranged[0]["request"] == "GET /big.bin HTTP/1.1", ranged[:1]
    assert any(x["status"] == 405 and x["request"].startswith("POST ")
               for x in lines)
    assert all(x["client"].startswith("127.0.0.1:") and x["duration"] >= 0
               for x in lines)
    # The file pipeline's, in the common log format: 200, HEAD, 404.
    with open(path("access.log")) as f:
        clf = f.read().splitlines()
    assert len(clf) == 3, clf
    assert re.fullmatch(r'127\.0\.0\.1 - - \[[^]]+\] "GET /files/a\.txt '
                        r'HTTP/1\.1" 200 %d [0-9.]+ "-" "curl/[^"]+"'
                        % len(content("a.txt")), clf[0]), clf[0]
    # logrotate: renamed, then SIGHUP; the next line is in a new file.
    os.rename(path("access.log"), path("access.log.1"))
    W["weir"].p.send_signal(signal.SIGHUP)
    W["weir"].wait_log("SIGHUP")
    curl("http://127.0.0.1:%d/files/a.txt" % W["file"])
    deadline_wait(lambda: count("access.log") == 1,
                  "a line in the reopened log")


def listing(body):
    """(href, text, size) of each row of a listing, in order."""
    rows = re.findall(r'<tr><td><a href="([^"]*)">([^<]*)</a></td>'
                      r'<td>([^<]*)</td>', body)
    return rows


def test_index():
    """index=yes: a directory is an HTML listing of what may be fetched,
    its names escaped, each link leading to the file or directory."""
    u = "http://127.0.0.1:%d" % W["index"]
    out = curl("-i", u + "/").decode("utf-8")
    head, _, body = out.partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 200"), head
    assert "Content-Type: text/html; charset=utf-8" in head, head
    assert "Content-Length: %d" % len(body.encode()) in head, head
    rows = listing(body)
    names = [html.unescape(t) for _, t, _ in rows]
    # Directories first, each group sorted; no dotfile.
    want_dirs = sorted([ODD_DIR + "/", "sub/"])
    want_files = sorted(["a.txt", "b.txt", "big.bin", "page.html"] +
                        [n for n in os.listdir(ROOT)
                         if os.path.isfile(path("root", n)) and
                         not n.startswith(".")])
    want_files = sorted(set(want_files))
    assert names == want_dirs + want_files, names
    assert ".hidden" not in body and SECRET.decode() not in body
    # The odd names: escaped in the text, percent-encoded in the link.
    assert "d &lt;&amp;&gt; \u00e9/" in body, body
    assert 'href="d%20%3C%26%3E%20%C3%A9/"' in body, body
    for href, text, size in rows:
        if href.endswith("/"):
            assert size == "-"
            continue
        name = html.unescape(text)
        assert size == str(len(content(name))), (name, size)
        assert sha(curl(u + "/" + href)) == sha(content(name)), name
    # A directory without its slash is sent to it; the link inside it
    # leads to its file, whose name HTML and URLs both mind.
    out = curl("-i", u + "/sub").decode()
    assert out.startswith("HTTP/1.1 301") and "Location: sub/\r\n" in out, \
        out
    sub = curl("-L", u + "/sub").decode()
    assert [t for _, t, _ in listing(sub)] == ["../", "c.txt", "inside"], sub
    odd = curl("-L", u + "/" + urllib.parse.quote(ODD_DIR)).decode()
    rows = listing(odd)
    assert [html.unescape(t) for _, t, _ in rows] == ["../", ODD_FILE], odd
    got = curl(u + "/" + urllib.parse.quote(ODD_DIR) + "/" + rows[1][0])
    assert got == content(os.path.join(ODD_DIR, ODD_FILE))
    # HEAD: the listing's length, no body.
    status, h = curl_head(u + "/")
    assert status == 200 and h["content-length"] == \
        str(len(body.encode())), h
    # Traversal at directories: refused, nothing of outside listed.
    for p in ("/sub/outdir/", "/sub/outdir", "/sub/../../", "/../",
              "/%2e%2e/", "/sub/%2e%2e/%2e%2e/outside/", "/.hidden/",
              "/sub/escape/"):
        out = curl("--path-as-is", "-w", "%{http_code}", u + p)
        assert out[-3:] in (b"400", b"404"), (p, out)
        assert SECRET not in out and b"secret-in-dir" not in out, (p, out)
    # Over TLS, the same listing.
    t = "https://127.0.0.1:%d/" % W["tls"]
    assert curl("--cacert", path("cert.pem"), t).decode("utf-8") == body
    # Without index=yes a directory stays 404.
    code = curl("-o", "/dev/null", "-w", "%{http_code}",
                "http://127.0.0.1:%d/sub/" % W["dir"])
    assert code == b"404", code


def answer_on(sock, name):
    """One keep-alive GET on sock; the answer's status and body."""
    sock.sendall(b"GET /" + name.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        b = sock.recv(65536)
        assert b, "closed before an answer: %r" % got
        got += b
    head, _, body = got.partition(b"\r\n\r\n")
    n = int(re.search(rb"Content-Length: (\d+)", head)[1])
    while len(body) < n:
        b = sock.recv(65536)
        assert b, "closed in a body"
        body += b
    return int(head.split()[1]), body


def get_on(sock, name):
    """One keep-alive GET on sock; the answer's body (a 200's)."""
    status, body = answer_on(sock, name)
    assert status == 200, (name, status)
    return body


def test_files_kept_fresh():
    """Each worker keeps the files it served open for the next requests;
    what a path leads to now is what is served: a file rewritten in
    place, renamed over, deleted, or made a symlink out of the root (404)
    or within it. One connection, so one worker and its kept files."""
    port = W["dir"]
    name = path("root", "fresh.txt")
    s = socket.create_connection(("127.0.0.1", port), 30)
    s.settimeout(30)
    with open(name, "wb") as f:
        f.write(b"first\n")
    assert get_on(s, "fresh.txt") == b"first\n"
    assert get_on(s, "fresh.txt") == b"first\n"
    with open(name, "r+b") as f:  # the same inode, longer
        f.write(b"second, in place\n")
    assert get_on(s, "fresh.txt") == b"second, in place\n"
    with open(name + ".new", "wb") as f:
        f.write(b"third, renamed over\n")
    os.replace(name + ".new", name)
    assert get_on(s, "fresh.txt") == b"third, renamed over\n"
    os.unlink(name)
    assert answer_on(s, "fresh.txt")[0] == 404
    with open(name, "wb") as f:
        f.write(b"fourth\n")
    assert get_on(s, "fresh.txt") == b"fourth\n"
    os.unlink(name)
    os.symlink("../secret.txt", name)
    status, body = answer_on(s, "fresh.txt")
    assert status == 404 and SECRET not in body, (status, body)
    os.unlink(name)
    os.symlink("a.txt", name)
    assert get_on(s, "fresh.txt") == content("a.txt")
    os.unlink(name)
    s.close()


def test_parked_keepalive():
    """A connection idle between requests (past the 50 ms after which
    its stream is given up) and one idle before its first are answered
    on the same socket; one idle past header_timeout (1 s) is closed."""
    port = W["dir"]
    s = socket.create_connection(("127.0.0.1", port), 30)
    s.settimeout(30)
    for name in ("a.txt", "big.bin", "sub/c.txt", "a.txt"):
        assert sha(get_on(s, name)) == sha(content(name)), name
        time.sleep(0.3)
    # The deadline still holds for a parked connection.
    t0 = time.monotonic()
    assert s.recv(1) == b""
    assert time.monotonic() - t0 < 5
    s.close()
    s = socket.create_connection(("127.0.0.1", port), 30)
    s.settimeout(30)
    time.sleep(0.3)
    assert get_on(s, "b.txt") == content("b.txt")
    s.close()


def test_parked_stop_and_max_clients():
    """Parked connections count against max_clients, and a stop closes
    them at once."""
    port = free_port()
    w = Weir("parked", """[pipeline p]
source = dir:%s
sink = http-listen:127.0.0.1:%d,max_clients=2
""" % (ROOT, port), [port])
    idle = []
    for _ in range(2):
        s = socket.create_connection(("127.0.0.1", port), 30)
        s.settimeout(30)
        assert get_on(s, "a.txt") == content("a.txt")
        idle.append(s)
    time.sleep(0.3)  # both parked
    third = socket.create_connection(("127.0.0.1", port), 30)
    third.settimeout(30)
    assert third.recv(1) == b"", "a third client past max_clients=2"
    third.close()
    w.wait_log("max_clients=2 reached")
    # Both still served on their sockets, then parked again.
    for s in idle:
        assert get_on(s, "b.txt") == content("b.txt")
    time.sleep(0.3)
    t0 = time.monotonic()
    w.stop()
    assert time.monotonic() - t0 < 5, "parked connections held the stop"
    for s in idle:
        assert s.recv(1) == b""
        s.close()


def make_cert():
    """A self-signed certificate for 127.0.0.1, which curl and s_client
    are told to trust."""
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                        "-nodes", "-keyout", path("key.pem"), "-out",
                        path("cert.pem"), "-days", "2", "-subj", "/CN=weir",
                        "-addext", "subjectAltName=IP:127.0.0.1"],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_https_curl():
    """GET, HEAD, a range, a resume and 100 requests on one connection,
    over TLS, verified against the certificate."""
    u = "https://127.0.0.1:%d" % W["tls"]
    ca = ["--cacert", path("cert.pem")]
    data = content("big.bin")
    assert sha(curl(*ca, u + "/big.bin")) == sha(data)
    status, h = curl_head(u + "/big.bin", *ca)
    assert status == 200 and h["content-length"] == str(len(data)), h
    got = curl(*ca, "-r", "100-199", u + "/big.bin")
    assert sha(got) == sha(data[100:200]), len(got)
    assert curl(*ca, "-r", "-4096", u + "/big.bin") == data[-4096:]
    with open(path("tls-part.bin"), "wb") as f:
        f.write(data[:1 << 20])
    curl(*ca, "-C", "-", "-o", path("tls-part.bin"), u + "/big.bin")
    with open(path("tls-part.bin"), "rb") as f:
        assert sha(f.read()) == sha(data)
    code = curl(*ca, "-o", "/dev/null", "-w", "%{http_code}", u + "/nope")
    assert code == b"404", code
    urls = [u + ("/a.txt" if i % 2 else "/big.bin") for i in range(100)]
    out = subprocess.run(["curl", "-sv", "--noproxy", "*"] + ca + urls,
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    want = b"".join(content("a.txt") if i % 2 else data for i in range(100))
    assert sha(out.stdout) == sha(want)
    reused = out.stderr.count(b"Re-using existing connection")
    assert reused == 99, out.stderr[-2000:]
    # Not trusted without the certificate: the handshake fails.
    r = subprocess.run(["curl", "-sS", "--noproxy", "*", u + "/a.txt"],
                       capture_output=True, timeout=60)
    assert r.returncode != 0 and r.stdout == b"", r


def test_https_s_client():
    """openssl s_client: pipelined requests in one write, the last one
    closing; every answer whole and in order, then close_notify."""
    req = (b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n"
           b"HEAD /a.txt HTTP/1.1\r\nHost: x\r\n\r\n"
           b"GET /sub/c.txt HTTP/1.1\r\nHost: x\r\nConnection: close"
           b"\r\n\r\n")
    p = subprocess.Popen(["openssl", "s_client", "-connect",
                          "127.0.0.1:%d" % W["tls"], "-CAfile",
                          path("cert.pem"), "-verify_return_error",
                          "-quiet"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    PROCS.append(p)
    # -quiet implies -ign_eof: s_client ends when weir closes the
    # connection, not at the end of its input.
    try:
        out, err = p.communicate(req, timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    got = answers(out, head_only=(1,))
    assert [a[0] for a in got] == [200, 200, 200], (got, err)
    assert sha(got[0][2]) == sha(content("big.bin"))
    assert got[1][1]["content-length"] == str(len(content("a.txt")))
    assert got[2][2] == content("sub/c.txt")


def test_https_bad_cert_check():
    """A certificate that is not there is a --check error at its line."""
    conf = path("badcert.conf")
    with open(conf, "w") as f:
        f.write("[pipeline s]\nsource = dir:%s\n"
                "sink = https-listen:127.0.0.1:%d,cert=%s,key=%s\n"
                % (ROOT, W["tls"], path("nope.pem"), path("key.pem")))
    r = subprocess.run([WEIR, "--check", "-c", conf], capture_output=True,
                       timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 78, (r.returncode, err)
    assert "badcert.conf:3:" in err and "nope.pem" in err, err


def test_metrics():
    """What the tests above did, as /metrics counts it."""
    text = curl("http://127.0.0.1:%d/metrics" % W["metrics"]).decode()

    def value(series):
        m = re.search(r"^%s (\d+)$" % re.escape(series), text, re.M)
        assert m, "no %s in:\n%s" % (series, text)
        return int(m[1])

    pl = 'pipeline="files"'
    assert value('weir_http_served_requests_total{%s,method="GET",'
                 'code="2xx"}' % pl) >= 100
    assert value('weir_http_served_requests_total{%s,method="GET",'
                 'code="3xx"}' % pl) >= 3
    assert value('weir_http_served_requests_total{%s,method="other",'
                 'code="4xx"}' % pl) >= 1
    assert value('weir_http_served_header_timeouts_total{%s}' % pl) >= 1
    n = value('weir_http_served_request_seconds_count{%s}' % pl)
    assert n == value('weir_http_served_request_seconds_bucket{%s,'
                      'le="+Inf"}' % pl) and n >= 100
    # The file pipeline's GETs: one in the first test, one after the
    # access log's rotation (a reload of the same file keeps the counts).
    assert value('weir_http_served_requests_total{pipeline="one",'
                 'method="GET",code="2xx"}') == 2


def main():
    tests = [test_get_head_types, test_ranges, test_resume_curl_and_wget,
             test_conditional, test_http10_and_keepalive, test_errors,
             test_traversal_refused, test_slow_head_cut, test_shrinking_file,
             test_access_log, test_metrics, test_https_curl,
             test_https_s_client, test_https_bad_cert_check, test_index,
             test_parked_keepalive, test_parked_stop_and_max_clients,
             test_files_kept_fresh]
    for tool in ("curl", "wget", "openssl"):
        if shutil.which(tool) is None:
            print("SKIP: %s is not installed (tools/install-deps)" % tool)
            return 77
    try:
        make_tree()
        make_cert()
        W["dir"], W["file"] = free_port(), free_port()
        W["metrics"], W["tls"] = free_port(), free_port()
        W["index"] = free_port()
        W["weir"] = Weir("serve", """[daemon]
workers = 2
metrics = 127.0.0.1:%d

[pipeline files]
source = dir:%s
sink = http-listen:127.0.0.1:%d,header_timeout=1s,request_log=%s,request_log_format=json

[pipeline one]
source = file:%s
sink = http-listen:127.0.0.1:%d,path=/files/a.txt,server=no,request_log=%s

[pipeline secure]
source = dir:%s
sink = https-listen:127.0.0.1:%d,cert=%s,key=%s,header_timeout=5s,index=yes

[pipeline listed]
source = dir:%s
sink = http-listen:127.0.0.1:%d,index=yes
""" % (W["metrics"], ROOT, W["dir"], path("access.json"),
       path("root", "a.txt"), W["file"], path("access.log"), ROOT, W["tls"],
       path("cert.pem"), path("key.pem"), ROOT, W["index"]),
            [W["dir"], W["file"], W["metrics"], W["tls"], W["index"]])
        for t in tests:
            try:
                t()
                print("ok    " + t.__name__, flush=True)
            except Exception as e:  # report every test, then fail
                FAILED.append(t.__name__)
                print("FAIL  %s: %r" % (t.__name__, e), flush=True)
        W["weir"].stop()
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
