/* test_layoutpass.c: the layout pass (passes/layout.c) on IR made with the
 * builder, the verifier's layout checks, and the text form of layouts: print
 * -> parse -> print is byte-identical and gives back the same layouts, for
 * builder IR and for every example and stdlib kernel after the pipeline;
 * malformed layout text gives one located error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>

#include "frontend/frontend.h"
#include "ir/layout.h"
#include "passes/pass.h"

/* ---- helpers ------------------------------------------------------------------ */

typedef struct K {
    IrModule *m;
    IrFunc *f;
    IrBuilder b;
    Diag d;
} K;

static void kbegin(K *k, int warps)
{
    memset(k, 0, sizeof *k);
    k->m = ir_module_new("test.tile");
    k->f = ir_func_new(k->m, "k", "k", (SrcLoc){1, 1});
    k->f->warps = warps;
    ir_builder_at_end(&k->b, k->f, k->f->body);
    diag_init(&k->d, "test.tile", NULL, 0, stderr, DIAG_COLOR_NEVER);
}

static void kfree(K *k)
{
    diag_free(&k->d);
    ir_module_free(k->m);
}

static char *print_func(IrFunc *f)
{
    StrBuf b = {0};
    ir_print_func(&b, f);
    return b.s;
}

/* Ends the kernel, runs the layout pass and verifies. */
static void run_layout(K *k)
{
    ir_build(&k->b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    if (!ir_verify(k->f, &k->d, "build")) fail_msg("invalid IR before the pass:\n%s", print_func(k->f));
    PassCtx cx = {&k->d, false};
    pass_find("layout")->run(k->f, &cx);
    if (!ir_verify(k->f, &k->d, "layout")) fail_msg("invalid IR after the layout pass:\n%s", print_func(k->f));
}

static const Layout *lay(K *k, IrVal v)
{
    assert_non_null(k->f->val_layout);
    uint32_t i = k->f->val_layout[v];
    assert_true(i > 0 && i < k->f->nlayouts);
    return &k->f->layouts[i];
}

static void assert_layout(K *k, IrVal v, const Layout *want)
{
    if (layout_eq(lay(k, v), want)) return;
    StrBuf a = {0}, b = {0};
    layout_print(&a, lay(k, v));
    layout_print(&b, want);
    fail_msg("layout of value %u is\n  %s\nexpected\n  %s\nin\n%s", v, a.s, b.s, print_func(k->f));
}

static IrType tile1(DType dt, int n) { return ir_ty_tile(dt, false, 1, (int32_t[]){n}); }
static IrType tile2(DType dt, int m, int n) { return ir_ty_tile(dt, false, 2, (int32_t[]){m, n}); }

static IrVal param(K *k, IrType t)
{
    char name[16];
    snprintf(name, sizeof name, "a%u", k->f->nparams);
    return ir_func_add_param(k->f, name, t);
}

static IrVal c32(K *k, int64_t v) { return ir_const_int(&k->b, DT_I32, v); }

static IrVal block_load(K *k, IrVal view, IrType t)
{
    IrVal z = c32(k, 0), o[3] = {view, z, z};
    return ir_build1(&k->b, IR_BLOCK_LOAD, o, 3, t, NULL);
}

static void block_store(K *k, IrVal view, IrVal v)
{
    IrVal z = c32(k, 0), o[4] = {view, z, z, v};
    ir_build(&k->b, IR_BLOCK_STORE, o, 4, NULL, 0, NULL);
}

static IrVal op1(K *k, IrOpcode opc, IrVal x, IrType t, int64_t axis)
{
    IrAttr a;
    memset(&a, 0, sizeof a);
    a.i = axis;
    return ir_build1(&k->b, opc, &x, 1, t, &a);
}

static IrVal zeros(K *k, IrType t)
{
    IrVal z = ir_const_float(&k->b, DT_F32, 0);
    return ir_build1(&k->b, IR_SPLAT, &z, 1, t, NULL);
}

/* ---- decisions of the pass ---------------------------------------------------------- */

/* vadd: 16-byte vectors of f32 (4 per thread), and the pointer tiles they are
 * loaded through share that layout (the pointees' size counts, not 8-byte pointers). */
static void elementwise_gets_vector_default(void **state)
{
    (void)state;
    K k;
    kbegin(&k, 4);
    IrVal x = param(&k, ir_ty_ptr(DT_F32)), n = param(&k, ir_ty_scalar(DT_I32));
    IrType pt = ir_ty_tile(DT_F32, true, 1, (int32_t[]){1024}), it = tile1(DT_I32, 1024);
    IrVal offs = ir_build1(&k.b, IR_ARANGE, NULL, 0, it, NULL);
    IrVal ns = ir_build1(&k.b, IR_SPLAT, &n, 1, it, NULL);
    IrVal mask = ir_cmp(&k.b, CMP_LT, offs, ns);
    IrVal xs = ir_build1(&k.b, IR_SPLAT, &x, 1, pt, NULL);
    IrVal ptrs = ir_build1(&k.b, IR_ADDPTR, (IrVal[]){xs, offs}, 2, pt, NULL);
    IrVal v = ir_build1(&k.b, IR_LOAD, (IrVal[]){ptrs, mask}, 2, tile1(DT_F32, 1024), NULL);
    IrVal s = ir_binary(&k.b, IR_ADD, v, v);
    ir_build(&k.b, IR_STORE, (IrVal[]){ptrs, s, mask}, 3, NULL, 0, NULL);
    run_layout(&k);
    Layout want = layout_default(tile1(DT_F32, 1024), 4);
    assert_int_equal(want.nbits[LL_REG], 3);
    assert_int_equal(want.basis[LL_REG][0], 1);
    assert_int_equal(want.basis[LL_REG][1], 2);
    assert_layout(&k, v, &want);
    assert_layout(&k, s, &want);
    assert_layout(&k, ptrs, &want);
    assert_int_equal(k.f->val_layout[n], 0); /* scalars have none */
    kfree(&k);
}

/* A row reduction's result is the slice of its operand; expand_dims and a
 * broadcast back along the reduced axis give the operand's layout again. */
static void reduction_slices_and_broadcast_restores(void **state)
{
    (void)state;
    K k;
    kbegin(&k, 4);
    IrVal in = param(&k, ir_ty_view(DT_F32, 2)), out = param(&k, ir_ty_view(DT_F32, 2));
    IrType t = tile2(DT_F32, 16, 256);
    IrVal x = block_load(&k, in, t);
    IrVal r = op1(&k, IR_REDUCE_MAX, x, tile1(DT_F32, 16), 1);
    IrVal e = op1(&k, IR_EXPAND_DIMS, r, tile2(DT_F32, 16, 1), 1);
    IrVal bc = op1(&k, IR_BROADCAST, e, t, 0);
    IrVal d = ir_binary(&k.b, IR_SUB, x, bc);
    block_store(&k, out, d);
    run_layout(&k);
    Layout Lx = layout_default(t, 4);
    assert_layout(&k, x, &Lx);
    Layout S = layout_slice(&Lx, 1);
    assert_layout(&k, r, &S);
    assert_int_equal(lay(&k, e)->rank, 2);
    assert_int_equal(lay(&k, e)->dimbits[1], 0);
    assert_layout(&k, bc, &Lx);
    assert_layout(&k, d, &Lx);
    kfree(&k);
}

/* dot: the mma.sync accumulator layout over 2 x 2 warps; a broadcast back
 * along the reduced axis of a row reduction of it restores it, a broadcast
 * along the other axis (not a register renaming) does not claim it. */
static void dot_gets_mma_accumulator(void **state)
{
    (void)state;
    K k;
    kbegin(&k, 4);
    IrVal A = param(&k, ir_ty_view(DT_BF16, 2)), B = param(&k, ir_ty_view(DT_BF16, 2));
    IrVal C = param(&k, ir_ty_view(DT_F32, 2));
    IrType ct = tile2(DT_F32, 64, 64);
    IrVal a = block_load(&k, A, tile2(DT_BF16, 64, 32)), b = block_load(&k, B, tile2(DT_BF16, 32, 64));
    IrVal acc = zeros(&k, ct);
    IrVal c = ir_build1(&k.b, IR_DOT, (IrVal[]){a, b, acc}, 3, ct, NULL);
    IrVal r = op1(&k, IR_REDUCE_SUM, c, tile1(DT_F32, 64), 1);
    IrVal rows = op1(&k, IR_BROADCAST, op1(&k, IR_EXPAND_DIMS, r, tile2(DT_F32, 64, 1), 1), ct, 0);
    IrVal cols = op1(&k, IR_BROADCAST, op1(&k, IR_EXPAND_DIMS, r, tile2(DT_F32, 1, 64), 0), ct, 0);
    block_store(&k, C, ir_binary(&k.b, IR_ADD, ir_binary(&k.b, IR_SUB, c, rows), cols));
    run_layout(&k);
    Layout mma = layout_mma_acc(ct, 2, 2);
    assert_layout(&k, c, &mma);
    assert_layout(&k, rows, &mma);
    assert_false(layout_eq(lay(&k, cols), &mma));
    Layout def = layout_default(ct, 4);
    assert_layout(&k, cols, &def);
    kfree(&k);
}

/* The DOT plan (layout_dot_plan): its instruction for each kind of operand and
 * shape, and the layout pass giving every DOT result the plan's accumulator
 * layout (the one codegen then requires). */
static void dot_follows_plan(void **state)
{
    (void)state;
    static const struct {
        const char *arch;
        DType dt;
        int m, n, k, warps;
        DotInstr want;
    } cs[] = {
        {"sm_90a", DT_BF16, 128, 128, 64, 8, LL_DOT_WGMMA},
        {"sm_90a", DT_F8E4M3, 64, 128, 64, 4, LL_DOT_WGMMA},
        {"sm_90a", DT_BF16, 32, 64, 32, 4, LL_DOT_MMA},   /* M < 64: no warpgroup tile */
        {"sm_80", DT_BF16, 128, 128, 64, 8, LL_DOT_MMA},
        {NULL, DT_F16, 64, 64, 32, 4, LL_DOT_MMA},
        {"sm_80", DT_F32, 64, 64, 32, 4, LL_DOT_FMA},     /* f32 operands, mma accumulator layout */
        {"sm_80", DT_F8E4M3, 64, 64, 32, 4, LL_DOT_FMA},
        {"sm_80", DT_BF16, 64, 64, 8, 4, LL_DOT_FMA},     /* K < 16 */
        {"sm_80", DT_BF16, 16, 8, 16, 4, LL_DOT_FMA},     /* does not tile 2 x 2 warps: default layout */
    };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        IrType at = tile2(cs[c].dt, cs[c].m, cs[c].k), bt = tile2(cs[c].dt, cs[c].k, cs[c].n);
        IrType ct = tile2(DT_F32, cs[c].m, cs[c].n);
        DotPlan p;
        layout_dot_plan(at, bt, ct, cs[c].warps, ir_target_find(cs[c].arch), &p);
        if (p.instr != cs[c].want)
            fail_msg("case %zu: %s (%s), expected %s", c, layout_dot_instr_name(p.instr), p.reason,
                     layout_dot_instr_name(cs[c].want));
        assert_true(p.reason[0] != 0);
        bool tiles = cs[c].m % (16 * p.wm) == 0 && cs[c].n % (8 * p.wn) == 0;
        Layout want = p.instr == LL_DOT_WGMMA ? layout_wgmma_acc(ct, p.w.wgm, p.w.wgn, p.w.instr_n)
                      : tiles                 ? layout_mma_acc(ct, p.wm, p.wn)
                                              : layout_default(ct, cs[c].warps);
        assert_true(layout_eq(&p.acc, &want));

        K k;
        kbegin(&k, cs[c].warps);
        k.m->target = ir_target_find(cs[c].arch);
        IrVal A = param(&k, ir_ty_view(cs[c].dt, 2)), B = param(&k, ir_ty_view(cs[c].dt, 2));
        IrVal C = param(&k, ir_ty_view(DT_F32, 2));
        IrVal a = block_load(&k, A, at), b = block_load(&k, B, bt);
        IrVal d = ir_build1(&k.b, IR_DOT, (IrVal[]){a, b, zeros(&k, ct)}, 3, ct, NULL);
        block_store(&k, C, d);
        run_layout(&k);
        assert_layout(&k, d, &p.acc);
        kfree(&k);
    }
}

