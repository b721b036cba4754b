/* pipeline_latency.c: latency assignment, the first pipelining pass (pipeline.h).
 *
 * For every FOR loop, innermost first, on a target with TMA and wgmma
 * (IR_TGT_TMA and IR_TGT_WGMMA):
 *   1. Candidates: the block loads directly in the loop body that
 *        - read a tensor of rank 2 to 5 that is a kernel parameter (the runtime
 *          describes it to the TMA unit: one CUtensorMap per parameter), in a
 *          2-d block: the whole tile, or (rank > 2) a block of extent 1 along
 *          every dim but the last and one other, whose only user is a reshape
 *          to the 2-d tile (pipe_load_tile): a TMA box over those two dims,
 *        - have no `other` (TMA fills out-of-bounds elements with zeros, which is
 *          what a block load without `other` reads),
 *        - have a tile whose rows hold at least 16 bytes and at most 256 rows
 *          (a TMA box), of a 1- or 2-byte type,
 *        - (the 2-d tile) are used only as operands a or b of dots in the body
 *          (any number of them: attention's K and V feed two), directly or
 *          through a transpose in the body (the tensor cores then read the
 *          shared-memory stage in place) and at most one cast to a 2-byte type
 *          (an FP8 cache widened: the stage is read into registers),
 *        - have offsets computed from the induction variable and loop
 *          invariants only, or also from pointer loads where the loop writes no
 *          memory (a paged cache's block-table entry; pipe_offset_slice), so they
 *          can be computed S - 1 iterations early;
 *      and the loop's step is a positive constant.  The offsets may depend on
 *      the induction variable in any dimension.
 *   2. Stages S: the `pipeline(S)` hint, or PIPE_AUTO_STAGES without one; then
 *      as many as the shared-memory budget holds (what pipe_smem_budget has
 *      left after the buffers of the pipelined loops nested in this one, less
 *      one stage of each loop-invariant dot operand pipeline_expand stages
 *      once, over the bytes of one stage of every candidate).  Where that
 *      leaves fewer than 2 stages, the invariant operands stay where they are
 *      (the loop is marked no_staging) and the stages get their room.  Loops one after
 *      the other (attention's two phases) are never live together and share
 *      their space (codegen places disjoint blocks' buffers alike).
 *      The budget is pipe_smem_budget, less where the kernel's largest pointer
 *      tile that is not a free value (reserve) would not fit beside it in the
 *      target's shared memory per CTA.  `pipeline(1)` or a budget for
 *      fewer than 2 stages leaves the loop alone.
 *   3. Each candidate gets latency S - 1 (it is issued that many iterations
 *      ahead of its use) and the loop's stages attribute becomes S.
 */
#include "pipeline.h"

#include <stdlib.h>

#include "../ir/layout.h"

/* Whether every use of v is operand 0 or 1 of a DOT in block `body`, directly
 * or through a TRANS and (2-byte results: an FP8 cache's keys widened to bf16) a
 * CAST in `body`, each at most once on the way, whose uses are such.  Through a
 * cast the tile reaches its dots through registers (the stage is read with
 * ld.shared and widened); the stage still takes the load off the critical path. */
static bool feeds_dots_only(IrFunc *f, IrBlk body, IrVal v, bool trans_ok, bool cast_ok)
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
            if (op->opc == IR_TRANS && trans_ok && feeds_dots_only(f, body, ir_res(op, 0), false, cast_ok)) continue;
            if (op->opc == IR_CAST && cast_ok && dt_bytes((DType)ir_vty(f, ir_res(op, 0)).dt) == 2 &&
                feeds_dots_only(f, body, ir_res(op, 0), trans_ok, false))
                continue;
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

/* Why block load `id` of the loop is not pipelined (NULL: it is a candidate).
 * The reasons are the rules of lang/PIPELINING.md, "Which loads". */
