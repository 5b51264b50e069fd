#!/usr/bin/env bash
# The seed image (issue 9) built two ways on one stand-in base, in one run:
# - ocibuild: recipes/python-cuda-images.toml with tests/it/online_seed_recipe.rs's substitutions (Debian
#   bookworm python3 instead of Ubuntu noble's, a cp311 manylinux_2_36 pylock of numpy and
#   pillow; no cupy), its base reached through a [[mirror]] rule on a loopback registry;
# - the Dockerfile way: buildah bud of the seed Dockerfile (apt-get install python3 python3-pip,
#   pip install numpy pillow, COPY app) on the same base.
# Measured: cold build (empty cache / --no-cache), warm build after an app-only change, image
# size (compressed layers, as pushed), and the manifest digests of two cold builds each way.
#
# The stand-in base is a debootstrap --variant=minbase bookworm (apt, dpkg, a shell: the
# Dockerfile way needs them), as one layer made by ocibuild, pushed to the registry as
# nvidia/cuda:12.8.1-runtime-ubuntu24.04 (docker.io is not reachable here).
#
# Usage: bench/seed.sh   (as root; needs debootstrap, buildah, skopeo, docker-registry,
#                          python3-venv, network to deb.debian.org and PyPI; builds --release)
# CA_BUNDLE (default /etc/ssl/certs/ca-certificates.crt) is mounted into the buildah build
# containers for hosts that intercept TLS.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
cargo build --release -q
BIN=$ROOT/target/release/ocibuild
W=$ROOT/bench/.data/seed
rm -rf "$W" && mkdir -p "$W/storage"
# Runs "$@" (a command or a function), its output to last.log; prints the wall-clock seconds.
t() {
  local s e
  s=$(date +%s.%N)
  "$@" > "$W/last.log" 2>&1 || { cat "$W/last.log" >&2; exit 1; }
  e=$(date +%s.%N)
  python3 -c "print(f'{$e - $s:.1f}')"
}

# --- the loopback registry
# shellcheck source=bench/registry-lib.sh
. "$ROOT/bench/registry-lib.sh"
start_registry "$W"
printf '[[registry]]\nname = "%s"\ninsecure-http = true\n\n[[mirror]]\nprefix = "docker.io/nvidia"\nlocations = ["%s/nvidia"]\n' \
  "$addr" "$addr" > "$W/registries.toml"

# --- the stand-in base
echo "== stand-in base: debootstrap --variant=minbase bookworm" >&2
debootstrap --variant=minbase --include=libstdc++6,ca-certificates bookworm "$W/rootfs" \
  http://deb.debian.org/debian > "$W/debootstrap.log" 2>&1
