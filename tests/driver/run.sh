#!/usr/bin/env bash
# tilec run --interp: results checked against float64 references by mknpy.
source "$(dirname "$0")/lib.bash"
vadd=$inputs/vadd.tile
kernels=$inputs/kernels.tile

# vadd on files, a ragged size (3000 = 11.7 blocks of 256); out starts as random data
"$MKNPY" rand x.npy f32 3000 11 && "$MKNPY" rand y.npy f32 3000 12 || fail "mknpy rand"
check 0 out "" "$TILEC" run "$vadd" --kernel vadd -D BLOCK=256 --interp x=x.npy y=y.npy out=f32[3000] n=3000 \
  --out out=o.npy
check 0 out "ok: 3000 elements" "$MKNPY" check add o.npy x.npy y.npy
# the same through a .tir, with the grid given, and the kernel left implicit
check 0 out "" "$TILEC" "$vadd" -D BLOCK=256 -o vadd.tir
check 0 out "" "$TILEC" run vadd.tir --interp x=x.npy y=y.npy out=f32[3000] n=3000 --grid 12 --out out=o2.npy
check 0 out "" "$MKNPY" check copy o2.npy o.npy
# random inputs, written back as they came; the seed makes them repeatable
check 0 out "" "$TILEC" run "$vadd" --kernel vadd --interp x=f32[5000] y=f32[5000] out=f32[5000] n=5000 \
  --out x=rx.npy --out y=ry.npy --out out=ro.npy
check 0 out "ok: 5000 elements" "$MKNPY" check add ro.npy rx.npy ry.npy
check 0 out "" "$TILEC" run "$vadd" --interp n=5000 y=f32[5000] out=f32[5000] x=f32[5000] --out x=rx2.npy
check 0 out "" "$MKNPY" check copy rx2.npy rx.npy
check 0 out "" "$TILEC" run "$vadd" --interp n=5000 y=f32[5000] out=f32[5000] x=f32[5000] --seed 7 --out x=rx3.npy
"$MKNPY" check copy rx3.npy rx.npy 2>/dev/null && fail "--seed 7 gave the same data as the default seed"
# a grid smaller than the data leaves the rest of out as it was
check 0 out "" "$TILEC" run "$vadd" -D BLOCK=256 --interp x=x.npy y=y.npy out=x.npy n=3000 --grid 2 --out out=part.npy
"$MKNPY" check add part.npy x.npy y.npy 2>/dev/null && fail "--grid 2 computed every block"
# -v shows the bindings and the grid
check 0 err "tilec: grid (12, 1, 1)" "$TILEC" run "$vadd" -v -D BLOCK=256 --interp x=x.npy y=y.npy out=f32[3000] n=3000

# tensor<f32, 2> from a 5x12 array (BLOCK 16 > 12 columns) and an f32 scalar
"$MKNPY" rand m.npy f32 5,12 3 || fail "mknpy rand"
check 0 out "" "$TILEC" run "$kernels" --kernel scale_rows --interp x=m.npy y=f32[5,12] a=2.5 --out y=my.npy
check 0 out "ok: 60 elements" "$MKNPY" check scale my.npy m.npy 2.5
# f16 as <f2 and as its bits in <u2: the output keeps the dtype it came in, bit-exact
"$MKNPY" rand h.npy f16 100 5 && "$MKNPY" rand hb.npy u16 100 6 || fail "mknpy rand"
check 0 out "" "$TILEC" run "$kernels" --kernel copy_half --interp x=h.npy out=f16[100] n=100 --out out=ho.npy
check 0 out "" "$MKNPY" check copy ho.npy h.npy
check 0 out "" "$TILEC" run "$kernels" --kernel copy_half --interp x=hb.npy out=hb.npy n=100 --out out=hbo.npy
check 0 out "" "$MKNPY" check copy hbo.npy hb.npy
# bf16 as <u2, f8e4m3 and f8e5m2 as |u1 (every bit pattern, NaNs included), i1 as |b1: bit-exact
copy=$inputs/copy.tile
"$MKNPY" rand u8.npy u8 256 7 && "$MKNPY" rand u16.npy u16 1000 8 || fail "mknpy rand"
for t in f8e4m3 f8e5m2; do
  check 0 out "" "$TILEC" run "$copy" -D T=$t --interp x=u8.npy out=u8.npy n=256 --out out=o_$t.npy
  check 0 out "" "$MKNPY" check copy o_$t.npy u8.npy
  check 0 out "" "$TILEC" run "$copy" -D T=$t --interp x=$t[100] out=$t[100] n=100 --out x=rx_$t.npy --out out=ro_$t.npy
  check 0 out "" "$MKNPY" check copy ro_$t.npy rx_$t.npy
done
check 0 out "" "$TILEC" run "$copy" -D T=bf16 --interp x=u16.npy out=bf16[1000] n=1000 --out out=o_bf16.npy
check 0 out "" "$MKNPY" check copy o_bf16.npy u16.npy
check 0 out "" "$TILEC" run "$copy" -D T=i1 --interp x=i1[100] out=i1[100] n=100 --out x=rx_i1.npy --out out=ro_i1.npy
check 0 out "" "$MKNPY" check copy ro_i1.npy rx_i1.npy
check 1 err "argument 'x' is ptr<bf16>, but 'h.npy' holds f16 (<f2); expected <u2" \
  "$TILEC" run "$copy" -D T=bf16 --interp x=h.npy out=u16.npy n=100
check 1 err "argument 'x' is ptr<f8e4m3>, but 'u16.npy' holds u16 (<u2); expected |u1" \
  "$TILEC" run "$copy" -D T=f8e4m3 --interp x=u16.npy out=u8.npy n=100
# a kernel without grid(...) runs with --grid
check 0 out "" "$TILEC" run "$kernels" --kernel fill_nogrid --interp out=i32[16] v=-5 --grid 2 --out out=f.npy
check 0 out "ok: 16 elements" "$MKNPY" check iota f.npy -5
finish
