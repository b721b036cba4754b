#!/usr/bin/env bash
# The remat pass keeps results: stdlib rmsnorm and layernorm (bf16, rows that
# fit one chunk and rows that take several, ragged lengths) after remat give
# the same bytes as without it in the interpreter, and remat did rebuild the
# widening (bitcast to u16) where a bf16 row is used after its reduction.
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/lib.bash"
norms=$src/stdlib/norms.tile

for cfg in "rmsnorm 1024" "rmsnorm 256" "layernorm 1024"; do
  set -- $cfg
  k=$1 b=$2
  check 0 out "" "$TILEC" "$norms" --kernel $k -D T=bf16 -D BLOCK=$b --pass=fold,cse,dce,remat --emit=ir -o $k$b.tir
  check 0 out "" "$TILEC" "$norms" --kernel $k -D T=bf16 -D BLOCK=$b --pass=fold,cse,dce --emit=ir -o $k$b-plain.tir
  if [ "$k$b" = rmsnorm1024 ]; then
    grep -q "tile<u16>" $k$b.tir || fail "remat did not rebuild rmsnorm's widening"
  fi
  for shape in "5,1000" "3,700" "2,1024"; do
    if [ $k = rmsnorm ]; then
      args="X=bf16[$shape] W=bf16[${shape#*,}] Y=bf16[$shape] eps=1e-6 --seed 3"
    else
      args="X=bf16[$shape] W=bf16[${shape#*,}] B=bf16[${shape#*,}] Y=bf16[$shape] eps=1e-5 --seed 4"
    fi
    check 0 out "" "$TILEC" run $k$b.tir --interp $args --poison Y --out Y=r.npy
    check 0 out "" "$TILEC" run $k$b-plain.tir --interp $args --poison Y --out Y=p.npy
    check 0 out "" "$MKNPY" check copy r.npy p.npy
  done
done
finish
