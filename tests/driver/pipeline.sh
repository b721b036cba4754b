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
# attention: two dots per iteration (K through trans into Q K^T, V into P V), 4-d views whose
# blocks are boxes over the last two dims, the offsets moving along dim 2; ragged key counts,
# Sq != Skv, causal or not, and a key loop shorter than the pipeline (17 keys, one block)
attn=$src/stdlib/attention.tile
check 0 out "" "$TILEC" "$attn" --arch=sm_90a --kernel flash_attn_fwd -D D=64 -D BM=64 -D BN=32 --pass=$passes --emit=ir -o fa.tir
# both phases (unmasked, masked) pipelined: a prologue load and a loop load of K and of V each
[ "$(grep -c "async_load %K" fa.tir)" -eq 4 ] && [ "$(grep -c "async_load %V" fa.tir)" -eq 4 ] ||
  fail "flash_attn_fwd: K and V were not both pipelined in both loops"
grep -q "smem_alloc : smem<bf16>\[2, 32, 64\]" fa.tir || fail "flash_attn_fwd: no 2-stage buffer of [32, 64] tiles"
# Q, loop-invariant, staged in shared memory once per loop (pipelined and fallback) and read
# there by Q K^T
[ "$(grep -c "smem_write" fa.tir)" -eq 4 ] || fail "flash_attn_fwd: Q was not staged once before each loop"
# the fallback loops (tma_ready false: no descriptor), with Q staged in shared memory too
sed -E 's/= tma_ready %[A-Za-z_0-9]+ : i1/= const 0 : i1/' fa.tir >fb.tir
[ "$(grep -c "const 0 : i1" fb.tir)" -eq 4 ] || fail "flash_attn_fwd: the tma_ready tests were not replaced"
for c in "70 100 0" "70 100 1" "100 70 1" "33 17 0"; do
  set -- $c
  args="Q=bf16[1,2,$1,64] K=bf16[1,2,$2,64] V=bf16[1,2,$2,64] O=bf16[1,2,$1,64] sm_scale=0.125 causal=$3 --seed $2"
  check 0 out "" "$TILEC" run fa.tir --interp $args --out O=p.npy
  check 0 out "" "$TILEC" run fb.tir --interp $args --out O=f.npy
  check 0 out "" "$TILEC" run "$attn" --kernel flash_attn_fwd -D D=64 -D BM=64 -D BN=32 --interp $args --out O=o.npy
  check 0 out "" "$MKNPY" check copy p.npy o.npy
  check 0 out "" "$MKNPY" check copy f.npy o.npy
done
# GQA (4 query heads over 2 KV heads) and the LSE variant, pipelined vs not: the same bytes
check 0 out "" "$TILEC" "$attn" --arch=sm_90a --kernel flash_attn_fwd_lse -D D=64 -D BM=64 -D BN=32 --pass=$passes --emit=ir -o lse.tir
[ "$(grep -c "smem_write" lse.tir)" -eq 4 ] || fail "flash_attn_fwd_lse: Q was not staged once before each loop"
for c in "70 100 0" "100 70 1"; do
  set -- $c
  args="Q=bf16[2,4,$1,64] K=bf16[2,2,$2,64] V=bf16[2,2,$2,64] O=bf16[2,4,$1,64] LSE=f32[2,4,$1] sm_scale=0.125 causal=$3 --seed $1"
  check 0 out "" "$TILEC" run lse.tir --interp $args --out O=p.npy --out LSE=pl.npy
  check 0 out "" "$TILEC" run "$attn" --kernel flash_attn_fwd_lse -D D=64 -D BM=64 -D BN=32 --interp $args --out O=o.npy --out LSE=ol.npy
  check 0 out "" "$MKNPY" check copy p.npy o.npy
  check 0 out "" "$MKNPY" check copy pl.npy ol.npy
done

# grouped GEMM: a 3-d weight view (box [1, BN, BK]; _kn: [1, BK, BN]) pipelined beside the 2-d A,
# two experts of 40 and 60 rows (BM = 64: the first block runs into the second expert's rows)
npy_i32() { # PATH VALUES...: a 1-d int32 .npy
  local path=$1 h="{'descr': '<i4', 'fortran_order': False, 'shape': ($(($# - 1)),), }"
  shift
  while [ $(((10 + ${#h} + 1) % 64)) -ne 0 ]; do h="$h "; done
  local n=$((${#h} + 1))
  {
    printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))"
    printf '%s\n' "$h"
    for v in "$@"; do printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $(((v >> 8) & 255)))\\x00\\x00"; done
  } >"$path"
}
moe=$src/stdlib/moe.tile
npy_i32 off.npy 0 40 100
for c in "moe_grouped_gemm W=bf16[2,72,200]" "moe_grouped_gemm_kn W=bf16[2,200,72]" \
         "moe_grouped_gemm_scaled W=bf16[2,72,200] row_scale=f32[100]"; do
  set -- $c
  check 0 out "" "$TILEC" "$moe" --arch=sm_90a --kernel $1 -D BM=64 -D BN=64 --pass=$passes --emit=ir -o $1.tir
  grep -q "async_load %W" $1.tir || fail "$1: the 3-d W load was not pipelined"
  args="A=bf16[100,200] $2 offsets=off.npy ${3:-} C=bf16[100,72] --seed 4"
  check 0 out "" "$TILEC" run $1.tir --interp $args --out C=p.npy
  check 0 out "" "$TILEC" run "$moe" --kernel $1 -D BM=64 -D BN=64 --interp $args --out C=o.npy
  check 0 out "" "$MKNPY" check copy p.npy o.npy
done
finish
