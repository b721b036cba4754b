#!/usr/bin/env bash
# fuzz-bundle.sh: builds both fuzz targets (fuzz_frontend, fuzz_backend: libFuzzer, ASan+UBSan,
# TILEC_FUZZ=ON with clang-19) with LLVM linked statically (TILEC_LLVM_STATIC=ON), so they run on
# the GPU machine, where no LLVM is installed, and stages them in .fuzz/ (ignored by git) for one
# device call (../shared/DEVICE.md):
#   run(command="cd .fuzz && JOBS=16 TIME=480 OUT=$OUT ./fuzz-run 2>&1 | tail -c 4000", carry=[".fuzz"])
# Contents: bin/fuzz_*.gz (the binaries, gzip'ed: fuzz_backend is about 50 MB with its symbols),
# seeds/ (tests/fuzz/corpus, examples/*.tile, stdlib/*.tile and SEED_PROGRAMS random programs of
# tests/gen/tilegen.py, seeds 1..SEED_PROGRAMS, default 0: each costs fuzz_backend seconds), tile.dict, and fuzz-run
# (scripts/fuzz-run.sh: the parallel runner; it writes the executions, findings and logs under $OUT).
# Try it here first:  JOBS=2 TIME=15 OUT=/tmp/fz .fuzz/fuzz-run
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-fuzz}
stage=${STAGE:-$root/.fuzz}
nseeds=${SEED_PROGRAMS:-0}
cc=${CC:-clang-19}
command -v "$cc" >/dev/null || { echo "fuzz-bundle.sh: $cc not found (sudo apt-get install -y clang-19 libclang-rt-19-dev)" >&2; exit 1; }
CC=$cc cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTILEC_FUZZ=ON -DTILEC_LLVM_STATIC=ON \
  -DTILEC_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_frontend fuzz_backend
for t in fuzz_frontend fuzz_backend; do
  if ldd "$build/tests/fuzz/$t" | grep -q 'libLLVM'; then
    echo "fuzz-bundle.sh: $t links libLLVM dynamically; it would not run on the GPU machine" >&2
    exit 1
  fi
done
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/seeds"
for t in fuzz_frontend fuzz_backend; do gzip -6 -c "$build/tests/fuzz/$t" > "$stage/bin/$t.gz"; done
cp "$root"/tests/fuzz/corpus/* "$stage/seeds/"
for f in "$root"/examples/*.tile "$root"/stdlib/*.tile; do
  cp "$f" "$stage/seeds/$(basename "$(dirname "$f")")-$(basename "$f")"
done
for ((s = 1; s <= nseeds; s++)); do python3 "$root/tests/gen/tilegen.py" "$s" -o "$stage/seeds/gen-$s.tile" >/dev/null; done
cp "$root/tests/fuzz/tile.dict" "$stage/tile.dict"
cp "$root/scripts/fuzz-run.sh" "$stage/fuzz-run"
chmod +x "$stage/fuzz-run"
size=$(du -sb "$stage" | cut -f1)
du -sh "$stage"
if [ "$size" -gt $((64 << 20)) ]; then
  echo "fuzz-bundle.sh: $stage is $size bytes, more than the 64 MiB a device call carries" >&2
  exit 1
fi
