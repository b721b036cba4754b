/* test_lower.c: fe_lower on source text: the IR of the LANGUAGE.md examples
 * (op sequences, types, specialization names, -D overrides), the promotion and
 * broadcasting rules, control flow, fn inlining, and error recovery.  Every
 * module that lowers must also pass the IR verifier. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "frontend/lower_int.h"

/* One compilation: source text in, module (or NULL) and captured messages out. */
typedef struct Unit {
    Diag d;
    Ast *ast;
    IrModule *m;
    char *src;
} Unit;

static void compile(Unit *u, const char *src, const char *const *defs, uint32_t ndefs)
{
    memset(u, 0, sizeof *u);
    u->src = tl_xstrdup(src);
    diag_init(&u->d, "t.tile", u->src, strlen(u->src), NULL, DIAG_COLOR_NEVER);
    u->d.capture = true;
    u->ast = ast_parse("t.tile", u->src, strlen(u->src), &u->d);
    assert_non_null(u->ast);
    assert_int_equal(u->d.nerrors, 0);
    FeDefine fd[8];
    assert_true(ndefs <= 8);
    for (uint32_t k = 0; k < ndefs; k++) {
        const char *eq = strchr(defs[k], '=');
        char *name = arena_strndup(&u->ast->arena, defs[k], (size_t)(eq - defs[k]));
        fd[k] = (FeDefine){name, eq + 1};
    }
    FeOptions o = {fd, ndefs, NULL};
    u->m = fe_lower(u->ast, &o, &u->d);
}

static void release(Unit *u)
{
    ir_module_free(u->m);
    ast_free(u->ast);
    diag_free(&u->d);
    free(u->src);
}

/* Compiles src, which must lower cleanly and verify. */
static IrFunc *lower_ok(Unit *u, const char *src, const char *const *defs, uint32_t ndefs)
{
    compile(u, src, defs, ndefs);
    if (!u->m) fprintf(stderr, "%s", u->d.buf.s ? u->d.buf.s : "(no message)\n");
    assert_non_null(u->m);
    Diag vd;
    diag_init(&vd, "t.tile", u->src, strlen(u->src), stderr, DIAG_COLOR_NEVER);
    assert_true(ir_verify_module(u->m, &vd, "lower"));
    diag_free(&vd);
    assert_true(u->m->nfuncs >= 1);
    return u->m->funcs[0];
}

/* Compiles src, which must fail; returns the messages. */
static const char *lower_fails(Unit *u, const char *src, const char *const *defs, uint32_t ndefs)
{
    compile(u, src, defs, ndefs);
    assert_null(u->m);
    assert_true(u->d.nerrors > 0);
    return u->d.buf.s;
}

/* The op names of a block, space-separated. */
static char *seq(IrFunc *f, IrBlk b)
{
    StrBuf s = {0};
    sb_puts(&s, "");
    for (uint32_t k = 0; k < ir_blk(f, b)->nops; k++)
        sb_printf(&s, k ? " %s" : "%s", ir_opinfo[ir_op(f, ir_blk(f, b)->ops[k])->opc].name);
    return s.s;
}

static void want_seq(IrFunc *f, IrBlk b, const char *want)
{
    char *got = seq(f, b);
    if (strcmp(got, want) != 0) fprintf(stderr, "want: %s\n got: %s\n", want, got);
    assert_string_equal(got, want);
    free(got);
}

static const char *ty_text(IrType t)
{
    static char buf[8][64];
    static int next;
    StrBuf b = {0};
    ir_ty_print(&b, t);
    char *out = buf[next++ % 8];
    snprintf(out, 64, "%s", b.s);
    sb_free(&b);
    return out;
}

/* The first op of opcode opc in block b (searching nested regions), or NULL. */
static IrOp *find_op(IrFunc *f, IrBlk b, IrOpcode opc)
{
    for (uint32_t k = 0; k < ir_blk(f, b)->nops; k++) {
        IrOp *op = ir_op(f, ir_blk(f, b)->ops[k]);
        if (op->opc == opc) return op;
        for (uint32_t r = 0; r < op->nregion; r++) {
            IrOp *in = find_op(f, op->region[r], opc);
            if (in) return in;
        }
    }
    return NULL;
}

