/* meta_emit.c: IrFunc -> kernel metadata (format and grid code: runtime/meta.h).
 *
 * 1. For each kernel: symbol, source name, arch, warps, shared memory,
 *    parameters (scalar / ptr / tensor, dtype, rank) and specialization values.
 * 2. Its grid block, if any, becomes stack code: each value the YIELD returns
 *    is emitted as an expression tree, depth first (operands before the op).
 *    Block arguments are parameters (ARG, or the tensor of VIEW_SHAPE/STRIDE);
 *    ops on unsigned types use the unsigned opcodes; every op whose type is
 *    narrower than 64 bits is followed by WRAP, so the host computes exactly
 *    what the IR means (i32 arithmetic wraps at 32 bits).
 *    The requires block is emitted the same way, one program per YIELD operand
 *    (each leaving one value), with its message; comparisons, & | ^ !, and
 *    select (where) become the format's version-4 opcodes.
 * 3. The TMA descriptors codegen chose (CgKernelFacts.tma) are grouped by
 *    parameter, in their order, and checked with the runtime's own rules; a
 *    parameter whose descriptors are optional is flagged so.
 * 4. The serialization (and the same checks a reader makes) is the runtime's
 *    own writer, tilert_meta_write: one definition of the format.
 */
#include "meta_emit.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/meta.h"

_Static_assert(IR_MAXRANK <= TILERT_MAX_RANK, "runtime tensors must hold every IR view rank");

static tilert_dtype rt_dtype(DType t)
{
    switch (t) {
    case DT_I1: return TILERT_I1;
    case DT_I8: return TILERT_I8;
    case DT_I16: return TILERT_I16;
    case DT_I32: return TILERT_I32;
    case DT_I64: return TILERT_I64;
    case DT_U8: return TILERT_U8;
    case DT_U16: return TILERT_U16;
    case DT_U32: return TILERT_U32;
    case DT_U64: return TILERT_U64;
    case DT_F8E4M3: return TILERT_F8E4M3;
    case DT_F8E5M2: return TILERT_F8E5M2;
    case DT_F16: return TILERT_F16;
    case DT_BF16: return TILERT_BF16;
    case DT_F32: return TILERT_F32;
    case DT_F64: return TILERT_F64;
    case DT_COUNT: break;
    }
    tl_fatal("codegen:meta", "no runtime dtype for IR dtype %d", (int)t);
}

/* ---- grid code ------------------------------------------------------------- */

#define GRID_MAX_DEPTH 64

typedef struct GridEmit {
    const IrFunc *f;
    IrBlk blk;          /* f->grid or f->requires */
    const char *what;   /* "the grid", "the requires clauses" */
    uint8_t *code;
    uint32_t len, cap;
    Diag *d;
    bool ok;
} GridEmit;

static void put(GridEmit *g, uint8_t b)
{
    if (g->len == 0xFFFF) {
        if (g->ok) diag_error(g->d, g->f->loc, "%s of '%s' is too large (over 65535 bytes of code)", g->what,
                              g->f->source_name);
        g->ok = false;
        return;
    }
    VEC_PUSH(g->code, g->len, g->cap, b);
}

static void put_i64(GridEmit *g, int64_t v)
{
    for (int i = 0; i < 8; i++) put(g, (uint8_t)((uint64_t)v >> (8 * i)));
}

static bool grid_scalar_int(GridEmit *g, IrType t, SrcLoc loc, const char *what)
{
    if (t.kind == TY_TILE && t.rank == 0 && !t.isptr && dt_is_int((DType)t.dt)) return true;
    StrBuf b = {0};
    ir_ty_print(&b, t);
    diag_error(g->d, loc, "%s of '%s' uses %s of type %s: %s compute on integer scalars only", g->what,
               g->f->source_name, what, b.s ? b.s : "?", g->blk == g->f->grid ? "grid expressions" : "requires clauses");
    sb_free(&b);
    g->ok = false;
    return false;
}

static void wrap_to(GridEmit *g, DType dt)
{
    if (dt_bits[dt] >= 64) return;
    put(g, TILERT_GOP_WRAP);
    put(g, (uint8_t)rt_dtype(dt));
}

