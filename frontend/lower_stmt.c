/* lower_stmt.c: statements and structured control flow.
 *
 * A `var` is a binding whose value is replaced on assignment (SSA by
 * construction).  Control flow turns assignments into region results:
 *   1. before lowering a for/if/while, scan its bodies for assignments to `var`s
 *      visible here (an over-approximation when an inner declaration shadows
 *      one: such a value is carried unchanged, and DCE drops it);
 *   2. build the op with one carried value / result per such var, typed as the
 *      var is now (its type must not change inside: an error names both types);
 *   3. lower each region with the vars rebound to the region's arguments, end it
 *      with YIELD (or CONDITION) of their final values;
 *   4. rebind the vars to the op's results.
 * Bindings are addressed by index: lowering a body may grow the array.
 */
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

typedef struct Carried {
    uint32_t *bind;     /* binding indices of the vars carried through the op */
    IrType *ty;         /* their types on entry */
    LVal *entry;        /* their values on entry */
    uint32_t n, cap;
} Carried;

static void lower_stmt(Lower *L, const AstNode *s);

static void carry_add(Carried *c, uint32_t b, LVal v)
{
    if (c->n == c->cap) {
        uint32_t cap = c->cap ? c->cap * 2 : 8;
        c->bind = tl_xrealloc(c->bind, cap * sizeof *c->bind);
        c->ty = tl_xrealloc(c->ty, cap * sizeof *c->ty);
        c->entry = tl_xrealloc(c->entry, cap * sizeof *c->entry);
        c->cap = cap;
    }
    c->bind[c->n] = b;
    c->ty[c->n] = v.ty;
    c->entry[c->n] = v;
    c->n++;
}

static void scan(Lower *L, AstNode *const *stmts, uint32_t n, Carried *c, int depth)
{
    if (depth > FE_MAX_NEST) return;    /* the lowering reports the nesting */
    for (uint32_t k = 0; k < n; k++) {
        const AstNode *s = stmts[k];
        if (s->kind == AST_ASSIGN) {
            uint32_t b = sema_lookup(L, s->name);
            if (b == UINT32_MAX || L->binds[b].kind != BIND_VAR || L->binds[b].val.kind != LV_VAL) continue;
            bool dup = false;
            for (uint32_t j = 0; j < c->n; j++) dup |= c->bind[j] == b;
            if (!dup) carry_add(c, b, L->binds[b].val);
        } else if (s->kind == AST_IF) {
            scan(L, s->body, s->nbody, c, depth + 1);
            scan(L, s->els, s->nels, c, depth + 1);
        } else if (s->kind == AST_FOR || s->kind == AST_WHILE || s->kind == AST_BLOCK) {
            scan(L, s->body, s->nbody, c, depth + 1);
        }
    }
}

static void carried_free(Carried *c)
{
    free(c->bind);
    free(c->ty);
    free(c->entry);
}

/* The value var c->bind[k] holds at the end of a region, as c->ty[k]. */
static IrVal final_value(Lower *L, const Carried *c, uint32_t k, IrVal fallback, SrcLoc loc, const char *where)
{
    Binding *b = &L->binds[c->bind[k]];
    LVal v = b->val;
    if (v.kind == LV_INT || v.kind == LV_FLOAT)
        v = fe_to_type(L, v, c->ty[k], loc, arena_printf(&L->arena, "var '%s'", b->name));
    if (v.kind != LV_VAL) return fallback;
    if (!ir_ty_eq(v.ty, c->ty[k])) {
        if (b->assigned.line) loc = b->assigned;
        diag_error(L->d, loc, "the type of var '%s' changes %s: %s before, %s after", b->name, where,
                   sema_ty_str(L, c->ty[k]), sema_ty_str(L, v.ty));
        diag_note(L->d, b->loc, "'%s' is declared here", b->name);
        b->val = fe_err();
        return fallback;
    }
    return v.v;
}

/* Ends the current region with YIELD of the carried vars' final values; a var
 * in error yields its fallback (the region's own argument or entry value). */
