/* test_cgws.c: the register split of a warp-specialized kernel (cg_ws_registers,
 * codegen/lower.c): for every count of consumer warpgroups, the setmaxnreg targets
 * are multiples of 8 in setmaxnreg's [24, 256], the consumers never get fewer
 * registers than the launch gives every thread, and producer and consumers fit the
 * CTA's pool of what the launch allocated (threads x the entry count); two consumer
 * warpgroups get 24 / 240 (FlashAttention-3's split at 384 threads; the attention kernels'
 * rotated loop needs the 240);
 * one gets nothing (it has 248 already).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "codegen/lower_int.h"

static void two_consumer_warpgroups(void **state)
{
    (void)state;
    int p = -1, c = -1;
    cg_ws_registers(8, &p, &c);
    assert_int_equal(p, 24);
    assert_int_equal(c, 240);
}

static void one_consumer_warpgroup(void **state)
{
    (void)state;
    int p = -1, c = -1;
    cg_ws_registers(4, &p, &c);
    assert_int_equal(p, 0);
    assert_int_equal(c, 0);
}

static void every_split_fits_the_pool(void **state)
{
    (void)state;
    for (int w = 4; w <= 28; w += 4) {
        int p, c, threads = 32 * (w + 4);
        cg_ws_registers(w, &p, &c);
        int entry = (65536 / threads) & ~7;
        if (entry > 248) entry = 248;
        if (!p) {
            assert_int_equal(c, 0);
            continue;
        }
        assert_true(p % 8 == 0 && p >= 24 && p <= 256);
        assert_true(c % 8 == 0 && c >= 24 && c <= 256);
        assert_true(p <= entry);                              /* dec lowers */
        assert_true(c > entry);                               /* inc raises */
        assert_true(128 * p + 32 * w * c <= threads * entry); /* the CTA's pool */
        assert_true(128 * p + 32 * w * (c + 8) > threads * entry || c == 248); /* the most that fits */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_consumer_warpgroups),
        cmocka_unit_test(one_consumer_warpgroup),
        cmocka_unit_test(every_split_fits_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
