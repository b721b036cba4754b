/* occupancy.c: the CTAs per SM a kernel asks ptxas to make room for.
 *
 * A memory-bound kernel that keeps whole rows in registers (softmax, norms)
 * overlaps one CTA's loads with another's arithmetic and stores only when
 * several CTAs share an SM; left alone, ptxas spends registers on
 * instruction-level parallelism (128-234 per thread for rows of 32 f32
 * elements per thread: one or two CTAs per SM).  For kernels without DOT:
 *   1. Estimate the registers the kernel's tiles need per thread: walk the
 *      structured IR; in each block a value is live from its definition to
 *      its last use there (a use inside a nested region counts at the op
 *      holding the region); the pressure at an op is its results plus what
 *      its block has live across it (operands used last there die into the
 *      results), and for an op with regions, plus the peak inside them.  A tile weighs its
 *      registers per thread in its layout (16-bit elements half, 64-bit and
 *      pointers double; a broadcast weighs what its source does; a tile of
 *      at most one element per thread is a scalar).  Values codegen recomputes where used (free
 *      values, ir_free_values: arange, splat, elementwise and shape ops of them) weigh 0,
 *      and so do values used up before the next reduction (mark_streamed).
 *   2. R = max(peak + 24 + 4 * (tensor and pointer parameters), 2 * peak)
 *      (addresses, loop and reduction temporaries, and the widening and
 *      packing of 16-bit rows, which grow with the row), rounded up to 8, at
 *      least 40.
 *   3. CTAs = min(registers per SM / (threads * R), threads per SM /
 *      threads) (the target's, ir/target.def: 65536 and 2048 on sm_90a); with
 *      2 or more it is emitted as .minnctapersm, which caps ptxas at
 *      registers per SM / (CTAs * threads) registers.
 * Measured on the H200 (4096 rows, 2026-11-29): softmax f32 8k at 64
 * registers (4 CTAs) 3.79 TB/s against 2.36 at ptxas's 162; rmsnorm f32 8k at
 * 128 (2 CTAs) 3.79, but capped at 64 it spilled in the hot path (x and w
 * both live: 2.39) -- hence the liveness estimate rather than the largest
 * tile.  rmsnorm bf16 with its rows live as bf16 (passes/remat.c), 64 elements
 * per thread: peak 64, 128 registers, 3.5-3.7 TB/s at 8k-16k columns (2.5 when
 * ptxas took 255 registers and one CTA per SM).  Kernels with DOT keep ptxas's
 * choice.
 * TILEC_MIN_CTAS=N in the environment overrides the result (0: no hint), for
 * tuning experiments; TILEC_OCC_DEBUG=1 prints the estimated peak.
 */
#include "lower_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Occ {
    IrFunc *f;
    int threads;
    uint8_t *free_;     /* per value: free (ir_free_values), recomputed where used */
    uint8_t *streamed;  /* per value: used up before the next reduction (mark_streamed) */
    uint32_t *last;     /* per value: index of its last use in its own block */
} Occ;

/* Registers per thread of tile v (0 for scalars and free values). */
static double weight(Occ *o, IrVal v)
{
    IrFunc *f = o->f;
    IrType t = ir_vty(f, v);
    if (t.kind != TY_TILE || t.rank == 0 || o->free_[v] || o->streamed[v]) return 0;
    /* a broadcast's registers are its source's (codegen maps them; nothing is copied) */
    uint32_t d = ir_def(f, v);
    if (d != UINT32_MAX && ir_op(f, d)->opc == IR_BROADCAST) return weight(o, ir_opnd(f, ir_op(f, d), 0));
    double regs;
    uint32_t li = f->val_layout && v < f->nval_layout ? f->val_layout[v] : 0;
    if (li) {
        const Layout *L = &f->layouts[li];
        regs = (double)(layout_nregs(L) >> __builtin_popcount(layout_replicated(L, LL_REG)));
    } else {
        regs = (double)((ir_ty_numel(t) + o->threads - 1) / o->threads);
    }
    int bytes = t.isptr ? 8 : dt_bytes((DType)t.dt);
    /* at most one element per thread (a reduction's result): a scalar, weighs 0 like them */
    if (ir_ty_numel(t) <= o->threads) return 0;
    return regs * (bytes < 2 ? 0.25 : bytes / 4.0);
}

/* The block defining v. */
static IrBlk def_block(IrFunc *f, IrVal v)
{
    const IrValue *x = &f->vals[v];
    return x->is_arg ? (IrBlk)x->def : ir_op(f, x->def)->parent;
}

/* Records uses at index `at` of block b (op is b's op `at`, or nested in it)
 * of the values b defines: every operand of op and of the ops in its regions. */
static void note_uses(Occ *o, IrBlk b, IrOp *op, uint32_t at)
{
    IrFunc *f = o->f;
    for (uint32_t k = 0; k < op->nopnd; k++) {
        IrVal v = ir_opnd(f, op, k);
        if (v && v < f->nvals && def_block(f, v) == b && o->last[v] < at) o->last[v] = at;
    }
    for (uint32_t r = 0; r < op->nregion; r++) {
        IrBlock *B = ir_blk(f, op->region[r]);
        for (uint32_t i = 0; i < B->nops; i++) note_uses(o, b, ir_op(f, B->ops[i]), at);
    }
}

