/* warp_specialize.c: a producer warpgroup for a pipelined loop (lang/PIPELINING.md).
 *
 * Design.  pipeline_expand leaves every thread of the CTA doing everything: each
 * iteration waits on its stages' mbarriers, reads them with wgmma, meets the
 * others at a `barrier` (stage (i-1) % S is free) and one thread issues the TMA
 * loads of iteration i + S - 1.  Warp specialization (as CUTLASS's and
 * FlashAttention-3's sm_90 kernels do it) gives the copies to warps of their own:
 * the kernel gets one warpgroup more than its layouts use, warps W .. W+3, whose
 * first warp issues the loads of every iteration, waiting before each for its
 * stage to be "empty"; the W consumer warps (the same warps, with the same
 * layouts, as before) wait on "full" (the TMA transaction barriers, as now),
 * compute, and arrive on "empty" instead of a CTA-wide bar.sync.  The producer
 * needs few registers, so it gives them back (setmaxnreg.dec to 24) and the
 * consumers take them (setmaxnreg.inc; 240 with two consumer warpgroups at 384
 * threads: cg_ws_registers, codegen/lower.c).  What the program computes is unchanged:
 * the same dots in the same order on the same tiles, only who issues the copies
 * and how stages are handed back differ, so results are bit-identical to the
 * pipelined loop's.
 *
 * There is no fallback loop: pipeline_expand's IF on tma_ready (whose else runs
 * the original loop where the runtime could not describe a tensor to TMA) is
 * replaced by its then-branch, so the loads are no longer guarded and their
 * descriptors become required: such a launch is refused with an error naming the
 * argument.  The fallback would have to run in the consumer warps alone, with
 * its block loads in registers beside the accumulator, which spills at the
 * specialized kernel's register count (below); the rule is documented in
 * lang/PIPELINING.md.
 *
 * Registers: nvJitLink compiles its PTX for linking, and ptxas then ignores
 * setmaxnreg (C7504), so a module that holds setmaxnreg is compiled by the
 * toolkit's ptxas as a whole program instead (codegen/ptxas.c), which honours
 * it: 240 registers in the consumers, 24 in the producer.  Where no ptxas is
 * found, nvJitLink's cubin runs every warp at the entry count (168 at 384
 * threads); the GEMM consumers fit that too (0 spills for the stdlib _ws kernels).
 *
 * The producer branches off at the very start of the kernel and returns at the
 * end of its loop, so it runs none of the consumers' code, and the consumers'
 * barriers (bar.sync 1 with their thread count, from the branch on) never wait
 * for it.  Everything the producer needs (the loop bounds, the tiles' offsets)
 * is recomputed in its branch from kernel parameters: only pure scalar ops of
 * the kernel body (program ids, shapes, constants, arithmetic) are cloned
 * there, so no value crosses from one role to the other but through shared
 * memory.  Scalar loads of the kernel body before its first store or atomic are
 * cloned too (flash_attn_varlen_fwd's key offset comes from cu_seqlens_k): nothing
 * the kernel writes can have changed what they read, so both roles read the same.
 *
 * The rest of the kernel is the consumers' alone: a dot operand staged into shared memory
 * before the loop (attention's q) is written by them after the branch, and another pipelined
 * loop (attention's masked phase) stays the pipelined loop, its thread 0 issuing its loads and
 * its barriers counting the consumers; its buffers share the specialized loop's space once
 * that loop is done (codegen/lower_async.c, live_span).  Every barrier and wgmma is a
 * convergent call in the LLVM IR (codegen/lower.c, cg_convergent): without that LLVM once
 * moved a consumer bar.sync into thread 0's barrier-initialisation branch, and such a kernel
 * hung (session 8).
 *
 * Algorithm, for the first loop marked warp_specialize (the FOR flag from the
 * source hint `pipeline(S) warp_specialize`) that pipeline_expand expanded:
 *   1. Check the shape: the pipelined loop sits in the then-branch of an IF
 *      directly in the kernel body (the TMA test), its body has one `barrier`
 *      and one IF holding its ASYNC_LOADs (issued S - 1 iterations ahead), every
 *      dot that leaves work in flight has pending = 1 and there is at most one,
 *      and every value the producer needs is a clonable scalar.  Otherwise the
 *      loop stays as pipeline_expand left it (--remarks=warp_specialize says why).
 *   2. Move the stage buffers' SMEM_ALLOCs to the top of the kernel body (their
 *      barriers are initialised there, while every thread is still present),
 *      then build
 *          if producer_warp {
 *              <clones of the scalars below>
 *              for %k = %lb' to %ub' step %st' iter(%i = 0) {
 *                  async_acquire %buf, %i % S, ((%i / S) & 1) ^ 1     per buffer
 *                  <the loop's load-issuing IF body, its k being %k>  async_load ...
 *                  yield %i + 1 }
 *          } else { }
 *      Acquire parity: iteration i >= S refills stage i % S after the release
 *      of iteration i - S, the (i / S - 1)-th of that stage, which completes
 *      its "empty" phase i / S - 1; a fresh barrier counts phase "-1" (parity 1)
 *      as complete, so the first S acquires pass at once.
 *   3. In the consumer: drop the prologue's loads and the loop's load-issuing
 *      IF, and put the TMA IF's then-branch in its place (no fallback); replace
 *      the loop's `barrier` by releases: a buffer read by the dot left in
 *      flight (pending = 1) releases stage (i - 1) % S, whose reader has
 *      completed when that dot returns (none at i = 0); a buffer read only by
 *      dots that complete at once releases stage i % S.  The last stages are
 *      never released: the producer loads no more.
 * Counting: the producer's load of iteration i >= S waits for the release of
 * iteration i - S, which the consumer gives in iteration i - S + 1 <= n - 1 (in
 * iteration i - S itself where no dot stays in flight): the producer never waits
 * for a release that does not come.
 *
 * When the compiler chooses it: only where the source asks, until measurements
 * on the GPU (bench/gemm.py, the `ws` rows) show where it pays.
 */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

