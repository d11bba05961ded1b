#!/usr/bin/env python3
"""test_jetstream.py WEIR_BIN JS_TOOL - the jetstream sink against a real
three-node nats-server cluster (JetStream, file storage under a scratch
directory, a stream of three replicas) on 127.0.0.1 ephemeral ports.

A daemon follows a file into the stream while lines are appended; it is
killed with -9 right after a burst (publishes in flight, the checkpoint
behind them) and started again, so it resumes at the checkpoint and
publishes again, with the same message ids, records the stream already
holds; then a node that follows the stream is killed with -9 and started
again while more lines come. The stream's contents, read back with the
NATS client (js_tool), are the file's lines, line by line: nothing lost,
nothing stored twice.

Skips (77), saying why, when nats-server is not installed.
The engine is whatever WEIR_ENGINE says (meson test --setup epoll).
"""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from js_cluster import (PROCS, TMP, cluster, deadline_wait,  # noqa: E402
                        free_port, lines, metric, path, stop_all)

WEIR = os.path.abspath(sys.argv[1])
TOOL = os.path.abspath(sys.argv[2])
STREAM, SUBJECT = "LOGS", "logs.app"




def tool(*args):
    r = subprocess.run([TOOL] + list(args), capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


def main():
    if shutil.which("nats-server") is None:
        print("skipped: nats-server is not installed (Debian's "
              "nats-server)")
        return 77
    nodes, urls = cluster()
    tool("create", urls, STREAM, SUBJECT)

    src, state, mport = path("app.log"), path("state"), free_port()
    parts = [lines(1000), lines(1000, 1000), lines(1000, 2000)]
    with open(src, "wb") as f:
        f.write(parts[0])
    conf = path("weir.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\nstate_directory = %s\ncontrol_socket = no\n"
                "metrics = 127.0.0.1:%d\ncheckpoint_interval = %s\n\n"
                "[pipeline p]\nsource = file:%s\nfollow = yes\n"
                "sink = jetstream:%s/%s\n"
                % (state, mport, "%s", src, urls, SUBJECT))
    with open(conf) as f:
        text = f.read()

    def set_interval(v):
        with open(conf, "w") as f:
            f.write(text % v)

    def count():
        return int(tool("count", urls, STREAM))

    def daemon():
        log = open(path("weir.log"), "ab")
        d = subprocess.Popen([WEIR, "-c", conf], stdout=log, stderr=log)
        PROCS.append(d)
        return d

    # The first run writes no checkpoint past the file's start, so the
    # second publishes everything again: what the stream holds already
    # must be dropped as duplicates, by their ids.
    set_interval("1h")
    d = daemon()
    deadline_wait(lambda: count() == 1000, "the first thousand records")
    # A burst, and kill -9 while it is out.
    with open(src, "ab") as f:
        f.write(parts[1])
    deadline_wait(lambda: count() > 1000, "records of the burst")
    d.send_signal(signal.SIGKILL)
    d.wait(10)
    stored = count()
    set_interval("50ms")
    d = daemon()
    sink = 'pipeline="p",sink="jetstream:%s/%s"' % (urls, SUBJECT)
    dup = "weir_jetstream_duplicates_total{%s} " % sink
    deadline_wait(lambda: metric(mport, dup) >= stored,
                  "the %d records stored before the kill acknowledged as "
                  "duplicates" % stored)

    # A node that follows the stream, killed and started again while
    # more lines come.
    leader = tool("leader", urls, STREAM).decode().strip()
    victim = next(n for n in nodes if n.name != leader)
    victim.kill()
    with open(src, "ab") as f:
        f.write(parts[2])
    time.sleep(0.3)
    victim.start()

    want = b"".join(parts)
    n = want.count(b"\n")
    deadline_wait(lambda: count() >= n, "every record (%d of %d)"
                  % (count(), n))
    d.send_signal(signal.SIGTERM)
    assert d.wait(30) == 0
    got = tool("dump", urls, STREAM)
    got_lines, want_lines = got.splitlines(), want.splitlines()
    dups = len(got_lines) - len(set(got_lines))
    assert dups == 0, "%d records stored twice" % dups
    missing = set(want_lines) - set(got_lines)
    assert not missing, "%d records missing" % len(missing)
    assert got == want, "the stream holds the lines, not in the file's order"
    return 0


if __name__ == "__main__":
    rc = 1
    try:
        rc = main()
    finally:
        if rc:
            # What weir said, for the failure's reader.
            try:
                with open(path("weir.log"), "rb") as f:
                    sys.stderr.write(f.read()[-8000:].decode(errors="replace"))
            except OSError:
                pass
        stop_all()
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(rc)
