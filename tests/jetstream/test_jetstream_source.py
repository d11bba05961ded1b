#!/usr/bin/env python3
"""test_jetstream_source.py WEIR_BIN JS_TOOL - the jetstream source against
a real three-node nats-server cluster (js_cluster.py), a stream of three
replicas that the test's own client (js_tool) publishes lines to.

1. source -> file sink and a tcp sink whose peer reads nothing at first
   (so the acknowledgements stay behind what the file has), killed with
   -9 mid-stream and started again while lines are still published: the
   file holds every line, in order, and the only lines written twice are
   the ones after the consumer's ack floor at the kill, once, as one run
   (the messages whose acks had not been sent are delivered again, in
   order); at the end the consumer's ack floor is the stream's last
   message and none is pending.
2. source -> tcp-listen client: a client reads every line, in order,
   once; the consumer's ack floor reaches the end only once the client
   has them.

Skips (77), saying why, when nats-server is not installed.
The engine is whatever WEIR_ENGINE says (meson test --setup epoll).
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from js_cluster import (PROCS, TMP, cluster, deadline_wait,  # noqa: E402
                        free_port, lines, metric, path, stop_all)

WEIR = os.path.abspath(sys.argv[1])
TOOL = os.path.abspath(sys.argv[2])
STREAM, SUBJECT = "SRC", "src.lines"
LOGS = []


def tool(*args, stdin=None):
    r = subprocess.run([TOOL] + list(args), capture_output=True, timeout=60,
                       input=stdin)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout




def daemon(conf, name):
    log_path = path(name + ".log")
    LOGS.append(log_path)
    log = open(log_path, "ab")
    d = subprocess.Popen([WEIR, "-c", conf], stdout=log, stderr=log)
    PROCS.append(d)
    return d


def consumer(urls, name):
    """The consumer's ack floor, pending and waiting counts; -1s while it
    is not there (a restarted weir makes it again at its ack floor)."""
    r = subprocess.run([TOOL, "consumer", urls, STREAM, name],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        return -1, -1, -1
    floor, pending, waiting = r.stdout.decode().split()
    return int(floor), int(pending), int(waiting)


def file_lines(p):
    try:
        with open(p, "rb") as f:
            return f.read().split(b"\n")[:-1]
    except OSError:
        return []


def index_of(line):
    assert line.startswith(b"r"), line
    return int(line[1:8])


def check_run(got, want):
    """got is want in order, with one run written twice at most: after a
    line, the lines from an earlier one on again (the redelivered ones)."""
    idx = [index_of(g) for g in got]
    for g in got:
        assert g == want[index_of(g)], "a line changed: %r" % g
    back = [i for i in range(1, len(idx)) if idx[i] != idx[i - 1] + 1]
    assert idx[0] == 0, "the file does not start at the first line"
    assert len(back) <= 1, "lines out of order at %s" % back[:5]
    if back:
        i = back[0]
        assert idx[i] <= idx[i - 1], \
            "lines skipped after line %d (next %d)" % (idx[i - 1], idx[i])
    assert idx[-1] == len(want) - 1, "the file ends at line %d of %d" % (
        idx[-1], len(want))
    return (idx[back[0] - 1] - idx[back[0]] + 1) if back else 0


class SlowPeer:
    """A tcp peer that reads nothing on its first connection until told,
    and everything on the later ones."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(4)
        self.port = self.ls.getsockname()[1]
        self.go = threading.Event()
        self.conns = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            self.conns += 1
            threading.Thread(target=self.drain, args=(c, self.conns > 1),
                             daemon=True).start()

    def drain(self, c, now):
        if not now:
            self.go.wait()
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass
        c.close()


