# gen_fold_interp.py: writes tests/passes/fold-interp.tir (python3 gen_fold_interp.py > fold-interp.tir; fixed seed).
# Constant cases of every elementwise op and dtype, run through the interpreter
# with and without --pass=fold; the outputs must be byte-identical.
import math, random
INT = ['i1','i8','i16','i32','i64','u8','u16','u32','u64']
FLT = ['f8e4m3','f8e5m2','f16','bf16','f32','f64']
ARITH = ['f16','bf16','f32','f64']
bits = {'i1':1,'i8':8,'i16':16,'i32':32,'i64':64,'u8':8,'u16':16,'u32':32,'u64':64,'f8e4m3':8,'f8e5m2':8,'f16':16,'bf16':16,'f32':32,'f64':64}
rnd = random.Random(11)
def rng(t):
    b = bits[t]
    if t == 'i1': return 0, 1
    if t[0] == 'i': return -(1 << (b-1)), (1 << (b-1)) - 1
    return 0, (1 << b) - 1
def fl(x):
    if math.isnan(x): return 'nan'
    if math.isinf(x): return 'inf' if x > 0 else '-inf'
    if x == 0: return '-0' if math.copysign(1, x) < 0 else '0'
    return repr(x)
class G:
    def __init__(s):
        s.n = 0; s.lines = []; s.count = {t: 0 for t in INT + FLT}; s.cache = {}; s.ptr = {}
        s.one = s.v(); s.lines.append('  %s = const 1 : i32' % s.one)
    def v(s):
        s.n += 1; return '%%%d' % (s.n - 1)
    def c(s, t, x):
        if t in INT and t == 'u64' and x >= 2**63: x -= 2**64
        txt = fl(x) if t in FLT else str(x)
        if (t, txt) in s.cache: return s.cache[(t, txt)]
        r = s.v(); s.lines.append('  %s = const %s : %s' % (r, txt, t)); s.cache[(t, txt)] = r; return r
    def store(s, t, val):
        if s.count[t] == 0: q = '%o_' + t
        else:
            q = s.v(); s.lines.append('  %s = addptr %s, %s : ptr<%s>' % (q, s.ptr[t], s.one, t))
        s.ptr[t] = q; s.count[t] += 1
        s.lines.append('  store %s, %s' % (q, val))
    def op(s, text, rt):
        r = s.v(); s.lines.append('  %s = %s : %s' % (r, text, rt)); return r
g = G()
def pick(t):
    lo, hi = rng(t)
    return rnd.randint(lo, hi)
# integers
for t in INT:
    lo, hi = rng(t); w = bits[t]; sg = t[0] == 'i' and t != 'i1'
    edge = {
        'add': (hi, 1), 'sub': (lo, 1), 'mul': (hi, hi if t != 'i1' else 1),
        'div': (lo, -1) if sg else (hi, 3 if hi >= 3 else 1), 'rem': (-7 if sg else 7 % (hi + 1), 2 if hi >= 2 else 1),
        'and': (hi, lo), 'or': (lo, 1), 'xor': (hi, lo), 'max': (lo, hi), 'min': (lo, hi),
        'shl': (1, w - 1), 'shr': (lo if sg else hi, w - 1),
    }
    for opn, (a, b) in edge.items():
        for (x, y) in [(a, b), (pick(t), pick(t))] if opn in ('add', 'mul', 'div', 'rem', 'max') else [(a, b)]:
            if opn in ('div', 'rem') and y == 0: y = 1
            if opn in ('shl', 'shr') and (x, y) != (a, b):
                y = rnd.choice([w, w + 1, -1, 63, 0]) if hi >= 63 else rnd.choice([0, hi])
                y = max(lo, min(hi, y))
            g.store(t, g.op('%s %s, %s' % (opn, g.c(t, x), g.c(t, y)), t))
    # shift counts past the width, and negative ones
    big = [c for c in [w, w + 1, 63, 64, -1, -100] if lo <= c <= hi]
    for opn in ['shl', 'shr']:
        for c in big:
            g.store(t, g.op('%s %s, %s' % (opn, g.c(t, lo if sg else hi), g.c(t, c)), t))
    for (x, y) in [(lo, hi), (hi, hi)]:
        cx, cy = g.c(t, x), g.c(t, y)
        for p in ['eq', 'ne', 'lt', 'le', 'gt', 'ge']:
            g.store('i1', g.op('cmp %s %s, %s' % (p, cx, cy), 'i1'))
    for opn in ['neg', 'not', 'abs']:
        g.store(t, g.op('%s %s' % (opn, g.c(t, lo)), t))
    x = hi if t[0] == 'u' or t == 'i1' else lo
    for to in INT + FLT:
        g.store(to, g.op('cast %s' % g.c(t, x), to))
    if t != 'i1':
        for to in [u for u in INT + FLT if bits[u] == w and u != t]:
            y = pick(t)
            g.store(to, g.op('bitcast %s' % g.c(t, y), to))
