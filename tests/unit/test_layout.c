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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_layouts_cover_every_element),
        cmocka_unit_test(default_layout_vectorizes_last_dim),
        cmocka_unit_test(mma_acc_matches_ptx_fragment),
        cmocka_unit_test(mma_operands_match_ptx_fragments),
        cmocka_unit_test(slice_drops_the_axis),
        cmocka_unit_test(print_is_readable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
