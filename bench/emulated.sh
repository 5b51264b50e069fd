#!/usr/bin/env bash
# Several platforms (issue 21), against the Dockerfile way under emulation: a linux/arm64 image
# of the seed-like stand-in built on an x86-64 host, in one run,
# - by ocibuild (nothing runs: the arm64 .debs and wheels are unpacked, nothing emulated), and
# - by `buildah bud --platform linux/arm64` of the seed-like Containerfile (apt-get install
#   python3 python3-pip, pip install numpy pillow, COPY app), every RUN under qemu-user-static
#   through binfmt_misc,
# both on one arm64 stand-in base: a `debootstrap --arch=arm64 --variant=minbase` Debian
# bookworm (its second stage under the same emulation), one layer made by ocibuild, served by
# docker-registry on 127.0.0.1 (no arm64 CUDA base is reachable here: docker.io is not).
# Cold = an empty OCIBUILD_CACHE / `buildah bud --no-cache` (the base already pulled).
#
# Usage: bench/emulated.sh [RUNS]   (as root on a machine whose binfmt_misc it may change:
#   needs debootstrap, buildah, qemu-user-static, docker-registry, skopeo, python3-venv, and
#   network to the Debian archive and PyPI; builds --release). It registers Debian's
#   qemu-aarch64 handler (/usr/lib/binfmt.d/qemu-aarch64.conf) if none is, and removes it at
#   exit. CA_BUNDLE (default /etc/ssl/certs/ca-certificates.crt) is mounted into the build
#   containers for hosts that intercept TLS.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${1:-2}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
cargo build --release -q
BIN=$ROOT/target/release/ocibuild
W=$ROOT/bench/.data/emulated
rm -rf "$W" && mkdir -p "$W"
t() {
  local s e
  s=$(date +%s.%N)
  "$@" > "$W/last.log" 2>&1 || { cat "$W/last.log" >&2; exit 1; }
  e=$(date +%s.%N)
  python3 -c "print(f'{$e - $s:.1f}')"
}

# --- binfmt_misc: qemu-aarch64-static for aarch64 ELF files
BM=/proc/sys/fs/binfmt_misc
mountpoint -q "$BM" || mount -t binfmt_misc binfmt_misc "$BM"
registered=0
if [ ! -e "$BM/qemu-aarch64" ]; then
  cat /usr/lib/binfmt.d/qemu-aarch64.conf > "$BM/register"
  registered=1
fi
# shellcheck source=bench/registry-lib.sh
. "$ROOT/bench/registry-lib.sh"
start_registry "$W"
# (after start_registry, whose own EXIT trap this replaces)
cleanup() {
  if [ "$registered" = 1 ]; then echo -1 > "$BM/qemu-aarch64" || true; fi
  kill "$reg" 2>/dev/null || true
}
trap cleanup EXIT
printf '[[registry]]\nname = "%s"\ninsecure-http = true\n' "$addr" > "$W/registries.toml"

