/* lower_builtin.c: the builtins of lang/builtins.def.
 *
 * A call is handled in three steps:
 *   1. bind: positional and named arguments are matched to the builtin's
 *      parameter names (`other:`, `mask:`, `descending:`); arity errors and
 *      unknown or repeated names are reported here, naming the builtin;
 *   2. each argument is lowered by the kind the builtin wants (a value, a
 *      compile-time integer, a shape list, an offsets list, a string), and kind
 *      errors name the builtin and the argument;
 *   3. the IR op is built with the result rule of ir/ops.def.
 * `load` and `store` pick their form from the first argument: a tensor view
 * selects the block form.
 */
#include <string.h>

#include "lower_int.h"

typedef enum FeBuiltin {
#define BUILTIN(id, name, mina, maxa, targs, params) FE_BI_##id,
#include "../lang/builtins.def"
#undef BUILTIN
    FE_BI_COUNT
} FeBuiltin;

typedef struct BuiltinInfo {
    const char *name;
    int8_t min_args, max_args;
    uint8_t targs;
    const char *params;
} BuiltinInfo;

static const BuiltinInfo builtin_info[FE_BI_COUNT] = {
#define BUILTIN(id, name, mina, maxa, targs, params) {name, mina, maxa, targs, params},
#include "../lang/builtins.def"
#undef BUILTIN
};

const char *const fe_builtin_names[] = {
#define BUILTIN(id, name, mina, maxa, targs, params) name,
#include "../lang/builtins.def"
#undef BUILTIN
};
const size_t fe_nbuiltin_names = FE_BI_COUNT;

#define MAX_PARAMS 4

/* The arguments of one call, by parameter position. */
typedef struct Args {
    const char *bname;
    const AstNode *call;
    char names[MAX_PARAMS][16];
    const AstNode *node[MAX_PARAMS];    /* NULL: not given */
    int nparams;
} Args;

static const char *what(Lower *L, const Args *a, int k)
{
    return arena_printf(&L->arena, "argument '%s' of '%s'", a->names[k], a->bname);
}

static const char *arity_text(Lower *L, int min, int max)
{
    if (min == max) return arena_printf(&L->arena, "%d argument%s", min, min == 1 ? "" : "s");
    return arena_printf(&L->arena, "%d to %d arguments", min, max);
}

/* Matches the call's arguments to `params` (space-separated names). */
static bool bind(Lower *L, Args *a, const AstNode *call, const char *bname, const char *params, int min, int max)
{
    memset(a, 0, sizeof *a);
    a->bname = bname;
    a->call = call;
    for (const char *p = params; *p && a->nparams < MAX_PARAMS;) {
        size_t n = strcspn(p, " ");
        TL_ASSERT(n < sizeof a->names[0], "lower");
        memcpy(a->names[a->nparams++], p, n);
        p += n;
        while (*p == ' ') p++;
    }
    TL_ASSERT(max <= a->nparams, "lower");  /* builtins.def: max_args <= number of names */
    if (call->nlist > (uint32_t)max || call->nlist < (uint32_t)min) {
        diag_error(L->d, call->loc, "'%s' takes %s, got %u", bname, arity_text(L, min, max), call->nlist);
        return false;
    }
    int pos = 0;
    bool named_seen = false;
    for (uint32_t k = 0; k < call->nlist; k++) {
        const char *an = call->argnames ? call->argnames[k] : NULL;
        const AstNode *arg = call->list[k];
        int slot = -1;
        if (!an) {
            if (named_seen) {
                diag_error(L->d, arg->loc, "positional argument of '%s' after a named one", bname);
                return false;
            }
            slot = pos++;
        } else {
            named_seen = true;
            for (int j = 0; j < a->nparams; j++)
                if (strcmp(a->names[j], an) == 0) slot = j;
            if (slot < 0) {
                diag_error(L->d, arg->loc, "'%s' has no argument named '%s'", bname, an);
                const char *cands[MAX_PARAMS];
                for (int j = 0; j < a->nparams; j++) cands[j] = a->names[j];
                const char *best = diag_closest(an, cands, (size_t)a->nparams);
                if (best) diag_note(L->d, arg->loc, "did you mean '%s'?", best);
                return false;
            }
            if (a->node[slot]) {
                diag_error(L->d, arg->loc, "argument '%s' of '%s' is given twice", an, bname);
                return false;
            }
        }
        a->node[slot] = arg;
    }
    for (int j = 0; j < min; j++)
        if (!a->node[j]) {
            diag_error(L->d, call->loc, "missing argument '%s' of '%s'", a->names[j], bname);
            return false;
        }
    return true;
}

/* A value argument: tiles, scalars and pointers; weak values stay weak. */
static LVal value(Lower *L, const Args *a, int k)
{
    LVal v = fe_expr(L, a->node[k]);
    if (v.kind == LV_ERR || v.kind == LV_INT || v.kind == LV_FLOAT) return v;
    if (v.kind != LV_VAL || v.ty.kind != TY_TILE) {
        diag_error(L->d, a->node[k]->loc, "%s must be a tile or a scalar, got %s", what(L, a, k), sema_lv_str(L, &v));
        return fe_err();
    }
    return v;
}

