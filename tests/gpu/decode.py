#!/usr/bin/env python3
"""decode.py: stdlib/decode.tile on the GPU against a float64 reference (torch).

    python3 tests/gpu/decode.py --tilec build/tools/tilec --lib build/runtime/libtilert.so [--root .]

gpu-check runs it (from the bundle: --root src).  Exit 77 (SKIP) without torch or a GPU.
kv_cache_append fills a paged cache (pages shuffled, the first pages of two sequences shared as
prefix caching does, FP8 e4m3 with per-tensor scales too), then paged_attn_decode and
paged_attn_decode_combine run on it at long and ragged lengths (1, PAGE - 1, PAGE + 1, 1000,
5000), every page size, D, GQA ratio (MHA, GQA, MQA), Sq 1 and 4 (speculative, causal), the
split off, forced on and automatic (the off and on results agree within rounding); a seq_lens
entry beyond the table's capacity makes that sequence NaN and leaves the others right; shapes that
disagree get TILERT_ERROR_REQUIRES.  Bounds: bf16 2e-2, f16 5e-3, FP8 cache 6e-2 (e4m3 keeps
3 mantissa bits: each cached value within 2^-4 relative), LSE 2e-3.
"""
import argparse
import math
import os
import sys

try:
    import torch
except ImportError:
    print("SKIP: no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no GPU")
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from bench import Arg, Bench, float_arg, rand, tensor_arg  # noqa: E402

TILERT_ERROR_REQUIRES = 20
MAXS = 64
failures = []


def check(name, got, want, tol):
    got, want = got.double(), want.double()
    bad = ~(torch.isclose(got, want, rtol=tol, atol=tol) | (torch.isinf(want) & (got == want)))
    ok = not bad.any().item()
    print("  %-78s %s" % (name, "ok" if ok else "FAIL (%d of %d, max err %.3g)" % (
        bad.sum().item(), bad.numel(), (got - want).abs().nan_to_num(math.inf).max().item())))
    if not ok:
        failures.append(name)


