/* verify.c: the IR verifier, run after the frontend and after every pass.
 *
 * 1. Structure: the body (and the grid) walk top to bottom; every op id in a
 *    block is live, in range, claims that block as its parent and is listed in
 *    no other block; its operand and result counts and its number of regions
 *    follow ops.def; each region block belongs to its op.
 * 2. Dominance: a value may be used only after its definition in the same
 *    block or in an enclosing one.  `visible[v]` is set when v is defined
 *    (block arguments on entry, results after the op and its regions) and
 *    cleared when its block has been walked; an operand must be visible.
 * 3. Terminators: every block ends in exactly one terminator, the one its
 *    owner expects (body: return; grid, for, if, while "after": yield; while
 *    "before": condition), and no terminator appears earlier.
 *    Every live op is in some block (a removed op must be marked dead).
 * 4. Types: every value type is well formed (tile dims powers of two, at most
 *    2^24 elements, rank <= 4); each op's operand and result types follow
 *    the rules in ops.def and lang/SEMANTICS.md (check_op).
 * 5. Layouts: warps(N) is 0 (not chosen yet) or a power of two up to 32; once
 *    the layout pass has set f->val_layout, every tile value of
 *    rank >= 1 in the body has one, whose dims are its type's, with 5 lane
 *    bases, log2(warps) warp bases, every basis inside the tile, and every
 *    element held by some thread (surjective); a DOT_WAIT's result has its
 *    operand's layout (the same registers); scalars, views, smem buffers and
 *    the grid's values (host code) have none (check_layout).
 * The first violation is reported and verification of that function stops;
 * a broken function says nothing reliable about what follows.
 */
#include "ir.h"
#include "layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NUMEL (1 << 24)

typedef struct Verifier {
    IrFunc *f;
    Diag *d;
    const char *after;
    uint8_t *visible;   /* per value: defined and in scope at the current point of the walk */
    uint8_t *placed;    /* per op: already found in some block */
    bool in_grid;       /* walking the grid (host code: no layouts) */
    char tybuf[4][80];  /* type strings for the message being built */
    int nty;
} Verifier;

/* ---- reporting ------------------------------------------------------------- */

static const char *tystr(Verifier *V, IrType t)
{
    StrBuf b = {0};
    ir_ty_print(&b, t);
    char *out = V->tybuf[V->nty++ & 3];
    snprintf(out, sizeof V->tybuf[0], "%s", b.s ? b.s : "");
    sb_free(&b);
    return out;
}

/* Reports "IR verification failed after pass 'P': kernel @K: 'OP' at FILE:L:C: MSG".
 * The location is inside the message, not the diagnostic's own: op locations
 * point into the kernel's source, which need not be the text the Diag shows. */
TL_PRINTF(3, 4) static bool bad(Verifier *V, uint32_t opid, const char *fmt, ...)
{
    char msg[768], where[256] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    IrFunc *f = V->f;
    if (opid < f->nops) {
        const IrOp *op = &f->ops[opid];
        const char *name = op->opc < IR_NUM_OPS ? ir_opinfo[op->opc].name : "?";
        if (op->loc.line)
            snprintf(where, sizeof where, "'%s' at %s:%u:%u: ", name, f->mod->file, op->loc.line, op->loc.col);
        else
            snprintf(where, sizeof where, "'%s': ", name);
    }
    diag_error_noloc(V->d, "IR verification failed after pass '%s': kernel @%s: %s%s", V->after ? V->after : "none",
                     f->name, where, msg);
    V->nty = 0;
    return false;
}

#define NOOP UINT32_MAX
#define CHECK(c, op, ...)                                                                          \
    do {                                                                                           \
        if (!(c)) return bad(V, (op), __VA_ARGS__);                                                \
    } while (0)

/* ---- type predicates -------------------------------------------------------- */

static bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
static bool is_tile(IrType t) { return t.kind == TY_TILE; }
static bool is_data(IrType t) { return t.kind == TY_TILE && !t.isptr; }  /* a tile or scalar of numbers */
static bool is_ptr(IrType t) { return t.kind == TY_TILE && t.isptr; }
static bool is_int_scalar(IrType t) { return ir_ty_is_scalar(t) && !t.isptr && dt_is_int((DType)t.dt); }
static bool is_i1(IrType t) { return is_data(t) && t.dt == DT_I1; }
static bool same_shape(IrType a, IrType b)
{
    return a.rank == b.rank && memcmp(a.dims, b.dims, sizeof a.dims) == 0;
}
/* The values a pointer tile points at: same shape, the pointee dtype. */
static IrType pointee(IrType t) { return ir_ty_with_dt(t, (DType)t.dt, false); }

static bool check_type(Verifier *V, uint32_t op, IrType t, const char *what)
{
    CHECK(t.kind == TY_TILE || t.kind == TY_VIEW || t.kind == TY_SMEM, op, "%s has no type", what);
    CHECK(t.dt < DT_COUNT, op, "%s has an unknown element type", what);
    CHECK(t.rank <= IR_MAXRANK, op, "%s has rank %u (at most %d)", what, t.rank, IR_MAXRANK);
    if (t.kind == TY_VIEW) {
        CHECK(t.rank >= 1 && !t.isptr, op, "%s: malformed tensor type", what);
        return true;
    }
    int first = 0;
    if (t.kind == TY_SMEM) {
        CHECK(t.rank >= 2 && !t.isptr && t.dims[0] >= 1 && t.dims[0] <= 16, op,
              "%s: malformed smem type (1 to 16 stages of a tile of rank >= 1)", what);
        first = 1;
    }
    int64_t n = 1;
    for (int i = first; i < t.rank; i++) {
        CHECK(is_pow2(t.dims[i]), op, "%s: tile dimension %d is %d, not a power of two", what, i, t.dims[i]);
        n *= t.dims[i];
        CHECK(n <= MAX_NUMEL, op, "%s: %s holds more than 2^24 elements", what, tystr(V, t));
    }
    for (int i = t.rank; i < IR_MAXRANK; i++) CHECK(t.dims[i] == 0, op, "%s: unused dimensions not zero", what);
    return true;
}

