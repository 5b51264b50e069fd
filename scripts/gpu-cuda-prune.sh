#!/usr/bin/env bash
# Issue 39, must-show 2: CUDA pruning proven on a GPU. recipes/cupy-cublas.toml (CuPy with the
# nvidia-cublas-cu12 wheel) is built four ways and each image runs its GPU tests (cuda-smoke,
# cupy-matmul: float32 and float16 matrix products through cuBLAS, compared with numpy, with the
# sha256 of each result) on a GPU host:
#   full        no `cuda-archs`: the wheels as PyPI ships them
#   sm90        `cuda-archs = ["sm_90"]`, PTX newest (the recipe as committed)
#   sm80        `cuda-archs = ["sm_80"]`, PTX newest: on an sm_90 GPU only the kept PTX can run
#   sm80-noptx  `cuda-archs = ["sm_80"]`, `cuda-ptx = "none"`: nothing for an sm_90 GPU is left
#
#   scripts/gpu-cuda-prune.sh pack       here (network, podman): builds, tests what needs no GPU
#                                        (cupy-import, under the local podman), packs parts
#   bash scripts/gpu-cuda-prune.sh device   there, once per part, in one batch of device calls
#                                        (the parts carried, the last call runs the tests)
#
# The four layouts share every layer but the pruned ones: identical blobs are packed once (hard
# links in the tar) and the tar is compressed by zstd with a 2 GiB window (--long=31), which
# finds the unpruned library bytes again in the pruned copies. The packed zstd binary (Debian's,
# libzstd linked statically) unpacks it there.
#
# The GPU host has no network and no podman: the podman bundle of shared/gpu/podman-bundle.sh and
# the ocibuild binary travel with the image (OCIBUILD names it; default target/release/ocibuild,
# built when missing), and so do the recipe and its lock (recipe.tar). Carry only the part and
# payload.sha256 in a call: a third carried path beside a 55 MiB part was seen to make the part
# not arrive.
#
# Seen (2026-12-06, an NVIDIA H100 80GB HBM3, driver 580.159.04; ocibuild at 545aeb5; the four
# layouts 3.96 GB, packed 477 MB in 9 parts). The two products' sha256 (first 16 hex digits) are
# the same in every image that ran them:
#   full        cuda-smoke passed; float32 max|gpu-numpy| 2.9e-05 sha256 0b9b6859921608a4,
#               float16 max|gpu-numpy| 0.031 sha256 5e46782e016780bd; libcublas.so.12 mapped from
#               the wheel (site-packages/nvidia/cublas/lib)
#   sm90        cuda-smoke passed; the same two sha256 (bit-identical products)
#   sm80        cuda-smoke passed; the same two sha256 (the kept compute_90 PTX, compiled by the
#               driver for sm_90)
#   sm80-noptx  cuda-smoke passed (its PTX is its own); both products failed:
#               `CUBLASError CUBLAS_STATUS_INTERNAL_ERROR` (no cuBLAS kernel for sm_90 left)
set -euo pipefail

cd "$(dirname "$0")/.."
log() { printf '==> %s\n' "$*" >&2; }
mode=${1:-device}
recipe=recipes/cupy-cublas.toml
variants="full sm90 sm80 sm80-noptx"
# recipes/cupy-cublas-VARIANT.toml: the recipe with VARIANT's `cuda-archs` and `cuda-ptx` (the
# test stage checks that an image was built from the recipe it is given, so each variant is
# tested with its own).
variant_recipe() {
    local v=$1 r=recipes/cupy-cublas-$1.toml
    case $v in
        full) sed -e '/^cuda-archs = /d' -e '/^cuda-ptx = /d' "$recipe" > "$r" ;;
        sm90) cp "$recipe" "$r" ;;
        sm80) sed -e 's/^cuda-archs = .*/cuda-archs = ["sm_80"]/' "$recipe" > "$r" ;;
        sm80-noptx) sed -e 's/^cuda-archs = .*/cuda-archs = ["sm_80"]/' \
            -e 's/^cuda-ptx = .*/cuda-ptx = "none"/' "$recipe" > "$r" ;;
    esac
    echo "$r"
}
made=()
trap 'rm -f "${made[@]}"' EXIT

