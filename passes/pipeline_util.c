/* pipeline_util.c: loop walking and slices shared by the pipelining passes (pipeline.h). */
#include "pipeline.h"

#include <stdlib.h>

#include "../ir/layout.h"

static void walk_block(IrFunc *f, IrBlk b, void (*fn)(IrFunc *, uint32_t, void *), void *ctx)
{
    /* the callback may insert ops into this block: walk a copy of its op list */
    IrBlock *blk = ir_blk(f, b);
    uint32_t n = blk->nops;
    uint32_t *ids = tl_xmalloc((n ? n : 1) * sizeof *ids);
    for (uint32_t i = 0; i < n; i++) ids[i] = blk->ops[i];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = ids[i];
        if (f->ops[id].dead) continue;
        for (uint32_t r = 0; r < f->ops[id].nregion; r++) walk_block(f, f->ops[id].region[r], fn, ctx);
        if (f->ops[id].opc == IR_FOR && !f->ops[id].dead) fn(f, id, ctx);
    }
    free(ids);
}

void pipe_for_each_loop(IrFunc *f, void (*fn)(IrFunc *f, uint32_t loop, void *ctx), void *ctx)
{
    walk_block(f, f->body, fn, ctx);
}

/* Whether block b lies inside region `r` (r itself or nested below it). */
static bool block_within(IrFunc *f, IrBlk b, IrBlk r)
{
    while (b) {
        if (b == r) return true;
        uint32_t owner = f->blocks[b].parent_op;
        if (owner == UINT32_MAX) return false;
        b = f->ops[owner].parent;
    }
    return false;
}

/* Whether op lies outside the body of loop `loop` (nested blocks count as inside). */
static bool pipe_outside_op(IrFunc *f, uint32_t loop, const IrOp *op)
{
    return !block_within(f, op->parent, f->ops[loop].region[0]);
}

bool pipe_outside(IrFunc *f, uint32_t loop, IrVal v)
{
    const IrValue *val = &f->vals[v];
    IrBlk home = val->is_arg ? (IrBlk)val->def : f->ops[val->def].parent;
    return !block_within(f, home, f->ops[loop].region[0]);
}

static bool writes_memory(IrFunc *f, IrBlk b);

bool pipe_op_writes_memory(IrFunc *f, const IrOp *op)
{
    switch ((IrOpcode)op->opc) {
    case IR_STORE: case IR_BLOCK_STORE: case IR_ATOMIC_ADD: case IR_ATOMIC_MAX: case IR_ATOMIC_MIN:
    case IR_ATOMIC_CAS:
        return true;
    default: break;
    }
    for (uint32_t r = 0; r < op->nregion; r++)
        if (writes_memory(f, op->region[r])) return true;
    return false;
}

/* Whether block b (or a block nested in it) writes global memory. */
static bool writes_memory(IrFunc *f, IrBlk b)
{
    const IrBlock *blk = &f->blocks[b];
    for (uint32_t i = 0; i < blk->nops; i++)
        if (pipe_op_writes_memory(f, &f->ops[blk->ops[i]])) return true;
    return false;
}

/* reads: pointer loads may be in the slice (the loop writes no memory, so reading S - 1
 * iterations early reads the same values) */
static bool slice_val(IrFunc *f, uint32_t loop, IrVal v, uint8_t *slice, bool reads, int depth)
{
    IrBlk body = f->ops[loop].region[0];
    if (pipe_outside(f, loop, v)) return true;
    const IrValue *val = &f->vals[v];
    if (val->is_arg) return val->def == body && val->idx == 0; /* the induction variable only */
    uint32_t d = val->def;
    const IrOp *op = &f->ops[d];
    bool ok = (ir_opinfo[op->opc].flags & IR_PURE) || (reads && op->opc == IR_LOAD);
    if (op->parent != body || !ok || op->nregion || op->opc == IR_DOT) return false;
    if (slice[d]) return true;
    if (depth > 64) return false;
    for (uint32_t k = 0; k < op->nopnd; k++)
        if (!slice_val(f, loop, ir_opnd(f, op, k), slice, reads, depth + 1)) return false;
    slice[d] = 1;
    return true;
}

bool pipe_offset_slice(IrFunc *f, uint32_t loop, uint32_t ld, uint8_t *slice)
{
    const IrOp *op = &f->ops[ld];
    uint32_t rank = ir_vty(f, ir_opnd(f, op, 0)).rank;
    bool reads = !writes_memory(f, f->ops[loop].region[0]);
    for (uint32_t k = 1; k <= rank; k++)
        if (!slice_val(f, loop, ir_opnd(f, op, k), slice, reads, 0)) return false;
    return true;
}

/* The dim of block load ld's block that becomes the 2-d tile's rows: the one dim before the
 * last whose extent is not 1 (the one before the last where all are 1); -1 where several are. */
