/* lower_async.c: the pipelining ops (ir/ops.def): SMEM_ALLOC, ASYNC_LOAD,
 * ASYNC_WAIT, SMEM_READ, BARRIER, DOT_WAIT, TMA_READY, on sm_90 TMA and mbarriers.
 *
 * 1. Plan (cg_async_plan, before the signature): every SMEM_ALLOC gets a static
 *    region of dynamic shared memory, its stages 1024-aligned, and one 8-byte
 *    mbarrier per stage after all the buffers; the scratch area (cg_smem) starts
 *    after them.  Every ASYNC_LOAD gets a TMA descriptor of its view (a kernel
 *    parameter): box [R rows, span / ebytes columns] with the swizzle of
 *    cg_smem_layout, identical ones shared; each becomes a 128-byte
 *    grid_constant kernel parameter after the view's (meta_emit.h's ABI).  A
 *    view whose every ASYNC_LOAD sits in the then-branch of an IF whose
 *    condition implies TMA_READY of that view has optional descriptors: the
 *    launcher passes zeros where it cannot describe the argument.
 * 2. Entry (cg_async_entry): the buffers' base, aligned at run time to 1024.
 * 3. The ops:
 *    SMEM_ALLOC   thread 0 initialises the stage barriers (arrival count 1),
 *                 fence.mbarrier_init and fence.proxy.async make them visible to
 *                 the TMA unit, a CTA barrier makes them visible to all threads.
 *                 One that runs again (inside a loop) starts over at phase 0 as
 *                 the IR's phases assume: a barrier (every thread is past its
 *                 waits on the old ones), then thread 0 invalidates each and
 *                 initialises it anew.  mbarrier.inval needs a valid barrier, so
 *                 such buffers' barriers are also initialised once at the entry.
 *    ASYNC_LOAD   thread 0: mbarrier.arrive.expect_tx with the stage's bytes (TMA
 *                 counts whole boxes, out-of-bounds zeros included), then one
 *                 cp.async.bulk.tensor.2d per column strip (and 256-row chunk),
 *                 completing on the stage's barrier.
 *    ASYNC_WAIT   every thread spins on mbarrier.try_wait.parity.
 *    SMEM_READ    ld.shared of the stage into the result's registers (16-byte
 *                 vectors where the layouts allow); a DOT reads the stage itself
 *                 (lower_dot.c), and then these loads are dead and LLVM drops them.
 *    BARRIER      bar.sync 0.
 *    DOT_WAIT     wgmma.wait_group 0 on the accumulator's registers (sm_90a; a
 *                 DOT elsewhere completes synchronously).
 *    TMA_READY    whether every descriptor of the view has a nonzero byte: a map
 *                 the driver built always does, the launcher's fallback is zeros.
 */
#include "lower_int.h"

#include <stdlib.h>
#include <string.h>

static LLVMValueRef k32(Cg *cg, uint32_t v) { return LLVMConstInt(cg->i32, v, 0); }

/* An integer scalar operand as i32 (offsets, stages and phases fit). */
static LLVMValueRef as_i32(Cg *cg, IrVal v)
{
    LLVMValueRef x = cg_reg(cg, v, 0);
    unsigned w = LLVMGetIntTypeWidth(LLVMTypeOf(x));
    if (w > 32) return LLVMBuildTrunc(cg->b, x, cg->i32, "");
    if (w < 32) return dt_is_signed((DType)ir_vty(cg->f, v).dt) ? LLVMBuildSExt(cg->b, x, cg->i32, "")
                                                                 : LLVMBuildZExt(cg->b, x, cg->i32, "");
    return x;
}

static void asm_call(Cg *cg, const char *text, const char *cons, LLVMValueRef *args, unsigned n)
{
    cg_inline_asm(cg, cg->vd, text, cons, args, n, true);
}

static void user_error(Cg *cg, IrOp *op, const char *msg, IrType t)
{
    StrBuf b = {0};
    ir_ty_print(&b, t);
    diag_error(cg->d, op->loc, "%s: %s", b.s ? b.s : "?", msg);
    sb_free(&b);
    cg->failed = true;
}

SharedLayout cg_smem_layout(IrType smem)
{
    IrType t = ir_ty_smem_tile(smem);
    int sw = layout_swizzle_for(t, t.rank - 1);
    TL_ASSERT(t.rank == 2 && sw >= 0, "codegen");
    return layout_shared_swizzled(t, t.rank - 1, (LayoutSwizzle)sw);
}