/* for k ...: acc = dot(a, b, acc): the carried accumulator, whose init is a
 * free splat, adopts the mma layout across the loop; so does the loop result. */
static void loop_accumulator_adopts_mma(void **state)
{
    (void)state;
    K k;
    kbegin(&k, 8);
    IrVal A = param(&k, ir_ty_view(DT_F16, 2)), B = param(&k, ir_ty_view(DT_F16, 2));
    IrVal C = param(&k, ir_ty_view(DT_F32, 2));
    IrType ct = tile2(DT_F32, 128, 128);
    IrVal init = zeros(&k, ct);
    IrVal lb = c32(&k, 0), ub = c32(&k, 256), st = c32(&k, 64);
    uint32_t loop = ir_build(&k.b, IR_FOR, (IrVal[]){lb, ub, st, init}, 4, &ct, 1, NULL);
    IrBlk body = k.f->ops[loop].region[0];
    ir_block_add_arg(k.f, body, ir_ty_scalar(DT_I32));
    IrVal arg = ir_block_add_arg(k.f, body, ct);
    IrBuilder outer = k.b;
    ir_builder_at_end(&k.b, k.f, body);
    IrVal a = block_load(&k, A, tile2(DT_F16, 128, 64)), b = block_load(&k, B, tile2(DT_F16, 64, 128));
    IrVal d = ir_build1(&k.b, IR_DOT, (IrVal[]){a, b, arg}, 3, ct, NULL);
    ir_build(&k.b, IR_YIELD, &d, 1, NULL, 0, NULL);
    k.b = outer;
    IrVal res = ir_res(&k.f->ops[loop], 0);
    block_store(&k, C, res);
    run_layout(&k);
    Layout mma = layout_mma_acc(ct, 4, 2);
    assert_layout(&k, d, &mma);
    assert_layout(&k, arg, &mma);
    assert_layout(&k, res, &mma);
    Layout def = layout_default(ct, 8);
    assert_layout(&k, init, &def); /* the splat itself keeps its default; codegen rematerialises it */
    kfree(&k);
}

