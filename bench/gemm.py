#!/usr/bin/env python3
"""gemm.py: the stdlib GEMMs (issue 4) against cuBLAS through PyTorch, on one GPU, in one process.

Run on the GPU machine, from the bundle that scripts/gpu-bundle.sh stages (`cd .gpu`):
    python3 bench/gemm.py --tilec bin/tilec --lib lib/libtilert.so --root src [--out gemm.md]
        [--only bf16,fp8,blockscale] [--shapes 4096x4096x4096,128x4096x7168] [--iters 50]
        [--tiles bf16=128x128x64,fp8=128x128x128,blockscale=128x128] [--sweep] [--ws]
or `BENCH_GEMM=1 ./gpu-check` (tests/gpu/gpu-check), which writes the table to $OUT/gemm-bench.md.

What runs, shape by shape (M x N x K; C[M, N] = A[M, K] B):
  bf16        stdlib gemm_nt (B given [N, K], the nn.Linear weight layout) and its persistent
              forms gemm_nt_persistent (one program per SM, grouped tile order) and
              gemm_nt_persistent_flat (the same as one pipelined loop over (tile, k step)) against
              torch.matmul(a, w.t()), and stdlib gemm (B given [K, N]) against torch.matmul(a, b);
              bf16 operands, f32 accumulation, bf16 output.
  fp8         stdlib fp8_gemm (e4m3, per-tensor f32 scales, B given [N, K]) against
              torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=bf16).
  blockscale  stdlib fp8_gemm_blockscale (DeepSeek-V3 scaling: 1 x 128 blocks of A, 128 x 128 of B)
              against torch's fastest correct block-scaled path with the same scales where this torch
              has one (cuBLAS, CUDA >= 12.9: torch._scaled_mm and F.scaled_mm, each with the scales in
              both memory orders; every path is checked, the correct ones are timed alternating and
              the fastest is the row's baseline, its kernel time cross-checked with the profiler; the
              notes under the table list them), and beside DeepGEMM's published H800 TFLOP/s.
Shapes: 4096^3, 8192^3, and M in {16, 64, 128, 1024, 4096} x (N, K) in {(4096, 7168), (7168, 2048),
(2112, 7168), (24576, 1536), (14336, 4096)} (DeepSeek-V3 projections); blockscale adds
4096 x 7168 x 16384. --shapes replaces the list (any MxNxK).

Method (as bench.py, whose loader and timer this reuses): each kernel is compiled to a cubin by
tilec (once per specialization), loaded through libtilert (ctypes) and launched on torch's current
stream on tensors torch allocated; random inputs (never all zeros); warm-up runs, then --iters timed
runs, each after an L2 flush (a 256 MiB write) outside the timed region; CUDA events; medians;
tilec and the baseline alternate run by run.

--ws adds the warp-specialized kernels (stdlib *_ws: the same loop with the hint warp_specialize, a
producer warpgroup issuing the TMA loads, lang/PIPELINING.md), each a row with its plain kernel's
tiles and the same baseline and check, so the two compare directly.

Tiles: per shape, the first candidate (largest first) that gives at least --min-ctas programs
(default: 3/4 of the SMs), else the smallest; a specialization that does not compile falls back
to the next candidate. --tiles KIND=BMxBNxBK[/...] gives the candidates of a kind instead.
Then, unless --no-plan, a second row for the configuration python/tilec/stdlib.py's gemm_plan picks
from the shape (its time model: tiles, swap-AB for M <= 64, split-K S), where that differs from the
first: the kernel column names it (gemm_nt_swapab_splitk, fp8_gemm_splitk, ...), the tiles column
gives BMxBN[xBK] and S; a split-K row times both launches, the partials into an f32 workspace
W [S, M, N] and splitk_reduce / fp8_splitk_reduce (summing W in split order: deterministic).
--sweep times every candidate that compiles, the 64-wide and 256-row tiles of SWEEP_EXTRA, and
around the plan its kernel at every split and (M <= 64) every swap-AB tile, one row each: the
measurements to check the model's constants against.

Checks (once per shape, before timing; a failed one marks the row WRONG and the exit status 1):
the output starts as NaN; tilec's result must be finite and, against the reference R,
||C - R|| <= rel * ||R|| (Frobenius) and max |C - R| <= elt * max |R|:
  bf16: R = the torch result, rel 1e-2, elt 2e-2 (two bf16 roundings are about 2^-8);
  fp8: R = torch._scaled_mm, rel 2e-2, elt 5e-2 (FP8 tensor-core sums keep fewer bits);
  blockscale: R = A and B dequantized with their scales, multiplied in f32 by torch (no TF32),
  rel 2e-2, elt 5e-2; torch's block-scaled result is checked the same way (its row says so).
The table: kernel, shape, dtype, tiles, tilec us, TFLOP/s, baseline, baseline us, TFLOP/s,
ratio (baseline time / tilec time: > 1 means tilec is faster), check, published figure.
"""
import argparse
import ctypes
import datetime
import os
import subprocess
import sys
import time
import statistics
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Arg, Bench, ptr_arg, rand, tensor_arg  # noqa: E402  (bench.py beside this file)
from tilec.stdlib import GEMM_SPLITS, GEMM_MIN_STEPS, GEMM_SWAP_TILES, gemm_plan  # noqa: E402  (bench.py put python/ on the path)

