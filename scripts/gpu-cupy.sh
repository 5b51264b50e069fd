#!/usr/bin/env bash
# Prove the seed app's CuPy path on a GPU host (issue 16, must-show 5): an image built by ocibuild
# from recipes/cupy-bookworm.toml (Debian bookworm's python3 on scratch, cupy-cuda12x with the
# CUDA runtime and NVRTC wheels from PyPI, no nvidia/cuda base) runs the app's GPU self-test on
# its CuPy path (`selftest-gpu`, IMGPROC_GPU_PATHS=cupy) under podman, through `ocibuild test`.
#
#   ./scripts/gpu-cupy.sh            on a Debian 12 x86_64 host with network and podman
#
# What it does here (the build host):
#   1. builds ocibuild (cargo build --release), unless OCIBUILD names a binary;
#   2. RELOCK=1 only: regenerates recipes/cupy-bookworm/pylock.toml with uv (else the committed
#      one is used: every wheel pinned by sha256);
#   3. `ocibuild build recipes/cupy-bookworm.toml` (--locked when recipes/cupy-bookworm.lock
#      exists, else `ocibuild lock` first), into .gpu/cupy/layout;
#   4. runs the tests that need no GPU (cupy-import, unit-tests) under the local podman, so a
#      broken image is caught before any GPU time is spent;
#   5. packs what the GPU host needs (the layout, xz'd; a podman bundle made by
#      shared/gpu/podman-bundle.sh; the ocibuild binary) into one tar, splits it into parts that
#      fit one device call each, and prints the device calls to make.
# What it cannot do: make those calls. The GPU host here is reached only through the device
# tool (`run`), which a script cannot drive; it has no network and no podman, and keeps /tmp
# between calls only while it stays warm (about 30 s idle), hence the parts, sent back to back.
# On the GPU host every call runs `bash scripts/gpu-cupy.sh device` (below). The GPU test's
# result is whatever the last call prints; nothing here checks it.
#
# Seen (2026-12-01, app at the commit that added this script): image 678,286,850 bytes as an
# uncompressed layout (manifest sha256:3bce851e...), 177,614,300 bytes as xz -9; payload 210 MB
# in 4 parts; on the H200 `selftest-gpu` passed, CuPy's results equal to the CPU's (max |diff| 0).
#
# Environment: OCIBUILD (a built binary), RELOCK=1, PODMAN_BUNDLE_SH (default
# /work/shared/gpu/podman-bundle.sh, else shared/gpu/podman-bundle.sh), PART_MIB (default 55:
# one device call carries at most 64 MiB, working tree included).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
recipe=recipes/cupy-bookworm.toml
work=.gpu/cupy                  # ignored (see below): image parts must not be committed
part_mib=${PART_MIB:-55}
log() { printf '==> %s\n' "$*" >&2; }

