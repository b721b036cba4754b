#!/usr/bin/env python3
"""decode_sweep.py: paged_attn_decode (+ combine) variants side by side on the H200 (issue 11).

    python3 bench/decode_sweep.py --tilec PATH/tilec --lib PATH/libtilert.so \
        [--variants "BN=64,WARPS=4;BN=128,WARPS=8" ] [--shapes 16x4096x16,64x4096x64] [--runs 20]

Each variant (compile-time parameters, ';'-separated; an entry MINCTAS=N sets the occupancy hint
TILEC_MIN_CTAS=N for that compile) is compiled by tilec, checked against SDPA on the gathered
cache, and timed as bench.py times (L2 flushed, medians); the table gives us and TB/s over the
K + V bytes, and the ptxas registers / spills of each variant (tilec --emit=meta).
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Bench, close, float_arg, rand, tensor_arg  # noqa: E402


def parse_variant(s):
    defs, env = {}, {}
    for kv in filter(None, (x.strip() for x in s.split(","))):
        k, v = kv.split("=")
        if k == "MINCTAS":
            env["TILEC_MIN_CTAS"] = v
        else:
            defs[k] = v
    return defs, env


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tilec", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    p.add_argument("--variants", default="")
    p.add_argument("--shapes", default="16x4096x16,64x4096x16,16x4096x64,1x32768x16")
    p.add_argument("--kv", default="bf16")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    args = p.parse_args()
    torch.manual_seed(0)
    b = Bench(args)
    src = os.path.join(args.root, "stdlib/decode.tile")
    variants = [""] + [v for v in args.variants.split(";") if v.strip()]
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    pages = sorted({s[2] for s in shapes})
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        for v in variants:
            defs, env = parse_variant(v)
            for page in pages:
                kd = dict(defs, T="bf16", KV=args.kv, D=128, PAGE=page)
                jobs[(v, page, "k")] = ex.submit(b.build, src, "paged_attn_decode", kd, (), env)
                jobs[(v, page, "c")] = ex.submit(b.build, src, "paged_attn_decode_combine", kd, (), env)
                jobs[(v, page, "m")] = ex.submit(
                    subprocess.run, [args.tilec, src, "--kernel", "paged_attn_decode", "--emit=meta", "-o", "-"] +
                    sum([["-D", "%s=%s" % kv] for kv in kd.items()], []), capture_output=True, text=True,
                    env=dict(os.environ, **env))
    hq, hkv, d, maxs = 32, 8, 128, 64
    kvt = torch.float8_e4m3fn if args.kv == "f8e4m3" else torch.bfloat16
    rows = []
    for (bsz, s, page) in shapes:
        npg = s // page
        np_ = bsz * npg
        kc = rand([np_, page, hkv, d], torch.float32).to(kvt)
        vc = rand([np_, page, hkv, d], torch.float32).to(kvt)
        bt = torch.randperm(np_, device="cuda").to(torch.int32).reshape(bsz, npg)
        lens = torch.full([bsz], s, dtype=torch.int32, device="cuda")
        q = rand([bsz, 1, hq, d], torch.bfloat16)
        idx = bt.long()
        kr = kc[idx].reshape(bsz, s, hkv, d).transpose(1, 2).to(torch.bfloat16)
        vr = vc[idx].reshape(bsz, s, hkv, d).transpose(1, 2).to(torch.bfloat16)
        ref = F.scaled_dot_product_attention(q.transpose(1, 2), kr, vr, scale=d ** -0.5, enable_gqa=True)
        del kr, vr
        work = 2 * kc.element_size() * bsz * s * hkv * d
        for v in variants:
            kern = b.rt.kernel(b.rt.load(jobs[(v, page, "k")].result()), "paged_attn_decode")
            comb = b.rt.kernel(b.rt.load(jobs[(v, page, "c")].result()), "paged_attn_decode_combine")
            o = torch.full_like(q, float("nan"))
            lse = torch.empty(0, 0, 0, device="cuda")
            op = torch.empty(bsz, maxs, hq, d, device="cuda")
            lp = torch.empty(bsz, maxs, hq, device="cuda")
            a = [tensor_arg(x) for x in (q, kc, vc, bt, lens, o, lse, op, lp)] + [
                float_arg(d ** -0.5), float_arg(1.0), float_arg(1.0)]

            def run():
                b.launch(kern, a)
                b.launch(comb, a)
            run()
            torch.cuda.synchronize()
            ok = close(o.transpose(1, 2), ref, 2e-2, 2e-2)
            (tm, _, _), = b.timer.compare([run])
            meta = jobs[(v, page, "m")].result()
            regs = "?"
            try:
                k0 = json.loads(meta.stdout)["kernels"][0]
                regs = "%s regs %s spill" % (k0.get("registers"), k0.get("spill_stores", k0.get("spills")))
            except Exception:  # noqa: BLE001 (the meta format is informative only here)
                regs = meta.stdout[:80].replace("\n", " ") + meta.stderr[:80].replace("\n", " ")
            rows.append((v or "default", "B=%d S=%d page=%d" % (bsz, s, page), tm, work / (tm * 1e-6) / 1e12, regs,
                         "ok" if ok else "WRONG"))
            print("| %s | %s | %.1f us | %.3f TB/s | %s | %s |" % rows[-1], flush=True)


if __name__ == "__main__":
    main()
