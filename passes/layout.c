/* layout.c: layout assignment (--pass=layout).
 *
 * Gives every tile value of rank >= 1 a distributed layout (ir/layout.h) in
 * f->layouts / f->val_layout.  Scalars, views and shared-memory buffers
 * (smem<T>[S, ...]: they live in shared memory, not in threads) get none.
 * Each op's rule is the layout column of ir/ops.def (ELEM, ANCHOR, SLICE,
 * LIKE0, NONE); only the CUSTOM ops (shape ops, DOT, control flow) have code
 * of their own here (assign_custom).  Free values are ir_free_values'.
 * Algorithm:
 *   0. Gathers of rows (ask_gathers): a load or store whose pointer tile
 *      broadcasts a per-row address computed from data (a block table's
 *      page, a routing index) along the last dim is asked to take
 *      layout_gather (few rows per thread, 16-byte vectors, 64-byte runs per
 *      row and warp), and the values its addresses and masks are made of are
 *      asked, backwards, for the layouts that make every step to it a register
 *      renaming (sliced, broadcast bits and replicated registers dropped).
 *      A request crosses control flow: an IF's result asks what each branch
 *      yields, and a FOR's carried value (the argument) asks its init and what
 *      the body yields back, the argument keeping the layout through step 3
 *      (decode reads the block table an iteration ahead, into a carried tile).
 *      A request overrides what steps 1-2 give that value; without it the row
 *      indices would be computed in the default 1-d layout and moved through
 *      shared memory (with barriers) into the threads that use them.
 *   1. Anchors.  Ops whose layout is dictated by what they do: block loads
 *      and stores, reads of a shared-memory stage (smem_read: the block load
 *      the pipeline made asynchronous, in the layout that load had) and
 *      pointer tiles built from arange/splat take the default blocked layout
 *      (16-byte vectors along the last dim; a pointer tile's vectors are 16
 *      bytes of its pointees, not of pointers); DOT results take the
 *      accumulator layout of their plan (layout_dot_plan: wgmma on sm_90a,
 *      mma.sync, or FMA, which codegen follows), and a
 *      DOT_WAIT's result the layout of the accumulator it completes (the same
 *      registers); a reduction's result is the slice of its operand's layout
 *      (no data moves).
 *   2. Propagate forward in program order: an elementwise op takes the layout
 *      of its first operand that is not "free" (a SPLAT, ARANGE or an op made
 *      only of free values, which codegen rematerialises in any layout at no
 *      cost); EXPAND_DIMS inserts a zero-bit dim and RESHAPE regroups the
 *      dims (the flat index does not change, so neither do the bases); BROADCAST of a value sliced from a
 *      layout P of the result's shape takes P back when that is a register
 *      renaming (the operand is P with the broadcast dims' bits dropped).
 *   3. Resolve loop-carried values to a fixpoint: a FOR/WHILE region argument
 *      starts with its init's layout; when the value yielded back to it (FOR:
 *      the body's yield; WHILE: the "after" region's, whose arguments take
 *      the layouts the condition forwards) ends up in another layout and the
 *      init is free, the argument adopts the yielded layout and the loop is
 *      propagated again (at most 4 rounds), so an accumulator lives in the
 *      mma layout across iterations.
 *   4. Rewrite: where an operand's layout differs from the one its user needs
 *      (elementwise ops and loads: their result's; stores and atomics: their
 *      pointers'; dot: the accumulator's; terminators: what they feed), an
 *      explicit CONVERT_LAYOUT goes before the user, shared by later users it
 *      dominates.  Free values are not converted: codegen recomputes them in
 *      the layout each user needs.
 */
#include "pass.h"

#include <stdlib.h>
#include <string.h>

#include "../ir/layout.h"

typedef struct LayoutState {
    IrFunc *f;
    int warps;
    uint32_t *parent;   /* per value: layout index the value's layout was sliced from (0: none) */
    uint8_t *loose;     /* per value, while propagating: wants no layout of its own (a free
                         * value, or one made only of free values and loop arguments whose
                         * layout is still to be seeded from what the loop yields) */
    uint8_t *free_;     /* per value: free (ir_free_values), never converted */
    uint32_t *hint;     /* per value: the layout (index) step 0 asks for (0: none); it
                         * overrides what steps 1-2 would give the value */
} LayoutState;

