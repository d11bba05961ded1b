#!/bin/bash
# http_serve.sh - static files over HTTP: weir (a dir source, an
# http-listen sink) and Debian's nginx (sendfile on, its config below)
# serving the same root, side by side in one run, measured by wrk.
#
#   bench/http_serve.sh [BUILDDIR] [SECONDS] [CONNECTIONS...]
#                                   defaults: build, 5, 100 1000
#   IDLE=N (default 10000): the idle keep-alive clients of the idle rows
#   IDLE_PACE_US=N (default 0): microseconds between two of their
#       connects (0: all at once, a burst)
#   BIG=N (default 1000; 0: none): the clients of the big-file rows
#   ROUNDS=N (default 1): each wrk row N times, weir and nginx in turn,
#       then the ratio of their summed requests/s (and each round's)
#
# Rows: each server, each file (4 KiB and 1 MiB), each connection count,
# wrk -t2 on keep-alive connections for SECONDS. Columns: requests/s and
# bytes/s as wrk reports them, and the server's CPU seconds (user +
# system, every process of it, from /proc) per GiB of answers, so that a
# server that is faster only because it took more of the machine shows
# it. wrk shares the machine with the server: its two threads take CPU
# the server would otherwise have, alike for both.
set -euo pipefail

build=${1:-build}
secs=${2:-5}
shift $(($# < 2 ? $# : 2))
conns=("$@")
[ ${#conns[@]} -gt 0 ] || conns=(100 1000)
root=$(cd "$(dirname "$0")/.." && pwd)
weir=$root/$build/daemon/weir
nginx=$(command -v nginx || echo /usr/sbin/nginx)
tmp=$(mktemp -d /tmp/weir-http-serve-XXXXXX)
trap 'kill $(cat "$tmp"/nginx.pid 2>/dev/null) 2>/dev/null || true;
      kill "${weir_pid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wport=$(free_port)
nport=$(free_port)

mkdir "$tmp/root"
head -c 4096 /dev/urandom >"$tmp/root/4k.bin"
head -c 1048576 /dev/urandom >"$tmp/root/1m.bin"
# nginx's workers run as another user when it is started as root.
chmod 755 "$tmp" "$tmp/root"
chmod 644 "$tmp"/root/*

# nginx as a static file server is usually tuned: sendfile with
# tcp_nopush (headers and the first bytes in one segment), long
# keep-alive, no access log (weir's per-client line is at debug here
# too), a worker per core with a listening socket each (reuseport: the
# kernel spreads connections evenly, where workers racing for one socket
# can leave one of them most of a burst), and open_file_cache so that it
# does not open the file per request.
cat >"$tmp/nginx.conf" <<EOF
worker_processes auto;
worker_rlimit_nofile 20000;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err warn;
events { worker_connections 10000; multi_accept on; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    open_file_cache max=1000 inactive=60s;
    types { application/octet-stream bin; }
    client_body_temp_path $tmp/body;
    server {
        listen 127.0.0.1:$nport backlog=4096 reuseport;
        root $tmp/root;
    }
}
EOF
cat >"$tmp/weir.conf" <<EOF
[daemon]
workers = auto
access_log = no

[pipeline files]
source = dir:$tmp/root
sink = http-listen:127.0.0.1:$wport
EOF
"$nginx" -c "$tmp/nginx.conf" -p "$tmp" 2>/dev/null ||
	"$nginx" -c "$tmp/nginx.conf" -p "$tmp"
"$weir" -c "$tmp/weir.conf" 2>"$tmp/weir.log" &
weir_pid=$!
for _ in $(seq 100); do
	curl -sf -o /dev/null "http://127.0.0.1:$wport/4k.bin" && break
	sleep 0.05
done

# CPU seconds (utime + stime) of the processes given, from /proc.
cpu() {
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "scale=2; $t / $(getconf CLK_TCK)" | bc
}

pids_of() {
	if [ "$1" = weir ]; then
		echo "$weir_pid"
	else
		local m
		m=$(cat "$tmp/nginx.pid")
		echo "$m $(pgrep -P "$m" | tr '\n' ' ')"
	fi
}

# wrk's "Transfer/sec: 1.02GB" in bytes.
bytes() {
	awk '/Transfer\/sec/ {v = $2; u = substr(v, length(v) - 1);
		n = v + 0; m = 1; if (u == "KB") m = 1024; if (u == "MB") m = 1048576;
		if (u == "GB") m = 1073741824; printf "%.0f\n", n * m}'
}

printf '%-6s %-7s %6s %12s %12s %10s\n' server file conns 'req/s' 'MiB/s' 'CPU-s/GiB'
rounds=${ROUNDS:-1}
for file in 4k.bin 1m.bin; do
	for c in "${conns[@]}"; do
		sums=""
		for _ in $(seq "$rounds"); do
			pair=""
			for srv in weir nginx; do
				port=$([ $srv = weir ] && echo "$wport" || echo "$nport")
				pids=$(pids_of $srv)
				# shellcheck disable=SC2086 # a list of pids
				c0=$(cpu $pids)
				wrk -t2 -c"$c" -d"${secs}s" "http://127.0.0.1:$port/$file" >"$tmp/wrk.out"
				# shellcheck disable=SC2086
				c1=$(cpu $pids)
				rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk.out")
				bps=$(bytes <"$tmp/wrk.out")
				per=$(echo "scale=2; ($c1 - $c0) / ($bps * $secs / 1073741824)" | bc)
				printf '%-6s %-7s %6s %12s %12s %10s\n' $srv $file "$c" "$rps" \
					$((bps / 1048576)) "$per"
				if grep -q "Non-2xx\|Socket errors" "$tmp/wrk.out"; then
					grep "Non-2xx\|Socket errors" "$tmp/wrk.out" | sed 's/^/       /'
				fi
				pair="$pair $rps"
			done
			sums="$sums$pair
"
		done
		if [ "$rounds" -gt 1 ]; then
			printf '%s' "$sums" | awk -v f=$file -v c="$c" '
				NF == 2 { w += $1; n += $2; r = r sprintf(" %.2f", $1 / $2) }
				END { printf "ratio  %-7s %6s  weir/nginx %.2fx (rounds:%s)\n", f, c, w / n, r }'
		fi
	done
done

# Idle keep-alive clients: IDLE connections each make one request for the
# 4 KiB file and stay open; the server's resident memory (every process
# of it, from /proc) before and while they idle, per client.
idle=${IDLE:-10000}
rss_kib() {
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '/^VmRSS/ {print $2}' "/proc/$p/status")))
	done
	echo $t
}
printf '\n%-6s %8s %12s %12s %14s\n' server clients 'RSS KiB' 'with them' 'bytes/client'
for srv in weir nginx; do
	port=$([ $srv = weir ] && echo "$wport" || echo "$nport")
	pids=$(pids_of $srv)
	# shellcheck disable=SC2086
	r0=$(rss_kib $pids)
	python3 - "$port" "$idle" "$tmp/idle.$srv" "${IDLE_PACE_US:-0}" <<'PY' &
import socket, sys, time, os
port, n, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
pace = int(sys.argv[4]) / 1e6
req = b"GET /4k.bin HTTP/1.1\r\nHost: x\r\n\r\n"
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    socks.append(s)
    if pace:
        time.sleep(pace)
for s in socks:  # each answer read whole: the connection is idle
    got = b""
    while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < 4096:
        got += s.recv(65536)
open(ready, "w").close()
time.sleep(600)
PY
	client=$!
	while [ ! -e "$tmp/idle.$srv" ] && kill -0 $client 2>/dev/null; do sleep 0.2; done
	sleep 1
	# shellcheck disable=SC2086
	r1=$(rss_kib $pids)
	kill $client
	wait $client 2>/dev/null || true
	printf '%-6s %8s %12s %12s %14s\n' $srv "$idle" "$r0" "$r1" \
		$(((r1 - r0) * 1024 / idle))
	sleep 1
done

# BIG clients each fetch a 64 MiB file once, all at once, in two waves:
# weir-bench serve (bench/serve.c) starts each server afresh (weir-http:
# a file source at /f of an http-listen sink; nginx with sendfile on and
# tcp_nopush, the rest as its defaults, and nginx-reuseport, the same with
# a listening socket per worker), opens every connection from one
# epoll loop, counts each body without copying it (MSG_TRUNC) and fails
# a wave in which a client did not get the whole file. 64 MiB of /tmp
# for the file; bounded by BIG_TIMEOUT seconds (default 900).
big=${BIG:-1000}
if [ "$big" -gt 0 ]; then
	echo
	timeout "${BIG_TIMEOUT:-900}" "$root/$build/bench/weir-bench" serve \
		clients="$big" size=64MiB waves=2 hold=0 server=weir-http,nginx,nginx-reuseport 2>&1 |
		grep '^serve server=' || echo "big-file rows: failed or cut at the timeout"
fi