static IrType res_ty(IrFunc *f, IrOp *op) { return ir_vty(f, op->res); }

static char *example(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s.tile", TILEC_SOURCE_DIR, name);
    size_t n;
    char *s = tl_read_file(path, &n);
    assert_non_null(s);
    return s;
}

/* ---- the LANGUAGE.md examples ---------------------------------------------- */

static void test_vadd(void **state)
{
    (void)state;
    Unit u;
    char *src = example("vadd");
    IrFunc *f = lower_ok(&u, src, NULL, 0);
    assert_string_equal(f->name, "vadd__BLOCK_1024");
    assert_string_equal(f->source_name, "vadd");
    assert_int_equal(f->nparams, 4);
    assert_string_equal(ty_text(f->params[0].ty), "ptr<f32>");
    assert_string_equal(ty_text(f->params[3].ty), "i32");
    assert_int_equal(f->nspecs, 1);
    assert_string_equal(f->specs[0].name, "BLOCK");
    assert_string_equal(f->specs[0].value, "1024");
    assert_int_equal(f->warps, 0);
    want_seq(f, f->body,
             "program_id const mul arange splat add splat cmp splat addptr splat addptr load splat addptr load add "
             "store return");
    IrOp *ld = find_op(f, f->body, IR_LOAD);
    assert_int_equal(ld->nopnd, 2);
    assert_string_equal(ty_text(res_ty(f, ld)), "tile<f32>[1024]");
    IrOp *cmp = find_op(f, f->body, IR_CMP);
    assert_int_equal(cmp->attr.i, CMP_LT);
    assert_string_equal(ty_text(res_ty(f, cmp)), "tile<i1>[1024]");
    /* grid((n + BLOCK - 1) / BLOCK) over the grid block's own arguments */
    assert_int_not_equal(f->grid, IR_NONE);
    want_seq(f, f->grid, "const add const sub const div yield");
    IrOp *add = find_op(f, f->grid, IR_ADD);
    assert_int_equal(ir_opnd(f, add, 0), ir_blk(f, f->grid)->args[3]);
    /* a weak value's CONST sits where the value is written: BLOCK in `program_id(0) * BLOCK` */
    IrOp *blk = find_op(f, f->body, IR_CONST);
    assert_int_equal(blk->attr.i, 1024);
    assert_int_equal(blk->loc.line, 4);
    assert_int_equal(blk->loc.col, 32);
    /* every op has a location; the store's is the call's */
    IrOp *st = find_op(f, f->body, IR_STORE);
    assert_int_equal(st->loc.line, 6);
    assert_int_equal(st->loc.col, 5);
    release(&u);
    free(src);
}

static void test_vadd_define(void **state)
{
    (void)state;
    Unit u;
    char *src = example("vadd");
    const char *defs[] = {"BLOCK=2*128"};
    IrFunc *f = lower_ok(&u, src, defs, 1);
    assert_string_equal(f->name, "vadd__BLOCK_256");
    assert_string_equal(f->specs[0].value, "256");
    assert_string_equal(ty_text(res_ty(f, find_op(f, f->body, IR_ARANGE))), "tile<i32>[256]");
    release(&u);
    free(src);
}

static void test_softmax(void **state)
{
    (void)state;
    Unit u;
    char *src = example("softmax");
    IrFunc *f = lower_ok(&u, src, NULL, 0);
    assert_string_equal(f->name, "softmax__BLOCK_1024");
    assert_string_equal(ty_text(f->params[0].ty), "tensor<f32, 2>");
    /* the load has a mask and other = splat(-inf) */
    IrOp *ld = find_op(f, f->body, IR_LOAD);
    assert_int_equal(ld->nopnd, 3);
    IrOp *other = ir_op(f, ir_def(f, ir_opnd(f, ld, 2)));
    assert_int_equal(other->opc, IR_SPLAT);
    IrOp *inf = ir_op(f, ir_def(f, ir_opnd(f, other, 0)));
    assert_int_equal(inf->opc, IR_CONST);
    assert_true(inf->attr.f < -1e308);
    /* cols < x.shape[1]: i32 with i64 promotes to i64 */
    IrOp *cmp = find_op(f, f->body, IR_CMP);
    assert_string_equal(ty_text(ir_vty(f, ir_opnd(f, cmp, 0))), "tile<i64>[1024]");
    IrOp *mx = find_op(f, f->body, IR_REDUCE_MAX);
    assert_int_equal(mx->attr.i, 0);
    assert_string_equal(ty_text(res_ty(f, mx)), "f32");
    assert_non_null(find_op(f, f->body, IR_REDUCE_SUM));
    assert_non_null(find_op(f, f->body, IR_EXP));
    want_seq(f, f->grid, "view_shape yield");
    release(&u);
    free(src);
}