static uint32_t intern(IrFunc *f, const Layout *L)
{
    for (uint32_t i = 1; i < f->nlayouts; i++)
        if (layout_eq(&f->layouts[i], L)) return i;
    if (f->nlayouts == 0) {
        VEC_RESERVE(f->layouts, f->nlayouts, f->layoutcap, 1);
        memset(&f->layouts[0], 0, sizeof f->layouts[0]);
        f->nlayouts = 1;
    }
    VEC_PUSH(f->layouts, f->nlayouts, f->layoutcap, *L);
    return f->nlayouts - 1;
}

static bool is_tile(IrFunc *f, IrVal v)
{
    IrType t = ir_vty(f, v);
    return t.kind == TY_TILE && t.rank > 0;
}

static void set(LayoutState *s, IrVal v, const Layout *L)
{
    if (is_tile(s->f, v)) s->f->val_layout[v] = intern(s->f, L);
}

/* The default blocked layout; a pointer tile takes its pointees' layout, so
 * that a load or store through it moves 16-byte vectors of the pointees (an
 * 8-byte pointer would give vectors of two elements). */
static void set_default(LayoutState *s, IrVal v)
{
    if (!is_tile(s->f, v)) return;
    IrType t = ir_vty(s->f, v);
    Layout L = layout_default(ir_ty_with_dt(t, (DType)t.dt, false), s->warps);
    set(s, v, &L);
}

static const Layout *get(LayoutState *s, IrVal v)
{
    uint32_t i = s->f->val_layout[v];
    return i ? &s->f->layouts[i] : NULL;
}

/* Inserts a zero-bit dim at `axis`: bases are unchanged, the dims shift. */
static Layout insert_dim(const Layout *L, int axis)
{
    Layout R = *L;
    R.rank = L->rank + 1;
    for (int d = R.rank - 1; d > axis; d--) R.dimbits[d] = L->dimbits[d - 1];
    R.dimbits[axis] = 0;
    return R;
}

/* X broadcast to layout P is a register renaming when X is P with the bits of
 * the broadcast dims (size 1 in xt) dropped: each thread then already holds,
 * in register r, the element that register r of the result repeats. */
static Layout broadcast_source(const Layout *P, IrType xt)
{
    Layout Q = *P;
    for (int d = 0; d < xt.rank; d++)
        if (xt.dims[d] == 1 && Q.dimbits[d] > 0) {
            Layout S = layout_slice(&Q, d);
            Q = insert_dim(&S, d);
        }
    return Q;
}

static bool broadcast_renames(const Layout *P, const Layout *X, IrType xt)
{
    Layout Q = broadcast_source(P, xt);
    return layout_eq(&Q, X);
}

static bool shape_matches(const Layout *L, IrType t)
{
    if (L->rank != t.rank) return false;
    for (int d = 0; d < t.rank; d++)
        if ((1 << L->dimbits[d]) != t.dims[d]) return false;
    return true;
}

static void assign_block(LayoutState *s, IrBlk b);

/* The region arguments args[0..n) of a loop get the layouts of `from` (inits,
 * or yielded values on a later round). */
static bool seed_args(LayoutState *s, const IrVal *args, const IrVal *from, uint32_t n, bool only_free)
{
    bool changed = false;
    for (uint32_t i = 0; i < n; i++) {
        if (!is_tile(s->f, args[i])) continue;
        const Layout *L = get(s, from[i]);
        if (!L) continue;
        if (only_free && !s->loose[args[i]]) continue;
        if (s->hint[args[i]]) continue; /* a gather asked for its layout (step 0) */
        uint32_t li = intern(s->f, L);
        if (s->f->val_layout[args[i]] != li) {
            s->f->val_layout[args[i]] = li;
            s->parent[args[i]] = s->parent[from[i]];
            changed = true;
        }
        s->loose[args[i]] = 0;
    }
    return changed;
}

/* `to` (a WHILE result or "after" argument) receives `from` (a value the
 * condition forwards): same layout and parent; not free. */