NK = [(4096, 7168), (7168, 2048), (2112, 7168), (24576, 1536), (14336, 4096)]
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)] + [(m, n, k) for m in (16, 64, 128, 1024, 4096) for n, k in NK]
BLOCKSCALE_EXTRA = [(4096, 7168, 16384)]
# DeepGEMM's README (deepseek-ai/DeepGEMM, normal GEMMs for dense models, H800 SXM5, NVCC 12.8)
DEEPGEMM_H800 = {(4096, 2112, 7168): 1009, (4096, 7168, 16384): 1426, (4096, 7168, 2048): 1168}

# tile candidates per kind, largest first: (BM, BN, BK); blockscale has no BK (it steps K by 128)
CANDIDATES = {
    "bf16": [(128, 256, 64), (128, 128, 64), (64, 128, 64), (64, 64, 64)],
    "fp8": [(128, 256, 128), (128, 128, 128), (64, 128, 128), (64, 64, 128)],
    "blockscale": [(128, 128), (64, 128), (64, 64)],
}
# more tiles --sweep times: 64-wide ones divide N = 2112 (33 of them; tile sides are powers of
# two, so 176 or 192 cannot be had) and 256 x 64 gives 4 full waves on 132 SMs at M = 4096
SWEEP_EXTRA = {
    "bf16": [(256, 128, 64), (256, 64, 64), (128, 64, 64)],
    "fp8": [(256, 128, 128), (256, 64, 128), (128, 64, 128)],
    "blockscale": [(256, 64), (128, 64)],
}
BASE = {"fp8": "fp8_gemm", "blockscale": "fp8_gemm_blockscale"}   # bf16: gemm_nt or gemm
TOL = {"bf16": (1e-2, 2e-2), "fp8": (2e-2, 5e-2), "blockscale": (2e-2, 5e-2)}


# ---- compiling, once per specialization ------------------------------------------------
class GemmBench(Bench):
    def __init__(self, args):
        super().__init__(types.SimpleNamespace(tilec=args.tilec, lib=args.lib, runs=args.iters,
                                               warmup=args.warmup))
        self.cache = {}
        self.compile_s = 0.0

    def compile(self, src, kernel, defines, flags=()):
        """bench.py's Bench.compile, with tilec's messages kept (not printed) and each
        specialization compiled once; raises RuntimeError with tilec's last lines."""
        key = (src, kernel, tuple(sorted(defines.items())), tuple(flags))
        if key not in self.cache:
            name = kernel + "".join("_%s%s" % kv for kv in sorted(defines.items()))
            out = os.path.join(self.tmp, name + ".cubin")
            cmd = [self.args.tilec, src, "--kernel", kernel, "--emit=cubin", "-o", out] + list(flags)
            for k, v in defines.items():
                cmd += ["-D", "%s=%s" % (k, v)]
            t0 = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True)
            self.compile_s += time.time() - t0
            if r.returncode != 0:
                msg = (r.stderr + r.stdout).strip().splitlines()
                self.cache[key] = RuntimeError("tilec %s %s failed (status %d): %s" % (
                    kernel, " ".join("%s=%s" % kv for kv in sorted(defines.items())), r.returncode,
                    " / ".join(m[:160] for m in msg[-3:])))
            else:
                self.cache[key] = self.rt.kernel(self.rt.load(out), kernel)
        v = self.cache[key]
        if isinstance(v, Exception):
            raise v
        return v

    def launcher(self, k, args):
        """A launch with its argument array built once (the timed call does only the launch)."""
        arr = (Arg * len(args))(*args)
        n = len(args)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        lib, check = self.rt.lib, self.rt.check

        def go():
            check(lib.tilert_launch(k, stream, arr, n), "launch")
        return go


