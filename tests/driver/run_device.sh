#!/usr/bin/env bash
# tilec run --device and tilec bench: the same arguments as --interp.  Without a GPU
# (CI) they fail clearly (exit 1, "no CUDA driver" or "no CUDA device") after the
# arguments were checked; with one, --device agrees with --interp and bench prints
# its table.
source "$(dirname "$0")/lib.bash"
vadd=$inputs/vadd.tile
kernels=$inputs/kernels.tile

# is there a GPU?  (the runtime's own answer, through tilec)
"$MKNPY" rand x.npy f32 3000 11 && "$MKNPY" rand y.npy f32 3000 12 || fail "mknpy rand"
"$TILEC" run "$vadd" -D BLOCK=256 --device x=x.npy y=y.npy out=f32[3000] n=3000 --out out=dev.npy \
  >dev.out 2>dev.err
rc=$?
if [ $rc -eq 0 ]; then
  gpu=1
  check 0 out "" "$TILEC" run "$vadd" -D BLOCK=256 --interp x=x.npy y=y.npy out=f32[3000] n=3000 --out out=int.npy
  check 0 out "" "$MKNPY" check copy dev.npy int.npy      # f32 additions round alike: bit-exact
  check 0 out "ok: 3000 elements" "$MKNPY" check add dev.npy x.npy y.npy
else
  gpu=0
  [ $rc -eq 1 ] || fail "run --device without a GPU exited $rc"
  grep -qE "cannot run on the GPU: no CUDA (driver|device)" dev.err || fail "run --device without a GPU: $(cat dev.err)"
  [ -e dev.npy ] && fail "a failed --device run wrote --out"
  [ "$(wc -l < dev.err)" -eq 1 ] || fail "the no-GPU error is not one line: $(cat dev.err)"
fi

# argument errors come first, GPU or not
check 1 err "kernel 'vadd' has no parameter 'z'" "$TILEC" run "$vadd" --device x=x.npy y=x.npy out=x.npy n=1 z=1
check 1 err "argument 'n': 99999999999 is out of range for i32" \
  "$TILEC" run "$vadd" --device x=x.npy y=x.npy out=x.npy n=99999999999
check 1 err "has no grid(...) clause" "$TILEC" run "$kernels" --kernel fill_nogrid --device out=i32[16] v=1
check 1 err "--out q: kernel 'vadd' has no parameter 'q'" "$TILEC" run "$vadd" --device x=x.npy y=x.npy out=x.npy n=1 --out q=q.npy

# bench: expressions are checked before the GPU is touched
b=(bench "$vadd" x=f32[4096] y=f32[4096] out=f32[4096] n=4096 --runs 3 --warmup 1)
check 1 err "--bytes '3*x.byts': buffers have .bytes, .numel and .shape[i], not '.byts'" "$TILEC" "${b[@]}" --bytes '3*x.byts'
check 1 err "unknown name 'q'" "$TILEC" "${b[@]}" --flops '2*q'
check 1 err "'x' is a buffer" "$TILEC" "${b[@]}" --bytes 'x*2'
check 1 err "a ')' is missing" "$TILEC" "${b[@]}" --bytes '(n*4'
check 1 err "unexpected ')'" "$TILEC" "${b[@]}" --bytes 'n*4)'
check 1 err "the value 0 is not a positive number" "$TILEC" "${b[@]}" --bytes 'n-n'
check 1 err "the shape index is out of range" "$TILEC" "${b[@]}" --bytes 'x.shape[1]'
if [ $gpu = 1 ]; then
  check 0 out "median" "$TILEC" "${b[@]}" --bytes '3*x.bytes' --flops 'n + BLOCK - BLOCK'
  for want in "min " "max " "spread" "GB/s" "TFLOP/s" "3 runs after 1 warm-up" "L2 flushed"; do
    grep -qF -- "$want" stdout.txt || fail "bench does not print '$want'"
  done
  check 0 out "L2 not flushed" "$TILEC" "${b[@]}" --no-flush
else
  check 1 err "cannot run on the GPU: no CUDA" "$TILEC" "${b[@]}" --bytes '3*x.bytes + 0*x.numel' --flops 'n*BLOCK'
fi
finish
