/* convert.c: moving tile elements between threads, and converting dtypes.
 *
 * A layout conversion in which every thread already holds what it needs (the
 * same lanes and warps, registers permuted or repeated: a slice layout widened
 * for a broadcast) renames registers.  Otherwise layout conversion (and any
 * shape op whose element movement is not a register renaming) goes through the
 * shared scratch area:
 *   1. barrier (the area may still be read by the previous conversion);
 *   2. every thread stores each register it uniquely owns at the element's
 *      source flat index (replicated copies are skipped: registers whose
 *      replicated bits are set statically, lanes/warps by a predicate, so no
 *      two threads write one address);
 *   3. barrier;
 *   4. every thread loads each register of the target layout from the
 *      source flat index of the element it must hold.
 * Elements are stored at their natural width (i1 as a byte, pointers as 8 bytes).
 *
 * Dtype conversion follows lang/SEMANTICS.md exactly: float->int saturates
 * toward zero with NaN -> 0 (llvm.fpto[su]i.sat), fp8 is encoded and decoded
 * in integer arithmetic (round to nearest even, saturating, NaN kept) so that
 * every arch gives the interpreter's bits.
 */
#include "lower_int.h"

#include <string.h>

/* ---- element movement through shared memory -------------------------------- */

typedef LLVMValueRef (*SrcIndexFn)(Cg *cg, const Layout *to, LLVMValueRef toff, uint32_t r, const void *ctx);

static LLVMTypeRef store_type(Cg *cg, LLVMTypeRef t) { return t == cg->i1 ? cg->i8 : t; }

LLVMValueRef cg_owner_pred(Cg *cg, const Layout *L)
{
    uint32_t rl = layout_replicated(L, LL_LANE), rw = layout_replicated(L, LL_WARP);
    if (!rl && !rw) return NULL;
    LLVMValueRef zero = LLVMConstInt(cg->i32, 0, 0);
    LLVMValueRef a = LLVMBuildICmp(cg->b, LLVMIntEQ, LLVMBuildAnd(cg->b, cg->lane, LLVMConstInt(cg->i32, rl, 0), ""), zero, "");
    LLVMValueRef b = LLVMBuildICmp(cg->b, LLVMIntEQ, LLVMBuildAnd(cg->b, cg->warp, LLVMConstInt(cg->i32, rw, 0), ""), zero, "");
    return LLVMBuildAnd(cg->b, a, b, "owner");
}

/* Branches to a new block that only unique owners of L's elements enter;
 * returns the block where both paths meet (the caller branches there). */
static LLVMBasicBlockRef enter_owners(Cg *cg, const Layout *L, const char *name)
{
    LLVMValueRef owner = cg_owner_pred(cg, L);
    LLVMBasicBlockRef st_bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "owners.done");
    LLVMBuildCondBr(cg->b, owner ? owner : LLVMConstInt(cg->i1, 1, 0), st_bb, done);
    LLVMPositionBuilderAtEnd(cg->b, st_bb);
    return done;
}

