/* fold.c: constant folding and exact algebraic simplification.
 *
 * Algorithm:
 *   1. Walk the body, the grid and the requires blocks in order; the regions of an op are
 *      walked before the op itself, so its operands are already folded.
 *   2. A value is constant when it is a scalar CONST or a SPLAT of one (never
 *      a pointer).  An elementwise op whose operands are all constant is
 *      evaluated with the interpreter's rules (lang/SEMANTICS.md): integers
 *      wrap (int_wrap), floats are computed in double and rounded to their
 *      type after each op (fp_round), casts saturate as the language says.
 *      The result replaces the op: a CONST, followed by a SPLAT for a tile.
 *      (max/min order -0 below +0 and give NaN for a NaN; fma rounds once.)
 *      What would be an error at run time (integer division or remainder by
 *      zero) is left alone, and so is a bitcast from or to a NaN, whose
 *      payload a constant does not keep.
 *   3. Otherwise exact identities are applied: x+0, x-0, x*1, x/1 (x+(-0.0) and
 *      x-(+0.0) for floats), x*0 and x-x and x^x for integers, and/or/xor with
 *      zero or all-ones, shifts by 0, x&x, x|x, max(x,x), min(x,x), select on a
 *      constant condition or of two equal values, integer x cmp x, addptr(p, 0),
 *      neg(neg x), not(not x), a cast or bitcast to the same type, a
 *      broadcast/reshape/trans to the same shape, and broadcast/reshape/
 *      expand_dims/trans of a splat, which becomes a splat of its scalar.
 *   4. An IF whose condition is constant is replaced by the taken region: its
 *      ops move in front of the IF and the IF's results become the operands
 *      of that region's YIELD.
 *   5. A FOR whose bounds and step are constant and which runs zero times
 *      (and whose step is not 0, a run-time error) is replaced by its init
 *      values.
 *   6. Every rewrite erases the op it replaced; walks repeat until one
 *      changes nothing.  Constants left unused are DCE's to remove.
 */
#include <math.h>
#include <string.h>

#include "../ir/fpconv.h"
#include "pass.h"

/* A constant element: i for integer dtypes (wrapped to dt), f for floats. */
typedef struct Cst {
    DType dt;
    int64_t i;
    double f;
} Cst;

typedef struct Folder {
    IrFunc *f;
    IrBuilder b;    /* inserts in front of the op being folded; b.pos tracks it */
    bool erased;    /* the current op was replaced and erased */
    bool changed;
} Folder;

/* ---- constants ------------------------------------------------------------- */

static bool cst(IrFunc *f, IrVal v, Cst *c)
{
    IrType t = ir_vty(f, v);
    if (t.kind != TY_TILE || t.isptr) return false;
    uint32_t d = ir_def(f, v);
    if (d == UINT32_MAX) return false;
    const IrOp *op = ir_op(f, d);
    if (op->opc == IR_SPLAT) {
        IrVal s = ir_opnd(f, op, 0);
        IrType st = ir_vty(f, s);
        if (!ir_ty_is_scalar(st) || st.isptr || st.dt != t.dt) return false;
        d = ir_def(f, s);
        if (d == UINT32_MAX) return false;
        op = ir_op(f, d);
    }
    if (op->opc != IR_CONST) return false;
    c->dt = (DType)t.dt;
    c->i = 0;
    c->f = 0;
    if (dt_is_float(c->dt)) c->f = fp_round(c->dt, op->attr.f);
    else c->i = int_wrap(c->dt, op->attr.i);
    return true;
}

static bool is_int(const Cst *c, int64_t v) { return !dt_is_float(c->dt) && c->i == int_wrap(c->dt, v); }
static bool is_ones(const Cst *c) { return is_int(c, -1); }
/* The float zero of one sign (neg: -0.0), or integer zero. */
static bool is_zero(const Cst *c, bool neg)
{
    if (!dt_is_float(c->dt)) return c->i == 0;
    return c->f == 0 && (signbit(c->f) != 0) == neg;
}
static bool is_one(const Cst *c) { return dt_is_float(c->dt) ? c->f == 1.0 : c->i == 1; }

