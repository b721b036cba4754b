#!/bin/bash
# session 9, call C: 43960de — the attention bench, FP8, ws-bits, the attention cases, the suite's part 2
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
export PATH=$PWD/bin:$PATH
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
run() { local name=$1 lim=$2; shift 2; timeout $lim "$@" > $L/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 ))s"; [ $rc -ne 0 ] && tail -8 $L/$name.log; }
run bench_attention 120 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src --only attention --runs 20
run bench_attention_fp8 100 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src --only attention-fp8 --runs 20
run ws_bits 120 bash src/gpu/ws-bits.sh bin/tilec
grep -vE '^ *(#|$)' src/gpu/cases.txt | grep "stdlib/attention.tile" | while IFS='|' read -r name file args; do
  read -r name <<<"$name"; read -r file <<<"$file"
  printf '%s\0' "timeout 120 bin/tilec run src/$file $args --device --check > $L/case_$name.log 2>&1; echo \$? case_$name"
done | xargs -0 -P 12 -I{} bash -c '{}' | sort -k2 > $L/cases.txt
awk '{print $2, "rc=" $1}' $L/cases.txt | tr '\n' ' '; echo
run attention_py 200 python3 src/gpu/attention.py --tilec bin/tilec --lib lib/libtilert.so --root src
tail -3 $L/attention_py.log
left=$(( 560 - ($(date +%s) - t0) ))
CASE_JOBS=14 SANITIZE_JOBS=12 GPU_CHECK_PART=2 timeout $left ./gpu-check > $L/gpu-check2.log 2>&1; echo "gpu-check part2 rc=$? $(( $(date +%s) - t0 ))s"
grep -E "^FAIL|gpu-check:|failed:" $L/gpu-check2.log | tail -30; grep -c "^PASS" $L/gpu-check2.log
awk '$1==0{print $2}' $L/cases.txt | while read n; do rm -f $L/$n.log; done
echo done $(( $(date +%s) - t0 ))s
