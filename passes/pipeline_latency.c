/* pipeline_latency.c: latency assignment, the first pipelining pass (pipeline.h).
 *
 * For every FOR loop, innermost first, on a target with wgmma (IR_TGT_WGMMA):
 *   1. Candidates: the block loads directly in the loop body that
 *        - read a 2-d tensor that is a kernel parameter (the runtime describes it
 *          to the TMA unit: one CUtensorMap per parameter),
 *        - have no `other` (TMA fills out-of-bounds elements with zeros, which is
 *          what a block load without `other` reads),
 *        - have a tile whose rows hold at least 16 bytes and at most 256 rows
 *          (a TMA box), of a 1- or 2-byte type,
 *        - are used only as operands a or b of dots in the body, directly or
 *          through a transpose in the body (the tensor cores then read the
 *          shared-memory stage in place),
 *        - have offsets computed from the induction variable and loop
 *          invariants only (pipe_offset_slice), so they can be computed S - 1
 *          iterations early;
 *      and the loop's step is a positive constant.
 *   2. Stages S: the `pipeline(S)` hint, or PIPE_AUTO_STAGES without one; then
 *      as many as the shared-memory budget holds (what pipe_smem_budget has
 *      left after the kernel's loops visited before, over the bytes of one
 *      stage of every candidate: every loop's buffers have their own place).  `pipeline(1)` or a budget for
 *      fewer than 2 stages leaves the loop alone.
 *   3. Each candidate gets latency S - 1 (it is issued that many iterations
 *      ahead of its use) and the loop's stages attribute becomes S.
 */
#include "pipeline.h"

#include <stdlib.h>

#include "../ir/layout.h"

/* Whether every use of v is operand 0 or 1 of a DOT in block `body`, directly
 * or through a TRANS in `body` whose uses are such. */
static bool feeds_dots_only(IrFunc *f, IrBlk body, IrVal v, int depth)
{
    bool used = false;
    for (uint32_t i = 0; i < f->nops; i++) {
        const IrOp *op = &f->ops[i];
        if (op->dead) continue;
        for (uint32_t k = 0; k < op->nopnd; k++) {
            if (ir_opnd(f, op, k) != v) continue;
            used = true;
            if (op->parent != body) return false;
            if (op->opc == IR_DOT && k < 2) continue;
            if (op->opc == IR_TRANS && depth == 0 && feeds_dots_only(f, body, ir_res(op, 0), 1)) continue;
            return false;
        }
    }
    return used;
}

static bool is_param(IrFunc *f, IrVal v)
{
    return f->vals[v].is_arg && f->vals[v].def == f->body;
}

static bool positive_const_step(IrFunc *f, uint32_t loop)
{
    IrVal step = ir_opnd(f, &f->ops[loop], 2);
    uint32_t d = ir_def(f, step);
    return d != UINT32_MAX && f->ops[d].opc == IR_CONST && f->ops[d].attr.i > 0;
}

static bool candidate(IrFunc *f, uint32_t loop, uint32_t id, uint8_t *slice)
{
    const IrOp *op = &f->ops[id];
    if (op->opc != IR_BLOCK_LOAD || op->attr.j) return false;
    IrVal view = ir_opnd(f, op, 0);
    IrType vt = ir_vty(f, view), t = ir_vty(f, ir_res(op, 0));
    if (!is_param(f, view) || vt.rank != 2) return false;
    if (dt_bytes((DType)t.dt) > 2 || t.dims[0] > 256 || layout_swizzle_for(t, 1) < 0) return false;
    if (!feeds_dots_only(f, op->parent, ir_res(op, 0), 0)) return false;
    return pipe_offset_slice(f, loop, id, slice);
}

typedef struct Budget {
    PassCtx *cx;
    uint32_t used;   /* bytes of stage buffers given to earlier loops of the kernel */
} Budget;

static void assign(IrFunc *f, uint32_t loop, void *vb)
{
    Budget *bud = vb;
    if (!ir_target_has(f->mod->target, IR_TGT_WGMMA)) return;
    int64_t hint = f->ops[loop].attr.i;
    if (hint == 1 || !positive_const_step(f, loop)) return;
    IrBlk body = f->ops[loop].region[0];
    uint8_t *slice = tl_xcalloc(f->nops, 1);
    uint32_t *cand = NULL, ncand = 0, cap = 0, bytes = 0;
    IrBlock *blk = ir_blk(f, body);
    for (uint32_t i = 0; i < blk->nops; i++) {
        uint32_t id = blk->ops[i];
        if (f->ops[id].latency || !candidate(f, loop, id, slice)) continue;
        VEC_PUSH(cand, ncand, cap, id);
        bytes += pipe_stage_bytes(ir_vty(f, ir_res(&f->ops[id], 0)));
    }
    free(slice);
    if (ncand) {
        int64_t stages = hint ? hint : PIPE_AUTO_STAGES;
        if (stages > 16) stages = 16;
        uint32_t budget = pipe_smem_budget(f->mod->target), left = budget > bud->used ? budget - bud->used : 0;
        while (stages >= 2 && (uint64_t)stages * bytes > left) stages--;
        if (stages >= 2) {
            for (uint32_t i = 0; i < ncand; i++) f->ops[cand[i]].latency = (uint8_t)(stages - 1);
            f->ops[loop].attr.i = stages;
            bud->used += (uint32_t)stages * bytes;
            bud->cx->changed = true;
        }
    }
    free(cand);
}

void pass_pipeline_latency(IrFunc *f, PassCtx *cx)
{
    Budget bud = {cx, 0};
    pipe_for_each_loop(f, assign, &bud);
}
