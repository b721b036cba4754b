/* schedule.c: register-pressure-aware list scheduling of every block.
 *
 * ptxas allocates registers for the order it is given; when the tiles a block
 * keeps live exceed what a thread has, it spills.  This pass reorders the ops
 * of a block whose predicted peak is over the budget, so that values are used
 * up before others are made (load a tile, reduce it, then load the next), and
 * predicts the spills it cannot avoid.  A block under its budget keeps its
 * order exactly: the pass is stable.
 *
 * The pressure model is passes/pressure.h, the one the occupancy hint
 * (codegen/occupancy.c) uses: registers per thread from each tile's layout
 * (hence after `layout`: passes.def makes the runner refuse it on IR without
 * layouts), 16-bit elements half, pointers double, free values (ir_free_values,
 * recomputed by codegen where used) and values used up before the next
 * reduction weighing 0.
 *
 * Budget: a thread has cap = min(255, registers per SM / threads) registers
 * (one CTA per SM: the kernel's occupancy before any hint; the occupancy hint
 * is computed after this pass, from the peak it leaves).  The tiles may take
 * pass_pressure_tile_budget(cap): the largest peak whose predicted ptxas
 * registers (pass_pressure_regs: peak plus addressing and temporaries) fit in
 * cap.  A block in a nested region gets that budget less what its enclosing
 * block keeps live across the op holding it.  cap_of() is the hook for warp
 * specialization: a block that runs in one warpgroup role gets that role's
 * register count (setmaxnreg) instead of the kernel's.
 * TILEC_SCHED_BUDGET=N in the environment sets the tile budget of every block
 * (0: reorder every block the heuristic can improve), for tests and tuning.
 *
 * Algorithm, per block B, outermost first:
 *   1. The profile of B in its order (pressure model): what it keeps live
 *      across each op.  Each region of each op of B is scheduled first (step
 *      1-5 on it), with the budget less what B keeps live across that op.
 *   2. If B's peak is within its budget, B keeps its order; done.
 *   3. The dependence DAG of B's ops (the terminator stays last; an op with
 *      regions is one node, its effects and uses those of everything inside):
 *      - SSA: an op follows the op of B defining each value it (or an op in
 *        its regions) uses;
 *      - memory: an op that writes memory (store, block_store, smem_write,
 *        async_load, atomics) keeps its order with every op that reads or
 *        writes memory (load, block_load); two reads may swap;
 *      - fences: barrier, async_wait, dot_wait, tma_ready, dot (asynchronous
 *        wgmma reading shared memory), smem_read (a dot reads its stage in
 *        place only when nothing comes between them: codegen's
 *        cg_buf_operand), print, assert, smem_alloc and any other op with
 *        effects: no op crosses them, in either direction.
 *   4. List scheduling.  Ready ops are those whose predecessors are scheduled;
 *      an op whose only unscheduled predecessors are free values (weight 0)
 *      counts as ready, and those are placed right before it (codegen
 *      recomputes them there anyway: the free values' rematerialization).
 *      Values count as held (pass_pressure_held: a streamed value takes its
 *      registers once ops come between it and its uses).
 *      For each ready op c: at(c) = live - (its operands used last by c,
 *      unless c holds regions) + its results + the peak inside its regions,
 *      and delta(c) = what live becomes after c, less live.  Take the first
 *      ready op in the original order when at(c) is within the budget;
 *      otherwise the ready op with the smallest delta (frees the most or
 *      grows the least), then the smallest at(c), then the original order.
 *   5. The new order stands only if its peak (the full model, streamed values
 *      recomputed for it) is below the original's; otherwise B is restored.
 * A reordered body records its original peak (f->peak_unscheduled): the
 * occupancy hint keeps sizing from it, so reordering lowers spills at the
 * occupancy the kernel had and never trades them for CTAs (ptxas may hoist
 * the loads back: codegen/occupancy.c has the measurement).
 * Peak above the budget after this: ptxas is predicted to spill (the
 * `schedule` remark says so, next to what ptxas reported when it ran:
 * codegen/compile.c).
 */
