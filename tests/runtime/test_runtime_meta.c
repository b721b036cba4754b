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
    CgKernelFacts facts[3] = {{8, 0, 0, NULL, 0}, {4, 1024, 98304, NULL, 0}, {1, 0, 0, NULL, 0}};
    CgMeta cm;
    assert_true(cg_meta_build(fs, facts, 3, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d));
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
    assert_true(cg_meta_build(fs, NULL, 1, ir_target_find("sm_80"), &fx->arena, &cm, &fx->d));
    tilert_meta m = parse_ok(&cm);
    assert_int_equal(m.kernels[0].sm, 80);
    assert_int_equal(m.kernels[0].arch_flags, 0);
    assert_int_equal(m.kernels[0].warps, 8);
    tilert_meta_free(&m);
    assert_true(cg_meta_build(fs, NULL, 1, ir_target_find("sm_89"), &fx->arena, &cm, &fx->d));
    m = parse_ok(&cm);
    assert_int_equal(m.kernels[0].sm, 89);
    tilert_meta_free(&m);

    CgKernelFacts bad = {0, 0, 0, NULL, 0};
    assert_false(cg_meta_build(fs, &bad, 1, ir_target_find("sm_90"), &fx->arena, &cm, &fx->d));
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
    if (!tilert_meta_eval_grid(k, args, 0, g, err, sizeof err)) fail_msg("eval: %s", err);
    return g[d];
}

static void test_grid_from_ir(void **state)
{
    Fix *fx = *state;
    const IrFunc *fs[2] = {fx->vadd, fx->gemm};
    CgMeta cm;
    assert_true(cg_meta_build(fs, NULL, 2, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d));
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
    assert_true(cg_meta_build(fs, NULL, 1, ir_target_find("sm_90"), &fx->arena, &cm, &fx->d));
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
    assert_false(cg_meta_build(fs, NULL, 1, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d));
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
    assert_false(cg_meta_build(fs, NULL, 1, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d));
    assert_non_null(strstr(diag_text(fx), "integer scalars only"));
}

/* Hand-written code: every opcode, and the evaluator's one failure. */
static tilert_meta_kernel code_kernel(const uint8_t *code, uint32_t len, uint8_t rank, const tilert_meta_param *ps,
                                      uint32_t np)
{
    tilert_meta_kernel k = {"k", "k", 90, 0, rank, 1, 0, 0, np, 0, len, ps, NULL, code, 0, NULL};
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
    if (!tilert_meta_eval_grid(&k, NULL, 0, g, err, sizeof err)) fail_msg("%s", err);
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
    assert_false(tilert_meta_eval_grid(&k, NULL, 0, g, err, sizeof err));
    assert_non_null(strstr(err, "divides by zero"));

    /* NUM_SMS: the device's count (persistent grids: min(tiles, num_sms())); none without a device */
    uint8_t sms[11] = {PUSH(1000), TILERT_GOP_NUM_SMS, TILERT_GOP_MIN};
    k = code_kernel(sms, sizeof sms, 1, NULL, 0);
    assert_true(tilert_meta_check_code(&k, err, sizeof err));
    assert_true(tilert_meta_eval_grid(&k, NULL, 132, g, err, sizeof err));
    assert_int_equal(g[0], 132);
    assert_false(tilert_meta_eval_grid(&k, NULL, 0, g, err, sizeof err));
    assert_non_null(strstr(err, "num_sms()"));
}

