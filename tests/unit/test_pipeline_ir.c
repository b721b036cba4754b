/* test_pipeline_ir.c: the IR layer of software pipelining (ir/ops.def, "Backend
 * ops"): the text of smem types and schedule annotations as the parser reads
 * them, the verifier's rules for each pipelining op, the interpreter's
 * semantics and protocol checks (a gemm pipelined by hand over shared-memory
 * stages gives the bytes the plain gemm gives; a wrong phase or a read before
 * its wait is an error at the op), and what fold/cse/dce and the layout pass do
 * with the new ops.  The gemms are tests/golden/ir_pipeline.tir. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir/fpconv.h"
#include "ir/interp.h"
#include "ir/layout.h"
#include "passes/pass.h"

/* ---- helpers ------------------------------------------------------------------ */

static Diag diag;

static void diag_reset(const char *text)
{
    diag_free(&diag);
    diag_init(&diag, "t.tir", text, text ? strlen(text) : 0, NULL, DIAG_COLOR_NEVER);
    diag.capture = true;
}

static const char *messages(void) { return diag.buf.s ? diag.buf.s : ""; }

static void expect_message(const char *needle)
{
    if (!strstr(messages(), needle)) fail_msg("expected '%s' in:\n%s", needle, messages());
}

static IrModule *parse(const char *text)
{
    diag_reset(text);
    IrModule *m = ir_parse("t.tir", text, strlen(text), &diag);
    if (!m) fail_msg("does not parse:\n%s\n--- text ---\n%s", messages(), text);
    return m;
}

static char *golden_text(void)
{
    size_t n;
    char *text = tl_read_file(TILEC_SOURCE_DIR "/tests/golden/ir_pipeline.tir", &n);
    assert_non_null(text);
    return text;
}

static IrFunc *kernel(IrModule *m, const char *name)
{
    IrFunc *f = ir_module_find(m, name);
    assert_non_null(f);
    return f;
}

static void verify_ok(IrFunc *f)
{
    diag_reset(NULL);
    if (!ir_verify(f, &diag, "test")) fail_msg("%s", messages());
}

static char *print_func(IrFunc *f)
{
    StrBuf b = {0};
    ir_print_func(&b, f);
    return b.s;
}

/* Replaces the one occurrence of `from` in text (malloc'd) by `to`. */
static char *replace_once(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at || strstr(at + 1, from)) fail_msg("'%s' is not in the text exactly once", from);
    StrBuf b = {0};
    sb_printf(&b, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return b.s;
}

/* Counts the live ops of each opcode of f. */
static void count_ops(IrFunc *f, uint32_t n[IR_NUM_OPS])
{
    memset(n, 0, sizeof(uint32_t) * IR_NUM_OPS);
    for (uint32_t i = 0; i < f->nops; i++)
        if (!f->ops[i].dead) n[f->ops[i].opc]++;
}

/* The first live op of opcode opc (in op id order, which is text order for parsed IR). */
static IrOp *first_op(IrFunc *f, IrOpcode opc, uint32_t skip)
{
    for (uint32_t i = 0; i < f->nops; i++)
        if (!f->ops[i].dead && f->ops[i].opc == opc && skip-- == 0) return &f->ops[i];
    fail_msg("no %s op", ir_opinfo[opc].name);
    return NULL;
}

/* ---- text ------------------------------------------------------------------------ */

