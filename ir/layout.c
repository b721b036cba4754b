/* layout.c: the linear-layout algebra (see layout.h). */
#include "layout.h"

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

uint32_t layout_apply(const Layout *L, uint32_t r, uint32_t l, uint32_t w)
{
    uint32_t in[LL_NIN] = {r, l, w}, x = 0;
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < L->nbits[k]; i++)
            if (in[k] >> i & 1) x ^= L->basis[k][i];
    return x;
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