void cg_smem_store_unique(Cg *cg, IrVal x, LLVMValueRef base, LLVMTypeRef st, uint32_t elem_off, bool to_f32)
{
    IrType xt = ir_vty(cg->f, x);
    const Layout *Lx = cg_layout(cg, x);
    LLVMTypeRef et = cg_elem_type(cg, xt);
    uint32_t rep_reg = layout_replicated(Lx, LL_REG);
    LLVMValueRef xoff = cg_thread_offset(cg, Lx);
    LLVMBasicBlockRef done = enter_owners(cg, Lx, "smem.store");
    for (uint32_t r = 0; r < layout_nregs(Lx); r++) {
        if (r & rep_reg) continue;
        LLVMValueRef flat = LLVMBuildXor(cg->b, xoff, LLVMConstInt(cg->i32, layout_apply(Lx, r, 0, 0), 0), "");
        if (elem_off) flat = LLVMBuildAdd(cg->b, flat, LLVMConstInt(cg->i32, elem_off, 0), "");
        LLVMValueRef p = LLVMBuildGEP2(cg->b, st, base, &flat, 1, "");
        LLVMValueRef v = cg_reg(cg, x, r);
        if (to_f32) v = cg_cast(cg, v, (DType)xt.dt, false, DT_F32, false);
        else if (et == cg->i1) v = LLVMBuildZExt(cg->b, v, cg->i8, "");
        LLVMBuildStore(cg->b, v, p);
    }
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

bool cg_smem_part_static(const Layout *L, const SharedLayout *S, uint32_t n)
{
    Layout C = layout_shared_compose(L, S);
    for (int in = LL_LANE; in < LL_NIN; in++)
        for (int i = 0; i < C.nbits[in]; i++)
            if (C.basis[in][i] >= n) return false;
    return true;
}

void cg_smem_store_shared(Cg *cg, IrVal x, const SharedLayout *S, LLVMValueRef base)
{
    cg_smem_store_shared_part(cg, x, S, base, 0, 1u << S->nbits);
}

void cg_smem_store_shared_part(Cg *cg, IrVal x, const SharedLayout *S, LLVMValueRef base, uint32_t lo, uint32_t n)
{
    IrType xt = ir_vty(cg->f, x);
    const Layout *Lx = cg_layout(cg, x);
    LLVMTypeRef et = cg_elem_type(cg, xt);
    TL_ASSERT(Lx && !xt.isptr && et != cg->i1, "codegen");
    TL_ASSERT(n && !(n & (n - 1)) && !(lo & (n - 1)) && lo + n <= (1u << S->nbits), "codegen");
    TL_ASSERT(n == (1u << S->nbits) || cg_smem_part_static(Lx, S, n), "codegen");
    Layout C = layout_shared_compose(Lx, S);
    uint32_t vec = (uint32_t)layout_shared_max_vec(Lx, S), eb = S->ebytes;
    uint32_t rep_reg = layout_replicated(Lx, LL_REG);
    LLVMValueRef toff = cg_thread_offset(cg, &C); /* offset bits of this lane and warp (below n) */
    LLVMBasicBlockRef done = enter_owners(cg, Lx, "smem.vstore");
    LLVMTypeRef vt = vec > 1 ? LLVMVectorType(et, vec) : et;
    for (uint32_t r = 0; r < layout_nregs(Lx); r += vec) {
        if (r & rep_reg) continue; /* a replicated copy (never inside a vector: max_vec stops there) */
        uint32_t roff = layout_apply(&C, r, 0, 0);
        if ((roff & ~(n - 1)) != lo) continue; /* outside the part: the thread's bits cannot bring it in */
        LLVMValueRef off = LLVMBuildXor(cg->b, toff, LLVMConstInt(cg->i32, roff & (n - 1), 0), "");
        off = LLVMBuildMul(cg->b, off, LLVMConstInt(cg->i32, eb, 0), "");
        LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i8, base, &off, 1, "");
        LLVMValueRef v;
        if (vec == 1) {
            v = cg_reg(cg, x, r);
        } else {
            v = LLVMGetUndef(vt);
            for (uint32_t i = 0; i < vec; i++)
                v = LLVMBuildInsertElement(cg->b, v, cg_reg(cg, x, r + i), LLVMConstInt(cg->i32, i, 0), "");
        }
        LLVMValueRef st = LLVMBuildStore(cg->b, v, p);
        LLVMSetAlignment(st, vec * eb);
    }
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

void cg_smem_load_shared(Cg *cg, const Layout *L, const SharedLayout *S, LLVMTypeRef et, LLVMValueRef base,
                         LLVMValueRef *out)
{
    Layout C = layout_shared_compose(L, S);
    uint32_t vec = (uint32_t)layout_shared_max_vec(L, S), eb = S->ebytes;
    uint32_t rep_reg = layout_replicated(L, LL_REG);
    LLVMValueRef toff = cg_thread_offset(cg, &C);
    LLVMTypeRef vt = vec > 1 ? LLVMVectorType(et, vec) : et;
    for (uint32_t r = 0; r < layout_nregs(L); r += vec) {
        if (r & rep_reg) { /* a replicated copy (never inside a vector: max_vec stops there) */
            for (uint32_t i = 0; i < vec; i++) out[r + i] = out[(r & ~rep_reg) + i];
            continue;
        }
        LLVMValueRef off = LLVMBuildXor(cg->b, toff, LLVMConstInt(cg->i32, layout_apply(&C, r, 0, 0), 0), "");
        off = LLVMBuildMul(cg->b, off, LLVMConstInt(cg->i32, eb, 0), "");
        LLVMValueRef ld = LLVMBuildLoad2(cg->b, vt, LLVMBuildGEP2(cg->b, cg->i8, base, &off, 1, ""), "");
        LLVMSetAlignment(ld, vec * eb);
        if (vec == 1) out[r] = ld;
        else
            for (uint32_t i = 0; i < vec; i++)
                out[r + i] = LLVMBuildExtractElement(cg->b, ld, LLVMConstInt(cg->i32, i, 0), "");
    }
}

/* what: the movement, for the layout remark ("layout conversion", "broadcast", "transpose"). */
static void smem_gather(Cg *cg, IrVal x, const Layout *to, SrcIndexFn src_index, const void *ctx, LLVMValueRef *out,
                        const char *what)
{
    IrType xt = ir_vty(cg->f, x);
    LLVMTypeRef et = cg_elem_type(cg, xt), st = store_type(cg, et);
    uint32_t esize = xt.isptr ? 8 : (uint32_t)dt_bytes((DType)xt.dt);
    uint64_t bytes = (uint64_t)ir_ty_numel(xt) * esize;
    if (diag_remark_on(cg->d, DIAG_REMARK_layout)) {
        StrBuf t = {0};
        ir_ty_print(&t, xt);
        diag_remark(cg->d, DIAG_REMARK_layout, cg->loc, "%s of %s: %llu bytes through shared memory, 3 barriers", what,
                    t.s, (unsigned long long)bytes);
        sb_free(&t);
    }
    if (bytes > cg->target->arch->smem_per_cta) {
        uint32_t def = ir_def(cg->f, x);
        diag_error(cg->d, def == UINT32_MAX ? cg->f->loc : ir_op(cg->f, def)->loc,
                   "tile of %lld elements is too large to move between threads through shared memory (%llu bytes; "
                   "at most %u)", (long long)ir_ty_numel(xt), (unsigned long long)bytes, cg->target->arch->smem_per_cta);
        cg->failed = true;
        for (uint32_t r = 0; r < layout_nregs(to); r++) out[r] = LLVMGetUndef(et);
        return;
    }
    LLVMValueRef base = cg_smem(cg, (uint32_t)bytes);
    cg_barrier(cg);
    cg_smem_store_unique(cg, x, base, st, 0, false);
    cg_barrier(cg);
    /* 4. everyone loads what the target layout needs */
    LLVMValueRef toff = cg_thread_offset(cg, to);
    for (uint32_t r = 0; r < layout_nregs(to); r++) {
        LLVMValueRef idx = src_index(cg, to, toff, r, ctx);
        LLVMValueRef v = LLVMBuildLoad2(cg->b, st, LLVMBuildGEP2(cg->b, st, base, &idx, 1, ""), "");
        if (et == cg->i1) v = LLVMBuildTrunc(cg->b, v, cg->i1, "");
        out[r] = v;
    }
    cg_barrier(cg);
}

static LLVMValueRef same_index(Cg *cg, const Layout *to, LLVMValueRef toff, uint32_t r, const void *ctx)
{
    (void)ctx;
    return LLVMBuildXor(cg->b, toff, LLVMConstInt(cg->i32, layout_apply(to, r, 0, 0), 0), "");
}

/* Whether every thread already holds, in some register of `from`, each element `to`
 * gives it: the lanes and warps place the same flat-index bits in both, and each
 * register of `to` holds what some register of `from` does (it may repeat one: a
 * broadcast's replicated bits).  Then src[r] is that register of `from`. */
static bool same_threads(const Layout *from, const Layout *to, uint32_t *src)
{
    if (from->rank != to->rank || memcmp(from->dimbits, to->dimbits, sizeof from->dimbits) != 0) return false;
    for (int in = LL_LANE; in < LL_NIN; in++) {
        if (from->nbits[in] != to->nbits[in]) return false;
        for (int i = 0; i < from->nbits[in]; i++)
            if (from->basis[in][i] != to->basis[in][i]) return false;
    }
    uint32_t nf = layout_nregs(from);
    for (uint32_t r = 0; r < layout_nregs(to); r++) {
        uint32_t want = layout_apply(to, r, 0, 0), k = 0;
        while (k < nf && layout_apply(from, k, 0, 0) != want) k++;
        if (k == nf) return false;
        src[r] = k;
    }
    return true;
}

void cg_convert_layout(Cg *cg, IrVal v, const Layout *to, LLVMValueRef *out)
{
    const Layout *from = cg_layout(cg, v);
    uint32_t *src = ARENA_ARRAY(cg->scratch, uint32_t, layout_nregs(to));
    if (from && same_threads(from, to, src)) { /* a register renaming: no shared memory, no barrier */
        for (uint32_t r = 0; r < layout_nregs(to); r++) out[r] = cg_reg(cg, v, src[r]);
        if (diag_remark_on(cg->d, DIAG_REMARK_layout)) {
            StrBuf t = {0};
            ir_ty_print(&t, ir_vty(cg->f, v));
            diag_remark(cg->d, DIAG_REMARK_layout, cg->loc,
                        "layout conversion of %s: registers renamed (every thread holds its elements already), "
                        "no shared memory", t.s);
            sb_free(&t);
        }
        return;
    }
    smem_gather(cg, v, to, same_index, NULL, out, "layout conversion");
}

/* BROADCAST: the source flat index keeps only the bits of the dims that are
 * not broadcast (`keep`), compacted to the source's dim offsets. */
typedef struct BcastCtx {
    uint32_t keep;
    const Layout *src;
} BcastCtx;

static LLVMValueRef bcast_index(Cg *cg, const Layout *to, LLVMValueRef toff, uint32_t r, const void *ctx)
{
    const BcastCtx *c = ctx;
    if (c->keep == 0xffffffffu) return same_index(cg, to, toff, r, NULL);
    LLVMValueRef idx = LLVMConstInt(cg->i32, 0, 0);
    for (int k = 0; k < to->rank; k++) {
        uint32_t dmask = ((1u << to->dimbits[k]) - 1) << layout_dim_offset(to, k);
        if (!(dmask & c->keep) || !to->dimbits[k]) continue;
        LLVMValueRef co = cg_coord(cg, to, toff, r, k);
        idx = LLVMBuildOr(cg->b, idx, LLVMBuildShl(cg->b, co, LLVMConstInt(cg->i32, (unsigned)layout_dim_offset(c->src, k), 0), ""), "");
    }
    return idx;
}

void cg_convert_layout_bcast(Cg *cg, IrVal x, const Layout *to, uint32_t keep, LLVMValueRef *out)
{
    BcastCtx c = {keep, cg_layout(cg, x)};
    smem_gather(cg, x, to, bcast_index, &c, out, "broadcast");
}

/* TRANS: result coordinate k is source coordinate perm[k]. */
typedef struct TransCtx {
    const int32_t *perm;
    const Layout *src;
} TransCtx;

static LLVMValueRef trans_index(Cg *cg, const Layout *to, LLVMValueRef toff, uint32_t r, const void *ctx)
{
    const TransCtx *c = ctx;
    LLVMValueRef idx = LLVMConstInt(cg->i32, 0, 0);
    for (int k = 0; k < to->rank; k++) {
        if (!to->dimbits[k]) continue;
        LLVMValueRef co = cg_coord(cg, to, toff, r, k);
        unsigned off = (unsigned)layout_dim_offset(c->src, c->perm[k]);
        idx = LLVMBuildOr(cg->b, idx, LLVMBuildShl(cg->b, co, LLVMConstInt(cg->i32, off, 0), ""), "");
    }
    return idx;
}

void cg_transpose(Cg *cg, IrVal x, const int32_t *perm, const Layout *to, LLVMValueRef *out)
{
    const Layout *Lx = cg_layout(cg, x);
    if (Lx) { /* the layout pass may give the result x's threads (for a DOT operand): a renaming */
        Layout T = layout_transpose(Lx, perm);
        if (layout_eq(&T, to)) {
            for (uint32_t r = 0; r < layout_nregs(to); r++) out[r] = cg_reg(cg, x, r);
            return;
        }
    }
    TransCtx c = {perm, cg_layout(cg, x)};
    smem_gather(cg, x, to, trans_index, &c, out, "transpose");
}

/* ---- dtype conversion --------------------------------------------------------- */

typedef struct F8Fmt {
    int ebits, mbits, bias;
    bool ieee;          /* e5m2: all-ones exponent is inf/NaN; e4m3fn: only S.1111.111 is NaN */
    uint32_t nan, maxfin; /* sign-less encodings */
} F8Fmt;
static const F8Fmt e4m3 = {4, 3, 7, false, 0x7F, 0x7E};
static const F8Fmt e5m2 = {5, 2, 15, true, 0x7E, 0x7B};

static LLVMValueRef k32(Cg *cg, uint32_t v) { return LLVMConstInt(cg->i32, v, 0); }

/* fp8 bits (i8) -> f32, exactly. */
static LLVMValueRef f8_to_f32(Cg *cg, LLVMValueRef x, const F8Fmt *F)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef u = LLVMBuildZExt(b, x, cg->i32, "");
    LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildLShr(b, u, k32(cg, 7), ""), k32(cg, 31), "");
    LLVMValueRef mag = LLVMBuildAnd(b, u, k32(cg, 0x7F), "");
    LLVMValueRef e = LLVMBuildLShr(b, mag, k32(cg, (unsigned)F->mbits), "");
    LLVMValueRef m = LLVMBuildAnd(b, mag, k32(cg, (1u << F->mbits) - 1), "");
    /* normal: rebias the exponent, widen the mantissa */
    LLVMValueRef nbits = LLVMBuildOr(b, LLVMBuildShl(b, LLVMBuildAdd(b, e, k32(cg, (unsigned)(127 - F->bias)), ""), k32(cg, 23), ""),
                                     LLVMBuildShl(b, m, k32(cg, (unsigned)(23 - F->mbits)), ""), "");
    LLVMValueRef normal = LLVMBuildBitCast(b, nbits, cg->f32, "");
    /* subnormal: m * 2^(1 - bias - mbits) */
    float scale = 1.0f;
    for (int i = 0; i < F->bias - 1 + F->mbits; i++) scale *= 0.5f;
    LLVMValueRef sub = LLVMBuildFMul(b, LLVMBuildUIToFP(b, m, cg->f32, ""), LLVMConstReal(cg->f32, scale), "");
    LLVMValueRef v = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, k32(cg, 0), ""), sub, normal, "");
    LLVMValueRef nan = LLVMConstReal(cg->f32, __builtin_nanf(""));
    LLVMValueRef is_nan, is_inf = NULL;
    if (F->ieee) {
        LLVMValueRef top = LLVMBuildICmp(b, LLVMIntEQ, e, k32(cg, (1u << F->ebits) - 1), "");
        is_nan = LLVMBuildAnd(b, top, LLVMBuildICmp(b, LLVMIntNE, m, k32(cg, 0), ""), "");
        is_inf = LLVMBuildAnd(b, top, LLVMBuildICmp(b, LLVMIntEQ, m, k32(cg, 0), ""), "");
        v = LLVMBuildSelect(b, is_inf, LLVMConstReal(cg->f32, __builtin_inff()), v, "");
    } else {
        is_nan = LLVMBuildICmp(b, LLVMIntEQ, mag, k32(cg, 0x7F), "");
    }
    v = LLVMBuildSelect(b, is_nan, nan, v, "");
    /* apply the sign */
    LLVMValueRef bits = LLVMBuildOr(b, LLVMBuildBitCast(b, v, cg->i32, ""), sign, "");
    return LLVMBuildBitCast(b, bits, cg->f32, "");
}

