/* lower_async.c: the pipelining ops (ir/ops.def): SMEM_ALLOC, ASYNC_LOAD,
 * ASYNC_WAIT, SMEM_READ, SMEM_WRITE, BARRIER, DOT_WAIT, TMA_READY (TMA and mbarriers,
 * on targets with IR_TGT_TMA); and BLOCK_STOREs through shared memory and TMA
 * stores (IR_TGT_TMA_STORE).
 *
 * 1. Plan (cg_async_plan, before the signature): every SMEM_ALLOC gets a static
 *    region of dynamic shared memory, its stages 1024-aligned (shared with the
 *    buffers of blocks disjoint from its own), and one 8-byte mbarrier per stage
 *    after all the buffers; the scratch area (cg_smem) starts
 *    after them.  Every ASYNC_LOAD gets a TMA descriptor of its view (a kernel
 *    parameter): box [R rows, span / ebytes columns] with the swizzle of
 *    cg_smem_layout, identical ones shared; each becomes a 128-byte
 *    grid_constant kernel parameter after the view's (meta_emit.h's ABI).  A
 *    view whose every ASYNC_LOAD sits in the then-branch of an IF whose
 *    condition implies TMA_READY of that view has optional descriptors: the
 *    launcher passes zeros where it cannot describe the argument.  Every
 *    BLOCK_STORE that store_plan takes (an accumulator-like tile into a 2-d view
 *    parameter, reached by every thread, whose staging fits beside the buffers)
 *    into a view the kernel only writes, all of whose stores it takes, gets a
 *    descriptor too: box [R rows, span / ebytes columns] with the swizzle
 *    of cg_tma_store_layout, optional unless a load of the view needs it (the
 *    store tests it itself); at most 16 descriptors, then plain stores.
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
 *                 cp.async.bulk.tensor.Nd per column strip (and 256-row chunk),
 *                 completing on the stage's barrier; N is the view's rank, the
 *                 box spanning its last dim and, gap dims before the one before it,
 *                 the tile's rows (extent 1 along the others: ir_async_block).
 *    ASYNC_WAIT   every thread spins on mbarrier.try_wait.parity.
 *    SMEM_READ    ld.shared of the stage into the result's registers (16-byte
 *                 vectors where the layouts allow); a DOT reads the stage itself
 *                 (lower_dot.c), and then these loads are dead and LLVM drops them.
 *    SMEM_WRITE   barrier, st.shared of the tile in the buffer's layout,
 *                 fence.proxy.async, barrier.
 *    BARRIER      bar.sync 0.
 *    DOT_WAIT     wgmma.wait_group 0 on the accumulator's registers (sm_90a; a
 *                 DOT elsewhere completes synchronously).
 *    TMA_READY    whether every descriptor of the view has a nonzero byte: a map
 *                 the driver built always does, the launcher's fallback is zeros.
 *    warp specialization (passes/warp_specialize.c; the producer's branch is lowered in
 *    lower.c): a buffer that ASYNC_ACQUIRE / ASYNC_RELEASE name has a second
 *    mbarrier per stage, "empty", initialised with the SMEM_ALLOC's to one arrival
 *    of every consumer thread (32 warps);
 *    ASYNC_ACQUIRE  the producer warp spins on the stage's "empty" barrier
 *                 (try_wait.parity); its ASYNC_LOADs are issued by its lane 0
 *                 (cg->elect_tid), not thread 0;
 *    ASYNC_RELEASE  every consumer thread arrives on the stage's "empty" barrier.
 *    BLOCK_STORE  (a TMA store; lower_mem.c calls cg_tma_store) per group of
 *                 column strips (normally all): a barrier, every thread's pairs
 *                 into the scratch area in the staging layout (st.shared, the
 *                 swizzle keeping a warp's 16-bit pairs free of bank conflicts),
 *                 fence.proxy.async, a barrier; then where the descriptor is valid
 *                 thread 0 issues one cp.async.bulk.tensor.2d.global.shared::cta
 *                 per strip (and 256-row chunk), commit_group, wait_group.read 0
 *                 (TMA clips the boxes at the view's edges), elsewhere every thread
 *                 reads each strip back as 16-byte vectors and stores them
 *                 (cg_store_staged).  No barrier after: every user of the scratch
 *                 area starts with one, and thread 0 reaches it only once TMA has
 *                 read the staging area, so a loop storing tile after tile (a
 *                 persistent kernel) never overwrites it early; at the kernel's
 *                 end thread 0 has waited too.  The tile reaches global memory
 *                 asynchronously, so only views the kernel never reads get TMA
 *                 stores (all of a view's stores, or none), and a store that may
 *                 follow another of the view (in a loop, or a second op) first
 *                 has thread 0 wait until the earlier ones are written (wait_group
 *                 0: long done by then), which keeps overlapping stores in order.
 */
#include "lower_int.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/meta.h"

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

/* Program order: pos[op] when op starts, fin[op] once its regions are done (one counter). */
static void number_ops(IrFunc *f, IrBlk b, uint32_t *pos, uint32_t *fin, uint32_t *n)
{
    for (uint32_t i = 0; i < ir_blk(f, b)->nops; i++) {
        uint32_t id = ir_blk(f, b)->ops[i];
        pos[id] = (*n)++;
        for (uint32_t r = 0; r < ir_op(f, id)->nregion; r++) number_ops(f, ir_op(f, id)->region[r], pos, fin, n);
        fin[id] = (*n)++;
    }
}

