#!/bin/bash
# session 14 call B: grouped GEMMs vs torch._grouped_mm; GPU suite part 1; varlen vs SDPA; SwiGLU lab
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH; export PATH=$PWD/bin:$PATH
nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)"
echo "== moe-gemm"; timeout 170 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src --only moe-gemm --runs 10 > $OUT/moe-gemm.log 2>&1; echo rc=$?; grep -E "^\|" $OUT/moe-gemm.log; grep -i "fail\|error\|Traceback" $OUT/moe-gemm.log | head -5
echo "== part1"; CASE_JOBS=14 GPU_CHECK_PART=1 STRESS_SECONDS=10 timeout 230 ./gpu-check > $OUT/part1.log 2>&1; echo rc=$?; grep -iE "fail|passed|summary" $OUT/part1.log | tail -8
echo "== varlen"; timeout 70 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src --only attention-varlen --runs 8 > $OUT/varlen.log 2>&1; echo rc=$?; grep -E "^\|" $OUT/varlen.log
echo "== swlab"; timeout 80 python3 swlab.py > $OUT/swlab.log 2>&1; echo rc=$?; grep -E "^swiglu" $OUT/swlab.log