/* A numeric tile argument (not a pointer); weak values become concrete. */
static LVal tile(Lower *L, const Args *a, int k)
{
    LVal v = value(L, a, k);
    if (v.kind == LV_INT || v.kind == LV_FLOAT) v = fe_materialize(L, v, a->node[k]->loc);
    if (fe_is_ptr(&v)) {
        diag_error(L->d, a->node[k]->loc, "%s must be a numeric tile, got %s", what(L, a, k), sema_ty_str(L, v.ty));
        return fe_err();
    }
    return v;
}

static LVal pointer(Lower *L, const Args *a, int k, LVal v)
{
    if (v.kind == LV_ERR || fe_is_ptr(&v)) return v;
    diag_error(L->d, a->node[k]->loc, "%s must be a pointer or a tile of pointers, got %s", what(L, a, k),
               sema_lv_str(L, &v));
    return fe_err();
}

/* An axis argument normalized into [0, rank + extra) (extra 1: expand_dims). */
static bool axis(Lower *L, const Args *a, int k, int rank, int extra, int64_t *out)
{
    int64_t ax;
    if (!fe_const_int(L, a->node[k], what(L, a, k), &ax)) return false;
    int64_t n = rank + extra;
    if (ax < -n || ax >= n) {
        diag_error(L->d, a->node[k]->loc, "%s is %lld, out of range for a tile of rank %d", what(L, a, k),
                   (long long)ax, rank);
        return false;
    }
    *out = ax < 0 ? ax + n : ax;
    return true;
}

static bool shape_arg(Lower *L, const Args *a, int k, IrType *out, DType dt)
{
    int64_t dims[IR_MAXRANK];
    int rank;
    if (!fe_const_shape(L, a->node[k], what(L, a, k), dims, &rank)) return false;
    int32_t d32[IR_MAXRANK];
    for (int j = 0; j < rank; j++) d32[j] = (int32_t)dims[j];
    *out = ir_ty_tile(dt, false, rank, d32);
    return true;
}

static IrType drop_axis(IrType t, int ax)
{
    memmove(&t.dims[ax], &t.dims[ax + 1], sizeof(int32_t) * (size_t)(t.rank - ax - 1));
    t.dims[t.rank - 1] = 0;
    t.rank--;
    return t;
}

/* Several values brought to one shape (dtype untouched); false on error. */
static bool same_shape(Lower *L, LVal *xs, int n, SrcLoc loc, const char *bname)
{
    IrType shape = ir_ty_scalar(DT_I32);
    for (int k = 0; k < n; k++) {
        if (xs[k].kind != LV_VAL) return false;
        if (!sema_broadcast_shape(shape, xs[k].ty, &shape)) {
            diag_error(L->d, loc, "the arguments of '%s' have shapes that do not broadcast", bname);
            return false;
        }
    }
    for (int k = 0; k < n; k++) {
        xs[k] = fe_to_shape(L, xs[k], shape, loc, arena_printf(&L->arena, "an argument of '%s'", bname));
        if (xs[k].kind != LV_VAL) return false;
    }
    return true;
}

/* ---- memory ------------------------------------------------------------------ */

/* The offsets list of a block access: one integer scalar per view dimension. */
static bool offsets(Lower *L, const Args *a, int k, int rank, IrVal *out)
{
    const AstNode *e = a->node[k];
    if (e->kind != AST_LIST || e->nlist != (uint32_t)rank) {
        diag_error(L->d, e->loc, "%s must be a list of %d integer offsets, one per view dimension", what(L, a, k),
                   rank);
        return false;
    }
    for (int j = 0; j < rank; j++) {
        LVal o = fe_expr(L, e->list[j]);
        if (o.kind == LV_ERR) return false;
        if (o.kind == LV_INT) o = fe_materialize(L, o, e->list[j]->loc);
        if (o.kind != LV_VAL || o.ty.kind != TY_TILE || o.ty.rank != 0 || o.ty.isptr || dt_is_float((DType)o.ty.dt)) {
            diag_error(L->d, e->list[j]->loc, "offset %d of '%s' must be an integer scalar, got %s", j, a->bname,
                       sema_lv_str(L, &o));
            return false;
        }
        out[j] = o.v;
    }
    return true;
}

