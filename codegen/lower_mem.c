/* lower_mem.c: global-memory ops: LOAD, STORE, BLOCK_LOAD, BLOCK_STORE and the atomics.
 *
 * Every access is planned per thread over the registers of the address
 * operand's layout L (or the block's layout):
 *   1. Operands (masks, values, `other`) are read in L (converted through
 *      shared memory if the layout pass left them elsewhere; scalars splat).
 *   2. Vector groups: when register bits 0..k-1 of L produce flat bits 0..k-1
 *      (consecutive elements along the last dim) and nothing else in L touches
 *      those bits, registers r0..r0+g-1 (r0 a multiple of g) hold elements
 *      f0..f0+g-1 with f0 a multiple of g.  g is further capped at 16 bytes
 *      and, for pointer tiles, at the static contiguity of the addresses along
 *      the last dim (contig() below: arange, splat, add, addptr, broadcast,
 *      expand_dims, widening casts); for blocks of a view, the contiguity is
 *      the run-time fact stride[last] == 1.
 *   3. A group is accessed with one predicated vector instruction (inline
 *      PTX `@p ld.global.v4.b32` / `@p st.global.v4.b32`) where
 *        p = contiguous && first address aligned to the vector && every mask bit,
 *      and, branch-free, with one predicated scalar access per element where
 *        p_i = mask_i && !p.
 *      So masked-off elements never touch memory, a misaligned or ragged group
 *      still works, and the common case is one 16-byte access.  Unmasked
 *      accesses that cannot vectorize are plain LLVM loads and stores.
 *   4. Stores and atomics run only in the unique owner of each element:
 *      registers whose replicated bits (zero basis vectors) are set are
 *      skipped statically, replicated lanes and warps are predicated off, so
 *      no address is written twice (racecheck-clean) and no atomic applies
 *      twice.  An atomic's old values are given back to the replicas through
 *      registers (replicated register bits) or shared memory (lanes, warps).
 *   5. Atomics: LLVM atomicrmw (add of ints, f16, bf16, f32, f64; max/min of
 *      ints), which NVPTX lowers to atom.global.* (or expands to a CAS loop
 *      where the arch lacks the instruction, e.g. bf16 add before sm_90, and
 *      for 8/16-bit integers); float max/min are a cmpxchg loop around
 *      llvm.maximum/minimum so NaN and -0 follow lang/SEMANTICS.md; CAS
 *      compares bit patterns (cmpxchg on the integer of the same width).
 *      i1 lives in a byte: add is xor, max is or, min is and.
 *      Masked-off lanes give 0.  Lanes hitting one address apply in an order
 *      the GPU chooses (the interpreter's row-major order is not kept).
 *      atom.global.add.f32 flushes subnormal inputs and results to zero (PTX
 *      ISA); the interpreter does not.
 *   6. BLOCK_STORE of a 2-d tile into a view parameter on a target with
 *      IR_TGT_TMA_STORE whose registers give less than 16 bytes per access and whose warps write less than a
 *      128-byte line of a row per access (an accumulator's pairs) is staged in
 *      shared memory and written by TMA (lower_async.c, cg_tma_store); where
 *      the launcher passed no descriptor, every thread reads the staged tile
 *      back in the default blocked layout (16-byte vectors along rows) and
 *      stores it as above (cg_store_staged).
 * i1 tiles are bytes in memory (0 or 1 written; any nonzero byte reads as 1).
 * The contiguity analysis, like Triton's, assumes index arithmetic does not
 * wrap inside one vector group (an i32 offset tile crossing 2^31 there).
 */
#include "lower_int.h"

#include <string.h>

/* ---- small helpers --------------------------------------------------------- */

static LLVMValueRef k32(Cg *cg, uint32_t v) { return LLVMConstInt(cg->i32, v, 0); }
static LLVMValueRef k64(Cg *cg, uint64_t v) { return LLVMConstInt(cg->i64, v, 0); }

/* Storage type of one element: i1 is a byte. */
static LLVMTypeRef store_type(Cg *cg, DType dt) { return dt == DT_I1 ? cg->i8 : cg_dtype(cg, dt); }

static LLVMValueRef to_store(Cg *cg, DType dt, LLVMValueRef v)
{
    return dt == DT_I1 ? LLVMBuildZExt(cg->b, v, cg->i8, "") : v;
}

static LLVMValueRef from_store(Cg *cg, DType dt, LLVMValueRef v)
{
    return dt == DT_I1 ? LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->i8, 0, 0), "") : v;
}

/* Registers of v seen in layout L (n registers); scalars splat. */
static LLVMValueRef *regs_in(Cg *cg, IrVal v, const Layout *L, uint32_t n)
{
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    const Layout *Lv = cg_layout(cg, v);
    if (Lv && L && !layout_eq(Lv, L)) {
        cg_value_as(cg, v, L, out); /* recomputed when free, else through shared memory */
        return out;
    }
    for (uint32_t r = 0; r < n; r++) out[r] = cg_reg(cg, v, r);
    return out;
}


static LLVMValueRef and_opt(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
    if (!a) return b;
    if (!b) return a;
    return LLVMBuildAnd(cg->b, a, b, "");
}

/* ---- contiguity of address tiles along the last dim -------------------------- */

/* Along the last dim, in runs aligned to multiples of their length:
 * ctg: the value at coordinate c+i is the value at c plus i (i < ctg);
 * cst: the value is constant over the run.  Both powers of two, >= 1. */
typedef struct Axis {
    uint32_t ctg, cst;
} Axis;

static uint32_t umin32(uint32_t a, uint32_t b) { return a < b ? a : b; }

static Axis contig(Cg *cg, IrVal v, int depth)
{
    IrFunc *f = cg->f;
    IrType t = ir_vty(f, v);
    Axis none = {1, 1};
    if (t.kind != TY_TILE) return none;
    uint32_t last = t.rank ? (uint32_t)t.dims[t.rank - 1] : 1;
    Axis whole = {1, last};
    uint32_t def = ir_def(f, v);
    if (t.rank == 0) return (Axis){1, 1u << 30}; /* a scalar is constant everywhere */
    if (def == UINT32_MAX || depth > 12) return none;
    IrOp *op = ir_op(f, def);
    IrVal a = op->nopnd > 0 ? ir_opnd(f, op, 0) : 0, b = op->nopnd > 1 ? ir_opnd(f, op, 1) : 0;
    switch ((IrOpcode)op->opc) {
    case IR_ARANGE: return (Axis){last, 1};
    case IR_SPLAT: return whole;
    case IR_BROADCAST: {
        IrType at = ir_vty(f, a);
        if (at.dims[t.rank - 1] == 1) return whole;
        return contig(cg, a, depth + 1);
    }
    case IR_EXPAND_DIMS:
        if (op->attr.i == t.rank - 1) return (Axis){1, 1}; /* the new last dim has size 1 */
        return contig(cg, a, depth + 1);
    case IR_CAST: {
        IrType at = ir_vty(f, a);
        Axis x = contig(cg, a, depth + 1);
        /* integer widening keeps runs; anything else keeps only constancy */
        if (dt_is_int((DType)at.dt) && dt_is_int((DType)t.dt) && at.dt != DT_I1 && !at.isptr && !t.isptr &&
            dt_bits[t.dt] >= dt_bits[at.dt])
            return x;
        return (Axis){1, x.cst};
    }
    case IR_ADD:
    case IR_ADDPTR: {
        if (op->opc == IR_ADD && dt_is_float((DType)t.dt)) break;
        Axis x = contig(cg, a, depth + 1), y = contig(cg, b, depth + 1);
        Axis r = {1, umin32(x.cst, y.cst)};
        if (x.ctg > 1 && y.cst > 1) r.ctg = umin32(x.ctg, y.cst);
        if (y.ctg > 1 && x.cst > 1) r.ctg = TL_MAX(r.ctg, umin32(y.ctg, x.cst));
        return r;
    }
    case IR_SUB: {
        if (dt_is_float((DType)t.dt)) break;
        Axis x = contig(cg, a, depth + 1), y = contig(cg, b, depth + 1);
        Axis r = {1, umin32(x.cst, y.cst)};
        if (x.ctg > 1 && y.cst > 1) r.ctg = umin32(x.ctg, y.cst);
        return r;
    }
    default:
        break;
    }
    /* any other elementwise op of operands constant along runs stays constant */
    if (ir_opinfo[op->opc].flags & IR_ELEM) {
        uint32_t c = last;
        for (uint32_t i = 0; i < op->nopnd; i++) c = umin32(c, contig(cg, ir_opnd(f, op, i), depth + 1).cst);
        return (Axis){1, c};
    }
    return none;
}

