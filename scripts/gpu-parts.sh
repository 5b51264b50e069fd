#!/usr/bin/env bash
# Run a recipe's GPU tests on a GPU host that has no network and no podman, carrying the image
# there in parts: the general form of scripts/gpu-cupy.sh, for any recipe of recipes/.
#
#   scripts/gpu-parts.sh pack RECIPE "LOCAL_TESTS" "GPU_TESTS"     here (network, podman)
#   bash scripts/gpu-parts.sh device NAME                          there, once per part
#
# e.g. scripts/gpu-parts.sh pack recipes/cuda-trixie.toml "cupy-import" "cuda-smoke cupy-cublas"
#
# pack (the build host):
#   1. builds ocibuild (cargo build --release), unless OCIBUILD names a binary;
#   2. `ocibuild build RECIPE` (--locked when its lock exists, else `ocibuild lock` first), into
#      .gpu/NAME/layout (NAME: the recipe's file name without .toml);
#   3. runs LOCAL_TESTS (tests that need no GPU) under the local podman, so a broken image is
#      caught before any GPU time is spent;
#   4. packs the layout (xz), a podman bundle made by shared/gpu/podman-bundle.sh, the binary and
#      the recipe's directory entry (job.env: which recipe, which tests) and the recipe itself
#      (recipe.tar: RECIPE, its lock and the directory of its name) into one tar, split into
#      parts that fit one device call each (PART_MIB, default 55: a call carries at most 64 MiB,
#      working tree included: a part plus `git ls-files` must stay under it), and prints the
#      device calls to make.
# device (the GPU host): collects the parts in /tmp/gpu-NAME (a plain path: podman rejects oci:
#   paths with a dot-leading component); when all are there, joins them, checks the sha256,
#   unpacks (the packed recipe over the tree's copy), and runs `ocibuild test RECIPE --only T`
#   for each GPU test (the test stage's own GPU discovery: device nodes, and the driver's
#   libraries from `ldconfig -p`, bind-mounted), then prints each test's --json result. The host forgets /tmp after ~30 s idle: send the parts
#   back to back, in one batch of calls.
set -euo pipefail

cd "$(dirname "$0")/.."
log() { printf '==> %s\n' "$*" >&2; }
mode=${1:?usage: gpu-parts.sh pack RECIPE LOCAL_TESTS GPU_TESTS | device NAME}

