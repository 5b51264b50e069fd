#!/usr/bin/env bash
# The apt packages layer with the .debs already downloaded: `ocibuild build --no-cache` of
# bench/recipes/apt-python.toml (python3 + python3-pip from the Debian archive) against
# `dpkg-deb -x` of the same .debs + `tar --sort=name` + `pigz -p$(nproc) -6`, interleaved in the
# same run; then a fully cached rebuild. Needs the Debian archive once (lock + download).
# Usage: bench/apt-layer.sh   (ROUNDS=3 JOBS=$(nproc))
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
JOBS=${JOBS:-$(nproc)}
cargo build --release -q
BIN=$PWD/target/release/ocibuild
RUN=bench/.data/apt
mkdir -p "$RUN"
export OCIBUILD_CACHE=$PWD/$RUN/cache
RECIPE=bench/recipes/apt-python.toml
"$BIN" -q build "$RECIPE" -o "$RUN/warm.oci" > /dev/null   # lock, download, first build
mapfile -t DEBS < <(python3 - "$RECIPE" "$OCIBUILD_CACHE" <<'PY'
import sys, tomllib, pathlib
lock = tomllib.loads(pathlib.Path(sys.argv[1]).with_suffix(".lock").read_text())
for p in lock["apt"]["package"]:
    print(pathlib.Path(sys.argv[2]) / "blobs/sha256" / p["sha256"].split(":")[1])
PY
)
echo "${#DEBS[@]} .debs, $(du -cb "${DEBS[@]}" | tail -1 | cut -f1) bytes" >&2
printf 'name\tround\twall\tuser\tsys\trss_kib\tload1\n' > "$RUN/results.tsv"
t() { # NAME ROUND CMD...
  local n=$1 r=$2; shift 2
  /usr/bin/time -f '%e %U %S %M' -o "$RUN/time.txt" "$@" > /dev/null 2>&1
  printf '%s\t%s\t%s\t%s\n' "$n" "$r" "$(tr ' ' '\t' < "$RUN/time.txt")" \
    "$(cut -d' ' -f1 /proc/loadavg)" >> "$RUN/results.tsv"
}
export RUN JOBS
DEBS_STR="${DEBS[*]}"; export DEBS_STR
for r in $(seq 1 "$ROUNDS"); do
  t ocibuild "$r" "$BIN" -q -j "$JOBS" build --no-cache "$RECIPE" -o "$RUN/o.oci"
  t peer "$r" bash -c 'DEBS=($DEBS_STR); rm -rf "$RUN/root" && mkdir "$RUN/root"; for d in "${DEBS[@]}"; do dpkg-deb -x "$d" "$RUN/root"; done; tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - -C "$RUN/root" . | pigz -p"$JOBS" -6 > "$RUN/peer.tar.gz"'
done
for r in $(seq 1 10); do t cached "$r" "$BIN" -q build "$RECIPE" -o "$RUN/o.oci"; done
ours_size=$(find "$RUN/o.oci/blobs" -type f -printf '%s\n' | sort -n | tail -1)   # the layer
peer_size=$(stat -c %s "$RUN/peer.tar.gz")
python3 - "$RUN/results.tsv" "$ours_size" "$peer_size" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows: by.setdefault(r["name"], []).append(r)
m = lambda n, f: st.median(float(r[f]) for r in by[n])
print(f"load1 {min(float(r['load1']) for r in rows):.2f}-{max(float(r['load1']) for r in rows):.2f}")
print("| | ocibuild wall s | dpkg-deb -x + tar + pigz wall s | ratio | ocibuild RSS MB | layer bytes (ours / peer) |")
print("|---|---|---|---|---|---|")
o, p = m("ocibuild", "wall"), m("peer", "wall")
print(f"| packages layer, .debs downloaded | {o:.2f} | {p:.2f} | {o/p:.2f}x | {m('ocibuild','rss_kib')/1024:.0f} | {sys.argv[2]} / {sys.argv[3]} |")
print(f"| fully cached rebuild (median of 10) | {m('cached','wall')*1000:.0f} ms | | | {m('cached','rss_kib')/1024:.0f} | |")
PY