/* Whether block a is block b or nested in it. */
static bool block_in(IrFunc *f, IrBlk a, IrBlk b)
{
    for (;;) {
        if (a == b) return true;
        uint32_t p = ir_blk(f, a)->parent_op;
        if (p == UINT32_MAX) return false;
        a = ir_op(f, p)->parent;
    }
}

/* The end of the program-order span in which op u touches a buffer allocated at `alloc`: u
 * itself, or the whole of the outermost loop around u that does not hold the allocation
 * (the loop comes back to u). */
static uint32_t use_end(IrFunc *f, uint32_t u, uint32_t alloc, const uint32_t *fin)
{
    uint32_t end = fin[u];
    for (uint32_t p = ir_blk(f, ir_op(f, u)->parent)->parent_op; p != UINT32_MAX;
         p = ir_blk(f, ir_op(f, p)->parent)->parent_op) {
        IrOp *po = ir_op(f, p);
        bool holds = false;
        for (uint32_t r = 0; r < po->nregion; r++) holds |= block_in(f, ir_op(f, alloc)->parent, po->region[r]);
        if (holds) break;
        if ((po->opc == IR_FOR || po->opc == IR_WHILE) && fin[p] > end) end = fin[p];
    }
    return end;
}

/* A dot `d` that leaves its wgmma in flight, inside a loop: pipeline_expand waits for its
 * last group right after the loop (a DOT_WAIT on the loop's result, in the loop's block).
 * Extends b's span to that wait and says so; false where there is no such wait. */
static bool waited_after(IrFunc *f, uint32_t d, uint32_t alloc, const uint32_t *pos, const uint32_t *fin, CgBuf *b)
{
    uint32_t loop = UINT32_MAX;
    for (uint32_t p = ir_blk(f, ir_op(f, d)->parent)->parent_op; p != UINT32_MAX;
         p = ir_blk(f, ir_op(f, p)->parent)->parent_op) {
        IrOp *po = ir_op(f, p);
        if (po->opc != IR_FOR && po->opc != IR_WHILE) continue;
        if (block_in(f, ir_op(f, alloc)->parent, po->region[0])) break;
        loop = p;
    }
    if (loop == UINT32_MAX) return false;
    IrOp *L = ir_op(f, loop);
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *w = ir_op(f, i);
        if (w->dead || w->opc != IR_DOT_WAIT || w->parent != L->parent || pos[i] < fin[loop]) continue;
        for (uint32_t r = 0; r < L->nres; r++)
            if (ir_opnd(f, w, 0) == ir_res(L, r)) {
                if (fin[i] > b->live1) b->live1 = fin[i];
                return true;
            }
    }
    return false;
}

/* The DOT_WAIT that completes dot d (pending = IR_DOT_ASYNC) in d's block; UINT32_MAX: none. */
static uint32_t async_wait_of(IrFunc *f, uint32_t d)
{
    const IrBlock *B = ir_blk(f, ir_op(f, d)->parent);
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *w = ir_op(f, B->ops[i]);
        if (w->opc == IR_DOT_WAIT && ir_opnd(f, w, 0) == ir_res(ir_op(f, d), 0)) return B->ops[i];
    }
    return UINT32_MAX;
}

/* The program-order span [live0, live1] in which buffer `alloc` holds data: from its
 * SMEM_ALLOC to its last use (ASYNC_LOAD / WAIT / ACQUIRE / RELEASE, SMEM_READ / WRITE, and
 * the DOTs that read a stage directly, through a TRANS), a use inside a loop counting the
 * whole loop.  A dot that leaves its wgmma in flight (pending > 0) is waited for past the
 * loop: to that DOT_WAIT (waited_after), or, where there is none, to the end of the
 * SMEM_ALLOC's block. */
static void live_span(IrFunc *f, uint32_t alloc, const uint32_t *pos, const uint32_t *fin, CgBuf *b)
{
    IrVal buf = ir_res(ir_op(f, alloc), 0);
    b->live0 = pos[alloc];
    b->live1 = fin[alloc];
    bool pending = false;
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = ir_op(f, i);
        if (op->dead) continue;
        bool uses = false;
        for (uint32_t k = 0; k < op->nopnd; k++) uses |= ir_opnd(f, op, k) == buf;
        if (!uses) continue;
        uint32_t e = use_end(f, i, alloc, fin);
        if (e > b->live1) b->live1 = e;
        if (op->opc != IR_SMEM_READ) continue;
        for (uint32_t j = 0; j < f->nops; j++) { /* the dots reading the stage, directly or through a TRANS */
            IrOp *d = ir_op(f, j);
            if (d->dead || (d->opc != IR_DOT && d->opc != IR_TRANS)) continue;
            bool reads = false;
            for (uint32_t k = 0; k < d->nopnd; k++) reads |= ir_opnd(f, d, k) == ir_res(op, 0);
            if (!reads) continue;
            uint32_t jd = j;
            if (d->opc == IR_TRANS) { /* its dot */
                jd = UINT32_MAX;
                for (uint32_t q = 0; q < f->nops && jd == UINT32_MAX; q++) {
                    IrOp *dq = ir_op(f, q);
                    if (dq->dead || dq->opc != IR_DOT) continue;
                    for (uint32_t k = 0; k < dq->nopnd; k++)
                        if (ir_opnd(f, dq, k) == ir_res(d, 0)) jd = q;
                }
                if (jd == UINT32_MAX) continue;
            }
            e = use_end(f, jd, alloc, fin);
            if (e > b->live1) b->live1 = e;
            if (ir_op(f, jd)->attr.i == IR_DOT_ASYNC) { /* read until its DOT_WAIT, in its block */
                uint32_t w = async_wait_of(f, jd);
                if (w != UINT32_MAX) {
                    e = use_end(f, w, alloc, fin);
                    if (e > b->live1) b->live1 = e;
                    continue;
                }
            }
            if (ir_op(f, jd)->attr.i > 0) pending |= !waited_after(f, jd, alloc, pos, fin, b);
        }
    }
    uint32_t owner = ir_blk(f, ir_op(f, alloc)->parent)->parent_op;
    if (pending) b->live1 = owner == UINT32_MAX ? UINT32_MAX : fin[owner];
}

