"""stdlib.py: the standard library's kernels behind small functions.

    c = tilec.stdlib.gemm(a, b)          # a [M, K], b [K, N], bf16 or f16: c [M, N] = a @ b
    o = tilec.stdlib.flash_attn(q, k, v, causal=True)     # q [B, Hq, Sq, D], k, v [B, Hkv, Skv, D]
    flash_attn_varlen, paged_attn_decode (a paged KV cache), moe_topk_softmax, moe_grouped_gemm
    (and _kn, _scaled), moe_combine: each checks its arguments (ValueError, TypeError naming the
    argument), allocates its outputs beside its inputs (torch tensors; or pass out=), and
    launches on `stream`.

Each function compiles its kernel from the stdlib's .tile sources (tilec._rt.find_stdlib) for
the current device, once per process and dtype, and launches it on the given stream.
"""
import math
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


# ---- helpers for the functions below ------------------------------------------------------------

_TORCH_NAMES = {v: k for k, v in _args._TORCH.items()}   # tilec dtype name -> torch dtype name


def _empty(fn, what, like, shape, dtype):
    """A new tensor of `like`'s library (torch, or anything with torch's new_empty) of shape and
    tilec dtype `dtype`; TypeError naming the argument `what` to pass where none can be made."""
    new_empty = getattr(like, "new_empty", None)
    if new_empty is None:
        raise TypeError("%s: pass %s= (a %s has no new_empty to make it)" % (fn, what, type(like).__name__))
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(like, torch.Tensor):
        return new_empty(tuple(shape), dtype=getattr(torch, _TORCH_NAMES[dtype]))
    if _args.view(like).dtype == dtype:
        return new_empty(tuple(shape))
    dt = type(getattr(like, "dtype", None))
    try:   # a torch-like dtype object, as the tests' stand-in makes (dtype.name)
        return new_empty(tuple(shape), dtype=dt(_TORCH_NAMES[dtype]))
    except Exception:
        raise TypeError("%s: pass %s= (cannot make a %s tensor beside a %s)" %
                        (fn, what, dtype, type(like).__name__)) from None


def _check(fn, name, v, shape=None, dtype=None, rank=None):
    """v (a TensorView) has this rank, shape (None entries: any) and dtype, else ValueError/TypeError."""
    if rank is not None and len(v.shape) != rank:
        raise ValueError("%s: %s must be %d-D, got shape %s" % (fn, name, rank, list(v.shape)))
    if shape is not None and (len(v.shape) != len(shape) or
                              any(w is not None and s != w for s, w in zip(v.shape, shape))):
        raise ValueError("%s: %s must be %s, got %s" % (fn, name, [("*" if w is None else w) for w in shape],
                                                       list(v.shape)))
    if dtype is not None and v.dtype not in ((dtype,) if isinstance(dtype, str) else dtype):
        raise TypeError("%s: %s must be %s, got %s" % (fn, name, dtype if isinstance(dtype, str) else
                                                       " or ".join(dtype), v.dtype))


def _out(fn, name, out, like, shape, dtype):
    """out (checked: shape and dtype) or a new tensor beside like; returns (tensor, view)."""
    if out is None:
        out = _empty(fn, name, like, shape, dtype)
    v = _args.view(out)
    _check(fn, name, v, shape=shape, dtype=dtype)
    return out, v


def _scale(fn, sm_scale, d):
    if sm_scale is None:
        return 1.0 / math.sqrt(d)
    if not isinstance(sm_scale, (int, float)) or isinstance(sm_scale, bool) or not math.isfinite(sm_scale):
        raise TypeError("%s: sm_scale must be a finite number, got %r" % (fn, sm_scale))
    return float(sm_scale)


def _num(fn, name, v):
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        raise TypeError("%s: %s must be a finite number, got %r" % (fn, name, v))
    return float(v)


def _flag(fn, name, v):
    if not isinstance(v, (bool, int)):
        raise TypeError("%s: %s must be a bool, got %r" % (fn, name, v))
    return 1 if v else 0


# ---- attention (stdlib/attention.tile) ------------------------------------------------------------

_ATTN_D = (64, 128, 256)
_ATTN_T = ("bf16", "f16")


