#!/usr/bin/env bash
# --fast-math: exp and f32 division go through the approximate instructions;
# without it, no approximate instruction appears; f64 and erf stay accurate.
source "$(dirname "$0")/lib.bash"
: "${FILECHECK:?set FILECHECK to the FileCheck of LLVM 19}"
softmax=$(cd "$(dirname "$0")/../.." && pwd)/stdlib/softmax.tile

check 0 out ".entry" "$TILEC" "$softmax" -D BLOCK=4096 --emit=ptx --fast-math
cat > fast.check <<'CHK'
CHECK-LABEL: .entry softmax__T_f32__BLOCK_4096
CHECK: ex2.approx.ftz.f32
CHECK: div.full.ftz.f32
CHECK-NOT: div.rn.f32
CHK
"$FILECHECK" --input-file=stdout.txt fast.check || fail "FileCheck on the --fast-math PTX of softmax"
check 0 out ".entry" "$TILEC" "$softmax" -D BLOCK=4096 --emit=ptx
grep -qE "ex2.approx|lg2.approx|div.full|rcp.approx|tanh.approx" stdout.txt &&
  fail "without --fast-math the PTX uses an approximate instruction"
grep -qE "div.rn.f32|rcp.rn.f32" stdout.txt || fail "without --fast-math softmax divides (or takes its reciprocal) with div.rn.f32 or rcp.rn.f32"

# f64 math keeps its accurate sequence under --fast-math
cat > k64.tile <<'TILE'
kernel k64(x: ptr<f64>, y: ptr<f32>) {
    let i = arange(128);
    store(x + i, exp(load(x + i)) / 3.0);
    store(y + i, erf(load(y + i)) + tanh(load(y + i)));
}
TILE
check 0 out ".entry" "$TILEC" k64.tile --emit=ptx --fast-math
grep -q "div.rn.f64" stdout.txt || fail "--fast-math changed f64 division"
grep -q "tanh.approx.f32" stdout.txt || fail "--fast-math f32 tanh is not tanh.approx"
check 0 out "" "$TILEC" "$softmax" --emit=cubin --fast-math -o fast.cubin
[ -s fast.cubin ] || fail "--fast-math cubin not written"
finish
