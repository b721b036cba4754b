/* lower_int.h: what the lowering files of codegen/ share (private).
 *
 * Each IR value becomes a CgVal:
 *   - a tile of layout L: one LLVM value per register of L (1 << L.nbits[REG]);
 *     register r of a thread holds the element layout_apply(L, r, lane, warp).
 *     Registers that replicate share one LLVMValueRef.
 *   - a scalar (rank-0 tile): one value, the same in every thread;
 *   - a view (tensor<T, N>): its base pointer, shape[N] and stride[N] (i64).
 * Layouts come from the layout pass (f->val_layout); each op's lowering hook
 * (one per opcode, generated from ir/ops.def) reads its operands in the layouts
 * the pass chose and defines its results.
 */
#ifndef TILEC_CG_LOWER_INT_H
#define TILEC_CG_LOWER_INT_H

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>

#include "../ir/ir.h"
#include "../ir/layout.h"
#include "cg.h"
#include "meta_emit.h"

typedef struct CgVal {
    LLVMValueRef *regs;          /* tiles and scalars: nregs values */
    uint32_t nregs;
    const Layout *L;             /* NULL for scalars and views */
    LLVMValueRef ptr;            /* views: base pointer */
    LLVMValueRef shape[IR_MAXRANK], stride[IR_MAXRANK];
    int64_t wg;                  /* a DOT's result left in flight (pending = IR_DOT_ASYNC): the
                                  * sequence number of its wgmma group (Cg.wg_seq); 0: complete */
} CgVal;

typedef struct Cg {
    IrFunc *f;
    const CgTarget *target;
    Diag *d;
    SrcLoc loc;                  /* the op being lowered, for remarks */
    Arena *scratch;              /* wiped after the function is lowered */
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    LLVMDIBuilderRef di;
    LLVMMetadataRef di_file, di_sp;
    CgVal *vals;                 /* indexed by IrVal */
    uint8_t *free_;              /* per value: free (ir_free_values): rebuilt in any layout */
    int warps;                   /* the warps the layouts use (the consumers, in a warp-specialized kernel) */
    /* warp specialization (passes/warp_specialize.c): one more warpgroup, warps
     * warps .. warps + 3, whose warp `warps` is the producer */
    bool ws;                     /* the kernel has a PRODUCER_WARP branch */
    bool ws_split;               /* lowering code after it: only the consumer warps run here, so
                                  * cg_barrier syncs them alone (a named barrier) */
    uint32_t elect_tid;          /* the thread cg_thread0 picks: 0, or the producer warp's lane 0 */
    int ws_regs_producer, ws_regs_consumer; /* setmaxnreg targets; 0: none (nothing to gain) */
    LLVMValueRef tid, lane, warp; /* i32, computed in the entry block */
    LLVMValueRef smem;           /* the scratch area of dynamic shared memory (addrspace 3) */
    uint32_t smem_bytes;         /* scratch shared memory the function needs */
    uint32_t nlaunder;           /* opaque thread-offset copies made (lower_mem.c) */
    /* pipelining (lower_async.c), planned before the body is lowered */
    struct CgBuf *bufs;          /* one per SMEM_ALLOC */
    uint32_t nbufs;
    uint32_t buf_bytes;          /* the buffers and their barriers, from bufs_base */
    CgTmaDesc *tma;              /* the kernel's TMA descriptors, deduplicated, in kernel-ABI order per view */
    uint32_t ntma;
    LLVMValueRef *tma_param;     /* per descriptor: its 128-byte byval kernel parameter */
    uint32_t *async_idx;         /* per op id: SMEM_ALLOC -> its bufs[] index, ASYNC_LOAD -> its tma[] index,
                                  * BLOCK_STORE -> its tma[] index (UINT32_MAX: not a TMA store) */
    LLVMValueRef bufs_base;      /* 1024-aligned start of the buffers (addrspace 3), before the scratch area */
    LLVMValueRef bufs_base32;    /* the same as a shared-window address (i32) */
    bool failed;                 /* a user-facing error was reported */
    bool inline_fdiv;            /* f32 and 64-bit integer division inline (cg_fdiv_f32, cg_idiv64):
                                  * the kernel has wgmma, which ptxas serializes in a function with
                                  * calls (C7509), and div.rn.f32's slow path and div.s64 are calls */
    /* the loops being lowered, outermost first: loop-invariant free values are
     * rebuilt once in the loop's preheader, not in every iteration (remat, lower.c) */
    struct CgLoop *loops;
    int nloops, loopcap;
    int emit_depth;              /* the loops whose body the builder is in (nloops, or fewer
                                  * while it writes a preheader) */
    /* wgmma groups (lower_dot.c, cg_lower_DOT_WAIT): committed so far in program order, and
     * the count when the last op with regions was entered or left.  A DOT_WAIT on a group
     * committed after that in its own block waits for wg_seq - its number newer groups */
    int64_t wg_seq, wg_epoch;
    /* ping-pong of the two consumer warpgroups of a warp-specialized loop (cg_pingpong_plan):
     * the first dot of its body waits for the other warpgroup's turn (bar.sync 2 + wg), the
     * last of the dots issued with it passes the turn on (bar.arrive 2 + (wg ^ 1)) */
    uint32_t pp_first, pp_last;  /* op ids; UINT32_MAX: none */
    bool pp_open;                /* lowering between the turn's bar.sync and its bar.arrive */
    /* common types */
    LLVMTypeRef i1, i8, i16, i32, i64, f16, bf16, f32, f64, vd, gptr, sptr;
} Cg;