static bool plan_buffer(Cg *cg, uint32_t id, const uint32_t *pos, const uint32_t *fin, CgBuf *b, uint32_t *off)
{
    IrOp *op = ir_op(cg->f, id);
    IrType t = ir_vty(cg->f, ir_res(op, 0)), tile = ir_ty_smem_tile(t);
    if (tile.rank != 2 || layout_swizzle_for(tile, 1) < 0) {
        user_error(cg, op, "shared-memory buffers hold 2-d tiles whose rows are at least 16 bytes", t);
        return false;
    }
    memset(b, 0, sizeof *b);
    live_span(cg->f, id, pos, fin, b);
    b->tile = tile;
    b->S = cg_smem_layout(t);
    b->stages = (uint32_t)t.dims[0];
    b->stage_bytes = ((uint32_t)ir_ty_numel(tile) * (uint32_t)dt_bytes((DType)t.dt) + 1023) & ~1023u;
    b->again = in_loop(cg->f, op);
    b->parent = op->parent;
    /* after every buffer planned so far whose live span meets this one's (live_span): two
     * pipelined loops one after the other, in one block or in two, share their space, and so
     * does a warp-specialized loop's (whose buffers sit at the top of the kernel) with the
     * loop after it.  Nothing of the earlier one is in flight once its span ends: no load is
     * issued past its loop's end (a producer warp's neither: the consumers waited for all of
     * them), its dots have completed (or the span runs to the end of its block), and every
     * SMEM_ALLOC ends with a barrier of the threads that use it before its buffer is touched
     * (its mbarriers are its own: they never share). */
    b->off = 0;
    for (uint32_t k = 0; k < cg->nbufs; k++) {
        const CgBuf *o = &cg->bufs[k];
        if (o->live1 < b->live0 || b->live1 < o->live0) continue;
        uint32_t end = o->off + o->stages * o->stage_bytes;
        if (end > b->off) b->off = end;
    }
    uint32_t end = b->off + b->stages * b->stage_bytes;
    if (end > *off) *off = end;
    return true;
}

/* The descriptor a TMA store (or load) of view through a staging layout S of R rows needs. */
static void plan_desc(Cg *cg, IrVal view, const SharedLayout *S, uint32_t R, uint32_t gap, bool optional,
                      CgTmaDesc *t)
{
    uint32_t span = 16u << S->swizzle;
    memset(t, 0, sizeof *t);
    t->param = cg->f->vals[view].idx;
    t->rank = (uint8_t)ir_vty(cg->f, view).rank;
    t->box[0] = span / S->ebytes;
    /* a view of higher rank: one row of tiles, the rows along TMA dim 1 + gap (view dim
     * rank - 2 - gap), extent 1 along every other */
    for (uint32_t d = 1; d < t->rank; d++) t->box[d] = 1;
    t->box[1 + gap] = R < 256 ? R : 256; /* a power of two: more rows are whole boxes of 256 */
    t->swizzle = (uint8_t)S->swizzle; /* LayoutSwizzle and CgTmaSwizzle count alike */
    t->optional = optional;
}

/* The descriptor ASYNC_LOAD op needs (its view's optional word given). */
static bool plan_load(Cg *cg, IrOp *op, bool optional, CgTmaDesc *t)
{
    IrFunc *f = cg->f;
    IrVal view = ir_opnd(f, op, 0);
    const CgBuf *b = buf_of(cg, ir_opnd(f, op, 1));
    if (!ir_target_has(cg->target->arch, IR_TGT_TMA)) {
        IrTargetList l;
        char msg[384];
        snprintf(msg, sizeof msg, "async_load needs TMA, which needs %s (compiling for %s)",
                 ir_target_list(&l, IR_TGT_TMA, ", ", " or "), cg->target->arch->name);
        user_error(cg, op, msg, ir_vty(f, view));
        return false;
    }
    if (!f->vals[view].is_arg || f->vals[view].def != f->body) {
        user_error(cg, op, "async_load reads a tensor that is not a kernel parameter (TMA describes those only)",
                   ir_vty(f, view));
        return false;
    }
    plan_desc(cg, view, &b->S, (uint32_t)b->tile.dims[0], (uint32_t)op->attr.i, optional, t);
    return true;
}

/* ---- TMA stores: the plan -------------------------------------------------------------- */

SharedLayout cg_tma_store_layout(IrType t)
{
    int sw = layout_swizzle_for(t, 1);
    TL_ASSERT(t.rank == 2 && sw >= 0, "codegen");
    return layout_shared_swizzled(t, 1, (LayoutSwizzle)sw);
}

