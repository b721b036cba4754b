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

# --poison: those buffers start as 0xff bytes (NaN): what the kernel does not write stays so
check 0 out "" "$TILEC" run "$vadd" --interp x=f32[100] y=f32[100] out=f32[100] n=60 --poison out --out out=p.npy
[ "$(tail -c 4 p.npy | od -An -tx1 | tr -d ' ')" = ffffffff ] || fail "--poison out: the unwritten tail is not 0xff"
check 0 out "" "$TILEC" run "$vadd" --interp x=f32[100] y=f32[100] out=f32[100] n=100 --poison out \
  --out out=p2.npy --out x=px.npy --out y=py.npy
check 0 out "ok: 100 elements" "$MKNPY" check add p2.npy px.npy py.npy
check 1 err "--poison n: 'n' is a scalar, not a buffer" "$TILEC" run "$vadd" --interp x=x.npy y=x.npy out=x.npy n=1 --poison n
check 1 err "--poison q: kernel 'vadd' has no parameter 'q'" "$TILEC" run "$vadd" --interp x=x.npy y=x.npy out=x.npy n=1 \
  --poison out,q

# --check: the interpreter and the GPU on the same inputs, every buffer compared
if [ $gpu = 1 ]; then
  check 0 out "check: out (ptr<f32>): 1000 elements agree" \
    "$TILEC" run "$vadd" --device --check x=f32[1000] y=f32[1000] out=f32[1000] n=999 --poison out
  check 0 out "check: y (tensor<f32, 2>): 60 elements agree" \
    "$TILEC" run "$kernels" --kernel scale_rows --device --check x=f32[5,12] y=f32[5,12] a=2.5 --poison y
  # a tolerance of 0 still passes where the GPU rounds alike; the integers are bit-exact
  check 0 out "check: out (ptr<i32>)" "$TILEC" run "$kernels" --kernel fill_nogrid --device --check out=i32[16] v=-5 \
    --grid 2 --rtol 0 --atol 0
else
  check 1 err "cannot run on the GPU: no CUDA" \
    "$TILEC" run "$vadd" --device --check x=f32[1000] y=f32[1000] out=f32[1000] n=999 --poison out
fi
check 2 err "--check compares the GPU with the interpreter: give it with --device" "$TILEC" run "$vadd" --interp --check n=1
check 2 err "--rtol wants a number >= 0, not '-1'" "$TILEC" run "$vadd" --device --rtol -1 n=1
check 2 err "--atol wants a number >= 0, not 'x'" "$TILEC" run "$vadd" --device --atol x n=1
check 2 err "--poison wants buffer names, not 'out,'" "$TILEC" run "$vadd" --device --poison out, n=1
check 2 err "--check is an option of tilec run" "$TILEC" bench "$vadd" --check n=1

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
