/* dce.c: dead code elimination.
 *
 * Liveness is computed optimistically (everything is dead until shown live),
 * so that a loop-carried value used only by its own yield chain dies with it.
 *
 * Algorithm:
 *   1. Roots: every IR_MEM op (stores, loads, atomics, print, assert, and the
 *      pipelining ops: smem_alloc, async_load/async_wait, smem_read, barrier,
 *      dot_wait, which order shared memory and barriers whether or not their
 *      results are used), every WHILE (whether it ends is not ours to decide),
 *      every FOR whose step is not a nonzero constant (a zero step is a
 *      run-time error), and the operands of the grid's and the requires block's YIELD.
 *   2. Propagate with a worklist of values and ops:
 *      - a live op makes the op owning its block live;
 *      - a live pure or memory op makes its operands live; a live FOR its
 *        bounds and step, a live IF its condition, a live WHILE the condition
 *        of its CONDITION;
 *      - a live value defined by a pure op makes that op live; one that is a
 *        result or region argument of a FOR/IF/WHILE makes its slot live.
 *        A slot is one loop-carried or result position: FOR slot k is
 *        (init k, region argument k+1, yield operand k, result k); IF slot k
 *        is (yield operand k of both regions, result k); WHILE carried slot k
 *        is (init k, "before" argument k, "after" yield operand k) and WHILE
 *        result slot j is (condition operand j+1, "after" argument j,
 *        result j).  A live slot makes all of its values and its op live.
 *   3. Sweep each block from its end: erase every op that is not live (a
 *      pure op nobody needs, a FOR or IF with neither a live slot nor a live
 *      op inside); for a live FOR/IF/WHILE, sweep its regions first and then,
 *      if some slot is dead, rebuild it with only the live slots: a new op
 *      with fewer operands and results takes over the region blocks' contents,
 *      the dead region arguments are dropped and the terminators' operands
 *      compacted; it keeps the old op's schedule annotations.
 */
#include <stdlib.h>
#include <string.h>

#include "pass.h"

typedef struct Live {
    IrFunc *f;
    uint8_t *val;       /* per value: live */
    uint8_t *op;        /* per op: live */
    IrVal *vwork;
    uint32_t nvwork, vworkcap;
    uint32_t *owork;
    uint32_t nowork, oworkcap;
    bool changed;
} Live;

static void mark_val(Live *L, IrVal v)
{
    if (v == IR_NONE || L->val[v]) return;
    L->val[v] = 1;
    VEC_PUSH(L->vwork, L->nvwork, L->vworkcap, v);
}

static void mark_op(Live *L, uint32_t id)
{
    if (id == UINT32_MAX || L->op[id]) return;
    L->op[id] = 1;
    VEC_PUSH(L->owork, L->nowork, L->oworkcap, id);
}

static uint32_t term(IrFunc *f, IrBlk b)
{
    IrOp *last = ir_block_last(f, ir_blk(f, b));
    TL_ASSERT(last, "pass:dce");
    return (uint32_t)(last - f->ops);
}

static IrVal term_opnd(IrFunc *f, IrBlk b, uint32_t k) { return ir_opnd(f, ir_op(f, term(f, b)), k); }

/* Step 2: slot k of a FOR or IF, or carried (after == false) / result slot of a WHILE. */
static void mark_slot(Live *L, uint32_t id, uint32_t k, bool result)
{
    IrFunc *f = L->f;
    IrOp *op = ir_op(f, id);
    IrBlk r0 = op->region[0], r1 = op->region[1];
    mark_op(L, id);
    switch (op->opc) {
    case IR_FOR:
        mark_val(L, op->res + k);
        mark_val(L, ir_blk(f, r0)->args[k + 1]);
        mark_val(L, ir_for_init(f, op, k));
        mark_val(L, term_opnd(f, r0, k));
        break;
    case IR_IF:
        mark_val(L, op->res + k);
        mark_val(L, term_opnd(f, r0, k));
        mark_val(L, term_opnd(f, r1, k));
        break;
    case IR_WHILE:
        if (!result) {
            mark_val(L, ir_blk(f, r0)->args[k]);
            mark_val(L, ir_opnd(f, op, k));
            mark_val(L, term_opnd(f, r1, k));
        } else {
            mark_val(L, op->res + k);
            mark_val(L, ir_blk(f, r1)->args[k]);
            mark_val(L, term_opnd(f, r0, k + 1));
        }
        break;
    default: tl_fatal("pass:dce", "slot of a %s op", ir_opinfo[op->opc].name);
    }
}

