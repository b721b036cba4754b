/* pressure.c: the register-pressure model (pressure.h says what it counts).
 *
 * Why these weights (measured on the H200, codegen/occupancy.c): the row
 * kernels' hint became right only with liveness instead of the largest tile
 * (rmsnorm f32 8k capped at 64 registers spilled in its hot path with x and w
 * both live), with broadcasts and values used up between reductions weighing
 * nothing, and with a bf16 row live across its reduction weighing half.
 */
#include "pressure.h"

#include <stdlib.h>
#include <string.h>

#include "../ir/layout.h"

/* Whether f has a dot (its tiles are accumulators and operands, not rows to widen and pack). */
static bool has_dot(const IrFunc *f)
{
    for (uint32_t i = 0; i < f->nops; i++)
        if (!f->ops[i].dead && f->ops[i].opc == IR_DOT) return true;
    return false;
}

static double weigh(const PassPressure *p, IrVal v, bool streaming)
{
    IrFunc *f = p->f;
    IrType t = ir_vty(f, v);
    if (t.kind != TY_TILE || t.rank == 0 || p->free_[v] || (streaming && p->streamed[v]) || p->in_smem[v]) return 0;
    /* a broadcast's registers are its source's (codegen maps them; nothing is copied) */
    uint32_t d = ir_def(f, v);
    if (d != UINT32_MAX && ir_op(f, d)->opc == IR_BROADCAST) return weigh(p, ir_opnd(f, ir_op(f, d), 0), streaming);
    /* at most one element per thread (a reduction's result): a scalar, weighs 0 like them */
    if (ir_ty_numel(t) <= p->threads) return 0;
    double regs;
    uint32_t li = f->val_layout && v < f->nval_layout ? f->val_layout[v] : 0;
    if (li) {
        const Layout *L = &f->layouts[li];
        regs = (double)(layout_nregs(L) >> __builtin_popcount(layout_replicated(L, LL_REG)));
    } else {
        regs = (double)((ir_ty_numel(t) + p->threads - 1) / p->threads);
    }
    int bytes = t.isptr ? 8 : dt_bytes((DType)t.dt);
    return regs * (bytes < 2 ? 0.25 : bytes / 4.0);
}

double pass_pressure_weight(const PassPressure *p, IrVal v)
{
    return weigh(p, v, true);
}

double pass_pressure_held(const PassPressure *p, IrVal v)
{
    return weigh(p, v, false);
}

/* The block defining v. */
static IrBlk def_block(IrFunc *f, IrVal v)
{
    const IrValue *x = &f->vals[v];
    return x->is_arg ? (IrBlk)x->def : ir_op(f, x->def)->parent;
}

/* Records uses at index `at` of block b (op is b's op `at`, or nested in it)
 * of the values b defines: every operand of op and of the ops in its regions. */
static void note_uses(PassPressure *p, IrBlk b, IrOp *op, uint32_t at)
{
    IrFunc *f = p->f;
    for (uint32_t k = 0; k < op->nopnd; k++) {
        IrVal v = ir_opnd(f, op, k);
        if (v && v < f->nvals && def_block(f, v) == b && p->last[v] < at) p->last[v] = at;
    }
    for (uint32_t r = 0; r < op->nregion; r++) {
        IrBlock *B = ir_blk(f, op->region[r]);
        for (uint32_t i = 0; i < B->nops; i++) note_uses(p, b, ir_op(f, B->ops[i]), at);
    }
}

/* The weight of the values of b whose last use is op (b's op i, which holds
 * regions) and which an op inside its regions uses: they stay live while the
 * regions run. */
