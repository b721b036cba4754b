/* lower_dot.c: DOT (acc + a @ b with f32 accumulation).
 *
 * Which instruction, warp grid and accumulator layout is the DOT plan's
 * (layout_dot_plan, ir/layout.c), which the layout pass followed too: a
 * result in another layout than the plan's is an internal error.
 *
 * Tensor cores (mma.sync.m16n8k16, sm_80 and later) for f16/bf16 operands
 * whenever the shapes tile the warps:
 *   1. The accumulator is in layout_mma_acc (the plan's), operands are brought into
 *      layout_mma_a / layout_mma_b (ir/layout.c) -- a register renaming when
 *      they already are, a trip through shared memory otherwise.
 *   2. For each m tile, n tile and k step of the warp's share, one mma.sync on
 *      registers picked by index arithmetic from the layouts' register bits.
 * Otherwise (f32 or fp8 operands, or shapes mma cannot tile) an exact FMA
 * path: a and b go to shared memory as f32, and each thread accumulates its
 * own accumulator registers over k in order.
 *
 * On sm_90a, wgmma (warpgroup MMA, operands from shared memory) when the
 * plan says so (layout_wgmma_shape holds; the result is in layout_wgmma_acc):
 *   1. cg_wgmma_plan picks each operand's shared layout: K-major, or MN-major
 *      for 16-bit types whose registers run along M/N, swizzled as wide as
 *      the contiguous extent allows (128B for 64 bf16), and the descriptor
 *      strides, all checked against the descriptor model in ir/layout.c;
 *   2. barrier; every thread stores what it uniquely owns of a and b with
 *      16-byte st.shared (cg_smem_store_shared); fence.proxy.async (the
 *      tensor cores read through the async proxy); barrier;
 *   3. wgmma.fence; per warpgroup, for each 64-row block, N block and k step
 *      one wgmma.mma_async m64nNk16 (k32 for fp8) whose descriptors point at
 *      the warpgroup's rows of A and columns of B, accumulating in place
 *      (tied operands); commit_group; wait_group 0, which takes every
 *      accumulator register as a tied operand so that no use moves above it;
 *   4. barrier: the area is free again.
 * A 16-bit A already in layout_wgmma_a (a product chained onto an
 * accumulator, as attention's P V: the accumulator layout is that layout)
 * is not stored: wgmma reads it from registers, four .b32 per k16 step.
 * An operand that is a stage of a pipelining buffer (SMEM_READ, or TRANS of
 * one: gemm_nt's B) is not stored either: the descriptors point into the stage
 * (its address computed at run time from the stage index), K- or MN-major as
 * the buffer's layout (cg_smem_layout) is, when that is a layout wgmma reads.
 * With no copy there are no barriers; and a DOT whose operands are all read in
 * place and whose `pending` is p > 0 waits only until p groups are left in
 * flight (wait_group p), its result finished by a later DOT_WAIT (wait_group 0).
 * Its stages must then hold still until the group completes: the passes load
 * into a stage only after the barrier that follows the next wait.  A DOT with
 * pending = IR_DOT_ASYNC (passes/dot_async.c) does not wait at all, A from
 * registers included (its registers stay as they are until the wait, in the same
 * block): its DOT_WAIT waits until no more groups than were committed after it
 * are in flight (cg_lower_DOT_WAIT counts them, cg->wg_seq).  A dot whose
 * accumulator is splat(0.0) starts each block with scale-d = 0, and A from
 * registers is packed before the wgmma.fence and passed through it.
 */
#include "lower_int.h"

#include <stdarg.h>

#include <string.h>

static int ilog2i(int64_t x)
{
    int n = 0;
    while ((1ll << n) < x) n++;
    return n;
}

/* Packs two 16-bit floats into the .b32 an mma operand register holds (lo first). */
static LLVMValueRef pack2(Cg *cg, LLVMValueRef lo, LLVMValueRef hi)
{
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(lo), 2);
    LLVMValueRef v = LLVMGetUndef(vt);
    v = LLVMBuildInsertElement(cg->b, v, lo, LLVMConstInt(cg->i32, 0, 0), "");
    v = LLVMBuildInsertElement(cg->b, v, hi, LLVMConstInt(cg->i32, 1, 0), "");
    return LLVMBuildBitCast(cg->b, v, cg->i32, "");
}