/* ---- layouts --------------------------------------------------------------------- */

/* Value v (`what`, defined by or in op `op`) against f->val_layout. */
static bool check_layout(Verifier *V, uint32_t op, IrVal v, const char *what)
{
    static const char *const kinds[LL_NIN] = {"reg", "lane", "warp"};
    const IrFunc *f = V->f;
    if (!f->val_layout) return true;
    uint32_t li = f->val_layout[v];
    IrType t = f->vals[v].ty;
    if (V->in_grid || t.kind != TY_TILE || t.rank == 0) {
        CHECK(li == 0, op, "%s (%s) has a layout, but %s", what, tystr(V, t),
              V->in_grid ? "the grid runs on the host" : "only tiles of rank 1 or more have layouts");
        return true;
    }
    CHECK(li != 0, op, "%s (%s) has no layout", what, tystr(V, t));
    CHECK(li < f->nlayouts, op, "%s has layout %u, but the kernel has %u", what, li, f->nlayouts ? f->nlayouts - 1 : 0);
    const Layout *L = &f->layouts[li];
    bool dims = L->rank == t.rank;
    for (int d = 0; d < t.rank && dims; d++) dims = L->dimbits[d] < 31 && (INT32_C(1) << L->dimbits[d]) == t.dims[d];
    CHECK(dims, op, "%s (%s) has layout %u, made for other dims", what, tystr(V, t), li);
    CHECK(L->nbits[LL_LANE] == 5, op, "%s: layout %u has %u lane bases, not 5", what, li, L->nbits[LL_LANE]);
    int lw = 0;
    while (lw < 30 && (1 << lw) < f->warps) lw++;
    CHECK(f->warps > 0 && (1 << lw) == f->warps, op,
          "%s has a layout, but the kernel's warp count %d is not a power of two", what, f->warps);
    CHECK(L->nbits[LL_WARP] == lw, op, "%s: layout %u has %u warp bases, but %d warps need %d", what, li,
          L->nbits[LL_WARP], f->warps, lw);
    CHECK(L->nbits[LL_REG] <= LL_MAXBITS, op, "%s: layout %u has %u register bases (at most %d)", what, li,
          L->nbits[LL_REG], LL_MAXBITS);
    uint32_t inside = (1u << layout_total_bits(L)) - 1;
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < L->nbits[k]; i++)
            CHECK((L->basis[k][i] & ~inside) == 0, op, "%s: %s basis %d of layout %u points outside %s", what,
                  kinds[k], i, li, tystr(V, t));
    CHECK(layout_is_surjective(L), op, "%s: layout %u leaves elements of %s held by no thread", what, li,
          tystr(V, t));
    /* op is v's definition when v is a result; dot_wait only waits, it moves nothing */
    const IrOp *def = op < f->nops ? &f->ops[op] : NULL;
    if (def && def->opc == IR_DOT_WAIT && !f->vals[v].is_arg) {
        uint32_t lx = f->val_layout[f->opnds[def->opnd]];
        CHECK(lx == li || (lx && lx < f->nlayouts && layout_eq(&f->layouts[lx], L)), op,
              "%s has layout %u, but the accumulator it waits for has layout %u", what, li, lx);
    }
    return true;
}

/* ---- ops ----------------------------------------------------------------------- */

static IrType opty(Verifier *V, const IrOp *op, uint32_t i) { return V->f->vals[ir_opnd(V->f, op, i)].ty; }
static IrType resty(Verifier *V, const IrOp *op, uint32_t i) { return V->f->vals[op->res + i].ty; }

/* The accumulation dtype of sum/cumsum: i32 below 32-bit integers, f32 below 32-bit floats. */
static DType acc_dt(DType dt)
{
    if (dt_is_int(dt) && dt_bits[dt] < 32) return DT_I32;
    if (dt_is_float(dt) && dt_bits[dt] < 32) return DT_F32;
    return dt;
}

static bool check_axis(Verifier *V, uint32_t id, const IrOp *op, IrType x)
{
    CHECK(is_data(x) && x.rank >= 1, id, "operand is %s, not a tile", tystr(V, x));
    CHECK(op->attr.i >= 0 && op->attr.i < x.rank, id, "axis %lld out of range for %s", (long long)op->attr.i,
          tystr(V, x));
    return true;
}

/* x with dimension `axis` removed (a scalar when x has rank 1). */
static IrType drop_axis(IrType x, int axis, DType dt)
{
    int32_t dims[IR_MAXRANK];
    int r = 0;
    for (int i = 0; i < x.rank; i++)
        if (i != axis) dims[r++] = x.dims[i];
    return ir_ty_tile(dt, false, r, dims);
}

static bool check_same_elems(Verifier *V, uint32_t id, IrType x, IrType r)
{
    CHECK(is_tile(x) && x.dt == r.dt && x.isptr == r.isptr, id, "operand %s and result %s have different elements",
          tystr(V, x), tystr(V, r));
    return true;
}

static bool check_mask(Verifier *V, uint32_t id, IrType mask, IrType like)
{
    CHECK(is_i1(mask) && same_shape(mask, like), id, "mask is %s, expected i1 of the shape of %s", tystr(V, mask),
          tystr(V, like));
    return true;
}

