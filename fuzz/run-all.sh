#!/bin/sh
# Runs every fuzz target at once, one process each, for SECONDS each, and collects what they
# found. For the bundle (fuzz-bundle.tar.xz: bin/<target>, seeds/<target>/, this script) or a
# checkout after `cargo +nightly fuzz build` (binaries from fuzz/target/…/release).
#
#   ./run-all.sh SECONDS OUTDIR
#
# OUTDIR/<target>/: log (libFuzzer's output), corpus/ (seeds plus what it found),
# artifacts/ (crash-*, timeout-*, oom-*, leak-*: the inputs to reproduce with
# `BIN ARTIFACT`). OUTDIR/summary.txt: each target's final stats line (runs, cov, ft, corp,
# exec/s, rss) and its artifacts. A target that crashes is started again on its corpus for
# the time left (at most 5 times), so each gets its SECONDS of fuzzing. Exit status: 0 when no
# target left an artifact, 1 when one did, 2 on a usage error.
set -eu
if [ $# -ne 2 ]; then
    echo "usage: $0 SECONDS OUTDIR" >&2
    exit 2
fi
secs=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
if [ -d "$here/bin" ]; then
    bindir=$here/bin
    seeds=$here/seeds
else
    bindir=$here/target/x86_64-unknown-linux-gnu/release
    seeds=$here/seeds
fi
targets=$(cd "$here/fuzz_targets" 2>/dev/null && ls *.rs | sed 's/\.rs$//' || ls "$bindir")
mkdir -p "$out"
out=$(cd "$out" && pwd)

run_one() {
    t=$1
    dir=$out/$t
    mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/tmp"
    if [ -d "$seeds/$t" ]; then
        cp -n "$seeds/$t"/* "$dir/corpus/" 2>/dev/null || true
    fi
    end=$(( $(date +%s) + secs ))
    tries=0
    : > "$dir/log"
    while :; do
        left=$(( end - $(date +%s) ))
        [ "$left" -gt 0 ] || break
        tries=$(( tries + 1 ))
        status=0
        TMPDIR=$dir/tmp "$bindir/$t" "$dir/corpus" \
            -max_total_time="$left" -rss_limit_mb=2048 -timeout=25 \
            -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
            >> "$dir/log" 2>&1 || status=$?
        echo "### $t exited with status $status after try $tries" >> "$dir/log"
        [ "$status" -ne 0 ] || break
        [ "$tries" -lt 5 ] || break
    done
    rm -rf "$dir/tmp"
}

echo "fuzzing $(echo $targets | wc -w) targets for $secs s each into $out"
for t in $targets; do
    run_one "$t" &
done
wait

{
    for t in $targets; do
        log=$out/$t/log
        last=$(grep -E '^#[0-9]+' "$log" | grep -v 'pulse' | tail -n 1 || true)
        runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
        rss=$(grep -E '^stat::peak_rss_mb' "$log" | awk '{if ($2 > m) m = $2} END {print m + 0}')
        printf '%-14s runs=%s peak_rss_mb=%s last: %s\n' "$t" "$runs" "$rss" "$last"
        for a in "$out/$t/artifacts"/*; do
            [ -e "$a" ] || continue
            printf '%-14s ARTIFACT %s\n' "$t" "$a"
        done
    done
} > "$out/summary.txt"
cat "$out/summary.txt"
if grep -q ARTIFACT "$out/summary.txt"; then
    exit 1
fi
exit 0