static void mma_path(Cg *cg, IrOp *op, int wm, int wn, LLVMValueRef *out)
{
    IrFunc *f = cg->f;
    IrVal a = ir_opnd(f, op, 0), b = ir_opnd(f, op, 1), acc = ir_opnd(f, op, 2), res = ir_res(op, 0);
    IrType at = ir_vty(f, a), bt = ir_vty(f, b), ct = ir_vty(f, res);
    int M = ct.dims[0], N = ct.dims[1], K = at.dims[1];
    Layout LA = layout_mma_a(at, wm, wn), LB = layout_mma_b(bt, wm, wn);
    const Layout *LC = cg_layout(cg, res);
    LLVMValueRef *ra = ARENA_ARRAY(cg->scratch, LLVMValueRef, layout_nregs(&LA));
    LLVMValueRef *rb = ARENA_ARRAY(cg->scratch, LLVMValueRef, layout_nregs(&LB));
    cg_value_as(cg, a, &LA, ra);
    cg_value_as(cg, b, &LB, rb);
    cg_value_as(cg, acc, LC, out);
    int kt = K / 16, mt = M / (16 * wm), nt = N / (8 * wn);
    int kb = ilog2i(kt), nb = ilog2i(nt);
    const char *ty = at.dt == DT_BF16 ? "bf16" : "f16";
    char text[256];
    snprintf(text, sizeof text,
             "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
             "{$10,$11,$12,$13};", ty, ty);
    LLVMTypeRef f4[4] = {cg->f32, cg->f32, cg->f32, cg->f32};
    LLVMTypeRef rt = LLVMStructTypeInContext(cg->ctx, f4, 4, 0);
    for (int m = 0; m < mt; m++)
        for (int n = 0; n < nt; n++)
            for (int k = 0; k < kt; k++) {
                uint32_t abase = (uint32_t)((m << (3 + kb)) | (k << 3));
                uint32_t bbase = (uint32_t)((n << (2 + kb)) | (k << 2));
                uint32_t cbase = (uint32_t)((m << (2 + nb)) | (n << 2));
                LLVMValueRef args[14];
                for (int i = 0; i < 4; i++) args[i] = pack2(cg, ra[abase + 2 * i], ra[abase + 2 * i + 1]);
                for (int i = 0; i < 2; i++) args[4 + i] = pack2(cg, rb[bbase + 2 * i], rb[bbase + 2 * i + 1]);
                for (int i = 0; i < 4; i++) args[6 + i] = out[cbase + i];
                LLVMValueRef r = cg_inline_asm(cg, rt, text, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", args, 10, false);
                for (int i = 0; i < 4; i++) out[cbase + i] = LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
            }
}

/* a and b to shared memory as f32 (row-major), then each accumulator
 * register sums its row of a times its column of b over k, in order. */
static void fma_path(Cg *cg, IrOp *op, LLVMValueRef *out)
{
    IrFunc *f = cg->f;
    IrVal a = ir_opnd(f, op, 0), b = ir_opnd(f, op, 1), acc = ir_opnd(f, op, 2), res = ir_res(op, 0);
    IrType at = ir_vty(f, a), bt = ir_vty(f, b);
    int M = at.dims[0], K = at.dims[1], N = bt.dims[1];
    const Layout *LC = cg_layout(cg, res);
    uint32_t n = layout_nregs(LC);
    uint64_t bytes = ((uint64_t)M * K + (uint64_t)K * N) * 4;
    if (bytes > cg->target->arch->smem_per_cta) {
        diag_error(cg->d, op->loc, "dot of [%d, %d] x [%d, %d] needs %llu bytes of shared memory on this path "
                   "(f32 or fp8 operands, or shapes mma.sync cannot tile); at most %u", M, K, K, N,
                   (unsigned long long)bytes, cg->target->arch->smem_per_cta);
        cg->failed = true;
        for (uint32_t r = 0; r < n; r++) out[r] = LLVMConstReal(cg->f32, 0);
        return;
    }
    cg_value_as(cg, acc, LC, out);
    LLVMValueRef base = cg_smem(cg, (uint32_t)bytes);
    cg_barrier(cg);
    /* every thread writes what it uniquely holds of a and b, widened to f32 */
    cg_smem_store_unique(cg, a, base, cg->f32, 0, true);
    cg_smem_store_unique(cg, b, base, cg->f32, (uint32_t)M * (uint32_t)K, true);
    cg_barrier(cg);
    LLVMValueRef toff = cg_thread_offset(cg, LC);
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef row = cg_coord(cg, LC, toff, r, 0), col = cg_coord(cg, LC, toff, r, 1);
        LLVMValueRef arow = LLVMBuildMul(cg->b, row, LLVMConstInt(cg->i32, (unsigned)K, 0), "");
        LLVMValueRef bcol = LLVMBuildAdd(cg->b, col, LLVMConstInt(cg->i32, (unsigned)(M * K), 0), "");
        LLVMValueRef s = out[r];
        for (int k = 0; k < K; k++) {
            LLVMValueRef ia = LLVMBuildAdd(cg->b, arow, LLVMConstInt(cg->i32, (unsigned)k, 0), "");
            LLVMValueRef ib = LLVMBuildAdd(cg->b, bcol, LLVMConstInt(cg->i32, (unsigned)(k * N), 0), "");
            LLVMValueRef x = LLVMBuildLoad2(cg->b, cg->f32, LLVMBuildGEP2(cg->b, cg->f32, base, &ia, 1, ""), "");
            LLVMValueRef y = LLVMBuildLoad2(cg->b, cg->f32, LLVMBuildGEP2(cg->b, cg->f32, base, &ib, 1, ""), "");
            LLVMValueRef args[3] = {x, y, s};
            s = cg_call_intrinsic(cg, "llvm.fma.f32", cg->f32, args, 3);
        }
        out[r] = s;
    }
    cg_barrier(cg);
}