# A configuration: (suffix, tiles, split): the kernel's name ends in suffix ("", "_swapab",
# "_splitk", "_swapab_splitk"), tiles its BM x BN [x BK], split the S of the _splitk kernels.
def plain(t):
    return ("", t, 1)


def plan_config(kind, shape, sms):
    p = gemm_plan(kind, shape[0], shape[1], shape[2], sms)
    return (p["suffix"], p["tiles"], p["split"])


def sweep_configs(kind, shape, sms, cands):
    """--sweep: every plain tile, and around the model's plan: its kernel at every split K admits,
    and for M <= 64 every swap-AB tile at the plan's split."""
    m, n, k = shape
    out = [plain(t) for t in cands + [t for t in SWEEP_EXTRA[kind] if t not in cands]]
    suffix, tiles, split = plan_config(kind, shape, sms)
    bk = 128 if kind == "blockscale" else tiles[2]
    swap = "_swapab" in suffix
    for s in GEMM_SPLITS:
        if s == 1 or -(-k // bk) >= s * GEMM_MIN_STEPS:
            out.append((("_swapab" if swap else "") + ("_splitk" if s > 1 else ""), tiles, s))
    if m <= 64:
        for bm, bn in GEMM_SWAP_TILES:
            t = (bm, bn) if kind == "blockscale" else (bm, bn, bk)
            out.append(("_swapab" + ("_splitk" if split > 1 else ""), t, split))
    seen, res = set(), []
    for c in out:
        if c not in seen:
            seen.add(c)
            res.append(c)
    return res


def config_text(c):
    return tiles_text(c[1]) + (" S=%d" % c[2] if c[2] > 1 else "")


def first_line(e):
    return str(e).splitlines()[0][:200] if str(e) else ""


def tiles_text(t):
    return "x".join(str(v) for v in t)


def parse_tiles(text):
    """'bf16=128x128x64/64x64x64,fp8=128x128x128' -> {kind: [tuple, ...]}"""
    out = {}
    for part in filter(None, text.split(",")):
        kind, _, spec = part.partition("=")
        if kind not in CANDIDATES:
            raise SystemExit("--tiles: unknown kind %r (bf16, fp8, blockscale)" % kind)
        want = 2 if kind == "blockscale" else 3
        lst = []
        for t in spec.split("/"):
            v = tuple(int(x) for x in t.split("x"))
            if len(v) != want:
                raise SystemExit("--tiles: %s takes %s" % (kind, "BMxBN" if want == 2 else "BMxBNxBK"))
            lst.append(v)
        out[kind] = lst
    return out


def ctas(m, n, t):
    return -(-m // t[0]) * -(-n // t[1])


def order_for(kind, m, n, cands, min_ctas):
    """The candidates in the order to try them for this shape: the first (largest) that fills the
    GPU, then the smaller ones, then the larger ones (the fallbacks if the first does not compile)."""
    pick = next((i for i, t in enumerate(cands) if ctas(m, n, t) >= min_ctas), len(cands) - 1)
    return cands[pick:] + cands[:pick][::-1]


# ---- checks -------------------------------------------------------------------------------
def rel_check(c, ref, kind):
    """(ok, text): c finite and near ref, normwise and elementwise (TOL[kind])."""
    rel, elt = TOL[kind]
    c, ref = c.float(), ref.float()
    if not bool(torch.isfinite(c).all()):
        return False, "%d non-finite" % int((~torch.isfinite(c)).sum())
    d = c - ref
    rn = float(d.norm() / ref.norm().clamp(min=1e-30))
    re = float(d.abs().max() / ref.abs().max().clamp(min=1e-30))
    return rn <= rel and re <= elt, "err %.1e/%.1e" % (rn, re)


# ---- data ---------------------------------------------------------------------------------
def quant_1x128(x):
    """x [M, K] f32 -> e4m3 [M, K], scales f32 [M, ceil(K/128)] with x ~= q * s per 1 x 128 block."""
    m, k = x.shape
    kb = -(-k // 128)
    xp = torch.nn.functional.pad(x, (0, kb * 128 - k)).view(m, kb, 128)
    s = xp.abs().amax(-1).clamp(min=1e-4) / 448.0
    q = (xp / s[..., None]).view(m, kb * 128)[:, :k].contiguous().to(torch.float8_e4m3fn)
    return q, s.contiguous()


def quant_128x128(w):
    """w [N, K] f32 -> e4m3 [N, K], scales f32 [ceil(N/128), ceil(K/128)] per 128 x 128 block."""
    n, k = w.shape
    nb, kb = -(-n // 128), -(-k // 128)
    wp = torch.nn.functional.pad(w, (0, kb * 128 - k, 0, nb * 128 - n)).view(nb, 128, kb, 128)
    s = wp.abs().amax(dim=(1, 3)).clamp(min=1e-4) / 448.0
    q = (wp / s[:, None, :, None]).view(nb * 128, kb * 128)[:n, :k].contiguous().to(torch.float8_e4m3fn)
    return q, s.contiguous()


def dequant(q, s, bm, bk):
    """q * s, each scale covering a bm x bk block."""
    e = s.repeat_interleave(bm, 0)[:q.shape[0]].repeat_interleave(bk, 1)[:, :q.shape[1]]
    return q.float() * e


def blockscale_baselines(a, sa, b, sb):
    """Every way this torch offers to run the block-scaled FP8 GEMM (cuBLAS), as (name, fn) pairs
    that ran; and the refusals.  torch takes the 1 x 128 scales of A outer-dim-major (stride
    (1, M)) and B as b.t() ([K, N], column-major) with its 128 x 128 scales as [K/128, N/128];
    each entry point is tried with the scale tensors in both memory orders, since a layout torch
    does not want may cost a copy (or another kernel) per call.  The caller checks each against
    the reference and times every correct one: the row takes the fastest."""
    F = torch.nn.functional
    layouts = {"scales M-major": (sa.t().contiguous().t(), sb.t()),
               "scales contiguous": (sa.t().contiguous().t(), sb.t().contiguous())}
    tries = []
    for lname, (sa_t, sb_t) in layouts.items():
        tries.append(("torch._scaled_mm, " + lname,
                      lambda sa_t=sa_t, sb_t=sb_t: torch._scaled_mm(a, b.t(), scale_a=sa_t, scale_b=sb_t,
                                                                    out_dtype=torch.bfloat16)))
        if hasattr(F, "scaled_mm") and hasattr(F, "ScalingType"):
            tries.append(("F.scaled_mm, " + lname,
                          lambda sa_t=sa_t, sb_t=sb_t: F.scaled_mm(
                              a, b.t(), scale_a=sa_t, scale_recipe_a=F.ScalingType.BlockWise1x128,
                              scale_b=sb_t, scale_recipe_b=F.ScalingType.BlockWise128x128,
                              output_dtype=torch.bfloat16)))
    ok, errors = [], []
    for name, f in tries:
        try:
            f()
            torch.cuda.synchronize()
            ok.append((name, f))
        except Exception as e:  # noqa: BLE001 (any refusal means: not this path)
            errors.append(name + ": " + (str(e).splitlines()[0][:100] if str(e) else type(e).__name__))
    return ok, "; ".join(errors)


def kernel_us(fn, runs=20):
    """An independent timing of fn: the GPU time of the kernels one call launches, from the
    profiler's (CUPTI) kernel records, median over runs.  The event timing brackets host work
    too (launch overhead, copies a path makes per call); when the two disagree by much, the
    event time of that path is not its kernels' time, and the row says so."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    per_call = []
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
            torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    if not evs:
        return None, 0
    total = sum(e.device_time for e in evs) if hasattr(evs[0], "device_time") else sum(e.cuda_time for e in evs)
    per_call.append(total / runs)
    return statistics.median(per_call), len(evs) // runs


# ---- the runs -----------------------------------------------------------------------------
class Rows:
    def __init__(self):
        self.rows, self.failures, self.notes = [], 0, []

    def add(self, kernel, shape, dtype, tiles, tm, base, bm, ok, check, published=""):
        m, n, k = shape
        flop = 2.0 * m * n * k
        tf = flop / (tm * 1e-6) / 1e12
        btf = flop / (bm * 1e-6) / 1e12 if bm else None
        self.rows.append((kernel, "%dx%dx%d" % shape, dtype, tiles, "%.1f" % tm, "%.1f" % tf, base,
                          "%.1f" % bm if bm else "-", "%.1f" % btf if btf else "-",
                          "%.2f" % (bm / tm) if bm else "-", ("ok " if ok else "WRONG ") + check, published))
        if not ok:
            self.failures += 1
        print("  " + " | ".join(self.rows[-1]), flush=True)

    def fail(self, kernel, shape, dtype, tiles, why):
        self.failures += 1
        self.rows.append((kernel, "%dx%dx%d" % shape, dtype, tiles, "-", "-", "-", "-", "-", "-",
                          "FAILED: " + why, ""))
        print("  " + " | ".join(self.rows[-1]), flush=True)

    def table(self):
        hdr = ("kernel", "shape MxNxK", "dtype", "tiles", "tilec us", "TFLOP/s", "baseline", "base us",
               "TFLOP/s", "ratio", "check", "published")
        lines = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
        lines += ["| " + " | ".join(str(x).replace("|", "/") for x in r) + " |" for r in self.rows]
        return "\n".join(lines)


def run_tiles(b, rows, kind, kernel, shape, dtype, cands, body):
    """Compiles the first plain candidate that compiles (every one with --sweep) and runs
    body.run(k, config); then (not with --sweep, whose candidates include them) the model's plan
    (python/tilec/stdlib.py's gemm_plan) when it is another configuration: a row of its own."""
    configs = cands if b.sweep else [plain(t) for t in cands]
    if "_persistent" in kernel or kernel.endswith("_ws"):   # no split-K or swap-AB form
        configs = [cf for cf in configs if cf[0] == "" and cf[2] == 1]
    errors = []
    ran = False
    for c in configs:
        try:
            k = body.compile(c)
        except RuntimeError as e:
            errors.append(str(e))
            continue
        ran = True
        try:
            body.run(k, c)
        except Exception as e:  # noqa: BLE001 (a launch that fails is a failed row; go on)
            rows.fail(kernel + c[0], shape, dtype, config_text(c), "%s: %s" % (type(e).__name__, first_line(e)))
        if not b.sweep:
            break
    if not ran:
        rows.fail(kernel, shape, dtype, "/".join(config_text(c) for c in configs), errors[-1] if errors else "no tiles")
    if b.sweep or not b.plan or "_persistent" in kernel or kernel.endswith("_ws"):
        return
    c = plan_config(kind, shape, b.sms)
    if c == plain(cands[0]):
        return
    try:
        k = body.compile(c)
        body.run(k, c)
    except Exception as e:  # noqa: BLE001
        rows.fail(kernel + c[0], shape, dtype, config_text(c) + " (plan)", "%s: %s" % (type(e).__name__, first_line(e)))


def split_launcher(b, k, args, c, out, reduce_src, reduce_kernel, reduce_defines):
    """The launch of configuration c: k alone, or (split K) k into a workspace W [S, M, N] f32 and
    the reduce kernel from W into out; returns (go, W or None)."""
    if c[2] == 1:
        return b.launcher(k, args + [tensor_arg(out)]), None
    w = torch.empty([c[2], out.shape[0], out.shape[1]], device="cuda", dtype=torch.float32)
    g1 = b.launcher(k, args + [tensor_arg(w)])
    g2 = b.launcher(b.compile(reduce_src, reduce_kernel, reduce_defines), [tensor_arg(w), tensor_arg(out)])

    def go():
        g1()
        g2()
    go.workspace = w    # the launches hold W's address only: W lives as long as go
    return go, w


def bench_bf16(b, rows, shape, cands):
    m, n, k = shape
    src = os.path.join(b.root, "stdlib/gemm.tile")
    a = rand([m, k], torch.bfloat16)
    w = rand([n, k], torch.bfloat16)       # gemm_nt's B: [N, K]
    bt = w.t().contiguous()                 # gemm's B: [K, N], the same matrix
    kernels = [("gemm_nt", w, lambda: torch.matmul(a, w.t()), "torch.matmul(a, w.t())"),
               ("gemm_nt_persistent", w, lambda: torch.matmul(a, w.t()), "torch.matmul(a, w.t())"),
               ("gemm_nt_persistent_flat", w, lambda: torch.matmul(a, w.t()), "torch.matmul(a, w.t())"),
               ("gemm", bt, lambda: torch.matmul(a, bt), "torch.matmul(a, b)")]
    if b.ws:    # the warp-specialized forms (a producer warpgroup issues the TMA loads), same tiles
        kernels[1:1] = [("gemm_nt_ws", w, lambda: torch.matmul(a, w.t()), "torch.matmul(a, w.t())")]
        kernels.append(("gemm_ws", bt, lambda: torch.matmul(a, bt), "torch.matmul(a, b)"))
    for kernel, bmat, base_fn, base_name in kernels:
        ref = base_fn()
        c = torch.empty([m, n], device="cuda", dtype=torch.bfloat16)

        class Body:
            @staticmethod
            def compile(cf):
                t = cf[1]
                d = {"T": "bf16", "BM": t[0], "BN": t[1], "BK": t[2]}
                if cf[2] == 1:
                    d["TC"] = "bf16"
                return b.compile(src, kernel + cf[0], d)

            @staticmethod
            def run(kk, cf):
                go, _ = split_launcher(b, kk, [tensor_arg(a), tensor_arg(bmat)], cf, c, src, "splitk_reduce",
                                       {"TC": "bf16"})
                c.fill_(float("nan"))
                go()
                torch.cuda.synchronize()
                ok, text = rel_check(c, ref, "bf16")
                (tm, _, _), (bm, _, _) = b.timer.compare([go, base_fn])
                rows.add(kernel + cf[0], shape, "bf16", config_text(cf), tm, base_name, bm, ok, text)
        run_tiles(b, rows, "bf16", kernel, shape, "bf16", cands, Body)
        del ref, c
    del a, w, bt


def bench_fp8(b, rows, shape, cands):
    m, n, k = shape
    src = os.path.join(b.root, "stdlib/fp8_gemm.tile")
    a = torch.randn([m, k], device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn([n, k], device="cuda").to(torch.float8_e4m3fn)
    sa = torch.tensor(0.75, device="cuda", dtype=torch.float32)
    sb = torch.tensor(1.25, device="cuda", dtype=torch.float32)

    def base_fn():
        return torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    ref = base_fn()
    c = torch.empty([m, n], device="cuda", dtype=torch.bfloat16)

    for kernel in ["fp8_gemm"] + (["fp8_gemm_ws"] if b.ws else []):
        class Body:
            @staticmethod
            def compile(cf):
                t = cf[1]
                return b.compile(src, kernel + cf[0], {"BM": t[0], "BN": t[1], "BK": t[2]})

            @staticmethod
            def run(kk, cf):
                go, _ = split_launcher(b, kk, [tensor_arg(a), tensor_arg(w), ptr_arg(sa), ptr_arg(sb)], cf, c, src,
                                       "fp8_splitk_reduce", {})
                c.fill_(float("nan"))
                go()
                torch.cuda.synchronize()
                ok, text = rel_check(c, ref, "fp8")
                (tm, _, _), (bm, _, _) = b.timer.compare([go, base_fn])
                rows.add(kernel + cf[0], shape, "e4m3", config_text(cf), tm, "torch._scaled_mm (per-tensor)", bm,
                         ok, text)
        run_tiles(b, rows, "fp8", kernel, shape, "e4m3", cands, Body)


def bench_blockscale(b, rows, shape, cands):
    m, n, k = shape
    src = os.path.join(b.root, "stdlib/fp8_gemm.tile")
    a, sa = quant_1x128(torch.randn([m, k], device="cuda"))
    w, sw = quant_128x128(torch.randn([n, k], device="cuda") * 0.02)
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = dequant(a, sa, 1, 128) @ dequant(w, sw, 128, 128).t()
    torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    cands_base, why = blockscale_baselines(a, sa, w, sw)
    good = []
    for name, f in cands_base:
        bok, btext = rel_check(f(), ref, "blockscale")
        if bok:
            good.append((name, f))
        else:
            rows.notes.append("%dx%dx%d: %s WRONG %s, not used" % (shape + (name, btext)))
    if not good and cands_base:
        why = "every torch path wrong"
    base_fn, base_name = None, "- (torch: %s)" % why[:80]
    if good:
        # torch's fastest correct path: time every one alternating, L2 flushed, medians
        meds = b.timer.compare([f for _, f in good])
        i = min(range(len(good)), key=lambda j: meds[j][0])
        base_fn, base_name = good[i][1], good[i][0]
        for (name, _), (med, _, _) in zip(good, meds):
            rows.notes.append("%dx%dx%d: %s %.1f us%s" % (shape + (name, med, " (taken)" if name == base_name else "")))
        kus, nk = kernel_us(base_fn)
        if kus is not None:
            rows.notes.append("%dx%dx%d: %s, profiler: %d kernel(s) per call, %.1f us of kernel time "
                              "against %.1f us by events" % (shape + (base_name, nk, kus, meds[i][0])))
            if meds[i][0] > 1.25 * kus + 3.0:
                base_name += " (events %.0f%% over kernel time)" % (100.0 * (meds[i][0] / kus - 1))
    pub = DEEPGEMM_H800.get(shape)
    published = "DeepGEMM H800: %d TFLOP/s" % pub if pub else ""
    c = torch.empty([m, n], device="cuda", dtype=torch.bfloat16)

    for kernel in ["fp8_gemm_blockscale"] + (["fp8_gemm_blockscale_ws"] if b.ws else []):
        class Body:
            @staticmethod
            def compile(cf):
                t = cf[1]
                return b.compile(src, kernel + cf[0], {"BM": t[0], "BN": t[1]})

            @staticmethod
            def run(kk, cf):
                go, _ = split_launcher(b, kk, [tensor_arg(a), tensor_arg(sa), tensor_arg(w), tensor_arg(sw)], cf, c,
                                       src, "fp8_splitk_reduce", {})
                c.fill_(float("nan"))
                go()
                torch.cuda.synchronize()
                ok, text = rel_check(c, ref, "blockscale")
                if base_fn is None:
                    (tm, _, _), = b.timer.compare([go])
                    bm = None
                else:
                    (tm, _, _), (bm, _, _) = b.timer.compare([go, base_fn])
                tf = 2.0 * m * n * k / (tm * 1e-6) / 1e12
                rows.add(kernel + cf[0], shape, "e4m3", config_text(cf), tm, base_name, bm, ok, text,
                         published + (" (tilec %.2fx)" % (tf / pub) if pub else ""))
        run_tiles(b, rows, "blockscale", kernel, shape, "e4m3", cands, Body)
    del ref


def parse_shapes(text):
    out = []
    for s in filter(None, text.split(",")):
        v = tuple(int(x) for x in s.lower().split("x"))
        if len(v) != 3:
            raise SystemExit("--shapes: MxNxK, got %r" % s)
        out.append(v)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--tilec", required=True)
    p.add_argument("--lib", required=True, help="libtilert.so")
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                   help="the folder holding stdlib/ (the bundle's src)")
    p.add_argument("--only", default="bf16,fp8,blockscale", help="a subset of bf16,fp8,blockscale")
    p.add_argument("--shapes", default="", help="MxNxK,... instead of the default shapes")
    p.add_argument("--iters", type=int, default=50, help="timed runs per kernel (default 50)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--tiles", default="", help="KIND=BMxBNxBK[/BMxBNxBK...],... candidate tiles "
                   "(blockscale: BMxBN), tried in order")
    p.add_argument("--sweep", action="store_true", help="time every candidate tile that compiles, and the "
                   "split-K and swap-AB configurations around the model's plan")
    p.add_argument("--no-plan", action="store_true", help="no rows for the model's plan (python/tilec/stdlib.py "
                   "gemm_plan: swap-AB, split-K, other tiles), only the plain kernels")
    p.add_argument("--min-ctas", type=int, default=0, help="programs a tile must give to be picked "
                   "(default: 3/4 of the SMs)")
    p.add_argument("--out", default="", help="also write the table (markdown) to this file")
    p.add_argument("--ws", action="store_true", help="also the warp-specialized kernels (gemm_nt_ws, gemm_ws, "
                   "fp8_gemm_ws, fp8_gemm_blockscale_ws: a producer warpgroup issues the TMA loads), each with "
                   "the tiles its plain kernel got, a row of its own")
    args = p.parse_args()

    kinds = [x for x in args.only.split(",") if x]
    for x in kinds:
        if x not in CANDIDATES:
            raise SystemExit("--only: unknown %r (bf16, fp8, blockscale)" % x)
    given = parse_tiles(args.tiles)
    shapes = parse_shapes(args.shapes) if args.shapes else None

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    b = GemmBench(args)
    b.root = args.root
    b.sweep = args.sweep
    b.plan = not args.no_plan
    b.ws = args.ws
    rows = Rows()
    props = torch.cuda.get_device_properties(0)
    min_ctas = args.min_ctas or (props.multi_processor_count * 3) // 4
    b.sms = props.multi_processor_count
    head = ["# tilec GEMM bench (bench/gemm.py)", "",
            "%s, %d SMs; torch %s, CUDA %s; %s" % (torch.cuda.get_device_name(), props.multi_processor_count,
                                                   torch.__version__, torch.version.cuda,
                                                   datetime.datetime.now().strftime("%Y-%m-%d %H:%M")),
            "medians of %d runs after %d warm-ups, L2 flushed before each, tilec and baseline alternating; "
            "ratio = baseline us / tilec us" % (args.iters, args.warmup),
            "command: " + " ".join(sys.argv), ""]
    print("\n".join(head), flush=True)
    t0 = time.time()
    runs = {"bf16": bench_bf16, "fp8": bench_fp8, "blockscale": bench_blockscale}
    for kind in kinds:
        run_shapes = shapes or (SHAPES + (BLOCKSCALE_EXTRA if kind == "blockscale" else []))
        for shape in run_shapes:
            cands = given.get(kind) or CANDIDATES[kind]
            if kind == "blockscale":
                cands = [t for t in cands if t[1] <= 128 and 128 % t[1] == 0] or cands
            order = cands if kind in given or args.sweep else order_for(kind, shape[0], shape[1], cands, min_ctas)
            if args.sweep:
                order = sweep_configs(kind, shape, b.sms, order)
            try:
                runs[kind](b, rows, shape, order)
            except Exception as e:  # noqa: BLE001 (one broken shape must not hide the others)
                rows.fail(kind, shape, kind, "-", "%s: %s" % (type(e).__name__, first_line(e)))
            torch.cuda.empty_cache()
    table = rows.table()
    if rows.notes:
        table += "\n\nBaseline notes (every torch path tried, its event median, the profiler's kernel time):\n" + \
            "\n".join("- " + n for n in rows.notes)
    tail = "\n%d rows, %d failed; %.0f s (tilec compiles %.0f s)" % (len(rows.rows), rows.failures,
                                                                    time.time() - t0, b.compile_s)
    print()
    print(table)
    print(tail)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(head) + "\n" + table + "\n" + tail + "\n")
    return 1 if rows.failures else 0


if __name__ == "__main__":
    sys.exit(main())