static void copy_facts(LayoutState *s, IrVal to, IrVal from)
{
    if (!is_tile(s->f, to)) return;
    s->f->val_layout[to] = s->f->val_layout[from];
    s->parent[to] = s->parent[from];
    s->loose[to] = 0;
}

/* A loop: the carried values args[0..n) enter from inits and come back from
 * the yield ending region `last` (for FOR the body; for WHILE the "after"
 * region, entered through the condition of `first`, the "before" region). */
static void assign_loop(LayoutState *s, IrOp *op, const IrVal *args, const IrVal *inits, uint32_t n)
{
    IrFunc *f = s->f;
    for (uint32_t i = 0; i < n; i++) {
        if (!is_tile(f, args[i])) continue;
        f->val_layout[args[i]] = f->val_layout[inits[i]];
        s->parent[args[i]] = s->parent[inits[i]];
        s->loose[args[i]] = s->loose[inits[i]];
        if (s->hint[args[i]]) { /* asked for by a gather (step 0) */
            f->val_layout[args[i]] = s->hint[args[i]];
            s->parent[args[i]] = 0;
            s->loose[args[i]] = 0;
        }
    }
    IrBlk first = op->region[0], last = op->opc == IR_WHILE ? op->region[1] : op->region[0];
    for (int round = 0; round < 4; round++) {
        assign_block(s, first);
        if (op->opc == IR_WHILE) { /* the condition forwards values to the "after" arguments */
            IrBlock *B = ir_blk(f, first), *A = ir_blk(f, last);
            IrOp *c = ir_block_last(f, B);
            for (uint32_t i = 0; i < A->nargs && i + 1 < c->nopnd; i++)
                copy_facts(s, A->args[i], f->opnds[c->opnd + 1 + i]);
            assign_block(s, last);
        }
        IrBlock *L = ir_blk(f, last);
        IrOp *y = ir_block_last(f, L);
        if (y->nopnd < n || !seed_args(s, args, &f->opnds[y->opnd], n, true)) break;
    }
}

