/* test_layout.c: the linear-layout algebra. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir/layout.h"

static IrType tile2(DType dt, int m, int n)
{
    int32_t d[2] = {m, n};
    return ir_ty_tile(dt, false, 2, d);
}

/* Counts how often each element is held; returns the max count and fails on a miss. */
static uint32_t coverage(const Layout *L, int64_t numel, int warps)
{
    uint32_t *cnt = calloc((size_t)numel, sizeof *cnt), worst = 0;
    for (uint32_t w = 0; w < (uint32_t)warps; w++)
        for (uint32_t l = 0; l < 32; l++)
            for (uint32_t r = 0; r < layout_nregs(L); r++) {
                uint32_t x = layout_apply(L, r, l, w);
                assert_true(x < numel);
                cnt[x]++;
            }
    for (int64_t i = 0; i < numel; i++) {
        assert_true(cnt[i] > 0);
        if (cnt[i] > worst) worst = cnt[i];
    }
    free(cnt);
    return worst;
}

static void default_layouts_cover_every_element(void **state)
{
    (void)state;
    static const int shapes[][2] = {{1, 1024}, {64, 64}, {128, 128}, {2, 8}, {256, 32}, {1, 16}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int warps = 1; warps <= 8; warps *= 2) {
            IrType t = tile2(DT_F32, shapes[s][0], shapes[s][1]);
            Layout L = layout_default(t, warps);
            assert_true(layout_is_surjective(&L));
            int64_t n = ir_ty_numel(t);
            uint32_t worst = coverage(&L, n, warps);
            /* no replication once the tile is at least one element per thread */
            if (n >= 32 * warps) assert_int_equal(worst, 1);
        }
}

static void default_layout_vectorizes_last_dim(void **state)
{
    (void)state;
    Layout L = layout_default(tile2(DT_F32, 64, 64), 4);
    /* 4 consecutive f32 in registers 0..3 of a thread: 16-byte vectors */
    uint32_t base = layout_apply(&L, 0, 5, 2);
    for (uint32_t r = 1; r < 4; r++) assert_int_equal(layout_apply(&L, r, 5, 2), base + r);
    Layout H = layout_default(tile2(DT_BF16, 16, 256), 4);
    assert_int_equal(layout_apply(&H, 7, 0, 0), layout_apply(&H, 0, 0, 0) + 7);
}

static void mma_acc_matches_ptx_fragment(void **state)
{
    (void)state;
    /* PTX ISA, mma.m16n8k16 f32 accumulator: lane = 4*g + q holds
     * c0,c1 at (g, 2q), (g, 2q+1) and c2,c3 at (g+8, 2q), (g+8, 2q+1). */
    Layout L = layout_mma_acc(tile2(DT_F32, 16, 8), 1, 1);
    for (uint32_t lane = 0; lane < 32; lane++)
        for (uint32_t c = 0; c < 4; c++) {
            uint32_t g = lane / 4, q = lane % 4;
            uint32_t row = g + (c >= 2 ? 8 : 0), col = 2 * q + (c & 1);
            assert_int_equal(layout_apply(&L, c, lane, 0), row * 8 + col);
        }
    Layout B = layout_mma_acc(tile2(DT_F32, 128, 128), 2, 2);
    assert_true(layout_is_surjective(&B));
    assert_int_equal(coverage(&B, 128 * 128, 4), 1);
}

static void mma_operands_match_ptx_fragments(void **state)
{
    (void)state;
    /* PTX ISA, mma.m16n8k16 .bf16/.f16: lane 4g+q holds A elements
     * a0,a1 (g, 2q..2q+1), a2,a3 (g+8, ..), a4,a5 (g, 2q+8..), a6,a7 (g+8, 2q+8..)
     * and B elements b0,b1 (2q..2q+1, g), b2,b3 (2q+8.., g). */
    Layout A = layout_mma_a(tile2(DT_BF16, 16, 16), 1, 1), B = layout_mma_b(tile2(DT_BF16, 16, 8), 1, 1);
    for (uint32_t lane = 0; lane < 32; lane++) {
        uint32_t g = lane / 4, q = lane % 4;
        for (uint32_t e = 0; e < 8; e++) {
            uint32_t row = g + ((e >> 1) & 1) * 8, col = 2 * q + (e & 1) + (e >> 2) * 8;
            assert_int_equal(layout_apply(&A, e, lane, 0), row * 16 + col);
        }
        for (uint32_t e = 0; e < 4; e++) {
            uint32_t row = 2 * q + (e & 1) + (e >> 1) * 8, col = g;
            assert_int_equal(layout_apply(&B, e, lane, 0), row * 8 + col);
        }
    }
    /* bigger tiles over 2x2 warps: covered, with the replication the warps share */
    Layout A2 = layout_mma_a(tile2(DT_BF16, 128, 64), 2, 2), B2 = layout_mma_b(tile2(DT_BF16, 64, 128), 2, 2);
    assert_true(layout_is_surjective(&A2));
    assert_true(layout_is_surjective(&B2));
    assert_int_equal(coverage(&A2, 128 * 64, 4), 2);
    assert_int_equal(coverage(&B2, 64 * 128, 4), 2);
}

