/* lower.c: fe_lower, the AST -> tile IR entry point.
 *
 * Algorithm:
 *   1. declare the globals in source order: `const`s are evaluated at once
 *      (each sees the ones before it), `fn`s and kernels are declared for
 *      lookup and redeclaration checks;
 *   2. for each kernel (or only opts->kernel): give every compile-time parameter
 *      its value (a -D, else its default, else an error naming it), which fixes
 *      the specialization and its symbol (KERNEL__P_64__T_f16);
 *   3. create the IrFunc: specs, parameters, warps, the grid block (its
 *      arguments mirror the parameters; it yields 1 to 3 integer scalars), the
 *      requires block (the same arguments; one i1 per requires clause);
 *   4. lower the body (lower_stmt.c) and end it with RETURN;
 *   5. report -D options that named no parameter of a lowered kernel.
 * Compile-time evaluation outside a kernel body (consts, parameter defaults)
 * runs against a scratch function whose IR is thrown away: only weak values
 * survive it.
 */
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

static void declare_globals(Lower *L)
{
    for (uint32_t k = 0; k < L->ast->ndecls; k++) {
        const AstNode *g = L->ast->decls[k];
        if (g->kind == AST_CONST) {
            LVal v = fe_expr(L, g->a);
            if (v.kind != LV_ERR && v.kind != LV_INT && v.kind != LV_FLOAT) {
                diag_error(L->d, g->a->loc, "const '%s' must be a compile-time value, got %s", g->name,
                           sema_lv_str(L, &v));
                v = fe_err();
            }
            sema_declare(L, g->name, BIND_CONST, g->loc, v, g);
            continue;
        }
        bool is_builtin = false;
        for (size_t j = 0; j < fe_nbuiltin_names; j++) is_builtin |= strcmp(fe_builtin_names[j], g->name) == 0;
        if (g->kind == AST_FN && is_builtin) {
            diag_error(L->d, g->loc, "fn '%s' has the name of a builtin", g->name);
            continue;
        }
        sema_declare(L, g->name, g->kind == AST_FN ? BIND_FN : BIND_KERNEL, g->loc, fe_void(), g);
    }
    L->nglobal = L->nbinds;
    L->frame = L->nbinds;
}

static const FeDefine *find_define(const FeOptions *o, const char *name, bool *used)
{
    const FeDefine *found = NULL;
    for (uint32_t k = 0; k < o->ndefines; k++)
        if (strcmp(o->defines[k].name, name) == 0) {
            found = &o->defines[k];     /* the last one wins, as with a C compiler */
            used[k] = true;
        }
    return found;
}

/* The value of one compile-time parameter; appends to the symbol name. */
static LVal cparam_value(Lower *L, const AstNode *kn, const AstCParam *cp, bool *used, StrBuf *sym, StrBuf *text)
{
    const FeDefine *def = find_define(L->opts, cp->name, used);
    int64_t i = 0;
    DType dt = DT_F32;
    if (def) {
        DefKind dk = sema_parse_define(def->value, &i, &dt);
        if (dk == DEF_BAD) {
            diag_error_noloc(L->d, "-D %s=%s: expected an integer expression or a type name", def->name, def->value);
            return fe_err();
        }
        if ((dk == DEF_TYPE) != cp->is_type) {
            diag_error_noloc(L->d, "-D %s=%s: '%s' is %s parameter of kernel '%s'", def->name, def->value, cp->name,
                             cp->is_type ? "a type" : "an int", kn->name);
            return fe_err();
        }
    } else if (cp->is_type && cp->def_type) {
        if (!sema_resolve_dtype(L, cp->def_type, &dt)) return fe_err();
    } else if (!cp->is_type && cp->def_expr) {
        if (!fe_const_int(L, cp->def_expr, "the default of an int parameter", &i)) return fe_err();
    } else {
        diag_error(L->d, cp->loc, "compile-time parameter '%s' of kernel '%s' has no default and no -D %s=...",
                   cp->name, kn->name, cp->name);
        return fe_err();
    }
    if (cp->is_type) {
        sb_printf(sym, "__%s_%s", cp->name, dt_name[dt]);
        sb_puts(text, dt_name[dt]);
        return (LVal){.kind = LV_TYPE, .ty = ir_ty_scalar(dt)};
    }
    /* symbols cannot hold '-': a negative value is spelled m5 */
    sb_printf(sym, "__%s_%s%llu", cp->name, i < 0 ? "m" : "", i < 0 ? 0ull - (unsigned long long)i : (unsigned long long)i);
    sb_printf(text, "%lld", (long long)i);
    return fe_weak_int(i);
}