/* The buffer an smem value is (it is always an SMEM_ALLOC's result). */
static const CgBuf *buf_of(Cg *cg, IrVal v)
{
    uint32_t d = ir_def(cg->f, v);
    TL_ASSERT(d != UINT32_MAX && ir_op(cg->f, d)->opc == IR_SMEM_ALLOC, "codegen");
    return &cg->bufs[cg->async_idx[d]];
}

/* ---- 1. the plan ------------------------------------------------------------------ */

/* Whether op can run more than once in a launch: some op around it is a loop. */
static bool in_loop(IrFunc *f, const IrOp *op)
{
    for (uint32_t p = ir_blk(f, op->parent)->parent_op; p != UINT32_MAX; p = ir_blk(f, ir_op(f, p)->parent)->parent_op)
        if (ir_op(f, p)->opc == IR_FOR || ir_op(f, p)->opc == IR_WHILE) return true;
    return false;
}

/* Whether i1 value c can hold only where TMA_READY(view) does (an AND of such terms counts). */
static bool implies_ready(IrFunc *f, IrVal c, IrVal view, int depth)
{
    uint32_t d = ir_def(f, c);
    if (d == UINT32_MAX || depth > 16) return false;
    IrOp *op = ir_op(f, d);
    if (op->opc == IR_TMA_READY) return ir_opnd(f, op, 0) == view;
    if (op->opc == IR_AND && ir_vty(f, c).dt == DT_I1)
        return implies_ready(f, ir_opnd(f, op, 0), view, depth + 1) ||
               implies_ready(f, ir_opnd(f, op, 1), view, depth + 1);
    return false;
}

/* Whether op runs only where TMA_READY(view) holds: it is in the then-branch of such an IF. */
static bool guarded(IrFunc *f, const IrOp *op, IrVal view)
{
    for (IrBlk b = op->parent; ir_blk(f, b)->parent_op != UINT32_MAX;) {
        IrOp *p = ir_op(f, ir_blk(f, b)->parent_op);
        if (p->opc == IR_IF && p->region[0] == b && implies_ready(f, ir_opnd(f, p, 0), view, 0)) return true;
        b = p->parent;
    }
    return false;
}

static int arch_sm(const Cg *cg) { return atoi(cg->target->arch + 3); }

static bool plan_buffer(Cg *cg, IrOp *op, CgBuf *b, uint32_t *off)
{
    IrType t = ir_vty(cg->f, ir_res(op, 0)), tile = ir_ty_smem_tile(t);
    if (tile.rank != 2 || layout_swizzle_for(tile, 1) < 0) {
        user_error(cg, op, "shared-memory buffers hold 2-d tiles whose rows are at least 16 bytes", t);
        return false;
    }
    memset(b, 0, sizeof *b);
    b->tile = tile;
    b->S = cg_smem_layout(t);
    b->stages = (uint32_t)t.dims[0];
    b->stage_bytes = ((uint32_t)ir_ty_numel(tile) * (uint32_t)dt_bytes((DType)t.dt) + 1023) & ~1023u;
    b->off = *off;
    b->again = in_loop(cg->f, op);
    *off += b->stages * b->stage_bytes;
    return true;
}

/* The descriptor ASYNC_LOAD op needs (its view's optional word given). */
static bool plan_load(Cg *cg, IrOp *op, bool optional, CgTmaDesc *t)
{
    IrFunc *f = cg->f;
    IrVal view = ir_opnd(f, op, 0);
    const CgBuf *b = buf_of(cg, ir_opnd(f, op, 1));
    if (arch_sm(cg) < 90) {
        user_error(cg, op, "async_load needs TMA, which needs sm_90 or later", ir_vty(f, view));
        return false;
    }
    if (!f->vals[view].is_arg || f->vals[view].def != f->body) {
        user_error(cg, op, "async_load reads a tensor that is not a kernel parameter (TMA describes those only)",
                   ir_vty(f, view));
        return false;
    }
    uint32_t span = 16u << b->S.swizzle, R = (uint32_t)b->tile.dims[0];
    memset(t, 0, sizeof *t);
    t->param = f->vals[view].idx;
    t->rank = 2;
    t->box[0] = span / b->S.ebytes;
    t->box[1] = R < 256 ? R : 256; /* a power of two: more rows are whole boxes of 256 */
    t->swizzle = (uint8_t)b->S.swizzle; /* LayoutSwizzle and CgTmaSwizzle count alike */
    t->optional = optional;
    return true;
}