/* The parameter index of grid block argument v (or -1 with an error). */
static int grid_param(GridEmit *g, IrVal v, SrcLoc loc)
{
    const IrValue *val = &g->f->vals[v];
    if (!val->is_arg || val->def != g->blk) {
        diag_error(g->d, loc, "%s of '%s' reads a value defined outside its block", g->what, g->f->source_name);
        g->ok = false;
        return -1;
    }
    if (val->idx > 255) {
        diag_error(g->d, loc, "%s of '%s' reads parameter %u; grid code reaches the first 256 parameters only",
                   g->what, g->f->source_name, val->idx);
        g->ok = false;
        return -1;
    }
    return (int)val->idx;
}

static void emit_val(GridEmit *g, IrVal v, int depth)
{
    const IrFunc *f = g->f;
    if (!g->ok) return;
    if (depth > GRID_MAX_DEPTH) {
        diag_error(g->d, f->loc, "%s of '%s' is nested deeper than %d", g->what, f->source_name, GRID_MAX_DEPTH);
        g->ok = false;
        return;
    }
    const IrValue *val = &f->vals[v];
    if (val->is_arg) {
        int p = grid_param(g, v, f->loc);
        if (p < 0) return;
        char what[200];
        snprintf(what, sizeof what, "parameter '%s'", f->params[p].name);
        if (!grid_scalar_int(g, val->ty, f->loc, what)) return;
        put(g, TILERT_GOP_ARG);
        put(g, (uint8_t)p);
        return;
    }
    const IrOp *op = &f->ops[val->def];
    IrType ty = val->ty;
    char what[64];
    snprintf(what, sizeof what, "'%s'", ir_opinfo[op->opc].name);
    if (!grid_scalar_int(g, ty, op->loc, what)) return;
    DType dt = (DType)ty.dt;
    bool uns = dt_is_unsigned(dt);
    switch ((IrOpcode)op->opc) {
    case IR_CONST:
        put(g, TILERT_GOP_PUSH);
        put_i64(g, tilert_meta_wrap(op->attr.i, rt_dtype(dt)));
        return;
    case IR_NUM_SMS:
        put(g, TILERT_GOP_NUM_SMS);
        return;
    case IR_VIEW_SHAPE:
    case IR_VIEW_STRIDE: {
        IrVal view = f->opnds[op->opnd];
        int p = grid_param(g, view, op->loc);
        if (p < 0) return;
        IrType vt = f->vals[view].ty;
        if (vt.kind != TY_VIEW || op->attr.i < 0 || op->attr.i >= vt.rank) {
            diag_error(g->d, op->loc, "%s of '%s' reads %s[%lld] of '%s', which is not a tensor of that rank",
                       g->what, f->source_name, op->opc == IR_VIEW_SHAPE ? "shape" : "stride", (long long)op->attr.i,
                       f->params[p].name);
            g->ok = false;
            return;
        }
        put(g, op->opc == IR_VIEW_SHAPE ? TILERT_GOP_SHAPE : TILERT_GOP_STRIDE);
        put(g, (uint8_t)p);
        put(g, (uint8_t)op->attr.i);
        wrap_to(g, dt);
        return;
    }
    case IR_CAST: {
        IrVal x = f->opnds[op->opnd];
        if (!grid_scalar_int(g, f->vals[x].ty, op->loc, "a cast from a non-integer")) return;
        emit_val(g, x, depth + 1);
        wrap_to(g, dt);
        return;
    }
    case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM: case IR_MIN: case IR_MAX: {
        emit_val(g, f->opnds[op->opnd], depth + 1);
        emit_val(g, f->opnds[op->opnd + 1], depth + 1);
        uint8_t code;
        switch ((IrOpcode)op->opc) {
        case IR_ADD: code = TILERT_GOP_ADD; break;
        case IR_SUB: code = TILERT_GOP_SUB; break;
        case IR_MUL: code = TILERT_GOP_MUL; break;
        case IR_DIV: code = uns ? TILERT_GOP_DIVU : TILERT_GOP_DIV; break;
        case IR_REM: code = uns ? TILERT_GOP_REMU : TILERT_GOP_REM; break;
        case IR_MIN: code = uns ? TILERT_GOP_MINU : TILERT_GOP_MIN; break;
        default: code = uns ? TILERT_GOP_MAXU : TILERT_GOP_MAX; break;
        }
        put(g, code);
        wrap_to(g, dt);
        return;
    }
    case IR_AND: case IR_OR: case IR_XOR: {
        emit_val(g, f->opnds[op->opnd], depth + 1);
        emit_val(g, f->opnds[op->opnd + 1], depth + 1);
        put(g, op->opc == IR_AND ? TILERT_GOP_AND : op->opc == IR_OR ? TILERT_GOP_OR : TILERT_GOP_XOR);
        wrap_to(g, dt);
        return;
    }
    case IR_NOT:
        emit_val(g, f->opnds[op->opnd], depth + 1);
        if (dt == DT_I1) { /* logical: x == 0 (WRAP to i1 would give x != 0) */
            put(g, TILERT_GOP_PUSH);
            put_i64(g, 0);
            put(g, TILERT_GOP_EQ);
            return;
        }
        put(g, TILERT_GOP_PUSH);
        put_i64(g, -1);
        put(g, TILERT_GOP_XOR);
        wrap_to(g, dt);
        return;
    case IR_CMP: {
        IrVal x = f->opnds[op->opnd];
        bool ux = dt_is_unsigned((DType)f->vals[x].ty.dt);
        emit_val(g, x, depth + 1);
        emit_val(g, f->opnds[op->opnd + 1], depth + 1);
        uint8_t code;
        switch ((IrCmp)op->attr.i) {
        case CMP_EQ: code = TILERT_GOP_EQ; break;
        case CMP_NE: code = TILERT_GOP_NE; break;
        case CMP_LT: code = ux ? TILERT_GOP_LTU : TILERT_GOP_LT; break;
        case CMP_LE: code = ux ? TILERT_GOP_LEU : TILERT_GOP_LE; break;
        case CMP_GT: code = ux ? TILERT_GOP_GTU : TILERT_GOP_GT; break;
        default: code = ux ? TILERT_GOP_GEU : TILERT_GOP_GE; break;
        }
        put(g, code);
        return;
    }
    case IR_SELECT:
        emit_val(g, f->opnds[op->opnd], depth + 1);
        emit_val(g, f->opnds[op->opnd + 1], depth + 1);
        emit_val(g, f->opnds[op->opnd + 2], depth + 1);
        put(g, TILERT_GOP_SELECT);
        wrap_to(g, dt);
        return;
    default:
        diag_error(g->d, op->loc,
                   "%s of '%s' uses '%s', which the launcher cannot compute on the host "
                   "(they may use constants, parameters, .shape, .stride, + - * / %%, min, max, comparisons, "
                   "& | ^ !, && ||, where and casts)",
                   g->what, f->source_name, ir_opinfo[op->opc].name);
        g->ok = false;
        return;
    }
}