/* The ops whose layout rule (ops.def) is CUSTOM. */
static void assign_custom(LayoutState *s, IrOp *op)
{
    IrFunc *f = s->f;
    IrVal r0 = op->nres ? ir_res(op, 0) : IR_NONE;
    switch ((IrOpcode)op->opc) {
    case IR_EXPAND_DIMS: {
        IrVal x = ir_opnd(f, op, 0);
        const Layout *L = get(s, x);
        s->loose[r0] = ir_op_free(f, op, s->loose);
        if (!L) { set_default(s, r0); return; }
        Layout R = insert_dim(L, (int)op->attr.i);
        set(s, r0, &R);
        s->parent[r0] = s->parent[x];
        return;
    }
    case IR_RESHAPE: {
        /* the row-major flat index does not change, so the operand's bases
         * (flat-index bits) are a layout of the new shape as they are */
        IrVal x = ir_opnd(f, op, 0);
        const Layout *L = get(s, x);
        s->loose[r0] = ir_op_free(f, op, s->loose);
        if (!L) { set_default(s, r0); return; }
        Layout R = *L;
        IrType rt = ir_vty(f, r0);
        R.rank = rt.rank;
        memset(R.dimbits, 0, sizeof R.dimbits);
        for (int d = 0; d < rt.rank; d++) R.dimbits[d] = (uint8_t)__builtin_ctz((unsigned)rt.dims[d]);
        set(s, r0, &R);
        return;
    }
    case IR_BROADCAST: {
        IrVal x = ir_opnd(f, op, 0);
        uint32_t p = s->parent[x];
        const Layout *X = get(s, x);
        if (p && X && shape_matches(&f->layouts[p], ir_vty(f, r0)) &&
            broadcast_renames(&f->layouts[p], X, ir_vty(f, x))) {
            Layout P = f->layouts[p];
            set(s, r0, &P);
        } else {
            set_default(s, r0);
        }
        s->loose[r0] = ir_op_free(f, op, s->loose);
        return;
    }
    case IR_DOT: {
        /* the accumulator layout of the instruction the DOT plan picks, the
         * same plan codegen (lower_dot.c) follows */
        DotPlan plan;
        layout_dot_plan(ir_vty(f, ir_opnd(f, op, 0)), ir_vty(f, ir_opnd(f, op, 1)), ir_vty(f, r0), s->warps,
                        f->mod ? f->mod->target : NULL, &plan);
        set(s, r0, &plan.acc);
        if (plan.instr != LL_DOT_WGMMA) return;
        /* an operand transposed on the way in (B given as [N, K]) keeps
         * its source's threads: codegen then renames registers instead of
         * moving the tile, and stores it K-major for wgmma (users that
         * wanted the old layout get a conversion in step 4) */
        for (uint32_t k = 0; k < 2; k++) {
            uint32_t d = ir_def(f, ir_opnd(f, op, k));
            if (d == UINT32_MAX || ir_op(f, d)->opc != IR_TRANS) continue;
            IrOp *tr = ir_op(f, d);
            const Layout *X = get(s, ir_opnd(f, tr, 0));
            if (!X) continue;
            Layout T = layout_transpose(X, tr->attr.shape);
            set(s, ir_res(tr, 0), &T);
        }
        return;
    }
    case IR_FOR: {
        IrBlock *B = ir_blk(f, op->region[0]);
        uint32_t n = op->nres;
        assign_loop(s, op, &B->args[1], &f->opnds[op->opnd + 3], n);
        for (uint32_t i = 0; i < n; i++) {
            if (!is_tile(f, ir_res(op, i))) continue;
            f->val_layout[ir_res(op, i)] = f->val_layout[B->args[1 + i]];
            s->parent[ir_res(op, i)] = s->parent[B->args[1 + i]];
        }
        return;
    }
    case IR_WHILE: {
        IrBlock *before = ir_blk(f, op->region[0]);
        assign_loop(s, op, before->args, &f->opnds[op->opnd], before->nargs);
        IrOp *c = ir_block_last(f, before);
        for (uint32_t i = 0; i < op->nres && i + 1 < c->nopnd; i++)
            copy_facts(s, ir_res(op, i), f->opnds[c->opnd + 1 + i]);
        return;
    }
    case IR_IF: {
        assign_block(s, op->region[0]);
        assign_block(s, op->region[1]);
        IrBlock *T = ir_blk(f, op->region[0]), *E = ir_blk(f, op->region[1]);
        IrOp *yt = ir_block_last(f, T), *ye = ir_block_last(f, E);
        for (uint32_t i = 0; i < op->nres; i++) {
            IrVal a = f->opnds[yt->opnd + i], b = f->opnds[ye->opnd + i], r = ir_res(op, i);
            if (!is_tile(f, r)) continue;
            IrVal pick = s->loose[a] && !s->loose[b] ? b : a;
            f->val_layout[r] = f->val_layout[pick];
            s->parent[r] = s->parent[pick];
        }
        return;
    }
    default:
        tl_fatal("layout", "%s has the CUSTOM layout rule in ops.def but no code here", ir_opinfo[op->opc].name);
    }
}

