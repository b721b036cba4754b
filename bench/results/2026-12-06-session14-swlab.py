#!/usr/bin/env python3
"""Session 14 lab: moe_swiglu / moe_swiglu_fp8 variants (rows x columns per program, occupancy hint)
against the copy bandwidth, M = 33280 rows (the bench's padded total), N = 1408 and 768."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
import bench as B
import torch

class A: pass
a = A(); a.tilec, a.lib, a.root, a.runs, a.warmup = "bin/tilec", "lib/libtilert.so", "src", 15, 3
b = B.Bench(a)
src = os.path.join(a.root, "stdlib/moe.tile")
old = os.path.join("var/old/stdlib/moe.tile")   # the stdlib kernels; src: moe.tile with the 2-D kernels of -moe-swiglu-2d.tile.txt
n_copy = 1 << 28
cx, cy = B.rand([n_copy // 4], torch.float32), torch.empty(n_copy // 4, device="cuda")
(cm, _, _), = b.timer.compare([lambda: cy.copy_(cx)])
copy = 2 * n_copy / (cm * 1e-6) / 1e12
del cx, cy
print("copy %.3f TB/s" % copy, flush=True)
S = 33280
for I in (1408, 768):
    h = B.rand([S, 2 * I], torch.bfloat16)
    nrows = torch.tensor([S], dtype=torch.int32, device="cuda")
    ref = (torch.nn.functional.silu(h[:, :I].float()) * h[:, I:].float()).to(torch.bfloat16)
    for name, f, defs, env in [("old BK=2048", old, {}, {}), ("old BK=2048 ctas0", old, {}, {"TILEC_MIN_CTAS": "0"})] + [
            ("BR=%d BK=%d%s" % (br, bk, " ctas" + e if e else ""), src, {"BR": br, "BK": bk}, {"TILEC_MIN_CTAS": e} if e else {})
            for br, bk in ((4, 512), (2, 1024), (8, 256), (1, 2048), (4, 1024), (8, 512)) for e in ("", "0", "4")]:
        try:
            k = b.compile(f, "moe_swiglu", defs, env=env)
        except Exception as ex:
            print("skip", name, ex); continue
        y = torch.full([S, I], float("nan"), dtype=torch.bfloat16, device="cuda")
        args = [B.tensor_arg(h), B.tensor_arg(y), B.ptr_arg(nrows)]
        b.launch(k, args)
        ok = B.close(y, ref, 1e-2, 1e-3)
        b.record("moe_swiglu " + name, "M=%d N=2x%d" % (S, I), "bf16", lambda: b.launch(k, args),
                 lambda: torch.nn.functional.silu(h[:, :I]) * h[:, I:], S * 3 * I * 2, "TB/s", ok)
        r = b.rows[-1]
        print("swiglu %-26s N=%d: %.1f us %.3f TB/s = %.1f%% of copy %s" % (name, I, r[3], r[7], 100 * r[7] / copy, r[10]), flush=True)
    QI = (I + 127) // 128
    for name, f, defs, env in [("old BK=1024", old, {}, {}), ("old ctas0", old, {}, {"TILEC_MIN_CTAS": "0"})] + [
            ("BR=%d BK=%d%s" % (br, bk, " ctas" + e if e else ""), src, {"BR": br, "BK": bk}, {"TILEC_MIN_CTAS": e} if e else {})
            for br, bk in ((4, 512), (2, 1024), (8, 256), (4, 256)) for e in ("", "0", "4")]:
        try:
            k = b.compile(f, "moe_swiglu_fp8", defs, env=env)
        except Exception as ex:
            print("skip", name, ex); continue
        y8 = torch.zeros([S, I], dtype=torch.float8_e4m3fn, device="cuda")
        sc = torch.zeros([S, QI], dtype=torch.float32, device="cuda")
        args = [B.tensor_arg(h), B.tensor_arg(y8), B.tensor_arg(sc), B.ptr_arg(nrows)]
        b.launch(k, args)
        deq = y8.float() * sc.repeat_interleave(128, 1)[:, :I]
        ok = B.close(deq, ref.float(), 0.07, 1e-3)
        b.record("moe_swiglu_fp8 " + name, "M=%d N=2x%d" % (S, I), "bf16", lambda: b.launch(k, args),
                 lambda: torch.nn.functional.silu(h[:, :I]) * h[:, I:], S * 2 * I * 2 + S * I + S * QI * 4, "TB/s", ok)
        r = b.rows[-1]
        print("swiglu_fp8 %-22s N=%d: %.1f us %.3f TB/s = %.1f%% of copy %s" % (name, I, r[3], r[7], 100 * r[7] / copy, r[10]), flush=True)
    del h
b.table()
