/* remat.c: recompute bf16 -> f32 widenings after a reduction instead of
 * keeping the f32 tile live across it.
 *
 * A row kernel (rmsnorm, layernorm) reads a bf16 row, widens it to f32, reduces
 * it, and uses the f32 row again after the reduction; kept as f32 the row takes
 * twice the registers of its bf16 form across the reduction's shuffles and
 * barriers, which costs the kernel a CTA per SM (rmsnorm bf16 at 16k columns:
 * 2.5 -> 3.7 TB/s on the H200 with the 16-bit row live instead).  The pass
 * rebuilds the f32 value right before its first use after the reduction and
 * gives those uses the new value, so the bf16 tile is what stays live.
 *
 * The rebuilt widening is the bit-level one -- bitcast<f32>((bitcast<u16>(x)
 * as u32) << 16), exact for every bf16, NaN and infinities included -- so that
 * LLVM does not merge it with the original `fpext` and bring the f32 tile
 * back.  f16 has no such two-op widening and is left alone.
 *
 * Algorithm, per block B (and recursively in every region):
 *   1. Boundaries: the ops of B that are reductions, scans, sorts or top-k, or
 *      hold one in a region (their lowering crosses barriers).
 *   2. Candidates: values defined in B by CAST (a bf16 tile to f32), or by
 *      RESHAPE / EXPAND_DIMS of a candidate.
 *   3. For a candidate v at index i whose uses (a use inside a region counts at
 *      the op holding it) reach past the first boundary j > i, and with no
 *      boundary from its first use after j on: rebuild v
 *      (widen, then the same view ops) before the first use after j, and
 *      replace v by the rebuilt value in every use after j.  What is left
 *      without uses (the original chain, when every use was after j) is erased.
 */
#include <stdlib.h>

#include "pass.h"

/* The widening this pass rebuilds: bf16 tile -> f32 tile. */
static bool is_widening(IrFunc *f, IrOp *op)
{
    if (op->opc != IR_CAST) return false;
    IrType x = ir_vty(f, ir_opnd(f, op, 0)), r = ir_vty(f, ir_res(op, 0));
    return x.kind == TY_TILE && x.rank > 0 && !x.isptr && x.dt == DT_BF16 && r.dt == DT_F32 && !r.isptr;
}

static bool is_candidate(IrFunc *f, IrVal v)
{
    uint32_t d = ir_def(f, v);
    if (d == UINT32_MAX) return false;
    IrOp *op = ir_op(f, d);
    if (is_widening(f, op)) return true;
    if (op->opc == IR_RESHAPE || op->opc == IR_EXPAND_DIMS) return is_candidate(f, ir_opnd(f, op, 0));
    return false;
}

/* Whether op (or an op in its regions) uses v. */
static bool uses(IrFunc *f, IrOp *op, IrVal v)
{
    for (uint32_t k = 0; k < op->nopnd; k++)
        if (ir_opnd(f, op, k) == v) return true;
    for (uint32_t r = 0; r < op->nregion; r++) {
        IrBlock *B = ir_blk(f, op->region[r]);
        for (uint32_t i = 0; i < B->nops; i++)
            if (uses(f, ir_op(f, B->ops[i]), v)) return true;
    }
    return false;
}

static void replace_in(IrFunc *f, uint32_t id, IrVal from, IrVal to)
{
    IrOp *op = ir_op(f, id);
    for (uint32_t k = 0; k < op->nopnd; k++)
        if (ir_opnd(f, op, k) == from) ir_set_opnd(f, id, k, to);
    for (uint32_t r = 0; r < op->nregion; r++) {
        IrBlock *B = ir_blk(f, op->region[r]);
        for (uint32_t i = 0; i < B->nops; i++) replace_in(f, B->ops[i], from, to);
    }
}

