#!/usr/bin/env bash
# ws-bits.sh [TILEC]: on the GPU, each warp-specialized stdlib kernel (the _ws ones,
# passes/warp_specialize.c) must give exactly the bits of its plain pipelined kernel on
# the same random inputs (same --seed): the specialization changes who issues the TMA
# loads and how stages are handed back, never the dots or their order.  One line per
# pair; exit 1 on any difference, 77 where no GPU is found.
set -uo pipefail
# In the repository: tests/gpu/ws-bits.sh build/tools/tilec; in the GPU bundle (.gpu/):
# src/gpu/ws-bits.sh bin/tilec.
TILEC=${1:-build/tools/tilec}
here=$(cd "$(dirname "$0")" && pwd)
if [ -d "$here/../stdlib" ]; then stdlib=$here/../stdlib; else stdlib=$here/../../stdlib; fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ws-bits.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
pair() { # pair FILE KERNEL ARGS...: KERNEL and KERNEL_ws
  local file=$1 kern=$2; shift 2
  for k in "$kern" "${kern}_ws"; do
    if ! "$TILEC" run "$stdlib/$file" --kernel "$k" --device --seed 7 "$@" --out "C=$tmp/$k.npy" \
        >"$tmp/$k.log" 2>&1; then
      if grep -qi "no GPU\|no CUDA\|libcuda" "$tmp/$k.log"; then echo "SKIP $kern: no GPU"; exit 77; fi
      echo "FAIL $k: did not run"; cat "$tmp/$k.log"; fail=1; return
    fi
  done
  if cmp -s "$tmp/$kern.npy" "$tmp/${kern}_ws.npy"; then echo "PASS ${kern}_ws = $kern ($*)"
  else echo "FAIL ${kern}_ws differs from $kern ($*)"; fail=1; fi
}
pair gemm.tile gemm A=bf16[1000,1200] B=bf16[1200,1104] C=bf16[1000,1104]
pair gemm.tile gemm -D BN=128 -D TC=f32 A=bf16[257,1032] B=bf16[1032,392] C=f32[257,392]
pair gemm.tile gemm_nt A=bf16[200,1000] B=bf16[130,1000] C=bf16[200,130]
pair fp8_gemm.tile fp8_gemm A=f8e4m3[1000,1200] B=f8e4m3[1100,1200] scale_a=f32[1] scale_b=f32[1] C=bf16[1000,1100]
pair fp8_gemm.tile fp8_gemm_blockscale A=f8e4m3[1000,1200] As=f32[1000,10] B=f8e4m3[1100,1200] Bs=f32[9,10] \
  C=bf16[1000,1100]
# no fallback loop: a tensor TMA cannot describe (B's rows of 130 bf16 = 260 bytes, not a
# multiple of 16) is refused at launch with an error naming the argument; the plain kernel runs
if "$TILEC" run "$stdlib/gemm.tile" --kernel gemm_ws --device A=bf16[100,64] B=bf16[64,130] C=bf16[100,130] \
    >"$tmp/refuse.log" 2>&1; then
  echo "FAIL gemm_ws ran on B with a 260-byte row stride (no fallback: it must refuse)"; fail=1
elif grep -q "argument 1 ('B'), TMA descriptor" "$tmp/refuse.log"; then
  echo "PASS gemm_ws refuses a B that TMA cannot describe: $(grep -o "argument 1 ('B').*" "$tmp/refuse.log" | head -1)"
else
  echo "FAIL gemm_ws on a 260-byte row stride: not the TMA error"; cat "$tmp/refuse.log"; fail=1
fi
if "$TILEC" run "$stdlib/gemm.tile" --kernel gemm --device --check A=bf16[100,64] B=bf16[64,130] C=bf16[100,130] \
    --rtol 1e-2 --atol 1e-2 >"$tmp/plain.log" 2>&1; then
  echo "PASS gemm (its fallback loop) on the same arguments"
else
  echo "FAIL gemm on a 260-byte row stride"; cat "$tmp/plain.log"; fail=1
fi
exit $fail
