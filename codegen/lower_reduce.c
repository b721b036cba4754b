/* lower_reduce.c: reductions (sum max min argmax argmin), cumsum, sort, topk.
 *
 * Relative to the axis an op works along, every input bit of the operand's
 * layout L (a register, lane or warp bit) is one of three kinds (cg_axis_bits):
 * an axis bit (its basis lies inside the axis' flat bits: partners along it
 * hold other elements of the same line), a replicated bit (zero basis:
 * partners hold the same element) or an other bit (its basis lies outside the
 * axis: partners hold other lines).  Reductions and scans need every basis to
 * be one kind or the other (never mixing the axis with other dims) and the
 * non-zero bases to be linearly independent; blocked, mma and sliced layouts
 * all are.  A violation is a layout-pass bug (internal error).
 *
 * Reductions.  The layout pass gives the result layout_slice(L, axis): the same
 * input bits with the axis' flat bits dropped, so result register r holds the
 * reduction of the line through operand register r.
 *   1. Registers: for each axis register bit, in coordinate order, pairs of
 *      registers differing in that bit are combined (a pairwise tree).
 *      Replicated register bits are skipped, so nothing counts twice.
 *   2. Lanes: for each axis lane bit, a butterfly shuffle (shfl.sync.bfly over
 *      all 32 lanes; 64-bit values in two halves, narrow ones widened) and a
 *      combine.  Every combine is commutative bit for bit (IEEE add,
 *      llvm.maximum, integer ops, a strict total order on (key, index)), so
 *      both partners end with the same value.  Replicated lane bits are not
 *      shuffled over.
 *   3. Warps: if some warp bit is an axis bit, one thread per (result element,
 *      t = the warp's axis bits compressed) stores its partial at [t][flat index
 *      of the result element] in shared memory; after a barrier every thread
 *      combines, for each register, the partials of every t in order of t.
 *   4. Result register r is the combined value of operand register r with its
 *      axis and replicated bits cleared: the result replicates exactly where
 *      the slice does.  A rank-0 result is one value, the same in every thread.
 * sum accumulates as the interpreter does: in f32 for floats below f64 (the
 * result is rounded to its dtype at the end), in the result's integer dtype
 * (operands are cast first: sum of i8 gives i32), wrapping.  max/min use
 * llvm.maximum/minimum (NaN in, NaN out; -0 < +0) or the integer max/min of
 * the operand's signedness; fp8 is compared in f32 (exact) and re-encoded.
 * argmax/argmin reduce (key, index) pairs: the key is an unsigned integer
 * ordered like the interpreter's fcmp (-0 < +0; every NaN one key, above all
 * else for argmax and below for argmin) and ties go to the lower index.
 * Integer results are bit-exact; float max/min/argmax/argmin are exact; float
 * sums differ from the interpreter's left-to-right order only by rounding:
 * each differs from the exact sum by at most (n - 1) * eps * sum(|x|), eps the
 * unit roundoff of f32 (f64 for f64), n the axis length.
 *
 * cumsum (inclusive) is the hypercube scan over the axis' coordinate bits
 * (cg_axis_order), lowest first.  Each element keeps its prefix and the total
 * of its aligned block of 2^p elements; at bit p it fetches the total of the
 * partner block (the element with bit p flipped: another register, a
 * shfl.sync.bfly, or shared memory for a warp bit); the upper half adds it to
 * its prefix and both add the two totals, lower block first, so partners agree
 * bit for bit.  A leading run of register bits (the contiguous elements a
 * thread holds) is scanned serially instead.  Accumulation types as for sum;
 * integers exact, floats within the sum tolerance above for each prefix.  If
 * the result's layout differs from the operand's, the scan is moved through
 * shared memory at the end.
 *
 * sort and topk go through shared memory.  Every element is stored once (by
 * the owner among its replicas) at its flat index: an order key (as above, NaN
 * above everything; descending flips the key's bits), its index along the
 * axis, and its value.  A bitonic network sorts (key, index) pairs along each
 * line: pair p of a stage is handled by thread p mod T, a barrier follows each
 * stage.  The order (key, then index) is strict and total, so the sorted
 * result is the stable sort of the interpreter.  Each result register then
 * reads its sorted position (the first k positions for topk); values come from
 * the untouched value array at the sorted original index, so NaN payloads and
 * -0 survive.
 *
 * Shared memory follows convert.c's convention: a barrier before the first
 * store (the area may still be read by the previous user) and after the last
 * load (the next user may write at once); a cross-warp reduction (step 3)
 * skips the one after its loads, as every user of the area starts with a
 * barrier before its first store: one barrier pair per reduction.
 */
#include "lower_int.h"

#include <string.h>


/* ---- layout analysis ------------------------------------------------------------ */

bool cg_axis_bits(const Layout *L, int axis, CgAxisBits *out)
{
    int off = layout_dim_offset(L, axis);
    uint32_t ax = ((1u << L->dimbits[axis]) - 1) << off;
    uint32_t rows[LL_NIN * LL_MAXBITS];
    int n = 0;
    memset(out, 0, sizeof *out);
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < L->nbits[k]; i++) {
            uint32_t v = L->basis[k][i];
            if (!v) {
                out->rep[k] |= 1u << i;
                continue;
            }
            if ((v & ax) && (v & ~ax)) return false;
            if (v & ax) out->axis[k] |= 1u << i;
            rows[n++] = v;
        }
    /* Independence by elimination: row i's lowest bit is removed from every
     * later row; a row that becomes zero was a combination of earlier ones. */
    for (int i = 0; i < n; i++) {
        if (!rows[i]) return false;
        uint32_t pivot = rows[i] & (~rows[i] + 1);
        for (int j = i + 1; j < n; j++)
            if (rows[j] & pivot) rows[j] ^= rows[i];
    }
    return true;
}