#include <stdlib.h>
#include <string.h>

#include "pass.h"
#include "pressure.h"

enum { FX_READ = 1, FX_WRITE = 2, FX_FENCE = 4 };

/* What op (and everything in its regions) does besides computing values. */
static unsigned effects(IrFunc *f, const IrOp *op)
{
    unsigned fx = 0;
    switch ((IrOpcode)op->opc) {
    case IR_LOAD:
    case IR_BLOCK_LOAD: fx = FX_READ; break;
    case IR_STORE:
    case IR_BLOCK_STORE:
    case IR_SMEM_WRITE:
    case IR_ASYNC_LOAD: fx = FX_WRITE; break;
    case IR_ATOMIC_ADD:
    case IR_ATOMIC_MAX:
    case IR_ATOMIC_MIN:
    case IR_ATOMIC_CAS: fx = FX_READ | FX_WRITE; break;
    case IR_DOT:
    case IR_SMEM_READ:
    case IR_TMA_READY: fx = FX_FENCE; break;
    default:
        if (!(ir_opinfo[op->opc].flags & (IR_PURE | IR_CF | IR_TERM))) fx = FX_FENCE;
        break;
    }
    for (uint32_t r = 0; r < op->nregion; r++) {
        IrBlock *B = ir_blk(f, op->region[r]);
        for (uint32_t i = 0; i < B->nops; i++) fx |= effects(f, ir_op(f, B->ops[i]));
    }
    return fx;
}

/* Whether two ops with effects a (first) and b must keep their order. */
static bool ordered(unsigned a, unsigned b)
{
    if (!a || !b) return false;
    if ((a | b) & FX_FENCE) return true;
    return ((a | b) & FX_WRITE) != 0;
}

typedef struct Sched {
    IrFunc *f;
    PassCtx *cx;
    PassPressure pr;
    int cap;                /* registers per thread of the kernel (cap_of) */
    int ws_cap;             /* a warp-specialized kernel's consumers' (0: not specialized) */
    int threads;            /* the launch's threads (the producer warpgroup included) */
    double budget;          /* the tiles' share of it: pass_pressure_tile_budget(cap) */
    bool forced;            /* budget from TILEC_SCHED_BUDGET */
    uint32_t *pos;          /* per op id: its index in the block being scheduled (scratch) */
    uint32_t *stamp;        /* per value: the last op index that counted it (scratch) */
    IrBlk cur;              /* the block being list-scheduled */
    uint32_t nreordered;    /* blocks reordered */
} Sched;

/* The registers per thread of the warps that run block b: the kernel's, or in a
 * warp-specialized kernel the consumers' (setmaxnreg.inc: ir_ws_registers), which run every
 * block that holds tiles (the producer's branch has none). */
static int cap_of(const Sched *S, IrBlk b)
{
    (void)b;
    return S->ws_cap ? S->ws_cap : S->cap;
}

/* One block's DAG and scheduling state; node i is the block's op i. */
typedef struct Dag {
    uint32_t n;             /* nodes (the block's ops less its terminator) */
    uint32_t **succ;        /* succ[i][0 .. nsucc[i]) */
    uint32_t *nsucc, *succcap;
    uint32_t **pred;        /* pred[i][0 .. npredall[i]) */
    uint32_t *npredall, *predcap;
    uint32_t *npred;        /* unscheduled predecessors */
    IrVal **uses;           /* per node: the distinct values of B (arguments, results) it uses */
    uint32_t *nuses;
    uint8_t *free_;         /* node: all its results free (weight 0), no regions */
    uint8_t *done;
    double *inner;          /* peak inside its regions */
} Dag;

