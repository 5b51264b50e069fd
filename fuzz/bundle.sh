#!/bin/sh
# Packs the built fuzz targets (stripped), the seeds and run-all.sh into
# ../fuzz-bundle.tar.xz, to fuzz on another x86_64 Linux machine without a toolchain:
#   tar xf fuzz-bundle.tar.xz && cd fuzz-bundle && ./run-all.sh 600 out
# Build first: cargo +nightly fuzz build -O --debug-assertions
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rel=$here/target/x86_64-unknown-linux-gnu/release
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/fuzz-bundle/bin"
for src in "$here"/fuzz_targets/*.rs; do
    t=$(basename "$src" .rs)
    strip -o "$stage/fuzz-bundle/bin/$t" "$rel/$t"
done
cp -r "$here/seeds" "$here/run-all.sh" "$here/README.md" "$stage/fuzz-bundle/"
tar -C "$stage" -cf - fuzz-bundle | xz -T0 -6 > "$here/../fuzz-bundle.tar.xz"
ls -l "$here/../fuzz-bundle.tar.xz"