bool cg_axis_order(const Layout *L, int axis, CgBitRef *order)
{
    CgAxisBits ab;
    if (!cg_axis_bits(L, axis, &ab)) return false;
    int off = layout_dim_offset(L, axis), nb = L->dimbits[axis];
    uint32_t seen = 0;
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < L->nbits[k]; i++) {
            if (!(ab.axis[k] >> i & 1)) continue;
            uint32_t v = L->basis[k][i];
            if (v & (v - 1)) return false; /* not a single flat bit */
            int p = __builtin_ctz(v) - off;
            TL_ASSERT(p >= 0 && p < nb && !(seen >> p & 1), "codegen:reduce");
            seen |= 1u << p;
            order[p] = (CgBitRef){(uint8_t)k, (uint8_t)i};
        }
    return seen == (nb ? (1u << nb) - 1 : 0u);
}

/* Axis bits of input `in` sorted by their basis (coordinate order); returns the count. */
static int axis_bits_sorted(const Layout *L, LayoutIn in, uint32_t mask, int *bits)
{
    int n = 0;
    for (int i = 0; i < L->nbits[in]; i++) {
        if (!(mask >> i & 1)) continue;
        int j = n++;
        while (j > 0 && L->basis[in][bits[j - 1]] > L->basis[in][i]) {
            bits[j] = bits[j - 1];
            j--;
        }
        bits[j] = i;
    }
    return n;
}

static const char *opname(const IrOp *op) { return ir_opinfo[op->opc].name; }

static void check_axis_bits(Cg *cg, IrOp *op, const Layout *L, int axis, CgAxisBits *ab)
{
    if (!cg_axis_bits(L, axis, ab)) {
        StrBuf b = {0};
        layout_print(&b, L);
        tl_fatal("codegen:reduce", "%s in %s: operand layout %s mixes axis %d with other dims or repeats an element",
                 opname(op), cg->f->name, b.s, axis);
    }
}

/* ---- small helpers ---------------------------------------------------------------- */

static LLVMValueRef k32(Cg *cg, uint64_t v) { return LLVMConstInt(cg->i32, v, 0); }

static unsigned type_bits(LLVMTypeRef t)
{
    switch (LLVMGetTypeKind(t)) {
    case LLVMIntegerTypeKind: return LLVMGetIntTypeWidth(t);
    case LLVMHalfTypeKind:
    case LLVMBFloatTypeKind: return 16;
    case LLVMFloatTypeKind: return 32;
    case LLVMDoubleTypeKind: return 64;
    default: tl_fatal("codegen:reduce", "unexpected LLVM type kind %d", (int)LLVMGetTypeKind(t));
    }
}

/* Bytes an element of LLVM type t takes in shared memory (i1 as a byte). */
static uint32_t elem_bytes(LLVMTypeRef t)
{
    unsigned b = type_bits(t);
    return b < 8 ? 1 : b / 8;
}

static uint32_t align16(uint64_t n) { return (uint32_t)((n + 15) & ~(uint64_t)15); }

static bool is_f8(DType t) { return t == DT_F8E4M3 || t == DT_F8E5M2; }

/* Reports a tile too large for the shared-memory scratch area. */
static bool smem_fits(Cg *cg, IrOp *op, uint64_t bytes)
{
    uint32_t max = cg->target->arch->smem_per_cta;
    if (bytes <= max) return true;
    diag_error(cg->d, op->loc, "%s of this tile needs %llu bytes of shared memory, more than the %u a program may have",
               opname(op), (unsigned long long)bytes, max);
    cg->failed = true;
    return false;
}

/* Defines every result of op as undefined values (after a reported error). */
static void define_undef(Cg *cg, IrOp *op)
{
    for (uint32_t i = 0; i < op->nres; i++) {
        IrVal v = ir_res(op, i);
        const Layout *L = cg_layout(cg, v);
        uint32_t n = L ? layout_nregs(L) : 1;
        LLVMValueRef *u = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
        for (uint32_t r = 0; r < n; r++) u[r] = LLVMGetUndef(cg_elem_type(cg, ir_vty(cg->f, v)));
        cg_define(cg, v, u, n);
    }
}

static LLVMValueRef at_byte(Cg *cg, LLVMValueRef base, uint32_t off)
{
    LLVMValueRef o = k32(cg, off);
    return LLVMBuildGEP2(cg->b, cg->i8, base, &o, 1, "");
}

static void st_elem(Cg *cg, LLVMValueRef arr, LLVMValueRef idx, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    if (t == cg->i1) {
        v = LLVMBuildZExt(cg->b, v, cg->i8, "");
        t = cg->i8;
    }
    LLVMBuildStore(cg->b, v, LLVMBuildGEP2(cg->b, t, arr, &idx, 1, ""));
}

static LLVMValueRef ld_elem(Cg *cg, LLVMTypeRef t, LLVMValueRef arr, LLVMValueRef idx)
{
    LLVMTypeRef st = t == cg->i1 ? cg->i8 : t;
    LLVMValueRef v = LLVMBuildLoad2(cg->b, st, LLVMBuildGEP2(cg->b, st, arr, &idx, 1, ""), "");
    return t == cg->i1 ? LLVMBuildTrunc(cg->b, v, cg->i1, "") : v;
}

/* i1: no bit of `lane_mask` set in the lane and none of `warp_mask` in the warp. */
static LLVMValueRef bits_clear(Cg *cg, uint32_t lane_mask, uint32_t warp_mask)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef l = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, cg->lane, k32(cg, lane_mask), ""), k32(cg, 0), "");
    LLVMValueRef w = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, cg->warp, k32(cg, warp_mask), ""), k32(cg, 0), "");
    return LLVMBuildAnd(b, l, w, "");
}

