#!/usr/bin/env bash
# Wheel layers for numpy, scipy, pillow and opencv-python-headless (CPython 3.11, manylinux,
# x86_64), from a warm download cache: the wheel step alone (examples/wheel_bench.rs: plan,
# install straight from the zips, compress, into the store) against
# `uv pip install --no-deps --target` of the same wheel files (uv's cache warmed first) +
# `tar --sort=name` + `pigz -p$(nproc) -6` (issue 5's peer, for every ratio in the first column)
# and the same with `zstd -T0 -3` (for reference), interleaved in the same run. LEVELS adds
# ocibuild runs at other levels (`zstd:1`, `gzip:9`, ...) to each round. Each round also runs
# examples/wheel_floor.rs for every zstd level measured: the work no zstd wheel layer can skip
# (reading and inflating the members, the sha256s, libzstd, writing the output), with no framing
# or pipeline, split evenly over the cores: a lower bound for any implementation using these
# libraries (zlib-rs, sha2, libzstd) on this machine.
# Needs PyPI once (uv, and the wheels).
# Usage: bench/wheels.sh   (ROUNDS=3 JOBS=$(nproc) LEVELS="zstd:2 zstd:1")
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
JOBS=${JOBS:-$(nproc)}
LEVELS=${LEVELS:-}
RUN=$PWD/bench/.data/wheels
mkdir -p "$RUN"
cargo build --release -q --example wheel_bench --example wheel_floor
cargo build --release -q
BIN=$PWD/target/release/examples/wheel_bench
FLOOR=$PWD/target/release/examples/wheel_floor
OCB=$PWD/target/release/ocibuild
[ -x "$RUN/venv/bin/uv" ] || { python3 -m venv "$RUN/venv"; "$RUN/venv/bin/pip" install -q uv; }
UV=$RUN/venv/bin/uv
export UV_CACHE_DIR=$RUN/uv-cache
cd "$RUN"
printf 'numpy\nscipy\npillow\nopencv-python-headless\n' > req.in
[ -f pylock.toml ] || "$UV" pip compile -q req.in --format pylock.toml -o pylock.toml \
  --python-version 3.11 --python-platform x86_64-manylinux_2_36
# The wheels into the store through a real build (recipe: the bookworm python3 + the pylock).
mkdir -p keys && cp ../../../recipes/keys/debian-bookworm.asc keys/
sed 's/^\[python\]$/[python]\nlock = "pylock.toml"/' ../../../recipes/bookworm-python.toml > app.toml
export OCIBUILD_CACHE=$RUN/cache
"$OCB" -q build app.toml -o img.oci > /dev/null
mkdir -p whl
python3 - <<'PY'
import tomllib, pathlib, shutil
lock = tomllib.loads(pathlib.Path("app.lock").read_text())
for w in lock["wheel"]:
    src = pathlib.Path("cache/blobs/sha256") / w["sha256"].split(":")[1]
    dst = pathlib.Path("whl") / w["filename"]
    if not dst.exists():
        shutil.copyfile(src, dst)
PY
"$UV" pip install -q --no-deps --target warm-uv --python-version 3.11 --python-platform x86_64-manylinux_2_36 whl/*.whl
echo "installed: $(du -sb warm-uv | cut -f1) bytes" >&2
TAR="tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - -C target ."
printf 'name\tround\twall\tuser\tsys\trss_kib\tbytes\tload1\n' > results.tsv
: > floor.log
t() { # NAME ROUND OUT CMD...
  local n=$1 r=$2 o=$3; shift 3
  /usr/bin/time -f '%e %U %S %M' -o time.txt "$@" > out.txt 2>/dev/null
  local bytes; bytes=$( [ "$o" = "-" ] && head -1 out.txt || stat -c %s "$o")
  printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$r" "$(tr ' ' '\t' < time.txt)" "$bytes" \
    "$(cut -d' ' -f1 /proc/loadavg)" >> results.tsv
}
UVI="rm -rf target && $UV pip install -q --no-deps --target target --python-version 3.11 --python-platform x86_64-manylinux_2_36 whl/*.whl"
for r in $(seq 1 "$ROUNDS"); do
  t ours-gzip "$r" - "$BIN" app.lock cache gzip "$JOBS"
  t peer-gzip "$r" peer.tar.gz sh -c "$UVI && $TAR | pigz -p$JOBS -6 > peer.tar.gz"
  t ours-zstd "$r" - "$BIN" app.lock cache zstd "$JOBS"
  t peer-zstd "$r" peer.tar.zst sh -c "$UVI && $TAR | zstd -T0 -3 -q -f -o peer.tar.zst"
  for l in $LEVELS; do t "ours-$l" "$r" - "$BIN" app.lock cache "$l" "$JOBS"; done
  for l in zstd:3 $(printf '%s\n' $LEVELS | grep -vx 'zstd:3' || true); do
    case $l in zstd:*)
      f=$("$FLOOR" "${l#zstd:}" "$JOBS" . whl/*.whl 2>> floor.log) || { tail -3 floor.log >&2; exit 1; }
      printf 'floor-%s\t%s\t%s\t0\t0\t0\t0\t%s\n' "$l" "$r" "$f" "$(cut -d' ' -f1 /proc/loadavg)" >> results.tsv;;
    esac
  done
done
python3 - results.tsv <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows: by.setdefault(r["name"], []).append(r)
m = lambda n, f: st.median(float(r[f]) for r in by[n])
print(f"load1 {min(float(r['load1']) for r in rows):.2f}-{max(float(r['load1']) for r in rows):.2f}")
print("| ocibuild | wall s | / uv+tar+pigz | / uv+tar+zstd -3 | size / pigz's | size / zstd -3's | peak RSS MiB |")
print("|---|---|---|---|---|---|---|")
pg, pz = m("peer-gzip", "wall"), m("peer-zstd", "wall")
bg, bz = m("peer-gzip", "bytes"), m("peer-zstd", "bytes")
print(f"| (peers) | pigz {pg:.2f}, zstd {pz:.2f} | | | | | |")
for n in [k for k in by if k.startswith("ours-")]:
    o, b = m(n, "wall"), m(n, "bytes")
    print(f"| {n[5:]} | {o:.2f} | {o/pg:.3f}x | {o/pz:.2f}x | {b/bg:.3f} | {b/bz:.3f} | {m(n,'rss_kib')/1024:.0f} |")
print()
print("| lower bound (examples/wheel_floor.rs) | s | / uv+tar+pigz | rounds, s |")
print("|---|---|---|---|")
for n in [k for k in by if k.startswith("floor-")]:
    f = m(n, "wall")
    print(f"| {n[6:]} | {f:.2f} | {f/pg:.3f}x | {', '.join(r['wall'] for r in by[n])} |")
PY
echo "wheel_floor phases: $RUN/floor.log" >&2
