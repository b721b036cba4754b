/* test_cgtarget.c: LLVM -> PTX -> cubin without a GPU: a hand-built LLVM
 * kernel goes through cg_emit_ptx and cg_ptx_to_cubin; the PTX must name the
 * arch and the kernel, and the cubin must be an ELF for the CUDA machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <llvm-c/Core.h>

#include "codegen/cg.h"

/* kernel void scale(float *p): p[tid.x] *= 2 */
static LLVMModuleRef make_module(void)
{
    LLVMContextRef ctx = LLVMGetGlobalContext();
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("t", ctx);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 1), f32 = LLVMFloatTypeInContext(ctx);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), &ptr, 1, 0);
    LLVMValueRef fn = LLVMAddFunction(m, "scale", fty);
    LLVMSetFunctionCallConv(fn, 71 /* PTX_Kernel */);
    LLVMTypeRef tidty = LLVMFunctionType(i32, NULL, 0, 0);
    LLVMValueRef tid = LLVMAddFunction(m, "llvm.nvvm.read.ptx.sreg.tid.x", tidty);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    LLVMValueRef i = LLVMBuildCall2(b, tidty, tid, NULL, 0, "i");
    LLVMValueRef p = LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 0), &i, 1, "p");
    LLVMValueRef v = LLVMBuildLoad2(b, f32, p, "v");
    LLVMBuildStore(b, LLVMBuildFMul(b, v, LLVMConstReal(f32, 2.0), "w"), p);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    return m;
}

static void ptx_and_cubin_for_sm90a(void **state)
{
    (void)state;
    Diag d;
    diag_init(&d, "t", NULL, 0, NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    CgTarget t = {.arch = ir_target_find("sm_90a"), .opt_level = 3, .lineinfo = false};
    StrBuf ptx = {0}, info = {0};
    assert_true(cg_emit_ptx(make_module(), &t, &ptx, &d));
    assert_non_null(strstr(ptx.s, ".target sm_90a"));
    assert_non_null(strstr(ptx.s, ".entry scale"));
    assert_non_null(strstr(ptx.s, "ld.global.f32"));
    void *cubin;
    size_t n;
    assert_true(cg_ptx_to_cubin(ptx.s, ptx.len, &t, &cubin, &n, &info, &d));
    assert_true(n > 64);
    const unsigned char *e = cubin;
    assert_memory_equal(e, "\177ELF", 4);
    assert_int_equal(e[18] | e[19] << 8, 190); /* EM_CUDA */
    assert_non_null(strstr(info.s, "scale"));
    free(cubin);
    sb_free(&ptx);
    sb_free(&info);
    diag_free(&d);
}

static void bad_ptx_is_a_clear_error(void **state)
{
    (void)state;
    Diag d;
    diag_init(&d, "t", NULL, 0, NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    CgTarget t = {.arch = ir_target_find("sm_90a"), .opt_level = 3};
    const char *ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { bogus; }\n";
    void *cubin;
    size_t n;
    assert_false(cg_ptx_to_cubin(ptx, strlen(ptx), &t, &cubin, &n, NULL, &d));
    assert_null(cubin);
    assert_non_null(strstr(d.buf.s, "nvJitLink rejected the PTX"));
    diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ptx_and_cubin_for_sm90a),
        cmocka_unit_test(bad_ptx_is_a_clear_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
