#!/usr/bin/env python3
"""test_http.py WEIR_BIN CASE - the http sink, driving the real binary
against collectors on 127.0.0.1 (ephemeral ports). CASE is one of:

  pipe      weir pipe into a collector of this file: exit 0, every
            record taken once; a collector that answers 400 to all:
            exit 1, every record in the dead_letter file; no collector
            at all: exit 1 after retries=2, every record in the dead
            letters with the error; preset=otlp: every body parsed as
            OTLP JSON, the log records' bodies the file's lines exactly.
  https     the same over TLS: ca= (a certificate of the test's own),
            a bearer token from auth_file= (never in the log), verify=no.
  kill      a daemon follows a file into a collector that holds its answer
            to the second batch; the checkpoint stays at the end of the
            first (the one answered) while the second is out; kill -9;
            the restarted daemon sends the second batch again and every
            record arrives, the first batch's only once; the second run's
            figures in /metrics and `weir status --json`.
  clickhouse  a real ClickHouse server (Debian's clickhouse-server)
started with a config of the test's own, and a daemon that follows two
files into two tables with preset=clickhouse (JSON objects as they are,
plain lines wrapped as {"message":...}): count() and the rows themselves
against the files. Exits 77 (skipped), saying why, when the server
cannot be started here.
The engine is whatever WEIR_ENGINE says (meson test --setup epoll).
"""
import gzip
import http.server
import json
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
import urllib.request

WEIR = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="wt-http-it-")
PROCS = []
REC = re.compile(rb"r(\d{7})")


def path(name):
    return os.path.join(TMP, name)