/* Approximate math (lower_math.c): --fast-math, or the kernel's math(fast) clause. */
static inline bool cg_fast_math(const Cg *cg) { return cg->target->fast_math || cg->f->fast_math; }

typedef void (*CgHook)(Cg *cg, uint32_t opid, IrOp *op);

/* The occupancy hint of one kernel and the estimate behind it (occupancy.c). */
typedef struct CgOccupancy {
    int min_ctas;                 /* CTAs per SM asked of ptxas (.minnctapersm); 0 or 1: no hint */
    double peak;                  /* estimated registers per thread the tiles need (0: not estimated) */
    int regs;                     /* the register budget derived from it (0: not estimated) */
    const char *why;              /* without an estimate: why ("the kernel has a dot", ...) */
} CgOccupancy;

/* occupancy.c: CTAs per SM to ask ptxas for (.minnctapersm; 0 or 1: no hint),
 * with the estimate behind it in *occ.  A function of f and tg alone: compile.c
 * calls it again for the occupancy remark. */
int cg_min_ctas(IrFunc *f, const IrTarget *tg, int warps, CgOccupancy *occ);

/* lower.c */
LLVMTypeRef cg_elem_type(Cg *cg, IrType t);          /* of one element (pointer tiles: ptr addrspace(1)) */
LLVMTypeRef cg_dtype(Cg *cg, DType dt);
const Layout *cg_layout(Cg *cg, IrVal v);             /* NULL for scalars and views */
CgVal *cg_val(Cg *cg, IrVal v);
/* Defines v with registers regs[0..n) (copied into the scratch arena). */
void cg_define(Cg *cg, IrVal v, LLVMValueRef *regs, uint32_t n);
/* Register r of v (a scalar: its one value, whatever r). */
LLVMValueRef cg_reg(Cg *cg, IrVal v, uint32_t r);
LLVMValueRef cg_call_intrinsic(Cg *cg, const char *name, LLVMTypeRef ret, LLVMValueRef *args, unsigned n);
LLVMValueRef cg_inline_asm(Cg *cg, LLVMTypeRef ret, const char *text, const char *constraints,
                           LLVMValueRef *args, unsigned n, bool side_effects);
LLVMValueRef cg_const_int(Cg *cg, LLVMTypeRef t, int64_t v);
/* The part of the flat index that lane and warp contribute (i32, per layout). */
LLVMValueRef cg_thread_offset(Cg *cg, const Layout *L);
/* Coordinate of dim k held in register r (i32). */
LLVMValueRef cg_coord(Cg *cg, const Layout *L, LLVMValueRef thread_off, uint32_t r, int k);
/* The setmaxnreg split of a warp-specialized kernel with `warps` consumer warps and
 * a producer warpgroup.  One CTA of 32 (warps + 4) threads may have R0 = 65536 /
 * threads registers a thread (rounded down to setmaxnreg's multiple of 8, at most
 * 248: ptxas's 255); the producer warpgroup keeps 24 (it issues TMA loads from a few
 * scalars) and the consumers take what that frees, within the CTA's pool: 128 * 24 + 32
 * warps * consumer <= threads * R0 (24 / 240 at 8 consumer warps, FlashAttention-3's split).  Where that is no more than R0 (4 consumer warps:
 * 248 already), both are 0: the registers stay as they are. */
