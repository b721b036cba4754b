/* layout.c: the linear-layout algebra (see layout.h). */
#include "layout.h"

#include <stdio.h>
#include <string.h>

static int ilog2(int64_t x)
{
    int n = 0;
    while ((1ll << n) < x) n++;
    return n;
}

int layout_dim_offset(const Layout *L, int k)
{
    int off = 0;
    for (int d = L->rank - 1; d > k; d--) off += L->dimbits[d];
    return off;
}

int layout_total_bits(const Layout *L)
{
    int n = 0;
    for (int d = 0; d < L->rank; d++) n += L->dimbits[d];
    return n;
}

static void init_shape(Layout *L, IrType t)
{
    memset(L, 0, sizeof *L);
    L->rank = t.rank;
    for (int d = 0; d < t.rank; d++) L->dimbits[d] = (uint8_t)ilog2(t.dims[d]);
}

/* Appends input bit(s) of `in` that walk dim k starting at coordinate bit
 * *pos, `count` bits; bits beyond the dim's size replicate (basis 0). */
static void add_bits(Layout *L, LayoutIn in, int k, int *pos, int count)
{
    int off = layout_dim_offset(L, k);
    for (int i = 0; i < count; i++) {
        TL_ASSERT(L->nbits[in] < LL_MAXBITS, "layout");
        uint32_t v = *pos < L->dimbits[k] ? 1u << (off + *pos) : 0;
        L->basis[in][L->nbits[in]++] = v;
        (*pos)++;
    }
}

Layout layout_blocked(IrType t, const int *spt, const int *tpw, const int *wpc, const int *order, int warps)
{
    Layout L;
    init_shape(&L, t);
    int pos[IR_MAXRANK] = {0};
    /* 1. registers: spt contiguous elements along each dim, fastest dim first */
    for (int i = 0; i < t.rank; i++) add_bits(&L, LL_REG, order[i], &pos[order[i]], ilog2(spt[order[i]]));
    /* 2. lanes, 3. warps, in the same dim order */
    for (int i = 0; i < t.rank; i++) add_bits(&L, LL_LANE, order[i], &pos[order[i]], ilog2(tpw[order[i]]));
    for (int i = 0; i < t.rank; i++) add_bits(&L, LL_WARP, order[i], &pos[order[i]], ilog2(wpc[order[i]]));
    TL_ASSERT(L.nbits[LL_LANE] == 5, "layout");
    TL_ASSERT(L.nbits[LL_WARP] == ilog2(warps), "layout");
    /* 4. registers again: repeat the CTA tile over what is left of each dim */
    for (int i = 0; i < t.rank; i++) {
        int k = order[i];
        if (pos[k] < L.dimbits[k]) add_bits(&L, LL_REG, k, &pos[k], L.dimbits[k] - pos[k]);
    }
    return L;
}

Layout layout_default(IrType t, int warps)
{
    int spt[IR_MAXRANK], tpw[IR_MAXRANK], wpc[IR_MAXRANK], order[IR_MAXRANK];
    int r = t.rank;
    if (r == 0) { /* scalars: one register, every lane and warp replicates it */
        Layout L;
        init_shape(&L, t);
        for (int i = 0; i < 5; i++) L.basis[LL_LANE][L.nbits[LL_LANE]++] = 0;
        for (int i = 0; i < ilog2(warps); i++) L.basis[LL_WARP][L.nbits[LL_WARP]++] = 0;
        return L;
    }
    int ebytes = t.isptr ? 8 : dt_bytes((DType)t.dt);
    int vec = 16 / ebytes;
    for (int k = 0; k < r; k++) {
        order[k] = r - 1 - k;
        spt[k] = 1;
        tpw[k] = 1;
        wpc[k] = 1;
    }
    int64_t left[IR_MAXRANK];
    for (int k = 0; k < r; k++) left[k] = t.dims[k];
    /* contiguous vector along the last dim, as far as the tile allows */
    spt[r - 1] = (int)TL_MIN((int64_t)vec, left[r - 1]);
    left[r - 1] /= spt[r - 1];
    /* lanes then warps fill the fastest dims first; what no dim takes replicates (last dim) */
    int lanes = 32, w = warps;
    for (int i = 0; i < r && lanes > 1; i++) {
        int k = order[i];
        while (lanes > 1 && left[k] > 1) { tpw[k] *= 2; left[k] /= 2; lanes /= 2; }
    }
    tpw[r - 1] *= lanes;
    for (int i = r - 1; i >= 0 && w > 1; i--) { /* warps along the slowest dims first */
        int k = order[i];
        while (w > 1 && left[k] > 1) { wpc[k] *= 2; left[k] /= 2; w /= 2; }
    }
    wpc[0] *= w;
    return layout_blocked(t, spt, tpw, wpc, order, warps);
}

/* Lanes a gathered row gets before lanes go to other rows: 4 x 16 bytes, so
 * each row a warp reads is a run of 64 bytes (two full sectors). */
#define GATHER_ROW_LANES 4

