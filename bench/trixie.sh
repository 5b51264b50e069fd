#!/usr/bin/env bash
# Debian 13 against Debian 12 (issue 35, must-show 3): a cold build (empty cache: InRelease,
# Packages, every .deb downloaded, the layers written) of recipes/trixie-python.toml against
# recipes/bookworm-python.toml, alternating, in the same run; and the peak RSS of `lock` of a
# trixie recipe with main + contrib + non-free (recipes/cuda-trixie.toml's sources: the
# Packages indices of three components, ~70 MB of text uncompressed).
#
#   bench/trixie.sh [BINARY] [ROUNDS]        default target/release/ocibuild, 3 rounds
#
# Needs the Debian archive and PyPI. Each run gets a fresh copy of recipes/ and an empty
# OCIBUILD_CACHE; the recipes' locks are used as they are (`build --locked`), and `lock` runs on
# a copy without its lock.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$(readlink -f "${1:-$repo/target/release/ocibuild}")
rounds=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

timed() { # NAME CMD...: wall seconds and peak RSS (kB) of one command
    local name=$1
    shift
    local rc=0
    /usr/bin/time -f '%e %M' -o "$work/$name.time" "$@" >"$work/$name.out" 2>&1 || rc=$?
    read -r wall rss <"$work/$name.time"
    printf '%-28s rc=%s %8s s %8s kB\n' "$name" "$rc" "$wall" "$rss"
    [[ $rc == 0 ]] || { tail -5 "$work/$name.out"; return 1; }
}

echo "load: $(cat /proc/loadavg)  binary: $("$bin" --version)"
for r in $(seq "$rounds"); do
    for distro in bookworm trixie; do
        d=$work/$distro-$r
        cp -r "$repo/recipes" "$d"
        OCIBUILD_CACHE=$d/cache timed "build-$distro-$r" \
            "$bin" build --locked "$d/$distro-python.toml" -o "$d/out"
        rm -rf "$d"
    done
done
d=$work/lock
cp -r "$repo/recipes" "$d"
rm -f "$d/cuda-trixie.lock"
OCIBUILD_CACHE=$d/cache timed "lock-trixie-main-contrib-nonfree" "$bin" lock "$d/cuda-trixie.toml"
echo "load: $(cat /proc/loadavg)"