/* f32 -> fp8 bits: round to nearest even, saturate to the largest finite, keep NaN. */
static LLVMValueRef f32_to_f8(Cg *cg, LLVMValueRef x, const F8Fmt *F)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef bits = LLVMBuildBitCast(b, x, cg->i32, "");
    LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, bits, k32(cg, 24), ""), k32(cg, 0x80), "");
    LLVMValueRef abits = LLVMBuildAnd(b, bits, k32(cg, 0x7FFFFFFF), "");
    LLVMValueRef is_nan = LLVMBuildICmp(b, LLVMIntUGT, abits, k32(cg, 0x7F800000), "");
    /* Work on the magnitude as an integer count of the target's smallest
     * subnormal step: q = |x| / 2^(1-bias-mbits), rounded to nearest even.
     * For normals of the target, rounding at the target's precision is a
     * rounding of the f32 mantissa; doing both uniformly:
     *   e = unbiased exponent of |x|, clamped below at 1-bias (subnormals);
     *   shift = 23 - mbits + (clamped_e - e) bits of the 24-bit significand drop. */
    LLVMValueRef ef = LLVMBuildLShr(b, abits, k32(cg, 23), "");
    LLVMValueRef frac = LLVMBuildAnd(b, abits, k32(cg, 0x7FFFFF), "");
    LLVMValueRef is_norm32 = LLVMBuildICmp(b, LLVMIntNE, ef, k32(cg, 0), "");
    LLVMValueRef sig = LLVMBuildSelect(b, is_norm32, LLVMBuildOr(b, frac, k32(cg, 0x800000), ""), frac, "");
    /* unbiased exponent (f32 subnormals count as exponent -126) */
    LLVMValueRef e = LLVMBuildSub(b, LLVMBuildSelect(b, is_norm32, ef, k32(cg, 1), ""), k32(cg, 127), "");
    int emin = 1 - F->bias;
    LLVMValueRef below = LLVMBuildICmp(b, LLVMIntSLT, e, LLVMConstInt(cg->i32, (unsigned long long)(int64_t)emin, 1), "");
    LLVMValueRef extra = LLVMBuildSelect(b, below, LLVMBuildSub(b, LLVMConstInt(cg->i32, (unsigned long long)(int64_t)emin, 1), e, ""),
                                         k32(cg, 0), "");
    LLVMValueRef shift = LLVMBuildAdd(b, k32(cg, (unsigned)(23 - F->mbits)), extra, "");
    LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGT, shift, k32(cg, 31), "");
    LLVMValueRef sh = LLVMBuildSelect(b, big, k32(cg, 31), shift, "");
    LLVMValueRef kept = LLVMBuildLShr(b, sig, sh, "");
    LLVMValueRef rem = LLVMBuildSub(b, sig, LLVMBuildShl(b, kept, sh, ""), "");
    LLVMValueRef half = LLVMBuildShl(b, k32(cg, 1), LLVMBuildSub(b, sh, k32(cg, 1), ""), "");
    LLVMValueRef up = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGT, rem, half, ""),
                                  LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, rem, half, ""),
                                               LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, kept, k32(cg, 1), ""), k32(cg, 0), ""), ""), "");
    kept = LLVMBuildAdd(b, kept, LLVMBuildZExt(b, up, cg->i32, ""), "");
    kept = LLVMBuildSelect(b, big, k32(cg, 0), kept, "");
    /* kept counts units of 2^(max(e, emin) - mbits); compose exponent and mantissa:
     * the biased target exponent is (max(e, emin) + bias) for normals (kept has the
     * implicit bit at 1 << mbits) or 0 for subnormals; adding handles the carry. */
    LLVMValueRef ec = LLVMBuildSelect(b, below, LLVMConstInt(cg->i32, (unsigned long long)(int64_t)emin, 1), e, "");
    LLVMValueRef ebias = LLVMBuildAdd(b, ec, k32(cg, (unsigned)F->bias), ""); /* >= 1 */
    /* for a subnormal result (below), kept < 1 << mbits and the code is kept itself;
     * otherwise code = ((ebias - 1) << mbits) + kept (kept includes the implicit 1). */
    LLVMValueRef code = LLVMBuildSelect(b, below, kept,
        LLVMBuildAdd(b, LLVMBuildShl(b, LLVMBuildSub(b, ebias, k32(cg, 1), ""), k32(cg, (unsigned)F->mbits), ""), kept, ""), "");
    /* saturate: anything past the largest finite (including f32 inf) */
    LLVMValueRef huge = LLVMBuildICmp(b, LLVMIntSGT, e, k32(cg, 30), "");
    LLVMValueRef sat = LLVMBuildOr(b, huge, LLVMBuildICmp(b, LLVMIntUGT, code, k32(cg, F->maxfin), ""), "");
    code = LLVMBuildSelect(b, sat, k32(cg, F->maxfin), code, "");
    code = LLVMBuildSelect(b, is_nan, k32(cg, F->nan), code, "");
    return LLVMBuildTrunc(b, LLVMBuildOr(b, code, sign, ""), cg->i8, "");
}