Layout layout_gather(IrType t, int warps)
{
    int r = t.rank;
    if (r < 2) return layout_default(t, warps);
    int spt[IR_MAXRANK], tpw[IR_MAXRANK], wpc[IR_MAXRANK], order[IR_MAXRANK];
    int64_t left[IR_MAXRANK];
    for (int k = 0; k < r; k++) {
        order[k] = r - 1 - k;
        spt[k] = tpw[k] = wpc[k] = 1;
        left[k] = t.dims[k];
    }
    int last = r - 1, ebytes = t.isptr ? 8 : dt_bytes((DType)t.dt);
    spt[last] = (int)TL_MIN((int64_t)(16 / ebytes), left[last]);
    left[last] /= spt[last];
    int lanes = 32, w = warps;
    /* a few lanes along the row, then the rows (fastest first), then the rest of the row */
    while (lanes > 1 && left[last] > 1 && tpw[last] < GATHER_ROW_LANES) { tpw[last] *= 2; left[last] /= 2; lanes /= 2; }
    for (int k = last - 1; k >= 0; k--)
        while (lanes > 1 && left[k] > 1) { tpw[k] *= 2; left[k] /= 2; lanes /= 2; }
    while (lanes > 1 && left[last] > 1) { tpw[last] *= 2; left[last] /= 2; lanes /= 2; }
    tpw[last] *= lanes;
    /* warps over the rows (slowest first), then along the row; what is left replicates */
    for (int k = 0; k < last; k++)
        while (w > 1 && left[k] > 1) { wpc[k] *= 2; left[k] /= 2; w /= 2; }
    while (w > 1 && left[last] > 1) { wpc[last] *= 2; left[last] /= 2; w /= 2; }
    wpc[0] *= w;
    return layout_blocked(t, spt, tpw, wpc, order, warps);
}

Layout layout_compact_regs(const Layout *L)
{
    Layout R = *L;
    R.nbits[LL_REG] = 0;
    for (int i = 0; i < L->nbits[LL_REG]; i++)
        if (L->basis[LL_REG][i]) R.basis[LL_REG][R.nbits[LL_REG]++] = L->basis[LL_REG][i];
    for (int i = R.nbits[LL_REG]; i < LL_MAXBITS; i++) R.basis[LL_REG][i] = 0;
    return R;
}

uint32_t layout_apply(const Layout *L, uint32_t r, uint32_t l, uint32_t w)
{
    uint32_t in[LL_NIN] = {r, l, w}, x = 0;
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < L->nbits[k]; i++)
            if (in[k] >> i & 1) x ^= L->basis[k][i];
    return x;
}

uint32_t layout_replicated(const Layout *L, LayoutIn in)
{
    uint32_t m = 0;
    for (int i = 0; i < L->nbits[in]; i++)
        if (!L->basis[in][i]) m |= 1u << i;
    return m;
}

bool layout_eq(const Layout *a, const Layout *b)
{
    if (a->rank != b->rank || memcmp(a->dimbits, b->dimbits, sizeof a->dimbits)) return false;
    for (int k = 0; k < LL_NIN; k++) {
        if (a->nbits[k] != b->nbits[k]) return false;
        if (memcmp(a->basis[k], b->basis[k], a->nbits[k] * sizeof(uint32_t))) return false;
    }
    return true;
}

bool layout_is_surjective(const Layout *L)
{
    /* Gaussian elimination over GF(2): the span of the basis vectors must be every flat bit. */
    uint32_t rows[LL_NIN * LL_MAXBITS];
    int n = 0, rank = 0, total = layout_total_bits(L);
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < L->nbits[k]; i++) rows[n++] = L->basis[k][i];
    for (int bit = 0; bit < total; bit++) {
        int p = -1;
        for (int i = rank; i < n; i++)
            if (rows[i] >> bit & 1) { p = i; break; }
        if (p < 0) return false;
        uint32_t t = rows[p]; rows[p] = rows[rank]; rows[rank] = t;
        for (int i = 0; i < n; i++)
            if (i != rank && (rows[i] >> bit & 1)) rows[i] ^= rows[rank];
        rank++;
    }
    return true;
}

Layout layout_slice(const Layout *L, int axis)
{
    Layout S = *L;
    int off = layout_dim_offset(L, axis), nb = L->dimbits[axis];
    uint32_t low = (1u << off) - 1;
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < L->nbits[k]; i++) {
            uint32_t v = L->basis[k][i];
            S.basis[k][i] = (v & low) | ((v >> (off + nb)) << off);
        }
    for (int d = axis; d + 1 < L->rank; d++) S.dimbits[d] = L->dimbits[d + 1];
    S.dimbits[L->rank - 1] = 0;
    S.rank = L->rank - 1;
    return S;
}

uint32_t layout_axis_mask(const Layout *L, LayoutIn in, int axis)
{
    int off = layout_dim_offset(L, axis), nb = L->dimbits[axis];
    uint32_t axis_bits = ((1u << nb) - 1) << off, m = 0;
    for (int i = 0; i < L->nbits[in]; i++) {
        uint32_t v = L->basis[in][i];
        if (v && (v & ~axis_bits) == 0) m |= 1u << i;
    }
    return m;
}

