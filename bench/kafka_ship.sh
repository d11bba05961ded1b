#!/bin/bash
# kafka_ship.sh - a file of 200-byte lines shipped into Kafka and into NATS
# JetStream, side by side in one run, every record acknowledged. Prints
# records per second for each row.
#
#   bench/kafka_ship.sh [BUILDDIR] [LINES]    defaults: build, 500000
#
# Kafka: librdkafka's mock cluster (tests/kafka/kafka_mock, 3 brokers, a
# topic of 3 partitions replicated 3 times per row; there is no Kafka
# broker in Debian). Rows: weir (`weir pipe` into a kafka sink: it exits
# 0 only when every record had a successful delivery report; idempotent,
# acks=all) with key=host (one partition) and key=none (all three);
# syslog-ng's kafka-c() destination and rsyslog's omkafka, both with
# acks=all and idempotence, timed until the topic's end offsets (kcat -Q)
# sum to LINES. syslog-ng is unpacked by bench/peers/syslog-ng.sh with its
# kafka module; rsyslog-kafka is unpacked here with apt-get download and
# dpkg-deb -x (its package does not install next to the rest).
#
# JetStream: three nats-server nodes on 127.0.0.1, a file-stored stream
# of 3 replicas (tests/jetstream/js_tool); rows: weir (`weir pipe` into a
# jetstream sink, exit 0 when every record was acknowledged) and js_pub
# (build/bench/js_pub: the NATS client's own async publish loop, then
# js_PublishAsyncComplete), the ceiling.
set -euo pipefail

