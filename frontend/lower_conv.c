/* lower_conv.c: conversions and operators.
 *
 * Every implicit conversion becomes an explicit IR op: CONST for a weak value
 * given a type, CAST for a dtype change, SPLAT for scalar -> tile, EXPAND_DIMS
 * for left-padding the rank, BROADCAST for size-1 dims.  A binary op:
 *   1. folds when both operands are weak (compile-time arithmetic, wrapping);
 *   2. picks the result dtype (weak operands take the other's type; else
 *      sema_promote; fp8 arithmetic happens in f32);
 *   3. broadcasts the shapes (NumPy), converts each operand (CAST first, on the
 *      smaller shape, then SPLAT/EXPAND_DIMS/BROADCAST);
 *   4. emits one IR op whose operands share one type.
 */
#include <math.h>
#include <string.h>

#include "lower_int.h"
#include "../ir/fpconv.h"

LVal fe_err(void) { return (LVal){.kind = LV_ERR}; }
LVal fe_void(void) { return (LVal){.kind = LV_VOID}; }
LVal fe_weak_int(int64_t i) { return (LVal){.kind = LV_INT, .i = i}; }
LVal fe_weak_uint(uint64_t u) { return (LVal){.kind = LV_INT, .is_u64 = u > (uint64_t)INT64_MAX, .i = (int64_t)u}; }
LVal fe_weak_bool(bool b) { return (LVal){.kind = LV_INT, .is_bool = true, .i = b}; }
LVal fe_weak_float(double f) { return (LVal){.kind = LV_FLOAT, .f = f}; }
LVal fe_val(Lower *L, IrVal v) { return (LVal){.kind = LV_VAL, .v = v, .ty = ir_vty(L->f, v)}; }

bool fe_is_strong(const LVal *x) { return x->kind == LV_VAL; }
bool fe_is_ptr(const LVal *x) { return x->kind == LV_VAL && x->ty.kind == TY_TILE && x->ty.isptr; }
bool fe_is_view(const LVal *x) { return x->kind == LV_VAL && x->ty.kind == TY_VIEW; }
static bool is_weak(const LVal *x) { return x->kind == LV_INT || x->kind == LV_FLOAT; }
static bool is_num(const LVal *x) { return x->kind == LV_VAL && x->ty.kind == TY_TILE && !x->ty.isptr; }

IrVal fe_emit(Lower *L, IrOpcode opc, const IrVal *o, uint32_t n, IrType ty, const IrAttr *attr)
{
    return ir_build1(&L->b, opc, o, n, ty, attr);
}

IrVal fe_emit_i(Lower *L, IrOpcode opc, const IrVal *o, uint32_t n, IrType ty, int64_t i)
{
    IrAttr a;
    memset(&a, 0, sizeof a);
    a.i = i;
    return ir_build1(&L->b, opc, o, n, ty, &a);
}

static const char *shape_str(Lower *L, IrType t)
{
    StrBuf b = {0};
    sb_putc(&b, '[');
    for (int k = 0; k < t.rank; k++) sb_printf(&b, k ? ", %d" : "%d", t.dims[k]);
    sb_putc(&b, ']');
    const char *s = arena_strdup(&L->arena, b.s);
    sb_free(&b);
    return s;
}

/* Checks that x can take part in arithmetic; reports otherwise. */
static bool operand_ok(Lower *L, const LVal *x, SrcLoc loc, const char *opname)
{
    switch ((LvKind)x->kind) {
    case LV_ERR: return false;
    case LV_INT:
    case LV_FLOAT: return true;
    case LV_VAL:
        if (x->ty.kind == TY_VIEW) {
            diag_error(L->d, loc, "operator '%s' cannot take a tensor view (%s); use its .ptr, .shape or .stride",
                       opname, sema_ty_str(L, x->ty));
            return false;
        }
        return true;
    default:
        diag_error(L->d, loc, "operator '%s' needs a value, got %s", opname, sema_lv_str(L, x));
        return false;
    }
}

bool fe_weak_fits(const LVal *x, DType dt)
{
    if (x->is_u64) return dt == DT_U64 || dt_is_float(dt);
    return sema_int_fits(x->i, dt);
}