Layout layout_transpose(const Layout *L, const int32_t *perm)
{
    Layout T = *L;
    for (int k = 0; k < L->rank; k++) T.dimbits[k] = L->dimbits[perm[k]];
    for (int in = 0; in < LL_NIN; in++)
        for (int i = 0; i < L->nbits[in]; i++) {
            uint32_t v = L->basis[in][i], t = 0;
            for (int k = 0; k < L->rank; k++) {
                int d = perm[k];
                uint32_t c = (v >> layout_dim_offset(L, d)) & ((1u << L->dimbits[d]) - 1);
                t |= c << layout_dim_offset(&T, k);
            }
            T.basis[in][i] = t;
        }
    return T;
}

Layout layout_mma_acc(IrType t, int wm, int wn)
{
    TL_ASSERT(t.rank == 2 && t.dims[0] % (16 * wm) == 0 && t.dims[1] % (8 * wn) == 0, "layout");
    Layout L;
    init_shape(&L, t);
    int cb = L.dimbits[1];                 /* row bit j is flat bit cb + j; col bit j is flat bit j */
    int pos_r = 0, pos_c = 0;
    /* the m16n8 fragment: c0..c3 of lane (4*g + q) sit at row g (+8), col 2q (+1) */
    L.basis[LL_REG][L.nbits[LL_REG]++] = 1u << 0;                 /* col bit 0 */
    L.basis[LL_LANE][L.nbits[LL_LANE]++] = 1u << 1;               /* col bits 1, 2 */
    L.basis[LL_LANE][L.nbits[LL_LANE]++] = 1u << 2;
    L.basis[LL_LANE][L.nbits[LL_LANE]++] = 1u << (cb + 0);        /* row bits 0..2 */
    L.basis[LL_LANE][L.nbits[LL_LANE]++] = 1u << (cb + 1);
    L.basis[LL_LANE][L.nbits[LL_LANE]++] = 1u << (cb + 2);
    L.basis[LL_REG][L.nbits[LL_REG]++] = 1u << (cb + 3);          /* row bit 3 */
    pos_c = 3;
    pos_r = 4;
    /* warps: wn along columns (fastest), then wm along rows */
    for (int i = 0; i < ilog2(wn); i++) L.basis[LL_WARP][L.nbits[LL_WARP]++] = 1u << (pos_c++);
    for (int i = 0; i < ilog2(wm); i++) L.basis[LL_WARP][L.nbits[LL_WARP]++] = 1u << (cb + pos_r++);
    /* registers repeat the warps' 16*wm x 8*wn tile: columns first, then rows */
    for (; pos_c < cb; pos_c++) L.basis[LL_REG][L.nbits[LL_REG]++] = 1u << pos_c;
    for (; pos_r < L.dimbits[0]; pos_r++) L.basis[LL_REG][L.nbits[LL_REG]++] = 1u << (cb + pos_r);
    return L;
}

Layout layout_mma_a(IrType t, int wm, int wn)
{
    TL_ASSERT(t.rank == 2 && t.dims[0] % (16 * wm) == 0 && t.dims[1] % 16 == 0, "layout");
    Layout L;
    init_shape(&L, t);
    int cb = L.dimbits[1];      /* row bit j: flat bit cb + j; col (k) bit j: flat bit j */
    uint32_t *reg = L.basis[LL_REG], *lane = L.basis[LL_LANE], *warp = L.basis[LL_WARP];
    /* a0..a7 of lane 4g+q: rows g, g+8; cols 2q, 2q+1, 2q+8, 2q+9 */
    reg[L.nbits[LL_REG]++] = 1u << 0;
    reg[L.nbits[LL_REG]++] = 1u << (cb + 3);
    reg[L.nbits[LL_REG]++] = 1u << 3;
    lane[L.nbits[LL_LANE]++] = 1u << 1;
    lane[L.nbits[LL_LANE]++] = 1u << 2;
    for (int j = 0; j < 3; j++) lane[L.nbits[LL_LANE]++] = 1u << (cb + j);
    int pos_r = 4;
    for (int i = 0; i < ilog2(wn); i++) warp[L.nbits[LL_WARP]++] = 0;
    for (int i = 0; i < ilog2(wm); i++) warp[L.nbits[LL_WARP]++] = 1u << (cb + pos_r++);
    for (int j = 4; j < cb; j++) reg[L.nbits[LL_REG]++] = 1u << j;               /* k tiles */
    for (; pos_r < L.dimbits[0]; pos_r++) reg[L.nbits[LL_REG]++] = 1u << (cb + pos_r); /* m tiles */
    return L;
}

Layout layout_mma_b(IrType t, int wm, int wn)
{
    TL_ASSERT(t.rank == 2 && t.dims[0] % 16 == 0 && t.dims[1] % (8 * wn) == 0, "layout");
    Layout L;
    init_shape(&L, t);
    int cb = L.dimbits[1];      /* row (k) bit j: flat bit cb + j; col bit j: flat bit j */
    uint32_t *reg = L.basis[LL_REG], *lane = L.basis[LL_LANE], *warp = L.basis[LL_WARP];
    /* b0..b3 of lane 4g+q: rows 2q, 2q+1, 2q+8, 2q+9; col g */
    reg[L.nbits[LL_REG]++] = 1u << (cb + 0);
    reg[L.nbits[LL_REG]++] = 1u << (cb + 3);
    lane[L.nbits[LL_LANE]++] = 1u << (cb + 1);
    lane[L.nbits[LL_LANE]++] = 1u << (cb + 2);
    for (int j = 0; j < 3; j++) lane[L.nbits[LL_LANE]++] = 1u << j;
    int pos_c = 3;
    for (int i = 0; i < ilog2(wn); i++) warp[L.nbits[LL_WARP]++] = 1u << pos_c++;
    for (int i = 0; i < ilog2(wm); i++) warp[L.nbits[LL_WARP]++] = 0;
    for (int j = 4; j < L.dimbits[0]; j++) reg[L.nbits[LL_REG]++] = 1u << (cb + j); /* k tiles */
    for (; pos_c < cb; pos_c++) reg[L.nbits[LL_REG]++] = 1u << pos_c;             /* n tiles */
    return L;
}

