/* test_runtime_meta.c: the metadata format: IrFunc -> blob (codegen/meta_emit.c)
 * -> reader (runtime/meta.c), the grid-code checker and evaluator, corrupt blobs,
 * and the PTX declaration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codegen/meta_emit.h"
#include "ir/ir.h"
#include "meta.h"
#include "rt_util.h"
#include "tilert.h"

/* ---- IR fixtures ------------------------------------------------------------- */

typedef struct Fix {
    IrModule *m;
    IrFunc *vadd, *gemm, *nogrid;
    Arena arena;
    Diag d;
} Fix;

static IrVal grid_arg(IrFunc *f, uint32_t i) { return f->blocks[f->grid].args[i]; }

static IrVal view_q(IrBuilder *b, IrOpcode opc, IrVal view, int dim)
{
    IrAttr a = {0};
    a.i = dim;
    return ir_build1(b, opc, &view, 1, ir_ty_scalar(DT_I64), &a);
}

static void yield(IrBuilder *b, const IrVal *v, uint32_t n) { ir_build(b, IR_YIELD, v, n, NULL, 0, NULL); }

/* vadd<BLOCK=256>(x: ptr<f32>, y: ptr<f32>, out: ptr<f32>, n: i32) grid((n + BLOCK - 1) / BLOCK) warps(8)
 * gemm<T=bf16, BM=128, BN=64>(A: tensor<bf16,2>, B: tensor<bf16,2>, C: tensor<bf16,2>)
 *     grid((C.shape[0] + 127) / 128, (C.shape[1] + 63) / 64) warps(4)
 * copy(x: ptr<u8>, n: u32) without grid, warps(1) */
static int setup(void **state)
{
    Fix *fx = calloc(1, sizeof *fx);
    fx->m = ir_module_new("k.tile");
    arena_init(&fx->arena);
    diag_init(&fx->d, "k.tile", NULL, 0, NULL, DIAG_COLOR_NEVER);
    fx->d.capture = true;
    SrcLoc loc = {1, 1};
    IrBuilder b = {0};

    IrFunc *f = fx->vadd = ir_func_new(fx->m, "vadd__BLOCK_256", "vadd", loc);
    ir_func_add_spec(f, "BLOCK", "256");
    f->warps = 8;
    ir_func_add_param(f, "x", ir_ty_ptr(DT_F32));
    ir_func_add_param(f, "y", ir_ty_ptr(DT_F32));
    ir_func_add_param(f, "out", ir_ty_ptr(DT_F32));
    ir_func_add_param(f, "n", ir_ty_scalar(DT_I32));
    ir_func_make_grid(f);
    ir_builder_at_end(&b, f, f->grid);
    IrVal s = ir_binary(&b, IR_ADD, grid_arg(f, 3), ir_const_int(&b, DT_I32, 255));
    IrVal g0 = ir_binary(&b, IR_DIV, s, ir_const_int(&b, DT_I32, 256));
    yield(&b, &g0, 1);

    f = fx->gemm = ir_func_new(fx->m, "gemm__T_bf16__BM_128__BN_64", "gemm", loc);
    ir_func_add_spec(f, "T", "bf16");
    ir_func_add_spec(f, "BM", "128");
    ir_func_add_spec(f, "BN", "64");
    f->warps = 4;
    ir_func_add_param(f, "A", ir_ty_view(DT_BF16, 2));
    ir_func_add_param(f, "B", ir_ty_view(DT_BF16, 2));
    ir_func_add_param(f, "C", ir_ty_view(DT_BF16, 2));
    ir_func_make_grid(f);
    ir_builder_at_end(&b, f, f->grid);
    IrVal m0 = view_q(&b, IR_VIEW_SHAPE, grid_arg(f, 2), 0), n0 = view_q(&b, IR_VIEW_SHAPE, grid_arg(f, 2), 1);
    IrVal gx = ir_binary(&b, IR_DIV, ir_binary(&b, IR_ADD, m0, ir_const_int(&b, DT_I64, 127)), ir_const_int(&b, DT_I64, 128));
    IrVal gy = ir_binary(&b, IR_DIV, ir_binary(&b, IR_ADD, n0, ir_const_int(&b, DT_I64, 63)), ir_const_int(&b, DT_I64, 64));
    IrVal gs[2] = {gx, gy};
    yield(&b, gs, 2);

    f = fx->nogrid = ir_func_new(fx->m, "copy", "copy", loc);
    f->warps = 1;
    ir_func_add_param(f, "x", ir_ty_ptr(DT_U8));
    ir_func_add_param(f, "n", ir_ty_scalar(DT_U32));
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    Fix *fx = *state;
    ir_module_free(fx->m);
    arena_free(&fx->arena);
    diag_free(&fx->d);
    free(fx);
    return 0;
}