/* An op's results by its layout rule (ops.def). */
static void assign_op(LayoutState *s, IrOp *op)
{
    IrFunc *f = s->f;
    IrVal r0 = op->nres ? ir_res(op, 0) : IR_NONE;
    switch ((IrLayoutRule)ir_opinfo[op->opc].layout) {
    case IR_LAYOUT_NONE:
        for (uint32_t i = 0; i < op->nres; i++)
            if (is_tile(f, ir_res(op, i)))
                tl_fatal("layout", "%s has a tile result but the NONE layout rule in ops.def", ir_opinfo[op->opc].name);
        return;
    case IR_LAYOUT_ANCHOR:
        for (uint32_t i = 0; i < op->nres; i++) set_default(s, ir_res(op, i));
        if (r0) s->loose[r0] = ir_op_free(f, op, s->loose);
        return;
    case IR_LAYOUT_SLICE: {
        /* a reduction: no data moves, the result is the operand's layout without the axis */
        IrVal x = ir_opnd(f, op, 0);
        const Layout *L = get(s, x);
        if (!is_tile(f, r0) || !L) return;
        Layout S = layout_slice(L, (int)op->attr.i);
        set(s, r0, &S);
        s->parent[r0] = f->val_layout[x];
        return;
    }
    case IR_LAYOUT_LIKE0: {
        /* atomics: one lane per pointer; dot_wait: the accumulator's registers, once its
         * asynchronous dots are done (a loop-carried accumulator keeps the DOT's layout
         * through the loop and after it, with no conversion) */
        IrVal x = ir_opnd(f, op, 0);
        const Layout *P = get(s, x);
        if (!is_tile(f, r0)) return;
        if (P && shape_matches(P, ir_vty(f, r0))) {
            f->val_layout[r0] = f->val_layout[x];
            s->parent[r0] = s->parent[x];
        } else {
            set_default(s, r0);
        }
        return;
    }
    case IR_LAYOUT_CUSTOM:
        assign_custom(s, op);
        return;
    case IR_LAYOUT_ELEM:
        break;
    }
    if (!r0) return;
    /* elementwise: the first operand that is a tile and not free */
    IrVal pick = IR_NONE;
    for (uint32_t k = 0; k < op->nopnd && !pick; k++) {
        IrVal v = ir_opnd(f, op, k);
        if (is_tile(f, v) && !s->loose[v]) pick = v;
    }
    if (!pick)
        for (uint32_t k = 0; k < op->nopnd && !pick; k++)
            if (is_tile(f, ir_opnd(f, op, k))) pick = ir_opnd(f, op, k);
    IrType rt = ir_vty(f, r0);
    const Layout *L = pick ? get(s, pick) : NULL;
    if (L && shape_matches(L, rt)) {
        uint32_t li = intern(f, L);
        for (uint32_t i = 0; i < op->nres; i++)
            if (is_tile(f, ir_res(op, i))) f->val_layout[ir_res(op, i)] = li;
        s->parent[r0] = s->parent[pick];
        s->loose[r0] = ir_op_free(f, op, s->loose);
        return;
    }
    for (uint32_t i = 0; i < op->nres; i++) set_default(s, ir_res(op, i));
}

static void assign_block(LayoutState *s, IrBlk b)
{
    IrBlock *B = ir_blk(s->f, b);
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = ir_op(s->f, B->ops[i]);
        assign_op(s, op);
        for (uint32_t k = 0; k < op->nres; k++) {
            IrVal r = ir_res(op, k);
            if (!s->hint[r] || s->f->val_layout[r] == s->hint[r]) continue;
            s->f->val_layout[r] = s->hint[r];
            s->parent[r] = 0;
        }
    }
}

/* ---- 0. gathers of rows -------------------------------------------------------- */

/* Whether pointer tile p (its last dim longer than 1) broadcasts, along the
 * last dim, a value that is not free: per-row addresses computed from data
 * (a block table's page, a routing index), the columns contiguous. */
static bool row_gather(LayoutState *s, IrVal p, int depth)
{
    IrFunc *f = s->f;
    uint32_t d = ir_def(f, p);
    if (d == UINT32_MAX || depth > 8 || s->free_[p]) return false;
    IrOp *op = ir_op(f, d);
    if (op->opc == IR_ADDPTR || op->opc == IR_ADD)
        return row_gather(s, ir_opnd(f, op, 0), depth + 1) || row_gather(s, ir_opnd(f, op, 1), depth + 1);
    if (op->opc != IR_BROADCAST) return false;
    IrVal x = ir_opnd(f, op, 0);
    IrType xt = ir_vty(f, x), rt = ir_vty(f, p);
    return is_tile(f, x) && !s->free_[x] && xt.dims[xt.rank - 1] == 1 && rt.dims[rt.rank - 1] > 1;
}

/* Asks for layout L for v and, backwards, for what v is computed from in the
 * layouts that make each step a register renaming: through elementwise ops
 * and loads (their operands in L), EXPAND_DIMS (L without the new dim) and
 * BROADCAST (L without the broadcast dims' bits, replicated registers
 * dropped).  Free values need nothing (codegen rebuilds them where used);
 * the first request for a value wins, a later different one leaves a
 * conversion to step 4. */
