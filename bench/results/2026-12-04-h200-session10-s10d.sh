#!/bin/bash
# session 10, call D: the attention bench (fma softmax), the GPU suite parts 1 and 2, random programs
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
export PATH=$PWD/bin:$PATH
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
run() { local name=$1 lim=$2; shift 2; timeout $lim "$@" > $L/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 ))s"; [ $rc -ne 0 ] && tail -8 $L/$name.log; }
run bench_attention 150 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src --only attention --runs 20
CASE_JOBS=14 GPU_CHECK_PART=1 timeout 330 ./gpu-check > $L/gpu-check1.log 2>&1; echo "gpu-check part1 rc=$? $(( $(date +%s) - t0 ))s"
grep -E "^FAIL|gpu-check:|failed:" $L/gpu-check1.log | tail -20; grep -c "^PASS" $L/gpu-check1.log
CASE_JOBS=14 SANITIZE_JOBS=12 GPU_CHECK_PART=2 timeout 200 ./gpu-check > $L/gpu-check2.log 2>&1; echo "gpu-check part2 rc=$? $(( $(date +%s) - t0 ))s"
grep -E "^FAIL|gpu-check:|failed:" $L/gpu-check2.log | tail -20; grep -c "^PASS" $L/gpu-check2.log
left=$(( 580 - ($(date +%s) - t0) ))
if [ $left -gt 40 ]; then MODE=device SEEDS=31287:40001 BUDGET=$((left - 20)) OUT=$OUT/gen ./gen-run > $L/gen.log 2>&1; echo "gen rc=$? $(( $(date +%s) - t0 ))s"; tail -3 $L/gen.log; fi
echo done $(( $(date +%s) - t0 ))s
