#!/usr/bin/env bash
# session 12 call B: decode with two blocks an iteration (src) against the session-11 kernel
# (var/old): correctness (decode.py float64 reference, the decode cases), bench, SASS
cd "$(dirname "$0")"
B="python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so"
timeout 150 python3 src/gpu/decode.py --tilec bin/tilec --lib lib/libtilert.so --root src > $OUT/decode_f64.log 2>&1; echo "decode_f64 rc=$?"
grep -E 'decode|kv_append' src/gpu/cases.txt | grep -v '^#' | while IFS='|' read -r name file args; do
  read -r name <<<"$name"; read -r file <<<"$file"
  printf '%s\0' "bin/tilec run src/$file $args --device --check >$OUT/case_$name.log 2>&1; echo \$? $name"
done | xargs -0 -P 8 -I{} bash -c '{}' | sort -k2 | tr '\n' ' '; echo
timeout 100 $B --root src --only decode --runs 20 > $OUT/decode.log 2>&1
timeout 100 $B --root var/old --only decode --runs 20 > $OUT/decode-old.log 2>&1
bin/tilec src/stdlib/decode.tile --kernel paged_attn_decode --emit=cubin -o /tmp/d.cubin && nvdisasm -c /tmp/d.cubin > $OUT/dec.sass 2>&1
echo done
