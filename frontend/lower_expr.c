/* lower_expr.c: expressions to LVals (see lower_int.h), and `fn` inlining.
 *
 * fe_expr sets the builder's location to the node's own location for the ops
 * it builds, and restores the caller's on return, so every op carries the
 * position of the AST node it comes from.  Each level of expression nesting
 * counts against FE_MAX_NEST (within one fn) and FE_MAX_TOTAL (across inlined
 * fns), and inlining against FE_MAX_NEST; past a limit the lowering reports
 * once and yields poison values, so deep inputs end in an error, never in
 * stack exhaustion.
 */
#include <string.h>

#include "lower_int.h"

bool fe_nest_enter(Lower *L, SrcLoc loc)
{
    if (L->depth - L->frame_depth >= FE_MAX_NEST || L->depth >= FE_MAX_TOTAL) {
        if (!L->depth_reported) {
            if (L->depth >= FE_MAX_TOTAL)
                diag_error(L->d, loc, "nesting deeper than %d levels, counting the fns inlined here", FE_MAX_TOTAL);
            else
                diag_error(L->d, loc, "nesting deeper than %d levels (expressions and blocks)", FE_MAX_NEST);
        }
        L->depth_reported = true;
        return false;
    }
    L->depth++;
    return true;
}

void fe_nest_leave(Lower *L) { L->depth--; }

bool fe_const_int(Lower *L, const AstNode *e, const char *what, int64_t *out)
{
    LVal v = fe_expr(L, e);
    if (v.kind == LV_ERR) return false;
    if (v.kind != LV_INT) {
        diag_error(L->d, e->loc, "%s must be a compile-time integer, got %s", what, sema_lv_str(L, &v));
        return false;
    }
    *out = v.i;
    return true;
}

bool fe_const_shape(Lower *L, const AstNode *e, const char *what, int64_t *dims, int *rank)
{
    if (e->kind != AST_LIST) {
        diag_error(L->d, e->loc, "%s must be a list of compile-time integers, such as [64, 32]", what);
        return false;
    }
    if (e->nlist > IR_MAXRANK) {
        diag_error(L->d, e->loc, "tiles have at most %d dimensions, got %u", IR_MAXRANK, e->nlist);
        return false;
    }
    for (uint32_t k = 0; k < e->nlist; k++)
        if (!fe_const_int(L, e->list[k], what, &dims[k])) return false;
    *rank = (int)e->nlist;
    return sema_check_shape(L, e->loc, dims, *rank);
}

static LVal name(Lower *L, const AstNode *e)
{
    uint32_t b = sema_lookup(L, e->name);
    if (b == UINT32_MAX) {
        sema_undeclared(L, e->loc, "name", e->name);
        return fe_err();
    }
    const Binding *p = &L->binds[b];
    if (p->kind == BIND_FN || p->kind == BIND_KERNEL) {
        diag_error(L->d, e->loc, "'%s' is a %s, not a value", e->name, sema_bind_kind_name((BindKind)p->kind));
        return fe_err();
    }
    LVal v = p->val;
    v.loc = e->loc;     /* a weak value used here becomes a CONST here */
    return v;
}

/* A.ptr; A.shape and A.stride only indexed (see view_query). */
static LVal member(Lower *L, const AstNode *e)
{
    LVal a = fe_expr(L, e->a);
    if (a.kind == LV_ERR) return a;
    if (!fe_is_view(&a)) {
        diag_error(L->d, e->loc, "'.%s' needs a tensor view, got %s", e->name, sema_lv_str(L, &a));
        return fe_err();
    }
    if (strcmp(e->name, "ptr") == 0)
        return fe_val(L, fe_emit(L, IR_VIEW_PTR, &a.v, 1, ir_ty_ptr((DType)a.ty.dt), NULL));
    if (strcmp(e->name, "shape") == 0 || strcmp(e->name, "stride") == 0)
        diag_error(L->d, e->loc, "'.%s' must be indexed with a compile-time dimension: .%s[i]", e->name, e->name);
    else
        diag_error(L->d, e->loc, "a tensor view has no member '%s' (it has ptr, shape[i], stride[i])", e->name);
    return fe_err();
}