/* Peak registers per thread inside block b. */
static double peak(Occ *o, IrBlk b)
{
    IrFunc *f = o->f;
    IrBlock *B = ir_blk(f, b);
    /* last uses, in this block's indices, of the values this block defines */
    for (uint32_t i = 0; i < B->nargs; i++) o->last[B->args[i]] = 0;
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        for (uint32_t k = 0; k < op->nres; k++) o->last[ir_res(op, k)] = i;
    }
    /* uses overwrite: a value's last use is the largest index using it */
    for (uint32_t i = 0; i < B->nops; i++) note_uses(o, b, ir_op(f, B->ops[i]), i);
    double best = 0;
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        /* live across op i: its results, and earlier values used later (or
         * inside its regions); an operand used last by op i dies into it */
        uint32_t reach = op->nregion ? i : i + 1;
        double live = 0;
        for (uint32_t a = 0; a < B->nargs; a++)
            if (o->last[B->args[a]] >= reach) live += weight(o, B->args[a]);
        for (uint32_t j = 0; j <= i; j++) {
            IrOp *d = ir_op(f, B->ops[j]);
            for (uint32_t k = 0; k < d->nres; k++)
                if (j == i || o->last[ir_res(d, k)] >= reach) live += weight(o, ir_res(d, k));
        }
        double inner = 0;
        for (uint32_t r = 0; r < op->nregion; r++) {
            double p = peak(o, op->region[r]);
            if (p > inner) inner = p;
        }
        if (live + inner > best) best = live + inner;
    }
    return best;
}

/* streamed[v]: v is a pure elementwise tile (or a reshape of one) used only in
 * its own block, with no reduction between its definition and any use, and
 * not as the value of a store.  LLVM and ptxas compute such values element by
 * element where they are consumed (x * x in sum(x * x, 0), the polynomial of
 * an exp, the f32 chain x * rstd * w before its cast to bf16), so they never
 * hold a whole tile of registers; what crosses a reduction (its shuffles and
 * barriers) or is stored is what takes registers. */
static void mark_streamed(Occ *o)
{
    IrFunc *f = o->f;
    /* per op: the reductions (or ops holding one) before it in its block */
    uint32_t *before = tl_xcalloc(f->nops ? f->nops : 1, sizeof(uint32_t));
    uint8_t *bnd = tl_xcalloc(f->nops ? f->nops : 1, 1);
    for (IrBlk b = 1; b < f->nblocks; b++) {
        IrBlock *B = ir_blk(f, b);
        uint32_t n = 0;
        for (uint32_t i = 0; i < B->nops; i++) {
            before[B->ops[i]] = n;
            bnd[B->ops[i]] = ir_op_holds_reduction(f, ir_op(f, B->ops[i]));
            n += bnd[B->ops[i]];
        }
    }
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = ir_op(f, i);
        if (op->dead || op->nres != 1 || op->nregion) continue;
        uint32_t fl = ir_opinfo[op->opc].flags;
        if (((fl & IR_PURE) && (fl & IR_ELEM)) || op->opc == IR_RESHAPE || op->opc == IR_EXPAND_DIMS)
            o->streamed[ir_res(op, 0)] = 1;
    }
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = ir_op(f, i);
        if (op->dead) continue;
        for (uint32_t k = 0; k < op->nopnd; k++) {
            IrVal v = ir_opnd(f, op, k);
            if (!v || v >= f->nvals || !o->streamed[v]) continue;
            uint32_t d = ir_def(f, v);
            bool stored = (op->opc == IR_STORE && k == 1) || (op->opc == IR_BLOCK_STORE && k == op->nopnd - 1);
            bool across = d == UINT32_MAX || def_block(f, v) != op->parent || before[i] - before[d] - bnd[d] > 0;
            if (stored || across) o->streamed[v] = 0;
        }
    }
    free(before);
    free(bnd);
}

int cg_min_ctas(IrFunc *f, const IrTarget *tg, int warps, CgOccupancy *occ)
{
    memset(occ, 0, sizeof *occ);
    const char *env = getenv("TILEC_MIN_CTAS");
    if (env && *env) {
        occ->why = "TILEC_MIN_CTAS in the environment";
        return occ->min_ctas = atoi(env);
    }
    for (uint32_t i = 0; i < f->nops; i++)
        if (ir_op(f, i)->opc == IR_DOT) {
            occ->why = "the kernel has a dot: ptxas's choice";
            return 0;
        }
    int threads = 32 * warps;
    Occ o = {f, threads, tl_xcalloc(f->nvals, 1), tl_xcalloc(f->nvals, 1), tl_xcalloc(f->nvals, sizeof(uint32_t))};
    ir_free_values(f, o.free_);
    mark_streamed(&o);
    double p = peak(&o, f->body);
    if (getenv("TILEC_OCC_DEBUG")) fprintf(stderr, "occupancy: %s peak %.1f regs/thread\n", f->name, p);
    free(o.free_);
    free(o.streamed);
    free(o.last);
    /* per tensor or pointer parameter, its 64-bit base and index arithmetic */
    int nmem = 0;
    for (uint32_t i = 0; i < f->nparams; i++) {
        IrType t = f->params[i].ty;
        nmem += t.kind == TY_VIEW || (t.kind == TY_TILE && t.isptr);
    }
    double base = 24 + 4 * nmem;
    double need = p + base > 2 * p ? p + base : 2 * p;
    int64_t r = ((int64_t)need + 7) / 8 * 8;
    if (r < 40) r = 40;
    int64_t ctas = tg->regs_per_sm / ((int64_t)threads * r);
    if (ctas > tg->threads_per_sm / threads) ctas = tg->threads_per_sm / threads;
    occ->peak = p;
    occ->regs = (int)r;
    return occ->min_ctas = ctas < 1 ? 1 : (int)ctas;
}