static bool is_f8(DType t) { return t == DT_F8E4M3 || t == DT_F8E5M2; }

/* The same conversions in hardware (IR_TGT_FP8_CVT: sm_89 and later), a few
 * instructions instead of some thirty integer ones.  cvt.rn.satfinite rounds
 * to nearest even and saturates overflow and infinities to the largest finite
 * value, as the interpreter does; only NaN is fixed up, so its bits are the
 * format's canonical NaN with the input's sign (the hardware's NaN need not
 * keep the sign, and an fp8 NaN widened through f16 is not f32's canonical NaN). */
static LLVMValueRef f32_to_f8_hw(Cg *cg, LLVMValueRef x, DType to, const F8Fmt *F)
{
    LLVMBuilderRef b = cg->b;
    /* the converted second operand lands in the low byte */
    LLVMValueRef args[2] = {LLVMConstReal(cg->f32, 0.0), x};
    LLVMValueRef h = cg_inline_asm(cg, cg->i16,
                                   to == DT_F8E4M3 ? "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;"
                                                   : "cvt.rn.satfinite.e5m2x2.f32 $0, $1, $2;",
                                   "=h,f,f", args, 2, false);
    LLVMValueRef code = LLVMBuildTrunc(b, h, cg->i8, "");
    LLVMValueRef bits = LLVMBuildBitCast(b, x, cg->i32, "");
    LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, bits, k32(cg, 24), ""), k32(cg, 0x80), "");
    LLVMValueRef nan = LLVMBuildTrunc(b, LLVMBuildOr(b, sign, k32(cg, F->nan), ""), cg->i8, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), nan, code, "");
}

