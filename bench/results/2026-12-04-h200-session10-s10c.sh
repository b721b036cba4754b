#!/bin/bash
# session 10, call C: rotated + ping-pong + paired casts — the attention cases, benches (attention, fp8, gemm ws), attention.py
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
export PATH=$PWD/bin:$PATH
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
run() { local name=$1 lim=$2; shift 2; timeout $lim "$@" > $L/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 ))s"; [ $rc -ne 0 ] && tail -8 $L/$name.log; }
grep -vE '^ *(#|$)' src/gpu/cases.txt | grep -E "stdlib/attention.tile|uitofp|cast_pairs" | while IFS='|' read -r name file args; do
  read -r name <<<"$name"; read -r file <<<"$file"
  printf '%s\0' "timeout 150 bin/tilec run src/$file $args --device --check > $L/case_$name.log 2>&1; echo \$? case_$name"
done | xargs -0 -P 12 -I{} bash -c '{}' | sort -k2 > $L/cases.txt
run bench_attention 150 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src --only attention --runs 20
run bench_attention_fp8 150 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src --only attention-fp8 --runs 20
run gemm_ws 200 python3 bench/gemm.py --tilec bin/tilec --lib lib/libtilert.so --root src --ws --iters 20 --shapes 4096x4096x4096,128x7168x2048,4096x2112x7168,4096x7168x16384 --out $OUT/gemm-ws.md
run attention_py 300 python3 src/gpu/attention.py --tilec bin/tilec --lib lib/libtilert.so --root src