void cg_ws_registers(int warps, int *producer, int *consumer);
/* Every thread of the CTA waits for the others (bar.sync 0); in a warp-specialized
 * kernel, once the producer has branched off (ws_split), every consumer thread
 * (bar.sync 1 with the consumers' thread count: the producer never arrives). */
void cg_barrier(Cg *cg);
/* Ping-pong (lower.c): whether the FOR `loop` is the warp-specialized loop whose consumer
 * warpgroups take turns issuing their dots; sets cg->pp_first / pp_last for its body. */
bool cg_pingpong_plan(Cg *cg, uint32_t loop);
/* bar.sync (sync) or bar.arrive of named barrier 2 + (this warpgroup ^ other), counting the
 * two consumer warpgroups (ping-pong). */
void cg_pingpong_barrier(Cg *cg, bool sync, unsigned other);
/* A pointer to byte `off` of the shared scratch area (reserving `bytes` bytes from 0).
 * Every user of the area starts with a barrier (cg_barrier) before it writes: the
 * area may still be read by the previous user (a TMA store's reads are waited for
 * by the thread that issued it before it reaches that barrier). */
LLVMValueRef cg_smem(Cg *cg, uint32_t bytes);
/* Inline PTX without operands or results that touches memory (a fence). */
void cg_asm_void(Cg *cg, const char *text);
/* The inline-asm call is convergent (cg_inline_asm and cg_asm_void mark theirs; lower.c). */
void cg_convergent(Cg *cg, LLVMValueRef call);
/* Branches so that only thread 0 (cg->elect_tid: in the producer branch of a
 * warp-specialized kernel, the producer warp's lane 0) runs what is built next;
 * returns the block where all threads meet again (the caller branches there and
 * continues in it). */
LLVMBasicBlockRef cg_thread0(Cg *cg);

/* lower.c: v's registers in layout L: rebuilt from its expression when v is
 * free (ir_free_values: aranges, splats, elementwise and shape ops of them),
 * else moved through shared memory (cg_convert_layout). */
void cg_value_as(Cg *cg, IrVal v, const Layout *L, LLVMValueRef *out);

/* convert.c: element movement through shared memory, and dtype conversion */
void cg_convert_layout(Cg *cg, IrVal v, const Layout *to, LLVMValueRef *out);
/* x's elements re-read for a result of layout `to` whose flat-index bits
 * outside `keep` are broadcast (keep all-ones: the same element order). */
void cg_convert_layout_bcast(Cg *cg, IrVal x, const Layout *to, uint32_t keep, LLVMValueRef *out);
void cg_transpose(Cg *cg, IrVal x, const int32_t *perm, const Layout *to, LLVMValueRef *out);
/* i1: this thread uniquely owns its registers' elements of layout L (no
 * replicated lane or warp bit set), or NULL when every thread does. */
LLVMValueRef cg_owner_pred(Cg *cg, const Layout *L);
/* Stores each element of tile x this thread uniquely owns (replicated copies
 * skipped, so no two threads write one address) at base[elem_off + flat index]
 * as type st; to_f32 widens the value first.  No barrier. */
void cg_smem_store_unique(Cg *cg, IrVal x, LLVMValueRef base, LLVMTypeRef st, uint32_t elem_off, bool to_f32);
LLVMValueRef cg_cast(Cg *cg, LLVMValueRef x, DType from, bool from_ptr, DType to, bool to_ptr);
bool cg_cast_f8_pair(Cg *cg, LLVMValueRef x0, LLVMValueRef x1, DType from, DType to, LLVMValueRef out[2]);
/* Stores each element of tile x this thread uniquely owns into a buffer laid
 * out by S (element e at byte base + layout_shared_offset(S, e) * ebytes),
 * layout_shared_max_vec(L, S) elements per st.shared (16 bytes where the
 * registers allow).  base (i8 addrspace(3)) must be 16-byte aligned, and to
 * the swizzle's repeat for a swizzled S.  No barrier. */
