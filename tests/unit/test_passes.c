/* test_passes.c: fold, cse, dce and the pipeline runner on IR made with the builder.
 * Each test builds a kernel, runs a pass, verifies the result and checks it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "passes/pass.h"

/* A kernel under construction; every value handed to sink() is stored to a
 * fresh pointer parameter so that it stays used. */
typedef struct K {
    IrModule *m;
    IrFunc *f;
    IrBuilder b;
    Diag d;
    int nout;
} K;

static void kbegin(K *k, const char *name)
{
    memset(k, 0, sizeof *k);
    k->m = ir_module_new("test.tile");
    k->f = ir_func_new(k->m, name, name, (SrcLoc){1, 1});
    ir_builder_at_end(&k->b, k->f, k->f->body);
    diag_init(&k->d, "test.tile", NULL, 0, stderr, DIAG_COLOR_NEVER);
}

static void kend(K *k) { ir_build(&k->b, IR_RETURN, NULL, 0, NULL, 0, NULL); }

static void kfree(K *k)
{
    diag_free(&k->d);
    ir_module_free(k->m);
}

static IrVal param(K *k, IrType t)
{
    char name[16];
    snprintf(name, sizeof name, "a%u", k->f->nparams);
    return ir_func_add_param(k->f, name, t);
}

static void sink(K *k, IrVal v)
{
    IrType t = ir_vty(k->f, v);
    char name[16];
    snprintf(name, sizeof name, "out%d", k->nout++);
    IrVal p = ir_func_add_param(k->f, name, ir_ty_ptr((DType)t.dt));
    if (t.rank) p = ir_build1(&k->b, IR_SPLAT, &p, 1, ir_ty_with_dt(t, (DType)t.dt, true), NULL);
    IrVal o[2] = {p, v};
    ir_build(&k->b, IR_STORE, o, 2, NULL, 0, NULL);
}

/* The value stored by the n-th STORE of the body. */
static IrVal stored(K *k, int n)
{
    IrBlock *b = ir_blk(k->f, k->f->body);
    for (uint32_t i = 0; i < b->nops; i++) {
        IrOp *op = ir_op(k->f, b->ops[i]);
        if (op->opc == IR_STORE && n-- == 0) return ir_opnd(k->f, op, 1);
    }
    fail_msg("no store %d", n);
    return IR_NONE;
}

static IrOp *def(K *k, IrVal v)
{
    uint32_t d = ir_def(k->f, v);
    assert_int_not_equal(d, UINT32_MAX);
    return ir_op(k->f, d);
}

/* v is a CONST, or a SPLAT of one, of value i / f */
static const IrOp *cst_op(K *k, IrVal v)
{
    const IrOp *op = def(k, v);
    if (op->opc == IR_SPLAT) op = def(k, ir_opnd(k->f, op, 0));
    assert_int_equal(op->opc, IR_CONST);
    return op;
}
static void want_i(K *k, IrVal v, int64_t i) { assert_int_equal(cst_op(k, v)->attr.i, i); }
static void want_f(K *k, IrVal v, double f)
{
    double g = cst_op(k, v)->attr.f;
    if (isnan(f)) assert_true(isnan(g));
    else assert_memory_equal(&g, &f, sizeof f);
}
static void want_op(K *k, IrVal v, IrOpcode opc) { assert_int_equal(def(k, v)->opc, opc); }

static int count(K *k, IrBlk blk, IrOpcode opc)
{
    int n = 0;
    IrBlock *b = ir_blk(k->f, blk);
    for (uint32_t i = 0; i < b->nops; i++) {
        IrOp *op = ir_op(k->f, b->ops[i]);
        if (op->opc == opc) n++;
        for (uint32_t r = 0; r < op->nregion; r++) n += count(k, op->region[r], opc);
    }
    return n;
}

static void run(K *k, const char *pass)
{
    PassCtx cx = {&k->d, false};
    const PassInfo *p = pass_find(pass);
    assert_non_null(p);
    p->run(k->f, &cx);
    if (!ir_verify(k->f, &k->d, pass)) {
        StrBuf sb = {0};
        ir_print_func(&sb, k->f);
        fail_msg("invalid IR after %s:\n%s", pass, sb.s);
    }
}

static IrVal ci(K *k, DType dt, int64_t v) { return ir_const_int(&k->b, dt, v); }
static IrVal cf(K *k, DType dt, double v) { return ir_const_float(&k->b, dt, v); }
static IrVal bin(K *k, IrOpcode opc, IrVal x, IrVal y) { return ir_binary(&k->b, opc, x, y); }
static IrVal cast(K *k, IrVal x, DType to)
{
    return ir_build1(&k->b, IR_CAST, &x, 1, ir_ty_with_dt(ir_vty(k->f, x), to, false), NULL);
}
static IrVal splat(K *k, IrVal x, int n)
{
    int32_t d[1] = {n};
    return ir_build1(&k->b, IR_SPLAT, &x, 1, ir_ty_tile((DType)ir_vty(k->f, x).dt, false, 1, d), NULL);
}

/* ---- fold ----------------------------------------------------------------------- */

