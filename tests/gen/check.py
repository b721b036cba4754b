#!/usr/bin/env python3
"""check.py: runs tilegen.py programs through tilec and reports every disagreement.

    check.py --tilec PATH [--seeds A:B] [--jobs N] [--device] [--keep DIR] [--no-arch]
    check.py --tilec PATH --file P.tile --args "ARGS"     (one given program: the reducer's oracle)

Per program: compile to PTX for sm_80, sm_89 and sm_90a; print the IR (-O0), parse it back and
print it again (the text must not change); run the interpreter at -O0, at -O3, from the printed
.tir, under two random valid pass orders and with the scheduler reordering every block it can
(TILEC_SCHED_BUDGET=0): every output buffer (bytes) and the printed text
must be identical; with --device, `tilec run --device --check` too.  A failure is one line,
"SEED KIND: detail", where KIND (crash, error, roundtrip, differ, device) and the detail are
what the reducer keeps fixed.  Exit status 1 when any program fails.
"""
import argparse
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tilegen  # noqa: E402

CANON = ["fold", "cse", "dce"]


def pass_order(r):
    """a random valid order: canonical passes in any order and number, then (sometimes) the
    backend passes in their documented order"""
    p = [r.choice(CANON) for _ in range(r.randrange(1, 7))]
    if r.random() < 0.5:
        p += ["pipeline_latency", "pipeline_schedule", "pipeline_expand"]
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
        rc, out, err = run([tilec, "run", "p.tile", "--device", "--check", "--rtol", "0.002", "--atol", "0.001"] + args,
                           work, timeout=300)
        if rc != 0:
            return ("device", first_line(err + out))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--seeds", default="1:101", help="A:B, seeds A..B-1")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--device", action="store_true")
    ap.add_argument("--no-arch", action="store_true", help="skip the three PTX compiles")
    ap.add_argument("--arch-every", type=int, default=1, help="compile to PTX only every Nth seed")
    ap.add_argument("--keep", help="copy each failing program (and its arguments) here")
    ap.add_argument("--file")
    ap.add_argument("--args")
    a = ap.parse_args()
    tilec = os.path.abspath(a.tilec)
    tmp = tempfile.mkdtemp(prefix="tilegen.")
    try:
        if a.file:
            with open(a.file) as f:
                src = f.read()
            res = check_one(tilec, src, a.args.split(), os.path.join(tmp, "one"), 1, a.device, not a.no_arch)
            print("%s: %s" % res if res else "ok")
            return 1 if res else 0
        lo, hi = (int(x) for x in a.seeds.split(":"))

        def one(seed):
            src, args = tilegen.generate(seed)
            res = check_one(tilec, src, args, os.path.join(tmp, str(seed)), seed, a.device,
                            not a.no_arch and seed % a.arch_every == 0)
            shutil.rmtree(os.path.join(tmp, str(seed)), ignore_errors=True)
            if res and a.keep:
                os.makedirs(a.keep, exist_ok=True)
                with open(os.path.join(a.keep, "%d.tile" % seed), "w") as f:
                    f.write(src)
                with open(os.path.join(a.keep, "%d.args" % seed), "w") as f:
                    f.write(" ".join(args) + "\n")
            return seed, res

        fails = 0
        with ThreadPoolExecutor(max_workers=a.jobs) as ex:
            for seed, res in ex.map(one, range(lo, hi)):
                if res:
                    fails += 1
                    print("%d %s: %s" % (seed, res[0], res[1]), flush=True)
        print("%d programs, %d failed" % (hi - lo, fails))
        return 1 if fails else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