typedef struct Ws {
    IrFunc *f;
    IrVal *map;        /* old value -> its producer-side copy (0: none yet) */
    uint32_t nmap;
    IrBlk anc[2];      /* blocks whose pure scalars may be cloned: the kernel body, the TMA IF's then */
    uint32_t reads_until; /* scalar loads at the kernel body's ops before this one may be cloned too */
    const char *why;   /* why not, for the remark */
} Ws;

static bool in_anc(Ws *w, IrBlk b)
{
    return b == w->anc[0] || b == w->anc[1];
}

static uint32_t pos_of(IrFunc *f, uint32_t id);

/* Whether v can be recomputed in the producer branch: a kernel parameter, or a
 * pure scalar op (no regions) of the kernel body or the TMA IF's then-branch
 * whose operands can be. */
static bool clonable(Ws *w, IrVal v, int depth)
{
    IrFunc *f = w->f;
    if (v < w->nmap && w->map[v]) return true;
    const IrValue *val = &f->vals[v];
    if (val->is_arg) return val->def == f->body;
    const IrOp *op = &f->ops[val->def];
    /* a scalar load of the kernel body before its first store or atomic reads what the
     * consumers' copy reads (varlen attention's sequence offsets): the producer may repeat it */
    bool early_load = op->opc == IR_LOAD && op->parent == f->body && pos_of(f, val->def) < w->reads_until;
    if (depth > 64 || !in_anc(w, op->parent) || op->nregion || !((ir_opinfo[op->opc].flags & IR_PURE) || early_load) ||
        op->nres != 1 || !ir_ty_is_scalar(val->ty))
        return false;
    for (uint32_t k = 0; k < op->nopnd; k++)
        if (!clonable(w, ir_opnd(f, op, k), depth + 1)) return false;
    return true;
}

/* The producer-side value of v (clonable), cloning its ops at b the first time. */
static IrVal pull(Ws *w, IrBuilder *b, IrVal v)
{
    IrFunc *f = w->f;
    if (v < w->nmap && w->map[v]) return w->map[v];
    if (f->vals[v].is_arg) return v;
    uint32_t d = f->vals[v].def;
    IrOp src = f->ops[d];
    IrVal opnds[8];
    TL_ASSERT(src.nopnd <= 8, "pass:warp_specialize");
    for (uint32_t k = 0; k < src.nopnd; k++) opnds[k] = pull(w, b, ir_opnd(f, &src, k));
    IrType t = ir_vty(f, src.res);
    SrcLoc saved = b->loc;
    b->loc = src.loc;
    IrVal r = ir_build1(b, (IrOpcode)src.opc, opnds, src.nopnd, t, &src.attr);
    b->loc = saved;
    w->map[v] = r;
    return r;
}