static void test_gemm(void **state)
{
    (void)state;
    Unit u;
    char *src = example("gemm");
    IrFunc *f = lower_ok(&u, src, NULL, 0);
    assert_string_equal(f->name, "gemm__T_bf16__BM_128__BN_128__BK_64");
    assert_int_equal(f->nspecs, 4);
    assert_string_equal(f->specs[0].value, "bf16");
    assert_string_equal(ty_text(f->params[0].ty), "tensor<bf16, 2>");
    IrOp *loop = find_op(f, f->body, IR_FOR);
    assert_non_null(loop);
    assert_int_equal(loop->attr.i, 4);      /* pipeline(4) */
    assert_int_equal(loop->nres, 1);        /* acc is carried */
    assert_int_equal(loop->nopnd, 4);
    assert_string_equal(ty_text(res_ty(f, loop)), "tile<f32>[128, 128]");
    assert_string_equal(ty_text(ir_vty(f, ir_opnd(f, loop, 0))), "i64");
    want_seq(f, loop->region[0], "block_load block_load dot yield");
    IrOp *bl = find_op(f, loop->region[0], IR_BLOCK_LOAD);
    assert_string_equal(ty_text(res_ty(f, bl)), "tile<bf16>[128, 64]");
    /* the final store gets acc as bf16 from the loop result */
    IrOp *bs = find_op(f, f->body, IR_BLOCK_STORE);
    IrOp *cast = ir_op(f, ir_def(f, ir_opnd(f, bs, 3)));
    assert_int_equal(cast->opc, IR_CAST);
    assert_int_equal(ir_opnd(f, cast, 0), loop->res);
    want_seq(f, f->grid, "view_shape const add const sub const div view_shape const add const sub const div yield");
    release(&u);
    free(src);
}

static void test_gemm_defines(void **state)
{
    (void)state;
    Unit u;
    char *src = example("gemm");
    const char *defs[] = {"T=f16", "BK=32", "BM=64"};
    IrFunc *f = lower_ok(&u, src, defs, 3);
    assert_string_equal(f->name, "gemm__T_f16__BM_64__BN_128__BK_32");
    assert_string_equal(ty_text(f->params[1].ty), "tensor<f16, 2>");
    assert_string_equal(ty_text(f->params[2].ty), "tensor<bf16, 2>");
    IrOp *bl = find_op(f, f->body, IR_BLOCK_LOAD);
    assert_string_equal(ty_text(res_ty(f, bl)), "tile<f16>[64, 32]");
    release(&u);
    free(src);
}

static void test_all_examples_lower(void **state)
{
    (void)state;
    static const char *const names[] = {"vadd", "softmax", "gemm", "rmsnorm", "layernorm", "topk_routing"};
    for (size_t k = 0; k < TL_COUNTOF(names); k++) {
        Unit u;
        char *src = example(names[k]);
        IrFunc *f = lower_ok(&u, src, NULL, 0);
        assert_string_equal(f->source_name, names[k]);
        release(&u);
        free(src);
    }
}

/* ---- types, promotion, broadcasting ------------------------------------------ */

/* Lowers `kernel k(params) { let r = EXPR; store(out, r); }` style programs and
 * returns the type of the value stored. */
static const char *stored_type(const char *params, const char *expr)
{
    char src[1024];
    snprintf(src, sizeof src, "kernel k(%s) {\n    let r = %s;\n    print(\"r\", r);\n}\n", params, expr);
    Unit u;
    IrFunc *f = lower_ok(&u, src, NULL, 0);
    IrOp *pr = find_op(f, f->body, IR_PRINT);
    const char *t = ty_text(ir_vty(f, ir_opnd(f, pr, 0)));
    release(&u);
    return t;
}