/* Registers per vector group of layout L: the low register bits that give
 * consecutive flat bits of the last dim, untouched by any other input bit. */
static uint32_t group_bits(const Layout *L)
{
    int last = L->rank - 1;
    int k = 0;
    while (k < L->nbits[LL_REG] && k < L->dimbits[last] && L->basis[LL_REG][k] == (1u << k)) k++;
    uint32_t low = (1u << k) - 1;
    for (int in = 0; in < LL_NIN; in++)
        for (int i = in == LL_REG ? k : 0; i < L->nbits[in]; i++)
            while (L->basis[in][i] & low) { /* another input reaches these bits: shrink */
                k--;
                low = (1u << k) - 1;
            }
    return (uint32_t)k;
}

/* Elements per access for layout L, elements of `esize` bytes, at most maxg. */
static uint32_t group_size(const Layout *L, int esize, uint32_t maxg)
{
    uint32_t g = 1u << group_bits(L);
    uint32_t cap = 16u / (uint32_t)esize;
    g = umin32(g, umin32(cap, maxg));
    return g ? g : 1;
}

int cg_store_vector_elems(const Layout *L, int esize) { return (int)group_size(L, esize, 16); }

int cg_store_run_bytes(const Layout *L, int esize)
{
    int last = L->rank - 1, k = (int)group_bits(L);
    uint32_t run = 1u << k; /* elements: a register group, then the lanes that continue it */
    for (int i = 0; i < L->nbits[LL_LANE] && k + i < L->dimbits[last] && L->basis[LL_LANE][i] == run; i++) run *= 2;
    return (int)run * esize;
}

/* ---- predicated PTX accesses -------------------------------------------------- */

/* Words of a g-element group of esize-byte elements: count and bit width. */
static void words_of(uint32_t g, int esize, uint32_t *nw, uint32_t *wbits)
{
    uint32_t bytes = g * (uint32_t)esize;
    if (esize == 8) { *wbits = 64; *nw = bytes / 8; }
    else if (bytes >= 4) { *wbits = 32; *nw = bytes / 4; }
    else { *wbits = 16; *nw = 1; }
}

static char wconstraint(uint32_t wbits) { return wbits == 64 ? 'l' : wbits == 32 ? 'r' : 'h'; }

static LLVMTypeRef wtype(Cg *cg, uint32_t wbits) { return wbits == 64 ? cg->i64 : wbits == 32 ? cg->i32 : cg->i16; }

/* Elements (storage type st) <-> words: both views of one LLVM vector. */
static LLVMValueRef *words_to_elems(Cg *cg, LLVMValueRef *w, uint32_t nw, uint32_t wbits, LLVMTypeRef st, uint32_t g)
{
    LLVMValueRef *e = ARENA_ARRAY(cg->scratch, LLVMValueRef, g);
    if (nw == 1 && g == 1) {
        e[0] = LLVMTypeOf(w[0]) == st ? w[0] : LLVMBuildBitCast(cg->b, w[0], st, "");
        return e;
    }
    LLVMTypeRef wt = wtype(cg, wbits);
    LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(wt, nw));
    for (uint32_t i = 0; i < nw; i++) vec = LLVMBuildInsertElement(cg->b, vec, w[i], k32(cg, i), "");
    LLVMValueRef ev = LLVMBuildBitCast(cg->b, vec, LLVMVectorType(st, g), "");
    for (uint32_t i = 0; i < g; i++) e[i] = LLVMBuildExtractElement(cg->b, ev, k32(cg, i), "");
    return e;
}

static LLVMValueRef *elems_to_words(Cg *cg, LLVMValueRef *e, uint32_t g, LLVMTypeRef st, uint32_t nw, uint32_t wbits)
{
    LLVMValueRef *w = ARENA_ARRAY(cg->scratch, LLVMValueRef, nw);
    LLVMTypeRef wt = wtype(cg, wbits);
    if (nw == 1 && g == 1) {
        w[0] = LLVMTypeOf(e[0]) == wt ? e[0] : LLVMBuildBitCast(cg->b, e[0], wt, "");
        return w;
    }
    LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(st, g));
    for (uint32_t i = 0; i < g; i++) vec = LLVMBuildInsertElement(cg->b, vec, e[i], k32(cg, i), "");
    LLVMValueRef wv = LLVMBuildBitCast(cg->b, vec, LLVMVectorType(wt, nw), "");
    for (uint32_t i = 0; i < nw; i++) w[i] = LLVMBuildExtractElement(cg->b, wv, k32(cg, i), "");
    return w;
}

static const char *ptx_wtype(uint32_t wbits, bool single_byte)
{
    if (single_byte) return "u8";
    return wbits == 64 ? "b64" : wbits == 32 ? "b32" : "b16";
}

/* `@pred ld.global` of nw words at p into words tied to `init` (returned as
 * they were where pred is false).  A single byte loads into a 16-bit register. */
static void pred_load(Cg *cg, LLVMValueRef p, LLVMValueRef pred, uint32_t nw, uint32_t wbits, bool byte,
                      LLVMValueRef *init, LLVMValueRef *out)
{
    StrBuf text = {0}, cons = {0};
    sb_printf(&text, "{ .reg .pred %%p; setp.ne.b32 %%p, $%u, 0; @%%p ld.global%s.%s ", nw + 1,
              nw == 1 ? "" : nw == 2 ? ".v2" : ".v4", ptx_wtype(wbits, byte));
    if (nw == 1) sb_puts(&text, "$0");
    else {
        sb_putc(&text, '{');
        for (uint32_t i = 0; i < nw; i++) sb_printf(&text, "%s$%u", i ? ", " : "", i);
        sb_putc(&text, '}');
    }
    sb_printf(&text, ", [$%u]; }", nw);
    char c = wconstraint(wbits);
    for (uint32_t i = 0; i < nw; i++) sb_printf(&cons, "=%c,", c);
    sb_puts(&cons, "l,r");
    for (uint32_t i = 0; i < nw; i++) sb_printf(&cons, ",%u", i);
    LLVMValueRef args[2 + 4];
    args[0] = LLVMBuildPtrToInt(cg->b, p, cg->i64, "");
    args[1] = LLVMBuildZExt(cg->b, pred, cg->i32, "");
    for (uint32_t i = 0; i < nw; i++) args[2 + i] = init[i];
    LLVMTypeRef wt = wtype(cg, wbits);
    LLVMTypeRef ret = wt;
    if (nw > 1) {
        LLVMTypeRef el[4] = {wt, wt, wt, wt};
        ret = LLVMStructTypeInContext(cg->ctx, el, nw, 0);
    }
    LLVMValueRef r = cg_inline_asm(cg, ret, text.s, cons.s, args, 2 + nw, true);
    if (nw == 1) out[0] = r;
    else
        for (uint32_t i = 0; i < nw; i++) out[i] = LLVMBuildExtractValue(cg->b, r, i, "");
    sb_free(&text);
    sb_free(&cons);
}