build=${1:-build}
lines=${2:-500000}
root=$(cd "$(dirname "$0")/.." && pwd)
weir=$root/$build/daemon/weir
mock=$root/$build/tests/kafka/kafka_mock
jstool=$root/$build/tests/jetstream/js_tool
jspub=$root/$build/bench/js_pub
sng=${WEIR_SYSLOG_NG_ROOT:-$root/$build/bench/peers/syslog-ng}
tmp=$(mktemp -d /tmp/weir-kafka-ship-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	exec 3>&- 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The file: lines of 199 bytes and a newline.
python3 - "$tmp/data.log" "$lines" <<'PY'
import sys
n = int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    for i in range(n):
        head = "%010d " % i
        f.write(head + "x" * (199 - len(head)) + "\n")
PY

rate() { # NAME T0 T1 [NOTE]
	python3 - "$1" "$lines" "$2" "$3" "${4:-}" <<'PY'
import sys
name, n, t0, t1, note = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
secs = t1 - t0
print("kafka-ship peer=%s lines=%d: %.0f records/s, %.2f s%s" % (name, n, n / secs, secs, note))
PY
}

echo "# kafka-ship: $lines lines of 200 bytes, every record acknowledged; $(nproc) CPUs (shared machine)"

# ---- Kafka: the mock cluster ----

mkfifo "$tmp/mock.in"
"$mock" first <"$tmp/mock.in" >"$tmp/mock.out" 2>"$tmp/mock.err" &
pids+=($!)
exec 3>"$tmp/mock.in"
for _ in $(seq 100); do [ -s "$tmp/mock.out" ] && break; sleep 0.05; done
boot=$(head -1 "$tmp/mock.out")
ntopic=0
new_topic() {
	ntopic=$((ntopic + 1))
	topic=t$ntopic
	echo "topic $topic" >&3
	sleep 0.1
}
stored() { # the topic's end offsets, summed
	kcat -Q -b "$boot" -t "$topic:0:-1" -t "$topic:1:-1" -t "$topic:2:-1" 2>/dev/null |
		awk '{s += $NF} END {print s + 0}'
}
until_stored() { # NAME T0
	local end=$(($(date +%s) + 600)) got
	while got=$(stored) && [ "$got" -lt "$lines" ]; do
		if [ "$(date +%s)" -gt "$end" ]; then
			echo "kafka-ship peer=$1: FAILED: $got of $lines records in 600 s"
			return 1
		fi
		sleep 0.05
	done
	rate "$1" "$2" "$(date +%s.%N)"
}

weir_kafka() { # NAME KEY
	new_topic
	local t0 t1
	t0=$(date +%s.%N)
	"$weir" pipe "file:$tmp/data.log" "kafka:$boot/$topic,key=$2"
	t1=$(date +%s.%N)
	rate "$1" "$t0" "$t1" " ($(stored) in the topic)"
}
weir_kafka weir-kafka host
weir_kafka weir-kafka-3partitions none

if [ -x "$sng/usr/sbin/syslog-ng" ] &&
	[ -e "$sng/usr/lib/syslog-ng/3.38/libkafka.so" ]; then
	new_topic
	cat >"$tmp/sng.conf" <<EOF
@version: 3.38
options { keep-hostname(yes); log-fetch-limit(10000); log-iw-size(100000);
          stats-freq(0); };
source s { file("$tmp/data.log" flags(no-parse) follow-freq(0.1)
                log-fetch-limit(10000) log-iw-size(100000)); };
destination d { kafka-c(bootstrap-servers("$boot") topic("$topic")
                        message("\${MSG}") workers(4)
                        config("acks" => "all"
                               "enable.idempotence" => "true")); };
log { source(s); destination(d); };
EOF
	libs="$sng/usr/lib/x86_64-linux-gnu:$sng/usr/lib/syslog-ng"
	t0=$(date +%s.%N)
	LD_LIBRARY_PATH=$libs "$sng/usr/sbin/syslog-ng" -F \
		--module-path="$sng/usr/lib/syslog-ng/3.38" -f "$tmp/sng.conf" \
		-R "$tmp/sng.persist" -c "$tmp/sng.ctl" -p "$tmp/sng.pid" \
		>"$tmp/sng.out" 2>&1 &
	sng_pid=$!
	pids+=($sng_pid)
	until_stored syslog-ng "$t0" || tail -5 "$tmp/sng.out"
	kill "$sng_pid" 2>/dev/null || true
else
	echo "kafka-ship peer=syslog-ng: not run ($sng has no kafka module: bench/peers/syslog-ng.sh)"
fi

rsk=$tmp/rsyslog-kafka
if command -v rsyslogd >/dev/null &&
	(mkdir -p "$rsk" && cd "$rsk" && apt-get download -q rsyslog-kafka >/dev/null 2>&1 &&
		dpkg-deb -x ./rsyslog-kafka_*.deb "$rsk"); then
	new_topic
	omkafka=$(find "$rsk" -name omkafka.so | head -1)
	mkdir -p "$tmp/rs.work"
	cat >"$tmp/rs.conf" <<EOF
global(workDirectory="$tmp/rs.work")
module(load="imfile")
module(load="$omkafka")
template(name="msg" type="string" string="%msg%")
input(type="imfile" File="$tmp/data.log" Tag="d" PersistStateInterval="0")
action(type="omkafka" broker=["$boot"] topic="$topic" template="msg"
       confParam=["acks=all", "enable.idempotence=true"])
EOF
	t0=$(date +%s.%N)
	rsyslogd -n -f "$tmp/rs.conf" -i "$tmp/rs.pid" >"$tmp/rs.out" 2>&1 &
	rs_pid=$!
	pids+=($rs_pid)
	until_stored rsyslog "$t0" || tail -5 "$tmp/rs.out"
	kill "$rs_pid" 2>/dev/null || true
else
	echo "kafka-ship peer=rsyslog: not run (no rsyslogd, or rsyslog-kafka could not be fetched)"
fi
exec 3>&-

# ---- JetStream: three nats-server nodes ----

routes=""
declare -a cports
for i in 1 2 3; do
	cports[i]=$(free_port)
	rports[i]=$(free_port)
	routes="$routes${routes:+, }nats-route://127.0.0.1:${rports[i]}"
done
for i in 1 2 3; do
	cat >"$tmp/n$i.conf" <<EOF
listen: 127.0.0.1:${cports[i]}
server_name: n$i
jetstream { store_dir: $tmp/n$i.store }
cluster { name: c1, listen: 127.0.0.1:${rports[i]}, routes: [$routes] }
EOF
	nats-server -c "$tmp/n$i.conf" >"$tmp/n$i.log" 2>&1 &
	pids+=($!)
done
urls="nats://127.0.0.1:${cports[1]},nats://127.0.0.1:${cports[2]},nats://127.0.0.1:${cports[3]}"
for i in 1 2 3; do
	for _ in $(seq 100); do
		(exec 9<>"/dev/tcp/127.0.0.1/${cports[i]}") 2>/dev/null && break
		sleep 0.05
	done
done
"$jstool" create "$urls" WEIR "ship.weir"
"$jstool" create "$urls" CEIL "ship.ceiling"

t0=$(date +%s.%N)
"$weir" pipe "file:$tmp/data.log" "jetstream:$urls/ship.weir"
t1=$(date +%s.%N)
rate weir-jetstream "$t0" "$t1" " ($("$jstool" count "$urls" WEIR) in the stream)"
out=$("$jspub" "$urls" ship.ceiling "$tmp/data.log")
echo "kafka-ship peer=js_pub lines=$lines: ${out#* in }" |
	sed -E 's/: ([0-9.]+) s: ([0-9]+) records\/s/: \2 records\/s, \1 s/'
echo "  ($("$jstool" count "$urls" CEIL) in the stream)"
