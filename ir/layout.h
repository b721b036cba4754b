/* layout.h: linear layouts, the one mechanism for every distributed layout
 * (which thread holds which tile element) and, later, every shared layout.
 *
 * A tile of power-of-two dims d_0 x ... x d_{r-1} has a row-major flat index
 * whose bits are the coordinates' bits side by side: coordinate bit j of dim k
 * is flat bit off_k + j, with off_{r-1} = 0 and off_k = off_{k+1} + log2 d_{k+1}.
 * A layout is a linear map over GF(2) from the bits of the hardware indices
 * (register r, lane l, warp w) to flat-index bits: each input bit has a basis
 * vector, and the element held at (r, l, w) is the XOR of the basis vectors of
 * the set bits of r, l and w.  Blocked layouts, mma.sync/wgmma fragments,
 * slices (after a reduction) and broadcasts are all such maps; swizzled shared
 * layouts are the same construction with "offset" bits as the input (below).
 *
 * Invariants: nbits[LL_LANE] == 5; nbits[LL_WARP] == log2(warps); a zero basis
 * vector means the input bit replicates (the same element held twice); every
 * flat bit is produced by some basis vector (the layout is surjective).
 */
#ifndef TILEC_LAYOUT_H
#define TILEC_LAYOUT_H

#include "ir.h"

typedef enum { LL_REG, LL_LANE, LL_WARP, LL_NIN } LayoutIn;
#define LL_MAXBITS 24 /* tiles hold at most 2^24 elements */

typedef struct Layout {
    uint8_t rank;
    uint8_t dimbits[IR_MAXRANK];            /* log2 of each tile dim */
    uint8_t nbits[LL_NIN];                  /* input bits: registers, lanes, warps */
    uint32_t basis[LL_NIN][LL_MAXBITS];     /* flat-index bits produced by each input bit */
} Layout;

/* Flat-index bit offset of dim k's coordinate bits. */
int layout_dim_offset(const Layout *L, int k);
int layout_total_bits(const Layout *L);

/* The blocked layout of a tile of type t over `warps` warps: each thread holds
 * runs of spt[k] contiguous elements along dim k; lanes, then warps, are laid
 * along dims in the order given (order[0] the fastest-varying dim), tpw and wpc
 * giving lanes and warps per dim (products 32 and warps).  Where the tile is
 * larger than one pass over the CTA, registers repeat it; where it is smaller,
 * the surplus lane/warp bits replicate. */
Layout layout_blocked(IrType t, const int *spt, const int *tpw, const int *wpc, const int *order, int warps);
/* The default blocked layout for a tile: contiguous vectors of up to 16 bytes
 * along the last dim, lanes then warps filling the last dims first. */
Layout layout_default(IrType t, int warps);

/* The layout for a gather of rows (a tile read or written through per-row
 * addresses, computed from data, broadcast along the last dim): 16-byte vectors
 * along the last dim as in layout_default, but only a few lanes (64 bytes)
 * across a row before lanes go to the other rows, and the rest of the row in
 * registers.  A thread then holds few rows, and each row costs it one 64-bit
 * address and its index arithmetic, while a warp still reads 64-byte runs. */
Layout layout_gather(IrType t, int warps);
/* L without its replicated register bits (zero bases): the same elements in
 * each thread, each in one register. */
Layout layout_compact_regs(const Layout *L);

/* The flat index of the element register r of lane l of warp w holds. */
uint32_t layout_apply(const Layout *L, uint32_t r, uint32_t l, uint32_t w);
static inline uint32_t layout_nregs(const Layout *L) { return 1u << L->nbits[LL_REG]; }
bool layout_eq(const Layout *a, const Layout *b);
/* The bits of input `in` whose basis is zero: they replicate (two indices
 * differing only there hold the same element). */
uint32_t layout_replicated(const Layout *L, LayoutIn in);
bool layout_is_surjective(const Layout *L);

/* The layout after removing dim `axis` (a reduction): the axis' bits are
 * dropped from every basis vector and the higher bits shift down. */
Layout layout_slice(const Layout *L, int axis);
/* Registers r1 that hold the same element as register r in the same thread:
 * the registers a thread must combine when reducing along `axis`. Bits of
 * the register index whose basis lies entirely in `axis`. */
