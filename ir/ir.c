/* ir.c: types, the op table, module/function construction and the builder. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

const char *const dt_name[DT_COUNT] = {
#define DT(id, name, bits, kind) name,
#include "dtype.def"
#undef DT
};
const uint8_t dt_bits[DT_COUNT] = {
#define DT(id, name, bits, kind) bits,
#include "dtype.def"
#undef DT
};
const char dt_kind[DT_COUNT] = {
#define DT(id, name, bits, kind) kind,
#include "dtype.def"
#undef DT
};

int dt_bytes(DType t) { return dt_bits[t] < 8 ? 1 : dt_bits[t] / 8; }

bool dt_from_name(const char *s, size_t n, DType *out)
{
    for (int i = 0; i < DT_COUNT; i++)
        if (strlen(dt_name[i]) == n && memcmp(dt_name[i], s, n) == 0) {
            *out = (DType)i;
            return true;
        }
    return false;
}

const IrOpInfo ir_opinfo[IR_NUM_OPS] = {
#define OP(id, name, mino, maxo, nres, nreg, flags, layout) {name, mino, maxo, nres, nreg, flags, IR_LAYOUT_##layout},
#include "ops.def"
#undef OP
};

bool ir_opcode_from_name(const char *s, size_t n, IrOpcode *out)
{
    for (int i = 0; i < IR_NUM_OPS; i++)
        if (strlen(ir_opinfo[i].name) == n && memcmp(ir_opinfo[i].name, s, n) == 0) {
            *out = (IrOpcode)i;
            return true;
        }
    return false;
}

const char *const ir_cmp_name[CMP_COUNT] = {"eq", "ne", "lt", "le", "gt", "ge"};

/* ---- types ---------------------------------------------------------------- */

IrType ir_ty_tile(DType dt, bool isptr, int rank, const int32_t *dims)
{
    IrType t;
    memset(&t, 0, sizeof t);
    TL_ASSERT(rank >= 0 && rank <= IR_MAXRANK, "ir");
    t.kind = TY_TILE;
    t.dt = (uint8_t)dt;
    t.isptr = isptr;
    t.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
    return t;
}

IrType ir_ty_scalar(DType dt) { return ir_ty_tile(dt, false, 0, NULL); }
IrType ir_ty_ptr(DType pointee) { return ir_ty_tile(pointee, true, 0, NULL); }

IrType ir_ty_view(DType dt, int rank)
{
    IrType t;
    memset(&t, 0, sizeof t);
    TL_ASSERT(rank >= 1 && rank <= IR_MAXRANK, "ir");
    t.kind = TY_VIEW;
    t.dt = (uint8_t)dt;
    t.rank = (uint8_t)rank;
    return t;
}

IrType ir_ty_smem(DType dt, int stages, int tile_rank, const int32_t *tile_dims)
{
    IrType t;
    memset(&t, 0, sizeof t);
    TL_ASSERT(tile_rank >= 1 && tile_rank < IR_MAXRANK && stages >= 1, "ir");
    t.kind = TY_SMEM;
    t.dt = (uint8_t)dt;
    t.rank = (uint8_t)(tile_rank + 1);
    t.dims[0] = stages;
    for (int i = 0; i < tile_rank; i++) t.dims[i + 1] = tile_dims[i];
    return t;
}

IrType ir_ty_smem_tile(IrType s)
{
    TL_ASSERT(s.kind == TY_SMEM, "ir");
    return ir_ty_tile((DType)s.dt, false, s.rank - 1, s.dims + 1);
}

IrType ir_async_block(IrType tile, int view_rank, int64_t gap)
{
    IrType block = tile;
    block.rank = (uint8_t)view_rank;
    int lead = view_rank - tile.rank;
    for (int d = view_rank - 1; d >= 0; d--) block.dims[d] = d >= lead ? tile.dims[d - lead] : 1;
    if (gap > 0 && tile.rank == 2 && gap <= view_rank - 2) {
        for (int d = 0; d < view_rank; d++) block.dims[d] = 1;
        block.dims[view_rank - 1] = tile.dims[1];
        block.dims[view_rank - 2 - gap] = tile.dims[0];
    }
    return block;
}