/* `@pred st.global` of nw words at p. */
static void pred_store(Cg *cg, LLVMValueRef p, LLVMValueRef pred, uint32_t nw, uint32_t wbits, bool byte,
                       LLVMValueRef *w)
{
    StrBuf text = {0}, cons = {0};
    sb_printf(&text, "{ .reg .pred %%p; setp.ne.b32 %%p, $1, 0; @%%p st.global%s.%s [$0], ",
              nw == 1 ? "" : nw == 2 ? ".v2" : ".v4", ptx_wtype(wbits, byte));
    if (nw == 1) sb_puts(&text, "$2");
    else {
        sb_putc(&text, '{');
        for (uint32_t i = 0; i < nw; i++) sb_printf(&text, "%s$%u", i ? ", " : "", 2 + i);
        sb_putc(&text, '}');
    }
    sb_puts(&text, "; }");
    sb_puts(&cons, "l,r");
    for (uint32_t i = 0; i < nw; i++) sb_printf(&cons, ",%c", wconstraint(wbits));
    sb_puts(&cons, ",~{memory}");
    LLVMValueRef args[2 + 4];
    args[0] = LLVMBuildPtrToInt(cg->b, p, cg->i64, "");
    args[1] = LLVMBuildZExt(cg->b, pred, cg->i32, "");
    for (uint32_t i = 0; i < nw; i++) args[2 + i] = w[i];
    cg_inline_asm(cg, cg->vd, text.s, cons.s, args, 2 + nw, true);
    sb_free(&text);
    sb_free(&cons);
}

/* Element <-> the one word of a scalar access (bytes travel in 16-bit registers). */
static LLVMValueRef elem_word(Cg *cg, LLVMValueRef e, int esize)
{
    if (esize == 1) return LLVMBuildZExt(cg->b, e, cg->i16, "");
    LLVMTypeRef wt = esize == 8 ? cg->i64 : esize == 4 ? cg->i32 : cg->i16;
    return LLVMTypeOf(e) == wt ? e : LLVMBuildBitCast(cg->b, e, wt, "");
}

static LLVMValueRef word_elem(Cg *cg, LLVMValueRef w, int esize, LLVMTypeRef st)
{
    if (esize == 1) return LLVMBuildTrunc(cg->b, w, cg->i8, "");
    return LLVMTypeOf(w) == st ? w : LLVMBuildBitCast(cg->b, w, st, "");
}

/* ---- the access plan ----------------------------------------------------------- */

/* One thread's accesses: per register its address, and (optionally) its mask.
 * `vec_ok` is an extra condition for vector groups (NULL: none), `static_ok`
 * says groups are known contiguous (else no vectors at all). */
typedef struct Access Access;
struct Access {
    DType dt;
    uint32_t n, g;           /* registers, elements per group */
    LLVMValueRef *ptr;       /* per register */
    LLVMValueRef *mask;      /* per register i1, or NULL (all on) */
    LLVMValueRef vec_ok;     /* i1 or NULL */
    LLVMValueRef *fptr;      /* per group start: its address where vec_ok holds (NULL: ptr) */
    uint32_t skip;           /* register bits to skip (stores: replicated registers) */
    /* block accesses: ptr is built where the predicated path needs it (NULL
     * until then), so its 64-bit arithmetic stays out of the vector path;
     * likewise the per-register masks when `all_in` (every element of the
     * thread in bounds, from two coordinates per dim) decides the fast path:
     * built in the predicated path, they are not live across the kernel */
    void (*make_ptr)(Cg *cg, struct Access *A);
    void (*make_mask)(Cg *cg, struct Access *A);
    LLVMValueRef all_in;     /* i1 or NULL: with make_mask, AND of the masks to come */
    LLVMValueRef own;        /* i1 or NULL: the store owner predicate, for make_mask */
    const void *blk;
};

static void need_ptr(Cg *cg, Access *A)
{
    if (!A->ptr && A->make_ptr) A->make_ptr(cg, A);
    if (A->make_mask) {
        A->make_mask(cg, A);
        A->make_mask = NULL;
    }
}

/* The fast path of an access of vector groups: every group of this thread
 * aligned, every mask bit on, vec_ok.  Branches to `fast` or `slow`. */
static void branch_fast(Cg *cg, const Access *A, LLVMBasicBlockRef fast, LLVMBasicBlockRef slow)
{
    uint32_t bytes = A->g * (uint32_t)dt_bytes(A->dt);
    LLVMValueRef ok = A->make_mask ? and_opt(cg, A->vec_ok, A->all_in) : A->vec_ok, misal = NULL;
    for (uint32_t r0 = 0; r0 < A->n; r0 += A->g) {
        if (r0 & A->skip) continue;
        LLVMValueRef p = LLVMBuildPtrToInt(cg->b, A->fptr ? A->fptr[r0] : A->ptr[r0], cg->i64, "");
        misal = misal ? LLVMBuildOr(cg->b, misal, p, "") : p;
        for (uint32_t i = 0; i < A->g && A->mask && !A->make_mask; i++) ok = and_opt(cg, ok, A->mask[r0 + i]);
    }
    /* all groups aligned: the OR of their addresses has no low bits */
    LLVMValueRef al = LLVMBuildICmp(cg->b, LLVMIntEQ, LLVMBuildAnd(cg->b, misal, k64(cg, bytes - 1), ""), k64(cg, 0), "");
    ok = and_opt(cg, ok, al);
    LLVMBuildCondBr(cg->b, ok, fast, slow);
}

/* Whether an access takes the two-path form: vector groups, and more than one
 * element per group. */
static bool two_paths(const Access *A) { return A->g > 1 && A->n >= A->g; }

static LLVMValueRef aligned(Cg *cg, LLVMValueRef p, uint32_t bytes)
{
    LLVMValueRef a = LLVMBuildPtrToInt(cg->b, p, cg->i64, "");
    return LLVMBuildICmp(cg->b, LLVMIntEQ, LLVMBuildAnd(cg->b, a, k64(cg, bytes - 1), ""), k64(cg, 0), "");
}

static void access_load_general(Cg *cg, Access *A, LLVMValueRef *other, LLVMValueRef *out);

/* Loads per Access; `other` per register (storage type) is the value of
 * masked-off elements.  With vector groups there are two paths: where every
 * group of the thread is aligned and unmasked (the common case: all but the
 * threads at a ragged edge), plain vector loads, which LLVM and ptxas may
 * schedule freely; elsewhere the general predicated form below. */
