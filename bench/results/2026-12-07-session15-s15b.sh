#!/bin/bash
# session 15 call B (cp this file .gpu/s15b.sh; cd .gpu && bash s15b.sh): the GPU suite, both parts
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH; export PATH=$PWD/bin:$PATH
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== part1"; CASE_JOBS=14 GPU_CHECK_PART=1 STRESS_SECONDS=20 timeout 420 ./gpu-check > $OUT/part1.log 2>&1; echo rc=$?; grep -iE "fail|passed|summary" $OUT/part1.log | tail -12
echo "== part2"; CASE_JOBS=14 GPU_CHECK_PART=2 STRESS_SECONDS=20 timeout 150 ./gpu-check > $OUT/part2.log 2>&1; echo rc=$?; grep -iE "fail|passed|summary" $OUT/part2.log | tail -12
