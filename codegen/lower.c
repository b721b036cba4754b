/* lower.c: layout-annotated tile IR -> LLVM IR for one kernel.
 *
 * 1. Declare the kernel with the ABI of runtime/tilert.h (views expand to
 *    pointer, shape[N], stride[N], then the 128-byte TMA descriptors the
 *    view's async loads use, grid_constant) and mark it a kernel with its
 *    thread count.  The pipelining ops' buffers and descriptors are planned
 *    first (lower_async.c), as the signature depends on them.
 * 2. In the entry block compute tid, lane and warp once.
 * 3. Walk the body in order; each op's hook (the table below, generated from
 *    ir/ops.def) turns its operands' registers into its results' registers.
 *    Structured control flow becomes basic blocks with one phi per register of
 *    each carried value.
 * 4. Attach line information (DILocation from each op's loc) so ptxas's
 *    .loc lines name the .tile source.
 * The elementwise hooks are here; memory, conversions, reductions and dot
 * live in lower_mem.c, convert.c, lower_reduce.c and lower_dot.c.
 */
#include "lower_int.h"

#include <stdlib.h>
#include <string.h>

#include "../ir/fpconv.h"

/* ---- types and small helpers ---------------------------------------------- */

LLVMTypeRef cg_dtype(Cg *cg, DType dt)
{
    switch (dt) {
    case DT_I1: return cg->i1;
    case DT_I8: case DT_U8: case DT_F8E4M3: case DT_F8E5M2: return cg->i8;
    case DT_I16: case DT_U16: return cg->i16;
    case DT_I32: case DT_U32: return cg->i32;
    case DT_I64: case DT_U64: return cg->i64;
    case DT_F16: return cg->f16;
    case DT_BF16: return cg->bf16;
    case DT_F32: return cg->f32;
    case DT_F64: return cg->f64;
    default: tl_fatal("codegen", "bad dtype %d", (int)dt);
    }
}

LLVMTypeRef cg_elem_type(Cg *cg, IrType t) { return t.isptr ? cg->gptr : cg_dtype(cg, (DType)t.dt); }

const Layout *cg_layout(Cg *cg, IrVal v)
{
    IrType t = ir_vty(cg->f, v);
    if (t.kind != TY_TILE || t.rank == 0) return NULL;
    uint32_t li = cg->f->val_layout ? cg->f->val_layout[v] : 0;
    if (!li) tl_fatal("codegen", "value %u of %s has no layout (did the layout pass run?)", v, cg->f->name);
    return &cg->f->layouts[li];
}

CgVal *cg_val(Cg *cg, IrVal v) { return &cg->vals[v]; }

void cg_define(Cg *cg, IrVal v, LLVMValueRef *regs, uint32_t n)
{
    CgVal *cv = &cg->vals[v];
    cv->regs = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    memcpy(cv->regs, regs, n * sizeof *regs);
    cv->nregs = n;
    cv->L = cg_layout(cg, v);
    if (cv->L) TL_ASSERT(n == layout_nregs(cv->L), "codegen");
}

LLVMValueRef cg_reg(Cg *cg, IrVal v, uint32_t r)
{
    CgVal *cv = &cg->vals[v];
    TL_ASSERT(cv->regs, "codegen");
    return cv->nregs == 1 ? cv->regs[0] : cv->regs[r];
}

LLVMValueRef cg_const_int(Cg *cg, LLVMTypeRef t, int64_t v) { return LLVMConstInt(t, (unsigned long long)v, 1); }

LLVMValueRef cg_call_intrinsic(Cg *cg, const char *name, LLVMTypeRef ret, LLVMValueRef *args, unsigned n)
{
    LLVMTypeRef at[8];
    TL_ASSERT(n <= 8, "codegen");
    for (unsigned i = 0; i < n; i++) at[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, at, n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    if (!fn) fn = LLVMAddFunction(cg->mod, name, fty);
    return LLVMBuildCall2(cg->b, fty, fn, args, n, "");
}

LLVMValueRef cg_inline_asm(Cg *cg, LLVMTypeRef ret, const char *text, const char *constraints, LLVMValueRef *args,
                           unsigned n, bool side_effects)
{
    LLVMTypeRef at[16];
    TL_ASSERT(n <= 16, "codegen");
    for (unsigned i = 0; i < n; i++) at[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, at, n, 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)constraints, strlen(constraints),
                                         side_effects, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef call = LLVMBuildCall2(cg->b, fty, asmv, args, n, "");
    if (side_effects || strstr(text, "sync") || strstr(text, "aligned")) cg_convergent(cg, call);
    return call;
}

/* Marks an inline-asm call convergent, as LLVM's own barrier and shuffle intrinsics are.
 * Inline asm is not, by default, so LLVM may duplicate a call into both sides of a branch
 * (tail duplication, jump threading) or sink copies of it into one: then the threads of one
 * warp run different `bar.sync` (or wgmma, setmaxnreg) instructions, which PTX's `.aligned`
 * forms forbid.  A `bar.sync 1, N` duplicated into thread 0's barrier-initialisation branch
 * counted warp 0 twice and hung the warp-specialized attention kernel (session 9).  Every
 * asm with side effects gets it (barriers, mbarriers, TMA, wgmma, fences), and any other
 * whose text names a warp-synchronous form. */
void cg_convergent(Cg *cg, LLVMValueRef call)
{
    unsigned kind = LLVMGetEnumAttributeKindForName("convergent", 10);
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
}

static LLVMValueRef sreg(Cg *cg, const char *name)
{
    return cg_call_intrinsic(cg, name, cg->i32, NULL, 0);
}

LLVMValueRef cg_thread_offset(Cg *cg, const Layout *L)
{
    LLVMValueRef x = LLVMConstInt(cg->i32, 0, 0);
    LLVMValueRef in[2] = {cg->lane, cg->warp};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < L->nbits[LL_LANE + k]; i++) {
            uint32_t v = L->basis[LL_LANE + k][i];
            if (!v) continue;
            /* ((in >> i) & 1) * v, combined by xor */
            LLVMValueRef bit = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, in[k], LLVMConstInt(cg->i32, (unsigned)i, 0), ""),
                                            LLVMConstInt(cg->i32, 1, 0), "");
            x = LLVMBuildXor(cg->b, x, LLVMBuildMul(cg->b, bit, LLVMConstInt(cg->i32, v, 0), ""), "");
        }
    return x;
}

LLVMValueRef cg_coord(Cg *cg, const Layout *L, LLVMValueRef thread_off, uint32_t r, int k)
{
    uint32_t rpart = layout_apply(L, r, 0, 0);
    LLVMValueRef flat = LLVMBuildXor(cg->b, thread_off, LLVMConstInt(cg->i32, rpart, 0), "");
    int off = layout_dim_offset(L, k);
    LLVMValueRef c = LLVMBuildLShr(cg->b, flat, LLVMConstInt(cg->i32, (unsigned)off, 0), "");
    return LLVMBuildAnd(cg->b, c, LLVMConstInt(cg->i32, (1u << L->dimbits[k]) - 1, 0), "");
}

void cg_barrier(Cg *cg)
{
    TL_ASSERT(!cg->elect_tid, "codegen"); /* the producer branch holds no op that syncs the CTA */
    if (cg->ws_split) {
        char text[64];
        /* a consumer barrier while this warpgroup holds the ping-pong turn would wait for the
         * other warpgroup, which waits for the turn: pass the turn on first */
        if (cg->pp_open) cg_pingpong_barrier(cg, false, 1);
        snprintf(text, sizeof text, "bar.sync 1, %d;", 32 * cg->warps);
        cg_asm_void(cg, text);
        return;
    }
    cg_call_intrinsic(cg, "llvm.nvvm.barrier0", cg->vd, NULL, 0);
}

/* Ping-pong (FlashAttention-3's inter-warpgroup schedule): in the specialized loop of a
 * kernel with two consumer warpgroups, warpgroup w waits on named barrier 2 + w before it
 * issues the dots of an iteration and, once they are issued, arrives on 2 + (w ^ 1), the
 * other's; warpgroup 1 arrives on barrier 2 once before the loop.  So the two issue their
 * dots in turn, and one's softmax runs while the other's products hold the tensor cores,
 * rather than both competing for the tensor cores and then both leaving them idle.  Both
 * warpgroups run the same iterations (the loop's bounds are the CTA's), so every bar.sync
 * meets its arrivals; warpgroup 1's first arrival outlives the loop unmatched, on a barrier
 * nothing else uses.  TILEC_WS_PINGPONG=0 in the environment turns it off (measurements).
 * Only the dots of the body's first run count: the first dot and those issued after it with
 * no wait between (the rotated attention loop's S = Q K^T and P V; dot_async leaves them in
 * flight together).  A consumer barrier met while a warpgroup holds the turn (a dot whose
 * operand is copied to shared memory, a layout conversion) passes the turn on before it
 * (cg_barrier): waiting there for the other warpgroup, which waits for the turn, would hang. */
bool cg_pingpong_plan(Cg *cg, uint32_t loop)
{
    IrFunc *f = cg->f;
    if (!cg->ws_split || cg->warps != 8) return false;
    const char *env = getenv("TILEC_WS_PINGPONG");
    if (env && env[0] == '0') return false;
    IrBlock *B = ir_blk(f, ir_op(f, loop)->region[0]);
    bool releases = false, closed = false;
    uint32_t first = UINT32_MAX, last = UINT32_MAX;
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *o = ir_op(f, B->ops[i]);
        releases |= o->opc == IR_ASYNC_RELEASE;
        if (closed) continue;
        if (o->opc == IR_DOT) {
            if (first == UINT32_MAX) first = B->ops[i];
            last = B->ops[i];
        } else if (first != UINT32_MAX && (o->opc == IR_DOT_WAIT || o->nregion || !(ir_opinfo[o->opc].flags & IR_PURE))) {
            closed = true; /* the first run ends at a wait or at anything but a pure op */
        }
    }
    if (!releases || first == UINT32_MAX) return false;
    cg->pp_first = first;
    cg->pp_last = last;
    return true;
}

void cg_pingpong_barrier(Cg *cg, bool sync, unsigned other)
{
    cg->pp_open = sync;
    LLVMValueRef wg = LLVMBuildLShr(cg->b, cg->warp, LLVMConstInt(cg->i32, 2, 0), "");
    LLVMValueRef id = LLVMBuildAdd(cg->b, LLVMBuildXor(cg->b, wg, LLVMConstInt(cg->i32, other, 0), ""),
                                   LLVMConstInt(cg->i32, 2, 0), "pp.bar");
    cg_inline_asm(cg, cg->vd, sync ? "bar.sync $0, 256;" : "bar.arrive $0, 256;", "r,~{memory}", &id, 1, true);
}

LLVMValueRef cg_smem(Cg *cg, uint32_t bytes)
{
    if (bytes > cg->smem_bytes) cg->smem_bytes = bytes;
    return cg->smem;
}