/* Whether block b (or a block nested in it) holds an ASYNC_LOAD. */
static bool holds_load(IrFunc *f, IrBlk b)
{
    const IrBlock *blk = &f->blocks[b];
    for (uint32_t i = 0; i < blk->nops; i++) {
        const IrOp *op = &f->ops[blk->ops[i]];
        if (op->opc == IR_ASYNC_LOAD) return true;
        for (uint32_t r = 0; r < op->nregion; r++)
            if (holds_load(f, op->region[r])) return true;
    }
    return false;
}

/* Position of op `id` in its block. */
static uint32_t pos_of(IrFunc *f, uint32_t id)
{
    const IrBlock *blk = &f->blocks[f->ops[id].parent];
    for (uint32_t i = 0; i < blk->nops; i++)
        if (blk->ops[i] == id) return i;
    tl_fatal("pass:warp_specialize", "op %u is not in its block", id);
}

/* Whether the tile `t` (an SMEM_READ's result) reaches a dot with pending > 0 in
 * block `body`, directly or through a TRANS. */
static bool read_by_pending_dot(IrFunc *f, IrBlk body, IrVal t)
{
    const IrBlock *blk = &f->blocks[body];
    for (uint32_t i = 0; i < blk->nops; i++) {
        const IrOp *op = &f->ops[blk->ops[i]];
        for (uint32_t k = 0; k < op->nopnd; k++) {
            if (ir_opnd(f, op, k) != t) continue;
            if (op->opc == IR_DOT && op->attr.i > 0) return true;
            if (op->opc == IR_TRANS && read_by_pending_dot(f, body, ir_res(op, 0))) return true;
        }
    }
    return false;
}

/* Step 1 for loop `loop`: NULL when it can be specialized (filling the out
 * parameters), else why not. */
typedef struct Shape {
    uint32_t ifop;          /* the IF on tma_ready around it */
    uint32_t barrier;       /* the loop body's BARRIER */
    uint32_t issue;         /* the loop body's IF issuing the loads of iteration i + S - 1 */
    uint32_t kadd;          /* in it: k + (S - 1) * step, the iteration its loads are for */
    IrVal stage_in;         /* in it: the stage the loads go to (defined in the loop body) */
    IrVal bufs[8];          /* the stage buffers (ASYNC_WAIT operands), distinct */
    IrVal stage_of[8];      /* each one's stage in the loop body (i % S) */
    bool pend[8];           /* each one is read by the dot left in flight */
    uint32_t nbufs;
    int S;
} Shape;