/* Builds a constant of type t (a CONST, then a SPLAT for a tile) in front of the current op. */
static IrVal mk(Folder *fd, IrType t, const Cst *c)
{
    IrAttr a;
    memset(&a, 0, sizeof a);
    if (dt_is_float((DType)t.dt)) a.f = c->f;
    else a.i = c->i;
    IrVal s = ir_build1(&fd->b, IR_CONST, NULL, 0, ir_ty_scalar((DType)t.dt), &a);
    if (t.rank == 0) return s;
    return ir_build1(&fd->b, IR_SPLAT, &s, 1, t, NULL);
}

static IrVal mk_int(Folder *fd, IrType t, int64_t v)
{
    Cst c = {(DType)t.dt, int_wrap((DType)t.dt, v), 0};
    return mk(fd, t, &c);
}

/* Replaces the single result of op id by v and erases the op. */
static void replace(Folder *fd, uint32_t id, IrVal v)
{
    IrFunc *f = fd->f;
    IrVal r = ir_op(f, id)->res;
    TL_ASSERT(ir_ty_eq(ir_vty(f, r), ir_vty(f, v)), "pass:fold");
    ir_replace_all_uses(f, r, v);
    ir_op_erase(f, id);
    fd->erased = true;
    fd->changed = true;
}

/* ---- evaluation ------------------------------------------------------------- */

static bool ilt(bool sgn, int64_t a, int64_t b) { return sgn ? a < b : (uint64_t)a < (uint64_t)b; }

static int64_t asr(int64_t a, int c) { return a >= 0 ? a >> c : ~(~a >> c); }

static bool cmp_int(IrCmp p, bool sgn, int64_t a, int64_t b)
{
    switch (p) {
    case CMP_EQ: return a == b;
    case CMP_NE: return a != b;
    case CMP_LT: return ilt(sgn, a, b);
    case CMP_LE: return !ilt(sgn, b, a);
    case CMP_GT: return ilt(sgn, b, a);
    case CMP_GE: return !ilt(sgn, a, b);
    default: return false;
    }
}

static bool cmp_flt(IrCmp p, double a, double b)
{
    switch (p) {
    case CMP_EQ: return a == b;
    case CMP_NE: return a != b;
    case CMP_LT: return a < b;
    case CMP_LE: return a <= b;
    case CMP_GT: return a > b;
    case CMP_GE: return a >= b;
    default: return false;
    }
}

/* Integer binary op on values of dtype dt; false when it must not be folded. */
static bool ibin(IrOpcode opc, DType dt, int64_t a, int64_t b, int64_t *r)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    bool sgn = dt_is_signed(dt);
    int w = dt_bits[dt];
    bool inrange = sgn ? (b >= 0 && b < w) : ub < (uint64_t)w;
    switch (opc) {
    case IR_ADD: *r = (int64_t)(ua + ub); break;
    case IR_SUB: *r = (int64_t)(ua - ub); break;
    case IR_MUL: *r = (int64_t)(ua * ub); break;
    case IR_DIV:
        if (b == 0) return false;
        if (sgn) *r = b == -1 ? (int64_t)(0 - ua) : a / b;
        else *r = (int64_t)(ua / ub);
        break;
    case IR_REM:
        if (b == 0) return false;
        if (sgn) *r = b == -1 ? 0 : a % b;
        else *r = (int64_t)(ua % ub);
        break;
    case IR_AND: *r = a & b; break;
    case IR_OR: *r = a | b; break;
    case IR_XOR: *r = a ^ b; break;
    case IR_SHL: *r = inrange ? (int64_t)(ua << b) : 0; break;
    case IR_SHR:
        if (!inrange) *r = sgn && a < 0 ? -1 : 0;
        else *r = sgn ? asr(a, (int)b) : (int64_t)(ua >> b);
        break;
    case IR_MAX: *r = ilt(sgn, a, b) ? b : a; break;
    case IR_MIN: *r = ilt(sgn, a, b) ? a : b; break;
    default: return false;
    }
    *r = int_wrap(dt, *r);
    return true;
}

/* Float binary op, rounded to dt. */
static bool fbin(IrOpcode opc, DType dt, double a, double b, double *r)
{
    switch (opc) {
    case IR_ADD: *r = a + b; break;
    case IR_SUB: *r = a - b; break;
    case IR_MUL: *r = a * b; break;
    case IR_DIV: *r = a / b; break;
    case IR_REM: *r = fmod(a, b); break;
    case IR_MAX:
    case IR_MIN:
        if (isnan(a) || isnan(b)) {
            *r = NAN;
            break;
        }
        if (a == 0 && b == 0 && signbit(a) != signbit(b)) *r = (opc == IR_MAX) == !signbit(a) ? a : b;
        else *r = (opc == IR_MAX) == (a >= b) ? a : b;
        break;
    default: return false;
    }
    *r = fp_round(dt, *r);
    return true;
}

