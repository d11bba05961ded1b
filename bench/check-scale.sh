#!/bin/sh
# check-scale.sh - how long `weir --check` takes on configs of 100, 1,000
# and 10,000 pipelines (a file into its own file sink each), best of 3.
#
#   bench/check-scale.sh [WEIR]      (default: build/daemon/weir)
set -eu

weir=${1:-build/daemon/weir}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
echo data >"$tmp/data.txt"
mkdir "$tmp/sub"

for n in 100 1000 10000; do
    awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
        printf "[pipeline p%d]\nsource = file:data.txt\nsink = file:sub/%d.out\n", i, i }' \
        >"$tmp/$n.conf"
    best=
    for rep in 1 2 3; do
        t0=$(date +%s%N)
        "$weir" --check -c "$tmp/$n.conf" >/dev/null 2>&1
        t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000000 ))
        if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
    done
    echo "check-scale pipelines=$n: $best ms"
done