static tilert_meta parse_ok(const CgMeta *cm)
{
    tilert_meta m;
    char err[300] = "";
    bool ok = tilert_meta_parse(cm->data, cm->len, &m, err, sizeof err);
    if (!ok) fail_msg("parse: %s", err);
    return m;
}

static const char *diag_text(Fix *fx) { return fx->d.buf.s ? fx->d.buf.s : ""; }

/* ---- round trip ------------------------------------------------------------------ */

static void test_round_trip(void **state)
{
    Fix *fx = *state;
    const IrFunc *fs[3] = {fx->vadd, fx->gemm, fx->nogrid};
    CgKernelFacts facts[3] = {{8, 0, 0}, {4, 1024, 98304}, {1, 0, 0}};
    CgMeta cm;
    assert_true(cg_meta_build(fs, facts, 3, "sm_90a", &fx->arena, &cm, &fx->d));
    tilert_meta m = parse_ok(&cm);
    assert_int_equal(m.nkernels, 3);

    const tilert_meta_kernel *k = &m.kernels[0];
    assert_string_equal(k->symbol, "vadd__BLOCK_256");
    assert_string_equal(k->source_name, "vadd");
    assert_int_equal(k->sm, 90);
    assert_int_equal(k->arch_flags, TILERT_META_ARCH_SPECIFIC);
    assert_int_equal(k->warps, 8);
    assert_int_equal(k->nparams, 4);
    assert_string_equal(k->params[0].name, "x");
    assert_int_equal(k->params[0].kind, TILERT_PARAM_PTR);
    assert_int_equal(k->params[0].dtype, TILERT_F32);
    assert_int_equal(k->params[3].kind, TILERT_PARAM_SCALAR);
    assert_int_equal(k->params[3].dtype, TILERT_I32);
    assert_int_equal(k->nspecs, 1);
    assert_string_equal(k->specs[0].name, "BLOCK");
    assert_string_equal(k->specs[0].value, "256");
    assert_int_equal(k->grid_rank, 1);

    k = &m.kernels[1];
    assert_string_equal(k->source_name, "gemm");
    assert_int_equal(k->smem_static, 1024);
    assert_int_equal(k->smem_dynamic, 98304);
    assert_int_equal(k->params[2].kind, TILERT_PARAM_TENSOR);
    assert_int_equal(k->params[2].dtype, TILERT_BF16);
    assert_int_equal(k->params[2].rank, 2);
    assert_int_equal(k->nspecs, 3);
    assert_string_equal(k->specs[2].value, "64");
    assert_int_equal(k->grid_rank, 2);

    k = &m.kernels[2];
    assert_int_equal(k->grid_rank, 0);
    assert_int_equal(k->code_len, 0);
    assert_int_equal(k->params[0].dtype, TILERT_U8);
    assert_int_equal(k->params[1].dtype, TILERT_U32);
    tilert_meta_free(&m);
}