void cg_smem_store_shared(Cg *cg, IrVal x, const SharedLayout *S, LLVMValueRef base);
/* The same for the elements whose offset in S lies in [lo, lo + n) only, stored at
 * base + (offset - lo) * ebytes: a part of the buffer (n a power of two, lo a
 * multiple of it).  Which registers fall in the part must not depend on the
 * thread: n is S's whole size, or cg_smem_part_static(L, S, n) holds. */
void cg_smem_store_shared_part(Cg *cg, IrVal x, const SharedLayout *S, LLVMValueRef base, uint32_t lo, uint32_t n);
/* Whether the lane and warp bits of L composed with S give offsets below n only
 * (so that the registers alone pick the part of size n an element is in). */
bool cg_smem_part_static(const Layout *L, const SharedLayout *S, uint32_t n);
/* The converse: each register of layout L (elements of type et) loaded from the
 * buffer laid out by S at base, as wide as layout_shared_max_vec allows; a
 * replicated register shares its copy's load. */
void cg_smem_load_shared(Cg *cg, const Layout *L, const SharedLayout *S, LLVMTypeRef et, LLVMValueRef base,
                         LLVMValueRef *out);

/* lower_mem.c: elements per access of a BLOCK_LOAD/STORE's vector path in layout L
 * (esize-byte elements; at most 16 bytes). */
int cg_store_vector_elems(const Layout *L, int esize);
/* Bytes of the longest run along the last dim one such access of a warp covers: a
 * register group continued by lanes 0, 1, ... (128 or more: whole lines per row). */
int cg_store_run_bytes(const Layout *L, int esize);
/* Part of BLOCK_STORE op's value, staged in shared memory at base in layout S: the
 * tile t of its columns col .. col + t.dims[1] - 1 (one strip of a TMA store's
 * staging area), read back in the default blocked layout (16-byte vectors) and
 * stored at op's offsets plus col along the last dim, clipped to the view as any
 * block store.  No barrier. */
void cg_store_staged(Cg *cg, IrOp *op, IrType t, const SharedLayout *S, LLVMValueRef base, uint32_t col);

/* lower_async.c: shared-memory buffers (smem<T>[S, R, C]).  Each SMEM_ALLOC owns
 * a static region of dynamic shared memory, planned before the body is lowered:
 *     [pad to 1024] [buffer 0: S stages] [buffer 1] ... [their barriers] [scratch (cg_smem)]
 * (buffers of disjoint blocks, never live together, share their region: two
 * pipelined loops one after the other) 
 * every stage 1024-aligned (the swizzle repeat), one 8-byte mbarrier per stage.
 * One stage holds its tile in cg_smem_layout: what TMA writes, what wgmma reads. */
typedef struct CgBuf {
    IrType tile;                 /* one stage's tile */
    SharedLayout S;              /* cg_smem_layout(buffer type) */
    uint32_t stages;
    uint32_t off;                /* stage 0, from bufs_base; stage s at off + s * stage_bytes */
    uint32_t stage_bytes;        /* the tile's bytes rounded up to 1024 */
    uint32_t bar_off;            /* stage s's mbarrier at bar_off + 8 s */
    bool again;                  /* the SMEM_ALLOC can run more than once (it is inside a loop) */
    bool ws;                     /* a producer acquires its stages and consumers release them: one
                                  * "empty" mbarrier per stage too, at bar_off + 8 (stages + s) */
    IrBlk parent;                /* the SMEM_ALLOC's block: the buffer is live there only */
    uint32_t live0, live1;       /* the program-order span in which it holds data (lower_async.c
                                  * live_span): buffers whose spans are disjoint share space */
} CgBuf;
/* The layout of one stage of buffer type `smem` (rank-2 tiles whose rows hold at
 * least 16 bytes): layout_shared_swizzled along the last dim, the widest swizzle
 * the rows allow.  TMA writes exactly this for boxes of [R rows, span / ebytes
 * columns] with the matching CU_TENSOR_MAP_SWIZZLE, one box per span-wide column
 * strip, strips one after another (ir/layout.h). */