static void visit_val(Live *L, IrVal v)
{
    IrFunc *f = L->f;
    const IrValue *iv = &f->vals[v];
    if (iv->is_arg) {
        IrBlk b = iv->def;
        uint32_t p = ir_blk(f, b)->parent_op;
        if (p == UINT32_MAX) return;
        const IrOp *op = ir_op(f, p);
        if (op->opc == IR_FOR && iv->idx > 0) mark_slot(L, p, iv->idx - 1, false);
        else if (op->opc == IR_WHILE) mark_slot(L, p, iv->idx, b == op->region[1]);
        return;
    }
    const IrOp *op = ir_op(f, iv->def);
    if (ir_opinfo[op->opc].flags & IR_CF) mark_slot(L, iv->def, iv->idx, true);
    else mark_op(L, iv->def);
}

static void visit_op(Live *L, uint32_t id)
{
    IrFunc *f = L->f;
    const IrOp *op = ir_op(f, id);
    mark_op(L, ir_blk(f, op->parent)->parent_op);
    switch (op->opc) {
    case IR_FOR:
        for (uint32_t k = 0; k < 3; k++) mark_val(L, ir_opnd(f, op, k));
        break;
    case IR_IF: mark_val(L, ir_opnd(f, op, 0)); break;
    case IR_WHILE: mark_val(L, term_opnd(f, op->region[0], 0)); break;
    default:
        for (uint32_t k = 0; k < op->nopnd; k++) mark_val(L, ir_opnd(f, op, k));
        break;
    }
}

static bool const_nonzero(IrFunc *f, IrVal v)
{
    uint32_t d = ir_def(f, v);
    if (d == UINT32_MAX || ir_op(f, d)->opc != IR_CONST) return false;
    IrType t = ir_vty(f, v);
    return !dt_is_float((DType)t.dt) && ir_op(f, d)->attr.i != 0;
}

/* Step 1. */
static void roots(Live *L, IrBlk b, bool grid)
{
    IrFunc *f = L->f;
    IrBlock *blk = ir_blk(f, b);
    for (uint32_t k = 0; k < blk->nops; k++) {
        uint32_t id = blk->ops[k];
        const IrOp *op = ir_op(f, id);
        uint16_t fl = ir_opinfo[op->opc].flags;
        if ((fl & IR_MEM) || op->opc == IR_WHILE || (op->opc == IR_FOR && !const_nonzero(f, ir_opnd(f, op, 2))))
            mark_op(L, id);
        if (grid && op->opc == IR_YIELD)
            for (uint32_t i = 0; i < op->nopnd; i++) mark_val(L, ir_opnd(f, op, i));
        for (uint32_t r = 0; r < op->nregion; r++) roots(L, op->region[r], false);
        blk = ir_blk(f, b);
    }
}

static void propagate(Live *L)
{
    while (L->nvwork || L->nowork) {
        if (L->nvwork) visit_val(L, L->vwork[--L->nvwork]);
        else visit_op(L, L->owork[--L->nowork]);
    }
}

/* ---- step 3: rebuilding with fewer slots ------------------------------------ */

/* Moves the ops and arguments of block `from` into the empty block `to`. */
static void move_region(IrFunc *f, IrBlk from, IrBlk to)
{
    IrBlock *a = ir_blk(f, from), *b = ir_blk(f, to);
    TL_ASSERT(b->nops == 0 && b->nargs == 0, "pass:dce");
    IrBlock empty = *b;
    uint32_t pa = a->parent_op, pb = b->parent_op;
    *b = *a;
    b->parent_op = pb;
    *a = empty;
    a->parent_op = pa;
    for (uint32_t k = 0; k < b->nops; k++) ir_op(f, b->ops[k])->parent = to;
    for (uint32_t k = 0; k < b->nargs; k++) f->vals[b->args[k]].def = to;
}

/* Keeps argument `skip + k` of block b where keep[k] (the first `skip` always). */
static void compact_args(IrFunc *f, IrBlk b, uint32_t skip, const bool *keep)
{
    IrBlock *blk = ir_blk(f, b);
    uint32_t n = 0;
    for (uint32_t k = 0; k < blk->nargs; k++)
        if (k < skip || keep[k - skip]) {
            blk->args[n] = blk->args[k];
            f->vals[blk->args[n]].idx = n;
            n++;
        }
    blk->nargs = n;
}

/* Keeps operand `skip + k` of block b's terminator where keep[k]. */
static void compact_term(IrFunc *f, IrBlk b, uint32_t skip, const bool *keep)
{
    IrOp *op = ir_op(f, term(f, b));
    uint32_t n = 0;
    for (uint32_t k = 0; k < op->nopnd; k++)
        if (k < skip || keep[k - skip]) f->opnds[op->opnd + n++] = f->opnds[op->opnd + k];
    op->nopnd = n;
}

