/* test_irtext.c: the textual IR.  Print -> parse -> print is byte-identical
 * (for IR built with the builder, for every golden .tir file, for broken IR);
 * float constants survive exactly; every malformed input gives one located
 * error and no module, and never crashes (every prefix of a valid program). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/scalar.h"

/* ---- helpers ---------------------------------------------------------------- */

static char *print_module(const IrModule *m)
{
    StrBuf b = {0};
    ir_print_module(&b, m);
    return b.s;
}

/* Parses text; returns the module (NULL on error) and the captured diagnostics in *msgs. */
static IrModule *parse_text(const char *text, char **msgs)
{
    Diag d;
    diag_init(&d, "t.tir", text, strlen(text), NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    IrModule *m = ir_parse("t.tir", text, strlen(text), &d);
    if (msgs) *msgs = tl_xstrdup(d.buf.s ? d.buf.s : "");
    diag_free(&d);
    return m;
}

/* print(m) parses back, and printing that gives the same bytes. */
static void assert_round_trip(const IrModule *m)
{
    char *first = print_module(m);
    char *msgs = NULL;
    IrModule *again = parse_text(first, &msgs);
    if (!again) fail_msg("printed IR does not parse:\n%s\n--- text ---\n%s", msgs, first);
    char *second = print_module(again);
    assert_string_equal(first, second);
    free(first);
    free(second);
    free(msgs);
    ir_module_free(again);
}

static void expect_error(const char *text, const char *where_and_what)
{
    char *msgs = NULL;
    IrModule *m = parse_text(text, &msgs);
    if (m) fail_msg("expected an error '%s', but the input parsed:\n%s", where_and_what, text);
    if (!strstr(msgs, where_and_what)) fail_msg("expected '%s' in:\n%s", where_and_what, msgs);
    free(msgs);
}

/* ---- IR built with the builder ---------------------------------------------- */

/* A kernel touching every printing path: header parts, colliding parameter
 * names, float specials, cmp, attributes, strings, multi-result ops, for with
 * stages and carried values, if, while, schedule annotations, smem buffers
 * and the pipelining ops, a grid. */
static IrModule *build_sample(void)
{
    IrModule *m = ir_module_new("sample \"quoted\".tile");
    IrFunc *f = ir_func_new(m, "sample__T_bf16", "sample", (SrcLoc){1, 1});
    ir_func_add_spec(f, "T", "bf16");
    ir_func_add_spec(f, "BM", "128");
    f->warps = 8;
    IrVal x = ir_func_add_param(f, "x", ir_ty_ptr(DT_F32));
    IrVal x2 = ir_func_add_param(f, "x", ir_ty_scalar(DT_I32));
    ir_func_add_param(f, "x_1", ir_ty_scalar(DT_I64));
    IrVal view = ir_func_add_param(f, "9lives", ir_ty_view(DT_BF16, 2));
    IrBuilder b = {0};
    ir_builder_at_end(&b, f, f->body);
    b.loc = (SrcLoc){2, 5};
    IrVal zero = ir_const_int(&b, DT_I32, 0);
    IrVal one = ir_const_int(&b, DT_I32, 1);
    ir_const_int(&b, DT_I64, INT64_MIN);
    ir_const_float(&b, DT_F32, -0.0);
    ir_const_float(&b, DT_F64, DBL_MIN / 4); /* subnormal */
    ir_const_float(&b, DT_F64, 0.1);
    ir_const_float(&b, DT_F16, INFINITY);
    ir_const_float(&b, DT_F32, NAN);
    IrVal fz = ir_const_float(&b, DT_F32, 1.0 / 3.0);
    IrVal lt = ir_cmp(&b, CMP_LT, zero, x2);

    int32_t d16[1] = {16};
    IrVal r = ir_build1(&b, IR_ARANGE, NULL, 0, ir_ty_tile(DT_I32, false, 1, d16), NULL);
    IrVal tf = ir_build1(&b, IR_SPLAT, &fz, 1, ir_ty_tile(DT_F32, false, 1, d16), NULL);
    IrAttr a = {0};
    a.i = 0;
    a.j = 4;
    IrType topk_ty[2] = {ir_ty_tile(DT_F32, false, 1, (int32_t[]){4}), ir_ty_tile(DT_I32, false, 1, (int32_t[]){4})};
    ir_build(&b, IR_TOPK, &tf, 1, topk_ty, 2, &a);
    memset(&a, 0, sizeof a);
    a.j = 1;
    ir_build1(&b, IR_SORT, &tf, 1, ir_vty(f, tf), &a);
    memset(&a, 0, sizeof a);
    a.str = ir_module_str(m, "tab\there \"q\" \\ \x7f end", 21);
    IrVal pr[2] = {r, tf};
    ir_build(&b, IR_PRINT, pr, 2, NULL, 0, &a);

    /* for with two carried values and 3 stages */
    IrVal fo[5] = {zero, x2, one, tf, zero};
    IrType fr[2] = {ir_vty(f, tf), ir_ty_scalar(DT_I32)};
    memset(&a, 0, sizeof a);
    a.i = 3;
    uint32_t loop = ir_build(&b, IR_FOR, fo, 5, fr, 2, &a);
    f->ops[loop].latency = 3;
    f->ops[loop].stage = 2;
    IrBlk body = f->ops[loop].region[0];
    IrVal iv = ir_block_add_arg(f, body, ir_ty_scalar(DT_I32));
    IrVal acc = ir_block_add_arg(f, body, fr[0]);
    IrVal cnt = ir_block_add_arg(f, body, fr[1]);
    IrBuilder lb = {0};
    ir_builder_at_end(&lb, f, body);
    lb.loc = (SrcLoc){4, 9};
    IrVal acc2 = ir_binary(&lb, IR_ADD, acc, acc);
    IrVal cnt2 = ir_binary(&lb, IR_ADD, cnt, iv);
    f->ops[f->vals[cnt2].def].stage = 1;
    IrVal ys[2] = {acc2, cnt2};
    f->ops[ir_build(&lb, IR_YIELD, ys, 2, NULL, 0, NULL)].stage = 255;
    IrVal res0 = f->ops[loop].res;

    /* if with one result */
    IrType i32 = ir_ty_scalar(DT_I32);
    uint32_t br = ir_build(&b, IR_IF, &lt, 1, &i32, 1, NULL);
    f->ops[br].latency = 255;
    IrBlk th = f->ops[br].region[0], el = f->ops[br].region[1];
    IrBuilder tb = {0};
    ir_builder_at_end(&tb, f, th);
    ir_build(&tb, IR_YIELD, &one, 1, NULL, 0, NULL);
    ir_builder_at_end(&tb, f, el);
    IrVal neg = ir_unary(&tb, IR_NEG, x2);
    ir_build(&tb, IR_YIELD, &neg, 1, NULL, 0, NULL);

    /* while (%a = %x2) : i32 { condition } do (%b: i32) { yield } */
    uint32_t wh = ir_build(&b, IR_WHILE, &x2, 1, &i32, 1, NULL);
    f->ops[wh].stage = 1;
    IrBlk before = f->ops[wh].region[0], after = f->ops[wh].region[1];
    IrVal wa = ir_block_add_arg(f, before, i32);
    IrVal wb = ir_block_add_arg(f, after, i32);
    ir_builder_at_end(&tb, f, before);
    IrVal c = ir_cmp(&tb, CMP_GT, wa, zero);
    IrVal co[2] = {c, wa};
    ir_build(&tb, IR_CONDITION, co, 2, NULL, 0, NULL);
    ir_builder_at_end(&tb, f, after);
    IrVal dec = ir_binary(&tb, IR_SUB, wb, one);
    ir_build(&tb, IR_YIELD, &dec, 1, NULL, 0, NULL);

    /* a stage of an smem buffer loaded, waited for and read, a dot left in
     * flight and its wait */
    int32_t ta[2] = {64, 32}, tbk[2] = {32, 16}, tc[2] = {64, 16};
    IrVal bufa = ir_build1(&b, IR_SMEM_ALLOC, NULL, 0, ir_ty_smem(DT_BF16, 4, 2, ta), NULL);
    IrVal bufb = ir_build1(&b, IR_SMEM_ALLOC, NULL, 0, ir_ty_smem(DT_BF16, 1, 2, tbk), NULL);
    IrVal lo[5] = {view, bufa, one, zero, x2};
    uint32_t ld = ir_build(&b, IR_ASYNC_LOAD, lo, 5, NULL, 0, NULL);
    f->ops[ld].latency = 2;
    f->ops[ld].stage = 1;
    IrVal wt[3] = {bufa, one, zero};
    ir_build(&b, IR_ASYNC_WAIT, wt, 3, NULL, 0, NULL);
    IrVal ra = ir_build1(&b, IR_SMEM_READ, wt, 2, ir_ty_tile(DT_BF16, false, 2, ta), NULL);
    IrVal rb = ir_build1(&b, IR_SMEM_READ, (IrVal[]){bufb, zero}, 2, ir_ty_tile(DT_BF16, false, 2, tbk), NULL);
    ir_build(&b, IR_BARRIER, NULL, 0, NULL, 0, NULL);
    IrType tct = ir_ty_tile(DT_F32, false, 2, tc);
    IrVal c0 = ir_build1(&b, IR_SPLAT, &fz, 1, tct, NULL);
    memset(&a, 0, sizeof a);
    a.i = 2;
    IrVal dt = ir_build1(&b, IR_DOT, (IrVal[]){ra, rb, c0}, 3, tct, &a);
    ir_build1(&b, IR_DOT_WAIT, &dt, 1, tct, NULL);
    ir_build1(&b, IR_TMA_READY, &view, 1, ir_ty_scalar(DT_I1), NULL);

    IrVal st[2] = {x, fz};
    ir_build(&b, IR_STORE, st, 2, NULL, 0, NULL);
    (void)res0;
    b.loc = (SrcLoc){0, 0};
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);

    IrBlk g = ir_func_make_grid(f);
    IrBuilder gb = {0};
    ir_builder_at_end(&gb, f, g);
    IrVal gx = f->blocks[g].args[1];
    ir_build(&gb, IR_YIELD, &gx, 1, NULL, 0, NULL);

    /* a second kernel with a symbol that needs quoting */
    IrFunc *h = ir_func_new(m, "weird name-1", "weird", (SrcLoc){0, 0});
    ir_builder_at_end(&b, h, h->body);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    return m;
}