uint32_t layout_axis_mask(const Layout *L, LayoutIn in, int axis);

/* The layout of TRANS(x, perm) that holds each element in the register,
 * lane and warp of x's layout L (result dim k is x's dim perm[k]): moving
 * into it is a register renaming. */
Layout layout_transpose(const Layout *L, const int32_t *perm);

/* The mma.sync m16n8 accumulator/"C" fragment layout for an f32 tile [M, N]
 * (M a multiple of 16, N of 8) over warps laid out wm x wn. */
Layout layout_mma_acc(IrType t, int wm, int wn);

/* The mma.sync m16n8k16 operand layouts matching layout_mma_acc(.., wm, wn):
 * A [M, K] (row-major fragments a0..a7, replicated over the wn warps of a
 * warp row) and B [K, N] (b0..b3, replicated over the wm warps of a column).
 * Register index of A: bits 0..2 = fragment element, then K/16 tiles, then
 * M/(16 wm) tiles; of B: bits 0..1 = element, then K/16 tiles, then N/(8 wn). */
Layout layout_mma_a(IrType t, int wm, int wn);
Layout layout_mma_b(IrType t, int wm, int wn);

/* ---- shared-memory layouts (ir/SHARED_LAYOUTS.md has the math) --------
 *
 * A shared layout is the same construction with one input: the bits of an
 * element's offset in a shared buffer (in elements, from a base aligned to the
 * swizzle's repeat, layout_swizzle_align).  basis[i] is the flat-index bits of
 * the element at offset 1 << i; the element at offset o is the XOR of the basis
 * vectors of o's set bits.  Shared layouts are bijections (a buffer holds each
 * element once), so the map has an inverse, kept beside it in inv[]: inv[j] is
 * the offset of the element whose flat index is 1 << j.
 *
 * Swizzles act on byte addresses, 16-byte chunks inside rows of `span` bytes:
 *     addr ^= ((addr >> 7) & (span/16 - 1)) << 4        span = 16 << sw
 * (128B: the chunk index within a 128-byte row XOR the row index mod 8.)
 * The swizzled layouts of a rank-2 tile store atoms of 8 rows x span bytes:
 * `span` bytes along the contiguous dim `contig`, consecutive rows along the
 * other dim, then the next span-wide column strip of the whole tile (one TMA
 * box per strip).  LL_SWZ_NONE with span 16 is wgmma's "interleaved" layout:
 * core matrices of 8 rows x 16 bytes, each 128 contiguous bytes.
 */
typedef enum { LL_SWZ_NONE, LL_SWZ_32B, LL_SWZ_64B, LL_SWZ_128B } LayoutSwizzle;
#define LL_SWZ_PLAIN (-1) /* SharedLayout.swizzle of a plain (dense, unswizzled) layout */

typedef struct SharedLayout {
    uint8_t rank;
    uint8_t dimbits[IR_MAXRANK];  /* log2 of each tile dim, as in Layout */
    uint8_t nbits;                /* offset bits == flat bits: the map is a bijection */
    uint8_t ebytes;               /* element size in bytes: 1, 2, 4 or 8 */
    int8_t swizzle;               /* LayoutSwizzle, or LL_SWZ_PLAIN */
    int8_t contig;                /* the tile dim whose consecutive elements are adjacent */
    uint32_t basis[LL_MAXBITS];   /* flat-index bits of the element at offset 1 << i */
    uint32_t inv[LL_MAXBITS];     /* offset of the element at flat index 1 << j */
} SharedLayout;

/* Inverts an n x n matrix over GF(2) given by the images of the unit vectors
 * (m[i] = image of 1 << i); false when it is singular. */
bool layout_gf2_invert(const uint32_t *m, int n, uint32_t *inv);

/* The plain layout of tile t: dense, dim `contig` fastest, then the other dims
 * from the last to the first (contig = rank-1: row-major). */
SharedLayout layout_shared_plain(IrType t, int contig);
/* The swizzled layout of a rank-2 tile t with dim `contig` contiguous; the
 * contiguous extent must hold at least one span (16 << sw bytes). */