void cg_asm_void(Cg *cg, const char *text)
{
    LLVMTypeRef fty = LLVMFunctionType(cg->vd, NULL, 0, 0);
    const char *cons = "~{memory}";
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 1, 0,
                                         LLVMInlineAsmDialectATT, 0);
    cg_convergent(cg, LLVMBuildCall2(cg->b, fty, asmv, NULL, 0, ""));
}

LLVMBasicBlockRef cg_thread0(Cg *cg)
{
    LLVMBasicBlockRef one = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "thread0");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "thread0.done");
    LLVMValueRef is0 = LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, LLVMConstInt(cg->i32, cg->elect_tid, 0), "");
    LLVMBuildCondBr(cg->b, is0, one, join);
    LLVMPositionBuilderAtEnd(cg->b, one);
    return join;
}

/* ---- values in another layout ------------------------------------------------ */

static LLVMValueRef ew_apply(Cg *cg, IrOp *op, LLVMValueRef *x);
static uint32_t to_operand_flat(const Layout *L, const Layout *Lx, IrType rt, IrType xt, bool broadcast, uint32_t v);

/* What one remat() call has built: the registers of value v in layout L, so a
 * value used twice in an expression (x * x) is built once. */
typedef struct RematMemo {
    IrVal v;
    Layout L;
    LLVMValueRef *regs;
    struct RematMemo *next;
} RematMemo;

/* The layout of operand x of shape op `op` (result layout L) that puts in
 * register r, lane l, warp w the operand element that the result element at
 * (r, l, w) of L is made from: the same flat-index bits for EXPAND_DIMS (the
 * inserted dim is size 1) and RESHAPE (row-major order is kept) on x's dims;
 * for BROADCAST the bits of the broadcast dims dropped.  It may replicate
 * (zero bases) where L runs along a broadcast dim. */
static Layout operand_view(Cg *cg, IrOp *op, const Layout *L)
{
    IrFunc *f = cg->f;
    IrType rt = ir_vty(f, ir_res(op, 0)), xt = ir_vty(f, ir_opnd(f, op, 0));
    Layout X = *L;
    X.rank = (uint8_t)xt.rank;
    memset(X.dimbits, 0, sizeof X.dimbits);
    for (int d = 0; d < xt.rank; d++) X.dimbits[d] = (uint8_t)__builtin_ctz((unsigned)xt.dims[d]);
    if (op->opc == IR_BROADCAST)
        for (int k = 0; k < LL_NIN; k++)
            for (int i = 0; i < L->nbits[k]; i++) X.basis[k][i] = to_operand_flat(L, &X, rt, xt, true, L->basis[k][i]);
    return X;
}

/* A loop being lowered: its op, the end of its preheader's chain of blocks (the
 * loop-invariant free values rebuilt for it; unterminated until the loop is
 * done, then it branches to the loop's entry) and what was built there. */
typedef struct CgLoop {
    uint32_t op;
    LLVMBasicBlockRef hoist_end;
    RematMemo *memo;
} CgLoop;

/* Opens the preheader chain of loop op `opid`: the current block branches to
 * it, and the block returned (empty) is where the loop's phis come from. */
static LLVMBasicBlockRef loop_enter(Cg *cg, uint32_t opid, LLVMBasicBlockRef head)
{
    LLVMBasicBlockRef hoist = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "loop.hoist");
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "loop.entry");
    LLVMBuildBr(cg->b, hoist);
    LLVMPositionBuilderAtEnd(cg->b, entry);
    LLVMBuildBr(cg->b, head);
    if (cg->nloops == cg->loopcap) {
        int cap = cg->loopcap ? 2 * cg->loopcap : 8;
        CgLoop *n = ARENA_ARRAY(cg->scratch, CgLoop, (size_t)cap);
        if (cg->nloops) memcpy(n, cg->loops, (size_t)cg->nloops * sizeof *n);
        cg->loops = n;
        cg->loopcap = cap;
    }
    cg->loops[cg->nloops++] = (CgLoop){opid, hoist, NULL};
    cg->emit_depth = cg->nloops;
    return entry;
}

/* Closes the innermost loop's preheader chain (a branch to `entry`). */
static void loop_leave(Cg *cg, LLVMBasicBlockRef entry)
{
    TL_ASSERT(cg->nloops > 0, "codegen");
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(cg->b);
    LLVMPositionBuilderAtEnd(cg->b, cg->loops[--cg->nloops].hoist_end);
    LLVMBuildBr(cg->b, entry);
    cg->emit_depth = cg->nloops;
    if (cur) LLVMPositionBuilderAtEnd(cg->b, cur);
}

/* Whether free value v's expression divides (an integer division or remainder by
 * a value, or a float division): worth building once before a loop.  Cheaper
 * expressions are rebuilt where they are used, so that no register holds them
 * through the loop (FlashAttention's mask coordinates would spill). */
static bool remat_costly(Cg *cg, IrVal v, int depth)
{
    IrFunc *f = cg->f;
    if (!cg_layout(cg, v) || !cg->free_[v] || depth > 64) return false;
    IrOp *op = ir_op(f, ir_def(f, v));
    if ((op->opc == IR_DIV || op->opc == IR_REM) && op->nopnd == 2) {
        /* by a constant (maybe splat or broadcast): multiplies and shifts */
        uint32_t dd = ir_def(f, ir_opnd(f, op, 1));
        while (dd != UINT32_MAX && (ir_op(f, dd)->opc == IR_SPLAT || ir_op(f, dd)->opc == IR_BROADCAST ||
                                    ir_op(f, dd)->opc == IR_EXPAND_DIMS))
            dd = ir_def(f, ir_opnd(f, ir_op(f, dd), 0));
        if (dd == UINT32_MAX || ir_op(f, dd)->opc != IR_CONST) return true;
    }
    for (uint32_t k = 0; k < op->nopnd; k++)
        if (remat_costly(cg, ir_opnd(f, op, k), depth + 1)) return true;
    return false;
}

/* The outermost loop of those the builder is in whose body does not hold v's
 * definition (v is invariant there) where v is worth building there
 * (remat_costly), or -1. */
static int invariant_loop(Cg *cg, IrVal v)
{
    IrFunc *f = cg->f;
    uint32_t d = ir_def(f, v);
    if (d == UINT32_MAX || cg->emit_depth == 0 || !remat_costly(cg, v, 0)) return -1;
    for (int k = 0; k < cg->emit_depth; k++) {
        bool inside = false;
        for (IrBlk b = ir_op(f, d)->parent; !inside;) {
            uint32_t p = ir_blk(f, b)->parent_op;
            if (p == UINT32_MAX) break;
            inside = p == cg->loops[k].op;
            b = ir_op(f, p)->parent;
        }
        if (!inside) return k;
    }
    return -1;
}

/* Builds free value v (ir_free_values) in layout L by evaluating its
 * expression at the coordinates each register of L holds: an arange gives the
 * coordinate, a splat its scalar, an elementwise op applies itself to its
 * operands built in L, and a shape op (expand_dims, reshape, broadcast) builds
 * its operand in operand_view(L), register for register.  No data moves
 * between threads, so nothing goes through shared memory. */
static void remat(Cg *cg, IrVal v, const Layout *L, LLVMValueRef *out, RematMemo **memo)
{
    IrFunc *f = cg->f;
    uint32_t n = layout_nregs(L);
    if (!cg_layout(cg, v)) { /* a scalar */
        for (uint32_t r = 0; r < n; r++) out[r] = cg_reg(cg, v, 0);
        return;
    }
    TL_ASSERT(cg->free_[v], "codegen");
    /* invariant in a loop being lowered: built once, in its preheader */
    int inv = invariant_loop(cg, v);
    if (inv >= 0) {
        CgLoop *lp = &cg->loops[inv];
        LLVMBasicBlockRef cur = LLVMGetInsertBlock(cg->b);
        int depth = cg->emit_depth;
        LLVMPositionBuilderAtEnd(cg->b, lp->hoist_end);
        cg->emit_depth = inv;
        remat(cg, v, L, out, &lp->memo);
        lp->hoist_end = LLVMGetInsertBlock(cg->b);
        cg->emit_depth = depth;
        LLVMPositionBuilderAtEnd(cg->b, cur);
        return;
    }
    for (RematMemo *m = *memo; m; m = m->next)
        if (m->v == v && layout_eq(&m->L, L)) {
            memcpy(out, m->regs, n * sizeof *out);
            return;
        }
    IrOp *op = ir_op(f, ir_def(f, v));
    switch ((IrOpcode)op->opc) {
    case IR_SPLAT: {
        LLVMValueRef x = cg_reg(cg, ir_opnd(f, op, 0), 0);
        for (uint32_t r = 0; r < n; r++) out[r] = x;
        break;
    }
    case IR_ARANGE: {
        LLVMValueRef toff = cg_thread_offset(cg, L);
        for (uint32_t r = 0; r < n; r++) out[r] = cg_coord(cg, L, toff, r, 0);
        break;
    }
    case IR_EXPAND_DIMS: case IR_RESHAPE: case IR_BROADCAST: {
        Layout X = operand_view(cg, op, L);
        remat(cg, ir_opnd(f, op, 0), &X, out, memo);
        break;
    }
    default: {
        TL_ASSERT((ir_opinfo[op->opc].flags & IR_ELEM) && op->nopnd <= 3, "codegen");
        LLVMValueRef *xs[3];
        for (uint32_t k = 0; k < op->nopnd; k++) {
            xs[k] = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
            remat(cg, ir_opnd(f, op, k), L, xs[k], memo);
        }
        /* registers that replicate one element (zero register bases, as a
         * broadcast's operand view has) hold one value: computed once, for the
         * lowest such register (a 64-bit division is a loop each) */
        uint32_t zmask = 0;
        for (int i = 0; i < L->nbits[LL_REG]; i++)
            if (!L->basis[LL_REG][i]) zmask |= 1u << i;
        for (uint32_t r = 0; r < n; r++) {
            if (r & zmask) {
                out[r] = out[r & ~zmask];
                continue;
            }
            LLVMValueRef x[3];
            for (uint32_t k = 0; k < op->nopnd; k++) x[k] = xs[k][r];
            out[r] = ew_apply(cg, op, x);
        }
        break;
    }
    }
    RematMemo *m = ARENA_NEW(cg->scratch, RematMemo);
    m->v = v;
    m->L = *L;
    m->regs = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    memcpy(m->regs, out, n * sizeof *out);
    m->next = *memo;
    *memo = m;
}

