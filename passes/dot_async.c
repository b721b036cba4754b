/* dot_async.c: a dot's wait at the first use of its result (lang/PIPELINING.md).
 *
 * On sm_90a a dot is a wgmma: issued asynchronously, completed by
 * wgmma.wait_group.  A dot that waits where it is issued keeps the tensor cores
 * and the rest of the warpgroup from working at once; FlashAttention-3's
 * intra-warpgroup overlap issues the next block's S = Q K^T and the previous
 * block's P V, and runs the softmax while they are in flight.  This pass moves
 * each dot's wait down its block as far as the data and the shared memory it
 * reads allow: the dot gets pending = IR_DOT_ASYNC (no wait where it is issued)
 * and a DOT_WAIT on its result is placed right before the first op that uses the
 * result or may disturb the dot (below); every later use reads the DOT_WAIT's
 * result.  Code generation counts the wgmma groups committed between a dot and
 * its wait and waits for just enough of them (wait_group N, N the groups issued
 * after it: codegen/lower_async.c, cg_lower_DOT_WAIT), so with
 *     %s = dot %q, %kt, %z          -> group 1
 *     %o = dot %p, %v, %acc         -> group 2
 *     %s2 = dot_wait %s             -> wait_group 1: S is done, P V may run on
 *     ... softmax of %s2 ...
 *     %o2 = dot_wait %o             -> wait_group 0
 * the softmax overlaps P V.  What the program computes is unchanged (DOT_WAIT is
 * the identity in the interpreter); only where the warpgroup waits moves.
 *
 * A wait may move past: pure ops without regions, other dots and their waits, global loads
 * (LOAD, BLOCK_LOAD), ASYNC_WAIT (a TMA arrival) and SMEM_READ.  It stops before:
 * a use of the result (in the op or in its regions), an op with regions, the
 * block's terminator, and every other op, in particular those that may rewrite
 * shared memory the dot reads (BARRIER, ASYNC_LOAD, ASYNC_ACQUIRE/RELEASE,
 * SMEM_WRITE) and those that become calls (print, assert): ptxas serializes
 * every wgmma of a function that has a call between a wgmma and its wait
 * (warning C7509).  A dot whose first use comes right after it is left as it is.
 *
 * Only on targets with wgmma (IR_TGT_WGMMA), and only for dots with pending = 0
 * (pipeline_expand's pending = 1 dots already stay in flight across iterations).
 * Code generation keeps a dot synchronous where wgmma cannot leave it in flight
 * (an operand copied to a scratch area that the next barrier frees, or a dot
 * that is not a wgmma), and its DOT_WAIT then waits for nothing.
 */
#include <stdlib.h>

#include "pass.h"

/* Whether op (or an op in its regions) uses v. */
static bool uses(IrFunc *f, const IrOp *op, IrVal v)
{
    for (uint32_t k = 0; k < op->nopnd; k++)
        if (ir_opnd(f, op, k) == v) return true;
    for (uint32_t r = 0; r < op->nregion; r++) {
        const IrBlock *B = ir_blk(f, op->region[r]);
        for (uint32_t i = 0; i < B->nops; i++)
            if (uses(f, ir_op(f, B->ops[i]), v)) return true;
    }
    return false;
}

/* Whether an in-flight dot's wait may move past op. */
static bool may_cross(const IrOp *op)
{
    if (op->nregion) return false;
    switch ((IrOpcode)op->opc) {
    case IR_DOT:
    case IR_DOT_WAIT:
    case IR_LOAD:
    case IR_BLOCK_LOAD:
    case IR_ASYNC_WAIT:
    case IR_SMEM_READ:
        return true;
    default:
        return (ir_opinfo[op->opc].flags & IR_PURE) && !(ir_opinfo[op->opc].flags & IR_TERM);
    }
}

static void run_block(IrFunc *f, IrBlk blk, PassCtx *cx)
{
    for (uint32_t i = 0; i < ir_blk(f, blk)->nops; i++) {
        uint32_t id = ir_blk(f, blk)->ops[i];
        IrOp *op = ir_op(f, id);
        for (uint32_t r = 0; r < op->nregion; r++) run_block(f, op->region[r], cx);
        op = ir_op(f, id);
        if (op->opc != IR_DOT || op->attr.i != 0) continue;
        IrVal res = ir_res(op, 0);
        uint32_t j = i + 1;
        IrBlock *B = ir_blk(f, blk);
        bool used = false;
        for (; j < B->nops; j++) {
            const IrOp *n = ir_op(f, B->ops[j]);
            if ((used = uses(f, n, res)) || !may_cross(n)) break;
        }
        if (j == i + 1 || j >= B->nops) continue; /* used at once (or no terminator: not verified IR) */
        for (uint32_t k = j + 1; k < B->nops && !used; k++) used = uses(f, ir_op(f, B->ops[k]), res);
        if (!used) continue; /* a dead dot: dce's */
        IrBuilder b;
        ir_builder_at_end(&b, f, blk);
        b.pos = j;
        b.loc = ir_op(f, id)->loc;
        IrVal w = ir_build1(&b, IR_DOT_WAIT, &res, 1, ir_vty(f, res), NULL);
        uint32_t wid = ir_def(f, w);
        ir_replace_all_uses(f, res, w);
        ir_set_opnd(f, wid, 0, res);
        ir_op(f, id)->attr.i = IR_DOT_ASYNC;
        cx->changed = true;
    }
}

void pass_dot_async(IrFunc *f, PassCtx *cx)
{
    if (!f->mod || !ir_target_has(f->mod->target, IR_TGT_WGMMA)) return;
    run_block(f, f->body, cx);
}