/* ---- wgmma ------------------------------------------------------------------- */

/* Whether layout L keeps its first register's neighbours along dim `d`
 * (the dim a vectorised store would run along). */
static bool regs_along(const Layout *L, int d)
{
    if (!L || L->nbits[LL_REG] == 0) return false;
    uint32_t v = L->basis[LL_REG][0], dmask = ((1u << L->dimbits[d]) - 1) << layout_dim_offset(L, d);
    return v && (v & ~dmask) == 0;
}

static bool plan_opnd(CgWgmmaOpnd *o, IrType t, WgmmaOperand op, int kdim, bool k_major, int instr_mn)
{
    int contig = k_major ? kdim : 1 - kdim;
    int sw = layout_swizzle_for(t, contig);
    if (sw < 0) return false;
    o->S = layout_shared_swizzled(t, contig, (LayoutSwizzle)sw);
    o->k_major = k_major;
    return layout_wgmma_strides(&o->S, op, instr_mn, &o->lbo, &o->sbo);
}

/* The copies' offsets from the aligned base: A's first, B's at the next 1024 (or
 * at 0 without A's); an operand without a copy keeps offset 0. */
static void place(CgWgmmaPlan *p)
{
    uint32_t abytes = (uint32_t)p->M * (uint32_t)p->K * p->a.S.ebytes;
    uint32_t bbytes = (uint32_t)p->K * (uint32_t)p->N * p->b.S.ebytes;
    bool a_copy = !p->a.in_buf && !p->a_regs, b_copy = !p->b.in_buf;
    p->a.off = 0;
    p->b.off = a_copy && b_copy ? (abytes + 1023) & ~1023u : 0;
    p->bytes = b_copy ? p->b.off + bbytes : a_copy ? abytes : 0;
}

bool cg_wgmma_plan(const IrTarget *t, IrType at, IrType bt, const Layout *La, const Layout *Lb, int warps,
                   CgWgmmaPlan *p)
{
    memset(p, 0, sizeof *p);
    if (!layout_wgmma_shape(t, at, bt, warps, &p->w)) return false;
    p->M = at.dims[0];
    p->K = at.dims[1];
    p->N = bt.dims[1];
    bool b16 = dt_bytes((DType)at.dt) == 2;
    /* MN-major where the registers run along M (A) or N (B): their vectors
     * then stay whole in shared memory; wgmma transposes only 16-bit types */
    bool a_mn = b16 && regs_along(La, 0), b_mn = b16 && regs_along(Lb, 1);
    if (!(a_mn && plan_opnd(&p->a, at, LL_WGMMA_A, 1, false, 64)) && !plan_opnd(&p->a, at, LL_WGMMA_A, 1, true, 64))
        return false;
    if (!(b_mn && plan_opnd(&p->b, bt, LL_WGMMA_B, 0, false, p->w.instr_n)) &&
        !plan_opnd(&p->b, bt, LL_WGMMA_B, 0, true, p->w.instr_n))
        return false;
    if (b16 && La) { /* a chained product (attention's P V): A from registers as it is */
        Layout W = layout_wgmma_a(at, p->w.wgm, p->w.wgn);
        p->a_regs = layout_eq(&W, La);
    }
    place(p);
    return true;
}

/* Whether S (over the operand's tile) puts every element where B (over the
 * buffer's tile: the same, or its transpose) does.  Both maps are linear, so
 * the images of the flat-index bits decide. */
static bool same_shared(const SharedLayout *S, const SharedLayout *B, bool trans)
{
    if (S->ebytes != B->ebytes || S->nbits != B->nbits) return false;
    int c1 = S->dimbits[1]; /* operand flat bits [0, c1) are dim 1, the rest dim 0 */
    for (int j = 0; j < S->nbits; j++) {
        int jb = !trans ? j : j < c1 ? j + B->dimbits[1] : j - c1;
        if (S->inv[j] != B->inv[jb]) return false;
    }
    return true;
}