static void slice_drops_the_axis(void **state)
{
    (void)state;
    IrType t = tile2(DT_F32, 32, 64);
    Layout L = layout_default(t, 4);
    Layout S = layout_slice(&L, 1); /* reduce over columns: a [32] layout */
    assert_int_equal(S.rank, 1);
    assert_int_equal(S.dimbits[0], 5);
    assert_true(layout_is_surjective(&S));
    for (uint32_t w = 0; w < 4; w++)
        for (uint32_t l = 0; l < 32; l++)
            for (uint32_t r = 0; r < layout_nregs(&L); r++)
                assert_int_equal(layout_apply(&S, r, l, w), layout_apply(&L, r, l, w) / 64);
    /* registers along the reduced axis are the ones a thread combines */
    uint32_t m = layout_axis_mask(&L, LL_REG, 1);
    assert_true(m != 0);
}

static void print_is_readable(void **state)
{
    (void)state;
    StrBuf b = {0};
    Layout L = layout_mma_acc(tile2(DT_F32, 16, 8), 1, 1);
    layout_print(&b, &L);
    assert_string_equal(b.s, "#linear<reg=[[0,1],[8,0]], lane=[[0,2],[0,4],[1,0],[2,0],[4,0]], warp=[]>");
    sb_free(&b);
}

/* ---- shared layouts ------------------------------------------------------ */

static uint32_t rng_state = 12345;
static uint32_t rng(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

static void gf2_inverse_is_an_inverse(void **state)
{
    (void)state;
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + (int)(rng() % 20);
        uint32_t m[LL_MAXBITS], inv[LL_MAXBITS];
        /* a random invertible matrix: the identity under random row operations */
        for (int i = 0; i < n; i++) m[i] = 1u << i;
        for (int op = 0; op < 4 * n; op++) {
            int a = (int)(rng() % (uint32_t)n), b = (int)(rng() % (uint32_t)n);
            if (a != b) m[a] ^= m[b];
            else { int c = (int)(rng() % (uint32_t)n); uint32_t t = m[a]; m[a] = m[c]; m[c] = t; }
        }
        assert_true(layout_gf2_invert(m, n, inv));
        for (int j = 0; j < n; j++) { /* m(inv(e_j)) = e_j */
            uint32_t x = 0;
            for (int i = 0; i < n; i++)
                if (inv[j] >> i & 1) x ^= m[i];
            assert_int_equal(x, 1u << j);
        }
    }
    uint32_t sing[3] = {1, 2, 3}, inv[3];
    assert_false(layout_gf2_invert(sing, 3, inv));
    uint32_t wide[2] = {1, 4}; /* image outside the n x n square */
    assert_false(layout_gf2_invert(wide, 2, inv));
}

static void check_bijection(const SharedLayout *S)
{
    uint32_t n = 1u << S->nbits;
    uint8_t *seen = calloc(n, 1);
    for (uint32_t f = 0; f < n; f++) {
        uint32_t o = layout_shared_offset(S, f);
        assert_true(o < n);
        assert_false(seen[o]);
        seen[o] = 1;
        assert_int_equal(layout_shared_flat(S, o), f);
    }
    free(seen);
}

static void plain_layouts_are_row_and_column_major(void **state)
{
    (void)state;
    SharedLayout R = layout_shared_plain(tile2(DT_BF16, 32, 64), 1);
    SharedLayout C = layout_shared_plain(tile2(DT_BF16, 32, 64), 0);
    check_bijection(&R);
    check_bijection(&C);
    assert_int_equal(R.ebytes, 2);
    for (uint32_t r = 0; r < 32; r++)
        for (uint32_t c = 0; c < 64; c++) {
            assert_int_equal(layout_shared_offset(&R, r * 64 + c), r * 64 + c);
            assert_int_equal(layout_shared_offset(&C, r * 64 + c), c * 32 + r);
        }
}

