/* test_pressure.c: the register-pressure model (passes/pressure.h) that the
 * occupancy hint and the scheduler share: weights, liveness peaks, streamed
 * values after a reorder, the register prediction and the budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "passes/pass.h"
#include "passes/pressure.h"

/* Parses text (one kernel) and lays it out (the weights come from the layouts). */
static IrModule *laid_out(const char *text)
{
    Diag d;
    diag_init(&d, "t.tir", text, strlen(text), stderr, DIAG_COLOR_NEVER);
    IrModule *m = ir_parse("t.tir", text, strlen(text), &d);
    assert_non_null(m);
    const char *names[] = {"layout"};
    assert_true(pass_run_pipeline(m, names, 1, NULL, &d));
    diag_free(&d);
    return m;
}

/* The first result of op i of f's body. */
static IrVal res_of(IrFunc *f, uint32_t i)
{
    IrBlock *B = ir_blk(f, f->body);
    assert_true(i < B->nops);
    return ir_res(ir_op(f, B->ops[i]), 0);
}

static const char *k_three =
    "kernel @k \"k\"(%x: tensor<f32, 2>, %y: tensor<bf16, 2>, %z: tensor<f32, 2>, %o: tensor<f32, 1>) warps(1) {\n"
    "  %0 = const 0 : i32\n"                                    /* 0 */
    "  %1 = const 2.0 : f32\n"                                  /* 1 */
    "  %2 = splat %1 : tile<f32>[32, 64]\n"                     /* 2: free */
    "  %3 = block_load %x, %0, %0 : tile<f32>[32, 64]\n"        /* 3: 64 registers */
    "  %4 = block_load %y, %0, %0 : tile<bf16>[32, 64]\n"       /* 4: 16-bit: 32 */
    "  %5 = block_load %z, %0, %0 : tile<f32>[32, 64]\n"        /* 5: 64 */
    "  %6 = broadcast %2 : tile<f32>[32, 64]\n"                 /* 6: what %2 weighs */
    "  %7 = reduce_sum %3 {axis = 1} : tile<f32>[32]\n"         /* 7: one per thread: 0 */
    "  %8 = cast %4 : tile<f32>[32, 64]\n"                      /* 8: streamed into its sum: 0 */
    "  %9 = reduce_sum %8 {axis = 1} : tile<f32>[32]\n"         /* 9 */
    "  %10 = mul %5, %6 : tile<f32>[32, 64]\n"                  /* 10: streamed */
    "  %11 = reduce_sum %10 {axis = 1} : tile<f32>[32]\n"       /* 11 */
    "  %12 = add %7, %9 : tile<f32>[32]\n"
    "  %13 = add %12, %11 : tile<f32>[32]\n"
    "  block_store %o, %0, %13\n"
    "  return\n"
    "}\n";

static void test_weights(void **state)
{
    (void)state;
    IrModule *m = laid_out(k_three);
    IrFunc *f = m->funcs[0];
    PassPressure p;
    pass_pressure_init(&p, f, 32 * f->warps);
    assert_true(pass_pressure_weight(&p, res_of(f, 3)) == 64);
    assert_true(pass_pressure_weight(&p, res_of(f, 4)) == 32);     /* bf16: halves */
    assert_true(pass_pressure_weight(&p, res_of(f, 2)) == 0);      /* free */
    assert_true(pass_pressure_weight(&p, res_of(f, 6)) == 0);      /* a broadcast of a free value */
    assert_true(pass_pressure_weight(&p, res_of(f, 7)) == 0);      /* one element per thread */
    assert_true(pass_pressure_weight(&p, res_of(f, 8)) == 0);      /* streamed */
    assert_true(pass_pressure_weight(&p, res_of(f, 1)) == 0);      /* a scalar */
    /* the three loads live together, then the reductions: 64 + 32 + 64 */
    assert_true(pass_pressure_peak(&p, f->body) == 160);
    pass_pressure_fini(&p);
    ir_module_free(m);
}

/* Moving ops changes the peak, and what is streamed: pass_pressure_update. */
static void test_reorder(void **state)
{
    (void)state;
    IrModule *m = laid_out(k_three);
    IrFunc *f = m->funcs[0];
    IrBlock *B = ir_blk(f, f->body);
    PassPressure p;
    pass_pressure_init(&p, f, 32 * f->warps);
    /* each load reduced before the next: x, sum; y, cast, sum; z, mul, sum */
    uint32_t old[17], order[] = {0, 1, 2, 3, 7, 4, 8, 9, 5, 6, 10, 11, 12, 13, 14, 15, 16};
    assert_int_equal(B->nops, 17);  /* the layout pass added a convert_layout (op 12) */
    memcpy(old, B->ops, sizeof old);
    for (uint32_t i = 0; i < 17; i++) B->ops[i] = old[order[i]];
    pass_pressure_update(&p);
    assert_true(pass_pressure_peak(&p, f->body) == 64);
    /* a reduction between the cast and its sum: the f32 tile is no longer streamed */
    uint32_t order2[] = {0, 1, 2, 3, 4, 8, 7, 9, 5, 6, 10, 11, 12, 13, 14, 15, 16};
    for (uint32_t i = 0; i < 17; i++) B->ops[i] = old[order2[i]];
    pass_pressure_update(&p);
    assert_true(pass_pressure_weight(&p, res_of(f, 5)) == 64);     /* the cast, now op 5 */
    /* x (64) and the cast (64, y dying into it) at the cast, and at the sum of x */
    assert_true(pass_pressure_peak(&p, f->body) == 128);
    double across[17];
    pass_pressure_profile(&p, f->body, across);
    assert_true(across[6] == 64);   /* at x's sum x dies into it: the cast is what crosses it */
    pass_pressure_fini(&p);
    ir_module_free(m);
}