/* Integers to a float type are rounded once (fp_from_int), u64 ones as unsigned. */
static LVal const_of(Lower *L, LVal x, DType dt)
{
    SrcLoc saved = L->b.loc;
    if (x.loc.line) L->b.loc = x.loc;
    IrVal v = dt_is_float(dt) ? ir_const_float(&L->b, dt, x.kind == LV_FLOAT ? x.f : fp_from_int(dt, x.i, x.is_u64))
                              : ir_const_int(&L->b, dt, x.i);
    L->b.loc = saved;
    return fe_val(L, v);
}

LVal fe_materialize(Lower *L, LVal x, SrcLoc loc)
{
    if (x.kind == LV_FLOAT) return const_of(L, x, DT_F32);
    if (x.kind != LV_INT) return x;
    if (x.is_bool) return const_of(L, x, DT_I1);
    if (x.is_u64) return const_of(L, x, DT_U64); /* above i64's range: u64 */
    return const_of(L, x, sema_int_fits(x.i, DT_I32) ? DT_I32 : DT_I64);
}

LVal fe_to_dtype(Lower *L, LVal x, DType dt, SrcLoc loc)
{
    if (x.kind == LV_INT) {
        if (dt_is_int(dt) && !fe_weak_fits(&x, dt)) {
            if (x.is_u64)
                diag_error(L->d, loc, "integer literal %llu does not fit in %s", (unsigned long long)x.i, dt_name[dt]);
            else
                diag_error(L->d, loc, "integer literal %lld does not fit in %s", (long long)x.i, dt_name[dt]);
            return fe_err();
        }
        return const_of(L, x, dt);
    }
    if (x.kind == LV_FLOAT) {
        if (dt_is_float(dt)) return const_of(L, x, dt);
        x = fe_materialize(L, x, loc);
    }
    if (x.kind != LV_VAL) return x.kind == LV_ERR ? x : fe_err();
    if (x.ty.kind != TY_TILE || x.ty.isptr) {
        diag_error(L->d, loc, "cannot convert %s to %s", sema_ty_str(L, x.ty), dt_name[dt]);
        return fe_err();
    }
    if (x.ty.dt == dt) return x;
    return fe_val(L, fe_emit(L, IR_CAST, &x.v, 1, ir_ty_with_dt(x.ty, dt, false), NULL));
}

LVal fe_to_shape(Lower *L, LVal x, IrType shape, SrcLoc loc, const char *what)
{
    if (is_weak(&x)) x = fe_materialize(L, x, loc);
    if (x.kind != LV_VAL) return x.kind == LV_ERR ? x : fe_err();
    if (x.ty.kind != TY_TILE) {
        diag_error(L->d, loc, "%s must be a tile, got %s", what, sema_ty_str(L, x.ty));
        return fe_err();
    }
    IrType target = ir_ty_tile((DType)x.ty.dt, x.ty.isptr, shape.rank, shape.dims);
    if (ir_ty_eq(x.ty, target)) return x;
    if (x.ty.rank == 0) return fe_val(L, fe_emit(L, IR_SPLAT, &x.v, 1, target, NULL));
    bool ok = x.ty.rank <= target.rank;
    for (int k = 0; ok && k < x.ty.rank; k++) {
        int32_t have = x.ty.dims[k], want = target.dims[k + target.rank - x.ty.rank];
        ok = have == want || have == 1;
    }
    if (!ok) {
        diag_error(L->d, loc, "%s has shape %s, which does not broadcast to %s", what, shape_str(L, x.ty),
                   shape_str(L, target));
        return fe_err();
    }
    while (x.ty.rank < target.rank) {
        IrType t = x.ty;
        memmove(&t.dims[1], &t.dims[0], sizeof(int32_t) * t.rank);
        t.dims[0] = 1;
        t.rank++;
        x = fe_val(L, fe_emit_i(L, IR_EXPAND_DIMS, &x.v, 1, t, 0));
    }
    if (!ir_ty_eq(x.ty, target)) x = fe_val(L, fe_emit(L, IR_BROADCAST, &x.v, 1, target, NULL));
    return x;
}

LVal fe_to_type(Lower *L, LVal x, IrType target, SrcLoc loc, const char *what)
{
    if (x.kind == LV_ERR) return x;
    if (target.kind == TY_VIEW || (target.kind == TY_TILE && target.isptr)) {
        if (x.kind != LV_VAL || x.ty.kind != target.kind || x.ty.isptr != target.isptr || x.ty.dt != target.dt ||
            (target.kind == TY_VIEW && x.ty.rank != target.rank)) {
            diag_error(L->d, loc, "%s must be %s, got %s", what, sema_ty_str(L, target), sema_lv_str(L, &x));
            return fe_err();
        }
        return target.kind == TY_VIEW ? x : fe_to_shape(L, x, target, loc, what);
    }
    if (!is_weak(&x) && !is_num(&x)) {
        diag_error(L->d, loc, "%s must be %s, got %s", what, sema_ty_str(L, target), sema_lv_str(L, &x));
        return fe_err();
    }
    x = fe_to_dtype(L, x, (DType)target.dt, loc);
    if (x.kind != LV_VAL) return x;
    return fe_to_shape(L, x, target, loc, what);
}