/* while: the value fed back to a "before" argument is the "after" region's
 * yield, not the condition's forwarded value; here the condition forwards
 * fewer values than the loop carries. */
static void while_accumulator_adopts_mma(void **state)
{
    (void)state;
    K k;
    kbegin(&k, 4);
    IrVal A = param(&k, ir_ty_view(DT_BF16, 2)), C = param(&k, ir_ty_view(DT_F32, 2));
    IrType ct = tile2(DT_F32, 64, 64);
    IrVal i0 = c32(&k, 0), init = zeros(&k, ct);
    IrType rt[1] = {ct};
    uint32_t w = ir_build(&k.b, IR_WHILE, (IrVal[]){i0, init}, 2, rt, 1, NULL);
    IrBlk before = k.f->ops[w].region[0], after = k.f->ops[w].region[1];
    IrVal i = ir_block_add_arg(k.f, before, ir_ty_scalar(DT_I32));
    IrVal acc = ir_block_add_arg(k.f, before, ct);
    IrBuilder outer = k.b;
    ir_builder_at_end(&k.b, k.f, before);
    IrVal cond = ir_cmp(&k.b, CMP_LT, i, c32(&k, 4));
    ir_build(&k.b, IR_CONDITION, (IrVal[]){cond, acc}, 2, NULL, 0, NULL);
    IrVal acc2 = ir_block_add_arg(k.f, after, ct);
    ir_builder_at_end(&k.b, k.f, after);
    IrVal a = block_load(&k, A, tile2(DT_BF16, 64, 64));
    IrVal d = ir_build1(&k.b, IR_DOT, (IrVal[]){a, a, acc2}, 3, ct, NULL);
    IrVal one = c32(&k, 0);
    ir_build(&k.b, IR_YIELD, (IrVal[]){one, d}, 2, NULL, 0, NULL);
    k.b = outer;
    IrVal res = ir_res(&k.f->ops[w], 0);
    block_store(&k, C, res);
    run_layout(&k);
    Layout mma = layout_mma_acc(ct, 2, 2);
    assert_layout(&k, d, &mma);
    assert_layout(&k, acc, &mma);
    assert_layout(&k, acc2, &mma);
    assert_layout(&k, res, &mma);
    kfree(&k);
}