static void access_load(Cg *cg, Access *A, LLVMValueRef *other, LLVMValueRef *out)
{
    if (!two_paths(A)) {
        access_load_general(cg, A, other, out);
        return;
    }
    int esize = dt_bytes(A->dt);
    LLVMTypeRef st = store_type(cg, A->dt);
    uint32_t nw, wbits;
    words_of(A->g, esize, &nw, &wbits);
    LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ld.vec");
    LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ld.pred");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ld.end");
    branch_fast(cg, A, fast, slow);
    LLVMPositionBuilderAtEnd(cg->b, fast);
    LLVMValueRef *fv = ARENA_ARRAY(cg->scratch, LLVMValueRef, A->n);
    LLVMTypeRef vt = LLVMVectorType(wtype(cg, wbits), nw);
    /* Elements narrower than 32 bits meet at ld.end as the words they were loaded in:
     * NVPTX has no 8-bit registers, so a phi per fp8 or i8 element took a 32-bit
     * register each, and the FP8 decode kernel's [64, 128] K and V tiles spilled. */
    bool by_words = esize == 1 && A->g > 1;
    uint32_t ngroups = A->n / A->g;
    LLVMValueRef *fw = ARENA_ARRAY(cg->scratch, LLVMValueRef, (size_t)ngroups * nw);
    LLVMValueRef *sw = ARENA_ARRAY(cg->scratch, LLVMValueRef, (size_t)ngroups * nw);
    for (uint32_t r0 = 0; r0 < A->n; r0 += A->g) {
        LLVMValueRef v = LLVMBuildLoad2(cg->b, vt, A->fptr ? A->fptr[r0] : A->ptr[r0], "");
        LLVMSetAlignment(v, A->g * (unsigned)esize);
        LLVMValueRef *w = &fw[(r0 / A->g) * nw];
        for (uint32_t i = 0; i < nw; i++) w[i] = LLVMBuildExtractElement(cg->b, v, k32(cg, i), "");
        if (!by_words) {
            LLVMValueRef *e = words_to_elems(cg, w, nw, wbits, st, A->g);
            memcpy(&fv[r0], e, A->g * sizeof *e);
        }
    }
    LLVMBasicBlockRef fast_end = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, slow);
    LLVMValueRef *sv = ARENA_ARRAY(cg->scratch, LLVMValueRef, A->n);
    access_load_general(cg, A, other, sv);
    if (by_words)
        for (uint32_t r0 = 0; r0 < A->n; r0 += A->g)
            memcpy(&sw[(r0 / A->g) * nw], elems_to_words(cg, &sv[r0], A->g, st, nw, wbits), nw * sizeof *sw);
    LLVMBasicBlockRef slow_end = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
    LLVMBasicBlockRef bb[2] = {fast_end, slow_end};
    if (by_words) {
        LLVMValueRef *jw = ARENA_ARRAY(cg->scratch, LLVMValueRef, (size_t)ngroups * nw);
        for (uint32_t i = 0; i < ngroups * nw; i++) { /* the phis first: they lead the block */
            jw[i] = LLVMBuildPhi(cg->b, wtype(cg, wbits), "");
            LLVMValueRef in[2] = {fw[i], sw[i]};
            LLVMAddIncoming(jw[i], in, bb, 2);
        }
        for (uint32_t r0 = 0; r0 < A->n; r0 += A->g)
            memcpy(&out[r0], words_to_elems(cg, &jw[(r0 / A->g) * nw], nw, wbits, st, A->g), A->g * sizeof *out);
        return;
    }
    for (uint32_t r = 0; r < A->n; r++) {
        LLVMValueRef phi = LLVMBuildPhi(cg->b, st, "");
        LLVMValueRef in[2] = {fv[r], sv[r]};
        LLVMAddIncoming(phi, in, bb, 2);
        out[r] = phi;
    }
}

static void access_load_general(Cg *cg, Access *A, LLVMValueRef *other, LLVMValueRef *out)
{
    need_ptr(cg, A);
    int esize = dt_bytes(A->dt);
    LLVMTypeRef st = store_type(cg, A->dt);
    LLVMValueRef zero = LLVMConstNull(st);
    for (uint32_t r0 = 0; r0 < A->n; r0 += A->g) {
        uint32_t g = A->g;
        if (g == 1 && !A->mask) { /* plain load */
            LLVMValueRef v = LLVMBuildLoad2(cg->b, st, A->ptr[r0], "");
            LLVMSetAlignment(v, (unsigned)esize);
            out[r0] = v;
            continue;
        }
        LLVMValueRef *cur = ARENA_ARRAY(cg->scratch, LLVMValueRef, g);
        for (uint32_t i = 0; i < g; i++) cur[i] = other ? other[r0 + i] : zero;
        LLVMValueRef vp = NULL;
        if (g > 1) {
            uint32_t nw, wbits;
            words_of(g, esize, &nw, &wbits);
            vp = and_opt(cg, A->vec_ok, aligned(cg, A->ptr[r0], g * (uint32_t)esize));
            for (uint32_t i = 0; i < g && A->mask; i++) vp = LLVMBuildAnd(cg->b, vp, A->mask[r0 + i], "");
            LLVMValueRef *w = elems_to_words(cg, cur, g, st, nw, wbits), wout[4];
            pred_load(cg, A->ptr[r0], vp, nw, wbits, false, w, wout);
            cur = words_to_elems(cg, wout, nw, wbits, st, g);
        }
        for (uint32_t i = 0; i < g; i++) {
            LLVMValueRef p = A->mask ? A->mask[r0 + i] : LLVMConstInt(cg->i1, 1, 0);
            if (vp) p = LLVMBuildAnd(cg->b, p, LLVMBuildNot(cg->b, vp, ""), "");
            uint32_t wbits = esize == 8 ? 64 : esize == 4 ? 32 : 16;
            LLVMValueRef w = elem_word(cg, cur[i], esize), wout;
            pred_load(cg, A->ptr[r0 + i], p, 1, wbits, esize == 1, &w, &wout);
            out[r0 + i] = word_elem(cg, wout, esize, st);
        }
    }
}

static void access_store_general(Cg *cg, Access *A, LLVMValueRef *val);

/* Stores per Access: two paths as for loads (plain vector stores where every
 * group of the thread is aligned and unmasked, else the predicated form). */
static void access_store(Cg *cg, Access *A, LLVMValueRef *val)
{
    if (!two_paths(A)) {
        access_store_general(cg, A, val);
        return;
    }
    int esize = dt_bytes(A->dt);
    LLVMTypeRef st = store_type(cg, A->dt);
    uint32_t nw, wbits;
    words_of(A->g, esize, &nw, &wbits);
    LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "st.vec");
    LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "st.pred");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "st.end");
    branch_fast(cg, A, fast, slow);
    LLVMPositionBuilderAtEnd(cg->b, fast);
    LLVMTypeRef vt = LLVMVectorType(wtype(cg, wbits), nw);
    for (uint32_t r0 = 0; r0 < A->n; r0 += A->g) {
        if (r0 & A->skip) continue;
        LLVMValueRef *w = elems_to_words(cg, &val[r0], A->g, st, nw, wbits);
        LLVMValueRef v = LLVMGetUndef(vt);
        for (uint32_t i = 0; i < nw; i++) v = LLVMBuildInsertElement(cg->b, v, w[i], k32(cg, i), "");
        LLVMValueRef s = LLVMBuildStore(cg->b, v, A->fptr ? A->fptr[r0] : A->ptr[r0]);
        LLVMSetAlignment(s, A->g * (unsigned)esize);
    }
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, slow);
    access_store_general(cg, A, val);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
}