LVal fe_to_bool(Lower *L, LVal x, SrcLoc loc, const char *what)
{
    if (x.kind == LV_ERR) return x;
    if (x.kind == LV_INT) {
        LVal b = fe_weak_bool(x.i != 0);
        b.loc = x.loc;
        return const_of(L, b, DT_I1);
    }
    if (!is_num(&x) || dt_is_float((DType)x.ty.dt)) {
        diag_error(L->d, loc, "%s must be a boolean (i1) or an integer, got %s", what, sema_lv_str(L, &x));
        return fe_err();
    }
    if (x.ty.dt == DT_I1) return x;
    LVal zero = fe_to_shape(L, const_of(L, fe_weak_int(0), (DType)x.ty.dt), x.ty, loc, what);
    IrVal o[2] = {x.v, zero.v};
    return fe_val(L, fe_emit_i(L, IR_CMP, o, 2, ir_ty_with_dt(x.ty, DT_I1, false), CMP_NE));
}

/* ---- compile-time folding -------------------------------------------------- */

static bool is_cmp(int op) { return op >= OP_EQ && op <= OP_GE; }
static bool is_bitwise(int op) { return op >= OP_AND && op <= OP_SHR; }

/* A constant expression with an operand above 2^63 - 1 is computed in u64, as
 * C computes with an unsigned long long literal: wrapping modulo 2^64, and
 * division, remainder, >> and comparisons unsigned. */
static LVal fold_u64(Lower *L, int op, uint64_t a, uint64_t b, SrcLoc loc)
{
    switch (op) {
    case OP_ADD: return fe_weak_uint(a + b);
    case OP_SUB: return fe_weak_uint(a - b);
    case OP_MUL: return fe_weak_uint(a * b);
    case OP_DIV:
    case OP_MOD:
        if (b == 0) {
            diag_error(L->d, loc, "division by zero in a constant expression");
            return fe_err();
        }
        return fe_weak_uint(op == OP_DIV ? a / b : a % b);
    case OP_AND: return fe_weak_uint(a & b);
    case OP_OR: return fe_weak_uint(a | b);
    case OP_XOR: return fe_weak_uint(a ^ b);
    case OP_SHL: return fe_weak_uint(b >= 64 ? 0 : a << b);
    case OP_SHR: return fe_weak_uint(b >= 64 ? 0 : a >> b);
    case OP_EQ: return fe_weak_bool(a == b);
    case OP_NE: return fe_weak_bool(a != b);
    case OP_LT: return fe_weak_bool(a < b);
    case OP_LE: return fe_weak_bool(a <= b);
    case OP_GT: return fe_weak_bool(a > b);
    case OP_GE: return fe_weak_bool(a >= b);
    case OP_LAND: return fe_weak_bool(a && b);
    case OP_LOR: return fe_weak_bool(a || b);
    }
    return fe_err();
}

static LVal fold_int(Lower *L, int op, LVal x, LVal y, SrcLoc loc)
{
    if (x.is_u64 || y.is_u64) return fold_u64(L, op, (uint64_t)x.i, (uint64_t)y.i, loc);
    int64_t a = x.i, b = y.i;
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    bool both_bool = x.is_bool && y.is_bool;
    switch (op) {
    case OP_ADD: return fe_weak_int((int64_t)(ua + ub));
    case OP_SUB: return fe_weak_int((int64_t)(ua - ub));
    case OP_MUL: return fe_weak_int((int64_t)(ua * ub));
    case OP_DIV:
    case OP_MOD:
        if (b == 0) {
            diag_error(L->d, loc, "division by zero in a constant expression");
            return fe_err();
        }
        if (a == INT64_MIN && b == -1) return fe_weak_int(op == OP_DIV ? INT64_MIN : 0);
        return fe_weak_int(op == OP_DIV ? a / b : a % b);
    case OP_AND: { LVal r = fe_weak_int((int64_t)(ua & ub)); r.is_bool = both_bool; return r; }
    case OP_OR: { LVal r = fe_weak_int((int64_t)(ua | ub)); r.is_bool = both_bool; return r; }
    case OP_XOR: { LVal r = fe_weak_int((int64_t)(ua ^ ub)); r.is_bool = both_bool; return r; }
    case OP_SHL: return fe_weak_int(b < 0 || b >= 64 ? 0 : (int64_t)(ua << b));
    case OP_SHR: return fe_weak_int(b < 0 || b >= 64 ? (a < 0 ? -1 : 0) : a >> b);
    case OP_EQ: return fe_weak_bool(a == b);
    case OP_NE: return fe_weak_bool(a != b);
    case OP_LT: return fe_weak_bool(a < b);
    case OP_LE: return fe_weak_bool(a <= b);
    case OP_GT: return fe_weak_bool(a > b);
    case OP_GE: return fe_weak_bool(a >= b);
    case OP_LAND: return fe_weak_bool(a && b);
    case OP_LOR: return fe_weak_bool(a || b);
    }
    return fe_err();
}