/* Without warps(n): one warp per 256 elements of the largest tile, 1 to 8;
 * a row of more than 8192 elements (one dim > 1, no DOT): 16. */
static void warps_heuristic(void **state)
{
    (void)state;
    static const struct { int n, warps; } cases[] = {{64, 1}, {256, 1}, {512, 2}, {1024, 4}, {2048, 8}, {8192, 8}, {16384, 16}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        K k;
        kbegin(&k, 0);
        IrVal out = param(&k, ir_ty_view(DT_F32, 2));
        IrVal x = block_load(&k, out, tile2(DT_F32, 1, cases[c].n));
        block_store(&k, out, x);
        run_layout(&k);
        assert_int_equal(k.f->warps, cases[c].warps);
        assert_int_equal(lay(&k, x)->nbits[LL_WARP], __builtin_ctz((unsigned)cases[c].warps));
        kfree(&k);
    }
    K k; /* a given warps(n) stays */
    kbegin(&k, 2);
    IrVal out = param(&k, ir_ty_view(DT_F32, 2));
    block_store(&k, out, block_load(&k, out, tile2(DT_F32, 64, 256)));
    run_layout(&k);
    assert_int_equal(k.f->warps, 2);
    kfree(&k);
}

/* ---- the verifier's layout checks -------------------------------------------------- */

