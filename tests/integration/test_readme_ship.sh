#!/bin/sh
# test_readme_ship.sh SOURCE_ROOT BUILD_DIR - the README's recipe "Ship
# every log of a directory" runs as written: the block between its
# markers is taken from README.md itself, with /tmp/ moved to a scratch
# directory of the test's, `build/` to BUILD_DIR and `weir top` (which
# wants a terminal) to `weir status`. Then the collector's file must hold
# the three lines, each once, and the status must list the pipeline's
# files. Port 9000 is the recipe's: the test runs in a network namespace
# of its own where one can be made, so that nothing else holds it.
set -eu

if [ -z "${WEIR_TEST_NETNS:-}" ]; then
	for how in "unshare -n" "unshare -rn"; do
		if $how true 2>/dev/null; then
			WEIR_TEST_NETNS=1 exec $how sh -c \
				'ip link set lo up 2>/dev/null || ifconfig lo up; exec "$0" "$@"' \
				"$0" "$@"
		fi
	done
	echo "note: no network namespace here; the recipe needs 127.0.0.1:9000 free"
fi

src=${1:?usage: test_readme_ship.sh SOURCE_ROOT BUILD_DIR}
build=$(cd "${2:?}" && pwd)
command -v socat >/dev/null || { echo "SKIP: socat is not installed"; exit 77; }
tmp=$(mktemp -d /tmp/weir-recipe-XXXXXX)
# The recipe's processes are stopped, and waited for (weir writes its last
# checkpoint into the scratch directory as it stops), before it goes.
cleanup() {
	local pids p n=0
	pids=$(cat "$tmp/pids" 2>/dev/null) || true
	kill $pids 2>/dev/null || true
	for p in $pids; do
		while kill -0 "$p" 2>/dev/null && [ $n -lt 200 ]; do
			sleep 0.05
			n=$((n + 1))
		done
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# The block, as the README has it.
sed -n '/^<!-- recipe: ship -->$/,/^<!-- end recipe -->$/p' "$src/README.md" |
	sed '1,2d;$d' | sed '$d' >"$tmp/recipe.orig"
[ -s "$tmp/recipe.orig" ] || { echo "FAIL: README.md has no ship recipe" >&2; exit 1; }
grep -q 'weir -c ship.conf top' "$tmp/recipe.orig" ||
	{ echo "FAIL: the recipe no longer ends in weir top" >&2; exit 1; }
sed -e "s|/tmp/|$tmp/|g" -e "s|build/daemon/weir|$build/daemon/weir|g" \
	-e 's|weir -c ship.conf top .*|weir -c ship.conf status >status.txt|' \
	"$tmp/recipe.orig" >"$tmp/recipe.sh"
# The backgrounded collector and daemon outlive the block: their pids are
# kept for the end. `status` may ask before the daemon has its socket.
sed -i -e 's|^\(socat .*\) &$|\1 \& echo $! >>pids|' \
	-e 's|^\(.*weir -c ship.conf\) &$|\1 2>weir.log \& echo $! >>pids; sleep 0.5|' \
	"$tmp/recipe.sh"

cd "$tmp"
sh -e recipe.sh || { echo "FAIL: the recipe exited $?" >&2; cat weir.log >&2; exit 1; }

want=$(printf 'first line\nsecond line\na file that appeared later\n' | sort)
i=0
while [ "$(sort collected.log 2>/dev/null)" != "$want" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
got=$(sort collected.log 2>/dev/null || true)
if [ "$got" != "$want" ]; then
	echo "FAIL: the collector holds:" >&2
	cat collected.log >&2 || true
	cat weir.log >&2
	exit 1
fi
# The status the recipe asked for names the pipeline; asked again once
# both files are in, it counts them.
grep -q '^app ' status.txt ||
	{ echo "FAIL: weir status does not show pipeline app:" >&2; cat status.txt >&2; exit 1; }
# The files' figures are the worker's sample (every 250 ms or so): the
# second file may be in the collector before it is in the figures.
i=0
while "$build/daemon/weir" -c ship.conf status >status2.txt &&
	! grep -q '^files of app: 2 watched' status2.txt && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
grep -q '^files of app: 2 watched' status2.txt ||
	{ echo "FAIL: weir status does not count the two files:" >&2; cat status2.txt >&2; exit 1; }
echo "ok: the README recipe delivered its three lines; status:"
cat status2.txt