static int row_dim(IrType t)
{
    int row = -1;
    for (int d = 0; d + 1 < t.rank; d++)
        if (t.dims[d] != 1) {
            if (row >= 0) return -1;
            row = d;
        }
    return row >= 0 ? row : t.rank - 2;
}

int pipe_load_gap(IrFunc *f, uint32_t ld)
{
    IrType t = ir_vty(f, ir_res(&f->ops[ld], 0));
    int row = t.rank > 2 ? row_dim(t) : -1;
    return row >= 0 ? t.rank - 2 - row : 0;
}

IrVal pipe_load_tile(IrFunc *f, uint32_t ld)
{
    const IrOp *op = &f->ops[ld];
    IrVal res = ir_res(op, 0);
    IrType t = ir_vty(f, res);
    if (t.rank < 2) return IR_NONE;
    if (t.rank == 2) return res;
    int row = row_dim(t);
    if (row < 0) return IR_NONE;
    uint32_t user = UINT32_MAX;
    for (uint32_t i = 0; i < f->nops; i++) {
        const IrOp *u = &f->ops[i];
        if (u->dead) continue;
        for (uint32_t k = 0; k < u->nopnd; k++) {
            if (ir_opnd(f, u, k) != res) continue;
            if (user != UINT32_MAX) return IR_NONE;
            user = i;
        }
    }
    if (user == UINT32_MAX || f->ops[user].opc != IR_RESHAPE || f->ops[user].parent != op->parent) return IR_NONE;
    IrVal r2 = ir_res(&f->ops[user], 0);
    IrType t2 = ir_vty(f, r2);
    if (t2.rank != 2 || t2.dims[0] != t.dims[row] || t2.dims[1] != t.dims[t.rank - 1]) return IR_NONE;
    return r2;
}

uint32_t pipe_stage_bytes(IrType t)
{
    uint32_t bytes = (uint32_t)ir_ty_numel(t) * (uint32_t)dt_bytes((DType)t.dt);
    return (bytes + PIPE_STAGE_ALIGN - 1) & ~(PIPE_STAGE_ALIGN - 1);
}

/* Whether use k of op (in the loop body) reads v as a wgmma dot operand:
 * operand a or b of a DOT in the body whose shapes wgmma takes, or the
 * operand of a TRANS in the body all of whose uses are such. */
static bool wgmma_operand_use(IrFunc *f, IrBlk body, const IrOp *op, uint32_t k, int depth)
{
    if (op->parent != body) return false;
    if (op->opc == IR_DOT) {
        WgmmaShape w;
        int warps = f->warps ? f->warps : 4;
        return k < 2 && layout_wgmma_shape(f->mod ? f->mod->target : NULL, ir_vty(f, ir_opnd(f, op, 0)),
                                       ir_vty(f, ir_opnd(f, op, 1)), warps, &w);
    }
    if (op->opc != IR_TRANS || depth > 0) return false;
    IrVal t = ir_res(op, 0);
    bool used = false;
    for (uint32_t i = 0; i < f->nops; i++) {
        const IrOp *u = &f->ops[i];
        if (u->dead) continue;
        for (uint32_t j = 0; j < u->nopnd; j++) {
            if (ir_opnd(f, u, j) != t) continue;
            if (!wgmma_operand_use(f, body, u, j, depth + 1)) return false;
            used = true;
        }
    }
    return used;
}

uint32_t pipe_invariant_operands(IrFunc *f, uint32_t loop, IrVal *out, uint32_t cap)
{
    IrBlk body = f->ops[loop].region[0];
    uint32_t n = 0;
    IrBlock *blk = ir_blk(f, body);
    for (uint32_t i = 0; i < blk->nops; i++) {
        const IrOp *d = &f->ops[blk->ops[i]];
        if (d->opc != IR_DOT && d->opc != IR_TRANS) continue;
        for (uint32_t k = 0; k < (d->opc == IR_DOT ? 2u : 1u); k++) {
            IrVal v = ir_opnd(f, d, k);
            if (!pipe_outside(f, loop, v)) continue;
            IrType t = ir_vty(f, v);
            if (t.kind != TY_TILE || t.isptr || t.rank != 2 || dt_bytes((DType)t.dt) > 2 ||
                layout_swizzle_for(t, 1) < 0)
                continue;
            bool seen = false, ok = true, used = false;
            for (uint32_t j = 0; j < n; j++) seen |= out[j] == v;
            if (seen) continue;
            /* every use inside the loop (nested blocks too) is such an operand */
            for (uint32_t u = 0; u < f->nops && ok; u++) {
                const IrOp *uo = &f->ops[u];
                if (uo->dead || pipe_outside_op(f, loop, uo)) continue;
                for (uint32_t j = 0; j < uo->nopnd && ok; j++) {
                    if (ir_opnd(f, uo, j) != v) continue;
                    ok = wgmma_operand_use(f, body, uo, j, 0);
                    used = true;
                }
            }
            if (ok && used && n < cap) out[n++] = v;
        }
    }
    return n;
}