/* How a TMA store stages its tile. */
typedef struct StorePlan {
    SharedLayout S;          /* cg_tma_store_layout of the tile */
    uint32_t R;              /* rows */
    uint32_t span;           /* bytes of a strip's row (the swizzle's span) */
    uint32_t strips;         /* column strips, each R * span bytes */
    uint32_t group;          /* strips staged at once (all, or a power of two of them) */
    uint32_t align;          /* of the staging area: the swizzle's repeat, at least TMA's 128 */
} StorePlan;

/* Whether op is reached by every thread of the CTA whenever any reaches it: only
 * IF, FOR and WHILE enclose it, and their conditions and bounds are scalars, the
 * same in every thread. */
static bool uniform_point(IrFunc *f, const IrOp *op)
{
    for (uint32_t p = ir_blk(f, op->parent)->parent_op; p != UINT32_MAX; p = ir_blk(f, ir_op(f, p)->parent)->parent_op) {
        IrOpcode o = (IrOpcode)ir_op(f, p)->opc;
        if (o != IR_IF && o != IR_FOR && o != IR_WHILE) return false;
    }
    return true;
}

/* Whether BLOCK_STORE op is a TMA store, and how it stages its tile.  It is when
 * the target has IR_TGT_TMA_STORE, the view is a 2-d kernel parameter, the tile's elements
 * are 1, 2 or 4 bytes (not i1) in rows of at least 16 bytes and it has at least
 * 8 rows (each box starts 128-byte aligned), the plain path would move less than
 * 16 bytes per access and a warp would write less than a 128-byte line (or a
 * whole row) of a row per access (an accumulator's pairs: 16 or 32 bytes per
 * row; a blocked layout's 16-byte vectors, or narrower ones whose lanes continue
 * along the row, are coalesced already), every thread reaches the store, and a strip group fits
 * beside the buffers: all strips, or else (when the registers alone pick an
 * element's strip) the most strips, a power of two, that fit. */
static bool store_plan(Cg *cg, const IrOp *op, StorePlan *p)
{
    IrFunc *f = cg->f;
    if (!ir_target_has(cg->target->arch, IR_TGT_TMA_STORE)) return false;
    IrVal view = ir_opnd(f, op, 0);
    IrType vt = ir_vty(f, view);
    if (vt.kind != TY_VIEW || vt.rank != 2 || !f->vals[view].is_arg || f->vals[view].def != f->body) return false;
    IrVal value = ir_opnd(f, op, 3);
    IrType t = ir_vty(f, value);
    if (t.kind != TY_TILE || t.rank != 2 || t.isptr || t.dt == DT_I1 || t.dt != vt.dt) return false;
    int eb = dt_bytes((DType)t.dt);
    if ((eb != 1 && eb != 2 && eb != 4) || t.dims[0] < 8 || layout_swizzle_for(t, 1) < 0) return false;
    const Layout *L = cg_layout(cg, value);
    int row = t.dims[1] * eb, whole = row < 128 ? row : 128;
    if (cg_store_vector_elems(L, eb) * eb >= 16 || cg_store_run_bytes(L, eb) >= whole || !uniform_point(f, op))
        return false;
    memset(p, 0, sizeof *p);
    p->S = cg_tma_store_layout(t);
    p->R = (uint32_t)t.dims[0];
    p->span = 16u << p->S.swizzle;
    p->strips = (uint32_t)t.dims[1] * (uint32_t)eb / p->span;
    p->align = layout_swizzle_align(p->S.swizzle) > 128 ? layout_swizzle_align(p->S.swizzle) : 128;
    uint32_t strip = p->R * p->span, used = cg->nbufs ? 1024 + cg->buf_bytes : 0;
    uint32_t limit = cg->target->arch->smem_per_cta;
    uint32_t avail = limit > used + p->align ? limit - used - p->align : 0;
    p->group = p->strips;
    if ((uint64_t)p->group * strip <= avail) return true;
    if (!cg_smem_part_static(L, &p->S, strip)) return false;
    while (p->group > 1 && (uint64_t)p->group * strip > avail) p->group /= 2;
    return (uint64_t)p->group * strip <= avail;
}

/* Whether kernel parameter `view` is only written (BLOCK_STORE) or asked about
 * (shape, stride, TMA_READY): TMA stores may then write it asynchronously, as no
 * op of the kernel reads it back. */
static bool write_only(IrFunc *f, IrVal view)
{
    for (uint32_t i = 0; i < f->nops; i++) {
        const IrOp *op = &f->ops[i];
        if (op->dead) continue;
        for (uint32_t k = 0; k < op->nopnd; k++) {
            if (ir_opnd(f, op, k) != view) continue;
            bool ok = op->opc == IR_VIEW_SHAPE || op->opc == IR_VIEW_STRIDE || op->opc == IR_TMA_READY ||
                      (op->opc == IR_BLOCK_STORE && k == 0);
            if (!ok) return false;
        }
    }
    return true;
}

/* Index of descriptor t in cg->tma, added when new (t was zeroed whole, so
 * identical descriptors compare equal byte for byte); UINT32_MAX when `capped`
 * and the kernel has as many as the metadata takes (too many loads' descriptors
 * are reported when the metadata is built). */
static uint32_t add_desc(Cg *cg, const CgTmaDesc *t, bool capped)
{
    uint32_t j = 0;
    while (j < cg->ntma && memcmp(&cg->tma[j], t, sizeof *t) != 0) j++;
    if (j < cg->ntma) return j;
    if (capped && cg->ntma >= TILERT_META_MAX_TMA) return UINT32_MAX;
    memcpy(&cg->tma[cg->ntma++], t, sizeof *t);
    return j;
}

