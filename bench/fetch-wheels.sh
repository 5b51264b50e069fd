#!/usr/bin/env bash
# Realistic layer data: manylinux wheels of numpy, scipy, pillow and opencv-python-headless for
# CPython 3.11 / x86_64, unpacked into one tree (~330 MB), like a site-packages layer.
# Cached under bench/.data/ (git-ignored): wheels/ (the downloads), tree/ (unpacked),
# wheels.txt (names, versions, bytes). Prints the tree path on the last line of stdout.
# Usage: bench/fetch-wheels.sh [--force]
set -euo pipefail
cd "$(dirname "$0")"
DATA=$PWD/.data
WHEELS=$DATA/wheels
TREE=$DATA/tree
[ "${1:-}" = --force ] && rm -rf "$WHEELS" "$TREE"

if [ ! -f "$DATA/tree.complete" ]; then
  mkdir -p "$WHEELS"
  if ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    # Binary wheels only, for a fixed interpreter/platform, whatever the host has.
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.11 \
      --implementation cp --abi cp311 \
      --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux_2_28_x86_64 \
      -d "$WHEELS" numpy scipy pillow opencv-python-headless >&2
  fi
  rm -rf "$TREE"
  mkdir -p "$TREE"
  for w in "$WHEELS"/*.whl; do
    unzip -q -o "$w" -d "$TREE"
  done
  ( cd "$WHEELS" && for w in *.whl; do printf '%s %s\n' "$w" "$(stat -c %s "$w")"; done ) > "$DATA/wheels.txt"
  touch "$DATA/tree.complete"
fi
echo "$(du -sb "$TREE" | cut -f1) bytes, $(find "$TREE" -type f | wc -l) files in $TREE" >&2
echo "$TREE"
