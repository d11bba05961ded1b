#!/bin/sh
# check-scale.sh - how the config's size costs: `weir --check`, a start
# and a SIGHUP reload on configs of 100, 1,000 and 10,000 pipelines.
#
#   check    --check of N pipelines, a file into its own file sink each
#            (best of 3);
#   start    from exec to READY=1 on $NOTIFY_SOCKET, N pipelines serving a
#            file on a unix-listen socket each (no network, one fd each);
#   reload   from SIGHUP to the READY=1 that follows it: "same" reloads
#            the file unchanged (every pipeline kept), "changed" after a
#            high_water_mark changed in every pipeline (every one
#            replaced, its socket taken over, the old one drained).
#
# The files live in $BENCH_TMP (default /dev/shm): on ext4, creating a
# unix socket's inode is slow where names were recently deleted, slow
# enough to be most of what a start measures.
#
#   bench/check-scale.sh [WEIR] [COUNTS]   (default: build/daemon/weir,
#                                           "100 1000 10000")
set -eu

weir=${1:-build/daemon/weir}
counts=${2:-100 1000 10000}
tmp=$(mktemp -d -p "${BENCH_TMP:-/dev/shm}")
pid=
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
echo data >"$tmp/data.txt"
mkdir "$tmp/sub" "$tmp/s"

# Prints the ms from its start (or from SIGHUP) to each READY=1: runs the
# daemon, waits for READY, sends SIGHUP twice (unchanged, then changed),
# then SIGTERM.
cat >"$tmp/notify.py" <<'EOF'
import os, signal, socket, subprocess, sys, time

weir, conf, changed = sys.argv[1:4]
path = os.path.join(os.path.dirname(conf), "notify.sock")
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
sock.settimeout(600)
env = dict(os.environ, NOTIFY_SOCKET=path)

def ready():
    while True:
        msg = sock.recv(4096).decode()
        if "READY=1" in msg.split("\n"):
            return

t0 = time.monotonic()
p = subprocess.Popen([weir, "-c", conf], env=env, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
ready()
out = ["start %d" % ((time.monotonic() - t0) * 1000)]
for label, src in (("same", None), ("changed", changed)):
    if src:
        os.replace(src, conf)
    t0 = time.monotonic()
    p.send_signal(signal.SIGHUP)
    ready()
    out.append("%s %d" % (label, (time.monotonic() - t0) * 1000))
p.send_signal(signal.SIGTERM)
p.wait(timeout=600)
print(" ".join(out))
EOF

listen_conf() { # N HWM OUT
    awk -v n="$1" -v hwm="$2" -v d="$tmp" 'BEGIN { for (i = 0; i < n; i++)
        printf "[pipeline p%d]\nsource = file:%s/data.txt\nsink = unix-listen:%s/s/%d.sock\nhigh_water_mark = %s\n", i, d, d, i, hwm }' \
        >"$3"
}

for n in $counts; do
    awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
        printf "[pipeline p%d]\nsource = file:data.txt\nsink = file:sub/%d.out\n", i, i }' \
        >"$tmp/$n.conf"
    best=
    for rep in 1 2 3; do
        t0=$(date +%s%N)
        "$weir" --check -c "$tmp/$n.conf" >/dev/null 2>&1
        t1=$(date +%s%N)
        ms=$(((t1 - t0) / 1000000))
        if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
    done
    listen_conf "$n" 64KiB "$tmp/run.conf"
    listen_conf "$n" 128KiB "$tmp/changed.conf"
    rm -f "$tmp"/s/*.sock "$tmp/notify.sock"
    set -- $(python3 "$tmp/notify.py" "$weir" "$tmp/run.conf" "$tmp/changed.conf")
    echo "check-scale pipelines=$n: check $best ms, start $2 ms," \
        "reload same $4 ms, reload changed $6 ms"
done
