#!/usr/bin/env bash
# The layer pipeline alone (examples/layer_bench: scan + write_layer into a plain file; no
# content store, no fsync, no copy into an OCI layout) against the same peers as
# layer-throughput.sh, interleaved. Separates compression/pipeline cost from the CLI's I/O.
# Usage: bench/pipeline-only.sh   (ROUNDS=3 JOBS=$(nproc)); run bench/fetch-wheels.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
JOBS=${JOBS:-$(nproc)}
cargo build --release -q --example layer_bench
BIN=target/release/examples/layer_bench
TREE=$(bench/fetch-wheels.sh | tail -n1)
RUN=bench/.data/pipe
rm -rf "$RUN"; mkdir -p "$RUN"
TAR="tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - -C $TREE ."
$TAR > /dev/null
printf 'name\tround\twall\tuser\tsys\trss_kib\tbytes\tload1\n' > "$RUN/results.tsv"
t() { # NAME ROUND OUTFILE CMD...
  local n=$1 r=$2 o=$3; shift 3
  rm -f "$o"
  /usr/bin/time -f '%e %U %S %M' -o "$RUN/time.txt" "$@" 2>/dev/null
  printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$r" "$(tr ' ' '\t' < "$RUN/time.txt")" "$(stat -c %s "$o")" \
    "$(cut -d' ' -f1 /proc/loadavg)" >> "$RUN/results.tsv"
  rm -f "$o"
}
for r in $(seq 1 "$ROUNDS"); do
  t pipe-gzip "$r" "$RUN/o" "$BIN" "$TREE" gzip "$JOBS" "$RUN/o"
  t pigz "$r" "$RUN/o" sh -c "$TAR | pigz -p$JOBS -6 > $RUN/o"
  t pipe-zstd "$r" "$RUN/o" "$BIN" "$TREE" zstd "$JOBS" "$RUN/o"
  t zstd "$r" "$RUN/o" sh -c "$TAR | zstd -T0 -3 -q > $RUN/o"
  t pipe-none "$r" "$RUN/o" "$BIN" "$TREE" none 1 "$RUN/o"
  t tar "$r" "$RUN/o" sh -c "$TAR > $RUN/o"
done
python3 - "$RUN/results.tsv" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows: by.setdefault(r["name"], []).append(r)
m = lambda n, f: st.median(float(r[f]) for r in by[n])
c = lambda n: st.median(float(r["user"]) + float(r["sys"]) for r in by[n])
print(f"load1 {min(float(r['load1']) for r in rows):.2f}-{max(float(r['load1']) for r in rows):.2f}")
print("| pipeline | ours wall s | peer wall s | wall ratio | ours CPU s | peer CPU s | CPU ratio | ours RSS MB |")
print("|---|---|---|---|---|---|---|---|")
for o, p in [("pipe-gzip", "pigz"), ("pipe-zstd", "zstd"), ("pipe-none", "tar")]:
    print(f"| {o} vs {p} | {m(o,'wall'):.2f} | {m(p,'wall'):.2f} | {m(o,'wall')/m(p,'wall'):.2f}x | {c(o):.2f} | {c(p):.2f} | {c(o)/c(p):.2f}x | {m(o,'rss_kib')/1024:.0f} |")
PY
