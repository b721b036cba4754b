#!/usr/bin/env python3
"""attention.py: the stdlib attention kernels on the GPU against a float64 reference (torch).

    python3 tests/gpu/attention.py --tilec build/tools/tilec --lib build/runtime/libtilert.so [--root .]

gpu-check runs it (from the bundle: --root src).  Exit 77 (SKIP) without torch or a GPU.
Random inputs, NaN-poisoned outputs, ragged lengths Sq, Skv in {1, 17, 1000, 4097} (Sq != Skv
too), D in {64, 128, 256}, bf16 and f16, causal (bottom-right) and not, Hq/Hkv in {1, 4, 8, Hq};
flash_attn_fwd_lse's LSE; a [B, S, H, D]-memory case (strided views); flash_attn_varlen_fwd with
empty and one-token sequences; flash_attn_fwd_fp8 (e4m3 inputs) within its stated bound; and the launches whose shapes disagree (a GQA mismatch, another
head dimension) get TILERT_ERROR_REQUIRES with their message, writing nothing.
"""
import argparse
import ctypes
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
from bench import Arg, Bench, float_arg, int_arg, rand, tensor_arg  # noqa: E402

TILERT_ERROR_REQUIRES = 20
failures = []


def ref_attn(q, k, v, causal, scale):
    """q [B, Hq, Sq, D], k/v [B, Hkv, Skv, D] in float64: O and the natural-log LSE."""
    q, k, v = q.double(), k.double(), v.double()
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ k.transpose(-1, -2) * scale
    sq, skv = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(skv, device=q.device)[None, :]
        s = s.masked_fill(j > i + skv - sq, -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)[..., None])
    return torch.nan_to_num(p @ v, nan=0.0), lse