/* The parser fills the annotation fields and the smem types, not just text. */
static void test_text_fields(void **state)
{
    (void)state;
    char *text = golden_text();
    IrModule *m = parse(text);
    IrFunc *plain = kernel(m, "gemm_plain");
    IrOp *ld = first_op(plain, IR_BLOCK_LOAD, 0);
    assert_int_equal(ld->latency, 2);
    assert_int_equal(ld->stage, 1); /* `stage = 0` */
    IrOp *dot = first_op(plain, IR_DOT, 0);
    assert_int_equal(dot->latency, 0);
    assert_int_equal(dot->stage, 3);
    assert_int_equal(dot->attr.i, 0);
    assert_int_equal(first_op(plain, IR_FOR, 0)->attr.i, 3);
    assert_int_equal(first_op(plain, IR_YIELD, 0)->stage, 3);

    IrFunc *pipe = kernel(m, "gemm_pipelined");
    assert_int_equal(first_op(pipe, IR_DOT, 0)->attr.i, 1); /* pending */
    IrOp *alloc = first_op(pipe, IR_SMEM_ALLOC, 0);
    IrType t = pipe->vals[alloc->res].ty;
    int32_t tile[2] = {16, 16};
    assert_true(ir_ty_eq(t, ir_ty_smem(DT_BF16, 3, 2, tile)));
    assert_true(ir_ty_eq(ir_ty_smem_tile(t), ir_ty_tile(DT_BF16, false, 2, tile)));
    assert_int_equal(ir_ty_numel(t), 3 * 16 * 16);

    /* smem values as if results, loop-carried values and while arguments; the
     * annotations on if, for and while */
    IrFunc *flow = kernel(m, "smem_flow");
    IrOp *iff = first_op(flow, IR_IF, 0), *loop = first_op(flow, IR_FOR, 0), *wh = first_op(flow, IR_WHILE, 0);
    assert_int_equal(flow->vals[iff->res].ty.kind, TY_SMEM);
    assert_int_equal(iff->latency, 1);
    assert_int_equal(loop->stage, 1);
    assert_int_equal(flow->vals[flow->blocks[loop->region[0]].args[1]].ty.kind, TY_SMEM);
    assert_int_equal(wh->stage, 4);
    assert_int_equal(flow->vals[flow->blocks[wh->region[1]].args[0]].ty.kind, TY_SMEM);
    IrOp *al = first_op(flow, IR_ASYNC_LOAD, 0);
    assert_int_equal(al->latency, 1);
    assert_int_equal(al->stage, 1);
    for (uint32_t i = 0; i < m->nfuncs; i++) verify_ok(m->funcs[i]);
    ir_module_free(m);
    free(text);
}

/* ---- verifier ----------------------------------------------------------------------- */

#define K(body)                                                                                              \
    "kernel @k \"k\"(%X: tensor<f32, 1>, %Y: tensor<f32, 2>, %H: tensor<f16, 1>, %f: f32) {\n"                \
    "  %buf = smem_alloc : smem<f32>[2, 64]\n"                                                                 \
    "  %0 = const 0 : i32\n" body "  return\n}\n"

static void expect_verify_error(const char *text, const char *what)
{
    IrModule *m = parse(text);
    diag_reset(NULL);
    if (ir_verify(m->funcs[0], &diag, "test")) fail_msg("expected '%s', but the kernel verifies:\n%s", what, text);
    expect_message(what);
    ir_module_free(m);
}

static void test_verify_rejects(void **state)
{
    (void)state;
    expect_verify_error(K("  %b = smem_alloc : tile<f32>[2, 64]\n"), "result is tile<f32>[2, 64], not an smem buffer");
    expect_verify_error(K("  %b = smem_alloc : smem<f32>[17, 64]\n"),
                        "a result: malformed smem type (1 to 16 stages of a tile of rank >= 1)");
    expect_verify_error(K("  %b = smem_alloc : smem<f32>[2, 48]\n"), "a result: tile dimension 1 is 48, not a power of two");
    expect_verify_error(K("  async_load %buf, %buf, %0, %0\n"), "first operand is smem<f32>[2, 64], not a tensor");
    expect_verify_error(K("  async_load %Y, %buf, %0, %0, %0\n"), "buffer is smem<f32>[2, 64], expected smem<f32> of 2-d tiles");
    expect_verify_error(K("  async_load %H, %buf, %0, %0\n"), "buffer is smem<f32>[2, 64], expected smem<f16> of 1-d tiles");
    expect_verify_error(K("  async_load %X, %buf, %0, %0, %0\n"),
                        "5 operands: expected the tensor, the buffer, the stage and 1 offsets");
    expect_verify_error(K("  async_load %X, %buf, %f, %0\n"), "operand 2 is f32, not an integer scalar");
    expect_verify_error(K("  async_wait %X, %0, %0\n"), "first operand is tensor<f32, 1>, not an smem buffer");
    expect_verify_error(K("  %t = arange : tile<i32>[64]\n  async_wait %buf, %0, %t\n"),
                        "operand 2 is tile<i32>[64], not an integer scalar");
    expect_verify_error(K("  %t = smem_read %buf, %0 : tile<f32>[32]\n"), "result is tile<f32>[32], expected tile<f32>[64]");
    expect_verify_error(K("  %t = smem_read %buf, %f : tile<f32>[64]\n"), "operand 1 is f32, not an integer scalar");
    expect_verify_error(K("  %t = smem_read %buf, %0 : tile<f32>[64]\n  %w = dot_wait %t : tile<f16>[64]\n"),
                        "result is tile<f16>[64], expected the operand's type tile<f32>[64]");
    expect_verify_error(K("  %w = dot_wait %buf : smem<f32>[2, 64]\n"), "expected the operand's type smem<f32>[2, 64]");
    expect_verify_error(K("  %t = arange : tile<i32>[64]\n  smem_write %buf, %0, %t\n"),
                        "value is tile<i32>[64], expected tile<f32>[64]");
    expect_verify_error(K("  %t = splat %f : tile<f32>[64]\n  smem_write %X, %0, %t\n"),
                        "first operand is tensor<f32, 1>, not an smem buffer");
    expect_verify_error(K("  %t = splat %f : tile<f32>[64]\n  smem_write %buf, %f, %t\n"),
                        "operand 1 is f32, not an integer scalar");
    expect_verify_error(K("  %r = tma_ready %buf : i1\n"), "operand is smem<f32>[2, 64], not a tensor");
    expect_verify_error(K("  %r = tma_ready %X : i32\n"), "result is i32, expected i1");
    expect_verify_error(K("  %z = const 0 : f32\n  %a = splat %z : tile<f32>[16, 16]\n"
                          "  %d = dot %a, %a, %a {pending = 9} : tile<f32>[16, 16]\n"),
                        "pending is 9 (0 to 8)");
    /* a carried buffer is one type all the way round the loop */
    expect_verify_error(K("  %b4 = smem_alloc : smem<f32>[4, 64]\n"
                          "  %l = for %i = %0 to %0 step %0 iter(%b = %buf) : smem<f32>[2, 64] {\n"
                          "    yield %b4\n  }\n"),
                        "the loop's yield value 0 is smem<f32>[4, 64], expected smem<f32>[2, 64]");
}