def flash_attn(q, k, v, causal=False, sm_scale=None, lse=None, out=None, stream=None):
    """O = softmax(Q K^T * sm_scale [+ causal mask]) V with stdlib/attention.tile's flash_attn_fwd:
    q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D] (Hq a multiple of Hkv: GQA, MQA), bf16 or f16, any
    strides (a [B, S, H, D] tensor is passed as its view x.transpose(1, 2)); D 64, 128 or 256.
    causal: query i sees keys j <= i + Skv - Sq (aligned bottom-right).  sm_scale: default
    1 / sqrt(D).  out: [B, Hq, Sq, D] of q's dtype (default: q.new_empty).  lse: False (none),
    True (allocate it) or an f32 [B, Hq, Sq] tensor: then flash_attn_fwd_lse also writes the
    natural-log log-sum-exp of each query's scaled scores, and (out, lse) is returned.
    Returns out, or (out, lse).  Without a GPU: tilec.NoDriverError."""
    fn = "flash_attn"
    vq, vk, vv = _args.view(q), _args.view(k), _args.view(v)
    for name, x in (("q", vq), ("k", vk), ("v", vv)):
        _check(fn, name, x, rank=4, dtype=_ATTN_T)
    if vk.dtype != vq.dtype or vv.dtype != vq.dtype:
        raise TypeError("%s: q, k and v must have one dtype, got %s, %s and %s" % (fn, vq.dtype, vk.dtype, vv.dtype))
    b, hq, sq, d = vq.shape
    if d not in _ATTN_D:
        raise ValueError("%s: the head dimension (q.shape[3]) must be 64, 128 or 256, got %d" % (fn, d))
    _check(fn, "k", vk, shape=(b, None, None, d))
    hkv, skv = vk.shape[1], vk.shape[2]
    _check(fn, "v", vv, shape=(b, hkv, skv, d))
    if hkv == 0 or hq % hkv:
        raise ValueError("%s: q's heads (%d) must be a multiple of k's (%d)" % (fn, hq, hkv))
    scale = _scale(fn, sm_scale, d)
    c = _flag(fn, "causal", causal)
    out, vo = _out(fn, "out", out, q, (b, hq, sq, d), vq.dtype)
    defines = {"T": vq.dtype, "D": d}
    if lse is None or lse is False:
        compile("attention.tile", kernel="flash_attn_fwd", defines=defines).kernel("flash_attn_fwd")(
            vq, vk, vv, vo, scale, c, stream=stream)
        return out
    lse, vl = _out(fn, "lse", None if lse is True else lse, q, (b, hq, sq), "f32")
    compile("attention.tile", kernel="flash_attn_fwd_lse", defines=defines).kernel("flash_attn_fwd_lse")(
        vq, vk, vv, vo, vl, scale, c, stream=stream)
    return out, lse


def flash_attn_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False,
                      sm_scale=None, out=None, stream=None):
    """Attention over packed sequences with flash_attn_varlen_fwd: q [total_q, Hq, D], k and v
    [total_k, Hkv, D] (bf16 or f16; D 64, 128 or 256); sequence b owns rows cu_seqlens_q[b] ..
    cu_seqlens_q[b + 1] of q and out and cu_seqlens_k[b] .. cu_seqlens_k[b + 1] of k and v
    (int32, B + 1 offsets each, non-decreasing); max_seqlen_q and max_seqlen_k bound the
    lengths (the grid comes from max_seqlen_q).  causal and sm_scale as flash_attn.
    out: [total_q, Hq, D] (default: q.new_empty).  Returns out."""
    fn = "flash_attn_varlen"
    vq, vk, vv = _args.view(q), _args.view(k), _args.view(v)
    for name, x in (("q", vq), ("k", vk), ("v", vv)):
        _check(fn, name, x, rank=3, dtype=_ATTN_T)
    if vk.dtype != vq.dtype or vv.dtype != vq.dtype:
        raise TypeError("%s: q, k and v must have one dtype, got %s, %s and %s" % (fn, vq.dtype, vk.dtype, vv.dtype))
    tq, hq, d = vq.shape
    if d not in _ATTN_D:
        raise ValueError("%s: the head dimension (q.shape[2]) must be 64, 128 or 256, got %d" % (fn, d))
    _check(fn, "k", vk, shape=(None, None, d))
    _check(fn, "v", vv, shape=vk.shape)
    if vk.shape[1] == 0 or hq % vk.shape[1]:
        raise ValueError("%s: q's heads (%d) must be a multiple of k's (%d)" % (fn, hq, vk.shape[1]))
    vcq, vck = _args.view(cu_seqlens_q), _args.view(cu_seqlens_k)
    _check(fn, "cu_seqlens_q", vcq, rank=1, dtype="i32")
    _check(fn, "cu_seqlens_k", vck, rank=1, dtype="i32")
    if vcq.shape[0] < 2 or vck.shape != vcq.shape:
        raise ValueError("%s: cu_seqlens_q and cu_seqlens_k must both hold B + 1 >= 2 offsets, got %d and %d" %
                         (fn, vcq.shape[0], vck.shape[0]))
    for name, x, lo in (("max_seqlen_q", max_seqlen_q, 1), ("max_seqlen_k", max_seqlen_k, 0)):
        if not isinstance(x, int) or isinstance(x, bool) or x < lo:
            raise ValueError("%s: %s must be an int >= %d, got %r" % (fn, name, lo, x))
    scale = _scale(fn, sm_scale, d)
    c = _flag(fn, "causal", causal)
    out, vo = _out(fn, "out", out, q, (tq, hq, d), vq.dtype)
    compile("attention.tile", kernel="flash_attn_varlen_fwd", defines={"T": vq.dtype, "D": d}).kernel(
        "flash_attn_varlen_fwd")(vq, vk, vv, vo, vcq, vck, max_seqlen_q, max_seqlen_k, scale, c, stream=stream)
    return out