static void access_store_general(Cg *cg, Access *A, LLVMValueRef *val)
{
    need_ptr(cg, A);
    int esize = dt_bytes(A->dt);
    LLVMTypeRef st = store_type(cg, A->dt);
    for (uint32_t r0 = 0; r0 < A->n; r0 += A->g) {
        uint32_t g = A->g;
        if (r0 & A->skip) continue; /* group bits never replicate, so whole groups skip */
        if (g == 1 && !A->mask) {
            LLVMValueRef s = LLVMBuildStore(cg->b, val[r0], A->ptr[r0]);
            LLVMSetAlignment(s, (unsigned)esize);
            continue;
        }
        LLVMValueRef vp = NULL;
        if (g > 1) {
            uint32_t nw, wbits;
            words_of(g, esize, &nw, &wbits);
            vp = and_opt(cg, A->vec_ok, aligned(cg, A->ptr[r0], g * (uint32_t)esize));
            for (uint32_t i = 0; i < g && A->mask; i++) vp = LLVMBuildAnd(cg->b, vp, A->mask[r0 + i], "");
            LLVMValueRef *w = elems_to_words(cg, &val[r0], g, st, nw, wbits);
            pred_store(cg, A->ptr[r0], vp, nw, wbits, false, w);
        }
        for (uint32_t i = 0; i < g; i++) {
            LLVMValueRef p = A->mask ? A->mask[r0 + i] : LLVMConstInt(cg->i1, 1, 0);
            if (vp) p = LLVMBuildAnd(cg->b, p, LLVMBuildNot(cg->b, vp, ""), "");
            uint32_t wbits = esize == 8 ? 64 : esize == 4 ? 32 : 16;
            LLVMValueRef w = elem_word(cg, val[r0 + i], esize);
            pred_store(cg, A->ptr[r0 + i], p, 1, wbits, esize == 1, &w);
        }
    }
}

/* Registers of a store skipped statically, and the owner predicate folded into masks. */
static void own_stores(Cg *cg, const Layout *L, Access *A)
{
    if (!L) { /* a scalar access: every thread holds it; thread 0 writes */
        LLVMValueRef t0 = LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, k32(cg, 0), "");
        LLVMValueRef *m = ARENA_ARRAY(cg->scratch, LLVMValueRef, 1);
        m[0] = and_opt(cg, A->mask ? A->mask[0] : NULL, t0);
        A->mask = m;
        return;
    }
    A->skip = layout_replicated(L, LL_REG);
    LLVMValueRef own = cg_owner_pred(cg, L);
    if (!own) return;
    if (A->make_mask) { /* masks come later: they and the fast path's test take `own` */
        A->own = own;
        A->all_in = and_opt(cg, A->all_in, own);
        return;
    }
    LLVMValueRef *m = ARENA_ARRAY(cg->scratch, LLVMValueRef, A->n);
    for (uint32_t r = 0; r < A->n; r++) m[r] = and_opt(cg, A->mask ? A->mask[r] : NULL, own);
    A->mask = m;
}

static LLVMValueRef *masks_in(Cg *cg, IrOp *op, uint32_t i, const Layout *L, uint32_t n)
{
    if (op->nopnd <= i) return NULL;
    LLVMValueRef *m = regs_in(cg, ir_opnd(cg->f, op, i), L, n);
    for (uint32_t r = 0; r < n; r++)
        if (LLVMTypeOf(m[r]) != cg->i1) m[r] = LLVMBuildICmp(cg->b, LLVMIntNE, m[r], LLVMConstNull(LLVMTypeOf(m[r])), "");
    return m;
}

/* ---- LOAD / STORE ------------------------------------------------------------- */

static uint32_t ptr_group(Cg *cg, IrVal ptrs, const Layout *L, DType dt)
{
    if (!L) return 1;
    Axis a = contig(cg, ptrs, 0);
    return group_size(L, dt_bytes(dt), a.ctg);
}

void cg_lower_LOAD(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrVal res = ir_res(op, 0), ptrs = ir_opnd(cg->f, op, 0);
    DType dt = (DType)ir_vty(cg->f, res).dt;
    const Layout *L = cg_layout(cg, res);
    uint32_t n = L ? layout_nregs(L) : 1;
    Access A = {.dt = dt, .n = n, .g = ptr_group(cg, ptrs, L, dt)};
    A.ptr = regs_in(cg, ptrs, L, n);
    A.mask = masks_in(cg, op, 1, L, n);
    LLVMValueRef *other = NULL;
    if (op->nopnd > 2) {
        other = regs_in(cg, ir_opnd(cg->f, op, 2), L, n);
        for (uint32_t r = 0; r < n; r++) other[r] = to_store(cg, dt, other[r]);
    }
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    access_load(cg, &A, other, out);
    for (uint32_t r = 0; r < n; r++) out[r] = from_store(cg, dt, out[r]);
    cg_define(cg, res, out, n);
}

void cg_lower_STORE(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrVal ptrs = ir_opnd(cg->f, op, 0);
    IrType pt = ir_vty(cg->f, ptrs);
    DType dt = (DType)pt.dt;
    /* the pointers' layout, or the value's where the layout pass chose it (the
     * pointers are then free values, recomputed in it); a free value (a
     * constant) through pointers that are not free is recomputed in theirs */
    IrVal v = ir_opnd(cg->f, op, 1);
    const Layout *L = cg_layout(cg, ptrs), *Lv = cg_layout(cg, v);
    if (L && Lv && !(cg->free_[v] && !cg->free_[ptrs])) L = Lv;
    uint32_t n = L ? layout_nregs(L) : 1;
    Access A = {.dt = dt, .n = n, .g = ptr_group(cg, ptrs, L, dt)};
    A.ptr = regs_in(cg, ptrs, L, n);
    A.mask = masks_in(cg, op, 2, L, n);
    own_stores(cg, L, &A);
    LLVMValueRef *val = regs_in(cg, ir_opnd(cg->f, op, 1), L, n);
    for (uint32_t r = 0; r < n; r++) val[r] = to_store(cg, dt, val[r]);
    access_store(cg, &A, val);
}

/* ---- BLOCK_LOAD / BLOCK_STORE ----------------------------------------------------- */

/* Addresses and in-bounds masks of block `L` (type bt) of view operand 0 at
 * offsets operands 1..rank; vectors need stride[last] == 1 at run time.
 * Dims the layout does not spread (size 1) are scalars, computed once.  A
 * spread dim's bounds test off + c in [0, shape) (c the coordinate inside the
 * block, below 2^24) is c in [lo, hi) with lo = clamp(-off, 0, D) and
 * hi = clamp(shape - off, 0, D), D the block's extent: two 32-bit compares of
 * scalars computed once instead of 64-bit arithmetic per element.  The
 * vector path's addresses (A->fptr) take stride[last] as 1, so a group's
 * address is the thread's base plus a constant. */
typedef struct BlkCtx {
    CgVal *V;
    const Layout *L;
    int rank;
    bool spread[IR_MAXRANK];
    LLVMValueRef off[IR_MAXRANK], base, toff;
    LLVMValueRef lo[IR_MAXRANK], hi[IR_MAXRANK], in0;
    bool lazy;                  /* masks and addresses built in the predicated path */
    LLVMValueRef slow_toff;     /* there: toff through an opaque copy (see slow_thread_offset) */
} BlkCtx;