void cg_value_as(Cg *cg, IrVal v, const Layout *L, LLVMValueRef *out)
{
    const Layout *Lv = cg_layout(cg, v);
    uint32_t n = layout_nregs(L);
    if (!Lv || layout_eq(Lv, L)) {
        for (uint32_t r = 0; r < n; r++) out[r] = cg_reg(cg, v, r);
        return;
    }
    if (cg->free_[v]) {
        RematMemo *memo = NULL;
        remat(cg, v, L, out, &memo);
        if (diag_remark_on(cg->d, DIAG_REMARK_layout)) {
            StrBuf t = {0};
            ir_ty_print(&t, ir_vty(cg->f, v));
            diag_remark(cg->d, DIAG_REMARK_layout, cg->loc,
                        "layout conversion of %s: recomputed in the new layout, no shared memory", t.s);
            sb_free(&t);
        }
        return;
    }
    cg_convert_layout(cg, v, L, out);
}

/* ---- elementwise ---------------------------------------------------------- */

static IrType opnd_ty(Cg *cg, IrOp *op, uint32_t i) { return ir_vty(cg->f, ir_opnd(cg->f, op, i)); }
static uint32_t nregs_of(Cg *cg, IrVal v)
{
    const Layout *L = cg_layout(cg, v);
    return L ? layout_nregs(L) : 1;
}

/* Applies fn to every register of the result: operands already share its layout. */
typedef LLVMValueRef (*ElemFn)(Cg *cg, IrOp *op, DType dt, LLVMValueRef *x);

static void elementwise(Cg *cg, IrOp *op, DType dt, ElemFn fn)
{
    IrVal res = ir_res(op, 0);
    uint32_t n = nregs_of(cg, res);
    const Layout *L = cg_layout(cg, res);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    LLVMValueRef *conv[3] = {0};
    for (uint32_t k = 0; k < op->nopnd; k++) {
        IrVal v = ir_opnd(cg->f, op, k);
        const Layout *Lv = cg_layout(cg, v);
        if (L && Lv && !layout_eq(L, Lv)) {
            conv[k] = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
            cg_value_as(cg, v, L, conv[k]);
        }
    }
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef x[3];
        for (uint32_t k = 0; k < op->nopnd; k++)
            x[k] = conv[k] ? conv[k][r] : cg_reg(cg, ir_opnd(cg->f, op, k), r);
        out[r] = fn(cg, op, dt, x);
    }
    cg_define(cg, res, out, n);
}

static LLVMValueRef int_width_const(Cg *cg, LLVMTypeRef t, DType dt) { return LLVMConstInt(t, dt_bits[dt], 0); }

static LLVMValueRef ew_binary(Cg *cg, IrOp *op, DType dt, LLVMValueRef *x)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef a = x[0], c = x[1];
    bool fl = dt_is_float(dt), sg = dt_is_signed(dt);
    LLVMTypeRef t = LLVMTypeOf(a);
    switch ((IrOpcode)op->opc) {
    case IR_ADD: return fl ? LLVMBuildFAdd(b, a, c, "") : LLVMBuildAdd(b, a, c, "");
    case IR_SUB: return fl ? LLVMBuildFSub(b, a, c, "") : LLVMBuildSub(b, a, c, "");
    case IR_MUL: return fl ? LLVMBuildFMul(b, a, c, "") : LLVMBuildMul(b, a, c, "");
    case IR_DIV:
    case IR_REM: {
        if (fl && op->opc == IR_DIV && dt == DT_F32 && cg_fast_math(cg)) { /* 2 ulp, ftz */
            LLVMValueRef args[2] = {a, c};
            return cg_inline_asm(cg, cg->f32, "div.full.ftz.f32 $0, $1, $2;", "=f,f,f", args, 2, false);
        }
        if (fl && op->opc == IR_DIV && dt == DT_F32 && cg->inline_fdiv) return cg_fdiv_f32(cg, a, c);
        if (fl) return op->opc == IR_DIV ? LLVMBuildFDiv(b, a, c, "") : cg_math_fmod(cg, dt, a, c);
        /* x/0 and MIN/-1 are undefined in LLVM; the language wraps MIN/-1 and
         * leaves x/0 to the interpreter's check: divide by 1 instead. */
        LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
        LLVMValueRef bad = LLVMBuildICmp(b, LLVMIntEQ, c, zero, "");
        if (sg) {
            LLVMValueRef mn = LLVMBuildShl(b, one, LLVMConstInt(t, dt_bits[dt] - 1, 0), "");
            LLVMValueRef ovf = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, a, mn, ""),
                                            LLVMBuildICmp(b, LLVMIntEQ, c, LLVMConstAllOnes(t), ""), "");
            bad = LLVMBuildOr(b, bad, ovf, "");
        }
        LLVMValueRef den = LLVMBuildSelect(b, bad, one, c, "");
        /* (by a constant LLVM multiplies and shifts: no call) */
        if (cg->inline_fdiv && dt_bits[dt] == 64 && !LLVMIsAConstantInt(c))
            return cg_idiv64(cg, a, den, sg, op->opc == IR_REM, !cg_layout(cg, ir_res(op, 0)));
        if (op->opc == IR_DIV) return sg ? LLVMBuildSDiv(b, a, den, "") : LLVMBuildUDiv(b, a, den, "");
        LLVMValueRef r = sg ? LLVMBuildSRem(b, a, den, "") : LLVMBuildURem(b, a, den, "");
        return r;
    }
    case IR_AND: return LLVMBuildAnd(b, a, c, "");
    case IR_OR: return LLVMBuildOr(b, a, c, "");
    case IR_XOR: return LLVMBuildXor(b, a, c, "");
    case IR_SHL:
    case IR_SHR: {
        /* counts outside [0, width) give 0, or the sign fill for an arithmetic right shift */
        LLVMValueRef w = int_width_const(cg, t, dt);
        LLVMValueRef inrange = LLVMBuildICmp(b, LLVMIntULT, c, w, "");
        LLVMValueRef safe = LLVMBuildSelect(b, inrange, c, LLVMConstInt(t, 0, 0), "");
        if (op->opc == IR_SHL)
            return LLVMBuildSelect(b, inrange, LLVMBuildShl(b, a, safe, ""), LLVMConstInt(t, 0, 0), "");
        if (sg) {
            LLVMValueRef fill = LLVMBuildAShr(b, a, LLVMConstInt(t, dt_bits[dt] - 1, 0), "");
            return LLVMBuildSelect(b, inrange, LLVMBuildAShr(b, a, safe, ""), fill, "");
        }
        return LLVMBuildSelect(b, inrange, LLVMBuildLShr(b, a, safe, ""), LLVMConstInt(t, 0, 0), "");
    }
    case IR_MAX:
    case IR_MIN: {
        const char *nm;
        char name[64];
        if (fl) nm = op->opc == IR_MAX ? "llvm.maximum" : "llvm.minimum";
        else if (sg) nm = op->opc == IR_MAX ? "llvm.smax" : "llvm.smin";
        else nm = op->opc == IR_MAX ? "llvm.umax" : "llvm.umin";
        const char *sfx = t == cg->f32 ? "f32" : t == cg->f64 ? "f64" : t == cg->f16 ? "f16" : t == cg->bf16 ? "bf16"
                        : t == cg->i1 ? "i1" : t == cg->i8 ? "i8" : t == cg->i16 ? "i16" : t == cg->i32 ? "i32" : "i64";
        snprintf(name, sizeof name, "%s.%s", nm, sfx);
        LLVMValueRef args[2] = {a, c};
        return cg_call_intrinsic(cg, name, t, args, 2);
    }
    case IR_CMP: {
        IrCmp p = (IrCmp)op->attr.i;
        if (fl) {
            static const LLVMRealPredicate fp[CMP_COUNT] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                                            LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
            return LLVMBuildFCmp(b, fp[p], a, c, "");
        }
        static const LLVMIntPredicate sp[CMP_COUNT] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
        static const LLVMIntPredicate up[CMP_COUNT] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
        return LLVMBuildICmp(b, sg ? sp[p] : up[p], a, c, "");
    }
    case IR_ADDPTR: {
        IrType ot = opnd_ty(cg, op, 1);
        LLVMValueRef idx = dt_is_signed((DType)ot.dt) ? LLVMBuildSExt(b, c, cg->i64, "") : LLVMBuildZExt(b, c, cg->i64, "");
        if (LLVMTypeOf(c) == cg->i64) idx = c;
        return LLVMBuildGEP2(b, cg_dtype(cg, dt), a, &idx, 1, "");
    }
    default: tl_fatal("codegen", "not a binary op: %s", ir_opinfo[op->opc].name);
    }
}

#define BINARY_HOOK(ID)                                                                 \
    void cg_lower_##ID(Cg *cg, uint32_t opid, IrOp *op)                                 \
    {                                                                                   \
        (void)opid;                                                                     \
        elementwise(cg, op, (DType)opnd_ty(cg, op, 0).dt, ew_binary);                   \
    }
BINARY_HOOK(ADD)
BINARY_HOOK(SUB)
BINARY_HOOK(MUL)
BINARY_HOOK(DIV)
BINARY_HOOK(REM)
BINARY_HOOK(AND)
BINARY_HOOK(OR)
BINARY_HOOK(XOR)
BINARY_HOOK(SHL)
BINARY_HOOK(SHR)
BINARY_HOOK(MAX)
BINARY_HOOK(MIN)
BINARY_HOOK(CMP)
BINARY_HOOK(ADDPTR)
#undef BINARY_HOOK

/* ---- unary and ternary ------------------------------------------------------ */

/* abs of a signed integer, the minimum giving itself (two's complement).
 * Not abs.sN: ptxas takes its result to be non-negative, and rem.s32 of
 * abs(i32 min) came out on the H200 as the unsigned remainder of 2^31 (defect 7,
 * seed 800186).  x * (x >> (N - 1) | 1), multiplying by -1 or 1, is exact for
 * every input, the minimum included, and claims no sign; it is inline asm because
 * LLVM would turn the same IR back into llvm.abs and so into abs.sN.
 * i8 goes through the 16-bit form. */
static LLVMValueRef int_abs(Cg *cg, LLVMValueRef a, DType dt)
{
    LLVMBuilderRef b = cg->b;
    unsigned bits = dt_bits[dt];
    LLVMValueRef x = bits < 16 ? LLVMBuildSExt(b, a, cg->i16, "") : a;
    const char *text = bits <= 16 ? "{ .reg .s16 t; shr.s16 t, $1, 15; or.b16 t, t, 1; mul.lo.s16 $0, $1, t; }"
                       : bits == 32 ? "{ .reg .s32 t; shr.s32 t, $1, 31; or.b32 t, t, 1; mul.lo.s32 $0, $1, t; }"
                                    : "{ .reg .s64 t; shr.s64 t, $1, 63; or.b64 t, t, 1; mul.lo.s64 $0, $1, t; }";
    const char *cons = bits <= 16 ? "=h,h" : bits == 32 ? "=r,r" : "=l,l";
    LLVMValueRef r = cg_inline_asm(cg, LLVMTypeOf(x), text, cons, &x, 1, false);
    return bits < 16 ? LLVMBuildTrunc(b, r, LLVMTypeOf(a), "") : r;
}