/* After the layout pass: a buffer has no layout, and a dot_wait's result has
 * its operand's. */
static void test_verify_layouts(void **state)
{
    (void)state;
    IrModule *m = parse(K("  async_load %X, %buf, %0, %0\n  async_wait %buf, %0, %0\n"
                          "  %t = smem_read %buf, %0 : tile<f32>[64]\n  %w = dot_wait %t : tile<f32>[64]\n"));
    IrFunc *f = m->funcs[0];
    f->warps = 2;
    PassCtx cx = {&diag, false};
    pass_find("layout")->run(f, &cx);
    verify_ok(f);
    IrVal buf = first_op(f, IR_SMEM_ALLOC, 0)->res, t = first_op(f, IR_SMEM_READ, 0)->res;
    IrVal w = first_op(f, IR_DOT_WAIT, 0)->res;
    assert_int_equal(f->val_layout[buf], 0);
    assert_int_not_equal(f->val_layout[t], 0);
    assert_int_equal(f->val_layout[w], f->val_layout[t]);

    f->val_layout[buf] = f->val_layout[t];
    diag_reset(NULL);
    assert_false(ir_verify(f, &diag, "test"));
    expect_message("a result (smem<f32>[2, 64]) has a layout, but only tiles of rank 1 or more have layouts");
    f->val_layout[buf] = 0;

    /* another layout of the same tile for the dot_wait: not the same registers */
    Layout other = f->layouts[f->val_layout[t]];
    uint32_t l0 = other.basis[LL_LANE][0];
    other.basis[LL_LANE][0] = other.basis[LL_LANE][1];
    other.basis[LL_LANE][1] = l0;
    assert_false(layout_eq(&other, &f->layouts[f->val_layout[t]]));
    VEC_PUSH(f->layouts, f->nlayouts, f->layoutcap, other);
    f->val_layout[w] = f->nlayouts - 1;
    diag_reset(NULL);
    assert_false(ir_verify(f, &diag, "test"));
    expect_message("a result has layout");
    expect_message("but the accumulator it waits for has layout");
    ir_module_free(m);
}

/* ---- interpreter ------------------------------------------------------------------------ */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* n bf16 values in [-2, 2) with few significant bits, none all zero. */
static uint16_t *rnd_bf16(int64_t n)
{
    uint16_t *p = tl_xmalloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = fp_to_bf16((double)((int64_t)(rnd() % 64) - 32) / 16.0 + 1.0 / 64);
    return p;
}

static InterpArg view2(uint32_t buf, int64_t rows, int64_t cols)
{
    return (InterpArg){.kind = IARG_VIEW, .buf = buf, .shape = {rows, cols}, .stride = {cols, 1}};
}

static InterpArg view1(uint32_t buf, int64_t n)
{
    return (InterpArg){.kind = IARG_VIEW, .buf = buf, .shape = {n}, .stride = {1}};
}