/* The thread offset the predicated path computes its coordinates from.  Built
 * there (lazy), the per-register coordinates, masks and 64-bit addresses of
 * one access would otherwise be the same LLVM values as another access's
 * (a load's and the store of the same block, or the next iteration's load):
 * GVN then makes them available on the vector path too and merges them with
 * phis, keeping dozens of 64-bit values live across the kernel (a persistent
 * row loop spilled 800 bytes per thread).  An opaque copy (an inline-asm mov,
 * its text unique to the access) makes each access's predicated path compute
 * its own. */
static LLVMValueRef slow_thread_offset(Cg *cg, BlkCtx *c)
{
    if (!c->lazy) return c->toff;
    if (!c->slow_toff) {
        /* the text differs per access, so LLVM cannot merge two copies either */
        LLVMValueRef t = c->toff;
        char text[64];
        snprintf(text, sizeof text, "mov.b32 $0, $1; // slow path %u", cg->nlaunder++);
        c->slow_toff = cg_inline_asm(cg, cg->i32, text, "=r,r", &t, 1, false);
    }
    return c->slow_toff;
}

/* The in-bounds mask of each register: in0 (the scalar dims) and, per spread
 * dim, its coordinate c in [lo, hi); `own` (stores) folded in. */
static void block_masks(Cg *cg, Access *A)
{
    BlkCtx *c = (BlkCtx *)A->blk;
    LLVMBuilderRef b = cg->b;
    LLVMValueRef toff = c->L ? slow_thread_offset(cg, c) : NULL;
    A->mask = ARENA_ARRAY(cg->scratch, LLVMValueRef, A->n);
    for (uint32_t r = 0; r < A->n; r++) {
        LLVMValueRef in = c->in0;
        for (int k = 0; k < c->rank; k++) {
            if (!c->spread[k]) continue;
            LLVMValueRef co = cg_coord(cg, c->L, toff, r, k);
            in = and_opt(cg, in, LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntUGE, co, c->lo[k], ""),
                                              LLVMBuildICmp(b, LLVMIntULT, co, c->hi[k], ""), ""));
        }
        in = and_opt(cg, in, A->own);
        A->mask[r] = in ? in : LLVMConstInt(cg->i1, 1, 0);
    }
}

/* Whether the register bases of L are pairwise disjoint and disjoint from
 * every lane and warp basis: then a register's flat index is the thread's
 * offset OR the register's part, so along each dim the thread's coordinates
 * run from that of register 0 to that of the last register (all bits set). */
static bool regs_disjoint(const Layout *L)
{
    uint32_t seen = 0;
    for (int in = 0; in < LL_NIN; in++)
        for (int i = 0; i < L->nbits[in]; i++) {
            uint32_t v = L->basis[in][i];
            if (in != LL_REG && !v) continue;
            if (v & seen) return false;
            seen |= v;
        }
    return true;
}

/* The predicated path's addresses: base + sum over spread dims of (off + c) * stride. */
static void block_ptrs(Cg *cg, Access *A)
{
    BlkCtx *c = (BlkCtx *)A->blk;
    LLVMBuilderRef b = cg->b;
    LLVMValueRef toff = c->L ? slow_thread_offset(cg, c) : NULL;
    LLVMTypeRef st = store_type(cg, A->dt);
    A->ptr = ARENA_ARRAY(cg->scratch, LLVMValueRef, A->n);
    for (uint32_t r = 0; r < A->n; r++) {
        LLVMValueRef idx = c->base;
        for (int k = 0; k < c->rank; k++) {
            if (!c->spread[k]) continue;
            LLVMValueRef c64 = LLVMBuildZExt(b, cg_coord(cg, c->L, toff, r, k), cg->i64, "");
            idx = LLVMBuildAdd(b, idx, LLVMBuildMul(b, LLVMBuildAdd(b, c->off[k], c64, ""), c->V->stride[k], ""), "");
        }
        A->ptr[r] = LLVMBuildGEP2(b, st, c->V->ptr, &idx, 1, "");
    }
}

/* The access of a block of op's view at op's offsets, plus `add` (NULL: none) per dim. */
static void block_access(Cg *cg, IrOp *op, IrType bt, const Layout *L, const int64_t *add, Access *A)
{
    IrFunc *f = cg->f;
    LLVMBuilderRef b = cg->b;
    BlkCtx *cx = ARENA_ARRAY(cg->scratch, BlkCtx, 1);
    memset(cx, 0, sizeof *cx);
    IrVal view = ir_opnd(f, op, 0);
    CgVal *V = cx->V = cg_val(cg, view);
    int rank = cx->rank = bt.rank;
    cx->L = L;
    uint32_t n = L ? layout_nregs(L) : 1;
    LLVMValueRef *lo = cx->lo, *hi = cx->hi;
    LLVMValueRef in0 = NULL, base = k64(cg, 0); /* the scalar dims' test and offset */
    for (int k = 0; k < rank; k++) {
        IrVal o = ir_opnd(f, op, 1 + (uint32_t)k);
        LLVMValueRef x = cg_reg(cg, o, 0);
        DType odt = (DType)ir_vty(f, o).dt;
        if (LLVMTypeOf(x) != cg->i64)
            x = dt_is_signed(odt) ? LLVMBuildSExt(b, x, cg->i64, "") : LLVMBuildZExt(b, x, cg->i64, "");
        if (add && add[k]) x = LLVMBuildAdd(b, x, k64(cg, (uint64_t)add[k]), "");
        cx->off[k] = x;
        cx->spread[k] = L && L->dimbits[k];
        if (!cx->spread[k]) {
            /* unsigned compare: negative coordinates are out of bounds too */
            in0 = and_opt(cg, in0, LLVMBuildICmp(b, LLVMIntULT, x, V->shape[k], ""));
            base = LLVMBuildAdd(b, base, LLVMBuildMul(b, x, V->stride[k], ""), "");
            continue;
        }
        LLVMValueRef D = k64(cg, 1ull << L->dimbits[k]), z = k64(cg, 0), args[2];
        LLVMValueRef nl = LLVMBuildNeg(b, x, ""), nh = LLVMBuildSub(b, V->shape[k], x, "");
        args[0] = nl; args[1] = z;
        nl = cg_call_intrinsic(cg, "llvm.smax.i64", cg->i64, args, 2);
        args[0] = nl; args[1] = D;
        nl = cg_call_intrinsic(cg, "llvm.smin.i64", cg->i64, args, 2);
        args[0] = nh; args[1] = z;
        nh = cg_call_intrinsic(cg, "llvm.smax.i64", cg->i64, args, 2);
        args[0] = nh; args[1] = D;
        nh = cg_call_intrinsic(cg, "llvm.smin.i64", cg->i64, args, 2);
        lo[k] = LLVMBuildTrunc(b, nl, cg->i32, "");
        hi[k] = LLVMBuildTrunc(b, nh, cg->i32, "");
    }
    cx->base = base;
    cx->toff = L ? cg_thread_offset(cg, L) : NULL;
    LLVMTypeRef st = store_type(cg, A->dt);
    A->n = n;
    A->g = L && rank ? group_size(L, dt_bytes(A->dt), 16) : 1;
    A->blk = cx;
    A->make_ptr = block_ptrs;
    bool two = two_paths(A);
    cx->lazy = two;
    LLVMValueRef fbase = NULL;
    if (two) { /* the vector path: stride[last] == 1, so a group is fbase + a constant */
        LLVMValueRef fo = LLVMBuildAdd(b, base, cx->off[rank - 1], "");
        fbase = LLVMBuildGEP2(b, st, V->ptr, &fo, 1, "");
        A->fptr = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    }
    cx->in0 = in0;
    for (uint32_t r = 0; two && r < n; r += A->g) {
        LLVMValueRef fidx = NULL;
        for (int k = 0; k < rank; k++) {
            if (!cx->spread[k]) continue;
            LLVMValueRef c64 = LLVMBuildZExt(b, cg_coord(cg, L, cx->toff, r, k), cg->i64, "");
            LLVMValueRef part = k == rank - 1 ? c64 : LLVMBuildMul(b, LLVMBuildAdd(b, cx->off[k], c64, ""), V->stride[k], "");
            fidx = fidx ? LLVMBuildAdd(b, fidx, part, "") : part;
        }
        LLVMValueRef fi = fidx ? fidx : k64(cg, 0);
        A->fptr[r] = LLVMBuildGEP2(b, st, fbase, &fi, 1, "");
    }
    if (A->g > 1) A->vec_ok = LLVMBuildICmp(b, LLVMIntEQ, V->stride[rank - 1], k64(cg, 1), "unit_stride");
    if (two && L && regs_disjoint(L)) {
        /* the fast path's test: per spread dim, the first and last coordinate */
        LLVMValueRef all = in0;
        uint32_t last = layout_nregs(L) - 1;
        for (int k = 0; k < rank; k++) {
            if (!cx->spread[k]) continue;
            LLVMValueRef cmin = cg_coord(cg, L, cx->toff, 0, k), cmax = cg_coord(cg, L, cx->toff, last, k);
            all = and_opt(cg, all, LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntUGE, cmin, lo[k], ""),
                                               LLVMBuildICmp(b, LLVMIntULT, cmax, hi[k], ""), ""));
        }
        A->all_in = all ? all : LLVMConstInt(cg->i1, 1, 0);
        A->make_mask = block_masks;
        return;
    }
    block_masks(cg, A);
    if (!two) block_ptrs(cg, A);
}