bool cg_wgmma_plan_buffer(CgWgmmaPlan *p, IrType t, WgmmaOperand op, const SharedLayout *S, bool trans)
{
    CgWgmmaOpnd *o = op == LL_WGMMA_A ? &p->a : &p->b;
    int kdim = op == LL_WGMMA_A ? 1 : 0, instr_mn = op == LL_WGMMA_A ? 64 : p->w.instr_n;
    /* wgmma transposes only 16-bit types: an 8-bit stage is read in place only K-major */
    int last_major = dt_bytes((DType)t.dt) == 2 ? 0 : 1;
    for (int k_major = 1; k_major >= last_major; k_major--) {
        CgWgmmaOpnd c;
        memset(&c, 0, sizeof c);
        if (!plan_opnd(&c, t, op, kdim, k_major, instr_mn) || !same_shared(&c.S, S, trans)) continue;
        c.in_buf = true;
        *o = c;
        if (op == LL_WGMMA_A) p->a_regs = false;
        place(p);
        return true;
    }
    return false;
}

uint32_t cg_wgmma_start(const CgWgmmaPlan *p, WgmmaOperand op, int mn0, int k0)
{
    const CgWgmmaOpnd *o = op == LL_WGMMA_A ? &p->a : &p->b;
    return o->off + layout_wgmma_start(&o->S, op, mn0, k0);
}

static LayoutSwizzle opnd_swizzle(const CgWgmmaOpnd *o)
{
    return o->S.swizzle < 0 ? LL_SWZ_NONE : (LayoutSwizzle)o->S.swizzle;
}

uint64_t cg_wgmma_desc(const CgWgmmaPlan *p, WgmmaOperand op, uint32_t base, int mn0, int k0)
{
    const CgWgmmaOpnd *o = op == LL_WGMMA_A ? &p->a : &p->b;
    return layout_wgmma_desc(base + cg_wgmma_start(p, op, mn0, k0), opnd_swizzle(o), o->lbo, o->sbo);
}

static const char *wgmma_type(DType dt)
{
    switch (dt) {
    case DT_BF16: return "bf16";
    case DT_F16: return "f16";
    case DT_F8E4M3: return "e4m3";
    case DT_F8E5M2: return "e5m2";
    default: tl_fatal("codegen", "no wgmma for %s", dt_name[dt]);
    }
}

/* Inline PTX whose outputs are the f32 registers acc[0..n), after the `nin` other inputs
 * (constraint letters in `in_cons`), each output tied to its input (read and written: wgmma
 * accumulating, the fence and the wait), or, with tie false, written only (a wgmma whose
 * scale-d is 0: D = A B, the old D unread). */
static void asm_acc(Cg *cg, const char *text, LLVMValueRef *in, const char *in_cons, unsigned nin, LLVMValueRef *acc,
                    unsigned n, bool tie)
{
    StrBuf cons = {0};
    unsigned nt = tie ? n : 0;
    for (unsigned i = 0; i < n; i++) sb_puts(&cons, i ? ",=f" : "=f");
    for (unsigned i = 0; i < nin; i++) sb_printf(&cons, ",%c", in_cons[i]);
    for (unsigned i = 0; i < nt; i++) sb_printf(&cons, ",%u", i);
    sb_puts(&cons, ",~{memory}");
    LLVMTypeRef *ft = ARENA_ARRAY(cg->scratch, LLVMTypeRef, n ? n : 1);
    LLVMTypeRef *at = ARENA_ARRAY(cg->scratch, LLVMTypeRef, nin + nt + 1);
    LLVMValueRef *args = ARENA_ARRAY(cg->scratch, LLVMValueRef, nin + nt + 1);
    for (unsigned i = 0; i < nin; i++) {
        args[i] = in[i];
        at[i] = LLVMTypeOf(in[i]);
    }
    for (unsigned i = 0; i < n; i++) ft[i] = cg->f32;
    for (unsigned i = 0; i < nt; i++) {
        args[nin + i] = acc[i];
        at[nin + i] = cg->f32;
    }
    LLVMTypeRef rt = LLVMStructTypeInContext(cg->ctx, ft, n, 0);
    LLVMTypeRef fty = LLVMFunctionType(rt, at, nin + nt, 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), cons.s, cons.len, 1, 0,
                                         LLVMInlineAsmDialectATT, 0);
    LLVMValueRef r = LLVMBuildCall2(cg->b, fty, asmv, args, nin + nt, "");
    cg_convergent(cg, r); /* wgmma.mma_async.sync.aligned: one instruction for the whole warp */
    for (unsigned i = 0; i < n; i++) acc[i] = LLVMBuildExtractValue(cg->b, r, i, "");
    sb_free(&cons);
}

/* wgmma.fence with the accumulator registers acc[0..n) (f32) and the A registers a[0..na)
 * (.b32) as tied operands: every value they hold is made before it. */
