#!/usr/bin/env bash
# Prove the test stage on a host with an NVIDIA GPU: build recipes/cuda-smoke.toml with ocibuild
# and run its cuda-smoke test under podman (GPU found by CDI or by ldconfig -p discovery).
#
# usage: scripts/gpu-host-test.sh [OCIBUILD] [PODMAN_BUNDLE]
#   OCIBUILD       the ocibuild binary (default: target/release/ocibuild)
#   PODMAN_BUNDLE  a folder made by podman-bundle.sh, for hosts without podman
#                  (default: the podman on PATH)
# Exit status: 0 when the native check, the build and the test stage all passed.
set -uo pipefail
cd "$(dirname "$0")/.."
exe=$(readlink -f "${1:-target/release/ocibuild}")
work=/tmp/ocibuild-gpu-host-test    # podman derives an image name from the path: keep it plain
rm -rf "$work" && mkdir -p "$work"
podman=podman
args=()
if [ -n "${2:-}" ]; then
  bundle=$(readlink -f "$2")
  podman=$bundle/podman
  args+=("--podman-arg=--signature-policy=$bundle/etc/policy.json")
fi
fail=0
step() { printf '\n== %s\n' "$*"; }

step "ocibuild cuda-smoke (natively, on the host)"
"$exe" cuda-smoke || fail=1

step "ocibuild build recipes/cuda-smoke.toml"
OCIBUILD_CACHE=$work/cache "$exe" build recipes/cuda-smoke.toml --output "$work/layout" || exit 1

step "ocibuild test recipes/cuda-smoke.toml (under $podman)"
"$exe" test recipes/cuda-smoke.toml --output "$work/layout" --podman "$podman" "${args[@]}" || fail=1

step "ocibuild test --json"
"$exe" test recipes/cuda-smoke.toml --output "$work/layout" --podman "$podman" "${args[@]}" --json || fail=1

echo
[ $fail = 0 ] && echo "gpu-host-test: passed" || echo "gpu-host-test: FAILED"
exit $fail