static void fold_integers(void **state)
{
    K k;
    kbegin(&k, "ints");
    sink(&k, bin(&k, IR_ADD, ci(&k, DT_I32, 7), ci(&k, DT_I32, 5)));
    sink(&k, bin(&k, IR_ADD, ci(&k, DT_I8, 100), ci(&k, DT_I8, 100)));
    sink(&k, bin(&k, IR_ADD, ci(&k, DT_U8, 200), ci(&k, DT_U8, 100)));
    sink(&k, bin(&k, IR_DIV, ci(&k, DT_I32, INT32_MIN), ci(&k, DT_I32, -1)));
    sink(&k, bin(&k, IR_REM, ci(&k, DT_I32, -7), ci(&k, DT_I32, 2)));
    sink(&k, bin(&k, IR_DIV, ci(&k, DT_I32, -7), ci(&k, DT_I32, 2)));
    sink(&k, bin(&k, IR_DIV, ci(&k, DT_U32, 0xFFFFFFFE), ci(&k, DT_U32, 2)));
    sink(&k, bin(&k, IR_DIV, ci(&k, DT_I64, INT64_MIN), ci(&k, DT_I64, -1)));
    sink(&k, bin(&k, IR_SHL, ci(&k, DT_I32, 1), ci(&k, DT_I32, 32)));
    sink(&k, bin(&k, IR_SHR, ci(&k, DT_I32, -8), ci(&k, DT_I32, 40)));
    sink(&k, bin(&k, IR_SHR, ci(&k, DT_I32, -8), ci(&k, DT_I32, 1)));
    sink(&k, bin(&k, IR_SHR, ci(&k, DT_U32, 0x80000000), ci(&k, DT_U32, 31)));
    sink(&k, bin(&k, IR_MAX, ci(&k, DT_U8, 255), ci(&k, DT_U8, 1)));
    sink(&k, bin(&k, IR_MIN, ci(&k, DT_I8, -1), ci(&k, DT_I8, 1)));
    sink(&k, ir_cmp(&k.b, CMP_LT, ci(&k, DT_U32, 0xFFFFFFFF), ci(&k, DT_U32, 1)));
    sink(&k, ir_cmp(&k.b, CMP_LT, ci(&k, DT_I32, -1), ci(&k, DT_I32, 1)));
    sink(&k, ir_unary(&k.b, IR_NEG, ci(&k, DT_I16, INT16_MIN)));
    sink(&k, ir_unary(&k.b, IR_NOT, ci(&k, DT_I1, 1)));
    sink(&k, ir_unary(&k.b, IR_ABS, ci(&k, DT_I32, -5)));
    kend(&k);
    run(&k, "fold");
    int64_t want[] = {12, -56, 44, INT32_MIN, -1, -3, 0x7FFFFFFF, INT64_MIN, 0, -1, -4, 1, 255, -1, 0, 1,
                      INT16_MIN, 0, 5};
    for (int i = 0; i < (int)TL_COUNTOF(want); i++) want_i(&k, stored(&k, i), want[i]);
    kfree(&k);
}

static void fold_keeps_division_by_zero(void **state)
{
    K k;
    kbegin(&k, "divzero");
    sink(&k, bin(&k, IR_DIV, ci(&k, DT_I32, 1), ci(&k, DT_I32, 0)));
    sink(&k, bin(&k, IR_REM, ci(&k, DT_U8, 1), ci(&k, DT_U8, 0)));
    sink(&k, bin(&k, IR_DIV, cf(&k, DT_F32, 1), cf(&k, DT_F32, 0)));
    kend(&k);
    run(&k, "fold");
    want_op(&k, stored(&k, 0), IR_DIV);
    want_op(&k, stored(&k, 1), IR_REM);
    want_f(&k, stored(&k, 2), INFINITY);
    kfree(&k);
}

static void fold_floats(void **state)
{
    K k;
    kbegin(&k, "floats");
    sink(&k, bin(&k, IR_ADD, cf(&k, DT_F16, 1.0), cf(&k, DT_F16, 1.0 / 2048))); /* tie: to even */
    sink(&k, bin(&k, IR_ADD, cf(&k, DT_F32, 0.1f), cf(&k, DT_F32, 0.2f)));
    sink(&k, bin(&k, IR_MUL, cf(&k, DT_F16, 300), cf(&k, DT_F16, 300)));   /* overflows to inf */
    sink(&k, bin(&k, IR_MAX, cf(&k, DT_F32, NAN), cf(&k, DT_F32, 1)));
    sink(&k, ir_cmp(&k.b, CMP_NE, cf(&k, DT_F32, NAN), cf(&k, DT_F32, NAN)));
    sink(&k, ir_cmp(&k.b, CMP_EQ, cf(&k, DT_F32, NAN), cf(&k, DT_F32, NAN)));
    sink(&k, bin(&k, IR_REM, cf(&k, DT_F64, -7.5), cf(&k, DT_F64, 2)));
    sink(&k, ir_unary(&k.b, IR_SQRT, cf(&k, DT_F32, 2)));
    sink(&k, bin(&k, IR_MAX, cf(&k, DT_F32, -0.0), cf(&k, DT_F32, 0.0)));    /* -0 < +0 */
    sink(&k, bin(&k, IR_MIN, cf(&k, DT_F32, 0.0), cf(&k, DT_F32, -0.0)));
    IrVal o[3] = {cf(&k, DT_F64, 2), cf(&k, DT_F64, 3), cf(&k, DT_F64, 1)};
    sink(&k, ir_build1(&k.b, IR_FMA, o, 3, ir_ty_scalar(DT_F64), NULL));
    /* f32 fma rounds once: a*b+c is just above a tie that double rounding would break to even */
    IrVal a = cf(&k, DT_F32, 1 + 0x1p-12);
    IrVal o2[3] = {a, a, cf(&k, DT_F32, 0x1p-80)};
    sink(&k, ir_build1(&k.b, IR_FMA, o2, 3, ir_ty_scalar(DT_F32), NULL));
    /* math on an integer operand computes on it converted to the float result type */
    IrVal two = ci(&k, DT_I32, 2);
    sink(&k, ir_build1(&k.b, IR_EXP, &two, 1, ir_ty_scalar(DT_F64), NULL));
    kend(&k);
    run(&k, "fold");
    want_f(&k, stored(&k, 0), 1.0);
    want_f(&k, stored(&k, 1), (double)(0.1f + 0.2f));
    want_f(&k, stored(&k, 2), INFINITY);
    want_f(&k, stored(&k, 3), NAN);
    want_i(&k, stored(&k, 4), 1);
    want_i(&k, stored(&k, 5), 0);
    want_f(&k, stored(&k, 6), -1.5);
    want_f(&k, stored(&k, 7), (double)sqrtf(2.0f));
    want_f(&k, stored(&k, 8), 0.0);
    want_f(&k, stored(&k, 9), -0.0);
    want_f(&k, stored(&k, 10), 7);
    want_f(&k, stored(&k, 11), 1 + 0x1p-11 + 0x1p-23);
    want_f(&k, stored(&k, 12), exp(2.0));
    kfree(&k);
}