static void add_edge(Dag *g, uint32_t a, uint32_t b)
{
    if (a == b) return;
    if (g->nsucc[a] == g->succcap[a]) {
        g->succcap[a] = g->succcap[a] ? 2 * g->succcap[a] : 4;
        g->succ[a] = tl_xrealloc(g->succ[a], g->succcap[a] * sizeof(uint32_t));
    }
    g->succ[a][g->nsucc[a]++] = b;
    if (g->npredall[b] == g->predcap[b]) {
        g->predcap[b] = g->predcap[b] ? 2 * g->predcap[b] : 4;
        g->pred[b] = tl_xrealloc(g->pred[b], g->predcap[b] * sizeof(uint32_t));
    }
    g->pred[b][g->npredall[b]++] = a;
    g->npred[b]++;
}

/* Collects, for node i, the values of block b that op (or an op in its regions) uses. */
static void collect_uses(Sched *S, IrBlk b, const IrOp *op, uint32_t i, IrVal **out, uint32_t *n, uint32_t *cap)
{
    IrFunc *f = S->f;
    for (uint32_t k = 0; k < op->nopnd; k++) {
        IrVal v = ir_opnd(f, op, k);
        if (!v || v >= f->nvals) continue;
        const IrValue *x = &f->vals[v];
        IrBlk db = x->is_arg ? (IrBlk)x->def : ir_op(f, x->def)->parent;
        if (db != b || S->stamp[v] == i + 1) continue;
        S->stamp[v] = i + 1;
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 4;
            *out = tl_xrealloc(*out, *cap * sizeof(IrVal));
        }
        (*out)[(*n)++] = v;
    }
    for (uint32_t r = 0; r < op->nregion; r++) {
        IrBlock *B = ir_blk(f, op->region[r]);
        for (uint32_t j = 0; j < B->nops; j++) collect_uses(S, b, ir_op(f, B->ops[j]), i, out, n, cap);
    }
}

static void dag_free(Dag *g)
{
    for (uint32_t i = 0; i < g->n; i++) {
        free(g->succ[i]);
        free(g->pred[i]);
    }
    for (uint32_t i = 0; i <= g->n; i++) free(g->uses[i]);
    free(g->succ);
    free(g->pred);
    free(g->npredall);
    free(g->predcap);
    free(g->nsucc);
    free(g->succcap);
    free(g->npred);
    free(g->uses);
    free(g->nuses);
    free(g->free_);
    free(g->done);
    free(g->inner);
}

/* Step 3. */
static void build_dag(Sched *S, IrBlk b, Dag *g)
{
    IrFunc *f = S->f;
    IrBlock *B = ir_blk(f, b);
    uint32_t n = g->n = B->nops - 1;
    g->succ = tl_xcalloc(n, sizeof *g->succ);
    g->nsucc = tl_xcalloc(n, sizeof(uint32_t));
    g->succcap = tl_xcalloc(n, sizeof(uint32_t));
    g->npred = tl_xcalloc(n, sizeof(uint32_t));
    g->pred = tl_xcalloc(n, sizeof *g->pred);
    g->npredall = tl_xcalloc(n, sizeof(uint32_t));
    g->predcap = tl_xcalloc(n, sizeof(uint32_t));
    g->uses = tl_xcalloc(n + 1, sizeof *g->uses);
    g->nuses = tl_xcalloc(n + 1, sizeof(uint32_t));
    g->free_ = tl_xcalloc(n, 1);
    g->done = tl_xcalloc(n, 1);
    g->inner = tl_xcalloc(n, sizeof(double));
    unsigned *fx = tl_xcalloc(n, sizeof(unsigned));
    for (uint32_t i = 0; i < B->nops; i++) S->pos[B->ops[i]] = i;
    for (uint32_t i = 0; i <= n; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        uint32_t cap = 0;
        collect_uses(S, b, op, i, &g->uses[i], &g->nuses[i], &cap);
        if (i == n) break;
        fx[i] = effects(f, op);
        bool fr = op->nregion == 0 && op->nres > 0 && fx[i] == 0;
        for (uint32_t k = 0; k < op->nres && fr; k++) fr = S->pr.free_[ir_res(op, k)] != 0;
        g->free_[i] = fr;
        for (uint32_t r = 0; r < op->nregion; r++) {
            double q = pass_pressure_peak(&S->pr, op->region[r]);
            if (q > g->inner[i]) g->inner[i] = q;
        }
        /* SSA: after the op of B defining each value used */
        for (uint32_t u = 0; u < g->nuses[i]; u++) {
            IrVal v = g->uses[i][u];
            if (!f->vals[v].is_arg) add_edge(g, S->pos[f->vals[v].def], i);
        }
    }
    /* memory and fences */
    uint32_t last_fence = UINT32_MAX;
    for (uint32_t j = 0; j < n; j++) {
        if (fx[j] & FX_FENCE) {
            /* every op since the previous fence (and that fence) before it */
            uint32_t from = last_fence == UINT32_MAX ? 0 : last_fence;
            for (uint32_t i = from; i < j; i++) add_edge(g, i, j);
            last_fence = j;
            continue;
        }
        if (last_fence != UINT32_MAX) add_edge(g, last_fence, j);
        if (!fx[j]) continue;
        for (uint32_t i = last_fence == UINT32_MAX ? 0 : last_fence + 1; i < j; i++)
            if (ordered(fx[i], fx[j])) add_edge(g, i, j);
    }
    free(fx);
}

