"""stdlib.py: the standard library's kernels behind small functions.

    c = tilec.stdlib.gemm(a, b)          # a [M, K], b [K, N], bf16 or f16: c [M, N] = a @ b

Each function compiles its kernel from the stdlib's .tile sources (tilec._rt.find_stdlib) for
the current device, once per process and dtype, and launches it on the given stream.
"""
import os
import sys

from . import _args, core


def _source(name):
    from ._rt import find_stdlib
    return os.path.join(find_stdlib(), name)


def compile(file, kernel=None, defines=None, **kw):
    """A stdlib kernel by its file ("gemm.tile", "softmax.tile", ...): tilec.compile on the stdlib's
    source (the installed one, or this tree's), e.g. compile("norms.tile", "rmsnorm", {"T": "bf16"})."""
    return core.compile(_source(file), kernel=kernel, defines=defines, **kw)


# ---- choosing a GEMM configuration from the problem size -----------------------------------
#
# The stdlib GEMMs come as plain kernels (gemm, gemm_nt, fp8_gemm, fp8_gemm_blockscale), swap-AB
# kernels (_swapab: C^T = B A^T, for M <= 64), split-K kernels (_splitk, _swapab_splitk: f32
# partials to W [S, M, N], summed in split order by splitk_reduce / fp8_splitk_reduce) and tile
# sizes.  The generated C launcher chooses among specializations by dtype only, so the choice by
# shape is made here (and by bench/gemm.py, which imports gemm_plan): a small time model of the
# H200, evaluated for every candidate, the cheapest taken.  Per candidate (tiles BM x BN, split S):
#   per program:  work = BM * BN * ceil(K / S / BK) * BK multiply-adds at RATE[kind] * EFF[tiles]
#                 per SM, and its bytes of A and B moved at most at (bytes in flight) / LATENCY
#                 (4 stages of (BM + BN) x BK: few programs cannot pull the DRAM bandwidth);
#   waves:        ceil(tiles * S / SMs) programs' times one after the other;
#   the whole:    at least the unique bytes of A, B and C at DRAM_BW;
#   split-K:      plus W written and read again (2 * S * M * N * 4 bytes) and one more launch.
# The constants are estimates fitted to bench/results/2026-11-29-h200-gemm.md; `bench/gemm.py
# --sweep` times every candidate, which is how to check (and refit) them.
GEMM_BK = {"bf16": 64, "fp8": 128, "blockscale": 128}
GEMM_TILES = {   # plain kernels: (BM, BN) -> efficiency (fraction of the SM's tensor-core peak)
    "bf16": {(128, 256): 0.80, (256, 128): 0.80, (128, 128): 0.72, (256, 64): 0.65, (128, 64): 0.55,
             (64, 128): 0.50, (64, 64): 0.35},
    "blockscale": {(128, 128): 0.72, (256, 64): 0.65, (128, 64): 0.55, (64, 128): 0.50, (64, 64): 0.35},
}
GEMM_TILES["fp8"] = GEMM_TILES["bf16"]
GEMM_SWAP_TILES = {(16, 128): 0.25, (32, 128): 0.40, (64, 128): 0.50}   # swap-AB: (BM, BN)
GEMM_RATE = {"bf16": 3.75e12, "fp8": 7.5e12, "blockscale": 3.75e12}     # multiply-adds/s per SM at peak
GEMM_DRAM_BW, GEMM_LATENCY, GEMM_LAUNCH = 4.0e12, 1.2e-6, 2.0e-6
GEMM_SPLITS = (1, 2, 4, 8, 16)
GEMM_MIN_STEPS = 4      # a split keeps at least this many BK steps of K