def file_sink(urls, total):
    out, mport = path("out.txt"), free_port()
    peer = SlowPeer()
    conf = path("file.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\nstate_directory = %s\ncontrol_socket = no\n"
                "metrics = 127.0.0.1:%d\n\n"
                "[pipeline p]\nsource = jetstream:%s/%s,consumer=tofile\n"
                "high_water_mark = 64KiB\nsink = file:%s\n"
                "sink = tcp:127.0.0.1:%d\n"
                % (path("state"), mport, urls, STREAM, out, peer.port))
    want = lines(total).splitlines()
    # Published in bursts meanwhile, so the kill lands mid-stream.
    parts = [lines(500, k) for k in range(0, total, 500)]
    tool("publish", urls, SUBJECT, stdin=parts[0])
    published = [1]

    def publisher():
        for p in parts[1:]:
            tool("publish", urls, SUBJECT, stdin=p)
            published[0] += 1
            time.sleep(0.15)

    pub = threading.Thread(target=publisher)
    d = daemon(conf, "weir-file")
    pub.start()
    # The peer's kernel takes what its receive buffer holds, and no more:
    # the file runs ahead of what every sink has, by the tcp sink's
    # queue and the socket buffers.
    deadline_wait(lambda: len(file_lines(out)) >= 1500,
                  "the first lines in the file")
    floors = [consumer(urls, "tofile")[0]]

    def floor_still():
        time.sleep(0.3)
        floors.append(consumer(urls, "tofile")[0])
        return floors[-1] == floors[-2]

    deadline_wait(floor_still, "the acknowledgements held back by the peer")
    d.send_signal(signal.SIGKILL)
    d.wait(10)
    at_kill = len(file_lines(out))
    floor_at_kill = consumer(urls, "tofile")[0]
    assert floor_at_kill < at_kill, \
        "acknowledged %d, written %d" % (floor_at_kill, at_kill)
    peer.go.set()
    d = daemon(conf, "weir-file")
    pub.join(60)
    assert not pub.is_alive()
    deadline_wait(lambda: consumer(urls, "tofile")[0] == total,
                  "the ack floor at the stream's end (%r)"
                  % (consumer(urls, "tofile"),), timeout=30)
    floor, pending, waiting = consumer(urls, "tofile")
    assert pending == 0 and waiting == 0, (floor, pending, waiting)
    deadline_wait(lambda: metric(mport, 'weir_jetstream_source_acked_total'
                                 '{pipeline="p"} ') >= 1,
                  "the source's figures in /metrics")
    d.send_signal(signal.SIGTERM)
    assert d.wait(30) == 0
    got = file_lines(out)
    again = check_run(got, want)
    # Written twice: what had been read and not acknowledged (an ack the
    # killed weir had sent may land after the floor was looked at).
    assert 0 < again <= at_kill - floor_at_kill, \
        (again, at_kill, floor_at_kill)
    assert len(got) == total + again
    print("file: %d lines, %d written again after the kill (written %d, "
          "acknowledged %d at the kill)"
          % (len(got), again, at_kill, floor_at_kill))


def tcp_client(urls, total):
    port, mport = free_port(), free_port()
    conf = path("tcp.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\ncontrol_socket = no\nmetrics = 127.0.0.1:%d\n\n"
                "[pipeline t]\nsource = jetstream:%s/%s,consumer=totcp\n"
                "high_water_mark = 64KiB\nsink = tcp-listen:127.0.0.1:%d\n"
                % (mport, urls, STREAM, port))
    want = lines(total)
    d = daemon(conf, "weir-tcp")
    deadline_wait(lambda: _reading(path("weir-tcp.log")), "the consumer")
    # No client: nothing goes out, so nothing is acknowledged; what was
    # fetched stays within the mark (64 KiB of lines of 42 to 78 bytes).
    time.sleep(1)
    floor, pending, _ = consumer(urls, "totcp")
    assert floor == 0 and 0 < pending <= 65536 // 42, (floor, pending)
    c = socket.create_connection(("127.0.0.1", port), timeout=20)
    got = b""
    end = time.monotonic() + 30
    while len(got) < len(want) and time.monotonic() < end:
        b = c.recv(65536)
        if not b:
            break
        got += b
    assert got == want, "the client got %d bytes of %d%s" % (
        len(got), len(want), "" if want.startswith(got) else ", not in order")
    deadline_wait(lambda: consumer(urls, "totcp")[0] == total,
                  "the ack floor at the end (%r)" % (consumer(urls, "totcp"),))
    assert consumer(urls, "totcp")[1] == 0
    c.close()
    d.send_signal(signal.SIGTERM)
    assert d.wait(30) == 0
    print("tcp-listen: %d lines to the client, all acknowledged" % total)


def _reading(log):
    with open(log, "rb") as f:
        return b"reading stream" in f.read()


def main():
    if shutil.which("nats-server") is None:
        print("skipped: nats-server is not installed (Debian's "
              "nats-server)")
        return 77
    nodes, urls = cluster()
    tool("create", urls, STREAM, SUBJECT)
    total = 6000
    file_sink(urls, total)
    tcp_client(urls, total)
    return 0


if __name__ == "__main__":
    rc = 1
    try:
        rc = main()
    finally:
        if rc:
            for lp in LOGS:
                try:
                    with open(lp, "rb") as f:
                        sys.stderr.write("--- %s\n" % lp)
                        sys.stderr.write(
                            f.read()[-6000:].decode(errors="replace"))
                except OSError:
                    pass
        stop_all()
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(rc)