static LVal view_query(Lower *L, const AstNode *e)
{
    const AstNode *m = e->a;
    LVal a = fe_expr(L, m->a);
    if (a.kind == LV_ERR) return a;
    if (!fe_is_view(&a)) {
        diag_error(L->d, m->loc, "'.%s' needs a tensor view, got %s", m->name, sema_lv_str(L, &a));
        return fe_err();
    }
    if (e->nlist != 1 || e->list[0]->kind == AST_SLICE || e->list[0]->kind == AST_NONE_LIT) {
        diag_error(L->d, e->loc, "'.%s' takes one compile-time index", m->name);
        return fe_err();
    }
    int64_t i;
    if (!fe_const_int(L, e->list[0], "a view dimension", &i)) return fe_err();
    if (i < -(int64_t)a.ty.rank || i >= a.ty.rank) {
        diag_error(L->d, e->list[0]->loc, "dimension %lld is out of range for %s", (long long)i,
                   sema_ty_str(L, a.ty));
        return fe_err();
    }
    if (i < 0) i += a.ty.rank;
    IrOpcode opc = m->name[1] == 'h' ? IR_VIEW_SHAPE : IR_VIEW_STRIDE;
    return fe_val(L, fe_emit_i(L, opc, &a.v, 1, ir_ty_scalar(DT_I64), i));
}

/* x[:, None] and x[None, :]: EXPAND_DIMS where None stands. */
static LVal index_sugar(Lower *L, const AstNode *e)
{
    if (e->a->kind == AST_MEMBER && (strcmp(e->a->name, "shape") == 0 || strcmp(e->a->name, "stride") == 0))
        return view_query(L, e);
    LVal x = fe_expr(L, e->a);
    if (x.kind == LV_ERR) return x;
    if (x.kind == LV_INT || x.kind == LV_FLOAT) x = fe_materialize(L, x, e->loc);
    if (x.kind != LV_VAL || x.ty.kind != TY_TILE) {
        diag_error(L->d, e->loc, "only tiles can be indexed with ':' and 'None', got %s", sema_lv_str(L, &x));
        return fe_err();
    }
    uint32_t nslice = 0, nnone = 0;
    for (uint32_t k = 0; k < e->nlist; k++) {
        const AstNode *it = e->list[k];
        if (it->kind == AST_SLICE) nslice++;
        else if (it->kind == AST_NONE_LIT) nnone++;
        else {
            diag_error(L->d, it->loc, "a tile index may only hold ':' and 'None' (use load to read elements)");
            return fe_err();
        }
    }
    if (nslice != x.ty.rank) {
        diag_error(L->d, e->loc, "index has %u ':' for a tile of rank %d (%s)", nslice, x.ty.rank,
                   sema_ty_str(L, x.ty));
        return fe_err();
    }
    if (x.ty.rank + nnone > IR_MAXRANK) {
        diag_error(L->d, e->loc, "tiles have at most %d dimensions", IR_MAXRANK);
        return fe_err();
    }
    for (uint32_t k = 0; k < e->nlist; k++) {
        if (e->list[k]->kind != AST_NONE_LIT) continue;
        IrType t = x.ty;
        memmove(&t.dims[k + 1], &t.dims[k], sizeof(int32_t) * (t.rank - k));
        t.dims[k] = 1;
        t.rank++;
        x = fe_val(L, fe_emit_i(L, IR_EXPAND_DIMS, &x.v, 1, t, (int64_t)k));
    }
    return x;
}