static bool check_op(Verifier *V, uint32_t id)
{
    IrFunc *f = V->f;
    const IrOp *op = &f->ops[id];
    IrOpcode opc = (IrOpcode)op->opc;
    IrType x = op->nopnd ? opty(V, op, 0) : (IrType){0};
    IrType r = op->nres ? resty(V, op, 0) : (IrType){0};

    switch (opc) {
    case IR_CONST:
        CHECK(ir_ty_is_scalar(r) && !r.isptr, id, "result is %s, not a scalar", tystr(V, r));
        if (dt_is_int((DType)r.dt) && dt_bits[r.dt] < 64) {
            /* either reading of the bits is accepted: -2^(w-1) <= i < 2^w */
            int w = dt_bits[r.dt];
            int64_t lo = w == 1 ? -1 : -((int64_t)1 << (w - 1)), hi = ((int64_t)1 << w) - 1;
            CHECK(op->attr.i >= lo && op->attr.i <= hi, id, "%lld does not fit in %s", (long long)op->attr.i,
                  dt_name[r.dt]);
        }
        return true;
    case IR_ARANGE:
        CHECK(is_data(r) && r.rank == 1 && r.dt == DT_I32, id, "result is %s, expected tile<i32>[n]", tystr(V, r));
        return true;
    case IR_SPLAT:
        CHECK(ir_ty_is_scalar(x), id, "operand is %s, not a scalar", tystr(V, x));
        CHECK(is_tile(r) && r.rank >= 1, id, "result is %s, not a tile", tystr(V, r));
        return check_same_elems(V, id, x, r);
    case IR_BROADCAST:
        CHECK(is_tile(x) && is_tile(r) && x.rank == r.rank, id, "broadcast from %s to %s changes the rank",
              tystr(V, x), tystr(V, r));
        for (int i = 0; i < x.rank; i++)
            CHECK(x.dims[i] == r.dims[i] || x.dims[i] == 1, id, "cannot broadcast %s to %s (dimension %d)",
                  tystr(V, x), tystr(V, r), i);
        return check_same_elems(V, id, x, r);
    case IR_EXPAND_DIMS: {
        CHECK(is_tile(x) && x.rank < IR_MAXRANK, id, "operand is %s", tystr(V, x));
        CHECK(op->attr.i >= 0 && op->attr.i <= x.rank, id, "axis %lld out of range", (long long)op->attr.i);
        int32_t dims[IR_MAXRANK];
        for (int i = 0, k = 0; i <= x.rank; i++) dims[i] = i == op->attr.i ? 1 : x.dims[k++];
        IrType want = ir_ty_tile((DType)x.dt, x.isptr, x.rank + 1, dims);
        CHECK(ir_ty_eq(r, want), id, "result is %s, expected %s", tystr(V, r), tystr(V, want));
        return true;
    }
    case IR_CONVERT_LAYOUT:
        CHECK(is_tile(x) && x.rank >= 1 && ir_ty_eq(x, r), id, "converts %s to %s (a layout conversion keeps the type)",
              tystr(V, x), tystr(V, r));
        return true;
    case IR_RESHAPE:
        CHECK(is_tile(x) && is_tile(r) && ir_ty_numel(x) == ir_ty_numel(r), id,
              "reshape from %s to %s changes the element count", tystr(V, x), tystr(V, r));
        return check_same_elems(V, id, x, r);
    case IR_TRANS: {
        CHECK(is_tile(x) && op->attr.nshape == x.rank, id, "permutation of length %u for %s", op->attr.nshape,
              tystr(V, x));
        int32_t dims[IR_MAXRANK];
        unsigned seen = 0;
        for (int k = 0; k < x.rank; k++) {
            int32_t pk = op->attr.shape[k];
            CHECK(pk >= 0 && pk < x.rank && !(seen & (1u << pk)), id, "perm is not a permutation of 0..%d", x.rank - 1);
            seen |= 1u << pk;
            dims[k] = x.dims[pk];
        }
        IrType want = ir_ty_tile((DType)x.dt, x.isptr, x.rank, dims);
        CHECK(ir_ty_eq(r, want), id, "result is %s, expected %s", tystr(V, r), tystr(V, want));
        return true;
    }
    case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM: case IR_MAX: case IR_MIN:
    case IR_AND: case IR_OR: case IR_XOR: case IR_SHL: case IR_SHR: {
        IrType y = opty(V, op, 1);
        CHECK(ir_ty_eq(x, y), id, "operand types differ: %s and %s", tystr(V, x), tystr(V, y));
        CHECK(ir_ty_eq(r, x), id, "result is %s, operands are %s", tystr(V, r), tystr(V, x));
        CHECK(is_data(x), id, "operands are %s, not numbers", tystr(V, x));
        bool bitwise = opc == IR_AND || opc == IR_OR || opc == IR_XOR || opc == IR_SHL || opc == IR_SHR;
        CHECK(!bitwise || dt_is_int((DType)x.dt), id, "operands are %s, not integers", tystr(V, x));
        return true;
    }
    case IR_CMP: {
        IrType y = opty(V, op, 1);
        CHECK(ir_ty_eq(x, y), id, "operand types differ: %s and %s", tystr(V, x), tystr(V, y));
        CHECK(is_tile(x), id, "operands are %s", tystr(V, x));
        CHECK(op->attr.i >= 0 && op->attr.i < CMP_COUNT, id, "unknown predicate %lld", (long long)op->attr.i);
        IrType want = ir_ty_with_dt(x, DT_I1, false);
        CHECK(ir_ty_eq(r, want), id, "result is %s, expected %s", tystr(V, r), tystr(V, want));
        return true;
    }
    case IR_ADDPTR: {
        IrType y = opty(V, op, 1);
        CHECK(is_ptr(x), id, "first operand is %s, not a pointer", tystr(V, x));
        CHECK(is_data(y) && dt_is_int((DType)y.dt) && same_shape(x, y), id,
              "offset is %s, expected integers of the shape of %s", tystr(V, y), tystr(V, x));
        CHECK(ir_ty_eq(r, x), id, "result is %s, expected %s", tystr(V, r), tystr(V, x));
        return true;
    }
    case IR_NEG: case IR_NOT: case IR_ABS: case IR_FLOOR: case IR_CEIL:
    case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2: case IR_SQRT: case IR_RSQRT:
    case IR_SIGMOID: case IR_TANH: case IR_ERF: {
        CHECK(is_data(x), id, "operand is %s, not numbers", tystr(V, x));
        CHECK(ir_ty_eq(r, x), id, "result is %s, operand is %s", tystr(V, r), tystr(V, x));
        bool math = opc != IR_NEG && opc != IR_NOT && opc != IR_ABS && opc != IR_FLOOR && opc != IR_CEIL;
        CHECK(!math || dt_is_float((DType)x.dt), id, "operand is %s, not floats", tystr(V, x));
        CHECK(opc != IR_NOT || dt_is_int((DType)x.dt), id, "operand is %s, not integers", tystr(V, x));
        return true;
    }
    case IR_CAST: case IR_BITCAST:
        CHECK(is_data(x) && is_data(r) && same_shape(x, r), id, "cannot convert %s to %s", tystr(V, x), tystr(V, r));
        CHECK(opc == IR_CAST || dt_bits[x.dt] == dt_bits[r.dt], id, "bitcast from %s to %s changes the bit width",
              tystr(V, x), tystr(V, r));
        return true;
    case IR_FMA: {
        for (uint32_t i = 1; i < 3; i++)
            CHECK(ir_ty_eq(opty(V, op, i), x), id, "operand %u is %s, operand 0 is %s", i, tystr(V, opty(V, op, i)),
                  tystr(V, x));
        CHECK(is_data(x) && dt_is_float((DType)x.dt), id, "operands are %s, not floats", tystr(V, x));
        CHECK(ir_ty_eq(r, x), id, "result is %s, operands are %s", tystr(V, r), tystr(V, x));
        return true;
    }
    case IR_SELECT: {
        IrType a = opty(V, op, 1), b = opty(V, op, 2);
        CHECK(ir_ty_eq(a, b), id, "the two choices differ: %s and %s", tystr(V, a), tystr(V, b));
        CHECK(is_tile(a), id, "the choices are %s", tystr(V, a));
        if (!check_mask(V, id, x, a)) return false;
        CHECK(ir_ty_eq(r, a), id, "result is %s, the choices are %s", tystr(V, r), tystr(V, a));
        return true;
    }
    case IR_PROGRAM_ID: case IR_NUM_PROGRAMS:
        CHECK(op->attr.i >= 0 && op->attr.i <= 2, id, "axis %lld is not 0, 1 or 2", (long long)op->attr.i);
        CHECK(ir_ty_eq(r, ir_ty_scalar(DT_I32)), id, "result is %s, expected i32", tystr(V, r));
        return true;
    case IR_NUM_SMS:
        CHECK(ir_ty_eq(r, ir_ty_scalar(DT_I32)), id, "result is %s, expected i32", tystr(V, r));
        return true;
    case IR_VIEW_PTR:
        CHECK(x.kind == TY_VIEW, id, "operand is %s, not a tensor", tystr(V, x));
        CHECK(ir_ty_eq(r, ir_ty_ptr((DType)x.dt)), id, "result is %s, expected ptr<%s>", tystr(V, r), dt_name[x.dt]);
        return true;
    case IR_VIEW_SHAPE: case IR_VIEW_STRIDE:
        CHECK(x.kind == TY_VIEW, id, "operand is %s, not a tensor", tystr(V, x));
        CHECK(op->attr.i >= 0 && op->attr.i < x.rank, id, "dim %lld out of range for %s", (long long)op->attr.i,
              tystr(V, x));
        CHECK(ir_ty_eq(r, ir_ty_scalar(DT_I64)), id, "result is %s, expected i64", tystr(V, r));
        return true;
    case IR_LOAD:
        CHECK(is_ptr(x), id, "address operand is %s, not pointers", tystr(V, x));
        CHECK(ir_ty_eq(r, pointee(x)), id, "result is %s, expected %s", tystr(V, r), tystr(V, pointee(x)));
        if (op->nopnd >= 2 && !check_mask(V, id, opty(V, op, 1), x)) return false;
        CHECK(op->nopnd < 3 || ir_ty_eq(opty(V, op, 2), r), id, "'other' is %s, expected %s", tystr(V, opty(V, op, 2)),
              tystr(V, r));
        return true;
    case IR_STORE:
        CHECK(is_ptr(x), id, "address operand is %s, not pointers", tystr(V, x));
        CHECK(ir_ty_eq(opty(V, op, 1), pointee(x)), id, "stored value is %s, expected %s", tystr(V, opty(V, op, 1)),
              tystr(V, pointee(x)));
        if (op->nopnd >= 3 && !check_mask(V, id, opty(V, op, 2), x)) return false;
        return true;
    case IR_ATOMIC_ADD: case IR_ATOMIC_MAX: case IR_ATOMIC_MIN: case IR_ATOMIC_CAS: {
        uint32_t nval = opc == IR_ATOMIC_CAS ? 2 : 1;
        CHECK(is_ptr(x), id, "address operand is %s, not pointers", tystr(V, x));
        for (uint32_t i = 1; i <= nval; i++)
            CHECK(ir_ty_eq(opty(V, op, i), pointee(x)), id, "operand %u is %s, expected %s", i,
                  tystr(V, opty(V, op, i)), tystr(V, pointee(x)));
        CHECK(op->nopnd <= 1 + nval + 1, id, "too many operands");
        if (op->nopnd == 2 + nval && !check_mask(V, id, opty(V, op, 1 + nval), x)) return false;
        CHECK(ir_ty_eq(r, pointee(x)), id, "result is %s, expected %s", tystr(V, r), tystr(V, pointee(x)));
        return true;
    }
    case IR_BLOCK_LOAD: case IR_BLOCK_STORE: {
        CHECK(x.kind == TY_VIEW, id, "first operand is %s, not a tensor", tystr(V, x));
        uint32_t rank = x.rank;
        bool load = opc == IR_BLOCK_LOAD;
        CHECK(op->nopnd == 1 + rank + (load ? op->attr.j != 0 : 1), id,
              "%u operands for a rank-%u tensor: expected the tensor, %u offsets%s", op->nopnd, rank, rank,
              load ? (op->attr.j ? " and 'other'" : "") : " and the value");
        for (uint32_t i = 1; i <= rank; i++)
            CHECK(is_int_scalar(opty(V, op, i)), id, "offset %u is %s, not an integer scalar", i - 1,
                  tystr(V, opty(V, op, i)));
        IrType blk = load ? r : opty(V, op, 1 + rank);
        CHECK(is_data(blk) && blk.rank == rank && blk.dt == x.dt, id, "block is %s, expected a rank-%u tile of %s",
              tystr(V, blk), rank, dt_name[x.dt]);
        if (load && op->attr.j) {
            IrType o = opty(V, op, 1 + rank);
            CHECK(ir_ty_eq(o, r) || ir_ty_eq(o, ir_ty_scalar((DType)r.dt)), id, "'other' is %s, expected %s or %s",
                  tystr(V, o), tystr(V, r), dt_name[r.dt]);
        }
        return true;
    }
    case IR_SMEM_ALLOC:
        CHECK(r.kind == TY_SMEM, id, "result is %s, not an smem buffer", tystr(V, r));
        return true;
    case IR_ASYNC_LOAD: {
        CHECK(x.kind == TY_VIEW, id, "first operand is %s, not a tensor", tystr(V, x));
        IrType buf = opty(V, op, 1);
        /* tiles of the view's rank, or (rank > 2) of 2 dims up to it: a box over the last dims */
        CHECK(buf.kind == TY_SMEM && buf.dt == x.dt && buf.rank <= x.rank + 1 &&
                  buf.rank >= (x.rank < 2 ? x.rank : 2) + 1,
              id, "buffer is %s, expected smem<%s> of %u-d tiles%s", tystr(V, buf), dt_name[x.dt], x.rank,
              x.rank > 2 ? " (or of 2 to that many dims: a box over the view's last dims)" : "");
        CHECK(op->nopnd == 3u + x.rank, id, "%u operands: expected the tensor, the buffer, the stage and %u offsets",
              op->nopnd, x.rank);
        CHECK(op->attr.i >= 0 && (op->attr.i == 0 || (buf.rank == 3 && op->attr.i <= (int64_t)x.rank - 2)), id,
              "gap %lld: expected 0, or (a 2-d tile of a view of rank %u) 1 to %d", (long long)op->attr.i, x.rank,
              (int)x.rank - 2);
        for (uint32_t i = 2; i < op->nopnd; i++)
            CHECK(is_int_scalar(opty(V, op, i)), id, "operand %u is %s, not an integer scalar", i,
                  tystr(V, opty(V, op, i)));
        return true;
    }
    case IR_PRODUCER_WARP:
        CHECK(is_i1(r) && ir_ty_is_scalar(r), id, "result is %s, expected i1", tystr(V, r));
        CHECK(op->parent == f->body, id, "producer_warp outside the kernel body (the producer branches off there)");
        return true;
    case IR_ASYNC_RELEASE:
        CHECK(x.kind == TY_SMEM, id, "first operand is %s, not an smem buffer", tystr(V, x));
        CHECK(is_int_scalar(opty(V, op, 1)), id, "operand 1 is %s, not an integer scalar", tystr(V, opty(V, op, 1)));
        return true;
    case IR_ASYNC_WAIT: case IR_SMEM_READ: case IR_ASYNC_ACQUIRE:
        CHECK(x.kind == TY_SMEM, id, "first operand is %s, not an smem buffer", tystr(V, x));
        for (uint32_t i = 1; i < op->nopnd; i++)
            CHECK(is_int_scalar(opty(V, op, i)), id, "operand %u is %s, not an integer scalar", i,
                  tystr(V, opty(V, op, i)));
        if (opc == IR_SMEM_READ)
            CHECK(ir_ty_eq(r, ir_ty_smem_tile(x)), id, "result is %s, expected %s", tystr(V, r),
                  tystr(V, ir_ty_smem_tile(x)));
        return true;
    case IR_SMEM_WRITE:
        CHECK(x.kind == TY_SMEM, id, "first operand is %s, not an smem buffer", tystr(V, x));
        CHECK(is_int_scalar(opty(V, op, 1)), id, "operand 1 is %s, not an integer scalar", tystr(V, opty(V, op, 1)));
        CHECK(ir_ty_eq(opty(V, op, 2), ir_ty_smem_tile(x)), id, "value is %s, expected %s", tystr(V, opty(V, op, 2)),
              tystr(V, ir_ty_smem_tile(x)));
        return true;
    case IR_BARRIER:
        return true;
    case IR_DOT_WAIT:
        CHECK(is_data(x) && ir_ty_eq(x, r), id, "result is %s, expected the operand's type %s", tystr(V, r),
              tystr(V, x));
        return true;
    case IR_TMA_READY:
        CHECK(x.kind == TY_VIEW, id, "operand is %s, not a tensor", tystr(V, x));
        CHECK(is_i1(r) && ir_ty_is_scalar(r), id, "result is %s, expected i1", tystr(V, r));
        return true;
    case IR_DOT: {
        IrType b = opty(V, op, 1), acc = opty(V, op, 2);
        CHECK(op->attr.i >= 0 && op->attr.i <= 8, id, "pending is %lld (0 to 8)", (long long)op->attr.i);
        CHECK(is_data(x) && is_data(b) && x.rank == 2 && b.rank == 2, id, "operands are %s and %s, not 2-d tiles",
              tystr(V, x), tystr(V, b));
        CHECK(x.dt == b.dt, id, "operand element types differ: %s and %s", dt_name[x.dt], dt_name[b.dt]);
        DType dt = (DType)x.dt;
        CHECK(dt == DT_F16 || dt == DT_BF16 || dt == DT_F8E4M3 || dt == DT_F8E5M2 || dt == DT_F32, id,
              "operands are %s (dot takes f16, bf16, f8e4m3, f8e5m2 or f32)", dt_name[dt]);
        CHECK(x.dims[1] == b.dims[0], id, "inner dimensions differ: %s and %s", tystr(V, x), tystr(V, b));
        int32_t mn[2] = {x.dims[0], b.dims[1]};
        IrType want = ir_ty_tile(DT_F32, false, 2, mn);
        CHECK(ir_ty_eq(acc, want), id, "accumulator is %s, expected %s", tystr(V, acc), tystr(V, want));
        CHECK(ir_ty_eq(r, want), id, "result is %s, expected %s", tystr(V, r), tystr(V, want));
        return true;
    }
    case IR_REDUCE_SUM: case IR_REDUCE_MAX: case IR_REDUCE_MIN: case IR_ARGMAX: case IR_ARGMIN: {
        if (!check_axis(V, id, op, x)) return false;
        int axis = (int)op->attr.i;
        DType dt = opc == IR_ARGMAX || opc == IR_ARGMIN ? DT_I32 : (DType)x.dt;
        IrType want = drop_axis(x, axis, dt);
        bool ok = ir_ty_eq(r, want) || (opc == IR_REDUCE_SUM && ir_ty_eq(r, drop_axis(x, axis, acc_dt(dt))));
        CHECK(ok, id, "result is %s, expected %s", tystr(V, r), tystr(V, want));
        return true;
    }
    case IR_CUMSUM: case IR_SORT: {
        if (!check_axis(V, id, op, x)) return false;
        bool ok = ir_ty_eq(r, x) || (opc == IR_CUMSUM && ir_ty_eq(r, ir_ty_with_dt(x, acc_dt((DType)x.dt), false)));
        CHECK(ok, id, "result is %s, operand is %s", tystr(V, r), tystr(V, x));
        CHECK(opc != IR_SORT || op->attr.j == 0 || op->attr.j == 1, id, "descending flag is %lld",
              (long long)op->attr.j);
        return true;
    }
    case IR_TOPK: {
        if (!check_axis(V, id, op, x)) return false;
        int axis = (int)op->attr.i;
        CHECK(is_pow2(op->attr.j) && op->attr.j <= x.dims[axis], id, "k = %lld must be a power of two no larger than %d",
              (long long)op->attr.j, x.dims[axis]);
        IrType want = x;
        want.dims[axis] = (int32_t)op->attr.j;
        CHECK(ir_ty_eq(r, want), id, "values are %s, expected %s", tystr(V, r), tystr(V, want));
        IrType wi = ir_ty_with_dt(want, DT_I32, false);
        CHECK(ir_ty_eq(resty(V, op, 1), wi), id, "indices are %s, expected %s", tystr(V, resty(V, op, 1)),
              tystr(V, wi));
        return true;
    }
    case IR_PRINT:
        CHECK(op->attr.str < f->mod->nstrs, id, "label string %u does not exist", op->attr.str);
        return true;
    case IR_ASSERT:
        CHECK(is_i1(x), id, "condition is %s, not i1", tystr(V, x));
        CHECK(op->attr.str < f->mod->nstrs, id, "message string %u does not exist", op->attr.str);
        return true;
    case IR_FOR:
        CHECK(is_int_scalar(x), id, "lower bound is %s, not an integer scalar", tystr(V, x));
        CHECK(ir_ty_eq(opty(V, op, 1), x) && ir_ty_eq(opty(V, op, 2), x), id,
              "bounds and step differ in type: %s, %s, %s", tystr(V, x), tystr(V, opty(V, op, 1)),
              tystr(V, opty(V, op, 2)));
        CHECK(op->nres == ir_for_ncarried(op), id, "%u results for %u carried values", op->nres, ir_for_ncarried(op));
        for (uint32_t i = 0; i < op->nres; i++)
            CHECK(ir_ty_eq(resty(V, op, i), opty(V, op, 3 + i)), id, "result %u is %s, its initial value %s", i,
                  tystr(V, resty(V, op, i)), tystr(V, opty(V, op, 3 + i)));
        CHECK(op->attr.i >= 0, id, "negative pipeline stages %lld", (long long)op->attr.i);
        return true;
    case IR_IF:
        CHECK(is_i1(x) && ir_ty_is_scalar(x), id, "condition is %s, not an i1 scalar", tystr(V, x));
        return true;
    case IR_WHILE:
        return true; /* region signatures: check_regions */
    case IR_YIELD: case IR_CONDITION: case IR_RETURN:
        return true; /* checked against their block's owner: check_term */
    case IR_NUM_OPS: break;
    }
    return bad(V, id, "unknown opcode %u", op->opc);
}