static bool interp(IrFunc *f, const char *text, InterpBuf *bufs, uint32_t nbufs, const InterpArg *args, uint32_t gx,
                   uint32_t gy, bool no_tma)
{
    verify_ok(f);
    diag_reset(text);
    InterpOptions opt = {.max_steps = 1u << 24, .no_tma = no_tma};
    uint32_t grid[3] = {gx, gy, 1};
    return interp_run(f, bufs, nbufs, args, grid, &opt, &diag);
}

enum { GM = 32, GN = 48 };

/* C = A @ B for A [GM, K] and B [K, GN] in bf16, by kernel `name` of m; C is
 * poisoned first, so an element left unwritten shows. */
static float *run_gemm(IrModule *m, const char *name, const char *text, int64_t K, const uint16_t *A,
                       const uint16_t *B, bool no_tma)
{
    float *C = tl_xmalloc(sizeof(float) * GM * GN);
    memset(C, 0xff, sizeof(float) * GM * GN);
    InterpBuf bufs[3] = {{(void *)A, sizeof(uint16_t) * GM * (size_t)K, "A"},
                         {(void *)B, sizeof(uint16_t) * (size_t)K * GN, "B"},
                         {C, sizeof(float) * GM * GN, "C"}};
    InterpArg args[3] = {view2(0, GM, K), view2(1, K, GN), view2(2, GM, GN)};
    if (!interp(kernel(m, name), text, bufs, 3, args, GM / 16, GN / 16, no_tma))
        fail_msg("%s (K = %lld) failed:\n%s", name, (long long)K, messages());
    return C;
}

/* The pipelined gemm gives the plain gemm's bytes: K of one iteration (fewer
 * than the prologue loads), a ragged K (the last tile reads zeros out of
 * bounds) and K of two turns round the stages (the phases flip); and so does
 * its fallback, with tma_ready false. */
static void test_pipelined_gemm_matches(void **state)
{
    (void)state;
    char *text = golden_text();
    IrModule *m = parse(text);
    const int64_t ks[] = {16, 40, 96};
    for (size_t i = 0; i < TL_COUNTOF(ks); i++) {
        int64_t K = ks[i];
        uint16_t *A = rnd_bf16(GM * K), *B = rnd_bf16(K * GN);
        float *plain = run_gemm(m, "gemm_plain", text, K, A, B, false);
        float *piped = run_gemm(m, "gemm_pipelined", text, K, A, B, false);
        float *fallback = run_gemm(m, "gemm_pipelined", text, K, A, B, true);
        bool nonzero = false;
        for (int j = 0; j < GM * GN; j++) nonzero = nonzero || (plain[j] != 0 && !isnan(plain[j]));
        assert_true(nonzero);
        assert_memory_equal(plain, piped, sizeof(float) * GM * GN);
        assert_memory_equal(plain, fallback, sizeof(float) * GM * GN);
        free(A);
        free(B);
        free(plain);
        free(piped);
        free(fallback);
    }
    ir_module_free(m);
    free(text);
}

/* Without its first wait the pipelined gemm reads a stage too early: an error
 * at that smem_read; with tma_ready false the fallback runs and nothing is read. */
static void test_read_before_wait_and_fallback(void **state)
{
    (void)state;
    char *golden = golden_text();
    char *text = replace_once(golden, "      async_wait %bufA, %st, %ph\n", "");
    IrModule *m = parse(text);
    int64_t K = 32;
    uint16_t *A = rnd_bf16(GM * K), *B = rnd_bf16(K * GN);
    float C[GM * GN];
    InterpBuf bufs[3] = {{A, sizeof(uint16_t) * GM * (size_t)K, "A"}, {B, sizeof(uint16_t) * (size_t)K * GN, "B"}, {C, sizeof C, "C"}};
    InterpArg args[3] = {view2(0, GM, K), view2(1, K, GN), view2(2, GM, GN)};
    IrFunc *f = kernel(m, "gemm_pipelined");
    assert_false(interp(f, text, bufs, 3, args, 2, 3, false));
    expect_message("error: smem_read of stage 0 before an async_wait for its latest load (program (0, 0, 0))");
    assert_true(interp(f, text, bufs, 3, args, 2, 3, true));
    free(A);
    free(B);
    ir_module_free(m);
    free(text);
    free(golden);
}

/* smem_flow: the loop loads through its carried buffer, and the waits and
 * reads after the loop (through the if, for and while results) see those
 * loads: every value of a buffer names the same buffer. */