static LVal block_load(Lower *L, const AstNode *call, LVal view)
{
    Args a;
    if (!bind(L, &a, call, "load", "view offsets shape other", 3, 4)) return fe_err();
    IrVal o[IR_MAXRANK + 2];
    o[0] = view.v;
    int r = view.ty.rank;
    IrType rty;
    if (!offsets(L, &a, 1, r, &o[1]) || !shape_arg(L, &a, 2, &rty, (DType)view.ty.dt)) return fe_err();
    if (rty.rank != r) {
        diag_error(L->d, a.node[2]->loc, "the block shape of 'load' has %d dimensions for a view of rank %d", rty.rank, r);
        return fe_err();
    }
    uint32_t n = (uint32_t)r + 1;
    IrAttr attr;
    memset(&attr, 0, sizeof attr);
    if (a.node[3]) {
        LVal other = fe_to_dtype(L, value(L, &a, 3), (DType)view.ty.dt, a.node[3]->loc);
        if (other.kind != LV_VAL) return fe_err();
        if (other.ty.rank != 0) {
            diag_error(L->d, a.node[3]->loc, "%s must be a scalar, got %s", what(L, &a, 3), sema_ty_str(L, other.ty));
            return fe_err();
        }
        o[n++] = other.v;
        attr.j = 1;
    }
    return fe_val(L, fe_emit(L, IR_BLOCK_LOAD, o, n, rty, &attr));
}

static LVal block_store(Lower *L, const AstNode *call, LVal view)
{
    Args a;
    if (!bind(L, &a, call, "store", "view offsets value", 3, 3)) return fe_err();
    IrVal o[IR_MAXRANK + 2];
    o[0] = view.v;
    int r = view.ty.rank;
    if (!offsets(L, &a, 1, r, &o[1])) return fe_err();
    LVal v = value(L, &a, 2);
    if (v.kind == LV_ERR) return v;
    if (v.kind != LV_VAL || v.ty.rank != r || v.ty.isptr) {
        diag_error(L->d, a.node[2]->loc, "%s must be a tile of rank %d (its shape is the block's), got %s",
                   what(L, &a, 2), r, sema_lv_str(L, &v));
        return fe_err();
    }
    v = fe_to_dtype(L, v, (DType)view.ty.dt, a.node[2]->loc);
    if (v.kind != LV_VAL) return fe_err();
    o[r + 1] = v.v;
    ir_build(&L->b, IR_BLOCK_STORE, o, (uint32_t)r + 2, NULL, 0, NULL);
    return fe_void();
}

/* load(ptrs, mask, other), store(ptrs, value, mask), atomics(ptrs, v.., mask):
 * ptrs, values and mask are brought to one shape; values to the pointee type. */
static LVal pointer_access(Lower *L, FeBuiltin bi, const AstNode *call, LVal ptrs)
{
    const BuiltinInfo *info = &builtin_info[bi];
    Args a;
    if (!bind(L, &a, call, info->name, info->params, info->min_args, info->max_args)) return fe_err();
    int mask_at = bi == FE_BI_LOAD ? 1 : a.nparams - 1;
    LVal xs[MAX_PARAMS];
    int n = 0;
    xs[n++] = pointer(L, &a, 0, ptrs);
    bool bad = xs[0].kind == LV_ERR;
    DType pointee = bad ? DT_F32 : (DType)ptrs.ty.dt;
    bool has_mask = false;
    for (int k = 1; k < a.nparams; k++) {
        if (!a.node[k]) continue;
        LVal v = value(L, &a, k);
        if (k == mask_at) {
            v = fe_to_bool(L, v, a.node[k]->loc, what(L, &a, k));
            has_mask = true;
        } else {
            if (fe_is_ptr(&v)) {
                diag_error(L->d, a.node[k]->loc, "%s must be a numeric value, got %s", what(L, &a, k),
                           sema_ty_str(L, v.ty));
                v = fe_err();
            }
            if (v.kind != LV_ERR) v = fe_to_dtype(L, v, pointee, a.node[k]->loc);
        }
        if (v.kind != LV_VAL) bad = true;
        xs[n++] = v;
    }
    if (bad || !same_shape(L, xs, n, call->loc, info->name)) return fe_err();
    IrVal o[MAX_PARAMS];
    for (int k = 0; k < n; k++) o[k] = xs[k].v;
    IrType rty = ir_ty_with_dt(xs[0].ty, pointee, false);
    switch (bi) {
    case FE_BI_LOAD:
        /* other without a mask never shows: every lane loads */
        return fe_val(L, fe_emit(L, IR_LOAD, o, has_mask ? (uint32_t)n : 1, rty, NULL));
    case FE_BI_STORE: ir_build(&L->b, IR_STORE, o, (uint32_t)n, NULL, 0, NULL); return fe_void();
    case FE_BI_ATOMIC_ADD: return fe_val(L, fe_emit(L, IR_ATOMIC_ADD, o, (uint32_t)n, rty, NULL));
    case FE_BI_ATOMIC_MAX: return fe_val(L, fe_emit(L, IR_ATOMIC_MAX, o, (uint32_t)n, rty, NULL));
    case FE_BI_ATOMIC_MIN: return fe_val(L, fe_emit(L, IR_ATOMIC_MIN, o, (uint32_t)n, rty, NULL));
    case FE_BI_ATOMIC_CAS: return fe_val(L, fe_emit(L, IR_ATOMIC_CAS, o, (uint32_t)n, rty, NULL));
    default: break;
    }
    tl_fatal("lower", "pointer_access: unexpected builtin %s", info->name);
}