static void fence_regs(Cg *cg, LLVMValueRef *acc, unsigned n, LLVMValueRef *a, unsigned na)
{
    unsigned t = n + na;
    if (!t) {
        cg_asm_void(cg, "wgmma.fence.sync.aligned;");
        return;
    }
    StrBuf cons = {0};
    for (unsigned i = 0; i < t; i++) sb_puts(&cons, i ? (i < n ? ",=f" : ",=r") : (n ? "=f" : "=r"));
    for (unsigned i = 0; i < t; i++) sb_printf(&cons, ",%u", i);
    sb_puts(&cons, ",~{memory}");
    LLVMTypeRef *ty = ARENA_ARRAY(cg->scratch, LLVMTypeRef, t);
    LLVMValueRef *args = ARENA_ARRAY(cg->scratch, LLVMValueRef, t);
    for (unsigned i = 0; i < t; i++) {
        args[i] = i < n ? acc[i] : a[i - n];
        ty[i] = i < n ? cg->f32 : cg->i32;
    }
    LLVMTypeRef rt = LLVMStructTypeInContext(cg->ctx, ty, t, 0);
    LLVMTypeRef fty = LLVMFunctionType(rt, ty, t, 0);
    const char *text = "wgmma.fence.sync.aligned;";
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), cons.s, cons.len, 1, 0,
                                         LLVMInlineAsmDialectATT, 0);
    LLVMValueRef r = LLVMBuildCall2(cg->b, fty, asmv, args, t, "");
    cg_convergent(cg, r);
    for (unsigned i = 0; i < t; i++) {
        LLVMValueRef v = LLVMBuildExtractValue(cg->b, r, i, "");
        if (i < n) acc[i] = v;
        else a[i - n] = v;
    }
    sb_free(&cons);
}

void cg_wgmma_wait(Cg *cg, int pending, LLVMValueRef *acc, unsigned n)
{
    char text[64];
    snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", pending);
    asm_acc(cg, text, NULL, "", 0, acc, n, true);
}

/* sum over the set bits i of x of tab[i], combined by xor (x: i32, run time) */
static LLVMValueRef xor_bits(Cg *cg, LLVMValueRef x, const uint32_t *tab, int nbits)
{
    LLVMValueRef r = LLVMConstInt(cg->i32, 0, 0);
    for (int i = 0; i < nbits; i++) {
        LLVMValueRef bit = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, x, LLVMConstInt(cg->i32, (unsigned)i, 0), ""),
                                        LLVMConstInt(cg->i32, 1, 0), "");
        r = LLVMBuildXor(cg->b, r, LLVMBuildMul(cg->b, bit, LLVMConstInt(cg->i32, tab[i], 0), ""), "");
    }
    return r;
}

/* Whether v is splat(0.0) (zeros<f32>(...)): a dot's accumulator that wgmma need not read. */
static bool zero_splat(IrFunc *f, IrVal v)
{
    uint32_t d = ir_def(f, v);
    if (d == UINT32_MAX || ir_op(f, d)->opc != IR_SPLAT) return false;
    uint32_t c = ir_def(f, ir_opnd(f, ir_op(f, d), 0));
    return c != UINT32_MAX && ir_op(f, c)->opc == IR_CONST && ir_op(f, c)->attr.f == 0.0;
}

/* src[k]: where operand k is read in place (p->a.in_buf / p->b.in_buf).  Returns whether the
 * dot's group is left in flight (pending = IR_DOT_ASYNC, no copy): group cg->wg_seq. */