SharedLayout layout_shared_swizzled(IrType t, int contig, LayoutSwizzle sw);
/* The widest swizzle whose span fits the contiguous extent of t along contig
 * (LL_SWZ_NONE when less than 32 bytes; -1 when less than 16). */
int layout_swizzle_for(IrType t, int contig);
/* Alignment in bytes a buffer holding a layout of swizzle sw needs: the
 * repeat of the pattern (256, 512, 1024), or 16 for none/plain. */
uint32_t layout_swizzle_align(int sw);
/* The swizzle itself on a byte address (an involution). */
uint32_t layout_swizzle_addr(int sw, uint32_t addr);

uint32_t layout_shared_flat(const SharedLayout *S, uint32_t offset);   /* offset -> flat index */
uint32_t layout_shared_offset(const SharedLayout *S, uint32_t flat);   /* flat index -> offset */
/* A distributed layout composed with a shared one: a rank-1 Layout over the
 * buffer's offsets, layout_apply() giving the shared offset (in elements) of
 * register r of lane l of warp w.  L and S must describe the same tile. */
Layout layout_shared_compose(const Layout *L, const SharedLayout *S);
/* The widest vector (in elements, at most 16 bytes) a thread of L can move in
 * one access: its first registers must be consecutive, aligned offsets. */
int layout_shared_max_vec(const Layout *L, const SharedLayout *S);

/* Bank conflicts of a warp moving the tile between L's registers and S, vec
 * elements per access (vec <= layout_shared_max_vec).  Shared memory has 32
 * banks of 4 bytes; an access of W bytes per lane is served in phases of
 * 128/W lanes (one phase for W <= 4), each taking as many wavefronts as the
 * most distinct 4-byte words any one bank must deliver (same word: broadcast). */
typedef struct BankCost {
    uint32_t accesses;    /* access instructions per warp */
    uint32_t wavefronts;  /* wavefronts they take, worst warp */
    uint32_t ideal;       /* wavefronts without conflicts: accesses x phases */
} BankCost;
BankCost layout_bank_cost(const Layout *L, const SharedLayout *S, int vec);

/* Text form: the swizzle, the contiguous dim, each offset bit's element as
 * coordinates, e.g. #shared<128B, contig=1, offset=[[0,1],...,[1,8]]>. */
void layout_shared_print(StrBuf *b, const SharedLayout *S);

/* ---- wgmma (IR_TGT_WGMMA) ------------------------------------------------- */

/* The accumulator layout of wgmma.m64nNk* for an f32 tile [BM, BN] over
 * warpgroups laid out wgm x wgn (4 * wgm * wgn warps), instr_n the N of one
 * instruction (8..256, a power of two as tiles are).  Register i of thread t
 * of a warpgroup holds row 16*(t/32) + (t%32)/4 + 8*((i/2)%2), col
 * (t%4)*2 + (i%2) + 8*(i/4) of its m64 x instr_n block.  Warp bits: 2 for
 * the warp in its warpgroup, then wgn along N, then wgm along M.  Registers
 * repeat the 64*wgm x instr_n*wgn tile: N first, then M, so register
 * (instr_n/2)*j + i is register i of instruction block j. */
Layout layout_wgmma_acc(IrType t, int wgm, int wgn, int instr_n);
/* The A operand from registers, tile [BM, BK] (f16/bf16: k16, 8-bit: k32,
 * tf32: k8 per instruction; 32 bytes of K), replicated over the wgn
 * warpgroups of a row: per warp the mma.sync A fragment of its 16 rows.
 * Register bits: fragment, then K/instr_k steps, then M/(64 wgm). */
Layout layout_wgmma_a(IrType t, int wgm, int wgn);

typedef enum { LL_WGMMA_A, LL_WGMMA_B } WgmmaOperand;
/* The 64-bit shared-memory matrix descriptor: start address, leading and
 * stride dimension byte offsets (all >> 4, 14 bits), base offset 0 (buffers
 * aligned to layout_swizzle_align), swizzle mode in bits 62-63. */