/* a*b + c rounded once to dt.  Below f64 the operands have at most 24
 * significant bits, so a*b is exact in double; the sum is then rounded to odd
 * in double (TwoSum gives its exact error: when inexact, force the last bit to
 * 1 toward the error), and rounding that to <= 24 bits is correctly rounded. */
static double fma_to(DType dt, double a, double b, double c)
{
    if (dt == DT_F64) return fma(a, b, c);
    double p = a * b, s = p + c;
    if (isfinite(s)) {
        double cv = s - p, pv = s - cv;
        double err = (p - pv) + (c - cv);
        uint64_t bits;
        memcpy(&bits, &s, sizeof bits);
        if (err != 0 && !(bits & 1)) s = nextafter(s, err > 0 ? INFINITY : -INFINITY);
    }
    return fp_round(dt, s);
}

static bool iun(IrOpcode opc, DType dt, int64_t a, int64_t *r)
{
    switch (opc) {
    case IR_NEG: *r = (int64_t)(0 - (uint64_t)a); break;
    case IR_NOT: *r = dt == DT_I1 ? !a : ~a; break;
    case IR_ABS: *r = dt_is_signed(dt) && a < 0 ? (int64_t)(0 - (uint64_t)a) : a; break;
    case IR_FLOOR:
    case IR_CEIL: *r = a; break;
    default: return false;
    }
    *r = int_wrap(dt, *r);
    return true;
}

static bool fun(IrOpcode opc, DType dt, double a, double *r)
{
    switch (opc) {
    case IR_NEG: *r = -a; break;
    case IR_ABS: *r = fabs(a); break;
    case IR_FLOOR: *r = floor(a); break;
    case IR_CEIL: *r = ceil(a); break;
    case IR_SQRT: *r = sqrt(a); break;
    case IR_RSQRT: *r = 1.0 / sqrt(a); break;
    case IR_EXP: *r = exp(a); break;
    case IR_EXP2: *r = exp2(a); break;
    case IR_LOG: *r = log(a); break;
    case IR_LOG2: *r = log2(a); break;
    case IR_SIGMOID: *r = 1.0 / (1.0 + exp(-a)); break;
    case IR_TANH: *r = tanh(a); break;
    case IR_ERF: *r = erf(a); break;
    default: return false;
    }
    *r = fp_round(dt, *r);
    return true;
}

/* x as `to`, with the language's cast rules (fpconv.h implements them for floats). */
static bool cast(const Cst *x, DType to, Cst *r)
{
    DType from = x->dt;
    r->dt = to;
    if (!dt_is_float(from) && !dt_is_float(to)) r->i = to == DT_I1 ? x->i != 0 : int_wrap(to, x->i);
    else if (!dt_is_float(from)) r->f = fp_from_int(to, x->i, dt_is_unsigned(from));
    else if (dt_is_float(to)) r->f = fp_round(to, x->f);
    else r->i = fp_to_int(to, x->f);
    return true;
}

/* Reinterprets the bits of x as `to` (same width).  NaNs are not folded:
 * a constant does not keep a NaN's payload. */
static bool bitcast(const Cst *x, DType to, Cst *r)
{
    DType from = x->dt;
    int w = dt_bits[from];
    unsigned char buf[8] = {0};
    if (w != dt_bits[to] || w < 8) return false;
    if (dt_is_float(from)) {
        if (isnan(x->f)) return false;
        fp_store(from, buf, x->f);
    } else {
        for (int k = 0; k < w / 8; k++) buf[k] = (unsigned char)((uint64_t)x->i >> (8 * k));
    }
    r->dt = to;
    if (dt_is_float(to)) {
        r->f = fp_load(to, buf);
        return !isnan(r->f);
    }
    uint64_t bits = 0;
    for (int k = 0; k < w / 8; k++) bits |= (uint64_t)buf[k] << (8 * k);
    r->i = int_wrap(to, (int64_t)bits);
    return true;
}

