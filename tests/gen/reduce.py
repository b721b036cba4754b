#!/usr/bin/env python3
"""reduce.py: shrinks a failing tilegen program while check.py still fails the same way.

    reduce.py --tilec PATH P.tile "ARGS" [-o OUT.tile]

The failure (check.py's "KIND: detail") of the original is the target; a candidate is kept only
when it fails with the same KIND and detail.  Passes, repeated until none helps: delete one
statement (a line, or a whole `for`/`while`/`if` block); replace a parenthesized expression by
one of its operands or by a constant; halve the tile defaults (R, C, K).
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402


def oracle(tilec, args, work):
    n = [0]

    def fails(src):
        n[0] += 1
        return check.check_one(tilec, src, args, os.path.join(work, "r%d" % n[0]), 1)
    return fails


def blocks(lines):
    """(start, end) line ranges of single statements and of whole blocks, inner-first by size"""
    out = []
    for i, ln in enumerate(lines):
        s = ln.strip()
        if not s or s.startswith(("kernel", "grid", "fn ")) or s in ("{", "}") or i == 0:
            continue
        if s.endswith("{"):
            depth, j = 0, i
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                if depth == 0:
                    break
                j += 1
            out.append((i, j + 1))
        elif not s.startswith("}"):
            out.append((i, i + 1))
    return out


def groups(line):
    """spans of balanced parenthesized groups in a line"""
    st, res = [], []
    for i, ch in enumerate(line):
        if ch == "(":
            st.append(i)
        elif ch == ")" and st:
            res.append((st.pop(), i + 1))
    return res


def operands(text):
    inner = text[1:-1]
    depth, parts, cur = 0, [], ""
    for ch in inner:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if depth == 0 and ch in "+-*/%&|^<>=,":
            if cur.strip():
                parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return [p for p in parts if p and p[0] not in "=<>"] + ["0", "1"]


def reduce(src, fails, target, log):
    changed = True
    while changed:
        changed = False
        lines = src.split("\n")
        for a, b in sorted(blocks(lines), key=lambda ab: ab[0] - ab[1]):
            cand = "\n".join(lines[:a] + lines[b:])
            if fails(cand) == target:
                src, changed = cand, True
                log("deleted lines %d-%d" % (a + 1, b))
                break
        if changed:
            continue
        lines = src.split("\n")
        for i, ln in enumerate(lines):
            for s, e in sorted(groups(ln), key=lambda se: se[0] - se[1]):
                if re.fullmatch(r"[\w.]+", ln[s + 1:e - 1].strip()):
                    continue  # a single token already: replacing it cannot shrink (and would cycle)
                for rep in operands(ln[s:e]):
                    nl = ln[:s] + "(" + rep + ")" + ln[e:]
                    if nl == ln:
                        continue
                    cand = "\n".join(lines[:i] + [nl] + lines[i + 1:])
                    if fails(cand) == target:
                        src, changed = cand, True
                        log("line %d: %s -> (%s)" % (i + 1, ln[s:e][:40], rep))
                        break
                if changed:
                    break
            if changed:
                break
        if changed:
            continue
        for p in ("R", "C", "K"):
            m = re.search(r"\b%s: int = (\d+)" % p, src)
            if m and int(m.group(1)) > 1:
                cand = src[:m.start(1)] + str(int(m.group(1)) // 2) + src[m.end(1):]
                if fails(cand) == target:
                    src, changed = cand, True
                    log("%s = %d" % (p, int(m.group(1)) // 2))
                    break
    return src


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tilec", required=True)
    ap.add_argument("file")
    ap.add_argument("args")
    ap.add_argument("-o", dest="out")
    a = ap.parse_args()
    import tempfile
    work = tempfile.mkdtemp(prefix="tilereduce.")
    with open(a.file) as f:
        src = f.read()
    fails = oracle(os.path.abspath(a.tilec), a.args.split(), work)
    target = fails(src)
    if not target:
        print("the program does not fail", file=sys.stderr)
        return 2
    print("target: %s: %s" % target, file=sys.stderr)
    out = reduce(src, fails, target, lambda s: print(s, file=sys.stderr))
    if a.out:
        with open(a.out, "w") as f:
            f.write(out)
    else:
        sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