uint64_t layout_wgmma_desc(uint32_t smem_addr, LayoutSwizzle sw, uint32_t lbo, uint32_t sbo);
/* LBO and SBO (bytes) for operand op of a wgmma whose instruction tile is
 * instr_mn x 32 bytes of K, stored in S (A is [M, K], B is [K, N]; K-major when
 * S->contig is the K dim, else MN-major, which wgmma allows for 16-bit types
 * only).  False when no descriptor addresses S: checked element by element
 * against layout_wgmma_desc_addr. */
bool layout_wgmma_strides(const SharedLayout *S, WgmmaOperand op, int instr_mn, uint32_t *lbo, uint32_t *sbo);
/* The descriptor start (byte offset from the buffer base) of the instruction
 * tile whose first element is (mn0, k0). */
uint32_t layout_wgmma_start(const SharedLayout *S, WgmmaOperand op, int mn0, int k0);
/* The byte address the tensor core reads for element (mn, k) of the
 * instruction tile a descriptor names: PTX's canonical layouts, then the
 * swizzle on the absolute address.  The model the tests check layouts with. */
uint32_t layout_wgmma_desc_addr(uint64_t desc, bool k_major, int ebytes, int mn, int k);

/* How a DOT of operands A [M, K] x B [K, N] (types at, bt) with an f32
 * result [M, N] maps onto wgmma on target t over `warps` warps: wgm x wgn warpgroups
 * (wgm as large as M allows: each warpgroup owns 64-row blocks, M first),
 * instructions m64 x instr_n x instr_k (instr_k: 32 bytes of K; instr_n the
 * warpgroup's share of N, at most 256).  False unless warps is a multiple of
 * 4, t has wgmma (IR_TGT_WGMMA; a NULL t has none), A and B fit in its
 * shared memory, the operands are f16/bf16 or 8-bit floats, M is a multiple of 64 * wgm,
 * each warpgroup's N a power of two >= 8, K a multiple of instr_k, and both
 * operands can be addressed K-major by a descriptor (the layout any operand
 * can be stored in; 16-bit operands may also go MN-major). */
typedef struct WgmmaShape {
    int wgm, wgn, instr_n, instr_k;
} WgmmaShape;
bool layout_wgmma_shape(const IrTarget *t, IrType at, IrType bt, int warps, WgmmaShape *out);

/* ---- the DOT plan: one decision for the layout pass and codegen ---------- */

/* How a DOT of a [M, K] x b [K, N] (types at, bt) into an f32 result ct runs
 * over `warps` warps when compiling for target t (the module's; NULL: none):
 *   LL_DOT_WGMMA  layout_wgmma_shape holds (t has IR_TGT_WGMMA): wgmma over w's
 *                 warpgroups, the result in layout_wgmma_acc;
 *   LL_DOT_MMA    f16/bf16 operands, K a multiple of 16, M of 16 wm and N of
 *                 8 wn (the warp grid wm x wn: wm = warps / 2 from 4 warps
 *                 on): mma.sync m16n8k16, the result in layout_mma_acc;
 *   LL_DOT_FMA    otherwise: exact f32 FMAs, the result in layout_mma_acc
 *                 where the shape tiles the warp grid, else the default
 *                 blocked layout.
 * The layout pass gives the result `acc`; codegen (lower_dot.c) issues
 * `instr` and treats a result in another layout as an internal error.
 * `reason` says why, for messages and remarks. */
typedef enum { LL_DOT_FMA, LL_DOT_MMA, LL_DOT_WGMMA } DotInstr;
typedef struct DotPlan {
    DotInstr instr;
    int wm, wn;          /* the mma.sync warp grid */
    WgmmaShape w;        /* LL_DOT_WGMMA: warpgroups and instruction shape */
    Layout acc;          /* the layout of the result (and of the accumulator operand) */
    char reason[128];
} DotPlan;
void layout_dot_plan(IrType at, IrType bt, IrType ct, int warps, const IrTarget *t, DotPlan *out);
/* "wgmma", "mma.sync", "fma" */
const char *layout_dot_instr_name(DotInstr i);

/* Text form for --dump-after=layout: each input bit's basis as coordinates,
 * e.g. #linear<reg=[[0,1],[0,2]], lane=[[0,4],...], warp=[[1,0]]>. */
void layout_print(StrBuf *b, const Layout *L);

#endif
