#!/usr/bin/env python3
"""test_jetstream_dead.py WEIR_BIN JS_TOOL - a jetstream sink's dead
letters, against a real three-node nats-server cluster (js_cluster.py)
whose servers take payloads of 8 KiB at most.

1. weir pipe of a file whose 3rd and 7th lines are over 8 KiB: the
   stream holds every other line, in order; the two are in the
   dead_letter file with the server's reason; weir pipe exits 1 naming
   the count.
2. weir pipe into a stream whose max_msg_size is 1000 bytes, one line
   over it: the stream refuses it in its answer; it is in the dead
   letters, the others are stored.
3. weir pipe to a subject no stream takes, retries=2: every record is
   given up (no responders) and in the dead letters; exit 1.
4. The daemon: a followed file with one line too large; the line is in
   the dead letters, weir_jetstream_dead_letter_records_total counts it,
   and the lines after it are stored.

Skips (77), saying why, when nats-server is not installed.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from js_cluster import (PROCS, TMP, cluster, deadline_wait,  # noqa: E402
                        free_port, lines, metric, path, stop_all)

WEIR = os.path.abspath(sys.argv[1])
TOOL = os.path.abspath(sys.argv[2])
STREAM, SUBJECT = "DEAD", "dead.ok"


def tool(*args):
    r = subprocess.run([TOOL] + list(args), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


def pipe(*args):
    return subprocess.run([WEIR, "pipe"] + list(args), capture_output=True,
                          timeout=60)


def dead_lines(p):
    with open(p) as f:
        return [json.loads(ln) for ln in f]




def big(i):
    return ("BIG%d " % i + "y" * 9000).encode()


def too_large(urls):
    src, dead = path("in.txt"), path("dead.jsonl")
    rows = lines(10).splitlines()
    rows[2], rows[6] = big(2), big(6)
    with open(src, "wb") as f:
        f.write(b"\n".join(rows) + b"\n")
    r = pipe("file:" + src,
             "jetstream:%s/%s,dead_letter=%s" % (urls, SUBJECT, dead))
    err = r.stderr.decode()
    assert r.returncode == 1, (r.returncode, err)
    assert "2 records not delivered" in err, err
    got = tool("dump", urls, STREAM).splitlines()
    want = [x for i, x in enumerate(rows) if i not in (2, 6)]
    assert got == want, got
    d = dead_lines(dead)
    assert [x["record"][:5] for x in d] == ["BIG2 ", "BIG6 "], d
    assert all("aximum" in x["error"] or "payload" in x["error"]
               for x in d), d
    print("too large: 8 stored, 2 in the dead letters (%s)" % d[0]["error"])


def stream_max(urls):
    src, dead = path("in3.txt"), path("dead4.jsonl")
    rows = lines(5).splitlines()
    rows[1] = b"MID " + b"z" * 2000
    with open(src, "wb") as f:
        f.write(b"\n".join(rows) + b"\n")
    r = pipe("file:" + src,
             "jetstream:%s/small.x,dead_letter=%s" % (urls, dead))
    err = r.stderr.decode()
    assert r.returncode == 1, (r.returncode, err)
    assert "1 records not delivered" in err, err
    got = tool("dump", urls, "SMALL").splitlines()
    assert got == rows[:1] + rows[2:], got
    d = dead_lines(dead)
    assert [x["record"][:4] for x in d] == ["MID "], d
    assert "maximum" in d[0]["error"], d
    print("stream's max_msg_size: 1 in the dead letters (%s)" % d[0]["error"])


def no_stream(urls):
    src, dead = path("in2.txt"), path("dead2.jsonl")
    with open(src, "wb") as f:
        f.write(lines(3))
    r = pipe("file:" + src,
             "jetstream:%s/nostream.here,retries=2,dead_letter=%s"
             % (urls, dead))
    err = r.stderr.decode()
    assert r.returncode == 1, (r.returncode, err)
    assert "3 records not delivered" in err, err
    d = dead_lines(dead)
    assert [x["record"] for x in d] == \
        [x.decode() for x in lines(3).splitlines()], d
    print("no stream: 3 given up after 2 retries (%s)" % d[0]["error"])


def daemon(urls):
    src, dead, mport = path("app.log"), path("dead3.jsonl"), free_port()
    rows = lines(20, 100).splitlines()
    rows[5] = big(5)
    with open(src, "wb") as f:
        f.write(b"\n".join(rows) + b"\n")
    conf = path("weir.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\nstate_directory = %s\ncontrol_socket = no\n"
                "metrics = 127.0.0.1:%d\n\n"
                "[pipeline d]\nsource = file:%s\nfollow = yes\n"
                "sink = jetstream:%s/%s,dead_letter=%s\n"
                % (path("state"), mport, src, urls, SUBJECT, dead))
    log = open(path("weir.log"), "ab")
    d = subprocess.Popen([WEIR, "-c", conf], stdout=log, stderr=log)
    PROCS.append(d)
    sink = 'pipeline="d",sink="jetstream:%s/%s"' % (urls, SUBJECT)
    deadline_wait(lambda: metric(
        mport, "weir_jetstream_dead_letter_records_total{%s} " % sink) == 1,
        "the dead letter counted")
    deadline_wait(lambda: len(tool("dump", urls, STREAM).splitlines())
                  == 8 + 19, "the lines after it stored")
    d.terminate()
    assert d.wait(30) == 0
    assert [x["record"][:5] for x in dead_lines(dead)] == ["BIG5 "]
    print("daemon: 1 in the dead letters, counted; 19 stored")


def main():
    if shutil.which("nats-server") is None:
        print("skipped: nats-server is not installed (Debian's "
              "nats-server)")
        return 77
    nodes, urls = cluster("max_payload: 8192\n")
    tool("create", urls, STREAM, SUBJECT)
    tool("create", urls, "SMALL", "small.x", "1000")
    too_large(urls)
    stream_max(urls)
    no_stream(urls)
    daemon(urls)
    return 0


if __name__ == "__main__":
    rc = 1
    try:
        rc = main()
    finally:
        if rc:
            try:
                with open(path("weir.log"), "rb") as f:
                    sys.stderr.write(f.read()[-6000:].decode(errors="replace"))
            except OSError:
                pass
        stop_all()
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(rc)
