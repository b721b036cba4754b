/* lower_async.c: the pipelining ops (SMEM_ALLOC, ASYNC_LOAD, ASYNC_WAIT,
 * SMEM_READ, BARRIER, DOT_WAIT, TMA_READY).  WORK IN PROGRESS: filled in by the
 * TMA/mbarrier work of issue 4. */
#include "lower_int.h"

#define NOT_YET(ID)                                                                           \
    void cg_lower_##ID(Cg *cg, uint32_t opid, IrOp *op)                                       \
    {                                                                                         \
        (void)opid;                                                                           \
        diag_error(cg->d, op->loc, "codegen: %s is not lowered yet", ir_opinfo[op->opc].name); \
        cg->failed = true;                                                                    \
    }
NOT_YET(SMEM_ALLOC)
NOT_YET(ASYNC_LOAD)
NOT_YET(ASYNC_WAIT)
NOT_YET(SMEM_READ)
NOT_YET(BARRIER)
NOT_YET(DOT_WAIT)
NOT_YET(TMA_READY)