/* ---- blocks, regions, terminators ------------------------------------------------ */

static bool walk(Verifier *V, IrBlk b, uint32_t owner, IrOpcode term, uint32_t *term_id);

static bool check_args(Verifier *V, uint32_t owner, IrBlk b, const IrType *tys, uint32_t n, const char *what)
{
    const IrBlock *blk = &V->f->blocks[b];
    CHECK(blk->nargs == n, owner, "%s has %u arguments, expected %u", what, blk->nargs, n);
    for (uint32_t i = 0; i < n; i++)
        CHECK(ir_ty_eq(V->f->vals[blk->args[i]].ty, tys[i]), owner, "%s argument %u is %s, expected %s", what, i,
              tystr(V, V->f->vals[blk->args[i]].ty), tystr(V, tys[i]));
    return true;
}

/* The terminator's operands against the types its owner expects. */
static bool check_term(Verifier *V, uint32_t owner, uint32_t t, uint32_t skip, const IrType *tys, uint32_t n,
                       const char *what)
{
    const IrOp *op = &V->f->ops[t];
    CHECK(op->nopnd == skip + n, t, "%s passes %u values, expected %u", what, op->nopnd - skip, n);
    for (uint32_t i = 0; i < n; i++)
        CHECK(ir_ty_eq(opty(V, op, skip + i), tys[i]), t, "%s value %u is %s, expected %s", what, i,
              tystr(V, opty(V, op, skip + i)), tystr(V, tys[i]));
    return true;
}