static void fold_casts(void **state)
{
    K k;
    kbegin(&k, "casts");
    sink(&k, cast(&k, cf(&k, DT_F32, 300.5), DT_I8));
    sink(&k, cast(&k, cf(&k, DT_F32, -2.9), DT_I32));
    sink(&k, cast(&k, cf(&k, DT_F32, NAN), DT_I32));
    sink(&k, cast(&k, cf(&k, DT_F32, -5), DT_U16));
    sink(&k, cast(&k, cf(&k, DT_F32, 1e10), DT_F8E4M3));
    sink(&k, cast(&k, cf(&k, DT_F32, -1e10), DT_F8E5M2));
    sink(&k, cast(&k, cf(&k, DT_F32, 1e10), DT_F16));
    sink(&k, cast(&k, ci(&k, DT_I32, 2), DT_I1));
    sink(&k, cast(&k, ci(&k, DT_I32, 300), DT_U8));
    sink(&k, cast(&k, ci(&k, DT_I8, -1), DT_U32));
    sink(&k, cast(&k, ci(&k, DT_U8, 255), DT_I32));
    sink(&k, cast(&k, ci(&k, DT_I32, 16777217), DT_F32));
    IrVal one = cf(&k, DT_F32, 1.0);
    sink(&k, ir_build1(&k.b, IR_BITCAST, &one, 1, ir_ty_scalar(DT_I32), NULL));
    IrVal bits = ci(&k, DT_U16, 0x3C00);
    sink(&k, ir_build1(&k.b, IR_BITCAST, &bits, 1, ir_ty_scalar(DT_F16), NULL));
    kend(&k);
    run(&k, "fold");
    want_i(&k, stored(&k, 0), 127);
    want_i(&k, stored(&k, 1), -2);
    want_i(&k, stored(&k, 2), 0);
    want_i(&k, stored(&k, 3), 0);
    want_f(&k, stored(&k, 4), 448);
    want_f(&k, stored(&k, 5), -57344);
    want_f(&k, stored(&k, 6), INFINITY);
    want_i(&k, stored(&k, 7), 1);
    want_i(&k, stored(&k, 8), 44);
    want_i(&k, stored(&k, 9), 0xFFFFFFFF);
    want_i(&k, stored(&k, 10), 255);
    want_f(&k, stored(&k, 11), 16777216);
    want_i(&k, stored(&k, 12), 0x3F800000);
    want_f(&k, stored(&k, 13), 1.0);
    kfree(&k);
}

static void fold_splats(void **state)
{
    K k;
    kbegin(&k, "splats");
    IrVal s = bin(&k, IR_MUL, splat(&k, ci(&k, DT_I32, 3), 64), splat(&k, ci(&k, DT_I32, 4), 64));
    sink(&k, s);
    sink(&k, ir_cmp(&k.b, CMP_GT, splat(&k, cf(&k, DT_F32, 2), 8), splat(&k, cf(&k, DT_F32, 1), 8)));
    /* a splat of a constant stays a splat: not turned into anything else */
    sink(&k, splat(&k, ci(&k, DT_I32, 9), 16));
    /* reshape and broadcast of a splat become a splat */
    IrVal x = param(&k, ir_ty_scalar(DT_F32));
    int32_t d2[2] = {1, 32}, d3[2] = {16, 32};
    IrVal sp = ir_build1(&k.b, IR_SPLAT, &x, 1, ir_ty_tile(DT_F32, false, 2, d2), NULL);
    sink(&k, ir_build1(&k.b, IR_BROADCAST, &sp, 1, ir_ty_tile(DT_F32, false, 2, d3), NULL));
    kend(&k);
    run(&k, "fold");
    IrVal v = stored(&k, 0);
    want_op(&k, v, IR_SPLAT);
    want_i(&k, v, 12);
    assert_int_equal(ir_vty(k.f, v).dims[0], 64);
    want_op(&k, stored(&k, 1), IR_SPLAT);
    want_i(&k, stored(&k, 1), 1);
    assert_int_equal(ir_vty(k.f, stored(&k, 1)).dt, DT_I1);
    want_op(&k, stored(&k, 2), IR_SPLAT);
    want_op(&k, stored(&k, 3), IR_SPLAT);
    assert_int_equal(ir_opnd(k.f, def(&k, stored(&k, 3)), 0), x);
    assert_int_equal(ir_vty(k.f, stored(&k, 3)).dims[0], 16);
    assert_int_equal(count(&k, k.f->body, IR_BROADCAST), 0);
    kfree(&k);
}

