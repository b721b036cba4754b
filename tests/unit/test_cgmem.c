/* test_cgmem.c: lower_mem.c, lower_math.c and lower_debug.c without a GPU.
 *
 * Kernels are built with the IR builder, given default blocked layouts by hand
 * (layout_default per tile value), lowered with cg_lower_func, compiled to
 * PTX (cg_emit_ptx) whose key instructions are checked, and assembled by
 * nvJitLink (cg_ptx_to_cubin) for sm_90a and sm_80.  The math sequences are
 * replayed on the host, operation for operation, and their error is measured
 * in ulp against long-double libm; the bounds are lower_math.c's table.
 * TEST_CGMEM_DUMP=1 in the environment prints every kernel's PTX;
 * TEST_CGMEM_OPT=N compiles at -ON instead of -O3. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>

#include "codegen/cg.h"
#include "codegen/lower_int.h"
#include "ir/ir.h"
#include "ir/layout.h"

/* ---- building and compiling kernels -------------------------------------------- */

typedef struct K {
    IrModule *m;
    IrFunc *f;
    IrBuilder b;
} K;

static void kbegin(K *k, const char *name, int warps)
{
    k->m = ir_module_new("t.tile");
    k->f = ir_func_new(k->m, name, name, (SrcLoc){0});
    k->f->warps = warps;
    ir_builder_at_end(&k->b, k->f, k->f->body);
    k->b.loc = (SrcLoc){.line = 7, .col = 3};
}

static IrType tile(DType dt, bool isptr, int n0, int n1)
{
    int32_t d[2] = {n0, n1};
    return ir_ty_tile(dt, isptr, n1 ? 2 : 1, d);
}

static IrVal op1(K *k, IrOpcode opc, IrType rt, int n, ...)
{
    IrVal o[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) o[i] = va_arg(ap, IrVal);
    va_end(ap);
    return ir_build1(&k->b, opc, o, (uint32_t)n, rt, NULL);
}

static void op0(K *k, IrOpcode opc, const IrAttr *a, int n, ...)
{
    IrVal o[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) o[i] = va_arg(ap, IrVal);
    va_end(ap);
    ir_build(&k->b, opc, o, (uint32_t)n, NULL, 0, a);
}

/* pid * n + arange(n) as i32 */
static IrVal offsets(K *k, int n)
{
    IrAttr a = {0};
    IrVal pid = ir_build1(&k->b, IR_PROGRAM_ID, NULL, 0, ir_ty_scalar(DT_I32), &a);
    IrVal base = ir_binary(&k->b, IR_MUL, pid, ir_const_int(&k->b, DT_I32, n));
    IrVal ar = op1(k, IR_ARANGE, tile(DT_I32, false, n, 0), 0);
    return ir_binary(&k->b, IR_ADD, op1(k, IR_SPLAT, tile(DT_I32, false, n, 0), 1, base), ar);
}

static IrVal ptrs_at(K *k, IrVal p, IrVal offs)
{
    IrType ot = ir_vty(k->f, offs), pt = ir_vty(k->f, p);
    IrType t = ir_ty_with_dt(ot, (DType)pt.dt, true);
    return op1(k, IR_ADDPTR, t, 2, op1(k, IR_SPLAT, t, 1, p), offs);
}

/* Finishes the kernel, assigns default layouts, checks the IR. */
/* As a layout pass would: every tile of one shape gets the default layout of
 * that shape for dtype ldt (DT_COUNT: each value its own dtype's). */
static void kend_as(K *k, DType ldt)
{
    op0(k, IR_RETURN, NULL, 0);
    IrFunc *f = k->f;
    f->val_layout = tl_xcalloc(f->nvals, sizeof *f->val_layout);
    f->layouts = tl_xcalloc(f->nvals + 1, sizeof *f->layouts);
    f->nlayouts = 1;
    f->layoutcap = f->nvals + 1;
    for (IrVal v = 1; v < f->nvals; v++) {
        IrType t = f->vals[v].ty;
        if (t.kind != TY_TILE || t.rank == 0) continue;
        f->layouts[f->nlayouts] = layout_default(ldt == DT_COUNT ? t : ir_ty_with_dt(t, ldt, false), f->warps);
        f->val_layout[v] = f->nlayouts++;
    }
    Diag d;
    diag_init(&d, "t.tile", "", 0, stderr, DIAG_COLOR_NEVER);
    assert_true(ir_verify(f, &d, "test"));
    diag_free(&d);
}

/* Lowers k's kernel; returns the LLVM IR text (malloc'd) and the PTX. */
static int opt_level = 3;