static void ask(LayoutState *s, IrVal v, const Layout *L, int depth)
{
    IrFunc *f = s->f;
    if (!is_tile(f, v) || s->free_[v] || s->hint[v] || depth > 64) return;
    IrType t = ir_vty(f, v);
    if (!shape_matches(L, t)) return;
    uint32_t d = ir_def(f, v);
    if (d == UINT32_MAX) {
        /* a FOR's carried value: the argument, its init and what the body yields back */
        IrBlock *B = ir_blk(f, f->vals[v].def);
        uint32_t i = f->vals[v].idx;
        if (B->parent_op == UINT32_MAX || i == 0) return;
        IrOp *lp = ir_op(f, B->parent_op);
        if (lp->opc != IR_FOR || lp->region[0] != f->vals[v].def || i > lp->nres) return;
        s->hint[v] = intern(f, L);
        ask(s, ir_for_init(f, lp, i - 1), L, depth + 1);
        IrOp *y = ir_block_last(f, B);
        if (i - 1 < y->nopnd) ask(s, ir_opnd(f, y, i - 1), L, depth + 1);
        return;
    }
    IrOp *op = ir_op(f, d);
    if (op->opc == IR_IF) {
        /* an IF's result: what each branch yields */
        uint32_t i = v - op->res;
        s->hint[v] = intern(f, L);
        for (int r = 0; r < 2; r++) {
            IrBlock *B = ir_blk(f, op->region[r]);
            IrOp *y = ir_block_last(f, B);
            if (i < y->nopnd) ask(s, ir_opnd(f, y, i), L, depth + 1);
        }
        return;
    }
    bool elem = (ir_opinfo[op->opc].flags & IR_ELEM) || op->opc == IR_LOAD;
    if (!elem && op->opc != IR_BROADCAST && op->opc != IR_EXPAND_DIMS) return;
    s->hint[v] = intern(f, L);
    if (op->opc == IR_BROADCAST) {
        IrVal x = ir_opnd(f, op, 0);
        if (!is_tile(f, x)) return;
        Layout Q = broadcast_source(L, ir_vty(f, x));
        Q = layout_compact_regs(&Q);
        ask(s, x, &Q, depth + 1);
    } else if (op->opc == IR_EXPAND_DIMS) {
        Layout S = layout_slice(L, (int)op->attr.i);
        ask(s, ir_opnd(f, op, 0), &S, depth + 1);
    } else {
        for (uint32_t k = 0; k < op->nopnd; k++) {
            IrVal x = ir_opnd(f, op, k);
            if (is_tile(f, x) && ir_vty(f, x).rank == t.rank) ask(s, x, L, depth + 1);
        }
    }
}

/* Gathered rows (row_gather) take layout_gather, of the pointees, and so do
 * the per-row values their addresses and masks are made of (sliced), so no
 * row index goes through shared memory to reach the threads that use it. */
static void ask_gathers(LayoutState *s)
{
    IrFunc *f = s->f;
    for (uint32_t i = f->nops; i-- > 0;) {
        IrOp *op = ir_op(f, i);
        if (op->dead || (op->opc != IR_LOAD && op->opc != IR_STORE)) continue;
        IrVal p = ir_opnd(f, op, 0);
        IrType pt = ir_vty(f, p);
        if (!is_tile(f, p) || pt.rank < 2 || !row_gather(s, p, 0)) continue;
        Layout G = layout_gather(ir_ty_with_dt(pt, (DType)pt.dt, false), s->warps);
        if (op->opc == IR_LOAD) ask(s, ir_res(op, 0), &G, 0);
        else
            for (uint32_t k = 0; k < op->nopnd; k++) ask(s, ir_opnd(f, op, k), &G, 0);
    }
}

/* Whether f has a DOT anywhere (its tiles want the mma layouts' warp counts). */
static bool has_dot(IrFunc *f)
{
    for (uint32_t i = 0; i < f->nops; i++)
        if (ir_op(f, i)->opc == IR_DOT) return true;
    return false;
}

/* Without warps(n): one warp per 256 elements of the largest tile, 1 to 8.
 * A row (a tile with one dim > 1: a whole softmax or norm row kept in
 * registers) of more than 8192 elements in a kernel without DOT goes on to 16
 * warps, so no thread holds more than 32 of its elements: 64 f32 values per
 * thread left ptxas at 186-255 registers, with spills, and one CTA per SM. */