static void test_arch_and_facts(void **state)
{
    Fix *fx = *state;
    const IrFunc *fs[1] = {fx->vadd};
    CgMeta cm;
    /* without facts the warps come from the IrFunc */
    assert_true(cg_meta_build(fs, NULL, 1, "sm_80", &fx->arena, &cm, &fx->d));
    tilert_meta m = parse_ok(&cm);
    assert_int_equal(m.kernels[0].sm, 80);
    assert_int_equal(m.kernels[0].arch_flags, 0);
    assert_int_equal(m.kernels[0].warps, 8);
    tilert_meta_free(&m);
    assert_true(cg_meta_build(fs, NULL, 1, "sm_89", &fx->arena, &cm, &fx->d));
    m = parse_ok(&cm);
    assert_int_equal(m.kernels[0].sm, 89);
    tilert_meta_free(&m);

    assert_false(cg_meta_build(fs, NULL, 1, "compute_90", &fx->arena, &cm, &fx->d));
    assert_non_null(strstr(diag_text(fx), "unknown GPU arch 'compute_90'"));
    CgKernelFacts bad = {0, 0, 0};
    assert_false(cg_meta_build(fs, &bad, 1, "sm_90", &fx->arena, &cm, &fx->d));
    assert_non_null(strstr(diag_text(fx), "0 warps"));
}

/* ---- grid code ------------------------------------------------------------------------ */

static const tilert_meta_kernel *find(const tilert_meta *m, const char *sym)
{
    for (uint32_t i = 0; i < m->nkernels; i++)
        if (strcmp(m->kernels[i].symbol, sym) == 0) return &m->kernels[i];
    fail_msg("no kernel %s", sym);
    return NULL;
}

static int64_t eval1(const tilert_meta_kernel *k, const tilert_arg *args, int d)
{
    int64_t g[3] = {-7, -7, -7};
    char err[200] = "";
    if (!tilert_meta_eval_grid(k, args, g, err, sizeof err)) fail_msg("eval: %s", err);
    return g[d];
}

static void test_grid_from_ir(void **state)
{
    Fix *fx = *state;
    const IrFunc *fs[2] = {fx->vadd, fx->gemm};
    CgMeta cm;
    assert_true(cg_meta_build(fs, NULL, 2, "sm_90a", &fx->arena, &cm, &fx->d));
    tilert_meta m = parse_ok(&cm);
    const tilert_meta_kernel *v = find(&m, "vadd__BLOCK_256");
    tilert_arg a[4] = {tilert_arg_ptr(NULL, TILERT_F32), tilert_arg_ptr(NULL, TILERT_F32),
                       tilert_arg_ptr(NULL, TILERT_F32), tilert_arg_i32(1000)};
    assert_int_equal(eval1(v, a, 0), 4);
    a[3] = tilert_arg_i32(1024);
    assert_int_equal(eval1(v, a, 0), 4);
    a[3] = tilert_arg_i32(1025);
    assert_int_equal(eval1(v, a, 0), 5);
    a[3] = tilert_arg_i32(0);
    assert_int_equal(eval1(v, a, 0), 0);
    /* i32 arithmetic wraps at 32 bits, as the IR says: (INT32_MAX + 255) is negative */
    a[3] = tilert_arg_i32(INT32_MAX);
    assert_int_equal(eval1(v, a, 0), ((int64_t)INT32_MIN + 254) / 256);

    const tilert_meta_kernel *g = find(&m, "gemm__T_bf16__BM_128__BN_64");
    tilert_tensor t = tilert_tensor2d((void *)0x1000, TILERT_BF16, 1000, 130);
    tilert_arg ga[3] = {tilert_arg_tensor(t), tilert_arg_tensor(t), tilert_arg_tensor(t)};
    assert_int_equal(eval1(g, ga, 0), 8);
    assert_int_equal(eval1(g, ga, 1), 3);
    tilert_meta_free(&m);
}