/* The swizzle restated from PTX: within rows of `span` bytes, the 16-byte chunk
 * index is XORed with the address bits above 128 bytes, masked to the span. */
static uint32_t ref_swizzle(int sw, uint32_t a)
{
    uint32_t chunks = 1u << sw, chunk = (a / 16) % chunks;
    uint32_t x = (a / 128) % chunks;
    return a - chunk * 16 + (chunk ^ x) * 16;
}

static void swizzled_layouts_match_the_ptx_pattern(void **state)
{
    (void)state;
    static const DType dts[] = {DT_F8E4M3, DT_BF16, DT_F32};
    for (size_t di = 0; di < 3; di++)
        for (int sw = LL_SWZ_NONE; sw <= LL_SWZ_128B; sw++)
            for (int contig = 0; contig < 2; contig++) {
                int eb = dt_bytes(dts[di]), span = 16 << sw, e = span / eb;
                int dims[2];
                dims[contig] = 2 * (256 / eb); /* two 128B-wide strips at most */
                dims[1 - contig] = 32;
                IrType t = tile2(dts[di], dims[0], dims[1]);
                SharedLayout S = layout_shared_swizzled(t, contig, (LayoutSwizzle)sw);
                check_bijection(&S);
                for (int r = 0; r < dims[1 - contig]; r++)
                    for (int c = 0; c < dims[contig]; c++) {
                        uint32_t logical = (uint32_t)((c / e) * dims[1 - contig] * span + r * span + (c % e) * eb);
                        uint32_t flat = contig == 1 ? (uint32_t)(r * dims[1] + c) : (uint32_t)(c * dims[1] + r);
                        assert_int_equal(layout_shared_offset(&S, flat) * (uint32_t)eb, ref_swizzle(sw, logical));
                    }
            }
    /* 128B, bf16, K-major: element (row r, col c) sits in chunk (c/8) ^ (r%8) */
    SharedLayout S = layout_shared_swizzled(tile2(DT_BF16, 64, 64), 1, LL_SWZ_128B);
    assert_int_equal(layout_shared_offset(&S, 3 * 64 + 8) * 2, 3 * 128 + (1 ^ 3) * 16);
    assert_int_equal(layout_shared_offset(&S, 13 * 64 + 61) * 2, 13 * 128 + (7 ^ 5) * 16 + 10);
}

static void swizzle_choice_and_alignment(void **state)
{
    (void)state;
    assert_int_equal(layout_swizzle_for(tile2(DT_BF16, 64, 64), 1), LL_SWZ_128B);
    assert_int_equal(layout_swizzle_for(tile2(DT_BF16, 64, 32), 1), LL_SWZ_64B);
    assert_int_equal(layout_swizzle_for(tile2(DT_BF16, 64, 16), 1), LL_SWZ_32B);
    assert_int_equal(layout_swizzle_for(tile2(DT_F8E4M3, 64, 16), 1), LL_SWZ_NONE);
    assert_int_equal(layout_swizzle_for(tile2(DT_BF16, 64, 4), 1), -1);
    assert_int_equal(layout_swizzle_for(tile2(DT_BF16, 128, 4), 0), LL_SWZ_128B);
    assert_int_equal(layout_swizzle_align(LL_SWZ_128B), 1024);
    assert_int_equal(layout_swizzle_align(LL_SWZ_64B), 512);
    assert_int_equal(layout_swizzle_align(LL_SWZ_32B), 256);
    assert_int_equal(layout_swizzle_align(LL_SWZ_NONE), 16);
    for (uint32_t a = 0; a < 4096; a += 16) /* an involution */
        assert_int_equal(layout_swizzle_addr(LL_SWZ_64B, layout_swizzle_addr(LL_SWZ_64B, a)), a);
}

static void compose_gives_shared_offsets(void **state)
{
    (void)state;
    IrType t = tile2(DT_F32, 128, 128);
    Layout L = layout_wgmma_acc(t, 2, 1, 128);
    SharedLayout S = layout_shared_swizzled(t, 1, LL_SWZ_128B);
    Layout C = layout_shared_compose(&L, &S);
    assert_int_equal(C.rank, 1);
    assert_int_equal(C.dimbits[0], 14);
    assert_true(layout_is_surjective(&C));
    for (uint32_t w = 0; w < 8; w++)
        for (uint32_t l = 0; l < 32; l++)
            for (uint32_t r = 0; r < layout_nregs(&L); r++)
                assert_int_equal(layout_apply(&C, r, l, w), layout_shared_offset(&S, layout_apply(&L, r, l, w)));
    /* the accumulator's register pairs are adjacent in any of these layouts */
    assert_int_equal(layout_shared_max_vec(&L, &S), 2);
    SharedLayout P = layout_shared_plain(t, 1), T = layout_shared_plain(t, 0);
    assert_int_equal(layout_shared_max_vec(&L, &P), 2);
    assert_int_equal(layout_shared_max_vec(&L, &T), 1);
    /* 16-byte vectors of a blocked layout survive the swizzle (it moves whole chunks) */
    IrType h = tile2(DT_BF16, 64, 64);
    Layout B = layout_default(h, 4);
    SharedLayout H = layout_shared_swizzled(h, 1, LL_SWZ_128B);
    assert_int_equal(layout_shared_max_vec(&B, &H), 8);
}