SharedLayout cg_smem_layout(IrType smem);
/* Before the signature: plans every SMEM_ALLOC's region and every ASYNC_LOAD's
 * TMA descriptor (fills bufs, tma, async_idx); false after a user error. */
bool cg_async_plan(Cg *cg);
/* In the entry block, after the thread indices: the aligned base of the buffers,
 * the scratch area after them, and the barriers of buffers that are allocated
 * again in a loop initialised once, so that each allocation can invalidate them. */
void cg_async_entry(Cg *cg);
/* An operand of op `user` (a DOT) that is a stage of a buffer, SMEM_READ(buf, stage) or
 * TRANS of one, and that the stage still holds when the user runs (no ASYNC_LOAD since
 * the read): the user may read the stage in place. */
typedef struct CgBufRef {
    const CgBuf *buf;
    IrVal stage;
    bool trans;
} CgBufRef;
bool cg_buf_operand(Cg *cg, IrVal v, uint32_t user, CgBufRef *out);
/* The shared-window address (i32) of the stage r names. */
LLVMValueRef cg_buf_stage32(Cg *cg, const CgBufRef *r);
/* TMA stores.  A BLOCK_STORE (opid, op) that cg_async_plan gave a descriptor
 * (async_idx[opid]) is lowered here and true returned (false: nothing built, a
 * plain store): per group of column strips (all of them, unless the tile does
 * not fit beside the buffers), a barrier, every thread's registers into the
 * scratch area in cg_tma_store_layout, fence.proxy.async, a barrier; then, where
 * the descriptor is valid (and the offsets fit TMA's 32-bit coordinates), thread
 * 0 stores one box per strip with cp.async.bulk.tensor (TMA clips them at the
 * view's edges), commits them and waits until they are read; elsewhere every
 * thread stores the staged strips with cg_store_staged. */
bool cg_tma_store(Cg *cg, uint32_t opid, IrOp *op);
/* The staging layout of a TMA store of tile t (rank 2, rows of at least 16 bytes):
 * layout_shared_swizzled along dim 1 with the widest swizzle the rows allow, one
 * box of [R rows (at most 256 per box), span / ebytes columns] per column strip,
 * strips one after another: what a TMA store of those boxes reads. */
SharedLayout cg_tma_store_layout(IrType t);


/* lower_dot.c: a DOT through wgmma (sm_90a), decided on the host.  The
 * operands are copied to shared memory in swizzled layouts (K-major, or
 * MN-major for 16-bit types when their registers run along M or N), A from
 * byte 0 and B from A's bytes rounded up to 1024 of a 1024-aligned base;
 * an operand read in place (a buffer stage) or from registers takes no copy. */
typedef struct CgWgmmaOpnd {
    SharedLayout S;      /* the operand tile in shared memory */
    bool k_major;        /* S->contig is the K dim (else MN-major: imm-trans 1) */
    bool in_buf;         /* read where it is, a stage of an smem buffer (cg_wgmma_plan_buffer); off unused */
    uint32_t off;        /* byte offset of the copy from the aligned base */
    uint32_t lbo, sbo;   /* descriptor strides (bytes) */
} CgWgmmaOpnd;
typedef struct CgWgmmaPlan {
    WgmmaShape w;        /* warpgroups and instruction shape (layout_wgmma_shape) */
    int M, N, K;
    CgWgmmaOpnd a, b;
    uint32_t bytes;      /* the copies, from the aligned base (0: none, no scratch area) */
    bool a_regs;         /* A is already in layout_wgmma_a (16-bit): wgmma reads it from
                          * registers, 4 per k16 step (register i + 8 (ks + K/16 jm) of
                          * 64-row block jm), and A takes no copy */
} CgWgmmaPlan;
/* La, Lb: the operands' register layouts, which pick K- or MN-major (NULL:
 * K-major).  False where layout_wgmma_shape refuses the operand types. */
bool cg_wgmma_plan(const IrTarget *t, IrType at, IrType bt, const Layout *La, const Layout *Lb, int warps,
                   CgWgmmaPlan *p);
/* Plans operand op (of type t: A [M, K], B [K, N]) to be read from a buffer stage
 * laid out as S (over the buffer's tile; trans: the operand is that tile
 * transposed) instead of from a copy: K- or MN-major as the buffer is, which must
 * be a layout plan_opnd would pick (fp8: K-major only).  The copies left are
 * placed again.  False, the plan unchanged, when no descriptor reads S. */