static LLVMValueRef ew_unary(Cg *cg, IrOp *op, DType dt, LLVMValueRef *x)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef a = x[0];
    switch ((IrOpcode)op->opc) {
    case IR_NEG: return dt_is_float(dt) ? LLVMBuildFNeg(b, a, "") : LLVMBuildNeg(b, a, "");
    case IR_NOT: return LLVMBuildNot(b, a, "");
    case IR_ABS:
        if (dt_is_float(dt)) return cg_math_unary(cg, "fabs", dt, a);
        if (!dt_is_signed(dt)) return a;
        return int_abs(cg, a, dt);
    case IR_FLOOR: return dt_is_float(dt) ? cg_math_unary(cg, "floor", dt, a) : a;
    case IR_CEIL: return dt_is_float(dt) ? cg_math_unary(cg, "ceil", dt, a) : a;
    case IR_EXP: return cg_math_unary(cg, "exp", dt, a);
    case IR_EXP2: return cg_math_unary(cg, "exp2", dt, a);
    case IR_LOG: return cg_math_unary(cg, "log", dt, a);
    case IR_LOG2: return cg_math_unary(cg, "log2", dt, a);
    case IR_SQRT: return cg_math_unary(cg, "sqrt", dt, a);
    case IR_RSQRT: return cg_math_unary(cg, "rsqrt", dt, a);
    case IR_SIGMOID: return cg_math_unary(cg, "sigmoid", dt, a);
    case IR_TANH: return cg_math_unary(cg, "tanh", dt, a);
    case IR_ERF: return cg_math_unary(cg, "erf", dt, a);
    default: tl_fatal("codegen", "not a unary op: %s", ir_opinfo[op->opc].name);
    }
}

#define UNARY_HOOK(ID)                                                                  \
    void cg_lower_##ID(Cg *cg, uint32_t opid, IrOp *op)                                 \
    {                                                                                   \
        (void)opid;                                                                     \
        elementwise(cg, op, (DType)opnd_ty(cg, op, 0).dt, ew_unary);                    \
    }
UNARY_HOOK(NEG)
UNARY_HOOK(NOT)
UNARY_HOOK(EXP)
UNARY_HOOK(EXP2)
UNARY_HOOK(LOG)
UNARY_HOOK(LOG2)
UNARY_HOOK(SQRT)
UNARY_HOOK(RSQRT)
UNARY_HOOK(ABS)
UNARY_HOOK(SIGMOID)
UNARY_HOOK(TANH)
UNARY_HOOK(ERF)
UNARY_HOOK(FLOOR)
UNARY_HOOK(CEIL)
#undef UNARY_HOOK

static LLVMValueRef ew_fma(Cg *cg, IrOp *op, DType dt, LLVMValueRef *x)
{
    (void)op;
    if (dt_is_float(dt)) {
        char name[32];
        snprintf(name, sizeof name, "llvm.fma.%s", dt == DT_F32 ? "f32" : dt == DT_F64 ? "f64" : dt == DT_F16 ? "f16" : "bf16");
        return cg_call_intrinsic(cg, name, LLVMTypeOf(x[0]), x, 3);
    }
    return LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, x[0], x[1], ""), x[2], "");
}

static LLVMValueRef ew_select(Cg *cg, IrOp *op, DType dt, LLVMValueRef *x)
{
    (void)op;
    (void)dt;
    return LLVMBuildSelect(cg->b, x[0], x[1], x[2], "");
}

static LLVMValueRef ew_cast(Cg *cg, IrOp *op, DType dt, LLVMValueRef *x)
{
    IrType from = opnd_ty(cg, op, 0), to = ir_vty(cg->f, ir_res(op, 0));
    (void)dt;
    return cg_cast(cg, x[0], (DType)from.dt, from.isptr, (DType)to.dt, to.isptr);
}

static LLVMValueRef ew_bitcast(Cg *cg, IrOp *op, DType dt, LLVMValueRef *x)
{
    IrType to = ir_vty(cg->f, ir_res(op, 0));
    (void)dt;
    LLVMTypeRef tt = cg_elem_type(cg, to);
    if (LLVMTypeOf(x[0]) == tt) return x[0];
    LLVMTypeKind tk = LLVMGetTypeKind(tt);
    if (tk == LLVMHalfTypeKind || tk == LLVMBFloatTypeKind) {
        /* NVPTX cannot select a bitcast between f16 and bf16 (LLVM 19: "Cannot select: f16 =
         * bitcast bf16"), and instcombine and the DAG combiner fold bf16 -> i16 -> f16 into one.
         * Every bitcast to a 16-bit float therefore goes through an i16 that a mov hides from both. */
        LLVMValueRef v = x[0];
        if (LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMIntegerTypeKind) v = LLVMBuildBitCast(cg->b, v, cg->i16, "");
        v = cg_inline_asm(cg, cg->i16, "mov.b16 $0, $1;", "=h,h", &v, 1, false);
        return LLVMBuildBitCast(cg->b, v, tt, "");
    }
    return LLVMBuildBitCast(cg->b, x[0], tt, "");
}

/* One register of any pure elementwise op (for rematerialisation). */
static LLVMValueRef ew_apply(Cg *cg, IrOp *op, LLVMValueRef *x)
{
    DType dt = (DType)opnd_ty(cg, op, 0).dt;
    switch ((IrOpcode)op->opc) {
    case IR_FMA: return ew_fma(cg, op, dt, x);
    case IR_SELECT: return ew_select(cg, op, (DType)opnd_ty(cg, op, 1).dt, x);
    case IR_CAST: return ew_cast(cg, op, dt, x);
    case IR_BITCAST: return ew_bitcast(cg, op, dt, x);
    default: return op->nopnd == 2 ? ew_binary(cg, op, dt, x) : ew_unary(cg, op, dt, x);
    }
}

void cg_lower_FMA(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    elementwise(cg, op, (DType)opnd_ty(cg, op, 0).dt, ew_fma);
}
void cg_lower_SELECT(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    elementwise(cg, op, (DType)opnd_ty(cg, op, 1).dt, ew_select);
}
/* f32 -> bf16 / f16 tiles two registers at a time: cvt.rn.bf16x2.f32 (cvt.rn.f16x2.f32) rounds
 * both exactly as the scalar cvt.rn does, in one instruction instead of two (attention's P, a
 * 64-register tile each iteration).  LLVM 19 emits the scalar form for each fptrunc.  fp8 ->
 * f32 / f16 / bf16 the same way (cg_cast_f8_pair). */
static bool cast_pairs(Cg *cg, IrOp *op)
{
    IrType from = opnd_ty(cg, op, 0), to = ir_vty(cg->f, ir_res(op, 0));
    IrVal res = ir_res(op, 0), x = ir_opnd(cg->f, op, 0);
    const Layout *L = cg_layout(cg, res), *Lx = cg_layout(cg, x);
    uint32_t n = nregs_of(cg, res);
    if (from.isptr || to.isptr || n < 2 || n % 2 || !L || !Lx || !layout_eq(L, Lx)) return false;
    if (from.dt == DT_F8E4M3 || from.dt == DT_F8E5M2) {
        LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
        for (uint32_t r = 0; r < n; r += 2)
            if (!cg_cast_f8_pair(cg, cg_reg(cg, x, r), cg_reg(cg, x, r + 1), (DType)from.dt, (DType)to.dt, &out[r]))
                return false; /* decided by the types and the target: the first pair or none */
        cg_define(cg, res, out, n);
        return true;
    }
    if (from.dt != DT_F32 || (to.dt != DT_BF16 && to.dt != DT_F16)) return false;
    LLVMTypeRef et = to.dt == DT_BF16 ? cg->bf16 : cg->f16, vt = LLVMVectorType(et, 2);
    const char *text = to.dt == DT_BF16 ? "cvt.rn.bf16x2.f32 $0, $1, $2;" : "cvt.rn.f16x2.f32 $0, $1, $2;";
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r += 2) {
        LLVMValueRef args[2] = {cg_reg(cg, x, r + 1), cg_reg(cg, x, r)}; /* the first lands in the high half */
        LLVMValueRef w = cg_inline_asm(cg, cg->i32, text, "=r,f,f", args, 2, false);
        LLVMValueRef v = LLVMBuildBitCast(cg->b, w, vt, "");
        out[r] = LLVMBuildExtractElement(cg->b, v, LLVMConstInt(cg->i32, 0, 0), "");
        out[r + 1] = LLVMBuildExtractElement(cg->b, v, LLVMConstInt(cg->i32, 1, 0), "");
    }
    cg_define(cg, res, out, n);
    return true;
}

void cg_lower_CAST(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    if (cast_pairs(cg, op)) return;
    elementwise(cg, op, (DType)opnd_ty(cg, op, 0).dt, ew_cast);
}
void cg_lower_BITCAST(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    elementwise(cg, op, (DType)opnd_ty(cg, op, 0).dt, ew_bitcast);
}

/* ---- constants, index tiles and shape ops ---------------------------------- */

void cg_lower_CONST(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrType t = ir_vty(cg->f, ir_res(op, 0));
    LLVMTypeRef lt = cg_elem_type(cg, t);
    LLVMValueRef v;
    if (dt_is_float((DType)t.dt) && t.dt != DT_F8E4M3 && t.dt != DT_F8E5M2)
        v = LLVMConstReal(lt, op->attr.f);
    else if (dt_is_float((DType)t.dt))
        v = LLVMConstInt(lt, t.dt == DT_F8E4M3 ? fp_to_f8e4m3(op->attr.f) : fp_to_f8e5m2(op->attr.f), 0);
    else
        v = LLVMConstInt(lt, (unsigned long long)op->attr.i, 0);
    cg_define(cg, ir_res(op, 0), &v, 1);
}

void cg_lower_ARANGE(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrVal res = ir_res(op, 0);
    const Layout *L = cg_layout(cg, res);
    uint32_t n = layout_nregs(L);
    LLVMValueRef toff = cg_thread_offset(cg, L);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r++) out[r] = cg_coord(cg, L, toff, r, 0);
    cg_define(cg, res, out, n);
}

void cg_lower_SPLAT(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrVal res = ir_res(op, 0);
    uint32_t n = nregs_of(cg, res);
    LLVMValueRef s = cg_reg(cg, ir_opnd(cg->f, op, 0), 0);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r++) out[r] = s;
    cg_define(cg, res, out, n);
}

/* Shape ops that keep every element where it is in the row-major order of
 * the flat index (EXPAND_DIMS, RESHAPE, and BROADCAST whose operand layout is
 * the result's with the broadcast bits dropped) map register r of the result
 * to the operand's register holding the same element.  The layout pass picks
 * layouts that make this a register renaming; otherwise go through shared
 * memory. */