static double captured_in(PassPressure *p, IrBlk b, const IrOp *op, uint32_t i, uint8_t *seen, int only)
{
    IrFunc *f = p->f;
    double w = 0;
    for (uint32_t r = 0; r < op->nregion; r++) {
        if (only >= 0 && r != (uint32_t)only) continue;
        IrBlock *B = ir_blk(f, op->region[r]);
        for (uint32_t j = 0; j < B->nops; j++) {
            const IrOp *in = ir_op(f, B->ops[j]);
            /* a loop's initial values live on as its body's arguments, which its peak counts */
            uint32_t first_init = in->opc == IR_FOR ? IR_FOR_NBOUNDS : in->opc == IR_WHILE ? 0 : UINT32_MAX;
            for (uint32_t k = 0; k < in->nopnd; k++) {
                IrVal v = ir_opnd(f, in, k);
                if (k >= first_init) continue;
                if (!v || v >= f->nvals || seen[v] || def_block(f, v) != b || p->last[v] != i) continue;
                seen[v] = 1;
                w += pass_pressure_weight(p, v);
            }
            w += captured_in(p, b, in, i, seen, -1);
        }
    }
    return w;
}

/* The same for op's region r alone (r < 0: every region). */
static double captured(PassPressure *p, IrBlk b, const IrOp *op, uint32_t i, int r)
{
    uint8_t *seen = tl_xcalloc(p->f->nvals, 1);
    double w = captured_in(p, b, op, i, seen, r);
    free(seen);
    return w;
}

/* The peak of block b; across[i] (when not NULL): what b has live across its op i,
 * neither its results nor its regions' peak counted. */
static double block_peak(PassPressure *p, IrBlk b, double *across)
{
    IrFunc *f = p->f;
    IrBlock *B = ir_blk(f, b);
    /* last uses, in this block's indices, of the values this block defines */
    for (uint32_t i = 0; i < B->nargs; i++) p->last[B->args[i]] = 0;
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        for (uint32_t k = 0; k < op->nres; k++) p->last[ir_res(op, k)] = i;
    }
    /* uses overwrite: a value's last use is the largest index using it */
    for (uint32_t i = 0; i < B->nops; i++) note_uses(p, b, ir_op(f, B->ops[i]), i);
    /* a streamed value weighs nothing because it is computed where it is consumed:
     * what it is computed from stays live until then.  Backwards, so a chain of
     * them (cast, sigmoid, mul) carries its last use to its inputs: without
     * this, moe_swiglu's two bf16 loads, each used by its cast to f32 only,
     * counted one at a time (8 registers for 16) and the hint of 10 CTAs per
     * SM capped ptxas at 48 registers with 176 bytes of spills */
    for (uint32_t i = B->nops; i-- > 0;) {
        IrOp *op = ir_op(f, B->ops[i]);
        if (op->nres != 1 || op->nregion || !p->streamed[ir_res(op, 0)]) continue;
        uint32_t end = p->last[ir_res(op, 0)];
        for (uint32_t k = 0; k < op->nopnd; k++) {
            IrVal v = ir_opnd(f, op, k);
            if (v && v < f->nvals && def_block(f, v) == b && p->last[v] < end) p->last[v] = end;
        }
    }
    /* live across op i: its results, and earlier values used later (or
     * inside its regions); an operand used last by op i dies into it.  A
     * running sum: `live` holds what is defined before i and used at i or
     * later, `dying` (indexed by last use) what leaves after its last use. */
    double *dying = tl_xcalloc(B->nops + 1, sizeof(double));
    double live = 0, best = 0;
    for (uint32_t a = 0; a < B->nargs; a++) {
        double w = pass_pressure_weight(p, B->args[a]);
        dying[p->last[B->args[a]]] += w;   /* an unused argument: last 0, dies at op 0 */
        live += w;
    }
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        /* values whose last use is i die into op i's results */
        double res = 0;
        for (uint32_t k = 0; k < op->nres; k++) {
            IrVal v = ir_res(op, k);
            double w = pass_pressure_weight(p, v);
            res += w;
            if (p->last[v] > i) dying[p->last[v]] += w;
        }
        double at = live - dying[i] + res;
        if (op->nregion) {
            double inner = 0, inner_held = 0; /* the largest region's peak; the largest region's own
                                                 * captures plus its peak (dot kernels) */
            for (uint32_t r = 0; r < op->nregion; r++) {
                double q = block_peak(p, op->region[r], NULL);
                if (q > inner) inner = q;
                if (p->dot) {
                    double c = captured(p, b, op, i, (int)r) + q;
                    if (c > inner_held) inner_held = c;
                }
            }
            /* the recursion reused p->last for the inner blocks' values only: ours stand */
            if (!p->dot) {
                /* a row kernel: its operands stay live while its regions run, and
                 * the peak inside adds to its results (a loop's results, its
                 * carried values, on top of its body's peak).  Counting them once
                 * instead made layernorm bf16 1024's hint 16 CTAs and its spills
                 * 416 bytes, against 234 at the 12 CTAs of this count: the
                 * occupancy hint is calibrated on it. */
                at = live + res + inner;
                if (across) across[i] = live;
            } else {
                /* a kernel with dots: what stays live across it, plus the values
                 * its regions use, plus the peak inside (where its operands, a
                 * loop's initial accumulators, live on as the regions' arguments);
                 * its results (the accumulators, tied in place) come after */
                double base = live - dying[i];
                if (base + inner_held > at) at = base + inner_held;
                if (across) across[i] = base + captured(p, b, op, i, -1);
            }
        } else if (across) {
            across[i] = live - dying[i];
        }
        if (at > best) best = at;
        live -= dying[i];
        for (uint32_t k = 0; k < op->nres; k++) {
            IrVal v = ir_res(op, k);
            if (p->last[v] > i) live += pass_pressure_weight(p, v);
        }
    }
    free(dying);
    return best;
}

