#!/usr/bin/env bash
# Bitcasts between f16 and bf16 tiles compile for sm_90a and sm_80 at every level (no LLVM
# "Cannot select" abort), and the interpreter agrees with the bits the bitcast defines.
source "$(dirname "$0")/lib.bash"
: "${FILECHECK:?set FILECHECK to the FileCheck of LLVM 19}"
src=$inputs/bitcast16.tile
for arch in sm_90a sm_80; do
  for o in -O0 -O3; do
    check 0 out ".entry via_i16" "$TILEC" "$src" --emit=ptx --no-lineinfo --arch=$arch $o
    "$FILECHECK" --input-file=stdout.txt "$inputs/bitcast16.ptx.check" || fail "FileCheck, $arch $o"
  done
  check 0 out "" "$TILEC" "$src" --emit=cubin --arch=$arch -o bitcast16_$arch.cubin
done
# the interpreter: 1.0 as bf16 is 0x3f80, which as f16 is 1.875
cat > one.tile <<'T'
kernel k(o: ptr<f16>) grid(1) {
    let v = bitcast<f16>((zeros<f32>([8]) + 1.0) as bf16);
    print("v", v);
    store(o + arange(8), v);
}
T
for o in -O0 -O3; do
  check 0 out "v: 1.875 1.875 1.875 1.875 1.875 1.875 1.875 1.875" "$TILEC" run one.tile --kernel k --interp $o o=f16[8]
done
check 0 out "" "$TILEC" one.tile --emit=ptx --arch=sm_80
finish
