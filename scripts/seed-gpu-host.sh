#!/bin/bash
# On a GPU host without network: recipes/python-cuda-images-small.toml's image, carried as a
# tar.xz of its OCI layout, run by `ocibuild test` where podman exists, and in any case
# unpacked and run by chroot (as root) with the host driver's libcuda copied in: cuda-smoke on
# the image's glibc, imgproc.selftest --device gpu and auto, the unit tests.
#
# usage (as root): scripts/seed-gpu-host.sh LAYOUT.tar.xz [OCIBUILD]
#   make LAYOUT.tar.xz here: ocibuild build recipes/python-cuda-images-small.toml -o small.oci
#                            tar -C small.oci -cJf small.tar.xz .
# Not yet run on a GPU host (see the seed report).
set -u
cd "$(dirname "$0")/.."
TARBALL=$(readlink -f "$1")
EXE=$(readlink -f "${2:-target/release/ocibuild}")
echo "== host"; nvidia-smi -L; uname -r; command -v podman || echo "no podman"
L=/tmp/ocibuild-gpu/layout R=/tmp/ocibuild-gpu/rootfs
rm -rf /tmp/ocibuild-gpu; mkdir -p $L $R
tar -C $L -xJf $TARBALL
for d in $(python3 -c "
import json; i=json.load(open('$L/index.json')); m=json.load(open('$L/blobs/sha256/'+i['manifests'][0]['digest'][7:]))
print(' '.join(l['digest'][7:] for l in m['layers']))"); do tar -C $R -xf $L/blobs/sha256/$d; done
echo "== native: ocibuild cuda-smoke"; $EXE cuda-smoke; echo "rc=$?"
if command -v podman >/dev/null; then
  echo "== ocibuild test (podman)"; $EXE test recipes/python-cuda-images-small.toml -o $L; echo "rc=$?"
fi
echo "== chroot"
mkdir -p $R/dev $R/proc $R/tmp $R/usr/local/nvidia/lib64 $R/usr/local/bin
mount --rbind /dev $R/dev || echo "bind /dev failed"
mount -t proc proc $R/proc || echo "mount proc failed"
libs=$( (ldconfig -p | awk '/libcuda\.so|libnvidia-ptxjitcompiler|libnvidia-nvvm/ {print $NF}'; find /usr/local/nvidia /usr/lib/x86_64-linux-gnu -maxdepth 3 -name 'libcuda.so*' -o -maxdepth 3 -name 'libnvidia-ptxjitcompiler.so*' 2>/dev/null) | sort -u)
echo "driver libs: $libs"
for l in $libs; do cp -L "$l" $R/usr/local/nvidia/lib64/ 2>/dev/null; done
cp $EXE $R/usr/local/bin/
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64 PYTHONPATH=/app PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
echo "== chroot: ocibuild cuda-smoke (the image's glibc)"; chroot $R /usr/local/bin/ocibuild cuda-smoke; echo "rc=$?"
echo "== chroot: imgproc.selftest --device gpu"; chroot $R /usr/bin/python3 -m imgproc.selftest --device gpu; echo "rc=$?"
echo "== chroot: imgproc.selftest --device auto"; chroot $R /usr/bin/python3 -m imgproc.selftest --device auto; echo "rc=$?"
echo "== chroot: unit tests"; chroot $R /usr/bin/python3 -m unittest discover -s /app/tests 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"
umount -l $R/proc $R/dev 2>/dev/null
