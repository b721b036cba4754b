#!/usr/bin/env python3
"""The tilec Python package on the GPU, against torch (ctest gpu/python-torch; gpu-check runs it
from the bundle): exit 77 (SKIP) without torch or a CUDA device.
  - a kernel compiled with -D values, launched on torch tensors (f32 pointers; bf16 and f16
    tensors through the torch path and DLPack) on torch's current stream and on a side stream:
    results equal to torch's, bit for bit;
  - tilec.stdlib.gemm(a, b) for bf16 and f16 at 256x512x128 and a ragged 300x200x136, against
    torch.matmul within 2e-2 relative (f32 accumulation, one rounding); and with the configuration
    gemm_plan picks (swap-AB, split-K) at small M and N = 2112 against config="default", twice
    with the same bits;
  - the runtime's argument errors as typed exceptions on real tensors;
  - tilec.stdlib.flash_attn (MHA and GQA, causal aligned bottom-right with Sq < Skv, D 64 and
    128, bf16 and f16, [B, S, H, D] memory through transposed views, the LSE), flash_attn_varlen
    (ragged packed sequences), paged_attn_decode (pages in random order, Sq 1 and 3, split "auto",
    1 and 4, the LSE) against float32 torch references; moe_topk_softmax, moe_grouped_gemm (and
    _kn, _scaled; offsets padded to 128 or not) and moe_combine against torch's softmax/topk,
    matmul and weighted sums."""
import os
import sys

try:
    import torch
except ImportError:
    print("SKIP: no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device")
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))   # the source tree (or the bundle: ../../python)
import tilec  # noqa: E402

inputs = os.environ.get("TILEC_TEST_INPUTS", os.path.join(here, "..", "driver", "inputs"))
failures = []


