#!/usr/bin/env bash
# Registry pull and push against a loopback docker-registry (CNCF Distribution 2.8):
# - pull: a ~1 GB base in 4 layers, `ocibuild build` of a recipe on it with a cold cache
#   (resolve + download + verify + write the layout) vs `skopeo copy docker://… oci:…`, interleaved;
# - push: an image on that base pushed to another repository of the same registry: the bytes
#   ocibuild uploads (the base is mounted, not re-sent).
# Usage: bench/registry.sh   (ROUNDS=3; needs docker-registry, skopeo; builds --release)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${ROUNDS:-3}
cargo build --release -q
BIN=$ROOT/target/release/ocibuild
W=$ROOT/bench/.data/registry
rm -rf "$W" && mkdir -p "$W/base/layers" "$W/storage"
# shellcheck source=bench/registry-lib.sh
. "$ROOT/bench/registry-lib.sh"
start_registry "$W"

# The base: 4 layers of 256 MB (incompressible; stored with compression = "none").
{
  printf '[image]\nname = "localhost/bench/base"\ntag = "b"\ncompression = "none"\n'
  for i in 1 2 3 4; do
    mkdir -p "$W/base/layers/l$i"
    head -c $((256 << 20)) /dev/urandom > "$W/base/layers/l$i/data.bin"
    printf '[[layer]]\nname = "l%s"\nsrc = "layers/l%s"\ndest = "/data/l%s"\n' $i $i $i
  done
} > "$W/base/base.toml"
OCIBUILD_CACHE=$W/cache-base "$BIN" -q build "$W/base/base.toml" -o "$W/base/layout" > /dev/null
skopeo copy -q --dest-tls-verify=false "oci:$W/base/layout:b" "docker://$addr/bench/base:1"

mkdir -p "$W/app/src"
echo hello > "$W/app/src/hello.txt"
printf '[image]\nname = "localhost/bench/app"\ntag = "a"\n[base]\nimage = "%s/bench/base:1"\n[[layer]]\nname = "app"\nsrc = "src"\ndest = "/app"\n' "$addr" > "$W/app/app.toml"
printf '[[registry]]\nname = "%s"\ninsecure-http = true\n' "$addr" > "$W/registries.toml"

t() { /usr/bin/time -f '%e %U %S %M' -o "$W/t" "$@" > /dev/null 2>&1; cat "$W/t"; }
echo "| round | ocibuild build (cold) s | skopeo copy s | ratio |"
echo "|---|---|---|---|"
for r in $(seq "$ROUNDS"); do
  rm -rf "$W/cache" "$W/out" "$W/app/app.lock" "$W/skopeo-out"
  read -r ow _ _ _ < <(t env OCIBUILD_CACHE="$W/cache" "$BIN" -q --registries "$W/registries.toml" build "$W/app/app.toml" -o "$W/out")
  read -r sw _ _ _ < <(t skopeo copy -q --src-tls-verify=false "docker://$addr/bench/base:1" "oci:$W/skopeo-out:b")
  echo "| $r | $ow | $sw | $(python3 -c "print(f'{$ow/$sw:.2f}')") |"
done
OCIBUILD_CACHE=$W/cache "$BIN" -q --registries "$W/registries.toml" push --json "$W/out:a" "$addr/bench/app:1" > "$W/push.json"
python3 - "$W/push.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
total = sum(b["size"] for b in r["blobs"])
print(f"\npush to another repository of the same registry: {r['uploaded_bytes']} of {total} bytes uploaded")
for b in r["blobs"]:
    print(f"  {b['result']:>9}  {b['size']:>11}  {b['digest']}")
PY
