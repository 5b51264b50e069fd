#!/usr/bin/env bash
# Build steps (issue 33): what capturing a step's output costs against the layer writer alone,
# and a no-op rebuild of a recipe with steps.
#
#   bench/steps.sh [BINARY] [ROUNDS] [SIZE_MB]     default target/release/ocibuild, 3, 500
#
# Per round, in the same run, SIZE_MB of random bytes in 8 files (incompressible, the layer
# writer's worst case):
#   step     `build` (cold store) of a recipe whose one [[step]] writes the files with
#            `dd if=/dev/urandom` into its output directory: podman's run + the writing + the
#            capture (the output read back through the layer writer into a layer)
#   podman   the same container under plain `podman run` (the same flags and bind-mounted output
#            directory, no capture): what the step costs before ocibuild reads anything back
#   layer    `build` (cold store) of a recipe with such files (made on the host) as a
#            [[layer]]: the layer writer alone, the peer
# capture = step - podman; the ratio capture/layer says whether capture runs at the layer
# writer's throughput (1.00: the same; the step's small builder is in `step` too).
# Then `noop`: the step recipe built again with nothing changed (the median of 5).
# Needs podman and busybox-static.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$(readlink -f "${1:-$repo/target/release/ocibuild}")
rounds=${2:-3}
size_mb=${3:-500}
# A path podman can name an image after (lowercase, no dot-leading component).
work=/tmp/ocibuild-bench-steps-$$
mkdir -p "$work"
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
# podman's global flags (before `run`); ocibuild takes them in OCIBUILD_PODMAN_ARGS.
podman_global=${PODMAN_GLOBAL:-"--runtime runc"}
# `podman run` flags for both (the limits a sandboxed host allows).
podman_run=${PODMAN_RUN:-"--ulimit nofile=1024:1024 --ulimit nproc=1000:1000"}
export OCIBUILD_PODMAN_ARGS="$podman_global $podman_run"
busybox=$(command -v busybox)

mkdir -p "$work/data"
part=$((size_mb / 8))
for i in 1 2 3 4 5 6 7 8; do
    head -c $((part * 1024 * 1024)) /dev/urandom >"$work/data/part$i"
done
fill="for i in 1 2 3 4 5 6 7 8; do /bin/busybox dd if=/dev/urandom of=/out/part\$i bs=1048576 count=$part 2>/dev/null; done"
cat >"$work/builder.toml" <<EOT
[image]
name = "localhost/bench/builder"
[[layer]]
name = "busybox"
src = "$busybox"
dest = "/bin/busybox"
EOT
cat >"$work/step.toml" <<'EOT'
[image]
name = "localhost/bench/step"
[[step]]
name = "copy"
image = { recipe = "builder.toml" }
run = ["/bin/busybox", "sh", "-c", "FILL"]
outputs = [{ path = "/out", dest = "/data" }]
EOT
sed -i "s|FILL|$fill|" "$work/step.toml"
cat >"$work/layer.toml" <<'EOT'
[image]
name = "localhost/bench/layer"
[[layer]]
name = "data"
src = "data"
dest = "/data"
EOT

secs() { # CMD...: wall seconds
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >"$work/last.out" 2>&1 || { tail -5 "$work/last.out" >&2; return 1; }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

echo "load: $(cat /proc/loadavg)  binary: $("$bin" --version)  data: ${size_mb} MB"
printf '%-6s %9s %9s %9s %9s %7s\n' round step podman layer capture ratio
for r in $(seq "$rounds"); do
    rm -rf "$work"/c-* "$work"/*.oci "$work"/*.lock
    step=$(secs env OCIBUILD_CACHE="$work/c-step" "$bin" -q build "$work/step.toml" -o "$work/s.oci")
    # The same container by hand: the step's image is in the store; write it out and run it.
    rm -rf "$work/out" "$work/img"
    mkdir -p "$work/out"
    OCIBUILD_CACHE="$work/c-podman" "$bin" -q build "$work/builder.toml" -o "$work/img" >/dev/null
    # shellcheck disable=SC2086 # the global flags, split
    podman=$(secs podman $podman_global run $podman_run --rm --network none --read-only --tmpfs /tmp \
        --mount "type=bind,src=$work/out,dst=/out" \
        "oci:$work/img:latest" /bin/busybox sh -c "$fill")
    layer=$(secs env OCIBUILD_CACHE="$work/c-layer" "$bin" -q build "$work/layer.toml" -o "$work/l.oci")
    capture=$(echo "$step - $podman" | bc -l)
    ratio=$(echo "$capture / $layer" | bc -l)
    printf '%-6s %9.2f %9.2f %9.2f %9.2f %7.2f\n' "$r" "$step" "$podman" "$layer" "$capture" "$ratio"
done
noops=()
for i in 1 2 3 4 5; do
    noops+=("$(secs env OCIBUILD_CACHE="$work/c-step" "$bin" -q build "$work/step.toml" -o "$work/s.oci")")
done
median=$(printf '%s\n' "${noops[@]}" | sort -n | sed -n 3p)
printf 'noop rebuild with a step: median %.3f s of 5 (%s)\n' "$median" "${noops[*]}"