bool cg_async_plan(Cg *cg)
{
    IrFunc *f = cg->f;
    cg->async_idx = ARENA_ARRAY(cg->scratch, uint32_t, f->nops ? f->nops : 1);
    uint32_t nbufs = 0, nloads = 0;
    for (uint32_t i = 0; i < f->nops; i++) {
        if (f->ops[i].dead) continue;
        nbufs += f->ops[i].opc == IR_SMEM_ALLOC;
        nloads += f->ops[i].opc == IR_ASYNC_LOAD;
    }
    if (!nbufs) return true;
    cg->bufs = ARENA_ARRAY(cg->scratch, CgBuf, nbufs);
    uint32_t off = 0;
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        if (op->dead || op->opc != IR_SMEM_ALLOC) continue;
        if (!plan_buffer(cg, op, &cg->bufs[cg->nbufs], &off)) return false;
        cg->async_idx[i] = cg->nbufs++;
    }
    for (uint32_t k = 0; k < cg->nbufs; k++) {
        cg->bufs[k].bar_off = off;
        off += 8 * cg->bufs[k].stages;
    }
    cg->buf_bytes = (off + 127) & ~127u; /* the scratch area after them keeps __tilec_smem's alignment */
    if (!nloads) return true;
    /* a view's descriptors are optional when every load of it is guarded */
    uint8_t *opt = ARENA_ARRAY(cg->scratch, uint8_t, f->nparams);
    memset(opt, 1, f->nparams);
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        IrVal view = op->opc == IR_ASYNC_LOAD ? ir_opnd(f, op, 0) : IR_NONE;
        if (op->dead || !view || !f->vals[view].is_arg || f->vals[view].def != f->body) continue;
        if (!guarded(f, op, view)) opt[f->vals[view].idx] = 0;
    }
    cg->tma = ARENA_ARRAY(cg->scratch, CgTmaDesc, nloads);
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        if (op->dead || op->opc != IR_ASYNC_LOAD) continue;
        CgTmaDesc t;
        IrVal view = ir_opnd(f, op, 0);
        if (!plan_load(cg, op, f->vals[view].is_arg && opt[f->vals[view].idx], &t)) return false;
        uint32_t j = 0; /* t was zeroed whole, so identical descriptors compare equal byte for byte */
        while (j < cg->ntma && memcmp(&cg->tma[j], &t, sizeof t) != 0) j++;
        if (j == cg->ntma) memcpy(&cg->tma[cg->ntma++], &t, sizeof t);
        cg->async_idx[i] = j;
    }
    return true;
}

/* ---- 2. the entry ------------------------------------------------------------------- */

static LLVMValueRef bar32(Cg *cg, const CgBuf *b, LLVMValueRef stage)
{
    LLVMValueRef off = LLVMBuildAdd(cg->b, k32(cg, b->bar_off), LLVMBuildShl(cg->b, stage, k32(cg, 3), ""), "");
    return LLVMBuildAdd(cg->b, cg->bufs_base32, off, "bar");
}

/* Thread 0 only: each stage barrier of b initialised to one arrival (invalidated first: again). */
static void init_barriers(Cg *cg, const CgBuf *b, bool again)
{
    for (uint32_t s = 0; s < b->stages; s++) {
        LLVMValueRef a = bar32(cg, b, k32(cg, s));
        if (again) asm_call(cg, "mbarrier.inval.shared::cta.b64 [$0];", "r,~{memory}", &a, 1);
        asm_call(cg, "mbarrier.init.shared::cta.b64 [$0], 1;", "r,~{memory}", &a, 1);
    }
}

/* After thread 0 initialised barriers: visible to the TMA unit, then to every thread. */
static void publish_barriers(Cg *cg, LLVMBasicBlockRef join)
{
    cg_asm_void(cg, "fence.mbarrier_init.release.cluster;");
    cg_asm_void(cg, "fence.proxy.async.shared::cta;");
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
    cg_barrier(cg);
}