/* Evaluates elementwise op `op` on constant operands x[] into r (of dtype rdt). */
static bool eval(const IrOp *op, const Cst *x, DType rdt, Cst *r)
{
    IrOpcode opc = (IrOpcode)op->opc;
    DType dt = x[0].dt;
    bool flt = dt_is_float(dt);
    r->dt = rdt;
    r->i = 0;
    r->f = 0;
    switch (opc) {
    case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM:
    case IR_MAX: case IR_MIN:
        return flt ? fbin(opc, dt, x[0].f, x[1].f, &r->f) : ibin(opc, dt, x[0].i, x[1].i, &r->i);
    case IR_AND: case IR_OR: case IR_XOR: case IR_SHL: case IR_SHR:
        return !flt && ibin(opc, dt, x[0].i, x[1].i, &r->i);
    case IR_CMP:
        if (op->attr.i < 0 || op->attr.i >= CMP_COUNT) return false;
        r->i = flt ? cmp_flt((IrCmp)op->attr.i, x[0].f, x[1].f)
                   : cmp_int((IrCmp)op->attr.i, dt_is_signed(dt), x[0].i, x[1].i);
        return true;
    case IR_NEG: case IR_NOT: case IR_ABS: case IR_FLOOR: case IR_CEIL:
    case IR_SQRT: case IR_RSQRT: case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2:
    case IR_SIGMOID: case IR_TANH: case IR_ERF:
        /* math on an integer operand with a float result: on the operand converted */
        if (dt_is_float(rdt))
            return fun(opc, rdt, flt ? x[0].f : fp_from_int(rdt, x[0].i, dt_is_unsigned(dt)), &r->f);
        return !flt && iun(opc, dt, x[0].i, &r->i);
    case IR_FMA:
        if (flt) {
            r->f = fma_to(dt, x[0].f, x[1].f, x[2].f);
            return true;
        }
        r->i = int_wrap(dt, (int64_t)((uint64_t)x[0].i * (uint64_t)x[1].i + (uint64_t)x[2].i));
        return true;
    case IR_CAST: return cast(&x[0], rdt, r);
    case IR_BITCAST: return bitcast(&x[0], rdt, r);
    default: return false;
    }
}

/* ---- rewrites ---------------------------------------------------------------- */

/* Step 2: all operands constant. */
static bool fold_const(Folder *fd, uint32_t id)
{
    IrFunc *f = fd->f;
    IrOp op = *ir_op(f, id);
    Cst x[3], r;
    if (op.nopnd > 3 || op.nres != 1 || op.opc == IR_SELECT || op.opc == IR_ADDPTR) return false;
    IrType rt = ir_vty(f, op.res);
    if (rt.kind != TY_TILE || rt.isptr) return false;
    for (uint32_t k = 0; k < op.nopnd; k++)
        if (!cst(f, ir_opnd(f, &op, k), &x[k])) return false;
    if (!eval(&op, x, (DType)rt.dt, &r)) return false;
    replace(fd, id, mk(fd, rt, &r));
    return true;
}

/* Step 3 for binary ops.  Returns the value the op equals, or IR_NONE;
 * *zero asks for an integer zero of the result type instead. */
static IrVal ident2(IrFunc *f, const IrOp *op, bool *zero, bool *ones)
{
    IrVal x = ir_opnd(f, op, 0), y = ir_opnd(f, op, 1);
    Cst cx, cy;
    bool kx = cst(f, x, &cx), ky = cst(f, y, &cy);
    bool flt = dt_is_float((DType)ir_vty(f, x).dt);
    switch (op->opc) {
    case IR_ADD:
        if (ky && is_zero(&cy, flt)) return x;
        if (kx && is_zero(&cx, flt)) return y;
        break;
    case IR_SUB:
        if (ky && is_zero(&cy, false)) return x;
        if (!flt && x == y) *zero = true;
        break;
    case IR_MUL:
        if (ky && is_one(&cy)) return x;
        if (kx && is_one(&cx)) return y;
        if (!flt && ((ky && cy.i == 0) || (kx && cx.i == 0))) *zero = true;
        break;
    case IR_DIV:
        if (ky && is_one(&cy)) return x;
        break;
    case IR_AND:
        if (flt) break;
        if (x == y) return x;
        if (ky && is_ones(&cy)) return x;
        if (kx && is_ones(&cx)) return y;
        if ((ky && cy.i == 0) || (kx && cx.i == 0)) *zero = true;
        break;
    case IR_OR:
        if (flt) break;
        if (x == y) return x;
        if (ky && cy.i == 0) return x;
        if (kx && cx.i == 0) return y;
        if ((ky && is_ones(&cy)) || (kx && is_ones(&cx))) *ones = true;
        break;
    case IR_XOR:
        if (flt) break;
        if (ky && cy.i == 0) return x;
        if (kx && cx.i == 0) return y;
        if (x == y) *zero = true;
        break;
    case IR_SHL:
    case IR_SHR:
        if (!flt && ky && cy.i == 0) return x;
        break;
    case IR_MAX:
    case IR_MIN:
        if (x == y) return x;
        break;
    case IR_ADDPTR:
        if (ky && is_int(&cy, 0)) return x;
        break;
    default: break;
    }
    return IR_NONE;
}