/* The addresses ldmatrix.x4 reads for an A tile [64, 64] bf16 over 4 warps:
 * each lane names one 16-byte row of an 8x8 matrix; lanes 0-7 rows 0-7,
 * 8-15 rows 8-15, 16-31 the same rows 8 columns on (a column of chunks). */
static Layout ldmatrix_x4_addresses(void)
{
    Layout L;
    memset(&L, 0, sizeof L);
    L.rank = 2;
    L.dimbits[0] = 6;
    L.dimbits[1] = 6;
    for (int j = 0; j < 3; j++) L.basis[LL_REG][L.nbits[LL_REG]++] = 1u << j;        /* 8 elements */
    for (int j = 0; j < 4; j++) L.basis[LL_LANE][L.nbits[LL_LANE]++] = 1u << (6 + j); /* rows 0-15 */
    L.basis[LL_LANE][L.nbits[LL_LANE]++] = 1u << 3;                                  /* cols +8 */
    L.basis[LL_WARP][L.nbits[LL_WARP]++] = 1u << 10;                                 /* rows 16w */
    L.basis[LL_WARP][L.nbits[LL_WARP]++] = 1u << 11;
    L.basis[LL_REG][L.nbits[LL_REG]++] = 1u << 4;                                    /* k steps */
    L.basis[LL_REG][L.nbits[LL_REG]++] = 1u << 5;
    return L;
}

static void swizzle_removes_ldmatrix_bank_conflicts(void **state)
{
    (void)state;
    IrType t = tile2(DT_BF16, 64, 64);
    Layout L = ldmatrix_x4_addresses();
    assert_true(layout_is_surjective(&L));
    assert_int_equal(coverage(&L, 64 * 64, 4), 1);
    SharedLayout P = layout_shared_plain(t, 1), S = layout_shared_swizzled(t, 1, LL_SWZ_128B);
    assert_int_equal(layout_shared_max_vec(&L, &P), 8);
    assert_int_equal(layout_shared_max_vec(&L, &S), 8);
    BankCost p = layout_bank_cost(&L, &P, 8), s = layout_bank_cost(&L, &S, 8);
    /* 4 accesses of 16 bytes per lane, 4 phases of 8 lanes each */
    assert_int_equal(p.accesses, 4);
    assert_int_equal(p.ideal, 16);
    /* plain rows are 128 bytes apart: 8 rows of one chunk hit the same 4 banks */
    assert_int_equal(p.wavefronts, 4 * 4 * 8);
    assert_int_equal(s.wavefronts, s.ideal);
    /* 64B swizzle of the same tile: two 32-column strips, also conflict-free */
    SharedLayout S64 = layout_shared_swizzled(t, 1, LL_SWZ_64B);
    BankCost s64 = layout_bank_cost(&L, &S64, 8);
    assert_int_equal(s64.wavefronts, s64.ideal);
    /* narrower accesses of the same addresses: 4-byte words, one phase of 32
     * lanes, whose 16 rows of one column all fall in one bank */
    BankCost p2 = layout_bank_cost(&L, &P, 2), s2 = layout_bank_cost(&L, &S, 2);
    assert_int_equal(p2.accesses, 16);
    assert_int_equal(p2.ideal, 16);
    assert_int_equal(p2.wavefronts, 16 * 16);
    /* swizzled: rows r and r+8 share a chunk, and the other column's lanes
     * (chunk 1 ^ r) land on the same eight chunks: 4 words per bank */
    assert_int_equal(s2.wavefronts, 16 * 4);
}