static LLVMValueRef f8_to_f32_hw(Cg *cg, LLVMValueRef x, DType from)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef args[1] = {LLVMBuildZExt(b, x, cg->i16, "")};
    LLVMValueRef r = cg_inline_asm(cg, cg->i32,
                                   from == DT_F8E4M3 ? "cvt.rn.f16x2.e4m3x2 $0, $1;" : "cvt.rn.f16x2.e5m2x2 $0, $1;",
                                   "=r,h", args, 1, false);
    LLVMValueRef hf = LLVMBuildBitCast(b, LLVMBuildTrunc(b, r, cg->i16, ""), cg->f16, "");
    LLVMValueRef v = LLVMBuildFPExt(b, hf, cg->f32, ""); /* exact: every fp8 value is an f16 */
    LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, LLVMBuildZExt(b, x, cg->i32, ""), k32(cg, 0x80), ""),
                                     k32(cg, 24), "");
    LLVMValueRef nan = LLVMBuildBitCast(b, LLVMBuildOr(b, sign, k32(cg, 0x7FC00000), ""), cg->f32, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, v, v, ""), nan, v, "");
}

static bool fp8_hw(Cg *cg) { return cg->target && ir_target_has(cg->target->arch, IR_TGT_FP8_CVT); }

/* Two fp8 values (i8 x0, x1) to f32, f16 or bf16 in one cvt.rn.f16x2.e4m3x2 (e5m2x2) and,
 * for the 16-bit types, one cvt.rn.{bf16,f16}x2.f32: the bits of cg_cast element by element
 * (the same widening and NaN fix-up, and the paired f32 rounding is the scalar cvt.rn's), in
 * a third of the instructions; the FP8 decode kernel widens two [64, 128] tiles a key block.
 * False where it does not apply (no fp8 conversions on the target, other types). */