static void yield(Lower *L, const Carried *c, const IrVal *fallback, SrcLoc loc, const char *where)
{
    IrVal *o = tl_xmalloc(sizeof(IrVal) * (c->n ? c->n : 1));
    for (uint32_t k = 0; k < c->n; k++) o[k] = final_value(L, c, k, fallback[k], loc, where);
    ir_build(&L->b, IR_YIELD, o, c->n, NULL, 0, NULL);
    free(o);
}

static void bind_to(Lower *L, const Carried *c, const IrVal *vals)
{
    for (uint32_t k = 0; k < c->n; k++)
        if (L->binds[c->bind[k]].val.kind != LV_ERR) L->binds[c->bind[k]].val = fe_val(L, vals[k]);
}

static IrVal *results(Lower *L, uint32_t op, uint32_t n)
{
    IrVal *r = ARENA_ARRAY(&L->arena, IrVal, n ? n : 1);
    for (uint32_t k = 0; k < n; k++) r[k] = ir_res(ir_op(L->f, op), k);
    return r;
}

static IrVal *region_args(Lower *L, IrBlk blk, const Carried *c)
{
    IrVal *r = ARENA_ARRAY(&L->arena, IrVal, c->n ? c->n : 1);
    for (uint32_t k = 0; k < c->n; k++) r[k] = ir_block_add_arg(L->f, blk, c->ty[k]);
    return r;
}

static IrVal *entry_vals(Lower *L, const Carried *c)
{
    IrVal *r = ARENA_ARRAY(&L->arena, IrVal, c->n ? c->n : 1);
    for (uint32_t k = 0; k < c->n; k++) r[k] = c->entry[k].v;
    return r;
}

/* Lowers stmts into region blk in a fresh scope, then ends it with YIELD. */
static void region(Lower *L, IrBlk blk, AstNode *const *stmts, uint32_t n, const Carried *c, const IrVal *fallback,
                   SrcLoc loc, const char *where)
{
    IrBuilder saved = L->b;
    ir_builder_at_end(&L->b, L->f, blk);
    uint32_t token = sema_scope_push(L);
    fe_stmts(L, stmts, n);
    sema_scope_pop(L, token);
    L->b.loc = loc;
    yield(L, c, fallback, loc, where);
    L->b = saved;
}

/* An integer scalar (for range bounds); weak values stay weak. */
static bool int_scalar(Lower *L, LVal v, SrcLoc loc, const char *what)
{
    if (v.kind == LV_ERR) return false;
    if (v.kind == LV_INT) return true;
    if (v.kind == LV_VAL && v.ty.kind == TY_TILE && v.ty.rank == 0 && !v.ty.isptr && dt_is_int((DType)v.ty.dt))
        return true;
    diag_error(L->d, loc, "%s must be an integer scalar, got %s", what, sema_lv_str(L, &v));
    return false;
}