static void test_promotion(void **state)
{
    (void)state;
    assert_string_equal(stored_type("a: i8, b: i16", "a + b"), "i16");
    assert_string_equal(stored_type("a: u32, b: i32", "a + b"), "u32");
    assert_string_equal(stored_type("a: i1, b: u8", "a + b"), "u8");
    assert_string_equal(stored_type("a: i64, b: f16", "a * b"), "f16");
    assert_string_equal(stored_type("a: f16, b: bf16", "a - b"), "f32");
    assert_string_equal(stored_type("a: f8e4m3, b: f8e4m3", "a * b"), "f32");
    assert_string_equal(stored_type("a: f16", "a * 2"), "f16");
    assert_string_equal(stored_type("a: bf16", "1.5 + a"), "bf16");
    assert_string_equal(stored_type("a: i32", "a * 0.5"), "f32");
    assert_string_equal(stored_type("a: i8", "a < 3"), "i1");
    assert_string_equal(stored_type("a: i32", "1 + 2 * 3"), "i32");
    assert_string_equal(stored_type("a: i32", "1.0 / 4"), "f32");
    assert_string_equal(stored_type("a: i32", "true"), "i1");
    assert_string_equal(stored_type("a: i32", "exp(a)"), "f32");
    assert_string_equal(stored_type("a: f16", "sqrt(a)"), "f16");
    assert_string_equal(stored_type("a: i16", "abs(a)"), "i16");
    assert_string_equal(stored_type("a: i16", "floor(a)"), "i16");
    assert_string_equal(stored_type("a: f32", "a as f8e5m2"), "f8e5m2");
    assert_string_equal(stored_type("a: f32", "bitcast<u32>(a)"), "u32");
    assert_string_equal(stored_type("a: i32", "arange(16)[:, None] + arange(32)[None, :]"), "tile<i32>[16, 32]");
    assert_string_equal(stored_type("a: i32", "sum(arange(16)[:, None] * arange(8)[None, :], 1)"), "tile<i32>[16]");
    assert_string_equal(stored_type("a: i8", "sum(full<i8>([4, 4], a))"), "i32");
    assert_string_equal(stored_type("a: f16", "cumsum(full<f16>([8], a), 0)"), "tile<f32>[8]");
    assert_string_equal(stored_type("a: f16", "argmax(full<f16>([8, 4], a), -1)"), "tile<i32>[8]");
    assert_string_equal(stored_type("a: f32", "trans(zeros<f32>([8, 32]))"), "tile<f32>[32, 8]");
    assert_string_equal(stored_type("a: f32", "reshape(zeros<f32>([8, 32]), [256])"), "tile<f32>[256]");
    assert_string_equal(stored_type("a: f32", "broadcast(a, [4, 2])"), "tile<f32>[4, 2]");
    assert_string_equal(stored_type("a: f32", "expand_dims(arange(4), -1)"), "tile<i32>[4, 1]");
    assert_string_equal(stored_type("a: f32", "where(arange(8) < 4, a, 0)"), "tile<f32>[8]");
    assert_string_equal(stored_type("a: f16", "fma(a, a, 1)"), "f16");
    assert_string_equal(stored_type("a: f32", "sort(zeros<f32>([4, 8]), 1, descending: true)"), "tile<f32>[4, 8]");
    assert_string_equal(stored_type("p: ptr<f32>", "p + arange(8)"), "tile<ptr<f32>>[8]");
    assert_string_equal(stored_type("A: tensor<u8, 3>", "A.stride[-1]"), "i64");
}

/* Weak literals become a CONST of the other operand's type, then SPLAT. */
static void test_weak_literal_ops(void **state)
{
    (void)state;
    Unit u;
    IrFunc *f = lower_ok(&u, "kernel k(p: ptr<f16>) {\n    store(p + arange(8), load(p + arange(8)) * 2);\n}\n", NULL, 0);
    IrOp *mul = find_op(f, f->body, IR_MUL);
    IrOp *splat = ir_op(f, ir_def(f, ir_opnd(f, mul, 1)));
    assert_int_equal(splat->opc, IR_SPLAT);
    IrOp *c = ir_op(f, ir_def(f, ir_opnd(f, splat, 0)));
    assert_int_equal(c->opc, IR_CONST);
    assert_string_equal(ty_text(res_ty(f, c)), "f16");
    assert_true(c->attr.f == 2.0);
    release(&u);
}