/* v rebuilt at the builder's position (v: a candidate). */
static IrVal rebuild(IrBuilder *b, IrVal v)
{
    IrFunc *f = b->f;
    IrOp *op = ir_op(f, ir_def(f, v));
    IrType rt = ir_vty(f, v);
    b->loc = op->loc;
    if (op->opc != IR_CAST) {
        IrOpcode opc = (IrOpcode)op->opc;
        IrAttr attr = op->attr;
        IrVal src = rebuild(b, ir_opnd(f, op, 0));
        b->loc = ir_op(f, ir_def(f, v))->loc;
        return ir_build1(b, opc, &src, 1, rt, &attr);
    }
    IrVal x = ir_opnd(f, op, 0);
    IrType xt = ir_vty(f, x);
    IrVal bits = ir_build1(b, IR_BITCAST, &x, 1, ir_ty_with_dt(xt, DT_U16, false), NULL);
    IrVal wide = ir_build1(b, IR_CAST, &bits, 1, ir_ty_with_dt(xt, DT_U32, false), NULL);
    IrVal k16 = ir_const_int(b, DT_U32, 16);
    IrVal sh = ir_build1(b, IR_SPLAT, &k16, 1, ir_vty(f, wide), NULL);
    IrVal hi = ir_binary(b, IR_SHL, wide, sh);
    return ir_build1(b, IR_BITCAST, &hi, 1, rt, NULL);
}

/* Erases v's defining chain as far as nothing uses it. */
static void erase_unused(IrFunc *f, IrVal v)
{
    while (v) {
        uint32_t d = ir_def(f, v);
        if (d == UINT32_MAX) return;
        uint32_t *n = ir_use_counts(f);
        uint32_t count = n[v];
        free(n);
        if (count) return;
        IrOp *op = ir_op(f, d);
        IrVal src = op->opc == IR_CAST ? 0 : ir_opnd(f, op, 0);
        ir_op_erase(f, d);
        v = src && is_candidate(f, src) ? src : 0;
    }
}

/* Handles candidate v defined in block b; returns whether it changed b. */
static bool remat_value(IrFunc *f, IrBlk b, IrVal v)
{
    IrBlock *B = ir_blk(f, b);
    uint32_t i = 0;
    while (i < B->nops && B->ops[i] != ir_def(f, v)) i++;
    if (i == B->nops) return false;
    uint32_t last = i;
    for (uint32_t k = i + 1; k < B->nops; k++)
        if (uses(f, ir_op(f, B->ops[k]), v)) last = k;
    uint32_t j = i + 1;
    while (j < last && !ir_op_holds_reduction(f, ir_op(f, B->ops[j]))) j++;
    if (j >= last) return false;
    uint32_t first = j + 1;
    while (!uses(f, ir_op(f, B->ops[first]), v)) first++;
    /* another reduction after the new uses: what they make from v is
     * typically live across that one (softmax's e^(x - max) across its sum),
     * so the peak does not drop and the second widening is only more work */
    for (uint32_t k = first; k < B->nops; k++)
        if (ir_op_holds_reduction(f, ir_op(f, B->ops[k]))) return false;
    IrBuilder bld;
    ir_builder_at_end(&bld, f, b);
    bld.pos = first;
    IrVal nv = rebuild(&bld, v);
    /* the uses after the boundary, past the ops just inserted */
    B = ir_blk(f, b);
    uint32_t start = first;
    while (B->ops[start] != ir_def(f, nv)) start++;
    for (uint32_t k = start + 1; k < B->nops; k++) replace_in(f, B->ops[k], v, nv);
    erase_unused(f, v);
    return true;
}

static bool remat_block(IrFunc *f, IrBlk b)
{
    bool changed = false;
    /* candidates first: the block's op list changes as values are rebuilt */
    IrBlock *B = ir_blk(f, b);
    uint32_t n = B->nops;
    uint32_t *ops = tl_xcalloc(n ? n : 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) ops[i] = B->ops[i];
    for (uint32_t i = 0; i < n; i++) {
        if (ir_op(f, ops[i])->dead) continue;
        for (uint32_t r = 0; r < ir_op(f, ops[i])->nregion; r++) changed |= remat_block(f, ir_op(f, ops[i])->region[r]);
        /* (building ops may move f->ops: fetch the op again) */
        IrOp *op = ir_op(f, ops[i]);
        if (!op->dead && op->nres == 1 && is_candidate(f, ir_res(op, 0))) changed |= remat_value(f, b, ir_res(op, 0));
    }
    free(ops);
    return changed;
}

void pass_remat(IrFunc *f, PassCtx *cx)
{
    if (remat_block(f, f->body)) cx->changed = true;
}
