#!/bin/sh
# test_systemd.sh BUILD_DIR - weir.service under a real systemd: boots the
# host's own /usr in a container (systemd-nspawn --volatile=yes) with the
# installed weir (meson install --destdir) bound in, and runs
# systemd_guest.sh there as a oneshot unit. It checks that the sysusers
# file created user weir at boot; that the installed weir's embedded demo
# serves its installed files, with no source tree in sight; that a reload
# with a good config applies it; that a reload with a broken config fails while
# the old config goes on serving; and that a restart with a broken config
# ends `failed` (exit 78) and is not restarted; and that weir.socket
# listens with the config's default backlog and activates the service.
#
# Where this cannot run (not root, no systemd-nspawn, no container
# support, weir.service unable to start in the container), it says why
# and exits 77, which meson reports as skipped.
#
# WEIR_UNITDIR, WEIR_PREFIX and WEIR_SANITIZE (b_sanitize) come from
# meson.build; WEIR_GUEST is systemd_guest.sh.
set -eu

build=${1:?usage: test_systemd.sh BUILD_DIR}

skip() {
	echo "skip: $*"
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "not root: systemd-nspawn needs root"
command -v systemd-nspawn >/dev/null ||
	skip "no systemd-nspawn (Debian package systemd-container)"
[ -x /usr/lib/systemd/systemd ] || skip "no systemd in /usr"

work=$(mktemp -d /tmp/weir-systemd-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/etcweir" "$work/results" "$work/guest"
cp "$WEIR_GUEST" "$work/guest/run.sh"

# Runs a container from the host's /usr: a tmpfs root, /usr read-only, a
# loopback of its own. "$@" after the options; bounded by $limit s.
nspawn() {
	limit=$1
	shift
	timeout --kill-after=10 "$limit" systemd-nspawn --quiet --register=no \
		--keep-unit --directory=/ --volatile=yes --private-network "$@" \
		</dev/null
}

if ! out=$(nspawn 60 /bin/true 2>&1); then
	skip "systemd-nspawn cannot start a container here: $out"
fi

meson install -C "$build" --destdir "$work/dest" --no-rebuild --quiet \
	>"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }

# A sanitizer build's weir runs under the unit's system-call filter, which
# denies the ptrace LeakSanitizer needs at exit: leaks are checked by the
# other suites, not here.
mkdir "$work/dropin"
if [ "${WEIR_SANITIZE:-none}" != none ]; then
	printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' \
		>"$work/dropin/sanitizer.conf"
fi

cat >"$work/weir-test.service" <<UNIT
[Unit]
Description=weir.service checks (systemd_guest.sh)
After=multi-user.target
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStart=/opt/weir-test/run.sh
UNIT

# The guest's /usr/local is the installed one (weir, the sysusers file
# that creates user weir at boot); the unit goes in /etc/systemd/system,
# since the unit directory is the host's read-only /usr. The console goes
# to a file; systemd.firstboot=off keeps the first-boot wizard from
# waiting for a key.
set +e
nspawn 240 \
	--bind-ro="$work/dest$WEIR_PREFIX:$WEIR_PREFIX" \
	--bind-ro="$work/dest$WEIR_UNITDIR/weir.service:/etc/systemd/system/weir.service" \
	--bind-ro="$work/dest$WEIR_UNITDIR/weir.socket:/etc/systemd/system/weir.socket" \
	--bind-ro="$work/dropin:/etc/systemd/system/weir.service.d" \
	--bind-ro="$work/weir-test.service:/etc/systemd/system/weir-test.service" \
	--bind="$work/etcweir:/etc/weir" \
	--bind="$work/results:/results" \
	--bind-ro="$work/guest:/opt/weir-test" \
	--boot -- --unit=weir-test.service systemd.firstboot=off \
	>"$work/console.log" 2>&1
rc=$?
set -e

[ -f "$work/results/log" ] && cat "$work/results/log"
status=$(cat "$work/results/status" 2>/dev/null || true)
case $status in
pass)
	echo "weir.service under systemd $(systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p'): OK"
	exit 0
	;;
skip:*)
	echo "$status"
	exit 77
	;;
"")
	tail -40 "$work/console.log"
	if [ ! -f "$work/results/log" ]; then
		skip "systemd did not boot to weir-test.service in the container (nspawn exit $rc)"
	fi
	echo "FAIL: the checks did not finish (nspawn exit $rc)"
	exit 1
	;;
*)
	echo "FAIL: $status"
	exit 1
	;;
esac