static const char *check_shape(Ws *w, uint32_t loop, Shape *sh)
{
    IrFunc *f = w->f;
    IrBlk body = f->ops[loop].region[0];
    const IrBlock *blk = &f->blocks[body];
    memset(sh, 0, sizeof *sh);
    sh->S = (int)f->ops[loop].attr.i;
    uint32_t owner = f->blocks[f->ops[loop].parent].parent_op;
    if (owner == UINT32_MAX || f->ops[owner].opc != IR_IF || f->ops[owner].region[0] != f->ops[loop].parent ||
        f->ops[owner].parent != f->body)
        return "the pipelined loop is nested in another loop or branch (the producer branches off at the "
               "kernel's start, where only the kernel body's scalars are known)";
    sh->ifop = owner;
    w->anc[0] = f->body;
    w->anc[1] = f->ops[owner].region[0];
    const IrBlock *kb = &f->blocks[f->body];
    w->reads_until = 0;
    while (w->reads_until < kb->nops && !pipe_op_writes_memory(f, &f->ops[kb->ops[w->reads_until]])) w->reads_until++;
    uint32_t npend = 0;
    sh->barrier = sh->issue = UINT32_MAX;
    for (uint32_t i = 0; i < blk->nops; i++) {
        uint32_t id = blk->ops[i];
        const IrOp *op = &f->ops[id];
        if (op->opc == IR_ASYNC_WAIT) {
            IrVal buf = ir_opnd(f, op, 0);
            uint32_t j = 0;
            while (j < sh->nbufs && sh->bufs[j] != buf) j++;
            if (j == sh->nbufs) {
                if (sh->nbufs == 8) return "more than 8 stage buffers";
                uint32_t d = ir_def(f, buf);
                if (d == UINT32_MAX || f->ops[d].parent != w->anc[1]) return "a stage buffer is not allocated beside it";
                sh->bufs[sh->nbufs] = buf;
                sh->stage_of[sh->nbufs++] = ir_opnd(f, op, 1);
            }
        } else if (op->opc == IR_SMEM_READ) {
            for (uint32_t j = 0; j < sh->nbufs; j++)
                if (sh->bufs[j] == ir_opnd(f, op, 0)) sh->pend[j] |= read_by_pending_dot(f, body, ir_res(op, 0));
        } else if (op->opc == IR_BARRIER) {
            if (sh->barrier != UINT32_MAX) return "its body has more than one barrier";
            sh->barrier = id;
        } else if (op->opc == IR_IF && holds_load(f, op->region[0])) {
            if (sh->issue != UINT32_MAX) return "its body issues loads in more than one place";
            sh->issue = id;
        } else if (op->opc == IR_DOT && op->attr.i > 0) {
            npend++;
            if (op->attr.i != 1) return "a dot leaves more than one group in flight";
        } else if (op->nregion && holds_load(f, op->region[0])) {
            return "its body issues loads in a loop";
        }
    }
    if (!sh->nbufs || sh->barrier == UINT32_MAX || sh->issue == UINT32_MAX)
        return "its body is not the pipelined form (stage waits, one barrier, one load-issuing branch)";
    if (npend > 1) return "more than one dot stays in flight across iterations";
    /* the load-issuing branch: k + (S-1) * step from the induction variable, the stage
     * from the loop body, everything else from the kernel's scalars */
    IrVal iv = f->blocks[body].args[0];
    IrBlk then = f->ops[sh->issue].region[0];
    const IrBlock *tb = &f->blocks[then];
    sh->kadd = UINT32_MAX;
    sh->stage_in = IR_NONE;
    for (uint32_t i = 0; i < tb->nops; i++) {
        uint32_t id = tb->ops[i];
        const IrOp *op = &f->ops[id];
        if (op->opc == IR_ADD && ir_opnd(f, op, 0) == iv && sh->kadd == UINT32_MAX) {
            sh->kadd = id;
            continue;
        }
        if (op->nregion) return "its loads are issued under a branch of their own";
        for (uint32_t k = 0; k < op->nopnd; k++) {
            IrVal v = ir_opnd(f, op, k);
            const IrValue *val = &f->vals[v];
            IrBlk home = val->is_arg ? (IrBlk)val->def : f->ops[val->def].parent;
            if (home == then) continue;
            if (op->opc == IR_ASYNC_LOAD && k == 2 && home == body) {
                if (sh->stage_in && sh->stage_in != v) return "its loads go to different stages";
                sh->stage_in = v;
                continue;
            }
            if (op->opc == IR_ASYNC_LOAD && k == 1) {
                bool known = false;
                for (uint32_t j = 0; j < sh->nbufs; j++) known |= sh->bufs[j] == v;
                if (!known) return "it loads into a buffer no iteration waits for";
                continue;
            }
            if (!clonable(w, v, 0))
                return "an offset of its loads is not computed from the kernel's parameters and the loop index "
                       "alone";
        }
    }
    if (sh->kadd == UINT32_MAX || !sh->stage_in) return "its loads are not issued ahead of the induction variable";
    IrOp *L = &f->ops[loop];
    IrVal need[3] = {ir_opnd(f, L, 0), ir_opnd(f, L, 1), ir_opnd(f, L, 2)};
    for (int k = 0; k < 3; k++)
        if (!clonable(w, need[k], 0)) return "its bounds are not scalars of the kernel body";
    return NULL;
}

static void drop_unused(IrFunc *f, IrBlk b);

