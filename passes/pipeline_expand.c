/* pipeline_expand.c: expansion, the third pipelining pass (pipeline.h).
 *
 * A scheduled loop (pipeline_schedule) of S stages whose stage-0 ops are block
 * loads (and the ops computing their offsets)
 *
 *     %r = for %k = %lb to %ub step %st iter(%acc = %init) {
 *         %a = block_load %A, %m0, %k ; ... %acc2 = dot %a, %b, %acc ; yield %acc2 }
 *
 * becomes
 *
 *     %ok = and (tma_ready %A), (tma_ready %B)...
 *     %r = if %ok {
 *         %bufA = smem_alloc : smem<T>[S, BM, BK]  ...            one per pipelined load
 *         %bufQ = smem_alloc : smem<T>[1, BM, BK] ; smem_write %bufQ, 0, %q
 *                                                   one per loop-invariant dot operand
 *         if %ub - %lb > s*%st { async_load %A, %bufA, s, ... }  prologue, s = 0 .. S-2
 *         %res, %n = for %k = %lb to %ub step %st iter(%acc = %init, %i = 0) {
 *             async_wait %bufA, %i % S, (%i / S) & 1 ; %a = smem_read %bufA, %i % S  ...
 *             ... the body, the loads replaced by the reads ...
 *             %acc2 = dot %a, %b, %acc {pending = 1}            when %acc is only carried
 *             barrier                                           every program's reads of
 *                                                               stage (i-1) % S are done
 *             if %ub - %k > (S-1)*%st { async_load %A, %bufA, (%i + S-1) % S, ... }
 *             yield %acc2, %i + 1 }
 *         yield (dot_wait %res)
 *     } else { the original loop, marked stages = 1 so it is never pipelined again
 *              (its loop-invariant dot operands staged once all the same) }
 *
 * A load of a view of rank > 2 whose block is a box over the last two dims
 * (pipe_load_tile: load(K, [b, h, n0, 0], [1, 1, BN, D]) reshaped to [BN, D])
 * gets a buffer of the 2-d tile; its async_load keeps every offset of the view,
 * and the reshape's users read the stage.
 *
 * Why each piece:
 *   - A load for iteration i + S - 1 goes into the stage iteration i - 1 used.
 *     The barrier after the body orders it after every warp's last read of that
 *     stage: a dot with pending = 1 has, on return, waited for the previous
 *     iteration's tensor-core group, the only reader of the stage.
 *   - A stage is loaded once per S iterations, so its barrier's phase parity for
 *     iteration i is (i / S) & 1.
 *   - Loads past the end are not issued (their bytes would land after the loop
 *     has gone and nobody waits for them); out-of-bounds parts of a load that is
 *     issued read zeros, as the block load did.
 *   - A dot may stay in flight across iterations only when its accumulator is
 *     the carried value and nothing else reads it; dot_wait after the loop
 *     completes it.  Any other dot waits for itself (pending = 0).
 *   - A dot operand defined outside the loop (attention's Q) is the same in
 *     every iteration: it is written to shared memory once, before the loop,
 *     and each iteration's dot reads it there in place (pipe_invariant_operands),
 *     where the dot would otherwise copy it from registers every time, with two
 *     barriers, and keep it in registers across the loop.
 *   - The runtime cannot describe every tensor to the TMA unit (a row stride
 *     that is not a multiple of 16 bytes, say); tma_ready says whether it did,
 *     and the original loop runs where it did not.
 */
#include "pipeline.h"

#include <stdlib.h>

typedef struct Expand {
    IrFunc *f;
    IrVal *map;          /* old value -> its copy (0: itself); old values only */
    uint32_t nmap;
    uint32_t loop;       /* the loop being expanded */
    uint32_t *loads;     /* its pipelined loads */
    uint32_t nloads;
    IrVal *tiles;        /* the 2-d tile each reaches its dots through (pipe_load_tile) */
    IrVal *bufs;         /* their buffers */
    IrVal inv[8];        /* loop-invariant dot operands staged once (pipe_invariant_operands) */
    IrVal invbuf[8];     /* their one-stage buffers */
    uint32_t ninv;
    uint8_t *slice;      /* ops computing some pipelined load's offsets */
} Expand;