/* The bits of v selected by `mask`, packed to the low end in order (pext). */
static LLVMValueRef compress_bits(Cg *cg, LLVMValueRef v, uint32_t mask)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef out = k32(cg, 0);
    unsigned j = 0;
    for (unsigned i = 0; i < 32; i++) {
        if (!(mask >> i & 1)) continue;
        LLVMValueRef bit = LLVMBuildAnd(b, LLVMBuildLShr(b, v, k32(cg, i), ""), k32(cg, 1), "");
        out = LLVMBuildOr(b, out, LLVMBuildShl(b, bit, k32(cg, j++), ""), "");
    }
    return out;
}

/* i1: bit i of v (an i32). */
static LLVMValueRef bit_of(Cg *cg, LLVMValueRef v, unsigned i)
{
    return LLVMBuildTrunc(cg->b, LLVMBuildLShr(cg->b, v, k32(cg, i), ""), cg->i1, "");
}

/* The value of lane (lane ^ lane_mask): shfl.sync.bfly over the full warp.
 * Reductions run where every thread of the CTA runs (region conditions are
 * uniform), so the full member mask is exact. */
static LLVMValueRef shfl32(Cg *cg, LLVMValueRef x, unsigned lane_mask)
{
    LLVMValueRef a[4] = {k32(cg, 0xffffffffu), x, k32(cg, lane_mask), k32(cg, 0x1f)};
    return cg_call_intrinsic(cg, "llvm.nvvm.shfl.sync.bfly.i32", cg->i32, a, 4);
}

static LLVMValueRef shfl_bfly(Cg *cg, LLVMValueRef v, unsigned lane_mask)
{
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef t = LLVMTypeOf(v);
    unsigned bits = type_bits(t);
    bool isint = LLVMGetTypeKind(t) == LLVMIntegerTypeKind;
    LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, bits);
    LLVMValueRef x = isint ? v : LLVMBuildBitCast(b, v, it, ""), r;
    if (bits == 64) {
        LLVMValueRef lo = shfl32(cg, LLVMBuildTrunc(b, x, cg->i32, ""), lane_mask);
        LLVMValueRef hi = shfl32(cg, LLVMBuildTrunc(b, LLVMBuildLShr(b, x, LLVMConstInt(cg->i64, 32, 0), ""), cg->i32, ""),
                                 lane_mask);
        r = LLVMBuildOr(b, LLVMBuildZExt(b, lo, cg->i64, ""),
                        LLVMBuildShl(b, LLVMBuildZExt(b, hi, cg->i64, ""), LLVMConstInt(cg->i64, 32, 0), ""), "");
    } else if (bits == 32) {
        r = shfl32(cg, x, lane_mask);
    } else {
        r = LLVMBuildTrunc(b, shfl32(cg, LLVMBuildZExt(b, x, cg->i32, ""), lane_mask), it, "");
    }
    return isint ? r : LLVMBuildBitCast(b, r, t, "");
}

/* An unsigned integer key (i32, i64 for 64-bit dtypes) ordered like the
 * interpreter's fcmp/icmp: signed integers with the sign bit flipped, floats
 * (f16/bf16/fp8 widened to f32, exactly) as sign ? ~bits : bits | sign, so
 * -0 < +0; every NaN becomes all ones (nan_high) or zero. */
static LLVMValueRef order_key(Cg *cg, LLVMValueRef v, DType dt, bool nan_high)
{
    LLVMBuilderRef b = cg->b;
    if (dt_is_float(dt)) {
        if (dt != DT_F32 && dt != DT_F64) {
            v = cg_cast(cg, v, dt, false, DT_F32, false);
            dt = DT_F32;
        }
        bool wide = dt == DT_F64;
        LLVMTypeRef it = wide ? cg->i64 : cg->i32;
        LLVMValueRef bits = LLVMBuildBitCast(b, v, it, "");
        LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, bits, LLVMConstInt(it, 0, 0), "");
        LLVMValueRef sign = LLVMConstInt(it, 1ull << (wide ? 63 : 31), 0);
        LLVMValueRef key = LLVMBuildSelect(b, neg, LLVMBuildNot(b, bits, ""), LLVMBuildOr(b, bits, sign, ""), "");
        LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
        return LLVMBuildSelect(b, nan, nan_high ? LLVMConstAllOnes(it) : LLVMConstInt(it, 0, 0), key, "");
    }
    bool wide = dt_bits[dt] == 64;
    LLVMTypeRef it = wide ? cg->i64 : cg->i32;
    if (!dt_is_signed(dt)) return LLVMBuildZExtOrBitCast(b, v, it, "");
    LLVMValueRef sign = LLVMConstInt(it, 1ull << (wide ? 63 : 31), 0);
    return LLVMBuildXor(b, LLVMBuildSExtOrBitCast(b, v, it, ""), sign, "");
}

/* ---- counted loops (for the sorting network) ------------------------------------ */

typedef struct Loop {
    LLVMBasicBlockRef head, exit;
    LLVMValueRef iv, step;
} Loop;

/* for (iv = from; iv < to; iv += step), signed i32; the builder moves into the body. */
static LLVMValueRef loop_open(Cg *cg, Loop *lp, LLVMValueRef from, LLVMValueRef to, LLVMValueRef step)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
    lp->head = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "red.loop");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "red.body");
    lp->exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "red.done");
    lp->step = step;
    LLVMBuildBr(cg->b, lp->head);
    LLVMPositionBuilderAtEnd(cg->b, lp->head);
    lp->iv = LLVMBuildPhi(cg->b, cg->i32, "");
    LLVMAddIncoming(lp->iv, &from, &pre, 1);
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, lp->iv, to, ""), body, lp->exit);
    LLVMPositionBuilderAtEnd(cg->b, body);
    return lp->iv;
}