class OnlyDLPack:
    """A tensor seen only through DLPack (as a JAX array would be)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()


class OnlyCAI:
    """A tensor seen only through __cuda_array_interface__ (as a CuPy array would be)."""

    def __init__(self, t):
        self.__cuda_array_interface__ = t.__cuda_array_interface__


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


torch.manual_seed(0)
# vadd: ptr<f32> parameters
vadd = tilec.compile(os.path.join(inputs, "vadd.tile"), defines={"BLOCK": 256}).kernel("vadd")
n = 100003
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
out = torch.full_like(x, float("nan"))
vadd(x, y, out, n, stream=torch.cuda.current_stream())
torch.cuda.synchronize()
expect(torch.equal(out, x + y), "vadd on torch tensors (current stream)")
s = torch.cuda.Stream()
out2 = torch.full_like(x, float("nan"))
with torch.cuda.stream(s):
    vadd(x, y, out2, n, stream=s)
s.synchronize()
expect(torch.equal(out2, x + y), "vadd on a side stream")
out3 = torch.full_like(x, float("nan"))
vadd(OnlyCAI(x), OnlyCAI(y), OnlyCAI(out3), n)
torch.cuda.synchronize()
expect(torch.equal(out3, x + y), "vadd through __cuda_array_interface__")

# scale: tensor<T, 1>, T = bf16 / f16 (torch path and DLPack)
for dt, name in [(torch.bfloat16, "bf16"), (torch.float16, "f16")]:
    k = tilec.compile(os.path.join(inputs, "scale.tile"), defines={"T": name, "BN": 128}).kernel()
    a = torch.randn(5000, device="cuda").to(dt)
    o = torch.full_like(a, float("nan"))
    k(a, o, a.numel())
    torch.cuda.synchronize()
    expect(torch.equal(o, (a.float() * 2).to(dt)), "scale %s (torch tensors)" % name)
    o.fill_(float("nan"))
    k(OnlyDLPack(a), OnlyDLPack(o), a.numel())
    torch.cuda.synchronize()
    expect(torch.equal(o, (a.float() * 2).to(dt)), "scale %s (DLPack)" % name)
    try:
        k(a.float(), o, a.numel())
        expect(False, "an f32 tensor for tensor<%s, 1> raises ArgTypeError" % name)
    except tilec.ArgTypeError as e:
        expect("argument 0 ('x')" in str(e), "an f32 tensor for tensor<%s, 1> raises ArgTypeError" % name)

# the stdlib GEMM: the README's three lines
for dt in (torch.bfloat16, torch.float16):
    for m, nn, kk in [(256, 512, 128), (300, 200, 136)]:
        a = torch.randn(m, kk, device="cuda", dtype=dt)
        b = torch.randn(kk, nn, device="cuda", dtype=dt)
        c = tilec.stdlib.gemm(a, b)
        torch.cuda.synchronize()
        ref = torch.matmul(a.float(), b.float())
        err = (c.float() - ref).norm() / ref.norm()
        expect(c.shape == (m, nn) and c.dtype == dt and err.item() < 2e-2,
               "stdlib.gemm %s %dx%dx%d (rel err %.2e)" % (dt, m, nn, kk, err.item()))

# issue 13: the configuration gemm_plan picks by shape (swap-AB for M <= 64, split-K with its
# workspace and reduce, 64-wide tiles for N = 2112), against config="default" and float32 torch
for m, nn, kk in [(1, 520, 1000), (16, 4096, 7168), (64, 2112, 2048), (128, 2112, 7168), (127, 300, 4096)]:
    a = torch.randn(m, kk, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(kk, nn, device="cuda", dtype=torch.bfloat16)
    plan = tilec.stdlib.gemm_plan("bf16", m, nn, kk, torch.cuda.get_device_properties(0).multi_processor_count)
    ref = torch.matmul(a.float(), b.float())
    for config in ("auto", "default"):
        c = tilec.stdlib.gemm(a, b, config=config)
        torch.cuda.synchronize()
        err = (c.float() - ref).norm() / ref.norm()
        expect(c.shape == (m, nn) and bool(torch.isfinite(c).all()) and err.item() < 2e-2,
               "stdlib.gemm config=%s %dx%dx%d (%s S=%d, rel err %.2e)" % (
                   config, m, nn, kk, "gemm" + plan["suffix"], plan["split"], err.item()))
    # deterministic: the same bits twice (split-K sums its partials in a fixed order)
    c1, c2 = tilec.stdlib.gemm(a, b), tilec.stdlib.gemm(a, b)
    torch.cuda.synchronize()
    expect(torch.equal(c1, c2), "stdlib.gemm %dx%dx%d: two runs differ" % (m, nn, kk))



# ---- attention (the README's other three lines) -------------------------------------------
def attn_ref(q, k, v, causal, scale):
    """float32 O [B, Hq, Sq, D] and LSE [B, Hq, Sq]: query i sees key j <= i + Skv - Sq when causal."""
    q, k, v = q.float(), k.float(), v.float()
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    sq, skv = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(skv, device=q.device)[None, :]
        s = s.masked_fill(j > i + skv - sq, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)   # a row that sees no key: O = 0
    return torch.matmul(p, v), lse


def rel(x, ref):
    return ((x.float() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


q, k, v = (torch.randn(2, 16, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
o = tilec.stdlib.flash_attn(q, k, v, causal=True)
torch.cuda.synchronize()
ref, _ = attn_ref(q, k, v, True, 128 ** -0.5)
expect(o.shape == q.shape and o.dtype == q.dtype and rel(o, ref) < 2e-2,
       "stdlib.flash_attn README example 2x16x4096x128 causal (rel err %.2e)" % rel(o, ref))

for dt in (torch.bfloat16, torch.float16):
    for (b, hq, hkv, sq, skv, d, causal) in [(2, 8, 8, 300, 300, 128, False), (2, 8, 2, 300, 300, 64, True),
                                            (1, 4, 1, 100, 333, 128, True), (3, 6, 3, 77, 1, 64, False)]:
        q = torch.randn(b, hq, sq, d, device="cuda", dtype=dt)
        k = torch.randn(b, hkv, skv, d, device="cuda", dtype=dt)
        v = torch.randn(b, hkv, skv, d, device="cuda", dtype=dt)
        scale = 0.7 / d ** 0.5
        ref, ref_lse = attn_ref(q, k, v, causal, scale)
        o, lse = tilec.stdlib.flash_attn(q, k, v, causal=causal, sm_scale=scale, lse=True)
        torch.cuda.synchronize()
        what = "stdlib.flash_attn %s B=%d Hq=%d Hkv=%d Sq=%d Skv=%d D=%d causal=%d" % (dt, b, hq, hkv, sq, skv, d, causal)
        expect(rel(o, ref) < 2e-2, what + " O (rel err %.2e)" % rel(o, ref))
        expect(lse.dtype == torch.float32 and torch.allclose(lse, ref_lse, atol=1e-3, rtol=1e-3), what + " LSE")
        # [B, S, H, D] memory, passed as [B, H, S, D] views
        qs, ks, vs = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v))
        os_ = torch.empty(b, sq, hq, d, device="cuda", dtype=dt).transpose(1, 2)
        tilec.stdlib.flash_attn(qs, ks, vs, causal=causal, sm_scale=scale, out=os_)
        torch.cuda.synchronize()
        expect(torch.equal(os_, o), what + " through [B, S, H, D] views: the same bits")

# varlen: ragged packed sequences, GQA, causal
for causal in (0, 1):
    lq, lk = [37, 300, 1, 128], [37, 420, 5, 128]
    hq, hkv, d, dt = 8, 2, 128, torch.bfloat16
    cq = torch.tensor([sum(lq[:i]) for i in range(len(lq) + 1)], device="cuda", dtype=torch.int32)
    ck = torch.tensor([sum(lk[:i]) for i in range(len(lk) + 1)], device="cuda", dtype=torch.int32)
    q = torch.randn(sum(lq), hq, d, device="cuda", dtype=dt)
    k = torch.randn(sum(lk), hkv, d, device="cuda", dtype=dt)
    v = torch.randn(sum(lk), hkv, d, device="cuda", dtype=dt)
    o = tilec.stdlib.flash_attn_varlen(q, k, v, cq, ck, max(lq), max(lk), causal=bool(causal))
    torch.cuda.synchronize()
    ok = True
    for i in range(len(lq)):
        qs, ks, vs = (x[a:a + n].transpose(0, 1)[None] for x, a, n in
                      ((q, int(cq[i]), lq[i]), (k, int(ck[i]), lk[i]), (v, int(ck[i]), lk[i])))
        ref, _ = attn_ref(qs, ks, vs, causal, d ** -0.5)
        ok = ok and rel(o[int(cq[i]):int(cq[i]) + lq[i]].transpose(0, 1)[None], ref) < 2e-2
    expect(ok, "stdlib.flash_attn_varlen lengths %s / %s causal=%d" % (lq, lk, causal))

# paged decode: pages of the caches in random order, Sq new tokens per sequence
torch.manual_seed(1)
b, hq, hkv, d, page, maxp = 3, 32, 8, 128, 16, 24
npages = b * maxp + 5
kc = torch.randn(npages, page, hkv, d, device="cuda", dtype=torch.bfloat16)
vc = torch.randn(npages, page, hkv, d, device="cuda", dtype=torch.bfloat16)
table = torch.randperm(npages, device="cuda")[:b * maxp].view(b, maxp).to(torch.int32)
lens = torch.tensor([1, 150, maxp * page], device="cuda", dtype=torch.int32)
for sq in (1, 3):
    q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
    refs, lses = [], []
    for i in range(b):
        n = int(lens[i])
        keys = kc[table[i].long()].reshape(maxp * page, hkv, d)[:n]
        vals = vc[table[i].long()].reshape(maxp * page, hkv, d)[:n]
        r, l = attn_ref(q[i].transpose(0, 1)[None], keys.transpose(0, 1)[None], vals.transpose(0, 1)[None], True,
                        d ** -0.5)
        refs.append(r[0].transpose(0, 1))
        lses.append(l[0].transpose(0, 1))
    ref, ref_lse = torch.stack(refs), torch.stack(lses)
    for split in ("auto", 1, 4):
        o, lse = tilec.stdlib.paged_attn_decode(q, kc, vc, table, lens, lse=True, split=split)
        torch.cuda.synchronize()
        fin = torch.isfinite(ref_lse)
        expect(rel(o, ref) < 2e-2 and torch.allclose(lse[fin], ref_lse[fin], atol=1e-3, rtol=1e-3),
               "stdlib.paged_attn_decode Sq=%d split=%s (rel err %.2e)" % (sq, split, rel(o, ref)))

# ---- MoE ------------------------------------------------------------------------------------
logits = torch.randn(100, 64, device="cuda")
for renorm in (False, True):
    w, ids = tilec.stdlib.moe_topk_softmax(logits, 8, renorm=renorm)
    torch.cuda.synchronize()
    rw, rids = torch.softmax(logits, dim=-1).topk(8, dim=-1)
    if renorm:
        rw = rw / rw.sum(-1, keepdim=True)
    expect(torch.equal(ids, rids.to(torch.int32)) and torch.allclose(w, rw, atol=1e-6, rtol=1e-5),
           "stdlib.moe_topk_softmax renorm=%d" % renorm)


def grouped_ok(c, a, offs, w_nk, scale=None):
    """c [rows, N] bf16 against float32 a[offs[e]:offs[e + 1]] @ w_nk[e]^T (times scale per row)."""
    ok = c.dtype == torch.bfloat16
    for e in range(len(offs) - 1):
        if offs[e + 1] > offs[e]:
            r = torch.matmul(a[offs[e]:offs[e + 1]].float(), w_nk[e].float().t())
            if scale is not None:
                r = r * scale[offs[e]:offs[e + 1], None]
            ok = ok and rel(c[offs[e]:offs[e + 1]], r) < 2e-2
    return ok


# the grouped GEMMs: expert 1 empty, expert 2 over two M blocks; offsets padded to 128 (moe_align's)
# or not (moe_offsets': an M block runs into the next expert's rows); 5 rows past offsets[E] that no
# expert owns, which must keep out's poison
counts = [100, 0, 260, 37]
kd, nd = 256, 384
wts = torch.randn(len(counts), nd, kd, device="cuda", dtype=torch.bfloat16) / 16
for padded in (True, False):
    offs = [0]
    for n in counts:
        offs.append(offs[-1] + (-(-n // 128) * 128 if padded else n))
    a = torch.randn(offs[-1] + 5, kd, device="cuda", dtype=torch.bfloat16)
    offsets = torch.tensor(offs, device="cuda", dtype=torch.int32)
    poison = torch.full((a.shape[0], nd), 7.0, device="cuda", dtype=torch.bfloat16)
    c = tilec.stdlib.moe_grouped_gemm(a, wts, offsets, out=poison)
    torch.cuda.synchronize()
    expect(grouped_ok(c, a, offs, wts) and bool((c[offs[-1]:] == 7).all()),
           "stdlib.moe_grouped_gemm experts %s, offsets %s" % (counts, offs))
    c = tilec.stdlib.moe_grouped_gemm_kn(a, wts.transpose(1, 2).contiguous(), offsets)   # w [E, K, N]
    torch.cuda.synchronize()
    expect(grouped_ok(c, a, offs, wts), "stdlib.moe_grouped_gemm_kn offsets %s" % offs)
    scale = torch.rand(a.shape[0], device="cuda")
    c = tilec.stdlib.moe_grouped_gemm_scaled(a, wts, offsets, scale)
    torch.cuda.synchronize()
    expect(grouped_ok(c, a, offs, wts, scale), "stdlib.moe_grouped_gemm_scaled offsets %s" % offs)

t, topk, hdim = 50, 4, 256
y = torch.randn(300, hdim, device="cuda", dtype=torch.bfloat16)
slots = torch.randperm(300, device="cuda")[:t * topk].to(torch.int32)
wt = torch.rand(t, topk, device="cuda")
out = tilec.stdlib.moe_combine(y, slots, wt)
torch.cuda.synchronize()
ref = (wt[:, :, None] * y[slots.long()].float().view(t, topk, hdim)).sum(1)
expect(out.dtype == torch.bfloat16 and rel(out, ref) < 1e-2, "stdlib.moe_combine (rel err %.2e)" % rel(out, ref))

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