static void test_builder_round_trip(void **state)
{
    (void)state;
    IrModule *m = build_sample();
    assert_round_trip(m);
    char *text = print_module(m);
    /* spot checks of the shape of the text */
    assert_non_null(strstr(text, "// tilec IR: file \"sample \\\"quoted\\\".tile\"\n"));
    assert_non_null(strstr(text, "kernel @sample__T_bf16 \"sample\"(%x: ptr<f32>, %x_1: i32, %x_1_1: i64, "
                                 "%arg: tensor<bf16, 2>) spec(T = \"bf16\", BM = \"128\") warps(8) loc(1:1) {\n"));
    assert_non_null(strstr(text, "%3 = const -0 : f32 loc(2:5)\n"));
    assert_non_null(strstr(text, "%5 = const 0.1 : f64 loc(2:5)\n"));
    assert_non_null(strstr(text, "%6 = const inf : f16 loc(2:5)\n"));
    assert_non_null(strstr(text, "%7 = const nan : f32 loc(2:5)\n"));
    assert_non_null(strstr(text, "%9 = cmp lt %0, %x_1 : i1 loc(2:5)\n"));
    assert_non_null(strstr(text, "%12:2 = topk %11 {axis = 0, k = 4} : tile<f32>[4], tile<i32>[4] loc(2:5)\n"));
    assert_non_null(strstr(text, "{axis = 0, descending = true}"));
    assert_non_null(strstr(text, "{label = \"tab\\there \\\"q\\\" \\\\ \\x7f end\"}"));
    assert_non_null(strstr(text, "%15:2 = for %17 = %0 to %x_1 step %1 iter(%18 = %11, %19 = %0) {stages = 3, "
                                 "latency = 3, stage = 1} : tile<f32>[16], i32 loc(2:5) {\n"));
    assert_non_null(strstr(text, "%21 = add %19, %17 {stage = 0} : i32 loc(4:9)\n"));
    assert_non_null(strstr(text, "    yield %20, %21 {stage = 254} loc(4:9)\n"));
    assert_non_null(strstr(text, "%22 = if %9 {latency = 255} : i32 loc(2:5) {\n"));
    assert_non_null(strstr(text, "%24 = while (%25 = %x_1) {stage = 0} : i32 loc(2:5) {\n"));
    assert_non_null(strstr(text, "%29 = smem_alloc : smem<bf16>[4, 64, 32] loc(2:5)\n"));
    assert_non_null(strstr(text, "  async_load %arg, %29, %1, %0, %x_1 {latency = 2, stage = 0} loc(2:5)\n"));
    assert_non_null(strstr(text, "  async_wait %29, %1, %0 loc(2:5)\n"));
    assert_non_null(strstr(text, "%31 = smem_read %29, %1 : tile<bf16>[64, 32] loc(2:5)\n"));
    assert_non_null(strstr(text, "  barrier loc(2:5)\n"));
    assert_non_null(strstr(text, "%34 = dot %31, %32, %33 {pending = 2} : tile<f32>[64, 16] loc(2:5)\n"));
    assert_non_null(strstr(text, "%35 = dot_wait %34 : tile<f32>[64, 16] loc(2:5)\n"));
    assert_non_null(strstr(text, "%36 = tma_ready %arg : i1 loc(2:5)\n"));
    assert_non_null(strstr(text, "  } else {\n"));
    assert_non_null(strstr(text, "} do (%"));
    assert_non_null(strstr(text, "  return\n} grid {\n  yield %x_1\n}\n"));
    assert_non_null(strstr(text, "kernel @\"weird name-1\" \"weird\"() {\n"));
    free(text);
    ir_module_free(m);
}

