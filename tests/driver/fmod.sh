#!/usr/bin/env bash
# Float `%` compiles to an exact fmod (issue 14, defect 7: the GPU computed x - trunc(x/y)*y),
# for f32, f64, f16 and bf16, for sm_80 and sm_90a; the interpreter's -0 stays -0.
source "$(dirname "$0")/lib.bash"
: "${FILECHECK:?set FILECHECK to the FileCheck of LLVM 19}"
src=$inputs/../../gpu/regress14.tile
for arch in sm_90a sm_80; do
  for o in -O0 -O3; do
    check 0 out ".entry fm(" "$TILEC" "$src" --kernel fm --emit=ptx --no-lineinfo --arch=$arch $o
    "$FILECHECK" --input-file=stdout.txt "$inputs/fmod.ptx.check" || fail "FileCheck fmod, $arch $o"
    check 0 out ".entry fm16(" "$TILEC" "$src" --kernel fm16 --emit=ptx --no-lineinfo --arch=$arch $o
    grep -q "cvt.rzi" stdout.txt && fail "fm16 ($arch $o) still truncates a quotient"
  done
done
cat > neg.tile <<'T'
kernel k(o: ptr<f32>) grid(1) {
    let x = load(o) * 0.0 - 7.5;
    print("r", x % 2.5, (x * 1.0e10) % 3.0);
}
T
for o in -O0 -O3; do
  check 0 out "r: -0 -1" "$TILEC" run neg.tile --kernel k --interp $o o=f32[1]
done
finish