bool cg_async_plan(Cg *cg)
{
    IrFunc *f = cg->f;
    cg->async_idx = ARENA_ARRAY(cg->scratch, uint32_t, f->nops ? f->nops : 1);
    memset(cg->async_idx, 0xFF, (f->nops ? f->nops : 1) * sizeof *cg->async_idx);
    uint32_t nbufs = 0, nloads = 0, nstores = 0;
    for (uint32_t i = 0; i < f->nops; i++) {
        if (f->ops[i].dead) continue;
        nbufs += f->ops[i].opc == IR_SMEM_ALLOC;
        nloads += f->ops[i].opc == IR_ASYNC_LOAD;
        nstores += f->ops[i].opc == IR_BLOCK_STORE;
    }
    if (nbufs) {
        cg->bufs = ARENA_ARRAY(cg->scratch, CgBuf, nbufs);
        uint32_t *pos = ARENA_ARRAY(cg->scratch, uint32_t, f->nops), *fin = ARENA_ARRAY(cg->scratch, uint32_t, f->nops);
        uint32_t n = 0;
        number_ops(f, f->body, pos, fin, &n);
        uint32_t off = 0;
        for (uint32_t i = 0; i < f->nops; i++) {
            IrOp *op = &f->ops[i];
            if (op->dead || op->opc != IR_SMEM_ALLOC) continue;
            if (!plan_buffer(cg, i, pos, fin, &cg->bufs[cg->nbufs], &off)) return false;
            cg->async_idx[i] = cg->nbufs++;
        }
        for (uint32_t i = 0; i < f->nops; i++) { /* stages a producer acquires: their "empty" barriers too */
            IrOp *op = &f->ops[i];
            if (op->dead || (op->opc != IR_ASYNC_ACQUIRE && op->opc != IR_ASYNC_RELEASE)) continue;
            uint32_t d = ir_def(f, ir_opnd(f, op, 0));
            cg->bufs[cg->async_idx[d]].ws = true;
        }
        for (uint32_t k = 0; k < cg->nbufs; k++) {
            cg->bufs[k].bar_off = off;
            off += (cg->bufs[k].ws ? 16 : 8) * cg->bufs[k].stages;
        }
        cg->buf_bytes = (off + 127) & ~127u; /* the scratch area after them keeps __tilec_smem's alignment */
    }
    if (!nloads && !nstores) return true;
    /* a view's descriptors are optional when every load of it is guarded (its
     * stores test their descriptor themselves) */
    uint8_t *opt = ARENA_ARRAY(cg->scratch, uint8_t, f->nparams ? f->nparams : 1);
    memset(opt, 1, f->nparams);
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        IrVal view = op->opc == IR_ASYNC_LOAD ? ir_opnd(f, op, 0) : IR_NONE;
        if (op->dead || !view || !f->vals[view].is_arg || f->vals[view].def != f->body) continue;
        if (!guarded(f, op, view)) opt[f->vals[view].idx] = 0;
    }
    cg->tma = ARENA_ARRAY(cg->scratch, CgTmaDesc, nloads + nstores);
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        if (op->dead || op->opc != IR_ASYNC_LOAD) continue;
        CgTmaDesc t;
        IrVal view = ir_opnd(f, op, 0);
        if (!plan_load(cg, op, f->vals[view].is_arg && opt[f->vals[view].idx], &t)) return false;
        cg->async_idx[i] = add_desc(cg, &t, false);
    }
    /* a view's stores go through TMA when it is written only, and all of them can */
    uint8_t *tma_ok = ARENA_ARRAY(cg->scratch, uint8_t, f->nparams ? f->nparams : 1);
    memset(tma_ok, 1, f->nparams);
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        if (op->dead || op->opc != IR_BLOCK_STORE) continue;
        IrVal view = ir_opnd(f, op, 0);
        if (!f->vals[view].is_arg || f->vals[view].def != f->body) continue;
        StorePlan sp;
        if (!store_plan(cg, op, &sp) || !write_only(f, view)) tma_ok[f->vals[view].idx] = 0;
    }
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        if (op->dead || op->opc != IR_BLOCK_STORE) continue;
        IrVal view = ir_opnd(f, op, 0);
        StorePlan sp;
        if (!f->vals[view].is_arg || f->vals[view].def != f->body || !tma_ok[f->vals[view].idx] ||
            !store_plan(cg, op, &sp))
            continue;
        CgTmaDesc t;
        plan_desc(cg, view, &sp.S, sp.R, 0, opt[f->vals[view].idx], &t);
        cg->async_idx[i] = add_desc(cg, &t, true);
        if (cg->async_idx[i] == UINT32_MAX) tma_ok[f->vals[view].idx] = 0; /* no room: plain stores */
    }
    for (uint32_t i = 0; i < f->nops; i++) { /* a view that ran out of room stores plainly throughout */
        IrOp *op = &f->ops[i];
        IrVal view = op->opc == IR_BLOCK_STORE ? ir_opnd(f, op, 0) : IR_NONE;
        if (!op->dead && view && f->vals[view].is_arg && f->vals[view].def == f->body && !tma_ok[f->vals[view].idx])
            cg->async_idx[i] = UINT32_MAX;
    }
    return true;
}

/* ---- 2. the entry ------------------------------------------------------------------- */

static LLVMValueRef bar32(Cg *cg, const CgBuf *b, LLVMValueRef stage)
{
    LLVMValueRef off = LLVMBuildAdd(cg->b, k32(cg, b->bar_off), LLVMBuildShl(cg->b, stage, k32(cg, 3), ""), "");
    return LLVMBuildAdd(cg->b, cg->bufs_base32, off, "bar");
}