/* ---- shapes -------------------------------------------------------------------- */

static LVal reshape_like(Lower *L, FeBuiltin bi, const Args *a)
{
    LVal x = tile(L, a, 0);
    IrType t;
    if (x.kind != LV_VAL || !shape_arg(L, a, 1, &t, (DType)x.ty.dt)) return fe_err();
    t = ir_ty_with_dt(t, (DType)x.ty.dt, x.ty.isptr);
    if (bi == FE_BI_BROADCAST) return fe_to_shape(L, x, t, a->node[0]->loc, what(L, a, 0));
    if (ir_ty_numel(t) != ir_ty_numel(x.ty)) {
        diag_error(L->d, a->call->loc, "'reshape' cannot change the element count (%lld to %lld)",
                   (long long)ir_ty_numel(x.ty), (long long)ir_ty_numel(t));
        return fe_err();
    }
    if (ir_ty_eq(t, x.ty)) return x;
    return fe_val(L, fe_emit(L, IR_RESHAPE, &x.v, 1, t, NULL));
}

static LVal trans(Lower *L, const Args *a)
{
    LVal x = tile(L, a, 0);
    if (x.kind != LV_VAL) return fe_err();
    int r = x.ty.rank;
    IrAttr attr;
    memset(&attr, 0, sizeof attr);
    attr.nshape = (uint8_t)r;
    if (a->node[1]) {
        int64_t perm[IR_MAXRANK];
        const AstNode *e = a->node[1];
        bool seen[IR_MAXRANK] = {false};
        if (e->kind != AST_LIST || e->nlist != (uint32_t)r) {
            diag_error(L->d, e->loc, "%s must list the %d dimensions in their new order", what(L, a, 1), r);
            return fe_err();
        }
        for (int k = 0; k < r; k++) {
            if (!fe_const_int(L, e->list[k], what(L, a, 1), &perm[k])) return fe_err();
            if (perm[k] < 0 || perm[k] >= r || seen[perm[k]]) {
                diag_error(L->d, e->list[k]->loc, "%s is not a permutation of 0..%d", what(L, a, 1), r - 1);
                return fe_err();
            }
            seen[perm[k]] = true;
            attr.shape[k] = (int32_t)perm[k];
        }
    } else {
        if (r < 2) {
            diag_error(L->d, a->call->loc, "'trans' needs a tile of rank 2 or more, got %s", sema_ty_str(L, x.ty));
            return fe_err();
        }
        for (int k = 0; k < r; k++) attr.shape[k] = r - 1 - k;  /* reverse, as numpy.transpose */
    }
    IrType t = x.ty;
    for (int k = 0; k < r; k++) t.dims[k] = x.ty.dims[attr.shape[k]];
    return fe_val(L, fe_emit(L, IR_TRANS, &x.v, 1, t, &attr));
}

/* ---- reductions and friends ---------------------------------------------- */

/* sum and cumsum accumulate narrow integers in i32 and narrow floats in f32. */
static DType acc_type(DType dt)
{
    if (dt_is_int(dt)) return dt_bits[dt] < 32 ? DT_I32 : dt;
    return dt_bits[dt] < 32 ? DT_F32 : dt;
}

static LVal reduce(Lower *L, FeBuiltin bi, const Args *a)
{
    static const IrOpcode opc[FE_BI_COUNT] = {
        [FE_BI_SUM] = IR_REDUCE_SUM, [FE_BI_MAX] = IR_REDUCE_MAX, [FE_BI_MIN] = IR_REDUCE_MIN,
        [FE_BI_ARGMAX] = IR_ARGMAX,  [FE_BI_ARGMIN] = IR_ARGMIN,  [FE_BI_CUMSUM] = IR_CUMSUM,
    };
    LVal x = tile(L, a, 0);
    if (x.kind != LV_VAL) return fe_err();
    SrcLoc loc = a->call->loc;
    if (bi == FE_BI_SUM || bi == FE_BI_CUMSUM) x = fe_to_dtype(L, x, acc_type((DType)x.ty.dt), loc);
    bool arg = bi == FE_BI_ARGMAX || bi == FE_BI_ARGMIN;
    int64_t ax = 0;
    if (a->node[1]) {
        if (x.ty.rank == 0) {
            diag_error(L->d, a->node[1]->loc, "'%s' over an axis needs a tile, got the scalar %s", a->bname,
                       sema_ty_str(L, x.ty));
            return fe_err();
        }
        if (!axis(L, a, 1, x.ty.rank, 0, &ax)) return fe_err();
    } else {
        if (x.ty.rank == 0) return arg ? fe_val(L, ir_const_int(&L->b, DT_I32, 0)) : x;
        if (x.ty.rank > 1) {   /* every axis: flatten, then reduce the one left */
            int32_t n = (int32_t)ir_ty_numel(x.ty);
            x = fe_val(L, fe_emit(L, IR_RESHAPE, &x.v, 1, ir_ty_tile((DType)x.ty.dt, false, 1, &n), NULL));
        }
    }
    IrType rty = bi == FE_BI_CUMSUM ? x.ty : drop_axis(x.ty, (int)ax);
    if (arg) rty = ir_ty_with_dt(rty, DT_I32, false);
    return fe_val(L, fe_emit_i(L, opc[bi], &x.v, 1, rty, ax));
}

