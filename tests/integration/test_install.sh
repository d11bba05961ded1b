#!/bin/sh
# test_install.sh BUILD_DIR - `meson install --destdir` lays out what a
# system needs: the binary, the systemd units and user, the example config,
# the man pages, libweir's headers and weir.pc, and what the demo serves.
# Then the installed pieces are checked the way a packager would: the
# binary runs and accepts the example, its embedded demo serves the
# installed file byte for byte, the units pass `systemd-analyze verify`,
# the man pages render without warnings. Tools that are missing
# (systemd-analyze, man) skip their part, with a line saying so.
#
# The expected directories come from meson.build through the environment:
# WEIR_PREFIX, WEIR_BINDIR, WEIR_SYSCONFDIR, WEIR_DATADIR, WEIR_MANDIR,
# WEIR_INCLUDEDIR, WEIR_LIBDIR, WEIR_UNITDIR, WEIR_SYSUSERSDIR (absolute),
# WEIR_VERSION; WEIR_SOURCE_ROOT is the source tree.
set -eu

# The demo listens on the fixed ports 127.0.0.1:7000 and :7001, which
# anything else on the machine may hold (the README's own demo, running in
# another terminal). Where a network namespace can be made, the test runs
# in one of its own, whose loopback has every port free.
if [ -z "${WEIR_TEST_NETNS:-}" ]; then
	for how in "unshare -n" "unshare -rn"; do
		if $how true 2>/dev/null; then
			WEIR_TEST_NETNS=1 exec $how sh -c \
				'ip link set lo up 2>/dev/null || ifconfig lo up; exec "$0" "$@"' \
				"$0" "$@"
		fi
	done
	echo "note: no network namespace here; the demo needs 127.0.0.1:7000 and :7001 free"
fi

build=${1:?usage: test_install.sh BUILD_DIR}
dest=$(mktemp -d /tmp/weir-install-XXXXXX)
weir_pid=
cleanup() {
	[ -z "$weir_pid" ] || kill "$weir_pid" 2>/dev/null || true
	rm -rf "$dest"
}
trap cleanup EXIT
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$dest.log" 2>&1 ||
	{ cat "$dest.log" >&2; rm -f "$dest.log"; echo "FAIL: meson install" >&2; exit 1; }
rm -f "$dest.log"

# ---- the list of files ----
unitdir=$dest$WEIR_UNITDIR
for f in \
	"$WEIR_BINDIR/weir" \
	"$WEIR_UNITDIR/weir.service" \
	"$WEIR_UNITDIR/weir.socket" \
	"$WEIR_SYSUSERSDIR/weir.conf" \
	"$WEIR_SYSCONFDIR/weir/weir.conf.example" \
	"$WEIR_DATADIR/weir/README.md" \
	"$WEIR_DATADIR/weir/demo.conf" \
	"$WEIR_MANDIR/man8/weir.8" \
	"$WEIR_MANDIR/man5/weir.conf.5" \
	"$WEIR_INCLUDEDIR/weir/ring.h" \
	"$WEIR_INCLUDEDIR/weir/pool.h" \
	"$WEIR_INCLUDEDIR/weir/stream.h" \
	"$WEIR_INCLUDEDIR/weir/internal/readable.h" \
	"$WEIR_LIBDIR/pkgconfig/weir.pc"; do
	[ -f "$dest$f" ] || fail "not installed: $f"