# floats
nan, inf = float('nan'), float('inf')
fpairs = [(0.1, 0.2), (65504.0, 65504.0), (-0.0, 0.0), (nan, 1.0), (inf, -inf), (1e-8, 3.0), (-2.5, 0.75)]
for t in ARITH:
    for opn in ['add', 'sub', 'mul', 'div', 'rem', 'max', 'min']:
        for (x, y) in rnd.sample(fpairs, 3) + [fpairs[2]]:
            g.store(t, g.op('%s %s, %s' % (opn, g.c(t, x), g.c(t, y)), t))
    for (x, y) in [(nan, 1.0), (-0.0, 0.0), (0.1, 0.2)]:
        cx, cy = g.c(t, x), g.c(t, y)
        for p in ['eq', 'ne', 'lt', 'le', 'gt', 'ge']:
            g.store('i1', g.op('cmp %s %s, %s' % (p, cx, cy), 'i1'))
    for (x, y, z) in [(0.1, 0.3, -0.03), (inf, 0.0, 1.0), (1.0 + 2**-10, 1.0 - 2**-10, -1.0)]:
        g.store(t, g.op('fma %s, %s, %s' % (g.c(t, x), g.c(t, y), g.c(t, z)), t))
    for opn in ['neg', 'exp', 'exp2', 'log', 'log2', 'sqrt', 'rsqrt', 'abs', 'sigmoid', 'tanh', 'erf', 'floor', 'ceil']:
        for x in [-2.75, 0.3, 100.0]:
            g.store(t, g.op('%s %s' % (opn, g.c(t, x)), t))
for t in FLT:
    for x in [-300.7, nan, 449.0, 4e9]:
        for to in INT + FLT:
            g.store(to, g.op('cast %s' % g.c(t, x), to))
    for to in [u for u in INT + FLT if bits[u] == bits[t] and u != t]:
        g.store(to, g.op('bitcast %s' % g.c(t, -2.75), to))
# f32 fma just above a tie
a = g.c('f32', 1 + 2**-12); c = g.c('f32', 2.0**-80)
g.store('f32', g.op('fma %s, %s, %s' % (a, a, c), 'f32'))
# tiles: splats of constants, select on a splatted constant
for t, (x, y) in [('i32', (3, -5)), ('f16', (0.1, 0.2)), ('u8', (200, 3))]:
    sa = g.op('splat %s' % g.c(t, x), 'tile<%s>[4]' % t); sb = g.op('splat %s' % g.c(t, y), 'tile<%s>[4]' % t)
    r = g.op('mul %s, %s' % (sa, sb), 'tile<%s>[4]' % t)
    for cond in (1, 0):
        sc = g.op('splat %s' % g.c('i1', cond), 'tile<i1>[4]')
        r2 = g.op('select %s, %s, %s' % (sc, r, sa), 'tile<%s>[4]' % t)
        base = '%o_' + t if g.count[t] == 0 else g.op('addptr %s, %s' % (g.ptr[t], g.one), 'ptr<%s>' % t)
        k4 = g.c('i32', 4)
        nxt = g.op('addptr %s, %s' % (base, k4), 'ptr<%s>' % t)
        sp = g.op('splat %s' % base, 'tile<ptr<%s>>[4]' % t)
        q = g.op('addptr %s, %s' % (sp, g.op('arange', 'tile<i32>[4]')), 'tile<ptr<%s>>[4]' % t)
        g.lines.append('  store %s, %s' % (q, r2))
        # the next scalar store goes after these 4 elements
        g.count[t] += 4
        prev = g.op('addptr %s, %s' % (nxt, g.c('i32', -1)), 'ptr<%s>' % t)
        g.ptr[t] = prev
params = ', '.join('%%o_%s: ptr<%s>' % (t, t) for t in INT + FLT)
args = ' '.join('o_%s=%s[%d]' % (t, t, max(1, g.count[t])) for t in INT + FLT)
outs = lambda tag: ' '.join('--out o_%s=%%t.%s.%s.npy' % (t, tag, t) for t in INT + FLT)
def wrap(line):
    words = line.split(' ')
    out, cur = [], '// RUN:'
    for w in words:
        if len(cur) + 1 + len(w) > 108:
            out.append(cur + ' \\'); cur = '// RUN:'
        cur += ' ' + w
    out.append(cur)
    return out
text = []
text += wrap('%%tilec run %%s --interp %s --grid 1 -O0 %s' % (args, outs('0')))
text += wrap('%%tilec run %%s --interp %s --grid 1 --pass=fold %s' % (args, outs('1')))
text += wrap('for t in %s; do cmp %%t.0.$t.npy %%t.1.$t.npy || exit 1; done' % ' '.join(INT + FLT))
text += ['// RUN: %tilec %s --pass=fold --emit=ir | FileCheck %s', '']
text += '''// Folding agrees with the reference interpreter bit for bit.  Each case
// computes one op on constants and stores the result; the buffers after a run
// without passes and after a run with --pass=fold must be byte-identical, and
// fold must leave no such op behind (except bitcasts that make a NaN, whose
// payload a constant does not keep).  Cases: every integer type under every
// binary, compare and unary op at its edges (wrapping, min / -1, shifts by the
// width and beyond, unsigned order), casts from each integer type to every
// type, f16/bf16/f32/f64 arithmetic, compares, fma and math with NaN,
// infinities and signed zeros, casts from each float type to every type
// (saturation, NaN, fp8), bitcasts, an f32 fma just above a rounding tie, and
// ops on splats with a select on a splatted condition.  Division by zero is
// left out: fold keeps it for the interpreter to report.
'''.rstrip('\n').split('\n')
text += ['', '// CHECK-LABEL: kernel @fold_interp',
         '// CHECK-NOT: = {{(add|sub|mul|div|rem|and|or|xor|shl|shr|max|min|cmp|neg|not|abs|floor|ceil|cast|fma|select|exp|exp2|log|log2|sqrt|rsqrt|sigmoid|tanh|erf) }}',
         '// CHECK: return']
text.append('kernel @fold_interp "fold_interp"(%s) {' % params)
text += g.lines
text += ['  return', '}']
import sys
sys.stdout.write('\n'.join(text) + '\n')