static LVal fold(Lower *L, int op, LVal x, LVal y, SrcLoc loc)
{
    if (x.kind == LV_INT && y.kind == LV_INT) return fold_int(L, op, x, y, loc);
    if (is_bitwise(op) || op == OP_LAND || op == OP_LOR) {
        diag_error(L->d, loc, "operator '%s' needs integer operands, got a float literal", ast_op_name[op]);
        return fe_err();
    }
    double a = x.kind == LV_FLOAT ? x.f : x.is_u64 ? (double)(uint64_t)x.i : (double)x.i;
    double b = y.kind == LV_FLOAT ? y.f : y.is_u64 ? (double)(uint64_t)y.i : (double)y.i;
    switch (op) {
    case OP_ADD: return fe_weak_float(a + b);
    case OP_SUB: return fe_weak_float(a - b);
    case OP_MUL: return fe_weak_float(a * b);
    case OP_DIV: return fe_weak_float(a / b);
    case OP_MOD: return fe_weak_float(fmod(a, b));
    case OP_EQ: return fe_weak_bool(a == b);
    case OP_NE: return fe_weak_bool(a != b);
    case OP_LT: return fe_weak_bool(a < b);
    case OP_LE: return fe_weak_bool(a <= b);
    case OP_GT: return fe_weak_bool(a > b);
    case OP_GE: return fe_weak_bool(a >= b);
    }
    return fe_err();
}

/* ---- operators ----------------------------------------------------------- */

static const IrOpcode arith_opc[] = {
    [OP_ADD] = IR_ADD, [OP_SUB] = IR_SUB, [OP_MUL] = IR_MUL, [OP_DIV] = IR_DIV, [OP_MOD] = IR_REM,
    [OP_AND] = IR_AND, [OP_OR] = IR_OR, [OP_XOR] = IR_XOR, [OP_SHL] = IR_SHL, [OP_SHR] = IR_SHR,
};
static const IrCmp cmp_pred[] = {
    [OP_EQ] = CMP_EQ, [OP_NE] = CMP_NE, [OP_LT] = CMP_LT, [OP_LE] = CMP_LE, [OP_GT] = CMP_GT, [OP_GE] = CMP_GE,
};

static bool is_fp8(DType t) { return t == DT_F8E4M3 || t == DT_F8E5M2; }

/* The dtype a weak value takes beside a strong dtype dt. */
static DType weak_beside(const LVal *w, DType dt)
{
    if (w->kind == LV_FLOAT && dt_is_int(dt)) return DT_F32;
    return dt;
}

/* Pointer arithmetic: ptr (+|-) integer, integer + ptr. */
static LVal ptr_arith(Lower *L, int op, LVal p, LVal off, SrcLoc loc)
{
    if (off.kind == LV_FLOAT || (off.kind == LV_VAL && (off.ty.isptr || dt_is_float((DType)off.ty.dt)))) {
        diag_error(L->d, loc, "pointer arithmetic needs an integer offset, got %s", sema_lv_str(L, &off));
        return fe_err();
    }
    if (off.kind == LV_INT) {
        if (op == OP_SUB) {
            off.i = (int64_t)(0 - (uint64_t)off.i); /* a u64 offset negates modulo 2^64 */
            off.is_u64 = off.is_u64 && (uint64_t)off.i > (uint64_t)INT64_MAX;
        }
        off = fe_materialize(L, off, loc);
    } else if (op == OP_SUB) {
        off = fe_val(L, fe_emit(L, IR_NEG, &off.v, 1, off.ty, NULL));
    }
    IrType shape;
    if (!sema_broadcast_shape(p.ty, off.ty, &shape)) {
        diag_error(L->d, loc, "shapes %s and %s of '%s' do not broadcast", shape_str(L, p.ty), shape_str(L, off.ty),
                   ast_op_name[op]);
        return fe_err();
    }
    p = fe_to_shape(L, p, shape, loc, "the pointer");
    off = fe_to_shape(L, off, shape, loc, "the offset");
    if (p.kind != LV_VAL || off.kind != LV_VAL) return fe_err();
    IrVal o[2] = {p.v, off.v};
    return fe_val(L, fe_emit(L, IR_ADDPTR, o, 2, p.ty, NULL));
}