static void test_float_constants_exact(void **state)
{
    (void)state;
    const double vals[] = {0.0, -0.0, 0.1, -2.5e-7, 1.0 / 3.0, DBL_MAX, -DBL_MAX, DBL_MIN, DBL_MIN / 1024,
                           DBL_TRUE_MIN, 65504.0, 448.0, 3.4028234663852886e38, 1e23, 123456789012345678.0};
    IrModule *m = ir_module_new("f.tile");
    IrFunc *f = ir_func_new(m, "k", "k", (SrcLoc){0, 0});
    IrBuilder b = {0};
    ir_builder_at_end(&b, f, f->body);
    for (size_t i = 0; i < TL_COUNTOF(vals); i++) ir_const_float(&b, DT_F64, vals[i]);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    char *text = print_module(m);
    IrModule *again = parse_text(text, NULL);
    assert_non_null(again);
    IrFunc *g = again->funcs[0];
    for (size_t i = 0; i < TL_COUNTOF(vals); i++) {
        double got = g->ops[g->blocks[g->body].ops[i]].attr.f;
        assert_memory_equal(&got, &vals[i], sizeof got); /* bit-exact: keeps -0's sign */
    }
    free(text);
    ir_module_free(m);
    ir_module_free(again);
}

/* Every float constant keeps every bit of its value through print -> parse, in
 * every float dtype: every fp8, f16 and bf16 bit pattern, and f32/f64 NaNs of
 * both signs with payloads (quiet; f64 signaling too), infinities, zeros,
 * subnormals and random patterns.  The value is what the interpreter holds:
 * ir_scalar_from_bits of the pattern. */