static int choose_warps(IrFunc *f)
{
    int64_t most = 0;
    int most_dims = 0;
    for (IrVal v = 1; v < f->nvals; v++) {
        if (!is_tile(f, v)) continue;
        IrType t = ir_vty(f, v);
        int64_t n = ir_ty_numel(t);
        if (n <= most) continue;
        most = n;
        most_dims = 0;
        for (int d = 0; d < t.rank; d++) most_dims += t.dims[d] > 1;
    }
    int w = 1;
    while (w < 8 && (int64_t)w * 256 < most) w *= 2;
    bool dot = has_dot(f);
    if (w == 8 && most_dims == 1 && most > 8 * 1024 && !dot) w = 16;
    /* The rule above is sized for 4-byte elements in memory: a memory-bound
     * kernel whose largest tiles travel as 16-bit (or 8-bit) elements gets
     * proportionally fewer warps, so each thread still moves as many bytes
     * (measured on the H200, 4096 rows: rmsnorm bf16 at 8k columns 2.7 TB/s
     * with 8 warps, 3.5 with 4; softmax bf16 likewise). */
    int ebytes = 0;
    for (uint32_t i = 0; i < f->nops && !dot; i++) {
        IrOp *op = ir_op(f, i);
        IrVal v;
        if (op->dead) continue;
        if (op->opc == IR_LOAD || op->opc == IR_BLOCK_LOAD) v = ir_res(op, 0);
        else if (op->opc == IR_STORE) v = ir_opnd(f, op, 1);
        else if (op->opc == IR_BLOCK_STORE) v = ir_opnd(f, op, op->nopnd - 1);
        else continue;
        if (!is_tile(f, v)) continue;
        IrType t = ir_vty(f, v);
        if (t.isptr || ir_ty_numel(t) != most) continue;
        int b = dt_bytes((DType)t.dt);
        if (b > ebytes) ebytes = b;
    }
    if (ebytes && ebytes < 4) {
        w = w * ebytes / 4;
        if (w < 1) w = 1;
    }
    return w;
}

/* ---- 4. rewrite: explicit conversions ------------------------------------------ */

/* The layout op `opid` needs operand k in (a layouts[] index), or 0 for no
 * requirement: elementwise ops and loads want their result's layout, stores
 * and atomics their pointers', terminators the layout of what they feed. */
static uint32_t needed_layout(LayoutState *s, uint32_t opid, uint32_t k)
{
    IrFunc *f = s->f;
    IrOp *op = ir_op(f, opid);
    IrOpcode opc = (IrOpcode)op->opc;
    if ((ir_opinfo[opc].flags & IR_ELEM) || opc == IR_LOAD) return f->val_layout[op->res];
    if (opc == IR_STORE) {
        /* the pointers' layout, unless they are free: then the value's (the
         * pointers are recomputed for it) */
        IrVal p = ir_opnd(f, op, 0), v = ir_opnd(f, op, 1);
        IrVal anchor = s->free_[p] && is_tile(f, v) && !s->free_[v] ? v : p;
        return ir_opnd(f, op, k) == anchor ? 0 : f->val_layout[anchor];
    }
    if (opc == IR_ATOMIC_ADD || opc == IR_ATOMIC_MAX || opc == IR_ATOMIC_MIN || opc == IR_ATOMIC_CAS)
        return k == 0 ? 0 : f->val_layout[ir_opnd(f, op, 0)];
    if (opc == IR_DOT) return k == 2 ? f->val_layout[op->res] : 0;
    if (opc != IR_YIELD && opc != IR_CONDITION) return 0;
    IrBlock *B = ir_blk(f, op->parent);
    if (B->parent_op == UINT32_MAX) return 0; /* the grid's yield */
    IrOp *parent = ir_op(f, B->parent_op);
    if (opc == IR_CONDITION) return k == 0 ? 0 : f->val_layout[ir_res(parent, k - 1)];
    if (parent->opc == IR_FOR || parent->opc == IR_IF) return f->val_layout[ir_res(parent, k)];
    /* WHILE's "after" region yields the next values of the "before" arguments */
    return f->val_layout[ir_blk(f, parent->region[0])->args[k]];
}

typedef struct ConvEntry {
    IrVal from, to;
    uint32_t layout;
} ConvEntry;

