/* fold.c: constant folding and exact algebraic simplification.
 *
 * Algorithm:
 *   1. Walk the body, the grid and the requires blocks in order; the regions of an op are
 *      walked before the op itself, so its operands are already folded.
 *   2. A value is constant when it is a scalar CONST or a SPLAT of one (never
 *      a pointer).  An elementwise op whose operands are all constant is
 *      evaluated by ir_scalar_eval (ir/scalar.c), the function the
 *      interpreter evaluates it with, so folding gives the interpreter's bits.
 *      The result replaces the op: a CONST, followed by a SPLAT for a tile.
 *      What would be an error at run time (integer division or remainder by
 *      zero) is left alone, and so is a bitcast from or to a NaN (see eval).
 *   3. Otherwise identities that give the op's bits for every operand value
 *      (NaNs of every sign and payload, -0 and inf included) are applied:
 *      x+(-0.0), x-(+0.0), x*1, x/1 below f64 (a quiet NaN x comes back as
 *      itself, -0 stays -0; x+(+0.0) is not one: -0 + +0 is +0; an f64 x may
 *      be a signaling NaN, which the op quiets), x+0, x-0, x*0, x-x and x^x
 *      for integers, and/or/xor with zero or all-ones, shifts by 0, x&x, x|x,
 *      integer max(x,x) and min(x,x) (for floats a NaN x gives the canonical
 *      NaN, not x), select on a constant condition or of two equal values,
 *      integer x cmp x, addptr(p, 0), neg(neg x) (a sign flip, NaNs too),
 *      not(not x), a cast or bitcast to the same type, a
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
#include "../ir/scalar.h"
#include "pass.h"

/* A constant element of dtype dt. */
typedef struct Cst {
    DType dt;
    IrScalar v;
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
    c->v = ir_scalar_of_attr(c->dt, &op->attr);
    return true;
}

static bool is_int(const Cst *c, int64_t v) { return !dt_is_float(c->dt) && c->v.i == int_wrap(c->dt, v); }
static bool is_ones(const Cst *c) { return is_int(c, -1); }
/* The float zero of one sign (neg: -0.0), or integer zero. */
static bool is_zero(const Cst *c, bool neg)
{
    if (!dt_is_float(c->dt)) return c->v.i == 0;
    return c->v.f == 0 && (signbit(c->v.f) != 0) == neg;
}
static bool is_one(const Cst *c) { return dt_is_float(c->dt) ? c->v.f == 1.0 : c->v.i == 1; }

/* Builds a constant of type t (a CONST, then a SPLAT for a tile) in front of the current op. */
static IrVal mk(Folder *fd, IrType t, const Cst *c)
{
    IrAttr a;
    memset(&a, 0, sizeof a);
    if (dt_is_float((DType)t.dt)) a.f = c->v.f;
    else a.i = c->v.i;
    IrVal s = ir_build1(&fd->b, IR_CONST, NULL, 0, ir_ty_scalar((DType)t.dt), &a);
    if (t.rank == 0) return s;
    return ir_build1(&fd->b, IR_SPLAT, &s, 1, t, NULL);
}

static IrVal mk_int(Folder *fd, IrType t, int64_t v)
{
    Cst c = {(DType)t.dt, {.i = int_wrap((DType)t.dt, v)}};
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

/* Evaluates elementwise op `op` on constant operands x[] into r (of dtype rdt)
 * with ir_scalar_eval, the interpreter's own arithmetic; false when it must
 * not be folded: an integer division or remainder by zero (a run-time error),
 * or a bitcast from or to a NaN (codegen materializes float constants through
 * LLVMConstReal, which need not keep a NaN's payload bit for bit). */
static bool eval(const IrOp *op, const Cst *x, DType rdt, Cst *r)
{
    IrScalar v[3];
    for (uint32_t k = 0; k < op->nopnd; k++) v[k] = x[k].v;
    if (op->opc == IR_BITCAST && dt_is_float(x[0].dt) && isnan(x[0].v.f)) return false;
    r->dt = rdt;
    if (ir_scalar_eval((IrOpcode)op->opc, op->attr.i, x[0].dt, rdt, v, &r->v) != IR_SCALAR_OK) return false;
    if (op->opc == IR_BITCAST && dt_is_float(rdt) && isnan(r->v.f)) return false;
    return true;
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
    Cst cx = {0}, cy = {0}; /* read only when cst() says so; zeroed for -Wmaybe-uninitialized at -O2 */
    bool kx = cst(f, x, &cx), ky = cst(f, y, &cy);
    DType dt = (DType)ir_vty(f, x).dt;
    bool flt = dt_is_float(dt);
    /* x + -0.0, x - 0.0, x * 1, x / 1 give x's own bits when x is a quiet NaN,
     * but quiet a signaling one.  Only f64 values can be signaling in the
     * interpreter (an f32 value has been through a float -> double conversion,
     * which quiets; narrower NaNs are canonical), so f64 keeps the op. */
    bool arith_id = !flt || dt != DT_F64;
    switch (op->opc) {
    case IR_ADD:
        if (!arith_id) break;
        if (ky && is_zero(&cy, flt)) return x;
        if (kx && is_zero(&cx, flt)) return y;
        break;
    case IR_SUB:
        if (arith_id && ky && is_zero(&cy, false)) return x;
        if (!flt && x == y) *zero = true;
        break;
    case IR_MUL:
        if (arith_id && ky && is_one(&cy)) return x;
        if (arith_id && kx && is_one(&cx)) return y;
        if (!flt && ((ky && cy.v.i == 0) || (kx && cx.v.i == 0))) *zero = true;
        break;
    case IR_DIV:
        if (arith_id && ky && is_one(&cy)) return x;
        break;
    case IR_AND:
        if (flt) break;
        if (x == y) return x;
        if (ky && is_ones(&cy)) return x;
        if (kx && is_ones(&cx)) return y;
        if ((ky && cy.v.i == 0) || (kx && cx.v.i == 0)) *zero = true;
        break;
    case IR_OR:
        if (flt) break;
        if (x == y) return x;
        if (ky && cy.v.i == 0) return x;
        if (kx && cx.v.i == 0) return y;
        if ((ky && is_ones(&cy)) || (kx && is_ones(&cx))) *ones = true;
        break;
    case IR_XOR:
        if (flt) break;
        if (ky && cy.v.i == 0) return x;
        if (kx && cx.v.i == 0) return y;
        if (x == y) *zero = true;
        break;
    case IR_SHL:
    case IR_SHR:
        if (!flt && ky && cy.v.i == 0) return x;
        break;
    case IR_MAX:
    case IR_MIN:
        /* not for floats: maximum(x, x) of a NaN x is the quiet NaN NAN, not x's NaN */
        if (!flt && x == y) return x;
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
        if (cst(f, ir_opnd(f, &op, 0), &c)) v = c.v.i ? a : b;
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
    IrBlock *rb = ir_blk(f, op.region[c.v.i ? 0 : 1]);
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
    if (dt_is_float(lo.dt) || st.v.i == 0) return false;
    bool sgn = dt_is_signed(st.dt);
    bool up = !sgn || st.v.i > 0;
    int c = ir_scalar_order(lo.dt, lo.v, hi.v, false);
    bool none = up ? c >= 0 : c <= 0;
    if (!none || ir_for_ncarried(&op) != op.nres) return false;
    for (uint32_t k = 0; k < op.nres; k++) ir_replace_all_uses(f, op.res + k, ir_for_init(f, &op, k));
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
