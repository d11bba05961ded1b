#!/bin/sh
# compare-core.sh - weir's chunk core against Node's WHATWG streams, side by
# side, on the workloads of Node's benchmark/webstreams.
#
#   bench/compare-core.sh [WEIR_BENCH] [SUITE...]
#
# WEIR_BENCH defaults to build/bench/weir-bench. Runs each suite through
# weir-bench and through bench/peers/node/webstreams.mjs, then prints one row
# per case, matched by the text before the colon:
#
#   case | weir ops/s | node ops/s | weir/node
#
# tee-memory reports peak queued bytes of the slow branch instead of a rate
# (lower is better), and is paired by suite name alone if the two sides
# chose different parameters. A case only one side printed shows "-".
#
# ROUNDS=N (default 3) runs the whole list N times, weir and Node taking
# turns suite by suite, and keeps each side's best rate per case (for
# tee-memory, the highest peak): on a shared VM one side's run can come
# out far slower than the next for reasons of its own, and a best of N on
# both sides, taken over the same minutes, is what the ratio should see.
#
# For testing the table without running anything: WEIR_OUTPUT=FILE and/or
# NODE_OUTPUT=FILE take that side's lines from a file instead.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bench=build/bench/weir-bench
if [ $# -gt 0 ] && [ "${1#*/}" != "$1" ]; then
    bench=$1
    shift
fi
suites=${*:-pipe-to readable-read readable-read-buffered tee \
    readable-async-iterator lifecycle creation tee-memory}
rounds=${ROUNDS:-3}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# Each suite runs on weir, then on Node, back to back, so the two sides of a
# row see the same machine state (on a shared machine the load drifts over
# a run of minutes). A side given as a file is read instead of run.
: >"$tmp/weir"
: >"$tmp/node"
r=0
while [ "$r" -lt "$rounds" ]; do
    r=$((r + 1))
    for s in $suites; do
        if [ -z "${WEIR_OUTPUT:-}" ]; then
            # A suite weir-bench does not have leaves its rows empty.
            "$bench" "$s" >>"$tmp/weir" 2>"$tmp/weir.err" ||
                echo "compare-core: weir-bench $s failed:" \
                    "$(head -n 1 "$tmp/weir.err")" >&2
        fi
        if [ -z "${NODE_OUTPUT:-}" ]; then
            node "$here/peers/node/webstreams.mjs" "$s" >>"$tmp/node"
        fi
    done
done
[ -z "${WEIR_OUTPUT:-}" ] || cp "$WEIR_OUTPUT" "$tmp/weir"
[ -z "${NODE_OUTPUT:-}" ] || cp "$NODE_OUTPUT" "$tmp/node"

echo "node $(node --version 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, best of $rounds rounds"
awk -F': ' '
function suite(k,    parts) { split(k, parts, " "); return parts[1] }
function num(v) { sub(/[^0-9.eE+-].*$/, "", v); return v + 0 }
/^[^ ]+ [^:]*: / || /^[^ :]+: / {
    # A case seen again (the next round) keeps its best value.
    if (FILENAME == ARGV[1]) {
        if (!($1 in weir)) worder[++nw] = $1
        if (!($1 in weir) || num($2) > num(weir[$1])) weir[$1] = $2
    } else {
        if (!($1 in node)) norder[++nn] = $1
        if (!($1 in node) || num($2) > num(node[$1])) node[$1] = $2
    }
}
END {
    # Rows in the Node script order (the canonical list), then any case
    # only weir printed.
    for (i = 1; i <= nn; i++) order[++n] = norder[i]
    for (i = 1; i <= nw; i++) if (!(worder[i] in node)) order[++n] = worder[i]
    # Pair leftovers that are the only unmatched row of their suite on each
    # side (tee-memory, whose parameters each side picks).
    for (i = 1; i <= n; i++) {
        k = order[i]
        if ((k in weir) && !(k in node)) { wl[suite(k)]++; wk[suite(k)] = k }
        if ((k in node) && !(k in weir)) { nl[suite(k)]++; nk[suite(k)] = k }
    }
    for (s in wl)
        if (wl[s] == 1 && nl[s] == 1) {
            weir[nk[s]] = weir[wk[s]]; skip[wk[s]] = 1
            note = note "  " s ": weir ran \"" wk[s] "\", node \"" nk[s] "\"\n"
        }
    printf "%-56s | %14s | %14s | %9s\n", "case", "weir ops/s", "node ops/s", "weir/node"
    for (i = 1; i <= n; i++) {
        k = order[i]
        if (k in skip) continue
        w = (k in weir) ? weir[k] : "-"
        d = (k in node) ? node[k] : "-"
        r = "-"
        if (w != "-" && d != "-" && num(d) > 0 && w ~ /^[0-9]/)
            r = sprintf(suite(k) == "tee-memory" ? "%.1e" : "%.1f", num(w) / num(d))
        if (suite(k) == "tee-memory") {
            k = "tee-memory: slow branch peak queued bytes"
            mem = 1
        }
        printf "%-56s | %14s | %14s | %9s\n", k, w, d, r
    }
    if (mem)
        printf "tee-memory is bytes, not a rate: lower is better.\n"
    if (note)
        printf "paired by suite name:\n%s", note
}' "$tmp/weir" "$tmp/node"
