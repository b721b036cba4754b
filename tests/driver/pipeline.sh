#!/usr/bin/env bash
# The pipelining passes keep results: a stdlib GEMM after pipeline_latency,
# pipeline_schedule and pipeline_expand (prologue, mbarrier protocol, loads
# S - 1 iterations ahead, all checked by the interpreter) gives the same bytes as
# the plain kernel, at ragged sizes where the last tiles and the last stages are
# partial and at sizes shorter than the pipeline.
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/lib.bash"
gemm=$src/stdlib/gemm.tile
fp8=$src/stdlib/fp8_gemm.tile
passes=fold,cse,dce,pipeline_latency,pipeline_schedule,pipeline_expand

check 0 out "" "$TILEC" "$gemm" --arch=sm_90a --kernel gemm_nt -D BM=64 -D BN=64 --pass=$passes --emit=ir -o nt.tir
grep -q "async_load" nt.tir || fail "gemm_nt was not pipelined"
for k in 40 136 300; do
  args="A=bf16[100,$k] B=bf16[72,$k] C=bf16[100,72] --seed $k"
  check 0 out "" "$TILEC" run nt.tir --interp $args --out C=p$k.npy
  check 0 out "" "$TILEC" run "$gemm" --kernel gemm_nt -D BM=64 -D BN=64 --interp $args --out C=o$k.npy
  check 0 out "" "$MKNPY" check copy p$k.npy o$k.npy
done

check 0 out "" "$TILEC" "$gemm" --arch=sm_90a --kernel gemm -D BM=64 -D BN=64 -D TC=f32 --pass=$passes --emit=ir -o nn.tir
grep -q "async_load" nn.tir || fail "gemm was not pipelined"
args="A=bf16[70,200] B=bf16[200,130] C=f32[70,130] --seed 5"
check 0 out "" "$TILEC" run nn.tir --interp $args --out C=p.npy
check 0 out "" "$TILEC" run "$gemm" --kernel gemm -D BM=64 -D BN=64 -D TC=f32 --interp $args --out C=o.npy
check 0 out "" "$MKNPY" check copy p.npy o.npy

# block-scaled FP8: the dot waits for itself, the scale loads stay block loads
check 0 out "" "$TILEC" "$fp8" --arch=sm_90a --kernel fp8_gemm_blockscale -D BM=64 -D BN=64 --pass=$passes --emit=ir -o bs.tir
grep -q "async_load" bs.tir || fail "fp8_gemm_blockscale was not pipelined"
args="A=f8e4m3[65,400] As=f32[65,4] B=f8e4m3[70,400] Bs=f32[1,4] C=bf16[65,70] --seed 9"
check 0 out "" "$TILEC" run bs.tir --interp $args --out C=p.npy
check 0 out "" "$TILEC" run "$fp8" --kernel fp8_gemm_blockscale -D BM=64 -D BN=64 --interp $args --out C=o.npy
check 0 out "" "$MKNPY" check copy p.npy o.npy
finish