static void check_float_bits(DType dt, const uint64_t *bits, size_t n)
{
    IrModule *m = ir_module_new("f.tile");
    IrFunc *f = ir_func_new(m, "k", "k", (SrcLoc){0, 0});
    IrBuilder b = {0};
    ir_builder_at_end(&b, f, f->body);
    double *want = tl_xmalloc(n * sizeof *want);
    for (size_t i = 0; i < n; i++) {
        want[i] = ir_scalar_from_bits(dt, bits[i]).f;
        ir_const_float(&b, dt, want[i]);
    }
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    assert_round_trip(m);
    char *text = print_module(m);
    char *msgs = NULL;
    IrModule *again = parse_text(text, &msgs);
    if (!again) fail_msg("%s constants do not parse: %s", dt_name[dt], msgs);
    IrFunc *g = again->funcs[0];
    for (size_t i = 0; i < n; i++) {
        double got = g->ops[g->blocks[g->body].ops[i]].attr.f;
        if (memcmp(&got, &want[i], sizeof got) != 0)
            fail_msg("%s 0x%llx: printed, it reads back as bits 0x%llx", dt_name[dt], (unsigned long long)bits[i],
                     (unsigned long long)ir_scalar_bits(dt, (IrScalar){.f = got}));
    }
    free(want);
    free(text);
    free(msgs);
    ir_module_free(m);
    ir_module_free(again);
}