IrType ir_ty_with_dt(IrType t, DType dt, bool isptr)
{
    t.dt = (uint8_t)dt;
    t.isptr = isptr;
    return t;
}

bool ir_ty_eq(IrType a, IrType b) { return memcmp(&a, &b, sizeof a) == 0; }

/* An smem buffer counts the elements of all its stages (dims[0] is the stage
 * count); a view holds no elements of its own and counts 1, like a scalar. */
int64_t ir_ty_numel(IrType t)
{
    int64_t n = 1;
    if (t.kind != TY_TILE && t.kind != TY_SMEM) return 1;
    for (int i = 0; i < t.rank; i++) n *= t.dims[i];
    return n;
}

void ir_ty_print(StrBuf *b, IrType t)
{
    switch (t.kind) {
    case TY_NONE: sb_puts(b, "none"); return;
    case TY_VIEW: sb_printf(b, "tensor<%s, %d>", dt_name[t.dt], t.rank); return;
    case TY_SMEM:
        sb_printf(b, "smem<%s>[", dt_name[t.dt]);
        for (int i = 0; i < t.rank; i++) sb_printf(b, i ? ", %d" : "%d", t.dims[i]);
        sb_putc(b, ']');
        return;
    case TY_TILE: break;
    }
    if (t.rank == 0) {
        if (t.isptr) sb_printf(b, "ptr<%s>", dt_name[t.dt]);
        else sb_puts(b, dt_name[t.dt]);
        return;
    }
    if (t.isptr) sb_printf(b, "tile<ptr<%s>>[", dt_name[t.dt]);
    else sb_printf(b, "tile<%s>[", dt_name[t.dt]);
    for (int i = 0; i < t.rank; i++) sb_printf(b, i ? ", %d" : "%d", t.dims[i]);
    sb_putc(b, ']');
}

/* ---- module and functions --------------------------------------------------- */

IrModule *ir_module_new(const char *file)
{
    IrModule *m = tl_xcalloc(1, sizeof *m);
    arena_init(&m->arena);
    m->file = arena_strdup(&m->arena, file ? file : "<input>");
    ir_module_str(m, "", 0);
    return m;
}

static void func_free(IrFunc *f)
{
    for (uint32_t i = 0; i < f->nblocks; i++) {
        free(f->blocks[i].ops);
        free(f->blocks[i].args);
    }
    free(f->blocks);
    free(f->ops);
    free(f->vals);
    free(f->opnds);
    free(f->params);
    free(f->specs);
    free(f->req_msg);
    free(f->val_layout);
    free(f->layouts);
    free(f);
}

void ir_module_free(IrModule *m)
{
    if (!m) return;
    for (uint32_t i = 0; i < m->nfuncs; i++) func_free(m->funcs[i]);
    free(m->funcs);
    free(m->strs);
    arena_free(&m->arena);
    free(m);
}

uint32_t ir_module_str(IrModule *m, const char *s, size_t n)
{
    for (uint32_t i = 0; i < m->nstrs; i++)
        if (strlen(m->strs[i]) == n && memcmp(m->strs[i], s, n) == 0) return i;
    char *p = arena_strndup(&m->arena, s, n);
    VEC_PUSH(m->strs, m->nstrs, m->strcap, p);
    return m->nstrs - 1;
}

IrFunc *ir_func_new(IrModule *m, const char *name, const char *source_name, SrcLoc loc)
{
    IrFunc *f = tl_xcalloc(1, sizeof *f);
    f->mod = m;
    f->name = arena_strdup(&m->arena, name);
    f->source_name = arena_strdup(&m->arena, source_name ? source_name : name);
    f->loc = loc;
    /* index 0 of values and blocks means "none" */
    VEC_RESERVE(f->vals, f->nvals, f->valcap, 1);
    memset(&f->vals[0], 0, sizeof f->vals[0]);
    f->nvals = 1;
    VEC_RESERVE(f->blocks, f->nblocks, f->blkcap, 1);
    memset(&f->blocks[0], 0, sizeof f->blocks[0]);
    f->nblocks = 1;
    f->body = ir_block_new(f);
    VEC_PUSH(m->funcs, m->nfuncs, m->funccap, f);
    return f;
}