static void loop_close(Cg *cg, Loop *lp)
{
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMValueRef next = LLVMBuildAdd(cg->b, lp->iv, lp->step, "");
    LLVMAddIncoming(lp->iv, &next, &latch, 1);
    LLVMBuildBr(cg->b, lp->head);
    LLVMPositionBuilderAtEnd(cg->b, lp->exit);
}

/* ---- reductions -------------------------------------------------------------------- */

typedef struct Part {
    LLVMValueRef v[2]; /* the value; or (key, index) for argmax/argmin */
} Part;

typedef struct Red {
    IrOpcode opc;
    DType cdt;  /* dtype combined (sum, max, min) */
    int nparts; /* 1, or 2 for argmax/argmin */
} Red;

static LLVMValueRef max_min(Cg *cg, DType dt, bool want_max, LLVMValueRef a, LLVMValueRef c)
{
    char name[48];
    const char *nm;
    if (dt_is_float(dt)) nm = want_max ? "llvm.maximum" : "llvm.minimum";
    else if (dt_is_signed(dt)) nm = want_max ? "llvm.smax" : "llvm.smin";
    else nm = want_max ? "llvm.umax" : "llvm.umin";
    const char *sfx = dt == DT_F32 ? "f32" : dt == DT_F64 ? "f64" : dt == DT_F16 ? "f16" : dt == DT_BF16 ? "bf16" : NULL;
    if (sfx) snprintf(name, sizeof name, "%s.%s", nm, sfx);
    else snprintf(name, sizeof name, "%s.i%u", nm, (unsigned)dt_bits[dt]);
    LLVMValueRef args[2] = {a, c};
    return cg_call_intrinsic(cg, name, LLVMTypeOf(a), args, 2);
}

static Part combine(Cg *cg, const Red *rd, Part a, Part c)
{
    LLVMBuilderRef b = cg->b;
    Part o = a;
    switch (rd->opc) {
    case IR_REDUCE_SUM:
        o.v[0] = dt_is_float(rd->cdt) ? LLVMBuildFAdd(b, a.v[0], c.v[0], "") : LLVMBuildAdd(b, a.v[0], c.v[0], "");
        break;
    case IR_REDUCE_MAX:
    case IR_REDUCE_MIN: o.v[0] = max_min(cg, rd->cdt, rd->opc == IR_REDUCE_MAX, a.v[0], c.v[0]); break;
    case IR_ARGMAX:
    case IR_ARGMIN: {
        /* c wins when its key is strictly better, or equal with a lower index */
        LLVMIntPredicate better = rd->opc == IR_ARGMAX ? LLVMIntUGT : LLVMIntULT;
        LLVMValueRef take = LLVMBuildOr(b, LLVMBuildICmp(b, better, c.v[0], a.v[0], ""),
                                        LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, c.v[0], a.v[0], ""),
                                                     LLVMBuildICmp(b, LLVMIntULT, c.v[1], a.v[1], ""), ""), "");
        o.v[0] = LLVMBuildSelect(b, take, c.v[0], a.v[0], "");
        o.v[1] = LLVMBuildSelect(b, take, c.v[1], a.v[1], "");
        break;
    }
    default: tl_fatal("codegen:reduce", "not a reduction: %s", ir_opinfo[rd->opc].name);
    }
    return o;
}

/* Step 3: combine partials across the warps whose bits lie in the axis. */
static bool across_warps(Cg *cg, IrOp *op, const Red *rd, const Layout *L, const Layout *S, const CgAxisBits *ab,
                         Part *v)
{
    LLVMBuilderRef b = cg->b;
    uint32_t skip = ab->axis[LL_REG] | ab->rep[LL_REG], R = layout_nregs(L);
    int nw = __builtin_popcount(ab->axis[LL_WARP]);
    uint32_t nres = 1u << layout_total_bits(S), nslot = nres << nw;
    LLVMTypeRef ty[2];
    uint32_t off[2];
    uint64_t bytes = 0;
    for (int p = 0; p < rd->nparts; p++) {
        ty[p] = LLVMTypeOf(v[0].v[p]);
        off[p] = (uint32_t)bytes;
        bytes = align16(bytes + (uint64_t)nslot * elem_bytes(ty[p]));
    }
    if (!smem_fits(cg, op, bytes)) return false;
    LLVMValueRef base = cg_smem(cg, (uint32_t)bytes), arr[2];
    for (int p = 0; p < rd->nparts; p++) arr[p] = at_byte(cg, base, off[p]);
    cg_barrier(cg);
    /* one writer per (element, t): no axis or replicated lane bit, no replicated warp bit */
    LLVMValueRef writer = bits_clear(cg, ab->axis[LL_LANE] | ab->rep[LL_LANE], ab->rep[LL_WARP]);
    LLVMValueRef soff = cg_thread_offset(cg, S);
    LLVMValueRef tbase = LLVMBuildMul(b, compress_bits(cg, cg->warp, ab->axis[LL_WARP]), k32(cg, nres), "");
    LLVMBasicBlockRef st_bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "red.store");
    LLVMBasicBlockRef ld_bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "red.load");
    LLVMBuildCondBr(b, writer, st_bb, ld_bb);
    LLVMPositionBuilderAtEnd(b, st_bb);
    for (uint32_t r = 0; r < R; r++) {
        if (r & skip) continue;
        LLVMValueRef flat = LLVMBuildXor(b, soff, k32(cg, layout_apply(S, r, 0, 0)), "");
        LLVMValueRef slot = LLVMBuildAdd(b, tbase, flat, "");
        for (int p = 0; p < rd->nparts; p++) st_elem(cg, arr[p], slot, v[r].v[p]);
    }
    LLVMBuildBr(b, ld_bb);
    LLVMPositionBuilderAtEnd(b, ld_bb);
    cg_barrier(cg);
    for (uint32_t r = 0; r < R; r++) {
        if (r & skip) continue;
        LLVMValueRef flat = LLVMBuildXor(b, soff, k32(cg, layout_apply(S, r, 0, 0)), "");
        Part acc = {{0}};
        for (uint32_t t = 0; t < (1u << nw); t++) {
            LLVMValueRef slot = LLVMBuildAdd(b, flat, k32(cg, t * nres), "");
            Part x = {{0}};
            for (int p = 0; p < rd->nparts; p++) x.v[p] = ld_elem(cg, ty[p], arr[p], slot);
            acc = t ? combine(cg, rd, acc, x) : x;
        }
        v[r] = acc;
    }
    /* no trailing barrier: the next user of the scratch area starts with one */
    return true;
}