/* Step 4: the state of list scheduling one block. */
typedef struct List {
    Sched *S;
    Dag *g;
    uint32_t *rem;          /* per value of B: ops of B (the terminator too) not yet placed that use it */
    double live;            /* weight of the values of B defined (or arguments) with uses left */
    uint32_t *order;        /* the new order: node indices */
    uint32_t norder;
    uint32_t *memo;         /* per node: 2 * step + 1 (placeable) or 2 * step + 2 (not), for this step */
    uint32_t step;
} List;

/* Whether node i can be placed now, with its unscheduled predecessors (free
 * values, recursively placeable) placed just before it. */
static bool placeable(List *L, uint32_t i)
{
    Dag *g = L->g;
    if (g->done[i]) return true;
    if (L->memo[i] == 2 * L->step + 1) return true;
    if (L->memo[i] == 2 * L->step + 2) return false;
    bool ok = true;
    if (g->npred[i])
        for (uint32_t k = 0; k < g->npredall[i] && ok; k++) {
            uint32_t p = g->pred[i][k];
            if (!g->done[p]) ok = g->free_[p] && placeable(L, p);
        }
    L->memo[i] = 2 * L->step + (ok ? 1 : 2);
    return ok;
}

static void place(List *L, uint32_t i)
{
    Dag *g = L->g;
    IrFunc *f = L->S->f;
    if (g->done[i]) return;
    /* its free predecessors first, in the original order (their weight is 0) */
    for (uint32_t k = 0; k < g->npredall[i]; k++) place(L, g->pred[i][k]);
    g->done[i] = 1;
    L->order[L->norder++] = i;
    for (uint32_t k = 0; k < g->nsucc[i]; k++) g->npred[g->succ[i][k]]--;
    for (uint32_t u = 0; u < g->nuses[i]; u++) {
        IrVal v = g->uses[i][u];
        if (--L->rem[v] == 0) L->live -= pass_pressure_held(&L->S->pr, v);
    }
    IrOp *op = ir_op(f, ir_blk(f, L->S->cur)->ops[i]);
    for (uint32_t k = 0; k < op->nres; k++)
        if (L->rem[ir_res(op, k)]) L->live += pass_pressure_held(&L->S->pr, ir_res(op, k));
}

/* For node i placed now: the pressure at it, and the change of `live` after it. */
static void cost(List *L, uint32_t i, double *at, double *delta)
{
    Dag *g = L->g;
    IrFunc *f = L->S->f;
    IrOp *op = ir_op(f, ir_blk(f, L->S->cur)->ops[i]);
    double dying = 0, res = 0, kept = 0;
    for (uint32_t u = 0; u < g->nuses[i]; u++)
        if (L->rem[g->uses[i][u]] == 1) dying += pass_pressure_held(&L->S->pr, g->uses[i][u]);
    for (uint32_t k = 0; k < op->nres; k++) {
        double w = pass_pressure_held(&L->S->pr, ir_res(op, k));
        res += w;
        if (L->rem[ir_res(op, k)]) kept += w;
    }
    *at = L->live - (op->nregion ? 0 : dying) + res + g->inner[i];
    *delta = kept - dying;
}