static LVal cast(Lower *L, const AstNode *e)
{
    LVal x = fe_expr(L, e->a);
    DType dt;
    if (!sema_resolve_dtype(L, e->type, &dt) || x.kind == LV_ERR) return fe_err();
    if (x.kind == LV_INT || x.kind == LV_FLOAT) x = fe_materialize(L, x, e->loc);
    if (x.kind != LV_VAL || x.ty.kind != TY_TILE || x.ty.isptr) {
        diag_error(L->d, e->loc, "cannot cast %s to %s", sema_lv_str(L, &x), dt_name[dt]);
        return fe_err();
    }
    if (x.ty.dt == dt) return x;
    return fe_val(L, fe_emit(L, IR_CAST, &x.v, 1, ir_ty_with_dt(x.ty, dt, false), NULL));
}

static LVal tuple(Lower *L, const AstNode *e)
{
    LVal t = {.kind = LV_TUPLE, .nitems = e->nlist};
    t.items = ARENA_ARRAY(&L->arena, LVal, e->nlist);
    bool bad = false;
    for (uint32_t k = 0; k < e->nlist; k++) {
        t.items[k] = fe_expr(L, e->list[k]);
        if (t.items[k].kind == LV_ERR) bad = true;
        else if (t.items[k].kind == LV_TUPLE || t.items[k].kind == LV_VOID || t.items[k].kind == LV_TYPE) {
            diag_error(L->d, e->list[k]->loc, "a tuple item must be a value, got %s", sema_lv_str(L, &t.items[k]));
            bad = true;
        }
    }
    return bad ? fe_err() : t;
}

static LVal call(Lower *L, const AstNode *e)
{
    uint32_t b = sema_lookup(L, e->name);
    if (b != UINT32_MAX && L->binds[b].kind == BIND_FN) return fe_call_fn(L, L->binds[b].decl, e);
    bool found;
    LVal r = fe_builtin(L, e, &found);
    if (found) return r;
    if (b != UINT32_MAX) {
        diag_error(L->d, e->loc, "'%s' is a %s, not a function", e->name, sema_bind_kind_name((BindKind)L->binds[b].kind));
        diag_note(L->d, L->binds[b].loc, "'%s' is declared here", e->name);
        return fe_err();
    }
    sema_undeclared(L, e->loc, "function", e->name);
    return fe_err();
}

static LVal expr(Lower *L, const AstNode *e)
{
    switch (e->kind) {
    case AST_INT:
        return fe_weak_uint(e->uval); /* above 2^63 - 1: u64 (lang/REFERENCE.md) */
    case AST_FLOAT: return fe_weak_float(e->fval);
    case AST_BOOL: return fe_weak_bool(e->ival != 0);
    case AST_STRING:
        diag_error(L->d, e->loc, "a string may only be the label of print or the message of assert");
        return fe_err();
    case AST_NAME: return name(L, e);
    case AST_UNARY: return fe_unary(L, e->op, fe_expr(L, e->a), e->loc);
    case AST_BINARY: {
        LVal x = fe_expr(L, e->a);
        LVal y = fe_expr(L, e->b);
        return fe_binary(L, e->op, x, y, e->loc);
    }
    case AST_CALL: return call(L, e);
    case AST_INDEX: return index_sugar(L, e);
    case AST_MEMBER: return member(L, e);
    case AST_CAST: return cast(L, e);
    case AST_TUPLE: return tuple(L, e);
    case AST_SLICE:
    case AST_NONE_LIT:
        diag_error(L->d, e->loc, "':' and 'None' may only appear inside a tile index x[...]");
        return fe_err();
    case AST_LIST:
        diag_error(L->d, e->loc, "a list [...] may only be a shape or the offsets of a builtin");
        return fe_err();
    default:
        diag_error(L->d, e->loc, "expected an expression, found %s", ast_kind_name[e->kind]);
        return fe_err();
    }
}

LVal fe_expr(Lower *L, const AstNode *e)
{
    if (!e) return fe_err();
    if (!fe_nest_enter(L, e->loc)) return fe_err();
    SrcLoc saved = L->b.loc;
    L->b.loc = e->loc;
    LVal r = expr(L, e);
    if ((r.kind == LV_INT || r.kind == LV_FLOAT) && r.loc.line == 0) r.loc = e->loc;
    L->b.loc = saved;
    fe_nest_leave(L);
    return r;
}