static void fold_identities(void **state)
{
    K k;
    kbegin(&k, "ident");
    IrVal x = param(&k, ir_ty_scalar(DT_I32));
    IrVal y = param(&k, ir_ty_scalar(DT_F32));
    IrVal b = param(&k, ir_ty_scalar(DT_I1));
    sink(&k, bin(&k, IR_ADD, ci(&k, DT_I32, 0), x));             /* 0: x */
    sink(&k, bin(&k, IR_MUL, x, ci(&k, DT_I32, 1)));             /* 1: x */
    sink(&k, bin(&k, IR_MUL, x, ci(&k, DT_I32, 0)));             /* 2: 0 */
    sink(&k, bin(&k, IR_SUB, x, x));                             /* 3: 0 */
    sink(&k, bin(&k, IR_AND, x, ci(&k, DT_I32, -1)));            /* 4: x */
    sink(&k, bin(&k, IR_OR, x, ci(&k, DT_I32, -1)));             /* 5: -1 */
    sink(&k, bin(&k, IR_SHL, x, ci(&k, DT_I32, 0)));             /* 6: x */
    sink(&k, ir_unary(&k.b, IR_NEG, ir_unary(&k.b, IR_NEG, x))); /* 7: x */
    sink(&k, cast(&k, x, DT_I32));                               /* 8: x */
    sink(&k, bin(&k, IR_ADD, y, cf(&k, DT_F32, 0.0)));           /* 9: kept: -0 + 0 is +0 */
    sink(&k, bin(&k, IR_ADD, y, cf(&k, DT_F32, -0.0)));          /* 10: y */
    sink(&k, bin(&k, IR_MUL, y, cf(&k, DT_F32, 0.0)));           /* 11: kept: NaN, inf, -0 */
    sink(&k, bin(&k, IR_SUB, y, y));                             /* 12: kept */
    sink(&k, bin(&k, IR_MUL, y, cf(&k, DT_F32, 1.0)));           /* 13: y */
    IrVal o[3] = {ci(&k, DT_I1, 1), x, ci(&k, DT_I32, 5)};
    sink(&k, ir_build1(&k.b, IR_SELECT, o, 3, ir_ty_scalar(DT_I32), NULL)); /* 14: x */
    sink(&k, bin(&k, IR_AND, b, ci(&k, DT_I1, 1)));              /* 15: b */
    sink(&k, bin(&k, IR_XOR, x, x));                             /* 16: 0 */
    sink(&k, ir_cmp(&k.b, CMP_LE, x, x));                        /* 17: 1 */
    sink(&k, bin(&k, IR_DIV, x, ci(&k, DT_I32, 0)));             /* 18: kept */
    kend(&k);
    run(&k, "fold");
    assert_int_equal(stored(&k, 0), x);
    assert_int_equal(stored(&k, 1), x);
    want_i(&k, stored(&k, 2), 0);
    want_i(&k, stored(&k, 3), 0);
    assert_int_equal(stored(&k, 4), x);
    want_i(&k, stored(&k, 5), -1);
    assert_int_equal(stored(&k, 6), x);
    assert_int_equal(stored(&k, 7), x);
    assert_int_equal(stored(&k, 8), x);
    want_op(&k, stored(&k, 9), IR_ADD);
    assert_int_equal(stored(&k, 10), y);
    want_op(&k, stored(&k, 11), IR_MUL);
    want_op(&k, stored(&k, 12), IR_SUB);
    assert_int_equal(stored(&k, 13), y);
    assert_int_equal(stored(&k, 14), x);
    assert_int_equal(stored(&k, 15), b);
    want_i(&k, stored(&k, 16), 0);
    want_i(&k, stored(&k, 17), 1);
    want_op(&k, stored(&k, 18), IR_DIV);
    kfree(&k);
}

/* if (cond) { yield x + 1 } else { yield 0 }, and its result stored */
static IrVal build_if(K *k, IrVal cond, IrVal x)
{
    IrType t = ir_vty(k->f, x);
    uint32_t id = ir_build(&k->b, IR_IF, &cond, 1, &t, 1, NULL);
    IrBuilder save = k->b;
    ir_builder_at_end(&k->b, k->f, ir_op(k->f, id)->region[0]);
    IrVal a = bin(k, IR_ADD, x, ci(k, DT_I32, 1));
    ir_build(&k->b, IR_YIELD, &a, 1, NULL, 0, NULL);
    ir_builder_at_end(&k->b, k->f, ir_op(k->f, id)->region[1]);
    IrVal z = ci(k, DT_I32, 0);
    ir_build(&k->b, IR_YIELD, &z, 1, NULL, 0, NULL);
    k->b = save;
    return ir_op(k->f, id)->res;
}

static void fold_if_constant(void **state)
{
    K k;
    kbegin(&k, "ifs");
    IrVal x = param(&k, ir_ty_scalar(DT_I32));
    sink(&k, build_if(&k, ci(&k, DT_I1, 1), x));
    sink(&k, build_if(&k, ir_cmp(&k.b, CMP_GT, ci(&k, DT_I32, 1), ci(&k, DT_I32, 2)), x));
    IrVal c = param(&k, ir_ty_scalar(DT_I1));
    sink(&k, build_if(&k, c, x));
    kend(&k);
    run(&k, "fold");
    assert_int_equal(count(&k, k.f->body, IR_IF), 1);
    IrOp *a = def(&k, stored(&k, 0));
    assert_int_equal(a->opc, IR_ADD);
    assert_int_equal(a->parent, k.f->body);
    want_i(&k, stored(&k, 1), 0);
    want_op(&k, stored(&k, 2), IR_IF);
    kfree(&k);
}

/* for i = lo to hi step st iter(c = init) { yield c + i } */
static IrVal build_for(K *k, IrVal lo, IrVal hi, IrVal st, IrVal init)
{
    IrVal o[4] = {lo, hi, st, init};
    IrType t = ir_vty(k->f, init);
    uint32_t id = ir_build(&k->b, IR_FOR, o, 4, &t, 1, NULL);
    IrBlk body = ir_op(k->f, id)->region[0];
    IrVal iv = ir_block_add_arg(k->f, body, ir_vty(k->f, lo));
    IrVal c = ir_block_add_arg(k->f, body, t);
    IrBuilder save = k->b;
    ir_builder_at_end(&k->b, k->f, body);
    IrVal n = bin(k, IR_ADD, c, iv);
    ir_build(&k->b, IR_YIELD, &n, 1, NULL, 0, NULL);
    k->b = save;
    return ir_op(k->f, id)->res;
}