/* Fills k's grid fields; code in the arena. */
static bool emit_grid(const IrFunc *f, Arena *a, tilert_meta_kernel *k, Diag *d)
{
    if (!f->grid) return true;
    const IrBlock *blk = &f->blocks[f->grid];
    const IrOp *term = blk->nops ? &f->ops[blk->ops[blk->nops - 1]] : NULL;
    if (!term || term->opc != IR_YIELD || term->nopnd < 1 || term->nopnd > 3) {
        diag_error(d, term ? term->loc : f->loc, "the grid block of '%s' must end in a yield of 1 to 3 values",
                   f->source_name);
        return false;
    }
    GridEmit g = {f, f->grid, "the grid", NULL, 0, 0, d, true};
    for (uint32_t i = 0; i < term->nopnd; i++) emit_val(&g, f->opnds[term->opnd + i], 0);
    if (g.ok) {
        uint8_t *code = arena_alloc(a, g.len ? g.len : 1);
        if (g.len) memcpy(code, g.code, g.len);
        k->code = code;
        k->code_len = g.len;
        k->grid_rank = (uint8_t)term->nopnd;
    }
    free(g.code);
    return g.ok;
}

/* Fills k's requirements (arrays and code in the arena). */
static bool emit_requires(const IrFunc *f, Arena *a, tilert_meta_kernel *k, Diag *d)
{
    if (!f->requires) return true;
    const IrBlock *blk = &f->blocks[f->requires];
    const IrOp *term = blk->nops ? &f->ops[blk->ops[blk->nops - 1]] : NULL;
    if (!term || term->opc != IR_YIELD || term->nopnd != f->nreq || f->nreq > TILERT_META_MAX_REQUIRES) {
        diag_error(d, term ? term->loc : f->loc, "the requires block of '%s' must end in a yield of its %u conditions "
                   "(at most %d)", f->source_name, f->nreq, TILERT_META_MAX_REQUIRES);
        return false;
    }
    tilert_meta_require *rs = ARENA_ARRAY(a, tilert_meta_require, f->nreq ? f->nreq : 1);
    bool ok = true;
    for (uint32_t i = 0; i < f->nreq; i++) {
        GridEmit g = {f, f->requires, "the requires clauses", NULL, 0, 0, d, true};
        emit_val(&g, f->opnds[term->opnd + i], 0);
        if (g.ok) {
            uint8_t *code = arena_alloc(a, g.len ? g.len : 1);
            if (g.len) memcpy(code, g.code, g.len);
            rs[i] = (tilert_meta_require){f->mod->strs[f->req_msg[i]], code, g.len};
        }
        ok = ok && g.ok;
        free(g.code);
    }
    k->requires = rs;
    k->nrequires = ok ? f->nreq : 0;
    return ok;
}

