/* sema_types.c: the type rules of SEMANTICS.md that need no IR: promotion of
 * element types, NumPy broadcasting of shapes, literal range checks, tile shape
 * limits, and resolution of type syntax (`ptr<T>`, `tensor<T, 2>`, `tile<T>[..]`).
 */
#include <string.h>

#include "lower_int.h"

DType sema_promote(DType a, DType b)
{
    if (a == b) return a;
    /* fp8 with anything else (an integer, another float, the other fp8) is computed in f32 */
    if (a == DT_F8E4M3 || a == DT_F8E5M2 || b == DT_F8E4M3 || b == DT_F8E5M2) return DT_F32;
    bool fa = dt_is_float(a), fb = dt_is_float(b);
    if (fa != fb) return fa ? a : b;            /* integer with float: the float */
    if (!fa) {
        if (a == DT_I1) return b;
        if (b == DT_I1) return a;
        if (dt_bits[a] != dt_bits[b]) return dt_bits[a] > dt_bits[b] ? a : b;
        return dt_is_unsigned(a) ? a : b;       /* equal width, mixed sign: unsigned */
    }
    if (dt_bits[a] != dt_bits[b]) return dt_bits[a] > dt_bits[b] ? a : b;
    return DT_F32;                              /* f16+bf16 */
}

bool sema_int_fits(int64_t v, DType dt)
{
    int bits = dt_bits[dt];
    if (dt == DT_I1) return v == 0 || v == 1;
    if (dt_is_float(dt)) return true;
    if (dt_is_signed(dt)) {
        if (bits >= 64) return true;
        int64_t lim = (int64_t)1 << (bits - 1);
        return v >= -lim && v < lim;
    }
    if (v < 0) return false;
    return bits >= 64 || v < ((int64_t)1 << bits);
}

bool sema_is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

bool sema_broadcast_shape(IrType a, IrType b, IrType *out)
{
    int r = TL_MAX(a.rank, b.rank);
    int32_t dims[IR_MAXRANK];
    for (int k = 0; k < r; k++) {
        int ia = k - (r - a.rank), ib = k - (r - b.rank);
        int32_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        dims[k] = da == 1 ? db : da;
    }
    *out = ir_ty_tile((DType)a.dt, false, r, dims);
    return true;
}

const char *sema_ty_str(Lower *L, IrType t)
{
    StrBuf b = {0};
    ir_ty_print(&b, t);
    const char *s = arena_strdup(&L->arena, b.s ? b.s : "");
    sb_free(&b);
    return s;
}

const char *sema_lv_str(Lower *L, const LVal *v)
{
    switch ((LvKind)v->kind) {
    case LV_ERR: return "<error>";
    case LV_VOID: return "no value";
    case LV_VAL: return sema_ty_str(L, v->ty);
    case LV_INT: return v->is_bool ? "a boolean literal" : "an integer literal";
    case LV_FLOAT: return "a float literal";
    case LV_TYPE: return arena_printf(&L->arena, "the type %s", sema_ty_str(L, v->ty));
    case LV_TUPLE: return arena_printf(&L->arena, "a tuple of %u values", v->nitems);
    }
    return "?";
}

bool sema_check_shape(Lower *L, SrcLoc loc, const int64_t *dims, int rank)
{
    if (rank > IR_MAXRANK) {
        diag_error(L->d, loc, "tiles have at most %d dimensions, got %d", IR_MAXRANK, rank);
        return false;
    }
    int64_t n = 1;
    for (int k = 0; k < rank; k++) {
        if (!sema_is_pow2(dims[k])) {
            diag_error(L->d, loc, "tile dimension %d is %lld, not a power of two", k, (long long)dims[k]);
            return false;
        }
        if (dims[k] > FE_MAX_NUMEL || (n *= dims[k]) > FE_MAX_NUMEL) {
            diag_error(L->d, loc, "tile has more than 2^24 elements");
            return false;
        }
    }
    return true;
}

bool sema_resolve_dtype(Lower *L, const AstType *t, DType *out)
{
    IrType ty;
    if (!sema_resolve_type(L, t, &ty)) return false;
    if (ty.kind != TY_TILE || ty.rank != 0 || ty.isptr) {
        diag_error(L->d, t->loc, "expected a scalar type, got %s", sema_ty_str(L, ty));
        return false;
    }
    *out = (DType)ty.dt;
    return true;
}

static bool resolve_name(Lower *L, const AstType *t, IrType *out)
{
    DType dt;
    if (dt_from_name(t->name, strlen(t->name), &dt)) {
        *out = ir_ty_scalar(dt);
        return true;
    }
    uint32_t b = sema_lookup(L, t->name);
    if (b == UINT32_MAX) {
        sema_undeclared(L, t->loc, "type", t->name);
        return false;
    }
    if (L->binds[b].val.kind == LV_ERR) return false;
    if (L->binds[b].val.kind != LV_TYPE) {
        diag_error(L->d, t->loc, "'%s' is not a type", t->name);
        diag_note(L->d, L->binds[b].loc, "'%s' is declared here", t->name);
        return false;
    }
    *out = L->binds[b].val.ty;
    return true;
}

bool sema_resolve_type(Lower *L, const AstType *t, IrType *out)
{
    if (!t) return false;
    switch (t->kind) {
    case AT_NAME: return resolve_name(L, t, out);
    case AT_PTR: {
        DType dt;
        if (!sema_resolve_dtype(L, t->elem, &dt)) return false;
        *out = ir_ty_ptr(dt);
        return true;
    }
    case AT_TENSOR: {
        DType dt;
        int64_t rank;
        if (!sema_resolve_dtype(L, t->elem, &dt)) return false;
        if (!fe_const_int(L, t->rank, "the rank of a tensor", &rank)) return false;
        if (rank < 1 || rank > IR_MAXRANK) {
            diag_error(L->d, t->rank->loc, "tensor rank must be 1 to %d, got %lld", IR_MAXRANK, (long long)rank);
            return false;
        }
        *out = ir_ty_view(dt, (int)rank);
        return true;
    }
    case AT_TILE: {
        IrType elem;
        if (!sema_resolve_type(L, t->elem, &elem)) return false;
        if (elem.kind != TY_TILE || elem.rank != 0) {
            diag_error(L->d, t->elem->loc, "tile elements must be scalars or pointers, got %s", sema_ty_str(L, elem));
            return false;
        }
        if (t->ndims > IR_MAXRANK) {
            diag_error(L->d, t->loc, "tiles have at most %d dimensions, got %u", IR_MAXRANK, t->ndims);
            return false;
        }
        int64_t dims[IR_MAXRANK];
        int32_t d32[IR_MAXRANK];
        for (uint32_t k = 0; k < t->ndims; k++) {
            if (!fe_const_int(L, t->dims[k], "a tile dimension", &dims[k])) return false;
        }
        if (!sema_check_shape(L, t->loc, dims, (int)t->ndims)) return false;
        for (uint32_t k = 0; k < t->ndims; k++) d32[k] = (int32_t)dims[k];
        *out = ir_ty_tile((DType)elem.dt, elem.isptr, (int)t->ndims, d32);
        return true;
    }
    }
    return false;
}