static LVal sort(Lower *L, const Args *a)
{
    LVal x = tile(L, a, 0);
    int64_t ax, desc = 0;
    if (x.kind != LV_VAL) return fe_err();
    if (x.ty.rank == 0) {
        diag_error(L->d, a->node[0]->loc, "'sort' needs a tile, got the scalar %s", sema_ty_str(L, x.ty));
        return fe_err();
    }
    if (!axis(L, a, 1, x.ty.rank, 0, &ax)) return fe_err();
    if (a->node[2] && !fe_const_int(L, a->node[2], what(L, a, 2), &desc)) return fe_err();
    IrAttr attr;
    memset(&attr, 0, sizeof attr);
    attr.i = ax;
    attr.j = desc != 0;
    return fe_val(L, fe_emit(L, IR_SORT, &x.v, 1, x.ty, &attr));
}

static LVal topk(Lower *L, const Args *a)
{
    LVal x = tile(L, a, 0);
    int64_t k, ax;
    if (x.kind != LV_VAL) return fe_err();
    if (x.ty.rank == 0) {
        diag_error(L->d, a->node[0]->loc, "'topk' needs a tile, got the scalar %s", sema_ty_str(L, x.ty));
        return fe_err();
    }
    if (!fe_const_int(L, a->node[1], what(L, a, 1), &k) || !axis(L, a, 2, x.ty.rank, 0, &ax)) return fe_err();
    if (!sema_is_pow2(k) || k > x.ty.dims[ax]) {
        diag_error(L->d, a->node[1]->loc, "%s must be a power of two no larger than %d (the size of axis %lld), got %lld",
                   what(L, a, 1), x.ty.dims[ax], (long long)ax, (long long)k);
        return fe_err();
    }
    IrType rt[2];
    rt[0] = x.ty;
    rt[0].dims[ax] = (int32_t)k;
    rt[1] = ir_ty_with_dt(rt[0], DT_I32, false);
    IrAttr attr;
    memset(&attr, 0, sizeof attr);
    attr.i = ax;
    attr.j = k;
    uint32_t op = ir_build(&L->b, IR_TOPK, &x.v, 1, rt, 2, &attr);
    LVal t = {.kind = LV_TUPLE, .nitems = 2};
    t.items = ARENA_ARRAY(&L->arena, LVal, 2);
    t.items[0] = fe_val(L, ir_res(ir_op(L->f, op), 0));
    t.items[1] = fe_val(L, ir_res(ir_op(L->f, op), 1));
    return t;
}

static LVal dot(Lower *L, const Args *a)
{
    LVal x = tile(L, a, 0), y = tile(L, a, 1);
    if (x.kind != LV_VAL || y.kind != LV_VAL) return fe_err();
    DType dt = (DType)x.ty.dt;
    if (x.ty.rank != 2 || y.ty.rank != 2) {
        diag_error(L->d, a->call->loc, "'dot' needs two 2-d tiles, got %s and %s", sema_ty_str(L, x.ty),
                   sema_ty_str(L, y.ty));
        return fe_err();
    }
    bool dt_ok = dt == DT_F16 || dt == DT_BF16 || dt == DT_F8E4M3 || dt == DT_F8E5M2 || dt == DT_F32;
    if (x.ty.dt != y.ty.dt || !dt_ok) {
        diag_error(L->d, a->call->loc, "'dot' operands must share one type among f16, bf16, f8e4m3, f8e5m2 and f32; got %s and %s",
                   dt_name[x.ty.dt], dt_name[y.ty.dt]);
        return fe_err();
    }
    if (x.ty.dims[1] != y.ty.dims[0]) {
        diag_error(L->d, a->call->loc, "'dot' inner dimensions differ: %s times %s", sema_ty_str(L, x.ty),
                   sema_ty_str(L, y.ty));
        return fe_err();
    }
    int32_t mn[2] = {x.ty.dims[0], y.ty.dims[1]};
    IrType rty = ir_ty_tile(DT_F32, false, 2, mn);
    LVal acc = a->node[2] ? value(L, a, 2) : fe_weak_float(0.0);
    if (acc.kind == LV_VAL && !ir_ty_eq(acc.ty, rty)) {
        diag_error(L->d, a->node[2]->loc, "%s must be %s, got %s", what(L, a, 2), sema_ty_str(L, rty),
                   sema_ty_str(L, acc.ty));
        return fe_err();
    }
    acc = fe_to_type(L, acc, rty, a->node[2] ? a->node[2]->loc : a->call->loc, what(L, a, 2));
    if (acc.kind != LV_VAL) return fe_err();
    IrVal o[3] = {x.v, y.v, acc.v};
    return fe_val(L, fe_emit(L, IR_DOT, o, 3, rty, NULL));
}