void cg_lower_BLOCK_LOAD(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    IrVal res = ir_res(op, 0);
    IrType rt = ir_vty(cg->f, res);
    DType dt = (DType)rt.dt;
    const Layout *L = cg_layout(cg, res);
    Access A = {.dt = dt};
    block_access(cg, op, rt, L, NULL, &A);
    LLVMValueRef *other = NULL;
    if (op->attr.j) {
        other = regs_in(cg, ir_opnd(cg->f, op, 1 + (uint32_t)rt.rank), L, A.n);
        for (uint32_t r = 0; r < A.n; r++) other[r] = to_store(cg, dt, other[r]);
    }
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, A.n);
    access_load(cg, &A, other, out);
    for (uint32_t r = 0; r < A.n; r++) out[r] = from_store(cg, dt, out[r]);
    cg_define(cg, res, out, A.n);
}

void cg_lower_BLOCK_STORE(Cg *cg, uint32_t opid, IrOp *op)
{
    if (cg_tma_store(cg, opid, op)) return; /* through shared memory (lower_async.c) */
    IrType vt = ir_vty(cg->f, ir_opnd(cg->f, op, 0));
    IrVal value = ir_opnd(cg->f, op, 1 + vt.rank);
    IrType bt = ir_vty(cg->f, value);
    DType dt = (DType)bt.dt;
    const Layout *L = cg_layout(cg, value);
    Access A = {.dt = dt};
    block_access(cg, op, bt, L, NULL, &A);
    own_stores(cg, L, &A);
    LLVMValueRef *val = regs_in(cg, value, L, A.n);
    for (uint32_t r = 0; r < A.n; r++) val[r] = to_store(cg, dt, val[r]);
    access_store(cg, &A, val);
}

void cg_store_staged(Cg *cg, IrOp *op, IrType t, const SharedLayout *S, LLVMValueRef base, uint32_t col)
{
    DType dt = (DType)t.dt;
    TL_ASSERT(t.rank == 2 && dt != DT_I1 && !t.isptr, "codegen");
    Layout L = layout_default(t, cg->warps);
    uint32_t n = layout_nregs(&L);
    LLVMValueRef *val = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    cg_smem_load_shared(cg, &L, S, cg_dtype(cg, dt), base, val);
    int64_t add[IR_MAXRANK] = {0, (int64_t)col};
    Access A = {.dt = dt};
    block_access(cg, op, t, &L, add, &A);
    own_stores(cg, &L, &A);
    access_store(cg, &A, val);
}

/* ---- atomics ---------------------------------------------------------------------- */

static LLVMValueRef float_maxmin_loop(Cg *cg, LLVMValueRef p, LLVMValueRef v, DType dt, bool want_max)
{
    LLVMTypeRef ft = cg_dtype(cg, dt), it = LLVMIntTypeInContext(cg->ctx, dt_bits[dt]);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "atom.cas");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "atom.done");
    LLVMValueRef first = LLVMBuildLoad2(cg->b, it, p, "");
    LLVMSetVolatile(first, 1);
    LLVMSetAlignment(first, (unsigned)dt_bytes(dt));
    LLVMBuildBr(cg->b, loop);
    LLVMPositionBuilderAtEnd(cg->b, loop);
    LLVMValueRef old = LLVMBuildPhi(cg->b, it, "");
    LLVMAddIncoming(old, &first, &pre, 1);
    LLVMValueRef oldf = LLVMBuildBitCast(cg->b, old, ft, "");
    LLVMValueRef ops[2] = {oldf, v};
    const char *sfx = dt == DT_F32 ? "f32" : dt == DT_F64 ? "f64" : dt == DT_F16 ? "f16" : "bf16";
    char name[48];
    snprintf(name, sizeof name, "llvm.%s.%s", want_max ? "maximum" : "minimum", sfx);
    LLVMValueRef nw = LLVMBuildBitCast(cg->b, cg_call_intrinsic(cg, name, ft, ops, 2), it, "");
    LLVMValueRef cx = LLVMBuildAtomicCmpXchg(cg->b, p, old, nw, LLVMAtomicOrderingMonotonic,
                                             LLVMAtomicOrderingMonotonic, 0);
    LLVMValueRef seen = LLVMBuildExtractValue(cg->b, cx, 0, "");
    LLVMValueRef ok = LLVMBuildExtractValue(cg->b, cx, 1, "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMAddIncoming(old, &seen, &latch, 1);
    LLVMBuildCondBr(cg->b, ok, done, loop);
    LLVMPositionBuilderAtEnd(cg->b, done);
    return LLVMBuildBitCast(cg->b, seen, ft, "");
}