bool fe_unify(Lower *L, LVal *xs, int n, SrcLoc loc, const char *what, bool arith)
{
    bool any_strong = false, any_float = false, any_ptr = false;
    DType dt = DT_I32;
    IrType shape = ir_ty_scalar(DT_I32);
    for (int k = 0; k < n; k++) {
        if (xs[k].kind == LV_ERR) return false;
        if (!is_weak(&xs[k]) && !(xs[k].kind == LV_VAL && xs[k].ty.kind == TY_TILE)) {
            diag_error(L->d, loc, "%s needs values, got %s", what, sema_lv_str(L, &xs[k]));
            return false;
        }
        if (xs[k].kind == LV_FLOAT) any_float = true;
        if (xs[k].kind != LV_VAL) continue;
        if (xs[k].ty.isptr) any_ptr = true;
        dt = any_strong ? sema_promote(dt, (DType)xs[k].ty.dt) : (DType)xs[k].ty.dt;
        any_strong = true;
        if (!sema_broadcast_shape(shape, xs[k].ty, &shape)) {
            diag_error(L->d, loc, "the operands of %s have shapes that do not broadcast (%s and %s)", what,
                       shape_str(L, shape), shape_str(L, xs[k].ty));
            return false;
        }
    }
    if (any_ptr) {
        for (int k = 0; k < n; k++)
            if (arith || !fe_is_ptr(&xs[k]) || xs[k].ty.dt != xs[0].ty.dt) {
                diag_error(L->d, loc, "%s cannot mix pointers with other values", what);
                return false;
            }
        for (int k = 0; k < n; k++) xs[k] = fe_to_shape(L, xs[k], shape, loc, what);
        return true;
    }
    if (!any_strong) dt = any_float ? DT_F32 : DT_I32;
    else if (any_float && dt_is_int(dt)) dt = DT_F32;
    if (arith && is_fp8(dt)) dt = DT_F32;
    for (int k = 0; k < n; k++) {
        xs[k] = fe_to_dtype(L, xs[k], dt, loc);
        if (xs[k].kind != LV_VAL) return false;
        xs[k] = fe_to_shape(L, xs[k], shape, loc, what);
        if (xs[k].kind != LV_VAL) return false;
    }
    return true;
}