def ref_decode(q, kc, vc, bt, lens, page, sc, ks, vs):
    """q [B, Sq, Hq, D]; caches [P, page, Hkv, D] (their stored values); float64 O and LSE."""
    B, Sq, Hq, D = q.shape
    g = Hq // kc.shape[2]
    O = torch.zeros(B, Sq, Hq, D, dtype=torch.float64, device=q.device)
    L = torch.full((B, Sq, Hq), -math.inf, dtype=torch.float64, device=q.device)
    for b in range(B):
        n = int(lens[b])
        j = torch.arange(n, device=q.device)
        rows = bt[b, j // page].long() * page + j % page
        k = kc.double().reshape(-1, kc.shape[2], D)[rows] * ks       # [n, Hkv, D]
        v = vc.double().reshape(-1, vc.shape[2], D)[rows] * vs
        k, v = k.repeat_interleave(g, 1).transpose(0, 1), v.repeat_interleave(g, 1).transpose(0, 1)
        s = torch.einsum("thd,hjd->thj", q[b].double(), k) * sc       # [Sq, Hq, n]
        t = torch.arange(Sq, device=q.device)[:, None, None]
        s = s.masked_fill(j[None, None, :] > n - Sq + t, -math.inf)
        lse = torch.logsumexp(s, -1)
        p = torch.exp(s - torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)[..., None])
        O[b] = torch.nan_to_num(torch.einsum("thj,hjd->thd", p, v), nan=0.0)
        L[b] = lse
    return O, L


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tilec", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    a = p.parse_args()
    a.runs, a.warmup = 1, 0
    b = Bench(a)
    torch.manual_seed(11)
    src = os.path.join(a.root, "stdlib/decode.tile")
    ks_ = {}

    def kern(name, **d):
        key = (name,) + tuple(sorted(d.items()))
        if key not in ks_:
            ks_[key] = b.compile(src, name, {k: v for k, v in d.items()})
        return ks_[key]

    dts = {"bf16": torch.bfloat16, "f16": torch.float16, "f8e4m3": torch.float8_e4m3fn}
    cases = [  # T, KV, D, PAGE, B, Sq, Hq, Hkv, lengths
        ("bf16", "bf16", 128, 16, 5, 1, 32, 8, [1, 15, 17, 1000, 5000]),
        ("bf16", "bf16", 128, 64, 5, 1, 32, 8, [1, 63, 65, 1000, 5000]),
        ("bf16", "bf16", 64, 32, 4, 1, 8, 1, [31, 33, 1, 4000]),
        ("bf16", "bf16", 256, 16, 3, 1, 4, 4, [17, 1000, 2]),
        ("f16", "f16", 128, 32, 3, 4, 16, 4, [4, 33, 3000]),
        ("bf16", "bf16", 128, 16, 2, 4, 8, 2, [1, 2000]),
        ("bf16", "f8e4m3", 128, 16, 4, 1, 32, 8, [1, 17, 1000, 5000]),
        ("bf16", "f8e4m3", 64, 64, 2, 2, 8, 8, [65, 3000]),
    ]
    for T, KV, D, PAGE, B, Sq, Hq, Hkv, lens in cases:
        maxp = max((n + PAGE - 1) // PAGE for n in lens) + 2
        P = B * maxp
        perm = torch.randperm(P, device="cuda").to(torch.int32)
        bt = perm[:B * maxp].reshape(B, maxp).clone()
        if B >= 3:
            bt[2, :2] = bt[1, :2]      # a shared prefix: sequence 2's first pages are sequence 1's
        lens_t = torch.tensor(lens, dtype=torch.int32, device="cuda")
        fp8 = KV == "f8e4m3"
        ks, vs = (0.5, 0.25) if fp8 else (1.0, 1.0)
        kc = torch.zeros(P, PAGE, Hkv, D, dtype=dts[KV], device="cuda")
        vc = torch.zeros_like(kc)
        # the cache through kv_cache_append: every token of every sequence (shared pages get the
        # later sequence's values, as the reference sees them), -1 skips a token
        tok_k = rand([B * maxp * PAGE, Hkv, D], dts[T])
        tok_v = rand([B * maxp * PAGE, Hkv, D], dts[T])
        slots = []
        for s in range(B):
            for j in range(maxp * PAGE):
                slots.append(int(bt[s, j // PAGE]) * PAGE + j % PAGE if j < lens[s] else -1)
        slot_t = torch.tensor(slots, dtype=torch.int64, device="cuda")
        # tokens naming one slot twice (the shared pages): keep the last one only
        last = {}
        for i, sl in enumerate(slots):
            if sl >= 0:
                last[sl] = i
        slot_t = torch.tensor([sl if sl >= 0 and last[sl] == i else -1 for i, sl in enumerate(slots)],
                              dtype=torch.int64, device="cuda")
        b.launch(kern("kv_cache_append", T=T, KV=KV, D=D, PAGE=PAGE),
                 [tensor_arg(tok_k), tensor_arg(tok_v), tensor_arg(kc), tensor_arg(vc), tensor_arg(slot_t),
                  float_arg(ks), float_arg(vs)])
        torch.cuda.synchronize()
        # the append against its definition
        sel = slot_t >= 0
        want_k = (tok_k[sel].float() / ks).to(dts[KV])
        got_k = kc.reshape(-1, Hkv, D)[slot_t[sel]]
        ok = torch.equal(got_k.view(torch.uint8) if fp8 else got_k, want_k.view(torch.uint8) if fp8 else want_k)
        print("  %-78s %s" % ("kv_cache_append KV=%s D=%d PAGE=%d" % (KV, D, PAGE), "ok" if ok else "FAIL"))
        if not ok:
            failures.append("kv_cache_append KV=%s D=%d" % (KV, D))
        q = rand([B, Sq, Hq, D], dts[T])
        sc = 1 / math.sqrt(D)
        ro, rl = ref_decode(q, kc.float(), vc.float(), bt, lens, PAGE, sc, ks, vs)
        tol = {"bf16": 2e-2, "f16": 5e-3, "f8e4m3": 6e-2}[KV]
        outs = {}
        for split in (0, 5, -1):
            o = torch.full_like(q, float("nan"))
            lse = torch.full((B, Sq, Hq), float("nan"), device="cuda")
            op = torch.full((B, MAXS, Sq * Hq, D), float("nan"), device="cuda")
            lp = torch.full((B, MAXS, Sq * Hq), float("nan"), device="cuda")
            args = [tensor_arg(x) for x in (q, kc, vc, bt, lens_t, o, lse, op, lp)] + [
                float_arg(sc), float_arg(ks), float_arg(vs)]
            d = dict(T=T, KV=KV, D=D, PAGE=PAGE, SPLIT=split)
            b.launch(kern("paged_attn_decode", **d), args)
            b.launch(kern("paged_attn_decode_combine", **d), args)
            torch.cuda.synchronize()
            name = "decode T=%s KV=%s D=%d PAGE=%d Hq/Hkv=%d/%d Sq=%d lens=%s SPLIT=%d" % (
                T, KV, D, PAGE, Hq, Hkv, Sq, lens, split)
            check(name, o, ro, tol)
            check(name + " LSE", lse, rl, 2e-3 if not fp8 else 1e-2)
            outs[split] = o
        check("decode split 5 == no split (D=%d PAGE=%d KV=%s)" % (D, PAGE, KV), outs[5], outs[0], 1e-2)
    # a seq_lens entry beyond max_pages * PAGE: that sequence NaN, the others right, nothing read outside
    D, PAGE, B, Hq, Hkv = 128, 16, 3, 8, 2
    kc, vc = rand([12, PAGE, Hkv, D], torch.bfloat16), rand([12, PAGE, Hkv, D], torch.bfloat16)
    bt = torch.arange(12, dtype=torch.int32, device="cuda").reshape(3, 4)
    lens = [40, 65, 64]
    q = rand([B, 1, Hq, D], torch.bfloat16)
    for split in (0, 3):
        o = torch.full_like(q, 7.0)
        lse = torch.full((B, 1, Hq), 7.0, device="cuda")
        op, lp = torch.empty(B, 4, Hq, D, device="cuda"), torch.empty(B, 4, Hq, device="cuda")
        args = [tensor_arg(x) for x in (q, kc, vc, bt, torch.tensor(lens, dtype=torch.int32, device="cuda"), o, lse,
                                        op, lp)] + [float_arg(0.088), float_arg(1.0), float_arg(1.0)]
        for kn in ("paged_attn_decode", "paged_attn_decode_combine"):
            b.launch(kern(kn, D=D, PAGE=PAGE, SPLIT=split), args)
        torch.cuda.synchronize()
        ro, _ = ref_decode(q, kc.float(), vc.float(), bt, [40, 0, 64], PAGE, 0.088, 1.0, 1.0)
        ok = torch.isnan(o[1]).all().item() and torch.isnan(lse[1]).all().item()
        print("  %-78s %s" % ("seq_lens beyond capacity -> NaN (SPLIT=%d)" % split, "ok" if ok else "FAIL"))
        if not ok:
            failures.append("seq_lens beyond capacity SPLIT=%d" % split)
        check("  the other sequences (SPLIT=%d)" % split, o[[0, 2]], ro[[0, 2]], 2e-2)
    # contracts: a GQA mismatch and a block table of the wrong batch are refused, nothing written
    kk = kern("paged_attn_decode", D=128, PAGE=16, SPLIT=0)
    for what, hkv, btb, phrase in (("GQA mismatch (Hq=8, Hkv=3)", 3, 2, "multiple"),
                                   ("block_table rows != B", 2, 3, "one row per sequence")):
        q = rand([2, 1, 8, 128], torch.bfloat16)
        kc = rand([8, 16, hkv, 128], torch.bfloat16)
        o = torch.full_like(q, float("nan"))
        args = [tensor_arg(x) for x in (q, kc, kc, torch.zeros(btb, 4, dtype=torch.int32, device="cuda"),
                                        torch.ones(2, dtype=torch.int32, device="cuda"), o,
                                        torch.empty(0, 0, 0, device="cuda"), torch.empty(0, 0, 0, 0, device="cuda"),
                                        torch.empty(0, 0, 0, device="cuda"))] + [float_arg(0.1), float_arg(1.0),
                                                                                 float_arg(1.0)]
        arr = (Arg * len(args))(*args)
        s = b.rt.lib.tilert_launch(kk, None, arr, len(args))
        torch.cuda.synchronize()
        msg = b.rt.lib.tilert_last_error().decode()
        ok = s == TILERT_ERROR_REQUIRES and phrase in msg and torch.isnan(o).all().item()
        print("  %-78s %s" % ("refused: " + what, "ok" if ok else "FAIL (status %d: %s)" % (s, msg)))
        if not ok:
            failures.append(what)
    print("decode.py: %s" % ("all passed" if not failures else "%d FAILED" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