/* ---- shared-memory layouts ----------------------------------------------- */

bool layout_gf2_invert(const uint32_t *m, int n, uint32_t *inv)
{
    /* Gauss-Jordan on the augmented rows [m[i] | e_i]: row i says "offset
     * 1 << i maps to m[i]"; reducing the left half to the unit vectors leaves,
     * in row j, the combination of inputs that maps to 1 << j. */
    uint32_t a[LL_MAXBITS], b[LL_MAXBITS];
    TL_ASSERT(n >= 0 && n <= LL_MAXBITS, "layout");
    for (int i = 0; i < n; i++) {
        a[i] = m[i];
        b[i] = 1u << i;
    }
    for (int bit = 0; bit < n; bit++) {
        int p = -1;
        for (int i = bit; i < n; i++)
            if (a[i] >> bit & 1) { p = i; break; }
        if (p < 0) return false;
        uint32_t t = a[p]; a[p] = a[bit]; a[bit] = t;
        t = b[p]; b[p] = b[bit]; b[bit] = t;
        for (int i = 0; i < n; i++)
            if (i != bit && (a[i] >> bit & 1)) {
                a[i] ^= a[bit];
                b[i] ^= b[bit];
            }
    }
    for (int j = 0; j < n; j++) {
        if (a[j] != 1u << j) return false; /* bits of m beyond n: not square */
        inv[j] = b[j];
    }
    return true;
}

static int ebytes_of(IrType t)
{
    return t.isptr ? 8 : dt_bytes((DType)t.dt);
}

static int sdim_off(const SharedLayout *S, int k)
{
    int off = 0;
    for (int d = S->rank - 1; d > k; d--) off += S->dimbits[d];
    return off;
}

static SharedLayout shared_init(IrType t, int contig, int swizzle)
{
    SharedLayout S;
    memset(&S, 0, sizeof S);
    TL_ASSERT(t.rank >= 1 && contig >= 0 && contig < t.rank, "layout");
    S.rank = t.rank;
    for (int d = 0; d < t.rank; d++) {
        S.dimbits[d] = (uint8_t)ilog2(t.dims[d]);
        S.nbits = (uint8_t)(S.nbits + S.dimbits[d]);
    }
    TL_ASSERT(S.nbits <= LL_MAXBITS, "layout");
    S.ebytes = (uint8_t)ebytes_of(t);
    S.swizzle = (int8_t)swizzle;
    S.contig = (int8_t)contig;
    return S;
}

/* Fills basis[] from inv[] (which the constructors build: where each flat bit goes). */
static void shared_finish(SharedLayout *S)
{
    bool ok = layout_gf2_invert(S->inv, S->nbits, S->basis);
    TL_ASSERT(ok, "layout");
}

SharedLayout layout_shared_plain(IrType t, int contig)
{
    SharedLayout S = shared_init(t, contig, LL_SWZ_PLAIN);
    int pos = 0;
    for (int i = -1; i < S.rank; i++) { /* contig first, then dims last to first */
        int d = i < 0 ? contig : S.rank - 1 - i;
        if (i >= 0 && d == contig) continue;
        int off = sdim_off(&S, d);
        for (int b = 0; b < S.dimbits[d]; b++) S.inv[off + b] = 1u << pos++;
    }
    shared_finish(&S);
    return S;
}

uint32_t layout_swizzle_addr(int sw, uint32_t addr)
{
    if (sw <= 0) return addr;
    return addr ^ (((addr >> 7) & ((1u << sw) - 1)) << 4);
}

uint32_t layout_swizzle_align(int sw)
{
    return sw <= 0 ? 16u : 128u << sw;
}

int layout_swizzle_for(IrType t, int contig)
{
    TL_ASSERT(contig >= 0 && contig < t.rank, "layout");
    int64_t bytes = (int64_t)t.dims[contig] * ebytes_of(t);
    if (bytes < 16) return -1;
    int sw = LL_SWZ_NONE;
    while (sw < LL_SWZ_128B && (16 << (sw + 1)) <= bytes) sw++;
    return sw;
}