if [[ $mode == device ]]; then
    d=/tmp/gpu-cuda-prune
    mkdir -p "$d"
    cp .gpu/cuda-prune/parts/* "$d/"
    shopt -s nullglob
    have=("$d"/part-*)
    want=$((10#${have[0]##*-of-}))
    if [[ ${#have[@]} -lt $want ]]; then
        log "${#have[@]} of $want parts in $d: send the next one"
        exit 0
    fi
    cat "${have[@]}" > "$d/payload.tar"
    (cd "$d" && sha256sum -c payload.sha256)
    tar -C "$d" -xf "$d/payload.tar" && rm -f "${have[@]}" "$d/payload.tar"
    chmod +x "$d/zstd" "$d/ocibuild"
    "$d/zstd" -dc --long=31 "$d/image.tar.zst" | tar -C "$d" -x && rm -f "$d/image.tar.zst"
    tar -C "$d" -xJf "$d/podman.tar.xz"
    tar -xf "$d/recipe.tar"
    log "host: $(uname -r), $(nvidia-smi -L 2>&1 | head -1), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -1)"
    for v in $variants; do
        r=$(variant_recipe "$v")
        made+=("$r")
        for t in cuda-smoke cupy-matmul; do
            log "$v: ocibuild test $r --only $t"
            "$d/ocibuild" test "$r" --output "$d/layouts/$v" \
                --podman "$d/podman/podman" --podman-arg="--signature-policy=$d/podman/etc/policy.json" \
                --only "$t" --json > "$d/$v-$t.json" 2> "$d/$v-$t.err" || true
            python3 - "$d/$v-$t.json" "$v" "$t" <<'PY' || tail -5 "$d/$v-$t.err"
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc.get("tests", []):
    print(f"--- {sys.argv[2]} {r['name']}: {r['status']} (exit {r.get('exitCode')}) {r.get('reason') or ''}")
    for line in (r.get("outputTail") or [])[-14:]:
        print("   ", line)
PY
        done
    done
    exit 0
fi

[[ $mode == pack ]] || { log "usage: gpu-cuda-prune.sh pack | device"; exit 2; }
work=.gpu/cuda-prune
part_mib=${PART_MIB:-55}
git check-ignore -q .gpu/probe || { log ".gpu/ must be ignored (.git/info/exclude): parts must not travel as tracked files"; exit 2; }
if [[ -n ${OCIBUILD:-} ]]; then
    exe=$(readlink -f "$OCIBUILD")
else
    [[ -x target/release/ocibuild ]] || cargo build --release
    exe=$PWD/target/release/ocibuild
fi
rm -rf "$work" && mkdir -p "$work/pack/layouts" "$work/parts"
export OCIBUILD_PODMAN_ARGS="${OCIBUILD_PODMAN_ARGS-"--runtime runc --network none --ulimit nofile=1024:1024 --ulimit nproc=1000:1000"}"
for v in $variants; do
    r=$(variant_recipe "$v")
    cp "${recipe%.toml}.lock" "${r%.toml}.lock"
    made+=("$r" "${r%.toml}.lock")
    log "$v: ocibuild build ($(grep -E '^cuda-(archs|ptx)' "$r" | tr '\n' ' '))"
    "$exe" build "$r" --output "$work/pack/layouts/$v" 2>&1 | grep -E '^(manifest|cuda:)' >&2
    "$exe" test "$r" --output "$work/pack/layouts/$v" --only cupy-import >&2
done
log "sizes: $(du -sb "$work"/pack/layouts/* | awk '{printf "%s %d; ", $2, $1}')"
# One copy of each blob: the layouts' identical files become hard links, which tar stores once.
python3 - "$work/pack/layouts" <<'PY'
import os, sys, hashlib
seen = {}
for root, _, files in sorted(os.walk(sys.argv[1])):
    for f in sorted(files):
        if "blobs" not in root:
            continue
        p = os.path.join(root, f)
        if f in seen:
            os.unlink(p); os.link(seen[f], p)
        else:
            seen[f] = p
PY
tar -C "$work/pack" -cf - layouts | zstd -q -T0 -19 --long=31 -o "$work/pack/image.tar.zst"
rm -rf "$work/pack/layouts"
bundle_sh=${PODMAN_BUNDLE_SH:-/work/shared/gpu/podman-bundle.sh}
[[ -f $bundle_sh ]] || bundle_sh=shared/gpu/podman-bundle.sh
bash "$bundle_sh" "$work/podman" >&2
tar -C "$work" -cJf "$work/pack/podman.tar.xz" podman
cp "$exe" "$work/pack/ocibuild"
cp "$(command -v zstd)" "$work/pack/zstd"
tar -cf "$work/pack/recipe.tar" "$recipe" "${recipe%.toml}.lock" "${recipe%.toml}"
tar -C "$work/pack" -cf "$work/payload.tar" image.tar.zst podman.tar.xz ocibuild zstd recipe.tar
(cd "$work" && sha256sum payload.tar) > "$work/parts/payload.sha256"
split -b "${part_mib}M" -d -a 2 "$work/payload.tar" "$work/parts/part-"
rm -f "$work/payload.tar"
parts=("$work"/parts/part-*)
n=${#parts[@]}
for i in "${!parts[@]}"; do mv "${parts[$i]}" "${parts[$i]}-of-$(printf %02d "$n")"; done
ls -l "$work/pack" "$work/parts" >&2
echo "Device calls, back to back (the GPU host forgets /tmp after ~30 s idle):"
for p in "$work"/parts/part-*; do
    echo "  run(command=\"bash scripts/gpu-cuda-prune.sh device 2>&1\", carry=[\"$p\", \"$work/parts/payload.sha256\"])"
done