static bool wgmma_path(Cg *cg, IrOp *op, const CgWgmmaPlan *p, const CgBufRef *src, LLVMValueRef *out)
{
    IrFunc *f = cg->f;
    IrVal a = ir_opnd(f, op, 0), b = ir_opnd(f, op, 1), acc = ir_opnd(f, op, 2), res = ir_res(op, 0);
    const Layout *LC = cg_layout(cg, res);
    uint32_t nacc = layout_nregs(LC);
    const WgmmaShape *w = &p->w;
    /* an accumulator of zeros (splat 0.0: every S = Q K^T) is not made: the first k step of
     * each block runs with scale-d = 0 (D = A B) and writes the registers without reading them */
    bool zero = zero_splat(f, acc);
    if (!zero) cg_value_as(cg, acc, LC, out);
    /* where each operand's tile starts (shared-window address): its buffer stage, or its copy */
    LLVMValueRef obase[2] = {NULL, NULL};
    if (p->a.in_buf) obase[0] = cg_buf_stage32(cg, &src[0]);
    if (p->b.in_buf) obase[1] = cg_buf_stage32(cg, &src[1]);
    bool copy = p->bytes > 0;
    if (copy) {
        /* the area, aligned at run time to the 1024-byte repeat of the swizzles */
        LLVMValueRef area = cg_smem(cg, p->bytes + 1024);
        LLVMValueRef a32 = LLVMBuildPtrToInt(cg->b, area, cg->i32, "");
        LLVMValueRef base32 = LLVMBuildAnd(cg->b, LLVMBuildAdd(cg->b, a32, LLVMConstInt(cg->i32, 1023, 0), ""),
                                           LLVMConstInt(cg->i32, ~1023u, 0), "wg.base");
        LLVMValueRef pad = LLVMBuildSub(cg->b, base32, a32, "");
        LLVMValueRef base = LLVMBuildGEP2(cg->b, cg->i8, area, &pad, 1, "");
        LLVMValueRef boff = LLVMConstInt(cg->i32, p->b.off, 0);
        cg_barrier(cg);
        if (!p->a_regs && !p->a.in_buf) {
            cg_smem_store_shared(cg, a, &p->a.S, base);
            obase[0] = base32;
        }
        if (!p->b.in_buf) {
            cg_smem_store_shared(cg, b, &p->b.S, LLVMBuildGEP2(cg->b, cg->i8, base, &boff, 1, ""));
            obase[1] = LLVMBuildAdd(cg->b, base32, boff, "");
        }
        cg_asm_void(cg, "fence.proxy.async.shared::cta;");
        cg_barrier(cg);
    }

    /* this warpgroup's block origin: rows gm*64 of A, columns gn*instr_n of B */
    int lgn = 0, lgm = 0;
    while ((1 << lgn) < w->wgn) lgn++;
    while ((1 << lgm) < w->wgm) lgm++;
    LLVMValueRef wg = LLVMBuildLShr(cg->b, cg->warp, LLVMConstInt(cg->i32, 2, 0), "wg");
    LLVMValueRef gn = LLVMBuildAnd(cg->b, wg, LLVMConstInt(cg->i32, (unsigned)(w->wgn - 1), 0), "");
    LLVMValueRef gm = LLVMBuildLShr(cg->b, wg, LLVMConstInt(cg->i32, (unsigned)lgn, 0), "");
    uint32_t ta[8] = {0}, tb[8] = {0};
    for (int i = 0; i < lgm; i++) ta[i] = layout_wgmma_start(&p->a.S, LL_WGMMA_A, 64 << i, 0);
    for (int i = 0; i < lgn; i++) tb[i] = layout_wgmma_start(&p->b.S, LL_WGMMA_B, w->instr_n << i, 0);
    LLVMValueRef rta = xor_bits(cg, gm, ta, lgm), rtb = xor_bits(cg, gn, tb, lgn);
    /* descriptor = constant strides and swizzle | (address >> 4) */
    uint64_t hia = layout_wgmma_desc(0, opnd_swizzle(&p->a), p->a.lbo, p->a.sbo);
    uint64_t hib = layout_wgmma_desc(0, opnd_swizzle(&p->b), p->b.lbo, p->b.sbo);
    LLVMValueRef mask14 = LLVMConstInt(cg->i32, 0x3FFF, 0);

    DType dt = (DType)ir_vty(f, a).dt;
    bool f8 = dt_bytes(dt) == 1;
    /* the instruction's text: up to 128 accumulator registers, so a StrBuf */
    StrBuf regs = {0}, text = {0};
    unsigned nb = (unsigned)w->instr_n / 2; /* accumulator registers per instruction */
    for (unsigned i = 0; i < nb; i++) sb_printf(&regs, i ? ",$%u" : "$%u", i);
    if (p->a_regs)
        sb_printf(&text,
                  "{\n.reg .pred p;\nsetp.ne.b32 p, $%u, 0;\n"
                  "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {%s}, {$%u,$%u,$%u,$%u}, $%u, p, 1, 1, %d;\n}",
                  nb + 5, w->instr_n, w->instr_k, wgmma_type(dt), wgmma_type(dt), regs.s, nb, nb + 1, nb + 2, nb + 3,
                  nb + 4, p->b.k_major ? 0 : 1);
    else if (f8)
        sb_printf(&text,
                  "{\n.reg .pred p;\nsetp.ne.b32 p, $%u, 0;\n"
                  "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {%s}, $%u, $%u, p, 1, 1;\n}",
                  nb + 2, w->instr_n, w->instr_k, wgmma_type(dt), wgmma_type((DType)ir_vty(f, b).dt), regs.s, nb,
                  nb + 1);
    else
        sb_printf(&text,
                  "{\n.reg .pred p;\nsetp.ne.b32 p, $%u, 0;\n"
                  "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {%s}, $%u, $%u, p, 1, 1, %d, %d;\n}",
                  nb + 2, w->instr_n, w->instr_k, wgmma_type(dt), wgmma_type(dt), regs.s, nb, nb + 1,
                  p->a.k_major ? 0 : 1, p->b.k_major ? 0 : 1);
    sb_free(&regs);

    int nbm = p->M / (64 * w->wgm), nbn = p->N / (w->instr_n * w->wgn), nks = p->K / w->instr_k;
    LLVMValueRef *ra = NULL;
    if (p->a_regs) {
        const Layout *La = cg_layout(cg, a);
        ra = ARENA_ARRAY(cg->scratch, LLVMValueRef, layout_nregs(La));
        for (uint32_t r = 0; r < layout_nregs(La); r++) ra[r] = cg_reg(cg, a, r);
    }
    /* A from registers: packed to .b32 pairs for every k step before the fence, and passed
     * through it (fence_regs), so that no register a wgmma reads is written after the fence
     * (ptxas would inject a warpgroup.arrive before each such wgmma: C7519) */
    LLVMValueRef *pk = NULL;
    if (p->a_regs) {
        pk = ARENA_ARRAY(cg->scratch, LLVMValueRef, (size_t)nbm * (size_t)nks * 4);
        for (int jm = 0; jm < nbm; jm++)
            for (int ks = 0; ks < nks; ks++) {
                uint32_t r0 = 8u * (uint32_t)(ks + nks * jm);
                for (unsigned j = 0; j < 4; j++)
                    pk[4 * (ks + nks * jm) + (int)j] = pack2(cg, ra[r0 + 2 * j], ra[r0 + 2 * j + 1]);
            }
    }
    /* the fence takes the accumulators too, so that every write to them
     * (phi copies included) is ordered before it, none between it and wgmma */
    fence_regs(cg, out, zero ? 0 : nacc, pk, pk ? (unsigned)(nbm * nks * 4) : 0);
    for (int jm = 0; jm < nbm; jm++)
        for (int jn = 0; jn < nbn; jn++)
            for (int ks = 0; ks < nks; ks++) {
                /* starts are linear (xor) in the tile origin: the warpgroup's
                 * run-time part xors with the block's; the buffer offset adds */
                uint32_t ca = layout_wgmma_start(&p->a.S, LL_WGMMA_A, jm * 64 * w->wgm, ks * w->instr_k);
                uint32_t cb = layout_wgmma_start(&p->b.S, LL_WGMMA_B, jn * w->instr_n * w->wgn, ks * w->instr_k);
                LLVMValueRef xb = LLVMBuildXor(cg->b, rtb, LLVMConstInt(cg->i32, cb, 0), "");
                LLVMValueRef sb = LLVMBuildAdd(cg->b, obase[1], xb, "");
                if (p->a_regs) {
                    LLVMValueRef in[6];
                    for (unsigned j = 0; j < 4; j++) in[j] = pk[4 * (ks + nks * jm) + (int)j];
                    LLVMValueRef fb = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, sb, LLVMConstInt(cg->i32, 4, 0), ""), mask14, "");
                    in[4] = LLVMBuildOr(cg->b, LLVMBuildZExt(cg->b, fb, cg->i64, ""), LLVMConstInt(cg->i64, hib, 0), "desc.b");
                    in[5] = LLVMConstInt(cg->i32, !zero || ks > 0, 0);
                    asm_acc(cg, text.s, in, "rrrrlr", 6, &out[nb * (unsigned)(jm * nbn + jn)], nb, !zero || ks > 0);
                    continue;
                }
                LLVMValueRef in[3];
                LLVMValueRef xa = LLVMBuildXor(cg->b, rta, LLVMConstInt(cg->i32, ca, 0), "");
                LLVMValueRef sa = LLVMBuildAdd(cg->b, obase[0], xa, "");
                LLVMValueRef fa = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, sa, LLVMConstInt(cg->i32, 4, 0), ""), mask14, "");
                LLVMValueRef fb = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, sb, LLVMConstInt(cg->i32, 4, 0), ""), mask14, "");
                in[0] = LLVMBuildOr(cg->b, LLVMBuildZExt(cg->b, fa, cg->i64, ""), LLVMConstInt(cg->i64, hia, 0), "desc.a");
                in[1] = LLVMBuildOr(cg->b, LLVMBuildZExt(cg->b, fb, cg->i64, ""), LLVMConstInt(cg->i64, hib, 0), "desc.b");
                in[2] = LLVMConstInt(cg->i32, !zero || ks > 0, 0); /* scale-d: D = A B + D (0: D = A B) */
                asm_acc(cg, text.s, in, "llr", 3, &out[nb * (unsigned)(jm * nbn + jn)], nb, !zero || ks > 0);
            }
    sb_free(&text);
    cg_asm_void(cg, "wgmma.commit_group.sync.aligned;");
    cg->wg_seq++;
    /* groups may stay in flight only when nothing they read can change under them: no
     * copy (the area is reused after the barrier).  Across iterations (pending 1..7) not
     * with A from registers either; within the block (IR_DOT_ASYNC, completed by the
     * DOT_WAIT that dot_async placed before the block's end) A's registers stay as they
     * are until then, as the accumulator's do */
    if (op->attr.i == IR_DOT_ASYNC && !copy) return true;
    int pending = !copy && !p->a_regs && op->attr.i < IR_DOT_ASYNC ? (int)op->attr.i : 0;
    cg_wgmma_wait(cg, pending, out, nacc);
    if (copy) cg_barrier(cg);
    return false;
}