static void broadcasts_cost_no_extra_wavefronts(void **state)
{
    (void)state;
    /* [1, 16] f32 over one warp: 4 lanes hold the 4 vectors, lanes 4-31 repeat
     * them; each phase of 8 lanes reads 4 distinct chunks twice */
    IrType t = tile2(DT_F32, 1, 16);
    Layout L = layout_default(t, 1);
    SharedLayout P = layout_shared_plain(t, 1);
    assert_int_equal(layout_shared_max_vec(&L, &P), 4);
    BankCost c = layout_bank_cost(&L, &P, 4);
    assert_int_equal(c.accesses, 1);
    assert_int_equal(c.ideal, 4);
    assert_int_equal(c.wavefronts, 4);
    /* every lane reading the same word: one wavefront per access */
    IrType u = tile2(DT_F32, 1, 32);
    Layout B;
    memset(&B, 0, sizeof B);
    B.rank = 2;
    B.dimbits[1] = 5;
    for (int j = 0; j < 5; j++) {
        B.basis[LL_REG][B.nbits[LL_REG]++] = 1u << j;
        B.basis[LL_LANE][B.nbits[LL_LANE]++] = 0;
    }
    SharedLayout Q = layout_shared_plain(u, 1);
    BankCost b = layout_bank_cost(&B, &Q, 1);
    assert_int_equal(b.accesses, 32);
    assert_int_equal(b.wavefronts, 32);
}

static void accumulator_epilogue_bank_conflicts(void **state)
{
    (void)state;
    /* storing a wgmma accumulator f32 [64, 128] as 8-byte pairs: each phase of
     * 16 lanes covers rows g = 0..3, 8 bytes at 8q */
    IrType t = tile2(DT_F32, 64, 128);
    Layout L = layout_wgmma_acc(t, 1, 1, 128);
    SharedLayout P = layout_shared_plain(t, 1), S = layout_shared_swizzled(t, 1, LL_SWZ_128B);
    BankCost p = layout_bank_cost(&L, &P, 2), s = layout_bank_cost(&L, &S, 2);
    assert_int_equal(p.accesses, 32);
    assert_int_equal(p.ideal, 64);
    /* plain: rows 512 bytes apart, the 4 rows of a phase all in one bank set */
    assert_int_equal(p.wavefronts, 4 * 64);
    /* 128B: rows 2g and 2g+1 swap the same two chunks, so pairs of rows meet */
    assert_int_equal(s.wavefronts, 2 * 64);
}

/* ---- wgmma ---------------------------------------------------------------- */

static void wgmma_acc_matches_ptx_fragment(void **state)
{
    (void)state;
    for (int n = 8; n <= 256; n *= 2) {
        Layout L = layout_wgmma_acc(tile2(DT_F32, 64, n), 1, 1, n);
        assert_int_equal(layout_nregs(&L), (uint32_t)n / 2);
        assert_int_equal(L.nbits[LL_WARP], 2);
        for (uint32_t th = 0; th < 128; th++)
            for (uint32_t i = 0; i < (uint32_t)n / 2; i++) {
                uint32_t lane = th % 32, warp = th / 32;
                uint32_t row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
                uint32_t col = (lane % 4) * 2 + (i % 2) + 8 * (i / 4);
                assert_int_equal(layout_apply(&L, i, lane, warp), row * (uint32_t)n + col);
            }
    }
    /* BM x BN over warpgroups: each instruction block j is the PTX fragment */
    static const int cfg[][5] = {{256, 256, 2, 1, 128}, {128, 256, 1, 2, 64}, {256, 128, 2, 2, 32}, {64, 64, 1, 1, 16}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        int bm = cfg[c][0], bn = cfg[c][1], wgm = cfg[c][2], wgn = cfg[c][3], in = cfg[c][4];
        Layout L = layout_wgmma_acc(tile2(DT_F32, bm, bn), wgm, wgn, in);
        assert_int_equal(coverage(&L, (int64_t)bm * bn, 4 * wgm * wgn), 1);
        uint32_t nreps = (uint32_t)(bn / (in * wgn)), mreps = (uint32_t)(bm / (64 * wgm));
        for (uint32_t th = 0; th < (uint32_t)(128 * wgm * wgn); th++) {
            uint32_t lane = th % 32, warp = th / 32, wg = warp / 4, wiw = warp % 4;
            uint32_t wg_n = wg % (uint32_t)wgn, wg_m = wg / (uint32_t)wgn;
            for (uint32_t mr = 0; mr < mreps; mr++)
                for (uint32_t nr = 0; nr < nreps; nr++)
                    for (uint32_t i = 0; i < (uint32_t)in / 2; i++) {
                        uint32_t reg = i + (uint32_t)in / 2 * (nr + nreps * mr);
                        uint32_t row = 64 * (wg_m + (uint32_t)wgm * mr) + 16 * wiw + lane / 4 + 8 * ((i / 2) % 2);
                        uint32_t col = (uint32_t)in * (wg_n + (uint32_t)wgn * nr) + (lane % 4) * 2 + (i % 2) + 8 * (i / 4);
                        assert_int_equal(layout_apply(&L, reg, lane, warp), row * (uint32_t)bn + col);
                    }
        }
    }
}