/* Maps result flat-index bits v of a BROADCAST (layout L, type rt) to the
 * operand's flat-index bits (layout Lx, type xt); identity otherwise. */
static uint32_t to_operand_flat(const Layout *L, const Layout *Lx, IrType rt, IrType xt, bool broadcast, uint32_t v)
{
    if (!broadcast) return v;
    uint32_t out = 0;
    for (int k = 0; k < rt.rank; k++) {
        if (xt.dims[k] != rt.dims[k] || !L->dimbits[k]) continue;
        uint32_t bits = (v >> layout_dim_offset(L, k)) & ((1u << L->dimbits[k]) - 1);
        out |= bits << layout_dim_offset(Lx, k);
    }
    return out;
}

static void regmap(Cg *cg, IrOp *op, bool broadcast)
{
    IrVal res = ir_res(op, 0), x = ir_opnd(cg->f, op, 0);
    const Layout *L = cg_layout(cg, res), *Lx = cg_layout(cg, x);
    uint32_t n = layout_nregs(L);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    if (!Lx) { /* a scalar operand */
        for (uint32_t r = 0; r < n; r++) out[r] = cg_reg(cg, x, 0);
        cg_define(cg, res, out, n);
        return;
    }
    /* the operand's flat index of a result element: the bits of broadcast
     * dims dropped, the kept dims' bits moved to the operand's offsets (for
     * EXPAND_DIMS and RESHAPE the flat index is the same) */
    IrType rt = ir_vty(cg->f, res), xt = ir_vty(cg->f, x);
    uint32_t keep = 0xffffffffu;
    if (broadcast) {
        keep = 0;
        for (int k = 0; k < rt.rank; k++)
            if (xt.dims[k] == rt.dims[k]) keep |= ((1u << L->dimbits[k]) - 1) << layout_dim_offset(L, k);
    }
    /* lanes and warps must place the same elements; each result register then
     * repeats the operand register holding its element (the operand may hold
     * it once where the result replicates it: layout_compact_regs) */
    bool same_threads = true;
    for (int k = LL_LANE; k < LL_NIN && same_threads; k++) {
        same_threads = Lx->nbits[k] == L->nbits[k];
        for (int i = 0; i < L->nbits[k] && same_threads; i++)
            same_threads = to_operand_flat(L, Lx, rt, xt, broadcast, L->basis[k][i]) == Lx->basis[k][i];
    }
    uint32_t *src = ARENA_ARRAY(cg->scratch, uint32_t, n), nx = layout_nregs(Lx);
    for (uint32_t r = 0; r < n && same_threads; r++) {
        uint32_t want = to_operand_flat(L, Lx, rt, xt, broadcast, layout_apply(L, r, 0, 0)), k = 0;
        if (r < nx && layout_apply(Lx, r, 0, 0) == want) k = r; /* the usual case: the same register */
        else
            while (k < nx && layout_apply(Lx, k, 0, 0) != want) k++;
        same_threads = k < nx;
        src[r] = k;
    }
    if (!same_threads && cg->free_[res]) {
        /* a free value: built in the result's layout from its expression */
        RematMemo *memo = NULL;
        remat(cg, res, L, out, &memo);
        cg_define(cg, res, out, n);
        return;
    }
    if (!same_threads) {
        /* go through the canonical path: materialise the operand in the
         * result's thread mapping by a shared-memory round trip */
        cg_convert_layout_bcast(cg, x, L, keep, out);
        cg_define(cg, res, out, n);
        return;
    }
    for (uint32_t r = 0; r < n; r++) out[r] = cg_reg(cg, x, src[r]);
    cg_define(cg, res, out, n);
}

void cg_lower_BROADCAST(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; regmap(cg, op, true); }
void cg_lower_EXPAND_DIMS(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; regmap(cg, op, false); }
void cg_lower_RESHAPE(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; regmap(cg, op, false); }

void cg_lower_CONVERT_LAYOUT(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrVal res = ir_res(op, 0);
    const Layout *L = cg_layout(cg, res);
    uint32_t n = layout_nregs(L);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    cg_value_as(cg, ir_opnd(cg->f, op, 0), L, out);
    cg_define(cg, res, out, n);
}

void cg_lower_TRANS(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrVal res = ir_res(op, 0);
    const Layout *L = cg_layout(cg, res);
    uint32_t n = layout_nregs(L);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    cg_transpose(cg, ir_opnd(cg->f, op, 0), op->attr.shape, L, out);
    cg_define(cg, res, out, n);
}

/* ---- program and view queries ----------------------------------------------- */

static const char *const ctaid[3] = {"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
                                     "llvm.nvvm.read.ptx.sreg.ctaid.z"};
static const char *const nctaid[3] = {"llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y",
                                      "llvm.nvvm.read.ptx.sreg.nctaid.z"};

void cg_lower_PROGRAM_ID(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    LLVMValueRef v = sreg(cg, ctaid[op->attr.i]);
    cg_define(cg, ir_res(op, 0), &v, 1);
}

void cg_lower_NUM_PROGRAMS(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    LLVMValueRef v = sreg(cg, nctaid[op->attr.i]);
    cg_define(cg, ir_res(op, 0), &v, 1);
}

void cg_lower_VIEW_PTR(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    LLVMValueRef v = cg_val(cg, ir_opnd(cg->f, op, 0))->ptr;
    cg_define(cg, ir_res(op, 0), &v, 1);
}

void cg_lower_VIEW_SHAPE(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    LLVMValueRef v = cg_val(cg, ir_opnd(cg->f, op, 0))->shape[op->attr.i];
    cg_define(cg, ir_res(op, 0), &v, 1);
}

void cg_lower_VIEW_STRIDE(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    LLVMValueRef v = cg_val(cg, ir_opnd(cg->f, op, 0))->stride[op->attr.i];
    cg_define(cg, ir_res(op, 0), &v, 1);
}

void cg_lower_NUM_SMS(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    LLVMValueRef v = sreg(cg, "llvm.nvvm.read.ptx.sreg.nsmid");
    cg_define(cg, ir_res(op, 0), &v, 1);
}

/* ---- structured control flow ------------------------------------------------ */

static const CgHook hooks[IR_NUM_OPS] = {
#define OP(id, name, mino, maxo, nres, nreg, flags, layout) [IR_##id] = cg_lower_##id,
#include "../ir/ops.def"
#undef OP
};

static void set_loc(Cg *cg, SrcLoc loc)
{
    if (!cg->di || !loc.line) return;
    LLVMMetadataRef l = LLVMDIBuilderCreateDebugLocation(cg->ctx, loc.line, loc.col, cg->di_sp, NULL);
    LLVMSetCurrentDebugLocation2(cg->b, l);
}

/* Lowers every op of block b but its terminator; returns the terminator's id. */
static uint32_t lower_block(Cg *cg, IrBlk blk)
{
    IrBlock *B = ir_blk(cg->f, blk);
    for (uint32_t i = 0; i < B->nops; i++) {
        uint32_t id = B->ops[i];
        IrOp *op = ir_op(cg->f, id);
        if (ir_opinfo[op->opc].flags & IR_TERM) return id;
        set_loc(cg, op->loc);
        cg->loc = op->loc;
        if (op->nregion) cg->wg_epoch = cg->wg_seq; /* groups its regions may or may not commit */
        hooks[op->opc](cg, id, op);
        if (op->nregion) cg->wg_epoch = cg->wg_seq;
        if (cg->failed) return UINT32_MAX;
    }
    tl_fatal("codegen", "block %u of %s has no terminator", blk, cg->f->name);
}

/* Registers of value v seen in the layout of value `as` (loop-carried values
 * keep one layout; the layout pass guarantees it, convert otherwise). */
static LLVMValueRef *regs_as(Cg *cg, IrVal v, IrVal as)
{
    const Layout *L = cg_layout(cg, as), *Lv = cg_layout(cg, v);
    uint32_t n = nregs_of(cg, as);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    if (L && Lv && !layout_eq(L, Lv)) {
        cg_value_as(cg, v, L, out);
        return out;
    }
    for (uint32_t r = 0; r < n; r++) out[r] = cg_reg(cg, v, r);
    return out;
}

/* The register bits of v's layout that replicate (zero bases): registers r and
 * r & ~mask hold the same element, so they are one value. */
static uint32_t rep_regs(Cg *cg, IrVal v)
{
    const Layout *L = cg_layout(cg, v);
    return L ? layout_replicated(L, LL_REG) : 0;
}

/* The phis of one value.  One phi per distinct register: a replicated register
 * (rep_regs) shares the phi of the register it repeats, so a loop-carried row
 * vector of an mma layout (attention's running maximum and denominator) is 2
 * values a thread, not one per accumulator column, and what is computed from it
 * LLVM computes once.  8-bit values (i8, u8, fp8) travel four to a 32-bit phi
 * (`words`): NVPTX has no 8-bit registers, so an i8 phi takes a 32-bit register
 * of its own, and a [64, 128] fp8 tile carried a block ahead took 64 registers a
 * thread instead of 16 (paged_attn_decode on an FP8 cache spilled 1.1 KB where
 * the bf16 cache spilled 64 B).  The phi block unpacks the words after its phis
 * (regs), each incoming block packs them before its terminator, and LLVM folds a
 * pack of an unpack away. */
typedef struct Phis {
    LLVMValueRef *regs;  /* per register: its phi, or (packed) its byte unpacked from a word */
    LLVMValueRef *words; /* packed: one i32 phi per 4 distinct registers, in register order */
    uint32_t *slot;      /* packed: distinct register r's place among them (word slot / 4) */
    uint32_t nwords;
} Phis;

static Phis *make_phis(Cg *cg, const IrVal *like, uint32_t n)
{
    Phis *phis = ARENA_ARRAY(cg->scratch, Phis, n ? n : 1);
    for (uint32_t i = 0; i < n; i++) { /* every phi first: they lead their block */
        Phis *p = &phis[i];
        uint32_t nr = nregs_of(cg, like[i]), rep = rep_regs(cg, like[i]);
        LLVMTypeRef t = cg_elem_type(cg, ir_vty(cg->f, like[i]));
        p->regs = ARENA_ARRAY(cg->scratch, LLVMValueRef, nr ? nr : 1);
        p->words = NULL;
        p->nwords = 0;
        if (t == cg->i8) {
            p->slot = ARENA_ARRAY(cg->scratch, uint32_t, nr ? nr : 1);
            uint32_t nd = 0;
            for (uint32_t r = 0; r < nr; r++)
                if (!(r & rep)) p->slot[r] = nd++;
            p->nwords = (nd + 3) / 4;
            p->words = ARENA_ARRAY(cg->scratch, LLVMValueRef, p->nwords ? p->nwords : 1);
            for (uint32_t w = 0; w < p->nwords; w++) p->words[w] = LLVMBuildPhi(cg->b, cg->i32, "");
            continue;
        }
        for (uint32_t r = 0; r < nr; r++) p->regs[r] = (r & rep) ? p->regs[r & ~rep] : LLVMBuildPhi(cg->b, t, "");
    }
    for (uint32_t i = 0; i < n; i++) {
        Phis *p = &phis[i];
        if (!p->words) continue;
        uint32_t nr = nregs_of(cg, like[i]), rep = rep_regs(cg, like[i]);
        for (uint32_t r = 0; r < nr; r++) {
            if (r & rep) {
                p->regs[r] = p->regs[r & ~rep];
                continue;
            }
            LLVMValueRef w = LLVMBuildBitCast(cg->b, p->words[p->slot[r] / 4], LLVMVectorType(cg->i8, 4), "");
            p->regs[r] = LLVMBuildExtractElement(cg->b, w, LLVMConstInt(cg->i32, p->slot[r] % 4, 0), "");
        }
    }
    return phis;
}