static void lower_reduction(Cg *cg, IrOp *op)
{
    IrFunc *f = cg->f;
    IrVal x = ir_opnd(f, op, 0), res = ir_res(op, 0);
    IrType xt = ir_vty(f, x), rt = ir_vty(f, res);
    int axis = (int)op->attr.i;
    const Layout *L = cg_layout(cg, x);
    TL_ASSERT(L && axis >= 0 && axis < xt.rank, "codegen:reduce");
    Layout S = layout_slice(L, axis);
    const Layout *Lr = cg_layout(cg, res);
    if (rt.rank == 0 ? Lr != NULL : !(Lr && layout_eq(Lr, &S)))
        tl_fatal("codegen:reduce", "%s in %s: the result's layout is not the slice of the operand's along axis %d",
                 opname(op), f->name, axis);
    CgAxisBits ab;
    check_axis_bits(cg, op, L, axis, &ab);

    DType xdt = (DType)xt.dt, rdt = (DType)rt.dt;
    Red rd = {(IrOpcode)op->opc, xdt, 1};
    switch (rd.opc) {
    case IR_REDUCE_SUM:
        TL_ASSERT(dt_is_float(xdt) == dt_is_float(rdt), "codegen:reduce");
        rd.cdt = dt_is_float(rdt) ? (rdt == DT_F64 ? DT_F64 : DT_F32) : rdt;
        break;
    case IR_REDUCE_MAX:
    case IR_REDUCE_MIN: rd.cdt = is_f8(xdt) ? DT_F32 : xdt; break;
    default: rd.nparts = 2; break;
    }
    bool arg = rd.nparts == 2;

    uint32_t R = layout_nregs(L), skip = ab.axis[LL_REG] | ab.rep[LL_REG];
    Part *v = ARENA_ARRAY(cg->scratch, Part, R);
    LLVMValueRef toff = arg ? cg_thread_offset(cg, L) : NULL;
    for (uint32_t r = 0; r < R; r++) {
        if (r & ab.rep[LL_REG]) continue;
        LLVMValueRef e = cg_reg(cg, x, r);
        if (arg) {
            v[r].v[0] = order_key(cg, e, xdt, rd.opc == IR_ARGMAX);
            v[r].v[1] = cg_coord(cg, L, toff, r, axis);
        } else {
            v[r].v[0] = cg_cast(cg, e, xdt, false, rd.cdt, false);
        }
    }
    /* 1. registers: a pairwise tree over the axis register bits, in coordinate order */
    int bits[LL_MAXBITS];
    int nbits = axis_bits_sorted(L, LL_REG, ab.axis[LL_REG], bits);
    uint32_t done = ab.rep[LL_REG];
    for (int k = 0; k < nbits; k++) {
        uint32_t bit = 1u << bits[k];
        for (uint32_t r = 0; r < R; r++)
            if (!(r & (done | bit))) v[r] = combine(cg, &rd, v[r], v[r | bit]);
        done |= bit;
    }
    /* 2. lanes: butterflies over the axis lane bits */
    for (int i = 0; i < L->nbits[LL_LANE]; i++) {
        if (!(ab.axis[LL_LANE] >> i & 1)) continue;
        for (uint32_t r = 0; r < R; r++) {
            if (r & skip) continue;
            Part o = {{0}};
            for (int p = 0; p < rd.nparts; p++) o.v[p] = shfl_bfly(cg, v[r].v[p], 1u << i);
            v[r] = combine(cg, &rd, v[r], o);
        }
    }
    /* 3. warps: through shared memory */
    if (ab.axis[LL_WARP] && !across_warps(cg, op, &rd, L, &S, &ab, v)) {
        define_undef(cg, op);
        return;
    }
    /* 4. every result register from its line's representative */
    uint32_t n = rt.rank == 0 ? 1 : R;
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r++) {
        uint32_t c = r & ~skip;
        if (c == r || arg) {
            out[r] = arg ? v[c].v[1] : cg_cast(cg, v[c].v[0], rd.cdt, false, rdt, false);
        } else {
            out[r] = out[c]; /* c < r: already finished */
        }
    }
    cg_define(cg, res, out, n);
}

void cg_lower_REDUCE_SUM(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; lower_reduction(cg, op); }
void cg_lower_REDUCE_MAX(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; lower_reduction(cg, op); }
void cg_lower_REDUCE_MIN(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; lower_reduction(cg, op); }
void cg_lower_ARGMAX(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; lower_reduction(cg, op); }
void cg_lower_ARGMIN(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; lower_reduction(cg, op); }

/* ---- moving registers between layouts ----------------------------------------------- */