/* The scalar a value splats, or IR_NONE. */
static IrVal splatted(IrFunc *f, IrVal v)
{
    uint32_t d = ir_def(f, v);
    if (d == UINT32_MAX || ir_op(f, d)->opc != IR_SPLAT) return IR_NONE;
    return ir_opnd(f, ir_op(f, d), 0);
}

static bool identity_perm(const IrOp *op)
{
    for (uint32_t k = 0; k < op->attr.nshape; k++)
        if (op->attr.shape[k] != (int32_t)k) return false;
    return true;
}

/* Steps 3: shape ops of splats, and same-shape shape ops. */
static bool fold_shape(Folder *fd, uint32_t id)
{
    IrFunc *f = fd->f;
    IrOp op = *ir_op(f, id);
    IrVal x = ir_opnd(f, &op, 0);
    IrType rt = ir_vty(f, op.res);
    bool same = ir_ty_eq(ir_vty(f, x), rt) && (op.opc != IR_TRANS || identity_perm(&op));
    if (same && op.opc != IR_EXPAND_DIMS) {
        replace(fd, id, x);
        return true;
    }
    IrVal s = splatted(f, x);
    if (!s) return false;
    replace(fd, id, ir_build1(&fd->b, IR_SPLAT, &s, 1, rt, NULL));
    return true;
}

static IrVal def_of(IrFunc *f, IrVal v, IrOpcode opc)
{
    uint32_t d = ir_def(f, v);
    if (d == UINT32_MAX || ir_op(f, d)->opc != opc) return IR_NONE;
    return ir_opnd(f, ir_op(f, d), 0);
}

/* Step 3 for everything elementwise. */
static bool simplify(Folder *fd, uint32_t id)
{
    IrFunc *f = fd->f;
    IrOp op = *ir_op(f, id);
    if (op.nres != 1) return false;
    IrType rt = ir_vty(f, op.res);
    IrVal v = IR_NONE;
    bool zero = false, ones = false;
    switch (op.opc) {
    case IR_NEG:
    case IR_NOT:
        v = def_of(f, ir_opnd(f, &op, 0), (IrOpcode)op.opc);
        break;
    case IR_CAST:
    case IR_BITCAST:
        if (ir_ty_eq(ir_vty(f, ir_opnd(f, &op, 0)), rt)) v = ir_opnd(f, &op, 0);
        break;
    case IR_SELECT: {
        Cst c;
        IrVal a = ir_opnd(f, &op, 1), b = ir_opnd(f, &op, 2);
        if (cst(f, ir_opnd(f, &op, 0), &c)) v = c.i ? a : b;
        else if (a == b) v = a;
        break;
    }
    case IR_CMP: {
        IrVal x = ir_opnd(f, &op, 0);
        if (x != ir_opnd(f, &op, 1) || dt_is_float((DType)ir_vty(f, x).dt) || rt.isptr) break;
        if (ir_vty(f, x).isptr) break;
        bool t = op.attr.i == CMP_EQ || op.attr.i == CMP_LE || op.attr.i == CMP_GE;
        replace(fd, id, mk_int(fd, rt, t));
        return true;
    }
    default:
        if (op.nopnd == 2) v = ident2(f, &op, &zero, &ones);
        break;
    }
    if (v && ir_ty_eq(ir_vty(f, v), rt)) {
        replace(fd, id, v);
        return true;
    }
    if ((zero || ones) && !rt.isptr && !dt_is_float((DType)rt.dt)) {
        replace(fd, id, mk_int(fd, rt, zero ? 0 : -1));
        return true;
    }
    return false;
}