# Device mode, on the GPU host: `bash scripts/gpu-cupy.sh device`, once per part. Parts collect
# in /tmp/gpucupy (a plain path: podman rejects oci: paths with a dot-leading component); when
# all are there they are joined, checked against payload.sha256 and unpacked, and the recipe's
# selftest-gpu runs through `ocibuild test` (its own GPU discovery: device nodes, and libcuda
# from `ldconfig -p`, bind-mounted). Should that fail, the same self-test runs once more under
# plain podman with the flags shared/gpu/README.md records, to tell ocibuild from the host.
if [[ ${1:-} == device ]]; then
    d=/tmp/gpucupy
    mkdir -p "$d"
    cp "$work"/parts/* "$d/"
    ls -l "$d"
    shopt -s nullglob
    have=("$d"/part-*)
    [[ ${#have[@]} -gt 0 ]] || { log "no parts in $d (was the machine given back between calls?)"; exit 1; }
    want=$((10#${have[0]##*-of-}))
    if [[ ${#have[@]} -lt $want ]]; then
        log "${#have[@]} of $want parts in $d: send the next one"
        exit 0
    fi
    cat "${have[@]}" > "$d/payload.tar"
    (cd "$d" && sha256sum -c payload.sha256)
    tar -C "$d" -xf "$d/payload.tar" && rm -f "${have[@]}" "$d/payload.tar"
    rm -rf "$d/layout" "$d/podman"
    xz -dc -T0 "$d/image.tar.xz" | tar -C "$d" -x
    tar -C "$d" -xJf "$d/podman.tar.xz"
    log "host: $(uname -r), $(nvidia-smi -L 2>&1 | head -1)"
    log "image: $(du -sb "$d/layout" | cut -f1) bytes, $(cat "$d/layout/index.json")"
    out=${OUT:-$d}
    log "ocibuild test $recipe --only selftest-gpu (under $d/podman/podman)"
    rc=0
    "$d/ocibuild" test "$recipe" --output "$d/layout" --podman "$d/podman/podman" \
        --podman-arg="--signature-policy=$d/podman/etc/policy.json" --only selftest-gpu --json \
        | tee "$out/selftest-gpu.json" || rc=$?
    if [[ $rc != 0 ]]; then
        log "ocibuild test failed ($rc): the same self-test under plain podman"
        devs=()
        for n in /dev/nvidia[0-9]* /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; do
            [[ -e $n ]] && devs+=(--device "$n")
        done
        libs=()
        for so in libcuda.so.1 libnvidia-ptxjitcompiler.so.1; do
            f=$(ldconfig -p | awk -v so="$so" '$1 == so {print $NF; exit}')
            [[ -n $f ]] && libs+=(-v "$(readlink -f "$f"):/usr/lib/x86_64-linux-gnu/$so:ro")
        done
        "$d/podman/podman" run --rm --signature-policy "$d/podman/etc/policy.json" "${devs[@]}" "${libs[@]}" \
            -e LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu -e IMGPROC_GPU_PATHS=cupy --entrypoint python3 \
            "oci:$d/layout:cuda12" -m imgproc.selftest --device gpu || true
    fi
    exit "$rc"
fi

for tool in cargo podman conmon runc xz tar split sha256sum; do
    command -v "$tool" >/dev/null || { log "missing $tool (apt-get install podman conmon runc xz-utils)"; exit 2; }
done

# Large artifacts live under .gpu/, which must be ignored: untracked files that git does not
# ignore travel with every device call and would blow its 64 MiB.
if ! git check-ignore -q .gpu/probe; then
    log "adding /.gpu/ to .git/info/exclude"
    mkdir -p .git/info && echo '/.gpu/' >> .git/info/exclude
fi
rm -rf "$work" && mkdir -p "$work/pack" "$work/parts"

# 1. The binary. Built on Debian 12 (glibc 2.36), it runs on the GPU host's newer glibc.
if [[ -n ${OCIBUILD:-} ]]; then
    exe=$(readlink -f "$OCIBUILD")
else
    log "cargo build --release"
    cargo build --release
    exe=$root/target/release/ocibuild
fi
"$exe" --version

# 2. The pylock (optional): uv resolves the newest versions, so a relock changes the image.
if [[ ${RELOCK:-0} == 1 ]]; then
    log "uv pip compile (RELOCK=1)"
    python3 -m venv /tmp/gpu-cupy-uv && /tmp/gpu-cupy-uv/bin/pip install -q uv
    (cd recipes/cupy-bookworm && /tmp/gpu-cupy-uv/bin/uv pip compile requirements.in \
        --format pylock.toml -o pylock.toml --python-version 3.11 --python-platform x86_64-manylinux_2_36)
fi

# 3. Build. The .debs come from the Debian archive (InRelease verified), the wheels from PyPI.
if [[ -f recipes/cupy-bookworm.lock ]]; then
    locked=--locked
else
    log "ocibuild lock $recipe (no lock file yet)"
    "$exe" lock "$recipe"
    locked=
fi
log "ocibuild build $recipe $locked"
/usr/bin/time -f 'build: %e s wall, %M KB peak RSS' "$exe" build "$recipe" $locked --output "$work/layout"
log "layout: $(du -sb "$work/layout" | cut -f1) bytes"

# 4. What can be checked without a GPU, with the flags scripts/test.sh uses on sandboxed hosts.
log "ocibuild test $recipe --only cupy-import --only unit-tests (local podman, no GPU)"
OCIBUILD_PODMAN_ARGS="${OCIBUILD_PODMAN_ARGS-"--runtime runc --network none --ulimit nofile=1024:1024 --ulimit nproc=1000:1000"}" \
    "$exe" test "$recipe" --output "$work/layout" --only cupy-import --only unit-tests --json

# 5. The payload: layout (xz: the CUDA libraries pack far tighter than the layers would
#    compressed one by one), podman bundle, binary. One tar, so parts are filled to the brim.
log "packing (xz -9 of the layout takes minutes)"
tar -C "$work" -cf - layout | xz -T0 -9 > "$work/pack/image.tar.xz"
bundle_sh=${PODMAN_BUNDLE_SH:-/work/shared/gpu/podman-bundle.sh}
[[ -f $bundle_sh ]] || bundle_sh=shared/gpu/podman-bundle.sh
bash "$bundle_sh" "$work/podman" >&2
tar -C "$work" -cJf "$work/pack/podman.tar.xz" podman
cp "$exe" "$work/pack/ocibuild"
tar -C "$work/pack" -cf "$work/payload.tar" image.tar.xz podman.tar.xz ocibuild
(cd "$work" && sha256sum payload.tar) > "$work/parts/payload.sha256"
split -b "${part_mib}M" -d -a 2 "$work/payload.tar" "$work/parts/part-"
rm -f "$work/payload.tar"
parts=("$work"/parts/part-*)
# part-NN-of-MM: the GPU host knows from the names alone when it has them all.
for i in "${!parts[@]}"; do
    mv "${parts[$i]}" "${parts[$i]}-of-$(printf %02d ${#parts[@]})"
    parts[$i]=${parts[$i]}-of-$(printf %02d ${#parts[@]})
done
ls -l "$work/pack" "$work/parts" >&2

# The device calls: the same command each time, carrying one part and the checksum. Whichever
# call completes the set joins, checks and unpacks the parts and runs the test (device mode,
# above), so the order does not matter; each gets the test's time limit.
n=${#parts[@]}
echo
echo "Device calls, in the repo root, made together in one batch of tool calls (the GPU host"
echo "forgets /tmp after ~30 s idle; one part at a time, a pause between calls lost it twice):"
for i in "${!parts[@]}"; do
    echo "  call $((i + 1)) of $n: run(command=\"bash scripts/gpu-cupy.sh device 2>&1\", carry=[\"${parts[$i]}\", \"$work/parts/payload.sha256\"], timeout_s=420)"
done
echo "A call that answers 'warm: false' and '1 of $n parts' found a fresh machine: send the parts"
echo "it lacks again, in one batch. Then give_back. The test's lines are in the last output_tail."