static void test_buffer_values_alias(void **state)
{
    (void)state;
    char *text = golden_text();
    IrModule *m = parse(text);
    float X[192], Y[128];
    for (int i = 0; i < 192; i++) X[i] = (float)i + 0.5f;
    InterpBuf bufs[2] = {{X, sizeof X, "X"}, {Y, sizeof Y, "Y"}};
    InterpArg args[3] = {view1(0, 192), view1(1, 128), {.kind = IARG_SCALAR, .i = 2}};
    memset(Y, 0, sizeof Y);
    assert_true(interp(kernel(m, "smem_flow"), text, bufs, 2, args, 1, 1, false));
    assert_memory_equal(X, Y, sizeof Y);
    /* three loads: stage 0 has had two, so its next wait is for phase 1 */
    args[2].i = 3;
    assert_false(interp(kernel(m, "smem_flow"), text, bufs, 2, args, 1, 1, false));
    expect_message("error: async_wait on stage 0 with phase 0, expected 1: the stage has had 2 loads");
    /* one load: stage 1 was never filled */
    args[2].i = 1;
    assert_false(interp(kernel(m, "smem_flow"), text, bufs, 2, args, 1, 1, false));
    expect_message("error: async_wait on stage 1, which no async_load has filled");
    ir_module_free(m);
    free(text);
}

#define P(body)                                                                                              \
    "kernel @k \"k\"(%X: tensor<f32, 1>, %Y: tensor<f32, 1>) {\n"                                               \
    "  %buf = smem_alloc : smem<f32>[2, 64] loc(2:3)\n"                                                        \
    "  %0 = const 0 : i32\n"                                                                                   \
    "  %1 = const 1 : i32\n"                                                                                   \
    "  async_load %X, %buf, %0, %0 loc(5:3)\n" body "  return\n}\n"

/* Runs a P(...) kernel over X = 0, 1, ..., 127 into Y; returns whether it ran. */
static bool run_protocol(const char *text, float *Y)
{
    IrModule *m = parse(text);
    float X[128];
    for (int i = 0; i < 128; i++) X[i] = (float)i;
    InterpBuf bufs[2] = {{X, sizeof X, "X"}, {Y, 64 * sizeof(float), "Y"}};
    InterpArg args[2] = {view1(0, 128), view1(1, 64)};
    bool ok = interp(m->funcs[0], text, bufs, 2, args, 1, 1, false);
    ir_module_free(m);
    return ok;
}

static void expect_protocol_error(const char *text, const char *what)
{
    float Y[64];
    if (run_protocol(text, Y)) fail_msg("expected '%s', but the kernel ran:\n%s", what, text);
    expect_message(what);
}

/* Each broken use of a stage is an error at its op; loads, waits and reads in
 * order run, the phase alternating with each load into a stage. */