bool cg_wgmma_plan_buffer(CgWgmmaPlan *p, IrType t, WgmmaOperand op, const SharedLayout *S, bool trans);
/* The byte offset from the aligned base that the descriptor of the operand's
 * instruction tile starting at (mn0, k0) holds (before the swizzle). */
uint32_t cg_wgmma_start(const CgWgmmaPlan *p, WgmmaOperand op, int mn0, int k0);
/* The 64-bit descriptor of that tile for a buffer area whose aligned base is
 * at shared address `base` (a multiple of 1024). */
uint64_t cg_wgmma_desc(const CgWgmmaPlan *p, WgmmaOperand op, uint32_t base, int mn0, int k0);
/* wgmma.wait_group.sync.aligned `pending`, taking the n accumulator registers acc
 * as tied operands (replaced by the results), so that no use moves above it. */
void cg_wgmma_wait(Cg *cg, int pending, LLVMValueRef *acc, unsigned n);

/* lower_math.c: exp exp2 log log2 sqrt rsqrt sigmoid tanh erf fabs floor ceil
 * of one float register of dtype dt (f16/bf16 computed in f32 and rounded). */
LLVMValueRef cg_math_unary(Cg *cg, const char *fn, DType dt, LLVMValueRef x);
/* a / b for f32 registers, correctly rounded (IEEE, as div.rn.f32 and the interpreter) and
 * without ptxas's division subroutine: in f64, Newton from rcp.approx (lower_math.c). */
LLVMValueRef cg_fdiv_f32(Cg *cg, LLVMValueRef a, LLVMValueRef b);
/* a / d (rem: a % d) for 64-bit integers (d != 0, not MIN / -1), truncating, without
 * ptxas's 64-bit division subroutine (a call: C7509 where the kernel has wgmma):
 * uniform (a scalar's division): 32-bit division where both magnitudes fit, else a
 * shift-subtract loop; per tile element: an f64 reciprocal and two integer
 * corrections, straight-line code that LLVM shares between the elements (lower_math.c). */
LLVMValueRef cg_idiv64(Cg *cg, LLVMValueRef a, LLVMValueRef d, bool sg, bool rem, bool uniform);
/* Float `%`: C's fmod, exact (a loop over the exponent difference). */
LLVMValueRef cg_math_fmod(Cg *cg, DType dt, LLVMValueRef x, LLVMValueRef y);

/* lower_reduce.c: how the input bits of layout L relate to dim `axis`.  axis[k]:
 * bits of input k (LL_REG/LANE/WARP) whose basis lies inside the axis' flat
 * bits; rep[k]: bits with a zero basis (replication).  False where a basis
 * mixes the axis with other dims or the non-zero bases are linearly dependent
 * (an element held twice under different bits): the lowering needs neither. */
typedef struct CgAxisBits {
    uint32_t axis[LL_NIN], rep[LL_NIN];
} CgAxisBits;
bool cg_axis_bits(const Layout *L, int axis, CgAxisBits *out);
/* For each coordinate bit p of dim `axis`, the input bit whose basis is exactly
 * that flat bit (in: LayoutIn, idx: bit index): the order a scan walks.  False
 * unless cg_axis_bits holds and every axis basis is a single flat bit. */
typedef struct CgBitRef {
    uint8_t in, idx;
} CgBitRef;
bool cg_axis_order(const Layout *L, int axis, CgBitRef *order);

/* lower.c: the kernel entry (used by compile.c).  Fills facts: warps, shared memory,
 * and the TMA descriptors (facts->tma malloc'd, the caller frees it; NULL: none). */
bool cg_lower_func(IrFunc *f, const CgTarget *t, void *llvm_ctx, void *llvm_mod, Arena *scratch,
                   CgKernelFacts *facts, Diag *d);

/* Hooks, one per opcode (defined across lower_*.c). */
#define OP(id, name, mino, maxo, nres, nreg, flags, layout) void cg_lower_##id(Cg *cg, uint32_t opid, IrOp *op);
#include "../ir/ops.def"
#undef OP

#endif