/* Unsigned types use unsigned ops; CAST truncates. */
static void test_grid_unsigned_and_cast(void **state)
{
    Fix *fx = *state;
    SrcLoc loc = {2, 1};
    IrFunc *f = ir_func_new(fx->m, "u", "u", loc);
    f->warps = 2;
    ir_func_add_param(f, "n", ir_ty_scalar(DT_U32));
    ir_func_add_param(f, "big", ir_ty_scalar(DT_I64));
    ir_func_add_param(f, "X", ir_ty_view(DT_F32, 3));
    ir_func_make_grid(f);
    IrBuilder b = {0};
    ir_builder_at_end(&b, f, f->grid);
    /* x = (n - 1) / 2 in u32;  y = (big as i32) max 1;  z = min(X.stride[2], X.shape[1]) as i32 */
    IrVal x = ir_binary(&b, IR_DIV, ir_binary(&b, IR_SUB, grid_arg(f, 0), ir_const_int(&b, DT_U32, 1)),
                        ir_const_int(&b, DT_U32, 2));
    IrVal c = ir_build1(&b, IR_CAST, (IrVal[]){grid_arg(f, 1)}, 1, ir_ty_scalar(DT_I32), NULL);
    IrVal y = ir_binary(&b, IR_MAX, c, ir_const_int(&b, DT_I32, 1));
    IrVal mn = ir_binary(&b, IR_MIN, view_q(&b, IR_VIEW_STRIDE, grid_arg(f, 2), 2), view_q(&b, IR_VIEW_SHAPE, grid_arg(f, 2), 1));
    IrVal z = ir_build1(&b, IR_CAST, &mn, 1, ir_ty_scalar(DT_I32), NULL);
    yield(&b, (IrVal[]){x, y, z}, 3);
    const IrFunc *fs[1] = {f};
    CgMeta cm;
    assert_true(cg_meta_build(fs, NULL, 1, "sm_90", &fx->arena, &cm, &fx->d));
    tilert_meta m = parse_ok(&cm);
    const tilert_meta_kernel *k = &m.kernels[0];
    assert_int_equal(k->grid_rank, 3);
    int64_t shape[3] = {2, 5, 7};
    tilert_arg a[3] = {tilert_arg_u32(0), tilert_arg_i64(((int64_t)1 << 32) + 6),
                       tilert_arg_tensor(tilert_tensor_nd(NULL, TILERT_F32, 3, shape, NULL))};
    assert_int_equal(eval1(k, a, 0), 0x7FFFFFFF); /* (0u - 1) / 2 */
    assert_int_equal(eval1(k, a, 1), 6);          /* the cast drops bit 32 */
    assert_int_equal(eval1(k, a, 2), 1);          /* min(stride[2] = 1, shape[1] = 5) */
    a[0] = tilert_arg_u32(11);
    a[1] = tilert_arg_i64(-5);
    assert_int_equal(eval1(k, a, 0), 5);
    assert_int_equal(eval1(k, a, 1), 1);
    tilert_meta_free(&m);
}

static void test_grid_unsupported(void **state)
{
    Fix *fx = *state;
    SrcLoc loc = {7, 9};
    IrFunc *f = ir_func_new(fx->m, "bad", "bad", loc);
    f->warps = 4;
    ir_func_add_param(f, "n", ir_ty_scalar(DT_I32));
    ir_func_make_grid(f);
    IrBuilder b = {0};
    ir_builder_at_end(&b, f, f->grid);
    b.loc = (SrcLoc){3, 14};
    IrVal s = ir_binary(&b, IR_SHL, grid_arg(f, 0), ir_const_int(&b, DT_I32, 1));
    yield(&b, &s, 1);
    const IrFunc *fs[1] = {f};
    CgMeta cm;
    assert_false(cg_meta_build(fs, NULL, 1, "sm_90a", &fx->arena, &cm, &fx->d));
    const char *t = diag_text(fx);
    assert_non_null(strstr(t, "k.tile:3:14"));
    assert_non_null(strstr(t, "uses 'shl', which the launcher cannot compute"));

    /* a float in the grid */
    IrFunc *g = ir_func_new(fx->m, "fl", "fl", loc);
    g->warps = 4;
    ir_func_add_param(g, "x", ir_ty_scalar(DT_F32));
    ir_func_make_grid(g);
    ir_builder_at_end(&b, g, g->grid);
    IrVal c = ir_build1(&b, IR_CAST, (IrVal[]){grid_arg(g, 0)}, 1, ir_ty_scalar(DT_I32), NULL);
    yield(&b, &c, 1);
    fs[0] = g;
    assert_false(cg_meta_build(fs, NULL, 1, "sm_90a", &fx->arena, &cm, &fx->d));
    assert_non_null(strstr(diag_text(fx), "integer scalars only"));
}

