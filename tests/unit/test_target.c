/* test_target.c: the target table (ir/target.def, ir/target.c).
 * 1. Lookup by exact name; unknown, misspelt and NULL names give NULL.
 * 2. The rows' facts that code relies on: table order, which archs have
 *    wgmma / TMA / fp8 conversions, shared memory per CTA, the PTX ISA.
 * 3. The list every arch message prints, with and without a feature filter.
 * 4. The target a device of a given compute capability gets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ir/target.h"
#include "runtime/meta.h"

static void lookup(void **state)
{
    (void)state;
    for (int i = 0; i < IR_TARGET_COUNT; i++) {
        assert_ptr_equal(ir_target_find(ir_targets[i].name), &ir_targets[i]);
        for (int j = 0; j < i; j++) assert_string_not_equal(ir_targets[i].name, ir_targets[j].name);
    }
    const char *bad[] = {"sm_75", "sm_100a", "gfx90a", "", "sm_90A", "sm90a", "sm_90a ", "compute_90", "sm_9"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_null(ir_target_find(bad[i]));
    assert_null(ir_target_find(NULL));
    assert_string_equal(ir_target_default()->name, "sm_90a");
    /* the archs tilec has accepted since sm_86 was added: none may go missing */
    const char *known[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) assert_non_null(ir_target_find(known[i]));
}

static void rows(void **state)
{
    (void)state;
    for (int i = 1; i < IR_TARGET_COUNT; i++) {
        const IrTarget *a = &ir_targets[i - 1], *b = &ir_targets[i];
        assert_true(a->sm < b->sm || (a->sm == b->sm && !a->specific && b->specific));
    }
    for (int i = 0; i < IR_TARGET_COUNT; i++) {
        const IrTarget *t = &ir_targets[i];
        assert_true(ir_target_has(t, IR_TGT_MMA_SYNC | IR_TGT_CP_ASYNC));
        assert_int_equal(ir_target_has(t, IR_TGT_TMA), t->sm >= 90);
        /* the runtime's metadata reader takes TMA records from that SM version on */
        assert_int_equal(ir_target_has(t, IR_TGT_TMA), t->sm >= TILERT_META_TMA_MIN_SM);
        assert_int_equal(ir_target_has(t, IR_TGT_FP8_CVT), t->sm >= 89);
        /* the features that need a later one */
        if (ir_target_has(t, IR_TGT_TMA_STORE)) assert_true(ir_target_has(t, IR_TGT_TMA));
        if (ir_target_has(t, IR_TGT_WGMMA)) assert_true(t->specific);
        assert_true(ir_target_has(t, 0));
        assert_int_equal(t->ptx_isa, 80);
        assert_int_equal(t->regs_per_sm, 65536);
        assert_true(t->num_sms > 0 && t->threads_per_sm >= 1024 && t->smem_per_cta >= 99 * 1024);
    }
    const IrTarget *h = ir_target_find("sm_90a"), *h0 = ir_target_find("sm_90");
    assert_true(ir_target_has(h, IR_TGT_WGMMA | IR_TGT_TMA_STORE));
    assert_false(ir_target_has(h0, IR_TGT_WGMMA));
    assert_false(ir_target_has(h0, IR_TGT_TMA_STORE));
    assert_int_equal(h->smem_per_cta, 227 * 1024);
    assert_int_equal(h->num_sms, 132);
    assert_int_equal(ir_target_find("sm_80")->smem_per_cta, 163 * 1024);
    assert_int_equal(ir_target_find("sm_86")->smem_per_cta, 99 * 1024);
    assert_false(ir_target_has(NULL, 0));
    assert_false(ir_target_has(NULL, IR_TGT_WGMMA));
}

static void list(void **state)
{
    (void)state;
    IrTargetList l;
    assert_string_equal(ir_target_list(&l, 0, ", ", " or "), "sm_80, sm_86, sm_89, sm_90 or sm_90a");
    assert_string_equal(ir_target_list(&l, 0, "|", "|"), "sm_80|sm_86|sm_89|sm_90|sm_90a");
    assert_string_equal(ir_target_list(&l, 0, ", ", ", "), "sm_80, sm_86, sm_89, sm_90, sm_90a");
    assert_string_equal(ir_target_list(&l, IR_TGT_TMA, ", ", " or "), "sm_90 or sm_90a");
    assert_string_equal(ir_target_list(&l, IR_TGT_FP8_CVT, ", ", " or "), "sm_89, sm_90 or sm_90a");
    assert_string_equal(ir_target_list(&l, IR_TGT_WGMMA, ", ", " or "), "sm_90a");
    assert_string_equal(ir_target_list(&l, 1u << 31, ", ", " or "), "");
    assert_ptr_equal(ir_target_list(&l, 0, ",", ","), l.s);
}

static void for_cc(void **state)
{
    (void)state;
    struct { int major, minor; const char *want; } cs[] = {
        {9, 0, "sm_90a"}, {9, 1, "sm_90"}, {8, 9, "sm_89"}, {8, 7, "sm_86"}, {8, 6, "sm_86"},
        {8, 0, "sm_80"},  {8, 5, "sm_80"}, {7, 5, NULL},    {10, 0, NULL},  {12, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        const IrTarget *t = ir_target_for_cc(cs[i].major, cs[i].minor);
        if (!cs[i].want) {
            assert_null(t);
        } else {
            assert_non_null(t);
            assert_string_equal(t->name, cs[i].want);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lookup),
        cmocka_unit_test(rows),
        cmocka_unit_test(list),
        cmocka_unit_test(for_cc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