static IrVal mapped(Expand *e, IrVal v)
{
    return v < e->nmap && e->map[v] ? e->map[v] : v;
}

/* Copies op `id` (with its regions) at b, operands through the map; maps its
 * results (and its regions' arguments) to the copies. */
static uint32_t clone_op(Expand *e, IrBuilder *b, uint32_t id)
{
    IrFunc *f = e->f;
    IrOp src = f->ops[id];
    IrVal *opnds = tl_xmalloc((src.nopnd ? src.nopnd : 1) * sizeof *opnds);
    IrType *rtys = tl_xmalloc((src.nres ? src.nres : 1) * sizeof *rtys);
    for (uint32_t k = 0; k < src.nopnd; k++) opnds[k] = mapped(e, f->opnds[src.opnd + k]);
    for (uint32_t k = 0; k < src.nres; k++) rtys[k] = ir_vty(f, src.res + k);
    SrcLoc saved = b->loc;
    b->loc = src.loc;
    uint32_t nid = ir_build(b, (IrOpcode)src.opc, opnds, src.nopnd, rtys, src.nres, &src.attr);
    b->loc = saved;
    free(opnds);
    free(rtys);
    for (uint32_t k = 0; k < src.nres; k++) e->map[src.res + k] = f->ops[nid].res + k;
    for (uint32_t r = 0; r < src.nregion; r++) {
        IrBlk ob = src.region[r], nb = f->ops[nid].region[r];
        for (uint32_t a = 0; a < f->blocks[ob].nargs; a++) {
            IrVal old = f->blocks[ob].args[a];
            e->map[old] = ir_block_add_arg(f, nb, ir_vty(f, old));
        }
        IrBuilder rb;
        ir_builder_at_end(&rb, f, nb);
        for (uint32_t k = 0; k < f->blocks[ob].nops; k++) clone_op(e, &rb, f->blocks[ob].ops[k]);
    }
    return nid;
}

static void yield(IrBuilder *b, const IrVal *vals, uint32_t n)
{
    ir_build(b, IR_YIELD, vals, n, NULL, 0, NULL);
}

static IrVal iconst(IrBuilder *b, IrType like, int64_t v)
{
    return ir_const_int(b, (DType)like.dt, v);
}

/* At b: if (k + ahead < ub) { the pipelined loads of iteration k + ahead, into
 * stage `stage` }.  The test is k < ub && ub - k > ahead: k + ahead may not fit
 * the induction variable's type, while ub - k does once k < ub (inside the
 * loop always; the prologue's k, the lower bound, also when the loop is empty
 * and an unsigned ub - k would wrap). */