if [[ $mode == device ]]; then
    name=${2:?usage: gpu-parts.sh device NAME}
    work=.gpu/$name
    d=/tmp/gpu-$name
    mkdir -p "$d"
    cp "$work"/parts/* "$d/"
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
    if [[ -f $d/image.tar.gz ]]; then     # PACK=gz
        gzip -dc "$d/image.tar.gz" | tar -C "$d" -x
    else
        xz -dc -T0 "$d/image.tar.xz" | tar -C "$d" -x
    fi
    rm -f "$d/image.tar.gz" "$d/image.tar.xz"
    tar -C "$d" -xJf "$d/podman.tar.xz"
    # The recipe as it was packed, over the device's copy of the tree: that copy is the session's
    # checkout as it was when the session started, which lacks a recipe written since (or in a
    # helper's worktree). Payloads packed before recipe.tar existed have none.
    if [[ -f $d/recipe.tar ]]; then tar -xf "$d/recipe.tar" && rm -f "$d/recipe.tar"; fi
    # shellcheck source=/dev/null
    source "$d/job.env"   # RECIPE, GPU_TESTS
    log "host: $(uname -r), $(nvidia-smi -L 2>&1 | head -1)"
    log "image: $(du -sb "$d/layout" | cut -f1) bytes, $(cat "$d/layout/index.json")"
    rc=0
    for t in $GPU_TESTS; do
        log "ocibuild test $RECIPE --only $t (under $d/podman/podman)"
        "$d/ocibuild" test "$RECIPE" --output "$d/layout" --podman "$d/podman/podman" \
            --podman-arg="--signature-policy=$d/podman/etc/policy.json" --only "$t" -v --json \
            | tee "$d/$t.json" || rc=$?
    done
    exit "$rc"
fi

[[ $mode == pack ]] || { log "unknown mode $mode"; exit 2; }
recipe=${2:?usage: gpu-parts.sh pack RECIPE LOCAL_TESTS GPU_TESTS}
local_tests=${3-}
gpu_tests=${4:?usage: gpu-parts.sh pack RECIPE LOCAL_TESTS GPU_TESTS}
name=$(basename "$recipe" .toml)
work=.gpu/$name                # ignored (see below): image parts must not be committed
part_mib=${PART_MIB:-55}
for tool in cargo podman conmon runc xz tar split sha256sum; do
    command -v "$tool" >/dev/null || { log "missing $tool (apt-get install podman conmon runc xz-utils)"; exit 2; }
done
# Untracked files that git does not ignore travel with every device call and would blow its
# 64 MiB: .gpu/ must be ignored.
if ! git check-ignore -q .gpu/probe; then
    log "adding /.gpu/ to .git/info/exclude"
    mkdir -p "$(git rev-parse --git-dir)/info" && echo '/.gpu/' >> "$(git rev-parse --git-dir)/info/exclude"
fi
rm -rf "$work" && mkdir -p "$work/pack" "$work/parts"

if [[ -n ${OCIBUILD:-} ]]; then
    exe=$(readlink -f "$OCIBUILD")
else
    log "cargo build --release"
    cargo build --release
    exe=${CARGO_TARGET_DIR:-$PWD/target}/release/ocibuild
fi
"$exe" --version

lock=${recipe%.toml}.lock
if [[ -f $lock ]]; then
    locked=--locked
else
    log "ocibuild lock $recipe (no lock file yet)"
    "$exe" lock "$recipe"
    locked=
fi
log "ocibuild build $recipe $locked"
/usr/bin/time -f 'build: %e s wall, %M KB peak RSS' "$exe" build "$recipe" $locked --output "$work/layout"
log "layout: $(du -sb "$work/layout" | cut -f1) bytes"

export OCIBUILD_PODMAN_ARGS="${OCIBUILD_PODMAN_ARGS-"--runtime runc --network none --ulimit nofile=1024:1024 --ulimit nproc=1000:1000"}"
for t in $local_tests; do
    log "ocibuild test $recipe --only $t (local podman, no GPU)"
    "$exe" test "$recipe" --output "$work/layout" --only "$t" --json
done

xz_level=${XZ_LEVEL:-9}
log "packing (xz -$xz_level of the layout; PACK=gz: pigz -1)"
# PACK=gz: pigz -1 instead, minutes faster on a loaded build host, about a third more parts.
# XZ_LEVEL=1: for a multi-GB layout on a 2-core host (xz -9 there runs about an hour; -1 about
# 10 minutes, and its output is about a tenth larger than -9's and a quarter smaller than gz's).
if [[ ${PACK:-xz} == gz ]]; then
    image=image.tar.gz
    tar -C "$work" -cf - layout | pigz -1 > "$work/pack/$image"
else
    image=image.tar.xz
    tar -C "$work" -cf - layout | xz -T0 "-$xz_level" > "$work/pack/$image"
fi
bundle_sh=${PODMAN_BUNDLE_SH:-/work/shared/gpu/podman-bundle.sh}
[[ -f $bundle_sh ]] || bundle_sh=shared/gpu/podman-bundle.sh
bash "$bundle_sh" "$work/podman" >&2
tar -C "$work" -cJf "$work/pack/podman.tar.xz" podman
cp "$exe" "$work/pack/ocibuild"
printf 'RECIPE=%q\nGPU_TESTS=%q\n' "$recipe" "$gpu_tests" > "$work/pack/job.env"
# The recipe travels too (device mode puts it over the device's tree): with its lock and the
# directory of the same name (its builder recipe, files its steps take), when they exist.
recipe_files=("$recipe")
for f in "${recipe%.toml}.lock" "${recipe%.toml}"; do [[ -e $f ]] && recipe_files+=("$f"); done
tar -cf "$work/pack/recipe.tar" "${recipe_files[@]}"
tar -C "$work/pack" -cf "$work/payload.tar" "$image" podman.tar.xz ocibuild job.env recipe.tar
(cd "$work" && sha256sum payload.tar) > "$work/parts/payload.sha256"
split -b "${part_mib}M" -d -a 2 "$work/payload.tar" "$work/parts/part-"
rm -f "$work/payload.tar"
parts=("$work"/parts/part-*)
for i in "${!parts[@]}"; do
    mv "${parts[$i]}" "${parts[$i]}-of-$(printf %02d ${#parts[@]})"
    parts[$i]=${parts[$i]}-of-$(printf %02d ${#parts[@]})
done
ls -l "$work/pack" "$work/parts" >&2
n=${#parts[@]}
echo
echo "Device calls, in the repo root, in one batch (the GPU host forgets /tmp after ~30 s idle):"
echo "(the device copies the session's own checkout: packed in another worktree, copy $work/parts"
echo " to the same path in that checkout first; .gpu/ is ignored there too)"
for i in "${!parts[@]}"; do
    echo "  call $((i + 1)) of $n: run(command=\"bash scripts/gpu-parts.sh device $name 2>&1\", carry=[\"${parts[$i]}\", \"$work/parts/payload.sha256\"], timeout_s=420)"
done