static void fold_for_zero_trip(void **state)
{
    K k;
    kbegin(&k, "fors");
    IrVal x = param(&k, ir_ty_scalar(DT_I32));
    sink(&k, build_for(&k, ci(&k, DT_I32, 10), ci(&k, DT_I32, 0), ci(&k, DT_I32, 1), x));
    sink(&k, build_for(&k, ci(&k, DT_I32, 0), ci(&k, DT_I32, 10), ci(&k, DT_I32, -1), x));
    sink(&k, build_for(&k, ci(&k, DT_I32, 0), ci(&k, DT_I32, 10), ci(&k, DT_I32, 1), x));  /* runs */
    sink(&k, build_for(&k, ci(&k, DT_I32, 10), ci(&k, DT_I32, 0), ci(&k, DT_I32, 0), x)); /* step 0 */
    sink(&k, build_for(&k, ci(&k, DT_U32, 0xFFFFFFFF), ci(&k, DT_U32, 1), ci(&k, DT_U32, 1), x));
    kend(&k);
    run(&k, "fold");
    assert_int_equal(stored(&k, 0), x);
    assert_int_equal(stored(&k, 1), x);
    want_op(&k, stored(&k, 2), IR_FOR);
    want_op(&k, stored(&k, 3), IR_FOR);
    assert_int_equal(stored(&k, 4), x);
    kfree(&k);
}

/* ---- cse ------------------------------------------------------------------------- */

static void cse_merges_duplicates(void **state)
{
    K k;
    kbegin(&k, "dups");
    IrVal x = param(&k, ir_ty_scalar(DT_I32)), y = param(&k, ir_ty_scalar(DT_I32));
    IrVal a1 = bin(&k, IR_ADD, x, y), a2 = bin(&k, IR_ADD, y, x);    /* commutative */
    IrVal s1 = bin(&k, IR_SUB, x, y), s2 = bin(&k, IR_SUB, y, x);    /* not */
    IrVal c1 = ir_cmp(&k.b, CMP_LT, x, y), c2 = ir_cmp(&k.b, CMP_GT, x, y);
    IrVal k1 = ci(&k, DT_I32, 4), k2 = ci(&k, DT_I32, 4), k3 = ci(&k, DT_I64, 4);
    IrVal f1 = cf(&k, DT_F32, 0.0), f2 = cf(&k, DT_F32, -0.0);
    IrVal p1 = ir_build1(&k.b, IR_PROGRAM_ID, NULL, 0, ir_ty_scalar(DT_I32), NULL);
    IrAttr ax1 = {0};
    ax1.i = 1;
    IrVal p2 = ir_build1(&k.b, IR_PROGRAM_ID, NULL, 0, ir_ty_scalar(DT_I32), &ax1);
    IrVal p3 = ir_build1(&k.b, IR_PROGRAM_ID, NULL, 0, ir_ty_scalar(DT_I32), NULL);
    IrVal outs[] = {a1, a2, s1, s2, c1, c2, k1, k2, k3, f1, f2, p1, p2, p3};
    for (size_t i = 0; i < TL_COUNTOF(outs); i++) sink(&k, outs[i]);
    kend(&k);
    run(&k, "cse");
    assert_int_equal(stored(&k, 1), a1);
    assert_int_not_equal(stored(&k, 3), s1);
    assert_int_not_equal(stored(&k, 5), c1);
    assert_int_equal(stored(&k, 7), k1);
    assert_int_not_equal(stored(&k, 8), k1);
    assert_int_not_equal(stored(&k, 10), f1);
    assert_int_not_equal(stored(&k, 12), p1);
    assert_int_equal(stored(&k, 13), p1);
    assert_int_equal(count(&k, k.f->body, IR_ADD), 1);
    kfree(&k);
}

static void cse_respects_regions(void **state)
{
    K k;
    kbegin(&k, "scopes");
    IrVal x = param(&k, ir_ty_scalar(DT_I32)), c = param(&k, ir_ty_scalar(DT_I1));
    IrVal outer = bin(&k, IR_MUL, x, x);
    IrType t = ir_ty_scalar(DT_I32);
    uint32_t id = ir_build(&k.b, IR_IF, &c, 1, &t, 1, NULL);
    IrBuilder save = k.b;
    ir_builder_at_end(&k.b, k.f, ir_op(k.f, id)->region[0]);
    IrVal in0 = bin(&k, IR_MUL, x, x);          /* same as outer: reused */
    IrVal t0 = bin(&k, IR_SUB, in0, x);
    ir_build(&k.b, IR_YIELD, &t0, 1, NULL, 0, NULL);
    ir_builder_at_end(&k.b, k.f, ir_op(k.f, id)->region[1]);
    IrVal t1 = bin(&k, IR_SUB, outer, x);       /* same as t0, but t0 is in the other region */
    ir_build(&k.b, IR_YIELD, &t1, 1, NULL, 0, NULL);
    k.b = save;
    IrVal after = bin(&k, IR_SUB, outer, x);    /* t0/t1 are not visible here */
    sink(&k, ir_op(k.f, id)->res);
    sink(&k, after);
    kend(&k);
    run(&k, "cse");
    IrOp *ifop = ir_op(k.f, id);
    IrOp *y0 = ir_op(k.f, ir_blk(k.f, ifop->region[0])->ops[ir_blk(k.f, ifop->region[0])->nops - 1]);
    IrOp *s0 = def(&k, ir_opnd(k.f, y0, 0));
    assert_int_equal(ir_opnd(k.f, s0, 0), outer);
    assert_int_equal(count(&k, ifop->region[0], IR_MUL), 0);
    assert_int_equal(count(&k, ifop->region[1], IR_SUB), 1);
    assert_int_equal(count(&k, k.f->body, IR_SUB), 3);
    assert_int_equal(stored(&k, 1), after);
    kfree(&k);
}

