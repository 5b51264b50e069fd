#!/usr/bin/env bash
# Several platforms (issue 21): a two-platform build (linux/amd64 + linux/arm64) of a seed-like
# stand-in against the single-platform build of the same recipe, in one run, alternating.
# The stand-in: Debian bookworm's python3 (+ ca-certificates, libstdc++6) from the Debian
# archive, numpy and pillow from one universal uv pylock (PyPI), and an app layer, on scratch
# (a CUDA base for both platforms is not reachable here: docker.io is not).
# Cold = an empty OCIBUILD_CACHE (every .deb and wheel downloaded again); warm-inputs = the
# downloads in the store but no layer cache (--no-cache): the build's own work.
#
# Usage: bench/platforms.sh [RUNS]   (needs python3-venv and network to the Debian archive
#                                    and PyPI; builds --release)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${1:-3}
cargo build --release -q
BIN=$ROOT/target/release/ocibuild
W=$ROOT/bench/.data/platforms
rm -rf "$W" && mkdir -p "$W/p/keys" "$W/p/app"
cp recipes/keys/debian-bookworm.asc "$W/p/keys/"
python3 -m venv "$W/venv" && "$W/venv/bin/pip" install -q uv
for i in $(seq 1 40); do echo "def f$i(): return $i" > "$W/p/app/m$i.py"; done
sed -e 's#^tag = "3.11"#tag = "3.11"\nplatforms = ["linux/amd64", "linux/arm64"]#' \
    -e 's#^version = "3.11"#version = "3.11"\nlock = "pylock.toml"#' \
    recipes/bookworm-python.toml | sed '/^\[\[test\]\]/,$d' > "$W/p/two.toml"
printf '\n[[layer]]\nname = "app"\nsrc = "app"\ndest = "/app"\n' >> "$W/p/two.toml"
printf 'numpy==2.2.6\npillow==11.2.1\n' > "$W/p/req.in"
(cd "$W/p" && "$W/venv/bin/uv" pip compile req.in --universal --format pylock.toml \
  --python-version 3.11.2 -o pylock.toml --quiet)
export OCIBUILD_CACHE=$W/cache
"$BIN" -q lock "$W/p/two.toml" > /dev/null
t() {
  local s e
  s=$(date +%s.%N)
  "$@" > "$W/last.log" 2>&1 || { cat "$W/last.log" >&2; exit 1; }
  e=$(date +%s.%N)
  python3 -c "print(f'{$e - $s:.2f}')"
}
one() { "$BIN" -q build --locked --platform linux/amd64 "$@" "$W/p/two.toml" -o "$W/one"; }
two() { "$BIN" -q build --locked "$@" "$W/p/two.toml" -o "$W/two"; }
echo "run kind single-platform two-platform ratio"
for r in $(seq 1 "$RUNS"); do
  rm -rf "$W/cache"; a=$(t one)
  rm -rf "$W/cache"; b=$(t two)
  echo "$r cold $a $b $(python3 -c "print(f'{$b / $a:.2f}')")"
  one > /dev/null; two > /dev/null
  a=$(t one --no-cache); b=$(t two --no-cache)
  echo "$r warm-inputs $a $b $(python3 -c "print(f'{$b / $a:.2f}')")"
done