static void test_broadcast_ops(void **state)
{
    (void)state;
    Unit u;
    IrFunc *f = lower_ok(&u,
                         "kernel k(p: ptr<i32>) {\n"
                         "    let r = arange(4)[:, None] + arange(8);\n"
                         "    store(p + r, r);\n}\n",
                         NULL, 0);
    /* [4,1] + [8] -> expand_dims the right to [1,8], broadcast both to [4,8] */
    IrOp *add = find_op(f, f->body, IR_ADD);
    IrOp *l = ir_op(f, ir_def(f, ir_opnd(f, add, 0))), *r = ir_op(f, ir_def(f, ir_opnd(f, add, 1)));
    assert_int_equal(l->opc, IR_BROADCAST);
    assert_int_equal(r->opc, IR_BROADCAST);
    IrOp *rx = ir_op(f, ir_def(f, ir_opnd(f, r, 0)));
    assert_int_equal(rx->opc, IR_EXPAND_DIMS);
    assert_int_equal(rx->attr.i, 0);
    assert_string_equal(ty_text(res_ty(f, add)), "tile<i32>[4, 8]");
    release(&u);
}

/* ---- control flow, fns ------------------------------------------------------------ */

static void test_if_and_while(void **state)
{
    (void)state;
    Unit u;
    IrFunc *f = lower_ok(&u,
                         "kernel k(p: ptr<f32>, n: i32) {\n"
                         "    var x = 1.0;\n"
                         "    var i = 0;\n"
                         "    let y = 3;\n"
                         "    if n > 4 { x = 2.0; } else if n > 2 { x = x * 3.0; }\n"
                         "    while i < n { i += 1; x = x + 1; }\n"
                         "    store(p, x + y);\n}\n",
                         NULL, 0);
    IrOp *iff = find_op(f, f->body, IR_IF);
    assert_int_equal(iff->nres, 1);
    assert_string_equal(ty_text(res_ty(f, iff)), "f32");
    want_seq(f, iff->region[1], "const cmp if yield");
    IrOp *wh = find_op(f, f->body, IR_WHILE);
    assert_int_equal(wh->nres, 2);
    assert_int_equal(wh->nopnd, 2);
    want_seq(f, wh->region[0], "cmp condition");
    want_seq(f, wh->region[1], "const add const add yield");
    assert_int_equal(ir_blk(f, wh->region[1])->nargs, 2);
    release(&u);
}

static void test_fn_inline_and_tuples(void **state)
{
    (void)state;
    Unit u;
    IrFunc *f = lower_ok(&u,
                         "fn silu(x) { return x * sigmoid(x); }\n"
                         "fn both(x) { let (v, i) = topk(x, 4, 0); return (v, i); }\n"
                         "kernel k(p: ptr<f32>, q: ptr<i32>) {\n"
                         "    let x = silu(load(p + arange(16)));\n"
                         "    let (v, i) = both(x);\n"
                         "    store(p + arange(4), v);\n"
                         "    store(q + arange(4), i);\n}\n",
                         NULL, 0);
    IrOp *sg = find_op(f, f->body, IR_SIGMOID);
    assert_non_null(sg);
    assert_int_equal(sg->loc.line, 1);      /* inlined ops keep the fn's locations */
    IrOp *tk = find_op(f, f->body, IR_TOPK);
    assert_int_equal(tk->nres, 2);
    assert_int_equal(tk->attr.j, 4);
    assert_string_equal(ty_text(ir_vty(f, tk->res + 1)), "tile<i32>[4]");
    release(&u);
}

static void test_grid_warps_specs(void **state)
{
    (void)state;
    Unit u;
    const char *defs[] = {"S=-2", "E=f16"};
    IrFunc *f = lower_ok(&u,
                         "const WARP = 32;\n"
                         "kernel k<S: int, E: type = f32, N: int = WARP * 2>(p: ptr<E>, n: i32) grid(n, 2, S + 3) warps(8) {\n"
                         "    store(p + arange(N), zeros<E>([N]));\n}\n",
                         defs, 2);
    assert_string_equal(f->name, "k__S_m2__E_f16__N_64");
    assert_string_equal(f->specs[0].value, "-2");
    assert_int_equal(f->warps, 8);
    assert_string_equal(ty_text(f->params[0].ty), "ptr<f16>");
    want_seq(f, f->grid, "const const yield");
    release(&u);
}