/* Types of values[first .. first+n) of an op's operands or results, into out. */
static IrType *types_of(Verifier *V, const IrOp *op, bool results, uint32_t first, uint32_t n)
{
    IrType *t = tl_xcalloc(n + 1, sizeof(IrType));
    for (uint32_t i = 0; i < n; i++) t[i] = results ? resty(V, op, first + i) : opty(V, op, first + i);
    return t;
}

static bool check_regions(Verifier *V, uint32_t id)
{
    IrFunc *f = V->f;
    const IrOp *op = &f->ops[id];
    IrOpcode opc = (IrOpcode)op->opc;
    for (uint32_t r = 0; r < op->nregion; r++) {
        IrBlk rb = op->region[r];
        CHECK(rb && rb < f->nblocks && f->blocks[rb].parent_op == id, id, "region %u is not a block of this op", r);
    }
    IrType *res = types_of(V, op, true, 0, op->nres);
    bool ok = true;
    uint32_t t = NOOP;
    if (opc == IR_FOR) {
        IrType *args = tl_xcalloc(op->nres + 1, sizeof(IrType));
        args[0] = opty(V, op, 0);
        memcpy(args + 1, res, sizeof(IrType) * op->nres);
        ok = check_args(V, id, op->region[0], args, op->nres + 1, "the loop body") &&
             walk(V, op->region[0], id, IR_YIELD, &t) && check_term(V, id, t, 0, res, op->nres, "the loop's yield");
        free(args);
    } else if (opc == IR_IF) {
        for (uint32_t r = 0; r < 2 && ok; r++) {
            const char *what = r ? "the else branch" : "the then branch";
            ok = check_args(V, id, op->region[r], NULL, 0, what) && walk(V, op->region[r], id, IR_YIELD, &t) &&
                 check_term(V, id, t, 0, res, op->nres, r ? "the else branch's yield" : "the then branch's yield");
        }
    } else if (opc == IR_WHILE) {
        IrType *init = types_of(V, op, false, 0, op->nopnd);
        const IrBlock *after = &f->blocks[op->region[1]];
        IrType *next = tl_xcalloc(after->nargs + 1, sizeof(IrType));
        for (uint32_t i = 0; i < after->nargs; i++) next[i] = f->vals[after->args[i]].ty;
        ok = check_args(V, id, op->region[0], init, op->nopnd, "the 'before' region");
        if (ok) ok = walk(V, op->region[0], id, IR_CONDITION, &t);
        if (ok) {
            const IrOp *c = &f->ops[t];
            IrType ct = c->nopnd ? opty(V, c, 0) : (IrType){0};
            ok = c->nopnd >= 1 && is_i1(ct) && ir_ty_is_scalar(ct);
            if (!ok) bad(V, t, "condition is %s, not an i1 scalar", tystr(V, ct));
        }
        if (ok) ok = check_term(V, id, t, 1, next, after->nargs, "the condition");
        if (ok && op->nres != after->nargs) ok = bad(V, id, "%u results, but the condition forwards %u values",
                                                      op->nres, after->nargs);
        for (uint32_t i = 0; ok && i < op->nres; i++)
            if (!ir_ty_eq(res[i], next[i]))
                ok = bad(V, id, "result %u is %s, the condition forwards %s", i, tystr(V, res[i]), tystr(V, next[i]));
        if (ok) ok = walk(V, op->region[1], id, IR_YIELD, &t) && check_term(V, id, t, 0, init, op->nopnd, "the 'after' region's yield");
        free(next);
        free(init);
    }
    free(res);
    return ok;
}