static void test_protocol_errors(void **state)
{
    (void)state;
    float Y[64];
    assert_true(run_protocol(P("  async_wait %buf, %0, %0\n"
                               "  %2 = const 64 : i32\n"
                               "  async_load %X, %buf, %0, %2\n"
                               "  async_wait %buf, %0, %1\n"
                               "  %t = smem_read %buf, %0 : tile<f32>[64]\n"
                               "  block_store %Y, %0, %t\n"),
                             Y));
    for (int i = 0; i < 64; i++) assert_true(Y[i] == (float)(64 + i));
    expect_protocol_error(P("  %t = smem_read %buf, %0 : tile<f32>[64] loc(6:8)\n"),
                          "t.tir:6:8: error: smem_read of stage 0 before an async_wait for its latest load "
                          "(program (0, 0, 0))");
    expect_protocol_error(P("  async_wait %buf, %0, %1 loc(6:3)\n"),
                          "t.tir:6:3: error: async_wait on stage 0 with phase 1, expected 0: the stage has had 1 "
                          "load, and load n completes phase (n - 1) & 1 (program (0, 0, 0))");
    expect_protocol_error(P("  async_wait %buf, %0, %0\n  async_wait %buf, %0, %0 loc(7:3)\n"),
                          "t.tir:7:3: error: async_wait on stage 0, which has had no async_load since its last wait");
    expect_protocol_error(P("  async_wait %buf, %1, %0 loc(6:3)\n"),
                          "t.tir:6:3: error: async_wait on stage 1, which no async_load has filled");
    expect_protocol_error(P("  %t = smem_read %buf, %1 : tile<f32>[64] loc(6:8)\n"),
                          "t.tir:6:8: error: smem_read of stage 1, which no async_load or smem_write has filled");
    expect_protocol_error(P("  %2 = const 2 : i32\n  async_load %X, %buf, %2, %0 loc(7:3)\n"),
                          "t.tir:7:3: error: async_load on stage 2 of a buffer with 2 stages");
    expect_protocol_error(P("  %2 = const -1 : i32\n  async_wait %buf, %2, %0 loc(7:3)\n"),
                          "t.tir:7:3: error: async_wait on stage -1 of a buffer with 2 stages");
    /* a new program (or a new smem_alloc) starts with fresh barriers */
    expect_protocol_error(P("  async_wait %buf, %0, %0\n"
                            "  %b2 = smem_alloc : smem<f32>[2, 64]\n"
                            "  %t = smem_read %b2, %0 : tile<f32>[64] loc(8:8)\n"),
                          "t.tir:8:8: error: smem_read of stage 0, which no async_load or smem_write has filled");
    /* smem_write fills a stage at once, without a barrier phase: read back in place of a load */
    assert_true(run_protocol(P("  async_wait %buf, %0, %0\n"
                               "  %t = smem_read %buf, %0 : tile<f32>[64]\n"
                               "  %c = const 2 : f32\n"
                               "  %s = splat %c : tile<f32>[64]\n"
                               "  %u = mul %t, %s : tile<f32>[64]\n"
                               "  smem_write %buf, %1, %u\n"
                               "  %v = smem_read %buf, %1 : tile<f32>[64]\n"
                               "  block_store %Y, %0, %v\n"),
                             Y));
    for (int i = 0; i < 64; i++) assert_true(Y[i] == (float)(2 * i));
    /* ... and a later load into the stage takes the phase after the loads before it */
    assert_true(run_protocol(P("  async_wait %buf, %0, %0\n"
                               "  %t = smem_read %buf, %0 : tile<f32>[64]\n"
                               "  smem_write %buf, %0, %t\n"
                               "  %2 = const 64 : i32\n"
                               "  async_load %X, %buf, %0, %2\n"
                               "  async_wait %buf, %0, %1\n"
                               "  %v = smem_read %buf, %0 : tile<f32>[64]\n"
                               "  block_store %Y, %0, %v\n"),
                             Y));
    for (int i = 0; i < 64; i++) assert_true(Y[i] == (float)(64 + i));
    expect_protocol_error(P("  %c = const 1 : f32\n  %t = splat %c : tile<f32>[64]\n  smem_write %buf, %0, %t loc(8:3)\n"),
                          "t.tir:8:3: error: smem_write on stage 0, which has an async_load in flight");
}

/* tma_ready: true, or false with InterpOptions.no_tma; barrier does nothing;
 * dot_wait gives its operand; print shows a buffer as <smem>. */
static void test_small_ops(void **state)
{
    (void)state;
    const char *text = "kernel @k \"k\"(%X: tensor<f32, 1>, %R: ptr<i32>) {\n"
                       "  %r = tma_ready %X : i1\n"
                       "  %c = cast %r : i32\n"
                       "  barrier\n"
                       "  %w = dot_wait %c : i32\n"
                       "  store %R, %w\n"
                       "  %buf = smem_alloc : smem<f32>[2, 64]\n"
                       "  print %buf {label = \"b\"}\n"
                       "  return\n}\n";
    IrModule *m = parse(text);
    float X[4] = {0};
    int32_t R = 7;
    InterpBuf bufs[2] = {{X, sizeof X, "X"}, {&R, sizeof R, "R"}};
    InterpArg args[2] = {view1(0, 4), {.kind = IARG_PTR, .buf = 1}};
    char out[64] = {0};
    FILE *pf = fmemopen(out, sizeof out, "w");
    InterpOptions opt = {.print_out = pf};
    uint32_t grid[3] = {1, 1, 1};
    verify_ok(m->funcs[0]);
    diag_reset(text);
    assert_true(interp_run(m->funcs[0], bufs, 2, args, grid, &opt, &diag));
    fclose(pf);
    assert_int_equal(R, 1);
    assert_string_equal(out, "pid (0, 0, 0) b: <smem>\n");
    opt.print_out = fopen("/dev/null", "w");
    opt.no_tma = true;
    assert_true(interp_run(m->funcs[0], bufs, 2, args, grid, &opt, &diag));
    fclose(opt.print_out);
    assert_int_equal(R, 0);
    ir_module_free(m);
}

/* ---- passes ------------------------------------------------------------------------------ */

static void run_pass(IrFunc *f, const char *name)
{
    PassCtx cx = {&diag, false};
    pass_find(name)->run(f, &cx);
    diag_reset(NULL);
    if (!ir_verify(f, &diag, name)) fail_msg("after %s:\n%s\n%s", name, messages(), print_func(f));
}

