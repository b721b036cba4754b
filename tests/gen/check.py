#!/usr/bin/env python3
"""check.py: runs tilegen.py programs through tilec and reports every disagreement.

    check.py --tilec PATH [--seeds A:B] [--jobs N] [--device] [--keep DIR] [--no-arch]
             [--time-budget S] [--summary FILE]
    check.py --tilec PATH --file P.tile --args "ARGS"     (one given program: the reducer's oracle)

Per program: compile to PTX for sm_80, sm_89 and sm_90a; print the IR (-O0), parse it back and
print it again (the text must not change); run the interpreter at -O0, at -O3, from the printed
.tir, under two random valid pass orders and with the scheduler reordering every block it can
(TILEC_SCHED_BUDGET=0): every output buffer (bytes) and the printed text
must be identical; with --device, `tilec run --device --check` too.  A failure is one line,
"SEED KIND: detail", where KIND (crash, error, roundtrip, differ, device) and the detail are
what the reducer keeps fixed.  Exit status 1 when any program fails.
--keep DIR writes each failing program as DIR/SEED/prog.tile with run.sh (the tilec call that
fails; set TILEC) and finding.txt.  --time-budget S starts no new seed after S seconds (a long
batch split over several calls: the summary says which seeds ran).  --summary FILE writes the
counts: programs, how many passed the interpreter modes, how many passed on the device too, and
the failures by kind.  FP8-operand dot results agree with the GPU only within a tolerance
(lang/REFERENCE.md, dot); tilegen.py keeps them in f32 outputs that --device compares with
DEVICE_TOL, every other output is compared bit for bit (integers) or within DEVICE_TOL (floats).
"""
import argparse
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tilegen  # noqa: E402

CANON = ["fold", "cse", "dce"]
DEVICE_TOL = ["--rtol", "0.002", "--atol", "0.001"]


def pass_order(r):
    """a random valid order: canonical passes in any order and number, then (sometimes) the
    backend passes in their documented order"""
    p = [r.choice(CANON) for _ in range(r.randrange(1, 7))]
    if r.random() < 0.5:
        p += ["pipeline_latency", "pipeline_schedule", "pipeline_expand"]
    if r.random() < 0.5:
        p.append("dot_async")
    if r.random() < 0.5:
        p.append("remat")
    if r.random() < 0.3:
        p += ["layout", "schedule"]
    return ",".join(p)


def outputs(args):
    """the buffer arguments (every one is compared: inputs must stay unchanged too)"""
    return [a.split("=")[0] for a in args if "=" in a and "[" in a]


def run(cmd, cwd, timeout=120, env=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, **env) if env else None)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return -999, "", "timeout"


def first_line(s):
    for ln in s.splitlines():
        if "error" in ln or "LLVM ERROR" in ln or "internal" in ln:
            return ln.split(": ", 1)[-1][:160]
    return (s.strip().splitlines() or [""])[0][:160]


def check_one(tilec, src, args, work, seed=0, device=False, arch=True):
    """returns None or (kind, detail)"""
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "p.tile"), "w") as f:
        f.write(src)
    r = random.Random(seed * 7919 + 17)

    def status(step, rc, err):
        if rc == -999:
            return ("hang", step)
        if rc != 0 and rc != 1:
            return ("crash", "%s rc=%d %s" % (step, rc, first_line(err)))
        if rc == 1:
            return ("error", "%s %s" % (step, first_line(err)))
        return None

    if arch:
        for a in ("sm_80", "sm_89", "sm_90a"):
            rc, _, err = run([tilec, "p.tile", "--emit=ptx", "--arch=" + a, "-o", "p_%s.ptx" % a], work)
            s = status("ptx-" + a, rc, err)
            if s:
                return s
    rc, _, err = run([tilec, "p.tile", "--emit=ir", "-O0", "-o", "p.tir"], work)
    s = status("emit-ir", rc, err)
    if s:
        return s
    rc, _, err = run([tilec, "p.tir", "--emit=ir", "-o", "p2.tir"], work)
    s = status("parse-ir", rc, err)
    if s:
        return s
    with open(os.path.join(work, "p.tir")) as f1, open(os.path.join(work, "p2.tir")) as f2:
        a, b = f1.read(), f2.read()
        if a.split("\n", 1)[-1] != b.split("\n", 1)[-1]:
            return ("roundtrip", "the printed IR changes when parsed and printed again")
    bufs = outputs(args)
    modes = [("O0", ["p.tile", "-O0"]), ("O3", ["p.tile", "-O3"]), ("tir", ["p.tir"])]
    for k in range(2):
        modes.append(("pass%d" % k, ["p.tile", "--pass=" + pass_order(r)]))
    # the scheduler with a budget of 0: every block it can improve is reordered
    modes.append(("sched", ["p.tile", "--pass=fold,cse,dce,layout,schedule"]))
    ref = None
    for name, pre in modes:
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        outs = []
        for b in bufs:
            outs += ["--out", "%s=%s/%s.npy" % (b, name, b)]
        rc, out, err = run([tilec, "run"] + pre + ["--interp"] + args + outs, work,
                           env={"TILEC_SCHED_BUDGET": "0"} if name == "sched" else None)
        s = status("interp-" + name, rc, err)
        if s:
            if name.startswith("pass") or name == "sched":
                s = (s[0], s[1] + " [" + pre[1] + "]")
            return s
        res = {"stdout": out}
        for b in bufs:
            with open(os.path.join(d, b + ".npy"), "rb") as f:
                res[b] = hashlib.sha1(f.read()).hexdigest()
        if ref is None:
            ref = (name, res)
            continue
        for key in ["stdout"] + bufs:
            if res[key] != ref[1][key]:
                extra = " [" + pre[1] + "]" if name.startswith("pass") or name == "sched" else ""
                return ("differ", "%s vs %s: %s%s" % (ref[0], name, key, extra))
    if device:
        rc, out, err = run([tilec, "run", "p.tile", "--device", "--check"] + DEVICE_TOL + args, work, timeout=300)
        if rc != 0:
            return ("device", first_line(err + out))
    return None