/* The i32 whose bytes b[0..3] are, in order, when they were extracted from one
 * (a word, or a vector of words, seen as bytes: make_phis' unpacking and a load's
 * words_to_elems), else NULL.  Packing them again is then that word: LLVM does
 * not always fold an insert chain of extracts back. */
static LLVMValueRef word_of_bytes(Cg *cg, LLVMValueRef *b)
{
    LLVMValueRef vec = NULL;
    unsigned long long base = 0;
    for (int j = 0; j < 4; j++) {
        if (!b[j] || !LLVMIsAInstruction(b[j]) || LLVMGetInstructionOpcode(b[j]) != LLVMExtractElement) return NULL;
        LLVMValueRef v = LLVMGetOperand(b[j], 0), idx = LLVMGetOperand(b[j], 1);
        if (!LLVMIsAConstantInt(idx)) return NULL;
        unsigned long long i = LLVMConstIntGetZExtValue(idx);
        if (j == 0) {
            vec = v;
            base = i;
            if (base % 4) return NULL;
        } else if (v != vec || i != base + (unsigned long long)j)
            return NULL;
    }
    if (!LLVMIsAInstruction(vec) || LLVMGetInstructionOpcode(vec) != LLVMBitCast) return NULL;
    LLVMValueRef src = LLVMGetOperand(vec, 0);
    LLVMTypeRef st = LLVMTypeOf(src);
    if (st == cg->i32) return base == 0 ? src : NULL;
    if (LLVMGetTypeKind(st) != LLVMVectorTypeKind || LLVMGetElementType(st) != cg->i32) return NULL;
    return LLVMBuildExtractElement(cg->b, src, LLVMConstInt(cg->i32, base / 4, 0), "");
}

/* The builder at the end of `bb`, before its terminator if it has one. */
static void position_before_end(Cg *cg, LLVMBasicBlockRef bb)
{
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
    if (t)
        LLVMPositionBuilderBefore(cg->b, t);
    else
        LLVMPositionBuilderAtEnd(cg->b, bb);
}

/* Register r of each distinct phi of value `like` gets in[k][r] from from[k], k < nin
 * (packed phis: the words, packed in from[k]; the builder ends where it was, at the
 * end of its block). */
static void add_phi_in(Cg *cg, Phis *p, IrVal like, LLVMValueRef *const *in, LLVMBasicBlockRef *from, uint32_t nin)
{
    uint32_t rep = rep_regs(cg, like), nr = nregs_of(cg, like);
    LLVMValueRef v[2];
    if (!p->words) {
        for (uint32_t r = 0; r < nr; r++) {
            if (r & rep) continue;
            for (uint32_t k = 0; k < nin; k++) v[k] = in[k][r];
            LLVMAddIncoming(p->regs[r], v, from, nin);
        }
        return;
    }
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(cg->b);
    LLVMValueRef *words = ARENA_ARRAY(cg->scratch, LLVMValueRef, 2 * (size_t)p->nwords);
    for (uint32_t k = 0; k < nin; k++) {
        position_before_end(cg, from[k]);
        LLVMValueRef *wk = &words[k * p->nwords];
        /* as <4 x i8> vectors: LLVM folds inserts of a loaded word's extracted bytes back
         * into the word (shifts and ors it does not) */
        for (uint32_t w = 0; w < p->nwords; w++) wk[w] = LLVMConstNull(LLVMVectorType(cg->i8, 4));
        for (uint32_t r = 0; r < nr; r++) {
            if (r & rep) continue;
            uint32_t s = p->slot[r];
            wk[s / 4] = LLVMBuildInsertElement(cg->b, wk[s / 4], in[k][r], LLVMConstInt(cg->i32, s % 4, 0), "");
        }
        for (uint32_t w = 0; w < p->nwords; w++) {
            LLVMValueRef bytes[4] = {NULL, NULL, NULL, NULL};
            for (uint32_t r = 0; r < nr; r++)
                if (!(r & rep) && p->slot[r] / 4 == w) bytes[p->slot[r] % 4] = in[k][r];
            LLVMValueRef same = word_of_bytes(cg, bytes);
            wk[w] = same ? same : LLVMBuildBitCast(cg->b, wk[w], cg->i32, "");
        }
    }
    LLVMPositionBuilderAtEnd(cg->b, cur);
    for (uint32_t w = 0; w < p->nwords; w++) {
        for (uint32_t k = 0; k < nin; k++) v[k] = words[k * p->nwords + w];
        LLVMAddIncoming(p->words[w], v, from, nin);
    }
}

/* Adds the values `from` (converted to the layouts of `like`) as incoming from
 * the current block; conversions may open new blocks, so the block is taken after. */
static void add_incoming(Cg *cg, Phis *phis, const IrVal *like, const IrVal *from, uint32_t n)
{
    LLVMValueRef **regs = ARENA_ARRAY(cg->scratch, LLVMValueRef *, n ? n : 1);
    for (uint32_t i = 0; i < n; i++) regs[i] = regs_as(cg, from[i], like[i]);
    LLVMBasicBlockRef bb = LLVMGetInsertBlock(cg->b);
    for (uint32_t i = 0; i < n; i++) add_phi_in(cg, &phis[i], like[i], &regs[i], &bb, 1);
}

static void define_from_phis(Cg *cg, const IrVal *vals, Phis *phis, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) cg_define(cg, vals[i], phis[i].regs, nregs_of(cg, vals[i]));
}

static IrVal *opnd_list(Cg *cg, IrOp *op, uint32_t from)
{
    return &cg->f->opnds[op->opnd + from];
}

void cg_lower_FOR(Cg *cg, uint32_t opid, IrOp *op)
{
    IrFunc *f = cg->f;
    IrBlock *body = ir_blk(f, op->region[0]);
    uint32_t nc = op->nres;
    IrVal *inits = opnd_list(cg, op, 3), *args = &body->args[1];
    LLVMValueRef lb = cg_reg(cg, ir_opnd(f, op, 0), 0), ub = cg_reg(cg, ir_opnd(f, op, 1), 0);
    LLVMValueRef step = cg_reg(cg, ir_opnd(f, op, 2), 0);
    DType it = (DType)ir_vty(f, body->args[0]).dt;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "for.head");
    LLVMBasicBlockRef bodyb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "for.body");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "for.exit");
    LLVMValueRef **init_regs = ARENA_ARRAY(cg->scratch, LLVMValueRef *, nc ? nc : 1);
    for (uint32_t i = 0; i < nc; i++) init_regs[i] = regs_as(cg, inits[i], args[i]);
    if (cg->pp_first == UINT32_MAX && cg_pingpong_plan(cg, opid)) {
        /* warpgroup 1 hands warpgroup 0 the first turn (bar.arrive 2) */
        LLVMValueRef wg = LLVMBuildLShr(cg->b, cg->warp, LLVMConstInt(cg->i32, 2, 0), "");
        cg_inline_asm(cg, cg->vd, "{\n.reg .pred p;\nsetp.eq.u32 p, $0, 1;\n@p bar.arrive 2, 256;\n}",
                      "r,~{memory}", &wg, 1, true);
    }
    pre = loop_enter(cg, opid, head);

    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMValueRef iv = LLVMBuildPhi(cg->b, LLVMTypeOf(lb), "iv");
    LLVMAddIncoming(iv, &lb, &pre, 1);
    Phis *phis = make_phis(cg, args, nc);
    for (uint32_t i = 0; i < nc; i++) add_phi_in(cg, &phis[i], args[i], &init_regs[i], &pre, 1);
    /* the loop runs while iv < ub for a positive step, iv > ub for a negative one */
    bool sg = dt_is_signed(it);
    LLVMValueRef zero = LLVMConstInt(LLVMTypeOf(lb), 0, 0);
    LLVMValueRef up = sg ? LLVMBuildICmp(cg->b, LLVMIntSGT, step, zero, "") : LLVMConstInt(cg->i1, 1, 0);
    LLVMValueRef lt = LLVMBuildICmp(cg->b, sg ? LLVMIntSLT : LLVMIntULT, iv, ub, "");
    LLVMValueRef gt = LLVMBuildICmp(cg->b, sg ? LLVMIntSGT : LLVMIntUGT, iv, ub, "");
    LLVMValueRef go = LLVMBuildSelect(cg->b, up, lt, gt, "");
    LLVMBuildCondBr(cg->b, go, bodyb, exit);

    LLVMPositionBuilderAtEnd(cg->b, bodyb);
    cg_define(cg, body->args[0], &iv, 1);
    define_from_phis(cg, args, phis, nc);
    uint32_t term = lower_block(cg, op->region[0]);
    if (term == UINT32_MAX) {
        loop_leave(cg, pre);
        return;
    }
    IrOp *y = ir_op(f, term);
    /* yielded registers, converted to the carried layouts (may open blocks) */
    LLVMValueRef **yregs = ARENA_ARRAY(cg->scratch, LLVMValueRef *, nc ? nc : 1);
    for (uint32_t i = 0; i < nc; i++) yregs[i] = regs_as(cg, opnd_list(cg, y, 0)[i], args[i]);
    loop_leave(cg, pre);
    /* like the interpreter, a loop whose next index would leave its type stops */
    char ovname[64];
    const char *tn = LLVMTypeOf(lb) == cg->i64 ? "i64" : LLVMTypeOf(lb) == cg->i32 ? "i32"
                   : LLVMTypeOf(lb) == cg->i16 ? "i16" : "i8";
    snprintf(ovname, sizeof ovname, "llvm.%s.with.overflow.%s", sg ? "sadd" : "uadd", tn);
    LLVMValueRef ovargs[2] = {iv, step};
    LLVMTypeRef ovt[2] = {LLVMTypeOf(lb), cg->i1};
    LLVMValueRef ov = cg_call_intrinsic(cg, ovname, LLVMStructTypeInContext(cg->ctx, ovt, 2, 0), ovargs, 2);
    LLVMValueRef next = LLVMBuildExtractValue(cg->b, ov, 0, "iv.next");
    LLVMValueRef wrapped = LLVMBuildExtractValue(cg->b, ov, 1, "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    for (uint32_t i = 0; i < nc; i++) add_phi_in(cg, &phis[i], args[i], &yregs[i], &latch, 1);
    LLVMAddIncoming(iv, &next, &latch, 1);
    LLVMBuildCondBr(cg->b, wrapped, exit, head);

    /* results: the carried values when the test fails, the yielded ones on overflow */
    LLVMPositionBuilderAtEnd(cg->b, exit);
    IrVal *res = ARENA_ARRAY(cg->scratch, IrVal, nc ? nc : 1);
    for (uint32_t i = 0; i < nc; i++) res[i] = ir_res(op, i);
    Phis *rphis = make_phis(cg, res, nc);
    for (uint32_t i = 0; i < nc; i++) {
        LLVMValueRef *in[2] = {phis[i].regs, yregs[i]};
        LLVMBasicBlockRef from[2] = {head, latch};
        add_phi_in(cg, &rphis[i], res[i], in, from, 2);
    }
    define_from_phis(cg, res, rphis, nc);
}