def check(name, got, want, tol):
    got, want = got.double(), want.double()
    bad = ~(torch.isclose(got, want, rtol=tol, atol=tol) | (torch.isinf(want) & (got == want)))
    ok = not bad.any().item()
    print("  %-70s %s" % (name, "ok" if ok else "FAIL (%d of %d, max err %.3g)" % (
        bad.sum().item(), bad.numel(), (got - want).abs().nan_to_num(math.inf).max().item())))
    if not ok:
        failures.append(name)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tilec", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    a = p.parse_args()
    a.runs, a.warmup = 1, 0
    b = Bench(a)
    torch.manual_seed(10)
    src = os.path.join(a.root, "stdlib/attention.tile")
    ks = {}

    def kern(name, T, D):
        if (name, T, D) not in ks:
            ks[name, T, D] = b.compile(src, name, {"T": T, "D": D})
        return ks[name, T, D]

    dts = {"bf16": torch.bfloat16, "f16": torch.float16}
    lens = [(1, 1), (17, 17), (1000, 1000), (4097, 4097), (17, 1000), (1000, 4097), (4097, 17), (1, 4097), (1000, 17)]
    heads = [(8, 8), (8, 2), (8, 1), (4, 4), (8, 4)]   # Hq/Hkv = 1, 4, Hq (MQA), 1, 2
    n = 0
    for D in (64, 128, 256):
        for sq, skv in lens:
            for causal in (0, 1):
                hq, hkv = heads[n % len(heads)]
                T = "f16" if n % 4 == 3 else "bf16"
                lse = n % 3 == 0
                n += 1
                bsz = 2 if sq * skv < 2000000 else 1
                q = rand([bsz, hq, sq, D], dts[T])
                k, v = rand([bsz, hkv, skv, D], dts[T]), rand([bsz, hkv, skv, D], dts[T])
                o = torch.full_like(q, float("nan"))
                scale = 1 / math.sqrt(D)
                args = [tensor_arg(q), tensor_arg(k), tensor_arg(v), tensor_arg(o)]
                if lse:
                    L = torch.full([bsz, hq, sq], float("nan"), device="cuda")
                    args.append(tensor_arg(L))
                b.launch(kern("flash_attn_fwd_lse" if lse else "flash_attn_fwd", T, D),
                         args + [float_arg(scale), int_arg(causal)])
                torch.cuda.synchronize()
                ro, rl = ref_attn(q, k, v, causal, scale)
                name = "%s T=%s D=%d B=%d Hq=%d Hkv=%d Sq=%d Skv=%d causal=%d" % (
                    "fwd_lse" if lse else "fwd", T, D, bsz, hq, hkv, sq, skv, causal)
                check(name, o, ro, 2e-2 if T == "bf16" else 5e-3)
                if lse:
                    check(name + " LSE", L, rl, 2e-3)
    # FP8: e4m3 Q, K, V with descale factors; the bound of stdlib/attention.tile's flash_attn_fwd_fp8:
    # |O - ref| <= 2^-4 max|V * v_descale| + 2^-8 |ref|, and the mean error far below (unbiased rounding)
    f8 = torch.float8_e4m3fn
    for i, (D, sq, skv, causal, hq, hkv, lse) in enumerate((
            (128, 1000, 1000, 0, 8, 2, 1), (128, 4097, 4097, 1, 4, 4, 0), (64, 17, 1000, 1, 8, 1, 1),
            (64, 1000, 17, 0, 8, 8, 0), (256, 1, 4097, 0, 8, 4, 1), (256, 1000, 1000, 1, 4, 1, 0),
            (128, 1, 1, 1, 8, 8, 1), (128, 1000, 4097, 1, 8, 2, 1), (128, 1000, 2000, 1, 8, 2, 1),
            (64, 17, 1000, 0, 8, 1, 0), (256, 4097, 1000, 1, 4, 4, 1))):
        vt = int(i >= 8)   # V given transposed, [B, Hkv, D, Skv] (TMA where Skv is a multiple of 16)
        q8, k8, v8 = (rand([1, h, n, D], torch.float32).to(f8) for h, n in ((hq, sq), (hkv, skv), (hkv, skv)))
        ds = [torch.tensor([x], device="cuda") for x in (0.75, 1.5, 0.625)]
        o = torch.full([1, hq, sq, D], float("nan"), device="cuda", dtype=torch.bfloat16)
        L = torch.full([1, hq, sq] if lse else [0, 0, 0], float("nan"), device="cuda")
        scale = 1 / math.sqrt(D)
        key = ("flash_attn_fwd_fp8", vt, D)
        if key not in ks:
            ks[key] = b.compile(src, "flash_attn_fwd_fp8", {"D": D, "BM": 64 if D == 256 else 128, "VT": vt})
        vin = v8.transpose(2, 3).contiguous() if vt else v8
        b.launch(ks[key], [tensor_arg(q8), tensor_arg(k8), tensor_arg(vin), tensor_arg(o), tensor_arg(L)] +
                 [tensor_arg(x) for x in ds] + [float_arg(scale), int_arg(causal)])
        torch.cuda.synchronize()
        vq = v8.double() * 0.625
        ro, rl = ref_attn(q8.double() * 0.75, k8.double() * 1.5, vq, causal, scale)
        name = "fwd_fp8 D=%d Hq=%d Hkv=%d Sq=%d Skv=%d causal=%d VT=%d" % (D, hq, hkv, sq, skv, causal, vt)
        err = (o.double() - ro).abs()
        bound = 2.0 ** -4 * vq.abs().max().item() + 2.0 ** -8 * ro.abs()
        ok = bool((err <= bound).all().item()) and err.mean().item() <= 2.0 ** -6 * vq.abs().max().item()
        print("  %-70s %s" % (name, "ok" if ok else "FAIL (max err %.3g, mean %.3g)" % (
            err.nan_to_num(math.inf).max().item(), err.mean().item())))
        if not ok:
            failures.append(name)
        if lse:
            check(name + " LSE", L, rl, 2e-3)
    # [B, S, H, D] memory, as [B, H, S, D] views with its strides
    for causal in (0, 1):
        q = rand([2, 1000, 8, 128], torch.bfloat16).transpose(1, 2)
        k, v = (rand([2, 1700, 2, 128], torch.bfloat16).transpose(1, 2) for _ in range(2))
        o = torch.full([2, 1000, 8, 128], float("nan"), device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        b.launch(kern("flash_attn_fwd", "bf16", 128), [tensor_arg(q), tensor_arg(k), tensor_arg(v), tensor_arg(o),
                                                         float_arg(128 ** -0.5), int_arg(causal)])
        torch.cuda.synchronize()
        check("fwd bshd memory Hq=8 Hkv=2 Sq=1000 Skv=1700 causal=%d" % causal, o,
              ref_attn(q, k, v, causal, 128 ** -0.5)[0], 2e-2)
    # varlen: empty, one-token, ragged and long sequences
    for D, hq, hkv, lq, lk, causal in ((128, 8, 2, [0, 1, 17, 1000, 5, 4097], [3, 1, 1000, 17, 0, 4097], 1),
                                       (64, 4, 4, [17, 0, 1, 1000], [1000, 4, 1, 4097], 0),
                                       (256, 8, 1, [1, 300, 17], [1, 300, 999], 1)):
        cq = torch.tensor([0] + lq, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32)
        ck = torch.tensor([0] + lk, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32)
        q = rand([sum(lq), hq, D], torch.bfloat16)
        k, v = rand([sum(lk), hkv, D], torch.bfloat16), rand([sum(lk), hkv, D], torch.bfloat16)
        o = torch.full_like(q, float("nan"))
        scale = 1 / math.sqrt(D)
        b.launch(kern("flash_attn_varlen_fwd", "bf16", D),
                 [tensor_arg(q), tensor_arg(k), tensor_arg(v), tensor_arg(o), tensor_arg(cq), tensor_arg(ck),
                  int_arg(max(lq)), int_arg(max(lk)), float_arg(scale), int_arg(causal)])
        torch.cuda.synchronize()
        want = torch.zeros_like(o, dtype=torch.float64)
        for i in range(len(lq)):
            qs, ks_ = slice(cq[i].item(), cq[i + 1].item()), slice(ck[i].item(), ck[i + 1].item())
            r, _ = ref_attn(q[qs].transpose(0, 1)[None], k[ks_].transpose(0, 1)[None], v[ks_].transpose(0, 1)[None],
                            causal, scale)
            want[qs] = r[0].transpose(0, 1)
        check("varlen D=%d Hq=%d Hkv=%d q=%s k=%s causal=%d" % (D, hq, hkv, lq, lk, causal), o, want, 2e-2)
    # contracts: a GQA mismatch and another head dimension are refused, nothing written
    kk = kern("flash_attn_fwd", "bf16", 128)

    def refused(what, q, k, v, accept):
        """Launches flash_attn_fwd on q, k, v with O poisoned; ok when accept(status, message) holds
        and O is untouched."""
        o = torch.full_like(q, float("nan"))
        args = [tensor_arg(q), tensor_arg(k), tensor_arg(v), tensor_arg(o), float_arg(0.1), int_arg(0)]
        arr = (Arg * len(args))(*args)
        s = b.rt.lib.tilert_launch(kk, None, arr, len(args))
        torch.cuda.synchronize()
        msg = b.rt.lib.tilert_last_error().decode()
        ok = accept(s, msg) and torch.isnan(o).all().item()
        print("  %-70s %s" % ("refused: " + what, "ok" if ok else "FAIL (status %d: %s)" % (s, msg)))
        if not ok:
            failures.append(what)
    for what, kd, hkv, phrase in (("GQA mismatch (Hq=16, Hkv=3)", 128, 3, "must be a multiple of K's"),
                                  ("K with D=64 for D=128", 64, 4, "must equal D")):
        refused(what, rand([1, 16, 100, 128], torch.bfloat16), rand([1, hkv, 100, kd], torch.bfloat16),
                rand([1, hkv, 100, kd], torch.bfloat16),
                lambda s, msg, phrase=phrase: s == TILERT_ERROR_REQUIRES and phrase in msg)
    # flash_attn_fwd's first key loop is warp-specialized: its K and V loads are TMA's alone, so a K
    # that TMA cannot describe (rows 258 bytes apart, not a multiple of 16) is refused at launch
    # with an error naming the argument, nothing written (lang/PIPELINING.md, "No fallback")
    refused("K with 258-byte rows (no TMA)", rand([1, 4, 100, 128], torch.bfloat16),
            rand([1, 4, 100, 129], torch.bfloat16)[..., :128], rand([1, 4, 100, 128], torch.bfloat16),
            lambda s, msg: s != 0 and "'K'" in msg and "TMA" in msg)
    print("attention.py: %s" % ("all passed" if not failures else "%d FAILED" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