static void issue_loads(Expand *e, IrBuilder *b, IrVal k0, int64_t ahead, IrVal stage, bool in_loop)
{
    IrFunc *f = e->f;
    IrVal ub = ir_opnd(f, &f->ops[e->loop], 1);
    IrType ivt = ir_vty(f, k0);
    IrVal cond = ir_cmp(b, CMP_LT, k0, ub);
    if (ahead) {
        IrVal room = ir_cmp(b, CMP_GT, ir_binary(b, IR_SUB, ub, k0), iconst(b, ivt, ahead));
        cond = in_loop ? room : ir_binary(b, IR_AND, cond, room);
    }
    uint32_t ifop = ir_build(b, IR_IF, &cond, 1, NULL, 0, NULL);
    IrBlk then = f->ops[ifop].region[0], els = f->ops[ifop].region[1];
    IrBuilder tb, eb;
    ir_builder_at_end(&tb, f, then);
    tb.loc = b->loc;
    ir_builder_at_end(&eb, f, els);
    IrVal k = ahead ? ir_binary(&tb, IR_ADD, k0, iconst(&tb, ivt, ahead)) : k0;
    /* the offsets of iteration k: the slice again, the induction variable being k */
    IrBlk body = f->ops[e->loop].region[0];
    e->map[f->blocks[body].args[0]] = k;
    for (uint32_t i = 0; i < f->blocks[body].nops; i++) {
        uint32_t id = f->blocks[body].ops[i];
        if (e->slice[id]) clone_op(e, &tb, id);
    }
    for (uint32_t j = 0; j < e->nloads; j++) {
        const IrOp *ld = &f->ops[e->loads[j]];
        uint32_t rank = ir_vty(f, ir_opnd(f, ld, 0)).rank;
        IrVal opnds[3 + IR_MAXRANK];
        opnds[0] = ir_opnd(f, ld, 0);
        opnds[1] = e->bufs[j];
        opnds[2] = stage;
        for (uint32_t d = 0; d < rank; d++) opnds[3 + d] = mapped(e, ir_opnd(f, &f->ops[e->loads[j]], 1 + d));
        tb.loc = f->ops[e->loads[j]].loc;
        IrAttr at = {0};
        at.i = pipe_load_gap(f, e->loads[j]);
        ir_build(&tb, IR_ASYNC_LOAD, opnds, 3 + rank, NULL, 0, &at);
    }
    tb.loc = b->loc;
    yield(&tb, NULL, 0);
    yield(&eb, NULL, 0);
}

/* Whether the dot `id` of the loop body may stay in flight: its accumulator is
 * a carried value used by nothing else, and its result is only yielded back
 * into that same carried slot.  *slot receives the carried index. */
static bool dot_may_pend(IrFunc *f, IrBlk body, uint32_t id, const uint32_t *uses, uint32_t *slot)
{
    const IrOp *op = &f->ops[id];
    IrVal acc = ir_opnd(f, op, 2), res = ir_res(op, 0);
    const IrValue *av = &f->vals[acc];
    if (!av->is_arg || av->def != body || av->idx == 0) return false;
    if (uses[acc] != 1 || uses[res] != 1) return false;
    const IrBlock *blk = &f->blocks[body];
    const IrOp *y = ir_block_last(f, blk);
    uint32_t c = av->idx - 1;
    if (c >= y->nopnd || ir_opnd(f, y, c) != res) return false;
    *slot = c;
    return true;
}

/* The fallback loop `loop` keeps its block loads, but its loop-invariant wgmma
 * operands go to shared memory once before it all the same (pipe_invariant_operands):
 * an smem_write ahead of the loop, an smem_read right before each user in the body. */
static void stage_invariants_in_place(IrFunc *f, uint32_t loop)
{
    IrVal inv[8];
    uint32_t ninv = pipe_invariant_operands(f, loop, inv, 8);
    IrBlk body = f->ops[loop].region[0];
    for (uint32_t j = 0; j < ninv; j++) {
        IrType t = ir_vty(f, inv[j]);
        IrBuilder b;
        ir_builder_at_end(&b, f, f->ops[loop].parent);
        for (uint32_t k = 0; k < f->blocks[f->ops[loop].parent].nops; k++)
            if (f->blocks[f->ops[loop].parent].ops[k] == loop) b.pos = k;
        uint32_t d = ir_def(f, inv[j]);
        b.loc = d != UINT32_MAX ? f->ops[d].loc : f->ops[loop].loc;
        IrVal buf = ir_build1(&b, IR_SMEM_ALLOC, NULL, 0, ir_ty_smem((DType)t.dt, 1, t.rank, t.dims), NULL);
        IrVal w[3] = {buf, ir_const_int(&b, DT_I32, 0), inv[j]};
        ir_build(&b, IR_SMEM_WRITE, w, 3, NULL, 0, NULL);
        for (uint32_t k = 0; k < f->blocks[body].nops; k++) {
            uint32_t id = f->blocks[body].ops[k];
            for (uint32_t o = 0; o < f->ops[id].nopnd; o++) {
                if (ir_opnd(f, &f->ops[id], o) != inv[j]) continue;
                IrBuilder rb;
                ir_builder_at_end(&rb, f, body);
                rb.pos = k;
                rb.loc = f->ops[id].loc;
                IrVal r[2] = {buf, ir_const_int(&rb, DT_I32, 0)};
                IrVal rd = ir_build1(&rb, IR_SMEM_READ, r, 2, t, NULL);
                k += 2; /* the const and the read now stand before the user */
                ir_set_opnd(f, id, o, rd);
            }
        }
    }
}