static void wgmma_a_is_the_mma_fragment_per_warp(void **state)
{
    (void)state;
    /* bf16: warp w of the warpgroup holds rows 16w.. as mma.sync m16n8k16 does */
    Layout W = layout_wgmma_a(tile2(DT_BF16, 64, 16), 1, 1), M = layout_mma_a(tile2(DT_BF16, 16, 16), 1, 1);
    for (uint32_t w = 0; w < 4; w++)
        for (uint32_t l = 0; l < 32; l++)
            for (uint32_t r = 0; r < 8; r++)
                assert_int_equal(layout_apply(&W, r, l, w), layout_apply(&M, r, l, 0) + 16 * w * 16);
    /* 8-bit, k32: lane 4g+q holds a0..a3 at (g, 4q..4q+3), a4..a7 at g+8,
     * a8..a15 the same 16 columns on */
    Layout F = layout_wgmma_a(tile2(DT_F8E4M3, 64, 32), 1, 1);
    assert_int_equal(layout_nregs(&F), 16);
    for (uint32_t w = 0; w < 4; w++)
        for (uint32_t l = 0; l < 32; l++)
            for (uint32_t i = 0; i < 16; i++) {
                uint32_t row = 16 * w + l / 4 + 8 * ((i / 4) % 2), col = 4 * (l % 4) + i % 4 + 16 * (i / 8);
                assert_int_equal(layout_apply(&F, i, l, w), row * 32 + col);
            }
    /* bigger: covered, replicated over the wgn warpgroups of a row */
    Layout A2 = layout_wgmma_a(tile2(DT_BF16, 128, 64), 2, 2);
    assert_true(layout_is_surjective(&A2));
    assert_int_equal(coverage(&A2, 128 * 64, 16), 2);
}

static void shared_print_is_readable(void **state)
{
    (void)state;
    StrBuf b = {0};
    SharedLayout S = layout_shared_swizzled(tile2(DT_BF16, 8, 64), 1, LL_SWZ_128B);
    layout_shared_print(&b, &S);
    /* offsets 8, 16, 32 step chunks; 64, 128, 256 step rows and swizzle */
    assert_string_equal(b.s, "#shared<128B, contig=1, offset=[[0,1],[0,2],[0,4],[0,8],[0,16],[0,32],"
                             "[1,8],[2,16],[4,32]]>");
    sb_free(&b);
    SharedLayout P = layout_shared_plain(tile2(DT_F32, 2, 4), 0);
    layout_shared_print(&b, &P);
    assert_string_equal(b.s, "#shared<plain, contig=0, offset=[[1,0],[0,1],[0,2]]>");
    sb_free(&b);
}

static void wgmma_desc_packs_fields(void **state)
{
    (void)state;
    uint64_t d = layout_wgmma_desc(0x2400, LL_SWZ_128B, 16, 1024);
    assert_true(d == ((uint64_t)0x240 | 1ull << 16 | 64ull << 32 | 1ull << 62));
    assert_true(layout_wgmma_desc(0x100, LL_SWZ_32B, 256, 512) >> 62 == 3);
    assert_true(layout_wgmma_desc(0x100, LL_SWZ_64B, 256, 512) >> 62 == 2);
    assert_true(layout_wgmma_desc(0x100, LL_SWZ_NONE, 256, 512) >> 62 == 0);
    assert_true((layout_wgmma_desc(0x3fff0, LL_SWZ_NONE, 0x3fff0, 16) & 0x3fff) == 0x3fff);
}

/* PTX ISA's worked examples of canonical layouts ("Exact layout" in elements;
 * LBO/SBO in bytes): the descriptor model must address exactly those. */
