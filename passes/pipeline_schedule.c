/* pipeline_schedule.c: scheduling, the second pipelining pass (pipeline.h).
 *
 * For every loop whose body holds loads with a latency (pipeline_latency), with
 * L the largest latency (S - 1 for a loop of S stages):
 *   - a load of latency l is issued l iterations before its use: stage L - l
 *     (0 for every load pipeline_latency marks, all of latency L);
 *   - the pure ops computing its offsets run in the same iteration as the load
 *     (the expansion recomputes them there): the load's stage;
 *   - every other op of the body stays in the iteration that uses the data:
 *     stage L.
 * An op's stage is stored as IrOp.stage = stage + 1 (0: unscheduled); ops in
 * nested regions go with the op that owns them.  A loop whose loads lost their
 * offsets' slice (the IR changed since latency assignment) is left unscheduled
 * and its latencies cleared, so that the expansion never sees half a schedule.
 */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

static void schedule(IrFunc *f, uint32_t loop, void *vcx)
{
    PassCtx *cx = vcx;
    IrBlock *blk = ir_blk(f, f->ops[loop].region[0]);
    int L = 0;
    for (uint32_t i = 0; i < blk->nops; i++)
        if (f->ops[blk->ops[i]].latency > L) L = f->ops[blk->ops[i]].latency;
    if (L == 0) return;
    uint8_t *slice = tl_xcalloc(f->nops, 1);
    uint8_t *stage = tl_xcalloc(f->nops, 1); /* stage + 1 of the loads' slices */
    bool ok = true;
    for (uint32_t i = 0; i < blk->nops && ok; i++) {
        uint32_t id = blk->ops[i];
        int lat = f->ops[id].latency;
        if (!lat) continue;
        memset(slice, 0, f->nops);
        if (f->ops[id].opc != IR_BLOCK_LOAD || !pipe_offset_slice(f, loop, id, slice)) {
            ok = false;
            break;
        }
        int s = L - lat;
        stage[id] = (uint8_t)(s + 1);
        for (uint32_t k = 0; k < f->nops; k++)
            if (slice[k] && (!stage[k] || stage[k] > s + 1)) stage[k] = (uint8_t)(s + 1);
    }
    for (uint32_t i = 0; i < blk->nops; i++) {
        IrOp *op = &f->ops[blk->ops[i]];
        if (!ok) {
            op->latency = 0;
            op->stage = 0;
        } else if (!(ir_opinfo[op->opc].flags & IR_TERM)) {
            op->stage = stage[blk->ops[i]] ? stage[blk->ops[i]] : (uint8_t)(L + 1);
        }
    }
    if (!ok)
        diag_remark(cx->diag, DIAG_REMARK_pipeline, f->ops[loop].loc,
                    "loop not pipelined after all: a pipelined load's offsets no longer come from the induction "
                    "variable and loop invariants alone");
    free(slice);
    free(stage);
    cx->changed = true;
}

void pass_pipeline_schedule(IrFunc *f, PassCtx *cx)
{
    pipe_for_each_loop(f, schedule, cx);
}