IrFunc *ir_module_find(IrModule *m, const char *name)
{
    for (uint32_t i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
    for (uint32_t i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->source_name, name) == 0) return m->funcs[i];
    return NULL;
}

void ir_func_add_spec(IrFunc *f, const char *name, const char *value)
{
    IrSpec s = {arena_strdup(&f->mod->arena, name), arena_strdup(&f->mod->arena, value)};
    VEC_PUSH(f->specs, f->nspecs, f->speccap, s);
}

IrVal ir_func_add_param(IrFunc *f, const char *name, IrType ty)
{
    IrParam p = {arena_strdup(&f->mod->arena, name), ty};
    VEC_PUSH(f->params, f->nparams, f->paramcap, p);
    if (f->grid) ir_block_add_arg(f, f->grid, ty);
    if (f->requires) ir_block_add_arg(f, f->requires, ty);
    return ir_block_add_arg(f, f->body, ty);
}

void ir_func_drop_layouts(IrFunc *f)
{
    free(f->val_layout);
    free(f->layouts);
    f->val_layout = NULL;
    f->layouts = NULL;
    f->nval_layout = f->val_layout_cap = 0;
    f->nlayouts = f->layoutcap = 0;
}

void ir_func_reset_layouts(IrFunc *f)
{
    free(f->val_layout);
    f->val_layout_cap = f->nvals ? f->nvals : 1;
    f->val_layout = tl_xcalloc(f->val_layout_cap, sizeof(uint32_t));
    f->nval_layout = f->nvals;
}

IrBlk ir_func_make_grid(IrFunc *f)
{
    if (f->grid) return f->grid;
    f->grid = ir_block_new(f);
    for (uint32_t i = 0; i < f->nparams; i++) ir_block_add_arg(f, f->grid, f->params[i].ty);
    return f->grid;
}

IrBlk ir_func_make_requires(IrFunc *f)
{
    if (f->requires) return f->requires;
    f->requires = ir_block_new(f);
    for (uint32_t i = 0; i < f->nparams; i++) ir_block_add_arg(f, f->requires, f->params[i].ty);
    return f->requires;
}

void ir_func_add_require(IrFunc *f, const char *message)
{
    uint32_t id = ir_module_str(f->mod, message, strlen(message));
    VEC_PUSH(f->req_msg, f->nreq, f->reqcap, id);
}

IrBlk ir_block_new(IrFunc *f)
{
    VEC_RESERVE(f->blocks, f->nblocks, f->blkcap, f->nblocks + 1);
    IrBlock *b = &f->blocks[f->nblocks];
    memset(b, 0, sizeof *b);
    b->parent_op = UINT32_MAX;
    return f->nblocks++;
}

static IrVal new_val(IrFunc *f, IrType ty, uint32_t def, uint32_t idx, bool is_arg)
{
    VEC_RESERVE(f->vals, f->nvals, f->valcap, f->nvals + 1);
    if (f->val_layout) { /* values made after the layout pass start with no layout */
        VEC_RESERVE(f->val_layout, f->nval_layout, f->val_layout_cap, f->nvals + 1);
        while (f->nval_layout <= f->nvals) f->val_layout[f->nval_layout++] = 0;
    }
    IrValue *v = &f->vals[f->nvals];
    v->ty = ty;
    v->def = def;
    v->idx = idx;
    v->is_arg = is_arg;
    return f->nvals++;
}

IrVal ir_block_add_arg(IrFunc *f, IrBlk b, IrType ty)
{
    IrVal v = new_val(f, ty, b, f->blocks[b].nargs, true);
    IrBlock *blk = &f->blocks[b];
    VEC_PUSH(blk->args, blk->nargs, blk->argcap, v);
    return v;
}