/* Rebuilds FOR/IF/WHILE op `id` (at index `pos` of its block) with the live slots only. */
static void trim(Live *L, uint32_t id, uint32_t pos)
{
    IrFunc *f = L->f;
    IrOp op = *ir_op(f, id);
    /* keep_c: carried slots (FOR and WHILE); keep_r: result slots */
    uint32_t nc = op.opc == IR_FOR ? op.nres : op.opc == IR_WHILE ? op.nopnd : 0;
    bool *keep_c = tl_xcalloc(nc + 1, sizeof(bool));
    bool *keep_r = tl_xcalloc(op.nres + 1, sizeof(bool));
    bool all = true;
    for (uint32_t k = 0; k < op.nres; k++) {
        keep_r[k] = L->val[op.res + k] != 0; /* a live slot marks its result live */
        all = all && keep_r[k];
    }
    for (uint32_t k = 0; k < nc; k++) {
        keep_c[k] = op.opc == IR_FOR ? keep_r[k] : L->val[ir_blk(f, op.region[0])->args[k]] != 0;
        all = all && keep_c[k];
    }
    if (all) {
        free(keep_c);
        free(keep_r);
        return;
    }
    /* operands and result types of the new op */
    uint32_t fixed = op.opc == IR_FOR ? IR_FOR_NBOUNDS : op.opc == IR_IF ? 1 : 0;
    IrVal *opnds = tl_xcalloc(op.nopnd + 1, sizeof(IrVal));
    IrType *rtys = tl_xcalloc(op.nres + 1, sizeof(IrType));
    uint32_t no = 0, nr = 0;
    for (uint32_t k = 0; k < op.nopnd; k++)
        if (k < fixed || keep_c[k - fixed]) opnds[no++] = ir_opnd(f, &op, k);
    for (uint32_t k = 0; k < op.nres; k++)
        if (keep_r[k]) rtys[nr++] = ir_vty(f, op.res + k);
    IrBuilder b;
    ir_builder_at_end(&b, f, op.parent);
    b.pos = pos;
    b.loc = op.loc;
    uint32_t nid = ir_build(&b, (IrOpcode)op.opc, opnds, no, rtys, nr, &op.attr);
    ir_op(f, nid)->latency = op.latency;
    ir_op(f, nid)->stage = op.stage;
    IrOp nop = *ir_op(f, nid);
    for (uint32_t r = 0; r < op.nregion; r++) move_region(f, op.region[r], nop.region[r]);
    switch (op.opc) {
    case IR_FOR:
        compact_args(f, nop.region[0], 1, keep_c);
        compact_term(f, nop.region[0], 0, keep_c);
        break;
    case IR_IF:
        compact_term(f, nop.region[0], 0, keep_r);
        compact_term(f, nop.region[1], 0, keep_r);
        break;
    case IR_WHILE:
        compact_args(f, nop.region[0], 0, keep_c);
        compact_term(f, nop.region[0], 1, keep_r);
        compact_args(f, nop.region[1], 0, keep_r);
        compact_term(f, nop.region[1], 0, keep_c);
        break;
    default: tl_fatal("pass:dce", "cannot trim a %s op", ir_opinfo[op.opc].name);
    }
    for (uint32_t k = 0, j = 0; k < op.nres; k++)
        if (keep_r[k]) ir_replace_all_uses(f, op.res + k, nop.res + j++);
    ir_op_erase(f, id);
    L->changed = true;
    free(opnds);
    free(rtys);
    free(keep_c);
    free(keep_r);
}

/* Step 3. */
static void sweep(Live *L, IrBlk b)
{
    IrFunc *f = L->f;
    for (uint32_t k = ir_blk(f, b)->nops; k-- > 0;) {
        uint32_t id = ir_blk(f, b)->ops[k];
        const IrOp *op = ir_op(f, id);
        if (ir_opinfo[op->opc].flags & IR_TERM) continue;
        if (!L->op[id]) {
            ir_op_erase(f, id);
            L->changed = true;
            continue;
        }
        if (!op->nregion) continue;
        for (uint32_t r = 0; r < ir_op(f, id)->nregion; r++) sweep(L, ir_op(f, id)->region[r]);
        trim(L, id, k);
    }
}

void pass_dce(IrFunc *f, PassCtx *cx)
{
    Live L;
    memset(&L, 0, sizeof L);
    L.f = f;
    L.val = tl_xcalloc(f->nvals, 1);
    L.op = tl_xcalloc(f->nops, 1);
    roots(&L, f->body, false);
    if (f->grid) roots(&L, f->grid, true);
    if (f->requires) roots(&L, f->requires, true);
    propagate(&L);
    sweep(&L, f->body);
    if (f->grid) sweep(&L, f->grid);
    if (f->requires) sweep(&L, f->requires);
    if (L.changed) cx->changed = true;
    free(L.val);
    free(L.op);
    free(L.vwork);
    free(L.owork);
}
