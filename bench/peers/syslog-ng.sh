#!/bin/sh
# Unpacks Debian's syslog-ng (with its http and kafka modules) into a
# private prefix, for the logs-glob, http-ship and kafka-ship benches.
# The package conflicts with rsyslog (both provide the system's
# syslog daemon), and the bench wants the two side by side, so syslog-ng
# is not installed: its .deb and the two libraries it needs that rsyslog
# does not already pull in are fetched with `apt-get download` and
# unpacked with `dpkg-deb -x`. Nothing outside PREFIX is touched and no
# root is needed.
#
#   bench/peers/syslog-ng.sh [PREFIX]    default: build/bench/peers/syslog-ng
#
# weir-bench logs-glob finds it at BUILDDIR/bench/peers/syslog-ng (or
# where WEIR_SYSLOG_NG_ROOT says) and runs
#   LD_LIBRARY_PATH=PREFIX/usr/lib/x86_64-linux-gnu:PREFIX/usr/lib/syslog-ng \
#   PREFIX/usr/sbin/syslog-ng --module-path=PREFIX/usr/lib/syslog-ng/3.38 ...
set -eu

prefix=${1:-build/bench/peers/syslog-ng}
pkgs="syslog-ng-core syslog-ng-mod-http syslog-ng-mod-rdkafka libivykis0 libnet1"

mkdir -p "$prefix/debs"
prefix=$(cd "$prefix" && pwd)
cd "$prefix/debs"
# shellcheck disable=SC2086 # the list is meant to split into words
apt-get download $pkgs
for deb in ./*.deb; do
	dpkg-deb -x "$deb" "$prefix"
done
libs="$prefix/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
	echo x86_64-linux-gnu):$prefix/usr/lib/syslog-ng"
LD_LIBRARY_PATH=$libs "$prefix/usr/sbin/syslog-ng" --version | head -1