/* ---- elementwise ------------------------------------------------------------ */

static LVal math(Lower *L, FeBuiltin bi, const Args *a)
{
    static const IrOpcode opc[FE_BI_COUNT] = {
        [FE_BI_EXP] = IR_EXP,   [FE_BI_EXP2] = IR_EXP2,       [FE_BI_LOG] = IR_LOG,   [FE_BI_LOG2] = IR_LOG2,
        [FE_BI_SQRT] = IR_SQRT, [FE_BI_RSQRT] = IR_RSQRT,     [FE_BI_ABS] = IR_ABS,   [FE_BI_SIGMOID] = IR_SIGMOID,
        [FE_BI_TANH] = IR_TANH, [FE_BI_ERF] = IR_ERF,         [FE_BI_FLOOR] = IR_FLOOR, [FE_BI_CEIL] = IR_CEIL,
    };
    LVal x = tile(L, a, 0);
    if (x.kind != LV_VAL) return fe_err();
    DType dt = (DType)x.ty.dt;
    bool keeps_int = bi == FE_BI_ABS || bi == FE_BI_FLOOR || bi == FE_BI_CEIL;
    if (dt_is_int(dt) && (bi == FE_BI_FLOOR || bi == FE_BI_CEIL)) return x;  /* identity on integers */
    if ((dt_is_int(dt) && !keeps_int) || dt == DT_F8E4M3 || dt == DT_F8E5M2) x = fe_to_dtype(L, x, DT_F32, a->call->loc);
    return fe_val(L, fe_emit(L, opc[bi], &x.v, 1, x.ty, NULL));
}

/* maximum / minimum of two weak numbers is weak (as `a + b` is): compile-time parameter defaults
 * and consts may use them.  Integers (neither a bool nor above 2^63 - 1) stay integers, a float
 * makes the result a float; a NaN is left to the IR's semantics.  The result goes to xs[0]. */
static bool fold_extremum(FeBuiltin bi, LVal *xs)
{
    bool mx = bi == FE_BI_MAXIMUM;
    for (int k = 0; k < 2; k++) {
        if (xs[k].kind != LV_INT && xs[k].kind != LV_FLOAT) return false;
        if (xs[k].kind == LV_INT && (xs[k].is_bool || xs[k].is_u64)) return false;
        if (xs[k].kind == LV_FLOAT && xs[k].f != xs[k].f) return false;
    }
    SrcLoc loc = xs[0].loc;
    if (xs[0].kind == LV_INT && xs[1].kind == LV_INT) {
        int64_t a = xs[0].i, b = xs[1].i;
        xs[0] = fe_weak_int(mx ? (a > b ? a : b) : (a < b ? a : b));
    } else {
        double a = xs[0].kind == LV_INT ? (double)xs[0].i : xs[0].f;
        double b = xs[1].kind == LV_INT ? (double)xs[1].i : xs[1].f;
        xs[0] = fe_weak_float(mx ? (a > b ? a : b) : (a < b ? a : b));
    }
    xs[0].loc = loc;
    return true;
}

static LVal elementwise(Lower *L, FeBuiltin bi, const Args *a)
{
    LVal xs[3];
    int n = bi == FE_BI_MAXIMUM || bi == FE_BI_MINIMUM ? 2 : 3;
    bool bad = false;
    for (int k = 0; k < n; k++) {
        xs[k] = value(L, a, k);
        bad |= xs[k].kind == LV_ERR;
    }
    if (bad) return fe_err();
    SrcLoc loc = a->call->loc;
    if ((bi == FE_BI_MAXIMUM || bi == FE_BI_MINIMUM) && fold_extremum(bi, xs)) return xs[0];
    if (bi == FE_BI_WHERE) {
        LVal c = fe_to_bool(L, xs[0], a->node[0]->loc, what(L, a, 0));
        if (c.kind != LV_VAL || !fe_unify(L, &xs[1], 2, loc, "'where'", false)) return fe_err();
        LVal all[3] = {c, xs[1], xs[2]};
        if (!same_shape(L, all, 3, loc, "where")) return fe_err();
        IrVal o[3] = {all[0].v, all[1].v, all[2].v};
        return fe_val(L, fe_emit(L, IR_SELECT, o, 3, all[1].ty, NULL));
    }
    const char *qname = bi == FE_BI_FMA ? "'fma'" : bi == FE_BI_MAXIMUM ? "'maximum'" : "'minimum'";
    if (!fe_unify(L, xs, n, loc, qname, true)) return fe_err();
    if (bi == FE_BI_FMA) {
        if (dt_is_int((DType)xs[0].ty.dt)) {
            /* integers follow the promotion table like `a * b + c` (wrapping; one rounding is moot) */
            IrVal m[2] = {xs[0].v, xs[1].v};
            IrVal ab = fe_emit(L, IR_MUL, m, 2, xs[0].ty, NULL);
            IrVal s[2] = {ab, xs[2].v};
            return fe_val(L, fe_emit(L, IR_ADD, s, 2, xs[0].ty, NULL));
        }
        IrVal o[3] = {xs[0].v, xs[1].v, xs[2].v};
        return fe_val(L, fe_emit(L, IR_FMA, o, 3, xs[0].ty, NULL));
    }
    IrVal o[2] = {xs[0].v, xs[1].v};
    return fe_val(L, fe_emit(L, bi == FE_BI_MAXIMUM ? IR_MAX : IR_MIN, o, 2, xs[0].ty, NULL));
}