/* ---- TMA descriptors ------------------------------------------------------------ */

/* Attaches facts' descriptors to the parameters ps[0..f->nparams) (arrays in the arena). */
static bool emit_tma(const IrFunc *f, const CgKernelFacts *facts, const IrTarget *tg, Arena *a, tilert_meta_param *ps,
                     Diag *d)
{
    if (!facts || facts->ntma == 0) return true;
    if (!facts->tma || facts->ntma > TILERT_META_MAX_TMA) {
        diag_error(d, f->loc, "kernel '%s' asks for %u TMA descriptors (at most %d)", f->source_name, facts->ntma,
                   TILERT_META_MAX_TMA);
        return false;
    }
    if (!ir_target_has(tg, IR_TGT_TMA)) {
        IrTargetList l;
        diag_error(d, f->loc, "kernel '%s' uses TMA, which needs %s (compiling for %s)", f->source_name,
                   ir_target_list(&l, IR_TGT_TMA, ", ", " or "), tg->name);
        return false;
    }
    bool ok = true;
    for (uint32_t j = 0; j < facts->ntma; j++) {
        const CgTmaDesc *t = &facts->tma[j];
        if (t->param >= f->nparams || ps[t->param].kind != TILERT_PARAM_TENSOR) {
            diag_error(d, f->loc, "kernel '%s': TMA descriptor %u is for parameter %u, which is not a tensor view",
                       f->source_name, j, t->param);
            ok = false;
            continue;
        }
        ps[t->param].ntma++;
    }
    if (!ok) return false;
    for (uint32_t p = 0; p < f->nparams; p++) {
        if (!ps[p].ntma) continue;
        tilert_meta_tma *arr = ARENA_ARRAY(a, tilert_meta_tma, ps[p].ntma);
        unsigned n = 0;
        int optional = -1; /* the first descriptor's word, which the others must repeat */
        for (uint32_t j = 0; j < facts->ntma; j++) {
            const CgTmaDesc *t = &facts->tma[j];
            if (t->param != p) continue;
            if (optional < 0) optional = t->optional;
            if (optional != t->optional) {
                diag_error(d, f->loc, "kernel '%s', parameter '%s': TMA descriptor %u is %s, but descriptor 0 is %s "
                           "(a view's descriptors are all optional or none is)", f->source_name, f->params[p].name, n,
                           t->optional ? "optional" : "required", optional ? "optional" : "required");
                ok = false;
            }
            tilert_meta_tma *m = &arr[n];
            char err[320];
            bool box_ok = t->rank >= 1 && t->rank <= TILERT_TMA_MAX_RANK;
            for (unsigned i = 0; box_ok && i < t->rank; i++) box_ok = t->box[i] <= 0xFFFF;
            if (!box_ok) {
                diag_error(d, f->loc, "kernel '%s', parameter '%s': TMA descriptor %u has rank %u or a box extent "
                           "out of range", f->source_name, f->params[p].name, n, t->rank);
                ok = false;
                n++;
                continue;
            }
            m->dtype = (uint8_t)(t->has_dtype ? rt_dtype(t->dtype) : (tilert_dtype)ps[p].dtype);
            m->rank = t->rank;
            m->swizzle = t->swizzle;
            m->l2_promotion = t->l2_promotion;
            m->oob_fill = t->oob_nan ? TILERT_TMA_OOB_NAN : TILERT_TMA_OOB_ZERO;
            for (unsigned i = 0; i < t->rank; i++) {
                m->box[i] = (uint16_t)t->box[i];
                m->elem_stride[i] = t->elem_stride[i] ? t->elem_stride[i] : 1;
            }
            if (!tilert_meta_check_tma(m, &ps[p], err, sizeof err)) {
                diag_error(d, f->loc, "kernel '%s', parameter '%s': TMA descriptor %u: %s", f->source_name,
                           f->params[p].name, n, err);
                ok = false;
            }
            n++;
        }
        ps[p].tma = arr;
        ps[p].flags = optional > 0 ? TILERT_META_PARAM_TMA_OPTIONAL : 0;
    }
    return ok;
}