static void lower_for(Lower *L, const AstNode *s)
{
    static const char *const names[3] = {"the start of range", "the end of range", "the step of range"};
    if (s->nlist < 1 || s->nlist > 3) {
        diag_error(L->d, s->loc, "range takes 1 to 3 arguments (start, end, step), got %u", s->nlist);
        return;
    }
    LVal r[3] = {fe_weak_int(0), fe_weak_int(0), fe_weak_int(1)};
    SrcLoc at[3] = {s->loc, s->loc, s->loc};
    bool ok = true;
    for (uint32_t k = 0; k < s->nlist; k++) {
        uint32_t slot = s->nlist == 1 ? 1 : k;
        r[slot] = fe_expr(L, s->list[k]);
        at[slot] = s->list[k]->loc;
        ok &= int_scalar(L, r[slot], at[slot], names[slot]);
    }
    int64_t stages = 0;
    if (s->b && fe_const_int(L, s->b, "the pipeline depth", &stages) && stages < 1) {
        diag_error(L->d, s->b->loc, "the pipeline depth must be at least 1, got %lld", (long long)stages);
        ok = false;
    }
    if (ok && r[2].kind == LV_INT && r[2].i == 0) {
        diag_error(L->d, at[2], "the step of range is 0");
        ok = false;
    }
    DType dt = DT_I32;
    bool any_strong = false;
    for (int k = 0; k < 3 && ok; k++) {
        if (r[k].kind != LV_VAL) continue;
        dt = any_strong ? sema_promote(dt, (DType)r[k].ty.dt) : (DType)r[k].ty.dt;
        any_strong = true;
    }
    for (int k = 0; k < 3 && ok && !any_strong; k++)
        if (r[k].is_u64) dt = DT_U64;
        else if (!sema_int_fits(r[k].i, DT_I32) && dt != DT_U64) dt = DT_I64;
    IrVal opnd3[3];
    for (int k = 0; k < 3 && ok; k++) {
        LVal v = fe_to_dtype(L, r[k], dt, at[k]);
        ok = v.kind == LV_VAL;
        opnd3[k] = v.v;
    }
    if (!ok) {
        /* still check the body, with the loop variable poisoned */
        uint32_t token = sema_scope_push(L);
        sema_declare(L, s->name, BIND_LOOP, s->loc, fe_err(), s);
        fe_stmts(L, s->body, s->nbody);
        sema_scope_pop(L, token);
        return;
    }
    Carried c = {0};
    scan(L, s->body, s->nbody, &c, 0);
    IrVal *o = ARENA_ARRAY(&L->arena, IrVal, 3 + c.n);
    memcpy(o, opnd3, sizeof opnd3);
    for (uint32_t k = 0; k < c.n; k++) o[3 + k] = c.entry[k].v;
    IrAttr attr;
    memset(&attr, 0, sizeof attr);
    attr.i = stages;
    attr.j = s->warp_specialize ? IR_FOR_WARP_SPECIALIZE : 0;
    uint32_t op = ir_build(&L->b, IR_FOR, o, 3 + c.n, c.ty, c.n, &attr);
    IrBlk blk = ir_op(L->f, op)->region[0];
    IrVal iv = ir_block_add_arg(L->f, blk, ir_ty_scalar(dt));
    IrVal *args = region_args(L, blk, &c);
    bind_to(L, &c, args);
    uint32_t token = sema_scope_push(L);
    sema_declare(L, s->name, BIND_LOOP, s->loc, fe_val(L, iv), s);
    region(L, blk, s->body, s->nbody, &c, args, s->loc, "in the loop");
    sema_scope_pop(L, token);
    bind_to(L, &c, results(L, op, c.n));
    carried_free(&c);
}

static LVal scalar_cond(Lower *L, const AstNode *e, const char *what)
{
    LVal c = fe_to_bool(L, fe_expr(L, e), e->loc, what);
    if (c.kind == LV_VAL && c.ty.rank != 0) {
        diag_error(L->d, e->loc, "%s must be a scalar, got %s", what, sema_ty_str(L, c.ty));
        return fe_err();
    }
    return c;
}

static void lower_if(Lower *L, const AstNode *s)
{
    LVal cond = scalar_cond(L, s->a, "the condition of 'if'");
    Carried c = {0};
    scan(L, s->body, s->nbody, &c, 0);
    scan(L, s->els, s->nels, &c, 0);
    if (cond.kind != LV_VAL) {  /* check both branches, then forget what they assigned */
        for (int br = 0; br < 2; br++) {
            uint32_t token = sema_scope_push(L);
            fe_stmts(L, br ? s->els : s->body, br ? s->nels : s->nbody);
            sema_scope_pop(L, token);
        }
        for (uint32_t k = 0; k < c.n; k++) L->binds[c.bind[k]].val = fe_err();
        carried_free(&c);
        return;
    }
    uint32_t op = ir_build(&L->b, IR_IF, &cond.v, 1, c.ty, c.n, NULL);
    IrVal *entry = entry_vals(L, &c);
    region(L, ir_op(L->f, op)->region[0], s->body, s->nbody, &c, entry, s->loc, "in the 'if' branch");
    for (uint32_t k = 0; k < c.n; k++)
        if (L->binds[c.bind[k]].val.kind != LV_ERR) L->binds[c.bind[k]].val = c.entry[k];
    region(L, ir_op(L->f, op)->region[1], s->els, s->nels, &c, entry, s->loc, "in the 'else' branch");
    bind_to(L, &c, results(L, op, c.n));
    carried_free(&c);
}