/* The canonical passes keep every pipelining op (they order shared memory and
 * barriers) and what the kernel computes. */
static void test_canonical_passes_keep_the_protocol(void **state)
{
    (void)state;
    char *text = golden_text();
    IrModule *m = parse(text), *opt = parse(text);
    IrFunc *f = kernel(opt, "gemm_pipelined");
    uint32_t before[IR_NUM_OPS], after[IR_NUM_OPS];
    count_ops(f, before);
    for (int round = 0; round < 2; round++) {
        run_pass(f, "fold");
        run_pass(f, "cse");
        run_pass(f, "dce");
    }
    count_ops(f, after);
    const IrOpcode kept[] = {IR_SMEM_ALLOC, IR_ASYNC_LOAD, IR_ASYNC_WAIT, IR_SMEM_READ, IR_BARRIER, IR_DOT_WAIT, IR_TMA_READY};
    for (size_t i = 0; i < TL_COUNTOF(kept); i++) assert_int_equal(after[kept[i]], before[kept[i]]);
    assert_int_equal(first_op(f, IR_DOT, 0)->attr.i, 1);
    int64_t K = 48;
    uint16_t *A = rnd_bf16(GM * K), *B = rnd_bf16(K * GN);
    float *want = run_gemm(m, "gemm_plain", text, K, A, B, false);
    float *got = run_gemm(opt, "gemm_pipelined", text, K, A, B, false);
    assert_memory_equal(want, got, sizeof(float) * GM * GN);
    free(A);
    free(B);
    free(want);
    free(got);
    ir_module_free(m);
    ir_module_free(opt);
    free(text);
}

/* dce keeps an unused buffer and dot_wait (memory ops) but drops an unused
 * tma_ready (pure); rebuilding a loop without its dead carried value keeps
 * the loop's schedule annotations. */
static void test_dce(void **state)
{
    (void)state;
    IrModule *m = parse("kernel @k \"k\"(%X: tensor<f32, 1>, %n: i32) {\n"
                        "  %buf = smem_alloc : smem<f32>[2, 64]\n"
                        "  %r = tma_ready %X : i1\n"
                        "  %0 = const 0 : i32\n"
                        "  %1 = const 1 : i32\n"
                        "  %w = dot_wait %0 : i32\n"
                        "  %10:2 = for %i = %0 to %n step %1 iter(%b = %buf, %c = %0) {latency = 2, stage = 1} : "
                        "smem<f32>[2, 64], i32 {\n"
                        "    async_load %X, %b, %0, %i\n"
                        "    %c2 = add %c, %i : i32\n"
                        "    yield %b, %c2\n"
                        "  }\n"
                        "  return\n}\n");
    IrFunc *f = m->funcs[0];
    run_pass(f, "dce");
    uint32_t n[IR_NUM_OPS];
    count_ops(f, n);
    assert_int_equal(n[IR_SMEM_ALLOC], 1);
    assert_int_equal(n[IR_DOT_WAIT], 1);
    assert_int_equal(n[IR_TMA_READY], 0);
    assert_int_equal(n[IR_ADD], 0);
    IrOp *loop = first_op(f, IR_FOR, 0);
    assert_int_equal(loop->nres, 1); /* the buffer stays carried: async_load uses it */
    assert_int_equal(f->vals[loop->res].ty.kind, TY_SMEM);
    assert_int_equal(loop->latency, 2);
    assert_int_equal(loop->stage, 2);
    ir_module_free(m);
}

/* cse merges equal tma_ready queries, but not dots of different pending counts
 * nor equal ops the scheduler put in different stages. */
static void test_cse(void **state)
{
    (void)state;
    IrModule *m = parse("kernel @k \"k\"(%X: tensor<f32, 1>, %C: ptr<f32>, %R: ptr<i1>, %n: i32) {\n"
                        "  %r1 = tma_ready %X : i1\n"
                        "  %r2 = tma_ready %X : i1\n"
                        "  %ok = and %r1, %r2 : i1\n"
                        "  store %R, %ok\n"
                        "  %z = const 0 : f32\n"
                        "  %a = splat %z : tile<f32>[16, 16]\n"
                        "  %d1 = dot %a, %a, %a : tile<f32>[16, 16]\n"
                        "  %d2 = dot %a, %a, %a {pending = 1} : tile<f32>[16, 16]\n"
                        "  %s = add %d1, %d2 : tile<f32>[16, 16]\n"
                        "  %x = reduce_sum %s {axis = 0} : tile<f32>[16]\n"
                        "  %y = reduce_sum %x {axis = 0} : f32\n"
                        "  store %C, %y\n"
                        "  %m1 = add %n, %n {stage = 0} : i32\n"
                        "  %m2 = add %n, %n {stage = 1} : i32\n"
                        "  %m3 = add %n, %n {stage = 1} : i32\n"
                        "  %m = add %m1, %m2 : i32\n"
                        "  %mm = add %m, %m3 : i32\n"
                        "  %f = cast %mm : f32\n"
                        "  store %C, %f\n"
                        "  return\n}\n");
    IrFunc *f = m->funcs[0];
    run_pass(f, "cse");
    uint32_t n[IR_NUM_OPS];
    count_ops(f, n);
    assert_int_equal(n[IR_TMA_READY], 1);
    assert_int_equal(n[IR_DOT], 2);
    assert_int_equal(n[IR_ADD], 5); /* %m3 joins %m2; %m1 stays apart */
    ir_module_free(m);
}