/* Hand-written code: every opcode, and the evaluator's one failure. */
static tilert_meta_kernel code_kernel(const uint8_t *code, uint32_t len, uint8_t rank, const tilert_meta_param *ps,
                                      uint32_t np)
{
    tilert_meta_kernel k = {"k", "k", 90, 0, rank, 1, 0, 0, np, 0, len, ps, NULL, code};
    return k;
}

#define PUSH(v) TILERT_GOP_PUSH, (uint8_t)(v), (uint8_t)((uint64_t)(v) >> 8), (uint8_t)((uint64_t)(v) >> 16), \
    (uint8_t)((uint64_t)(v) >> 24), (uint8_t)((uint64_t)(v) >> 32), (uint8_t)((uint64_t)(v) >> 40),          \
    (uint8_t)((uint64_t)(v) >> 48), (uint8_t)((uint64_t)(v) >> 56)

static int64_t run2(uint8_t op, int64_t a, int64_t b)
{
    uint8_t code[19] = {PUSH(a), PUSH(b), op};
    tilert_meta_kernel k = code_kernel(code, sizeof code, 1, NULL, 0);
    char err[200];
    assert_true(tilert_meta_check_code(&k, err, sizeof err));
    int64_t g[3];
    if (!tilert_meta_eval_grid(&k, NULL, g, err, sizeof err)) fail_msg("%s", err);
    return g[0];
}

static void test_grid_ops(void **state)
{
    (void)state;
    assert_int_equal(run2(TILERT_GOP_ADD, 5, -7), -2);
    assert_int_equal(run2(TILERT_GOP_ADD, INT64_MAX, 1), INT64_MIN);
    assert_int_equal(run2(TILERT_GOP_SUB, 5, 7), -2);
    assert_int_equal(run2(TILERT_GOP_MUL, -3, 7), -21);
    assert_int_equal(run2(TILERT_GOP_DIV, -7, 2), -3);
    assert_int_equal(run2(TILERT_GOP_DIV, INT64_MIN, -1), INT64_MIN);
    assert_int_equal(run2(TILERT_GOP_REM, -7, 2), -1);
    assert_int_equal(run2(TILERT_GOP_REM, INT64_MIN, -1), 0);
    assert_int_equal(run2(TILERT_GOP_MIN, -7, 2), -7);
    assert_int_equal(run2(TILERT_GOP_MAX, -7, 2), 2);
    assert_int_equal(run2(TILERT_GOP_CDIV, 7, 2), 4);
    assert_int_equal(run2(TILERT_GOP_CDIV, 8, 2), 4);
    assert_int_equal(run2(TILERT_GOP_CDIV, -7, 2), -3);
    assert_int_equal(run2(TILERT_GOP_CDIV, 7, -2), -3);
    assert_int_equal(run2(TILERT_GOP_CDIV, -7, -2), 4);
    assert_int_equal(run2(TILERT_GOP_CDIV, 0, 5), 0);
    assert_int_equal(run2(TILERT_GOP_DIVU, -1, 2), INT64_MAX);
    assert_int_equal(run2(TILERT_GOP_REMU, -1, 10), 5); /* 2^64 - 1 = 18446744073709551615 */
    assert_int_equal(run2(TILERT_GOP_MINU, -1, 3), 3);
    assert_int_equal(run2(TILERT_GOP_MAXU, -1, 3), -1);

    /* WRAP */
    assert_int_equal(tilert_meta_wrap(0x180, TILERT_I8), -128);
    assert_int_equal(tilert_meta_wrap(0x180, TILERT_U8), 0x80);
    assert_int_equal(tilert_meta_wrap(-1, TILERT_U16), 0xFFFF);
    assert_int_equal(tilert_meta_wrap(0x12345678FFFFFFFFll, TILERT_I32), -1);
    assert_int_equal(tilert_meta_wrap(4, TILERT_I1), 1);

    /* division by zero is the one failure, with a message */
    uint8_t code[19] = {PUSH(5), PUSH(0), TILERT_GOP_DIV};
    tilert_meta_kernel k = code_kernel(code, sizeof code, 1, NULL, 0);
    int64_t g[3];
    char err[200] = "";
    assert_false(tilert_meta_eval_grid(&k, NULL, g, err, sizeof err));
    assert_non_null(strstr(err, "divides by zero"));
}