/* ---- kernels ------------------------------------------------------------------- */

bool cg_meta_build(const IrFunc *const *kernels, const CgKernelFacts *facts, uint32_t n, const IrTarget *tg,
                   Arena *a, CgMeta *out, Diag *d)
{
    out->data = NULL;
    out->len = 0;
    TL_ASSERT(tg, "meta");
    if (n == 0) {
        diag_error_noloc(d, "no kernels to describe");
        return false;
    }
    tilert_meta_kernel *ks = ARENA_ARRAY(a, tilert_meta_kernel, n);
    bool ok = true;
    for (uint32_t i = 0; i < n; i++) {
        const IrFunc *f = kernels[i];
        tilert_meta_kernel *k = &ks[i];
        memset(k, 0, sizeof *k);
        k->symbol = f->name;
        k->source_name = f->source_name;
        k->sm = tg->sm;
        k->arch_flags = tg->specific ? TILERT_META_ARCH_SPECIFIC : 0;
        int warps = facts ? facts[i].warps : f->warps;
        if (warps < 1 || warps > TILERT_META_MAX_WARPS) {
            diag_error(d, f->loc, "kernel '%s' has %d warps per program (1..%d)", f->source_name, warps,
                       TILERT_META_MAX_WARPS);
            ok = false;
            continue;
        }
        k->warps = (uint16_t)warps;
        k->smem_static = facts ? facts[i].smem_static : 0;
        k->smem_dynamic = facts ? facts[i].smem_dynamic : 0;
        tilert_meta_param *ps = ARENA_ARRAY(a, tilert_meta_param, f->nparams ? f->nparams : 1);
        for (uint32_t p = 0; p < f->nparams; p++) {
            IrType t = f->params[p].ty;
            ps[p].name = f->params[p].name;
            ps[p].dtype = (uint8_t)rt_dtype((DType)t.dt);
            if (t.kind == TY_VIEW) {
                ps[p].kind = TILERT_PARAM_TENSOR;
                ps[p].rank = t.rank;
            } else if (t.kind == TY_TILE && t.rank == 0) {
                ps[p].kind = t.isptr ? TILERT_PARAM_PTR : TILERT_PARAM_SCALAR;
            } else {
                StrBuf b = {0};
                ir_ty_print(&b, t);
                diag_error(d, f->loc, "kernel '%s', parameter '%s': a kernel cannot take a %s", f->source_name,
                           f->params[p].name, b.s ? b.s : "?");
                sb_free(&b);
                ok = false;
            }
        }
        if (!emit_tma(f, facts ? &facts[i] : NULL, tg, a, ps, d)) ok = false;
        k->params = ps;
        k->nparams = f->nparams;
        tilert_meta_spec *ss = ARENA_ARRAY(a, tilert_meta_spec, f->nspecs ? f->nspecs : 1);
        for (uint32_t s = 0; s < f->nspecs; s++) ss[s] = (tilert_meta_spec){f->specs[s].name, f->specs[s].value};
        k->specs = ss;
        k->nspecs = f->nspecs;
        if (!emit_grid(f, a, k, d)) ok = false;
        if (!emit_requires(f, a, k, d)) ok = false;
    }
    if (!ok) return false;
    uint8_t *blob;
    size_t len;
    char err[300];
    if (!tilert_meta_write(ks, n, &blob, &len, err, sizeof err)) {
        diag_error_noloc(d, "%s", err);
        return false;
    }
    uint8_t *copy = arena_alloc(a, len);
    memcpy(copy, blob, len);
    free(blob);
    out->data = copy;
    out->len = len;
    return true;
}

void cg_meta_ptx(StrBuf *b, const CgMeta *m)
{
    sb_printf(b, "\n// tilec kernel metadata (format: runtime/meta.h), read on the host by libtilert\n");
    sb_printf(b, ".visible .global .align 8 .b8 %s[%zu] = {", TILERT_META_SYMBOL, m->len);
    for (size_t i = 0; i < m->len; i++) sb_printf(b, "%s%s%u", i ? "," : "", i % 24 == 0 ? "\n    " : " ", m->data[i]);
    sb_printf(b, "\n};\n");
}