static void test_float_constants_every_bit(void **state)
{
    (void)state;
    static uint64_t all[1 << 16];
    for (uint64_t v = 0; v < (1u << 16); v++) all[v] = v;
    check_float_bits(DT_F8E4M3, all, 256);
    check_float_bits(DT_F8E5M2, all, 256);
    check_float_bits(DT_F16, all, 1u << 16);
    check_float_bits(DT_BF16, all, 1u << 16);
    uint64_t f32[4096] = {0x7fc00000, 0xffc00000, 0x7fc12345, 0xffffffff, 0x7fffffff, 0xffc00001, 0x7f800000,
                          0xff800000, 0x80000000, 0x00000001, 0x807fffff, 0x7f7fffff, 0x3eaaaaab};
    uint64_t f64[4096] = {0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000001ull,
                          0xfff123456789abcdull, 0xffffffffffffffffull, 0x7ff0000000000000ull,
                          0x8000000000000000ull, 0x0000000000000001ull, 0x3fb999999999999aull};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 16; i < 4096; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        f64[i] = x;
        /* half of them NaNs with random payloads and signs */
        f32[i] = (i & 1) ? (uint32_t)x : ((uint32_t)x | 0x7fc00000u);
        if (!(i & 2)) f64[i] |= 0x7ff0000000000000ull;
    }
    check_float_bits(DT_F32, f32, 4096);
    check_float_bits(DT_F64, f64, 4096);
    /* the bits of a float constant must fit its type */
    expect_error("kernel @k \"k\"() {\n  %0 = const 0x1ff : f8e4m3\n  return\n}\n", "t.tir:2:14: error: float constant");
    expect_error("kernel @k \"k\"() {\n  %0 = const 0x10000 : f16\n  return\n}\n", "has more than the 16 bits of f16");
    expect_error("kernel @k \"k\"() {\n  %0 = const 0x1 : i32\n  return\n}\n", "expected an integer constant");
}

/* IR the verifier rejects (a region argument typed unlike its initial value)
 * still prints faithfully and round-trips. */
static void test_broken_ir_round_trip(void **state)
{
    (void)state;
    const char *src = "kernel @k \"k\"(%n: i64) {\n"
                      "  %0 = const 0 : i64\n"
                      "  %1 = const 0 : i32\n"
                      "  %2 = for %3: i32 = %0 to %n step %n iter(%4: i64 = %1) : i32 {\n"
                      "    yield %4\n"
                      "  }\n"
                      "  return\n"
                      "}\n";
    IrModule *m = parse_text(src, NULL);
    assert_non_null(m);
    IrFunc *f = m->funcs[0];
    IrBlk body = f->ops[f->blocks[f->body].ops[2]].region[0];
    assert_int_equal(f->vals[f->blocks[body].args[0]].ty.dt, DT_I32);
    assert_int_equal(f->vals[f->blocks[body].args[1]].ty.dt, DT_I64);
    char *text = print_module(m);
    assert_non_null(strstr(text, src)); /* after the header line, identical to the input */
    assert_round_trip(m);
    free(text);
    ir_module_free(m);
}

