#!/usr/bin/env bash
# The registry as a shared layer cache (issue 22), in one run: the seed-like stand-in (Debian
# bookworm's python3 from the Debian archive, numpy and pillow from a uv pylock, a 40-file app)
# on a base of more than 2 GB (a 2 GiB incompressible layer, as a CUDA base's libraries are,
# and a small /etc layer), served by docker-registry on 127.0.0.1 with its access log on.
# - machine A: an empty store, `build --cache-repo --push` with a local output (cold);
# - machine B: another empty store, the app changed, `build --cache-repo --push-only`.
# Measured: wall time, bytes the registry served (blob GETs, from its access log), bytes
# downloaded from the Debian archive and PyPI (the .debs and wheels in the store), bytes
# uploaded (the push and the cache entries).
#
# Usage: bench/cache-repo.sh   (needs docker-registry, python3-venv, network to the Debian
#                               archive and PyPI, ~8 GB of disk; builds --release)
#   REQS="torch==2.9.1" BASE_MIB=64 bench/cache-repo.sh: another Python stack (one
#   requirement per line) on another base size.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
cargo build --release -q
BIN=$ROOT/target/release/ocibuild
W=$ROOT/bench/.data/cache-repo
rm -rf "$W" && mkdir -p "$W/storage"
t() {
  local s e
  s=$(date +%s.%N)
  "$@" > "$W/last.json" 2> "$W/last.err" || { cat "$W/last.err" >&2; exit 1; }
  e=$(date +%s.%N)
  python3 -c "print(f'{$e - $s:.1f}')"
}

# --- the registry, with its access log (one line per request, with the bytes sent)
# shellcheck source=bench/registry-lib.sh
. "$ROOT/bench/registry-lib.sh"
start_registry "$W" accesslog
printf '[[registry]]\nname = "%s"\ninsecure-http = true\n' "$addr" > "$W/registries.toml"
# Bytes of blob GETs the registry served from line $1 of its log on.
served() {
  tail -n +"$1" "$W/registry.log" | python3 -c '
import re, sys
n = 0
for l in sys.stdin:
    m = re.search(r"\"GET /v2/[^ ]*/blobs/sha256:[0-9a-f]+ HTTP/[0-9.]+\" 200 (\d+)", l)
    if m:
        n += int(m.group(1))
print(n)'
}
lines() { wc -l < "$W/registry.log"; }

# --- the base: 2 GiB incompressible, and /etc
echo "== base: ${BASE_MIB:-2048} MiB layer" >&2
mkdir -p "$W/base/big/opt/standin" "$W/base/etc"
head -c $((${BASE_MIB:-2048} << 20)) /dev/urandom > "$W/base/big/opt/standin/libstandin.so.12"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$W/base/etc/passwd"
cat > "$W/base/base.toml" <<EOF
[image]
name = "localhost/bench/big-base"
tag = "1"
platform = "linux/amd64"
compression = "gzip"
compression-level = 1
[[layer]]
name = "big"
src = "big"
dest = "/"
[[layer]]
name = "etc"
src = "etc"
dest = "/etc"
EOF
OCIBUILD_CACHE=$W/cache-base "$BIN" -q --registries "$W/registries.toml" build "$W/base/base.toml" \
  --push-only --push "$addr/bench/base:1" > /dev/null
rm -rf "$W/cache-base" "$W/base/big"

# --- the project
P=$W/p
mkdir -p "$P/keys" "$P/app"
cp recipes/keys/debian-bookworm.asc "$P/keys/"
for i in $(seq 1 40); do echo "def f$i(): return $i" > "$P/app/m$i.py"; done
python3 -m venv "$W/venv" && "$W/venv/bin/pip" install -q uv
printf '%b\n' "${REQS:-numpy==2.2.6\npillow==11.2.1}" > "$P/req.in"
(cd "$P" && "$W/venv/bin/uv" pip compile req.in --format pylock.toml --python-version 3.11.2 \
  --python-platform x86_64-manylinux_2_36 -o pylock.toml --quiet)
sed -e 's#^tag = "3.11"#tag = "3.11"\nplatform = "linux/amd64"#' \
    -e 's#^version = "3.11"#version = "3.11"\nlock = "pylock.toml"#' \
    recipes/bookworm-python.toml | sed '/^\[\[test\]\]/,$d' > "$P/app.toml"
printf '\n[base]\nimage = "%s/bench/base:1"\n\n[[layer]]\nname = "app"\nsrc = "app"\ndest = "/app"\n' "$addr" >> "$P/app.toml"
OCIBUILD_CACHE=$W/cache-lock "$BIN" -q --registries "$W/registries.toml" lock "$P/app.toml" > /dev/null
rm -rf "$W/cache-lock"
ob() {
  env OCIBUILD_CACHE="$1" "$BIN" --registries "$W/registries.toml" build --locked --json \
    --cache-repo "$addr/bench/cache" "${@:2}" "$P/app.toml"
}
# Bytes of the .debs and wheels (downloaded from the Debian archive and PyPI) in store $1.
inputs() {
  python3 - "$1" "$P/app.lock" <<'PY'
import os, re, sys
store, lock = sys.argv[1], open(sys.argv[2]).read()
n = 0
for h in set(re.findall(r'sha256 = "sha256:([0-9a-f]{64})"', lock)):
    p = os.path.join(store, "blobs/sha256", h)
    if os.path.exists(p):
        n += os.path.getsize(p)
print(n)
PY
}
uploaded() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["push"]["uploadedBytes"] + d["cacheRepo"]["uploadedBytes"])' "$W/last.json"
}

echo "== measuring" >&2
l0=$(lines)
ta=$(t ob "$W/store-a" --push "$addr/bench/app:1" -o "$W/a.oci")
ga=$(served "$((l0 + 1))"); ia=$(inputs "$W/store-a"); ua=$(uploaded)
echo "# changed" >> "$P/app/m1.py"
l1=$(lines)
tb=$(t ob "$W/store-b" --push-only --push "$addr/bench/app:2")
gb=$(served "$((l1 + 1))"); ib=$(inputs "$W/store-b"); ub=$(uploaded)
echo
echo "base: $(python3 -c "import json,urllib.request; m=json.load(urllib.request.urlopen(urllib.request.Request('http://$addr/v2/bench/base/manifests/1', headers={'Accept':'application/vnd.oci.image.manifest.v1+json'}))); print(sum(l['size'] for l in m['layers']))") bytes compressed"
echo
echo "| machine | time, s | registry blob bytes served | .debs + wheels downloaded, bytes | bytes uploaded (push + cache) |"
echo "|---|---|---|---|---|"
echo "| A: cold, local output and --push | $ta | $ga | $ia | $ua |"
echo "| B: empty store, app changed, --push-only | $tb | $gb | $ib | $ub |"
echo
python3 -c "print(f'B / A time: {$tb / $ta:.3f}')"