static const char *not_candidate(IrFunc *f, uint32_t loop, uint32_t id, uint8_t *slice)
{
    const IrOp *op = &f->ops[id];
    if (op->opc != IR_BLOCK_LOAD) return "not a block load";
    if (op->attr.j) return "the load has an 'other' (TMA reads zeros out of bounds)";
    IrVal view = ir_opnd(f, op, 0);
    IrType vt = ir_vty(f, view);
    if (!is_param(f, view)) return "the tensor is not a kernel parameter (TMA describes those only)";
    if (vt.rank < 2 || vt.rank > 5) return "the tensor is not of rank 2 to 5";
    IrVal tile = pipe_load_tile(f, id);
    if (!tile) return "the block is not a 2-d tile (unit extent along all but the last and one other dim, then a reshape)";
    IrType t = ir_vty(f, tile);
    if (dt_bytes((DType)t.dt) > 2) return "the elements are wider than 2 bytes";
    if (t.dims[0] > 256) return "the tile has more than 256 rows";
    if (layout_swizzle_for(t, 1) < 0) return "the tile's rows hold less than 16 bytes";
    if (!feeds_dots_only(f, op->parent, tile, true, true)) return "the tile has a use other than a dot operand";
    if (!pipe_offset_slice(f, loop, id, slice)) return "an offset depends on a value computed in the loop";
    return NULL;
}

typedef struct Budget {
    PassCtx *cx;
    uint32_t *bytes; /* per op id: a FOR planned already: the buffer bytes live in it (its own
                      * and the most any loop nested in it takes) */
    uint32_t limit;  /* bytes the buffers live at once may take (pipe_smem_budget, or less: reserve) */
} Budget;

/* The buffer bytes of the loops planned inside block b that can be live at one time: loops one
 * after the other share their space (codegen gives disjoint blocks' buffers the same region), a
 * loop nested in another adds to it. */
static uint32_t nested_bytes(IrFunc *f, IrBlk b, const Budget *bud)
{
    uint32_t most = 0;
    IrBlock *blk = ir_blk(f, b);
    for (uint32_t i = 0; i < blk->nops; i++) {
        const IrOp *op = &f->ops[blk->ops[i]];
        uint32_t n = op->opc == IR_FOR ? bud->bytes[blk->ops[i]] : 0;
        if (op->opc != IR_FOR || !n)
            for (uint32_t r = 0; r < op->nregion; r++) {
                uint32_t m = nested_bytes(f, op->region[r], bud);
                if (m > n) n = m;
            }
        if (n > most) most = n;
    }
    return most;
}

/* Bytes of shared memory the kernel may need beside the stage buffers: the
 * largest pointer tile that a layout conversion may move between threads (at 8
 * bytes an element: a gathered address tile of 128 x 128 takes 128 KiB).  A free
 * value (ir_free_values: built from arange, splat and elementwise arithmetic, as
 * an epilogue's C.ptr + rows * stride + cols) is rebuilt in whatever layout its
 * user wants and never goes through shared memory, so it needs no room. */
static uint32_t reserve(IrFunc *f, uint32_t smem)
{
    uint64_t most = 0;
    uint8_t *free_ = tl_xcalloc(f->nvals ? f->nvals : 1, 1);
    ir_free_values(f, free_);
    for (uint32_t i = 0; i < f->nops; i++) {
        const IrOp *op = &f->ops[i];
        if (op->dead || op->nres != 1) continue;
        IrVal v = ir_res(op, 0);
        IrType t = ir_vty(f, v);
        if (t.kind != TY_TILE || !t.isptr || free_[v]) continue;
        uint64_t b = (uint64_t)ir_ty_numel(t) * 8;
        if (b > most) most = b;
    }
    free(free_);
    return most > smem ? smem : (uint32_t)most;
}

/* Pipelines loop `loop` when it can, and says what it did as a pipeline remark:
 * the stages and loads, or why the loop stays as it is. */
