#!/usr/bin/env bash
# gpu-bundle.sh: builds what the GPU suite needs here and stages it in .gpu/ (ignored
# by git) for one device call (../shared/DEVICE.md):
#   run(command="cd .gpu && ./gpu-check 2>&1 | tee $OUT/log", carry=[".gpu"])
# Contents: tilec linked statically against LLVM (runs on the GPU machine without
# LLVM installed), libtilert and the GPU test programs, libcmocka.so.0, the cubins of
# every example and stdlib kernel, the test inputs, python/ (the tilec package), bench/ (bench.py and gemm.py, the GEMM bench
# of issue 4, which compiles its own per-shape specializations there with bin/tilec), and gpu-check.
# Random programs at scale (tests/gen/gen-run.sh, staged as gen-run; see there):
#   run(command="cd .gpu && MODE=device SEEDS=10001:20001 OUT=$OUT ./gen-run 2>&1 | tail -c 4000", carry=[".gpu"])
# The GEMM bench alone, its table under $OUT:
#   run(command="cd .gpu && OUT=$OUT GPU_CHECK_BENCH_ONLY=1 BENCH_GEMM=1 ./gpu-check 2>&1 | tail -c 11000",
#       carry=[".gpu"])
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-gpu}
stage=${STAGE:-$root/.gpu}   # STAGE=DIR stages elsewhere (another session may use .gpu/)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTILEC_LLVM_STATIC=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/cubin" "$stage/src"
cp "$build/tools/tilec" "$stage/bin/"
strip "$stage/bin/tilec"
find "$build/tests" "$build/examples" -maxdepth 2 -type f -perm -u+x \
  \( -name 'gpu_*' -o -name 'example_*' \) -exec cp {} "$stage/bin/" \; 2>/dev/null || true
cp -L /usr/lib/x86_64-linux-gnu/libcmocka.so.0 "$stage/lib/"
# sources the suite compiles on the device machine (tilec run --device --check)
cp -r "$root/examples" "$root/stdlib" "$stage/src/"
cp -r "$root/tests/gpu" "$stage/src/gpu"
cp "$root/tests/interp/builtins.tile" "$stage/src/gpu/builtins.tile"
mkdir -p "$stage/src/driver" && cp -r "$root/tests/driver/inputs" "$stage/src/driver/inputs"
# the Python package (bench/*.py and src/gpu/test_python_torch.py import it from here)
cp -r "$root/python" "$stage/python"
cp -L "$build"/runtime/libtilert.so* "$stage/lib/"
[ -d "$root/bench" ] && cp -r "$root/bench" "$stage/"
[ -f "$stage/bench/gemm.py" ] || { echo "gpu-bundle.sh: bench/gemm.py missing from the bundle" >&2; exit 1; }
for f in "$root"/examples/*.tile "$root"/stdlib/*.tile; do
  "$build/tools/tilec" "$f" --emit=cubin -o "$stage/cubin/$(basename "${f%.tile}").cubin"
done
cp "$root/tests/gpu/gpu-check" "$stage/gpu-check"
# random programs (tests/gen): the GPU suite's batch, and gen-run for 10,000 at a time
mkdir -p "$stage/src/gen" && cp "$root"/tests/gen/*.py "$stage/src/gen/"
cp "$root/tests/gen/gen-run.sh" "$stage/gen-run"
size=$(du -sb "$stage" | cut -f1)
if [ "$size" -gt $((64 << 20)) ]; then
  echo "gpu-bundle.sh: $stage is $size bytes, more than the 64 MiB a device call carries" >&2
  exit 1
fi
du -sh "$stage"