# ---- decoding against a paged KV cache (stdlib/decode.tile) --------------------------------------

DECODE_BM = 16     # paged_attn_decode's rows a program (its default)


def decode_splits(b, sq, hq, hkv, d, page, max_pages, sms=132):
    """How many programs share each sequence's keys in paged_attn_decode with SPLIT = -1 (its
    automatic choice, decode.tile's formula): enough for two programs per SM, each at least 4
    blocks of BN = 4096 / D keys of the table's capacity (max_pages * PAGE); at least 1."""
    bn = 4096 // d
    progs = b * hkv * (-(-(hq // hkv * sq) // DECODE_BM))
    if progs == 0:
        return 1
    return max(1, min(-(-(max_pages * page) // (4 * bn)), -(-(2 * sms) // progs)))


def paged_attn_decode(q, k_cache, v_cache, block_table, seq_lens, sm_scale=None, k_scale=1.0, v_scale=1.0,
                      lse=None, out=None, split="auto", stream=None):
    """Attention of Sq new query tokens per sequence against a paged KV cache with
    stdlib/decode.tile's paged_attn_decode (and paged_attn_decode_combine for split-KV):
    q [B, Sq, Hq, D] (bf16 or f16; Sq 1 to 8; a [B, Hq, D] query is passed as q[:, None]),
    k_cache and v_cache [num_pages, PAGE, Hkv, D] (q's dtype, or float8_e4m3fn holding K / k_scale
    and V / v_scale; last dimension contiguous), block_table [B, max_pages] int32, seq_lens [B]
    int32 (the keys of each sequence, the new tokens included).  Query t of sequence b sees keys
    j <= seq_lens[b] - Sq + t.  sm_scale: default 1 / sqrt(D).  out: [B, Sq, Hq, D] (default:
    q.new_empty); lse: False, True (allocate) or an f32 [B, Sq, Hq] tensor, then (out, lse) is
    returned.  split: "auto" (decode_splits: a workspace of that many f32 partials per sequence
    is allocated beside q, torch tensors only, and the combine kernel runs), 1 (none), or a
    count N > 1.  Returns out, or (out, lse)."""
    fn = "paged_attn_decode"
    vq, vkc, vvc = _args.view(q), _args.view(k_cache), _args.view(v_cache)
    _check(fn, "q", vq, rank=4, dtype=_ATTN_T)
    b, sq, hq, d = vq.shape
    if d not in _ATTN_D:
        raise ValueError("%s: the head dimension (q.shape[3]) must be 64, 128 or 256, got %d" % (fn, d))
    if not 1 <= sq <= 8:
        raise ValueError("%s: q must hold 1 to 8 query tokens per sequence (q.shape[1]), got %d" % (fn, sq))
    _check(fn, "k_cache", vkc, rank=4, dtype=(vq.dtype, "f8e4m3"))
    npages, page, hkv = vkc.shape[0], vkc.shape[1], vkc.shape[2]
    _check(fn, "k_cache", vkc, shape=(None, None, None, d))
    _check(fn, "v_cache", vvc, shape=vkc.shape, dtype=vkc.dtype)
    if hkv == 0 or hq % hkv:
        raise ValueError("%s: q's heads (%d) must be a multiple of the caches' (%d)" % (fn, hq, hkv))
    vbt, vsl = _args.view(block_table), _args.view(seq_lens)
    _check(fn, "block_table", vbt, rank=2, dtype="i32")
    _check(fn, "block_table", vbt, shape=(b, None))
    _check(fn, "seq_lens", vsl, shape=(b,), dtype="i32")
    if vbt.shape[1] < 1:
        raise ValueError("%s: block_table must have at least one column" % fn)
    scale = _scale(fn, sm_scale, d)
    ks, vs = _num(fn, "k_scale", k_scale), _num(fn, "v_scale", v_scale)
    # split "auto" and 1 share one compilation (SPLIT = -1): the kernel's own choice, capped by the
    # workspace, is NSPLIT; a workspace of exactly that many (or none: MAXS = 0, NSPLIT = 1)
    if split == "auto":
        nsplit, spec = decode_splits(b, sq, hq, hkv, d, page, vbt.shape[1], core.device_sm_count() or 132), -1
    elif isinstance(split, int) and not isinstance(split, bool) and split >= 1:
        nsplit, spec = split, (-1 if split == 1 else split)
    else:
        raise ValueError("%s: split must be 'auto' or an int >= 1, got %r" % (fn, split))
    out, vo = _out(fn, "out", out, q, (b, sq, hq, d), vq.dtype)
    want_lse = not (lse is None or lse is False)
    if want_lse:
        lse, vl = _out(fn, "lse", None if lse is True else lse, q, (b, sq, hq), "f32")
    else:
        vl = _args.TensorView(0, "f32", (0, 0, 0), (0, 0, 1))      # empty: no LSE
    ws = []
    if nsplit > 1:
        op, lp = _f32_empty(q, (b, nsplit, sq * hq, d)), _f32_empty(q, (b, nsplit, sq * hq))
        if op is None:
            raise TypeError("%s: split=%r needs an f32 workspace beside q (torch tensors); pass split=1" %
                            (fn, split))
        if stream is not None and hasattr(op, "record_stream") and type(stream).__module__.startswith("torch"):
            op.record_stream(stream)
            lp.record_stream(stream)
        ws = [op, lp]
        vop, vlp = _args.view(op), _args.view(lp)
    else:   # MAXS = 0: no split
        vop = _args.TensorView(0, "f32", (b, 0, sq * hq, d), (0, 0, d, 1))
        vlp = _args.TensorView(0, "f32", (b, 0, sq * hq), (0, 0, 1))
    defines = {"T": vq.dtype, "KV": vkc.dtype, "D": d, "PAGE": page, "SPLIT": spec}
    args = (vq, vkc, vvc, vbt, vsl, vo, vl, vop, vlp, scale, ks, vs)
    compile("decode.tile", kernel="paged_attn_decode", defines=defines).kernel("paged_attn_decode")(
        *args, stream=stream)
    if nsplit > 1:
        compile("decode.tile", kernel="paged_attn_decode_combine", defines=defines).kernel(
            "paged_attn_decode_combine")(*args, stream=stream)
    del ws
    return (out, lse) if want_lse else out


# ---- mixture of experts (stdlib/moe.tile) ---------------------------------------------------------

def _pow2(n, lo):
    p = lo
    while p < n:
        p *= 2
    return p


def _rows(fn, name, x, dtype="i32"):
    """x's data pointer as a ptr<dtype> argument (a 1-D contiguous tensor: int32 by default)."""
    v = _args.view(x)
    _check(fn, name, v, rank=1, dtype=dtype)
    if v.shape[0] > 1 and v.strides[0] != 1:
        raise ValueError("%s: %s must be contiguous" % (fn, name))
    return v


def moe_topk_softmax(logits, topk, renorm=True, weights=None, ids=None, stream=None):
    """Routing with moe_topk_softmax: logits [T, E] f32 (E <= 1024) -> weights [T, topk] f32 and
    ids [T, topk] int32 (topk a power of two): the softmax over the E experts, its topk largest (ties: the lower
    expert first), renormalized to sum 1 when renorm.  Returns (weights, ids)."""
    fn = "moe_topk_softmax"
    vl = _args.view(logits)
    _check(fn, "logits", vl, rank=2, dtype="f32")
    t, e = vl.shape
    if not isinstance(topk, int) or isinstance(topk, bool) or not 1 <= topk <= e or topk & (topk - 1):
        raise ValueError("%s: topk must be a power of two in [1, E = %d], got %r" % (fn, e, topk))
    if e > 1024:
        raise ValueError("%s: at most 1024 experts, got %d" % (fn, e))
    weights, vw = _out(fn, "weights", weights, logits, (t, topk), "f32")
    ids, vi = _out(fn, "ids", ids, logits, (t, topk), "i32")
    ne = _pow2(e, 16)
    compile("moe.tile", kernel=fn, defines={"NE": ne, "TOPK": topk, "BT": max(1, min(16, 4096 // ne))}).kernel(fn)(
        vl, vw, vi, _flag(fn, "renorm", renorm), stream=stream)
    return weights, ids


def _grouped_args(fn, a, w, offsets, kn):
    """The grouped GEMMs' common checks: a [rows, K] bf16 or f16, w [E, N, K] (kn: [E, K, N]) of
    a's dtype, offsets int32 [E + 1]; returns (views of a, w and offsets, rows, N)."""
    va, vw = _args.view(a), _args.view(w)
    _check(fn, "a", va, rank=2, dtype=("bf16", "f16"))
    _check(fn, "w", vw, rank=3, dtype=va.dtype)
    rows, k = va.shape
    e = vw.shape[0]
    _check(fn, "w", vw, shape=(None, k, None) if kn else (None, None, k))
    vo = _rows(fn, "offsets", offsets)
    if vo.shape[0] != e + 1:
        raise ValueError("%s: offsets must hold E + 1 = %d entries, got %d" % (fn, e + 1, vo.shape[0]))
    return va, vw, vo, rows, vw.shape[2] if kn else vw.shape[1]


def _grouped_launch(fn, a, w, offsets, out, stream, kn=False, row_scale=None):
    """Checks the grouped GEMM fn's arguments (_grouped_args; row_scale: f32 [rows]), makes out
    [rows, N] bf16 when not given, compiles and launches fn; returns out."""
    va, vw, vo, rows, n = _grouped_args(fn, a, w, offsets, kn)
    extra = []
    if row_scale is not None:
        vs = _rows(fn, "row_scale", row_scale, "f32")
        if vs.shape[0] != rows:
            raise ValueError("%s: row_scale must hold a's rows = %d entries, got %d" % (fn, rows, vs.shape[0]))
        extra.append(vs)
    out, vc = _out(fn, "out", out, a, (rows, n), "bf16")
    compile("moe.tile", kernel=fn, defines={"T": va.dtype}).kernel(fn)(va, vw, vo, *extra, vc, stream=stream)
    return out


def moe_grouped_gemm(a, w, offsets, out=None, stream=None):
    """The experts' GEMMs with moe_grouped_gemm: rows offsets[e] .. offsets[e + 1] of a [rows, K]
    (bf16 or f16) times w[e]^T, w [E, N, K] (nn.Linear's layout, a's dtype), into the same rows of
    out [rows, N] bf16 (default: a.new_empty); offsets: int32 [E + 1], nondecreasing, at most rows,
    any values (the padded offsets of moe_align or the unpadded ones of moe_offsets): the kernel
    finds each expert's blocks from them on the GPU, so empty experts and skewed routing cost
    nothing.  Rows of out no expert owns are not written.  Returns out."""
    return _grouped_launch("moe_grouped_gemm", a, w, offsets, out, stream)


def moe_grouped_gemm_kn(a, w, offsets, out=None, stream=None):
    """moe_grouped_gemm with the weights K-major per expert (moe_grouped_gemm_kn): rows
    offsets[e] .. offsets[e + 1] of a [rows, K] times w[e], w [E, K, N]; otherwise as
    moe_grouped_gemm.  Returns out."""
    return _grouped_launch("moe_grouped_gemm_kn", a, w, offsets, out, stream, kn=True)


def moe_grouped_gemm_scaled(a, w, offsets, row_scale, out=None, stream=None):
    """moe_grouped_gemm with each row r of out times row_scale[r] (moe_grouped_gemm_scaled; f32
    [rows], e.g. the routing weight of the row), applied to the f32 product before rounding to
    bf16; w [E, N, K], otherwise as moe_grouped_gemm.  Returns out."""
    return _grouped_launch("moe_grouped_gemm_scaled", a, w, offsets, out, stream, row_scale=row_scale)


def moe_combine(y, slot_of, w, out=None, stream=None):
    """The weighted sum of each token's expert rows with moe_combine: out[t] = sum over k of
    w[t, k] * y[slot_of[t * topk + k]] (in f32, k in order), y [slots, H] bf16 or f16,
    slot_of int32 [T * topk], w [T, topk] f32, out [T, H] bf16 (default: y.new_empty).  Returns out."""
    fn = "moe_combine"
    vy, vw = _args.view(y), _args.view(w)
    _check(fn, "y", vy, rank=2, dtype=("bf16", "f16"))
    _check(fn, "w", vw, rank=2, dtype="f32")
    t, topk = vw.shape
    vs = _rows(fn, "slot_of", slot_of)
    if vs.shape[0] != t * topk:
        raise ValueError("%s: slot_of must hold T * topk = %d entries, got %d" % (fn, t * topk, vs.shape[0]))
    out, vo = _out(fn, "out", out, y, (t, vy.shape[1]), "bf16")
    compile("moe.tile", kernel=fn, defines={"T": vy.dtype, "TOPK": topk}).kernel(fn)(vy, vs, vw, vo, stream=stream)
    return out
