#!/usr/bin/env python3
"""bench.py: tilec kernels against PyTorch baselines, on one GPU, in one process.

Run on the GPU machine (it has torch; this one has not):
    python3 bench/bench.py --tilec PATH/tilec --lib PATH/libtilert.so [--only vadd,softmax] [--runs 50]

Each kernel is compiled to a cubin by tilec, loaded through libtilert (ctypes),
and launched on torch's current stream on tensors torch allocated, so tilec and
the baseline see the same data and the same timing method:
  - random inputs (never zeros), warm-up runs, then `runs` timed runs, each
    preceded by an L2 flush (a 256 MiB write) outside the timed region;
  - CUDA events around each run; the median is reported, with min and max;
  - baseline and candidate alternate run by run.
The table: kernel, shape, dtype, tilec median (us), baseline median (us), the
achieved TB/s (memory-bound kernels: bytes read + written) or TFLOP/s, and
tilec / baseline speed (baseline time / tilec time: > 1 means tilec is faster).
Correctness is checked against the baseline's output before timing.
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile

import torch

# ---- libtilert through ctypes ------------------------------------------------------
MAX_RANK = 4
DT = {torch.float32: 14, torch.bfloat16: 13, torch.float16: 12, torch.int32: 4, torch.int64: 5,
      torch.uint8: 6, torch.int8: 2, torch.float8_e4m3fn: 10, torch.float8_e5m2: 11}
ARG_TENSOR, ARG_PTR, ARG_INT, ARG_FLOAT = 1, 2, 3, 4


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK), ("stride", ctypes.c_int64 * MAX_RANK)]


class ArgValue(ctypes.Union):
    _fields_ = [("tensor", Tensor), ("ptr", ctypes.c_void_p), ("i", ctypes.c_int64),
                ("u", ctypes.c_uint64), ("f", ctypes.c_double), ("bits", ctypes.c_uint64)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("dtype", ctypes.c_int), ("v", ArgValue)]


class Tilert:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.tilert_last_error.restype = ctypes.c_char_p
        self.lib.tilert_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(Arg), ctypes.c_int]

    def check(self, status, what):
        if status != 0:
            raise RuntimeError("%s: %s" % (what, self.lib.tilert_last_error().decode()))

    def load(self, cubin):
        m = ctypes.c_void_p()
        self.check(self.lib.tilert_module_load_file(cubin.encode(), ctypes.byref(m)), "load " + cubin)
        return m

    def kernel(self, module, name):
        k = ctypes.c_void_p()
        self.check(self.lib.tilert_kernel_get(module, name.encode(), ctypes.byref(k)), "kernel " + name)
        return k


def tensor_arg(t):
    a = Arg()
    a.kind = ARG_TENSOR
    a.dtype = DT[t.dtype]
    tt = a.v.tensor
    tt.data = t.data_ptr()
    tt.dtype = DT[t.dtype]
    tt.rank = t.dim()
    for i in range(t.dim()):
        tt.shape[i] = t.shape[i]
        tt.stride[i] = t.stride()[i]
    return a


def ptr_arg(t):
    a = Arg()
    a.kind = ARG_PTR
    a.dtype = DT[t.dtype]
    a.v.ptr = t.data_ptr()
    return a


def int_arg(v, dtype=4):
    a = Arg()
    a.kind = ARG_INT
    a.dtype = dtype
    a.v.i = v
    return a


def float_arg(v, dtype=14):
    a = Arg()
    a.kind = ARG_FLOAT
    a.dtype = dtype
    a.v.f = v
    return a


# ---- timing ---------------------------------------------------------------------------
class Timer:
    def __init__(self, runs, warmup):
        self.runs, self.warmup = runs, warmup
        self.flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def compare(self, fns):
        """Median, min, max (us) of each fn, alternating them run by run."""
        for f in fns:
            for _ in range(self.warmup):
                f()
        times = [[] for _ in fns]
        for _ in range(self.runs):
            for i, f in enumerate(fns):
                self.flush.fill_(1)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                f()
                e.record()
                e.synchronize()
                times[i].append(s.elapsed_time(e) * 1000.0)
        return [(statistics.median(t), min(t), max(t)) for t in times]


class Bench:
    def __init__(self, args):
        self.args = args
        self.rt = Tilert(args.lib)
        self.timer = Timer(args.runs, args.warmup)
        self.tmp = tempfile.mkdtemp(prefix="tilec-bench-")
        self.rows = []
        self.failures = 0

    def compile(self, src, kernel, defines, flags=()):
        name = kernel + "".join("_%s%s" % kv for kv in sorted(defines.items())) + "".join(f.strip("-") for f in flags)
        out = os.path.join(self.tmp, name + ".cubin")
        cmd = [self.args.tilec, src, "--kernel", kernel, "--emit=cubin", "-o", out] + list(flags)
        for k, v in defines.items():
            cmd += ["-D", "%s=%s" % (k, v)]
        subprocess.run(cmd, check=True)
        return self.rt.kernel(self.rt.load(out), kernel)

    def launch(self, k, args):
        arr = (Arg * len(args))(*args)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.rt.check(self.rt.lib.tilert_launch(k, stream, arr, len(args)), "launch")

    def record(self, kernel, shape, dtype, fn, base, work, unit, ok):
        (tm, tmin, tmax), (bm, _, _) = self.timer.compare([fn, base])
        rate = work / (tm * 1e-6) / 1e12
        self.rows.append((kernel, shape, dtype, tm, tmin, tmax, bm, rate, unit, bm / tm, "ok" if ok else "WRONG"))
        if not ok:
            self.failures += 1

    def table(self):
        hdr = ("kernel", "shape", "dtype", "tilec us", "min", "max", "base us", "tilec rate", "", "vs base", "check")
        print("| " + " | ".join(hdr) + " |")
        print("|" + "---|" * len(hdr))
        for r in self.rows:
            print("| %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.3f | %s | %.2f | %s |" % r)


def close(a, b, rtol, atol):
    return torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol)


def rand(shape, dtype):
    x = torch.rand(shape, device="cuda", dtype=torch.float32) * 2 - 1
    x = torch.where(x == 0, torch.full_like(x, 0.5), x)
    return x.to(dtype)


# ---- the benchmarks ---------------------------------------------------------------------
def bench_vadd(b, root):
    k = b.compile(os.path.join(root, "examples/vadd.tile"), "vadd", {"BLOCK": 1024})
    for n in [1 << 20, 1 << 24, 1 << 27]:
        x, y = rand([n], torch.float32), rand([n], torch.float32)
        out = torch.full([n], float("nan"), device="cuda")
        args = [ptr_arg(x), ptr_arg(y), ptr_arg(out), int_arg(n)]
        b.launch(k, args)
        ok = torch.equal(out, x + y)
        ref = torch.empty_like(out)
        b.record("vadd", str(n), "f32", lambda: b.launch(k, args), lambda: torch.add(x, y, out=ref),
                 3 * 4 * n, "TB/s", ok)


def bench_copy(b):
    """The device-to-device copy bandwidth, the ceiling of the memory-bound kernels."""
    n = 1 << 28
    x = rand([n // 4], torch.float32)
    y = torch.empty_like(x)
    (tm, tmin, tmax), = b.timer.compare([lambda: y.copy_(x)])
    b.rows.append(("copy (torch)", str(n // 4), "f32", tm, tmin, tmax, tm, 2 * n / (tm * 1e-6) / 1e12, "TB/s",
                   1.0, "ok"))


def bench_softmax(b, root, flags=()):
    label = "softmax" + "".join(" " + f for f in flags)
    for dtype, tname in [(torch.float32, "f32"), (torch.bfloat16, "bf16")]:
        for cols in [1024, 2048, 4096, 8192, 16384]:
            k = b.compile(os.path.join(root, "stdlib/softmax.tile"), "softmax", {"T": tname, "BLOCK": cols}, flags)
            x = rand([4096, cols], dtype)
            y = torch.full_like(x, float("nan"))
            args = [tensor_arg(x), tensor_arg(y)]
            b.launch(k, args)
            ref = torch.softmax(x.float(), dim=1).to(dtype)
            ok = close(y, ref, 1e-2 if dtype == torch.bfloat16 else 1e-5, 1e-6)
            b.record(label, "4096x%d" % cols, tname, lambda: b.launch(k, args),
                     lambda: torch.softmax(x, dim=1), 2 * x.numel() * x.element_size(), "TB/s", ok)


def bench_rmsnorm(b, root, flags=()):
    label = "rmsnorm" + "".join(" " + f for f in flags)
    for dtype, tname in [(torch.float32, "f32"), (torch.bfloat16, "bf16")]:
        for cols in [1024, 2048, 4096, 8192, 16384]:
            k = b.compile(os.path.join(root, "stdlib/norms.tile"), "rmsnorm", {"T": tname, "BLOCK": cols}, flags)
            x, w = rand([4096, cols], dtype), rand([cols], dtype)
            y = torch.full_like(x, float("nan"))
            args = [tensor_arg(x), ptr_arg(w), tensor_arg(y), float_arg(1e-6)]
            b.launch(k, args)
            ref = torch.nn.functional.rms_norm(x.float(), [cols], w.float(), 1e-6).to(dtype)
            ok = close(y, ref, 2e-2 if dtype == torch.bfloat16 else 1e-4, 1e-4)
            b.record(label, "4096x%d" % cols, tname, lambda: b.launch(k, args),
                     lambda: torch.nn.functional.rms_norm(x, [cols], w, 1e-6),
                     2 * x.numel() * x.element_size(), "TB/s", ok)


def bench_gemm(b, root):
    k = b.compile(os.path.join(root, "stdlib/gemm.tile"), "gemm", {"T": "bf16"})
    for m, n, kk in [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192)]:
        a, bb = rand([m, kk], torch.bfloat16), rand([kk, n], torch.bfloat16)
        c = torch.full([m, n], float("nan"), device="cuda", dtype=torch.bfloat16)
        args = [tensor_arg(a), tensor_arg(bb), tensor_arg(c)]
        b.launch(k, args)
        ref = torch.matmul(a, bb)
        ok = close(c, ref, 2e-2, 2e-2)
        b.record("gemm (stdlib gemm)", "%dx%dx%d" % (m, n, kk), "bf16", lambda: b.launch(k, args),
                 lambda: torch.matmul(a, bb), 2 * m * n * kk, "TFLOP/s", ok)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tilec", required=True)
    p.add_argument("--lib", required=True, help="libtilert.so")
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    p.add_argument("--only", default="copy,vadd,softmax,softmax-fast,rmsnorm,rmsnorm-fast,gemm")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    args = p.parse_args()
    torch.manual_seed(0)
    b = Bench(args)
    print("device:", torch.cuda.get_device_name(), "torch", torch.__version__)
    benches = {"copy": lambda: bench_copy(b), "vadd": lambda: bench_vadd(b, args.root),
               "softmax": lambda: bench_softmax(b, args.root), "rmsnorm": lambda: bench_rmsnorm(b, args.root),
               "softmax-fast": lambda: bench_softmax(b, args.root, ("--fast-math",)),
               "rmsnorm-fast": lambda: bench_rmsnorm(b, args.root, ("--fast-math",)),
               "gemm": lambda: bench_gemm(b, args.root)}
    for name in args.only.split(","):
        try:
            benches[name]()
        except Exception as e:  # keep going: one broken kernel must not hide the others
            print("bench %s failed: %s" % (name, e), file=sys.stderr)
            b.failures += 1
    b.table()
    return 1 if b.failures else 0


if __name__ == "__main__":
    sys.exit(main())