static void wgmma_desc_model_matches_ptx_examples(void **state)
{
    (void)state;
    /* K-major, no swizzle, tf32: ((8,2),(4,4)):((4,32),(1,64)), LBO 256, SBO 128 */
    uint64_t d = layout_wgmma_desc(0, LL_SWZ_NONE, 256, 128);
    for (int mn = 0; mn < 16; mn++)
        for (int k = 0; k < 16; k++) {
            uint32_t ex = (uint32_t)((mn % 8) * 4 + (mn / 8) * 32 + (k % 4) + (k / 4) * 64);
            assert_int_equal(layout_wgmma_desc_addr(d, true, 4, mn, k), ex * 4);
        }
    /* ... which is our interleaved layout of that tile, B = [K 16, N 16] K-major */
    SharedLayout S = layout_shared_swizzled(tile2(DT_F32, 16, 16), 0, LL_SWZ_NONE);
    uint32_t lbo = 0, sbo = 0;
    assert_true(layout_wgmma_strides(&S, LL_WGMMA_B, 16, &lbo, &sbo));
    assert_int_equal(lbo, 256);
    assert_int_equal(sbo, 128);
    /* MN-major, no swizzle, bf16: ((8,1,2),(8,2)):((1,8,64),(8,128)), LBO 256, SBO 128 */
    d = layout_wgmma_desc(0, LL_SWZ_NONE, 256, 128);
    for (int mn = 0; mn < 16; mn++)
        for (int k = 0; k < 16; k++) {
            uint32_t ex = (uint32_t)(mn % 8 + (mn / 8) * 64 + (k % 8) * 8 + (k / 8) * 128);
            assert_int_equal(layout_wgmma_desc_addr(d, false, 2, mn, k), ex * 2);
        }
    /* MN-major, 32B, bf16: ((8,2,2),(8,2)):((1,8,128),(16,256)), LBO 256, SBO 512 */
    d = layout_wgmma_desc(0, LL_SWZ_32B, 256, 512);
    for (int mn = 0; mn < 32; mn++)
        for (int k = 0; k < 16; k++) {
            uint32_t ex = (uint32_t)(mn % 8 + ((mn / 8) % 2) * 8 + (mn / 16) * 128 + (k % 8) * 16 + (k / 8) * 256);
            assert_int_equal(layout_wgmma_desc_addr(d, false, 2, mn, k), ref_swizzle(LL_SWZ_32B, ex * 2));
        }
    /* MN-major, 64B, bf16: ((8,4,2),(8,2)):((1,8,256),(32,512)), LBO 512, SBO 1024 */
    d = layout_wgmma_desc(0, LL_SWZ_64B, 512, 1024);
    for (int mn = 0; mn < 64; mn++)
        for (int k = 0; k < 16; k++) {
            uint32_t ex = (uint32_t)(mn % 8 + ((mn / 8) % 4) * 8 + (mn / 32) * 256 + (k % 8) * 32 + (k / 8) * 512);
            assert_int_equal(layout_wgmma_desc_addr(d, false, 2, mn, k), ref_swizzle(LL_SWZ_64B, ex * 2));
        }
}

/* Every instruction tile of an operand tile, through its own descriptor,
 * addresses exactly the shared layout's offsets of its elements. */
static void check_operand_descriptors(DType dt, WgmmaOperand op, bool k_major, int sw, int mn_ext, int k_ext, int instr_mn)
{
    int eb = dt_bytes(dt), ik = 32 / eb, kd = op == LL_WGMMA_A ? 1 : 0;
    IrType t = op == LL_WGMMA_A ? tile2(dt, mn_ext, k_ext) : tile2(dt, k_ext, mn_ext);
    SharedLayout S = layout_shared_swizzled(t, k_major ? kd : 1 - kd, (LayoutSwizzle)sw);
    uint32_t lbo = 0, sbo = 0, base = 9 * 1024;
    assert_true(layout_wgmma_strides(&S, op, instr_mn, &lbo, &sbo));
    for (int mn0 = 0; mn0 < mn_ext; mn0 += instr_mn)
        for (int k0 = 0; k0 < k_ext; k0 += ik) {
            uint64_t d = layout_wgmma_desc(base + layout_wgmma_start(&S, op, mn0, k0), (LayoutSwizzle)sw, lbo, sbo);
            for (int i = 0; i < instr_mn; i++)
                for (int j = 0; j < ik; j++) {
                    uint32_t mn = (uint32_t)(mn0 + i), k = (uint32_t)(k0 + j);
                    uint32_t flat = op == LL_WGMMA_A ? mn * (uint32_t)k_ext + k : k * (uint32_t)mn_ext + mn;
                    assert_int_equal(layout_wgmma_desc_addr(d, k_major, eb, i, j),
                                     base + layout_shared_offset(&S, flat) * (uint32_t)eb);
                }
        }
}