static void clear_schedule(IrFunc *f, IrBlk b)
{
    IrBlock *blk = &f->blocks[b];
    for (uint32_t i = 0; i < blk->nops; i++) {
        IrOp *op = &f->ops[blk->ops[i]];
        op->latency = 0;
        op->stage = 0;
    }
}

static void expand(IrFunc *f, uint32_t loop, void *vcx)
{
    PassCtx *cx = vcx;
    IrBlk body = f->ops[loop].region[0];
    int S = 0;
    for (uint32_t i = 0; i < f->blocks[body].nops; i++)
        if (f->ops[f->blocks[body].ops[i]].stage > S) S = f->ops[f->blocks[body].ops[i]].stage;
    if (S < 2) {
        clear_schedule(f, body);
        return;
    }
    Expand e = {f, NULL, f->nvals, loop, NULL, 0, NULL, NULL, {0}, {0}, 0, NULL};
    uint32_t cap = 0;
    for (uint32_t i = 0; i < f->blocks[body].nops; i++) {
        uint32_t id = f->blocks[body].ops[i];
        if (f->ops[id].opc == IR_BLOCK_LOAD && f->ops[id].stage == 1 && f->ops[id].latency == S - 1)
            VEC_PUSH(e.loads, e.nloads, cap, id);
    }
    e.slice = tl_xcalloc(f->nops, 1);
    e.tiles = tl_xcalloc(e.nloads ? e.nloads : 1, sizeof *e.tiles);
    bool ok = e.nloads > 0;
    for (uint32_t j = 0; j < e.nloads && ok; j++) {
        e.tiles[j] = pipe_load_tile(f, e.loads[j]);
        ok = e.tiles[j] && pipe_offset_slice(f, loop, e.loads[j], e.slice);
    }
    if (!ok) { /* a schedule the expansion cannot honour: leave the loop as it is */
        clear_schedule(f, body);
        free(e.loads);
        free(e.tiles);
        free(e.slice);
        return;
    }
    e.map = tl_xcalloc(f->nvals, sizeof *e.map);
    e.bufs = tl_xcalloc(e.nloads, sizeof *e.bufs);
    uint32_t *uses = ir_use_counts(f);

    IrOp L = f->ops[loop];
    IrVal lb = ir_opnd(f, &L, 0), st = ir_opnd(f, &L, 2);
    IrType i32 = ir_ty_scalar(DT_I32);
    int64_t step = f->ops[ir_def(f, st)].attr.i;
    uint32_t nc = ir_for_ncarried(&L);

    /* 1. before the loop: is every pipelined tensor described to the TMA unit? */
    IrBuilder b;
    ir_builder_at_end(&b, f, L.parent);
    for (uint32_t k = 0; k < f->blocks[L.parent].nops; k++)
        if (f->blocks[L.parent].ops[k] == loop) b.pos = k;
    b.loc = L.loc;
    IrVal ok_v = IR_NONE;
    for (uint32_t j = 0; j < e.nloads; j++) {
        IrVal view = ir_opnd(f, &f->ops[e.loads[j]], 0);
        bool seen = false;
        for (uint32_t i = 0; i < j; i++) seen |= ir_opnd(f, &f->ops[e.loads[i]], 0) == view;
        if (seen) continue;
        IrVal r = ir_build1(&b, IR_TMA_READY, &view, 1, ir_ty_scalar(DT_I1), NULL);
        ok_v = ok_v ? ir_binary(&b, IR_AND, ok_v, r) : r;
    }
    IrType *rtys = tl_xmalloc((nc + 1) * sizeof *rtys);
    for (uint32_t c = 0; c < nc; c++) rtys[c] = ir_vty(f, L.res + c);
    uint32_t ifop = ir_build(&b, IR_IF, &ok_v, 1, rtys, nc, NULL);
    for (uint32_t c = 0; c < nc; c++) ir_replace_all_uses(f, L.res + c, f->ops[ifop].res + c);

    /* 2. else: the original loop, never to be pipelined again */
    IrBlk els = f->ops[ifop].region[1], then = f->ops[ifop].region[0];
    ir_op_move_to_end(f, loop, els);
    IrBuilder eb;
    ir_builder_at_end(&eb, f, els);
    eb.loc = L.loc;
    IrVal *res = tl_xmalloc((nc + 1) * sizeof *res);
    for (uint32_t c = 0; c < nc; c++) res[c] = L.res + c;
    yield(&eb, res, nc);

    /* 3. then: buffers and the prologue */
    IrBuilder tb;
    ir_builder_at_end(&tb, f, then);
    tb.loc = L.loc;
    for (uint32_t j = 0; j < e.nloads; j++) {
        IrType t = ir_vty(f, e.tiles[j]);
        tb.loc = f->ops[e.loads[j]].loc;
        e.bufs[j] = ir_build1(&tb, IR_SMEM_ALLOC, NULL, 0, ir_ty_smem((DType)t.dt, S, t.rank, t.dims), NULL);
    }
    /* loop-invariant dot operands: into shared memory once, read in place by every iteration */
    e.ninv = (f->ops[loop].attr.j & IR_FOR_NO_STAGING) ? 0 : pipe_invariant_operands(f, loop, e.inv, 8);
    for (uint32_t j = 0; j < e.ninv; j++) {
        IrType t = ir_vty(f, e.inv[j]);
        uint32_t d = ir_def(f, e.inv[j]);
        tb.loc = d != UINT32_MAX ? f->ops[d].loc : L.loc;
        e.invbuf[j] = ir_build1(&tb, IR_SMEM_ALLOC, NULL, 0, ir_ty_smem((DType)t.dt, 1, t.rank, t.dims), NULL);
        IrVal w[3] = {e.invbuf[j], ir_const_int(&tb, DT_I32, 0), e.inv[j]};
        ir_build(&tb, IR_SMEM_WRITE, w, 3, NULL, 0, NULL);
    }
    tb.loc = L.loc;
    for (int s = 0; s < S - 1; s++) issue_loads(&e, &tb, lb, s * step, ir_const_int(&tb, DT_I32, s), false);

    /* 4. the pipelined loop */
    IrVal *opnds = tl_xmalloc((L.nopnd + 1) * sizeof *opnds);
    for (uint32_t k = 0; k < L.nopnd; k++) opnds[k] = ir_opnd(f, &L, k);
    opnds[L.nopnd] = ir_const_int(&tb, DT_I32, 0);
    rtys[nc] = i32;
    IrAttr fa = L.attr;
    fa.i = S;
    fa.j &= IR_FOR_WARP_SPECIALIZE; /* staging is done; warp_specialize reads its flag */
    uint32_t nf = ir_build(&tb, IR_FOR, opnds, L.nopnd + 1, rtys, nc + 1, &fa);
    IrBlk nb = f->ops[nf].region[0];
    for (uint32_t a = 0; a < f->blocks[body].nargs; a++) {
        IrVal old = f->blocks[body].args[a];
        e.map[old] = ir_block_add_arg(f, nb, ir_vty(f, old));
    }
    IrVal iter = ir_block_add_arg(f, nb, i32);
    IrBuilder bb;
    ir_builder_at_end(&bb, f, nb);
    bb.loc = L.loc;
    IrVal cS = ir_const_int(&bb, DT_I32, S);
    IrVal stage = ir_binary(&bb, IR_REM, iter, cS);
    IrVal phase = ir_binary(&bb, IR_AND, ir_binary(&bb, IR_DIV, iter, cS), ir_const_int(&bb, DT_I32, 1));
    for (uint32_t j = 0; j < e.nloads; j++) {
        const IrOp *ld = &f->ops[e.loads[j]];
        IrVal w[3] = {e.bufs[j], stage, phase};
        bb.loc = ld->loc;
        ir_build(&bb, IR_ASYNC_WAIT, w, 3, NULL, 0, NULL);
        IrVal rd = ir_build1(&bb, IR_SMEM_READ, w, 2, ir_vty(f, e.tiles[j]), NULL);
        e.map[e.tiles[j]] = rd;
    }
    bool *pend = tl_xcalloc(nc + 1, sizeof *pend);
    uint32_t nbody = f->blocks[body].nops;
    for (uint32_t i = 0; i + 1 < nbody; i++) {
        uint32_t id = f->blocks[body].ops[i];
        bool is_load = false; /* the load, or the reshape of its block to the 2-d tile */
        for (uint32_t j = 0; j < e.nloads; j++)
            is_load |= e.loads[j] == id || (f->ops[id].nres == 1 && ir_res(&f->ops[id], 0) == e.tiles[j]);
        if (is_load) continue;
        /* a staged invariant operand: read right before its user (the dot reads the stage in place) */
        for (uint32_t j = 0; j < e.ninv; j++)
            for (uint32_t k = 0; k < f->ops[id].nopnd; k++)
                if (ir_opnd(f, &f->ops[id], k) == e.inv[j]) {
                    bb.loc = f->ops[id].loc;
                    IrVal r[2] = {e.invbuf[j], ir_const_int(&bb, DT_I32, 0)};
                    e.map[e.inv[j]] = ir_build1(&bb, IR_SMEM_READ, r, 2, ir_vty(f, e.inv[j]), NULL);
                    break;
                }
        uint32_t nid = clone_op(&e, &bb, id);
        uint32_t slot;
        if (f->ops[id].opc == IR_DOT && dot_may_pend(f, body, id, uses, &slot)) {
            f->ops[nid].attr.i = 1;
            pend[slot] = true;
        }
    }
    const IrOp *y = &f->ops[f->blocks[body].ops[nbody - 1]];
    IrVal *yv = tl_xmalloc((nc + 1) * sizeof *yv);
    for (uint32_t c = 0; c < nc; c++) yv[c] = mapped(&e, ir_opnd(f, y, c));
    bb.loc = L.loc;
    ir_build(&bb, IR_BARRIER, NULL, 0, NULL, 0, NULL);
    IrVal sn = ir_binary(&bb, IR_REM, ir_binary(&bb, IR_ADD, iter, ir_const_int(&bb, DT_I32, S - 1)), cS);
    issue_loads(&e, &bb, f->blocks[nb].args[0], (int64_t)(S - 1) * step, sn, true);
    yv[nc] = ir_binary(&bb, IR_ADD, iter, ir_const_int(&bb, DT_I32, 1));
    yield(&bb, yv, nc + 1);

    /* 5. after it: complete the dots left in flight */
    for (uint32_t c = 0; c < nc; c++) {
        IrVal r = f->ops[nf].res + c;
        res[c] = pend[c] ? ir_build1(&tb, IR_DOT_WAIT, &r, 1, ir_vty(f, r), NULL) : r;
    }
    yield(&tb, res, nc);

    clear_schedule(f, body);
    f->ops[loop].attr.i = 1;
    if (!(f->ops[loop].attr.j & IR_FOR_NO_STAGING)) stage_invariants_in_place(f, loop); /* after the pipelined copy is made */
    f->ops[loop].attr.j &= ~(int64_t)IR_FOR_WARP_SPECIALIZE; /* the fallback runs in the consumer warps as it is */
    cx->changed = true;
    free(pend);
    free(yv);
    free(opnds);
    free(res);
    free(rtys);
    free(uses);
    free(e.map);
    free(e.bufs);
    free(e.loads);
    free(e.tiles);
    free(e.slice);
}

void pass_pipeline_expand(IrFunc *f, PassCtx *cx)
{
    pipe_for_each_loop(f, expand, cx);
}
