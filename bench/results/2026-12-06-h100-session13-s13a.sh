#!/bin/bash
# session 13 call A: the staged (TMA page) decode kernel: correctness, then speed against the old kernel
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH; export PATH=$PWD/bin:$PATH
mkdir -p logs
echo "== decode.py"; timeout 200 python3 src/gpu/decode.py --tilec bin/tilec --lib lib/libtilert.so --root src > $OUT/decode-py.log 2>&1; echo "rc=$?"; tail -5 $OUT/decode-py.log
echo "== attention.py"; timeout 150 python3 src/gpu/attention.py --tilec bin/tilec --lib lib/libtilert.so --root src > $OUT/attention-py.log 2>&1; echo "rc=$?"; tail -4 $OUT/attention-py.log
echo "== cases"
grep -E '^(sanitize_decode|decode_|sanitize_kv|kv_append|gather_ahead)' src/gpu/cases.txt | while IFS='|' read -r name file args; do
  eval timeout 120 bin/tilec run src/$file $args --device --check > logs/case_$name.log 2>&1; echo "$? $name $(tail -1 logs/case_$name.log | cut -c1-150)"
done
bin/tilec src/../src/stdlib/decode.tile --kernel paged_attn_decode -arch sm_90a --emit=cubin -o /tmp/x.cubin -v 2>&1 | grep -E "registers|spill" | head -4
echo "== bench new"; timeout 150 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root src --only decode --runs 20 > $OUT/bench-new.log 2>&1; echo rc=$?; grep -E "paged_attn_decode" $OUT/bench-new.log | head -40
for v in old s16 s4; do echo "== bench $v"; timeout 120 python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --root var/$v --only decode --runs 15 > $OUT/bench-$v.log 2>&1; echo rc=$?; grep -E "vs SDPA CUDNN|FP8" $OUT/bench-$v.log | head -24; done