def keep(root, seed, src, args, res, device):
    """root/SEED/: prog.tile, run.sh (the failing check again: `tilec run --device --check` for a
    device finding, check.py on the one program otherwise) and finding.txt"""
    d = os.path.join(root, str(seed))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "prog.tile"), "w") as f:
        f.write(src)
    kind, detail = res
    q = " ".join(args)
    if kind == "device":
        cmd = "${TILEC:-tilec} run prog.tile --device --check %s %s" % (" ".join(DEVICE_TOL), q)
    else:  # the interpreter modes, the round trip, the PTX compiles: check.py on this one program
        cmd = ('python3 "${CHECK_PY:-check.py}" --tilec "${TILEC:-tilec}" --file prog.tile --pass-seed %d --args "%s"'
               % (seed, q))
    with open(os.path.join(d, "run.sh"), "w") as f:
        f.write("#!/bin/bash\n# tests/gen seed %d: %s: %s\n# exits non-zero while it fails; set TILEC (and CHECK_PY: tests/gen/check.py)\n"
                'cd "$(dirname "$0")" && %s\n' % (seed, kind, detail, cmd))
    os.chmod(os.path.join(d, "run.sh"), 0o755)
    with open(os.path.join(d, "finding.txt"), "w") as f:
        f.write("%d %s: %s\nargs: %s\n" % (seed, kind, detail, q))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--seeds", default="1:101", help="A:B, seeds A..B-1")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--device", action="store_true")
    ap.add_argument("--no-arch", action="store_true", help="skip the three PTX compiles")
    ap.add_argument("--arch-every", type=int, default=1, help="compile to PTX only every Nth seed")
    ap.add_argument("--keep", help="write each failing program, its run.sh and the finding under DIR/SEED/")
    ap.add_argument("--time-budget", type=float, default=0, help="start no new seed after this many seconds")
    ap.add_argument("--summary", help="write the counts to this file")
    ap.add_argument("--file")
    ap.add_argument("--args")
    ap.add_argument("--pass-seed", type=int, default=1, help="with --file: the seed the random pass orders come from "
                    "(a batch uses the program's seed)")
    a = ap.parse_args()
    tilec = os.path.abspath(a.tilec)
    tmp = tempfile.mkdtemp(prefix="tilegen.")
    try:
        if a.file:
            with open(a.file) as f:
                src = f.read()
            res = check_one(tilec, src, a.args.split(), os.path.join(tmp, "one"), a.pass_seed, a.device, not a.no_arch)
            print("%s: %s" % res if res else "ok")
            return 1 if res else 0
        lo, hi = (int(x) for x in a.seeds.split(":"))
        t0 = time.time()
        stopped = []

        def one(seed):
            if a.time_budget and time.time() - t0 > a.time_budget:
                stopped.append(seed)
                return seed, None, False
            src, args = tilegen.generate(seed)
            res = check_one(tilec, src, args, os.path.join(tmp, str(seed)), seed, a.device,
                            not a.no_arch and seed % a.arch_every == 0)
            shutil.rmtree(os.path.join(tmp, str(seed)), ignore_errors=True)
            if res and a.keep:
                keep(a.keep, seed, src, args, res, a.device)
            return seed, res, True

        fails, ran, interp_ok, device_ok = 0, [], 0, 0
        kinds = {}
        with ThreadPoolExecutor(max_workers=a.jobs) as ex:
            for seed, res, done in ex.map(one, range(lo, hi)):
                if not done:
                    continue
                ran.append(seed)
                if res:
                    fails += 1
                    kinds[res[0]] = kinds.get(res[0], 0) + 1
                    print("%d %s: %s" % (seed, res[0], res[1]), flush=True)
                if not res or res[0] == "device":
                    interp_ok += 1
                if a.device and not res:
                    device_ok += 1
        print("%d programs, %d failed" % (len(ran), fails))
        if a.summary:
            ran.sort()
            # the seeds that ran form lo..last (ThreadPoolExecutor.map hands them out in order)
            with open(a.summary, "w") as f:
                f.write("seeds %d:%d of %d:%d (%s)\n" % (lo, (ran[-1] + 1) if ran else lo, lo, hi,
                        "stopped by --time-budget %g s: rerun from %d" % (a.time_budget, min(stopped))
                        if stopped else "all"))
                f.write("programs %d\n" % len(ran))
                f.write("interpreter-modes passed %d\n" % interp_ok)
                f.write("device passed %s\n" % (device_ok if a.device else "(no --device)"))
                f.write("failed %d%s\n" % (fails, "".join(" %s=%d" % kv for kv in sorted(kinds.items()))))
                f.write("wall %.0f s, jobs %d\n" % (time.time() - t0, a.jobs))
        return 1 if fails else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
