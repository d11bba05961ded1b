"""js_cluster.py - what the jetstream tests share: a scratch directory,
bounded waits, free ports, and a three-node nats-server cluster
(JetStream, file storage) on 127.0.0.1 ephemeral ports.
"""
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

TMP = tempfile.mkdtemp(prefix="weir-js-")
PROCS = []


def path(name):
    return os.path.join(TMP, name)


def deadline_wait(pred, what, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def metric(port, prefix):
    """The value of the first /metrics line at port that starts with
    prefix, or -1."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                    timeout=10) as r:
            for ln in r.read().decode().splitlines():
                if ln.startswith(prefix):
                    return int(float(ln[len(prefix):]))
    except OSError:
        pass
    return -1


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class Node:
    def __init__(self, i, ports, routes, extra=""):
        self.name = "n%d" % i
        self.conf = path(self.name + ".conf")
        with open(self.conf, "w") as f:
            f.write("listen: 127.0.0.1:%d\nserver_name: %s\n%s"
                    "jetstream { store_dir: %s }\n"
                    "cluster { name: c1, listen: 127.0.0.1:%d, routes: [%s] }\n"
                    % (ports[0], self.name, extra,
                       path(self.name + ".store"), ports[1], routes))
        self.url = "nats://127.0.0.1:%d" % ports[0]
        self.port = ports[0]
        self.start()

    def start(self):
        self.log = open(path(self.name + ".log"), "ab")
        self.p = subprocess.Popen(["nats-server", "-c", self.conf],
                                  stdout=self.log, stderr=self.log)
        PROCS.append(self.p)

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(10)


def cluster(extra=""):
    """Three nodes, each accepting; returns them and their URLs."""
    ports = [(free_port(), free_port()) for _ in range(3)]
    routes = ", ".join("nats-route://127.0.0.1:%d" % p[1] for p in ports)
    nodes = [Node(i + 1, ports[i], routes, extra) for i in range(3)]
    for n in nodes:
        deadline_wait(lambda: accepts(n.port),
                      "nats-server on port %d" % n.port)
    return nodes, ",".join(n.url for n in nodes)


def lines(n, start=0):
    # Lines of different lengths, so that a shifted byte shows.
    return b"".join(("r%07u some text for the record %s\n" %
                     (i, "x" * (i % 37))).encode()
                    for i in range(start, start + n))


def stop_all():
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()