/* The IF on PRODUCER_WARP (passes/warp_specialize.c): the producer warpgroup
 * gives registers back (setmaxnreg.dec, all four warps), then its first warp runs
 * the then-branch, lane 0 issuing the copies (elect_tid), and every producer
 * thread returns: it never reaches the consumers' code, whose barriers count the
 * consumers only from here on (ws_split).  The consumers take the registers
 * (setmaxnreg.inc) and run the else-branch (empty) and the rest of the kernel. */
static void lower_producer_if(Cg *cg, IrOp *op)
{
    LLVMValueRef W = LLVMConstInt(cg->i32, (unsigned)cg->warps, 0);
    LLVMValueRef is_p = LLVMBuildICmp(cg->b, LLVMIntUGE, cg->warp, W, "producer");
    LLVMBasicBlockRef prod = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "producer");
    LLVMBasicBlockRef issue = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "producer.warp");
    LLVMBasicBlockRef leave = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "producer.exit");
    LLVMBasicBlockRef cons = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "consumer");
    LLVMBuildCondBr(cg->b, is_p, prod, cons);
    char text[64];
    LLVMPositionBuilderAtEnd(cg->b, prod);
    if (cg->ws_regs_producer) {
        snprintf(text, sizeof text, "setmaxnreg.dec.sync.aligned.u32 %d;", cg->ws_regs_producer);
        cg_asm_void(cg, text);
    }
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->warp, W, ""), issue, leave);
    LLVMPositionBuilderAtEnd(cg->b, issue);
    cg->elect_tid = 32u * (uint32_t)cg->warps;
    uint32_t term = lower_block(cg, op->region[0]);
    cg->elect_tid = 0;
    if (term == UINT32_MAX) return;
    LLVMBuildBr(cg->b, leave);
    LLVMPositionBuilderAtEnd(cg->b, leave);
    LLVMBuildRetVoid(cg->b);
    LLVMPositionBuilderAtEnd(cg->b, cons);
    cg->ws_split = true;
    if (cg->ws_regs_consumer) {
        snprintf(text, sizeof text, "setmaxnreg.inc.sync.aligned.u32 %d;", cg->ws_regs_consumer);
        cg_asm_void(cg, text);
    }
    lower_block(cg, op->region[1]);
}

void cg_lower_IF(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    uint32_t cd = ir_def(f, ir_opnd(f, op, 0));
    if (cd != UINT32_MAX && ir_op(f, cd)->opc == IR_PRODUCER_WARP) {
        lower_producer_if(cg, op);
        return;
    }
    uint32_t nr = op->nres;
    IrVal *res = ARENA_ARRAY(cg->scratch, IrVal, nr ? nr : 1);
    for (uint32_t i = 0; i < nr; i++) res[i] = ir_res(op, i);
    LLVMValueRef c = cg_reg(cg, ir_opnd(f, op, 0), 0);
    if (LLVMTypeOf(c) != cg->i1) c = LLVMBuildICmp(cg->b, LLVMIntNE, c, LLVMConstInt(LLVMTypeOf(c), 0, 0), "");
    LLVMBasicBlockRef thenb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "if.then");
    LLVMBasicBlockRef elseb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "if.else");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "if.end");
    LLVMBuildCondBr(cg->b, c, thenb, elseb);
    LLVMBasicBlockRef from[2];
    LLVMValueRef **vals[2];
    LLVMBasicBlockRef bbs[2] = {thenb, elseb};
    for (int k = 0; k < 2; k++) {
        LLVMPositionBuilderAtEnd(cg->b, bbs[k]);
        uint32_t term = lower_block(cg, op->region[k]);
        if (term == UINT32_MAX) return;
        IrOp *y = ir_op(f, term);
        vals[k] = ARENA_ARRAY(cg->scratch, LLVMValueRef *, nr ? nr : 1);
        for (uint32_t i = 0; i < nr; i++) vals[k][i] = regs_as(cg, ir_opnd(f, y, i), res[i]);
        from[k] = LLVMGetInsertBlock(cg->b);
        LLVMBuildBr(cg->b, join);
    }
    LLVMPositionBuilderAtEnd(cg->b, join);
    Phis *phis = make_phis(cg, res, nr);
    for (uint32_t i = 0; i < nr; i++) {
        LLVMValueRef *in[2] = {vals[0][i], vals[1][i]};
        add_phi_in(cg, &phis[i], res[i], in, from, 2);
    }
    define_from_phis(cg, res, phis, nr);
}

void cg_lower_WHILE(Cg *cg, uint32_t opid, IrOp *op)
{
    IrFunc *f = cg->f;
    IrBlock *before = ir_blk(f, op->region[0]), *after = ir_blk(f, op->region[1]);
    uint32_t nc = before->nargs, nr = op->nres;
    LLVMValueRef **init_regs = ARENA_ARRAY(cg->scratch, LLVMValueRef *, nc ? nc : 1);
    for (uint32_t i = 0; i < nc; i++) init_regs[i] = regs_as(cg, ir_opnd(f, op, i), before->args[i]);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "while.cond");
    LLVMBasicBlockRef bodyb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "while.body");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "while.exit");
    LLVMBasicBlockRef pre = loop_enter(cg, opid, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    Phis *phis = make_phis(cg, before->args, nc);
    for (uint32_t i = 0; i < nc; i++) add_phi_in(cg, &phis[i], before->args[i], &init_regs[i], &pre, 1);
    define_from_phis(cg, before->args, phis, nc);
    uint32_t term = lower_block(cg, op->region[0]);
    if (term == UINT32_MAX) {
        loop_leave(cg, pre);
        return;
    }
    IrOp *cond = ir_op(f, term);
    LLVMValueRef c = cg_reg(cg, ir_opnd(f, cond, 0), 0);
    if (LLVMTypeOf(c) != cg->i1) c = LLVMBuildICmp(cg->b, LLVMIntNE, c, LLVMConstInt(LLVMTypeOf(c), 0, 0), "");
    /* the values CONDITION forwards become the body's arguments and the results */
    IrVal *fwd = opnd_list(cg, cond, 1);
    for (uint32_t i = 0; i < nr; i++) {
        LLVMValueRef *regs = regs_as(cg, fwd[i], ir_res(op, i));
        cg_define(cg, ir_res(op, i), regs, nregs_of(cg, ir_res(op, i)));
        cg_define(cg, after->args[i], regs_as(cg, fwd[i], after->args[i]), nregs_of(cg, after->args[i]));
    }
    LLVMBuildCondBr(cg->b, c, bodyb, exit);
    LLVMPositionBuilderAtEnd(cg->b, bodyb);
    term = lower_block(cg, op->region[1]);
    if (term == UINT32_MAX) {
        loop_leave(cg, pre);
        return;
    }
    add_incoming(cg, phis, before->args, opnd_list(cg, ir_op(f, term), 0), nc);
    loop_leave(cg, pre);
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, exit);
}

/* Terminators are consumed by their parents (lower_block stops at them). */
void cg_lower_YIELD(Cg *cg, uint32_t opid, IrOp *op) { (void)cg; (void)opid; (void)op; tl_fatal("codegen", "stray yield"); }
void cg_lower_CONDITION(Cg *cg, uint32_t opid, IrOp *op) { (void)cg; (void)opid; (void)op; tl_fatal("codegen", "stray condition"); }
void cg_lower_RETURN(Cg *cg, uint32_t opid, IrOp *op) { (void)cg; (void)opid; (void)op; tl_fatal("codegen", "stray return"); }

/* ---- the kernel --------------------------------------------------------------- */

static void add_annotation(Cg *cg, const char *key, int val)
{
    LLVMValueRef md[3] = {cg->fn, LLVMMDStringInContext(cg->ctx, key, (unsigned)strlen(key)),
                          LLVMConstInt(cg->i32, (unsigned)val, 0)};
    LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations", LLVMMDNodeInContext(cg->ctx, md, 3));
}

static void init_types(Cg *cg)
{
    LLVMContextRef c = cg->ctx;
    cg->i1 = LLVMInt1TypeInContext(c);
    cg->i8 = LLVMInt8TypeInContext(c);
    cg->i16 = LLVMInt16TypeInContext(c);
    cg->i32 = LLVMInt32TypeInContext(c);
    cg->i64 = LLVMInt64TypeInContext(c);
    cg->f16 = LLVMHalfTypeInContext(c);
    cg->bf16 = LLVMBFloatTypeInContext(c);
    cg->f32 = LLVMFloatTypeInContext(c);
    cg->f64 = LLVMDoubleTypeInContext(c);
    cg->vd = LLVMVoidTypeInContext(c);
    cg->gptr = LLVMPointerTypeInContext(c, 1);
    cg->sptr = LLVMPointerTypeInContext(c, 3);
}

static void init_debug(Cg *cg, const char *file)
{
    cg->di = LLVMCreateDIBuilder(cg->mod);
    const char *base = strrchr(file, '/');
    const char *name = base ? base + 1 : file;
    size_t dirlen = base ? (size_t)(base - file) : 1;
    const char *dir = base ? file : ".";
    cg->di_file = LLVMDIBuilderCreateFile(cg->di, name, strlen(name), dir, dirlen);
    /* Emission kind 3 is LLVM's DebugDirectivesOnly (not in the C enum): .loc
     * lines without the `.target ..., debug` that would make ptxas refuse -O3. */
    LLVMDIBuilderCreateCompileUnit(cg->di, LLVMDWARFSourceLanguageC, cg->di_file, "tilec", 5, 1, "", 0, 0, "", 0,
                                   (LLVMDWARFEmissionKind)3, 0, 0, 0, "", 0, "", 0);
    LLVMMetadataRef sty = LLVMDIBuilderCreateSubroutineType(cg->di, cg->di_file, NULL, 0, LLVMDIFlagZero);
    const char *fname = LLVMGetValueName(cg->fn);
    cg->di_sp = LLVMDIBuilderCreateFunction(cg->di, cg->di_file, fname, strlen(fname), fname, strlen(fname),
                                            cg->di_file, cg->f->loc.line, sty, 0, 1, cg->f->loc.line,
                                            LLVMDIFlagZero, 1);
    LLVMSetSubprogram(cg->fn, cg->di_sp);
    if (!LLVMGetModuleFlag(cg->mod, "Debug Info Version", 18)) /* once per module */
        LLVMAddModuleFlag(cg->mod, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                          LLVMValueAsMetadata(LLVMConstInt(cg->i32, LLVMDebugMetadataVersion(), 0)));
}