/* ---- builder ---------------------------------------------------------------- */

void ir_builder_at_end(IrBuilder *b, IrFunc *f, IrBlk blk)
{
    b->f = f;
    b->blk = blk;
    b->pos = UINT32_MAX;
    b->loc = (SrcLoc){0, 0};
}

uint32_t ir_build(IrBuilder *b, IrOpcode opc, const IrVal *opnds, uint32_t nopnd, const IrType *rtys,
                  uint32_t nres, const IrAttr *attr)
{
    IrFunc *f = b->f;
    const IrOpInfo *info = &ir_opinfo[opc];
    VEC_RESERVE(f->ops, f->nops, f->opcap, f->nops + 1);
    uint32_t id = f->nops++;
    IrOp *op = &f->ops[id];
    memset(op, 0, sizeof *op);
    op->opc = (uint16_t)opc;
    op->loc = b->loc;
    op->parent = b->blk;
    if (attr) op->attr = *attr;
    op->opnd = f->nopnds;
    op->nopnd = nopnd;
    VEC_RESERVE(f->opnds, f->nopnds, f->opndcap, f->nopnds + nopnd);
    for (uint32_t i = 0; i < nopnd; i++) f->opnds[f->nopnds++] = opnds[i];
    op->nres = nres;
    op->res = nres ? f->nvals : IR_NONE;
    for (uint32_t i = 0; i < nres; i++) new_val(f, rtys[i], id, i, false);
    op = &f->ops[id];
    op->nregion = info->nregion;
    for (uint32_t r = 0; r < info->nregion; r++) {
        IrBlk rb = ir_block_new(f);
        f->blocks[rb].parent_op = id;
        f->ops[id].region[r] = rb;
    }
    IrBlock *blk = &f->blocks[b->blk];
    VEC_RESERVE(blk->ops, blk->nops, blk->opcap, blk->nops + 1);
    if (b->pos == UINT32_MAX || b->pos >= blk->nops) {
        blk->ops[blk->nops++] = id;
    } else {
        memmove(&blk->ops[b->pos + 1], &blk->ops[b->pos], (blk->nops - b->pos) * sizeof(uint32_t));
        blk->ops[b->pos++] = id;
        blk->nops++;
    }
    return id;
}

IrVal ir_build1(IrBuilder *b, IrOpcode opc, const IrVal *opnds, uint32_t nopnd, IrType rty, const IrAttr *attr)
{
    uint32_t id = ir_build(b, opc, opnds, nopnd, &rty, 1, attr);
    return b->f->ops[id].res;
}

IrVal ir_const_int(IrBuilder *b, DType dt, int64_t v)
{
    IrAttr a = {0};
    a.i = v;
    return ir_build1(b, IR_CONST, NULL, 0, ir_ty_scalar(dt), &a);
}

IrVal ir_const_float(IrBuilder *b, DType dt, double v)
{
    IrAttr a = {0};
    a.f = v;
    return ir_build1(b, IR_CONST, NULL, 0, ir_ty_scalar(dt), &a);
}

IrVal ir_unary(IrBuilder *b, IrOpcode opc, IrVal x)
{
    return ir_build1(b, opc, &x, 1, ir_vty(b->f, x), NULL);
}

IrVal ir_binary(IrBuilder *b, IrOpcode opc, IrVal x, IrVal y)
{
    IrVal o[2] = {x, y};
    IrType t = ir_vty(b->f, x);
    if (opc == IR_CMP) t = ir_ty_with_dt(t, DT_I1, false);
    return ir_build1(b, opc, o, 2, t, NULL);
}

IrVal ir_cmp(IrBuilder *b, IrCmp pred, IrVal x, IrVal y)
{
    IrVal o[2] = {x, y};
    IrAttr a = {0};
    a.i = pred;
    return ir_build1(b, IR_CMP, o, 2, ir_ty_with_dt(ir_vty(b->f, x), DT_I1, false), &a);
}

/* ---- editing ---------------------------------------------------------------- */