done
[ -x "$dest$WEIR_BINDIR/weir" ] || fail "$WEIR_BINDIR/weir is not executable"
# Nothing but these may land outside the prefix: the unit directory (from
# systemd.pc, often /lib/systemd/system), the sysusers file (where
# systemd-sysusers reads it) and the config (/etc for every prefix).
find "$dest" -type f | sed "s#^$dest##" | while read -r f; do
	case $f in
	"$WEIR_PREFIX"/* | "$WEIR_UNITDIR"/* | "$WEIR_SYSCONFDIR"/* | \
		"$WEIR_SYSUSERSDIR"/*) ;;
	*) echo "FAIL: installed outside the prefix: $f" >&2; exit 1 ;;
	esac
done || failures=$((failures + 1))
echo "installed: $(find "$dest" -type f | wc -l) files under $dest"

# ---- the units point at what was installed ----
service=$unitdir/weir.service
if grep -n '@[a-z]*@' "$service"; then
	fail "weir.service has unsubstituted variables"
fi
grep -qx "ExecStart=$WEIR_BINDIR/weir -c $WEIR_SYSCONFDIR/weir/weir.conf" "$service" ||
	fail "weir.service: ExecStart does not run $WEIR_BINDIR/weir"
conf=$WEIR_SYSCONFDIR/weir/weir.conf
grep -qx "ExecReload=$WEIR_BINDIR/weir --check -c $conf" "$service" ||
	fail "weir.service: ExecReload does not check the config first"
# The check must come before the signal: systemd runs ExecReload= lines in
# order and stops at the first that fails.
[ "$(grep '^ExecReload=' "$service" | sed -n 2p)" = 'ExecReload=/bin/kill -HUP $MAINPID' ] ||
	fail "weir.service: the second ExecReload= is not the SIGHUP"
# RestartPreventExitStatus= holds for the main process only: a check in
# ExecStartPre= that exits 78 would be restarted forever.
if grep -q '^ExecStartPre=' "$service"; then
	fail "weir.service has an ExecStartPre= (its exit 78 would be retried)"
fi
grep '^RestartPreventExitStatus=' "$service" | grep -qw 78 ||
	fail "weir.service: exit 78 (a config error) is retried"
# The config the unit reads is where ConfigurationDirectory= says, when
# it is under /etc (the default for every prefix).
if [ "$WEIR_SYSCONFDIR" = /etc ]; then
	grep -qx 'ConfigurationDirectory=weir' "$service" ||
		fail "weir.service: no ConfigurationDirectory=weir for /etc/weir"
elif grep -q '^ConfigurationDirectory=' "$service"; then
	fail "weir.service: ConfigurationDirectory= names /etc/weir, the config is $conf"
fi
case $WEIR_SYSUSERSDIR in
/etc/sysusers.d | /run/sysusers.d | /usr/local/lib/sysusers.d | /usr/lib/sysusers.d) ;;
*) fail "sysusers file in $WEIR_SYSUSERSDIR, which systemd-sysusers does not read" ;;
esac
grep -qx 'Type=notify' "$service" || fail "weir.service is not Type=notify"

# ---- the binary runs, and accepts the example config ----
"$dest$WEIR_BINDIR/weir" --version | grep -qx "weir $WEIR_VERSION" ||
	fail "installed weir --version is not $WEIR_VERSION"
if [ -r /usr/share/common-licenses/GPL-3 ]; then
	"$dest$WEIR_BINDIR/weir" --check -c "$dest$WEIR_SYSCONFDIR/weir/weir.conf.example" ||
		fail "weir --check rejects the installed example config"
else
	echo "skip: the example serves /usr/share/common-licenses/GPL-3, absent here"
fi

# ---- the embedded demo serves the installed file, without the source ----
# The binary in the destdir is not at its installed path, so WEIR_DEMO_DIR
# points it at the destdir's copy; the working directory is / so that
# nothing resolves against the source or the build tree.
demo_dir=$dest$WEIR_DATADIR/weir
served=$demo_dir/README.md
cmp -s "$served" "$WEIR_SOURCE_ROOT/README.md" || fail "installed README.md differs"
out=$(cd / && WEIR_DEMO_DIR=$demo_dir "$dest$WEIR_BINDIR/weir" --check 2>&1) ||
	fail "the installed demo fails --check: $out"
# The demo listens on 127.0.0.1:7000 and :7001, fixed ports: when another
# program holds one, this part cannot run here.
if ! python3 -c 'import socket
for p in (7000, 7001):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", p)); s.close()' 2>/dev/null; then
	echo "skip: 127.0.0.1:7000 or :7001 is taken, the demo cannot listen"
else
	(cd / && WEIR_DEMO_DIR=$demo_dir exec "$dest$WEIR_BINDIR/weir") \
		>"$dest/demo.log" 2>&1 &
	weir_pid=$!
	# Connects (retrying while weir starts, 10 s at most) and reads to EOF.
	if python3 - "$dest/fetched" <<'PY'; then
import socket, sys, time
deadline = time.monotonic() + 10
while True:
    try:
        s = socket.create_connection(("127.0.0.1", 7000), timeout=10)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
with open(sys.argv[1], "wb") as out:
    while True:
        b = s.recv(65536)
        if not b:
            break
        out.write(b)
PY
		if cmp -s "$dest/fetched" "$served"; then
			echo "demo: 127.0.0.1:7000 served the installed README.md ($(wc -c <"$served") bytes)"
		else
			fail "demo: 127.0.0.1:7000 sent $(wc -c <"$dest/fetched") bytes, not the installed README.md"
		fi
	else
		fail "demo: cannot fetch 127.0.0.1:7000: $(cat "$dest/demo.log")"
	fi
	kill -TERM "$weir_pid"
	rc=0
	wait "$weir_pid" || rc=$?
	weir_pid=
	[ "$rc" -eq 0 ] || fail "demo: weir exited $rc after SIGTERM: $(cat "$dest/demo.log")"
	grep -q "serving files from $demo_dir" "$dest/demo.log" ||
		fail "demo: the log does not name $demo_dir: $(cat "$dest/demo.log")"
fi

# ---- weir.pc describes this version ----
if command -v pkg-config >/dev/null; then
	v=$(PKG_CONFIG_PATH="$dest$WEIR_LIBDIR/pkgconfig" pkg-config --modversion weir) ||
		fail "pkg-config cannot read the installed weir.pc"
	[ "${v:-}" = "$WEIR_VERSION" ] || fail "weir.pc says version '${v:-}'"
fi

# ---- systemd-analyze verify on the installed units ----
# verify wants ExecStart's binary to exist and systemd's own units to be
# where systemd keeps them, and it works without systemd as PID 1. The
# binary exists only in the destdir, so a copy of each unit with the
# destdir in front of the binary's path is what gets verified; MANPATH
# lets it find the installed man pages of Documentation=.
if command -v systemd-analyze >/dev/null; then
	copy=$dest/verify
	mkdir "$copy"
	for u in weir.service weir.socket; do
		sed "s#$WEIR_BINDIR/weir#$dest$WEIR_BINDIR/weir#g" "$unitdir/$u" >"$copy/$u"
	done
	# verify exits 0 on an unknown key or a bad value and only prints a
	# warning: any output at all is a failure.
	if out=$(MANPATH=$dest$WEIR_MANDIR systemd-analyze verify \
		"$copy/weir.service" "$copy/weir.socket" 2>&1) && [ -z "$out" ]; then
		echo "systemd-analyze verify: weir.service weir.socket OK"
	else
		fail "systemd-analyze verify: $out"
	fi
	# The score, for the log; what it is depends on systemd's version.
	systemd-analyze security --offline=true --no-pager "$copy/weir.service" 2>&1 |
		grep 'Overall exposure' || true
else
	echo "skip: no systemd-analyze"
fi

# ---- the sysusers file creates user weir (in an empty root) ----
if command -v systemd-sysusers >/dev/null; then
	root=$dest/sysroot
	mkdir "$root"
	if out=$(systemd-sysusers --root="$root" --dry-run \
		"$dest$WEIR_SYSUSERSDIR/weir.conf" 2>&1) &&
		echo "$out" | grep -q "Creating user 'weir'"; then
		echo "systemd-sysusers: creates user weir"
	else
		fail "systemd-sysusers: $out"
	fi
else
	echo "skip: no systemd-sysusers"
fi

# ---- the man pages render without warnings ----
if command -v man >/dev/null; then
	for page in man8/weir.8 man5/weir.conf.5; do
		out=$(MANWIDTH=80 man --warnings -l "$dest$WEIR_MANDIR/$page" 2>&1 >/dev/null)
		[ -z "$out" ] || fail "man $page warns: $out"
	done
	echo "man: weir(8) and weir.conf(5) render without warnings"
else
	echo "skip: no man"
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)" >&2
	exit 1
fi
echo "install layout OK"
