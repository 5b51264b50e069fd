#!/usr/bin/env bash
# verify against a cold build of the same recipe, and diff of two ~1 GB images (peak RSS).
# The data: 1 GiB of incompressible-ish files (random bytes, fixed seed) in 64 files, and a
# second copy with one file changed. Usage: bench/audit.sh   (SIZE_MB=1024 ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-3}
cargo build --release -q
BIN=$PWD/target/release/ocibuild
RUN=$PWD/bench/.data/audit
mkdir -p "$RUN"
cd "$RUN"
if [ ! -f data/done ]; then
  rm -rf data && mkdir -p data/a
  python3 - "$SIZE_MB" <<'PY'
import random, sys, pathlib
mb = int(sys.argv[1]); rng = random.Random(42)
for i in range(64):
    pathlib.Path(f"data/a/f{i:02}.bin").write_bytes(rng.randbytes(mb * 1024 * 1024 // 64))
PY
  cp -a data/a data/b && printf 'changed' | dd of=data/b/f07.bin bs=1 seek=1000 conv=notrunc 2>/dev/null
  touch data/done
fi
for v in a b; do
  cat > $v.toml <<EOT
[image]
name = "localhost/bench/audit-$v"
compression = "gzip"
[[layer]]
name = "data"
src = "data/$v"
dest = "/data"
EOT
done
printf 'name\tround\twall\tuser\tsys\trss_kib\tload1\n' > results.tsv
t() { local n=$1 r=$2; shift 2
  /usr/bin/time -f '%e %U %S %M' -o time.txt "$@" > /dev/null 2>&1 || true
  # `diff` exits 1 (different): time then prints a status line first; the figures are last.
  printf '%s\t%s\t%s\t%s\n' "$n" "$r" "$(tail -1 time.txt | tr ' ' '\t')" "$(cut -d' ' -f1 /proc/loadavg)" >> results.tsv
}
OCIBUILD_CACHE=$RUN/cache-b "$BIN" -q build b.toml -o b.oci > /dev/null
for r in $(seq 1 "$ROUNDS"); do
  rm -rf cold a.oci
  t cold-build "$r" env OCIBUILD_CACHE=$RUN/cold "$BIN" -q build a.toml -o a.oci
  t verify "$r" env OCIBUILD_CACHE=$RUN/cold "$BIN" -q verify a.toml --against oci:a.oci
  t diff "$r" "$BIN" -q diff oci:a.oci oci:b.oci
done
python3 - results.tsv <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows: by.setdefault(r["name"], []).append(r)
m = lambda n, f: st.median(float(r[f]) for r in by[n])
print(f"load1 {min(float(r['load1']) for r in rows):.2f}-{max(float(r['load1']) for r in rows):.2f}")
print("| | wall s | peak RSS MB |")
print("|---|---|---|")
for n in ["cold-build", "verify", "diff"]:
    print(f"| {n} | {m(n,'wall'):.2f} | {m(n,'rss_kib')/1024:.0f} |")
print(f"\nverify / cold build: {m('verify','wall')/m('cold-build','wall'):.2f}x")
PY
