#!/usr/bin/env python3
"""check-stdlib.py [TILEC]: runs every stdlib/ kernel in the reference interpreter
(`tilec run --interp`) on random data with ragged sizes (not multiples of the blocks)
and compares the results with a float64 reference computed here, in plain Python
(no NumPy needed).  Prints one line per check and exits 1 if any check fails, or if
a kernel of stdlib/ has no check here (a new stdlib kernel needs one).

TILEC defaults to build/tools/tilec.  Sizes are small: the interpreter and this
reference both run on the CPU.  The checks run in TILEC_JOBS threads (default: the number of
CPUs), each with its own scratch folder; their lines are printed in the checks' order.
"""
import ast
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TILEC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "tools", "tilec")
STDLIB = os.environ.get("TILEC_STDLIB", os.path.join(ROOT, "stdlib"))  # another folder: to test this script
TMP = tempfile.mkdtemp(prefix="tilec-stdlib-")
JOBS = max(1, int(os.environ.get("TILEC_JOBS", "0") or 0) or os.cpu_count() or 1)
_local = threading.local()   # per check (thread): .tmp, its scratch folder; .lines, what it printed
failures = []
checked = set()     # (file, kernel) pairs that some check ran

# ---- .npy files ------------------------------------------------------------
FMT = {"<f4": "f", "<f8": "d", "<i4": "i", "<i8": "q", "<u2": "H", "|u1": "B", "<f2": "e", "|i1": "b"}


def npy_read(path):
    raw = open(path, "rb").read()
    if raw[:6] != b"\x93NUMPY":
        raise ValueError(path + ": not a .npy file")
    if raw[6] == 1:
        hlen, off = struct.unpack("<H", raw[8:10])[0], 10
    else:
        hlen, off = struct.unpack("<I", raw[8:12])[0], 12
    hdr = ast.literal_eval(raw[off:off + hlen].decode("latin-1"))
    fmt = FMT[hdr["descr"]]
    n = math.prod(hdr["shape"])
    data = raw[off + hlen:]
    return hdr["descr"], list(struct.unpack("<%d%s" % (n, fmt), data[:n * struct.calcsize(fmt)]))


def npy_write(path, descr, shape, vals):
    dims = "%d," % shape[0] if len(shape) == 1 else ", ".join("%d" % s for s in shape)
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%d%s" % (len(vals), FMT[descr]), *vals))