SharedLayout layout_shared_swizzled(IrType t, int contig, LayoutSwizzle sw)
{
    TL_ASSERT(t.rank == 2 && sw >= LL_SWZ_NONE && sw <= LL_SWZ_128B, "layout");
    SharedLayout S = shared_init(t, contig, sw);
    int strided = 1 - contig, e = ilog2(S.ebytes);
    int eb = ilog2(16 << sw) - e;              /* log2 of the elements in one span */
    int rb = S.dimbits[strided];
    TL_ASSERT(S.dimbits[contig] >= eb, "layout"); /* a row must fill the span */
    int coff = sdim_off(&S, contig), soff = sdim_off(&S, strided);
    /* 1. unswizzled: contiguous bits within the span, then rows, then strips */
    for (int b = 0; b < S.dimbits[contig]; b++)
        S.inv[coff + b] = 1u << (b < eb ? b : b + rb);
    for (int b = 0; b < rb; b++) S.inv[soff + b] = 1u << (eb + b);
    /* 2. the swizzle is linear on byte addresses: apply it to each image */
    for (int j = 0; j < S.nbits; j++) S.inv[j] = layout_swizzle_addr(sw, S.inv[j] << e) >> e;
    shared_finish(&S);
    return S;
}

uint32_t layout_shared_flat(const SharedLayout *S, uint32_t offset)
{
    uint32_t x = 0;
    for (int i = 0; i < S->nbits; i++)
        if (offset >> i & 1) x ^= S->basis[i];
    return x;
}

uint32_t layout_shared_offset(const SharedLayout *S, uint32_t flat)
{
    uint32_t x = 0;
    for (int j = 0; j < S->nbits; j++)
        if (flat >> j & 1) x ^= S->inv[j];
    return x;
}

Layout layout_shared_compose(const Layout *L, const SharedLayout *S)
{
    TL_ASSERT(L->rank == S->rank && !memcmp(L->dimbits, S->dimbits, sizeof L->dimbits), "layout");
    Layout C;
    memset(&C, 0, sizeof C);
    C.rank = 1;
    C.dimbits[0] = S->nbits;
    for (int k = 0; k < LL_NIN; k++) {
        C.nbits[k] = L->nbits[k];
        for (int i = 0; i < L->nbits[k]; i++) C.basis[k][i] = layout_shared_offset(S, L->basis[k][i]);
    }
    return C;
}

int layout_shared_max_vec(const Layout *L, const SharedLayout *S)
{
    Layout C = layout_shared_compose(L, S);
    int cap = ilog2(16 / S->ebytes), k = 0;
    /* registers 0..2^k-1 at offsets o..o+2^k-1 with o aligned: reg bit i is
     * offset bit i, and no other input touches the low k offset bits */
    while (k < cap && k < C.nbits[LL_REG] && C.basis[LL_REG][k] == 1u << k) {
        uint32_t low = (2u << k) - 1;
        bool aligned = true;
        for (int in = 0; in < LL_NIN; in++)
            for (int i = in == LL_REG ? k + 1 : 0; i < C.nbits[in]; i++)
                if (C.basis[in][i] & low) aligned = false;
        if (!aligned) break;
        k++;
    }
    return 1 << k;
}

BankCost layout_bank_cost(const Layout *L, const SharedLayout *S, int vec)
{
    TL_ASSERT(vec >= 1 && (vec & (vec - 1)) == 0 && vec <= layout_shared_max_vec(L, S), "layout");
    Layout C = layout_shared_compose(L, S);
    uint32_t w_bytes = (uint32_t)vec * S->ebytes;
    uint32_t per_phase = w_bytes <= 4 ? 32 : 128 / w_bytes, phases = 32 / per_phase;
    BankCost cost = {layout_nregs(&C) / (uint32_t)vec, 0, 0};
    cost.ideal = cost.accesses * phases;
    uint32_t words[32][32];
    uint32_t nwords[32];
    for (uint32_t w = 0; w < 1u << C.nbits[LL_WARP]; w++) {
        uint32_t total = 0;
        for (uint32_t a = 0; a < cost.accesses; a++)
            for (uint32_t p = 0; p < phases; p++) {
                memset(nwords, 0, sizeof nwords);
                uint32_t worst = 1;
                for (uint32_t l = p * per_phase; l < (p + 1) * per_phase; l++) {
                    uint32_t addr = layout_apply(&C, a * (uint32_t)vec, l, w) * S->ebytes;
                    for (uint32_t word = addr / 4; word <= (addr + w_bytes - 1) / 4; word++) {
                        uint32_t bank = word % 32, i = 0;
                        while (i < nwords[bank] && words[bank][i] != word) i++;
                        if (i < nwords[bank]) continue; /* same word: broadcast */
                        TL_ASSERT(nwords[bank] < 32, "layout");
                        words[bank][nwords[bank]++] = word;
                        if (nwords[bank] > worst) worst = nwords[bank];
                    }
                }
                total += worst;
            }
        if (total > cost.wavefronts) cost.wavefronts = total;
    }
    return cost;
}

/* ---- wgmma --------------------------------------------------------------- */

