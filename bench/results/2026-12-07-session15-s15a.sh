#!/bin/bash
# session 15 call A (run from .gpu: cp this file .gpu/s15a.sh; cd .gpu && bash s15a.sh): the MoE
# memory-bound rows (SwiGLU's 8 x 256 programs), the grouped GEMMs vs torch._grouped_mm, varlen vs SDPA
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH; export PATH=$PWD/bin:$PATH
nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)"
B="python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src"
echo "== moe"; timeout 150 $B --only moe --runs 10 > $OUT/moe.log 2>&1; echo rc=$?; grep -E "^\|" $OUT/moe.log; grep -i "fail\|error\|Traceback" $OUT/moe.log | head -5
echo "== moe-gemm"; timeout 260 $B --only moe-gemm --runs 10 > $OUT/moe-gemm.log 2>&1; echo rc=$?; grep -E "^\|" $OUT/moe-gemm.log; grep -i "fail\|error\|Traceback" $OUT/moe-gemm.log | head -5
echo "== varlen"; timeout 90 $B --only attention-varlen --runs 8 > $OUT/varlen.log 2>&1; echo rc=$?; grep -E "^\|" $OUT/varlen.log
