#!/usr/bin/env bash
# A full PyTorch CUDA 12 image (issue 16): recipes/bookworm-python.toml + a uv pylock of
# `torch==$TORCH` (about 4 GB of wheels: torch, triton and the nvidia-*-cu12 wheels, eleven of
# which ship the same nvidia/__init__.py) + a small app layer. Measured in the same run,
# interleaved, ROUNDS times:
#   ours  `ocibuild build --no-cache --locked` from a store holding only the downloads (the
#         .debs and wheels) as the build that fetched them leaves them: each blob sealed, and
#         each wheel's seal saying its members were checked against its RECORD (done once per
#         wheel file: see crates/store/src/store/seal.rs); every layer built, the wheel set
#         analysed again
#   bare  the same from the downloads alone, no seals: each wheel hashed against the lock and
#         its members against RECORD during the build (what a store copied without its seals,
#         or a first build from a vendor directory, does)
#   peer  `uv pip install --no-deps --target` of the same wheel files (uv's cache warmed
#         first; each round extracts again all the same: see the comment at the peer step)
#         + `tar --sort=name` + `pigz -p$(nproc) -6`
#   floor examples/splice_floor.rs: the wheel layers' floor as issue 38 defines it (every
#         member read and inflated, the inflated bytes and the compressed bytes hashed once
#         each, the compressed bytes written), split evenly over $(nproc) threads
#   rest  `ocibuild build --no-cache --locked` of the same recipe without its wheels (the
#         apt and interpreter layers, the app, the config): work the floor leaves out
# floor + rest, CPU seconds over $(nproc) cores, is what no build of this image can go below
# with these libraries on this machine (within its noise: its speed moves between steps); the
# summary gives it as a ratio to the peer too.
# then, once: `import torch` and a small tensor computation under podman; the rebuild after an
# app change (median of 5); and a push of the first image, then of the rebuild, to a local
# docker-registry (what the second push uploads).
# Needs PyPI once (uv, the wheels: ~4 GB, kept in bench/.data/torch) and the Debian archive.
# Usage: bench/torch.sh   (ROUNDS=3 TORCH=2.9.1)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
TORCH=${TORCH:-2.9.1}
JOBS=$(nproc)
source bench/registry-lib.sh
RUN=$PWD/bench/.data/torch
mkdir -p "$RUN"
# A run needs about 20 GB: the wheels and our image (4 GB each), uv's unpacked cache (15 GB
# for the peer's warm installs), the peer's .tar.gz (4 GB). Two runs here stopped half-way on a
# full disk; say so before the first round instead.
free_gb=$(df -Pk "$RUN" | awk 'NR == 2 {print int($4 / 1048576)}')
if [ "$free_gb" -lt 20 ]; then
  echo "bench/torch.sh: $free_gb GB free where $RUN is; a run needs about 20 GB" >&2
  exit 1
fi
cargo build --release -q
cargo build --release -q --example splice_floor
OCB=$PWD/target/release/ocibuild
FLOOR=$PWD/target/release/examples/splice_floor
[ -x "$RUN/venv/bin/uv" ] || { python3 -m venv "$RUN/venv"; "$RUN/venv/bin/pip" install -q uv; }
UV=$RUN/venv/bin/uv
export UV_CACHE_DIR=$RUN/uv-cache
cd "$RUN"
echo "torch==$TORCH" > req.in
[ -f pylock.toml ] || "$UV" pip compile -q req.in --format pylock.toml -o pylock.toml \
  --python-version 3.11 --python-platform x86_64-manylinux_2_36
mkdir -p keys app && cp ../../../recipes/keys/debian-bookworm.asc keys/
echo 'print("app v1")' > app/main.py
sed 's/^\[python\]$/[python]\nlock = "pylock.toml"/' ../../../recipes/bookworm-python.toml > app.toml
printf '\n[[layer]]\nname = "app"\nsrc = "app"\ndest = "/app"\n' >> app.toml
# The same recipe without its wheels (the lock is cut below, after the first build writes it).
grep -v '^lock = "pylock.toml"$' app.toml > rest.toml
# Downloads (and the lock) through a first build; then a store with only the downloads.
export OCIBUILD_CACHE=$RUN/cache
"$OCB" -q build app.toml -o first.oci > /dev/null
rm -rf downloads && mkdir -p downloads/blobs/sha256 whl
python3 - <<'PY'
import tomllib, pathlib, os, shutil
lock = tomllib.loads(pathlib.Path("app.lock").read_text())
blobs = pathlib.Path("cache/blobs/sha256")
debs = lock["apt"]["package"]
for sec, xs in (("deb", debs), ("wheel", lock["wheel"])):
    for x in xs:
        h = x["sha256"].split(":")[1]
        os.link(blobs / h, pathlib.Path("downloads/blobs/sha256") / h)
        if sec == "wheel" and not (pathlib.Path("whl") / x["filename"]).exists():
            os.link(blobs / h, pathlib.Path("whl") / x["filename"])
