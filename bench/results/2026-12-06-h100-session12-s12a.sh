#!/usr/bin/env bash
# session 12 call A: decode with the block table read two blocks ahead (src, a variant not
# kept) against the session-11 kernel (var/old = stdlib/decode.tile at 71fef7d), an ncu
# source-level profile of the variant, fp8_gemm 128x256x128
cd "$(dirname "$0")"
B="python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $OUT/gpu.txt 2>&1
timeout 100 $B --root src --only decode --runs 20 > $OUT/decode.log 2>&1
timeout 100 $B --root var/old --only decode --runs 20 > $OUT/decode-old.log 2>&1
timeout 150 python3 bench/gemm.py --tilec bin/tilec --lib lib/libtilert.so --root src --only fp8 \
  --shapes 4096x4096x4096,8192x8192x8192 --tiles fp8=128x256x128 --iters 20 --no-plan > $OUT/fp8.log 2>&1
timeout 120 ncu --clock-control none --kernel-name-base demangled -k regex:paged_attn_decode -c 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section SourceCounters \
  --section MemoryWorkloadAnalysis -o $OUT/dec --import-source no \
  $B --root src --only decode --runs 1 --warmup 0 > $OUT/ncu.log 2>&1
ncu -i $OUT/dec.ncu-rep --print-details all > $OUT/ncu-details.txt 2>&1
ncu -i $OUT/dec.ncu-rep --page source --csv --print-source sass > $OUT/ncu-sass.csv 2>&1
echo done
