#!/usr/bin/env bash
# -j N: the kernels and specializations of one file compile in N threads, and the
# output does not depend on N (PTX, cubin, header, meta byte for byte); --emit
# with several kinds compiles once and writes what each alone would.
source "$(dirname "$0")/lib.bash"
kernels=$inputs/kernels.tile
prints=$inputs/two_prints.tile
vadd=$inputs/vadd.tile

# the same bytes for -j1, -j2 and -j5 (more threads than kernels), PTX and cubin; several
# kernels, several specializations (--spec), and kernels with device strings and the print
# lock (-g: asserts kept), which are module-local symbols renamed apart per kernel
for j in 1 2 5; do
  check 0 err "" "$TILEC" "$kernels" --emit=ptx -j$j -o k$j.ptx
  check 0 err "" "$TILEC" "$kernels" --emit=cubin -j $j -o k$j.cubin
  check 0 err "" "$TILEC" "$vadd" --spec BLOCK=128 --spec BLOCK=256 --spec BLOCK=512 --emit=cubin -j$j -o s$j.cubin
  check 0 err "" "$TILEC" "$prints" -g --emit=ptx -j$j -o p$j.ptx
  check 0 err "" "$TILEC" "$prints" -g --emit=cubin -j$j -o p$j.cubin
done
for f in k s p; do
  for ext in ptx cubin; do
    [ -e ${f}1.$ext ] || continue
    cmp -s ${f}1.$ext ${f}2.$ext || fail "-j1 and -j2 differ ($f.$ext)"
    cmp -s ${f}1.$ext ${f}5.$ext || fail "-j1 and -j5 differ ($f.$ext)"
  done
done
# the merged PTX: one header, one shared-memory array, every kernel, no clashing strings
[ "$(grep -c '^\.version' k2.ptx)" = 1 ] || fail "the merged PTX has more than one .version"
[ "$(grep -c '^\.extern .shared .align 128 .b8 __tilec_smem' p2.ptx)" = 1 ] ||
  fail "the merged PTX declares __tilec_smem more than once"
[ "$(grep -c '^\.visible \.entry' k2.ptx)" = 3 ] || fail "the merged PTX lacks a kernel"
grep -q '__tilec_k0_print_lock' p2.ptx && grep -q '__tilec_k1_print_lock' p2.ptx ||
  fail "the print locks are not named per kernel"
[ "$(grep -c '^\.extern \.func  *(\.param \.b32 func_retval0) vprintf' p2.ptx)" = 1 ] ||
  fail "vprintf is declared more than once"
[ "$(grep -c '__tilec_meta\[' p2.ptx)" = 1 ] || fail "the metadata array is not there once"
# call sequences numbered in order over the module, whatever the threads did
[ "$(grep -o 'callseq [0-9]*, 0' p5.ptx | sed 's/callseq //; s/, 0//' | tr '\n' ' ')" = \
  "$(seq 0 $(($(grep -c 'callseq [0-9]*, 0' p5.ptx) - 1)) | tr '\n' ' ')" ] || fail "the call sequences are not numbered 0, 1, ..."

# -j: a bad count is a usage error
check 2 err "-j wants a number of threads" "$TILEC" "$vadd" -j 0
check 2 err "-j wants a number of threads" "$TILEC" "$vadd" -j two
check 2 err "-j wants a number of threads" "$TILEC" "$vadd" -j4x
# -v: per kernel, where the CPU time went
check 0 err "llvm-opt" "$TILEC" "$kernels" --emit=cubin -j2 -v -o v.cubin
grep -q "kernel scale_rows.*: lower .* ms, llvm-opt .* ms, llvm-ptx .* ms (CPU)" stderr.txt ||
  fail "-v does not time scale_rows's stages"
grep -q "ptxas [0-9.]* ms; the stage: .* -j2" stderr.txt || fail "-v does not time ptxas or name -j"

# several outputs, one compilation: -o STEM
check 1 err "cannot write 'nodir/kernels.cubin'" "$TILEC" "$kernels" --emit=cubin,header -o nodir/kernels
mkdir -p multi one
check 0 err "" "$TILEC" "$kernels" --emit=cubin,header,meta,ir,ptx,llvm -o multi/kernels -v
[ "$(grep -c '^tilec: cubin' stderr.txt)" = 1 ] || fail "--emit=cubin,header,... compiled more than once"
check 0 err "" "$TILEC" "$kernels" --emit=cubin -o one/kernels.cubin
check 0 err "" "$TILEC" "$kernels" --emit=header --embed -o one/kernels.h
check 0 err "" "$TILEC" "$kernels" --emit=meta -o one/kernels.json
check 0 err "" "$TILEC" "$kernels" --emit=ir -o one/kernels.tir
check 0 err "" "$TILEC" "$kernels" --emit=ptx -o one/kernels.ptx
check 0 err "" "$TILEC" "$kernels" --emit=llvm -o one/kernels.ll
for ext in cubin json tir ptx ll; do
  cmp -s multi/kernels.$ext one/kernels.$ext || fail "--emit=...,$ext with -o STEM differs from --emit=$ext alone"
done
# (a header of several outputs references STEM.cubin, as --emit=header alone does)
grep -q '"kernels.cubin"' multi/kernels.h || fail "the header of -o multi/kernels does not load kernels.cubin"
grep -q 'kernels_module' multi/kernels.h || fail "the header's module is not named by its stem"
# KIND=PATH, and an embedded header equal to --emit=header --embed alone
check 0 err "" "$TILEC" "$kernels" --emit=cubin=a.cubin,header=a.h --embed
cmp -s a.cubin one/kernels.cubin || fail "--emit=cubin=a.cubin differs"
check 0 err "" "$TILEC" "$kernels" --emit=header --embed -o a.h.ref
sed 's/a_h_ref/a/g; s/a\.h\.ref/a.h/g' a.h.ref > a.h.want
grep -q 'a_module' a.h || fail "the header a.h's module is not 'a'"
check 0 err "" "$TILEC" "$kernels" --emit=header --embed -o b.h
check 0 err "" "$TILEC" "$kernels" --emit=cubin=b.cubin,header=b.h.2 --embed --module-name=b
cmp -s b.h b.h.2 || fail "--emit=cubin=...,header=... --embed writes another header than --emit=header --embed"
# without -o: STEM of the input, in the current folder
check 0 err "" "$TILEC" "$kernels" --emit=cubin,meta
[ -s kernels.cubin ] && [ -s kernels.json ] || fail "--emit=cubin,meta without -o does not write kernels.cubin, kernels.json"
# usage errors
check 2 err "--emit names 'cubin' twice" "$TILEC" "$kernels" --emit=cubin,cubin
check 2 err "not 'cubn'" "$TILEC" "$kernels" --emit=cubin,cubn
check 2 err "wants a path after '='" "$TILEC" "$kernels" --emit=cubin=
check 2 err "two outputs for standard output" "$TILEC" "$kernels" --emit=ir=-,ptx=-
check 2 err "not '-'" "$TILEC" "$kernels" --emit=ir,ptx -o -
check 2 err "--embed goes with --emit=header" "$TILEC" "$kernels" --emit=cubin,meta --embed
check 2 err "needs a .tile input" "$TILEC" one/kernels.tir --emit=ir,ast
finish