static bool compile(K *k, const char *arch, bool debug, StrBuf *ptx, char **llvm_ir, bool to_cubin)
{
    CgTarget t = {.arch = ir_target_find(arch), .opt_level = opt_level, .lineinfo = false, .debug = debug};
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("t", ctx);
    Arena scratch;
    arena_init(&scratch);
    CgKernelFacts facts;
    Diag d;
    diag_init(&d, "t.tile", "", 0, stderr, DIAG_COLOR_NEVER);
    bool ok = cg_lower_func(k->f, &t, ctx, mod, &scratch, &facts, &d);
    arena_free(&scratch);
    assert_true(ok);
    char *err = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) {
        fprintf(stderr, "invalid LLVM module: %s\n", err);
        char *s = LLVMPrintModuleToString(mod);
        fprintf(stderr, "%s\n", s);
        LLVMDisposeMessage(s);
        fail();
    }
    LLVMDisposeMessage(err);
    if (llvm_ir) *llvm_ir = LLVMPrintModuleToString(mod);
    memset(ptx, 0, sizeof *ptx);
    ok = cg_emit_ptx(mod, &t, ptx, &d);
    assert_true(ok);
    if (getenv("TEST_CGMEM_DUMP")) printf("---- %s %s\n%s\n", k->f->name, arch, ptx->s);
    /* the kernel has no metadata here, which nvJitLink does not need */
    if (to_cubin) {
        void *cubin = NULL;
        size_t n = 0;
        StrBuf info = {0};
        ok = cg_ptx_to_cubin(ptx->s, ptx->len, &t, &cubin, &n, &info, &d);
        if (!ok) fprintf(stderr, "%s\n%s\n", d.buf.s ? d.buf.s : "", ptx->s);
        assert_true(ok);
        assert_true(n > 64);
        free(cubin);
        sb_free(&info);
    }
    diag_free(&d);
    LLVMContextDispose(ctx);
    return true;
}

static void kfree(K *k) { ir_module_free(k->m); }

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void expect(const char *ptx, const char *needle)
{
    if (!strstr(ptx, needle)) {
        fprintf(stderr, "missing '%s' in:\n%s\n", needle, ptx);
        fail();
    }
}

static void compile_both(K *k, bool debug, StrBuf *ptx90)
{
    StrBuf p80;
    compile(k, "sm_80", debug, &p80, NULL, true);
    sb_free(&p80);
    compile(k, "sm_90a", debug, ptx90, NULL, true);
}

/* ---- loads and stores ------------------------------------------------------------- */

/* y[i] = x[i] + 1 for i < n: masked, contiguous: 16-byte predicated vectors
 * with a per-element fallback. */
static void masked_vector_load_store(void **state)
{
    (void)state;
    K k;
    kbegin(&k, "vinc", 4);
    IrVal x = ir_func_add_param(k.f, "x", ir_ty_ptr(DT_F32));
    IrVal y = ir_func_add_param(k.f, "y", ir_ty_ptr(DT_F32));
    IrVal n = ir_func_add_param(k.f, "n", ir_ty_scalar(DT_I32));
    IrVal offs = offsets(&k, 1024);
    IrType it = tile(DT_I32, false, 1024, 0);
    IrVal mask = ir_cmp(&k.b, CMP_LT, offs, op1(&k, IR_SPLAT, it, 1, n));
    IrVal v = op1(&k, IR_LOAD, tile(DT_F32, false, 1024, 0), 2, ptrs_at(&k, x, offs), mask);
    IrVal one = op1(&k, IR_SPLAT, tile(DT_F32, false, 1024, 0), 1, ir_const_float(&k.b, DT_F32, 1.0));
    op0(&k, IR_STORE, NULL, 3, ptrs_at(&k, y, offs), ir_binary(&k.b, IR_ADD, v, one), mask);
    kend_as(&k, DT_F32);
    StrBuf ptx;
    compile_both(&k, false, &ptx);
    expect(ptx.s, "ld.global.v4.b32");
    expect(ptx.s, "st.global.v4.b32");
    /* 1024 elements over 128 threads: 2 groups of 4, each with 4 scalar fallbacks */
    assert_int_equal(count(ptx.s, "ld.global.v4.b32"), 2);
    assert_int_equal(count(ptx.s, "ld.global.b32"), 8);
    assert_int_equal(count(ptx.s, "st.global.v4.b32"), 2);
    assert_int_equal(count(ptx.s, "st.global.b32"), 8);
    sb_free(&ptx);
    kfree(&k);
}

/* Addresses that are not contiguous (x + 2*i) never vectorize. */
static void strided_load_is_scalar(void **state)
{
    (void)state;
    K k;
    kbegin(&k, "strided", 4);
    IrVal x = ir_func_add_param(k.f, "x", ir_ty_ptr(DT_F32));
    IrVal y = ir_func_add_param(k.f, "y", ir_ty_ptr(DT_F32));
    IrType it = tile(DT_I32, false, 512, 0);
    IrVal ar = op1(&k, IR_ARANGE, it, 0);
    IrVal two = ir_binary(&k.b, IR_MUL, ar, op1(&k, IR_SPLAT, it, 1, ir_const_int(&k.b, DT_I32, 2)));
    IrVal v = op1(&k, IR_LOAD, tile(DT_F32, false, 512, 0), 1, ptrs_at(&k, x, two));
    op0(&k, IR_STORE, NULL, 2, ptrs_at(&k, y, ar), v);
    kend_as(&k, DT_F32);
    StrBuf ptx;
    compile_both(&k, false, &ptx);
    assert_null(strstr(ptx.s, "ld.global.v"));
    expect(ptx.s, "st.global.v4.b32"); /* the store side is contiguous */
    sb_free(&ptx);
    kfree(&k);
}