double pass_pressure_peak(PassPressure *p, IrBlk b)
{
    return block_peak(p, b, NULL);
}

double pass_pressure_profile(PassPressure *p, IrBlk b, double *across)
{
    return block_peak(p, b, across);
}

/* streamed[v]: v is a pure elementwise tile (or a reshape of one) used only in
 * its own block, with no reduction between its definition and any use, and
 * not as the value of a store.  LLVM and ptxas compute such values element by
 * element where they are consumed (x * x in sum(x * x, 0), the polynomial of
 * an exp, the f32 chain x * rstd * w before its cast to bf16), so they never
 * hold a whole tile of registers; what crosses a reduction (its shuffles and
 * barriers) or is stored is what takes registers. */
void pass_pressure_update(PassPressure *p)
{
    IrFunc *f = p->f;
    memset(p->streamed, 0, f->nvals);
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
            p->streamed[ir_res(op, 0)] = 1;
    }
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = ir_op(f, i);
        if (op->dead) continue;
        for (uint32_t k = 0; k < op->nopnd; k++) {
            IrVal v = ir_opnd(f, op, k);
            if (!v || v >= f->nvals || !p->streamed[v]) continue;
            uint32_t d = ir_def(f, v);
            bool stored = (op->opc == IR_STORE && k == 1) || (op->opc == IR_BLOCK_STORE && k == op->nopnd - 1);
            bool across = d == UINT32_MAX || def_block(f, v) != op->parent || before[i] - before[d] - bnd[d] > 0;
            if (stored || across) p->streamed[v] = 0;
        }
    }
    free(before);
    free(bnd);
    /* in_smem: a stage read (or a transpose of one) used only as the A or B of
     * dots of its block, which read it in place from shared memory (codegen's
     * cg_buf_operand: the passes put the read right before its dot) */
    memset(p->in_smem, 0, f->nvals);
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = ir_op(f, i);
        if (op->dead || op->nres != 1) continue;
        bool rd = op->opc == IR_SMEM_READ;
        if (op->opc == IR_TRANS && op->attr.shape[0] == 1) {
            uint32_t d = ir_def(f, ir_opnd(f, op, 0));
            rd = d != UINT32_MAX && ir_op(f, d)->opc == IR_SMEM_READ;
        }
        if (rd) p->in_smem[ir_res(op, 0)] = 1;
    }
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = ir_op(f, i);
        if (op->dead) continue;
        for (uint32_t k = 0; k < op->nopnd; k++) {
            IrVal v = ir_opnd(f, op, k);
            if (!v || v >= f->nvals || !p->in_smem[v]) continue;
            bool in_place = (op->opc == IR_DOT && k < 2) || op->opc == IR_TRANS;
            if (!in_place || ir_op(f, ir_def(f, v))->parent != op->parent) p->in_smem[v] = 0;
        }
    }
}