rm -rf "$W"/rootfs/var/cache/apt/archives/*.deb "$W"/rootfs/var/lib/apt/lists/* \
  "$W"/rootfs/var/log/* "$W"/rootfs/dev/*
mkdir -p "$W/base"
cat > "$W/base/base.toml" <<EOF
[image]
name = "localhost/bench/cuda-standin"
tag = "b"
platform = "linux/amd64"
[[layer]]
name = "rootfs"
src = "$W/rootfs"
dest = "/"
mode = "preserve"
[config]
env = { PATH = "/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NVIDIA_VISIBLE_DEVICES = "all", CUDA_VERSION = "12.8.1" }
cmd = ["/bin/bash"]
EOF
OCIBUILD_CACHE=$W/cache-base "$BIN" -q build "$W/base/base.toml" -o "$W/base/layout" > /dev/null
skopeo copy -q --dest-tls-verify=false "oci:$W/base/layout:b" \
  "docker://$addr/nvidia/cuda:12.8.1-runtime-ubuntu24.04"
base_size=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(sum(l['size'] for l in m['layers']))" \
  "$W/base/layout/blobs/sha256/$(python3 -c "import json; print(json.load(open('$W/base/layout/index.json'))['manifests'][0]['digest'][7:])")")

# --- the project: the recipe with tests/it/online_seed_recipe.rs's substitutions, the app, a pylock
P=$W/proj
mkdir -p "$P/keys" "$P/python-cuda-images"
cp recipes/keys/debian-bookworm.asc "$P/keys/"
cp -r recipes/python-cuda-images/app "$P/python-cuda-images/app"
find "$P" -name __pycache__ -prune -exec rm -rf {} +
sed -e 's|url = "http://archive.ubuntu.com/ubuntu"|url = "https://deb.debian.org/debian"|' \
    -e 's|suite = "noble"|suite = "bookworm"|' \
    -e 's|signed-by = "keys/ubuntu-archive.asc"|signed-by = "keys/debian-bookworm.asc"|' \
    -e 's|version = "3.12"|version = "3.11"|' recipes/python-cuda-images.toml > "$P/python-cuda-images.toml"
python3 -m venv "$W/venv" && "$W/venv/bin/pip" install -q uv
printf 'numpy\npillow\n' > "$W/req.in"
"$W/venv/bin/uv" pip compile -q "$W/req.in" --format pylock.toml -o "$P/python-cuda-images/pylock.toml" \
  --python-version 3.11 --python-platform x86_64-manylinux_2_36
R=$P/python-cuda-images.toml
TAG=12.8.1-py3.12
ob() { env OCIBUILD_CACHE="$1" "$BIN" -q --registries "$W/registries.toml" build "$R" -o "$2"; }
digest() { python3 -c "import json,sys; print([m['digest'] for m in json.load(open(sys.argv[1]+'/index.json'))['manifests'] if m.get('annotations',{}).get('org.opencontainers.image.ref.name')==sys.argv[2]][0])" "$1" "$2"; }
# the compressed size of the layers above the base's one
layers_size() { python3 -c "
import json,sys
d=sys.argv[1]; idx=json.load(open(d+'/index.json'))
m=[x for x in idx['manifests'] if x.get('annotations',{}).get('org.opencontainers.image.ref.name')==sys.argv[2]][0]
man=json.load(open(d+'/blobs/sha256/'+m['digest'][7:]))
print(sum(l['size'] for l in man['layers'][1:]))" "$1" "$2"; }

# --- the Dockerfile way
D=$W/df
mkdir -p "$D"
cp -r "$P/python-cuda-images/app" "$D/app"
cat > "$D/Containerfile" <<EOF
FROM $addr/nvidia/cuda:12.8.1-runtime-ubuntu24.04
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN apt-get update && apt-get install -y python3 python3-pip \\
 && PIP_CERT=/etc/ssl/host-ca.crt pip3 install --break-system-packages numpy pillow
COPY app /app
WORKDIR /app
ENTRYPOINT ["python3", "-m", "imgproc"]
EOF
bb() {
  buildah --storage-driver vfs --root "$W/buildah" --runroot "$W/buildah-run" bud -q \
    --isolation chroot --tls-verify=false --network host \
    -v "$CA_BUNDLE:/etc/ssl/host-ca.crt:ro" "$@" -f "$D/Containerfile" "$D"
}
bpush() {
  buildah --storage-driver vfs --root "$W/buildah" --runroot "$W/buildah-run" push -q \
    "$1" "oci:$2:latest"
}

echo "== measuring" >&2
# Cold: empty ocibuild cache; buildah --no-cache (the base already pulled by the first build).
oc1=$(t ob "$W/cache1" "$W/o1")
oc2=$(t ob "$W/cache2" "$W/o2")
dc1=$(t bb --no-cache --layers -t df1)
dc2=$(t bb --no-cache --layers -t df2)
bpush df1 "$W/d1"; bpush df2 "$W/d2"
# Warm, app-only change: one line appended to a module; the same cache / layer cache.
echo "# changed" >> "$P/python-cuda-images/app/imgproc/__init__.py"
echo "# changed" >> "$D/app/imgproc/__init__.py"
ow=$(t ob "$W/cache1" "$W/o3")
dw=$(t bb --layers -t df3)

echo
echo "base: debootstrap minbase bookworm, $base_size bytes compressed"
echo
echo "| | ocibuild | Dockerfile (buildah bud) |"
echo "|---|---|---|"
echo "| cold build, s (1st / 2nd) | $oc1 / $oc2 | $dc1 / $dc2 |"
echo "| warm build after an app-only change, s | $ow | $dw |"
echo "| layers above the base, compressed bytes | $(layers_size "$W/o1" $TAG) | $(layers_size "$W/d1" latest) |"
echo "| manifest digest, cold build 1 | $(digest "$W/o1" $TAG) | $(digest "$W/d1" latest) |"
echo "| manifest digest, cold build 2 | $(digest "$W/o2" $TAG) | $(digest "$W/d2" latest) |"