bool cg_cast_f8_pair(Cg *cg, LLVMValueRef x0, LLVMValueRef x1, DType from, DType to, LLVMValueRef out[2])
{
    if (!fp8_hw(cg) || !is_f8(from) || (to != DT_F32 && to != DT_F16 && to != DT_BF16)) return false;
    LLVMBuilderRef b = cg->b;
    LLVMValueRef pair = LLVMGetUndef(LLVMVectorType(cg->i8, 2));
    pair = LLVMBuildInsertElement(b, pair, x0, k32(cg, 0), "");
    pair = LLVMBuildInsertElement(b, pair, x1, k32(cg, 1), "");
    LLVMValueRef h2 = LLVMBuildBitCast(b, pair, cg->i16, ""); /* x0 in the low byte: the low half */
    LLVMValueRef r = cg_inline_asm(cg, cg->i32,
                                   from == DT_F8E4M3 ? "cvt.rn.f16x2.e4m3x2 $0, $1;" : "cvt.rn.f16x2.e5m2x2 $0, $1;",
                                   "=r,h", &h2, 1, false);
    LLVMValueRef hv = LLVMBuildBitCast(b, r, LLVMVectorType(cg->f16, 2), "");
    /* the signs from the pair (x0's bit 7 and x1's bit 15), not from x0 and x1: what is
     * live until here is then the pair, not two more registers */
    LLVMValueRef f[2], p32 = LLVMBuildZExt(b, h2, cg->i32, "");
    for (int i = 0; i < 2; i++) {
        LLVMValueRef v = LLVMBuildFPExt(b, LLVMBuildExtractElement(b, hv, k32(cg, (unsigned)i), ""), cg->f32, "");
        LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, p32, k32(cg, 0x80u << (8 * i)), ""),
                                         k32(cg, 24u - 8u * (unsigned)i), "");
        LLVMValueRef nan = LLVMBuildBitCast(b, LLVMBuildOr(b, sign, k32(cg, 0x7FC00000), ""), cg->f32, "");
        f[i] = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, v, v, ""), nan, v, "");
    }
    if (to == DT_F32) {
        out[0] = f[0];
        out[1] = f[1];
        return true;
    }
    LLVMValueRef args[2] = {f[1], f[0]}; /* the first operand lands in the high half */
    LLVMValueRef w = cg_inline_asm(cg, cg->i32, to == DT_BF16 ? "cvt.rn.bf16x2.f32 $0, $1, $2;"
                                                              : "cvt.rn.f16x2.f32 $0, $1, $2;",
                                   "=r,f,f", args, 2, false);
    LLVMValueRef v = LLVMBuildBitCast(b, w, LLVMVectorType(to == DT_BF16 ? cg->bf16 : cg->f16, 2), "");
    out[0] = LLVMBuildExtractElement(b, v, k32(cg, 0), "");
    out[1] = LLVMBuildExtractElement(b, v, k32(cg, 1), "");
    return true;
}