static bool check_counts(Verifier *V, uint32_t id)
{
    const IrOp *op = &V->f->ops[id];
    CHECK(op->opc < IR_NUM_OPS, id, "unknown opcode %u", op->opc);
    const IrOpInfo *in = &ir_opinfo[op->opc];
    CHECK(op->nopnd >= (uint32_t)in->min_opnd && (in->max_opnd < 0 || op->nopnd <= (uint32_t)in->max_opnd), id,
          "%u operands (expected %d to %d)", op->nopnd, in->min_opnd, in->max_opnd);
    CHECK(in->nres < 0 || op->nres == (uint32_t)in->nres, id, "%u results (expected %d)", op->nres, in->nres);
    CHECK(op->nregion == in->nregion, id, "%u regions (expected %u)", op->nregion, in->nregion);
    CHECK((uint64_t)op->opnd + op->nopnd <= V->f->nopnds, id, "operand list out of range");
    CHECK(op->nres == 0 || (op->res && (uint64_t)op->res + op->nres <= V->f->nvals), id, "results out of range");
    for (uint32_t i = 0; i < op->nres; i++) {
        const IrValue *v = &V->f->vals[op->res + i];
        CHECK(!v->is_arg && v->def == id && v->idx == i, id, "result %u does not name this op as its definition", i);
    }
    return true;
}

