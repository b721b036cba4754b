"""stdlib.py: the standard library's kernels behind small functions.

    c = tilec.stdlib.gemm(a, b)          # a [M, K], b [K, N], bf16 or f16: c [M, N] = a @ b

Each function compiles its kernel from the stdlib's .tile sources (tilec._rt.find_stdlib) for
the current device, once per process and dtype, and launches it on the given stream.
"""
import os

from . import _args, core


def _source(name):
    from ._rt import find_stdlib
    return os.path.join(find_stdlib(), name)


def compile(file, kernel=None, defines=None, **kw):
    """A stdlib kernel by its file ("gemm.tile", "softmax.tile", ...): tilec.compile on the stdlib's
    source (the installed one, or this tree's), e.g. compile("norms.tile", "rmsnorm", {"T": "bf16"})."""
    return core.compile(_source(file), kernel=kernel, defines=defines, **kw)


def gemm(a, b, out=None, stream=None, out_dtype=None):
    """C = A @ B with stdlib/gemm.tile's `gemm` (f32 accumulation): a [M, K] and b [K, N] of one
    dtype (bf16, f16), row-major or strided; out [M, N] (default: a.new_empty, torch-like tensors),
    its dtype out_dtype (default: a's).  Returns out.  Without a GPU: tilec.NoDriverError."""
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
    mod = compile("gemm.tile", kernel="gemm", defines={"T": va.dtype, "TC": vc.dtype})
    mod.kernel("gemm")(va, vb, vc, stream=stream)
    return out
