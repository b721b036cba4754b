#!/usr/bin/env bash
# --remarks: names are checked (an unknown one is a usage error listing the
# valid ones), `all` turns every kind on, the commands share the option, and
# no remark is printed without it.  What each kind says: tests/passes/remarks-*.tile.
source "$(dirname "$0")/lib.bash"
k=$inputs/passorder.tile

check 2 err "tilec: error: --remarks: unknown remark 'pipe' (remarks: pipeline, warp_specialize, layout, dot, occupancy, schedule, all)" \
  "$TILEC" "$k" --remarks=pipe
check 2 err "unknown remark 'bogus'" "$TILEC" "$k" --remarks=dot,bogus
check 2 err "unknown remark ''" "$TILEC" "$k" --remarks=
check 0 out "layout                   every layout conversion" "$TILEC" --help

check 0 err "" "$TILEC" "$k" --arch=sm_90a --emit=ptx -o out.ptx
grep -q "remark:" stderr.txt && fail "remarks without --remarks"
check 0 err "remark: loop pipelined with 4 stages" "$TILEC" "$k" --arch=sm_90a --remarks=all --emit=ptx -o out.ptx
for kind in pipeline dot occupancy; do
  grep -q "remark: .* \[$kind\]$" stderr.txt || fail "--remarks=all printed no $kind remark"
done
check 0 err "passorder.tile:8:15: remark: dot " "$TILEC" "$k" --arch=sm_90a --remarks=dot,pipeline --emit=llvm -o out.ll
grep -q "\[occupancy\]" stderr.txt && fail "--remarks=dot,pipeline printed an occupancy remark"
# tilec run takes it too: the canonical passes only, so the pipeline is not in the IR it interprets
check 0 err "" "$TILEC" run "$k" --interp --remarks=all A=bf16[64,64] B=bf16[64,64] C=f32[64,64]
check 2 err "unknown remark 'x'" "$TILEC" run "$k" --interp --remarks=x A=bf16[64,64] B=bf16[64,64] C=f32[64,64]
finish