/* regs (in layout `from`, one per register) re-read in layout `to` through
 * shared memory: each element's owner stores it at its flat index. */
static bool relayout(Cg *cg, IrOp *op, LLVMValueRef *regs, const Layout *from, const Layout *to, LLVMValueRef *out)
{
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef t = LLVMTypeOf(regs[0]);
    uint64_t bytes = ((uint64_t)1 << layout_total_bits(from)) * elem_bytes(t);
    if (!smem_fits(cg, op, bytes)) return false;
    uint32_t rep[LL_NIN] = {0};
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < from->nbits[k]; i++)
            if (!from->basis[k][i]) rep[k] |= 1u << i;
    LLVMValueRef base = cg_smem(cg, (uint32_t)bytes);
    cg_barrier(cg);
    LLVMBasicBlockRef st_bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "relayout.store");
    LLVMBasicBlockRef ld_bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "relayout.load");
    LLVMValueRef foff = cg_thread_offset(cg, from);
    LLVMBuildCondBr(b, bits_clear(cg, rep[LL_LANE], rep[LL_WARP]), st_bb, ld_bb);
    LLVMPositionBuilderAtEnd(b, st_bb);
    for (uint32_t r = 0; r < layout_nregs(from); r++) {
        if (r & rep[LL_REG]) continue;
        st_elem(cg, base, LLVMBuildXor(b, foff, k32(cg, layout_apply(from, r, 0, 0)), ""), regs[r]);
    }
    LLVMBuildBr(b, ld_bb);
    LLVMPositionBuilderAtEnd(b, ld_bb);
    cg_barrier(cg);
    LLVMValueRef toff = cg_thread_offset(cg, to);
    for (uint32_t r = 0; r < layout_nregs(to); r++)
        out[r] = ld_elem(cg, t, base, LLVMBuildXor(b, toff, k32(cg, layout_apply(to, r, 0, 0)), ""));
    cg_barrier(cg);
    return true;
}

/* ---- cumsum ---------------------------------------------------------------------------- */

void cg_lower_CUMSUM(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrFunc *f = cg->f;
    LLVMBuilderRef b = cg->b;
    IrVal x = ir_opnd(f, op, 0), res = ir_res(op, 0);
    IrType xt = ir_vty(f, x), rt = ir_vty(f, res);
    int axis = (int)op->attr.i;
    const Layout *L = cg_layout(cg, x), *Lr = cg_layout(cg, res);
    TL_ASSERT(L && Lr && axis >= 0 && axis < xt.rank, "codegen:reduce");
    CgAxisBits ab;
    check_axis_bits(cg, op, L, axis, &ab);
    CgBitRef ord[LL_MAXBITS];
    if (!cg_axis_order(L, axis, ord))
        tl_fatal("codegen:reduce", "cumsum in %s: an axis bit of the operand's layout is not a single coordinate bit",
                 f->name);
    DType xdt = (DType)xt.dt, rdt = (DType)rt.dt;
    TL_ASSERT(dt_is_float(xdt) == dt_is_float(rdt), "codegen:reduce");
    DType adt = dt_is_float(rdt) ? (rdt == DT_F64 ? DT_F64 : DT_F32) : rdt;
    bool fl = dt_is_float(adt);
    int nb = L->dimbits[axis];
    uint32_t R = layout_nregs(L), rep = ab.rep[LL_REG];
    LLVMValueRef *pre = ARENA_ARRAY(cg->scratch, LLVMValueRef, R), *tot = ARENA_ARRAY(cg->scratch, LLVMValueRef, R);
#define ADD(a, c) (fl ? LLVMBuildFAdd(b, (a), (c), "") : LLVMBuildAdd(b, (a), (c), ""))
    for (uint32_t r = 0; r < R; r++)
        if (!(r & rep)) pre[r] = cg_cast(cg, cg_reg(cg, x, r), xdt, false, adt, false);

    /* the leading coordinate bits held in registers: a serial scan per group */
    int k = 0;
    uint32_t run = 0;
    while (k < nb && ord[k].in == LL_REG) run |= 1u << ord[k++].idx;
    for (uint32_t g = 0; g < R; g++) {
        if (g & (rep | run)) continue;
        uint32_t m = 1u << k, last = g;
        for (uint32_t c = 0; c < m; c++) {
            uint32_t r = g;
            for (int p = 0; p < k; p++)
                if (c >> p & 1) r |= 1u << ord[p].idx;
            if (c) pre[r] = ADD(pre[last], pre[r]);
            last = r;
        }
        for (uint32_t c = 0; c < m; c++) {
            uint32_t r = g;
            for (int p = 0; p < k; p++)
                if (c >> p & 1) r |= 1u << ord[p].idx;
            tot[r] = pre[last];
        }
    }

    /* shared memory for the warp steps: slot (canonical register, warp, lane) */
    uint32_t W = 1u << L->nbits[LL_WARP], nc = R >> __builtin_popcount(rep);
    LLVMTypeRef at = cg_dtype(cg, adt);
    LLVMValueRef xbase = NULL;
    if (ab.axis[LL_WARP]) {
        uint64_t bytes = (uint64_t)nc * W * 32 * elem_bytes(at);
        if (!smem_fits(cg, op, bytes)) {
            define_undef(cg, op);
            return;
        }
        xbase = cg_smem(cg, (uint32_t)bytes);
    }

    /* the hypercube over the remaining coordinate bits */
    for (int p = k; p < nb; p++) {
        unsigned i = ord[p].idx;
        if (ord[p].in == LL_REG) {
            uint32_t bit = 1u << i;
            for (uint32_t r = 0; r < R; r++) {
                if (r & (rep | bit)) continue;
                LLVMValueRef t = ADD(tot[r], tot[r | bit]);
                pre[r | bit] = ADD(tot[r], pre[r | bit]);
                tot[r] = tot[r | bit] = t;
            }
            continue;
        }
        /* the partner block's total from another lane or warp */
        LLVMValueRef *pt = ARENA_ARRAY(cg->scratch, LLVMValueRef, R), up;
        if (ord[p].in == LL_LANE) {
            up = bit_of(cg, cg->lane, i);
            for (uint32_t r = 0; r < R; r++)
                if (!(r & rep)) pt[r] = shfl_bfly(cg, tot[r], 1u << i);
        } else {
            up = bit_of(cg, cg->warp, i);
            LLVMValueRef mine = LLVMBuildAdd(b, LLVMBuildMul(b, cg->warp, k32(cg, 32), ""), cg->lane, "");
            LLVMValueRef other = LLVMBuildAdd(
                b, LLVMBuildMul(b, LLVMBuildXor(b, cg->warp, k32(cg, 1u << i), ""), k32(cg, 32), ""), cg->lane, "");
            cg_barrier(cg);
            uint32_t ci = 0;
            for (uint32_t r = 0; r < R; r++)
                if (!(r & rep)) st_elem(cg, xbase, LLVMBuildAdd(b, mine, k32(cg, (ci++) * W * 32), ""), tot[r]);
            cg_barrier(cg);
            ci = 0;
            for (uint32_t r = 0; r < R; r++)
                if (!(r & rep)) pt[r] = ld_elem(cg, at, xbase, LLVMBuildAdd(b, other, k32(cg, (ci++) * W * 32), ""));
        }
        for (uint32_t r = 0; r < R; r++) {
            if (r & rep) continue;
            LLVMValueRef lo = LLVMBuildSelect(b, up, pt[r], tot[r], ""), hi = LLVMBuildSelect(b, up, tot[r], pt[r], "");
            pre[r] = LLVMBuildSelect(b, up, ADD(pt[r], pre[r]), pre[r], "");
            tot[r] = ADD(lo, hi);
        }
    }
    if (ab.axis[LL_WARP]) cg_barrier(cg);
#undef ADD

    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, R);
    for (uint32_t r = 0; r < R; r++)
        out[r] = (r & rep) ? out[r & ~rep] : cg_cast(cg, pre[r], adt, false, rdt, false);
    if (layout_eq(L, Lr)) {
        cg_define(cg, res, out, R);
        return;
    }
    LLVMValueRef *moved = ARENA_ARRAY(cg->scratch, LLVMValueRef, layout_nregs(Lr));
    if (!relayout(cg, op, out, L, Lr, moved)) {
        define_undef(cg, op);
        return;
    }
    cg_define(cg, res, moved, layout_nregs(Lr));
}