static void lower_while(Lower *L, const AstNode *s)
{
    Carried c = {0};
    scan(L, s->body, s->nbody, &c, 0);
    uint32_t op = ir_build(&L->b, IR_WHILE, entry_vals(L, &c), c.n, c.ty, c.n, NULL);
    IrBlk before = ir_op(L->f, op)->region[0], after = ir_op(L->f, op)->region[1];
    IrVal *bargs = region_args(L, before, &c);
    bind_to(L, &c, bargs);
    IrBuilder saved = L->b;
    ir_builder_at_end(&L->b, L->f, before);
    L->b.loc = s->a->loc;
    LVal cond = scalar_cond(L, s->a, "the condition of 'while'");
    if (cond.kind != LV_VAL) cond = fe_val(L, ir_const_int(&L->b, DT_I1, 0));
    L->b.loc = s->loc;
    IrVal *o = ARENA_ARRAY(&L->arena, IrVal, c.n + 1);
    o[0] = cond.v;
    memcpy(&o[1], bargs, sizeof(IrVal) * c.n);
    ir_build(&L->b, IR_CONDITION, o, c.n + 1, NULL, 0, NULL);
    L->b = saved;
    IrVal *aargs = region_args(L, after, &c);
    bind_to(L, &c, aargs);
    region(L, after, s->body, s->nbody, &c, aargs, s->loc, "in the loop");
    bind_to(L, &c, results(L, op, c.n));
    carried_free(&c);
}

/* The value a let/var binds: annotation checked, weak values kept for let. */
static LVal declared(Lower *L, const AstNode *s, LVal v)
{
    if (v.kind == LV_ERR) return v;
    if (v.kind == LV_VOID) {
        diag_error(L->d, s->a->loc, "cannot bind '%s': the expression gives no value", s->name);
        return fe_err();
    }
    if (v.kind == LV_TYPE || v.kind == LV_TUPLE) {
        diag_error(L->d, s->a->loc, "cannot bind '%s' to %s", s->name, sema_lv_str(L, &v));
        return fe_err();
    }
    if (s->type) {
        IrType t;
        if (!sema_resolve_type(L, s->type, &t)) return fe_err();
        if (v.kind == LV_VAL && !ir_ty_eq(v.ty, t)) {
            diag_error(L->d, s->a->loc, "'%s' is declared as %s, but its value is %s", s->name, sema_ty_str(L, t),
                       sema_ty_str(L, v.ty));
            return fe_err();
        }
        v = fe_to_type(L, v, t, s->a->loc, arena_printf(&L->arena, "the value of '%s'", s->name));
    }
    if (s->kind == AST_VAR) v = fe_materialize(L, v, s->a->loc);
    return v;
}

static void lower_let(Lower *L, const AstNode *s)
{
    LVal v = fe_expr(L, s->a);
    if (s->nnames == 0) {
        v = declared(L, s, v);
        sema_declare(L, s->name, s->kind == AST_VAR ? BIND_VAR : BIND_LET, s->loc, v, s);
        return;
    }
    if (v.kind != LV_ERR && (v.kind != LV_TUPLE || v.nitems != s->nnames)) {
        diag_error(L->d, s->a->loc, "cannot destructure %s into %u names", sema_lv_str(L, &v), s->nnames);
        v = fe_err();
    }
    for (uint32_t k = 0; k < s->nnames; k++) {
        SrcLoc at = s->name_locs ? s->name_locs[k] : s->loc;
        sema_declare(L, s->names[k], BIND_LET, at, v.kind == LV_TUPLE ? v.items[k] : fe_err(), s);
    }
}

