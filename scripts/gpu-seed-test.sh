#!/usr/bin/env bash
# Prove the seed's image on a host with an NVIDIA GPU: run the test stage of
# recipes/python-cuda-images-small.toml (cuda-smoke, the app's unit tests, and the app's GPU
# self-test through the CUDA driver API) under podman, against an image ocibuild built.
#
# usage: scripts/gpu-seed-test.sh LAYOUT [OCIBUILD] [PODMAN_BUNDLE]
#   LAYOUT         the OCI layout `ocibuild build recipes/python-cuda-images-small.toml` wrote
#                  (built here, or elsewhere and carried over: a GPU host needs no network)
#   OCIBUILD       the ocibuild binary (default: target/release/ocibuild)
#   PODMAN_BUNDLE  a folder made by podman-bundle.sh, for hosts without podman
# Exit status: 0 when every test passed.
set -uo pipefail
cd "$(dirname "$0")/.."
layout=$(readlink -f "$1")
exe=$(readlink -f "${2:-target/release/ocibuild}")
podman=podman
args=()
if [ -n "${3:-}" ]; then
  bundle=$(readlink -f "$3")
  podman=$bundle/podman
  args+=("--podman-arg=--signature-policy=$bundle/etc/policy.json")
fi
# podman derives an image name from the path: keep it plain (no dot-leading components).
work=/tmp/ocibuild-gpu-seed
rm -rf "$work" && mkdir -p "$work" && cp -a "$layout" "$work/layout"
echo "== image"
"$exe" --version
cat "$work/layout/index.json"; echo
echo "== ocibuild test recipes/python-cuda-images-small.toml (under $podman)"
"$exe" test recipes/python-cuda-images-small.toml --output "$work/layout" --podman "$podman" "${args[@]}"
code=$?
echo "== ocibuild test --json"
"$exe" test recipes/python-cuda-images-small.toml --output "$work/layout" --podman "$podman" "${args[@]}" --json
[ $code = 0 ] && echo "gpu-seed-test: passed" || echo "gpu-seed-test: FAILED"
exit $code