static void test_grid_code_checks(void **state)
{
    (void)state;
    static const tilert_meta_param ps[2] = {{"n", TILERT_PARAM_SCALAR, TILERT_I32, 0},
                                            {"A", TILERT_PARAM_TENSOR, TILERT_F32, 2}};
    struct {
        uint8_t code[24];
        uint32_t len;
        uint8_t rank;
        const char *msg;
    } bad[] = {
        {{TILERT_GOP_ADD}, 1, 1, "with 0 operands"},
        {{99}, 1, 1, "unknown opcode 99"},
        {{TILERT_GOP_PUSH, 1, 2}, 3, 1, "cut off"},
        {{TILERT_GOP_ARG, 5}, 2, 1, "parameter 5 out of range"},
        {{TILERT_GOP_ARG, 1}, 2, 1, "not an integer scalar"},
        {{TILERT_GOP_SHAPE, 1, 2}, 3, 1, "not a tensor of that rank"},
        {{TILERT_GOP_STRIDE, 0, 0}, 3, 1, "not a tensor of that rank"},
        {{TILERT_GOP_ARG, 0, TILERT_GOP_WRAP, TILERT_F32}, 4, 1, "not an integer dtype"},
        {{TILERT_GOP_ARG, 0}, 2, 2, "leaves 1 values, grid rank is 2"},
        {{TILERT_GOP_ARG, 0}, 2, 4, "at most 3"},
        {{TILERT_GOP_WRAP, TILERT_I32}, 2, 1, "empty stack"},
        {{TILERT_GOP_ARG, 0}, 2, 0, "without a grid rank"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tilert_meta_kernel k = code_kernel(bad[i].code, bad[i].len, bad[i].rank, ps, 2);
        char err[200] = "";
        assert_false(tilert_meta_check_code(&k, err, sizeof err));
        if (!strstr(err, bad[i].msg)) fail_msg("case %zu: '%s' lacks '%s'", i, err, bad[i].msg);
    }
    /* too deep a stack */
    uint8_t deep[2 * (TILERT_META_MAX_STACK + 1)];
    for (int i = 0; i <= TILERT_META_MAX_STACK; i++) deep[2 * i] = TILERT_GOP_ARG, deep[2 * i + 1] = 0;
    tilert_meta_kernel k = code_kernel(deep, sizeof deep, 1, ps, 2);
    char err[200] = "";
    assert_false(tilert_meta_check_code(&k, err, sizeof err));
    assert_non_null(strstr(err, "stack entries"));
    /* and the writer refuses what the reader would */
    uint8_t *out;
    size_t len;
    k = code_kernel((const uint8_t[]){TILERT_GOP_ADD}, 1, 1, ps, 2);
    assert_false(tilert_meta_write(&k, 1, &out, &len, err, sizeof err));
    assert_non_null(strstr(err, "kernel 'k'"));
}

/* ---- corrupt blobs --------------------------------------------------------------------- */

static void test_reader_rejects(void **state)
{
    Fix *fx = *state;
    const IrFunc *fs[2] = {fx->vadd, fx->gemm};
    CgMeta cm;
    assert_true(cg_meta_build(fs, NULL, 2, "sm_90a", &fx->arena, &cm, &fx->d));
    uint8_t *b = malloc(cm.len);
    tilert_meta m;
    char err[300];
    /* every truncation fails */
    for (size_t n = 0; n < cm.len; n++) {
        err[0] = 0;
        if (tilert_meta_parse(cm.data, n, &m, err, sizeof err)) fail_msg("prefix of %zu bytes parsed", n);
        assert_true(err[0] != 0);
    }
    /* every single-byte change fails (the checksum covers what the header does not) */
    for (size_t i = 0; i < cm.len; i++) {
        memcpy(b, cm.data, cm.len);
        b[i] ^= 0x5a;
        if (tilert_meta_parse(b, cm.len, &m, err, sizeof err)) fail_msg("flipping byte %zu went unnoticed", i);
    }
    memcpy(b, cm.data, cm.len);
    b[0] = 'X';
    assert_false(tilert_meta_parse(b, cm.len, &m, err, sizeof err));
    assert_non_null(strstr(err, "bad magic"));
    memcpy(b, cm.data, cm.len);
    b[4] = 2;
    assert_false(tilert_meta_parse(b, cm.len, &m, err, sizeof err));
    assert_non_null(strstr(err, "metadata version 2"));
    memcpy(b, cm.data, cm.len);
    b[20] ^= 1;
    assert_false(tilert_meta_parse(b, cm.len, &m, err, sizeof err));
    assert_non_null(strstr(err, "checksum"));
    /* a record whose fields disagree with its size, with a valid checksum */
    memcpy(b, cm.data, cm.len);
    b[16] += 1;
    uint32_t crc = tilert_crc32(b + 16, cm.len - 16);
    for (int i = 0; i < 4; i++) b[12 + i] = (uint8_t)(crc >> (8 * i));
    assert_false(tilert_meta_parse(b, cm.len, &m, err, sizeof err));
    assert_non_null(strstr(err, "record size"));
    /* a string without its NUL, with a valid checksum */
    memcpy(b, cm.data, cm.len);
    b[22 + (b[20] | b[21] << 8)] = 'x';
    crc = tilert_crc32(b + 16, cm.len - 16);
    for (int i = 0; i < 4; i++) b[12 + i] = (uint8_t)(crc >> (8 * i));
    assert_false(tilert_meta_parse(b, cm.len, &m, err, sizeof err));
    assert_non_null(strstr(err, "symbol of kernel 0 at byte 22 is not a NUL-terminated string"));
    free(b);
    /* duplicate symbols */
    const IrFunc *dup[2] = {fx->vadd, fx->vadd};
    assert_false(cg_meta_build(dup, NULL, 2, "sm_90a", &fx->arena, &cm, &fx->d) &&
                 tilert_meta_parse(cm.data, cm.len, &m, err, sizeof err));
    assert_non_null(strstr(err, "appears twice"));
}

static void test_crc_and_conversions(void **state)
{
    (void)state;
    assert_int_equal(tilert_crc32("123456789", 9), 0xCBF43926u); /* the standard check value */
    assert_int_equal(tilert_f64_to_f16_bits(1.0), 0x3C00);
    assert_int_equal(tilert_f64_to_f16_bits(-2.5), 0xC100);
    assert_int_equal(tilert_f64_to_f16_bits(65504.0), 0x7BFF);
    assert_int_equal(tilert_f64_to_f16_bits(65520.0), 0x7C00);       /* rounds to inf */
    assert_int_equal(tilert_f64_to_f16_bits(5.960464477539063e-08), 0x0001); /* smallest subnormal */
    assert_int_equal(tilert_f64_to_f16_bits(1.0 + 1.0 / 2048), 0x3C00); /* a tie goes to even */
    assert_int_equal(tilert_f64_to_f16_bits(1.0 + 3.0 / 2048), 0x3C02);
    assert_int_equal(tilert_f64_to_bf16_bits(1.0), 0x3F80);
    assert_int_equal(tilert_f64_to_bf16_bits(3.140625), 0x4049);
    assert_int_equal(tilert_f64_to_bf16_bits(-0.0), 0x8000);
    assert_int_equal(tilert_f64_to_bf16_bits(1e39), 0x7F80);
    assert_int_equal(tilert_f64_to_bf16_bits(0.0 / 0.0) & 0x7FC0, 0x7FC0);
}

static void test_ptx_text(void **state)
{
    Fix *fx = *state;
    const IrFunc *fs[1] = {fx->vadd};
    CgMeta cm;
    assert_true(cg_meta_build(fs, NULL, 1, "sm_90a", &fx->arena, &cm, &fx->d));
    StrBuf b = {0};
    cg_meta_ptx(&b, &cm);
    char head[96];
    snprintf(head, sizeof head, ".visible .global .align 8 .b8 __tilec_meta[%zu] = {", cm.len);
    const char *p = strstr(b.s, head);
    assert_non_null(p);
    p += strlen(head);
    for (size_t i = 0; i < cm.len; i++) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        assert_true(end != p);
        assert_int_equal(v, cm.data[i]);
        p = end;
        while (*p == ',' || *p == ' ' || *p == '\n') p++;
    }
    assert_true(strncmp(p, "};", 2) == 0);
    sb_free(&b);
}