/* Step 2: the stage buffers at the top of the kernel body, then the producer's IF. */
static void build_producer(Ws *w, uint32_t loop, Shape *sh)
{
    IrFunc *f = w->f;
    IrBuilder top;
    ir_builder_at_end(&top, f, f->body);
    top.pos = 0;
    top.loc = f->ops[loop].loc;
    for (uint32_t j = 0; j < sh->nbufs; j++) {
        uint32_t d = ir_def(f, sh->bufs[j]);
        top.loc = f->ops[d].loc;
        IrVal nb = ir_build1(&top, IR_SMEM_ALLOC, NULL, 0, ir_vty(f, sh->bufs[j]), NULL); /* top.pos moves on */
        ir_replace_all_uses(f, sh->bufs[j], nb);
        ir_op_erase(f, d);
        sh->bufs[j] = nb;
    }
    top.loc = f->ops[loop].loc;
    IrVal pw = ir_build1(&top, IR_PRODUCER_WARP, NULL, 0, ir_ty_scalar(DT_I1), NULL);
    uint32_t pif = ir_build(&top, IR_IF, &pw, 1, NULL, 0, NULL);
    IrBuilder pb, eb;
    ir_builder_at_end(&pb, f, f->ops[pif].region[0]);
    ir_builder_at_end(&eb, f, f->ops[pif].region[1]);
    pb.loc = eb.loc = f->ops[loop].loc;
    ir_build(&eb, IR_YIELD, NULL, 0, NULL, 0, NULL);

    const IrOp L = f->ops[loop];
    IrVal lb = pull(w, &pb, ir_opnd(f, &L, 0)), ub = pull(w, &pb, ir_opnd(f, &L, 1)), st = pull(w, &pb, ir_opnd(f, &L, 2));
    IrBlk then = f->ops[sh->issue].region[0];
    for (uint32_t i = 0; i < f->blocks[then].nops; i++) { /* the offsets' scalars, before the loop */
        uint32_t id = f->blocks[then].ops[i];
        if (id == sh->kadd) continue;
        for (uint32_t k = 0; k < f->ops[id].nopnd; k++) {
            IrVal v = ir_opnd(f, &f->ops[id], k);
            const IrValue *val = &f->vals[v];
            IrBlk home = val->is_arg ? (IrBlk)val->def : f->ops[val->def].parent;
            bool is_buf = false;
            for (uint32_t j = 0; j < sh->nbufs; j++) is_buf |= sh->bufs[j] == v;
            if (home != then && v != sh->stage_in && !is_buf) pull(w, &pb, v);
        }
    }
    IrVal fo[4] = {lb, ub, st, ir_const_int(&pb, DT_I32, 0)};
    IrType i32 = ir_ty_scalar(DT_I32);
    IrAttr fa;
    memset(&fa, 0, sizeof fa);
    uint32_t pf = ir_build(&pb, IR_FOR, fo, 4, &i32, 1, &fa);
    ir_build(&pb, IR_YIELD, NULL, 0, NULL, 0, NULL);
    IrBlk pbody = f->ops[pf].region[0];
    IrVal k = ir_block_add_arg(f, pbody, ir_vty(f, lb));
    IrVal it = ir_block_add_arg(f, pbody, i32);
    IrBuilder lb_;
    ir_builder_at_end(&lb_, f, pbody);
    lb_.loc = L.loc;
    IrVal cS = ir_const_int(&lb_, DT_I32, sh->S);
    IrVal stage = ir_binary(&lb_, IR_REM, it, cS);
    IrVal one = ir_const_int(&lb_, DT_I32, 1);
    IrVal phase = ir_binary(&lb_, IR_XOR, ir_binary(&lb_, IR_AND, ir_binary(&lb_, IR_DIV, it, cS), one), one);
    for (uint32_t j = 0; j < sh->nbufs; j++) {
        IrVal a[3] = {sh->bufs[j], stage, phase};
        ir_build(&lb_, IR_ASYNC_ACQUIRE, a, 3, NULL, 0, NULL);
    }
    /* the loads of iteration k: the issuing branch's body, its k + (S-1) * step being k */
    w->map[ir_res(&f->ops[sh->kadd], 0)] = k;
    w->map[sh->stage_in] = stage;
    for (uint32_t i = 0; i < f->blocks[then].nops; i++) {
        uint32_t id = f->blocks[then].ops[i];
        IrOp src = f->ops[id];
        if (id == sh->kadd || src.opc == IR_YIELD) continue;
        IrVal opnds[3 + IR_MAXRANK + 2];
        TL_ASSERT(src.nopnd <= TL_COUNTOF(opnds), "pass:warp_specialize");
        for (uint32_t q = 0; q < src.nopnd; q++) {
            IrVal v = ir_opnd(f, &src, q);
            opnds[q] = v < w->nmap && w->map[v] ? w->map[v] : v;
        }
        IrType rt = src.nres ? ir_vty(f, src.res) : i32;
        lb_.loc = src.loc;
        uint32_t nid = ir_build(&lb_, (IrOpcode)src.opc, opnds, src.nopnd, &rt, src.nres, &src.attr);
        if (src.nres) w->map[src.res] = ir_res(&f->ops[nid], 0);
    }
    lb_.loc = L.loc;
    IrVal next = ir_binary(&lb_, IR_ADD, it, ir_const_int(&lb_, DT_I32, 1));
    ir_build(&lb_, IR_YIELD, &next, 1, NULL, 0, NULL);
    drop_unused(f, pbody); /* the consumer's k + (S-1) * step constant */
}

