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
 * layouts are the same construction with "offset" bits as the input.
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

/* The flat index of the element register r of lane l of warp w holds. */
uint32_t layout_apply(const Layout *L, uint32_t r, uint32_t l, uint32_t w);
static inline uint32_t layout_nregs(const Layout *L) { return 1u << L->nbits[LL_REG]; }
bool layout_eq(const Layout *a, const Layout *b);
bool layout_is_surjective(const Layout *L);

/* The layout after removing dim `axis` (a reduction): the axis' bits are
 * dropped from every basis vector and the higher bits shift down. */
Layout layout_slice(const Layout *L, int axis);
/* Registers r1 that hold the same element as register r in the same thread:
 * the registers a thread must combine when reducing along `axis`. Bits of
 * the register index whose basis lies entirely in `axis`. */
uint32_t layout_axis_mask(const Layout *L, LayoutIn in, int axis);

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

/* Text form for --dump-after=layout: each input bit's basis as coordinates,
 * e.g. #linear<reg=[[0,1],[0,2]], lane=[[0,4],...], warp=[[1,0]]>. */
void layout_print(StrBuf *b, const Layout *L);

#endif
