#!/usr/bin/env python3
"""compile-times.py [TILEC] [-j N] [FILE.tile ...]: where tilec's time goes, per stdlib kernel.

Compiles each kernel of each file (default: every stdlib/*.tile) alone to an sm_90a cubin
(tilec FILE --kernel K --emit=cubin -v -j1) and then each whole file (-j N, default the number of
CPUs), and prints, from -v's report and the child's rusage, the CPU seconds of LLVM's pipeline
(llvm-opt), of its PTX backend (llvm-ptx), of ptxas (nvJitLink) and in all (user + system), and
the wall-clock seconds.  CPU time is what to compare on a shared machine: wall-clock time there
depends on the other users."""
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    """(CPU seconds of the child, wall seconds, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit("compile-times.py: failed: %s\n%s" % (" ".join(cmd), r.stderr))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, r.stderr


def stages(err):
    m = re.search(r"CPU: lower ([\d.]+) ms, llvm-opt ([\d.]+) ms, llvm-ptx ([\d.]+) ms, ptxas ([\d.]+) ms", err)
    return [float(x) / 1e3 for x in m.groups()] if m else [float("nan")] * 4


def main():
    args = sys.argv[1:]
    tilec = os.path.join(ROOT, "build", "tools", "tilec")
    jobs = str(os.cpu_count() or 1)
    files = []
    while args:
        a = args.pop(0)
        if a == "-j":
            jobs = args.pop(0)
        elif a.endswith(".tile"):
            files.append(a)
        else:
            tilec = a
    files = files or sorted(os.path.join(ROOT, "stdlib", f) for f in os.listdir(os.path.join(ROOT, "stdlib"))
                            if f.endswith(".tile"))
    out = tempfile.mkdtemp(prefix="tilec-times-")
    print("%-44s %8s %8s %8s %8s %8s" % ("kernel (alone, -j1)", "llvm-opt", "llvm-ptx", "ptxas", "CPU", "wall"))
    total = [0.0, 0.0]
    for f in files:
        r = subprocess.run([tilec, f, "--list-kernels"], capture_output=True, text=True)
        for k in r.stdout.split():
            cpu, wall, err = run([tilec, f, "--kernel", k, "--emit=cubin", "-v", "-j1", "-o", os.path.join(out, "k.cubin")])
            _, opt, ptx, ptxas = stages(err)
            total[0] += cpu
            total[1] += wall
            print("%-44s %8.2f %8.2f %8.2f %8.2f %8.2f" % (os.path.basename(f) + ": " + k, opt, ptx, ptxas, cpu, wall))
    print("%-44s %8s %8s %8s %8.2f %8.2f" % ("sum of the kernels alone", "", "", "", total[0], total[1]))
    print()
    print("%-44s %8s %8s %8s %8s %8s" % ("file (-j%s)" % jobs, "llvm-opt", "llvm-ptx", "ptxas", "CPU", "wall"))
    total = [0.0, 0.0]
    for f in files:
        cpu, wall, err = run([tilec, f, "--emit=cubin", "-v", "-j" + jobs, "-o", os.path.join(out, "f.cubin")])
        _, opt, ptx, ptxas = stages(err)
        total[0] += cpu
        total[1] += wall
        print("%-44s %8.2f %8.2f %8.2f %8.2f %8.2f" % (os.path.basename(f), opt, ptx, ptxas, cpu, wall))
    print("%-44s %8s %8s %8s %8.2f %8.2f" % ("the whole stdlib", "", "", "", total[0], total[1]))


if __name__ == "__main__":
    main()
