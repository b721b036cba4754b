#!/bin/bash
# session 15 call C (cp this file .gpu/s15c.sh; cd .gpu && bash s15c.sh): the MoE memory-bound rows
# (SwiGLU's 8 x 256 programs), varlen attention (checked, then vs SDPA cuDNN), the GPU suite's part 2
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH; export PATH=$PWD/bin:$PATH
nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)"
B="python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src"
echo "== attention.py"; timeout 120 python3 src/gpu/attention.py --tilec bin/tilec --lib lib/libtilert.so --root src > $OUT/attention.log 2>&1; echo rc=$?; grep -iE "fail|varlen|error" $OUT/attention.log | head -12; tail -2 $OUT/attention.log
echo "== varlen"; timeout 110 $B --only attention-varlen --runs 8 > $OUT/varlen.log 2>&1; echo rc=$?; grep -E "^\|" $OUT/varlen.log; grep -i "fail\|error\|Traceback" $OUT/varlen.log | head -5
echo "== moe"; timeout 120 $B --only moe --runs 10 > $OUT/moe.log 2>&1; echo rc=$?; grep -E "^\|" $OUT/moe.log; grep -i "fail\|error\|Traceback" $OUT/moe.log | head -5
echo "== part2"; CASE_JOBS=14 GPU_CHECK_PART=2 STRESS_SECONDS=10 timeout 150 ./gpu-check > $OUT/part2.log 2>&1; echo rc=$?; grep -iE "fail|passed|summary" $OUT/part2.log | tail -12