/* ---- sort and topk ------------------------------------------------------------------------ */

/* Reads result `res` (values, or the i32 indices) of a sort along `axis` from
 * the sorted arrays: result flat index -> sorted position (the axis coordinate
 * keeps its value; the result's axis may be shorter: topk) -> original index. */
static void sort_read(Cg *cg, IrVal res, bool values, int axis, int nb, LLVMValueRef keyidx, LLVMValueRef vals,
                      LLVMTypeRef vt)
{
    LLVMBuilderRef b = cg->b;
    const Layout *Lr = cg_layout(cg, res);
    TL_ASSERT(Lr, "codegen:reduce");
    int off = layout_dim_offset(Lr, axis), kb = Lr->dimbits[axis];
    uint32_t n = layout_nregs(Lr);
    LLVMValueRef toff = cg_thread_offset(cg, Lr);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    uint32_t axmask = ((1u << nb) - 1) << off;
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef fr = LLVMBuildXor(b, toff, k32(cg, layout_apply(Lr, r, 0, 0)), "");
        LLVMValueRef low = LLVMBuildAnd(b, fr, k32(cg, (1u << off) - 1), "");
        LLVMValueRef pos = LLVMBuildAnd(b, LLVMBuildLShr(b, fr, k32(cg, (unsigned)off), ""), k32(cg, (1u << kb) - 1), "");
        LLVMValueRef high = LLVMBuildLShr(b, fr, k32(cg, (unsigned)(off + kb)), "");
        LLVMValueRef sp = LLVMBuildOr(b, low, LLVMBuildShl(b, pos, k32(cg, (unsigned)off), ""), "");
        sp = LLVMBuildOr(b, sp, LLVMBuildShl(b, high, k32(cg, (unsigned)(off + nb)), ""), "");
        LLVMValueRef idx = ld_elem(cg, cg->i32, keyidx, sp);
        if (values) {
            LLVMValueRef orig = LLVMBuildOr(b, LLVMBuildAnd(b, sp, k32(cg, ~axmask), ""),
                                            LLVMBuildShl(b, idx, k32(cg, (unsigned)off), ""), "");
            out[r] = ld_elem(cg, vt, vals, orig);
        } else {
            out[r] = idx;
        }
    }
    cg_define(cg, res, out, n);
}