static void test_header_sets_file(void **state)
{
    (void)state;
    IrModule *m = parse_text("// tilec IR: file \"dir/a\\\"b.tile\" (rest ignored)\n\nkernel @k \"k\"() {\n  return\n}\n", NULL);
    assert_non_null(m);
    assert_string_equal(m->file, "dir/a\"b.tile");
    ir_module_free(m);
    m = parse_text("kernel @k \"k\"() {\n  return\n}\n", NULL);
    assert_non_null(m);
    assert_string_equal(m->file, "t.tir");
    ir_module_free(m);
}

/* Every golden .tir file: parse, print, parse, print; the two prints agree. */
static void test_golden_files_round_trip(void **state)
{
    (void)state;
    const char *dir = TILEC_SOURCE_DIR "/tests/golden";
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".tir") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t sz;
        char *text = tl_read_file(path, &sz);
        assert_non_null(text);
        char *msgs = NULL;
        IrModule *m = parse_text(text, &msgs);
        if (!m) fail_msg("%s does not parse:\n%s", path, msgs);
        assert_round_trip(m);
        ir_module_free(m);
        free(msgs);
        free(text);
        n++;
    }
    closedir(dp);
    assert_true(n >= 8);
}

/* ---- errors --------------------------------------------------------------------- */

#define K(body) "kernel @k \"k\"(%x: i32, %p: ptr<f32>) {\n" body "  return\n}\n"

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error(K("  %0 = ad %x, %x : i32\n"), "t.tir:2:8: error: unknown op 'ad'");
    expect_error(K("  %0 = ad %x, %x : i32\n"), "note: did you mean 'add'?");
    expect_error(K("  %0 = add %x : i32\n"), "t.tir:2:8: error: 'add' takes 2 operands, not 1");
    expect_error(K("  %0 = load : f32\n"), "t.tir:2:8: error: 'load' takes 1 to 3 operands, not 0");
    expect_error(K("  %0 = add %x, %y : i32\n"), "t.tir:2:16: error: use of undefined value '%y'");
    expect_error(K("  %0 = add %x, %x : i33\n"), "t.tir:2:21: error: expected a type, found 'i33'");
    expect_error(K("  %0 = splat %x : tile<i32>[0]\n"), "t.tir:2:29: error: a tile dimension out of range: 0");
    expect_error(K("  %0 = splat %x : tile<i32>[2, 2, 2, 2, 2]\n"), "error: a tile has at most 4 dimensions");
    expect_error(K("  %0 = splat %x : tile<i32[2]\n"), "t.tir:2:27: error: expected '>', found '['");
    expect_error(K("  %0 = add %x, %x : i32\n  %0 = add %x, %x : i32\n"),
                 "t.tir:3:3: error: redefinition of value '%0'");
    expect_error(K("  %0 = add %x, %x : i32\n  %0 = add %x, %x : i32\n"), "t.tir:2:3: note: previous definition is here");
    expect_error("kernel @k \"k\"(%x: i32, %x: i32) {\n  return\n}\n", "t.tir:1:24: error: redefinition of value '%x'");
    expect_error(K("  %0 = add %x, %x\n"), "t.tir:3:3: error: expected ':' and 1 result type, found 'return'");
    expect_error(K("  %0 = add %x, %x : i32, i32\n"), "t.tir:2:26: error: more result types than the 1 result named");
    expect_error(K("  %0:2 = topk %x {axis = 0, k = 1} : i32\n"), "t.tir:2:10: error: 2 results named but only 1 type given");
    expect_error(K("  %0 = store %p, %x\n"), "t.tir:2:8: error: 'store' has 0 results, not 1");
    expect_error(K("  store %p, %x : f32\n"), "t.tir:2:16: error: 'store' here has no results, so no result types");
    expect_error(K("  %a:2 = topk %x {axis = 0, k = 1} : i32, i32\n"), "error: only a numbered value can name several results");
    expect_error(K("  %0 = reduce_sum %x : i32\n"), "t.tir:2:22: error: 'reduce_sum' needs the attribute 'axis'");
    expect_error(K("  %0 = add %x, %x {axis = 1} : i32\n"), "t.tir:2:20: error: 'add' has no attribute 'axis'");
    expect_error(K("  %0 = sort %x {axis = 0, axis = 1} : i32\n"), "error: attribute 'axis' given twice");
    expect_error(K("  %0 = sort %x {axis = 0, descending = 2} : i32\n"), "error: expected 'true' or 'false', found '2'");
    expect_error(K("  %0 = trans %x {perm = [0, 1, 2, 3, 0]} : i32\n"), "error: a permutation has at most 4 entries");
    expect_error(K("  %0 = const 99999999999999999999 : i64\n"), "t.tir:2:14: error: integer constant out of range");
    expect_error(K("  %0 = const 1.5 : i32\n"), "t.tir:2:14: error: expected an integer constant for type i32, found '1.5'");
    expect_error(K("  %0 = const nan : i32\n"), "error: expected an integer constant for type i32, found 'nan'");
    expect_error(K("  %0 = const 12abc : i32\n"), "t.tir:2:14: error: malformed number");
    expect_error(K("  %0 = cmp less %x, %x : i1\n"), "t.tir:2:12: error: expected a predicate (eq ne lt le gt ge), found 'less'");
    expect_error(K("  print {label = \"abc}\n"), "t.tir:2:18: error: unterminated string");
    expect_error(K("  print {label = \"a\\qb\"}\n"), "t.tir:2:20: error: unknown escape sequence in a string");
    expect_error(K("  print {label = \"a\\x00\"}\n"), "error: '\\x00' is not allowed in a string");
    expect_error(K("  %0 = add %?3, %x : i32\n"), "t.tir:2:12: error: expected a value name after '%'");
    expect_error(K("  %0 = add %x, %x : i32 loc(3)\n"), "t.tir:2:30: error: expected ':', found ')'");
    expect_error(K("  %0 = add %x, %x : i32 ;\n"), "t.tir:2:25: error: unexpected character ';'");
    expect_error(K("  %0 = add %x, %x : i32 \x01\n"), "t.tir:2:25: error: unexpected byte 0x01");
    expect_error("kernel @k \"k\"() {\n  return\n}\nkernel @k \"k2\"() {\n  return\n}\n",
                 "t.tir:4:8: error: kernel '@k' defined twice");
    expect_error("func @k \"k\"() {\n}\n", "t.tir:1:1: error: expected 'kernel', found 'func'");
    expect_error("kernel @k \"k\"() warps(0) {\n  return\n}\n", "t.tir:1:23: error: a warp count out of range: 0");
    /* scopes: a region's values are not visible after it, an op's results not inside its regions */
    expect_error(K("  %c = cmp lt %x, %x : i1\n"
                   "  %r = if %c : i32 {\n    %in = add %x, %x : i32\n    yield %in\n  } else {\n    yield %in\n  }\n"),
                 "t.tir:7:11: error: value '%in' is not visible here");
    expect_error(K("  %c = cmp lt %x, %x : i1\n  %r = if %c : i32 {\n    yield %r\n  } else {\n    yield %x\n  }\n"),
                 "t.tir:4:11: error: use of undefined value '%r'");
    expect_error(K("  for %i = %x to %x step %x {\n    yield\n  }\n  %1 = add %i, %i : i32\n"),
                 "t.tir:5:12: error: value '%i' is not visible here");
    /* the grid sees only the parameters */
    expect_error("kernel @k \"k\"(%n: i32) {\n  %a = add %n, %n : i32\n  return\n} grid {\n  yield %a\n}\n",
                 "t.tir:5:9: error: use of undefined value '%a'");
    expect_error(K("  if %x {\n    yield\n  }\n"), "t.tir:5:3: error: expected 'else', found 'return'");
    expect_error(K("  %0 = while (%a = %x) : i32 {\n    condition %a, %a\n  } (%b: i32) {\n    yield %b\n  }\n"),
                 "t.tir:4:5: error: expected 'do', found '('");
    expect_error(K("  %0 = for %i = %x to %x {\n    yield\n  }\n"), "t.tir:2:26: error: expected 'step', found '{'");
    /* smem types and schedule annotations */
    expect_error(K("  %0 = smem_alloc : smem<f32>[4]\n"),
                 "t.tir:2:32: error: an smem buffer has a stage count and at least one tile dimension");
    expect_error(K("  %0 = smem_alloc : smem<f32>[2, 2, 2, 2, 2]\n"),
                 "t.tir:2:43: error: an smem buffer has a stage count and at most 3 tile dimensions");
    expect_error(K("  %0 = smem_alloc : smem<f32>[0, 4]\n"), "t.tir:2:31: error: a stage count out of range: 0");
    expect_error(K("  %0 = smem_alloc : smem<f32>[2, 0]\n"), "t.tir:2:34: error: a tile dimension out of range: 0");
    expect_error(K("  %0 = smem_alloc : smem<ptr<f32>>[2, 4]\n"),
                 "t.tir:2:26: error: expected an element type (i1 ... f64), found 'ptr'");
    expect_error(K("  %0 = add %x, %x {latency = 256} : i32\n"), "t.tir:2:30: error: a latency (0-255) out of range: 256");
    expect_error(K("  %0 = add %x, %x {stage = 255} : i32\n"), "t.tir:2:28: error: a stage (0-254) out of range: 255");
    expect_error(K("  %0 = add %x, %x {stage = -1} : i32\n"), "t.tir:2:28: error: a stage (0-254) out of range: -1");
    expect_error(K("  %0 = add %x, %x {stage = 0, stage = 1} : i32\n"), "t.tir:2:31: error: attribute 'stage' given twice");
    expect_error(K("  %0 = add %x, %x {latency = x} : i32\n"), "error: expected a latency (0-255), found 'x'");
    expect_error(K("  %0 = reduce_sum %x {stage = 1} : i32\n"), "'reduce_sum' needs the attribute 'axis'");
    expect_error(K("  %c = cmp lt %x, %x : i1\n  if %c {stages = 2} {\n    yield\n  } else {\n    yield\n  }\n"),
                 "t.tir:3:10: error: 'if' has no attribute 'stages'");
}