void cg_async_entry(Cg *cg)
{
    if (!cg->nbufs) return;
    LLVMValueRef a32 = LLVMBuildPtrToInt(cg->b, cg->smem, cg->i32, "");
    cg->bufs_base32 = LLVMBuildAnd(cg->b, LLVMBuildAdd(cg->b, a32, k32(cg, 1023), ""), k32(cg, ~1023u), "bufs.base");
    LLVMValueRef pad = LLVMBuildSub(cg->b, cg->bufs_base32, a32, "");
    cg->bufs_base = LLVMBuildGEP2(cg->b, cg->i8, cg->smem, &pad, 1, "");
    LLVMValueRef end = k32(cg, cg->buf_bytes);
    cg->smem = LLVMBuildGEP2(cg->b, cg->i8, cg->bufs_base, &end, 1, "scratch");
    bool any = false;
    for (uint32_t k = 0; k < cg->nbufs; k++) any |= cg->bufs[k].again;
    if (!any) return;
    LLVMBasicBlockRef join = cg_thread0(cg);
    for (uint32_t k = 0; k < cg->nbufs; k++)
        if (cg->bufs[k].again) init_barriers(cg, &cg->bufs[k], false);
    publish_barriers(cg, join);
}

/* ---- 3. the ops ----------------------------------------------------------------------- */

/* Whether the stage SMEM_READ `rd` read still holds what it read when op `user` runs:
 * both in one block, and no ASYNC_LOAD (nor an op with regions, which might hold
 * one) between them.  The passes put the read right before its DOT. */
static bool unchanged_until(IrFunc *f, uint32_t rd, uint32_t user)
{
    IrBlock *B = ir_blk(f, ir_op(f, rd)->parent);
    if (ir_op(f, user)->parent != ir_op(f, rd)->parent) return false;
    uint32_t i = 0;
    while (B->ops[i] != rd) i++;
    for (i++; i < B->nops && B->ops[i] != user; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        if (op->opc == IR_ASYNC_LOAD || op->nregion) return false;
    }
    return i < B->nops;
}

bool cg_buf_operand(Cg *cg, IrVal v, uint32_t user, CgBufRef *out)
{
    IrFunc *f = cg->f;
    bool trans = false;
    uint32_t d = ir_def(f, v);
    if (d != UINT32_MAX && ir_op(f, d)->opc == IR_TRANS && ir_op(f, d)->attr.shape[0] == 1) {
        trans = true;
        d = ir_def(f, ir_opnd(f, ir_op(f, d), 0));
    }
    if (d == UINT32_MAX || ir_op(f, d)->opc != IR_SMEM_READ || !unchanged_until(f, d, user)) return false;
    IrOp *rd = ir_op(f, d);
    out->buf = buf_of(cg, ir_opnd(f, rd, 0));
    out->stage = ir_opnd(f, rd, 1);
    out->trans = trans;
    return true;
}

static LLVMValueRef stage_off(Cg *cg, const CgBuf *b, IrVal stage)
{
    LLVMValueRef s = LLVMBuildMul(cg->b, as_i32(cg, stage), k32(cg, b->stage_bytes), "");
    return LLVMBuildAdd(cg->b, k32(cg, b->off), s, "");
}

LLVMValueRef cg_buf_stage32(Cg *cg, const CgBufRef *r)
{
    return LLVMBuildAdd(cg->b, cg->bufs_base32, stage_off(cg, r->buf, r->stage), "stage");
}

void cg_lower_SMEM_ALLOC(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)op;
    const CgBuf *b = &cg->bufs[cg->async_idx[opid]];
    if (b->again) cg_barrier(cg); /* nobody waits on the old barriers any more */
    LLVMBasicBlockRef join = cg_thread0(cg);
    init_barriers(cg, b, b->again);
    publish_barriers(cg, join);
}