/* ---- the rest ----------------------------------------------------------------- */

static bool string_arg(Lower *L, const Args *a, int k, uint32_t *str)
{
    const AstNode *e = a->node[k];
    if (e->kind != AST_STRING) {
        diag_error(L->d, e->loc, "%s must be a string literal", what(L, a, k));
        return false;
    }
    *str = ir_module_str(L->mod, e->str, strlen(e->str));
    return true;
}

static LVal print(Lower *L, const Args *a)
{
    const AstNode *call = a->call;
    IrAttr attr;
    memset(&attr, 0, sizeof attr);
    if (!string_arg(L, a, 0, &attr.str)) return fe_err();
    uint32_t n = call->nlist - 1;
    IrVal *o = ARENA_ARRAY(&L->arena, IrVal, n ? n : 1);
    bool bad = false;
    for (uint32_t k = 0; k < n; k++) {
        const AstNode *e = call->list[k + 1];
        if (call->argnames && call->argnames[k + 1]) {
            diag_error(L->d, e->loc, "'print' takes no named arguments besides its label");
            return fe_err();
        }
        LVal v = fe_materialize(L, fe_expr(L, e), e->loc);
        if (v.kind == LV_ERR) bad = true;
        else if (v.kind != LV_VAL || v.ty.kind != TY_TILE) {
            diag_error(L->d, e->loc, "'print' can print tiles, scalars and pointers, not %s", sema_lv_str(L, &v));
            bad = true;
        } else o[k] = v.v;
    }
    if (bad) return fe_err();
    ir_build(&L->b, IR_PRINT, o, n, NULL, 0, &attr);
    return fe_void();
}

static LVal assert_(Lower *L, const Args *a)
{
    IrAttr attr;
    memset(&attr, 0, sizeof attr);
    LVal c = fe_to_bool(L, value(L, a, 0), a->node[0]->loc, what(L, a, 0));
    if (a->node[1] && !string_arg(L, a, 1, &attr.str)) return fe_err();
    if (c.kind != LV_VAL) return fe_err();
    ir_build(&L->b, IR_ASSERT, &c.v, 1, NULL, 0, &attr);
    return fe_void();
}

static LVal bitcast(Lower *L, const Args *a, DType dt)
{
    LVal x = tile(L, a, 0);
    if (x.kind != LV_VAL) return fe_err();
    if (dt_bits[x.ty.dt] != dt_bits[dt]) {
        diag_error(L->d, a->call->loc, "'bitcast' needs types of one width: %s has %d bits, %s has %d",
                   dt_name[x.ty.dt], dt_bits[x.ty.dt], dt_name[dt], dt_bits[dt]);
        return fe_err();
    }
    if (x.ty.dt == dt) return x;
    return fe_val(L, fe_emit(L, IR_BITCAST, &x.v, 1, ir_ty_with_dt(x.ty, dt, false), NULL));
}