/* sm_90a: the loop-carried accumulator of a dot left in flight is the wgmma
 * accumulator in the loop, after it and through dot_wait, and the stage
 * reads take the block loads' default layout: no conversion anywhere. */
static void test_layout_accumulator(void **state)
{
    (void)state;
    IrModule *m = parse("kernel @k \"k\"(%A: tensor<bf16, 2>, %C: tensor<f32, 2>, %n: i32) warps(4) {\n"
                        "  %buf = smem_alloc : smem<bf16>[2, 64, 64]\n"
                        "  %0 = const 0 : i32\n"
                        "  %1 = const 1 : i32\n"
                        "  %z = const 0 : f32\n"
                        "  %acc0 = splat %z : tile<f32>[64, 64]\n"
                        "  %l = for %i = %0 to %n step %1 iter(%acc = %acc0) : tile<f32>[64, 64] {\n"
                        "    async_load %A, %buf, %0, %0, %0\n"
                        "    async_wait %buf, %0, %0\n"
                        "    %a = smem_read %buf, %0 : tile<bf16>[64, 64]\n"
                        "    %d = dot %a, %a, %acc {pending = 1} : tile<f32>[64, 64]\n"
                        "    yield %d\n"
                        "  }\n"
                        "  %w = dot_wait %l : tile<f32>[64, 64]\n"
                        "  block_store %C, %0, %0, %w\n"
                        "  return\n}\n");
    m->target = ir_target_find("sm_90a");
    IrFunc *f = m->funcs[0];
    IrType acc = ir_ty_tile(DT_F32, false, 2, (int32_t[]){64, 64}), a = ir_ty_tile(DT_BF16, false, 2, (int32_t[]){64, 64});
    WgmmaShape ws;
    assert_true(layout_wgmma_shape(m->target, a, a, 4, &ws));
    Layout wg = layout_wgmma_acc(acc, ws.wgm, ws.wgn, ws.instr_n), def = layout_default(a, 4);
    run_pass(f, "layout");
    IrOp *loop = first_op(f, IR_FOR, 0);
    IrVal vals[] = {first_op(f, IR_DOT, 0)->res, loop->res, f->blocks[loop->region[0]].args[1],
                    first_op(f, IR_DOT_WAIT, 0)->res};
    for (size_t i = 0; i < TL_COUNTOF(vals); i++) assert_true(layout_eq(&f->layouts[f->val_layout[vals[i]]], &wg));
    assert_true(layout_eq(&f->layouts[f->val_layout[first_op(f, IR_SMEM_READ, 0)->res]], &def));
    assert_int_equal(f->val_layout[first_op(f, IR_SMEM_ALLOC, 0)->res], 0);
    uint32_t n[IR_NUM_OPS];
    count_ops(f, n);
    assert_int_equal(n[IR_CONVERT_LAYOUT], 0);
    ir_module_free(m);
}

static int teardown(void **state)
{
    (void)state;
    diag_free(&diag);
    return 0;
}

int main(void)
{
    diag_reset(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_fields),
        cmocka_unit_test(test_verify_rejects),
        cmocka_unit_test(test_verify_layouts),
        cmocka_unit_test(test_pipelined_gemm_matches),
        cmocka_unit_test(test_read_before_wait_and_fallback),
        cmocka_unit_test(test_buffer_values_alias),
        cmocka_unit_test(test_protocol_errors),
        cmocka_unit_test(test_small_ops),
        cmocka_unit_test(test_canonical_passes_keep_the_protocol),
        cmocka_unit_test(test_dce),
        cmocka_unit_test(test_cse),
        cmocka_unit_test(test_layout_accumulator),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
