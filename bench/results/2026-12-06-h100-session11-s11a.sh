#!/usr/bin/env bash
# session 11 call A: decode bench (bf16, FA2, gather, FP8), the split/occupancy sweep on the stdlib
# kernel and on the kv1 variant, and an ncu profile of one decode launch
cd "$(dirname "$0")"
B="python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $OUT/gpu.txt 2>&1
timeout 150 $B --root src --only decode --runs 20 > $OUT/decode.log 2>&1
timeout 150 $B --root src --only decode-sweep --runs 15 > $OUT/sweep.log 2>&1
timeout 120 $B --root var/kv1 --only decode-sweep --runs 15 > $OUT/sweep-kv1.log 2>&1
timeout 100 ncu --clock-control none --kernel-name-base demangled -k regex:paged_attn_decode -c 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
  --section LaunchStats $B --root src --only decode --runs 1 --warmup 0 > $OUT/ncu.log 2>&1
echo done