/* Steps 3-4: a new order of block b's ops (node indices into order[0 .. nops-1)). */
static void list_schedule(Sched *S, IrBlk b, double budget, uint32_t *order)
{
    IrFunc *f = S->f;
    IrBlock *B = ir_blk(f, b);
    Dag g = {0};
    build_dag(S, b, &g);
    List L = {S, &g, tl_xcalloc(f->nvals, sizeof(uint32_t)), 0, order, 0, tl_xcalloc(g.n, sizeof(uint32_t)), 0};
    for (uint32_t i = 0; i <= g.n; i++)
        for (uint32_t u = 0; u < g.nuses[i]; u++) L.rem[g.uses[i][u]]++;
    for (uint32_t a = 0; a < B->nargs; a++)
        if (L.rem[B->args[a]]) L.live += pass_pressure_held(&S->pr, B->args[a]);
    while (L.norder < g.n) {
        L.step++;
        uint32_t first = UINT32_MAX, best = UINT32_MAX, any = UINT32_MAX;
        double first_at = 0, best_delta = 0, best_at = 0;
        for (uint32_t i = 0; i < g.n; i++) {
            if (g.done[i] || !placeable(&L, i)) continue;
            if (any == UINT32_MAX) any = i;
            if (g.free_[i]) continue;   /* placed with its first user */
            double at, delta;
            cost(&L, i, &at, &delta);
            if (first == UINT32_MAX) {
                first = i;
                first_at = at;
            }
            if (best == UINT32_MAX || delta < best_delta || (delta == best_delta && at < best_at)) {
                best = i;
                best_delta = delta;
                best_at = at;
            }
        }
        /* only free values left that nothing in B uses but the terminator, or none at all */
        uint32_t pick = first == UINT32_MAX ? any : first_at <= budget ? first : best;
        TL_ASSERT(pick != UINT32_MAX, "pass:schedule");
        place(&L, pick);
    }
    free(L.rem);
    free(L.memo);
    dag_free(&g);
}

/* What the remark calls block b. */
static const char *block_name(IrFunc *f, IrBlk b)
{
    IrBlock *B = ir_blk(f, b);
    if (B->parent_op == UINT32_MAX) return "kernel body";
    IrOp *op = ir_op(f, B->parent_op);
    switch ((IrOpcode)op->opc) {
    case IR_FOR: return "loop body";
    case IR_WHILE: return op->region[0] == b ? "while condition" : "while body";
    case IR_IF: return op->region[0] == b ? "if branch" : "else branch";
    default: return "region";
    }
}

static void remark(Sched *S, IrBlk b, double budget, double peak0, double peak1, bool reordered)
{
    IrFunc *f = S->f;
    if (!diag_remark_on(S->cx->diag, DIAG_REMARK_schedule)) return;
    IrBlock *B = ir_blk(f, b);
    bool body = B->parent_op == UINT32_MAX;
    if (!body && peak0 == 0) return;    /* no tiles in registers: nothing to say */
    SrcLoc loc = body ? f->loc : ir_op(f, B->parent_op)->loc;
    StrBuf m = {0};
    sb_printf(&m, "%s: tiles peak at %.0f registers per thread", block_name(f, b), peak1);
    if (S->forced) sb_printf(&m, ", budget %.0f (TILEC_SCHED_BUDGET)", budget);
    else sb_printf(&m, ", budget %.0f of %d registers at %d threads%s", budget < 0 ? 0 : budget, cap_of(S, b),
                   S->threads, S->ws_cap ? " (the consumers', after setmaxnreg)" : "");
    if (reordered) sb_printf(&m, "; reordered (the original order peaked at %.0f)", peak0);
    else if (peak0 > budget) sb_puts(&m, "; order kept (no order found with a lower peak)");
    else sb_puts(&m, "; order kept");
    if (body) {
        int need = pass_pressure_regs(f, peak1);
        sb_printf(&m, "; predicted about %d registers with addressing and temporaries%s", need,
                  need > cap_of(S, b) ? ": spills predicted" : "");
    }
    diag_remark(S->cx->diag, DIAG_REMARK_schedule, loc, "%s", m.s);
    sb_free(&m);
}

