#!/usr/bin/env bash
# --pass orders the compiler cannot take are errors (exit 1) naming the pass
# and the kernel, checked before any pass runs (passes.def: what each pass
# refuses, drops and makes); the orders it can take still work.
source "$(dirname "$0")/lib.bash"
k=$inputs/passorder.tile
pipe=pipeline_latency,pipeline_schedule,pipeline_expand
args="A=bf16[64,96] B=bf16[96,64] C=f32[64,64]"

# layouts first, then the pipelining passes (issue 14, defect 6): an error, not an abort
for emit in ir ptx; do
  check 1 err "error: --pass: 'pipeline_latency' cannot run after 'layout' on kernel 'g': it needs IR without layouts" \
    "$TILEC" "$k" --arch=sm_90a --pass=layout,$pipe --emit=$emit -o out.txt
  grep -qF "note: 'pipeline_latency', 'pipeline_schedule', 'pipeline_expand', 'warp_specialize', 'dot_async', 'remat' must run before 'layout'" stderr.txt ||
    fail "--emit=$emit: no note saying which passes go before layout"
  grep -q "internal error" stderr.txt && fail "--emit=$emit: an internal error"
done
check 1 err "'pipeline_latency' cannot run after 'layout' on kernel 'g'" \
  "$TILEC" run "$k" --interp --pass=layout,$pipe $args
check 1 err "'pipeline_expand' cannot run after 'layout'" "$TILEC" "$k" --pass=$pipe,layout,pipeline_expand
check 1 err "'remat' cannot run after 'layout'" "$TILEC" "$k" --pass=layout,remat
# the check comes before any pass runs: nothing is dumped
check 1 err "cannot run after 'layout'" "$TILEC" "$k" --pass=fold,layout,remat --dump-after=all
grep -q "IR Dump After" stderr.txt && fail "passes ran before the order was refused"

# IR that arrives with layouts: the pipelining passes refuse it, naming the input
check 0 out "" "$TILEC" "$k" --arch=sm_90a --pass=layout --emit=ir -o laid.tir
grep -q "#linear" laid.tir || fail "--pass=layout wrote no layouts"
check 1 err "error: --pass: 'pipeline_latency' cannot run on kernel 'g': its IR already has layouts (from the input)" \
  "$TILEC" laid.tir --pass=$pipe

# orders it can take: a canonical pass drops the layouts; layout after the pipelining passes
check 0 out "" "$TILEC" "$k" --arch=sm_90a --pass=layout,fold,$pipe,layout --emit=ir -o p1.tir
grep -q "async_load" p1.tir || fail "layout,fold,pipelining,layout did not pipeline"
check 0 out "" "$TILEC" run "$k" --interp --pass=layout,fold,$pipe $args --out C=p.npy
check 0 out "" "$TILEC" run "$k" --interp $args --out C=o.npy
check 0 out "" "$MKNPY" check copy p.npy o.npy
# the backend pipeline before code generation starts afresh from laid-out IR
# (its own layout pass assigns every layout again): it pipelines, no abort
check 0 out "" "$TILEC" "$k" --arch=sm_90a --pass=layout --emit=llvm -o laid.ll
grep -q "mbarrier" laid.ll || fail "--pass=layout --emit=llvm: the loop was not pipelined"
check 0 out "" "$TILEC" laid.tir --arch=sm_90a --emit=ptx -o laid.ptx
finish