/* The dot remark: operand and result types, then the instruction. */
static void remark_dot(Cg *cg, IrOp *op, const char *fmt, ...) TL_PRINTF(3, 4);
static void remark_dot(Cg *cg, IrOp *op, const char *fmt, ...)
{
    if (!diag_remark_on(cg->d, DIAG_REMARK_dot)) return;
    char how[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(how, sizeof how, fmt, ap);
    va_end(ap);
    StrBuf a = {0}, b = {0}, c = {0};
    ir_ty_print(&a, ir_vty(cg->f, ir_opnd(cg->f, op, 0)));
    ir_ty_print(&b, ir_vty(cg->f, ir_opnd(cg->f, op, 1)));
    ir_ty_print(&c, ir_vty(cg->f, ir_res(op, 0)));
    diag_remark(cg->d, DIAG_REMARK_dot, op->loc, "dot %s x %s -> %s: %s", a.s, b.s, c.s, how);
    sb_free(&a);
    sb_free(&b);
    sb_free(&c);
}

void cg_lower_DOT(Cg *cg, uint32_t opid, IrOp *op)
{
    IrFunc *f = cg->f;
    IrVal res = ir_res(op, 0), a = ir_opnd(f, op, 0), b = ir_opnd(f, op, 1);
    IrType at = ir_vty(f, a), ct = ir_vty(f, res);
    const Layout *LC = cg_layout(cg, res);
    uint32_t n = layout_nregs(LC);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    int64_t inflight = 0;
    /* the plan the layout pass followed (for the arch the module names) */
    DotPlan plan;
    layout_dot_plan(at, ir_vty(f, b), ct, cg->warps, f->mod ? f->mod->target : NULL, &plan);
    if (!layout_eq(&plan.acc, LC))
        tl_fatal("codegen", "%s:%u:%u: the dot's result is not in the accumulator layout of its plan (%s: %s)",
                 f->name, op->loc.line, op->loc.col, layout_dot_instr_name(plan.instr), plan.reason);
    if (plan.instr == LL_DOT_WGMMA) {
        if (!ir_target_has(cg->target->arch, IR_TGT_WGMMA))
            tl_fatal("codegen", "%s:%u:%u: the dot was planned for wgmma (%s), the target %s has none", f->name,
                     op->loc.line, op->loc.col, plan.reason, cg->target->arch->name);
        CgWgmmaPlan wp;
        if (!cg_wgmma_plan(cg->target->arch, at, ir_vty(f, b), cg_layout(cg, a), cg_layout(cg, b), cg->warps, &wp))
            tl_fatal("codegen", "%s:%u:%u: no shared layouts for the planned wgmma (%s)", f->name, op->loc.line,
                     op->loc.col, plan.reason);
        /* operands that are buffer stages are read in place where wgmma can */
        CgBufRef src[2];
        bool in_place = false;
        for (int k = 0; k < 2; k++) {
            IrVal x = ir_opnd(f, op, (uint32_t)k);
            if (cg_buf_operand(cg, x, opid, &src[k]) &&
                cg_wgmma_plan_buffer(&wp, ir_vty(f, x), k ? LL_WGMMA_B : LL_WGMMA_A, &src[k].buf->S, src[k].trans))
                in_place = true;
        }
        remark_dot(cg, op, "wgmma m64n%dk%d, %d x %d warpgroups, A from %s, B from shared memory%s",
                   wp.w.instr_n, wp.w.instr_k, wp.w.wgm, wp.w.wgn, wp.a_regs ? "registers" : "shared memory",
                   in_place ? " (a pipeline stage read in place)" : "");
        if (opid == cg->pp_first) cg_pingpong_barrier(cg, true, 0);
        if (wgmma_path(cg, op, &wp, src, out)) inflight = cg->wg_seq;
        if (opid == cg->pp_last && cg->pp_open) cg_pingpong_barrier(cg, false, 1);
    } else if (plan.instr == LL_DOT_MMA) {
        remark_dot(cg, op, "mma.sync m16n8k16, %d x %d warps", plan.wm, plan.wn);
        mma_path(cg, op, plan.wm, plan.wn, out);
    } else {
        remark_dot(cg, op, "FMA (f32 fused multiply-adds, no tensor cores: they need f16 or bf16 operands%s, a "
                   "result of multiples of %d x %d and K a multiple of 16; here: %s)",
                   ir_target_has(cg->target->arch, IR_TGT_WGMMA) ? " (or fp8 for wgmma)" : "", 16 * plan.wm, 8 * plan.wn,
                   plan.reason);
        fma_path(cg, op, out);
    }
    cg_define(cg, res, out, n);
    cg_val(cg, res)->wg = inflight;
}