void pass_pressure_init(PassPressure *p, IrFunc *f, int threads)
{
    p->f = f;
    p->threads = threads > 0 ? threads : 32;
    p->dot = has_dot(f);
    size_t n = f->nvals ? f->nvals : 1;
    p->free_ = tl_xcalloc(n, 1);
    p->streamed = tl_xcalloc(n, 1);
    p->in_smem = tl_xcalloc(n, 1);
    p->last = tl_xcalloc(n, sizeof(uint32_t));
    ir_free_values(f, p->free_);
    pass_pressure_update(p);
}

void pass_pressure_fini(PassPressure *p)
{
    free(p->free_);
    free(p->streamed);
    free(p->in_smem);
    free(p->last);
    memset(p, 0, sizeof *p);
}

int pass_pressure_nmem(const IrFunc *f)
{
    int nmem = 0;
    for (uint32_t i = 0; i < f->nparams; i++) {
        IrType t = f->params[i].ty;
        nmem += t.kind == TY_VIEW || (t.kind == TY_TILE && t.isptr);
    }
    return nmem;
}

/* What ptxas needs besides the tiles.  Without dots: per tensor or pointer
 * parameter its 64-bit base and index arithmetic, and 24 for loops and
 * reductions (the occupancy hint's measurements).  With dots: 112, measured
 * on the stdlib for sm_90a (2026-12-02, `--remarks=schedule --emit=cubin`):
 * every dot kernel whose tiles peak at 128 registers or less compiles without
 * spills (ptxas 162-254 registers: wgmma descriptors, stage addresses and
 * mbarrier phases, the epilogue's addressing), and every one at 144 or more
 * spills (flash_attn_varlen_fwd at 144: 380 bytes; gemm at 176: 256). */
bool pass_pressure_specialized(const IrFunc *f)
{
    for (uint32_t i = 0; i < f->nops; i++)
        if (!f->ops[i].dead && f->ops[i].opc == IR_PRODUCER_WARP) return true;
    return false;
}

/* A warp-specialized kernel's consumers issue no TMA loads and wait on no stage of their
 * own: 48, measured on flash_attn_fwd and flash_attn_fwd_lse (2026-12-04: tiles peak at 192,
 * 0 bytes of spills at the consumers' 240 registers). */
static double overhead(const IrFunc *f)
{
    if (has_dot(f)) return pass_pressure_specialized(f) ? 48 : 112;
    return 24 + 4 * pass_pressure_nmem(f);
}

int pass_pressure_kernel_cap(const IrFunc *f, const IrTarget *tg)
{
    int warps = f->warps ? f->warps : 4;
    if (!pass_pressure_specialized(f)) return pass_pressure_cap(f, tg);
    int producer, consumer;
    ir_ws_registers(warps, &producer, &consumer);
    return consumer ? consumer : pass_pressure_cap_threads(tg, 32 * (warps + 4));
}

int pass_pressure_regs(const IrFunc *f, double peak)
{
    double base = overhead(f);
    double need = peak + base > 2 * peak || has_dot(f) ? peak + base : 2 * peak;
    int64_t r = ((int64_t)need + 7) / 8 * 8;
    return r < 40 ? 40 : (int)r;
}

double pass_pressure_tile_budget(const IrFunc *f, int cap)
{
    /* need(p) = max(p + base, 2p) <= cap, with need rounded up to 8: p <= cap8 - base and p <= cap8 / 2 */
    double cap8 = (double)(cap / 8 * 8), base = overhead(f);
    double a = cap8 - base, b = has_dot(f) ? a : cap8 / 2;
    double t = a < b ? a : b;
    return t < 0 ? 0 : t;
}

int pass_pressure_cap(const IrFunc *f, const IrTarget *tg)
{
    return pass_pressure_cap_threads(tg, 32 * (f->warps ? f->warps : 4));
}

int pass_pressure_cap_threads(const IrTarget *tg, int threads)
{
    int64_t cap = (tg ? tg->regs_per_sm : 65536) / threads;
    return cap > 255 ? 255 : (int)cap;
}