static void assign(IrFunc *f, uint32_t loop, void *vb)
{
    Budget *bud = vb;
    Diag *d = bud->cx->diag;
    SrcLoc at = f->ops[loop].loc;
    if (!ir_target_has(f->mod->target, IR_TGT_TMA | IR_TGT_WGMMA)) {
        IrTargetList l;
        diag_remark(d, DIAG_REMARK_pipeline, at, "loop not pipelined: %s has no TMA and wgmma (%s has)",
                    f->mod->target ? f->mod->target->name : "no arch named",
                    ir_target_list(&l, IR_TGT_TMA | IR_TGT_WGMMA, ", ", " and "));
        return;
    }
    int64_t hint = f->ops[loop].attr.i;
    if (hint == 1) {
        diag_remark(d, DIAG_REMARK_pipeline, at, "loop not pipelined: pipeline(1) asks for one stage");
        return;
    }
    if (!positive_const_step(f, loop)) {
        diag_remark(d, DIAG_REMARK_pipeline, at, "loop not pipelined: its step is not a positive constant");
        return;
    }
    IrBlk body = f->ops[loop].region[0];
    uint8_t *slice = tl_xcalloc(f->nops, 1);
    uint32_t *cand = NULL, ncand = 0, cap = 0, bytes = 0;
    IrBlock *blk = ir_blk(f, body);
    for (uint32_t i = 0; i < blk->nops; i++) {
        uint32_t id = blk->ops[i];
        if (f->ops[id].opc != IR_BLOCK_LOAD || f->ops[id].latency || not_candidate(f, loop, id, slice)) continue;
        VEC_PUSH(cand, ncand, cap, id);
        bytes += pipe_stage_bytes(ir_vty(f, pipe_load_tile(f, id)));
    }
    free(slice);
    /* the loop-invariant dot operands pipeline_expand stages once: one stage each */
    IrVal inv[8];
    uint32_t ninv = ncand ? pipe_invariant_operands(f, loop, inv, 8) : 0, fixed = 0;
    for (uint32_t j = 0; j < ninv; j++) fixed += pipe_stage_bytes(ir_vty(f, inv[j]));
    if (!ncand)
        diag_remark(d, DIAG_REMARK_pipeline, at,
                    "loop not pipelined: no block load in its body reads a tensor parameter (a box over its last "
                    "dim and one other) without 'other', in a 1- or 2-byte type, only for dots, at offsets from the "
                    "induction variable");
    if (ncand) {
        int64_t stages = hint ? hint : PIPE_AUTO_STAGES;
        if (stages > 16) stages = 16;
        uint32_t inner = nested_bytes(f, body, bud);
        uint32_t left = bud->limit > inner ? bud->limit - inner : 0;
        int64_t want = stages;
        while (stages >= 2 && (uint64_t)stages * bytes + fixed > left) stages--;
        if (stages < 2 && fixed) { /* pipelining first: the invariant operands stay where they are */
            fixed = 0;
            stages = want;
            while (stages >= 2 && (uint64_t)stages * bytes > left) stages--;
            if (stages >= 2) f->ops[loop].attr.j |= IR_FOR_NO_STAGING;
        }
        if (stages >= 2) {
            for (uint32_t i = 0; i < ncand; i++) f->ops[cand[i]].latency = (uint8_t)(stages - 1);
            f->ops[loop].attr.i = stages;
            bud->bytes[loop] = inner + (uint32_t)stages * bytes + fixed;
            bud->cx->changed = true;
            diag_remark(d, DIAG_REMARK_pipeline, at,
                        "loop pipelined with %lld stages (%s %lld%s): %u load%s issued %lld iterations ahead, "
                        "%u bytes of shared memory per stage",
                        (long long)stages, hint ? "hint" : "default", (long long)want,
                        stages < want ? ", fewer for the shared-memory budget" : "", ncand, ncand == 1 ? "" : "s",
                        (long long)stages - 1, bytes);
        } else {
            diag_remark(d, DIAG_REMARK_pipeline, at,
                        "loop not pipelined: 2 stages of %u bytes do not fit the %u bytes of shared memory left "
                        "for stage buffers", bytes, left);
        }
    }
    free(cand);
}

void pass_pipeline_latency(IrFunc *f, PassCtx *cx)
{
    /* the buffers and the largest pointer tile must fit the block's shared memory together
     * (PIPE_STAGE_ALIGN for the run-time alignment of the buffers, 8 KiB for their barriers
     * and smaller scratch) */
    const IrTarget *t = f->mod->target;
    uint32_t smem = t ? t->smem_per_cta : 0;
    uint32_t room = smem - reserve(f, smem), limit = pipe_smem_budget(t);
    room = room > PIPE_STAGE_ALIGN + 8192 ? room - PIPE_STAGE_ALIGN - 8192 : 0;
    if (room < limit) limit = room;
    Budget bud = {cx, tl_xcalloc(f->nops ? f->nops : 1, sizeof(uint32_t)), limit};
    pipe_for_each_loop(f, assign, &bud);
    free(bud.bytes);
}