LVal fe_binary(Lower *L, int op, LVal x, LVal y, SrcLoc loc)
{
    const char *opname = ast_op_name[op];
    if (!operand_ok(L, &x, loc, opname) || !operand_ok(L, &y, loc, opname)) return fe_err();
    if (is_weak(&x) && is_weak(&y)) return fold(L, op, x, y, loc);
    if (op == OP_LAND || op == OP_LOR) {
        x = fe_to_bool(L, x, loc, "an operand of '&&' or '||'");
        y = fe_to_bool(L, y, loc, "an operand of '&&' or '||'");
        if (x.kind != LV_VAL || y.kind != LV_VAL) return fe_err();
        LVal xy[2] = {x, y};
        if (!fe_unify(L, xy, 2, loc, "'&&' or '||'", false)) return fe_err();
        IrVal o[2] = {xy[0].v, xy[1].v};
        return fe_val(L, fe_emit(L, op == OP_LAND ? IR_AND : IR_OR, o, 2, xy[0].ty, NULL));
    }
    if (fe_is_ptr(&x) || fe_is_ptr(&y)) {
        if (op == OP_ADD && fe_is_ptr(&x) && !fe_is_ptr(&y)) return ptr_arith(L, op, x, y, loc);
        if (op == OP_ADD && fe_is_ptr(&y) && !fe_is_ptr(&x)) return ptr_arith(L, op, y, x, loc);
        if (op == OP_SUB && fe_is_ptr(&x) && !fe_is_ptr(&y)) return ptr_arith(L, op, x, y, loc);
        diag_error(L->d, loc, "operator '%s' cannot take %s and %s", opname, sema_lv_str(L, &x), sema_lv_str(L, &y));
        return fe_err();
    }
    DType dt;
    if (is_weak(&x)) dt = weak_beside(&x, (DType)y.ty.dt);
    else if (is_weak(&y)) dt = weak_beside(&y, (DType)x.ty.dt);
    else dt = sema_promote((DType)x.ty.dt, (DType)y.ty.dt);
    if (is_bitwise(op) && dt_is_float(dt)) {
        diag_error(L->d, loc, "operator '%s' needs integer operands, got %s and %s", opname, sema_lv_str(L, &x),
                   sema_lv_str(L, &y));
        return fe_err();
    }
    if (is_fp8(dt)) dt = DT_F32;    /* fp8 is a storage type: compute in f32 */
    IrType shape = ir_ty_scalar(dt);
    if (x.kind == LV_VAL) shape = x.ty;
    if (y.kind == LV_VAL && !sema_broadcast_shape(shape, y.ty, &shape)) {
        diag_error(L->d, loc, "shapes %s and %s of '%s' do not broadcast", shape_str(L, x.ty), shape_str(L, y.ty),
                   opname);
        return fe_err();
    }
    x = fe_to_dtype(L, x, dt, loc);
    y = fe_to_dtype(L, y, dt, loc);
    if (x.kind != LV_VAL || y.kind != LV_VAL) return fe_err();
    x = fe_to_shape(L, x, shape, loc, "the left operand");
    y = fe_to_shape(L, y, shape, loc, "the right operand");
    if (x.kind != LV_VAL || y.kind != LV_VAL) return fe_err();
    IrVal o[2] = {x.v, y.v};
    if (is_cmp(op)) return fe_val(L, fe_emit_i(L, IR_CMP, o, 2, ir_ty_with_dt(x.ty, DT_I1, false), cmp_pred[op]));
    return fe_val(L, fe_emit(L, arith_opc[op], o, 2, x.ty, NULL));
}

LVal fe_unary(Lower *L, int op, LVal x, SrcLoc loc)
{
    char opname[2] = {(char)op, 0};
    if (!operand_ok(L, &x, loc, opname)) return fe_err();
    if (op == '!') {
        if (x.kind == LV_INT) return fe_weak_bool(x.i == 0);
        x = fe_to_bool(L, x, loc, "the operand of '!'");
        if (x.kind != LV_VAL) return x;
        return fe_val(L, fe_emit(L, IR_NOT, &x.v, 1, x.ty, NULL));
    }
    if (fe_is_ptr(&x)) {
        diag_error(L->d, loc, "operator '%s' cannot take %s", opname, sema_ty_str(L, x.ty));
        return fe_err();
    }
    bool isfloat = x.kind == LV_FLOAT || (x.kind == LV_VAL && dt_is_float((DType)x.ty.dt));
    if (op == '~' && isfloat) {
        diag_error(L->d, loc, "operator '~' needs an integer operand, got %s", sema_lv_str(L, &x));
        return fe_err();
    }
    if (op == '+') return x;
    if (x.kind == LV_INT && op == '-' && x.is_u64) {
        /* -2^63 is i64's minimum; below it no integer type reaches */
        if ((uint64_t)x.i == (uint64_t)1 << 63) return fe_weak_int(INT64_MIN);
        diag_error(L->d, loc, "integer literal -%llu is too small (less than -2^63)", (unsigned long long)x.i);
        return fe_err();
    }
    if (x.kind == LV_INT && op == '-' && x.i == INT64_MIN) return fe_weak_uint((uint64_t)1 << 63);
    if (x.kind == LV_INT && x.is_u64) return fe_weak_uint(~(uint64_t)x.i);
    if (x.kind == LV_INT) return fe_weak_int(op == '-' ? (int64_t)(0 - (uint64_t)x.i) : ~x.i);
    if (x.kind == LV_FLOAT) return fe_weak_float(-x.f);
    if (is_fp8((DType)x.ty.dt)) x = fe_to_dtype(L, x, DT_F32, loc);
    return fe_val(L, fe_emit(L, op == '-' ? IR_NEG : IR_NOT, &x.v, 1, x.ty, NULL));
}
