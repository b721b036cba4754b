#!/usr/bin/env python3
"""check-stdlib.py [TILEC]: runs every stdlib/ kernel in the reference interpreter
(`tilec run --interp`) on random data with ragged sizes (not multiples of the blocks)
and compares the results with a float64 reference computed here, in plain Python
(no NumPy needed).  Prints one line per check and exits 1 if any check fails, or if
a kernel of stdlib/ has no check here (a new stdlib kernel needs one).

TILEC defaults to build/tools/tilec.  Sizes are small: the interpreter and this
reference both run on the CPU.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TILEC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "tools", "tilec")
STDLIB = os.environ.get("TILEC_STDLIB", os.path.join(ROOT, "stdlib"))  # another folder: to test this script
TMP = tempfile.mkdtemp(prefix="tilec-stdlib-")
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
        cmd += ["--out", "%s=%s" % (o, os.path.join(TMP, o + ".npy"))]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    res = {}
    for o in outs:
        descr, vals = npy_read(os.path.join(TMP, o + ".npy"))
        conv = {"<u2": from_bf16, "|u1": from_e4m3}.get(descr)  # bf16 and fp8 come as bits
        res[o] = [conv(v) for v in vals] if conv else vals
    return res


def tmpfile(name):
    return os.path.join(TMP, name)


def close(name, got, ref, rtol, atol):
    """got ~ ref elementwise: |got - ref| <= atol + rtol |ref| (bf16 outputs: rtol 4e-3 is two ulps)."""
    bad = [i for i, (g, r) in enumerate(zip(got, ref)) if not abs(g - r) <= atol + rtol * abs(r)]
    ok = len(got) == len(ref) and not bad
    detail = "" if ok else " first bad at %d: got %r, want %r" % (bad[0], got[bad[0]], ref[bad[0]]) if bad else " size"
    print("  %-44s %-4s (%d values)%s" % (name, "ok" if ok else "FAIL", len(ref), detail))
    if not ok:
        failures.append(name)


def equal(name, got, ref):
    ok = got == ref
    count = " (%d values)" % len(ref) if isinstance(ref, list) else ""
    print("  %-44s %-4s%s" % (name, "ok" if ok else "FAIL", count))
    if not ok:
        failures.append(name)


def check(fn):
    try:
        fn()
    except Exception as e:  # a failed run is a failed check; the others still run
        print("  %-44s FAIL %s" % (fn.__name__, e))
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
    npy_write(tmpfile("sorted.npy"), "<i4", [n], sidx)
    r = run("moe.tile", "moe_gather_rows", ["X=f32[%d,%d]" % (T, Kd), "sorted_idx=" + tmpfile("sorted.npy"),
            "n=%d" % n, "Xs=f32[%d,%d]" % (n, Kd)], ["X", "Xs"], ["T=f32", "TOPK=4", "BR=16", "BK=32"])
    equal("moe_gather_rows", r["Xs"], [r["X"][(sidx[s] // K) * Kd + c] for s in range(n) for c in range(Kd)])

    r = run("moe.tile", "moe_grouped_gemm", ["A=bf16[%d,%d]" % (n, Kd), "W=bf16[%d,%d,%d]" % (E, Nd, Kd),
            "offsets=" + tmpfile("offsets.npy"), "C=bf16[%d,%d]" % (n, Nd), "max_rows=%d" % max(counts)],
            ["A", "W", "C"], ["BM=16", "BN=16", "BK=16"])
    A, W = r["A"], r["W"]
    owner = [max(e for e in range(E) if want[e] <= row < want[e + 1]) for row in range(n)]
    close("moe_grouped_gemm", r["C"], [sum(A[row * Kd + k] * W[(owner[row] * Nd + j) * Kd + k] for k in range(Kd))
                                       for row in range(n) for j in range(Nd)], 4e-3, 1e-3)


if __name__ == "__main__":
    if not os.access(TILEC, os.X_OK):
        sys.exit("check-stdlib.py: %s is not an executable tilec" % TILEC)
    print("check-stdlib.py: stdlib kernels in the interpreter against float64 references")
    for c in (gemm, fp8_gemm, fp8_quant, attention, norms, softmax, moe):
        check(c)
    # every kernel of every stdlib file must have a check here
    for src in sorted(f for f in os.listdir(STDLIB) if f.endswith(".tile")):
        r = subprocess.run([TILEC, os.path.join(STDLIB, src), "--emit=ir"], capture_output=True, text=True)
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
