#!/bin/bash
# http_ship.sh - a file of 200-byte lines shipped to an HTTP collector
# that takes POST bodies and answers 204 (Debian's nginx, `return 204`),
# by weir (an http sink, every batch answered before it counts) and by
# syslog-ng's http() destination, side by side in one run. Prints records
# per second for each and the ratio.
#
#   bench/http_ship.sh [BUILDDIR] [LINES]    defaults: build, 1000000
#
# The end of a run is when the collector has received every line's bytes
# (nginx logs each request's body length; the sum is checked every 20 ms)
# and, for weir, when `weir pipe` exited 0 (it exits 0 only when every
# batch was answered 2xx). syslog-ng is unpacked by bench/peers/syslog-ng.sh
# (tools/install-deps --bench) with its http module.
#
# Rows: weir raw bodies; weir gzip'd bodies (compression=gzip); weir with
# batch_records=1000 (syslog-ng's batch size below); the daemon following
# the file with checkpoints (moved only over answered batches) and
# without; syslog-ng with batch-lines(1000) and 4 workers.
set -euo pipefail

build=${1:-build}
lines=${2:-1000000}
root=$(cd "$(dirname "$0")/.." && pwd)
weir=$root/$build/daemon/weir
sng=${WEIR_SYSLOG_NG_ROOT:-$root/$build/bench/peers/syslog-ng}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
tmp=$(mktemp -d /tmp/weir-http-ship-XXXXXX)
trap 'kill $(cat "$tmp"/nginx.pid 2>/dev/null) 2>/dev/null || true;
      kill "${sng_pid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# The file: lines of 199 bytes and a newline.
python3 - "$tmp/data.log" "$lines" <<'PY'
import sys
n = int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    for i in range(n):
        head = "%010d " % i
        f.write(head + "x" * (199 - len(head)) + "\n")
PY
want=$((lines * 199)) # body bytes without newlines: a lower bound for both

cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err warn;
events { worker_connections 1024; }
http {
    client_body_temp_path $tmp/body;
    log_format len \$content_length;
    access_log $tmp/access.log len buffer=4k flush=10ms;
    client_max_body_size 0;
    client_body_buffer_size 16m;
    server {
        listen 127.0.0.1:$port;
        location / { return 204; }
    }
}
EOF
"$nginx" -c "$tmp/nginx.conf" -p "$tmp" 2>/dev/null ||
	"$nginx" -c "$tmp/nginx.conf" -p "$tmp"

received() { awk '{s += $1} END {print s + 0}' "$tmp/access.log" 2>/dev/null || echo 0; }

# row NAME bytes|exit COMMAND...: times the command, to the collector's
# last byte (bytes: every line's bytes taken; for a peer that does not
# exit) or to its exit 0 (exit: weir pipe, which exits 0 only when every
# batch was answered 2xx; its bodies may be compressed).
row() {
	local name=$1 until=$2 t0 t1 got end
	shift 2
	: >"$tmp/access.log"
	kill -USR1 "$(cat "$tmp/nginx.pid")" # reopen the emptied log
	sleep 0.2
	t0=$(date +%s.%N)
	end=$(($(date +%s) + 600))
	"$@"
	while [ "$until" = bytes ] && got=$(received) && [ "$got" -lt "$want" ]; do
		if [ "$(date +%s)" -gt "$end" ]; then
			echo "http-ship peer=$name: FAILED: $got of $want bytes in 600 s"
			return 1
		fi
		sleep 0.02
	done
	t1=$(date +%s.%N)
	sleep 0.1
	got=$(received)
	python3 - "$name" "$lines" "$t0" "$t1" "$got" <<'PY'
import sys
name, n, t0, t1, got = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
secs = t1 - t0
print("http-ship peer=%s lines=%d: %.0f records/s, %.1f s, %d body bytes at the collector" % (name, n, n / secs, secs, got))
PY
}

weir_pipe() {
	"$weir" pipe "file:$tmp/data.log" "http://127.0.0.1:$port/in,$1"
}

echo "# http-ship: $lines lines of 200 bytes to nginx (return 204); $(nproc) CPUs"
row weir exit weir_pipe "preset=raw"
row weir-gzip exit weir_pipe "preset=raw,compression=gzip"
row weir-batch1000 exit weir_pipe "preset=raw,batch_records=1000"

# The daemon, following the file from its start: with checkpoints (moved
# only over answered batches, written every 50 ms), and without (its
# state_directory cannot be written: weir warns and ships on). Each row
# ends at the collector's last byte; with checkpoints, the checkpoint must
# then reach the file's end (every batch answered) within 10 s.
weir_conf() {
	cat >"$tmp/weir.conf" <<EOF
[daemon]
workers = 2
state_directory = $1
control_socket = no
checkpoint_interval = 50ms

[pipeline p]
source = file:$tmp/data.log
follow = yes
sink = http://127.0.0.1:$port/in,preset=raw
EOF
}
weir_run() {
	"$weir" -c "$tmp/weir.conf" >"$tmp/weir.out" 2>&1 &
	weir_pid=$!
}
weir_stop() {
	kill "$weir_pid"
	wait "$weir_pid" || true
}
want_lb=$want
want=$((lines * 200)) # raw bodies: every line and its newline
mkdir -p "$tmp/state"
weir_conf "$tmp/state"
row weir-run-checkpoints bytes weir_run
size=$(stat -c %s "$tmp/data.log")
for _ in $(seq 500); do
	grep -q "^offset $size\$" "$tmp/state/pipeline-p.ckpt" 2>/dev/null && break
	sleep 0.02
done
if ! grep -q "^offset $size\$" "$tmp/state/pipeline-p.ckpt"; then
	echo "http-ship peer=weir-run-checkpoints: FAILED: checkpoint not at $size"
	exit 1
fi
weir_stop
weir_conf /proc/weir-no-state
row weir-run-no-checkpoints bytes weir_run
weir_stop
want=$want_lb

if [ -x "$sng/usr/sbin/syslog-ng" ] &&
	[ -e "$sng/usr/lib/syslog-ng/3.38/libhttp.so" ]; then
	cat >"$tmp/sng.conf" <<EOF
@version: 3.38
options { keep-hostname(yes); flush-lines(1000); log-fetch-limit(10000);
          log-iw-size(100000); stats-freq(0); };
source s { file("$tmp/data.log" flags(no-parse) follow-freq(0.1)
                log-fetch-limit(10000) log-iw-size(100000)); };
destination d { http(url("http://127.0.0.1:$port/in") method("POST")
                     batch-lines(1000) batch-timeout(100) workers(4)
                     body("\${MSG}")); };
log { source(s); destination(d); };
EOF
	libs="$sng/usr/lib/x86_64-linux-gnu:$sng/usr/lib/syslog-ng"
	sng_start() {
		LD_LIBRARY_PATH=$libs "$sng/usr/sbin/syslog-ng" -F \
			--module-path="$sng/usr/lib/syslog-ng/3.38" -f "$tmp/sng.conf" \
			-R "$tmp/sng.persist" -c "$tmp/sng.ctl" -p "$tmp/sng.pid" \
			>"$tmp/sng.out" 2>&1 &
		sng_pid=$!
	}
	row syslog-ng bytes sng_start
	kill "$sng_pid" 2>/dev/null || true
else
	echo "http-ship peer=syslog-ng: not run ($sng has no http module: bench/peers/syslog-ng.sh)"
fi
