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
  - the runtime's argument errors as typed exceptions on real tensors."""
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

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