/* Steps 1-5 on block b; true when b or a block inside it was reordered. */
static bool schedule_block(Sched *S, IrBlk b, double budget)
{
    IrFunc *f = S->f;
    IrBlock *B = ir_blk(f, b);
    bool changed = false;
    /* 1. the regions first, each with what b keeps live across its op taken from the budget */
    double *across = tl_xcalloc(B->nops + 1, sizeof(double));
    pass_pressure_profile(&S->pr, b, across);
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        double room = S->forced ? budget : budget - across[i];
        for (uint32_t r = 0; r < op->nregion; r++) changed |= schedule_block(S, op->region[r], room);
    }
    free(across);
    double peak0 = pass_pressure_peak(&S->pr, b), peak1 = peak0;
    /* 2. within the budget (or nothing to reorder): the order stands */
    bool term = B->nops && (ir_opinfo[ir_block_last(f, B)->opc].flags & IR_TERM);
    if (peak0 <= budget || B->nops < 3 || !term) {
        remark(S, b, budget, peak0, peak1, false);
        return changed;
    }
    /* 3-4 */
    uint32_t n = B->nops - 1;
    uint32_t *saved = tl_xmalloc(B->nops * sizeof(uint32_t)), *order = tl_xcalloc(n, sizeof(uint32_t));
    memcpy(saved, B->ops, B->nops * sizeof(uint32_t));
    S->cur = b;
    list_schedule(S, b, budget, order);
    bool moved = false;
    for (uint32_t i = 0; i < n; i++) {
        B->ops[i] = saved[order[i]];
        moved |= order[i] != i;
    }
    /* 5. only a lower peak stands */
    if (moved) {
        pass_pressure_update(&S->pr);
        peak1 = pass_pressure_peak(&S->pr, b);
        if (peak1 < peak0) {
            S->nreordered++;
            changed = true;
        } else {
            memcpy(B->ops, saved, B->nops * sizeof(uint32_t));
            pass_pressure_update(&S->pr);
            peak1 = peak0;
            moved = false;
        }
    }
    free(saved);
    free(order);
    remark(S, b, budget, peak0, peak1, moved);
    return changed;
}

void pass_schedule(IrFunc *f, PassCtx *cx)
{
    TL_ASSERT(f->val_layout, "pass:schedule");   /* passes.def: it needs layouts */
    Sched S = {0};
    S.f = f;
    S.cx = cx;
    int warps = f->warps ? f->warps : 4;
    pass_pressure_init(&S.pr, f, 32 * warps);
    S.cap = pass_pressure_cap(f, f->mod->target);
    bool ws = pass_pressure_specialized(f);
    S.threads = 32 * (warps + (ws ? 4 : 0));
    if (ws) S.ws_cap = pass_pressure_kernel_cap(f, f->mod->target);
    S.budget = pass_pressure_tile_budget(f, cap_of(&S, f->body));
    const char *env = getenv("TILEC_SCHED_BUDGET");
    if (env && *env) {
        S.budget = atof(env);
        S.forced = true;
    }
    S.pos = tl_xcalloc(f->nops ? f->nops : 1, sizeof(uint32_t));
    S.stamp = tl_xcalloc(f->nvals ? f->nvals : 1, sizeof(uint32_t));
    double before = pass_pressure_peak(&S.pr, f->body);
    if (schedule_block(&S, f->body, S.budget)) {
        cx->changed = true;
        if (before > f->peak_unscheduled) f->peak_unscheduled = before;
    }
    free(S.pos);
    free(S.stamp);
    pass_pressure_fini(&S.pr);
}