static void lower_grid(Lower *L, const AstNode *kn, IrFunc *f, const uint32_t *param_bind)
{
    if (kn->nlist < 1 || kn->nlist > 3) {
        diag_error(L->d, kn->loc, "grid(...) takes 1 to 3 dimensions, got %u", kn->nlist);
        return;
    }
    IrBlk g = ir_func_make_grid(f);
    ir_builder_at_end(&L->b, f, g);
    L->b.loc = kn->loc;
    for (uint32_t k = 0; k < f->nparams; k++)
        if (param_bind[k] != UINT32_MAX) L->binds[param_bind[k]].val = fe_val(L, ir_blk(f, g)->args[k]);
    IrVal dims[3];
    uint32_t n = 0;
    for (uint32_t k = 0; k < kn->nlist; k++) {
        const AstNode *e = kn->list[k];
        LVal v = fe_expr(L, e);
        if (v.kind == LV_INT) v = fe_materialize(L, v, e->loc);
        if (v.kind == LV_ERR) continue;
        if (v.kind != LV_VAL || v.ty.kind != TY_TILE || v.ty.rank != 0 || v.ty.isptr || dt_is_float((DType)v.ty.dt)) {
            diag_error(L->d, e->loc, "grid dimension %u must be an integer scalar, got %s", k, sema_lv_str(L, &v));
            continue;
        }
        dims[n++] = v.v;
    }
    L->b.loc = kn->loc;
    ir_build(&L->b, IR_YIELD, dims, n, NULL, 0, NULL);
    for (uint32_t k = 0; k < f->nparams; k++)
        if (param_bind[k] != UINT32_MAX) L->binds[param_bind[k]].val = fe_val(L, ir_blk(f, f->body)->args[k]);
}

/* The requires(cond, "message") clauses: f->requires yields one i1 per clause. */
static void lower_requires(Lower *L, const AstNode *kn, IrFunc *f, const uint32_t *param_bind)
{
    IrBlk q = ir_func_make_requires(f);
    ir_builder_at_end(&L->b, f, q);
    for (uint32_t k = 0; k < f->nparams; k++)
        if (param_bind[k] != UINT32_MAX) L->binds[param_bind[k]].val = fe_val(L, ir_blk(f, q)->args[k]);
    IrVal *conds = tl_xcalloc(kn->nreqs, sizeof *conds);
    uint32_t n = 0;
    for (uint32_t k = 0; k < kn->nreqs; k++) {
        const AstNode *e = kn->reqs[2 * k];
        L->b.loc = e->loc;
        LVal v = fe_expr(L, e);
        if (v.kind == LV_INT && v.is_bool && v.i == 0) { /* known now: no launch could satisfy it */
            diag_error(L->d, e->loc, "requires(...) is false for every launch of this specialization: %s",
                       kn->reqs[2 * k + 1]->str);
            continue;
        }
        if (v.kind == LV_INT && v.is_bool) v = fe_materialize(L, v, e->loc);
        if (v.kind == LV_ERR) continue;
        if (v.kind != LV_VAL || v.ty.kind != TY_TILE || v.ty.rank != 0 || v.ty.isptr || v.ty.dt != DT_I1) {
            diag_error(L->d, e->loc, "the condition of requires(...) must be a boolean scalar (a comparison), got %s",
                       sema_lv_str(L, &v));
            continue;
        }
        conds[n++] = v.v;
        ir_func_add_require(f, kn->reqs[2 * k + 1]->str);
    }
    /* the launcher evaluates the clauses on the host, on integer scalars only */
    const IrBlock *qb = ir_blk(f, q);
    for (uint32_t k = 0; k < qb->nops; k++) {
        const IrOp *op = ir_op(f, qb->ops[k]);
        for (uint32_t r = 0; r < op->nres; r++) {
            IrType t = ir_vty(f, op->res + r);
            if (t.kind == TY_TILE && t.rank == 0 && !t.isptr && dt_is_int((DType)t.dt)) continue;
            diag_error(L->d, op->loc, "requires(...) computes on integer scalars only (the launcher evaluates it on "
                       "the host), got %s", sema_ty_str(L, t));
            break;
        }
    }
    L->b.loc = kn->loc;
    ir_build(&L->b, IR_YIELD, conds, n, NULL, 0, NULL);
    free(conds);
    for (uint32_t k = 0; k < f->nparams; k++)
        if (param_bind[k] != UINT32_MAX) L->binds[param_bind[k]].val = fe_val(L, ir_blk(f, f->body)->args[k]);
}

