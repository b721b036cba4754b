#!/usr/bin/env bash
# Every mismatch of `tilec run` is one clear error and exit status 1.
source "$(dirname "$0")/lib.bash"
vadd=$inputs/vadd.tile
kernels=$inputs/kernels.tile
run() { "$TILEC" run "$@"; }

"$MKNPY" rand x.npy f32 64 1 && "$MKNPY" rand i.npy i32 64 2 && "$MKNPY" rand m.npy f32 4,8 3 \
  && "$MKNPY" rand v.npy f32 32 4 || fail "mknpy rand"
ok_args=(x=x.npy y=x.npy out=f32[64])

check 1 err "kernel 'vadd' has no parameter 'z'" run "$vadd" --interp "${ok_args[@]}" n=64 z=1
grep -qF "note: kernel 'vadd' takes (x: ptr<f32>, y: ptr<f32>, out: ptr<f32>, n: i32)" stderr.txt \
  || fail "the parameters are not listed"
check 1 err "kernel 'vadd' needs an argument for: n" run "$vadd" --interp "${ok_args[@]}"
check 1 err "needs an argument for: x, y, out, n" run "$vadd" --interp
check 1 err "argument 'x' is bound twice ('x=x.npy' and 'x=v.npy')" run "$vadd" --interp "${ok_args[@]}" n=64 x=v.npy
check 1 err "argument 'x' is ptr<f32>, but 'i.npy' holds i32 (<i4); expected <f4" \
  run "$vadd" --interp x=i.npy y=x.npy out=f32[64] n=64
check 1 err "argument 'x' is tensor<f32, 2>, but 'v.npy' has rank 1" \
  run "$kernels" --kernel scale_rows --interp x=v.npy y=m.npy a=1
check 1 err "argument 'x': cannot read 'nope.npy': No such file or directory" \
  run "$vadd" --interp x=nope.npy y=x.npy out=f32[64] n=64
for kind in fortran bigendian truncated magic; do
  "$MKNPY" bad $kind bad_$kind.npy || fail "mknpy bad $kind"
done
check 1 err "cannot read 'bad_fortran.npy': Fortran-order" run "$vadd" --interp x=bad_fortran.npy y=x.npy out=x.npy n=6
check 1 err "cannot read 'bad_bigendian.npy': big-endian" run "$vadd" --interp x=bad_bigendian.npy y=x.npy out=x.npy n=6
check 1 err "cannot read 'bad_truncated.npy': truncated data" run "$vadd" --interp x=bad_truncated.npy y=x.npy out=x.npy n=6
check 1 err "cannot read 'bad_magic.npy': not a .npy file" run "$vadd" --interp x=bad_magic.npy y=x.npy out=x.npy n=6
check 1 err "argument 'n': 99999999999 is out of range for i32" run "$vadd" --interp "${ok_args[@]}" n=99999999999
check 1 err "argument 'n': -2147483649 is out of range for i32" run "$vadd" --interp "${ok_args[@]}" n=-2147483649
check 0 err "" run "$vadd" --interp "${ok_args[@]}" n=0x40
check 1 err "argument 'n' is i32: '6.5' is not an integer" run "$vadd" --interp "${ok_args[@]}" n=6.5
check 1 err "argument 'a': 1e39 is out of range for f32" run "$kernels" --kernel scale_rows --interp x=m.npy y=m.npy a=1e39
check 1 err "argument 'a' is f32: 'two' is not a number" run "$kernels" --kernel scale_rows --interp x=m.npy y=m.npy a=two
check 1 err "argument 'x' holds f32 elements, but 'f16[64]' asks for f16" run "$vadd" --interp x=f16[64] y=x.npy out=x.npy n=64
check 1 err "argument 'x': unknown dtype 'f33' in 'f33[64]'" run "$vadd" --interp x=f33[64] y=x.npy out=x.npy n=64
check 1 err "argument 'x': 'f32[64,,2]' is not DTYPE" run "$vadd" --interp "x=f32[64,,2]" y=x.npy out=x.npy n=64
check 1 err "argument 'x' is ptr<f32>: give PATH.npy or DTYPE[d0,...], not the number 5" \
  run "$vadd" --interp x=5 y=x.npy out=x.npy n=64
check 1 err "argument 'x': 'f32[99999999999,99999999999]' is too large" \
  run "$vadd" --interp "x=f32[99999999999,99999999999]" y=x.npy out=x.npy n=64
check 1 err "--out n: 'n' is a scalar, not a buffer" run "$vadd" --interp "${ok_args[@]}" n=64 --out n=n.npy
check 1 err "--out q: kernel 'vadd' has no parameter 'q'" run "$vadd" --interp "${ok_args[@]}" n=64 --out q=q.npy
check 1 err "--out out is given twice" run "$vadd" --interp "${ok_args[@]}" n=64 --out out=a.npy --out out=b.npy
check 1 err "--out out: cannot write 'nodir/o.npy'" run "$vadd" --interp "${ok_args[@]}" n=64 --out out=nodir/o.npy
check 1 err "holds several kernels (scale_rows__BLOCK_16, copy_half__BLOCK_64, fill_nogrid): choose one with --kernel" \
  run "$kernels" --interp x=m.npy
check 1 err "no kernel named 'vad'" run "$vadd" --kernel vad --interp n=1
check 1 err "kernel 'fill_nogrid' has no grid(...) clause: give the grid with --grid X[,Y[,Z]]" \
  run "$kernels" --kernel fill_nogrid --interp out=i32[16] v=1
check 1 err "cannot read 'missing.tile'" run missing.tile --interp
# several mismatches are all reported
check 1 err "no parameter 'z'" run "$vadd" --interp x=i.npy z=1
grep -qF "argument 'x' is ptr<f32>, but 'i.npy' holds i32" stderr.txt || fail "only the first mismatch was reported"
# interpreter errors exit 1 with the source position
check 1 err "oob.tile:5:" run "$inputs/oob.tile" --interp x=f32[8] out=f32[16]
check 0 err "" run "$inputs/oob.tile" --interp x=f32[16] out=f32[16]
finish