/* ---- dce ------------------------------------------------------------------------- */

static void dce_removes_unused_pure_ops(void **state)
{
    K k;
    kbegin(&k, "dead");
    IrVal x = param(&k, ir_ty_scalar(DT_I32));
    IrVal a = bin(&k, IR_ADD, x, x);
    bin(&k, IR_MUL, a, a);                       /* dead, and makes a dead */
    IrVal p = param(&k, ir_ty_ptr(DT_I32));
    ir_build1(&k.b, IR_LOAD, &p, 1, ir_ty_scalar(DT_I32), NULL); /* memory: kept */
    IrVal kept = bin(&k, IR_SUB, x, x);
    sink(&k, kept);
    kend(&k);
    run(&k, "dce");
    assert_int_equal(count(&k, k.f->body, IR_ADD), 0);
    assert_int_equal(count(&k, k.f->body, IR_MUL), 0);
    assert_int_equal(count(&k, k.f->body, IR_LOAD), 1);
    assert_int_equal(stored(&k, 0), kept);
    assert_int_equal(ir_blk(k.f, k.f->body)->nops, 4); /* load, sub, store, return */
    kfree(&k);
}

static void dce_trims_loop_carried_values(void **state)
{
    K k;
    kbegin(&k, "loops");
    IrVal x = param(&k, ir_ty_scalar(DT_I32));
    IrVal o[5] = {ci(&k, DT_I32, 0), x, ci(&k, DT_I32, 1), x, ci(&k, DT_I32, 0)};
    IrType t[2] = {ir_ty_scalar(DT_I32), ir_ty_scalar(DT_I32)};
    uint32_t id = ir_build(&k.b, IR_FOR, o, 5, t, 2, NULL);
    IrBlk body = ir_op(k.f, id)->region[0];
    IrVal iv = ir_block_add_arg(k.f, body, t[0]);
    IrVal c0 = ir_block_add_arg(k.f, body, t[0]);
    IrVal c1 = ir_block_add_arg(k.f, body, t[0]);
    IrBuilder save = k.b;
    ir_builder_at_end(&k.b, k.f, body);
    IrVal n0 = bin(&k, IR_ADD, c0, iv);        /* c0: only feeds its own yield */
    IrVal n1 = bin(&k, IR_MUL, c1, iv);        /* c1: the result is used */
    IrVal y[2] = {n0, n1};
    ir_build(&k.b, IR_YIELD, y, 2, NULL, 0, NULL);
    k.b = save;
    sink(&k, ir_op(k.f, id)->res + 1);
    /* a loop with no effect and no used result disappears */
    build_for(&k, ci(&k, DT_I32, 0), x, ci(&k, DT_I32, 1), x);
    kend(&k);
    run(&k, "dce");
    assert_int_equal(count(&k, k.f->body, IR_FOR), 1);
    IrOp *nf = def(&k, stored(&k, 0));
    assert_int_equal(nf->opc, IR_FOR);
    assert_int_equal(nf->nres, 1);
    assert_int_equal(nf->nopnd, 4);
    assert_int_equal(ir_opnd(k.f, nf, 3), o[4]);
    IrBlock *nb = ir_blk(k.f, nf->region[0]);
    assert_int_equal(nb->nargs, 2);
    assert_int_equal(nb->args[1], c1);
    assert_int_equal(k.f->vals[c1].idx, 1);
    assert_int_equal(k.f->vals[c1].def, nf->region[0]);
    assert_int_equal(nb->nops, 2);          /* mul, yield */
    IrOp *ny = ir_op(k.f, nb->ops[1]);
    assert_int_equal(ny->nopnd, 1);
    assert_int_equal(ir_opnd(k.f, ny, 0), n1);
    kfree(&k);
}

static void dce_keeps_effects_in_loops(void **state)
{
    K k;
    kbegin(&k, "effects");
    IrVal x = param(&k, ir_ty_scalar(DT_I32)), p = param(&k, ir_ty_ptr(DT_I32));
    IrVal o[3] = {ci(&k, DT_I32, 0), x, ci(&k, DT_I32, 1)};
    uint32_t id = ir_build(&k.b, IR_FOR, o, 3, NULL, 0, NULL);
    IrBlk body = ir_op(k.f, id)->region[0];
    IrVal iv = ir_block_add_arg(k.f, body, ir_ty_scalar(DT_I32));
    IrBuilder save = k.b;
    ir_builder_at_end(&k.b, k.f, body);
    IrVal so[2] = {p, bin(&k, IR_ADD, iv, x)};
    bin(&k, IR_SUB, iv, x);                     /* dead inside a live loop */
    ir_build(&k.b, IR_STORE, so, 2, NULL, 0, NULL);
    ir_build(&k.b, IR_YIELD, NULL, 0, NULL, 0, NULL);
    k.b = save;
    /* an IF whose result is unused but which stores: kept, result dropped */
    IrType t = ir_ty_scalar(DT_I32);
    IrVal c = param(&k, ir_ty_scalar(DT_I1));
    uint32_t iid = ir_build(&k.b, IR_IF, &c, 1, &t, 1, NULL);
    ir_builder_at_end(&k.b, k.f, ir_op(k.f, iid)->region[0]);
    IrVal so2[2] = {p, x};
    ir_build(&k.b, IR_STORE, so2, 2, NULL, 0, NULL);
    ir_build(&k.b, IR_YIELD, &x, 1, NULL, 0, NULL);
    ir_builder_at_end(&k.b, k.f, ir_op(k.f, iid)->region[1]);
    IrVal z = ci(&k, DT_I32, 0);
    ir_build(&k.b, IR_YIELD, &z, 1, NULL, 0, NULL);
    k.b = save;
    kend(&k);
    run(&k, "dce");
    assert_int_equal(count(&k, k.f->body, IR_FOR), 1);
    assert_int_equal(count(&k, k.f->body, IR_SUB), 0);
    assert_int_equal(count(&k, k.f->body, IR_ADD), 1);
    assert_int_equal(count(&k, k.f->body, IR_IF), 1);
    assert_int_equal(count(&k, k.f->body, IR_STORE), 2);
    assert_int_equal(count(&k, k.f->body, IR_CONST), 2); /* the loop's bounds */
    IrBlock *bb = ir_blk(k.f, k.f->body);
    IrOp *nif = ir_op(k.f, bb->ops[bb->nops - 2]);
    assert_int_equal(nif->opc, IR_IF);
    assert_int_equal(nif->nres, 0);
    kfree(&k);
}