/* ---- errors ------------------------------------------------------------------------ */

static void test_errors_recover(void **state)
{
    (void)state;
    Unit u;
    const char *msg = lower_fails(&u,
                                  "kernel k(p: ptr<f32>, n: i32) {\n"
                                  "    let a = arange(100);\n"
                                  "    let b = a + 1;\n"          /* poisoned: no second error */
                                  "    let c = undefined_thing;\n"
                                  "    p = p;\n"
                                  "}\n",
                                  NULL, 0);
    assert_int_equal(u.d.nerrors, 3);
    assert_non_null(strstr(msg, "t.tile:2:20: error: tile dimension 0 is 100, not a power of two"));
    assert_non_null(strstr(msg, "t.tile:4:13: error: use of undeclared name 'undefined_thing'"));
    assert_non_null(strstr(msg, "cannot assign to 'p': it is a parameter, not a var"));
    release(&u);
}

static void test_define_errors(void **state)
{
    (void)state;
    Unit u;
    const char *src = "kernel k<B: int = 4, T: type = f32>(p: ptr<T>) { store(p + arange(B), 0); }\n";
    const char *unknown[] = {"BB=8"};
    assert_non_null(strstr(lower_fails(&u, src, unknown, 1), "-D BB: no kernel has a compile-time parameter named 'BB' (did you mean 'B'?)"));
    release(&u);
    const char *badtype[] = {"T=12"};
    assert_non_null(strstr(lower_fails(&u, src, badtype, 1), "'T' is a type parameter"));
    release(&u);
    const char *bad[] = {"B=(3"};
    assert_non_null(strstr(lower_fails(&u, src, bad, 1), "expected an integer expression or a type name"));
    release(&u);
}