print(len(debs), "debs,", len(lock["wheel"]), "wheels,", sum(x["size"] for x in lock["wheel"]),
      "bytes of wheels")
PY
# The lock lists the wheels last, from [python-packages] on.
sed '/^\[python-packages\]$/,$d' app.lock > rest.lock
# A fresh store of the downloads. The marker makes the directory a store (builds refuse an
# unmarked one since 38d5701).
fresh_store() {
  rm -rf store img.oci && cp -al downloads store && mkdir -p store/tmp \
    && echo 'ocibuild-store 1' > store/ocibuild-store
}
# The downloads' seals as a build leaves them, from one untimed --no-cache build (hard links
# keep the inodes the seals name; a build replaces a seal by renaming, never in place).
fresh_store
OCIBUILD_CACHE=$RUN/store "$OCB" -q build --no-cache --locked app.toml -o img.oci > /dev/null
mkdir -p downloads/seals
for f in downloads/blobs/sha256/*; do cp "store/seals/${f##*/}" downloads/seals/; done
echo "wheel seals with their RECORD check: $(grep -l '^checked wheel-record$' downloads/seals/* | wc -l)" >&2
"$UV" pip install -q --no-deps --target warm-uv --python-version 3.11 \
  --python-platform x86_64-manylinux_2_36 whl/*.whl
echo "installed by uv: $(du -sb warm-uv | cut -f1) bytes" >&2
rm -rf warm-uv
TAR="tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - -C target ."
UVI="rm -rf target && $UV pip install -q --no-deps --target target --python-version 3.11 --python-platform x86_64-manylinux_2_36 whl/*.whl"
printf 'name\tround\twall\tuser\tsys\trss_kib\tbytes\tload1\n' > results.tsv
t() { # NAME ROUND BYTES-CMD CMD...
  local n=$1 r=$2 b=$3; shift 3
  /usr/bin/time -f '%e %U %S %M' -o time.txt "$@" > /dev/null 2> err.txt || { cat err.txt >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$r" "$(tr ' ' '\t' < time.txt)" "$(eval "$b")" \
    "$(cut -d' ' -f1 /proc/loadavg)" >> results.tsv
}
layout_bytes() { find "$1/blobs" -type f -printf '%s\n' | awk '{s+=$1} END {printf "%.0f\n", s}'; }
for r in $(seq 1 "$ROUNDS"); do
  # First, as fresh_store removes the image that the steps after the rounds run and push.
  t floor "$r" "echo 0" "$FLOOR" "$JOBS" . whl/*.whl
  fresh_store
  OCIBUILD_CACHE=$RUN/store t rest "$r" "layout_bytes rest.oci" \
    "$OCB" -q build --no-cache --locked rest.toml -o rest.oci
  fresh_store
  OCIBUILD_CACHE=$RUN/store t ours "$r" "layout_bytes img.oci" \
    "$OCB" -q build --no-cache --locked app.toml -o img.oci
  fresh_store && rm -rf store/seals
  OCIBUILD_CACHE=$RUN/store t bare "$r" "layout_bytes img.oci" \
    "$OCB" -q build --no-cache --locked app.toml -o img.oci
  # uv keys a local wheel's cache entry by the file's ctime, which the `cp -al` above changes
  # (a new link): every round's install extracts every wheel again, into new cache entries
  # (7 GB each; three rounds filled the disk). Dropping the old entries first changes nothing
  # uv does; the peer is an install from the wheel files, extraction included.
  rm -rf "$UV_CACHE_DIR/archive-v0" "$UV_CACHE_DIR/wheels-v8" peer.tar.gz
  t peer "$r" "stat -c %s peer.tar.gz" sh -c "$UVI && $TAR | pigz -p$JOBS -6 > peer.tar.gz"
  rm -rf target peer.tar.gz
done
# uv's extracted wheels and the peer's archive are measured; the steps below need the room
# (podman copies the 4 GB image into its storage under /var/tmp).
rm -rf "$UV_CACHE_DIR/archive-v0" "$UV_CACHE_DIR/wheels-v8" target peer.tar.gz
# The image works: import torch, compute.
if command -v podman > /dev/null; then
  rm -rf /tmp/ocibuild-torch-img && cp -a img.oci /tmp/ocibuild-torch-img
  podman run --rm ${OCIBUILD_PODMAN_ARGS:---runtime runc --network none --ulimit nofile=1024:1024 --ulimit nproc=1000:1000} \
    oci:/tmp/ocibuild-torch-img:3.11 python3 -c \
    "import torch; a = torch.arange(12.0).reshape(3, 4); print('torch', torch.__version__, float((a @ a.T).trace()), torch.cuda.is_available())" \
    | tee podman.txt
  # podman's copy of the image (4 GB in its storage) and the layout it was read from.
  podman rmi --ignore localhost/tmp/ocibuild-torch-img:latest localhost/tmp/ocibuild-torch-img:3.11 \
    > /dev/null
  rm -rf /tmp/ocibuild-torch-img
fi
# Rebuild after an app change (layer cache warm from the last round's store).
# Timed around the process (perf_counter in a parent Python), to the millisecond.
export OCIBUILD_CACHE=$RUN/store
rm -f rebuild.txt
for i in 1 2 3 4 5; do
  echo "print(\"app v$((i + 1))\")" > app/main.py
  python3 -c 'import subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(f"{time.perf_counter() - t:.4f}")' "$OCB" -q build --locked app.toml -o img.oci >> rebuild.txt
done
# Push the image, change the app, rebuild, push again: what does the second push send?
start_registry "$RUN/registry"
"$OCB" -q build --locked app.toml -o img.oci > /dev/null
printf '[[registry]]\nname = "%s"\ninsecure-http = true\n' "$addr" > registries.toml
"$OCB" --registries registries.toml push img.oci "$addr/bench/torch:1" > push1.txt
echo 'print("app v9")' > app/main.py
"$OCB" --registries registries.toml build --locked --json app.toml -o img.oci \
  --push "$addr/bench/torch:2" > push2.json
python3 - results.tsv "$JOBS" <<'PY'
import csv, json, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows: by.setdefault(r["name"], []).append(r)
m = lambda n, f: st.median(float(r[f]) for r in by[n])
cpu = lambda n: st.median(float(r["user"]) + float(r["sys"]) for r in by[n])
print(f"rounds: {len(by['ours'])}; load1 during: {', '.join(r['load1'] for r in rows)}")
for n in ("ours", "bare", "peer", "floor", "rest"):
    print(f"{n}: wall {m(n, 'wall'):.2f} s (runs {', '.join(r['wall'] for r in by[n])}), "
          f"user {m(n, 'user'):.1f} s, sys {m(n, 'sys'):.1f} s, peak RSS {m(n, 'rss_kib') / 1024:.0f} MiB"
          + ("" if n == "floor" else f", {m(n, 'bytes') / 1e9:.3f} GB"))
print(f"ours / peer: wall {m('ours', 'wall') / m('peer', 'wall'):.3f}x (target <= 0.08x, issue 38), "
      f"CPU {cpu('ours'):.1f} s (target <= 40), "
      f"size {m('ours', 'bytes') / m('peer', 'bytes'):.4f}x (target <= 1.01x)")
print(f"bare / peer: wall {m('bare', 'wall') / m('peer', 'wall'):.3f}x, "
      f"CPU {cpu('bare'):.1f} s")
low = (cpu("floor") + cpu("rest")) / int(sys.argv[2])
print(f"floor + rest: CPU {cpu('floor') + cpu('rest'):.1f} s, over {sys.argv[2]} cores {low:.2f} s: "
      f"{low / m('peer', 'wall'):.3f}x the peer; ours is {m('ours', 'wall') / low:.2f}x that")
rb = sorted(float(x) for x in open("rebuild.txt").read().split())
print(f"rebuild after an app change: median {st.median(rb) * 1000:.0f} ms (runs {rb})")
p = json.load(open("push2.json"))["push"]
sent = [b for b in p["blobs"] if b["result"].startswith("uploaded")]
app = json.load(open("push2.json"))
names = {l["digest"]: l["name"] for l in app["layers"]}
names[app["config"]] = "config"
print(f"second push: {len(sent)} blobs uploaded, {p['uploadedBytes']} bytes: "
      + ", ".join(f"{names.get(b['digest'], b['digest'])} {b['size']}" for b in sent)
      + f"; then the manifest ({app['manifestSize']} bytes)")
PY
