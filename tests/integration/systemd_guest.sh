#!/bin/sh
# systemd_guest.sh - runs inside the container test_systemd.sh boots, as
# the oneshot weir-test.service, with the installed weir.service in
# /etc/systemd/system and /etc/weir and /results shared with the host.
# Writes what it sees to /results/log, then one line to /results/status:
# "pass", "fail: N checks", or "skip: REASON" when weir.service cannot
# run in this container at all.
exec >/results/log 2>&1
set -u
fails=0

check() {
	what=$1
	shift
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what"
		fails=$((fails + 1))
	fi
}

prop() {
	systemctl show -P "$1" weir.service
}

# Waits up to $2 s for ActiveState $1.
wait_state() {
	i=0
	while [ "$(prop ActiveState)" != "$1" ] && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ "$(prop ActiveState)" = "$1" ]
}

# What 127.0.0.1:$1 sends, compared with the file $2.
serves() {
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"' && cat <&3' >/tmp/fetched 2>/dev/null &&
		cmp -s /tmp/fetched "$2"
}

show() {
	echo "-- weir.service: ActiveState=$(prop ActiveState) SubState=$(prop SubState)" \
		"Result=$(prop Result) ExecMainStatus=$(prop ExecMainStatus) NRestarts=$(prop NRestarts)"
}

# ---- what the install gives a system that has no source tree ----
# (/work and every other host directory but /usr are absent here.)
check "systemd-sysusers created user weir from $(ls /usr/local/lib/sysusers.d/weir.conf /usr/lib/sysusers.d/weir.conf 2>/dev/null)" \
	id weir
demo_dir=/usr/local/share/weir
/usr/local/bin/weir --help | grep -q "serving files from $demo_dir" ||
	check "the installed weir's --help names $demo_dir" false
(cd / && exec /usr/local/bin/weir) >/tmp/demo.log 2>&1 &
demo=$!
i=0
until serves 7000 "$demo_dir/README.md" || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "the installed demo serves $demo_dir/README.md on 127.0.0.1:7000" \
	serves 7000 "$demo_dir/README.md"
check "and /usr/share/common-licenses/GPL-3 on 127.0.0.1:7001" \
	serves 7001 /usr/share/common-licenses/GPL-3
kill -TERM $demo
wait $demo
check "the demo stops with exit 0" test $? -eq 0
cat /tmp/demo.log

echo "weir served by weir.service" >/etc/weir/data.txt
chmod 0644 /etc/weir/data.txt
good='[pipeline a]
source = file:/etc/weir/data.txt
sink = tcp-listen:127.0.0.1:7000
'
two="$good
[pipeline b]
source = file:/etc/weir/data.txt
sink = tcp-listen:127.0.0.1:7001
"
broken="${good}speed = 10
"

# ---- a good config starts (else this container cannot run the unit) ----
printf '%s' "$good" >/etc/weir/weir.conf
systemctl start weir.service
if ! wait_state active 10; then
	show
	journalctl -u weir.service --no-pager | tail -20
	echo "skip: weir.service does not start in this container" \
		"(Result=$(prop Result), ExecMainStatus=$(prop ExecMainStatus))" >/results/status
	exit 0
fi
show
check "a good config serves" serves 7000 /etc/weir/data.txt
pid=$(prop MainPID)

# ---- reload with a good config succeeds and applies it ----
printf '%s' "$two" >/etc/weir/weir.conf
check "systemctl reload with a good config succeeds" systemctl reload weir.service
i=0
until serves 7001 /etc/weir/data.txt || [ $i -ge 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "the reloaded config serves its new pipeline" serves 7001 /etc/weir/data.txt

# ---- the control socket in the RuntimeDirectory; the journal's fields ----
check "the control socket is /run/weir/control, 0600, owned by weir" \
	test "$(stat -c '%a %U' /run/weir/control 2>/dev/null)" = "600 weir"
weir status
check "weir status answers through it" sh -c 'weir status --json | grep -q "\"name\":\"b\""'
check "the journal has the PIPELINE= field of a client's line" sh -c \
	'journalctl -u weir.service -o verbose --no-pager PIPELINE=a | grep -q "MESSAGE=pipeline a: client 127.0.0.1:"'

# ---- reload with a broken config fails; the old config keeps running ----
printf '%s' "$broken" >/etc/weir/weir.conf
if systemctl reload weir.service; then
	check "systemctl reload with a broken config fails" false
else
	check "systemctl reload with a broken config fails" true
fi
show
check "weir is still active after the failed reload" test "$(prop ActiveState)" = active
check "the same process runs" test "$(prop MainPID)" = "$pid"
check "the old config still serves" serves 7001 /etc/weir/data.txt
journalctl -u weir.service --no-pager | grep -q "weir.conf:4: unknown key 'speed'" ||
	check "the journal names weir.conf:4" false

# ---- restart with a broken config ends failed, without a restart loop ----
systemctl restart weir.service && check "systemctl restart with a broken config fails" false
check "restart with a broken config ends failed" wait_state failed 10
show
check "its exit status is 78" test "$(prop ExecMainStatus)" = 78
# RestartSec=2s: a restart loop would have restarted twice by now.
sleep 5
show
check "it stays failed" test "$(prop ActiveState)" = failed
check "it was not restarted" test "$(prop NRestarts)" = 0

# ---- socket activation: weir.socket's queue, and the service it starts ----
systemctl reset-failed weir.service
printf '[pipeline s]\nsource = file:/etc/weir/data.txt\nsink = tcp-listen:[::]:7000\n' \
	>/etc/weir/weir.conf
systemctl start weir.socket
# A listening socket's Send-Q is its backlog, capped by somaxconn.
want=$(($(cat /proc/sys/net/core/somaxconn) < 4096 ? $(cat /proc/sys/net/core/somaxconn) : 4096))
backlog=$(ss -ltnH 'sport = :7000' | head -n 1 | tr -s ' ' | cut -d ' ' -f 3)
check "weir.socket listens on :7000 with backlog $want (found '$backlog')" \
	test "$backlog" = "$want"
check "a client of weir.socket starts weir.service and is served" \
	serves 7000 /etc/weir/data.txt
check "weir.service runs, activated" wait_state active 10
systemctl stop weir.socket weir.service

if journalctl -u weir.service --no-pager | grep -q -e 'runtime error:' -e 'Sanitizer'; then
	check "no sanitizer report in the journal" false
fi
journalctl -u weir.service --no-pager | tail -30
if [ $fails -eq 0 ]; then
	echo pass >/results/status
else
	echo "fail: $fails checks" >/results/status
fi