def from_bf16(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def from_e4m3(b):
    sign = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 15, b & 7
    if e == 15 and m == 7:
        return math.nan
    if e == 0:
        return sign * m / 8 * 2.0 ** -6
    return sign * (1 + m / 8) * 2.0 ** (e - 7)


# ---- running kernels -------------------------------------------------------
def run(src, kernel, args, outs, defines=()):
    """Runs the kernel; returns {name: values} for each name in outs (as floats)."""
    checked.add((src, kernel))
    cmd = [TILEC, "run", os.path.join(STDLIB, src), "--kernel", kernel]
    for d in defines:
        cmd += ["-D", d]
    cmd += ["--interp"] + args
    for o in outs:
        cmd += ["--out", "%s=%s" % (o, tmpfile(o + ".npy"))]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    res = {}
    for o in outs:
        descr, vals = npy_read(tmpfile(o + ".npy"))
        conv = {"<u2": from_bf16, "|u1": from_e4m3}.get(descr)  # bf16 and fp8 come as bits
        res[o] = [conv(v) for v in vals] if conv else vals
    return res


def tmpfile(name):
    return os.path.join(getattr(_local, "tmp", TMP), name)


def say(line):
    """A line of the current check's report (printed in the checks' order, see main)."""
    lines = getattr(_local, "lines", None)
    if lines is None:
        print(line)
    else:
        lines.append(line)


def close(name, got, ref, rtol, atol):
    """got ~ ref elementwise: |got - ref| <= atol + rtol |ref| (bf16 outputs: rtol 4e-3 is two ulps)."""
    bad = [i for i, (g, r) in enumerate(zip(got, ref)) if not abs(g - r) <= atol + rtol * abs(r)]
    ok = len(got) == len(ref) and not bad
    detail = "" if ok else " first bad at %d: got %r, want %r" % (bad[0], got[bad[0]], ref[bad[0]]) if bad else " size"
    say("  %-44s %-4s (%d values)%s" % (name, "ok" if ok else "FAIL", len(ref), detail))
    if not ok:
        failures.append(name)


def equal(name, got, ref):
    ok = got == ref
    count = " (%d values)" % len(ref) if isinstance(ref, list) else ""
    say("  %-44s %-4s%s" % (name, "ok" if ok else "FAIL", count))
    if not ok:
        failures.append(name)


def check(fn):
    try:
        fn()
    except Exception as e:  # a failed run is a failed check; the others still run
        say("  %-44s FAIL %s" % (fn.__name__, e))
        failures.append(fn.__name__)


# ---- the checks --------------------------------------------------------------
def gemm():
    """gemm and gemm_nt for every operand type T and output type TC, at ragged M, N and K."""
    M, N, K = 70, 90, 150
    # the output's rounding: bf16 (8 bits) two ulps, f16 (11 bits) two ulps, f32 the accumulation order
    tol = {"bf16": (4e-3, 1e-3), "f16": (1e-3, 1e-4), "f32": (1e-5, 1e-5)}
    for T in ("bf16", "f16"):
        for TC in ("bf16", "f16", "f32"):
            d = ["T=" + T, "BM=32", "BN=64", "BK=32", "TC=" + TC]
            r = run("gemm.tile", "gemm", ["A=%s[%d,%d]" % (T, M, K), "B=%s[%d,%d]" % (T, K, N),
                    "C=%s[%d,%d]" % (TC, M, N)], ["A", "B", "C"], d)
            A, B = r["A"], r["B"]
            close("gemm T=%s TC=%s" % (T, TC), r["C"], [sum(A[i * K + k] * B[k * N + j] for k in range(K))
                                                        for i in range(M) for j in range(N)], *tol[TC])
            r = run("gemm.tile", "gemm_nt", ["A=%s[%d,%d]" % (T, M, K), "B=%s[%d,%d]" % (T, N, K),
                    "C=%s[%d,%d]" % (TC, M, N)], ["A", "B", "C"], d)
            A, B = r["A"], r["B"]
            close("gemm_nt T=%s TC=%s" % (T, TC), r["C"], [sum(A[i * K + k] * B[j * K + k] for k in range(K))
                                                           for i in range(M) for j in range(N)], *tol[TC])
    # the defaults (T = TC = bf16, 128 x 128 x 64 blocks) on a problem smaller than one block in M and K
    M, N, K = 50, 130, 40
    r = run("gemm.tile", "gemm_nt", ["A=bf16[%d,%d]" % (M, K), "B=bf16[%d,%d]" % (N, K), "C=bf16[%d,%d]" % (M, N)],
            ["A", "B", "C"])
    A, B = r["A"], r["B"]
    close("gemm_nt defaults", r["C"], [sum(A[i * K + k] * B[j * K + k] for k in range(K))
                                       for i in range(M) for j in range(N)], *tol["bf16"])
    # persistent: 13 x 12 = 156 tiles over min(156, num_sms() = 132) programs, so some programs
    # take two tiles; GROUP_M = 5 leaves a partial last group of row-blocks
    M, N, K = 200, 180, 40
    d = ["BM=16", "BN=16", "BK=32", "GROUP_M=5"]
    r = run("gemm.tile", "gemm_persistent", ["A=bf16[%d,%d]" % (M, K), "B=bf16[%d,%d]" % (K, N),
            "C=bf16[%d,%d]" % (M, N)], ["A", "B", "C"], d)
    A, B = r["A"], r["B"]
    close("gemm_persistent", r["C"], [sum(A[i * K + k] * B[k * N + j] for k in range(K))
                                      for i in range(M) for j in range(N)], *tol["bf16"])
    r = run("gemm.tile", "gemm_nt_persistent", ["A=bf16[%d,%d]" % (M, K), "B=bf16[%d,%d]" % (N, K),
            "C=f32[%d,%d]" % (M, N)], ["A", "B", "C"], d + ["TC=f32"])
    A, B = r["A"], r["B"]
    close("gemm_nt_persistent TC=f32", r["C"], [sum(A[i * K + k] * B[j * K + k] for k in range(K))
                                                for i in range(M) for j in range(N)], *tol["f32"])
    # the flat forms (one loop over a program's (tile, k step) pairs): K = 40 is two BK = 32 steps
    # with a partial one, and K = 0 must still write zeros
    r = run("gemm.tile", "gemm_persistent_flat", ["A=bf16[%d,%d]" % (M, K), "B=bf16[%d,%d]" % (K, N),
            "C=bf16[%d,%d]" % (M, N)], ["A", "B", "C"], d)
    A, B = r["A"], r["B"]
    close("gemm_persistent_flat", r["C"], [sum(A[i * K + k] * B[k * N + j] for k in range(K))
                                           for i in range(M) for j in range(N)], *tol["bf16"])
    r = run("gemm.tile", "gemm_nt_persistent_flat", ["A=bf16[%d,%d]" % (M, K), "B=bf16[%d,%d]" % (N, K),
            "C=f32[%d,%d]" % (M, N)], ["A", "B", "C"], d + ["TC=f32"])
    A, B = r["A"], r["B"]
    close("gemm_nt_persistent_flat TC=f32", r["C"], [sum(A[i * K + k] * B[j * K + k] for k in range(K))
                                                     for i in range(M) for j in range(N)], *tol["f32"])
    npy_write(tmpfile("A0.npy"), "<f4", [30, 0], [])
    npy_write(tmpfile("B0.npy"), "<f4", [0, 20], [])
    r = run("gemm.tile", "gemm_persistent_flat", ["A=" + tmpfile("A0.npy"), "B=" + tmpfile("B0.npy"),
            "C=f32[30,20]"], ["C"], ["T=f32", "TC=f32", "BM=16", "BN=16", "BK=16"])
    close("gemm_persistent_flat K=0", r["C"], [0.0] * 600, 0, 0)


def splitk_ranges(K, BK, S):
    """The K ranges of the S splits of a _splitk kernel: whole BK steps, ceil(steps / S) each."""
    per = -(-(-(-K // BK)) // S)
    return [(min(K, s * per * BK), min(K, (s + 1) * per * BK)) for s in range(S)]


def reduce_check(name, src, kernel, W, S, M, N, TC, ref, tol, defines=()):
    """Runs the reduce kernel on the partials W (as the split kernel wrote them) and checks C."""
    npy_write(tmpfile("Win.npy"), "<f4", [S, M, N], W)
    r = run(src, kernel, ["W=" + tmpfile("Win.npy"), "C=%s[%d,%d]" % (TC, M, N)], ["C"], list(defines))
    close(name, r["C"], ref, *tol)


def gemm_small_m():
    """Split-K (partials, then splitk_reduce) and swap-AB, NN and NT, at ragged M, N, K; S = 3 over
    4 steps of K leaves the last split empty (it must write zeros)."""
    tol = {"bf16": (4e-3, 1e-3), "f32": (1e-5, 1e-5)}
    for M, N, K, S, BK in ((23, 70, 300, 3, 32), (5, 40, 100, 3, 32), (40, 33, 64, 2, 16)):
        for nt in (0, 1):
            bshape = "B=bf16[%d,%d]" % ((N, K) if nt else (K, N))
            bi = (lambda j, k: j * K + k) if nt else (lambda j, k: k * N + j)
            pre = "gemm_nt" if nt else "gemm"
            ranges = splitk_ranges(K, BK, S)
            for swap in (0, 1):
                kern = pre + ("_swapab" if swap else "") + "_splitk"
                d = ["BM=16", "BN=32", "BK=%d" % BK]
                r = run("gemm.tile", kern, ["A=bf16[%d,%d]" % (M, K), bshape, "W=f32[%d,%d,%d]" % (S, M, N)],
                        ["A", "B", "W"], d)
                A, B = r["A"], r["B"]
                part = [sum(A[i * K + k] * B[bi(j, k)] for k in range(k0, k1))
                        for (k0, k1) in ranges for i in range(M) for j in range(N)]
                close("%s %dx%dx%d S=%d partials" % (kern, M, N, K, S), r["W"], part, *tol["f32"])
                ref = [sum(part[(s * M + i) * N + j] for s in range(S)) for i in range(M) for j in range(N)]
                reduce_check("splitk_reduce after %s %dx%dx%d" % (kern, M, N, K), "gemm.tile", "splitk_reduce",
                             r["W"], S, M, N, "bf16", ref, tol["bf16"], ["BM=16", "BN=64"])
            for TC in ("bf16", "f32"):
                kern = pre + "_swapab"
                r = run("gemm.tile", kern, ["A=bf16[%d,%d]" % (M, K), bshape, "C=%s[%d,%d]" % (TC, M, N)],
                        ["A", "B", "C"], ["BM=16", "BN=32", "BK=%d" % BK, "TC=" + TC])
                A, B = r["A"], r["B"]
                close("%s %dx%dx%d TC=%s" % (kern, M, N, K, TC), r["C"],
                      [sum(A[i * K + k] * B[bi(j, k)] for k in range(K)) for i in range(M) for j in range(N)], *tol[TC])
    # the reduce with TC = f32 and one split (a plain conversion of W[0])
    M, N = 9, 300
    W = [((i * 7919) % 1000) / 250.0 - 2 for i in range(M * N)]
    reduce_check("splitk_reduce S=1 TC=f32", "gemm.tile", "splitk_reduce", W, 1, M, N, "f32", W, tol["f32"], ["TC=f32"])


def fp8_gemm_small_m():
    """The FP8 split-K, swap-AB and both kernels, per-tensor and block-scaled, with their reduce."""
    for M, N, K, S in ((23, 200, 500, 3), (5, 70, 300, 4)):
        KB, NB = (K + 127) // 128, (N + 127) // 128
        ranges = splitk_ranges(K, 128, S)
        pt = ["A=f8e4m3[%d,%d]" % (M, K), "B=f8e4m3[%d,%d]" % (N, K), "scale_a=f32[1]", "scale_b=f32[1]"]
        bs = ["A=f8e4m3[%d,%d]" % (M, K), "As=f32[%d,%d]" % (M, KB), "B=f8e4m3[%d,%d]" % (N, K),
              "Bs=f32[%d,%d]" % (NB, KB)]
        for kind in ("fp8_gemm", "fp8_gemm_blockscale"):
            args, ins = (pt, ["A", "B", "scale_a", "scale_b"]) if kind == "fp8_gemm" else (bs, ["A", "As", "B", "Bs"])
            tiles = ["BM=16", "BN=64"] + (["BK=128"] if kind == "fp8_gemm" else [])

            def prod(r, i, j, k0, k1):
                A, B = r["A"], r["B"]
                if kind == "fp8_gemm":
                    return r["scale_a"][0] * r["scale_b"][0] * sum(A[i * K + k] * B[j * K + k] for k in range(k0, k1))
                As, Bs = r["As"], r["Bs"]
                return sum(As[i * KB + kb] * Bs[(j // 128) * KB + kb] *
                           sum(A[i * K + k] * B[j * K + k] for k in range(max(k0, kb * 128), min(k1, kb * 128 + 128)))
                           for kb in range(k0 // 128, -(-k1 // 128)))
            r = run("fp8_gemm.tile", kind + "_swapab", args + ["C=bf16[%d,%d]" % (M, N)], ins + ["C"], tiles)
            close("%s_swapab %dx%dx%d" % (kind, M, N, K), r["C"],
                  [prod(r, i, j, 0, K) for i in range(M) for j in range(N)], 4e-3, 1e-3)
            for kern in (kind + "_splitk", kind + "_swapab_splitk"):
                d = tiles if "swapab" in kern else ["BM=32", "BN=64"] + tiles[2:]
                r = run("fp8_gemm.tile", kern, args + ["W=f32[%d,%d,%d]" % (S, M, N)], ins + ["W"], d)
                part = [prod(r, i, j, k0, k1) for (k0, k1) in ranges for i in range(M) for j in range(N)]
                close("%s %dx%dx%d S=%d partials" % (kern, M, N, K, S), r["W"], part, 1e-5, 1e-5)
                ref = [sum(part[(s * M + i) * N + j] for s in range(S)) for i in range(M) for j in range(N)]
                reduce_check("fp8_splitk_reduce after %s" % kern, "fp8_gemm.tile", "fp8_splitk_reduce", r["W"], S, M, N,
                             "bf16", ref, (4e-3, 1e-3), ["BM=16", "BN=128"])


def fp8_gemm():
    M, N, K = 70, 200, 300
    KB, NB = (K + 127) // 128, (N + 127) // 128
    r = run("fp8_gemm.tile", "fp8_gemm",
            ["A=f8e4m3[%d,%d]" % (M, K), "B=f8e4m3[%d,%d]" % (N, K), "scale_a=f32[1]", "scale_b=f32[1]",
             "C=bf16[%d,%d]" % (M, N)], ["A", "B", "scale_a", "scale_b", "C"], ["BM=32", "BN=64", "BK=64"])
    A, B, s = r["A"], r["B"], r["scale_a"][0] * r["scale_b"][0]
    close("fp8_gemm (per-tensor scales)", r["C"],
          [s * sum(A[i * K + k] * B[j * K + k] for k in range(K)) for i in range(M) for j in range(N)], 4e-3, 1e-3)
    r = run("fp8_gemm.tile", "fp8_gemm_blockscale",
            ["A=f8e4m3[%d,%d]" % (M, K), "As=f32[%d,%d]" % (M, KB), "B=f8e4m3[%d,%d]" % (N, K),
             "Bs=f32[%d,%d]" % (NB, KB), "C=bf16[%d,%d]" % (M, N)], ["A", "As", "B", "Bs", "C"], ["BM=32", "BN=64"])
    A, B, As, Bs = r["A"], r["B"], r["As"], r["Bs"]
    ref = [sum(As[i * KB + kb] * Bs[(j // 128) * KB + kb] *
               sum(A[i * K + k] * B[j * K + k] for k in range(kb * 128, min(K, kb * 128 + 128)))
               for kb in range(KB)) for i in range(M) for j in range(N)]
    close("fp8_gemm_blockscale (1x128, 128x128)", r["C"], ref, 4e-3, 1e-3)


def warp_specialized():
    """The _ws kernels (loop hint warp_specialize) on the same inputs as their plain kernels: the
    hint changes who issues the loads on the GPU, never the values, so the interpreter (which
    ignores it) must give the same bits; the plain kernels' own checks hold the references."""
    M, N, K = 70, 90, 300
    cases = [
        ("gemm.tile", "gemm", ["A=bf16[%d,%d]" % (M, K), "B=bf16[%d,%d]" % (K, N), "C=bf16[%d,%d]" % (M, N)],
         ["A", "B"], ["BM=32", "BN=64", "BK=32"]),
        ("gemm.tile", "gemm_nt", ["A=f16[%d,%d]" % (M, K), "B=f16[%d,%d]" % (N, K), "C=f32[%d,%d]" % (M, N)],
         ["A", "B"], ["T=f16", "TC=f32", "BM=32", "BN=64", "BK=32"]),
        ("fp8_gemm.tile", "fp8_gemm", ["A=f8e4m3[%d,%d]" % (M, K), "B=f8e4m3[%d,%d]" % (N, K), "scale_a=f32[1]",
                                       "scale_b=f32[1]", "C=bf16[%d,%d]" % (M, N)],
         ["A", "B", "scale_a", "scale_b"], ["BM=32", "BN=64", "BK=64"]),
        ("fp8_gemm.tile", "fp8_gemm_blockscale",
         ["A=f8e4m3[%d,%d]" % (M, K), "As=f32[%d,%d]" % (M, (K + 127) // 128), "B=f8e4m3[%d,%d]" % (N, K),
          "Bs=f32[%d,%d]" % ((N + 127) // 128, (K + 127) // 128), "C=bf16[%d,%d]" % (M, N)],
         ["A", "As", "B", "Bs"], ["BM=32", "BN=64"]),
    ]
    for src, kern, args, ins, defs in cases:
        plain = run(src, kern, args, ins + ["C"], defs)["C"]
        files = []
        for a in args:
            name = a.split("=")[0]
            if name in ins:
                shutil.copyfile(tmpfile(name + ".npy"), tmpfile("ws_" + name + ".npy"))
                a = name + "=" + tmpfile("ws_" + name + ".npy")
            files.append(a)
        ws = run(src, kern + "_ws", files, ["C"], defs)["C"]
        equal("%s_ws = %s (same bits)" % (kern, kern), ws, plain)


def fp8_quant():
    M, K = 70, 300
    KB = (K + 127) // 128
    r = run("fp8_gemm.tile", "fp8_quant_1x128", ["X=bf16[%d,%d]" % (M, K), "Y=f8e4m3[%d,%d]" % (M, K),
            "S=f32[%d,%d]" % (M, KB)], ["X", "Y", "S"], ["BM=16"])
    X, Y, S = r["X"], r["Y"], r["S"]
    close("fp8_quant_1x128 scales", S, [max(max(abs(X[i * K + k]) for k in range(b * 128, min(K, b * 128 + 128))),
                                             1e-4) / 448 for i in range(M) for b in range(KB)], 1e-6, 0)
    # e4m3 keeps 3 mantissa bits: a relative error of at most 2^-4, plus the subnormal step
    close("fp8_quant_1x128 Y * S ~ X", [Y[i * K + k] * S[i * KB + k // 128] for i in range(M) for k in range(K)],
          X, 2.0 ** -4, 2.0 ** -9 * max(S))


def attn_ref(Q, K, V, Sq, Skv, Hq, Hkv, D, sc, causal, qoff=lambda b, h, i: 0, koff=lambda b, h, j: 0, B=1):
    """O and LSE (natural log) per (b, h, i) in float64; qoff/koff give the element offset of a row."""
    O, L = [], []
    for b in range(B):
        for h in range(Hq):
            hk = h // (Hq // Hkv)
            for i in range(Sq):
                q = qoff(b, h, i)
                s = [sc * sum(Q[q + d] * K[koff(b, hk, j) + d] for d in range(D))
                     for j in range(Skv) if not causal or j <= i + Skv - Sq]
                if not s:  # no key seen: 0 and -inf
                    O += [0.0] * D
                    L.append(-math.inf)
                    continue
                m = max(s)
                p = [math.exp(x - m) for x in s]
                O += [sum(p[j] * V[koff(b, hk, j) + d] for j in range(len(p))) / sum(p) for d in range(D)]
                L.append(m + math.log(sum(p)))
    return O, L


def attention():
    """flash_attn_fwd(_lse) at ragged Sq != Skv, causal (bottom-right) and not, GQA ratios 1, 4 and Hq
    (MQA), rows that see no key; flash_attn_varlen_fwd with empty and one-token sequences."""
    D, d = 64, ["D=64", "BM=32", "BN=16"]
    sc = 1 / math.sqrt(D)
    tol = {"bf16": (2e-2, 2e-2), "f16": (4e-3, 4e-3)}
    for T, B, Hq, Hkv, Sq, Skv, causal, lse in (
            ("bf16", 2, 2, 2, 50, 70, 0, 0), ("bf16", 1, 2, 2, 37, 37, 1, 0), ("bf16", 1, 8, 2, 17, 33, 1, 0),
            ("bf16", 1, 4, 1, 20, 45, 0, 0), ("bf16", 1, 2, 2, 40, 20, 1, 0), ("bf16", 1, 2, 1, 1, 1, 0, 0),
            ("f16", 1, 4, 4, 33, 18, 0, 0), ("bf16", 1, 4, 1, 33, 47, 1, 1), ("f16", 1, 8, 2, 19, 50, 0, 1),
            ("bf16", 1, 2, 2, 40, 17, 1, 1)):
        qs, ks = "[%d,%d,%d,%d]" % (B, Hq, Sq, D), "[%d,%d,%d,%d]" % (B, Hkv, Skv, D)
        args = ["Q=%s%s" % (T, qs), "K=%s%s" % (T, ks), "V=%s%s" % (T, ks), "O=%s%s" % (T, qs)]
        if lse:
            args.append("LSE=f32[%d,%d,%d]" % (B, Hq, Sq))
        kernel = "flash_attn_fwd_lse" if lse else "flash_attn_fwd"
        r = run("attention.tile", kernel, args + ["sm_scale=%r" % sc, "causal=%d" % causal],
                ["Q", "K", "V", "O"] + (["LSE"] if lse else []), d + ["T=" + T])
        O, L = attn_ref(r["Q"], r["K"], r["V"], Sq, Skv, Hq, Hkv, D, sc, causal,
                        lambda b, h, i: ((b * Hq + h) * Sq + i) * D, lambda b, h, j: ((b * Hkv + h) * Skv + j) * D, B)
        name = "%s T=%s B=%d Hq=%d Hkv=%d Sq=%d Skv=%d causal=%d" % (kernel, T, B, Hq, Hkv, Sq, Skv, causal)
        close(name, r["O"], O, *tol[T])
        if lse:
            close(name + " LSE", [x if x != -math.inf else -1e30 for x in r["LSE"]],
                  [x if x != -math.inf else -1e30 for x in L], 1e-2, 1e-2)
    # varlen: empty, one-token and ragged sequences, a query-only sequence with no keys
    for Hq, Hkv, lq, lk, causal in ((4, 2, [0, 1, 17, 5, 3], [3, 1, 20, 0, 40], 1),
                                    (2, 2, [9, 0, 1, 33], [1, 4, 26, 33], 0)):
        cq, ck = [0], [0]
        for a, b in zip(lq, lk):
            cq.append(cq[-1] + a)
            ck.append(ck[-1] + b)
        npy_write(tmpfile("cuq.npy"), "<i4", [len(cq)], cq)
        npy_write(tmpfile("cuk.npy"), "<i4", [len(ck)], ck)
        tq, tk = cq[-1], ck[-1]
        r = run("attention.tile", "flash_attn_varlen_fwd",
                ["Q=bf16[%d,%d,%d]" % (tq, Hq, D), "K=bf16[%d,%d,%d]" % (tk, Hkv, D), "V=bf16[%d,%d,%d]" % (tk, Hkv, D),
                 "O=bf16[%d,%d,%d]" % (tq, Hq, D), "cu_seqlens_q=" + tmpfile("cuq.npy"),
                 "cu_seqlens_k=" + tmpfile("cuk.npy"), "max_seqlen_q=%d" % max(lq), "max_seqlen_k=%d" % max(lk),
                 "sm_scale=%r" % sc, "causal=%d" % causal], ["Q", "K", "V", "O"], d)
        ref = [0.0] * (tq * Hq * D)
        for b in range(len(lq)):
            O, _ = attn_ref(r["Q"], r["K"], r["V"], lq[b], lk[b], Hq, Hkv, D, sc, causal,
                            lambda _b, h, i: ((cq[b] + i) * Hq + h) * D, lambda _b, h, j: ((ck[b] + j) * Hkv + h) * D)
            for h in range(Hq):
                for i in range(lq[b]):
                    for e in range(D):
                        ref[((cq[b] + i) * Hq + h) * D + e] = O[(h * lq[b] + i) * D + e]
        close("flash_attn_varlen_fwd Hq=%d Hkv=%d q=%s k=%s causal=%d" % (Hq, Hkv, lq, lk, causal), r["O"], ref,
              2e-2, 2e-2)


def attention_fp8():
    """flash_attn_fwd_fp8: e4m3 Q, K, V with descale factors, P quantized to e4m3 for P V.  The bound
    (stdlib/attention.tile): |O - ref| <= 2^-4 max|V * v_descale| + 2^-8 |ref| (e4m3's relative error on
    each probability, then bf16's rounding), against the float64 softmax of the dequantized inputs."""
    D = 64
    for B, Hq, Hkv, Sq, Skv, causal, lse, vt in ((1, 4, 2, 40, 70, 0, 1, 0), (1, 2, 1, 33, 20, 1, 0, 0),
                                                 (1, 2, 2, 1, 1, 1, 1, 0), (1, 4, 2, 40, 70, 1, 1, 1)):
        qs, ks = "[%d,%d,%d,%d]" % (B, Hq, Sq, D), "[%d,%d,%d,%d]" % (B, Hkv, Skv, D)
        vs = "[%d,%d,%d,%d]" % (B, Hkv, D, Skv) if vt else ks
        desc = {"q_descale": 0.75, "k_descale": 1.5, "v_descale": 0.625}
        for n, x in desc.items():
            npy_write(tmpfile(n + ".npy"), "<f4", [1], [x])
        sc = 1 / math.sqrt(D)
        args = ["Q=f8e4m3" + qs, "K=f8e4m3" + ks, "V=f8e4m3" + vs, "O=bf16" + qs,
                "LSE=f32[%d,%d,%d]" % ((B, Hq, Sq) if lse else (0, 0, 0))]
        args += ["%s=%s" % (n, tmpfile(n + ".npy")) for n in desc] + ["sm_scale=%r" % sc, "causal=%d" % causal]
        r = run("attention.tile", "flash_attn_fwd_fp8", args, ["Q", "K", "V", "O"] + (["LSE"] if lse else []),
                ["D=64", "BM=64", "BN=32", "VT=%d" % vt])
        Q = [x * desc["q_descale"] for x in r["Q"]]
        K = [x * desc["k_descale"] for x in r["K"]]
        V = [x * desc["v_descale"] for x in r["V"]]
        if vt:  # [B, Hkv, D, Skv] -> [B, Hkv, Skv, D]
            V = [V[((bh * D) + d) * Skv + j] for bh in range(B * Hkv) for j in range(Skv) for d in range(D)]
        O, L = attn_ref(Q, K, V, Sq, Skv, Hq, Hkv, D, sc, causal,
                        lambda b, h, i: ((b * Hq + h) * Sq + i) * D, lambda b, h, j: ((b * Hkv + h) * Skv + j) * D, B)
        name = "flash_attn_fwd_fp8 Hq=%d Hkv=%d Sq=%d Skv=%d causal=%d VT=%d" % (Hq, Hkv, Sq, Skv, causal, vt)
        vmax = max(abs(v) for v in V)
        close(name, r["O"], O, 2.0 ** -8, 2.0 ** -4 * vmax)
        # the rounding of P is unbiased: on average far below the worst case (a systematic error is not)
        mean = sum(abs(g - w) for g, w in zip(r["O"], O)) / len(O)
        equal(name + " mean error <= 2^-6 max|V|", mean <= 2.0 ** -6 * vmax, True)
        if lse:
            close(name + " LSE", [x if x != -math.inf else -1e30 for x in r["LSE"]],
                  [x if x != -math.inf else -1e30 for x in L], 1e-2, 1e-2)


def run_fail(src, kernel, args, defines=()):
    """Runs the kernel expecting an error; returns its stderr (checked by the caller)."""
    checked.add((src, kernel))
    cmd = [TILEC, "run", os.path.join(STDLIB, src), "--kernel", kernel]
    for d in defines:
        cmd += ["-D", d]
    r = subprocess.run(cmd + ["--interp"] + args, capture_output=True, text=True)
    return r.returncode, r.stderr


def decode_ref(Q, Kc, Vc, bt, lens, B, Sq, Hq, Hkv, D, PAGE, maxp, sc, ks, vs):
    """paged_attn_decode's O [B, Sq, Hq, D] and LSE [B, Sq, Hq] in float64 (query t of sequence b
    at position L - Sq + t sees keys j <= L - Sq + t)."""
    O, L = [], []
    G = Hq // Hkv
    for b in range(B):
        n = lens[b]
        for t in range(Sq):
            for h in range(Hq):
                hk = h // G
                q = ((b * Sq + t) * Hq + h) * D
                rows = [((bt[b * maxp + j // PAGE] * PAGE + j % PAGE) * Hkv + hk) * D for j in range(n)
                        if j <= n - Sq + t]
                if not rows:
                    O += [0.0] * D
                    L.append(-math.inf)
                    continue
                s = [sc * ks * sum(Q[q + e] * Kc[r + e] for e in range(D)) for r in rows]
                m = max(s)
                p = [math.exp(x - m) for x in s]
                O += [vs * sum(p[j] * Vc[rows[j] + e] for j in range(len(p))) / sum(p) for e in range(D)]
                L.append(m + math.log(sum(p)))
    return O, L


def decode():
    """paged_attn_decode (+ combine) against float64 at every page size, D, GQA ratio (MHA, GQA,
    MQA), Sq > 1 (causal among the new tokens), lengths 0, 1, PAGE - 1, PAGE + 1 and longer, on
    shuffled block tables whose sequences share pages (prefix caching), the split forced off and
    on (several splits, some empty) and automatic, LSE given or empty, bf16, f16 and an FP8 e4m3
    cache with scales; the contracts; kv_cache_append into bf16 and FP8 caches."""
    rng = random.Random(11)
    tol = {"bf16": (2e-2, 2e-2), "f16": (4e-3, 4e-3), "f8e4m3": (2e-2, 2e-2)}
    cases = (  # T, KV, D, PAGE, B, Sq, Hq, Hkv, splits, lse, k_scale, v_scale
        ("bf16", "bf16", 64, 16, 4, 1, 8, 2, (0, 3), 1, 1.0, 1.0),
        ("bf16", "bf16", 64, 32, 3, 1, 4, 4, (0, -1), 0, 1.0, 1.0),
        ("bf16", "bf16", 64, 64, 3, 1, 8, 1, (0, 2), 1, 1.0, 1.0),
        ("bf16", "bf16", 64, 16, 3, 3, 8, 2, (0, 4), 1, 1.0, 1.0),
        ("f16", "f16", 128, 16, 2, 2, 4, 1, (0, 3), 1, 1.0, 1.0),
        ("bf16", "f8e4m3", 64, 16, 3, 1, 4, 2, (0, 3), 1, 0.5, 0.25),
        ("bf16", "bf16", 256, 32, 2, 1, 2, 2, (0,), 0, 1.0, 1.0),
    )
    for T, KV, D, PAGE, B, Sq, Hq, Hkv, splits, lse, ks, vs in cases:
        # lengths: 0 or 1, PAGE - 1, PAGE + 1, a longer one; Sq > 1 keeps n >= 1
        lens = [max(1 if Sq > 1 else 0, x) for x in [1, PAGE - 1, PAGE + 1, 3 * PAGE + 5, 0][:B]]
        if B >= 3:
            lens[0] = 0 if Sq == 1 else Sq
        maxp = max((n + PAGE - 1) // PAGE for n in lens) + 1
        P = B * maxp - 1
        pages = list(range(P))
        rng.shuffle(pages)
        bt = [pages[(b * maxp + j) % P] for b in range(B) for j in range(maxp)]
        if B >= 2:
            bt[1 * maxp] = bt[0]          # sequence 1's first page is sequence 0's (a shared prefix)
        npy_write(tmpfile("bt.npy"), "<i4", [B, maxp], bt)
        npy_write(tmpfile("lens.npy"), "<i4", [B], lens)
        sc = 1 / math.sqrt(D)
        outs = {}
        for split in splits:
            ms = 8
            args = ["Q=%s[%d,%d,%d,%d]" % (T, B, Sq, Hq, D), "Kc=%s[%d,%d,%d,%d]" % (KV, P, PAGE, Hkv, D),
                    "Vc=%s[%d,%d,%d,%d]" % (KV, P, PAGE, Hkv, D), "block_table=" + tmpfile("bt.npy"),
                    "seq_lens=" + tmpfile("lens.npy"), "O=%s[%d,%d,%d,%d]" % (T, B, Sq, Hq, D),
                    "LSE=f32[%d,%d,%d]" % ((B, Sq, Hq) if lse else (0, 0, 0)),
                    "Op=f32[%d,%d,%d,%d]" % (B, ms, Sq * Hq, D), "Lp=f32[%d,%d,%d]" % (B, ms, Sq * Hq),
                    "sm_scale=%r" % sc, "k_scale=%r" % ks, "v_scale=%r" % vs]
            d = ["T=" + T, "KV=" + KV, "D=%d" % D, "PAGE=%d" % PAGE, "BN=16", "SPLIT=%d" % split]
            want = ["Q", "Kc", "Vc", "O"] + (["LSE"] if lse else [])
            r = run("decode.tile", "paged_attn_decode", args, want + ["Op", "Lp"], d)
            # the combine reads the workspace the first kernel left: handed over through files
            npy_write(tmpfile("Op_in.npy"), "<f4", [B, ms, Sq * Hq, D], r["Op"])
            npy_write(tmpfile("Lp_in.npy"), "<f4", [B, ms, Sq * Hq], r["Lp"])
            r2 = run("decode.tile", "paged_attn_decode_combine",
                     [a for a in args if not a.startswith(("Op=", "Lp="))] +
                     ["Op=" + tmpfile("Op_in.npy"), "Lp=" + tmpfile("Lp_in.npy")], ["O"] + (["LSE"] if lse else []), d)
            # the number of splits, as both grids compute it (the interpreter has 132 SMs)
            progs = B * Hkv * ((Hq // Hkv * Sq + 15) // 16)
            auto = min((maxp * PAGE + 63) // 64, (264 + progs - 1) // progs)
            nsplit = max(1, min(ms, split if split >= 0 else auto))
            outs[split] = (r, r2, nsplit)
        for split, (r, r2, nsplit) in outs.items():
            O, L = decode_ref(r["Q"], r["Kc"], r["Vc"], bt, lens, B, Sq, Hq, Hkv, D, PAGE, maxp, sc, ks, vs)
            name = "paged_attn_decode T=%s KV=%s D=%d PAGE=%d Hq/Hkv=%d/%d Sq=%d SPLIT=%d" % (
                T, KV, D, PAGE, Hq, Hkv, Sq, split)
            name += " (%d splits)" % nsplit
            got_o = r2["O"] if nsplit > 1 else r["O"]
            close(name, got_o, O, *tol[KV])
            if lse:
                got_l = r2["LSE"] if nsplit > 1 else r["LSE"]
                close(name + " LSE", [x if x != -math.inf else -1e30 for x in got_l],
                      [x if x != -math.inf else -1e30 for x in L], 1e-2, 1e-2)
        if len(outs) == 2:  # the split path against the unsplit one: equal within rounding
            (ra, _, _), (rb, rb2, nb) = outs[0], outs[splits[1]]
            close("paged_attn_decode %d splits == no split (D=%d PAGE=%d)" % (nb, D, PAGE),
                  rb2["O"] if nb > 1 else rb["O"], ra["O"], 8e-3, 8e-3)

    # contracts: shapes that disagree are errors at a requires() clause; a seq_lens entry beyond
    # the table's capacity or a page outside the cache fails the kernel's assert (NaN on the GPU)
    B, P, PAGE, D = 2, 6, 16, 64
    npy_write(tmpfile("bt.npy"), "<i4", [B, 3], [0, 1, 2, 3, 4, 5])
    base = {"Q": "bf16[2,1,8,64]", "Kc": "bf16[6,16,2,64]", "Vc": "bf16[6,16,2,64]", "block_table": tmpfile("bt.npy"),
            "seq_lens": tmpfile("lens.npy"), "O": "bf16[2,1,8,64]", "LSE": "f32[0,0,0]", "Op": "f32[0,0,0,0]",
            "Lp": "f32[0,0,0]", "sm_scale": "0.125", "k_scale": "1.0", "v_scale": "1.0"}
    for what, lens, change, phrase in (
            ("GQA mismatch (Hq=8, Hkv=3)", [5, 5], {"Kc": "bf16[6,16,3,64]", "Vc": "bf16[6,16,3,64]"}, "multiple"),
            ("page size != PAGE", [5, 5], {"Kc": "bf16[6,32,2,64]", "Vc": "bf16[6,32,2,64]"}, "PAGE slots"),
            ("block_table rows != B", [5, 5], {"Q": "bf16[3,1,8,64]", "O": "bf16[3,1,8,64]"}, "one row per sequence"),
            ("LSE of another shape", [5, 5], {"LSE": "f32[2,1,4]"}, "LSE must be"),
            ("seq_lens beyond max_pages * PAGE", [5, 49], {}, "beyond max_pages"),
            ("a page outside the cache", [5, 40], {"Kc": "bf16[2,16,2,64]", "Vc": "bf16[2,16,2,64]"}, "outside")):
        npy_write(tmpfile("lens.npy"), "<i4", [B], lens)
        a = dict(base, **change)
        rc, err = run_fail("decode.tile", "paged_attn_decode", ["%s=%s" % kv for kv in a.items()], ["D=64"])
        equal("paged_attn_decode refuses: " + what, rc == 1 and phrase in err, True)

    # kv_cache_append: T tokens into zeroed caches, -1 skipping one; bf16 exactly, FP8 rounded
    T_, Hkv, P, PAGE = 6, 3, 4, 16
    slots = [5, -1, 63, 16, 0, 40]
    npy_write(tmpfile("slots.npy"), "<i8", [T_], slots)
    for KV, ks, vs in (("bf16", 1.0, 1.0), ("f8e4m3", 0.5, 0.125)):
        r = run("decode.tile", "kv_cache_append",
                ["K=bf16[%d,%d,64]" % (T_, Hkv), "V=bf16[%d,%d,64]" % (T_, Hkv), "Kc=%s[%d,%d,%d,64]" % (KV, P, PAGE, Hkv),
                 "Vc=%s[%d,%d,%d,64]" % (KV, P, PAGE, Hkv), "slot_mapping=" + tmpfile("slots.npy"),
                 "k_scale=%r" % ks, "v_scale=%r" % vs, "--zero", "Kc,Vc"], ["K", "V", "Kc", "Vc"], ["D=64", "KV=" + KV])
        for x, c, sc in (("K", "Kc", ks), ("V", "Vc", vs)):
            want = [0.0] * (P * PAGE * Hkv * 64)
            for i, sl in enumerate(slots):
                if sl >= 0:
                    want[sl * Hkv * 64:(sl + 1) * Hkv * 64] = [v / sc for v in r[x][i * Hkv * 64:(i + 1) * Hkv * 64]]
            if KV == "bf16":
                equal("kv_cache_append KV=bf16 %s" % c, r[c], want)
            else:  # e4m3: 3 mantissa bits, a relative error of at most 2^-4, plus the subnormal step
                close("kv_cache_append KV=f8e4m3 %s (scale %g)" % (c, sc), r[c], want, 2.0 ** -4, 2.0 ** -10)
    npy_write(tmpfile("slots.npy"), "<i8", [T_], [5, -1, 64, 16, 0, 40])
    rc, err = run_fail("decode.tile", "kv_cache_append",
                       ["K=bf16[6,3,64]", "V=bf16[6,3,64]", "Kc=bf16[4,16,3,64]", "Vc=bf16[4,16,3,64]",
                        "slot_mapping=" + tmpfile("slots.npy"), "k_scale=1.0", "v_scale=1.0"], ["D=64"])
    equal("kv_cache_append refuses a slot outside the cache", rc == 1 and "outside the cache" in err, True)


def rmsnorm_ref(X, W, M, N, eps):
    ref = []
    for i in range(M):
        row = X[i * N:(i + 1) * N]
        rs = 1 / math.sqrt(sum(x * x for x in row) / N + eps)
        ref += [x * rs * w for x, w in zip(row, W)]
    return ref


def softmax_ref(X, M, N):
    ref = []
    for i in range(M):
        e = [math.exp(x - max(X[i * N:(i + 1) * N])) for x in X[i * N:(i + 1) * N]]
        ref += [v / sum(e) for v in e]
    return ref


def norms():
    M, N = 5, 1000
    for T in ("bf16", "f32"):
        tol = 1e-2 if T == "bf16" else 1e-5
        d = ["T=" + T, "BLOCK=256"]
        r = run("norms.tile", "rmsnorm", ["X=%s[%d,%d]" % (T, M, N), "W=%s[%d]" % (T, N), "Y=%s[%d,%d]" % (T, M, N),
                "eps=1e-5"], ["X", "W", "Y"], d)
        close("rmsnorm T=" + T, r["Y"], rmsnorm_ref(r["X"], r["W"], M, N, 1e-5), tol, 1e-5)
        r = run("norms.tile", "layernorm", ["X=%s[%d,%d]" % (T, M, N), "W=%s[%d]" % (T, N), "B=%s[%d]" % (T, N),
                "Y=%s[%d,%d]" % (T, M, N), "eps=1e-5"], ["X", "W", "B", "Y"], d)
        X, W, Bv = r["X"], r["W"], r["B"]
        ref = []
        for i in range(M):
            row = X[i * N:(i + 1) * N]
            mu = sum(row) / N
            rs = 1 / math.sqrt(sum((x - mu) ** 2 for x in row) / N + 1e-5)
            ref += [(x - mu) * rs * w + b for x, w, b in zip(row, W, Bv)]
        close("layernorm T=" + T, r["Y"], ref, tol, 1e-4)


def softmax():
    M, N = 6, 300
    for T in ("f32", "bf16"):
        r = run("softmax.tile", "softmax", ["X=%s[%d,%d]" % (T, M, N), "Y=%s[%d,%d]" % (T, M, N)], ["X", "Y"],
                ["T=" + T, "BLOCK=512"])
        close("softmax T=" + T, r["Y"], softmax_ref(r["X"], M, N), 4e-3 if T == "bf16" else 1e-5, 1e-7)
    # ROWS, WARPS, PERSIST and EXACT at ragged shapes (rows not a multiple of ROWS, columns of
    # BLOCK); bf16 and f16 take the kernel's own exponential unless EXACT=1; M = 600 rows make each
    # PERSIST program walk several blocks of rows (the interpreter has 132 SMs)
    tol = {"bf16": (4e-3, 1e-7), "f16": (1e-3, 1e-7), "f32": (1e-5, 1e-7)}
    for T, M, N, extra in (("bf16", 7, 300, ["ROWS=4"]), ("bf16", 7, 300, ["ROWS=2", "WARPS=4", "EXACT=1"]),
                           ("f16", 7, 300, ["ROWS=2"]), ("f32", 7, 300, ["ROWS=4", "WARPS=2"]),
                           ("bf16", 600, 50, ["PERSIST=1"]), ("f32", 600, 50, ["ROWS=2", "PERSIST=2"]),
                           ("bf16", 300, 100, ["ROWS=2", "PERSIST=1"])):
        blk = "BLOCK=%d" % (1 << (N - 1).bit_length())
        r = run("softmax.tile", "softmax", ["X=%s[%d,%d]" % (T, M, N), "Y=%s[%d,%d]" % (T, M, N)], ["X", "Y"],
                ["T=" + T, blk] + extra)
        close("softmax T=%s %dx%d %s" % (T, M, N, " ".join(extra)), r["Y"], softmax_ref(r["X"], M, N), *tol[T])


def moe():
    T, E, K = 50, 20, 4
    for renorm in (0, 1):
        r = run("moe.tile", "moe_topk_softmax", ["logits=f32[%d,%d]" % (T, E), "weights=f32[%d,%d]" % (T, K),
                "ids=i32[%d,%d]" % (T, K), "renorm=%d" % renorm], ["logits", "weights", "ids"], ["NE=32", "TOPK=4"])
        L = r["logits"]
        rw, ri = [], []
        for t in range(T):
            e = [math.exp(x - max(L[t * E:(t + 1) * E])) for x in L[t * E:(t + 1) * E]]
            p = [x / sum(e) for x in e]
            top = sorted(range(E), key=lambda j: (-p[j], j))[:K]
            w = [p[j] for j in top]
            rw += [x / sum(w) for x in w] if renorm else w
            ri += top
        close("moe_topk_softmax renorm=%d weights" % renorm, r["weights"], rw, 1e-5, 1e-7)
        equal("moe_topk_softmax renorm=%d ids" % renorm, r["ids"], ri)

    rng = random.Random(3)
    n = T * K
    ids = [rng.randrange(E) for _ in range(n)]
    npy_write(tmpfile("ids.npy"), "<i4", [n], ids)
    npy_write(tmpfile("zeros.npy"), "<i4", [E], [0] * E)
    counts = run("moe.tile", "moe_count", ["ids=" + tmpfile("ids.npy"), "n=%d" % n, "counts=" + tmpfile("zeros.npy")],
                 ["counts"], ["BLOCK=64"])["counts"]
    equal("moe_count", counts, [ids.count(e) for e in range(E)])

    npy_write(tmpfile("counts.npy"), "<i4", [E], counts)
    npy_write(tmpfile("offsets.npy"), "<i4", [E + 1], [-7] * (E + 1))
    offs = run("moe.tile", "moe_offsets", ["counts=" + tmpfile("counts.npy"), "offsets=" + tmpfile("offsets.npy"),
               "n_experts=%d" % E], ["offsets"], ["NE=32"])["offsets"]
    want = [0]
    for c in counts:
        want.append(want[-1] + c)
    equal("moe_offsets", offs, want)

    npy_write(tmpfile("offsets.npy"), "<i4", [E + 1], want)
    npy_write(tmpfile("sorted.npy"), "<i4", [n], [-1] * n)
    sidx = run("moe.tile", "moe_permute", ["ids=" + tmpfile("ids.npy"), "n=%d" % n, "offsets=" + tmpfile("offsets.npy"),
               "cursor=" + tmpfile("zeros.npy"), "sorted_idx=" + tmpfile("sorted.npy")], ["sorted_idx"],
               ["BLOCK=64"])["sorted_idx"]
    # a permutation that puts every (token, k) inside its expert's range
    ok = sorted(sidx) == list(range(n)) and all(want[ids[s]] <= slot < want[ids[s] + 1] for slot, s in enumerate(sidx))
    equal("moe_permute", ok, True)

    Kd, Nd = 48, 40
    sidx_pad = sidx + [-1, n * 3]          # two padding slots (negative, past T * TOPK): zero rows
    npy_write(tmpfile("sorted.npy"), "<i4", [n + 2], sidx_pad)
    r = run("moe.tile", "moe_gather_rows", ["X=f32[%d,%d]" % (T, Kd), "sorted_idx=" + tmpfile("sorted.npy"),
            "n=%d" % (n + 2), "Xs=f32[%d,%d]" % (n + 2, Kd)], ["X", "Xs"], ["T=f32", "TOPK=4", "BK=32"])
    equal("moe_gather_rows", r["Xs"], [r["X"][(sidx[s] // K) * Kd + c] for s in range(n) for c in range(Kd)] +
          [0.0] * (2 * Kd))

    moe_grouped(rng)


def moe_grouped(rng):
    """The bf16 grouped GEMMs (moe_grouped_gemm, _kn, _scaled) on their work list: E = 19 experts
    (NE = 8: the expert search runs three chunks, the last ragged) of 0 to 37 rows, some empty, the
    offsets starting past row 0 and ending before A's last row (rows of no expert: C keeps its -7s),
    and one expert holding every row; N = 40 and K = 40 ragged against BN = BK = 16.  Offsets past C's
    last row (a caller's mistake) write nothing past C."""
    E, Nd, Kd, BM = 19, 40, 40, 16
    sentinel = 0xC0E0                                  # bf16 -7.0: rows a kernel must not write
    for name, counts in (("ragged", [rng.choice([0, 0, 1, 5, 16, 17, 37]) for _ in range(E)]),
                         ("one expert", [0] * 7 + [45] + [0] * (E - 8)),
                         ("offsets past C's rows", [0] * 5 + [30, 0, 20] + [0] * (E - 8))):
        offs = [3]
        for c in counts:
            offs.append(offs[-1] + c)
        M = offs[-1] + 2 if not name.startswith("offsets past") else offs[-1] - 7   # a caller's mistake: no row past C
        npy_write(tmpfile("offsets.npy"), "<i4", [E + 1], offs)
        npy_write(tmpfile("c0.npy"), "<u2", [M, Nd], [sentinel] * (M * Nd))
        owner = [next((e for e in range(E) if offs[e] <= row < offs[e + 1]), -1) for row in range(M)]
        for kernel in ("moe_grouped_gemm", "moe_grouped_gemm_kn", "moe_grouped_gemm_scaled"):
            kn = kernel.endswith("_kn")
            wshape = [E, Kd, Nd] if kn else [E, Nd, Kd]
            args = ["A=bf16[%d,%d]" % (M, Kd), "W=bf16[%s]" % ",".join(map(str, wshape)),
                    "offsets=" + tmpfile("offsets.npy")]
            if kernel.endswith("_scaled"):
                args.append("row_scale=f32[%d]" % M)
            r = run("moe.tile", kernel, args + ["C=" + tmpfile("c0.npy")], ["A", "W", "C"] +
                    (["row_scale"] if kernel.endswith("_scaled") else []), ["BM=%d" % BM, "BN=16", "BK=16", "NE=8"])
            A, W = r["A"], r["W"]
            ref = []
            for row in range(M):
                e = owner[row]
                for j in range(Nd):
                    if e < 0:
                        ref.append(-7.0)
                        continue
                    w = (lambda k: W[(e * Kd + k) * Nd + j]) if kn else (lambda k: W[(e * Nd + j) * Kd + k])
                    v = sum(A[row * Kd + k] * w(k) for k in range(Kd))
                    ref.append(v * r["row_scale"][row] if kernel.endswith("_scaled") else v)
            close("%s %s" % (kernel, name), r["C"], ref, 4e-3, 1e-3)
    rc, err = run_fail("moe.tile", "moe_grouped_gemm", ["A=bf16[8,40]", "W=bf16[2,16,32]",
                       "offsets=" + tmpfile("offsets.npy"), "C=bf16[8,16]"], ["BM=16", "BN=16", "BK=16"])
    equal("moe_grouped_gemm refuses W's K unlike A's", rc == 1 and "W must be [E, N, K]" in err, True)
    rc, err = run_fail("moe.tile", "moe_grouped_gemm_kn", ["A=bf16[8,40]", "W=bf16[2,40,16]",
                       "offsets=" + tmpfile("offsets.npy"), "C=bf16[9,16]"], ["BM=16", "BN=16", "BK=16"])
    equal("moe_grouped_gemm_kn refuses C's rows unlike A's", rc == 1 and "C must have A's rows" in err, True)


def sigm(x):
    return 1 / (1 + math.exp(-x))


def moe_route():
    """moe_topk_softmax at E = 200 of NE = 256 (top-8), and moe_route_dsv3 (DeepSeek-V3's grouped
    routing) at a ragged T, at E = 64 in 8 groups and at the defaults (E = 256) with T = 1."""
    T, E, K = 5, 200, 8
    r = run("moe.tile", "moe_topk_softmax", ["logits=f32[%d,%d]" % (T, E), "weights=f32[%d,%d]" % (T, K),
            "ids=i32[%d,%d]" % (T, K), "renorm=1"], ["logits", "weights", "ids"], ["NE=256", "TOPK=8", "BT=4"])
    L, rw, ri = r["logits"], [], []
    for t in range(T):
        e = [math.exp(x - max(L[t * E:(t + 1) * E])) for x in L[t * E:(t + 1) * E]]
        top = sorted(range(E), key=lambda j: (-e[j], j))[:K]
        rw += [e[j] / sum(e[j] for j in top) for j in top]
        ri += top
    close("moe_topk_softmax E=200 NE=256 top-8 weights", r["weights"], rw, 1e-5, 1e-7)
    equal("moe_topk_softmax E=200 NE=256 top-8 ids", r["ids"], ri)
    for T, E, d in ((9, 64, ["NE=64"]), (1, 256, [])):
        NG, TG, K, scale = 8, 4, 8, 2.5
        r = run("moe.tile", "moe_route_dsv3", ["logits=f32[%d,%d]" % (T, E), "bias=f32[%d]" % E,
                "weights=f32[%d,%d]" % (T, K), "ids=i32[%d,%d]" % (T, K), "scale=%r" % scale],
                ["logits", "bias", "weights", "ids"], d)
        L, B, rw, ri = r["logits"], r["bias"], [], []
        for t in range(T):
            s = [sigm(x) for x in L[t * E:(t + 1) * E]]
            c = [s[j] + B[j] for j in range(E)]
            gs = E // NG
            gscore = [sum(sorted(c[g * gs:(g + 1) * gs], reverse=True)[:2]) for g in range(NG)]
            keep = sorted(range(NG), key=lambda g: (-gscore[g], g))[:TG]
            cand = [j for j in range(E) if j // gs in keep]
            top = sorted(cand, key=lambda j: (-c[j], j))[:K]
            w = [s[j] for j in top]
            rw += [x / (sum(w) + 1e-20) * scale for x in w]
            ri += top
        close("moe_route_dsv3 T=%d E=%d weights" % (T, E), r["weights"], rw, 1e-5, 1e-7)
        equal("moe_route_dsv3 T=%d E=%d ids" % (T, E), r["ids"], ri)


def align_ref(ids, E, BM, max_blocks):
    """offsets (padded), sorted_ids ([0, total): rows of an expert in order, then -1s), block_expert."""
    counts = [ids.count(e) for e in range(E)]
    padded = [(c + BM - 1) // BM * BM for c in counts]
    offs = [0]
    for p in padded:
        offs.append(offs[-1] + p)
    sorted_ids = []
    for e in range(E):
        rows = [i for i, x in enumerate(ids) if x == e]
        sorted_ids += rows + [-1] * (padded[e] - len(rows))
    be = []
    for e in range(E):
        be += [e] * (padded[e] // BM)
    be += [-1] * (max_blocks - len(be))
    return offs, sorted_ids, be


def moe_align():
    """The align step, in one program (moe_align_small) and in three kernels (moe_count,
    moe_align_offsets, moe_align_scatter): ragged routings with experts of 0 rows, one expert with
    every row, T = 1; E = 20 (not a multiple of any block)."""
    rng = random.Random(5)
    E, K = 20, 4
    cases = [("ragged", [rng.choice([0, 1, 3, 4, 7, 8, 12, 19]) for _ in range(29 * K)], 16, ["NB=128", "NBLK=8"]),
             ("one expert", [7] * (25 * K), 16, ["NB=128", "NBLK=8"]),
             ("T=1", [3, 19, 0, 11], 128, ["NB=128"])]
    for name, ids, BM, d in cases:
        n = len(ids)
        max_blocks = (n + BM - 1) // BM + E
        offs, sref, be = align_ref(ids, E, BM, max_blocks)
        total = offs[-1]
        npy_write(tmpfile("ids.npy"), "<i4", [n], ids)
        for f, size in (("offsets", E + 1), ("slot_of", n), ("sorted_ids", n + E * BM), ("block_expert", max_blocks)):
            npy_write(tmpfile(f + ".npy"), "<i4", [size], [-7] * size)
        bufs = ["offsets=" + tmpfile("offsets.npy"), "slot_of=" + tmpfile("slot_of.npy"),
                "sorted_ids=" + tmpfile("sorted_ids.npy"), "block_expert=" + tmpfile("block_expert.npy")]
        r = run("moe.tile", "moe_align_small", ["ids=" + tmpfile("ids.npy"), "n=%d" % n, "n_experts=%d" % E] + bufs +
                ["max_blocks=%d" % max_blocks], ["offsets", "slot_of", "sorted_ids", "block_expert"],
                d + ["NE=32", "BM=%d" % BM])
        equal("moe_align_small %s offsets" % name, r["offsets"], offs)
        equal("moe_align_small %s sorted_ids" % name, r["sorted_ids"][:total], sref)
        equal("moe_align_small %s slot_of" % name, r["slot_of"], [sref.index(i) for i in range(n)])
        equal("moe_align_small %s block_expert" % name, r["block_expert"], be)

        npy_write(tmpfile("counts.npy"), "<i4", [E], [0] * E)
        for f, size in (("offsets", E + 1), ("slot_of", n), ("sorted_ids", n + E * BM), ("block_expert", max_blocks)):
            npy_write(tmpfile(f + ".npy"), "<i4", [size], [-7] * size)
        counts = run("moe.tile", "moe_count", ["ids=" + tmpfile("ids.npy"), "n=%d" % n,
                     "counts=" + tmpfile("counts.npy")], ["counts"], ["BLOCK=64"])["counts"]
        npy_write(tmpfile("counts.npy"), "<i4", [E], counts)
        r = run("moe.tile", "moe_align_offsets", ["counts=" + tmpfile("counts.npy"), "n_experts=%d" % E] +
                [b for b in bufs if not b.startswith("slot_of")] + ["max_blocks=%d" % max_blocks],
                ["offsets", "sorted_ids", "block_expert"], ["NE=32", "BM=%d" % BM, "BJ=4"])
        equal("moe_align_offsets %s offsets" % name, r["offsets"], offs)
        equal("moe_align_offsets %s block_expert" % name, r["block_expert"], be)
        npy_write(tmpfile("offsets.npy"), "<i4", [E + 1], r["offsets"])
        npy_write(tmpfile("sorted_ids.npy"), "<i4", [n + E * BM], r["sorted_ids"])
        r = run("moe.tile", "moe_align_scatter", ["ids=" + tmpfile("ids.npy"), "n=%d" % n,
                "offsets=" + tmpfile("offsets.npy"), "counts=" + tmpfile("counts.npy"),
                "slot_of=" + tmpfile("slot_of.npy"), "sorted_ids=" + tmpfile("sorted_ids.npy")],
                ["counts", "slot_of", "sorted_ids"], ["BLOCK=64"])
        got = r["sorted_ids"][:total]
        # the order inside an expert is the programs' order: compare each expert's set of rows
        same = all(sorted(got[offs[e]:offs[e + 1]]) == sorted(sref[offs[e]:offs[e + 1]]) for e in range(E))
        equal("moe_align_scatter %s sorted_ids" % name, same, True)
        equal("moe_align_scatter %s slot_of" % name, [got[r["slot_of"][i]] for i in range(n)], list(range(n)))
        equal("moe_align_scatter %s counts back to 0" % name, r["counts"], [0] * E)


def moe_layer():
    """The memory-bound steps of the layer on an align step's slots: moe_permute_rows (bf16) and
    moe_permute_rows_fp8 (1 x 128 scales), moe_swiglu(_fp8) over the padded rows up to *nrows,
    moe_combine; ragged columns (300: not a multiple of any block)."""
    rng = random.Random(9)
    T, E, K, H, BM = 13, 6, 4, 300, 8
    ids = [rng.choice([0, 2, 3, 5]) for _ in range(T * K)]
    n = T * K
    offs, sref, _ = align_ref(ids, E, BM, 0)
    S = offs[-1] + 3                              # three rows past the total
    slot_of = [sref.index(i) for i in range(n)]
    npy_write(tmpfile("slot_of.npy"), "<i4", [n], slot_of)
    r = run("moe.tile", "moe_permute_rows", ["X=bf16[%d,%d]" % (T, H), "slot_of=" + tmpfile("slot_of.npy"),
            "n=%d" % n, "Xs=bf16[%d,%d]" % (S, H)], ["X", "Xs"], ["TOPK=4", "BK=128"])
    X = r["X"]
    equal("moe_permute_rows", [r["Xs"][slot_of[i] * H + c] for i in range(n) for c in range(H)],
          [X[(i // K) * H + c] for i in range(n) for c in range(H)])
    QB = (H + 127) // 128
    r = run("moe.tile", "moe_permute_rows_fp8", ["X=bf16[%d,%d]" % (T, H), "slot_of=" + tmpfile("slot_of.npy"),
            "n=%d" % n, "Y=f8e4m3[%d,%d]" % (S, H), "S=f32[%d,%d]" % (S, QB)], ["X", "Y", "S"], ["TOPK=4", "BK=256"])
    X, Y, Sc = r["X"], r["Y"], r["S"]
    close("moe_permute_rows_fp8 scales", [Sc[slot_of[i] * QB + b] for i in range(n) for b in range(QB)],
          [max(max(abs(X[(i // K) * H + c]) for c in range(b * 128, min(H, b * 128 + 128))), 1e-4) / 448
           for i in range(n) for b in range(QB)], 1e-6, 0)
    close("moe_permute_rows_fp8 Y * S ~ X", [Y[slot_of[i] * H + c] * Sc[slot_of[i] * QB + c // 128]
                                            for i in range(n) for c in range(H)],
          [X[(i // K) * H + c] for i in range(n) for c in range(H)], 2.0 ** -4, 2.0 ** -9 * max(Sc))

    N, M = 150, offs[-1] + 3
    nrows = offs[-1] - 3   # not a multiple of the kernels' BR = 8 rows a program
    npy_write(tmpfile("nrows.npy"), "<i4", [1], [nrows])
    npy_write(tmpfile("y0.npy"), "<u2", [M, N], [0] * (M * N))
    r = run("moe.tile", "moe_swiglu", ["X=bf16[%d,%d]" % (M, 2 * N), "Y=" + tmpfile("y0.npy"),
            "nrows=" + tmpfile("nrows.npy")], ["X", "Y"], ["BK=64"])
    X = r["X"]
    ref = [X[i * 2 * N + c] * sigm(X[i * 2 * N + c]) * X[i * 2 * N + N + c] for i in range(nrows) for c in range(N)]
    close("moe_swiglu (rows < nrows)", r["Y"][:nrows * N], ref, 4e-3, 1e-6)
    equal("moe_swiglu rows past nrows untouched", r["Y"][nrows * N:], [0.0] * ((M - nrows) * N))
    QB = (N + 127) // 128
    r = run("moe.tile", "moe_swiglu_fp8", ["X=bf16[%d,%d]" % (M, 2 * N), "Y=f8e4m3[%d,%d]" % (M, N),
            "S=f32[%d,%d]" % (M, QB), "nrows=" + tmpfile("nrows.npy")], ["X", "Y", "S"], ["BK=128"])
    X, Y, Sc = r["X"], r["Y"], r["S"]
    ref = [X[i * 2 * N + c] * sigm(X[i * 2 * N + c]) * X[i * 2 * N + N + c] for i in range(nrows) for c in range(N)]
    close("moe_swiglu_fp8 scales", Sc[:nrows * QB], [max(max(abs(ref[i * N + c]) for c in range(b * 128, min(N, b * 128 + 128))),
                                                         1e-4) / 448 for i in range(nrows) for b in range(QB)], 8e-3, 0)
    close("moe_swiglu_fp8 Y * S ~ silu(g) u", [Y[i * N + c] * Sc[i * QB + c // 128] for i in range(nrows) for c in range(N)],
          ref, 2.0 ** -4 + 8e-3, 2.0 ** -9 * max(Sc))

    for ks in ((4,), (1,)):
        KK = ks[0]
        sl = slot_of if KK == 4 else [slot_of[t * 4] for t in range(T)]
        npy_write(tmpfile("slot_of.npy"), "<i4", [T * KK], sl)
        r = run("moe.tile", "moe_combine", ["Y=bf16[%d,%d]" % (S, H), "slot_of=" + tmpfile("slot_of.npy"),
                "w=f32[%d,%d]" % (T, KK), "out=bf16[%d,%d]" % (T, H)], ["Y", "w", "out"], ["TOPK=%d" % KK, "BK=128"])
        Yv, W = r["Y"], r["w"]
        close("moe_combine TOPK=%d" % KK, r["out"], [sum(W[t * KK + k] * Yv[sl[t * KK + k] * H + c] for k in range(KK))
                                                     for t in range(T) for c in range(H)], 4e-3, 1e-5)


def moe_fp8_gemm():
    """The FP8 block-scaled grouped GEMMs.  Contiguous (moe_grouped_gemm_fp8): E = 5 experts of
    0, 37, 0, 5 and 9 rows, and one expert with every row, padded to BM = 16 as the align step
    pads them, the blocks past the padded total -1 (skipped: C keeps its -7s there) and A's last
    block ragged (M not a multiple of BM).  Masked (moe_grouped_gemm_fp8_masked): E = 3 with
    masked_m = 0, 99 (clamped to max_m = 40: every row) and 17.  N = 136 (past one 128-row scale
    block, ragged against BN = 64), K = 300 (three scale blocks, the last partial).  The reference
    sums each 128-wide slice of K in float64 and scales it by As * Ws."""
    N, K, BM = 136, 300, 16
    KB, NB = (K + 127) // 128, (N + 127) // 128
    sentinel = 0xC0E0                                  # bf16 -7.0: rows a kernel must not write

    def dot_bs(A, As, W, Ws, arow, e, j):
        return sum(As[arow * KB + kb] * Ws[(e * NB + j // 128) * KB + kb] *
                   sum(A[arow * K + k] * W[(e * N + j) * K + k] for k in range(kb * 128, min(K, kb * 128 + 128)))
                   for kb in range(KB))

    E = 5
    for name, counts in (("ragged 0/37/0/5/9", [0, 37, 0, 5, 9]), ("one expert", [0, 0, 51, 0, 0])):
        n = sum(counts)
        blocks = []
        for e, c in enumerate(counts):
            blocks += [e] * ((c + BM - 1) // BM)
        max_blocks = (n + BM - 1) // BM + E
        be = blocks + [-1] * (max_blocks - len(blocks))
        M = max_blocks * BM - 5
        npy_write(tmpfile("be.npy"), "<i4", [max_blocks], be)
        npy_write(tmpfile("c0.npy"), "<u2", [M, N], [sentinel] * (M * N))
        args = ["A=f8e4m3[%d,%d]" % (M, K), "As=f32[%d,%d]" % (M, KB), "W=f8e4m3[%d,%d,%d]" % (E, N, K),
                "Ws=f32[%d,%d,%d]" % (E, NB, KB), "block_expert=" + tmpfile("be.npy"), "C=" + tmpfile("c0.npy")]
        r = run("moe.tile", "moe_grouped_gemm_fp8", args, ["A", "As", "W", "Ws", "C"], ["BM=%d" % BM, "BN=64"])
        ref = []
        for i in range(M):
            e = be[i // BM]
            ref += [dot_bs(r["A"], r["As"], r["W"], r["Ws"], i, e, j) if e >= 0 else -7.0 for j in range(N)]
        close("moe_grouped_gemm_fp8 %s" % name, r["C"], ref, 4e-3, 1e-3)
    rc, err = run_fail("moe.tile", "moe_grouped_gemm_fp8", args[:4] + ["block_expert=i32[3]", "C=bf16[%d,%d]" % (M, N)],
                       ["BM=%d" % BM, "BN=64"])
    equal("moe_grouped_gemm_fp8 refuses a short block_expert", rc == 1 and "block_expert must" in err, True)
    rc, err = run_fail("moe.tile", "moe_grouped_gemm_fp8", args[:3] + ["Ws=f32[%d,1,%d]" % (E, KB)] + args[4:],
                       ["BM=%d" % BM, "BN=64"])
    equal("moe_grouped_gemm_fp8 refuses Ws of another shape", rc == 1 and "Ws must be" in err, True)

    E, MM = 3, 40
    mm = [0, 99, 17]
    npy_write(tmpfile("mm.npy"), "<i4", [E], mm)
    npy_write(tmpfile("c0.npy"), "<u2", [E, MM, N], [sentinel] * (E * MM * N))
    args = ["A=f8e4m3[%d,%d,%d]" % (E, MM, K), "As=f32[%d,%d,%d]" % (E, MM, KB), "W=f8e4m3[%d,%d,%d]" % (E, N, K),
            "Ws=f32[%d,%d,%d]" % (E, NB, KB), "masked_m=" + tmpfile("mm.npy"), "C=" + tmpfile("c0.npy")]
    r = run("moe.tile", "moe_grouped_gemm_fp8_masked", args, ["A", "As", "W", "Ws", "C"], ["BM=%d" % BM, "BN=64"])
    ref = []
    for e in range(E):
        for i in range(MM):
            ref += [dot_bs(r["A"], r["As"], r["W"], r["Ws"], e * MM + i, e, j) if i < mm[e] else -7.0
                    for j in range(N)]
    close("moe_grouped_gemm_fp8_masked masked_m=%s" % mm, r["C"], ref, 4e-3, 1e-3)
    rc, err = run_fail("moe.tile", "moe_grouped_gemm_fp8_masked", args[:4] + ["masked_m=i32[2]", args[5]],
                       ["BM=%d" % BM, "BN=64"])
    equal("moe_grouped_gemm_fp8_masked refuses masked_m of another E", rc == 1 and "masked_m must" in err, True)


if __name__ == "__main__":
    if not os.access(TILEC, os.X_OK):
        sys.exit("check-stdlib.py: %s is not an executable tilec" % TILEC)
    print("check-stdlib.py: stdlib kernels in the interpreter against float64 references")
    def isolated(fn):
        """Runs check fn in its own scratch folder; returns the lines it printed."""
        _local.tmp = tempfile.mkdtemp(prefix=fn.__name__ + "-", dir=TMP)
        _local.lines = []
        check(fn)
        lines, _local.lines = _local.lines, None
        return lines

    checks = (gemm, gemm_small_m, fp8_gemm, fp8_gemm_small_m, warp_specialized, fp8_quant, attention, attention_fp8,
              decode, norms, softmax, moe, moe_route, moe_align, moe_layer, moe_fp8_gemm)
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        for lines in pool.map(isolated, checks):   # in the checks' order
            for line in lines:
                print(line)
    # every kernel of every stdlib file must have a check here
    srcs = sorted(f for f in os.listdir(STDLIB) if f.endswith(".tile"))
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        irs = list(pool.map(lambda src: subprocess.run([TILEC, os.path.join(STDLIB, src), "--emit=ir"],
                                                       capture_output=True, text=True), srcs))
    for src, r in zip(srcs, irs):
        names = sorted(set(re.findall(r'^kernel @\S+ "([^"]*)"', r.stdout, re.M)))
        if r.returncode != 0 or not names:
            print("  %-44s FAIL does not compile" % src)
            failures.append(src)
        for k in names:
            if (src, k) not in checked:
                print("  %-44s FAIL no check in scripts/check-stdlib.py" % (src + ": " + k))
                failures.append(src + ": " + k)
    shutil.rmtree(TMP, ignore_errors=True)
    print("check-stdlib.py: %s" % ("all passed" if not failures else "%d FAILED: %s" % (len(failures), ", ".join(failures))))
    sys.exit(1 if failures else 0)
