/* test_cgfmod.c: float `%` in codegen (cg_math_fmod) is C's fmod, bit for bit.
 * NVPTX's own frem is x - trunc(x / y) * y: inexact for large quotients and +0
 * where fmod gives -0 (issue 14, defect 7: 353 of 4096 f32 elements differed on
 * the H200).  The LLVM IR cg_math_fmod builds is JIT-compiled for the host and
 * compared with libm's fmod on special values (0, -0, subnormals, inf, NaN, the
 * extremes) and on random bit patterns and random magnitudes, f32 and f64. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/Target.h>

#include "codegen/lower_int.h"

typedef float (*Fm32)(float, float);
typedef double (*Fm64)(double, double);

static LLVMExecutionEngineRef ee;
static Fm32 fm32;
static Fm64 fm64;

/* double fmNN(T x, T y) { return cg_math_fmod(x, y); } for T = f32, f64 */
static void build(Cg *cg, const char *name, DType dt)
{
    LLVMTypeRef t = dt == DT_F64 ? cg->f64 : cg->f32, ps[2] = {t, t};
    cg->fn = LLVMAddFunction(cg->mod, name, LLVMFunctionType(t, ps, 2, 0));
    LLVMPositionBuilderAtEnd(cg->b, LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "entry"));
    LLVMBuildRet(cg->b, cg_math_fmod(cg, dt, LLVMGetParam(cg->fn, 0), LLVMGetParam(cg->fn, 1)));
}

static int setup(void **state)
{
    (void)state;
    LLVMLinkInMCJIT();
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    static Cg cg;
    memset(&cg, 0, sizeof cg);
    cg.ctx = LLVMContextCreate();
    cg.mod = LLVMModuleCreateWithNameInContext("fmod", cg.ctx);
    cg.b = LLVMCreateBuilderInContext(cg.ctx);
    cg.i1 = LLVMInt1TypeInContext(cg.ctx);
    cg.i16 = LLVMInt16TypeInContext(cg.ctx);
    cg.i32 = LLVMInt32TypeInContext(cg.ctx);
    cg.i64 = LLVMInt64TypeInContext(cg.ctx);
    cg.f16 = LLVMHalfTypeInContext(cg.ctx);
    cg.bf16 = LLVMBFloatTypeInContext(cg.ctx);
    cg.f32 = LLVMFloatTypeInContext(cg.ctx);
    cg.f64 = LLVMDoubleTypeInContext(cg.ctx);
    build(&cg, "fm32", DT_F32);
    build(&cg, "fm64", DT_F64);
    LLVMDisposeBuilder(cg.b);
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMSetTarget(cg.mod, triple);
    LLVMDisposeMessage(triple);
    char *err = NULL;
    if (LLVMVerifyModule(cg.mod, LLVMReturnStatusAction, &err)) fail_msg("bad LLVM IR: %s", err);
    LLVMDisposeMessage(err);
    struct LLVMMCJITCompilerOptions opt;
    LLVMInitializeMCJITCompilerOptions(&opt, sizeof opt);
    opt.OptLevel = 2;
    if (LLVMCreateMCJITCompilerForModule(&ee, cg.mod, &opt, sizeof opt, &err)) fail_msg("JIT: %s", err);
    fm32 = (Fm32)(uintptr_t)LLVMGetFunctionAddress(ee, "fm32");
    fm64 = (Fm64)(uintptr_t)LLVMGetFunctionAddress(ee, "fm64");
    return fm32 && fm64 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    LLVMDisposeExecutionEngine(ee);
    return 0;
}

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int bad32, bad64;
static void one32(float x, float y)
{
    float want = fmodf(x, y), got = fm32(x, y);
    uint32_t w, g;
    memcpy(&w, &want, 4);
    memcpy(&g, &got, 4);
    if (isnan(want) ? !isnan(got) : w != g) {
        if (bad32++ < 10) print_error("f32 fmod(%a, %a) = %a, want %a\n", (double)x, (double)y, (double)got, (double)want);
    }
}
static void one64(double x, double y)
{
    double want = fmod(x, y), got = fm64(x, y);
    uint64_t w, g;
    memcpy(&w, &want, 8);
    memcpy(&g, &got, 8);
    if (isnan(want) ? !isnan(got) : w != g) {
        if (bad64++ < 10) print_error("f64 fmod(%a, %a) = %a, want %a\n", x, y, got, want);
    }
}

static float f32_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static double f64_bits(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }

static void special_values(void **state)
{
    (void)state;
    const double sp[] = {0.0, -0.0, 1.0, -1.0, 2.5, -7.5, 0.1, 3.0, 1e-40, -1e-45, 1e-310, 5e-324, 1e38, 3.4e38,
                         -3.4e38, 1e300, 1.7e308, INFINITY, -INFINITY, NAN, 0x1p-126, 0x1p-149, 0x1.fffffep127};
    size_t n = sizeof sp / sizeof sp[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            one32((float)sp[i], (float)sp[j]);
            one64(sp[i], sp[j]);
        }
    one64(-7.5, 2.5);
    assert_true(signbit(fm64(-7.5, 2.5)) && fm64(-7.5, 2.5) == 0);
    assert_true(signbit(fm32(-7.5f, 2.5f)) && fm32(-7.5f, 2.5f) == 0);
    assert_int_equal(bad32, 0);
    assert_int_equal(bad64, 0);
}

static void random_values(void **state)
{
    (void)state;
    for (int i = 0; i < 400000; i++) {
        uint64_t a = next(), b = next();
        one32(f32_bits((uint32_t)a), f32_bits((uint32_t)b));
        one64(f64_bits(a), f64_bits(b));
        /* the shape the GPU failed on: (x * 1e6) % y and (x * 1e15) % y with x, y in [-1, 1) */
        double x = (double)(int64_t)a / 0x1p63, y = (double)(int64_t)b / 0x1p63;
        one32((float)x * 1e6f, (float)y);
        one64(x * 1e15, y);
        /* near quotients: nearby exponents and subnormals */
        one32(f32_bits((uint32_t)a & 0x80ffffffu), f32_bits((uint32_t)b & 0x807fffffu));
        one64(f64_bits(a & 0x80ffffffffffffffull), f64_bits(b & 0x800fffffffffffffull));
    }
    assert_int_equal(bad32, 0);
    assert_int_equal(bad64, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(special_values),
        cmocka_unit_test(random_values),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