Layout layout_wgmma_acc(IrType t, int wgm, int wgn, int instr_n)
{
    TL_ASSERT(instr_n >= 8 && instr_n <= 256 && (instr_n & (instr_n - 1)) == 0, "layout");
    TL_ASSERT(t.rank == 2 && t.dims[0] % (64 * wgm) == 0 && t.dims[1] % (instr_n * wgn) == 0, "layout");
    Layout L;
    init_shape(&L, t);
    int cb = L.dimbits[1];      /* row bit j: flat bit cb + j; col bit j: flat bit j */
    uint32_t *reg = L.basis[LL_REG], *lane = L.basis[LL_LANE], *warp = L.basis[LL_WARP];
    /* 1. one warp's m16 x instr_n slice: the m16n8 accumulator fragment, repeated
     *    over instr_n/8 column groups by registers i/4 */
    reg[L.nbits[LL_REG]++] = 1u << 0;
    lane[L.nbits[LL_LANE]++] = 1u << 1;
    lane[L.nbits[LL_LANE]++] = 1u << 2;
    for (int j = 0; j < 3; j++) lane[L.nbits[LL_LANE]++] = 1u << (cb + j);
    reg[L.nbits[LL_REG]++] = 1u << (cb + 3);
    int pos_c = 3, pos_r = 4;
    for (; pos_c < ilog2(instr_n); pos_c++) reg[L.nbits[LL_REG]++] = 1u << pos_c;
    /* 2. the four warps of a warpgroup: rows 16*w; then warpgroups, N first */
    warp[L.nbits[LL_WARP]++] = 1u << (cb + pos_r++);
    warp[L.nbits[LL_WARP]++] = 1u << (cb + pos_r++);
    for (int i = 0; i < ilog2(wgn); i++) warp[L.nbits[LL_WARP]++] = 1u << pos_c++;
    for (int i = 0; i < ilog2(wgm); i++) warp[L.nbits[LL_WARP]++] = 1u << (cb + pos_r++);
    /* 3. registers repeat the 64 wgm x instr_n wgn tile: N, then M */
    for (; pos_c < cb; pos_c++) reg[L.nbits[LL_REG]++] = 1u << pos_c;
    for (; pos_r < L.dimbits[0]; pos_r++) reg[L.nbits[LL_REG]++] = 1u << (cb + pos_r);
    return L;
}

Layout layout_wgmma_a(IrType t, int wgm, int wgn)
{
    int eb = ebytes_of(t);
    TL_ASSERT(eb <= 4 && t.rank == 2 && t.dims[0] % (64 * wgm) == 0 && t.dims[1] % (32 / eb) == 0, "layout");
    Layout L;
    init_shape(&L, t);
    int cb = L.dimbits[1], pe = ilog2(4 / eb); /* pe: column bits packed in one 32-bit register */
    uint32_t *reg = L.basis[LL_REG], *lane = L.basis[LL_LANE], *warp = L.basis[LL_WARP];
    /* lane 4g+q: register 0 (2^pe packed elements) at row g, cols
     * (q << pe) + 0..2^pe-1; register 1 at row g+8; registers 2, 3 the same
     * 4 << pe columns on, the other half of the instruction's 32-byte K step
     * (bf16: a0..a7 at (g, 2q..2q+1), (g+8, ..), (g, 2q+8..), (g+8, 2q+8..)) */
    int c = 0;
    for (; c < pe; c++) reg[L.nbits[LL_REG]++] = 1u << c;
    lane[L.nbits[LL_LANE]++] = 1u << c++;
    lane[L.nbits[LL_LANE]++] = 1u << c++;
    for (int j = 0; j < 3; j++) lane[L.nbits[LL_LANE]++] = 1u << (cb + j);
    reg[L.nbits[LL_REG]++] = 1u << (cb + 3);
    reg[L.nbits[LL_REG]++] = 1u << c++;       /* the second half of the 32-byte K step */
    int pos_r = 4;
    warp[L.nbits[LL_WARP]++] = 1u << (cb + pos_r++);
    warp[L.nbits[LL_WARP]++] = 1u << (cb + pos_r++);
    for (int i = 0; i < ilog2(wgn); i++) warp[L.nbits[LL_WARP]++] = 0;
    for (int i = 0; i < ilog2(wgm); i++) warp[L.nbits[LL_WARP]++] = 1u << (cb + pos_r++);
    for (; c < cb; c++) reg[L.nbits[LL_REG]++] = 1u << c;                              /* k steps */
    for (; pos_r < L.dimbits[0]; pos_r++) reg[L.nbits[LL_REG]++] = 1u << (cb + pos_r); /* m tiles */
    return L;
}