/* Conversions made so far that dominate the current op (this block and the
 * blocks around it); a region's entries are dropped when it is left. */
typedef struct ConvCache {
    ConvEntry *e;
    uint32_t n, cap;
} ConvCache;

static void insert_conversions(LayoutState *s, IrBlk b, ConvCache *cache)
{
    IrFunc *f = s->f;
    uint32_t mark = cache->n;
    for (uint32_t i = 0; i < ir_blk(f, b)->nops; i++) {
        uint32_t opid = ir_blk(f, b)->ops[i];
        for (uint32_t r = 0; r < ir_op(f, opid)->nregion; r++) insert_conversions(s, ir_op(f, opid)->region[r], cache);
        for (uint32_t k = 0; k < ir_op(f, opid)->nopnd; k++) {
            IrVal v = ir_opnd(f, ir_op(f, opid), k);
            uint32_t want = needed_layout(s, opid, k);
            if (!want || !is_tile(f, v) || f->val_layout[v] == want || s->free_[v]) continue;
            IrVal to = IR_NONE;
            for (uint32_t c = 0; c < cache->n && !to; c++)
                if (cache->e[c].from == v && cache->e[c].layout == want) to = cache->e[c].to;
            if (!to) {
                IrBuilder bld;
                ir_builder_at_end(&bld, f, b);
                bld.pos = i; /* before the op */
                bld.loc = ir_op(f, opid)->loc;
                uint32_t d = ir_def(f, v);
                IrVal x = d != UINT32_MAX && ir_op(f, d)->opc == IR_BROADCAST ? ir_opnd(f, ir_op(f, d), 0) : IR_NONE;
                if (x && is_tile(f, x) && ir_ty_numel(ir_vty(f, x)) < ir_ty_numel(ir_vty(f, v))) {
                    /* a broadcast (a row's scale, say) is wanted in another layout:
                     * move its small source into the layout that broadcasts to
                     * `want` by renaming registers, and broadcast again there,
                     * instead of moving the whole broadcast tile */
                    Layout Q = broadcast_source(&f->layouts[want], ir_vty(f, x));
                    uint32_t q = intern(f, &Q);
                    IrVal xs = x;
                    if (f->val_layout[x] != q) {
                        xs = ir_build1(&bld, IR_CONVERT_LAYOUT, &x, 1, ir_vty(f, x), NULL);
                        f->val_layout[xs] = q;
                    }
                    to = ir_build1(&bld, IR_BROADCAST, &xs, 1, ir_vty(f, v), NULL);
                } else {
                    to = ir_build1(&bld, IR_CONVERT_LAYOUT, &v, 1, ir_vty(f, v), NULL);
                }
                i = bld.pos; /* the op moved on past what was inserted */
                f->val_layout[to] = want;
                ConvEntry e = {v, to, want};
                VEC_PUSH(cache->e, cache->n, cache->cap, e);
            }
            ir_set_opnd(f, opid, k, to);
        }
    }
    cache->n = mark;
}

void pass_layout(IrFunc *f, PassCtx *cx)
{
    if (!f->warps) f->warps = choose_warps(f);
    LayoutState s = {f, f->warps, NULL, NULL, NULL, NULL};
    ir_func_reset_layouts(f);
    f->nlayouts = 0;
    s.parent = tl_xcalloc(f->nvals, sizeof(uint32_t));
    s.loose = tl_xcalloc(f->nvals, 1);
    s.free_ = tl_xcalloc(f->nvals, 1);
    s.hint = tl_xcalloc(f->nvals, sizeof(uint32_t));
    ir_free_values(f, s.free_);
    ask_gathers(&s);
    assign_block(&s, f->body);
    ConvCache cache = {0};
    insert_conversions(&s, f->body, &cache);
    free(cache.e);
    /* broadcasts whose every user now reads a re-broadcast source (above) are dead:
     * drop them, or codegen would still move them between layouts */
    uint32_t *uses = ir_use_counts(f);
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = ir_op(f, i);
        if (!op->dead && op->opc == IR_BROADCAST && uses[op->res] == 0) ir_op_erase(f, i);
    }
    free(uses);
    free(s.parent);
    free(s.loose);
    free(s.free_);
    free(s.hint);
    cx->changed = true;
}