/* The "empty" barrier of stage `stage` of a warp-specialized buffer. */
static LLVMValueRef empty32(Cg *cg, const CgBuf *b, LLVMValueRef stage)
{
    TL_ASSERT(b->ws, "codegen");
    return bar32(cg, b, LLVMBuildAdd(cg->b, stage, k32(cg, b->stages), ""));
}

/* Thread 0 only: each stage barrier of b initialised to one arrival (invalidated
 * first: again); a warp-specialized buffer's "empty" barriers to one arrival of
 * every consumer thread. */
static void init_barriers(Cg *cg, const CgBuf *b, bool again)
{
    char text[96];
    for (uint32_t s = 0; s < b->stages; s++) {
        LLVMValueRef a = bar32(cg, b, k32(cg, s));
        if (again) asm_call(cg, "mbarrier.inval.shared::cta.b64 [$0];", "r,~{memory}", &a, 1);
        asm_call(cg, "mbarrier.init.shared::cta.b64 [$0], 1;", "r,~{memory}", &a, 1);
        if (!b->ws) continue;
        LLVMValueRef e = empty32(cg, b, k32(cg, s));
        if (again) asm_call(cg, "mbarrier.inval.shared::cta.b64 [$0];", "r,~{memory}", &e, 1);
        snprintf(text, sizeof text, "mbarrier.init.shared::cta.b64 [$0], %d;", 32 * cg->warps);
        asm_call(cg, text, "r,~{memory}", &e, 1);
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
    /* offsets 3 .. 3 + rank - 1; TMA coordinate c (innermost first) is view dim rank - 1 - c.  The
     * tile's columns run along coordinate 0, its rows along coordinate 1 + gap (the box is 1
     * along the others) */
    uint32_t rank = t->rank, rc = 1 + (uint32_t)op->attr.i;
    LLVMValueRef stage = as_i32(cg, ir_opnd(f, op, 2));
    LLVMValueRef coord[5] = {NULL, NULL, NULL, NULL, NULL};
    for (uint32_t c = 0; c < rank; c++) coord[c] = as_i32(cg, ir_opnd(f, op, 3 + (rank - 1 - c)));
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
    /* cp.async.bulk.tensor.Nd [dst], [desc, {c0, ..., c(N-1)}], [bar]: $0 dst, $1 desc, $2.. the
     * coordinates, then the barrier */
    char text[200], cons[64];
    StrBuf coords = {0};
    for (uint32_t c = 0; c < rank; c++) sb_printf(&coords, c ? ", $%u" : "$%u", 2 + c);
    snprintf(text, sizeof text,
             "cp.async.bulk.tensor.%ud.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {%s}], [$%u];",
             rank, coords.s ? coords.s : "", 2 + rank);
    sb_free(&coords);
    snprintf(cons, sizeof cons, "r,l%s,r,~{memory}", rank == 5 ? ",r,r,r,r,r" : rank == 4 ? ",r,r,r,r" : rank == 3 ? ",r,r,r" : ",r,r");
    uint32_t rows_box = t->box[rc];
    for (uint32_t s = 0; s < C * eb / span; s++)
        for (uint32_t q = 0; q < R / rows_box; q++) {
            LLVMValueRef a[8] = {LLVMBuildAdd(cg->b, dst, k32(cg, s * R * span + q * rows_box * span), ""), desc};
            for (uint32_t c = 0; c < rank; c++) a[2 + c] = coord[c];
            a[2] = LLVMBuildAdd(cg->b, coord[0], k32(cg, s * t->box[0]), "");
            a[2 + rc] = LLVMBuildAdd(cg->b, coord[rc], k32(cg, q * rows_box), "");
            a[2 + rank] = bar;
            asm_call(cg, text, cons, a, 3 + rank);
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

/* A barrier (every earlier reader of the stage, a warpgroup's wgmma among them, is
 * done: a dot waits for its own groups before the barrier that follows it), every
 * thread's unique elements into the stage in the buffer's layout, fence.proxy.async
 * (the tensor cores read through the async proxy), a barrier. */
void cg_lower_SMEM_WRITE(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    const CgBuf *b = buf_of(cg, ir_opnd(f, op, 0));
    LLVMValueRef off = stage_off(cg, b, ir_opnd(f, op, 1));
    cg_barrier(cg);
    cg_smem_store_shared(cg, ir_opnd(f, op, 2), &b->S, LLVMBuildGEP2(cg->b, cg->i8, cg->bufs_base, &off, 1, ""));
    cg_asm_void(cg, "fence.proxy.async.shared::cta;");
    cg_barrier(cg);
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
    if (!ir_target_has(cg->target->arch, IR_TGT_WGMMA)) { /* every DOT here completed when it returned */
        cg_value_as(cg, x, L, out);
        cg_define(cg, res, out, n);
        return;
    }
    /* a dot that dot_async left for this wait but that completed where it was issued (its
     * operand was copied, or it is no wgmma): nothing to wait for */
    CgVal *cv = cg_val(cg, x), saved = *cv;
    uint32_t d = ir_def(f, x);
    if (d != UINT32_MAX && ir_op(f, d)->opc == IR_DOT && ir_op(f, d)->attr.i == IR_DOT_ASYNC && !cv->wg) {
        cg_value_as(cg, x, L, out);
        cg_define(cg, res, out, n);
        return;
    }
    /* wait on the registers as they are, then see them in the result's layout: for the
     * groups committed after x's, when x's was committed in this straight-line stretch
     * (no op with regions since: cg->wg_epoch), else for every group */
    int newer = cv->wg > cg->wg_epoch ? (int)(cg->wg_seq - cv->wg) : 0;
    if (newer > 7) newer = 7;
    LLVMValueRef *done = ARENA_ARRAY(cg->scratch, LLVMValueRef, cv->nregs);
    memcpy(done, cv->regs, cv->nregs * sizeof *done);
    cg_wgmma_wait(cg, newer, done, cv->nregs);
    cv->regs = done;
    cg_value_as(cg, x, L, out);
    *cv = saved;
    cg_define(cg, res, out, n);
}

/* The producer branch of a warp-specialized kernel (codegen/lower.c runs it in
 * one warp): the stage is free again once every consumer thread released it. */
void cg_lower_ASYNC_ACQUIRE(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    LLVMValueRef a[2] = {empty32(cg, buf_of(cg, ir_opnd(f, op, 0)), as_i32(cg, ir_opnd(f, op, 1))),
                         as_i32(cg, ir_opnd(f, op, 2))};
    asm_call(cg, "{\n.reg .pred done;\nLAB_ACQ:\nmbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
                 "@!done bra LAB_ACQ;\n}", "r,r,~{memory}", a, 2);
}

/* Every consumer thread: its reads of the stage are done (the dots that read it
 * have completed), so the producer may refill it. */
void cg_lower_ASYNC_RELEASE(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    LLVMValueRef e = empty32(cg, buf_of(cg, ir_opnd(f, op, 0)), as_i32(cg, ir_opnd(f, op, 1)));
    asm_call(cg, "{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [$0];\n}", "r,~{memory}", &e, 1);
}

/* Only the condition of the producer's IF, which lower.c lowers itself (the
 * value, should anything else read it: whether this thread is a producer's). */
void cg_lower_PRODUCER_WARP(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    LLVMValueRef p = LLVMBuildICmp(cg->b, LLVMIntUGE, cg->warp, k32(cg, (uint32_t)cg->warps), "");
    cg_define(cg, ir_res(op, 0), &p, 1);
}

/* i1: descriptor j is a map (any of its 128 bytes set), not the launcher's zeros. */
static LLVMValueRef desc_valid(Cg *cg, uint32_t j)
{
    LLVMValueRef any = LLVMConstInt(cg->i64, 0, 0);
    for (uint32_t w = 0; w < 16; w++) {
        LLVMValueRef i = k32(cg, w);
        LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i64, cg->tma_param[j], &i, 1, "");
        LLVMValueRef word = LLVMBuildLoad2(cg->b, cg->i64, p, "");
        LLVMSetAlignment(word, 8);
        any = LLVMBuildOr(cg->b, any, word, "");
    }
    return LLVMBuildICmp(cg->b, LLVMIntNE, any, LLVMConstInt(cg->i64, 0, 0), "");
}

void cg_lower_TMA_READY(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    IrVal view = ir_opnd(f, op, 0);
    LLVMValueRef ready = LLVMConstInt(cg->i1, 1, 0);
    /* a required descriptor (some load of the view is not guarded: a warp-specialized loop's)
     * is always a map: the runtime and the launcher refuse a launch that lacks one, so the
     * test is true and LLVM drops the fallback it guards (attention's masked phase) */
    for (uint32_t j = 0; j < cg->ntma; j++)
        if (f->vals[view].is_arg && cg->tma[j].param == f->vals[view].idx && cg->tma[j].optional)
            ready = LLVMBuildAnd(cg->b, ready, desc_valid(cg, j), "");
    cg_define(cg, ir_res(op, 0), &ready, 1);
}

/* ---- TMA stores: the lowering ------------------------------------------------------------ */

/* Offset operand v as a TMA coordinate (i32); *fits &= it is one (in [-2^31, 2^31)). */
static LLVMValueRef coordinate(Cg *cg, IrVal v, LLVMValueRef *fits)
{
    LLVMValueRef x = cg_reg(cg, v, 0);
    unsigned w = LLVMGetIntTypeWidth(LLVMTypeOf(x));
    bool sg = dt_is_signed((DType)ir_vty(cg->f, v).dt);
    if (w < 32 || (w == 32 && sg)) /* always in range */
        return w == 32 ? x : sg ? LLVMBuildSExt(cg->b, x, cg->i32, "") : LLVMBuildZExt(cg->b, x, cg->i32, "");
    LLVMValueRef x64 = w == 64 ? x : LLVMBuildZExt(cg->b, x, cg->i64, "");
    LLVMValueRef c = LLVMBuildTrunc(cg->b, x64, cg->i32, "");
    LLVMValueRef back = sg ? LLVMBuildSExt(cg->b, c, cg->i64, "") : LLVMBuildZExt(cg->b, c, cg->i64, "");
    LLVMValueRef ok = LLVMBuildICmp(cg->b, LLVMIntEQ, back, x64, "");
    if (!sg) ok = LLVMBuildAnd(cg->b, ok, LLVMBuildICmp(cg->b, LLVMIntSGE, c, k32(cg, 0), ""), "");
    *fits = LLVMBuildAnd(cg->b, *fits, ok, "");
    return c;
}

/* Per strip group: a barrier (the scratch area's previous user may still read
 * it), every thread's registers into the staging layout, the writes made visible
 * to the async proxy, a barrier; then where `ok`, thread 0 stores the group's
 * boxes, commits them and waits until they are read, elsewhere every thread
 * stores the group from shared memory itself, strip by strip (a strip is a tile
 * of its own in the same layout: few registers at a time, whole lines per row). */
static void tma_store_path(Cg *cg, IrOp *op, const StorePlan *p, uint32_t j, LLVMValueRef ok, LLVMValueRef row0,
                           LLVMValueRef col0, bool again)
{
    IrFunc *f = cg->f;
    IrVal value = ir_opnd(f, op, 3);
    IrType t = ir_vty(f, value);
    uint32_t strip = p->R * p->span, rows_box = p->R < 256 ? p->R : 256, box0 = p->span / p->S.ebytes;
    uint32_t strip_elems = strip / p->S.ebytes;
    int32_t sdims[2] = {(int32_t)p->R, (int32_t)box0};
    IrType st = ir_ty_tile((DType)t.dt, false, 2, sdims); /* one strip, stored on its own without TMA */
    SharedLayout SS = cg_tma_store_layout(st);
    LLVMValueRef area = cg_smem(cg, p->group * strip + p->align);
    LLVMValueRef a32 = LLVMBuildPtrToInt(cg->b, area, cg->i32, "");
    LLVMValueRef base32 = LLVMBuildAnd(cg->b, LLVMBuildAdd(cg->b, a32, k32(cg, p->align - 1), ""),
                                       k32(cg, ~(p->align - 1)), "stage.base");
    LLVMValueRef pad = LLVMBuildSub(cg->b, base32, a32, "");
    LLVMValueRef base = LLVMBuildGEP2(cg->b, cg->i8, area, &pad, 1, "");
    if (again) { /* the view's earlier TMA stores have written global memory: stores to it stay in order */
        LLVMBasicBlockRef join = cg_thread0(cg);
        cg_asm_void(cg, "cp.async.bulk.wait_group 0;");
        LLVMBuildBr(cg->b, join);
        LLVMPositionBuilderAtEnd(cg->b, join);
    }
    for (uint32_t g0 = 0; g0 < p->strips; g0 += p->group) {
        cg_barrier(cg);
        cg_smem_store_shared_part(cg, value, &p->S, base, g0 * strip_elems, p->group * strip_elems);
        cg_asm_void(cg, "fence.proxy.async.shared::cta;");
        cg_barrier(cg);
        LLVMBasicBlockRef tma = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "tma.store");
        LLVMBasicBlockRef plain = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "staged.store");
        LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "store.done");
        LLVMBuildCondBr(cg->b, ok, tma, plain);
        LLVMPositionBuilderAtEnd(cg->b, tma);
        LLVMBasicBlockRef join = cg_thread0(cg);
        LLVMValueRef desc = LLVMBuildPtrToInt(cg->b, cg->tma_param[j], cg->i64, "");
        for (uint32_t s = g0; s < g0 + p->group; s++)
            for (uint32_t q = 0; q < p->R / rows_box; q++) {
                LLVMValueRef a[4] = {desc, LLVMBuildAdd(cg->b, col0, k32(cg, s * box0), ""),
                                     LLVMBuildAdd(cg->b, row0, k32(cg, q * rows_box), ""),
                                     LLVMBuildAdd(cg->b, base32, k32(cg, (s - g0) * strip + q * rows_box * p->span), "")};
                asm_call(cg, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];",
                         "l,r,r,r,~{memory}", a, 4);
            }
        cg_asm_void(cg, "cp.async.bulk.commit_group;");
        cg_asm_void(cg, "cp.async.bulk.wait_group.read 0;");
        LLVMBuildBr(cg->b, join);
        LLVMPositionBuilderAtEnd(cg->b, join);
        LLVMBuildBr(cg->b, done);
        LLVMPositionBuilderAtEnd(cg->b, plain);
        for (uint32_t s = g0; s < g0 + p->group; s++) {
            LLVMValueRef off = k32(cg, (s - g0) * strip);
            cg_store_staged(cg, op, st, &SS, LLVMBuildGEP2(cg->b, cg->i8, base, &off, 1, ""), s * box0);
        }
        LLVMBuildBr(cg->b, done);
        LLVMPositionBuilderAtEnd(cg->b, done);
    }
}