static IrVal build_small(K *k)
{
    IrVal io = param(k, ir_ty_view(DT_F32, 2));
    IrVal x = block_load(k, io, tile2(DT_F32, 32, 32));
    block_store(k, io, x);
    run_layout(k);
    return x;
}

static void expect_verify_error(K *k, const char *what)
{
    Diag d;
    diag_init(&d, "test.tile", NULL, 0, NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    bool ok = ir_verify(k->f, &d, "layout");
    if (ok) fail_msg("expected a verifier error '%s'", what);
    if (!strstr(d.buf.s ? d.buf.s : "", what)) fail_msg("expected '%s' in:\n%s", what, d.buf.s);
    diag_free(&d);
}

static void verifier_checks_layouts(void **state)
{
    (void)state;
    K k;
    kbegin(&k, 4);
    IrVal x = build_small(&k);
    uint32_t li = k.f->val_layout[x];
    k.f->val_layout[x] = 0;
    expect_verify_error(&k, "has no layout");
    k.f->val_layout[x] = li;
    k.f->val_layout[1] = li; /* the view parameter */
    expect_verify_error(&k, "only tiles of rank 1 or more have layouts");
    k.f->val_layout[1] = 0;
    Layout saved = k.f->layouts[li];
    k.f->layouts[li].basis[LL_LANE][0] = 0; /* that element is now held by no thread */
    expect_verify_error(&k, "held by no thread");
    k.f->layouts[li] = saved;
    k.f->layouts[li].nbits[LL_LANE] = 4;
    expect_verify_error(&k, "lane bases, not 5");
    k.f->layouts[li] = saved;
    k.f->layouts[li].basis[LL_REG][0] = 1u << 12;
    expect_verify_error(&k, "points outside");
    k.f->layouts[li] = saved;
    k.f->layouts[li].dimbits[0] = 4;
    expect_verify_error(&k, "made for other dims");
    k.f->layouts[li] = saved;
    k.f->warps = 8;
    expect_verify_error(&k, "warp bases, but 8 warps need 3");
    k.f->warps = 3;
    expect_verify_error(&k, "warps(3) is not a power of two from 1 to 32");
    k.f->warps = 64;
    expect_verify_error(&k, "warps(64) is not a power of two from 1 to 32");
    k.f->warps = 4;
    k.f->val_layout[x] = k.f->nlayouts;
    expect_verify_error(&k, "but the kernel has");
    k.f->val_layout[x] = li;
    assert_true(ir_verify(k.f, &k.d, "layout"));
    kfree(&k);
}

/* ---- text form ---------------------------------------------------------------------- */

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

static void same_layout(IrFunc *f, IrVal a, IrFunc *g, IrVal b)
{
    uint32_t lf = f->val_layout ? f->val_layout[a] : 0, lg = g->val_layout ? g->val_layout[b] : 0;
    assert_int_equal(lf != 0, lg != 0);
    if (lf) assert_true(layout_eq(&f->layouts[lf], &g->layouts[lg]));
}

/* The values of block a (in f) and block b (in g), which hold the same ops,
 * have the same layouts, value by value. */
static void same_layouts(IrFunc *f, IrBlk a, IrFunc *g, IrBlk b)
{
    const IrBlock *A = ir_blk(f, a), *B = ir_blk(g, b);
    assert_int_equal(A->nargs, B->nargs);
    assert_int_equal(A->nops, B->nops);
    for (uint32_t i = 0; i < A->nargs; i++) same_layout(f, A->args[i], g, B->args[i]);
    for (uint32_t i = 0; i < A->nops; i++) {
        const IrOp *p = ir_op(f, A->ops[i]), *q = ir_op(g, B->ops[i]);
        assert_int_equal(p->opc, q->opc);
        assert_int_equal(p->nres, q->nres);
        for (uint32_t r = 0; r < p->nres; r++) same_layout(f, ir_res(p, r), g, ir_res(q, r));
        for (uint32_t r = 0; r < p->nregion; r++) same_layouts(f, p->region[r], g, q->region[r]);
    }
}

/* Printing m parses back to IR that verifies, has the same layouts value by
 * value, and prints to the same bytes. */
static void assert_round_trip(IrModule *m)
{
    StrBuf a = {0}, b = {0};
    ir_print_module(&a, m);
    char *msgs = NULL;
    IrModule *again = parse_text(a.s, &msgs);
    if (!again) fail_msg("printed IR does not parse:\n%s\n--- text ---\n%s", msgs, a.s);
    Diag d;
    diag_init(&d, "t.tir", NULL, 0, stderr, DIAG_COLOR_NEVER);
    if (!ir_verify_module(again, &d, "parse")) fail_msg("parsed IR does not verify:\n%s", a.s);
    diag_free(&d);
    ir_print_module(&b, again);
    assert_string_equal(a.s, b.s);
    assert_int_equal(again->nfuncs, m->nfuncs);
    for (uint32_t i = 0; i < m->nfuncs; i++)
        same_layouts(m->funcs[i], m->funcs[i]->body, again->funcs[i], again->funcs[i]->body);
    sb_free(&a);
    sb_free(&b);
    free(msgs);
    ir_module_free(again);
}

static void round_trip_builder_ir(void **state)
{
    (void)state;
    K k;
    kbegin(&k, 4);
    IrVal in = param(&k, ir_ty_view(DT_F32, 2));
    IrType t = tile2(DT_F32, 16, 256);
    IrVal x = block_load(&k, in, t);
    IrVal r = op1(&k, IR_REDUCE_MAX, x, tile1(DT_F32, 16), 1);
    IrVal e = op1(&k, IR_EXPAND_DIMS, r, tile2(DT_F32, 16, 1), 1);
    block_store(&k, in, ir_binary(&k.b, IR_SUB, x, op1(&k, IR_BROADCAST, e, t, 0)));
    run_layout(&k);
    assert_round_trip(k.m);
    StrBuf b = {0};
    ir_print_func(&b, k.f);
    /* the table, then references after the types */
    /* 4 f32 (16 bytes) per thread along a row, 32 lanes along the row, warps down the rows */
    assert_non_null(strstr(b.s, "{\n  #L1 = #linear<reg=[[0,1],[0,2],[0,128],[4,0],[8,0]], "
                                "lane=[[0,4],[0,8],[0,16],[0,32],[0,64]], warp=[[1,0],[2,0]]>\n"));
    assert_non_null(strstr(b.s, "block_load %a0, %0, %0 : tile<f32>[16, 256] #L1\n"));
    assert_non_null(strstr(b.s, "reduce_max %1 {axis = 1} : tile<f32>[16] #L2\n"));
    sb_free(&b);
    kfree(&k);
}

/* Every example and stdlib kernel: frontend, the default pipeline, the layout
 * pass; the result round-trips with its layouts. */
static void round_trip_examples(void **state)
{
    (void)state;
    static const char *const dirs[] = {TILEC_SOURCE_DIR "/examples", TILEC_SOURCE_DIR "/stdlib"};
    int nfiles = 0;
    for (size_t di = 0; di < 2; di++) {
        DIR *dir = opendir(dirs[di]);
        assert_non_null(dir);
        struct dirent *de;
        while ((de = readdir(dir))) {
            size_t n = strlen(de->d_name);
            if (n < 6 || strcmp(de->d_name + n - 5, ".tile") != 0) continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dirs[di], de->d_name);
            size_t len = 0;
            char *src = tl_read_file(path, &len);
            assert_non_null(src);
            Diag d;
            diag_init(&d, path, src, len, stderr, DIAG_COLOR_NEVER);
            Ast *ast = ast_parse(path, src, len, &d);
            assert_non_null(ast);
            FeOptions fo = {0};
            IrModule *m = fe_lower(ast, &fo, &d);
            if (!m) fail_msg("%s does not compile", path);
            assert_true(pass_run_pipeline(m, NULL, 0, NULL, &d));
            const char *lay[1] = {"layout"};
            assert_true(pass_run_pipeline(m, lay, 1, NULL, &d));
            for (uint32_t i = 0; i < m->nfuncs; i++) assert_non_null(m->funcs[i]->val_layout);
            assert_round_trip(m);
            ir_module_free(m);
            ast_free(ast);
            diag_free(&d);
            free(src);
            nfiles++;
        }
        closedir(dir);
    }
    assert_true(nfiles >= 8);
}