static void lower_sort(Cg *cg, IrOp *op, bool desc)
{
    IrFunc *f = cg->f;
    LLVMBuilderRef b = cg->b;
    IrVal x = ir_opnd(f, op, 0);
    IrType xt = ir_vty(f, x);
    int axis = (int)op->attr.i;
    const Layout *L = cg_layout(cg, x);
    TL_ASSERT(L && axis >= 0 && axis < xt.rank && !xt.isptr, "codegen:reduce");
    DType dt = (DType)xt.dt;
    int nb = L->dimbits[axis], off = layout_dim_offset(L, axis);
    uint32_t N = 1u << layout_total_bits(L), len = 1u << nb;
    LLVMTypeRef vt = cg_elem_type(cg, xt), kt = dt_bits[dt] == 64 ? cg->i64 : cg->i32;
    /* keys | values | indices, each 16-byte aligned */
    uint32_t kbytes = elem_bytes(kt), vbytes = elem_bytes(vt);
    uint64_t voff = align16((uint64_t)N * kbytes), ioff = align16(voff + (uint64_t)N * vbytes);
    uint64_t bytes = align16(ioff + (uint64_t)N * 4);
    if (!smem_fits(cg, op, bytes)) {
        define_undef(cg, op);
        return;
    }
    LLVMValueRef base = cg_smem(cg, (uint32_t)bytes);
    LLVMValueRef keys = base, vals = at_byte(cg, base, (uint32_t)voff), idxs = at_byte(cg, base, (uint32_t)ioff);

    /* 1. each element's owner stores (key, index along the axis, value) at its flat index */
    uint32_t rep[LL_NIN] = {0};
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < L->nbits[k]; i++)
            if (!L->basis[k][i]) rep[k] |= 1u << i;
    cg_barrier(cg);
    LLVMBasicBlockRef st_bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "sort.store");
    LLVMBasicBlockRef go_bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "sort.net");
    LLVMValueRef toff = cg_thread_offset(cg, L);
    LLVMBuildCondBr(b, bits_clear(cg, rep[LL_LANE], rep[LL_WARP]), st_bb, go_bb);
    LLVMPositionBuilderAtEnd(b, st_bb);
    for (uint32_t r = 0; r < layout_nregs(L); r++) {
        if (r & rep[LL_REG]) continue;
        LLVMValueRef e = cg_reg(cg, x, r);
        LLVMValueRef flat = LLVMBuildXor(b, toff, k32(cg, layout_apply(L, r, 0, 0)), "");
        LLVMValueRef key = order_key(cg, e, dt, true);
        if (desc) key = LLVMBuildNot(b, key, "");
        st_elem(cg, keys, flat, key);
        st_elem(cg, vals, flat, e);
        st_elem(cg, idxs, flat, cg_coord(cg, L, toff, r, axis));
    }
    LLVMBuildBr(b, go_bb);
    LLVMPositionBuilderAtEnd(b, go_bb);
    cg_barrier(cg);

    /* 2. the bitonic network: for kb in 1..nb, jb in kb-1..0, every line's pairs
     * (e, e + 2^jb) with bit jb of the position clear, ascending where bit kb
     * of the position is clear; a barrier after each stage */
    if (nb > 0) {
        uint32_t T = 32u * (uint32_t)cg->warps, npairs = N / 2;
        Loop lk, lj, lp;
        LLVMValueRef kb = loop_open(cg, &lk, k32(cg, 1), k32(cg, (uint64_t)nb + 1), k32(cg, 1));
        LLVMValueRef t = loop_open(cg, &lj, k32(cg, 0), kb, k32(cg, 1));
        LLVMValueRef jb = LLVMBuildSub(b, LLVMBuildSub(b, kb, k32(cg, 1), ""), t, "");
        LLVMValueRef q = LLVMBuildAdd(b, jb, k32(cg, (unsigned)off), "");
        LLVMValueRef qbit = LLVMBuildShl(b, k32(cg, 1), q, "");
        LLVMValueRef qlow = LLVMBuildSub(b, qbit, k32(cg, 1), "");
        LLVMValueRef pr = loop_open(cg, &lp, cg->tid, k32(cg, npairs), k32(cg, T));
        /* insert a zero at bit q of the pair number */
        LLVMValueRef e = LLVMBuildOr(b, LLVMBuildShl(b, LLVMBuildLShr(b, pr, q, ""), LLVMBuildAdd(b, q, k32(cg, 1), ""), ""),
                                     LLVMBuildAnd(b, pr, qlow, ""), "");
        LLVMValueRef l = LLVMBuildOr(b, e, qbit, "");
        LLVMValueRef pos = LLVMBuildAnd(b, LLVMBuildLShr(b, e, k32(cg, (unsigned)off), ""), k32(cg, len - 1), "");
        LLVMValueRef down = LLVMBuildTrunc(b, LLVMBuildLShr(b, pos, kb, ""), cg->i1, "");
        LLVMValueRef ke = ld_elem(cg, kt, keys, e), kl = ld_elem(cg, kt, keys, l);
        LLVMValueRef ie = ld_elem(cg, cg->i32, idxs, e), il = ld_elem(cg, cg->i32, idxs, l);
        LLVMValueRef gt = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGT, ke, kl, ""),
                                      LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, ke, kl, ""),
                                                   LLVMBuildICmp(b, LLVMIntUGT, ie, il, ""), ""), "");
        LLVMValueRef swap = LLVMBuildXor(b, gt, down, "");
        st_elem(cg, keys, e, LLVMBuildSelect(b, swap, kl, ke, ""));
        st_elem(cg, keys, l, LLVMBuildSelect(b, swap, ke, kl, ""));
        st_elem(cg, idxs, e, LLVMBuildSelect(b, swap, il, ie, ""));
        st_elem(cg, idxs, l, LLVMBuildSelect(b, swap, ie, il, ""));
        loop_close(cg, &lp);
        cg_barrier(cg);
        loop_close(cg, &lj);
        loop_close(cg, &lk);
    }

    /* 3. read back in the results' layouts */
    sort_read(cg, ir_res(op, 0), true, axis, nb, idxs, vals, vt);
    if (op->nres > 1) sort_read(cg, ir_res(op, 1), false, axis, nb, idxs, vals, vt);
    cg_barrier(cg);
}

void cg_lower_SORT(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    lower_sort(cg, op, op->attr.j != 0);
}

void cg_lower_TOPK(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    lower_sort(cg, op, true);
}
