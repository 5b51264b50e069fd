#!/usr/bin/env bash
# Vendoring an input set, against the peer tools fetching the same inputs, in the same run:
# - inputs: a base image in a loopback docker-registry (LAYERS x LAYER_MB random layers; stands
#   for Docker Hub through a [[mirror]] rule) and WHEELS from PyPI (pinned in the lock as
#   [[wheel]] entries from PyPI's simple API, PEP 691 JSON);
# - ours: `ocibuild vendor app.toml --into DIR` with a cold cache (resolve nothing: the lock
#   pins everything; fetch, verify, link into DIR), then a second run (bytes written);
# - peer: `skopeo copy docker://BASE@DIGEST oci:DIR` + `pip download --no-deps
#   --only-binary=:all: WHEELS`, interleaved with ours.
# Usage: bench/vendor.sh   (ROUNDS=3 LAYERS=4 LAYER_MB=64 WHEELS="numpy==2.1.3 six==1.16.0";
#        BIN=target/release/ocibuild, built when missing; needs docker-registry, skopeo, pip)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${ROUNDS:-3}
LAYERS=${LAYERS:-4}
LAYER_MB=${LAYER_MB:-64}
WHEELS=${WHEELS:-"numpy==2.1.3 six==1.16.0"}
BIN=${BIN:-$ROOT/target/release/ocibuild}
[ -x "$BIN" ] || cargo build --release -q
W=$ROOT/bench/.data/vendor
rm -rf "$W" && mkdir -p "$W/base" "$W/storage" "$W/app"
# shellcheck source=bench/registry-lib.sh
. "$ROOT/bench/registry-lib.sh"
start_registry "$W"
printf '[[registry]]\nname = "%s"\ninsecure-http = true\n\n[[mirror]]\nprefix = "docker.io/library"\nlocations = ["%s/library"]\n' "$addr" "$addr" > "$W/registries.toml"

# The base: random (incompressible) layers, pushed as docker.io/library/vendorbench:1.
{
  printf '[image]\nname = "localhost/vendorbench"\ntag = "1"\ncompression = "none"\n'
  for i in $(seq "$LAYERS"); do
    mkdir -p "$W/base/l$i"
    head -c $((LAYER_MB << 20)) /dev/urandom > "$W/base/l$i/data"
    printf '[[layer]]\nname = "l%s"\nsrc = "l%s"\ndest = "/l%s"\n' "$i" "$i" "$i"
  done
} > "$W/base/base.toml"
"$BIN" -q --cache-dir "$W/cache-base" build "$W/base/base.toml" -o "$W/base/layout" > /dev/null
skopeo copy --quiet --dest-tls-verify=false "oci:$W/base/layout:1" "docker://$addr/library/vendorbench:1"

# The recipe and its lock (base pinned by `ocibuild lock`, wheels from PyPI's JSON API).
printf '[image]\nname = "localhost/app"\n[base]\nimage = "docker.io/library/vendorbench:1"\n' > "$W/app/app.toml"
"$BIN" -q --registries "$W/registries.toml" --cache-dir "$W/cache-lock" lock "$W/app/app.toml" > /dev/null
python3 - "$W/app/app.lock" $WHEELS <<'PY'
import json, sys, urllib.request
lock, specs = sys.argv[1], sys.argv[2:]
out = []
for spec in specs:
    name, version = spec.split("==")
    req = urllib.request.Request(f"https://pypi.org/simple/{name}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    info = json.load(urllib.request.urlopen(req))
    files = [f for f in info["files"] if f["filename"].endswith(".whl")
             and f["filename"].split("-")[1] == version]
    pick = next((f for f in files if "cp312-cp312-manylinux" in f["filename"] and "x86_64" in f["filename"]), None) \
        or next(f for f in files if f["filename"].endswith("-none-any.whl"))
    out.append((name.lower(), version, pick))
with open(lock, "a") as f:
    for name, version, p in sorted(out):
        f.write(f'\n[[wheel]]\nname = "{name}"\nversion = "{version}"\nfilename = "{p["filename"]}"\n'
                f'url = "{p["url"]}"\nsize = {p["size"]}\nsha256 = "sha256:{p["hashes"]["sha256"]}"\n')
PY
digest=$(sed -n 's/^manifest-digest = "\(.*\)"/\1/p' "$W/app/app.lock")
wheel_files=$(sed -n 's/^filename = "\(.*\)"/\1/p' "$W/app/app.lock" | tr '\n' ' ')
echo "inputs: base $LAYERS x $LAYER_MB MB ($digest), wheels: $wheel_files"
echo "load before: $(cat /proc/loadavg)"

t() { /usr/bin/time -f '%e' "$@" 2>&1 >/dev/null | tail -1; }
printf '| round | ocibuild vendor (cold) s | skopeo copy + pip download s | ocibuild vendor, second run: bytes written | vendor bytes (blobs) | peer bytes |\n|---|---|---|---|---|---|\n'
for r in $(seq "$ROUNDS"); do
  rm -rf "$W/v" "$W/cache" "$W/peer" && mkdir -p "$W/peer"
  ours=$(t "$BIN" -q --registries "$W/registries.toml" --cache-dir "$W/cache" vendor "$W/app/app.toml" --into "$W/v")
  peer=$( { /usr/bin/time -f '%e' bash -c "skopeo copy --quiet --src-tls-verify=false 'docker://$addr/library/vendorbench@$digest' 'oci:$W/peer/oci' && pip download -q --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d '$W/peer/wheels' $WHEELS > '$W/peer.log' 2>&1"; } 2>&1 | tail -1)
  second=$("$BIN" --registries "$W/registries.toml" --cache-dir "$W/cache" vendor --json "$W/app/app.toml" --into "$W/v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bytesWritten"])')
  vbytes=$(du -sb --apparent-size "$W/v/blobs" | cut -f1)
  pbytes=$(du -sb --apparent-size "$W/peer" | cut -f1)
  echo "| $r | $ours | $peer | $second | $vbytes | $pbytes |"
done
"$BIN" vendor --check "$W/v"
echo "load after: $(cat /proc/loadavg)"
