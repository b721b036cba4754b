#!/usr/bin/env python3
"""tilegen.py: random tile-language programs, valid by construction, with no undefined
behaviour under lang/SEMANTICS.md, and the `tilec run` arguments to run them.

    tilegen.py SEED [-o FILE.tile] [--annotate]   writes the program; prints the run arguments
                                  (--annotate: each let states its tracked type, which tilec checks)

Each program is one kernel over a 2-d grid of [R, C] tiles of an nr x nc problem (ragged:
nr, nc are not multiples of R, C), with loads under masks and `other`, block loads and stores
of tensor views with offsets that run past the edges, elementwise arithmetic over every dtype
(promotion, weak literals, casts among all dtypes including fp8 and bf16, bitcasts), math,
reductions, cumsum, sort, topk, dot at several shapes and operand dtypes, for/while loops with
carried values, if, fns, order-independent integer atomics and print.  What could be undefined
is avoided by construction: integer divisors are `(d | 1)`, every unmasked access is inside its
buffer, shifts may take any count (defined), float -> int casts saturate (defined).
Known open defects of other branches are steered around: no NaN literals and no
maximum/minimum of one value with itself.
FP8-operand dots: on sm_90a the GPU sums their products with about 14 bits (lang/REFERENCE.md,
dot), so they agree with the interpreter within a tolerance, not bit for bit.  Their operands are
made non-negative (abs before the cast to fp8: no cancellation, so the documented relative bound
holds), and their results are only stored, as f32, to outputs of their own (f8oN), which
`tilec run --device --check` compares with check.py's --rtol/--atol; they never feed a cast to an
integer, a bitcast, a comparison or the hash.  Every other value is compared bit for bit.
The same for every other result that lang/REFERENCE.md ("The GPU backend") lets the GPU give
within a tolerance rather than bit for bit: exp, log, tanh, sigmoid, erf and rsqrt, float sum
and cumsum (summed in another order) and f16/bf16 dots (tensor cores, the hardware's order).
Each is stored where it is made, as f32, to an output of its own (apN), compared with the
tolerance, and never enters the expressions the rest of the program is built from (the
expression it would have been is its exact operand); math of f16/bf16 and casts stay exact.
One program in four carries a math clause (lang/REFERENCE.md), `math(exact)` or `math(fast)`;
under `math(fast)` f32 division joins those results (div.full, 2 ulp: the apN output gets the
quotient, the expression goes on with the product), and the approximated math of f16/bf16
operands is taken in f32 (rounded to bf16 it could land an ulp, 2^-8, away: past the tolerance).
"""
import argparse
import random
import sys

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2"]
FP8 = ["f8e4m3", "f8e5m2"]
BITS = {"i1": 1, "i8": 8, "u8": 8, "f8e4m3": 8, "f8e5m2": 8, "i16": 16, "u16": 16, "f16": 16, "bf16": 16,
        "i32": 32, "u32": 32, "f32": 32, "i64": 64, "u64": 64, "f64": 64}
DOT_DT = ["f16", "bf16", "f32", "f8e4m3", "f8e5m2"]


def is_float(t):
    return t in FLOATS


def promote(a, b):
    """SEMANTICS.md "Types and promotion" for two strong element types."""
    if a == b:
        return a
    if a in FP8 or b in FP8:
        return "f32"
    fa, fb = is_float(a), is_float(b)
    if fa != fb:
        return a if fa else b
    if not fa:
        if a == "i1":
            return b
        if b == "i1":
            return a
        if BITS[a] != BITS[b]:
            return a if BITS[a] > BITS[b] else b
        return a if a.startswith("u") else b
    if BITS[a] != BITS[b]:
        return a if BITS[a] > BITS[b] else b
    return "f32"


def arith(t):
    """the type arithmetic on t computes in (fp8 is a storage type)"""
    return "f32" if t in FP8 else t


def sum_type(t):
    """SEMANTICS.md "Reductions": the type `sum` and `cumsum` of t give.  Integers narrower than
    i32 (u8 and u16 included) give i32; i32, u32, i64 and u64 keep their type (a u64 sum is u64,
    not i64); floats narrower than f32 give f32, f64 stays f64."""
    if is_float(t):
        return "f64" if t == "f64" else "f32"
    return t if BITS[t] >= 32 else "i32"