static void expect_error(const char *text, const char *what)
{
    char *msgs = NULL;
    IrModule *m = parse_text(text, &msgs);
    if (m) fail_msg("expected an error '%s', but the input parsed:\n%s", what, text);
    if (!strstr(msgs, what)) fail_msg("expected '%s' in:\n%s", what, msgs);
    free(msgs);
}

#define LANES "lane=[[1],[2],[4],[8],[16]]"

static void parse_reads_hand_written_layouts(void **state)
{
    (void)state;
    /* any #NAME; a for iteration argument and a while "after" argument with layouts */
    const char *text =
        "kernel @k \"k\"(%p: ptr<f32>) warps(2) {\n"
        "  #row = #linear<reg=[[32],[64]], " LANES ", warp=[[128]]>\n"
        "  %0 = const 0 : i32\n"
        "  %1 = const 4 : i32\n"
        "  %2 = arange : tile<i32>[256] #row\n"
        "  %3 = for %4 = %0 to %1 step %1 iter(%5 #row = %2) : tile<i32>[256] #row {\n"
        "    %6 = add %5, %5 : tile<i32>[256] #row\n"
        "    yield %6\n"
        "  }\n"
        "  %7 = while (%8: tile<i32>[256] #row = %3) : tile<i32>[256] #row {\n"
        "    %9 = cmp lt %0, %1 : i1\n"
        "    condition %9, %8\n"
        "  } do (%10: tile<i32>[256] #row) {\n"
        "    yield %10\n"
        "  }\n"
        "  return\n"
        "}\n";
    char *msgs = NULL;
    IrModule *m = parse_text(text, &msgs);
    if (!m) fail_msg("%s", msgs);
    free(msgs);
    IrFunc *f = m->funcs[0];
    Diag d;
    diag_init(&d, "t.tir", NULL, 0, stderr, DIAG_COLOR_NEVER);
    assert_true(ir_verify(f, &d, "parse"));
    diag_free(&d);
    assert_int_equal(f->nlayouts, 2);
    const Layout *L = &f->layouts[1];
    assert_int_equal(L->rank, 1);
    assert_int_equal(L->dimbits[0], 8);
    assert_int_equal(layout_apply(L, 1, 0, 0), 32);
    assert_int_equal(layout_apply(L, 0, 3, 1), 128 + 3);
    for (IrVal v = 1; v < f->nvals; v++)
        if (f->vals[v].ty.rank == 1) assert_int_equal(f->val_layout[v], 1);
    StrBuf b = {0};
    ir_print_module(&b, m);
    assert_non_null(strstr(b.s, "  #L1 = #linear<reg=[[32],[64]], " LANES ", warp=[[128]]>\n"));
    assert_non_null(strstr(b.s, "iter(%5 #L1 = %2) : tile<i32>[256] #L1 {"));
    assert_non_null(strstr(b.s, "while (%8 #L1 = %3) : tile<i32>[256] #L1 {"));
    assert_non_null(strstr(b.s, "} do (%10: tile<i32>[256] #L1) {"));
    sb_free(&b);
    assert_round_trip(m);
    ir_module_free(m);
}

