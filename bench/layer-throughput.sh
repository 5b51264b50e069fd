#!/usr/bin/env bash
# Hand-run throughput comparison of write_layer against tar | pigz and tar | zstd.
# Usage: bench/layer-throughput.sh [DATA_DIR] (default: a generated ~300 MB mixed tree in /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/tmp/ocibuild-layer-bench}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

if [ ! -d "$DATA" ]; then
  echo "generating ~300 MB of mixed data in $DATA"
  mkdir -p "$DATA"
  # ~150 MB of incompressible random files, ~150 MB of text-like files (source-ish, logs).
  for i in $(seq 1 30); do head -c 5000000 /dev/urandom > "$DATA/random-$i.bin"; done
  mkdir -p "$DATA/src"
  python3 - "$DATA/src" <<'PY'
import os, random, sys
random.seed(42)
words = [w.strip() for w in open("/usr/share/dict/words")] if os.path.exists("/usr/share/dict/words") else \
    ["alpha", "beta", "gamma", "delta", "import", "def", "return", "self", "value", "layer", "tar", "digest",
     "config", "error", "for", "in", "range", "print", "class", "None", "True", "False", "lambda", "yield"]
total = 0
n = 0
while total < 150_000_000:
    d = os.path.join(sys.argv[1], f"pkg{n % 50}", f"mod{n % 7}")
    os.makedirs(d, exist_ok=True)
    size = random.choice([2_000, 20_000, 200_000, 2_000_000])
    lines = []
    got = 0
    while got < size:
        line = "    " * random.randint(0, 3) + " ".join(random.choices(words, k=random.randint(3, 12))) + f" = {random.randint(0, 99999)}\n"
        lines.append(line)
        got += len(line)
    with open(os.path.join(d, f"file{n}.py"), "w") as f:
        f.write("".join(lines))
    total += got
    n += 1
PY
fi
du -sh "$DATA"

cargo build --release --example layer_bench -q
BIN=target/release/examples/layer_bench
# Warm the page cache so every contender reads from memory.
tar -cf - -C "$DATA" . > /dev/null

t() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$(echo "$e - $s" | bc)"; }

echo "--- gzip (2 threads)"
T=$(t sh -c "tar --sort=name -cf - -C '$DATA' . | pigz -p2 -6 > '$OUT/pigz.tgz'")
echo "pigz -p2 -6: ${T}s, $(stat -c %s "$OUT/pigz.tgz") bytes"
T=$(t "$BIN" "$DATA" gzip 2 "$OUT/ours.tgz")
echo "write_layer gzip threads=2: ${T}s, $(stat -c %s "$OUT/ours.tgz") bytes"
gzip -t "$OUT/ours.tgz"

echo "--- zstd"
T=$(t sh -c "tar --sort=name -cf - -C '$DATA' . | zstd -q -T0 -3 > '$OUT/zstd.tzst'")
echo "zstd -T0 -3: ${T}s, $(stat -c %s "$OUT/zstd.tzst") bytes"
T=$(t "$BIN" "$DATA" zstd "$(nproc)" "$OUT/ours.tzst")
echo "write_layer zstd threads=$(nproc): ${T}s, $(stat -c %s "$OUT/ours.tzst") bytes"
zstd -q -t "$OUT/ours.tzst"

echo "--- uncompressed"
T=$(t sh -c "tar --sort=name -cf - -C '$DATA' . > '$OUT/plain.tar'")
echo "tar: ${T}s"
T=$(t "$BIN" "$DATA" none 1 "$OUT/ours.tar")
echo "write_layer none: ${T}s"
