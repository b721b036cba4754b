#!/usr/bin/env bash
# --emit=llvm|ptx|cubin, --arch, -O0..-O3, -lineinfo/--no-lineinfo, -v, --dump-after=layout, -o defaults.
source "$(dirname "$0")/lib.bash"
: "${FILECHECK:?set FILECHECK to the FileCheck of LLVM 19}"
vadd=$inputs/vadd.tile
kernels=$inputs/kernels.tile

# LLVM IR: the kernel, before LLVM's optimizer, to stdout
check 0 out "define" "$TILEC" "$vadd" --emit=llvm
grep -q "vadd__BLOCK_1024" stdout.txt || fail "--emit=llvm does not define vadd__BLOCK_1024"
grep -q "nvvm.annotations\|ptx_kernel" stdout.txt || fail "--emit=llvm does not mark the kernel"

# PTX: FileCheck on the key instructions and the metadata array
check 0 out ".entry vadd__BLOCK_1024" "$TILEC" "$vadd" --emit=ptx
"$FILECHECK" --input-file=stdout.txt "$inputs/vadd.ptx.check" || fail "FileCheck on the PTX of vadd"
check 0 out "" "$TILEC" "$vadd" --emit=ptx -o vadd.ptx
[ -s vadd.ptx ] || fail "--emit=ptx -o vadd.ptx wrote nothing"
[ -s stdout.txt ] && fail "--emit=ptx -o vadd.ptx also wrote to standard output"

# --arch reaches the PTX target; every arch compiles
for arch in sm_80 sm_86 sm_89 sm_90 sm_90a; do
  check 0 out ".target $arch" "$TILEC" "$vadd" --emit=ptx --arch=$arch
  check 0 out "" "$TILEC" "$vadd" --emit=cubin --arch $arch -o vadd_$arch.cubin
done
check 0 out ".target sm_90a" "$TILEC" "$vadd" --emit=ptx

# line information: on by default (.loc and the .tile file), off with --no-lineinfo
check 0 out ".loc" "$TILEC" "$vadd" --emit=ptx
grep -q '\.file.*vadd\.tile' stdout.txt || fail "the PTX does not name vadd.tile"
check 0 out "" "$TILEC" "$vadd" --emit=ptx --no-lineinfo
grep -q '\.loc' stdout.txt && fail "--no-lineinfo still wrote .loc"
check 0 out ".loc" "$TILEC" "$vadd" --emit=ptx --no-lineinfo -lineinfo
check 0 out ".loc" "$TILEC" "$vadd" --emit=ptx --no-lineinfo --lineinfo

# -O levels: -O0 keeps LLVM at O0 (more instructions), -O1..-O3 and -O compile
"$TILEC" "$vadd" --emit=ptx --no-lineinfo -O0 -o o0.ptx || fail "-O0 --emit=ptx"
"$TILEC" "$vadd" --emit=ptx --no-lineinfo -O3 -o o3.ptx || fail "-O3 --emit=ptx"
[ "$(wc -l < o0.ptx)" -gt "$(wc -l < o3.ptx)" ] || fail "-O0 PTX is not longer than -O3 PTX"
for o in -O0 -O1 -O2 -O3 -O; do
  check 0 out "" "$TILEC" "$vadd" --emit=cubin $o -o vadd$o.cubin
done
"$TILEC" "$vadd" --emit=ptx --no-lineinfo -o default.ptx || fail "default --emit=ptx"
cmp -s default.ptx o3.ptx || fail "the default level is not -O3"

# -g keeps assert(...) on the device (__assertfail); without it there is no check
check 0 out "__assertfail" "$TILEC" "$inputs/assert.tile" --emit=ptx -g
check 0 out "" "$TILEC" "$inputs/assert.tile" --emit=ptx
grep -q "__assertfail" stdout.txt && fail "without -g the PTX still calls __assertfail"
check 0 out "" "$TILEC" "$inputs/assert.tile" --emit=cubin -g -o assert.cubin

# cubin: an ELF for the CUDA machine (EM_CUDA = 190); default name STEM.cubin here
check 0 out "" "$TILEC" "$vadd" --emit=cubin
[ -s vadd.cubin ] || fail "--emit=cubin without -o did not write vadd.cubin"
[ "$(od -An -tx1 -N4 vadd.cubin | tr -d ' ')" = 7f454c46 ] || fail "vadd.cubin is not an ELF file"
[ "$(od -An -tu2 -j18 -N2 vadd.cubin | tr -d ' ')" = 190 ] || fail "vadd.cubin is not for EM_CUDA"
grep -q "__tilec_meta" vadd.cubin || fail "vadd.cubin lacks __tilec_meta"
check 0 out "" "$TILEC" "$vadd" --emit=cubin -o out.cubin
cmp -s out.cubin vadd.cubin || fail "-o out.cubin differs from vadd.cubin"
"$TILEC" "$vadd" --emit=cubin -o - | cmp -s - vadd.cubin || fail "-o - into a pipe differs from vadd.cubin"
check 0 out "" "$TILEC" "$kernels" --emit=cubin -o kernels.cubin
for k in scale_rows__BLOCK_16 copy_half__BLOCK_64 fill_nogrid; do
  grep -q "$k" kernels.cubin || fail "kernels.cubin lacks $k"
done
check 1 err "cannot write 'nodir/x.cubin'" "$TILEC" "$vadd" --emit=cubin -o nodir/x.cubin

# .tir in, cubin out
check 0 out "" "$TILEC" "$vadd" -o vadd.tir
check 0 out ".entry vadd__BLOCK_1024" "$TILEC" vadd.tir --emit=ptx

# -v: the stages and ptxas's report per kernel
check 0 err "registers" "$TILEC" "$vadd" --emit=cubin -v -o v.cubin
grep -q "tilec: layout" stderr.txt || fail "-v does not time the layout pass"
grep -q "tilec: cubin" stderr.txt || fail "-v does not time the cubin"
grep -qi "spill" stderr.txt || fail "-v does not report spills"

# --dump-after=layout: the layout pass runs (and dumps) before code generation
check 0 err "IR Dump After layout (kernel vadd__BLOCK_1024)" "$TILEC" "$vadd" --emit=ptx --dump-after=layout -o /dev/null
grep -q "IR Dump After fold" stderr.txt && fail "--dump-after=layout also dumped fold"
check 0 err "IR Dump After layout" "$TILEC" "$vadd" --emit=llvm --dump-after=all -o /dev/null
grep -q "IR Dump After dce" stderr.txt || fail "--dump-after=all did not dump dce"
check 0 out "" "$TILEC" "$vadd" --emit=ptx --ir-dump-dir=dumps -o /dev/null
ls dumps | grep -q -- "-layout.tir" || fail "--ir-dump-dir wrote no layout dump"

# a source error stops before code generation: exit 1, nothing written
printf 'kernel k(x: ptr<f32>) { let y = ; }\n' > bad.tile
check 1 err "bad.tile:1:" "$TILEC" bad.tile --emit=cubin -o bad.cubin
[ -e bad.cubin ] && fail "a failed compile wrote a cubin"
finish