/* A tile smaller than the CTA replicates over lanes/warps: stores are
 * predicated on unique ownership; loads of i1 read bytes. */
static void replicated_store_and_i1(void **state)
{
    (void)state;
    K k;
    kbegin(&k, "small", 4);
    IrVal x = ir_func_add_param(k.f, "x", ir_ty_ptr(DT_I1));
    IrVal y = ir_func_add_param(k.f, "y", ir_ty_ptr(DT_I1));
    IrType it = tile(DT_I32, false, 16, 0);
    IrVal ar = op1(&k, IR_ARANGE, it, 0);
    IrVal v = op1(&k, IR_LOAD, tile(DT_I1, false, 16, 0), 1, ptrs_at(&k, x, ar));
    op0(&k, IR_STORE, NULL, 2, ptrs_at(&k, y, ar), ir_unary(&k.b, IR_NOT, v));
    kend_as(&k, DT_I1);
    StrBuf ptx;
    char *ir;
    compile(&k, "sm_90a", false, &ptx, &ir, true);
    assert_non_null(strstr(ir, "%owner"));
    expect(ptx.s, "ld.global.u8");
    expect(ptx.s, "st.global.u8");
    LLVMDisposeMessage(ir);
    sb_free(&ptx);
    kfree(&k);
}

/* ---- block loads and stores --------------------------------------------------------- */

static void block_load_store_f16(void **state)
{
    (void)state;
    K k;
    kbegin(&k, "blk", 4);
    IrVal a = ir_func_add_param(k.f, "A", ir_ty_view(DT_F16, 2));
    IrVal c = ir_func_add_param(k.f, "C", ir_ty_view(DT_F16, 2));
    IrVal r0 = ir_const_int(&k.b, DT_I64, 64), c0 = ir_const_int(&k.b, DT_I32, -8);
    IrAttr at = {.j = 1};
    IrVal o[4] = {a, r0, c0, ir_const_float(&k.b, DT_F16, 2.0)};
    IrVal v = ir_build1(&k.b, IR_BLOCK_LOAD, o, 4, tile(DT_F16, false, 64, 64), &at);
    IrVal s[4] = {c, r0, c0, ir_unary(&k.b, IR_EXP, v)};
    ir_build(&k.b, IR_BLOCK_STORE, s, 4, NULL, 0, NULL);
    kend_as(&k, DT_F16);
    StrBuf ptx;
    compile_both(&k, false, &ptx);
    expect(ptx.s, "ld.global.v4.b32"); /* 8 halves in 16 bytes */
    expect(ptx.s, "st.global.v4.b32");
    expect(ptx.s, "ld.global.b16");    /* the ragged/misaligned fallback */
    sb_free(&ptx);
    kfree(&k);
}

/* f64 blocks move in v2.b64; a block smaller than the CTA stores once per
 * element; everything also assembles unoptimised (-O0). */
static void block_f64_replicated_and_O0(void **state)
{
    (void)state;
    for (int o = 0; o < 2; o++) {
        K k;
        kbegin(&k, "blk64", 8);
        IrVal a = ir_func_add_param(k.f, "A", ir_ty_view(DT_F64, 2));
        IrVal r0 = ir_const_int(&k.b, DT_I32, 3), c0 = ir_const_int(&k.b, DT_U32, 16);
        IrVal o3[3] = {a, r0, c0};
        IrAttr at = {0};
        IrVal v = ir_build1(&k.b, IR_BLOCK_LOAD, o3, 3, tile(DT_F64, false, 4, 8), &at);
        IrVal s[4] = {a, c0, r0, ir_unary(&k.b, IR_SQRT, v)};
        ir_build(&k.b, IR_BLOCK_STORE, s, 4, NULL, 0, NULL);
        kend_as(&k, DT_F64);
        int saved = opt_level;
        opt_level = o ? 0 : saved;
        StrBuf ptx;
        char *ir;
        compile(&k, "sm_90a", false, &ptx, &ir, true);
        opt_level = saved;
        expect(ptx.s, "ld.global.v2.b64");
        expect(ptx.s, "st.global.v2.b64");
        assert_non_null(strstr(ir, "%owner")); /* 32 elements over 256 threads replicate */
        LLVMDisposeMessage(ir);
        sb_free(&ptx);
        kfree(&k);
    }
}

/* A scalar store is done by thread 0 only; a scalar atomic's old value
 * reaches every thread through shared memory. */
static void scalar_store_and_atomic(void **state)
{
    (void)state;
    K k;
    kbegin(&k, "scal", 4);
    IrVal p = ir_func_add_param(k.f, "p", ir_ty_ptr(DT_I32));
    IrVal q = ir_func_add_param(k.f, "q", ir_ty_ptr(DT_I32));
    IrVal one = ir_const_int(&k.b, DT_I32, 1);
    IrVal old = op1(&k, IR_ATOMIC_ADD, ir_ty_scalar(DT_I32), 2, p, one);
    op0(&k, IR_STORE, NULL, 2, q, old);
    kend_as(&k, DT_I32);
    StrBuf ptx;
    char *ir;
    compile(&k, "sm_90a", false, &ptx, &ir, true);
    expect(ptx.s, "atom.global.add.u32");
    expect(ptx.s, "bar.sync");
    expect(ptx.s, "st.shared.u32");
    expect(ptx.s, "@%p st.global.b32"); /* the store is predicated (on thread 0) */
    LLVMDisposeMessage(ir);
    sb_free(&ptx);
    kfree(&k);
}