static void parse_rejects_bad_layouts(void **state)
{
    (void)state;
#define KHEAD "kernel @k \"k\"() warps(2) {\n"
#define ROW "  #L1 = #linear<reg=[[32],[64]], " LANES ", warp=[[128]]>\n"
    expect_error(KHEAD "  #L1 = #linear<reg=[], lane=[[1],[2],[4],[8]], warp=[[16]]>\n"
                 "  %0 = arange : tile<i32>[32] #L1\n  return\n}\n", "has 4 lane bases, not 5");
    expect_error(KHEAD "  #L1 = #linear<reg=[], " LANES ", warp=[]>\n"
                 "  %0 = arange : tile<i32>[32] #L1\n  return\n}\n", "has 0 warp bases, but warps(2) needs 1");
    expect_error("kernel @k \"k\"() {\n" ROW "  return\n}\n", "needs warps(N)");
    expect_error(KHEAD ROW "  %0 = arange : tile<i32>[64] #L1\n  return\n}\n",
                 "reg basis 1 of layout '#L1' has coordinate 64 in dimension 0, outside tile<i32>[64]");
    expect_error(KHEAD ROW "  %0 = arange : tile<i32>[128] #L2\n  return\n}\n", "use of undefined layout '#L2'");
    expect_error(KHEAD ROW "  %0 = arange : tile<i32>[256] #L1\n  %1 = arange : tile<i32>[512] #L1\n  return\n}\n",
                 "a layout belongs to one shape");
    expect_error(KHEAD ROW "  return\n}\n", "layout '#L1' is not used by any value");
    expect_error(KHEAD ROW "  %0 = const 1 : i32 #L1\n  return\n}\n", "a value of type i32 has no layout");
    expect_error(KHEAD ROW "  %0 = arange : tile<i32>[16, 16] #L1\n  return\n}\n",
                 "layout '#L1' has 1-d bases, but the value is tile<i32>[16, 16]");
    expect_error(KHEAD "  %0 = arange : tile<i32>[256]\n" ROW "  return\n}\n", "layouts are defined at the top");
    expect_error(KHEAD ROW ROW "  return\n}\n", "redefinition of layout '#L1'");
    expect_error(KHEAD "  #L1 = #linear<reg=[[1,0],[2]], " LANES ", warp=[[128]]>\n  return\n}\n",
                 "this basis has 1 coordinate, the first has 2");
    expect_error(KHEAD "  #L1 = #blocked<reg=[]>\n  return\n}\n", "expected '#linear<...>'");
    expect_error(KHEAD "  #L1 = #linear<lane=[], reg=[], warp=[]>\n  return\n}\n", "expected 'reg'");
    expect_error(KHEAD ROW "  %0 = arange : tile<i32>[256] #\n  return\n}\n", "expected a layout name after '#'");
    expect_error(KHEAD "  #L1 = #linear<reg=[[-1]], " LANES ", warp=[[128]]>\n  return\n}\n", "coordinate out of range");
#undef ROW
#undef KHEAD
}