/* Removes pure ops of block b that nothing uses (the consumer's stage arithmetic
 * for the loads it no longer issues), last first. */
static void drop_unused(IrFunc *f, IrBlk b)
{
    uint32_t *uses = ir_use_counts(f);
    IrBlock *blk = &f->blocks[b];
    for (uint32_t i = blk->nops; i-- > 0;) {
        uint32_t id = blk->ops[i];
        IrOp *op = &f->ops[id];
        if (!(ir_opinfo[op->opc].flags & IR_PURE) || op->nregion || op->nres != 1 || uses[op->res]) continue;
        for (uint32_t k = 0; k < op->nopnd; k++) uses[ir_opnd(f, op, k)]--;
        ir_op_erase(f, id);
        blk = &f->blocks[b];
    }
    free(uses);
}

/* Step 3: the consumer's loop and prologue. */
static void rewrite_consumer(IrFunc *f, uint32_t loop, const Shape *sh)
{
    IrBlk then = f->ops[sh->ifop].region[0];
    for (uint32_t i = f->blocks[then].nops; i-- > 0;) { /* the prologue's loads */
        uint32_t id = f->blocks[then].ops[i];
        if (f->ops[id].opc == IR_IF && holds_load(f, f->ops[id].region[0])) ir_op_erase(f, id);
    }
    IrBlk body = f->ops[loop].region[0];
    IrVal iter = f->blocks[body].args[f->blocks[body].nargs - 1]; /* pipeline_expand's iteration count */
    ir_op_erase(f, sh->issue);
    IrBuilder b;
    ir_builder_at_end(&b, f, body);
    b.pos = pos_of(f, sh->barrier);
    b.loc = f->ops[sh->barrier].loc;
    ir_op_erase(f, sh->barrier);
    bool any_pend = false;
    for (uint32_t j = 0; j < sh->nbufs; j++) {
        any_pend |= sh->pend[j];
        if (sh->pend[j]) continue;
        IrVal r[2] = {sh->bufs[j], sh->stage_of[j]};
        ir_build(&b, IR_ASYNC_RELEASE, r, 2, NULL, 0, NULL);
    }
    if (any_pend) {
        IrVal gt = ir_cmp(&b, CMP_GT, iter, ir_const_int(&b, DT_I32, 0));
        uint32_t ifop = ir_build(&b, IR_IF, &gt, 1, NULL, 0, NULL);
        IrBuilder tb, eb;
        ir_builder_at_end(&tb, f, f->ops[ifop].region[0]);
        ir_builder_at_end(&eb, f, f->ops[ifop].region[1]);
        tb.loc = eb.loc = b.loc;
        IrVal cS = ir_const_int(&tb, DT_I32, sh->S);
        IrVal prev = ir_binary(&tb, IR_REM, ir_binary(&tb, IR_ADD, iter, ir_const_int(&tb, DT_I32, sh->S - 1)), cS);
        for (uint32_t j = 0; j < sh->nbufs; j++) {
            if (!sh->pend[j]) continue;
            IrVal r[2] = {sh->bufs[j], prev};
            ir_build(&tb, IR_ASYNC_RELEASE, r, 2, NULL, 0, NULL);
        }
        ir_build(&tb, IR_YIELD, NULL, 0, NULL, 0, NULL);
        ir_build(&eb, IR_YIELD, NULL, 0, NULL, 0, NULL);
    }
    drop_unused(f, body);
    drop_unused(f, then);
    /* no fallback: the then-branch replaces the IF on tma_ready (the descriptors become
     * required, so a tensor TMA cannot describe is refused at launch) */
    uint32_t ifop = sh->ifop;
    IrBlock *tb = &f->blocks[then];
    uint32_t nt = tb->nops;
    uint32_t *mv = tl_xmalloc(nt * sizeof *mv);
    memcpy(mv, tb->ops, nt * sizeof *mv);
    const IrOp *y = &f->ops[mv[nt - 1]];
    for (uint32_t c = 0; c < f->ops[ifop].nres; c++) ir_replace_all_uses(f, ir_res(&f->ops[ifop], c), ir_opnd(f, y, c));
    uint32_t at = pos_of(f, ifop), nafter = f->blocks[f->body].nops - at - 1;
    uint32_t *after = tl_xmalloc((nafter ? nafter : 1) * sizeof *after);
    memcpy(after, &f->blocks[f->body].ops[at + 1], nafter * sizeof *after);
    for (uint32_t i = 0; i + 1 < nt; i++) ir_op_move_to_end(f, mv[i], f->body);
    for (uint32_t i = 0; i < nafter; i++) ir_op_move_to_end(f, after[i], f->body);
    ir_op_erase(f, ifop);
    drop_unused(f, f->body);
    free(mv);
    free(after);
}

