#!/bin/bash
# The GPU part of the test stage, on a GPU host: the cuda-smoke check natively, then inside a
# container started by the test stage library (`run_tests`, with real GPU discovery), then the
# same container started by hand with the flags the library uses (to tell a library bug from a
# host problem).
#
# usage: scripts/gpu-smoke.sh OCIBUILD BUNDLE LAYOUT[:TAG] [RUN_STAGE_TEST_BINARY]
#   OCIBUILD   an ocibuild binary with the hidden `cuda-smoke` subcommand
#   BUNDLE     a podman folder made by shared/gpu/podman-bundle.sh (or a dir with a `podman` in it)
#   LAYOUT     an OCI layout whose image has glibc (>= the glibc ocibuild was built against);
#              TAG defaults to `t`
#   RUN_STAGE_TEST_BINARY  optional: the compiled integration tests (`cargo test --no-run
#              --test it` prints its path); it runs run_stage::gpu_host_cuda_smoke_through_run_tests
# Extra podman flags: OCIBUILD_PODMAN_ARGS (whitespace-separated), e.g. "--runtime runc".
# Exit status: 0 when every part that ran passed.
set -uo pipefail
exe=${1:?usage: gpu-smoke.sh OCIBUILD BUNDLE LAYOUT[:TAG] [RUN_STAGE_TEST_BINARY]}
bundle=${2:?usage: gpu-smoke.sh OCIBUILD BUNDLE LAYOUT[:TAG] [RUN_STAGE_TEST_BINARY]}
ref=${3:?usage: gpu-smoke.sh OCIBUILD BUNDLE LAYOUT[:TAG] [RUN_STAGE_TEST_BINARY]}
testbin=${4:-}
layout=${ref%%:*}; tag=t; [[ $ref == *:* ]] && tag=${ref#*:}
exe=$(readlink -f "$exe"); layout=$(readlink -f "$layout"); podman=$(readlink -f "$bundle")/podman
policy=$(readlink -f "$bundle")/etc/policy.json
read -r -a extra <<< "${OCIBUILD_PODMAN_ARGS:-}"
[ -f "$policy" ] && extra+=(--signature-policy "$policy")
fail=0
step() { printf '\n== %s\n' "$*"; }

step "1. native: $exe cuda-smoke"
"$exe" cuda-smoke || { echo "FAILED (exit $?)"; fail=1; }

if [ -n "$testbin" ]; then
  step "2. run_tests (library) with GPU discovery"
  OCIBUILD_GPU_LAYOUT=$layout OCIBUILD_GPU_TAG=$tag OCIBUILD_PODMAN=$podman OCIBUILD_SELF_EXE=$exe \
    OCIBUILD_TEST_PODMAN_ARGS="${extra[*]}" \
    "$testbin" run_stage::gpu_host_cuda_smoke_through_run_tests --exact --include-ignored --nocapture || { echo "FAILED"; fail=1; }
else
  step "2. run_tests: skipped (no RUN_STAGE_TEST_BINARY given)"
fi

step "3. by hand, the flags run_tests uses without CDI"
# podman rejects oci: paths with a component that starts with a dot (or has capitals): copy.
case "$layout" in
  */.*|*[A-Z]*) plain=/tmp/ocibuild-gpu-smoke-$$; rm -rf "$plain"; cp -a "$layout" "$plain"; layout=$plain ;;
esac
gpu=()
if grep -qs nvidia.com/gpu /etc/cdi/*.json /etc/cdi/*.yaml /var/run/cdi/*.json /var/run/cdi/*.yaml; then
  gpu+=(--device nvidia.com/gpu=all)
else
  for d in /dev/nvidia[0-9]* /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; do
    [ -e "$d" ] && gpu+=(--device "$d")
  done
  libdir=/usr/lib/x86_64-linux-gnu; flag=x86-64
  [ "$(uname -m)" = aarch64 ] && { libdir=/usr/lib/aarch64-linux-gnu; flag=AArch64; }
  for lib in libcuda.so.1 libnvidia-ptxjitcompiler.so.1 libnvidia-ml.so.1; do
    p=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p) | awk -v l="$lib" -v f="$flag" '$1 == l && $0 ~ f {print $NF; exit}')
    [ -n "$p" ] && gpu+=(-v "$(readlink -f "$p"):$libdir/$lib:ro")
  done
  gpu+=(-e "LD_LIBRARY_PATH=$libdir")
fi
set -x
"$podman" run --rm --quiet "${extra[@]}" "${gpu[@]}" -v "$exe:/.ocibuild/ocibuild:ro" \
  --entrypoint /.ocibuild/ocibuild "oci:$layout:$tag" cuda-smoke || fail=1
{ set +x; } 2>/dev/null
[ -n "${plain:-}" ] && rm -rf "$plain"

echo; [ $fail = 0 ] && echo "gpu-smoke: all parts passed" || echo "gpu-smoke: FAILED"
exit $fail