/* The whole path codegen takes: IrFunc -> blob -> PTX declaration -> nvJitLink -> cubin -> libtilert. */
static void test_through_a_cubin(void **state)
{
    Fix *fx = *state;
    const IrFunc *fs[2] = {fx->vadd, fx->gemm};
    CgMeta cm;
    assert_true(cg_meta_build(fs, NULL, 2, "sm_90a", &fx->arena, &cm, &fx->d));
    StrBuf ptx = {0};
    sb_puts(&ptx, ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
                  ".visible .entry vadd__BLOCK_256(.param .u64 x, .param .u64 y, .param .u64 out, .param .u32 n)\n"
                  "{\n    ret;\n}\n"
                  ".visible .entry gemm__T_bf16__BM_128__BN_64(.param .u64 a, .param .u64 a0, .param .u64 a1,\n"
                  "    .param .u64 as0, .param .u64 as1, .param .u64 b, .param .u64 b0, .param .u64 b1,\n"
                  "    .param .u64 bs0, .param .u64 bs1, .param .u64 c, .param .u64 c0, .param .u64 c1,\n"
                  "    .param .u64 cs0, .param .u64 cs1)\n{\n    ret;\n}\n");
    cg_meta_ptx(&ptx, &cm);
    char log[4096];
    size_t len;
    uint8_t *cubin = rt_nvjitlink(ptx.s, "sm_90a", &len, log, sizeof log);
    sb_free(&ptx);
    if (!cubin) {
        print_message("SKIP: %s\n", log);
        skip();
    }
    tilert_module *m;
    if (tilert_module_inspect_data(cubin, len, &m) != TILERT_OK) fail_msg("%s", tilert_last_error());
    tilert_kernel *k;
    assert_int_equal(tilert_kernel_get(m, "gemm", &k), TILERT_OK);
    tilert_kernel_info ki;
    assert_int_equal(tilert_kernel_get_info(k, &ki), TILERT_OK);
    assert_string_equal(ki.symbol, "gemm__T_bf16__BM_128__BN_64");
    assert_string_equal(ki.arch, "sm_90a");
    assert_int_equal(ki.warps, 4);
    tilert_tensor t = tilert_tensor2d((void *)0x1000, TILERT_BF16, 4096, 1000);
    tilert_arg a[3] = {tilert_arg_tensor(t), tilert_arg_tensor(t), tilert_arg_tensor(t)};
    uint32_t g[3];
    assert_int_equal(tilert_kernel_check(k, a, 3, g), TILERT_OK);
    assert_int_equal(g[0], 32);
    assert_int_equal(g[1], 16);
    assert_int_equal(g[2], 1);
    tilert_module_unload(m);
    free(cubin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_arch_and_facts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grid_from_ir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grid_unsigned_and_cast, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grid_unsupported, setup, teardown),
        cmocka_unit_test(test_grid_ops),
        cmocka_unit_test(test_grid_code_checks),
        cmocka_unit_test_setup_teardown(test_reader_rejects, setup, teardown),
        cmocka_unit_test(test_crc_and_conversions),
        cmocka_unit_test_setup_teardown(test_ptx_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_through_a_cubin, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
