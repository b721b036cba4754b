#!/usr/bin/env bash
# fp8 promotion and integer fma follow lang/SEMANTICS.md in the IR and in the interpreter
# at -O0 and -O3.  Inputs: a = 0.0625 (e4m3 0x18), h = 2048 (f16), i = 100, b = 3 (e5m2 0x42).
source "$(dirname "$0")/lib.bash"
src=$inputs/promotion.tile
cat > mk.tile <<'T'
kernel mk(a: ptr<f8e4m3>, h: ptr<f16>, i: ptr<i32>, b: ptr<f8e5m2>) grid(1) {
    store(a, 0.0625);
    store(h, 2048.0);
    store(i, 100);
    store(b, 3.0);
}
T
# make the inputs in the interpreter
check 0 out "" "$TILEC" run mk.tile --kernel mk --interp a=f8e4m3[1] h=f16[1] i=i32[1] b=f8e5m2[1] \
  --out a=a.npy --out h=h.npy --out i=i.npy --out b=b.npy
"$TILEC" "$src" --emit=ir -O0 > ir.txt || fail "--emit=ir"
grep -q "add .* : f16" ir.txt && fail "an fp8 + f16 add is computed in f16"
grep -q "cast %[0-9]* : f8e4m3" ir.txt && fail "a value is cast to f8e4m3"
grep -q "fma .* : f32" ir.txt || fail "fma(x, y, n) is not computed in f32"
for o in -O0 -O3; do
  "$TILEC" run "$src" --kernel k --interp $o a=a.npy h=h.npy i=i.npy b=b.npy o=f32[1] > out.txt 2>err.txt \
    || { fail "run $o"; cat err.txt; }
  for want in "add: 2048.0625" "where: 100" "fma: 3366" "fmaf: 228" "max: 100" "min: 0.0625" \
              "mixed: 0.1875" "cmp: 1" "same: 0.0625"; do
    grep -q -- "$want$" out.txt || fail "$o: the output lacks '$want': $(tr '\n' ' ' < out.txt)"
  done
done
finish