static LVal lower_builtin(Lower *L, FeBuiltin bi, const AstNode *call)
{
    const BuiltinInfo *info = &builtin_info[bi];
    DType targ = DT_F32;
    if (info->targs && call->ntargs != 1) {
        diag_error(L->d, call->loc, "'%s' needs one type argument, as in %s<f32>(...)", info->name, info->name);
        return fe_err();
    }
    if (!info->targs && call->ntargs) {
        diag_error(L->d, call->loc, "'%s' takes no type arguments", info->name);
        return fe_err();
    }
    if (info->targs && !sema_resolve_dtype(L, call->targs[0], &targ)) return fe_err();
    if (bi == FE_BI_LOAD || bi == FE_BI_STORE || (bi >= FE_BI_ATOMIC_ADD && bi <= FE_BI_ATOMIC_CAS)) {
        if (call->nlist == 0 || (call->argnames && call->argnames[0])) {
            diag_error(L->d, call->loc, "'%s' takes a pointer or a view as its first argument", info->name);
            return fe_err();
        }
        LVal first = fe_expr(L, call->list[0]);
        if (first.kind == LV_ERR) return first;
        if (fe_is_view(&first) && bi == FE_BI_LOAD) return block_load(L, call, first);
        if (fe_is_view(&first) && bi == FE_BI_STORE) return block_store(L, call, first);
        return pointer_access(L, bi, call, first);
    }
    Args a;
    if (bi == FE_BI_PRINT) {     /* variadic: a label, then any number of values */
        if (call->nlist < 1) {
            diag_error(L->d, call->loc, "'print' takes a label and values, got no arguments");
            return fe_err();
        }
        memset(&a, 0, sizeof a);
        a.bname = "print";
        a.call = call;
        a.node[0] = call->list[0];
        strcpy(a.names[0], "label");
        return print(L, &a);
    }
    if (!bind(L, &a, call, info->name, info->params, info->min_args, info->max_args)) return fe_err();
    switch (bi) {
    case FE_BI_PROGRAM_ID:
    case FE_BI_NUM_PROGRAMS: {
        int64_t ax;
        if (!fe_const_int(L, a.node[0], what(L, &a, 0), &ax)) return fe_err();
        if (ax < 0 || ax > 2) {
            diag_error(L->d, a.node[0]->loc, "%s must be 0, 1 or 2, got %lld", what(L, &a, 0), (long long)ax);
            return fe_err();
        }
        IrOpcode opc = bi == FE_BI_PROGRAM_ID ? IR_PROGRAM_ID : IR_NUM_PROGRAMS;
        return fe_val(L, fe_emit_i(L, opc, NULL, 0, ir_ty_scalar(DT_I32), ax));
    }
    case FE_BI_NUM_SMS:
        return fe_val(L, fe_emit(L, IR_NUM_SMS, NULL, 0, ir_ty_scalar(DT_I32), NULL));
    case FE_BI_ARANGE: {
        int64_t n;
        if (!fe_const_int(L, a.node[0], what(L, &a, 0), &n)) return fe_err();
        if (!sema_check_shape(L, a.node[0]->loc, &n, 1)) return fe_err();
        int32_t d = (int32_t)n;
        return fe_val(L, fe_emit(L, IR_ARANGE, NULL, 0, ir_ty_tile(DT_I32, false, 1, &d), NULL));
    }
    case FE_BI_ZEROS:
    case FE_BI_FULL: {
        IrType t;
        if (!shape_arg(L, &a, 0, &t, targ)) return fe_err();
        LVal v = bi == FE_BI_ZEROS ? fe_weak_int(0) : value(L, &a, 1);
        if (v.kind == LV_VAL && v.ty.rank != 0) {
            diag_error(L->d, a.node[1]->loc, "%s must be a scalar, got %s", what(L, &a, 1), sema_ty_str(L, v.ty));
            return fe_err();
        }
        return fe_to_type(L, v, t, call->loc, bi == FE_BI_ZEROS ? "'zeros'" : what(L, &a, 1));
    }
    case FE_BI_EXPAND_DIMS: {
        LVal x = tile(L, &a, 0);
        int64_t ax;
        if (x.kind != LV_VAL || !axis(L, &a, 1, x.ty.rank, 1, &ax)) return fe_err();
        if (x.ty.rank >= IR_MAXRANK) {
            diag_error(L->d, call->loc, "tiles have at most %d dimensions", IR_MAXRANK);
            return fe_err();
        }
        IrType t = x.ty;
        memmove(&t.dims[ax + 1], &t.dims[ax], sizeof(int32_t) * (size_t)(t.rank - ax));
        t.dims[ax] = 1;
        t.rank++;
        return fe_val(L, fe_emit_i(L, IR_EXPAND_DIMS, &x.v, 1, t, ax));
    }
    case FE_BI_BROADCAST:
    case FE_BI_RESHAPE: return reshape_like(L, bi, &a);
    case FE_BI_TRANS: return trans(L, &a);
    case FE_BI_DOT: return dot(L, &a);
    case FE_BI_SUM:
    case FE_BI_MAX:
    case FE_BI_MIN:
    case FE_BI_ARGMAX:
    case FE_BI_ARGMIN:
    case FE_BI_CUMSUM: return reduce(L, bi, &a);
    case FE_BI_SORT: return sort(L, &a);
    case FE_BI_TOPK: return topk(L, &a);
    case FE_BI_MAXIMUM:
    case FE_BI_MINIMUM:
    case FE_BI_WHERE:
    case FE_BI_FMA: return elementwise(L, bi, &a);
    case FE_BI_ASSERT: return assert_(L, &a);
    case FE_BI_BITCAST: return bitcast(L, &a, targ);
    default: return math(L, bi, &a);
    }
}

LVal fe_builtin(Lower *L, const AstNode *call, bool *found)
{
    for (int k = 0; k < FE_BI_COUNT; k++)
        if (strcmp(builtin_info[k].name, call->name) == 0) {
            *found = true;
            return lower_builtin(L, (FeBuiltin)k, call);
        }
    *found = false;
    return fe_err();
}
