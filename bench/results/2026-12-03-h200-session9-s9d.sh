#!/bin/bash
# session 9, call D: the GEMMs with their _ws rows (setmaxnreg kept), FP8 attention specialized (probe), decode
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
run() { local name=$1 lim=$2; shift 2; timeout $lim "$@" > $L/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 ))s"; [ $rc -ne 0 ] && tail -8 $L/$name.log; }
for v in fp8ws fp8ws128; do
  run bench_$v 100 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root var/$v --only attention-fp8 --runs 15
done
run bench_decode 100 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src --only decode --runs 20
run gemm_ws 330 python3 bench/gemm.py --tilec bin/tilec --lib lib/libtilert.so --root src --ws --iters 20 --out $OUT/gemm-ws.md
echo done $(( $(date +%s) - t0 ))s