static void lower_assign(Lower *L, const AstNode *s)
{
    uint32_t b = sema_lookup(L, s->name);
    LVal rhs = fe_expr(L, s->a);
    if (b == UINT32_MAX) {
        sema_undeclared(L, s->loc, "name", s->name);
        return;
    }
    if (L->binds[b].kind != BIND_VAR) {
        diag_error(L->d, s->loc, "cannot assign to '%s': it is a %s, not a var", s->name,
                   sema_bind_kind_name((BindKind)L->binds[b].kind));
        diag_note(L->d, L->binds[b].loc, "'%s' is declared here", s->name);
        return;
    }
    LVal cur = L->binds[b].val;
    if (cur.kind == LV_ERR) return;
    if (s->op != OP_ASSIGN) rhs = fe_binary(L, s->op, cur, rhs, s->loc);
    if (rhs.kind == LV_INT || rhs.kind == LV_FLOAT)
        rhs = fe_to_type(L, rhs, cur.ty, s->a->loc, arena_printf(&L->arena, "the value assigned to '%s'", s->name));
    if (rhs.kind == LV_VOID || rhs.kind == LV_TYPE || rhs.kind == LV_TUPLE) {
        diag_error(L->d, s->a->loc, "cannot assign %s to var '%s'", sema_lv_str(L, &rhs), s->name);
        rhs = fe_err();
    }
    L->binds[b].val = rhs;
    L->binds[b].assigned = s->loc;
}

static void static_assert_(Lower *L, const AstNode *s)
{
    LVal v = fe_expr(L, s->a);
    if (v.kind == LV_ERR) return;
    if (v.kind != LV_INT) {
        diag_error(L->d, s->a->loc, "the condition of static_assert must be a compile-time value, got %s",
                   sema_lv_str(L, &v));
        return;
    }
    if (v.i == 0) diag_error(L->d, s->loc, "static assertion failed: %s", s->str ? s->str : "");
}

static void lower_stmt(Lower *L, const AstNode *s)
{
    if (!fe_nest_enter(L, s->loc)) return;
    SrcLoc saved = L->b.loc;
    L->b.loc = s->loc;
    switch (s->kind) {
    case AST_LET:
    case AST_VAR: lower_let(L, s); break;
    case AST_ASSIGN: lower_assign(L, s); break;
    case AST_IF: lower_if(L, s); break;
    case AST_FOR: lower_for(L, s); break;
    case AST_WHILE: lower_while(L, s); break;
    case AST_RETURN: diag_error(L->d, s->loc, "'return' may only be the last statement of a fn"); break;
    case AST_STATIC_ASSERT: static_assert_(L, s); break;
    case AST_EXPR_STMT: fe_expr(L, s->a); break;
    case AST_BLOCK: {
        uint32_t token = sema_scope_push(L);
        fe_stmts(L, s->body, s->nbody);
        sema_scope_pop(L, token);
        break;
    }
    case AST_CONST: {
        LVal v = fe_expr(L, s->a);
        if (v.kind != LV_ERR && v.kind != LV_INT && v.kind != LV_FLOAT) {
            diag_error(L->d, s->a->loc, "const '%s' must be a compile-time value, got %s", s->name, sema_lv_str(L, &v));
            v = fe_err();
        }
        sema_declare(L, s->name, BIND_CONST, s->loc, v, s);
        break;
    }
    default: diag_error(L->d, s->loc, "expected a statement, found %s", ast_kind_name[s->kind]); break;
    }
    L->b.loc = saved;
    fe_nest_leave(L);
}

void fe_stmts(Lower *L, AstNode *const *stmts, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) lower_stmt(L, stmts[k]);
}

LVal fe_fn_body(Lower *L, const AstNode *fn)
{
    LVal r = fe_void();
    for (uint32_t k = 0; k < fn->nbody; k++) {
        const AstNode *s = fn->body[k];
        if (s->kind != AST_RETURN) {
            lower_stmt(L, s);
            continue;
        }
        if (k + 1 != fn->nbody) {
            diag_error(L->d, s->loc, "'return' must be the last statement of fn '%s'", fn->name);
            return fe_err();
        }
        SrcLoc saved = L->b.loc;
        L->b.loc = s->loc;
        r = s->a ? fe_expr(L, s->a) : fe_void();
        L->b.loc = saved;
    }
    return r;
}