/* ---- atomics ------------------------------------------------------------------------ */

static void atomic_kernel(K *k, IrOpcode opc, DType dt, bool masked)
{
    kbegin(k, "atom", 4);
    IrVal p = ir_func_add_param(k->f, "p", ir_ty_ptr(dt));
    IrVal q = ir_func_add_param(k->f, "q", ir_ty_ptr(dt));
    IrVal offs = offsets(k, 256);
    IrType vt = tile(dt, false, 256, 0);
    IrVal v = op1(k, IR_LOAD, vt, 1, ptrs_at(k, q, offs));
    IrVal ptrs = ptrs_at(k, p, offs);
    IrVal mask = ir_cmp(&k->b, CMP_LT, offs, op1(k, IR_SPLAT, tile(DT_I32, false, 256, 0), 1, ir_const_int(&k->b, DT_I32, 100)));
    IrVal o[4] = {ptrs, v, v, mask};
    uint32_t n = opc == IR_ATOMIC_CAS ? 3 : 2;
    if (masked) o[n++] = mask;
    IrVal old = ir_build1(&k->b, opc, o, n, vt, NULL);
    op0(k, IR_STORE, NULL, 2, ptrs_at(k, q, offs), old);
    kend_as(k, dt);
}

static void atomics(void **state)
{
    (void)state;
    static const struct {
        IrOpcode opc;
        DType dt;
        const char *sm90, *sm80;
    } cases[] = {
        {IR_ATOMIC_ADD, DT_F32, "atom.global.add.f32", "atom.global.add.f32"},
        {IR_ATOMIC_ADD, DT_F64, "atom.global.add.f64", "atom.global.add.f64"},
        {IR_ATOMIC_ADD, DT_F16, "atom.global.add.noftz.f16", "atom.global.add.noftz.f16"},
        {IR_ATOMIC_ADD, DT_BF16, "atom.global.add.noftz.bf16", "atom.global.cas.b32"},
        {IR_ATOMIC_ADD, DT_I32, "atom.global.add.u32", "atom.global.add.u32"},
        {IR_ATOMIC_ADD, DT_U64, "atom.global.add.u64", "atom.global.add.u64"},
        {IR_ATOMIC_ADD, DT_I8, "atom.global.cas.b32", "atom.global.cas.b32"},
        {IR_ATOMIC_MAX, DT_I32, "atom.global.max.s32", "atom.global.max.s32"},
        {IR_ATOMIC_MAX, DT_U32, "atom.global.max.u32", "atom.global.max.u32"},
        {IR_ATOMIC_MIN, DT_I64, "atom.global.min.s64", "atom.global.min.s64"},
        {IR_ATOMIC_MIN, DT_U64, "atom.global.min.u64", "atom.global.min.u64"},
        {IR_ATOMIC_MAX, DT_F32, "atom.global.cas.b32", "atom.global.cas.b32"},
        {IR_ATOMIC_MIN, DT_F64, "atom.global.cas.b64", "atom.global.cas.b64"},
        {IR_ATOMIC_CAS, DT_I32, "atom.global.cas.b32", "atom.global.cas.b32"},
        {IR_ATOMIC_CAS, DT_F32, "atom.global.cas.b32", "atom.global.cas.b32"},
        {IR_ATOMIC_CAS, DT_U64, "atom.global.cas.b64", "atom.global.cas.b64"},
        {IR_ATOMIC_MAX, DT_F16, "atom.global.cas.b", "atom.global.cas.b"},
        {IR_ATOMIC_MIN, DT_BF16, "atom.global.cas.b", "atom.global.cas.b"},
        {IR_ATOMIC_ADD, DT_I1, "atom.global.xor.b32", "atom.global.xor.b32"}, /* in the containing word */
        {IR_ATOMIC_MAX, DT_U8, "atom.global.cas.b", "atom.global.cas.b"},
        {IR_ATOMIC_CAS, DT_I16, "atom.global.cas.b", "atom.global.cas.b"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int masked = 0; masked < 2; masked++) {
            K k;
            atomic_kernel(&k, cases[i].opc, cases[i].dt, masked);
            StrBuf p80, p90;
            compile(&k, "sm_80", false, &p80, NULL, true);
            compile(&k, "sm_90a", false, &p90, NULL, true);
            expect(p80.s, cases[i].sm80);
            expect(p90.s, cases[i].sm90);
            sb_free(&p80);
            sb_free(&p90);
            kfree(&k);
        }
}

/* ---- print and assert ---------------------------------------------------------------- */

static void print_and_assert(void **state)
{
    (void)state;
    for (int dbg = 0; dbg < 2; dbg++) {
        K k;
        kbegin(&k, "dbg", 4);
        IrVal x = ir_func_add_param(k.f, "x", ir_ty_ptr(DT_F32));
        IrVal offs = offsets(&k, 64);
        IrVal v = op1(&k, IR_LOAD, tile(DT_F32, false, 64, 0), 1, ptrs_at(&k, x, offs));
        IrAttr pa = {.str = ir_module_str(k.m, "vals", 4)};
        IrVal po[3] = {offs, v, ir_const_int(&k.b, DT_I64, -5)};
        ir_build(&k.b, IR_PRINT, po, 3, NULL, 0, &pa);
        IrAttr aa = {.str = ir_module_str(k.m, "x must be positive", 18)};
        IrVal zero = op1(&k, IR_SPLAT, tile(DT_F32, false, 64, 0), 1, ir_const_float(&k.b, DT_F32, 0.0));
        IrVal c = ir_cmp(&k.b, CMP_GT, v, zero);
        ir_build(&k.b, IR_ASSERT, &c, 1, NULL, 0, &aa);
        kend_as(&k, DT_F32);
        StrBuf ptx, p80;
        char *ir;
        compile(&k, "sm_80", dbg, &p80, NULL, true);
        sb_free(&p80);
        compile(&k, "sm_90a", dbg, &ptx, &ir, true);
        expect(ir, "pid (%llu, %llu, %llu) %s:");
        expect(ir, " %lld %lld %lld"); /* the i32 tile, in chunks of 32 */
        expect(ir, " %.9g %.9g");      /* the f32 tile */
        if (dbg) expect(ir, "x must be positive");
        LLVMDisposeMessage(ir);
        expect(ptx.s, "vprintf");
        expect(ptx.s, "__tilec_print_lock");
        if (dbg) expect(ptx.s, "__assertfail");
        else assert_null(strstr(ptx.s, "__assertfail"));
        sb_free(&ptx);
        kfree(&k);
    }
}

/* ---- math: the sequences of lower_math.c, replayed on the host ------------------------- */

/* ORDER: the same constants as codegen/lower_math.c's MATH_* (a change there
 * must be made here too, or this replay measures another sequence). */
#define MATH_EXP_TERMS_F32 7
#define MATH_EXP_TERMS_F64 13
#define MATH_LOG_TERMS_F32 5
#define MATH_LOG_TERMS_F64 10
#define MATH_EXPM1_TERMS_F32 11
#define MATH_EXPM1_TERMS_F64 19
#define MATH_ERF_SPLIT_F32 2.0
#define MATH_ERF_SPLIT_F64 1.5
#define MATH_ERF_SERIES_F32 22
#define MATH_ERF_SERIES_F64 40
#define MATH_ERF_CF_F32 16
#define MATH_ERF_CF_F64 80

static double fact(int k)
{
    double f = 1;
    for (int i = 2; i <= k; i++) f *= i;
    return f;
}

/* (2n+1)!! in double */
static double dfact2(int n)
{
    double f = 1;
    for (int i = 3; i <= 2 * n + 1; i += 2) f *= i;
    return f;
}

/* One template, instantiated for float and double: T, suffix, integer type, widths. */
#define MATH_MIRROR(T, S, IT, F64, FMA, RINT, FABS, FMIN, FMAX, COPYSIGN)                                        \
    static T pow2i_##S(IT n)                                                                                     \
    {                                                                                                            \
        IT e = (IT)((n + (F64 ? 1023 : 127)) << (F64 ? 52 : 23));                                                \
        T r;                                                                                                     \
        memcpy(&r, &e, sizeof r);                                                                                \
        return r;                                                                                                \
    }                                                                                                            \
    static T scale_##S(T p, T n)                                                                                 \
    {                                                                                                            \
        IT ni = (IT)n, n1 = ni >> 1, n2 = ni - n1;                                                               \
        return (p * pow2i_##S(n1)) * pow2i_##S(n2);                                                              \
    }                                                                                                            \
    static T exp_poly_##S(T r)                                                                                   \
    {                                                                                                            \
        int terms = F64 ? MATH_EXP_TERMS_F64 : MATH_EXP_TERMS_F32;                                               \
        T p = (T)(1.0 / fact(terms));                                                                            \
        for (int k = terms - 1; k >= 0; k--) p = FMA(p, r, (T)(1.0 / fact(k)));                                  \
        return p;                                                                                                \
    }                                                                                                            \
    static inline T m_exp_cw_##S(T x)                                                                            \
    {                                                                                                            \
        T xc = FMIN(FMAX(x, (T)(F64 ? -746.0 : -104.0)), (T)(F64 ? 710.0 : 89.0));                               \
        T hi = (T)(F64 ? 0x1.62e42fee00000p-1 : 0x1.62e4p-1);                                                    \
        T lo = (T)(F64 ? 0x1.a39ef35793c76p-33 : (double)(float)(0x1.62e42fefa39efp-1 - 0x1.62e4p-1));          \
        T n = RINT(xc * (T)0x1.71547652b82fep0);                                                                 \
        T r = FMA(-n, hi, xc);                                                                                   \
        r = FMA(-n, lo, r);                                                                                      \
        T y = scale_##S(exp_poly_##S(r), n);                                                                     \
        return isnan(x) ? x : y;                                                                                 \
    }                                                                                                            \
    static T m_exp2_##S(T x)                                                                                     \
    {                                                                                                            \
        T xc = FMIN(FMAX(x, (T)(F64 ? -1077.0 : -152.0)), (T)(F64 ? 1025.0 : 129.0));                            \
        T n = RINT(xc);                                                                                          \
        T r = (xc - n) * (T)0x1.62e42fefa39efp-1;                                                                \
        T y = scale_##S(exp_poly_##S(r), n);                                                                     \
        return isnan(x) ? x : y;                                                                                 \
    }                                                                                                            \
    static T log_core_##S(T x, T *ef)                                                                            \
    {                                                                                                            \
        int tiny = x < (T)(F64 ? 0x1p-1022 : 0x1p-126);                                                          \
        T xs = tiny ? x * (T)(F64 ? 0x1p54 : 0x1p23) : x;                                                        \
        T eadj = tiny ? (T)(F64 ? -54.0 : -23.0) : (T)0;                                                         \
        IT bits;                                                                                                 \
        memcpy(&bits, &xs, sizeof bits);                                                                         \
        IT magic = (IT)(F64 ? 0x3fe6a09e667f3bcdll : 0x3f3504f3ll);                                              \
        IT e = (IT)(bits - magic) >> (F64 ? 52 : 23);                                                            \
        IT mb = bits - (IT)((uint64_t)e << (F64 ? 52 : 23));                                                     \
        T mant;                                                                                                  \
        memcpy(&mant, &mb, sizeof mant);                                                                         \
        *ef = (T)e + eadj;                                                                                       \
        T f = mant - (T)1.0;                                                                                     \
        T s = f / ((T)2.0 + f);                                                                                  \
        T z = s * s;                                                                                             \
        int terms = F64 ? MATH_LOG_TERMS_F64 : MATH_LOG_TERMS_F32;                                               \
        T q = (T)(2.0 / (2 * terms + 1));                                                                        \
        for (int k = terms - 1; k >= 1; k--) q = FMA(q, z, (T)(2.0 / (2 * k + 1)));                              \
        T R = q * z;                                                                                             \
        return FMA(-s, f - R, f);                                                                                \
    }                                                                                                            \
    static T log_special_##S(T x, T y)                                                                           \
    {                                                                                                            \
        if (x == (T)INFINITY) y = x;                                                                             \
        if (x == 0) y = (T)-INFINITY;                                                                            \
        if (!(x >= 0)) y = (T)NAN;                                                                               \
        return y;                                                                                                \
    }                                                                                                            \
    static T m_log_##S(T x)                                                                                      \
    {                                                                                                            \
        T e, lp = log_core_##S(x, &e);                                                                           \
        T hi = (T)(F64 ? 0x1.62e42fee00000p-1 : 0x1.62e4p-1);                                                    \
        T lo = (T)(F64 ? 0x1.a39ef35793c76p-33 : (double)(float)(0x1.62e42fefa39efp-1 - 0x1.62e4p-1));          \
        return log_special_##S(x, FMA(e, hi, FMA(e, lo, lp)));                                                   \
    }                                                                                                            \
    static T m_log2_##S(T x)                                                                                     \
    {                                                                                                            \
        T e, lp = log_core_##S(x, &e);                                                                           \
        T hi = (T)(F64 ? 0x1.71547652b82fep0 : (double)(float)0x1.71547652b82fep0);                              \
        T lo = (T)(F64 ? 0x1.777d0ffda0d24p-56                                                                   \
                       : (double)(float)(0x1.71547652b82fep0 - (double)(float)0x1.71547652b82fep0));             \
        return log_special_##S(x, e + FMA(lp, hi, lp * lo));                                                     \
    }                                                                                                            \
    static T m_sigmoid_##S(T x)                                                                                  \
    {                                                                                                            \
        T t = m_exp_##S(-FABS(x));                                                                               \
        T num = x >= 0 ? (T)1.0 : t;                                                                             \
        return num / ((T)1.0 + t);                                                                               \
    }                                                                                                            \
    static T expm1_small_##S(T y)                                                                                \
    {                                                                                                            \
        int terms = F64 ? MATH_EXPM1_TERMS_F64 : MATH_EXPM1_TERMS_F32;                                           \
        T q = (T)(1.0 / fact(terms));                                                                            \
        for (int k = terms - 1; k >= 2; k--) q = FMA(q, y, (T)(1.0 / fact(k)));                                  \
        return FMA(y * y, q, y);                                                                                 \
    }                                                                                                            \
    static T m_tanh_##S(T x)                                                                                     \
    {                                                                                                            \
        T a = FABS(x), a2 = a * (T)2.0;                                                                          \
        T em = expm1_small_##S(a2);                                                                              \
        T small = em / (em + (T)2.0);                                                                            \
        T big = (T)1.0 - (T)2.0 / (m_exp_##S(a2) + (T)1.0);                                                      \
        return COPYSIGN(a < (T)0.55 ? small : big, x);                                                           \
    }

static float m_exp_f32(float x);
static double m_exp_f64(double x);
MATH_MIRROR(float, f32, int32_t, 0, fmaf, rintf, fabsf, fminf, fmaxf, copysignf)
MATH_MIRROR(double, f64, int64_t, 1, fma, rint, fabs, fmin, fmax, copysign)
static double m_exp_f64(double x) { return m_exp_cw_f64(x); }

/* lower_math.c's exp_f32: NaN-propagating clamp, n and m ~ n/2 by the
 * 1.5*2^23 trick on fma, y = [p * 2^(n-m)] * 2^m through integer adds on the
 * bits (the same operations, in the same order, as the PTX). */
static float nan_max(float a, float b) { return isnan(a) || isnan(b) ? NAN : fmaxf(a, b); }
static float nan_min(float a, float b) { return isnan(a) || isnan(b) ? NAN : fminf(a, b); }
static float m_exp_f32(float x)
{
    const float hi = 0x1.62e4p-1f, lo = (float)(0x1.62e42fefa39efp-1 - 0x1.62e4p-1);
    float xc = nan_min(nan_max(x, -104.0f), 89.0f);
    float t = fmaf(xc, (float)0x1.71547652b82fep0, 0x1.8p23f);
    float n = t - 0x1.8p23f;
    float r = fmaf(-n, hi, xc);
    r = fmaf(-n, lo, r);
    float p = exp_poly_f32(r);
    float t2 = fmaf(xc, (float)0x1.71547652b82fep-1, 0x1.8p23f);
    uint32_t tb, t2b, pb;
    memcpy(&tb, &t, 4);
    memcpy(&t2b, &t2, 4);
    memcpy(&pb, &p, 4);
    uint32_t qb = pb + ((tb - t2b) << 23), sb = (t2b << 23) + 0x3f800000u;
    float q, sc;
    memcpy(&q, &qb, 4);
    memcpy(&sc, &sb, 4);
    return q * sc;
}

static double h_erf(double x, double split, int ns, int nc)
{
    double a = fmin(fabs(x), 6.0);
    double hi = a * a, lo = fma(a, a, -hi);
    double e0 = m_exp_f64(-hi);
    double ex = fma(-e0, lo, e0);
    double r;
    if (a < split) {
        double y = hi * 2.0;
        double S = 1.0 / dfact2(ns);
        for (int n = ns - 1; n >= 0; n--) S = fma(S, y, 1.0 / dfact2(n));
        r = ((a * 0x1.20dd750429b6dp0) * ex) * S;
    } else {
        double Kc = a;
        for (int n = nc; n >= 1; n--) Kc = a + (n * 0.5) / Kc;
        r = 1.0 - ex / (Kc * 0x1.c5bf891b4ef6bp0);
    }
    r = copysign(r, x);
    return isnan(x) ? x : r;
}

static double m_erf_f64(double x) { return h_erf(x, MATH_ERF_SPLIT_F64, MATH_ERF_SERIES_F64, MATH_ERF_CF_F64); }
/* f32 erf runs the f64 sequence with f32-sized term counts and rounds once. */
static float m_erf_f32d(float x) { return (float)h_erf(x, MATH_ERF_SPLIT_F32, MATH_ERF_SERIES_F32, MATH_ERF_CF_F32); }

/* Error of r against ref in ulps of the type (mantissa bits p, min exponent emin). */
static double ulp_err(long double r, long double ref, int p, int emin)
{
    /* the reference rounded to the type decides overflow */
    long double rt = p == 24 ? (long double)(float)ref : (long double)(double)ref;
    if (isnan(ref)) return isnan(r) ? 0 : 1e9;
    if (isinf(rt) || isinf(r)) return r == rt ? 0 : 1e9;
    int e;
    frexpl(ref, &e);
    if (e - 1 < emin) e = emin + 1;
    long double ulp = ldexpl(1.0L, e - 1 - (p - 1));
    return (double)(fabsl(r - ref) / ulp);
}

typedef struct MathCase {
    const char *name;
    float (*f32)(float);
    double (*f64)(double);
    long double (*ref)(long double);
    double lo, hi;     /* sweep range */
    double bound32, bound64;
} MathCase;

static long double ref_exp2(long double x) { return exp2l(x); }
static long double ref_sigmoid(long double x) { return 1.0L / (1.0L + expl(-x)); }

/* Deterministic pseudo-random numbers (xorshift). */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void math_accuracy(void **state)
{
    (void)state;
    const MathCase cases[] = {
        {"exp", m_exp_f32, m_exp_f64, expl, -110, 90, 1, 1},
        {"exp2", m_exp2_f32, m_exp2_f64, ref_exp2, -155, 130, 1, 1},
        {"log", m_log_f32, m_log_f64, logl, 0, 0, 1, 1.5},
        {"log2", m_log2_f32, m_log2_f64, log2l, 0, 0, 1.5, 1.5},
        {"sigmoid", m_sigmoid_f32, m_sigmoid_f64, ref_sigmoid, -120, 40, 2.5, 2.5},
        {"tanh", m_tanh_f32, m_tanh_f64, tanhl, -12, 12, 2.5, 2.5},
        {"erf", m_erf_f32d, m_erf_f64, erfl, -7, 7, 1, 5},
    };
    bool bad = false;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const MathCase *M = &cases[c];
        double worst32 = 0, worst64 = 0, at32 = 0, at64 = 0;
        for (int i = 0; i < 400000; i++) {
            double x;
            if (M->lo == 0 && M->hi == 0) { /* positive floats over every exponent */
                uint32_t bits = (uint32_t)(next_rand() >> 33) & 0x7f7fffffu;
                float fx;
                memcpy(&fx, &bits, 4);
                x = fx;
            } else if (i % 4 == 0) { /* small magnitudes */
                x = ldexp((double)(next_rand() >> 11) / 0x1p53, -(int)(next_rand() % 30)) * (next_rand() & 1 ? 1 : -1);
            } else {
                x = M->lo + (M->hi - M->lo) * ((double)(next_rand() >> 11) / 0x1p53);
            }
            float xf = (float)x;
            double e32 = ulp_err(M->f32(xf), M->ref(xf), 24, -126);
            if (e32 > worst32) { worst32 = e32; at32 = xf; }
            double xd = x;
            if (M->lo == 0 && M->hi == 0) { /* full double exponent range */
                uint64_t b = (next_rand() >> 1) & 0x7fefffffffffffffull;
                memcpy(&xd, &b, 8);
            }
            double e64 = ulp_err(M->f64(xd), M->ref(xd), 53, -1022);
            if (e64 > worst64) { worst64 = e64; at64 = xd; }
        }
        printf("  %-8s f32 %.3f ulp (x=%.9g)   f64 %.3f ulp (x=%.17g)\n", M->name, worst32, at32, worst64, at64);
        if (worst32 > M->bound32 || worst64 > M->bound64) bad = true;
    }
    /* special values */
    assert_true(m_exp_f32(INFINITY) == INFINITY && m_exp_f32(-INFINITY) == 0 && isnan(m_exp_f32(NAN)));
    assert_true(m_exp_f32(100.0f) == INFINITY && m_exp_f32(-200.0f) == 0);
    assert_true(m_exp_f64(1000.0) == INFINITY && m_exp_f64(-1000.0) == 0);
    assert_true(m_log_f32(0.0f) == -INFINITY && isnan(m_log_f32(-1.0f)) && m_log_f32(INFINITY) == INFINITY);
    assert_true(m_log_f32(1.0f) == 0 && m_log2_f32(8.0f) == 3 && m_log2_f64(0x1p-1060) == -1060);
    assert_true(m_log_f64(0x1p-1074) < -744 && m_log_f32(0x1p-149f) < -103);
    assert_true(m_tanh_f32(INFINITY) == 1 && m_tanh_f32(-INFINITY) == -1 && signbit(m_tanh_f32(-0.0f)));
    assert_true(m_erf_f32d(INFINITY) == 1 && m_erf_f64(-INFINITY) == -1 && isnan(m_erf_f64(NAN)));
    assert_true(m_sigmoid_f32(-INFINITY) == 0 && m_sigmoid_f32(INFINITY) == 1 && isnan(m_sigmoid_f32(NAN)));
    assert_false(bad);
}

/* Every math function lowers and assembles for every float type. */
static void math_lowers(void **state)
{
    (void)state;
    static const IrOpcode ops[] = {IR_EXP, IR_EXP2, IR_LOG, IR_LOG2, IR_SQRT, IR_RSQRT, IR_SIGMOID,
                                   IR_TANH, IR_ERF, IR_ABS, IR_FLOOR, IR_CEIL};
    static const DType dts[] = {DT_F16, DT_BF16, DT_F32, DT_F64};
    for (size_t d = 0; d < 4; d++) {
        K k;
        kbegin(&k, "math", 4);
        IrVal x = ir_func_add_param(k.f, "x", ir_ty_ptr(dts[d]));
        IrType t = tile(dts[d], false, 128, 0);
        IrVal ar = op1(&k, IR_ARANGE, tile(DT_I32, false, 128, 0), 0);
        IrVal v = op1(&k, IR_LOAD, t, 1, ptrs_at(&k, x, ar));
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) v = ir_unary(&k.b, ops[i], v);
        op0(&k, IR_STORE, NULL, 2, ptrs_at(&k, x, ar), v);
        kend_as(&k, dts[d]);
        StrBuf ptx;
        compile_both(&k, false, &ptx);
        expect(ptx.s, "sqrt.rn");
        assert_null(strstr(ptx.s, "ex2.approx"));
        assert_null(strstr(ptx.s, "lg2.approx"));
        sb_free(&ptx);
        kfree(&k);
    }
}

int main(void)
{
    if (getenv("TEST_CGMEM_OPT")) opt_level = atoi(getenv("TEST_CGMEM_OPT"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(masked_vector_load_store),
        cmocka_unit_test(strided_load_is_scalar),
        cmocka_unit_test(replicated_store_and_i1),
        cmocka_unit_test(block_load_store_f16),
        cmocka_unit_test(block_f64_replicated_and_O0),
        cmocka_unit_test(scalar_store_and_atomic),
        cmocka_unit_test(atomics),
        cmocka_unit_test(print_and_assert),
        cmocka_unit_test(math_accuracy),
        cmocka_unit_test(math_lowers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