void ir_replace_all_uses(IrFunc *f, IrVal from, IrVal to)
{
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        if (op->dead) continue;
        for (uint32_t k = 0; k < op->nopnd; k++)
            if (f->opnds[op->opnd + k] == from) f->opnds[op->opnd + k] = to;
    }
}

static void mark_dead(IrFunc *f, uint32_t id)
{
    IrOp *op = &f->ops[id];
    op->dead = 1;
    for (uint32_t r = 0; r < op->nregion; r++) {
        IrBlock *blk = &f->blocks[op->region[r]];
        for (uint32_t k = 0; k < blk->nops; k++) mark_dead(f, blk->ops[k]);
    }
}

static void unlink(IrFunc *f, uint32_t id)
{
    IrBlock *blk = &f->blocks[f->ops[id].parent];
    for (uint32_t k = 0; k < blk->nops; k++)
        if (blk->ops[k] == id) {
            memmove(&blk->ops[k], &blk->ops[k + 1], (blk->nops - k - 1) * sizeof(uint32_t));
            blk->nops--;
            return;
        }
}

void ir_op_erase(IrFunc *f, uint32_t id)
{
    unlink(f, id);
    mark_dead(f, id);
}

void ir_op_move_to_end(IrFunc *f, uint32_t id, IrBlk b)
{
    unlink(f, id);
    IrBlock *blk = &f->blocks[b];
    VEC_PUSH(blk->ops, blk->nops, blk->opcap, id);
    f->ops[id].parent = b;
}

void ir_set_opnd(IrFunc *f, uint32_t id, uint32_t i, IrVal v)
{
    IrOp *op = &f->ops[id];
    TL_ASSERT(i < op->nopnd, "ir");
    f->opnds[op->opnd + i] = v;
}

bool ir_op_holds_reduction(IrFunc *f, const IrOp *op)
{
    switch ((IrOpcode)op->opc) {
    case IR_REDUCE_SUM: case IR_REDUCE_MAX: case IR_REDUCE_MIN: case IR_ARGMAX: case IR_ARGMIN:
    case IR_CUMSUM: case IR_SORT: case IR_TOPK:
        return true;
    default:
        break;
    }
    for (uint32_t r = 0; r < op->nregion; r++) {
        const IrBlock *B = &f->blocks[op->region[r]];
        for (uint32_t i = 0; i < B->nops; i++)
            if (ir_op_holds_reduction(f, &f->ops[B->ops[i]])) return true;
    }
    return false;
}

bool ir_op_free(IrFunc *f, const IrOp *op, const uint8_t *free_)
{
    if (!(ir_opinfo[op->opc].flags & IR_REMAT) || op->nres != 1 || op->nregion) return false;
    IrType rt = ir_vty(f, ir_res(op, 0));
    if (rt.kind != TY_TILE || rt.rank == 0) return false;
    for (uint32_t k = 0; k < op->nopnd; k++) {
        IrVal x = ir_opnd(f, op, k);
        IrType xt = ir_vty(f, x);
        if (xt.kind != TY_TILE) return false;
        if (xt.rank > 0 && !free_[x]) return false;
    }
    return true;
}

static void free_block(IrFunc *f, IrBlk b, uint8_t *out)
{
    const IrBlock *B = &f->blocks[b];
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = &f->ops[B->ops[i]];
        for (uint32_t r = 0; r < op->nregion; r++) free_block(f, op->region[r], out);
        if (op->nres == 1) out[ir_res(op, 0)] = ir_op_free(f, op, out);
    }
}

void ir_free_values(IrFunc *f, uint8_t *out)
{
    memset(out, 0, f->nvals);
    if (f->grid) free_block(f, f->grid, out);
    if (f->body) free_block(f, f->body, out);
}

uint32_t *ir_use_counts(IrFunc *f)
{
    uint32_t *n = tl_xcalloc(f->nvals, sizeof(uint32_t));
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        if (op->dead) continue;
        for (uint32_t k = 0; k < op->nopnd; k++) n[f->opnds[op->opnd + k]]++;
    }
    return n;
}