static void test_deep_nesting_is_an_error(void **state)
{
    (void)state;
    StrBuf b = {0};
    sb_puts(&b, "kernel @k \"k\"(%c: i1) {\n");
    for (int i = 0; i < 300; i++) sb_puts(&b, "if %c {\n");
    for (int i = 0; i < 300; i++) sb_puts(&b, "yield\n} else {\nyield\n}\n");
    sb_puts(&b, "return\n}\n");
    expect_error(b.s, "error: regions nested deeper than 256");
    sb_free(&b);
}

/* Every prefix of a valid program is either an error or (for cut points
 * between kernels) a module: never a crash, never a leak (run under ASan). */
static void test_every_prefix(void **state)
{
    (void)state;
    IrModule *m = build_sample();
    char *text = print_module(m);
    size_t n = strlen(text);
    for (size_t cut = 0; cut <= n; cut++) {
        char *prefix = tl_xmalloc(cut + 1);
        memcpy(prefix, text, cut);
        prefix[cut] = 0;
        IrModule *p = parse_text(prefix, NULL);
        if (cut == n) assert_non_null(p);
        ir_module_free(p);
        free(prefix);
    }
    free(text);
    ir_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_round_trip),     cmocka_unit_test(test_float_constants_exact),
        cmocka_unit_test(test_float_constants_every_bit),
        cmocka_unit_test(test_broken_ir_round_trip),   cmocka_unit_test(test_header_sets_file),
        cmocka_unit_test(test_golden_files_round_trip), cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_deep_nesting_is_an_error), cmocka_unit_test(test_every_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