static void test_parse_define(void **state)
{
    (void)state;
    int64_t v = 0;
    DType dt;
    assert_int_equal(sema_parse_define("128", &v, &dt), DEF_INT);
    assert_int_equal(v, 128);
    assert_int_equal(sema_parse_define(" 1 << 4 | 0x3 ", &v, &dt), DEF_INT);
    assert_int_equal(v, 19);
    assert_int_equal(sema_parse_define("-(2 + 3) * 4 % 7", &v, &dt), DEF_INT);
    assert_int_equal(v, -20 % 7);
    assert_int_equal(sema_parse_define("3 < 4 && 2 != 2", &v, &dt), DEF_INT);
    assert_int_equal(v, 0);
    assert_int_equal(sema_parse_define("bf16", &v, &dt), DEF_TYPE);
    assert_int_equal(dt, DT_BF16);
    assert_int_equal(sema_parse_define("1/0", &v, &dt), DEF_BAD);
    assert_int_equal(sema_parse_define("1 << 64", &v, &dt), DEF_BAD);
    assert_int_equal(sema_parse_define("99999999999999999999", &v, &dt), DEF_BAD);
    assert_int_equal(sema_parse_define("12abc", &v, &dt), DEF_BAD);
    assert_int_equal(sema_parse_define("", &v, &dt), DEF_BAD);
    char deep[200];
    memset(deep, '(', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    assert_int_equal(sema_parse_define(deep, &v, &dt), DEF_BAD);
}

static void test_type_rules(void **state)
{
    (void)state;
    assert_int_equal(sema_promote(DT_I8, DT_U8), DT_U8);
    assert_int_equal(sema_promote(DT_I64, DT_U32), DT_I64);
    assert_int_equal(sema_promote(DT_I1, DT_I8), DT_I8);
    assert_int_equal(sema_promote(DT_U16, DT_F8E4M3), DT_F32);  /* fp8 with anything: f32 */
    assert_int_equal(sema_promote(DT_F8E4M3, DT_F16), DT_F32);
    assert_int_equal(sema_promote(DT_F8E5M2, DT_F8E5M2), DT_F8E5M2);
    assert_int_equal(sema_promote(DT_F8E4M3, DT_F8E5M2), DT_F32);
    assert_int_equal(sema_promote(DT_BF16, DT_F64), DT_F64);
    assert_true(sema_int_fits(-128, DT_I8));
    assert_false(sema_int_fits(128, DT_I8));
    assert_false(sema_int_fits(-1, DT_U64));
    assert_true(sema_int_fits(65535, DT_U16));
    assert_false(sema_int_fits(2, DT_I1));
    int32_t a[2] = {4, 1}, b[1] = {8}, c[1] = {3};
    IrType out;
    assert_true(sema_broadcast_shape(ir_ty_tile(DT_F32, false, 2, a), ir_ty_tile(DT_F32, false, 1, b), &out));
    assert_int_equal(out.rank, 2);
    assert_int_equal(out.dims[0], 4);
    assert_int_equal(out.dims[1], 8);
    assert_false(sema_broadcast_shape(ir_ty_tile(DT_F32, false, 1, b), ir_ty_tile(DT_F32, false, 1, c), &out));
}

/* ASTs deeper than any parser would build: the lowering must stop with one
 * error, without exhausting the C stack. */
static AstNode *node(Ast *ast, AstKind kind)
{
    AstNode *n = ARENA_NEW(&ast->arena, AstNode);
    n->kind = kind;
    n->loc = (SrcLoc){1, 1};
    return n;
}

static void test_deep_ast(void **state)
{
    (void)state;
    for (int shape = 0; shape < 2; shape++) {
        Ast ast;
        memset(&ast, 0, sizeof ast);
        arena_init(&ast.arena);
        ast.file = "deep.tile";
        AstNode *inner = node(&ast, AST_INT);
        inner->uval = 1;
        AstNode *stmt = node(&ast, shape == 0 ? AST_EXPR_STMT : AST_ASSIGN);
        stmt->a = inner;
        stmt->name = "i";
        stmt->op = OP_ASSIGN;
        for (int k = 0; k < 100000; k++) {
            if (shape == 0) {       /* - - - ... 1 */
                AstNode *u = node(&ast, AST_UNARY);
                u->op = '-';
                u->a = stmt->a;
                stmt->a = u;
            } else {                /* { { { ... 1; } } } with an assignment inside, for the var scan */
                AstNode *b = node(&ast, AST_BLOCK);
                b->body = ARENA_ARRAY(&ast.arena, AstNode *, 1);
                b->body[0] = stmt;
                b->nbody = 1;
                stmt = b;
            }
        }
        AstNode *loop = node(&ast, AST_FOR);
        loop->name = "i";
        loop->list = ARENA_ARRAY(&ast.arena, AstNode *, 1);
        loop->list[0] = inner;
        loop->nlist = 1;
        loop->body = ARENA_ARRAY(&ast.arena, AstNode *, 1);
        loop->body[0] = stmt;
        loop->nbody = 1;
        AstNode *kn = node(&ast, AST_KERNEL);
        kn->name = "k";
        kn->body = ARENA_ARRAY(&ast.arena, AstNode *, 1);
        kn->body[0] = loop;
        kn->nbody = 1;
        ast.decls = &kn;
        ast.ndecls = 1;
        Diag d;
        diag_init(&d, "deep.tile", NULL, 0, NULL, DIAG_COLOR_NEVER);
        d.capture = true;
        assert_null(fe_lower(&ast, NULL, &d));
        assert_int_equal(d.nerrors, 1);
        assert_non_null(strstr(d.buf.s, "nesting deeper than 256 levels"));
        diag_free(&d);
        arena_free(&ast.arena);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd),
        cmocka_unit_test(test_vadd_define),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_gemm_defines),
        cmocka_unit_test(test_all_examples_lower),
        cmocka_unit_test(test_promotion),
        cmocka_unit_test(test_weak_literal_ops),
        cmocka_unit_test(test_broadcast_ops),
        cmocka_unit_test(test_if_and_while),
        cmocka_unit_test(test_fn_inline_and_tuples),
        cmocka_unit_test(test_grid_warps_specs),
        cmocka_unit_test(test_errors_recover),
        cmocka_unit_test(test_define_errors),
        cmocka_unit_test(test_parse_define),
        cmocka_unit_test(test_type_rules),
        cmocka_unit_test(test_deep_ast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