static void dce_trims_while(void **state)
{
    K k;
    kbegin(&k, "whiles");
    IrVal x = param(&k, ir_ty_scalar(DT_I32));
    IrType t[2] = {ir_ty_scalar(DT_I32), ir_ty_scalar(DT_I32)};
    IrVal init[2] = {x, x};
    uint32_t id = ir_build(&k.b, IR_WHILE, init, 2, t, 2, NULL);
    IrBlk before = ir_op(k.f, id)->region[0], after = ir_op(k.f, id)->region[1];
    IrVal b0 = ir_block_add_arg(k.f, before, t[0]);
    IrVal b1 = ir_block_add_arg(k.f, before, t[0]);   /* carried, only feeds itself */
    IrBuilder save = k.b;
    ir_builder_at_end(&k.b, k.f, before);
    IrVal cond = ir_cmp(&k.b, CMP_LT, b0, x);
    IrVal co[3] = {cond, b0, b1};
    ir_build(&k.b, IR_CONDITION, co, 3, NULL, 0, NULL);
    IrVal a0 = ir_block_add_arg(k.f, after, t[0]);
    IrVal a1 = ir_block_add_arg(k.f, after, t[0]);
    ir_builder_at_end(&k.b, k.f, after);
    IrVal y[2] = {bin(&k, IR_ADD, a0, x), bin(&k, IR_ADD, a1, x)};
    ir_build(&k.b, IR_YIELD, y, 2, NULL, 0, NULL);
    k.b = save;
    sink(&k, ir_op(k.f, id)->res + 0);
    kend(&k);
    run(&k, "dce");
    IrOp *w = def(&k, stored(&k, 0));
    assert_int_equal(w->opc, IR_WHILE);
    assert_int_equal(w->nres, 1);
    assert_int_equal(w->nopnd, 1);
    assert_int_equal(ir_blk(k.f, w->region[0])->nargs, 1);
    assert_int_equal(ir_blk(k.f, w->region[1])->nargs, 1);
    assert_int_equal(count(&k, w->region[1], IR_ADD), 1);
    assert_int_equal(ir_blk(k.f, w->region[0])->args[0], b0);
    assert_int_equal(ir_blk(k.f, w->region[1])->args[0], a0);
    IrBlock *bb = ir_blk(k.f, w->region[0]), *ab = ir_blk(k.f, w->region[1]);
    IrOp *cond_op = ir_op(k.f, bb->ops[bb->nops - 1]);
    IrOp *yield_op = ir_op(k.f, ab->ops[ab->nops - 1]);
    assert_int_equal(cond_op->nopnd, 2);
    assert_int_equal(ir_opnd(k.f, cond_op, 1), b0);
    assert_int_equal(yield_op->nopnd, 1);
    assert_int_equal(ir_opnd(k.f, yield_op, 0), y[0]);
    kfree(&k);
}

/* ---- the registry and the pipeline ----------------------------------------------- */

static void registry(void **state)
{
    assert_true(pass_count >= 3);
    assert_string_equal(pass_table[0].name, "fold");
    assert_string_equal(pass_table[1].name, "cse");
    assert_string_equal(pass_table[2].name, "dce");
    assert_ptr_equal(pass_find("cse"), &pass_table[1]);
    assert_null(pass_find("nope"));
    assert_null(pass_find(""));
}

static void build_pipeline_kernel(K *k)
{
    IrVal x = param(k, ir_ty_scalar(DT_I32));
    IrVal s = bin(k, IR_ADD, ci(k, DT_I32, 2), ci(k, DT_I32, 3));
    IrVal a = bin(k, IR_MUL, x, s), b = bin(k, IR_MUL, s, x);
    bin(k, IR_SUB, a, b);
    sink(k, a);
    sink(k, b);
    kend(k);
}

static void pipeline_default(void **state)
{
    K k;
    kbegin(&k, "pipe");
    build_pipeline_kernel(&k);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    const char *after[] = {"all"};
    PassDump dump = {after, 1, NULL, out, NULL};
    assert_true(pass_run_pipeline(k.m, NULL, 0, &dump, &k.d));
    fclose(out);
    /* fold made 5, cse merged the two muls, dce dropped the sub and the 2 and 3 */
    assert_int_equal(stored(&k, 0), stored(&k, 1));
    want_i(&k, ir_opnd(k.f, def(&k, stored(&k, 0)), 1), 5);
    assert_int_equal(count(&k, k.f->body, IR_CONST), 1);
    assert_int_equal(count(&k, k.f->body, IR_SUB), 0);
    const char *h1 = strstr(buf, "// -----// IR Dump After fold (kernel pipe) //----- //\n");
    const char *h2 = strstr(buf, "// -----// IR Dump After cse (kernel pipe) //----- //\n");
    const char *h3 = strstr(buf, "// -----// IR Dump After dce (kernel pipe) //----- //\n");
    assert_true(h1 == buf && h2 > h1 && h3 > h2);
    free(buf);
    kfree(&k);
}