typedef struct Find {
    uint32_t *loops;
    uint32_t n, cap;
} Find;

static void collect(IrFunc *f, uint32_t loop, void *vcx)
{
    Find *fd = vcx;
    if (f->ops[loop].attr.j & IR_FOR_WARP_SPECIALIZE) VEC_PUSH(fd->loops, fd->n, fd->cap, loop);
}

void pass_warp_specialize(IrFunc *f, PassCtx *cx)
{
    Find fd = {NULL, 0, 0};
    pipe_for_each_loop(f, collect, &fd);
    bool done = false;
    for (uint32_t i = 0; i < f->nops && !done; i++) done = !f->ops[i].dead && f->ops[i].opc == IR_PRODUCER_WARP;
    for (uint32_t q = 0; q < fd.n; q++) {
        uint32_t loop = fd.loops[q];
        SrcLoc at = f->ops[loop].loc;
        f->ops[loop].attr.j &= ~(int64_t)IR_FOR_WARP_SPECIALIZE;
        if (done) {
            diag_remark(cx->diag, DIAG_REMARK_warp_specialize, at,
                        "loop not warp-specialized: the kernel has a producer warpgroup already (one a kernel)");
            continue;
        }
        bool pipelined = false;
        IrBlk body = f->ops[loop].region[0];
        for (uint32_t i = 0; i < f->blocks[body].nops; i++)
            pipelined |= f->ops[f->blocks[body].ops[i]].opc == IR_ASYNC_WAIT;
        if (!pipelined || f->ops[loop].attr.i < 2) {
            diag_remark(cx->diag, DIAG_REMARK_warp_specialize, at,
                        "loop not warp-specialized: it was not pipelined (--remarks=pipeline says why)");
            continue;
        }
        Ws w = {f, tl_xcalloc(f->nvals, sizeof(IrVal)), f->nvals, {0, 0}, 0, NULL};
        Shape sh;
        const char *why = check_shape(&w, loop, &sh);
        if (why) {
            diag_remark(cx->diag, DIAG_REMARK_warp_specialize, at, "loop not warp-specialized: %s", why);
            free(w.map);
            continue;
        }
        build_producer(&w, loop, &sh);
        rewrite_consumer(f, loop, &sh);
        diag_remark(cx->diag, DIAG_REMARK_warp_specialize, at,
                    "loop warp-specialized: a producer warp issues the loads of %u buffer%s through %d stages; the "
                    "consumers release each stage on its \"empty\" barrier",
                    sh.nbufs, sh.nbufs == 1 ? "" : "s", sh.S);
        free(w.map);
        done = true;
        cx->changed = true;
    }
    free(fd.loops);
}