def _gemm_time(kind, m, n, k, bm, bn, eff, s, sms):
    bk = GEMM_BK[kind]
    esz = 1 if kind != "bf16" else 2
    steps = -(-(-(-k // bk)) // s)
    tiles = -(-m // bm) * -(-n // bn)
    compute = bm * bn * steps * bk / (GEMM_RATE[kind] * eff)
    stream = (bm + bn) * steps * bk * esz * GEMM_LATENCY / (4 * (bm + bn) * bk * esz)
    t = -(-(tiles * s) // sms) * max(compute, stream)
    extra = 2 * s * m * n * 4 / GEMM_DRAM_BW + GEMM_LAUNCH if s > 1 else 0.0
    # (the model's time, and the programs' time alone: it breaks ties at the DRAM bound)
    return max(t, ((m + n) * k * esz + m * n * 2) / GEMM_DRAM_BW) + extra, t + extra


def gemm_plan(kind, m, n, k, sms=132, max_split=16):
    """The configuration for an M x N x K GEMM of kind "bf16" (gemm / gemm_nt), "fp8" (fp8_gemm) or
    "blockscale" (fp8_gemm_blockscale): a dict with swap (bool), split (S, 1 = none), tiles
    (BM, BN[, BK]) and suffix, the kernel name's ending ("", "_swapab", "_splitk",
    "_swapab_splitk"); at most max_split splits; the cheapest under the model above (ties: the one the programs alone finish first, then the
    first in the tables' order).  Swap-AB is a candidate for M <= 64, ahead of the plain tiles."""
    if kind not in GEMM_BK:
        raise ValueError("gemm_plan: kind %r is none of bf16, fp8, blockscale" % (kind,))
    cands = [(False, t, e) for t, e in GEMM_TILES[kind].items()]
    if m <= 64:   # first, so that they win ties: no rows of the tensor cores spent on padding
        cands = [(True, t, e) for t, e in GEMM_SWAP_TILES.items()] + cands
    best = None
    for swap, (bm, bn), eff in cands:
        for s in GEMM_SPLITS:
            if s > max_split or (s > 1 and -(-k // GEMM_BK[kind]) < s * GEMM_MIN_STEPS):
                break
            t = _gemm_time(kind, m, n, k, bm, bn, eff, s, sms)
            if best is None or t < best[0]:
                best = (t, swap, bm, bn, s)
    _, swap, bm, bn, s = best
    tiles = (bm, bn) if kind == "blockscale" else (bm, bn, GEMM_BK[kind])
    return {"swap": swap, "split": s, "tiles": tiles,
            "suffix": ("_swapab" if swap else "") + ("_splitk" if s > 1 else "")}


def _f32_empty(like, shape):
    """An f32 tensor of like's library (torch), or None where this cannot make one."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(like, torch.Tensor):
        return like.new_empty(shape, dtype=torch.float32)
    return None


def gemm(a, b, out=None, stream=None, out_dtype=None, config="auto"):
    """C = A @ B with stdlib/gemm.tile's GEMMs (f32 accumulation): a [M, K] and b [K, N] of one
    dtype (bf16, f16), row-major or strided; out [M, N] (default: a.new_empty, torch-like tensors),
    its dtype out_dtype (default: a's).  config "auto": the kernel and tiles gemm_plan picks for
    this shape on this GPU (swap-AB, split-K: then an f32 workspace [S, M, N] is allocated beside
    a, torch tensors only, and splitk_reduce sums it); "default": `gemm` with its default tiles.
    Returns out.  Without a GPU: tilec.NoDriverError."""
    if config not in ("auto", "default"):
        raise ValueError("gemm: config must be 'auto' or 'default', not %r" % (config,))
    va, vb = _args.view(a), _args.view(b)
    if len(va.shape) != 2 or len(vb.shape) != 2:
        raise ValueError("gemm: a and b must be 2-D, got shapes %s and %s" % (va.shape, vb.shape))
    if va.dtype != vb.dtype:
        raise TypeError("gemm: a is %s and b is %s: one dtype for both" % (va.dtype, vb.dtype))
    (m, k), (k2, n) = va.shape, vb.shape
    if k != k2:
        raise ValueError("gemm: a is %dx%d and b is %dx%d: the inner dimensions differ" % (m, k, k2, n))
    if out is None:
        if not hasattr(a, "new_empty"):
            raise TypeError("gemm: pass out= (a %s has no new_empty to make it)" % type(a).__name__)
        out = a.new_empty((m, n)) if out_dtype is None else a.new_empty((m, n), dtype=out_dtype)
    vc = _args.view(out)
    if vc.shape != (m, n):
        raise ValueError("gemm: out is %s, not %dx%d" % ("x".join(map(str, vc.shape)), m, n))
    if config == "default":
        mod = compile("gemm.tile", kernel="gemm", defines={"T": va.dtype, "TC": vc.dtype})
        mod.kernel("gemm")(va, vb, vc, stream=stream)
        return out
    p = gemm_plan("bf16", m, n, k, core.device_sm_count() or 132)
    w = _f32_empty(a, (p["split"], m, n)) if p["split"] > 1 else None
    if p["split"] > 1 and w is None:     # no workspace to be had: the best plan without a split
        p = gemm_plan("bf16", m, n, k, core.device_sm_count() or 132, max_split=1)
    name = "gemm" + p["suffix"]
    bm, bn, bk = p["tiles"]
    d = {"T": va.dtype, "BM": bm, "BN": bn, "BK": bk}
    if p["split"] == 1:
        d["TC"] = vc.dtype
        compile("gemm.tile", kernel=name, defines=d).kernel(name)(va, vb, vc, stream=stream)
        return out
    # w is freed on return: torch's allocator reuses it in stream order, so a launch on another
    # torch stream than the current one must be recorded on that stream
    if stream is not None and hasattr(w, "record_stream") and type(stream).__module__.startswith("torch"):
        w.record_stream(stream)
    vw = _args.view(w)
    compile("gemm.tile", kernel=name, defines=d).kernel(name)(va, vb, vw, stream=stream)
    compile("gemm.tile", kernel="splitk_reduce", defines={"TC": vc.dtype}).kernel("splitk_reduce")(
        vw, vc, stream=stream)
    return out