static void wgmma_descriptors_address_the_shared_layouts(void **state)
{
    (void)state;
    static const DType dts[] = {DT_BF16, DT_F8E4M3, DT_F32};
    for (size_t di = 0; di < 3; di++)
        for (int sw = LL_SWZ_NONE; sw <= LL_SWZ_128B; sw++)
            for (int km = 1; km >= 0; km--) {
                int eb = dt_bytes(dts[di]);
                if (!km && eb != 2) { /* wgmma transposes only 16-bit types */
                    uint32_t l, s;
                    IrType t = tile2(dts[di], 128, 2 * 128 / eb);
                    SharedLayout M = layout_shared_swizzled(t, 0, (LayoutSwizzle)sw);
                    assert_false(layout_wgmma_strides(&M, LL_WGMMA_A, 64, &l, &s));
                    continue;
                }
                int k_ext = 2 * 128 / eb; /* K-major: two 128-byte strips */
                check_operand_descriptors(dts[di], LL_WGMMA_A, km, sw, 128, k_ext, 64);
                check_operand_descriptors(dts[di], LL_WGMMA_B, km, sw, 256, k_ext, 256);
                check_operand_descriptors(dts[di], LL_WGMMA_B, km, sw, 256, k_ext, 64);
                check_operand_descriptors(dts[di], LL_WGMMA_B, km, sw, 256, k_ext, 8);
            }
    /* the usual numbers: K-major 128B bf16 A [128, 64]: LBO unused, SBO 1024 */
    uint32_t lbo, sbo;
    SharedLayout A = layout_shared_swizzled(tile2(DT_BF16, 128, 64), 1, LL_SWZ_128B);
    assert_true(layout_wgmma_strides(&A, LL_WGMMA_A, 64, &lbo, &sbo));
    assert_int_equal(lbo, 16);
    assert_int_equal(sbo, 1024);
    /* N-major 128B bf16 B [64, 128]: strips of 64 columns 64*128 bytes apart */
    SharedLayout B = layout_shared_swizzled(tile2(DT_BF16, 64, 128), 1, LL_SWZ_128B);
    assert_true(layout_wgmma_strides(&B, LL_WGMMA_B, 128, &lbo, &sbo));
    assert_int_equal(lbo, 8192);
    assert_int_equal(sbo, 1024);
    /* a k step inside a 128-byte row moves the start by 32 bytes */
    assert_int_equal(layout_wgmma_start(&A, LL_WGMMA_A, 0, 16), 32);
    assert_int_equal(layout_wgmma_start(&A, LL_WGMMA_A, 64, 48), 64 * 128 + 96);
    /* a plain row-major tile with 128-byte rows is no wgmma operand */
    SharedLayout P = layout_shared_plain(tile2(DT_BF16, 128, 64), 1);
    assert_false(layout_wgmma_strides(&P, LL_WGMMA_A, 64, &lbo, &sbo));
    /* nor an N-major plain B whose K rows are 256 bytes apart */
    SharedLayout Q = layout_shared_plain(tile2(DT_BF16, 64, 128), 1);
    assert_false(layout_wgmma_strides(&Q, LL_WGMMA_B, 64, &lbo, &sbo));
    /* the same bytes as the K-major A [128, 64] are an N-major B [K 128, N 64]:
     * one 128-byte strip, groups of 8 K rows 1024 bytes apart */
    assert_true(layout_wgmma_strides(&A, LL_WGMMA_B, 64, &lbo, &sbo));
    assert_int_equal(sbo, 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_layouts_cover_every_element),
        cmocka_unit_test(default_layout_vectorizes_last_dim),
        cmocka_unit_test(mma_acc_matches_ptx_fragment),
        cmocka_unit_test(mma_operands_match_ptx_fragments),
        cmocka_unit_test(slice_drops_the_axis),
        cmocka_unit_test(print_is_readable),
        cmocka_unit_test(gf2_inverse_is_an_inverse),
        cmocka_unit_test(plain_layouts_are_row_and_column_major),
        cmocka_unit_test(swizzled_layouts_match_the_ptx_pattern),
        cmocka_unit_test(swizzle_choice_and_alignment),
        cmocka_unit_test(compose_gives_shared_offsets),
        cmocka_unit_test(swizzle_removes_ldmatrix_bank_conflicts),
        cmocka_unit_test(broadcasts_cost_no_extra_wavefronts),
        cmocka_unit_test(accumulator_epilogue_bank_conflicts),
        cmocka_unit_test(wgmma_acc_matches_ptx_fragment),
        cmocka_unit_test(wgmma_a_is_the_mma_fragment_per_warp),
        cmocka_unit_test(shared_print_is_readable),
        cmocka_unit_test(wgmma_desc_packs_fields),
        cmocka_unit_test(wgmma_desc_model_matches_ptx_examples),
        cmocka_unit_test(wgmma_descriptors_address_the_shared_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