static void pipeline_named_to_dir(void **state)
{
    K k;
    kbegin(&k, "pipe");
    build_pipeline_kernel(&k);
    IrFunc *g = ir_func_new(k.m, "second", "second", (SrcLoc){0, 0});
    IrBuilder gb;
    ir_builder_at_end(&gb, g, g->body);
    ir_build(&gb, IR_RETURN, NULL, 0, NULL, 0, NULL);
    char dir[] = "/tmp/tilec-passes-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *names[] = {"cse", "dce"};
    const char *after[] = {"dce"};
    PassDump dump = {after, 1, dir, NULL, NULL};
    assert_true(pass_run_pipeline(k.m, names, 2, &dump, &k.d));
    char path[256];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/01-pipe-dce.tir", dir);
    char *text = tl_read_file(path, &n);
    assert_non_null(text);
    assert_non_null(strstr(text, "kernel @pipe"));
    assert_null(strstr(text, " sub "));
    free(text);
    unlink(path);
    snprintf(path, sizeof path, "%s/02-second-dce.tir", dir);
    text = tl_read_file(path, &n);
    assert_non_null(text);
    assert_non_null(strstr(text, "kernel @second"));
    free(text);
    unlink(path);
    snprintf(path, sizeof path, "%s/03-pipe-cse.tir", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(rmdir(dir), 0);
    /* cse ran but fold did not: 2 + 3 is still there */
    assert_int_equal(count(&k, k.f->body, IR_ADD), 1);
    kfree(&k);
}

/* A function the verifier rejects after a pass of the default pipeline is an
 * internal error naming the pass and the kernel: the process aborts.  Run in a
 * child, its stderr captured. */
static void pipeline_verify_failure_aborts(void **state)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        K k;
        kbegin(&k, "broken");
        ci(&k, DT_I32, 1); /* the body has no return */
        pass_run_pipeline(k.m, NULL, 0, NULL, &k.d);
        _exit(0);
    }
    close(fds[1]);
    char buf[4096];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
    buf[n] = 0;
    close(fds[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
    assert_non_null(strstr(buf, "internal error in pass:fold"));
    assert_non_null(strstr(buf, "kernel 'broken'"));
}

/* After a pass of a list the user chose (--pass), the same failure is an error
 * naming the pass and the kernel, and the pipeline stops there. */
static void pipeline_verify_failure_user_list(void **state)
{
    K k;
    kbegin(&k, "broken");
    ci(&k, DT_I32, 1); /* the body has no return */
    k.d.capture = true;
    k.d.out = NULL;
    const char *names[] = {"cse", "dce"};
    assert_false(pass_run_pipeline(k.m, names, 2, NULL, &k.d));
    assert_true(k.d.nerrors >= 2);
    assert_non_null(strstr(k.d.buf.s, "does not verify after pass 'cse'"));
    assert_non_null(strstr(k.d.buf.s, "kernel 'broken'"));
    assert_null(strstr(k.d.buf.s, "'dce'"));
    kfree(&k);
}

/* An order the passes' facts (passes.def) rule out is refused before any pass
 * runs; one they allow runs. */
static void pipeline_order_checked_first(void **state)
{
    const PassInfo *layout = pass_find("layout"), *remat = pass_find("remat"), *fold = pass_find("fold");
    assert_true(pass_can_run(remat, 0));
    assert_false(pass_can_run(remat, pass_facts_after(layout, 0)));
    assert_true(pass_can_run(remat, pass_facts_after(fold, pass_facts_after(layout, 0))));
    K k;
    kbegin(&k, "order");
    build_pipeline_kernel(&k);
    k.d.capture = true;
    k.d.out = NULL;
    const char *bad[] = {"fold", "layout", "remat"};
    assert_false(pass_run_pipeline(k.m, bad, 3, NULL, &k.d));
    assert_non_null(strstr(k.d.buf.s, "'remat' cannot run after 'layout' on kernel 'order'"));
    assert_null(k.f->val_layout); /* nothing ran: not even layout */
    assert_int_equal(count(&k, k.f->body, IR_ADD), 1); /* nor fold */
    const char *good[] = {"layout", "fold", "remat", "layout"};
    assert_true(pass_run_pipeline(k.m, good, 4, NULL, &k.d));
    assert_non_null(k.f->val_layout);
    kfree(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fold_integers),
        cmocka_unit_test(fold_keeps_division_by_zero),
        cmocka_unit_test(fold_floats),
        cmocka_unit_test(fold_casts),
        cmocka_unit_test(fold_splats),
        cmocka_unit_test(fold_identities),
        cmocka_unit_test(fold_if_constant),
        cmocka_unit_test(fold_for_zero_trip),
        cmocka_unit_test(cse_merges_duplicates),
        cmocka_unit_test(cse_respects_regions),
        cmocka_unit_test(dce_removes_unused_pure_ops),
        cmocka_unit_test(dce_trims_loop_carried_values),
        cmocka_unit_test(dce_keeps_effects_in_loops),
        cmocka_unit_test(dce_trims_while),
        cmocka_unit_test(registry),
        cmocka_unit_test(pipeline_default),
        cmocka_unit_test(pipeline_named_to_dir),
        cmocka_unit_test(pipeline_verify_failure_aborts),
        cmocka_unit_test(pipeline_verify_failure_user_list),
        cmocka_unit_test(pipeline_order_checked_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