/* The prediction: max(peak + 24 + 4 * memory parameters, 2 * peak), to 8, at
 * least 40 (no dot); the budget is the largest peak whose prediction fits. */
static void test_regs_budget(void **state)
{
    (void)state;
    IrModule *m = laid_out(k_three);
    IrFunc *f = m->funcs[0];
    assert_int_equal(pass_pressure_nmem(f), 4);
    assert_int_equal(pass_pressure_regs(f, 0), 40);
    assert_int_equal(pass_pressure_regs(f, 20), 64);    /* 20 + 40 = 60 -> 64 */
    assert_int_equal(pass_pressure_regs(f, 64), 128);   /* 2 * 64 */
    assert_int_equal(pass_pressure_cap(f, ir_target_find("sm_90a")), 255);    /* one warp: 2048, capped */
    for (int cap = 64; cap <= 255; cap += 7) {
        double b = pass_pressure_tile_budget(f, cap);
        assert_true(pass_pressure_regs(f, b) <= cap);
        assert_true(pass_pressure_regs(f, b + 8) > cap);
    }
    f->warps = 16;  /* 512 threads: 65536 / 512 = 128 */
    assert_int_equal(pass_pressure_cap(f, ir_target_find("sm_90a")), 128);
    ir_module_free(m);
}

/* A loop: in a kernel without dots its results count on top of its body's
 * peak (the occupancy hint's calibration); with a dot, once. */
static void test_loops(void **state)
{
    (void)state;
    const char *rows =
        "kernel @r \"r\"(%x: tensor<f32, 2>, %o: tensor<f32, 2>) warps(1) {\n"
        "  %0 = const 0 : i32\n"
        "  %1 = const 4 : i32\n"
        "  %2 = const 1 : i32\n"
        "  %3 = const 0.0 : f32\n"
        "  %4 = splat %3 : tile<f32>[32, 64]\n"
        "  %5 = for %6 = %0 to %1 step %2 iter(%7 = %4) : tile<f32>[32, 64] {\n"
        "    %8 = block_load %x, %6, %0 : tile<f32>[32, 64]\n"
        "    %9 = add %7, %8 : tile<f32>[32, 64]\n"
        "    yield %9\n"
        "  }\n"
        "  block_store %o, %0, %0, %5\n"
        "  return\n"
        "}\n";
    IrModule *m = laid_out(rows);
    IrFunc *f = m->funcs[0];
    PassPressure p;
    pass_pressure_init(&p, f, 32);
    /* body: the carried tile and the load (128); the loop's result on top */
    assert_true(pass_pressure_peak(&p, f->body) == 192);
    pass_pressure_fini(&p);
    ir_module_free(m);
}

/* A streamed chain keeps its inputs live until its own last use: two bf16 loads,
 * each consumed only by its cast to f32, live together until the product
 * (moe_swiglu's gate and up halves) -- not one at a time. */
static void test_streamed_inputs(void **state)
{
    (void)state;
    const char *two =
        "kernel @s \"s\"(%x: tensor<bf16, 2>, %y: tensor<bf16, 2>, %o: tensor<bf16, 2>) warps(1) {\n"
        "  %0 = const 0 : i32\n"
        "  %1 = block_load %x, %0, %0 : tile<bf16>[32, 64]\n"       /* 32 registers */
        "  %2 = cast %1 : tile<f32>[32, 64]\n"                      /* streamed */
        "  %3 = block_load %y, %0, %0 : tile<bf16>[32, 64]\n"       /* 32 */
        "  %4 = cast %3 : tile<f32>[32, 64]\n"
        "  %5 = sigmoid %2 : tile<f32>[32, 64]\n"
        "  %6 = mul %2, %5 : tile<f32>[32, 64]\n"
        "  %7 = mul %6, %4 : tile<f32>[32, 64]\n"
        "  %8 = cast %7 : tile<bf16>[32, 64]\n"                     /* stored: 32 */
        "  block_store %o, %0, %0, %8\n"
        "  return\n"
        "}\n";
    IrModule *m = laid_out(two);
    IrFunc *f = m->funcs[0];
    PassPressure p;
    pass_pressure_init(&p, f, 32);
    assert_true(pass_pressure_weight(&p, res_of(f, 2)) == 0);
    /* both loads live at the product; x's dies into it, then y's into the stored cast */
    assert_true(pass_pressure_peak(&p, f->body) == 64);
    pass_pressure_fini(&p);
    ir_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_reorder),
        cmocka_unit_test(test_regs_budget),
        cmocka_unit_test(test_loops),
        cmocka_unit_test(test_streamed_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