/* One element's atomic; returns the old value (element type). */
static LLVMValueRef atomic_one(Cg *cg, IrOpcode opc, DType dt, LLVMValueRef p, LLVMValueRef v, LLVMValueRef desired)
{
    LLVMBuilderRef b = cg->b;
    LLVMAtomicOrdering mo = LLVMAtomicOrderingMonotonic;
    if (opc == IR_ATOMIC_CAS) {
        LLVMTypeRef it = dt == DT_I1 ? cg->i8 : LLVMIntTypeInContext(cg->ctx, dt_bits[dt]);
        LLVMValueRef e = to_store(cg, dt, v), d = to_store(cg, dt, desired);
        if (LLVMTypeOf(e) != it) e = LLVMBuildBitCast(b, e, it, "");
        if (LLVMTypeOf(d) != it) d = LLVMBuildBitCast(b, d, it, "");
        LLVMValueRef cx = LLVMBuildAtomicCmpXchg(b, p, e, d, mo, mo, 0);
        LLVMValueRef old = LLVMBuildExtractValue(b, cx, 0, "");
        if (dt == DT_I1) return from_store(cg, dt, old);
        return LLVMTypeOf(old) == cg_dtype(cg, dt) ? old : LLVMBuildBitCast(b, old, cg_dtype(cg, dt), "");
    }
    if (dt == DT_I1) {
        LLVMAtomicRMWBinOp bop = opc == IR_ATOMIC_ADD ? LLVMAtomicRMWBinOpXor
                               : opc == IR_ATOMIC_MAX ? LLVMAtomicRMWBinOpOr : LLVMAtomicRMWBinOpAnd;
        return from_store(cg, dt, LLVMBuildAtomicRMW(b, bop, p, to_store(cg, dt, v), mo, 0));
    }
    if (dt_is_float(dt)) {
        if (opc == IR_ATOMIC_ADD) return LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpFAdd, p, v, mo, 0);
        return float_maxmin_loop(cg, p, v, dt, opc == IR_ATOMIC_MAX);
    }
    bool sg = dt_is_signed(dt);
    LLVMAtomicRMWBinOp bop = opc == IR_ATOMIC_ADD ? LLVMAtomicRMWBinOpAdd
                           : opc == IR_ATOMIC_MAX ? (sg ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax)
                                                  : (sg ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin);
    return LLVMBuildAtomicRMW(b, bop, p, v, mo, 0);
}

/* Replicas of each element receive the owner's old value: replicated
 * registers copy in-thread, replicated lanes/warps read it back from shared memory. */
static void share_old(Cg *cg, const Layout *L, DType dt, LLVMValueRef *out)
{
    uint32_t n = layout_nregs(L), rr = layout_replicated(L, LL_REG);
    for (uint32_t r = 0; r < n; r++)
        if (r & rr) out[r] = out[r & ~rr];
    LLVMValueRef own = cg_owner_pred(cg, L);
    if (!own) return;
    LLVMTypeRef st = store_type(cg, dt);
    uint32_t bytes = (1u << layout_total_bits(L)) * (uint32_t)dt_bytes(dt);
    LLVMValueRef base = cg_smem(cg, bytes);
    LLVMValueRef toff = cg_thread_offset(cg, L);
    cg_barrier(cg);
    LLVMBasicBlockRef stb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "atom.share");
    LLVMBasicBlockRef ldb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "atom.shared");
    LLVMBuildCondBr(cg->b, own, stb, ldb);
    LLVMPositionBuilderAtEnd(cg->b, stb);
    for (uint32_t r = 0; r < n; r++) {
        if (r & rr) continue;
        LLVMValueRef flat = LLVMBuildXor(cg->b, toff, k32(cg, layout_apply(L, r, 0, 0)), "");
        LLVMBuildStore(cg->b, to_store(cg, dt, out[r]), LLVMBuildGEP2(cg->b, st, base, &flat, 1, ""));
    }
    LLVMBuildBr(cg->b, ldb);
    LLVMPositionBuilderAtEnd(cg->b, ldb);
    cg_barrier(cg);
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef flat = LLVMBuildXor(cg->b, toff, k32(cg, layout_apply(L, r, 0, 0)), "");
        out[r] = from_store(cg, dt, LLVMBuildLoad2(cg->b, st, LLVMBuildGEP2(cg->b, st, base, &flat, 1, ""), ""));
    }
    cg_barrier(cg);
}

static void lower_atomic(Cg *cg, IrOp *op)
{
    IrFunc *f = cg->f;
    IrOpcode opc = (IrOpcode)op->opc;
    IrVal res = ir_res(op, 0), ptrs = ir_opnd(f, op, 0);
    DType dt = (DType)ir_vty(f, res).dt;
    const Layout *L = cg_layout(cg, res);
    uint32_t n = L ? layout_nregs(L) : 1, nval = opc == IR_ATOMIC_CAS ? 2 : 1;
    LLVMValueRef *p = regs_in(cg, ptrs, L, n);
    LLVMValueRef *v = regs_in(cg, ir_opnd(f, op, 1), L, n);
    LLVMValueRef *d = nval == 2 ? regs_in(cg, ir_opnd(f, op, 2), L, n) : NULL;
    LLVMValueRef *m = masks_in(cg, op, 1 + nval, L, n);
    Access A = {.dt = dt, .n = n, .g = 1, .ptr = p, .mask = m};
    own_stores(cg, L, &A);
    LLVMTypeRef et = cg_dtype(cg, dt);
    LLVMValueRef *out = ARENA_ARRAY(cg->scratch, LLVMValueRef, n);
    LLVMValueRef zero = LLVMConstNull(et);
    for (uint32_t r = 0; r < n; r++) {
        if (r & A.skip) continue;
        if (!A.mask) {
            out[r] = atomic_one(cg, opc, dt, p[r], v[r], d ? d[r] : NULL);
            continue;
        }
        LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b);
        LLVMBasicBlockRef dob = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "atom");
        LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "atom.end");
        LLVMBuildCondBr(cg->b, A.mask[r], dob, join);
        LLVMPositionBuilderAtEnd(cg->b, dob);
        LLVMValueRef old = atomic_one(cg, opc, dt, p[r], v[r], d ? d[r] : NULL);
        LLVMBasicBlockRef end = LLVMGetInsertBlock(cg->b);
        LLVMBuildBr(cg->b, join);
        LLVMPositionBuilderAtEnd(cg->b, join);
        LLVMValueRef phi = LLVMBuildPhi(cg->b, et, "");
        LLVMValueRef in[2] = {zero, old};
        LLVMBasicBlockRef bb[2] = {from, end};
        LLVMAddIncoming(phi, in, bb, 2);
        out[r] = phi;
    }
    if (L) {
        share_old(cg, L, dt, out);
    } else if (A.mask) { /* a scalar atomic ran in thread 0: everyone gets its old value */
        LLVMValueRef base = cg_smem(cg, 8);
        LLVMTypeRef st = store_type(cg, dt);
        cg_barrier(cg);
        LLVMBasicBlockRef stb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "atom.share");
        LLVMBasicBlockRef ldb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "atom.shared");
        LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, k32(cg, 0), ""), stb, ldb);
        LLVMPositionBuilderAtEnd(cg->b, stb);
        LLVMBuildStore(cg->b, to_store(cg, dt, out[0]), base);
        LLVMBuildBr(cg->b, ldb);
        LLVMPositionBuilderAtEnd(cg->b, ldb);
        cg_barrier(cg);
        out[0] = from_store(cg, dt, LLVMBuildLoad2(cg->b, st, base, ""));
        cg_barrier(cg);
    }
    cg_define(cg, res, out, n);
}

void cg_lower_ATOMIC_ADD(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; lower_atomic(cg, op); }
void cg_lower_ATOMIC_MAX(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; lower_atomic(cg, op); }
void cg_lower_ATOMIC_MIN(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; lower_atomic(cg, op); }
void cg_lower_ATOMIC_CAS(Cg *cg, uint32_t opid, IrOp *op) { (void)opid; lower_atomic(cg, op); }
