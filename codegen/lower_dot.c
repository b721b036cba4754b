/* lower_dot.c: DOT (acc + a @ b with f32 accumulation).
 *
 * Tensor cores (mma.sync.m16n8k16, sm_80 and later) for f16/bf16 operands
 * whenever the shapes tile the warps:
 *   1. The accumulator is in layout_mma_acc (the layout pass puts it there;
 *      otherwise it is converted), operands are brought into
 *      layout_mma_a / layout_mma_b (ir/layout.c) -- a register renaming when
 *      they already are, a trip through shared memory otherwise.
 *   2. For each m tile, n tile and k step of the warp's share, one mma.sync on
 *      registers picked by index arithmetic from the layouts' register bits.
 * Otherwise (f32 or fp8 operands, or shapes mma cannot tile) an exact FMA
 * path: a and b go to shared memory as f32, and each thread accumulates its
 * own accumulator registers over k in order.
 */
#include "lower_int.h"

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
    if (bytes > 227 * 1024) {
        diag_error(cg->d, op->loc, "dot of [%d, %d] x [%d, %d] needs %llu bytes of shared memory on this path "
                   "(f32 or fp8 operands, or shapes mma.sync cannot tile); at most 232448", M, K, K, N,
                   (unsigned long long)bytes);
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

void cg_lower_DOT(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    IrVal res = ir_res(op, 0);
    IrType at = ir_vty(f, ir_opnd(f, op, 0)), ct = ir_vty(f, res);
    const Layout *LC = cg_layout(cg, res);
    uint32_t n = layout_nregs(LC);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    int warps = cg->warps, wm = warps >= 4 ? warps / 2 : warps, wn = warps / wm;
    Layout acc = {0};
    bool mma = (at.dt == DT_F16 || at.dt == DT_BF16) && ct.dims[0] % (16 * wm) == 0 &&
               ct.dims[1] % (8 * wn) == 0 && at.dims[1] % 16 == 0;
    if (mma) {
        acc = layout_mma_acc(ct, wm, wn);
        mma = layout_eq(&acc, LC);
    }
    if (mma) mma_path(cg, op, wm, wn, out);
    else fma_path(cg, op, out);
    cg_define(cg, res, out, n);
}