/* Walks block b (owned by op `owner`, NOOP for body and grid), which must end in `term`. */
static bool walk(Verifier *V, IrBlk b, uint32_t owner, IrOpcode term, uint32_t *term_id)
{
    IrFunc *f = V->f;
    const IrBlock *blk = &f->blocks[b];
    for (uint32_t i = 0; i < blk->nargs; i++) {
        IrVal a = blk->args[i];
        CHECK(a && a < f->nvals && f->vals[a].is_arg && f->vals[a].def == b, owner, "block argument %u is malformed", i);
        if (!check_type(V, owner, f->vals[a].ty, "a block argument")) return false;
        if (!check_layout(V, owner, a, "a block argument")) return false;
        V->visible[a] = 1;
    }
    CHECK(blk->nops > 0, owner, "a block is empty (it must end in '%s')", ir_opinfo[term].name);
    bool ok = true;
    for (uint32_t k = 0; k < blk->nops && ok; k++) {
        uint32_t id = blk->ops[k];
        CHECK(id < f->nops, owner, "block lists op %u, which does not exist", id);
        const IrOp *op = &f->ops[id];
        CHECK(!op->dead, id, "a dead op is still in a block");
        CHECK(op->parent == b, id, "op lists block %u as its parent, but is in block %u", op->parent, b);
        CHECK(!V->placed[id], id, "op appears twice");
        V->placed[id] = 1;
        if (!check_counts(V, id)) return false;
        for (uint32_t i = 0; i < op->nopnd; i++) {
            IrVal v = ir_opnd(f, op, i);
            CHECK(v && v < f->nvals, id, "operand %u is not a value", i);
            CHECK(V->visible[v], id, "operand %u is used where it is not defined (it does not dominate this use)", i);
        }
        bool is_term = ir_opinfo[op->opc].flags & IR_TERM;
        bool last = k + 1 == blk->nops;
        CHECK(!is_term || last, id, "terminator before the end of its block");
        CHECK(!last || op->opc == (uint16_t)term, id, "block ends in '%s', expected '%s'", ir_opinfo[op->opc].name,
              ir_opinfo[term].name);
        for (uint32_t i = 0; i < op->nres; i++)
            if (!check_type(V, id, f->vals[op->res + i].ty, "a result") || !check_layout(V, id, op->res + i, "a result"))
                return false;
        ok = check_op(V, id) && check_regions(V, id);
        for (uint32_t i = 0; i < op->nres; i++) V->visible[op->res + i] = 1;
        if (last) *term_id = id;
    }
    /* leaving the block: its values go out of scope */
    for (uint32_t i = 0; i < blk->nargs; i++) V->visible[blk->args[i]] = 0;
    for (uint32_t k = 0; k < blk->nops; k++) {
        const IrOp *op = &f->ops[blk->ops[k]];
        for (uint32_t i = 0; i < op->nres; i++) V->visible[op->res + i] = 0;
    }
    return ok;
}