LVal fe_call_fn(Lower *L, const AstNode *fn, const AstNode *call_node)
{
    for (uint32_t k = 0; k < L->nactive; k++)
        if (L->active[k] == fn) {
            diag_error(L->d, call_node->loc, "recursive call of fn '%s' (fns are inlined, so recursion is not allowed)",
                       fn->name);
            diag_note(L->d, fn->loc, "'%s' is defined here", fn->name);
            return fe_err();
        }
    if (call_node->ntargs) {
        diag_error(L->d, call_node->loc, "fn '%s' takes no type arguments", fn->name);
        return fe_err();
    }
    for (uint32_t k = 0; k < call_node->nlist; k++)
        if (call_node->argnames && call_node->argnames[k]) {
            diag_error(L->d, call_node->list[k]->loc, "fn '%s' takes no named arguments", fn->name);
            return fe_err();
        }
    if (call_node->nlist != fn->nparams) {
        diag_error(L->d, call_node->loc, "fn '%s' takes %u argument%s, got %u", fn->name, fn->nparams,
                   fn->nparams == 1 ? "" : "s", call_node->nlist);
        diag_note(L->d, fn->loc, "'%s' is defined here", fn->name);
        return fe_err();
    }
    LVal *args = ARENA_ARRAY(&L->arena, LVal, call_node->nlist);
    bool bad = false;
    for (uint32_t k = 0; k < call_node->nlist; k++) {
        args[k] = fe_expr(L, call_node->list[k]);
        if (args[k].kind == LV_ERR) bad = true;
        else if (args[k].kind == LV_VOID || args[k].kind == LV_TUPLE) {
            diag_error(L->d, call_node->list[k]->loc, "argument '%s' of fn '%s' must be a value, got %s",
                       fn->params[k].name, fn->name, sema_lv_str(L, &args[k]));
            bad = true;
        }
    }
    if (bad) return fe_err();
    if (L->nactive >= FE_MAX_NEST) {
        if (!L->depth_reported)
            diag_error(L->d, call_node->loc, "fn calls inlined more than %d deep (here, fn '%s')", FE_MAX_NEST, fn->name);
        L->depth_reported = true;
        return fe_err();
    }
    VEC_PUSH(L->active, L->nactive, L->activecap, fn);
    int old_frame_depth = L->frame_depth;
    L->frame_depth = L->depth;
    uint32_t old_frame = L->frame, old_nbinds = L->nbinds;
    L->frame = L->nbinds;
    uint32_t token = sema_scope_push(L);
    for (uint32_t k = 0; k < fn->nparams && !bad; k++) {
        const AstParam *p = &fn->params[k];
        LVal v = args[k];
        if (p->type) {
            IrType t;
            const char *what = arena_printf(&L->arena, "argument '%s' of fn '%s'", p->name, fn->name);
            if (!sema_resolve_type(L, p->type, &t)) bad = true;
            else {
                SrcLoc at = call_node->list[k]->loc;
                if (v.kind == LV_VAL && !ir_ty_eq(v.ty, t)) {
                    diag_error(L->d, at, "%s must be %s, got %s", what, sema_ty_str(L, t), sema_ty_str(L, v.ty));
                    bad = true;
                } else {
                    v = fe_to_type(L, v, t, at, what);
                    bad = v.kind == LV_ERR;
                }
            }
        }
        if (sema_declare(L, p->name, BIND_PARAM, p->loc, v, fn) == UINT32_MAX) bad = true;
    }
    LVal r = bad ? fe_err() : fe_fn_body(L, fn);
    L->nbinds = old_nbinds;
    L->frame = old_frame;
    L->scope = token;
    L->nactive--;
    L->frame_depth = old_frame_depth;
    return r;
}