LLVMValueRef cg_cast(Cg *cg, LLVMValueRef x, DType from, bool from_ptr, DType to, bool to_ptr)
{
    LLVMBuilderRef b = cg->b;
    if (from_ptr || to_ptr) {
        if (from_ptr && to_ptr) return x;
        if (from_ptr) return LLVMBuildPtrToInt(b, x, cg_dtype(cg, to), "");
        return LLVMBuildIntToPtr(b, x, cg->gptr, "");
    }
    if (from == to) return x;
    LLVMTypeRef tt = cg_dtype(cg, to);
    if (is_f8(from)) {
        x = fp8_hw(cg) ? f8_to_f32_hw(cg, x, from) : f8_to_f32(cg, x, from == DT_F8E4M3 ? &e4m3 : &e5m2);
        from = DT_F32;
        if (to == DT_F32) return x;
    }
    if (is_f8(to)) {
        /* to f32 first: exact from f16/bf16/ints up to 2^24; f64 rounds twice
         * only where f32 itself cannot hold the value, far outside fp8's range */
        LLVMValueRef f = cg_cast(cg, x, from, false, DT_F32, false);
        const F8Fmt *F = to == DT_F8E4M3 ? &e4m3 : &e5m2;
        return fp8_hw(cg) ? f32_to_f8_hw(cg, f, to, F) : f32_to_f8(cg, f, F);
    }
    bool ff = dt_is_float(from), tf = dt_is_float(to);
    if (!ff && !tf) {
        if (to == DT_I1) return LLVMBuildICmp(b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0), "");
        unsigned fb = dt_bits[from], tb = dt_bits[to];
        if (tb < fb) return LLVMBuildTrunc(b, x, tt, "");
        if (tb == fb) return x;
        return dt_is_signed(from) ? LLVMBuildSExt(b, x, tt, "") : LLVMBuildZExt(b, x, tt, "");
    }
    /* i1 -> float as a select of the two constants, not uitofp: the H200 gave
     * bitcast<i32>(b as f32) == 1 for true (selp.u32 1, 0; cvt.rn.f32.u32; mov.b32
     * as ptxas got it; defect 7, seed 800775) */
    if (from == DT_I1 && tf) return LLVMBuildSelect(b, x, LLVMConstReal(tt, 1.0), LLVMConstReal(tt, 0.0), "");
    if (!ff && tf) {
        if (dt_is_signed(from)) return LLVMBuildSIToFP(b, x, tt, "");
        /* LLVM 19's SLP vectorizer narrows uitofp(sext i8 x to i32) to uitofp <N x i8> x
         * (its minimum-bitwidth analysis treats the sign-extension as zero-extension), so
         * (x as u32) as f16 of a negative i8 gave 197 for -59 instead of inf on the H200
         * (tests/gen seed 30794; tests/golden/uitofp_sext_ptx.tile).  An asm copy of the
         * operand hides where its bits came from; ptxas removes the mov. */
        if (dt_bits[from] >= 16) {
            unsigned w = dt_bits[from];
            const char *text = w == 16 ? "mov.b16 $0, $1;" : w == 32 ? "mov.b32 $0, $1;" : "mov.b64 $0, $1;";
            const char *cons = w == 16 ? "=h,h" : w == 32 ? "=r,r" : "=l,l";
            x = cg_inline_asm(cg, LLVMTypeOf(x), text, cons, &x, 1, false);
        }
        /* u16 and u32 as hi * 2^(w/2) + lo, the halves zero-extended, summed in f64 (exact:
         * below 2^53) and rounded once to the target.  ptxas 13.0 fuses a sign-extended byte
         * (bfe.s32 / cvt.s32.s8) into cvt.rn.{f16,f32}.u32 as I2F.F16.S8 / I2F.S8, a signed
         * conversion: -4 as u32 as f16 came out -4, not inf, once the byte came from a 32-bit
         * load word (tests/gpu/uitofp_sext.tile); masked halves leave it nothing to fuse. */
        unsigned w = dt_bits[from];
        if (w == 16 || w == 32) {
            LLVMTypeRef it = LLVMTypeOf(x);
            LLVMValueRef lo = LLVMBuildAnd(b, x, LLVMConstInt(it, (1ull << (w / 2)) - 1, 0), "");
            LLVMValueRef hi = LLVMBuildLShr(b, x, LLVMConstInt(it, w / 2, 0), "");
            /* the halves behind asm copies too, or LLVM folds the sum back into one uitofp */
            const char *text = w == 16 ? "mov.b16 $0, $1;" : "mov.b32 $0, $1;";
            const char *cons = w == 16 ? "=h,h" : "=r,r";
            lo = cg_inline_asm(cg, it, text, cons, &lo, 1, false);
            hi = cg_inline_asm(cg, it, text, cons, &hi, 1, false);
            LLVMValueRef f = LLVMBuildFAdd(b, LLVMBuildFMul(b, LLVMBuildUIToFP(b, hi, cg->f64, ""),
                                                             LLVMConstReal(cg->f64, (double)(1ull << (w / 2))), ""),
                                           LLVMBuildUIToFP(b, lo, cg->f64, ""), "");
            return tt == cg->f64 ? f : LLVMBuildFPTrunc(b, f, tt, "");
        }
        return LLVMBuildUIToFP(b, x, tt, "");
    }
    if (ff && !tf) {
        if (to == DT_I1) /* NaN -> 0 first, then x != 0 */
            return LLVMBuildFCmp(b, LLVMRealONE, x, LLVMConstReal(LLVMTypeOf(x), 0.0), "");
        char name[64];
        const char *fs = from == DT_F32 ? "f32" : from == DT_F64 ? "f64" : from == DT_F16 ? "f16" : "bf16";
        snprintf(name, sizeof name, "llvm.fpto%s.sat.i%u.%s", dt_is_signed(to) ? "si" : "ui", dt_bits[to], fs);
        if (from == DT_BF16) { /* widen: exact */
            x = LLVMBuildFPExt(b, x, cg->f32, "");
            snprintf(name, sizeof name, "llvm.fpto%s.sat.i%u.f32", dt_is_signed(to) ? "si" : "ui", dt_bits[to]);
        }
        return cg_call_intrinsic(cg, name, tt, &x, 1);
    }
    unsigned fb = dt_bits[from], tb = dt_bits[to];
    if (tb > fb) return LLVMBuildFPExt(b, x, tt, "");
    if (tb < fb) return LLVMBuildFPTrunc(b, x, tt, "");
    /* f16 <-> bf16: through f32, where both are exact */
    return LLVMBuildFPTrunc(b, LLVMBuildFPExt(b, x, cg->f32, ""), tt, "");
}