/* Every prefix of a layout-annotated kernel, and every text with one byte of
 * it changed to a character that matters to layouts, either parses or gives
 * an error: never a crash or a leak (run under the sanitizers in CI). */
static void parse_survives_truncation_and_mutation(void **state)
{
    (void)state;
    K k;
    kbegin(&k, 4);
    IrVal A = param(&k, ir_ty_view(DT_F32, 2));
    IrType ct = tile2(DT_F32, 32, 32);
    IrVal x = block_load(&k, A, ct);
    IrVal c = ir_build1(&k.b, IR_DOT, (IrVal[]){x, x, zeros(&k, ct)}, 3, ct, NULL);
    IrVal r = op1(&k, IR_REDUCE_SUM, c, tile1(DT_F32, 32), 1);
    block_store(&k, A, op1(&k, IR_BROADCAST, op1(&k, IR_EXPAND_DIMS, r, tile2(DT_F32, 32, 1), 1), ct, 0));
    run_layout(&k);
    StrBuf b = {0};
    ir_print_module(&b, k.m);
    char *text = tl_xmalloc(b.len + 1);
    int parsed = 0;
    for (size_t n = 0; n <= b.len; n++) {
        memcpy(text, b.s, n);
        text[n] = 0;
        IrModule *m = parse_text(text, NULL);
        if (m) parsed++;
        ir_module_free(m);
    }
    assert_true(parsed >= 2); /* at least the header alone and the whole text */
    static const char subst[] = "#[],0159<>=L";
    for (size_t i = 0; i < b.len; i++) {
        if (b.s[i] == '\n') continue;
        memcpy(text, b.s, b.len + 1);
        text[i] = subst[i % (sizeof subst - 1)];
        IrModule *m = parse_text(text, NULL);
        if (m) {
            Diag d;
            diag_init(&d, "t.tir", NULL, 0, NULL, DIAG_COLOR_NEVER);
            d.capture = true;
            ir_verify_module(m, &d, "parse");
            diag_free(&d);
        }
        ir_module_free(m);
    }
    free(text);
    sb_free(&b);
    kfree(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(elementwise_gets_vector_default),
        cmocka_unit_test(reduction_slices_and_broadcast_restores),
        cmocka_unit_test(dot_gets_mma_accumulator),
        cmocka_unit_test(dot_follows_plan),
        cmocka_unit_test(loop_accumulator_adopts_mma),
        cmocka_unit_test(while_accumulator_adopts_mma),
        cmocka_unit_test(warps_heuristic),
        cmocka_unit_test(verifier_checks_layouts),
        cmocka_unit_test(round_trip_builder_ir),
        cmocka_unit_test(round_trip_examples),
        cmocka_unit_test(parse_reads_hand_written_layouts),
        cmocka_unit_test(parse_rejects_bad_layouts),
        cmocka_unit_test(parse_survives_truncation_and_mutation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