# --- the arm64 stand-in base
echo "== stand-in base: debootstrap --arch=arm64 --variant=minbase bookworm (emulated)" >&2
base_s=$(t debootstrap --arch=arm64 --variant=minbase --include=ca-certificates bookworm \
  "$W/rootfs" http://deb.debian.org/debian)
rm -rf "$W"/rootfs/var/cache/apt/archives/*.deb "$W"/rootfs/var/lib/apt/lists/* \
  "$W"/rootfs/var/log/* "$W"/rootfs/dev/*
mkdir -p "$W/base"
cat > "$W/base/base.toml" <<EOF
[image]
name = "localhost/bench/arm64-standin"
tag = "b"
platform = "linux/arm64"
[[layer]]
name = "rootfs"
src = "$W/rootfs"
dest = "/"
mode = "preserve"
[config]
env = { PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }
cmd = ["/bin/bash"]
EOF
OCIBUILD_CACHE=$W/cache-base "$BIN" -q build "$W/base/base.toml" -o "$W/base/layout" > /dev/null
skopeo copy -q --dest-tls-verify=false "oci:$W/base/layout:b" "docker://$addr/bench/arm64:b"
BASE=$addr/bench/arm64:b

# --- ocibuild: python3 from the Debian archive (arm64), numpy and pillow from a pylock, the app
P=$W/p
mkdir -p "$P/keys" "$P/app"
cp recipes/keys/debian-bookworm.asc "$P/keys/"
for i in $(seq 1 40); do echo "def f$i(): return $i" > "$P/app/m$i.py"; done
python3 -m venv "$W/venv" && "$W/venv/bin/pip" install -q uv
printf 'numpy==2.2.6\npillow==11.2.1\n' > "$P/req.in"
(cd "$P" && "$W/venv/bin/uv" pip compile req.in --format pylock.toml --python-version 3.11.2 \
  --python-platform aarch64-manylinux_2_36 -o pylock.toml --quiet)
cat > "$P/app.toml" <<EOF
[image]
name = "localhost/bench/app"
tag = "arm64"
platform = "linux/arm64"

[base]
image = "$BASE"

[apt]
packages = ["python3"]

[[apt.source]]
url = "https://deb.debian.org/debian"
suite = "bookworm"
components = ["main"]
signed-by = "keys/debian-bookworm.asc"

[python]
version = "3.11"
lock = "pylock.toml"

[[layer]]
name = "app"
src = "app"
dest = "/app"

[config]
entrypoint = ["python3", "-c", "import numpy, PIL; print(numpy.__version__)"]
EOF
OCIBUILD_CACHE=$W/cache-lock "$BIN" -q --registries "$W/registries.toml" lock "$P/app.toml" > /dev/null
ob() { env OCIBUILD_CACHE="$1" "$BIN" -q --registries "$W/registries.toml" build --locked "$P/app.toml" -o "$2"; }

# --- the Dockerfile way, under emulation
D=$W/df
mkdir -p "$D"
cp -r "$P/app" "$D/app"
cat > "$D/Containerfile" <<EOF
FROM $BASE
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN apt-get update && apt-get install -y python3 python3-pip \\
 && PIP_CERT=/etc/ssl/host-ca.crt pip3 install --break-system-packages numpy==2.2.6 pillow==11.2.1
COPY app /app
ENTRYPOINT ["python3", "-c", "import numpy, PIL; print(numpy.__version__)"]
EOF
bb() {
  buildah --storage-driver vfs --root "$W/buildah" --runroot "$W/buildah-run" bud -q \
    --platform linux/arm64 --isolation chroot --tls-verify=false --network host \
    -v "$CA_BUNDLE:/etc/ssl/host-ca.crt:ro" "$@" -f "$D/Containerfile" "$D"
}
# The base pulled once, outside the measurement.
buildah --storage-driver vfs --root "$W/buildah" --runroot "$W/buildah-run" pull -q \
  --platform linux/arm64 --tls-verify=false "docker://$BASE" > /dev/null

echo "== measuring" >&2
echo
echo "arm64 stand-in base: debootstrap minbase bookworm, made in ${base_s} s under emulation"
echo
echo "| run | ocibuild --platform linux/arm64, cold, s | buildah bud --platform linux/arm64 (qemu), --no-cache, s | ratio (buildah / ocibuild) |"
echo "|---|---|---|---|"
for r in $(seq 1 "$RUNS"); do
  rm -rf "$W/cache" "$W/o"
  o=$(t ob "$W/cache" "$W/o")
  d=$(t bb --no-cache --layers -t "df$r")
  echo "| $r | $o | $d | $(python3 -c "print(f'{$d / $o:.1f}')") |"
done
# The image ocibuild built runs its arm64 python3 and numpy under qemu-user (no container).
mkdir -p "$W/unpacked"
umoci unpack --rootless --image "$W/o:arm64" "$W/unpacked/x" > /dev/null 2>&1 \
  && echo && echo "check: $(qemu-aarch64-static -L "$W/unpacked/x/rootfs" "$W/unpacked/x/rootfs/usr/bin/python3" \
     -c 'import numpy; print("numpy", numpy.__version__, (numpy.arange(4) * 2).sum())')"