uint64_t layout_wgmma_desc(uint32_t smem_addr, LayoutSwizzle sw, uint32_t lbo, uint32_t sbo)
{
    static const uint64_t mode[4] = {0, 3, 2, 1}; /* none, 32B, 64B, 128B as PTX encodes them */
    TL_ASSERT(sw >= LL_SWZ_NONE && sw <= LL_SWZ_128B, "layout");
    TL_ASSERT(smem_addr % 16 == 0 && lbo % 16 == 0 && sbo % 16 == 0, "layout");
    TL_ASSERT(smem_addr < 1u << 18 && lbo < 1u << 18 && sbo < 1u << 18, "layout");
    return (uint64_t)(smem_addr >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 | mode[sw] << 62;
}

uint32_t layout_wgmma_desc_addr(uint64_t desc, bool k_major, int ebytes, int mn, int k)
{
    static const int swz_of_mode[4] = {LL_SWZ_NONE, LL_SWZ_128B, LL_SWZ_64B, LL_SWZ_32B};
    uint32_t start = (uint32_t)(desc & 0x3FFF) << 4;
    uint32_t lbo = (uint32_t)(desc >> 16 & 0x3FFF) << 4, sbo = (uint32_t)(desc >> 32 & 0x3FFF) << 4;
    int sw = swz_of_mode[desc >> 62];
    uint32_t span = 16u << sw, t = 16u / (uint32_t)ebytes, e = span / (uint32_t)ebytes;
    uint32_t m = (uint32_t)mn, kk = (uint32_t)k, eb = (uint32_t)ebytes, a;
    /* PTX's canonical layouts (T = 16 bytes of elements), in bytes:
     *   K-major, none:     ((8,m),(T,2k)) : ((16, SBO), (eb, LBO))
     *   K-major, span S:   ((8,m),(T,2k)) : ((S, SBO),  (eb, 16))
     *   MN-major, none:    ((T,1,m),(8,k)) : ((eb, -, SBO), (16, LBO))
     *   MN-major, span S:  ((T,S/16,m),(8,k)) : ((eb, 16, LBO), (S, SBO)) */
    if (k_major) {
        a = (m % 8) * span + (m / 8) * sbo;
        a += sw == LL_SWZ_NONE ? (kk % t) * eb + (kk / t) * lbo : kk * eb;
    } else if (sw == LL_SWZ_NONE) {
        a = (m % t) * eb + (m / t) * sbo + (kk % 8) * 16 + (kk / 8) * lbo;
    } else {
        a = (m % e) * eb + (m / e) * lbo + (kk % 8) * span + (kk / 8) * sbo;
    }
    return layout_swizzle_addr(sw, start + a);
}

/* Byte offset in S of element (mn, k) of a wgmma operand (A [M, K], B [K, N]). */
static uint32_t operand_off(const SharedLayout *S, WgmmaOperand op, int mn, int k)
{
    int kd = op == LL_WGMMA_A ? 1 : 0;
    uint32_t c[2];
    c[kd] = (uint32_t)k;
    c[1 - kd] = (uint32_t)mn;
    uint32_t flat = c[0] << S->dimbits[1] | c[1];
    return layout_shared_offset(S, flat) * S->ebytes;
}

bool layout_wgmma_strides(const SharedLayout *S, WgmmaOperand op, int instr_mn, uint32_t *lbo, uint32_t *sbo)
{
    TL_ASSERT(S->rank == 2, "layout");
    int kd = op == LL_WGMMA_A ? 1 : 0, md = 1 - kd, eb = S->ebytes;
    if (eb > 4) return false;
    int t = 16 / eb, ik = 32 / eb, mn_ext = 1 << S->dimbits[md], k_ext = 1 << S->dimbits[kd];
    if (instr_mn > mn_ext || ik > k_ext) return false;
    int sw = S->swizzle < 0 ? LL_SWZ_NONE : S->swizzle, e = (16 << sw) / eb;
    bool k_major = S->contig == kd;
    if (!k_major && eb != 2) return false; /* wgmma transposes only f16/bf16 */
    /* the offsets of the elements the strides step to; a stride the
     * instruction tile never takes is "not used, assumed 1" (16 bytes) */
#define AT(mn, k) ((mn) < mn_ext && (k) < k_ext ? operand_off(S, op, (mn), (k)) : 16u)
    uint32_t l = 16, s = 16;
    if (k_major) {
        s = AT(8, 0);
        if (sw == LL_SWZ_NONE) l = AT(0, t);
    } else if (sw == LL_SWZ_NONE) {
        s = AT(t, 0);
        l = AT(0, 8);
    } else {
        l = AT(e, 0);
        s = AT(0, 8);
    }
#undef AT
    if (!l || !s || l % 16 || s % 16 || l >= 1u << 18 || s >= 1u << 18) return false;
    uint64_t d = layout_wgmma_desc(0, (LayoutSwizzle)sw, l, s);
    for (int mn = 0; mn < instr_mn; mn++)
        for (int k = 0; k < ik; k++)
            if (layout_wgmma_desc_addr(d, k_major, eb, mn, k) != operand_off(S, op, mn, k)) return false;
    *lbo = l;
    *sbo = s;
    return true;
}

uint32_t layout_wgmma_start(const SharedLayout *S, WgmmaOperand op, int mn0, int k0)
{
    /* the descriptor holds the address before the swizzle, which the
     * hardware applies after adding the canonical offsets */
    return layout_swizzle_addr(S->swizzle, operand_off(S, op, mn0, k0));
}

bool layout_wgmma_shape(const IrTarget *t, IrType at, IrType bt, int warps, WgmmaShape *out)
{
    if (!ir_target_has(t, IR_TGT_WGMMA)) return false;
    if (at.kind != TY_TILE || bt.kind != TY_TILE || at.rank != 2 || bt.rank != 2 || at.isptr || bt.isptr) return false;
    DType dt = (DType)at.dt;
    bool f16 = dt == DT_F16 || dt == DT_BF16, f8 = dt == DT_F8E4M3 || dt == DT_F8E5M2;
    DType dtb = (DType)bt.dt;
    bool ok_b = f16 ? dtb == dt : (dtb == DT_F8E4M3 || dtb == DT_F8E5M2);
    if (!(f16 || f8) || !ok_b || warps < 4 || warps % 4) return false;
    int M = at.dims[0], K = at.dims[1], N = bt.dims[1], groups = warps / 4;
    if (bt.dims[0] != K || M % 64) return false;
    WgmmaShape w = {1, 1, 0, 32 / dt_bytes(dt)};
    /* warpgroups along M first (each one's B tile is then the whole of N) */
    while (w.wgm < groups && M % (64 * w.wgm * 2) == 0) w.wgm *= 2;
    w.wgn = groups / w.wgm;
    if (w.wgm * w.wgn != groups || N % w.wgn || N / w.wgn < 8) return false;
    w.instr_n = N / w.wgn > 256 ? 256 : N / w.wgn;
    if ((w.instr_n & (w.instr_n - 1)) || N % (w.instr_n * w.wgn) || K % w.instr_k) return false;
    /* A and B staged in shared memory, each aligned to the 1024-byte swizzle repeat */
    if (((int64_t)M * K + (int64_t)K * N) * dt_bytes(dt) + 2048 > t->smem_per_cta) return false;
    /* both operands K-major: A [M, K] contiguous along dim 1, B [K, N] along dim 0 */
    SharedLayout SA = layout_shared_swizzled(at, 1, (LayoutSwizzle)layout_swizzle_for(at, 1));
    SharedLayout SB = layout_shared_swizzled(bt, 0, (LayoutSwizzle)layout_swizzle_for(bt, 0));
    uint32_t lbo, sbo;
    if (!layout_wgmma_strides(&SA, LL_WGMMA_A, 64, &lbo, &sbo)) return false;
    if (!layout_wgmma_strides(&SB, LL_WGMMA_B, w.instr_n, &lbo, &sbo)) return false;
    if (out) *out = w;
    return true;
}

const char *layout_dot_instr_name(DotInstr i)
{
    static const char *const names[] = {"fma", "mma.sync", "wgmma"};
    return names[i];
}

void layout_dot_plan(IrType at, IrType bt, IrType ct, int warps, const IrTarget *t, DotPlan *out)
{
    memset(out, 0, sizeof *out);
    out->wm = warps >= 4 ? warps / 2 : warps;
    out->wn = warps / out->wm;
    if (layout_wgmma_shape(t, at, bt, warps, &out->w)) {
        out->instr = LL_DOT_WGMMA;
        out->acc = layout_wgmma_acc(ct, out->w.wgm, out->w.wgn, out->w.instr_n);
        snprintf(out->reason, sizeof out->reason, "%s, %d x %d warpgroups, m64n%dk%d", t->name, out->w.wgm, out->w.wgn,
                 out->w.instr_n, out->w.instr_k);
        return;
    }
    int M = ct.dims[0], N = ct.dims[1], K = at.dims[1];
    bool tiles = M % (16 * out->wm) == 0 && N % (8 * out->wn) == 0;
    bool b16 = at.dt == DT_F16 || at.dt == DT_BF16;
    if (tiles) out->acc = layout_mma_acc(ct, out->wm, out->wn);
    else out->acc = layout_default(ct, warps);
    if (tiles && b16 && K % 16 == 0) {
        out->instr = LL_DOT_MMA;
        snprintf(out->reason, sizeof out->reason, "%s operands over %d x %d warps", dt_name[at.dt], out->wm, out->wn);
        return;
    }
    out->instr = LL_DOT_FMA;
    if (!tiles)
        snprintf(out->reason, sizeof out->reason, "[%d, %d] does not tile %d x %d warps of m16n8", M, N, out->wm, out->wn);
    else if (!b16)
        snprintf(out->reason, sizeof out->reason, "%s operands (mma.sync takes f16/bf16)", dt_name[at.dt]);
    else
        snprintf(out->reason, sizeof out->reason, "K = %d is not a multiple of 16", K);
}

static void print_basis(StrBuf *b, const Layout *L, uint32_t v)
{
    sb_putc(b, '[');
    for (int d = 0; d < L->rank; d++) {
        int off = layout_dim_offset(L, d);
        uint32_t c = (v >> off) & ((1u << L->dimbits[d]) - 1);
        sb_printf(b, d ? ",%u" : "%u", c);
    }
    sb_putc(b, ']');
}

void layout_print(StrBuf *b, const Layout *L)
{
    static const char *const names[LL_NIN] = {"reg", "lane", "warp"};
    sb_puts(b, "#linear<");
    for (int k = 0; k < LL_NIN; k++) {
        sb_printf(b, k ? ", %s=[" : "%s=[", names[k]);
        for (int i = 0; i < L->nbits[k]; i++) {
            if (i) sb_putc(b, ',');
            print_basis(b, L, L->basis[k][i]);
        }
        sb_putc(b, ']');
    }
    sb_putc(b, '>');
}

void layout_shared_print(StrBuf *b, const SharedLayout *S)
{
    static const char *const names[] = {"none", "32B", "64B", "128B"};
    sb_printf(b, "#shared<%s, contig=%d, offset=[", S->swizzle < 0 ? "plain" : names[S->swizzle], S->contig);
    for (int i = 0; i < S->nbits; i++) {
        sb_puts(b, i ? ",[" : "[");
        for (int d = 0; d < S->rank; d++) {
            uint32_t c = (S->basis[i] >> sdim_off(S, d)) & ((1u << S->dimbits[d]) - 1);
            sb_printf(b, d ? ",%u" : "%u", c);
        }
        sb_putc(b, ']');
    }
    sb_puts(b, "]>");
}
