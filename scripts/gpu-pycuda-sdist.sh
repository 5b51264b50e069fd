#!/usr/bin/env bash
# The reproducible record of recipes/pycuda-sdist.toml (PyCUDA built from its PyPI sdist in a
# `[[step]]`, issue 33): not in the test suite, since its builder is ~2.5 GB of .debs (Debian's
# CUDA 12.4 toolkit) and CI has 2 cores. This script locks and builds it here (network, podman),
# runs its no-GPU test, and packs it for a GPU host with scripts/gpu-parts.sh, which prints the
# device calls that run its GPU test there.
#
#   scripts/gpu-pycuda-sdist.sh             here; then make the printed calls, back to back
#
# Environment: OCIBUILD (a binary; default: cargo build --release), XZ_LEVEL, PART_MIB as for
# gpu-parts.sh. The first build downloads the builder's .debs (~2.5 GB) and the sdist; the
# step (extract, configure.py, pip wheel, nvcc --ptx) takes about 2 minutes on 2 cores.
#
# As it ran on 2026-12-03 (H200, driver 580.159.04; image manifest
# sha256:5c9a66bbab813376a4bde191329edfc2e4b9364443198d4fabf74a75d6766b09, 215 MB layout, two
# parts; `ocibuild verify` in an empty store reran the step and got the same digest):
#   pycuda 2025.1.3 driver 13000 built against (12, 4, 0)
#   device NVIDIA H200 sm_90
#   saxpy over 1048576 floats: max|gpu-cpu| 9.5367431640625e-07
#   pycuda-ptx-saxpy ok
set -euo pipefail
cd "$(dirname "$0")/.."
recipe=recipes/pycuda-sdist.toml
export OCIBUILD_PODMAN_ARGS="${OCIBUILD_PODMAN_ARGS-"--runtime runc --network none --ulimit nofile=1024:1024 --ulimit nproc=1000:1000"}"
if [[ -z ${OCIBUILD:-} ]]; then
    cargo build --release
    export OCIBUILD=${CARGO_TARGET_DIR:-$PWD/target}/release/ocibuild
fi
# The lock pins the builder's and the image's .debs, the sdist's sha256 and the step's output
# layers: a --locked build that compiles other bytes says the step is not reproducible.
[[ -f ${recipe%.toml}.lock ]] || "$OCIBUILD" lock "$recipe"
exec scripts/gpu-parts.sh pack "$recipe" "pycuda-links" "pycuda-ptx-saxpy"
