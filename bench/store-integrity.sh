#!/usr/bin/env bash
# What store integrity costs (the hardening issue): blob seals checked on every reuse, and app
# files hashed again while the layer writer streams them. Two binaries, interleaved, ROUNDS
# times, on the PyTorch image of bench/torch.sh (run that once first: it leaves the downloads
# store and app.toml in bench/.data/torch):
#   cold   `build --no-cache --locked` from a store holding only the downloads (.debs, wheels)
#   no-op  the same build again, everything cached, the layout present (median of 10)
# Usage: bench/store-integrity.sh OLD_BINARY NEW_BINARY   (ROUNDS=3)
# OLD_BINARY: a build from before seals (e.g. commit 2071b8f); NEW_BINARY: main.
set -euo pipefail
OLD=$(realpath "$1")
NEW=$(realpath "$2")
ROUNDS=${ROUNDS:-3}
cd "$(dirname "$0")/.data/torch"
[ -d downloads ] && [ -f app.toml ] || { echo "run bench/torch.sh first" >&2; exit 1; }
# Seal the downloads once, in a store of their own (cp -al keeps the inodes, so the seals stay
# valid in each copy): the cold build then measures sealing as a store that has always had
# seals would see it. Only the blobs are taken: the seals bench/torch.sh leaves also record
# each wheel's RECORD check, which a binary from before that change reads as not matching.
# The marker makes the directory a store (cache verify and builds refuse an unmarked one).
rm -rf sealed && mkdir -p sealed/blobs sealed/tmp && cp -al downloads/blobs/sha256 sealed/blobs/ \
  && echo 'ocibuild-store 1' > sealed/ocibuild-store
OCIBUILD_CACHE=$PWD/sealed "$NEW" -q cache verify > /dev/null
printf 'bin\tround\tcold_s\tnoop_median_ms\tblobs\tload1\n' > integrity.tsv
for r in $(seq 1 "$ROUNDS"); do
  for which in old new; do
    bin=$OLD; [ "$which" = new ] && bin=$NEW
    rm -rf "store-$which" "img-$which.oci" && cp -al sealed "store-$which"
    export OCIBUILD_CACHE=$PWD/store-$which
    t0=$(date +%s.%N)
    "$bin" -q build --no-cache --locked app.toml -o "img-$which.oci" > /dev/null
    cold=$(echo "$(date +%s.%N) - $t0" | bc)
    noop=$(python3 - "$bin" "$which" <<'PY'
import subprocess, sys, time, statistics
bin, which = sys.argv[1], sys.argv[2]
ts = []
for _ in range(10):
    t = time.perf_counter()
    subprocess.run([bin, "-q", "build", "--locked", "app.toml", "-o", f"img-{which}.oci"],
                   check=True, stdout=subprocess.DEVNULL)
    ts.append(time.perf_counter() - t)
print(f"{statistics.median(ts) * 1000:.1f}")
PY
)
    blobs=$(ls "img-$which.oci/blobs/sha256" | wc -l)
    printf '%s\t%s\t%.2f\t%s\t%s\t%s\n' "$which" "$r" "$cold" "$noop" "$blobs" \
      "$(cut -d' ' -f1 /proc/loadavg)" | tee -a integrity.tsv
  done
done
rm -rf store-old store-new img-old.oci img-new.oci sealed
python3 - <<'PY'
import csv, statistics as st
rows = list(csv.DictReader(open("integrity.tsv"), delimiter="\t"))
m = lambda w, k: st.median(float(r[k]) for r in rows if r["bin"] == w)
for k, unit in (("cold_s", "s"), ("noop_median_ms", "ms")):
    o, n = m("old", k), m("new", k)
    print(f"{k}: before seals {o:.2f} {unit}, with seals {n:.2f} {unit}: {n / o:.3f}x")
PY