void cg_lower_ASYNC_LOAD(Cg *cg, uint32_t opid, IrOp *op)
{
    IrFunc *f = cg->f;
    const CgBuf *b = buf_of(cg, ir_opnd(f, op, 1));
    const CgTmaDesc *t = &cg->tma[cg->async_idx[opid]];
    LLVMValueRef stage = as_i32(cg, ir_opnd(f, op, 2)), row0 = as_i32(cg, ir_opnd(f, op, 3));
    LLVMValueRef col0 = as_i32(cg, ir_opnd(f, op, 4));
    LLVMValueRef dst = LLVMBuildAdd(cg->b, cg->bufs_base32, stage_off(cg, b, ir_opnd(f, op, 2)), "");
    LLVMValueRef bar = bar32(cg, b, stage);
    LLVMValueRef desc = LLVMBuildPtrToInt(cg->b, cg->tma_param[cg->async_idx[opid]], cg->i64, "");
    uint32_t R = (uint32_t)b->tile.dims[0], C = (uint32_t)b->tile.dims[1], eb = b->S.ebytes;
    uint32_t span = t->box[0] * eb;
    LLVMBasicBlockRef join = cg_thread0(cg);
    LLVMValueRef ex[2] = {bar, k32(cg, R * C * eb)};
    asm_call(cg, "{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [$0], $1;\n}", "r,r,~{memory}",
             ex, 2);
    /* strip s (columns s * box[0]...), rows q * box[1]...: at s * R * span + q * box[1] * span */
    for (uint32_t s = 0; s < C * eb / span; s++)
        for (uint32_t q = 0; q < R / t->box[1]; q++) {
            LLVMValueRef a[5] = {LLVMBuildAdd(cg->b, dst, k32(cg, s * R * span + q * t->box[1] * span), ""), desc,
                                 LLVMBuildAdd(cg->b, col0, k32(cg, s * t->box[0]), ""),
                                 LLVMBuildAdd(cg->b, row0, k32(cg, q * t->box[1]), ""), bar};
            asm_call(cg, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                         "[$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r,~{memory}", a, 5);
        }
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
}

void cg_lower_ASYNC_WAIT(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    LLVMValueRef a[2] = {bar32(cg, buf_of(cg, ir_opnd(f, op, 0)), as_i32(cg, ir_opnd(f, op, 1))),
                         as_i32(cg, ir_opnd(f, op, 2))};
    /* the label is local to the braces, so the block may appear any number of times */
    asm_call(cg, "{\n.reg .pred done;\nLAB_WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
                 "@!done bra LAB_WAIT;\n}", "r,r,~{memory}", a, 2);
}

void cg_lower_SMEM_READ(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    IrVal res = ir_res(op, 0);
    const CgBuf *b = buf_of(cg, ir_opnd(f, op, 0));
    const Layout *L = cg_layout(cg, res);
    LLVMValueRef off = stage_off(cg, b, ir_opnd(f, op, 1));
    LLVMValueRef base = LLVMBuildGEP2(cg->b, cg->i8, cg->bufs_base, &off, 1, "");
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, layout_nregs(L));
    cg_smem_load_shared(cg, L, &b->S, cg_dtype(cg, (DType)b->tile.dt), base, out);
    cg_define(cg, res, out, layout_nregs(L));
}

void cg_lower_BARRIER(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    (void)op;
    cg_barrier(cg);
}

void cg_lower_DOT_WAIT(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    IrVal x = ir_opnd(f, op, 0), res = ir_res(op, 0);
    const Layout *L = cg_layout(cg, res);
    uint32_t n = layout_nregs(L);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    if (!layout_arch_has_wgmma(cg->target->arch)) { /* every DOT here completed when it returned */
        cg_value_as(cg, x, L, out);
        cg_define(cg, res, out, n);
        return;
    }
    /* wait on the registers as they are, then see them in the result's layout */
    CgVal *cv = cg_val(cg, x), saved = *cv;
    LLVMValueRef *done = ARENA_ARRAY(cg->scratch, LLVMValueRef, cv->nregs);
    memcpy(done, cv->regs, cv->nregs * sizeof *done);
    cg_wgmma_wait(cg, 0, done, cv->nregs);
    cv->regs = done;
    cg_value_as(cg, x, L, out);
    *cv = saved;
    cg_define(cg, res, out, n);
}

void cg_lower_TMA_READY(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    IrVal view = ir_opnd(f, op, 0);
    LLVMValueRef ready = LLVMConstInt(cg->i1, 1, 0);
    for (uint32_t j = 0; j < cg->ntma; j++) {
        if (!f->vals[view].is_arg || cg->tma[j].param != f->vals[view].idx) continue;
        LLVMValueRef any = LLVMConstInt(cg->i64, 0, 0);
        for (uint32_t w = 0; w < 16; w++) {
            LLVMValueRef i = k32(cg, w);
            LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i64, cg->tma_param[j], &i, 1, "");
            LLVMValueRef word = LLVMBuildLoad2(cg->b, cg->i64, p, "");
            LLVMSetAlignment(word, 8);
            any = LLVMBuildOr(cg->b, any, word, "");
        }
        ready = LLVMBuildAnd(cg->b, ready, LLVMBuildICmp(cg->b, LLVMIntNE, any, LLVMConstInt(cg->i64, 0, 0), ""), "");
    }
    cg_define(cg, ir_res(op, 0), &ready, 1);
}