bool ir_verify(IrFunc *f, Diag *d, const char *after)
{
    Verifier V = {0};
    V.f = f;
    V.d = d;
    V.after = after;
    V.visible = tl_xcalloc(f->nvals, 1);
    V.placed = tl_xcalloc(f->nops, 1);
    bool ok = true;
    uint32_t t = NOOP;
    if (f->warps != 0 && (!is_pow2(f->warps) || f->warps > 32)) {
        /* layouts have log2(warps) warp bits (lang: a power of two from 1 to 32) */
        ok = bad(&V, NOOP, "warps(%d) is not a power of two from 1 to 32", f->warps);
    } else if (!f->body || f->body >= f->nblocks || f->blocks[f->body].parent_op != UINT32_MAX) {
        ok = bad(&V, NOOP, "the kernel has no body block");
    } else {
        IrType *ptys = tl_xcalloc(f->nparams + 1, sizeof(IrType));
        for (uint32_t i = 0; i < f->nparams; i++) ptys[i] = f->params[i].ty;
        ok = check_args(&V, NOOP, f->body, ptys, f->nparams, "the kernel body") && walk(&V, f->body, NOOP, IR_RETURN, &t);
        if (ok && f->grid) {
            ok = f->grid < f->nblocks && f->blocks[f->grid].parent_op == UINT32_MAX;
            if (!ok) bad(&V, NOOP, "the grid is not a top-level block");
            V.in_grid = true;
            if (ok) ok = check_args(&V, NOOP, f->grid, ptys, f->nparams, "the grid") &&
                         walk(&V, f->grid, NOOP, IR_YIELD, &t);
            V.in_grid = false;
            if (ok) {
                const IrOp *y = &f->ops[t];
                ok = y->nopnd >= 1 && y->nopnd <= 3;
                if (!ok) bad(&V, t, "the grid yields %u values, expected 1 to 3", y->nopnd);
                for (uint32_t i = 0; ok && i < y->nopnd; i++)
                    if (!is_int_scalar(opty(&V, y, i))) ok = bad(&V, t, "grid size %u is %s, not an integer scalar", i,
                                                                 tystr(&V, opty(&V, y, i)));
            }
        }
        if (ok && f->requires) {
            ok = f->requires < f->nblocks && f->blocks[f->requires].parent_op == UINT32_MAX;
            if (!ok) bad(&V, NOOP, "the requires block is not a top-level block");
            V.in_grid = true;
            if (ok) ok = check_args(&V, NOOP, f->requires, ptys, f->nparams, "the requires block") &&
                         walk(&V, f->requires, NOOP, IR_YIELD, &t);
            V.in_grid = false;
            if (ok) {
                const IrOp *y = &f->ops[t];
                ok = y->nopnd == f->nreq && f->nreq >= 1;
                if (!ok) bad(&V, t, "the requires block yields %u values for %u messages", y->nopnd, f->nreq);
                for (uint32_t i = 0; ok && i < y->nopnd; i++) {
                    IrType ty = opty(&V, y, i);
                    if (!is_int_scalar(ty) || ty.dt != DT_I1)
                        ok = bad(&V, t, "requires condition %u is %s, not an i1 scalar", i, tystr(&V, ty));
                }
            }
        } else if (ok && f->nreq) {
            ok = bad(&V, NOOP, "%u requires messages without a requires block", f->nreq);
        }
        free(ptys);
    }
    /* ops leave their block only through ir_op_erase, which marks them dead */
    for (uint32_t id = 0; ok && id < f->nops; id++)
        if (!f->ops[id].dead && !V.placed[id]) ok = bad(&V, id, "op is in no block but not marked dead");
    free(V.visible);
    free(V.placed);
    return ok;
}

bool ir_verify_module(IrModule *m, Diag *d, const char *after)
{
    bool ok = true;
    for (uint32_t i = 0; i < m->nfuncs; i++) ok = ir_verify(m->funcs[i], d, after) && ok;
    return ok;
}