def deadline_wait(pred, what, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- a collector: records taken when answered 2xx ----

class Collector:
    def __init__(self, policy=None):
        self.lock = threading.Lock()
        self.taken = {}
        self.bodies = []  # every body answered 2xx, decoded
        self.auth = set()
        self.requests = 0
        # policy(n, records) -> status; may block (the kill case).
        self.policy = policy or (lambda n, recs: 200)
        coll = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                recs = [int(m.group(1)) for m in REC.finditer(body)]
                with coll.lock:
                    if self.headers.get("Authorization"):
                        coll.auth.add(self.headers.get("Authorization"))
                    k = coll.requests
                    coll.requests += 1
                st = coll.policy(k, recs)
                if st is None:  # abandoned: no answer, no record taken
                    self.close_connection = True
                    return
                if 200 <= st < 300:
                    with coll.lock:
                        coll.bodies.append(body)
                        for r in recs:
                            coll.taken[r] = coll.taken.get(r, 0) + 1
                out = b"ok" if st < 300 else b'{"error":"refused"}'
                self.send_response(st)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                try:
                    self.wfile.write(out)
                except OSError:
                    pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def count(self):
        with self.lock:
            return dict(self.taken)

    def stop(self):
        self.srv.shutdown()


def lines_file(name, n, fmt=lambda i: "r%07u some text for the record" % i):
    with open(path(name), "w") as f:
        for i in range(n):
            f.write(fmt(i) + "\n")
    return path(name)


def expect_all_once(taken, n, what):
    missing = [i for i in range(n) if taken.get(i, 0) == 0]
    dups = [i for i in range(n) if taken.get(i, 0) > 1]
    assert not missing, "%s: %d records missing, first %s" % (
        what, len(missing), missing[:5])
    assert not dups, "%s: %d records twice, first %s" % (what, len(dups),
                                                         dups[:5])


# ---- weir pipe ----

def case_pipe():
    n = 20000
    src = lines_file("pipe.txt", n)
    c = Collector()
    p = subprocess.run([WEIR, "pipe", "file:" + src,
                        "http://127.0.0.1:%d/in,batch_records=3000,"
                        "compression=gzip" % c.port],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    expect_all_once(c.count(), n, "pipe")
    c.stop()

    c = Collector(lambda k, recs: 400)
    dead = path("dead.jsonl")
    p = subprocess.run([WEIR, "pipe", "file:" + src,
                        "http://127.0.0.1:%d/in,dead_letter=%s" % (c.port,
                                                                  dead)],
                       capture_output=True, timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 1, "exit %d: %s" % (p.returncode, err)
    assert "%d records not delivered" % n in err, err
    with open(dead) as f:
        got = [json.loads(line) for line in f]
    assert len(got) == n, len(got)
    assert all(d["status"] == 400 for d in got)
    assert sorted(int(d["record"][1:8]) for d in got) == list(range(n))
    c.stop()

    # Nobody listens: weir pipe gives up after its retries, says so, and
    # every record is in the dead letters with the error.
    os.unlink(dead)
    p = subprocess.run([WEIR, "pipe", "file:" + src,
                        "http://127.0.0.1:%d/in,retries=2,dead_letter=%s"
                        % (free_port(), dead)],
                       capture_output=True, timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 1, "exit %d: %s" % (p.returncode, err)
    assert "gave up on" in err and "after 2 retries" in err, err
    assert "%d records not delivered" % n in err, err
    with open(dead) as f:
        got = [json.loads(line) for line in f]
    assert sorted(int(d["record"][1:8]) for d in got) == list(range(n))
    assert all(d["status"] == 0 and d["error"] for d in got), got[0]

    case_otlp()
    print("pipe: ok")


def case_otlp():
    """Lines with quotes, backslashes, tabs, controls and UTF-8 through
    preset=otlp: each body is OTLP/HTTP JSON, and the log records'
    string bodies, in order, are the file's lines."""
    n = 5000
    src = lines_file("otlp.txt", n,
                     lambda i: "r%07u \"q\" \\ \t \x01 caf\u00e9 %s" % (i, "x" * (i % 50)))
    want = open(src, encoding="utf-8").read().splitlines()
    c = Collector()
    p = subprocess.run([WEIR, "pipe", "file:" + src,
                        "http://127.0.0.1:%d/v1/logs,preset=otlp,"
                        "batch_records=700,label=service.name=app,"
                        "label=host.name=h1" % c.port],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    got = []
    for body in c.bodies:
        doc = json.loads(body)
        (rl,) = doc["resourceLogs"]
        attrs = {a["key"]: a["value"]["stringValue"]
                 for a in rl["resource"]["attributes"]}
        assert attrs == {"service.name": "app", "host.name": "h1"}, attrs
        (sl,) = rl["scopeLogs"]
        for lr in sl["logRecords"]:
            assert int(lr["timeUnixNano"]) > 1.6e18, lr
            got.append(lr["body"]["stringValue"])
    got.sort(key=lambda line: int(line[1:8]))
    assert got == want, "otlp: %d records, first differing %s" % (
        len(got), next((i for i, (a, b) in enumerate(zip(got, want))
                        if a != b), None))
    c.stop()


# ---- https: a server certificate of the test's own ----

def case_https():
    cert, key = path("cert.pem"), path("key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    c = Collector()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    c.srv.socket = ctx.wrap_socket(c.srv.socket, server_side=True)
    n = 5000
    src = lines_file("tls.txt", n)
    with open(path("token"), "w") as f:
        f.write("s3cret-token\n")
    url = "https://127.0.0.1:%d/in" % c.port
    p = subprocess.run([WEIR, "-v", "pipe", "file:" + src,
                        url + ",ca=%s,auth_file=%s,batch_records=700"
                        % (cert, path("token"))],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert b"s3cret" not in p.stderr
    expect_all_once(c.count(), n, "https")
    assert c.auth == {"Bearer s3cret-token"}, c.auth
    c.taken.clear()
    p = subprocess.run([WEIR, "pipe", "file:" + src, url + ",verify=no"],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    expect_all_once(c.count(), n, "https verify=no")
    c.stop()
    print("https: ok")


# ---- kill -9 between a batch's send and its answer ----

class Daemon:
    def __init__(self, name, body):
        self.log = path(name + ".log")
        self.conf = path(name + ".conf")
        with open(self.conf, "w") as f:
            f.write(body)
        self.p = subprocess.Popen([WEIR, "-v", "-c", self.conf],
                                  stdout=subprocess.DEVNULL,
                                  stderr=open(self.log, "ab"))
        PROCS.append(self.p)

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def ckpt_offset(state):
    try:
        with open(os.path.join(state, "pipeline-p.ckpt")) as f:
            m = re.search(r"\noffset (\d+)", f.read())
            return int(m.group(1)) if m else -1
    except FileNotFoundError:
        return -1


def case_kill():
    n, per = 3000, 1000
    line = "r%07u some text for the record"
    src = lines_file("app.log", n, lambda i: line % i)
    reclen = len(line % 0) + 1
    state = path("kill.state")
    held = threading.Event()
    release = threading.Event()
    phase = {"first_run": True}

    def policy(k, recs):
        # The first run: the second batch is held, then abandoned.
        if phase["first_run"] and recs and recs[0] >= per:
            held.set()
            release.wait(60)
            return None
        return 200

    c = Collector(policy)
    conf = ("[daemon]\nworkers = 2\nstate_directory = %s\n"
            "control_socket = no\ncheckpoint_interval = 50ms\n\n"
            "[pipeline p]\nsource = file:%s\nfollow = yes\n"
            "sink = http://127.0.0.1:%d/in,batch_records=%d,concurrency=1\n"
            % (state, src, c.port, per))
    d = Daemon("kill1", conf)
    deadline_wait(held.is_set, "the second batch at the collector")
    # The first batch was answered: the checkpoint reaches its end, and
    # not further while the second is out.
    deadline_wait(lambda: ckpt_offset(state) == per * reclen,
                  "the checkpoint at the first batch's end (%d), it is %d"
                  % (per * reclen, ckpt_offset(state)))
    time.sleep(0.3)
    assert ckpt_offset(state) == per * reclen, ckpt_offset(state)
    d.p.send_signal(signal.SIGKILL)
    d.p.wait(30)
    phase["first_run"] = False
    release.set()
    assert set(c.count()) == set(range(per))

    mport, ctl = free_port(), path("kill.ctl")
    d = Daemon("kill2", conf.replace(
        "control_socket = no\n", "control_socket = %s\nmetrics = "
        "127.0.0.1:%d\n" % (ctl, mport)))
    deadline_wait(lambda: len(c.count()) == n,
                  "every record after the restart (%d of %d)"
                  % (len(c.count()), n))
    deadline_wait(lambda: ckpt_offset(state) == n * reclen,
                  "the checkpoint at the end")
    # The second run's figures: batches 2 and 3, no retry, none out.
    sink = 'pipeline="p",sink="http://127.0.0.1:%d/in"' % c.port
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport,
                                timeout=10) as r:
        metrics = r.read().decode()
    for want in ("weir_http_records_acked_total{%s} %d" % (sink, n - per),
                 "weir_http_batches_acked_total{%s} 2" % sink,
                 "weir_http_in_flight{%s} 0" % sink,
                 'weir_http_retries_total{%s,reason="5xx"} 0' % sink,
                 'weir_http_answer_seconds_bucket{%s,le="+Inf"} 2' % sink):
        assert want in metrics, "no '%s' in:\n%s" % (want, metrics)
    st = subprocess.run([WEIR, "status", "--json", "-s", ctl],
                        capture_output=True, timeout=30)
    assert st.returncode == 0, st.stderr.decode()
    doc = json.loads(st.stdout)
    http = doc["pipelines"][0]["sinks"][0]["http"]
    assert http["records_acked"] == n - per, http
    assert http["requests"] == 2, http
    d.p.send_signal(signal.SIGTERM)
    assert d.p.wait(30) == 0, d.text()
    # Nothing twice either: the first batch was checkpointed, the second
    # never answered.
    expect_all_once(c.count(), n, "kill")
    c.stop()
    print("kill: ok")


# ---- ClickHouse ----

CH_CONF = """<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><log>{d}/server.log</log>
        <errorlog>{d}/error.log</errorlog></logger>
    <http_port>{http}</http_port>
    <tcp_port>{tcp}</tcp_port>
    <listen_host>127.0.0.1</listen_host>
    <path>{d}/data/</path>
    <tmp_path>{d}/tmp/</tmp_path>
    <user_files_path>{d}/user_files/</user_files_path>
    <format_schema_path>{d}/format_schemas/</format_schema_path>
    <users_config>{d}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mark_cache_size>5368709</mark_cache_size>
</yandex>
"""

CH_USERS = """<?xml version="1.0"?>
<yandex>
    <profiles><default></default></profiles>
    <users><default><password></password>
        <networks><ip>127.0.0.1</ip></networks>
        <profile>default</profile><quota>default</quota></default></users>
    <quotas><default></default></quotas>
</yandex>
"""


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def ch_query(port, q):
    # POSTed: ClickHouse takes a GET as read-only (no CREATE).
    with urllib.request.urlopen("http://127.0.0.1:%d/" % port,
                                data=q.encode(), timeout=30) as r:
        return r.read().decode()


def start_clickhouse():
    server = shutil.which("clickhouse-server") or (
        "/usr/sbin/clickhouse-server"
        if os.path.exists("/usr/sbin/clickhouse-server") else None)
    if not server:
        skip("clickhouse-server is not installed (tools/install-deps)")
    d = path("ch")
    os.makedirs(d)
    http_port, tcp_port = free_port(), free_port()
    with open(os.path.join(d, "config.xml"), "w") as f:
        f.write(CH_CONF.format(d=d, http=http_port, tcp=tcp_port))
    with open(os.path.join(d, "users.xml"), "w") as f:
        f.write(CH_USERS)
    p = subprocess.Popen([server, "--config-file=" + os.path.join(d,
                                                                 "config.xml")],
                         cwd=d, stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(d, "stderr"), "wb"))
    PROCS.append(p)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if p.poll() is not None:
            with open(os.path.join(d, "stderr"), errors="replace") as f:
                skip("clickhouse-server exited with %d: %s"
                     % (p.returncode, f.read()[-2000:]))
        try:
            ch_query(http_port, "SELECT 1")
            return http_port
        except OSError:
            time.sleep(0.1)
    skip("clickhouse-server did not answer within 60 s")


def case_clickhouse():
    port = start_clickhouse()
    n = 5000
    ch_query(port, "CREATE TABLE j (n UInt32, msg String) "
                   "ENGINE = MergeTree ORDER BY n")
    ch_query(port, "CREATE TABLE l (message String) "
                   "ENGINE = MergeTree ORDER BY message")
    msgs = ["r%07u quote \" backslash \\ tab \t unicode \u00e9\u4e2d" % i
            for i in range(n)]
    with open(path("j.log"), "w") as f:
        for i, m in enumerate(msgs):
            f.write(json.dumps({"n": i, "msg": m}, ensure_ascii=False) + "\n")
    with open(path("l.log"), "w") as f:
        for m in msgs:
            f.write(m + "\n")
    url = "http://127.0.0.1:%d/?query=INSERT INTO %%s FORMAT JSONEachRow" % port
    d = Daemon("ch", "[daemon]\nworkers = 2\nstate_directory = %s\n"
                     "control_socket = no\ncheckpoint_interval = 50ms\n\n"
                     "[pipeline j]\nsource = file:%s\nfollow = yes\n"
                     "sink = %s,preset=clickhouse,batch_records=1000,"
                     "compression=gzip\n\n"
                     "[pipeline l]\nsource = file:%s\nfollow = yes\n"
                     "sink = %s,preset=clickhouse,batch_age=100ms\n"
                     % (path("ch.state"), path("j.log"), url % "j",
                        path("l.log"), url % "l"))

    def counted():
        return (int(ch_query(port, "SELECT count() FROM j")),
                int(ch_query(port, "SELECT count() FROM l")))

    deadline_wait(lambda: counted() == (n, n),
                  "both tables at %d rows: %s" % (n, counted()))
    d.p.send_signal(signal.SIGTERM)
    assert d.p.wait(30) == 0, d.text()
    rows = ch_query(port, "SELECT n, msg FROM j ORDER BY n "
                          "FORMAT JSONEachRow").splitlines()
    got = [json.loads(r) for r in rows]
    assert [g["n"] for g in got] == list(range(n))
    assert [g["msg"] for g in got] == msgs
    rows = ch_query(port, "SELECT message FROM l ORDER BY message "
                          "FORMAT JSONEachRow").splitlines()
    assert [json.loads(r)["message"] for r in rows] == sorted(msgs)
    print("clickhouse: ok (%s)" % ch_query(port, "SELECT version()").strip())


def main():
    cases = {"pipe": case_pipe, "https": case_https, "kill": case_kill,
             "clickhouse": case_clickhouse}
    try:
        cases[sys.argv[2]]()
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