static bool has_symbol(const IrModule *m, const char *sym)
{
    for (uint32_t i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, sym) == 0) return true;
    return false;
}

/* Lowers one specialization of kn; false (and nothing added) when the module
 * already holds its symbol (another spec set gave the same values). */
static bool lower_kernel(Lower *L, const AstNode *kn, bool *used, IrFunc *scratch)
{
    uint32_t base = L->nbinds;
    uint32_t token = sema_scope_push(L);
    StrBuf sym = {0};
    sb_puts(&sym, kn->name);
    char **spec_text = tl_xcalloc(kn->ncparams ? kn->ncparams : 1, sizeof(char *));
    L->f = scratch;
    ir_builder_at_end(&L->b, scratch, scratch->body);
    for (uint32_t k = 0; k < kn->ncparams; k++) {
        StrBuf text = {0};
        LVal v = cparam_value(L, kn, &kn->cparams[k], used, &sym, &text);
        spec_text[k] = text.s;
        sema_declare(L, kn->cparams[k].name, BIND_CPARAM, kn->cparams[k].loc, v, kn);
    }
    if (has_symbol(L->mod, sym.s)) {   /* only with spec sets: kernel names are unique */
        for (uint32_t k = 0; k < kn->ncparams; k++) free(spec_text[k]);
        free(spec_text);
        sb_free(&sym);
        sema_scope_pop(L, token);
        L->nbinds = base;
        L->f = NULL;
        return false;
    }
    IrFunc *f = ir_func_new(L->mod, sym.s, kn->name, kn->loc);
    for (uint32_t k = 0; k < kn->ncparams; k++) {
        if (spec_text[k]) ir_func_add_spec(f, kn->cparams[k].name, spec_text[k]);
        free(spec_text[k]);
    }
    free(spec_text);
    sb_free(&sym);
    L->f = f;
    ir_builder_at_end(&L->b, f, f->body);
    L->b.loc = kn->loc;
    uint32_t *param_bind = tl_xcalloc(kn->nparams ? kn->nparams : 1, sizeof(uint32_t));
    uint32_t nparam = 0;
    for (uint32_t k = 0; k < kn->nparams; k++) {
        const AstParam *p = &kn->params[k];
        IrType t;
        LVal v = fe_err();
        if (!p->type) {
            diag_error(L->d, p->loc, "kernel parameter '%s' needs a type", p->name);
        } else if (sema_resolve_type(L, p->type, &t)) {
            if (t.kind == TY_TILE && t.rank != 0) {
                diag_error(L->d, p->type->loc, "kernel parameter '%s' must be a scalar, a pointer or a tensor view, not %s",
                           p->name, sema_ty_str(L, t));
            } else {
                v = fe_val(L, ir_func_add_param(f, p->name, t));
            }
        }
        uint32_t b = sema_declare(L, p->name, BIND_PARAM, p->loc, v, kn);
        if (v.kind == LV_VAL) param_bind[nparam++] = b;
    }
    f->fast_math = kn->fast_math;
    if (kn->warps) {
        int64_t w;
        if (fe_const_int(L, kn->warps, "the number of warps", &w)) {
            if (w != 0 && (!sema_is_pow2(w) || w > 32))
                diag_error(L->d, kn->warps->loc,
                           "warps(%lld): the number of warps must be a power of two from 1 to 32 (or 0: the compiler's choice)",
                           (long long)w);
            else f->warps = (int)w;   /* 0: chosen by the layout pass */
        }
    }
    if (kn->has_grid) lower_grid(L, kn, f, param_bind);
    if (kn->nreqs) lower_requires(L, kn, f, param_bind);
    free(param_bind);
    ir_builder_at_end(&L->b, f, f->body);
    L->b.loc = kn->loc;
    fe_stmts(L, kn->body, kn->nbody);
    L->b.loc = kn->loc;
    ir_build(&L->b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    sema_scope_pop(L, token);
    L->nbinds = base;
    L->f = NULL;
    return true;
}

/* Reports every -D that named no compile-time parameter of a lowered kernel. */
/* `spec`: the --spec set the defines from `from` on come from (its text names them), or NULL. */
static void report_unused(Lower *L, const bool *used, const bool *lowered, uint32_t from, const char *spec)
{
    const FeOptions *o = L->opts;
    const char *opt = spec ? "--spec '" : "-D";
    uint32_t n = 0, cap = 0;
    const char **cands = NULL;
    for (uint32_t k = 0; k < L->ast->ndecls; k++) {
        const AstNode *g = L->ast->decls[k];
        if (g->kind != AST_KERNEL || !lowered[k]) continue;
        for (uint32_t j = 0; j < g->ncparams; j++) VEC_PUSH(cands, n, cap, g->cparams[j].name);
    }
    for (uint32_t k = from; k < o->ndefines; k++) {
        if (used[k]) continue;
        const AstNode *owner = NULL;
        for (uint32_t g = 0; g < L->ast->ndecls && !owner; g++) {
            const AstNode *kn = L->ast->decls[g];
            for (uint32_t j = 0; kn->kind == AST_KERNEL && j < kn->ncparams; j++)
                if (strcmp(kn->cparams[j].name, o->defines[k].name) == 0) owner = kn;
        }
        if (owner) {
            diag_error_noloc(L->d, "%s%s%s%s: only kernel '%s' has a compile-time parameter named '%s', and it is not compiled",
                             opt, spec ? spec : "", spec ? "': " : " ", o->defines[k].name, owner->name,
                             o->defines[k].name);
            continue;
        }
        const char *best = diag_closest(o->defines[k].name, cands, n);
        if (best)
            diag_error_noloc(L->d, "%s%s%s%s: no kernel has a compile-time parameter named '%s' (did you mean '%s'?)",
                             opt, spec ? spec : "", spec ? "': " : " ", o->defines[k].name, o->defines[k].name, best);
        else
            diag_error_noloc(L->d, "%s%s%s%s: no kernel has a compile-time parameter named '%s'", opt,
                             spec ? spec : "", spec ? "': " : " ", o->defines[k].name, o->defines[k].name);
    }
    free((void *)cands);
}

/* Whether the AST declares kernel `name`; if not, says so and lists those it declares. */
static bool has_kernel(const Ast *ast, const char *name, Diag *d)
{
    uint32_t n = 0, cap = 0;
    const char **names = NULL;
    for (uint32_t k = 0; k < ast->ndecls; k++) {
        if (ast->decls[k]->kind != AST_KERNEL) continue;
        if (strcmp(ast->decls[k]->name, name) == 0) {
            free((void *)names);
            return true;
        }
        VEC_PUSH(names, n, cap, ast->decls[k]->name);
    }
    diag_unknown_kernel(d, name, names, n);
    free((void *)names);
    return false;
}

IrModule *fe_lower(const Ast *ast, const FeOptions *opts, Diag *d)
{
    return fe_lower_specs(ast, opts, NULL, 0, d);
}

IrModule *fe_lower_specs(const Ast *ast, const FeOptions *opts, const FeSpecSet *specs, uint32_t nspecs, Diag *d)
{
    static const FeOptions no_opts = {0};
    if (opts && opts->kernel && !has_kernel(ast, opts->kernel, d)) return NULL;
    Lower L;
    memset(&L, 0, sizeof L);
    L.d = d;
    L.ast = ast;
    L.opts = opts ? opts : &no_opts;
    arena_init(&L.arena);
    int errors_before = d->nerrors;
    L.mod = ir_module_new(ast->file);
    IrModule *scratch_mod = ir_module_new(ast->file);
    IrFunc *scratch = ir_func_new(scratch_mod, "<compile-time>", NULL, (SrcLoc){0, 0});
    L.f = scratch;
    ir_builder_at_end(&L.b, scratch, scratch->body);
    declare_globals(&L);
    const FeOptions *base = L.opts;
    bool *used = tl_xcalloc(base->ndefines ? base->ndefines : 1, sizeof(bool));
    bool *lowered = tl_xcalloc(ast->ndecls ? ast->ndecls : 1, sizeof(bool));
    bool any = false;
    /* without spec sets one pass with opts->defines; with them one pass per set, the
     * defines then the set's in one list (the last wins) */
    for (uint32_t s = 0; s < (nspecs ? nspecs : 1); s++) {
        FeOptions so = *base;
        FeDefine *defs = NULL;
        bool *set_used = used;
        if (nspecs) {
            const FeSpecSet *set = &specs[s];
            so.ndefines = base->ndefines + set->ndefines;
            defs = tl_xcalloc(so.ndefines ? so.ndefines : 1, sizeof *defs);
            if (base->ndefines) memcpy(defs, base->defines, base->ndefines * sizeof *defs);
            if (set->ndefines) memcpy(defs + base->ndefines, set->defines, set->ndefines * sizeof *defs);
            so.defines = defs;
            set_used = tl_xcalloc(so.ndefines ? so.ndefines : 1, sizeof(bool));
        }
        L.opts = &so;
        bool added = false;
        for (uint32_t k = 0; k < ast->ndecls; k++) {
            const AstNode *g = ast->decls[k];
            if (g->kind != AST_KERNEL || (so.kernel && strcmp(so.kernel, g->name) != 0)) continue;
            if (lower_kernel(&L, g, set_used, scratch)) added = true;
            lowered[k] = any = true;
        }
        if (nspecs) {
            for (uint32_t k = 0; k < base->ndefines; k++) used[k] = used[k] || set_used[k];
            if (any) report_unused(&L, set_used, lowered, base->ndefines, specs[s].text ? specs[s].text : "");
            if (any && !added && d->nerrors == errors_before)
                diag_error_noloc(d, "--spec '%s': the same specialization as an earlier --spec",
                                 specs[s].text ? specs[s].text : "");
            free(set_used);
            free(defs);
        }
        L.opts = base;
    }
    report_unused(&L, used, lowered, 0, NULL);
    free(used);
    free(lowered);
    free(L.binds);
    free((void *)L.active);
    arena_free(&L.arena);
    ir_module_free(scratch_mod);
    if (d->nerrors > errors_before) {
        ir_module_free(L.mod);
        return NULL;
    }
    return L.mod;
}