static void test_grid_code_checks(void **state)
{
    (void)state;
    static const tilert_meta_param ps[2] = {{"n", TILERT_PARAM_SCALAR, TILERT_I32, 0, 0, NULL, 0},
                                            {"A", TILERT_PARAM_TENSOR, TILERT_F32, 2, 0, NULL, 0}};
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
    assert_true(cg_meta_build(fs, NULL, 2, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d));
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
    b[4] = 5;
    assert_false(tilert_meta_parse(b, cm.len, &m, err, sizeof err));
    assert_non_null(strstr(err, "metadata version 5; this libtilert reads versions 1 to 4"));
    b[4] = 4; /* a version 3 record read as version 4 lacks its requirement count: it reads the next record as one */
    assert_false(tilert_meta_parse(b, cm.len, &m, err, sizeof err));
    assert_non_null(strstr(err, "requirement message of kernel 0"));
    b[4] = 0;
    assert_false(tilert_meta_parse(b, cm.len, &m, err, sizeof err));
    assert_non_null(strstr(err, "metadata version 0"));
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
    assert_false(cg_meta_build(dup, NULL, 2, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d) &&
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
    assert_true(cg_meta_build(fs, NULL, 1, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d));
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
    assert_true(cg_meta_build(fs, NULL, 2, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d));
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


/* ---- TMA descriptors (format version 2; optional ones version 3) --------------------- */

/* gemm's TMA: A [M, K] loaded as 128 x 64 boxes, 128B swizzle, and as 64 x 64 boxes; B as
 * 64 x 128 (u16 bits, L2 256B) ; C with NaN fill and every other row. Given out of order. */
static void gemm_tma(CgTmaDesc t[4])
{
    memset(t, 0, sizeof(CgTmaDesc) * 4);
    t[0].param = 1; /* B */
    t[0].rank = 2;
    t[0].box[0] = 128, t[0].box[1] = 64;
    t[0].has_dtype = true, t[0].dtype = DT_U16;
    t[0].l2_promotion = CG_TMA_L2_256B;
    t[1].param = 0; /* A, first */
    t[1].rank = 2;
    t[1].box[0] = 64, t[1].box[1] = 128;
    t[1].swizzle = CG_TMA_SWIZZLE_128B;
    t[2].param = 2; /* C */
    t[2].rank = 2;
    t[2].box[0] = 8, t[2].box[1] = 32;
    t[2].elem_stride[0] = 1, t[2].elem_stride[1] = 2;
    t[2].oob_nan = true;
    t[3].param = 0; /* A, second */
    t[3].rank = 2;
    t[3].box[0] = 64, t[3].box[1] = 64;
    t[3].swizzle = CG_TMA_SWIZZLE_128B;
    t[3].l2_promotion = CG_TMA_L2_128B;
}

static void test_tma_round_trip(void **state)
{
    Fix *fx = *state;
    CgTmaDesc t[4];
    gemm_tma(t);
    const IrFunc *fs[2] = {fx->vadd, fx->gemm};
    CgKernelFacts facts[2] = {{8, 0, 0, NULL, 0}, {4, 0, 65536, t, 4}};
    CgMeta cm;
    if (!cg_meta_build(fs, facts, 2, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d)) fail_msg("%s", diag_text(fx));
    assert_int_equal(cm.data[4] | cm.data[5] << 8, 3); /* written as version 3 */
    tilert_meta m = parse_ok(&cm);
    assert_int_equal(m.kernels[0].params[0].ntma, 0);
    const tilert_meta_kernel *k = &m.kernels[1];
    const tilert_meta_param *A = &k->params[0], *B = &k->params[1], *C = &k->params[2];
    assert_int_equal(A->ntma, 2);
    assert_int_equal(B->ntma, 1);
    assert_int_equal(C->ntma, 1);
    /* A's descriptors keep their order */
    assert_int_equal(A->tma[0].dtype, TILERT_BF16);
    assert_int_equal(A->tma[0].rank, 2);
    assert_int_equal(A->tma[0].box[0], 64);
    assert_int_equal(A->tma[0].box[1], 128);
    assert_int_equal(A->tma[0].swizzle, TILERT_TMA_SWIZZLE_128B);
    assert_int_equal(A->tma[0].l2_promotion, TILERT_TMA_L2_NONE);
    assert_int_equal(A->tma[0].elem_stride[0], 1); /* 0 in CgTmaDesc means 1 */
    assert_int_equal(A->tma[0].elem_stride[1], 1);
    assert_int_equal(A->tma[1].box[1], 64);
    assert_int_equal(A->tma[1].l2_promotion, TILERT_TMA_L2_128B);
    assert_int_equal(B->tma[0].dtype, TILERT_U16);
    assert_int_equal(B->tma[0].box[0], 128);
    assert_int_equal(B->tma[0].swizzle, TILERT_TMA_SWIZZLE_NONE);
    assert_int_equal(B->tma[0].l2_promotion, TILERT_TMA_L2_256B);
    assert_int_equal(B->tma[0].oob_fill, TILERT_TMA_OOB_ZERO);
    assert_int_equal(C->tma[0].oob_fill, TILERT_TMA_OOB_NAN);
    assert_int_equal(C->tma[0].elem_stride[1], 2);
    assert_int_equal(C->tma[0].box[0], 8);
    assert_int_equal(k->smem_dynamic, 65536);
    /* the grid code still reads the right parameters */
    tilert_tensor tt = tilert_tensor2d((void *)0x1000, TILERT_BF16, 1000, 130);
    tilert_arg ga[3] = {tilert_arg_tensor(tt), tilert_arg_tensor(tt), tilert_arg_tensor(tt)};
    assert_int_equal(eval1(k, ga, 1), 3);
    tilert_meta_free(&m);

    /* writing the parsed kernels again gives the same bytes */
    m = parse_ok(&cm);
    uint8_t *again;
    size_t len;
    char err[300];
    assert_true(tilert_meta_write(m.kernels, m.nkernels, &again, &len, err, sizeof err));
    assert_int_equal(len, cm.len);
    assert_memory_equal(again, cm.data, len);
    free(again);
    tilert_meta_free(&m);
}

static void expect_build_error(Fix *fx, const IrFunc *f, const CgTmaDesc *t, uint32_t n, const char *arch,
                               const char *phrase)
{
    CgKernelFacts facts = {4, 0, 0, t, n};
    CgMeta cm;
    diag_free(&fx->d);
    diag_init(&fx->d, "k.tile", NULL, 0, NULL, DIAG_COLOR_NEVER);
    fx->d.capture = true;
    assert_false(cg_meta_build(&f, &facts, 1, ir_target_find(arch), &fx->arena, &cm, &fx->d));
    if (!strstr(diag_text(fx), phrase)) fail_msg("diagnostic '%s' lacks '%s'", diag_text(fx), phrase);
}

static void test_tma_codegen_errors(void **state)
{
    Fix *fx = *state;
    CgTmaDesc t[4];
    gemm_tma(t);
    expect_build_error(fx, fx->gemm, t, 4, "sm_80", "kernel 'gemm' uses TMA, which needs sm_90 or sm_90a (compiling for sm_80)");
    gemm_tma(t);
    t[1].box[0] = 100; /* 200 bytes of bf16 */
    expect_build_error(fx, fx->gemm, t, 4, "sm_90a",
                       "kernel 'gemm', parameter 'A': TMA descriptor 0: the TMA box's innermost extent (tensor dim 1) "
                       "is 100 x bf16 = 200 bytes, not a multiple of 16");
    gemm_tma(t);
    t[3].box[0] = 128; /* 256 bytes under a 128-byte swizzle */
    expect_build_error(fx, fx->gemm, t, 4, "sm_90a", "parameter 'A': TMA descriptor 1: the TMA box's innermost extent "
                       "(tensor dim 1) is 128 x bf16 = 256 bytes, more than the 128-byte span of swizzle 128B");
    gemm_tma(t);
    t[0].box[1] = 300;
    expect_build_error(fx, fx->gemm, t, 4, "sm_90a", "parameter 'B': TMA descriptor 0: TMA box extent 300 along tensor "
                       "dim 0 is outside 1..256");
    gemm_tma(t);
    t[0].has_dtype = true, t[0].dtype = DT_F32;
    expect_build_error(fx, fx->gemm, t, 4, "sm_90a", "does not have the size of the tensor's bf16");
    gemm_tma(t);
    t[2].rank = 3;
    expect_build_error(fx, fx->gemm, t, 4, "sm_90a", "TMA rank 3, but the tensor has rank 2");
    gemm_tma(t);
    t[2].elem_stride[1] = 9;
    expect_build_error(fx, fx->gemm, t, 4, "sm_90a", "element stride 9");
    gemm_tma(t);
    t[2].param = 7;
    expect_build_error(fx, fx->gemm, t, 4, "sm_90a", "TMA descriptor 2 is for parameter 7, which is not a tensor view");
    /* a pointer parameter takes no descriptor */
    CgTmaDesc p;
    memset(&p, 0, sizeof p);
    p.param = 0;
    p.rank = 1;
    p.box[0] = 64;
    expect_build_error(fx, fx->vadd, &p, 1, "sm_90a", "is for parameter 0, which is not a tensor view");
    /* NaN fill on an integer view */
    SrcLoc loc = {1, 1};
    IrFunc *g = ir_func_new(fx->m, "ints", "ints", loc);
    g->warps = 4;
    ir_func_add_param(g, "I", ir_ty_view(DT_I32, 1));
    p.box[0] = 4;
    p.oob_nan = true;
    expect_build_error(fx, g, &p, 1, "sm_90a", "kernel 'ints', parameter 'I': TMA descriptor 0: TMA NaN out-of-bounds "
                       "fill needs a float dtype");
    /* too many */
    CgTmaDesc many[TILERT_META_MAX_TMA + 1];
    for (int i = 0; i <= TILERT_META_MAX_TMA; i++) many[i] = t[1], many[i].param = 0;
    expect_build_error(fx, fx->gemm, many, TILERT_META_MAX_TMA + 1, "sm_90a", "asks for 17 TMA descriptors (at most 16)");
    /* and exactly the limit is fine */
    CgKernelFacts facts = {4, 0, 0, many, TILERT_META_MAX_TMA};
    CgMeta cm;
    const IrFunc *fs[1] = {fx->gemm};
    assert_true(cg_meta_build(fs, &facts, 1, ir_target_find("sm_90"), &fx->arena, &cm, &fx->d));
    tilert_meta m = parse_ok(&cm);
    assert_int_equal(m.kernels[0].params[0].ntma, TILERT_META_MAX_TMA);
    tilert_meta_free(&m);
}

/* A version-1 blob assembled by hand, as an older tilec wrote it. */
static size_t v1_blob(uint8_t *b)
{
    size_t n = 0;
#define B1(v) (b[n++] = (uint8_t)(v))
#define B2(v) (B1(v), B1((v) >> 8))
#define B4(v) (B2(v), B2((v) >> 16))
#define STR(s) do { B2(sizeof(s) - 1); memcpy(b + n, s, sizeof(s)); n += sizeof(s); } while (0)
    memcpy(b, "TLMD", 4);
    n = 4;
    B2(1);      /* version */
    B2(1);      /* kernels */
    B4(0);      /* size, patched */
    B4(0);      /* crc, patched */
    size_t rec = n;
    B4(0);      /* record size, patched */
    STR("scale");
    STR("scale");
    B2(90);     /* sm */
    B1(1);      /* sm_90a */
    B1(1);      /* grid rank */
    B2(4);      /* warps */
    B2(2);      /* params */
    B2(1);      /* specs */
    B2(3);      /* code length */
    B4(0);
    B4(512);
    STR("X");
    B1(TILERT_PARAM_TENSOR), B1(TILERT_F16), B1(2), B1(0);
    STR("k");
    B1(TILERT_PARAM_SCALAR), B1(TILERT_F32), B1(0), B1(0);
    STR("BLOCK");
    STR("128");
    B1(TILERT_GOP_SHAPE), B1(0), B1(0);
    uint32_t rs = (uint32_t)(n - rec), size = (uint32_t)n;
    for (int i = 0; i < 4; i++) b[rec + (size_t)i] = (uint8_t)(rs >> (8 * i)), b[8 + i] = (uint8_t)(size >> (8 * i));
    uint32_t crc = tilert_crc32(b + 16, n - 16);
    for (int i = 0; i < 4; i++) b[12 + i] = (uint8_t)(crc >> (8 * i));
#undef B1
#undef B2
#undef B4
#undef STR
    return n;
}

static void test_v1_compat(void **state)
{
    Fix *fx = *state;
    uint8_t b[256];
    size_t n = v1_blob(b);
    tilert_meta m;
    char err[300] = "";
    if (!tilert_meta_parse(b, n, &m, err, sizeof err)) fail_msg("v1 blob: %s", err);
    const tilert_meta_kernel *k = &m.kernels[0];
    assert_string_equal(k->symbol, "scale");
    assert_int_equal(k->smem_dynamic, 512);
    assert_int_equal(k->nparams, 2);
    assert_string_equal(k->params[0].name, "X");
    assert_int_equal(k->params[0].rank, 2);
    assert_int_equal(k->params[0].ntma, 0);
    assert_null(k->params[0].tma);
    assert_string_equal(k->params[1].name, "k");
    assert_string_equal(k->specs[0].value, "128");
    assert_int_equal(k->grid_rank, 1);
    /* the writer, asked for version 1, writes these very bytes */
    uint8_t *w;
    size_t wlen;
    assert_true(tilert_meta_write_version(m.kernels, 1, 1, &w, &wlen, err, sizeof err));
    assert_int_equal(wlen, n);
    assert_memory_equal(w, b, n);
    free(w);
    /* and version 3 of the same kernel is one byte longer per parameter (the TMA counts) */
    assert_true(tilert_meta_write(m.kernels, 1, &w, &wlen, err, sizeof err));
    assert_int_equal(wlen, n + 2);
    tilert_meta m2;
    if (!tilert_meta_parse(w, wlen, &m2, err, sizeof err)) fail_msg("v3: %s", err);
    assert_string_equal(m2.kernels[0].params[1].name, "k");
    tilert_meta_free(&m2);
    free(w);
    tilert_meta_free(&m);
    /* a v1 file read as v2 (the version byte changed, checksum intact) no longer adds up */
    b[4] = 2;
    assert_false(tilert_meta_parse(b, n, &m, err, sizeof err));

    /* version 1 cannot hold TMA descriptors; versions outside 1..4 are not written */
    CgTmaDesc t[4];
    gemm_tma(t);
    const IrFunc *fs[1] = {fx->gemm};
    CgKernelFacts facts = {4, 0, 0, t, 4};
    CgMeta cm;
    assert_true(cg_meta_build(fs, &facts, 1, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d));
    m = parse_ok(&cm);
    assert_false(tilert_meta_write_version(m.kernels, 1, 1, &w, &wlen, err, sizeof err));
    assert_non_null(strstr(err, "parameter 'A' has TMA descriptors, which version 1 cannot hold"));
    assert_false(tilert_meta_write_version(m.kernels, 1, 5, &w, &wlen, err, sizeof err));
    assert_non_null(strstr(err, "cannot write version 5"));
    tilert_meta_free(&m);
}

/* Rewrites the checksum after a change. */
static void fix_crc(uint8_t *b, size_t len)
{
    uint32_t crc = tilert_crc32(b + 16, len - 16);
    for (int i = 0; i < 4; i++) b[12 + i] = (uint8_t)(crc >> (8 * i));
}

/* Optional descriptors (version 3): codegen's word becomes the parameter's flag, read
 * back as written; a view's descriptors must agree; older versions and parameters
 * without descriptors cannot carry it. */
static void test_tma_optional(void **state)
{
    Fix *fx = *state;
    CgTmaDesc t[4];
    gemm_tma(t);
    t[1].optional = t[3].optional = true; /* both of A's */
    const IrFunc *fs[1] = {fx->gemm};
    CgKernelFacts facts = {4, 0, 0, t, 4};
    CgMeta cm;
    if (!cg_meta_build(fs, &facts, 1, ir_target_find("sm_90a"), &fx->arena, &cm, &fx->d)) fail_msg("%s", diag_text(fx));
    tilert_meta m = parse_ok(&cm);
    const tilert_meta_param *ps = m.kernels[0].params;
    assert_int_equal(ps[0].flags, TILERT_META_PARAM_TMA_OPTIONAL);
    assert_int_equal(ps[1].flags, 0);
    assert_int_equal(ps[2].flags, 0);
    uint8_t *w;
    size_t wlen;
    char err[300];
    assert_true(tilert_meta_write(m.kernels, 1, &w, &wlen, err, sizeof err));
    assert_int_equal(wlen, cm.len);
    assert_memory_equal(w, cm.data, wlen);
    free(w);
    /* version 2 has no flags to hold it */
    assert_false(tilert_meta_write_version(m.kernels, 1, 2, &w, &wlen, err, sizeof err));
    assert_non_null(strstr(err, "parameter 'A': TMA descriptors marked optional, which needs version 3"));
    /* nor does a parameter without descriptors, nor any other bit */
    tilert_meta_param bad[3] = {ps[0], ps[1], ps[2]};
    tilert_meta_kernel k = m.kernels[0];
    k.params = bad;
    bad[1].ntma = 0, bad[1].tma = NULL, bad[1].flags = TILERT_META_PARAM_TMA_OPTIONAL;
    assert_false(tilert_meta_write(&k, 1, &w, &wlen, err, sizeof err));
    assert_non_null(strstr(err, "parameter 'B': TMA descriptors marked optional, which needs descriptors"));
    bad[1] = ps[1], bad[1].flags = 2;
    assert_false(tilert_meta_write(&k, 1, &w, &wlen, err, sizeof err));
    assert_non_null(strstr(err, "parameter 'B': unknown flags 2"));
    /* the reader refuses the flag in a version-2 blob (same bytes, version byte changed) */
    uint8_t *b = malloc(cm.len);
    memcpy(b, cm.data, cm.len);
    b[4] = 2;
    fix_crc(b, cm.len);
    tilert_meta m2;
    assert_false(tilert_meta_parse(b, cm.len, &m2, err, sizeof err));
    assert_non_null(strstr(err, "parameter 'A': invalid kind 2 / dtype 13 / flags 1"));
    free(b);
    tilert_meta_free(&m);
    /* one of A's descriptors optional, the other not */
    gemm_tma(t);
    t[3].optional = true;
    expect_build_error(fx, fx->gemm, t, 4, "sm_90a", "kernel 'gemm', parameter 'A': TMA descriptor 1 is optional, but "
                       "descriptor 0 is required");
}

static void test_tma_reader_rejects(void **state)
{
    (void)state;
    size_t len;
    uint8_t *blob = rt_tma_meta("sm_90a", &len);
    assert_non_null(blob);
    tilert_meta m;
    char err[400];
    if (!tilert_meta_parse(blob, len, &m, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(m.kernels[0].params[0].ntma, RT_TMA_NDESC);
    assert_int_equal(m.kernels[0].params[0].tma[1].swizzle, TILERT_TMA_SWIZZLE_128B);
    tilert_meta_free(&m);
    /* A's record: "A", tensor, f32, rank 2, flags 0, 4 descriptors, then descriptor 0 (flags at + 7) */
    static const uint8_t pat[] = {1, 0, 'A', 0, TILERT_PARAM_TENSOR, TILERT_F32, 2, 0, RT_TMA_NDESC,
                                  TILERT_F32, 2, 0, 0, 0, 0, 32, 0, 16, 0, 1, 1};
    size_t at = 0;
    while (at + sizeof pat <= len && memcmp(blob + at, pat, sizeof pat) != 0) at++;
    assert_true(at + sizeof pat <= len);
    size_t d0 = at + 9; /* descriptor 0 */
    uint8_t *b = malloc(len);
    struct {
        size_t off;
        uint8_t val;
        const char *phrase;
    } cases[] = {
        {d0 + 7, 1, "TMA descriptor 0: TMA box extent 288 along tensor dim 1 is outside 1..256"}, /* box[0] = 0x120 */
        {d0 + 10, 3, "TMA descriptor 0: TMA element stride 3 along the innermost dim 1"},
        {d0 + 2, 9, "swizzle 9"},
        {d0 + 4, 1, ""}, /* NaN fill on f32: allowed */
        {d0 + 5, 2, "interleave 2"},
        {d0 + 1, 6, "TMA descriptor 0: rank 6 (1..5)"},
        {d0 + 1, 3, "TMA rank 3, but the tensor has rank 2"},
        {d0 + 0, TILERT_I16, "does not have the size of the tensor's f32"},
        {at + 8, 17, "the kernel has more than 16 TMA descriptors"},
        {at + 7, TILERT_META_PARAM_TMA_OPTIONAL, ""},
        {at + 7, 2, "invalid kind 2 / dtype 14 / flags 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(b, blob, len);
        b[cases[i].off] = cases[i].val;
        fix_crc(b, len);
        err[0] = 0;
        bool ok = tilert_meta_parse(b, len, &m, err, sizeof err);
        if (!cases[i].phrase[0]) {
            if (!ok) fail_msg("case %zu: %s", i, err);
            tilert_meta_free(&m);
            continue;
        }
        if (ok) fail_msg("case %zu parsed", i);
        if (!strstr(err, cases[i].phrase)) fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].phrase);
        assert_non_null(strstr(err, "kernel 0 'tma_tile', parameter 'A'"));
    }
    /* the kernel's arch: TMA needs sm_90 (sm is after the record size and the two names) */
    memcpy(b, blob, len);
    size_t sm_at = 16 + 4 + (2 + 8 + 1) * 2;
    assert_int_equal(b[sm_at], 90);
    b[sm_at] = 80;
    fix_crc(b, len);
    assert_false(tilert_meta_parse(b, len, &m, err, sizeof err));
    assert_non_null(strstr(err, "has TMA descriptors, but the kernel is for sm_80"));
    /* every truncation fails */
    for (size_t n = 16; n < len; n++)
        if (tilert_meta_parse(blob, n, &m, err, sizeof err)) fail_msg("prefix of %zu bytes parsed", n);
    /* random damage past the checksum: never a crash (ASan builds watch), and whatever
     * parses is written back to bytes that parse to the same kernels */
    uint64_t g = 0x243F6A8885A308D3ull;
    int parsed = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(b, blob, len);
        int nflips = 1 + it % 3;
        for (int f = 0; f < nflips; f++) {
            g ^= g << 13, g ^= g >> 7, g ^= g << 17;
            size_t at2 = 16 + (size_t)(g % (len - 16));
            b[at2] = (uint8_t)(g >> 32);
        }
        fix_crc(b, len);
        if (!tilert_meta_parse(b, len, &m, err, sizeof err)) continue;
        parsed++;
        uint8_t *w;
        size_t wlen;
        if (!tilert_meta_write(m.kernels, m.nkernels, &w, &wlen, err, sizeof err)) fail_msg("rewrite: %s", err);
        if (wlen != len || memcmp(w, b, len) != 0) fail_msg("iteration %d: the rewrite differs", it);
        free(w);
        tilert_meta_free(&m);
    }
    print_message("%d of 20000 damaged blobs still parsed (and rewrote identically)\n", parsed);
    free(b);
    free(blob);
}

/* ---- requires(...) clauses (format version 4) ------------------------------------------ */

/* attn(Q: tensor<bf16, 4>, K: tensor<bf16, 4>, n: u32, causal: i32) grid(Q.shape[2])
 *   requires(Q.shape[1] % K.shape[1] == 0, ...)     signed compare, remainder
 *   requires(!(n > 100u) && n != 0u, ...)           unsigned compare, logical not, and
 *   requires(where(causal != 0, 1, Q.shape[3]) == Q.shape[3] | 0, ...)   select, or */
static const char requires_ir[] =
    "kernel @attn \"attn\"(%Q: tensor<bf16, 4>, %K: tensor<bf16, 4>, %n: u32, %causal: i32) warps(4) {\n"
    "  return\n"
    "} grid {\n"
    "  %0 = view_shape %Q {dim = 2} : i64\n"
    "  yield %0\n"
    "} requires(\"Hq must be a multiple of Hkv\", \"n must be in 1..100\", \"D must agree\") {\n"
    "  %1 = view_shape %Q {dim = 1} : i64\n"
    "  %2 = view_shape %K {dim = 1} : i64\n"
    "  %3 = rem %1, %2 : i64\n"
    "  %4 = const 0 : i64\n"
    "  %5 = cmp eq %3, %4 : i1\n"
    "  %6 = const 100 : u32\n"
    "  %7 = cmp gt %n, %6 : i1\n"
    "  %8 = not %7 : i1\n"
    "  %9 = const 0 : u32\n"
    "  %10 = cmp ne %n, %9 : i1\n"
    "  %11 = and %8, %10 : i1\n"
    "  %12 = const 0 : i32\n"
    "  %13 = cmp ne %causal, %12 : i1\n"
    "  %14 = view_shape %Q {dim = 3} : i64\n"
    "  %15 = view_shape %K {dim = 3} : i64\n"
    "  %16 = const 1 : i64\n"
    "  %17 = select %13, %16, %14 : i64\n"
    "  %18 = or %15, %4 : i64\n"
    "  %19 = cmp eq %17, %18 : i1\n"
    "  yield %5, %11, %19\n"
    "}\n";

static tilert_arg qk_arg(int64_t heads, int64_t d)
{
    int64_t shape[4] = {2, heads, 100, d};
    return tilert_arg_tensor(tilert_tensor_nd((void *)0x10000, TILERT_BF16, 4, shape, NULL));
}

static void test_requires(void **state)
{
    (void)state;
    Diag d;
    diag_init(&d, "r.tir", NULL, 0, NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    IrModule *m = ir_parse("r.tir", requires_ir, sizeof requires_ir - 1, &d);
    if (!m || !ir_verify_module(m, &d, NULL)) fail_msg("%s", d.buf.s ? d.buf.s : "parse failed");
    Arena a;
    arena_init(&a);
    const IrFunc *fs[1] = {m->funcs[0]};
    CgMeta cm;
    if (!cg_meta_build(fs, NULL, 1, ir_target_find("sm_90a"), &a, &cm, &d)) fail_msg("%s", d.buf.s ? d.buf.s : "");
    assert_int_equal(cm.data[4] | cm.data[5] << 8, 4); /* requirements: version 4 */
    tilert_meta mm;
    char err[300];
    if (!tilert_meta_parse(cm.data, cm.len, &mm, err, sizeof err)) fail_msg("%s", err);
    const tilert_meta_kernel *k = &mm.kernels[0];
    assert_int_equal(k->nrequires, 3);
    assert_string_equal(k->requires[0].message, "Hq must be a multiple of Hkv");
    assert_string_equal(k->requires[2].message, "D must agree");
    struct {
        int64_t hq, hkv, dq, dk;
        uint32_t n;
        int32_t causal;
        int failed;
    } cases[] = {
        {16, 4, 128, 128, 5, 0, -2}, {16, 16, 64, 64, 100, 0, -2}, {16, 3, 128, 128, 5, 0, 0},
        {16, 4, 128, 128, 0, 0, 1},  {16, 4, 128, 128, 101, 0, 1}, {16, 4, 128, 128, 0xFFFFFFFFu, 0, 1},
        {16, 4, 128, 64, 5, 0, 2},   {16, 4, 1, 1, 5, 1, -2},      {16, 4, 64, 2, 5, 1, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilert_arg args[4] = {qk_arg(cases[i].hq, cases[i].dq), qk_arg(cases[i].hkv, cases[i].dk),
                              tilert_arg_u32(cases[i].n), tilert_arg_i32(cases[i].causal)};
        int failed = 99;
        bool ok = tilert_meta_eval_requires(k, args, 132, &failed, err, sizeof err);
        if (ok != (cases[i].failed == -2) || (!ok && failed != cases[i].failed))
            fail_msg("case %zu: ok %d, failed %d (want %d): %s", i, ok, failed, cases[i].failed, err);
        if (!ok) assert_string_equal(err, k->requires[failed].message);
    }
    /* zero kv heads: the remainder divides by zero, which is the code failing (-1) */
    tilert_arg args[4] = {qk_arg(16, 128), qk_arg(0, 128), tilert_arg_u32(5), tilert_arg_i32(0)};
    int failed = 99;
    assert_false(tilert_meta_eval_requires(k, args, 132, &failed, err, sizeof err));
    assert_int_equal(failed, -1);
    assert_non_null(strstr(err, "divides by zero"));
    /* the writer and reader agree byte for byte; version 3 cannot hold requirements */
    uint8_t *w;
    size_t wlen;
    assert_true(tilert_meta_write(mm.kernels, 1, &w, &wlen, err, sizeof err));
    assert_int_equal(wlen, cm.len);
    assert_memory_equal(w, cm.data, wlen);
    free(w);
    assert_false(tilert_meta_write_version(mm.kernels, 1, 3, &w, &wlen, err, sizeof err));
    assert_non_null(strstr(err, "need version 4"));
    /* a requirement leaving two values, or none, is refused */
    tilert_meta_kernel bad = *k;
    tilert_meta_require q = {"two", (const uint8_t[]){TILERT_GOP_ARG, 3, TILERT_GOP_ARG, 3}, 4};
    bad.requires = &q;
    bad.nrequires = 1;
    assert_false(tilert_meta_check_code(&bad, err, sizeof err));
    assert_non_null(strstr(err, "requirement 0 leaves 2 values, expected 1"));
    q = (tilert_meta_require){"select", (const uint8_t[]){TILERT_GOP_ARG, 3, TILERT_GOP_ARG, 3, TILERT_GOP_SELECT}, 5};
    assert_false(tilert_meta_check_code(&bad, err, sizeof err));
    assert_non_null(strstr(err, "ternary opcode"));
    /* comparisons in the grid code of a version 3 blob are refused */
    tilert_meta_kernel g = *k;
    g.nrequires = 0;
    g.requires = NULL;
    g.code = (const uint8_t[]){TILERT_GOP_ARG, 3, TILERT_GOP_ARG, 3, TILERT_GOP_EQ};
    g.code_len = 5;
    assert_true(tilert_meta_write(&g, 1, &w, &wlen, err, sizeof err));
    assert_int_equal(w[4], 4);
    w[4] = 3;
    fix_crc(w, wlen);
    tilert_meta m3;
    assert_false(tilert_meta_parse(w, wlen, &m3, err, sizeof err));
    assert_non_null(strstr(err, "opcode of version 4 in a version 3 blob"));
    free(w);
    tilert_meta_free(&mm);
    arena_free(&a);
    ir_module_free(m);
    diag_free(&d);
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
        cmocka_unit_test_setup_teardown(test_tma_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tma_codegen_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_compat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tma_optional, setup, teardown),
        cmocka_unit_test(test_tma_reader_rejects),
        cmocka_unit_test(test_requires),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