class Var:
    def __init__(self, name, dt, shape):
        self.name, self.dt, self.shape = name, dt, shape  # shape: "RC", "R1" or "S"


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.seed = seed
        self.lines = []
        self.vars = []
        self.n = 0
        self.params = []   # (name, type text, run argument maker)
        self.fns = set()
        self.depth = 0
        self.fp8_outs = []  # results of FP8-operand dots: stored as f32 only (dot_stmt)
        self.atomic_f = None  # the one atomic of the program (atomic_stmt)
        self.approx_outs = 0  # apN outputs: results the GPU gives within a tolerance (approx)
        self.annotate = False  # --annotate: every let states the type the generator tracks for it
        # the kernel's math clause, from a stream of its own (the program's stream is unchanged
        # where the clause is absent or exact): math(fast) makes f32 division and exp, log,
        # rsqrt, sigmoid, tanh the GPU's approximations, so their results go to apN outputs
        self.math = random.Random(seed * 7919 + 17).choice([None] * 6 + ["exact", "fast"])

    def approx(self, text):
        """stores a result the GPU gives only within a tolerance to an output of its own, here
        (its operands are in scope here), as f32; the caller goes on with an exact value"""
        self.emit("store(ap%d + idx, (%s) as f32, m);" % (self.approx_outs, text))
        self.approx_outs += 1

    def fast_div(self, parts, t, shape):
        """a float quotient or remainder (x, op, y) of type t: under math(fast) an f32 quotient
        is the GPU's div.full (2 ulp), so it goes to an apN output and the expression goes on
        with x * y (exact on both sides)"""
        x, op, y = parts
        if self.math == "fast" and op == "/" and t == "f32":
            self.approx("(%s / %s)" % (x, y))
            return ("(%s * %s)" % (x, y), t, shape)
        return ("(%s %s %s)" % (x, op, y), t, shape)

    def fresh(self, p="v"):
        self.n += 1
        return "%s%d" % (p, self.n)

    def emit(self, s):
        self.lines.append("    " * (1 + self.depth) + s)

    def pick(self, pred=lambda v: True):
        c = [v for v in self.vars if pred(v)]
        return self.r.choice(c) if c else None

    # ---- expressions: return (text, dtype, shape) -------------------------------------
    def literal(self, dt):
        r = self.r
        if dt == "i1":
            return r.choice(["0", "1"])
        if is_float(dt):
            return r.choice(["0.5", "2.0", "-1.25", "3.0", "0.0", "-0.0", "1e-3", "100.0", "-7.5"])
        if dt.startswith("u"):
            return str(r.choice([0, 1, 3, 7, 100]))
        return str(r.choice([0, 1, -1, 3, -7, 100]))

    def leaf(self, shape="RC"):
        v = self.pick(lambda v: v.shape == shape or (shape == "RC" and v.shape in ("R1", "S")))
        if v is None:
            v = self.pick()
        return (v.name, v.dt, v.shape)

    def expr(self, d=0):
        r = self.r
        if d >= 3 or r.random() < 0.25:
            return self.leaf()
        k = r.randrange(14)
        a = self.expr(d + 1)
        if k <= 3:  # binary arithmetic with promotion
            b = self.expr(d + 1) if r.random() < 0.8 else (self.literal(a[1]), None, "S")
            bt = b[1] or a[1]
            t = arith(promote(a[1], bt)) if b[1] else arith(a[1])
            op = r.choice(["+", "-", "*"] + (["/", "%"] if not is_float(t) else ["/", "%"]))
            if op in "/%" and not is_float(t):
                if b[1] == "i1" or t == "i1":
                    op = "+"
                else:
                    return ("(%s %s (%s | 1))" % (a[0], op, b[0]), t, self.sh(a, b))
            if op in "/%" and is_float(t) and b[1] is None:
                return self.fast_div((a[0], op, r.choice(["2.0", "-0.75", "3.0"])), t, a[2])
            if op in "/%" and is_float(t):
                # keep divisors away from 0: |b| + 0.5, of type t; the quotient then has the type of a
                # with t, which differs from t where an fp8 b made t f32 beside an f64 a
                return self.fast_div((a[0], op, "(abs(%s as %s) + 0.5)" % (b[0], t)), arith(promote(a[1], t)),
                                     self.sh(a, b))
            if t == "i1":
                return ("((%s as i32) %s %s)" % (a[0], op, b[0]), "i32", self.sh(a, b))
            return ("(%s %s %s)" % (a[0], op, b[0]), t, self.sh(a, b))
        if k == 4:  # bitwise and shifts on integers
            b = self.expr(d + 1)
            if is_float(a[1]) or is_float(b[1]):
                return self.cast(a)
            op = r.choice(["&", "|", "^", "<<", ">>"])
            t = promote(a[1], b[1])
            if t == "i1":
                return ("(%s %s %s)" % (a[0], r.choice(["&", "|", "^"]), b[0]), "i1", self.sh(a, b))
            return ("(%s %s %s)" % (a[0], op, b[0]), t, self.sh(a, b))
        if k == 5:
            return self.cast(a)
        if k == 6:  # bitcast to another type of the same width
            w = BITS[a[1]]
            if w == 1:
                return self.cast(a)
            c = [t for t in INTS + FLOATS if BITS[t] == w and t != a[1]]
            return self.bitcast(a, r.choice(c))
        if k == 7:  # math
            f = r.choice(["exp", "sqrt", "tanh", "sigmoid", "abs", "floor", "ceil", "log", "erf", "rsqrt"])
            if f in ("exp",):
                x = "minimum(%s, 10.0)" % a[0]
                if not is_float(a[1]):
                    x = "minimum((%s as f32), 10.0)" % a[0]
            elif f in ("sqrt", "log", "rsqrt"):
                x = "(abs(%s) + 1.0)" % a[0]
                if not is_float(a[1]):
                    x = "(abs(%s as f32) + 1.0)" % a[0]
            else:
                x = a[0]
            if self.math == "fast" and a[1] not in ("f32", "f64") and f not in ("abs", "floor", "ceil", "sqrt"):
                # an f16/bf16 approximation rounds to the narrow type, one of its ulps (2^-8 for
                # bf16) from the exact result: past the apN tolerance; in f32 it stays within it
                x = "(%s as f32)" % x
            t = arith(a[1]) if is_float(a[1]) else ("f32" if f not in ("abs", "floor", "ceil") else a[1])
            if t == "i1":
                return self.cast(a)
            if f not in ("abs", "floor", "ceil", "sqrt"):  # within ulps on the GPU: an output of its own
                self.approx("%s(%s)" % (f, x))
                return a
            return ("%s(%s)" % (f, x), t, a[2])
        if k == 8:  # where
            c = self.cond(d + 1)
            b = self.expr(d + 1)
            t = promote(a[1], b[1])
            return ("where(%s, %s, %s)" % (c[0], a[0], b[0]), t, self.sh(self.sh3(a, b, c)))
        if k == 9:  # maximum / minimum of two different operands
            b = self.expr(d + 1)
            if b[0] == a[0]:
                b = (self.literal(a[1]), a[1], "S")
            t = arith(promote(a[1], b[1]))
            if t == "i1":
                return self.cast(a)
            return ("%s(%s, %s)" % (r.choice(["maximum", "minimum"]), a[0], b[0]), t, self.sh(a, b))
        if k == 10:  # fma
            b, c = self.expr(d + 1), self.expr(d + 1)
            t = arith(promote(promote(a[1], b[1]), c[1]))
            if t == "i1":
                return self.cast(a)
            return ("fma(%s, %s, %s)" % (a[0], b[0], c[0]), t, self.sh(self.sh3(a, b, c)))
        if k == 11:  # reductions along an axis, broadcast back
            if a[2] != "RC":
                return a
            f = r.choice(["sum", "max", "min", "argmax", "argmin"])
            t = a[1]
            if f == "sum":
                t = sum_type(t)
            if f in ("argmax", "argmin"):
                t = "i32"
            if a[1] == "i1":
                return self.cast(a)
            if f == "sum" and is_float(t):  # summed in another order on the GPU
                self.approx("sum(%s, 1)[:, None]" % a[0])
                return a
            return ("%s(%s, 1)[:, None]" % (f, a[0]), t, "R1")
        if k == 12:  # unary
            if a[1] == "i1":
                return ("(!%s)" % a[0], "i1", a[2])
            if is_float(a[1]):
                return ("(-%s)" % a[0], arith(a[1]), a[2])
            return ("(%s%s)" % (r.choice(["-", "~"]), a[0]), a[1], a[2])
        return self.cond(d + 1)

    def sh(self, a, b=None):
        if b is None:
            return a
        s = {a[2], b[2]}
        if "RC" in s:
            return "RC"
        return "R1" if "R1" in s else "S"

    def sh3(self, a, b, c):
        s = {a[2], b[2], c[2]}
        return "RC" if "RC" in s else ("R1" if "R1" in s else "S")

    def cast(self, a):
        t = self.r.choice(INTS + FLOATS + ["i1"])
        return ("(%s as %s)" % (a[0], t), t, a[2])

    def bitcast(self, a, t):
        # a float NaN that arithmetic made has the GPU's canonical bits (lang/REFERENCE.md, "The
        # GPU backend"), the interpreter's keep a payload: such a NaN is replaced before its bits
        # are read (the hash does the same)
        if is_float(a[1]):
            return ("bitcast<%s>(where(%s != %s, 0.5, %s))" % (t, a[0], a[0], a[0]), t, a[2])
        return ("bitcast<%s>(%s)" % (t, a[0]), t, a[2])

    def cond(self, d):
        a = self.expr(d + 1)
        r = self.r
        if r.random() < 0.3:
            return ("m", "i1", "RC")
        b = self.expr(d + 1) if r.random() < 0.7 else (self.literal(a[1]), a[1], "S")
        op = r.choice(["<", "<=", ">", ">=", "==", "!="])
        return ("(%s %s %s)" % (a[0], op, b[0]), "i1", self.sh(a, b))

    # ---- statements ---------------------------------------------------------------------
    def let(self, e, p="v"):
        name = self.fresh(p)
        text, dt, shape = e
        if self.annotate:  # the compiler checks the annotation: a mistracked type is an error
            ty = dt if shape == "S" else "tile<%s>[%s]" % (dt, "R, C" if shape == "RC" else "R, 1")
            self.emit("let %s: %s = %s;" % (name, ty, text))
        else:
            self.emit("let %s = %s;" % (name, text))
        self.vars.append(Var(name, dt, shape))
        return name

    def stmt(self):
        r = self.r
        k = r.randrange(16)
        if k <= 5:
            self.let(self.expr())
        elif k == 6:
            self.loop_for()
        elif k == 7:
            self.loop_while()
        elif k == 8:
            self.branch()
        elif k == 9:
            self.dot_stmt()
        elif k == 10:
            self.sort_stmt()
        elif k == 11:
            self.scan_stmt()
        elif k == 12:
            self.fn_call()
        elif k == 13:
            self.atomic_stmt()
        elif k == 14:
            a = self.leaf()
            if a[1] != "i1":
                self.emit('print("p%d", %s(%s));' % (self.n, r.choice(["max", "min"]), a[0]))
        else:
            self.let(self.expr())

    def carried(self):
        """a var of a fixed type that the loop body reassigns (cast back to its type)"""
        a = self.leaf()
        name = self.fresh("w")
        t = a[1]
        init = a[0] if a[2] == "RC" else "broadcast(%s, [R, C])" % (a[0] if a[2] != "R1" else a[0])
        if a[2] == "S":
            init = "(zeros<%s>([R, C]) + %s)" % (t if t != "i1" else "i32", a[0])
            # fp8 + fp8 computes in f32 (SEMANTICS.md), so the sum is f32, not the fp8 type
            t = arith(promote(t if t != "i1" else "i32", t))
        if t == "i1":
            t = "i32"
        # the initial value is cast to t too: the var's type is then t by construction, the type that
        # every reassignment below casts back to (a mismatch is a "type of var changes" error)
        self.emit("var %s = (%s as %s);" % (name, init, t))
        return name, t

    def nz(self, e):
        return e[0] if e[1] != "i1" else "(%s as i32)" % e[0]

    def loop_for(self):
        r = self.r
        w, t = self.carried()
        i = self.fresh("i")
        lo, hi = r.choice([(0, 3), (0, 1), (2, 5), (0, 0), (3, -1)])
        step = 1 if hi >= lo else -1
        self.emit("for %s in range(%d, %d, %d) {" % (i, lo, hi, step))
        self.depth += 1
        e = self.expr(1)
        self.emit("%s = ((%s + %s * %s) as %s);" % (w, w, self.nz(e), i, t))
        self.depth -= 1
        self.emit("}")
        self.vars.append(Var(w, t, "RC"))

    def loop_while(self):
        w, t = self.carried()
        c = self.fresh("t")
        self.emit("var %s = 0;" % c)
        self.emit("while %s < %d {" % (c, self.r.choice([0, 1, 3])))
        self.depth += 1
        self.emit("%s = ((%s + %s) as %s);" % (w, w, self.nz(self.expr(1)), t))
        self.emit("%s += 1;" % c)
        self.depth -= 1
        self.emit("}")
        self.vars.append(Var(w, t, "RC"))

    def branch(self):
        w, t = self.carried()
        cond = self.r.choice(["nr > %d" % self.r.randrange(1, 64), "program_id(0) == 0", "nc % 2 == 1",
                              "s0 > 0"])
        self.emit("if %s {" % cond)
        self.depth += 1
        self.emit("%s = ((%s - %s) as %s);" % (w, w, self.nz(self.expr(1)), t))
        self.depth -= 1
        self.emit("} else {")
        self.depth += 1
        self.emit("%s = ((%s * %s) as %s);" % (w, w, self.nz(self.expr(1)), t))
        self.depth -= 1
        self.emit("}")
        self.vars.append(Var(w, t, "RC"))

    def dot_stmt(self):
        r = self.r
        dt = r.choice(DOT_DT)
        acc = self.fresh("acc")
        fp8 = dt in FP8
        # FP8 operands: the GPU's sums are not the interpreter's bit for bit (lang/REFERENCE.md, dot:
        # sm_90a's wgmma keeps about 14 bits), so the products are made non-negative (no cancellation:
        # the documented relative bound holds) and the result goes straight to a float output that
        # --check compares with its tolerance, never into the expression pool (casts to integers,
        # bitcasts, comparisons and the hash would turn a tolerated difference into different bits).
        opa, opb = ("(abs(load(DA, [r0, %s], [R, K]) as f32) as %s)", "(abs(load(DB, [%s, c0], [K, C]%s) as f32) as %s)") \
            if fp8 else ("(load(DA, [r0, %s], [R, K]) as %s)", "(load(DB, [%s, c0], [K, C]%s) as %s)")
        if r.random() < 0.5:
            self.emit("var %s = zeros<f32>([R, C]);" % acc)
            k = self.fresh("k")
            self.emit("for %s in range(0, DA.shape[1], K)%s {" % (k, r.choice(["", " pipeline(2)"])))
            self.depth += 1
            self.emit("%s = dot(%s, %s, %s);" % (acc, opa % (k, dt), opb % (k, ", other: 0", dt), acc))
            self.depth -= 1
            self.emit("}")
        else:
            self.emit("let %s = dot(%s, %s);" % (acc, opa % ("0", dt), opb % ("0", "", dt)))
        if fp8:
            self.fp8_outs.append(acc)
        elif dt in ("f16", "bf16"):  # tensor cores: f32 sums in the hardware's order
            self.approx(acc)
        else:
            self.vars.append(Var(acc, "f32", "RC"))

    def sort_stmt(self):
        r = self.r
        a = self.leaf()
        if a[2] != "RC" or a[1] == "i1":
            return
        if r.random() < 0.5:
            self.let(("sort(%s, 1, descending: %s)" % (a[0], r.choice(["true", "false"])), a[1], "RC"), "s")
        else:
            tv, ti = self.fresh("tv"), self.fresh("ti")
            self.emit("let (%s, %s) = topk(%s, %d, 1);" % (tv, ti, a[0], r.choice([1, 2, 4])))
            self.vars.append(Var("%s(%s, 1)[:, None]" % (r.choice(["max", "min"]), tv), a[1], "R1"))
            self.vars.append(Var("sum(%s, 1)[:, None]" % ti, "i32", "R1"))

    def scan_stmt(self):
        a = self.leaf()
        if a[2] != "RC" or a[1] == "i1" or a[1] in FP8 or is_float(a[1]) and self.r.random() < 0.5:
            return
        if is_float(a[1]):  # each prefix summed in another order on the GPU
            self.approx("cumsum(%s, 1)" % a[0])
            return
        self.let(("cumsum(%s, 1)" % a[0], sum_type(a[1]), "RC"), "cs")

    def fn_call(self):
        r = self.r
        a, b = self.leaf(), self.leaf()
        if a[1] == "i1" or b[1] == "i1":
            return
        which = r.choice(["h_bin", "h_loop", "h_pair"])
        self.fns.add(which)
        t = arith(promote(a[1], b[1]))
        if which == "h_bin":
            if a[0] == b[0]:
                return
            self.let(("h_bin(%s, %s)" % (a[0], b[0]), t, self.sh(a, b)), "f")
        elif which == "h_loop" and a[1] not in FP8:
            self.let(("h_loop(%s)" % a[0], arith(a[1]), a[2]), "f")
        elif which == "h_pair":
            if a[0] == b[0]:
                return
            x, y = self.fresh("p"), self.fresh("q")
            self.emit("let (%s, %s) = h_pair(%s, %s);" % (x, y, a[0], b[0]))
            s = self.sh(a, b)
            self.vars.append(Var(x, t, s))
            self.vars.append(Var(y, t, s))

    def atomic_stmt(self):
        a = self.leaf()
        if is_float(a[1]) or a[1] == "i1":
            return
        # one kind of atomic per program: adds commute with adds, maxima with maxima, but an add
        # and a max on one address give what their order gives
        if self.atomic_f is None:
            self.atomic_f = self.r.choice(["atomic_add", "atomic_max", "atomic_min"])
        f = self.atomic_f
        self.emit("%s(hist + (idx %% 4 + 4) %% 4, %s, m);" % (f, a[0]))

    FNS = {
        "h_bin": "fn h_bin(a, b) { let t = a * b; return t + maximum(a, b); }",
        "h_loop": "fn h_loop(x) { var acc = x; for j in range(0, 3) { acc = acc + x; } return acc; }",
        "h_pair": "fn h_pair(a, b) { return (a + b, maximum(a, b) - minimum(a, b)); }",
    }

    def program(self):
        r = self.r
        R = r.choice([16, 32, 64])
        C = r.choice([16, 32])
        K = r.choice([16, 32])
        warps = r.choice([1, 2, 4])
        nr = r.randrange(1, 3 * R)
        nc = r.randrange(1, 2 * C + 1)
        kd = r.choice([K, 2 * K, K + r.randrange(1, K)])
        args = ["nr=%d" % nr, "nc=%d" % nc]
        params = ["nr: i32", "nc: i32"]
        sdt = r.choice(["i32", "i64", "u8", "f32", "f16"])
        params.append("s0: %s" % sdt)
        args.append("s0=%s" % (r.choice(["3", "1", "0", "100"]) if not is_float(sdt) else r.choice(["0.5", "-2.0"])))
        nin = r.randrange(2, 5)
        ins = []
        for j in range(nin):
            dt = r.choice(INTS + FLOATS)
            params.append("x%d: ptr<%s>" % (j, dt))
            args.append("x%d=%s[%d]" % (j, dt, nr * nc))
            ins.append(("x%d" % j, dt))
        tdt = r.choice(INTS + FLOATS)
        params.append("X: tensor<%s, 2>" % tdt)
        args.append("X=%s[%d,%d]" % (tdt, nr, nc))
        ddt = r.choice(["i8", "f16", "bf16", "f32"])
        params += ["DA: tensor<%s, 2>" % ddt, "DB: tensor<%s, 2>" % ddt]
        args += ["DA=%s[%d,%d]" % (ddt, nr, kd), "DB=%s[%d,%d]" % (ddt, kd, nc)]
        params.append("hist: ptr<i32>")
        args.append("hist=i32[4]")
        self.lines = []
        self.emit("let r0 = program_id(0) * R;")
        self.emit("let c0 = program_id(1) * C;")
        self.emit("let rows = r0 + arange(R);")
        self.emit("let cols = c0 + arange(C);")
        self.emit("let mr = rows < nr;")
        self.emit("let mc = cols < nc;")
        self.emit("let m = mr[:, None] && mc[None, :];")
        self.emit("let idx = rows[:, None] * nc + cols[None, :];")
        self.vars.append(Var("idx", "i32", "RC"))
        self.vars.append(Var("s0", sdt, "S"))
        for name, dt in ins:
            if r.random() < 0.5:
                self.let(("load(%s + idx, m)" % name, dt, "RC"))
            else:
                other = self.literal(dt)
                self.let(("load(%s + idx, m && (idx %% %d != 0), other: %s)" % (name, r.randrange(2, 7), other),
                          dt, "RC"))
        ro, co = r.choice(["r0", "r0 + 1", "r0 - 1"]), r.choice(["c0", "c0 - C / 2", "c0 + 3"])
        self.let(("load(X, [%s, %s], [R, C], other: %s)" % (ro, co, self.literal(tdt)), tdt, "RC"))
        for _ in range(r.randrange(4, 14)):
            self.stmt()
        outs = []
        nout = r.randrange(1, 4)
        cand = [v for v in self.vars if v.shape == "RC" and v.name not in ("idx",)]
        cand = cand[-6:] if cand else [self.vars[0]]
        for j in range(nout):
            v = r.choice(cand)
            odt = v.dt if r.random() < 0.6 else r.choice(INTS + FLOATS)
            params.append("o%d: ptr<%s>" % (j, odt))
            args.append("o%d=%s[%d]" % (j, odt, nr * nc))
            self.emit("store(o%d + idx, %s, m);" % (j, v.name))
            outs.append("o%d" % j)
        for j, v in enumerate(self.fp8_outs):
            params.append("f8o%d: ptr<f32>" % j)
            args.append("f8o%d=f32[%d]" % (j, nr * nc))
            self.emit("store(f8o%d + idx, %s, m);" % (j, v))
            outs.append("f8o%d" % j)
        for j in range(self.approx_outs):
            params.append("ap%d: ptr<f32>" % j)
            args.append("ap%d=f32[%d]" % (j, nr * nc))
            outs.append("ap%d" % j)
        # every [R, C] value reaches memory through a hash of its bits (NaN as 7: payloads are free)
        hs = []
        for v in [v for v in self.vars if v.shape == "RC"][-8:]:
            if is_float(v.dt):  # through f64, which holds every narrower float exactly
                hs.append("where(%s != %s, 7, bitcast<i64>(%s as f64))" % (v.name, v.name, v.name))
            else:
                hs.append("(%s as i64)" % v.name)
        h = hs[0]
        for x in hs[1:]:
            h = "((%s * 31) ^ %s)" % (h, x)
        params.append("hsink: ptr<i64>")
        args.append("hsink=i64[%d]" % (nr * nc))
        self.emit("store(hsink + idx, %s, m);" % h)
        outs.append("hsink")
        v = r.choice(cand)
        odt = r.choice(INTS + FLOATS)
        params.append("O: tensor<%s, 2>" % odt)
        args.append("O=%s[%d,%d]" % (odt, nr, nc))
        self.emit("store(O, [r0, c0], %s);" % v.name)
        head = []
        for f in sorted(self.fns):
            head.append(self.FNS[f])
        head.append("kernel k%d<R: int = %d, C: int = %d, K: int = %d>(%s)" % (self.seed, R, C, K, ", ".join(params)))
        head.append("    grid((nr + R - 1) / R, (nc + C - 1) / C) warps(%d)%s"
                    % (warps, " math(%s)" % self.math if self.math else ""))
        src = "\n".join(head) + "\n{\n" + "\n".join(self.lines) + "\n}\n"
        poison = ",".join(outs + ["O"])
        run = ["--kernel", "k%d" % self.seed] + args + ["--seed", str(self.seed % 1000 + 1), "--poison", poison]
        return src, run


def generate(seed, annotate=False):
    g = Gen(seed)
    g.annotate = annotate
    return g.program()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("-o", dest="out")
    ap.add_argument("--annotate", action="store_true",
                    help="annotate every let with its tracked type (the same program otherwise): "
                         "checks the generator's type tracking against the compiler's")
    a = ap.parse_args()
    src, run = generate(a.seed, a.annotate)
    if a.out:
        with open(a.out, "w") as f:
            f.write(src)
    else:
        sys.stdout.write(src)
    print(" ".join(run), file=sys.stderr if not a.out else sys.stdout)


if __name__ == "__main__":
    main()