bool cg_tma_store(Cg *cg, uint32_t opid, IrOp *op)
{
    if (!cg->async_idx || cg->async_idx[opid] == UINT32_MAX) return false;
    IrFunc *f = cg->f;
    StorePlan p;
    bool planned = store_plan(cg, op, &p);
    TL_ASSERT(planned, "codegen");
    uint32_t j = cg->async_idx[opid];
    LLVMValueRef fits = LLVMConstInt(cg->i1, 1, 0);
    LLVMValueRef row0 = coordinate(cg, ir_opnd(f, op, 1), &fits), col0 = coordinate(cg, ir_opnd(f, op, 2), &fits);
    LLVMValueRef ok = LLVMBuildAnd(cg->b, desc_valid(cg, j), fits, "tma.ok");
    /* another TMA store of the view may run before this one: it in a loop, or another op */
    bool again = in_loop(f, op);
    for (uint32_t i = 0; i < f->nops && !again; i++)
        again = i != opid && !f->ops[i].dead && f->ops[i].opc == IR_BLOCK_STORE && cg->async_idx[i] != UINT32_MAX &&
                ir_opnd(f, &f->ops[i], 0) == ir_opnd(f, op, 0);
    tma_store_path(cg, op, &p, j, ok, row0, col0, again);
    return true;
}