/* Step 4. */
static bool fold_if(Folder *fd, uint32_t id)
{
    IrFunc *f = fd->f;
    Cst c;
    if (!cst(f, ir_opnd(f, ir_op(f, id), 0), &c)) return false;
    IrOp op = *ir_op(f, id);
    IrBlock *rb = ir_blk(f, op.region[c.i ? 0 : 1]);
    IrBlock *pb = ir_blk(f, op.parent);
    TL_ASSERT(rb->nops > 0, "pass:fold");
    uint32_t y = rb->ops[rb->nops - 1];
    TL_ASSERT(ir_op(f, y)->opc == IR_YIELD && ir_op(f, y)->nopnd == op.nres, "pass:fold");
    uint32_t nmove = rb->nops - 1;
    VEC_RESERVE(pb->ops, pb->nops, pb->opcap, pb->nops + nmove);
    uint32_t at = fd->b.pos;
    memmove(&pb->ops[at + nmove], &pb->ops[at], (pb->nops - at) * sizeof(uint32_t));
    for (uint32_t k = 0; k < nmove; k++) {
        pb->ops[at + k] = rb->ops[k];
        ir_op(f, rb->ops[k])->parent = op.parent;
    }
    pb->nops += nmove;
    fd->b.pos += nmove;
    rb->ops[0] = y;
    rb->nops = 1;
    for (uint32_t k = 0; k < op.nres; k++) ir_replace_all_uses(f, op.res + k, ir_opnd(f, ir_op(f, y), k));
    ir_op_erase(f, id);
    fd->erased = true;
    fd->changed = true;
    return true;
}

/* Step 5. */
static bool fold_for(Folder *fd, uint32_t id)
{
    IrFunc *f = fd->f;
    IrOp op = *ir_op(f, id);
    Cst lo, hi, st;
    if (!cst(f, ir_opnd(f, &op, 0), &lo) || !cst(f, ir_opnd(f, &op, 1), &hi) || !cst(f, ir_opnd(f, &op, 2), &st))
        return false;
    if (dt_is_float(lo.dt) || st.i == 0) return false;
    bool sgn = dt_is_signed(st.dt);
    bool up = !sgn || st.i > 0;
    bool none = up ? !ilt(dt_is_signed(lo.dt), lo.i, hi.i) : !ilt(dt_is_signed(lo.dt), hi.i, lo.i);
    if (!none || op.nopnd != 3 + op.nres) return false;
    for (uint32_t k = 0; k < op.nres; k++) ir_replace_all_uses(f, op.res + k, ir_opnd(f, &op, 3 + k));
    ir_op_erase(f, id);
    fd->erased = true;
    fd->changed = true;
    return true;
}

static void fold_op(Folder *fd, uint32_t id)
{
    IrFunc *f = fd->f;
    IrOpcode opc = (IrOpcode)ir_op(f, id)->opc;
    switch (opc) {
    case IR_IF: fold_if(fd, id); return;
    case IR_FOR: fold_for(fd, id); return;
    case IR_BROADCAST:
    case IR_RESHAPE:
    case IR_EXPAND_DIMS:
    case IR_TRANS: fold_shape(fd, id); return;
    case IR_CONVERT_LAYOUT: /* without layouts (canonical passes drop them) it is the identity */
        if (!f->val_layout) replace(fd, id, ir_opnd(f, ir_op(f, id), 0));
        return;
    default: break;
    }
    if (!(ir_opinfo[opc].flags & IR_ELEM)) return;
    if (!fold_const(fd, id)) simplify(fd, id);
}

/* Step 1. */
static void walk(Folder *fd, IrBlk blk)
{
    IrFunc *f = fd->f;
    for (uint32_t k = 0; k < ir_blk(f, blk)->nops;) {
        uint32_t id = ir_blk(f, blk)->ops[k];
        for (uint32_t r = 0; r < ir_op(f, id)->nregion; r++) walk(fd, ir_op(f, id)->region[r]);
        ir_builder_at_end(&fd->b, f, blk);
        fd->b.pos = k;
        fd->b.loc = ir_op(f, id)->loc;
        fd->erased = false;
        fold_op(fd, id);
        k = fd->erased ? fd->b.pos : fd->b.pos + 1;
    }
}

void pass_fold(IrFunc *f, PassCtx *cx)
{
    Folder fd;
    memset(&fd, 0, sizeof fd);
    fd.f = f;
    do {
        fd.changed = false;
        walk(&fd, f->body);
        if (f->grid) walk(&fd, f->grid);
        if (f->requires) walk(&fd, f->requires);
        if (fd.changed) cx->changed = true;
    } while (fd.changed);
}
