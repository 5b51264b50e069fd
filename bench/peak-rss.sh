#!/usr/bin/env bash
# Peak RSS (/usr/bin/time -v, "Maximum resident set size") of each command on the repo's
# Debian recipes, for one or more ocibuild binaries in the same run (issue 16, "Memory").
#
#   bench/peak-rss.sh LABEL=BINARY [LABEL=BINARY ...]
#   e.g. bench/peak-rss.sh main=/tmp/ocibuild-main branch=target/release/ocibuild
#
# Needs the Debian archive (and PyPI for the small recipe's wheels). Each binary gets its own
# copy of recipes/ and an empty cache (OCIBUILD_CACHE) under a temporary directory; the
# recipes' locks are not touched. Each binary is copied first, so all are alike in the page
# cache: a binary written a moment ago maps in larger pages and shows ~2 MB more RSS on a
# command that does nothing.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rss() { # NAME CMD...: one line, peak RSS in kB and wall time
    local name=$1
    shift
    local rc=0
    /usr/bin/time -v "$@" >"$name.out" 2>"$name.err" || rc=$?
    printf '%-22s rc=%s %8s kB %8s\n' "$name" "$rc" \
        "$(awk '/Maximum resident/ {print $NF}' "$name.err")" \
        "$(awk '/Elapsed/ {print $NF}' "$name.err")"
}

for spec in "$@"; do
    label=${spec%%=*}
    mkdir -p "$work/$label"
    cp "${spec#*=}" "$work/$label/ocibuild"
done

echo "load: $(cat /proc/loadavg)"
for spec in "$@"; do
    label=${spec%%=*}
    dir=$work/$label
    bin=$dir/ocibuild
    cp -r "$repo/recipes" "$dir/"
    cd "$dir"
    export OCIBUILD_CACHE=$dir/cache
    r=recipes/bookworm-python.toml
    echo "## $label ($r, then recipes/python-cuda-images-small.toml)"
    rss lock "$bin" lock $r --update
    cmp -s recipes/bookworm-python.lock "$repo/recipes/bookworm-python.lock" &&
        echo "  lock: byte-identical to the committed one" || echo "  lock: DIFFERS from the committed one"
    cp recipes/bookworm-python.lock "$work/$label.lock"
    rss build-cold "$bin" build $r -o a.oci
    rss build-warm "$bin" build $r -o b.oci
    SOURCE_DATE_EPOCH=1700000000 rss build-other-epoch "$bin" build $r -o c.oci
    rss vendor "$bin" vendor $r --into vend
    rss vendor-check "$bin" vendor --check vend
    rss verify "$bin" verify $r --against oci:a.oci
    rss diff "$bin" diff a.oci c.oci
    rss diff-semantic "$bin" diff --semantic a.oci c.oci
    rss diff-identical "$bin" diff a.oci b.oci
    rss sbom-spdx "$bin" sbom $r --image oci:a.oci -o sbom.json
    rss sbom-cyclonedx "$bin" sbom $r --image oci:a.oci --format cyclonedx -o cdx.json
    rm recipes/bookworm-python.lock
    rss build-resolving "$bin" build $r -o d.oci
    s=recipes/python-cuda-images-small.toml
    rss small-lock "$bin" lock $s --update
    rss small-build-cold "$bin" build $s -o s.oci
    rss small-build-warm "$bin" build $s -o s2.oci
    rss small-vendor "$bin" vendor $s --into vend-small
    rss small-verify "$bin" verify $s --against oci:s.oci
    rss small-sbom "$bin" sbom $s --image oci:s.oci -o small-sbom.json
done
first=${1%%=*}
for spec in "$@"; do
    label=${spec%%=*}
    cmp -s "$work/$first.lock" "$work/$label.lock" &&
        echo "lock of $label: byte-identical to $first's" || echo "lock of $label: DIFFERS from $first's"
done