/* Marks the byval descriptor parameters grid_constant (1-based indices), so that
 * their generic address is the parameter itself (cvta.param), with no local copy. */
static void add_grid_constants(Cg *cg, const unsigned *idx, unsigned n)
{
    LLVMValueRef *v = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    for (unsigned i = 0; i < n; i++) v[i] = LLVMConstInt(cg->i32, idx[i] + 1, 0);
    const char *key = "grid_constant";
    LLVMValueRef md[3] = {cg->fn, LLVMMDStringInContext(cg->ctx, key, (unsigned)strlen(key)),
                          LLVMMDNodeInContext(cg->ctx, v, n)};
    LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations", LLVMMDNodeInContext(cg->ctx, md, 3));
}

/* A warp-specialized kernel: its consumers are whole warpgroups (ws_plan), and
 * the register split (cg_ws_registers, lower_int.h). */
void cg_ws_registers(int warps, int *producer, int *consumer)
{
    ir_ws_registers(warps, producer, consumer);
}

static bool ws_plan(Cg *cg)
{
    if (cg->warps % 4 != 0 || cg->warps + 4 > 32) {
        diag_error(cg->d, cg->f->loc, "'%s': warp_specialize needs whole consumer warpgroups (a multiple of 4 warps, "
                   "at most 28), and the kernel has %d warps", cg->f->source_name, cg->warps);
        return false;
    }
    if (!ir_target_has(cg->target->arch, IR_TGT_WGMMA)) {
        diag_error(cg->d, cg->f->loc, "'%s': warp_specialize needs sm_90a (setmaxnreg, TMA, wgmma), compiling for %s",
                   cg->f->source_name, cg->target->arch->name);
        return false;
    }
    cg_ws_registers(cg->warps, &cg->ws_regs_producer, &cg->ws_regs_consumer);
    return true;
}

bool cg_lower_func(IrFunc *f, const CgTarget *t, void *llvm_ctx, void *llvm_mod, Arena *scratch,
                   CgKernelFacts *facts, Diag *d)
{
    Cg cgs, *cg = &cgs;
    memset(cg, 0, sizeof *cg);
    cg->f = f;
    cg->target = t;
    cg->d = d;
    cg->scratch = scratch;
    cg->ctx = llvm_ctx;
    cg->mod = llvm_mod;
    cg->warps = f->warps ? f->warps : 4;
    cg->pp_first = cg->pp_last = UINT32_MAX;
    init_types(cg);
    cg->vals = ARENA_ARRAY(scratch, CgVal, f->nvals);
    /* division inline only where a call would serialize wgmma (C7509): in a
     * kernel whose dots lower to wgmma.  Elsewhere div.s64 and div.rn.f32 stay
     * ptxas's subroutines: an inline 64-bit division per element of a tile is a
     * loop each, and many of them cost ptxas seconds (paged_attn_decode: 12 s) */
    for (uint32_t i = 0; i < f->nops && ir_target_has(t->arch, IR_TGT_WGMMA) && !cg->inline_fdiv; i++) {
        IrOp *o = &f->ops[i];
        if (o->dead || o->opc != IR_DOT) continue;
        DotPlan plan;
        layout_dot_plan(ir_vty(f, ir_opnd(f, o, 0)), ir_vty(f, ir_opnd(f, o, 1)), ir_vty(f, ir_res(o, 0)), cg->warps,
                        f->mod ? f->mod->target : NULL, &plan);
        cg->inline_fdiv = plan.instr == LL_DOT_WGMMA;
    }
    cg->free_ = ARENA_ARRAY(scratch, uint8_t, f->nvals);
    ir_free_values(f, cg->free_);

    memset(facts, 0, sizeof *facts);
    for (uint32_t i = 0; i < f->nops; i++) cg->ws |= !f->ops[i].dead && f->ops[i].opc == IR_PRODUCER_WARP;
    if (cg->ws && !ws_plan(cg)) return false;
    facts->warps = cg->warps + (cg->ws ? 4 : 0);

    /* 1. the signature: views expand to pointer, shape[N], stride[N], descriptors */
    if (!cg_async_plan(cg)) return false;
    LLVMTypeRef *pt = NULL;
    uint32_t np = 0, pcap = 0;
    unsigned *desc_idx = ARENA_ARRAY(scratch, unsigned, cg->ntma ? cg->ntma : 1);
    for (uint32_t i = 0; i < f->nparams; i++) {
        IrType ty = f->params[i].ty;
        if (ty.kind == TY_VIEW) {
            VEC_PUSH(pt, np, pcap, cg->gptr);
            for (int k = 0; k < 2 * ty.rank; k++) VEC_PUSH(pt, np, pcap, cg->i64);
            for (uint32_t j = 0; j < cg->ntma; j++) {
                if (cg->tma[j].param != i) continue;
                desc_idx[j] = np;
                VEC_PUSH(pt, np, pcap, LLVMPointerTypeInContext(cg->ctx, 0));
            }
        } else {
            VEC_PUSH(pt, np, pcap, cg_elem_type(cg, ty));
        }
    }
    LLVMTypeRef fty = LLVMFunctionType(cg->vd, pt, np, 0);
    free(pt);
    cg->fn = LLVMAddFunction(cg->mod, f->name, fty);
    LLVMSetFunctionCallConv(cg->fn, 71 /* PTX_Kernel */);
    add_annotation(cg, "kernel", 1);
    add_annotation(cg, "maxntidx", 32 * facts->warps);
    if (cg->ntma) {
        /* each descriptor: .param .align 64 .b8 NAME[128], passed by value */
        LLVMAttributeRef by = LLVMCreateTypeAttribute(cg->ctx, LLVMGetEnumAttributeKindForName("byval", 5),
                                                      LLVMArrayType(cg->i8, 128));
        LLVMAttributeRef al = LLVMCreateEnumAttribute(cg->ctx, LLVMGetEnumAttributeKindForName("align", 5), 64);
        cg->tma_param = ARENA_ARRAY(scratch, LLVMValueRef, cg->ntma);
        for (uint32_t j = 0; j < cg->ntma; j++) {
            LLVMAddAttributeAtIndex(cg->fn, desc_idx[j] + 1, by);
            LLVMAddAttributeAtIndex(cg->fn, desc_idx[j] + 1, al);
            cg->tma_param[j] = LLVMGetParam(cg->fn, desc_idx[j]);
        }
        add_grid_constants(cg, desc_idx, cg->ntma);
    }
    CgOccupancy occ;
    int min_ctas = cg_min_ctas(f, t->arch, facts->warps, &occ);
    if (min_ctas > 1 && !cg->ws) add_annotation(cg, "minctasm", min_ctas); /* specialized: one CTA an SM */
    cg->b = LLVMCreateBuilderInContext(cg->ctx);
    if (t->lineinfo) init_debug(cg, f->mod->file);
    LLVMPositionBuilderAtEnd(cg->b, LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "entry"));
    set_loc(cg, f->loc);

    /* 2. thread indices and the shared-memory scratch area */
    cg->tid = sreg(cg, "llvm.nvvm.read.ptx.sreg.tid.x");
    cg->lane = LLVMBuildAnd(cg->b, cg->tid, LLVMConstInt(cg->i32, 31, 0), "lane");
    cg->warp = LLVMBuildLShr(cg->b, cg->tid, LLVMConstInt(cg->i32, 5, 0), "warp");
    LLVMValueRef sm = LLVMGetNamedGlobal(cg->mod, "__tilec_smem");
    if (!sm) {
        sm = LLVMAddGlobalInAddressSpace(cg->mod, LLVMArrayType(cg->i8, 0), "__tilec_smem", 3);
        LLVMSetLinkage(sm, LLVMExternalLinkage);
        LLVMSetAlignment(sm, 128);
    }
    cg->smem = sm;
    cg_async_entry(cg);

    /* parameters */
    IrBlock *body = ir_blk(f, f->body);
    unsigned pi = 0;
    for (uint32_t i = 0; i < f->nparams; i++) {
        IrType ty = f->params[i].ty;
        CgVal *cv = &cg->vals[body->args[i]];
        if (ty.kind == TY_VIEW) {
            cv->ptr = LLVMGetParam(cg->fn, pi++);
            for (int k = 0; k < ty.rank; k++) cv->shape[k] = LLVMGetParam(cg->fn, pi++);
            for (int k = 0; k < ty.rank; k++) cv->stride[k] = LLVMGetParam(cg->fn, pi++);
            for (uint32_t j = 0; j < cg->ntma; j++) pi += cg->tma[j].param == i;
        } else {
            LLVMValueRef p = LLVMGetParam(cg->fn, pi++);
            cg_define(cg, body->args[i], &p, 1);
        }
    }

    /* 3. the body */
    uint32_t term = lower_block(cg, f->body);
    if (term != UINT32_MAX) LLVMBuildRetVoid(cg->b);
    LLVMDisposeBuilder(cg->b);
    if (cg->di) {
        LLVMDIBuilderFinalize(cg->di);
        LLVMDisposeDIBuilder(cg->di);
    }
    /* the buffers' region (after up to 1024 bytes of alignment) comes before the scratch area */
    facts->smem_dynamic = cg->smem_bytes + (cg->nbufs ? 1024 + cg->buf_bytes : 0);
    if (cg->nbufs && facts->smem_dynamic > t->arch->smem_per_cta && !cg->failed) {
        diag_error(d, f->loc, "'%s' needs %u bytes of shared memory: %u for its buffers (with their barriers and 1024 "
                   "of alignment) and %u of scratch; at most %u", f->source_name, facts->smem_dynamic,
                   1024 + cg->buf_bytes, cg->smem_bytes, t->arch->smem_per_cta);
        cg->failed = true;
    }
    if (cg->ntma) {
        CgTmaDesc *tma = tl_xcalloc(cg->ntma, sizeof *tma);
        memcpy(tma, cg->tma, cg->ntma * sizeof *tma);
        facts->tma = tma;
        facts->ntma = cg->ntma;
    }
    return !cg->failed;
}
