/* pipeline.h: what the three software-pipelining passes share (private to passes/).
 *
 *   pipeline_latency   which block loads of a loop to pipeline, and how far ahead:
 *                      IrOp.latency = S - 1 on each, FOR's stages = S
 *   pipeline_schedule  the stage of every op of the loop body: IrOp.stage = 1 + (0 for
 *                      the pipelined loads and the ops computing their offsets, S - 1
 *                      for the rest)
 *   pipeline_expand    rewrites each scheduled loop into shared-memory stages filled by
 *                      asynchronous (TMA) loads S - 1 iterations ahead, with a prologue,
 *                      mbarrier waits, tensor-core dots left in flight across iterations,
 *                      and the original loop kept as the fallback where the runtime could
 *                      not describe a tensor to the TMA unit (lang/PIPELINING.md).
 *
 * Each pass reads only the annotations the previous one left, so each runs alone
 * (--pass=NAME) on IR that carries them, and --dump-after=NAME shows them.
 */
#ifndef TILEC_PIPELINE_H
#define TILEC_PIPELINE_H

#include "pass.h"

/* Dynamic shared memory the stage buffers of one loop may take: what one CTA
 * of the target may have less PIPE_SMEM_RESERVE, room for the epilogue's
 * layout conversions (160 KiB of sm_90a's 227); 0 without a target. */
#define PIPE_SMEM_RESERVE (67u * 1024u)
static inline uint32_t pipe_smem_budget(const IrTarget *t)
{
    return t && t->smem_per_cta > PIPE_SMEM_RESERVE ? t->smem_per_cta - PIPE_SMEM_RESERVE : 0;
}
/* The deepest pipeline the compiler picks without a hint. */
#define PIPE_AUTO_STAGES 4
/* A buffer stage is aligned to the 1024-byte repeat of the 128-byte swizzle. */
#define PIPE_STAGE_ALIGN 1024u

/* Calls fn on every FOR op of f, innermost loops first (post-order). */
void pipe_for_each_loop(IrFunc *f, void (*fn)(IrFunc *f, uint32_t loop, void *ctx), void *ctx);

/* Whether v is defined outside the loop `loop` (a kernel parameter, or an op or
 * block argument not nested in the loop's region). */
bool pipe_outside(IrFunc *f, uint32_t loop, IrVal v);
/* Whether op (or an op in its regions) writes global memory: a store or an atomic. */
bool pipe_op_writes_memory(IrFunc *f, const IrOp *op);

/* The offset operands of block load `ld` are computed, inside the loop body,
 * only from the induction variable, values defined outside the loop, pure ops
 * of the body and, where the loop writes no memory (no store or atomic in it),
 * pointer loads of the body (a paged cache's block-table entry): marks those ops
 * in `slice` (indexed by op id) and returns true; false when an offset depends
 * on anything else. */
bool pipe_offset_slice(IrFunc *f, uint32_t loop, uint32_t ld, uint8_t *slice);

/* The 2-d tile through which the data of block load `ld` reaches its users: the
 * load's own result when the view is 2-d; for a view of higher rank whose block
 * has extent 1 along every dimension but the last and at most one other (a box
 * over the last two dims, as attention's load(K, [b, h, n0, 0], [1, 1, BN, D]), or
 * over the last and an earlier one, as a paged cache's load(Kc, [page, 0, h, 0],
 * [1, P, 1, D])), the result of the load's only user, a RESHAPE in the same block
 * to [rows, columns].  IR_NONE otherwise.  The stage buffer holds that 2-d tile. */
IrVal pipe_load_tile(IrFunc *f, uint32_t ld);

/* For such a load: how many unit dims lie between the tile's rows and its columns in
 * the block (0 for a box over the last two dims): ASYNC_LOAD's gap (ops.def). */
int pipe_load_gap(IrFunc *f, uint32_t ld);

/* The loop-invariant dot operands of loop `loop` that pipeline_expand stages in
 * shared memory once, before the loop, instead of copying them there on every
 * iteration (attention's Q in dot(q, trans(k))): distinct tiles defined outside
 * the loop, of 1- or 2-byte elements in 2-d tiles whose rows hold at least 16
 * bytes, every use of which in the loop body is operand a or b of a dot the
 * tensor cores run from shared memory (wgmma: layout_wgmma_shape holds for the
 * kernel's warps), directly or through a TRANS in the body.  Returns how many
 * (at most `cap`), written to out. */
uint32_t pipe_invariant_operands(IrFunc *f, uint32_t loop, IrVal *out, uint32_t cap);

/* Bytes one stage of a buffer for tile t takes (aligned to PIPE_STAGE_ALIGN). */
uint32_t pipe_stage_bytes(IrType t);

#endif
