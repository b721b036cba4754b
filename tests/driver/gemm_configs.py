#!/usr/bin/env python3
"""gemm_configs.py TILEC KERNEL OUTDIR: compiles KERNEL (a stdlib GEMM kernel) to one sm_90a cubin
holding every specialization python/tilec/stdlib.py's configuration table can pick for it (the
tiles of GEMM_TILES / GEMM_SWAP_TILES for its kind and form), one --spec each, so that a
configuration gemm_plan may choose is known to compile.  Exit status: tilec's."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tilec.stdlib import GEMM_BK, GEMM_SWAP_TILES, GEMM_TILES  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def specs(kernel):
    """(source, [--spec text, ...]) of a kernel of the table."""
    if kernel in ("splitk_reduce", "fp8_splitk_reduce"):
        return ("gemm.tile" if kernel == "splitk_reduce" else "fp8_gemm.tile"), ["BM=16,BN=256"]
    if kernel.startswith("fp8_gemm_blockscale"):
        kind, src = "blockscale", "fp8_gemm.tile"
    elif kernel.startswith("fp8_gemm"):
        kind, src = "fp8", "fp8_gemm.tile"
    else:
        kind, src = "bf16", "gemm.tile"
    tiles = GEMM_SWAP_TILES if "_swapab" in kernel else GEMM_TILES[kind]
    out = []
    for bm, bn in tiles:
        s = "BM=%d,BN=%d" % (bm, bn)
        if kind != "blockscale":
            s += ",BK=%d" % GEMM_BK[kind]
        out.append(s)
    return src, out


def main():
    tilec, kernel, outdir = sys.argv[1:4]
    src, sp = specs(kernel)
    cmd = [tilec, os.path.join(ROOT, "stdlib", src), "--kernel", kernel, "--emit=cubin", "--arch=sm_90a",
           "--diagnostics-color=never", "-o", os.path.join(outdir, "table-%s.cubin" % kernel)]
    for s in sp:
        cmd += ["--spec", s]
    print(" ".join(cmd))
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
