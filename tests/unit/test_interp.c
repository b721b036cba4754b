/* test_interp.c: the reference interpreter on kernels built with the IR builder.
 *
 * Each test builds a small kernel, runs it over random data (never all zeros)
 * and compares with a float64 host reference computed here, rounded to the
 * result type: exact equality is expected, because the interpreter rounds once
 * per op exactly as the reference does.  Error tests check the message: the
 * buffer name, the offset and the op's source location.
 */
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

/* ---- kernel building ------------------------------------------------------- */

typedef struct Kb {
    IrModule *m;
    IrFunc *f;
    IrBuilder b;
} Kb;

static void kb_new(Kb *k)
{
    k->m = ir_module_new("t.tile");
    k->f = ir_func_new(k->m, "k", "k", (SrcLoc){1, 1});
    ir_builder_at_end(&k->b, k->f, k->f->body);
    k->b.loc = (SrcLoc){2, 3};
}

static void kb_free(Kb *k) { ir_module_free(k->m); }

static IrType ty1(DType dt, int n) { return ir_ty_tile(dt, false, 1, (int32_t[]){n}); }
static IrType ty2(DType dt, int r, int c) { return ir_ty_tile(dt, false, 2, (int32_t[]){r, c}); }
static IrType as_ptr(IrType t) { return ir_ty_with_dt(t, (DType)t.dt, true); }
static IrType as_dt(IrType t, DType dt) { return ir_ty_with_dt(t, dt, false); }

static IrVal prm(Kb *k, const char *name, IrType t) { return ir_func_add_param(k->f, name, t); }

static IrVal opn(Kb *k, IrOpcode opc, IrType rt, const IrVal *o, uint32_t n, int64_t ai, int64_t aj)
{
    IrAttr a = {0};
    a.i = ai;
    a.j = aj;
    return ir_build1(&k->b, opc, o, n, rt, &a);
}
static IrVal op1(Kb *k, IrOpcode opc, IrType rt, IrVal x) { return opn(k, opc, rt, &x, 1, 0, 0); }
static IrVal op2(Kb *k, IrOpcode opc, IrVal x, IrVal y)
{
    return opn(k, opc, ir_vty(k->f, x), (IrVal[]){x, y}, 2, 0, 0);
}
static IrVal cmp(Kb *k, IrCmp p, IrVal x, IrVal y) { return ir_cmp(&k->b, p, x, y); }
static IrVal splat(Kb *k, IrVal s, IrType t) { return op1(k, IR_SPLAT, t, s); }
static IrVal ci(Kb *k, DType dt, int64_t v) { return ir_const_int(&k->b, dt, v); }
static IrVal cf(Kb *k, DType dt, double v) { return ir_const_float(&k->b, dt, v); }
static IrVal arange(Kb *k, int n) { return opn(k, IR_ARANGE, ty1(DT_I32, n), NULL, 0, 0, 0); }
static IrVal pid(Kb *k, int axis) { return opn(k, IR_PROGRAM_ID, ir_ty_scalar(DT_I32), NULL, 0, axis, 0); }

/* program_id(0) * block + arange(block) */
static IrVal block_offsets(Kb *k, int block)
{
    IrVal base = op2(k, IR_MUL, pid(k, 0), ci(k, DT_I32, block));
    return op2(k, IR_ADD, splat(k, base, ty1(DT_I32, block)), arange(k, block));
}
/* p + offs (p a scalar pointer, offs an i32 tile) */
static IrVal ptr_at(Kb *k, IrVal p, IrVal offs)
{
    IrType ot = ir_vty(k->f, offs), pt = ir_vty(k->f, p);
    IrType t = as_ptr(as_dt(ot, (DType)pt.dt));
    return opn(k, IR_ADDPTR, t, (IrVal[]){splat(k, p, t), offs}, 2, 0, 0);
}
static IrVal load(Kb *k, IrVal ptrs, IrVal mask, IrVal other)
{
    IrType t = ir_vty(k->f, ptrs);
    t.isptr = 0;
    IrVal o[3] = {ptrs, mask, other};
    return opn(k, IR_LOAD, t, o, other ? 3 : mask ? 2 : 1, 0, 0);
}
static void store(Kb *k, IrVal ptrs, IrVal v, IrVal mask)
{
    IrVal o[3] = {ptrs, v, mask};
    ir_build(&k->b, IR_STORE, o, mask ? 3 : 2, NULL, 0, NULL);
}
static void ret(Kb *k) { ir_build(&k->b, IR_RETURN, NULL, 0, NULL, 0, NULL); }

/* ---- running ----------------------------------------------------------------- */

static Diag diag;
static char print_text[8192];

static void diag_reset(void)
{
    diag_free(&diag);
    diag_init(&diag, "t.tile", NULL, 0, NULL, DIAG_COLOR_NEVER);
    diag.capture = true;
}

/* The kernels built here must be valid IR: the interpreter trusts the verifier. */
static void verify(Kb *k)
{
    diag_reset();
    bool ok = ir_verify(k->f, &diag, "test");
    if (!ok) print_error("%s", diag.buf.s);
    assert_true(ok);
}

static bool run(Kb *k, InterpBuf *bufs, uint32_t nbufs, const InterpArg *args, uint32_t gx, uint32_t gy,
                uint32_t gz, uint64_t max_steps)
{
    verify(k);
    diag_reset();
    FILE *pf = fmemopen(print_text, sizeof print_text, "w");
    InterpOptions opt = {.print_out = pf, .max_steps = max_steps};
    uint32_t grid[3] = {gx, gy, gz};
    bool ok = interp_run(k->f, bufs, nbufs, args, grid, &opt, &diag);
    fclose(pf);
    return ok;
}

static const char *messages(void) { return diag.buf.s ? diag.buf.s : ""; }

static void expect_error(const char *needle)
{
    if (!strstr(messages(), needle)) print_error("expected '%s' in:\n%s\n", needle, messages());
    assert_non_null(strstr(messages(), needle));
}

static InterpArg a_ptr(uint32_t buf) { return (InterpArg){.kind = IARG_PTR, .buf = buf}; }
static InterpArg a_int(int64_t v) { return (InterpArg){.kind = IARG_SCALAR, .i = v}; }
static InterpArg a_view2(uint32_t buf, int64_t offset, int64_t r, int64_t c, int64_t ld)
{
    return (InterpArg){.kind = IARG_VIEW, .buf = buf, .offset = offset, .shape = {r, c}, .stride = {ld, 1}};
}

/* ---- data ---------------------------------------------------------------------- */

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
/* A nonzero value of magnitude in [0.05, mag), random sign. */
static double rnd_f(double mag)
{
    double u = (double)(rnd() >> 11) / 9007199254740992.0;
    double v = 0.05 + u * (mag - 0.05);
    return (rnd() & 1) ? -v : v;
}
static float *rnd_f32(int64_t n, double mag)
{
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)rnd_f(mag);
    return p;
}
static float *poisoned_f32(int64_t n)
{
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}
static InterpBuf buf_of(void *p, size_t bytes, const char *name) { return (InterpBuf){p, bytes, name}; }

/* ---- tests: memory ---------------------------------------------------------------- */

/* out = x + y over n elements with a masked tail; out has exactly n elements, so
 * a masked-off lane that touched memory would be reported. */
static void test_vadd_ragged(void **state)
{
    (void)state;
    int ns[] = {1000, 1, 256, 257, 4097};
    for (size_t t = 0; t < TL_COUNTOF(ns); t++) {
        int n = ns[t], block = 256;
        Kb k;
        kb_new(&k);
        IrVal x = prm(&k, "x", ir_ty_ptr(DT_F32)), y = prm(&k, "y", ir_ty_ptr(DT_F32));
        IrVal o = prm(&k, "out", ir_ty_ptr(DT_F32)), nn = prm(&k, "n", ir_ty_scalar(DT_I32));
        IrVal offs = block_offsets(&k, block);
        IrVal m = cmp(&k, CMP_LT, offs, splat(&k, nn, ty1(DT_I32, block)));
        IrVal s = op2(&k, IR_ADD, load(&k, ptr_at(&k, x, offs), m, 0), load(&k, ptr_at(&k, y, offs), m, 0));
        store(&k, ptr_at(&k, o, offs), s, m);
        ret(&k);
        float *xs = rnd_f32(n, 100), *ys = rnd_f32(n, 100), *os = poisoned_f32(n);
        InterpBuf bufs[] = {buf_of(xs, n * 4u, "x"), buf_of(ys, n * 4u, "y"), buf_of(os, n * 4u, "out")};
        InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_int(n)};
        assert_true(run(&k, bufs, 3, args, (uint32_t)(n + block - 1) / block, 1, 1, 0));
        for (int i = 0; i < n; i++) assert_true(os[i] == (float)((double)xs[i] + (double)ys[i]));
        free(xs), free(ys), free(os);
        kb_free(&k);
    }
}

/* load(p + offs) without a mask past the end: an error naming the buffer, the
 * offset and the location. */
static void test_out_of_bounds(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    IrVal x = prm(&k, "src", ir_ty_ptr(DT_F32)), o = prm(&k, "dst", ir_ty_ptr(DT_F32));
    IrVal offs = block_offsets(&k, 64);
    k.b.loc = (SrcLoc){7, 12};
    IrVal v = load(&k, ptr_at(&k, x, offs), 0, 0);
    k.b.loc = (SrcLoc){8, 5};
    store(&k, ptr_at(&k, o, offs), v, 0);
    ret(&k);
    float *xs = rnd_f32(100, 1), *os = poisoned_f32(200);
    InterpBuf bufs[] = {buf_of(xs, 400, "src"), buf_of(os, 800, "dst")};
    InterpArg args[] = {a_ptr(0), a_ptr(1)};
    assert_false(run(&k, bufs, 2, args, 2, 1, 1, 0));
    expect_error("t.tile:7:12: error: load out of bounds: byte offset 400 (element 100) of 'src'");
    expect_error("lane 36");
    expect_error("program (1, 0, 0)");
    /* the first program's stores happened, the second's did not */
    for (int i = 0; i < 64; i++) assert_true(os[i] == xs[i]);
    assert_true(isnan(os[64]));

    /* a negative offset through a pointer argument that starts inside the buffer */
    InterpArg args2[] = {{.kind = IARG_PTR, .buf = 0, .offset = -1}, a_ptr(1)};
    assert_false(run(&k, bufs, 2, args2, 1, 1, 1, 0));
    expect_error("byte offset -4 (element -1) of 'src'");
    free(xs), free(os);
    kb_free(&k);
}

static void test_misaligned(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    IrVal x = prm(&k, "x", ir_ty_ptr(DT_I32)), o = prm(&k, "o", ir_ty_ptr(DT_I32));
    IrVal offs = arange(&k, 8);
    k.b.loc = (SrcLoc){4, 9};
    store(&k, ptr_at(&k, o, offs), load(&k, ptr_at(&k, x, offs), 0, 0), 0);
    ret(&k);
    uint32_t raw[16] = {0};
    int32_t dst[8];
    /* x is handed over one byte into an aligned block: every i32 access is misaligned */
    InterpBuf bufs[] = {buf_of((char *)raw + 1, 40, "x"), buf_of(dst, sizeof dst, "o")};
    InterpArg args[] = {a_ptr(0), a_ptr(1)};
    assert_false(run(&k, bufs, 2, args, 1, 1, 1, 0));
    expect_error("t.tile:4:9: error: load misaligned: byte offset 0 of 'x'");
    kb_free(&k);
}

/* block loads at every edge, with `other`, and clipped block stores into a view
 * that lives inside a larger buffer (ld > cols): nothing outside the view changes. */
static void test_block_edges(void **state)
{
    (void)state;
    enum { R = 37, C = 50, LD = 53, BR = 16, BC = 16 };
    Kb k;
    kb_new(&k);
    IrVal a = prm(&k, "A", ir_ty_view(DT_F32, 2)), c = prm(&k, "C", ir_ty_view(DT_F32, 2));
    IrVal r0 = prm(&k, "r0", ir_ty_scalar(DT_I32)), c0 = prm(&k, "c0", ir_ty_scalar(DT_I32));
    IrType bt = ty2(DT_F32, BR, BC);
    IrVal blk = opn(&k, IR_BLOCK_LOAD, bt, (IrVal[]){a, r0, c0, cf(&k, DT_F32, -7.5)}, 4, 0, 1);
    IrVal twice = op2(&k, IR_ADD, blk, blk);
    ir_build(&k.b, IR_BLOCK_STORE, (IrVal[]){c, r0, c0, twice}, 4, NULL, 0, NULL);
    ret(&k);
    float *as = rnd_f32(R * LD, 10);
    int offs[][2] = {{0, 0}, {32, 48}, {-3, -5}, {30, -15}, {-16, 0}, {37, 50}, {21, 34}};
    for (size_t t = 0; t < TL_COUNTOF(offs); t++) {
        float *cs = poisoned_f32(R * LD);
        InterpBuf bufs[] = {buf_of(as, R * LD * 4u, "A"), buf_of(cs, R * LD * 4u, "C")};
        InterpArg args[] = {a_view2(0, 0, R, C, LD), a_view2(1, 0, R, C, LD), a_int(offs[t][0]), a_int(offs[t][1])};
        assert_true(run(&k, bufs, 2, args, 1, 1, 1, 0));
        for (int i = 0; i < R; i++)
            for (int j = 0; j < LD; j++) {
                bool in_block = i >= offs[t][0] && i < offs[t][0] + BR && j >= offs[t][1] && j < offs[t][1] + BC;
                if (in_block && j < C) assert_true(cs[i * LD + j] == as[i * LD + j] * 2);
                else assert_true(isnan(cs[i * LD + j]));
            }
        free(cs);
    }
    free(as);
    kb_free(&k);
}

/* block_load's `other` fills; without it, 0.  A view that claims more than its
 * buffer holds is caught at the first in-view access outside the buffer. */
static void test_block_other_and_bad_view(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    IrVal a = prm(&k, "A", ir_ty_view(DT_I32, 2)), o = prm(&k, "o", ir_ty_ptr(DT_I32));
    IrType bt = ty2(DT_I32, 4, 4);
    IrVal z = ci(&k, DT_I32, 2);
    k.b.loc = (SrcLoc){3, 14};
    IrVal blk = opn(&k, IR_BLOCK_LOAD, bt, (IrVal[]){a, z, z}, 3, 0, 0);
    IrVal flat = op1(&k, IR_RESHAPE, ty1(DT_I32, 16), blk);
    store(&k, ptr_at(&k, o, arange(&k, 16)), flat, 0);
    ret(&k);
    int32_t as[9], os[16];
    for (int i = 0; i < 9; i++) as[i] = 10 + i;
    InterpBuf bufs[] = {buf_of(as, sizeof as, "A"), buf_of(os, sizeof os, "o")};
    InterpArg args[] = {a_view2(0, 0, 3, 3, 3), a_ptr(1)};
    assert_true(run(&k, bufs, 2, args, 1, 1, 1, 0));
    for (int i = 0; i < 16; i++) assert_int_equal(os[i], i == 0 ? 18 : 0);
    InterpArg bad[] = {a_view2(0, 0, 3, 4, 4), a_ptr(1)}; /* 3 x 4 with ld 4: 48 bytes > 36 */
    assert_false(run(&k, bufs, 2, bad, 1, 1, 1, 0));
    expect_error("t.tile:3:14: error: block_load out of bounds: byte offset 40 (element 10) of 'A'");
    kb_free(&k);
}

/* ---- tests: arithmetic ------------------------------------------------------------- */

static int64_t host_int(IrOpcode opc, DType dt, int64_t a, int64_t b)
{
    bool sg = dt_is_signed(dt);
    int w = dt_bits[dt];
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (opc) {
    case IR_ADD: return int_wrap(dt, (int64_t)(ua + ub));
    case IR_SUB: return int_wrap(dt, (int64_t)(ua - ub));
    case IR_MUL: return int_wrap(dt, (int64_t)(ua * ub));
    case IR_DIV: return sg ? a / b : (int64_t)(ua / ub); /* b == -1 is the caller's */
    case IR_REM: return sg ? a % b : (int64_t)(ua % ub);
    case IR_AND: return a & b;
    case IR_OR: return a | b;
    case IR_XOR: return a ^ b;
    case IR_SHL: return (sg ? (b < 0 || b >= w) : ub >= (uint64_t)w) ? 0 : int_wrap(dt, (int64_t)(ua << b));
    case IR_SHR:
        if (sg) return (b < 0 || b >= w) ? (a < 0 ? -1 : 0) : (a >> b);
        return ub >= (uint64_t)w ? 0 : (int64_t)(ua >> b);
    case IR_MAX: return sg ? (a > b ? a : b) : (int64_t)(ua > ub ? ua : ub);
    case IR_MIN: return sg ? (a < b ? a : b) : (int64_t)(ua < ub ? ua : ub);
    default: fail();
    }
    return 0;
}

static int64_t rnd_int(DType dt, bool small)
{
    int64_t v = int_wrap(dt, (int64_t)rnd());
    if (small) v = int_wrap(dt, (int64_t)(rnd() % (uint64_t)(dt_bits[dt] + 4)) - (dt_is_signed(dt) ? 2 : 0));
    return v ? v : 1;
}

/* every integer binary op on i8, i32, u32, i64 and u8, with lane 0 holding
 * min / -1 style corner cases. */
static void test_int_binary(void **state)
{
    (void)state;
    DType dts[] = {DT_I8, DT_I32, DT_U32, DT_I64, DT_U8, DT_U16};
    IrOpcode ops[] = {IR_ADD, IR_SUB, IR_MUL, IR_DIV, IR_REM, IR_AND, IR_OR, IR_XOR, IR_SHL, IR_SHR, IR_MAX, IR_MIN};
    enum { N = 64 };
    for (size_t d = 0; d < TL_COUNTOF(dts); d++) {
        DType dt = dts[d];
        int bytes = dt_bytes(dt);
        Kb k;
        kb_new(&k);
        IrVal a = prm(&k, "a", ir_ty_ptr(dt)), b = prm(&k, "b", ir_ty_ptr(dt)), o = prm(&k, "o", ir_ty_ptr(dt));
        IrVal offs = arange(&k, N);
        IrVal va = load(&k, ptr_at(&k, a, offs), 0, 0), vb = load(&k, ptr_at(&k, b, offs), 0, 0);
        for (size_t q = 0; q < TL_COUNTOF(ops); q++) {
            IrVal r = op2(&k, ops[q], va, vb);
            IrVal at = op2(&k, IR_ADD, offs, splat(&k, ci(&k, DT_I32, (int64_t)q * N), ty1(DT_I32, N)));
            store(&k, ptr_at(&k, o, at), r, 0);
        }
        ret(&k);
        unsigned char as[N * 8], bs[N * 8], os[TL_COUNTOF(ops) * N * 8];
        int64_t av[N], bv[N];
        for (int i = 0; i < N; i++) {
            av[i] = rnd_int(dt, false);
            bv[i] = rnd_int(dt, i % 2 == 0); /* small values exercise shifts */
        }
        if (dt_is_signed(dt)) {
            av[0] = int_wrap(dt, (int64_t)(1ull << (dt_bits[dt] - 1))); /* the minimum */
            bv[0] = -1;
            bv[1] = dt_bits[dt]; /* shift count == width */
            bv[3] = -3;
        }
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < bytes; j++) as[i * bytes + j] = (unsigned char)((uint64_t)av[i] >> (8 * j));
            for (int j = 0; j < bytes; j++) bs[i * bytes + j] = (unsigned char)((uint64_t)bv[i] >> (8 * j));
        }
        InterpBuf bufs[] = {buf_of(as, N * (size_t)bytes, "a"), buf_of(bs, N * (size_t)bytes, "b"),
                            buf_of(os, sizeof os, "o")};
        InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2)};
        assert_true(run(&k, bufs, 3, args, 1, 1, 1, 0));
        for (size_t q = 0; q < TL_COUNTOF(ops); q++)
            for (int i = 0; i < N; i++) {
                uint64_t bits = 0;
                for (int j = bytes - 1; j >= 0; j--) bits = bits << 8 | os[(q * N + (size_t)i) * (size_t)bytes + (size_t)j];
                int64_t got = int_wrap(dt, (int64_t)bits), want;
                if (ops[q] == IR_DIV && dt_is_signed(dt) && bv[i] == -1) want = int_wrap(dt, (int64_t)(0 - (uint64_t)av[i]));
                else if (ops[q] == IR_REM && dt_is_signed(dt) && bv[i] == -1) want = 0;
                else want = int_wrap(dt, host_int(ops[q], dt, av[i], bv[i]));
                if (got != want)
                    print_error("%s %s lane %d: %lld, %lld -> %lld, want %lld\n", dt_name[dt], ir_opinfo[ops[q]].name, i,
                                (long long)av[i], (long long)bv[i], (long long)got, (long long)want);
                assert_true(got == want);
            }
        kb_free(&k);
    }
}

static void test_division_by_zero(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    IrVal a = prm(&k, "a", ir_ty_scalar(DT_I32)), b = prm(&k, "b", ir_ty_scalar(DT_I32));
    IrVal o = prm(&k, "o", ir_ty_ptr(DT_I32));
    k.b.loc = (SrcLoc){5, 17};
    IrVal q = op2(&k, IR_REM, a, b);
    store(&k, o, q, 0);
    ret(&k);
    int32_t out = 0;
    InterpBuf bufs[] = {buf_of(&out, 4, "o")};
    InterpArg args[] = {a_int(-7), a_int(3), a_ptr(0)};
    assert_true(run(&k, bufs, 1, args, 1, 1, 1, 0));
    assert_int_equal(out, -1);
    args[1] = a_int(0);
    assert_false(run(&k, bufs, 1, args, 1, 1, 1, 0));
    expect_error("t.tile:5:17: error: integer remainder by zero");
    kb_free(&k);
}

typedef double (*HostMath)(double);
static double h_neg(double x) { return -x; }
static double h_rsqrt(double x) { return 1.0 / sqrt(x); }
static double h_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* every unary math op on f32, f16, bf16 and f64: round(dt, f(x)) computed in double */
static void test_float_unary(void **state)
{
    (void)state;
    struct { IrOpcode opc; HostMath fn; bool positive; } ops[] = {
        {IR_NEG, h_neg, false},   {IR_EXP, exp, false},     {IR_EXP2, exp2, false}, {IR_LOG, log, true},
        {IR_LOG2, log2, true},    {IR_SQRT, sqrt, true},    {IR_RSQRT, h_rsqrt, true}, {IR_ABS, fabs, false},
        {IR_SIGMOID, h_sigmoid, false}, {IR_TANH, tanh, false}, {IR_ERF, erf, false}, {IR_FLOOR, floor, false},
        {IR_CEIL, ceil, false},
    };
    DType dts[] = {DT_F32, DT_F16, DT_BF16, DT_F64};
    enum { N = 128 };
    for (size_t d = 0; d < TL_COUNTOF(dts); d++) {
        DType dt = dts[d];
        int bytes = dt_bytes(dt);
        Kb k;
        kb_new(&k);
        IrVal x = prm(&k, "x", ir_ty_ptr(dt)), o = prm(&k, "o", ir_ty_ptr(dt));
        IrVal offs = arange(&k, N);
        IrVal v = load(&k, ptr_at(&k, x, offs), 0, 0);
        IrVal av = op1(&k, IR_ABS, ty1(dt, N), v);
        for (size_t q = 0; q < TL_COUNTOF(ops); q++) {
            IrVal r = op1(&k, ops[q].opc, ty1(dt, N), ops[q].positive ? av : v);
            IrVal at = op2(&k, IR_ADD, offs, splat(&k, ci(&k, DT_I32, (int64_t)q * N), ty1(DT_I32, N)));
            store(&k, ptr_at(&k, o, at), r, 0);
        }
        ret(&k);
        unsigned char *xs = malloc(N * (size_t)bytes), *os = malloc(TL_COUNTOF(ops) * N * (size_t)bytes);
        double xv[N];
        for (int i = 0; i < N; i++) {
            xv[i] = fp_round(dt, rnd_f(6));
            fp_store(dt, xs + i * bytes, xv[i]);
        }
        InterpBuf bufs[] = {buf_of(xs, N * (size_t)bytes, "x"), buf_of(os, TL_COUNTOF(ops) * N * (size_t)bytes, "o")};
        InterpArg args[] = {a_ptr(0), a_ptr(1)};
        assert_true(run(&k, bufs, 2, args, 1, 1, 1, 0));
        for (size_t q = 0; q < TL_COUNTOF(ops); q++)
            for (int i = 0; i < N; i++) {
                double in = ops[q].positive ? fabs(xv[i]) : xv[i];
                double want = fp_round(dt, ops[q].fn(in));
                double got = fp_load(dt, os + (q * N + (size_t)i) * (size_t)bytes);
                if (got != want) print_error("%s %s(%a) = %a, want %a\n", dt_name[dt], ir_opinfo[ops[q].opc].name, in, got, want);
                assert_true(got == want);
            }
        free(xs), free(os);
        kb_free(&k);
    }
}

/* f32 binary ops, fma (against the C library's correctly rounded fmaf), select,
 * max/min with NaN, and f16 arithmetic rounded after each op. */
static void test_float_binary_fma_select(void **state)
{
    (void)state;
    enum { N = 256 };
    Kb k;
    kb_new(&k);
    IrVal a = prm(&k, "a", ir_ty_ptr(DT_F32)), b = prm(&k, "b", ir_ty_ptr(DT_F32)), c = prm(&k, "c", ir_ty_ptr(DT_F32));
    IrVal o = prm(&k, "o", ir_ty_ptr(DT_F32)), h = prm(&k, "h", ir_ty_ptr(DT_F16));
    IrVal offs = arange(&k, N);
    IrVal va = load(&k, ptr_at(&k, a, offs), 0, 0), vb = load(&k, ptr_at(&k, b, offs), 0, 0);
    IrVal vc = load(&k, ptr_at(&k, c, offs), 0, 0);
    IrVal res[] = {
        op2(&k, IR_ADD, va, vb), op2(&k, IR_SUB, va, vb), op2(&k, IR_MUL, va, vb), op2(&k, IR_DIV, va, vb),
        op2(&k, IR_REM, va, vb), op2(&k, IR_MAX, va, vb), op2(&k, IR_MIN, va, vb),
        opn(&k, IR_FMA, ty1(DT_F32, N), (IrVal[]){va, vb, vc}, 3, 0, 0),
        opn(&k, IR_SELECT, ty1(DT_F32, N), (IrVal[]){cmp(&k, CMP_GT, va, vb), va, vc}, 3, 0, 0),
    };
    for (size_t q = 0; q < TL_COUNTOF(res); q++) {
        IrVal at = op2(&k, IR_ADD, offs, splat(&k, ci(&k, DT_I32, (int64_t)q * N), ty1(DT_I32, N)));
        store(&k, ptr_at(&k, o, at), res[q], 0);
    }
    /* f16: (a*b + c) with two roundings to f16 */
    IrType ht = ty1(DT_F16, N);
    IrVal ha = op1(&k, IR_CAST, ht, va), hb = op1(&k, IR_CAST, ht, vb), hc = op1(&k, IR_CAST, ht, vc);
    store(&k, ptr_at(&k, h, offs), op2(&k, IR_ADD, op2(&k, IR_MUL, ha, hb), hc), 0);
    ret(&k);
    float *as = rnd_f32(N, 50), *bs = rnd_f32(N, 50), *cs = rnd_f32(N, 1000), *os = poisoned_f32(N * TL_COUNTOF(res));
    uint16_t hs[N];
    as[0] = NAN; /* max/min with NaN */
    bs[1] = NAN;
    as[2] = 0.0f, bs[2] = -0.0f;
    /* a*b + c = 1 + 2^-23 + 2^-24 - 2^-70: rounding it to double lands on the f32
     * midpoint (and then up, to even); rounded once it goes down */
    as[3] = 0x1.000002p-12f, bs[3] = 0x1.fffffcp-13f, cs[3] = 0x1.000002p0f;
    InterpBuf bufs[] = {buf_of(as, N * 4, "a"), buf_of(bs, N * 4, "b"), buf_of(cs, N * 4, "c"),
                        buf_of(os, sizeof(float) * N * TL_COUNTOF(res), "o"), buf_of(hs, sizeof hs, "h")};
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_ptr(3), a_ptr(4)};
    assert_true(run(&k, bufs, 5, args, 1, 1, 1, 0));
    for (int i = 0; i < N; i++) {
        double x = as[i], y = bs[i], z = cs[i];
        float want[] = {(float)(x + y), (float)(x - y), (float)(x * y), (float)(x / y), (float)fmod(x, y),
                        isnan(x) || isnan(y) ? NAN : (float)(x > y || (x == y && !signbit(x)) ? x : y),
                        isnan(x) || isnan(y) ? NAN : (float)(x < y || (x == y && signbit(x)) ? x : y),
                        fmaf(as[i], bs[i], cs[i]), x > y ? as[i] : cs[i]};
        for (size_t q = 0; q < TL_COUNTOF(res); q++) {
            float got = os[q * N + (size_t)i];
            bool same = isnan(want[q]) ? isnan(got) : (got == want[q] && signbit(got) == signbit(want[q]));
            if (!same) print_error("op %zu lane %d: %a %a %a -> %a, want %a\n", q, i, x, y, z, got, want[q]);
            assert_true(same);
        }
        double hw = fp_round(DT_F16, fp_round(DT_F16, fp_round(DT_F16, x) * fp_round(DT_F16, y)) + fp_round(DT_F16, z));
        assert_true(isnan(hw) ? isnan(fp_from_f16(hs[i])) : fp_from_f16(hs[i]) == hw);
    }
    free(as), free(bs), free(cs), free(os);
    kb_free(&k);
}

/* casts: float->int saturating and NaN->0, int->float, fp8 saturation, i1, wrap,
 * bitcast both ways. */
static void test_casts(void **state)
{
    (void)state;
    enum { N = 16 };
    Kb k;
    kb_new(&k);
    IrVal x = prm(&k, "x", ir_ty_ptr(DT_F32)), oi = prm(&k, "oi", ir_ty_ptr(DT_I32));
    IrVal ou8 = prm(&k, "ou8", ir_ty_ptr(DT_U8)), of8 = prm(&k, "of8", ir_ty_ptr(DT_F8E4M3));
    IrVal of5 = prm(&k, "of5", ir_ty_ptr(DT_F8E5M2)), ob = prm(&k, "ob", ir_ty_ptr(DT_I32));
    IrVal ofi = prm(&k, "ofi", ir_ty_ptr(DT_F32));
    IrVal offs = arange(&k, N);
    IrVal v = load(&k, ptr_at(&k, x, offs), 0, 0);
    IrVal vi = op1(&k, IR_CAST, ty1(DT_I32, N), v);
    store(&k, ptr_at(&k, oi, offs), vi, 0);
    store(&k, ptr_at(&k, ou8, offs), op1(&k, IR_CAST, ty1(DT_U8, N), vi), 0);        /* int->int wraps */
    store(&k, ptr_at(&k, of8, offs), op1(&k, IR_CAST, ty1(DT_F8E4M3, N), v), 0);
    store(&k, ptr_at(&k, of5, offs), op1(&k, IR_CAST, ty1(DT_F8E5M2, N), v), 0);
    IrVal bits = op1(&k, IR_BITCAST, ty1(DT_I32, N), v);
    store(&k, ptr_at(&k, ob, offs), bits, 0);
    /* i32 -> i1 -> f32, and bitcast back to f32 added to it */
    IrVal nz = op1(&k, IR_CAST, ty1(DT_F32, N), op1(&k, IR_CAST, ty1(DT_I1, N), vi));
    IrVal back = op1(&k, IR_BITCAST, ty1(DT_F32, N), bits);
    store(&k, ptr_at(&k, ofi, offs), op2(&k, IR_ADD, nz, back), 0);
    ret(&k);
    float xs[N] = {1.5f, -1.5f, 3e9f, -3e9f, NAN, 255.9f, 256.5f, -0.7f, 1000.0f, -1e6f, 0.001f, 17.3f, 300.f,
                   INFINITY, 0.3f, 5e4f};
    int32_t ois[N], obs[N];
    uint8_t ou8s[N], of8s[N], of5s[N];
    float ofis[N];
    InterpBuf bufs[] = {buf_of(xs, sizeof xs, "x"), buf_of(ois, sizeof ois, "oi"), buf_of(ou8s, sizeof ou8s, "ou8"),
                        buf_of(of8s, sizeof of8s, "of8"), buf_of(of5s, sizeof of5s, "of5"), buf_of(obs, sizeof obs, "ob"),
                        buf_of(ofis, sizeof ofis, "ofi")};
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_ptr(3), a_ptr(4), a_ptr(5), a_ptr(6)};
    assert_true(run(&k, bufs, 7, args, 1, 1, 1, 0));
    for (int i = 0; i < N; i++) {
        double t = trunc(xs[i]);
        int32_t wi = isnan(xs[i]) ? 0 : t >= 2147483647.0 ? INT32_MAX : t <= -2147483648.0 ? INT32_MIN : (int32_t)t;
        assert_int_equal(ois[i], wi);
        assert_int_equal(ou8s[i], (uint8_t)(uint32_t)wi);
        assert_int_equal(of8s[i], fp_to_f8e4m3(xs[i]));
        assert_int_equal(of5s[i], fp_to_f8e5m2(xs[i]));
        uint32_t b;
        memcpy(&b, &xs[i], 4);
        assert_int_equal((uint32_t)obs[i], b);
        float want = (float)((wi != 0) + (double)xs[i]);
        assert_true(isnan(xs[i]) ? isnan(ofis[i]) : ofis[i] == want);
    }
    assert_int_equal(of8s[8], 0x7E);   /* 1000 -> 448 */
    assert_int_equal(of8s[9], 0xFE);   /* -1e6 -> -448 */
    assert_int_equal(of5s[13], 0x7B);  /* inf -> 57344 */
    assert_int_equal(of8s[4] & 0x7F, 0x7F); /* NaN stays NaN */
    kb_free(&k);
}

/* ---- tests: cross-element ------------------------------------------------------------ */

/* sum of f16 into f32 (accumulated in f32, index order), max/min with a NaN row,
 * argmax/argmin ties to the lowest index, over each axis of [R, C] and the whole tile. */
static void test_reductions(void **state)
{
    (void)state;
    enum { R = 8, C = 32 };
    Kb k;
    kb_new(&k);
    IrVal x = prm(&k, "x", ir_ty_ptr(DT_F16)), o = prm(&k, "o", ir_ty_ptr(DT_F32)), oi = prm(&k, "oi", ir_ty_ptr(DT_I32));
    IrVal offs = arange(&k, R * C);
    IrVal v = op1(&k, IR_RESHAPE, ty2(DT_F16, R, C), load(&k, ptr_at(&k, x, offs), 0, 0));
    IrVal vf = op1(&k, IR_CAST, ty2(DT_F32, R, C), v);
    IrVal outs[] = {
        opn(&k, IR_REDUCE_SUM, ty1(DT_F32, R), &v, 1, 1, 0),
        opn(&k, IR_REDUCE_SUM, ty1(DT_F32, C), &v, 1, 0, 0),
        opn(&k, IR_REDUCE_MAX, ty1(DT_F32, R), &vf, 1, 1, 0),
        opn(&k, IR_REDUCE_MIN, ty1(DT_F32, C), &vf, 1, 0, 0),
        opn(&k, IR_REDUCE_SUM, ir_ty_scalar(DT_F32), (IrVal[]){op1(&k, IR_RESHAPE, ty1(DT_F16, R * C), v)}, 1, 0, 0),
    };
    int64_t at = 0;
    for (size_t q = 0; q < TL_COUNTOF(outs); q++) {
        IrType t = ir_vty(k.f, outs[q]);
        int64_t n = ir_ty_numel(t);
        if (t.rank == 0) {
            IrVal p = opn(&k, IR_ADDPTR, ir_ty_ptr(DT_F32), (IrVal[]){o, ci(&k, DT_I32, at)}, 2, 0, 0);
            store(&k, p, outs[q], 0);
        } else {
            IrVal idx = op2(&k, IR_ADD, arange(&k, (int)n), splat(&k, ci(&k, DT_I32, at), ty1(DT_I32, (int)n)));
            store(&k, ptr_at(&k, o, idx), outs[q], 0);
        }
        at += n;
    }
    IrVal am = opn(&k, IR_ARGMAX, ty1(DT_I32, R), &vf, 1, 1, 0), an = opn(&k, IR_ARGMIN, ty1(DT_I32, C), &vf, 1, 0, 0);
    store(&k, ptr_at(&k, oi, arange(&k, R)), am, 0);
    store(&k, ptr_at(&k, oi, op2(&k, IR_ADD, arange(&k, C), splat(&k, ci(&k, DT_I32, R), ty1(DT_I32, C)))), an, 0);
    ret(&k);
    double xv[R * C];
    uint16_t xs[R * C];
    for (int i = 0; i < R * C; i++) xv[i] = fp_round(DT_F16, rnd_f(4) * (1 + (double)(rnd() % 1000)));
    /* ties: row 1's maximum appears at 5 and 9; column 3's minimum at rows 2 and 6 */
    xv[1 * C + 5] = xv[1 * C + 9] = 60000;
    xv[2 * C + 3] = xv[6 * C + 3] = -60000;
    xv[3 * C + 7] = NAN; /* row 3: max is NaN, argmax is the NaN */
    for (int i = 0; i < R * C; i++) xs[i] = fp_to_f16(xv[i]);
    float os[R + C + R + C + 1];
    int32_t ois[R + C];
    InterpBuf bufs[] = {buf_of(xs, sizeof xs, "x"), buf_of(os, sizeof os, "o"), buf_of(ois, sizeof ois, "oi")};
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2)};
    assert_true(run(&k, bufs, 3, args, 1, 1, 1, 0));
    for (int r = 0; r < R; r++) {
        float s = (float)xv[r * C];
        double mx = xv[r * C];
        int amx = 0;
        for (int c = 1; c < C; c++) {
            s = s + (float)xv[r * C + c];
            if (isnan(xv[r * C + c]) && !isnan(mx)) mx = NAN, amx = c;
            else if (!isnan(mx) && xv[r * C + c] > mx) mx = xv[r * C + c], amx = c;
        }
        assert_true(isnan(s) ? isnan(os[r]) : os[r] == s);
        assert_true(isnan(mx) ? isnan(os[R + C + r]) : os[R + C + r] == (float)mx);
        assert_int_equal(ois[r], amx);
    }
    for (int c = 0; c < C; c++) {
        float s = (float)xv[c];
        double mn = xv[c];
        int amn = 0;
        bool nan = isnan(mn);
        for (int r = 1; r < R; r++) {
            s = s + (float)xv[r * C + c];
            nan |= isnan(xv[r * C + c]);
            if (!isnan(mn) && (isnan(xv[r * C + c]) || xv[r * C + c] < mn)) mn = xv[r * C + c], amn = r;
        }
        assert_true(isnan(s) ? isnan(os[R + c]) : os[R + c] == s);
        assert_true(nan ? isnan(os[2 * R + C + c]) : os[2 * R + C + c] == (float)mn);
        assert_int_equal(ois[R + c], amn);
    }
    assert_int_equal(ois[1], 5);
    assert_int_equal(ois[R + 3], 2);
    assert_true(isnan(os[2 * R + 2 * C])); /* the whole sum contains the NaN */
    kb_free(&k);
}

/* integer sum (i8 -> i32), cumsum along axis 1 of an i32 tile and along axis 0 of
 * an f32 tile, sort ascending/descending, topk with ties keeping the lower index. */
static void test_scan_sort_topk(void **state)
{
    (void)state;
    enum { R = 4, C = 16, KK = 4 };
    Kb k;
    kb_new(&k);
    IrVal x = prm(&k, "x", ir_ty_ptr(DT_I32)), f = prm(&k, "f", ir_ty_ptr(DT_F32)), o = prm(&k, "o", ir_ty_ptr(DT_I32));
    IrVal of = prm(&k, "of", ir_ty_ptr(DT_F32));
    IrVal offs = arange(&k, R * C);
    IrVal v = op1(&k, IR_RESHAPE, ty2(DT_I32, R, C), load(&k, ptr_at(&k, x, offs), 0, 0));
    IrVal vf = op1(&k, IR_RESHAPE, ty2(DT_F32, R, C), load(&k, ptr_at(&k, f, offs), 0, 0));
    IrVal v8 = op1(&k, IR_CAST, ty2(DT_I8, R, C), v);
    IrVal i_outs[] = {
        opn(&k, IR_CUMSUM, ty2(DT_I32, R, C), &v, 1, 1, 0),
        opn(&k, IR_SORT, ty2(DT_I32, R, C), &v, 1, 1, 0),
        opn(&k, IR_SORT, ty2(DT_I32, R, C), &v, 1, 1, 1),
    };
    uint32_t topk = ir_build(&k.b, IR_TOPK, &vf, 1, (IrType[]){ty2(DT_F32, R, KK), ty2(DT_I32, R, KK)}, 2,
                             &(IrAttr){.i = 1, .j = KK});
    IrVal tv = k.f->ops[topk].res, ti = tv + 1;
    IrVal isum = opn(&k, IR_REDUCE_SUM, ty1(DT_I32, R), &v8, 1, 1, 0);
    IrVal fcs = opn(&k, IR_CUMSUM, ty2(DT_F32, R, C), &vf, 1, 0, 0);
    for (size_t q = 0; q < TL_COUNTOF(i_outs); q++) {
        IrVal at = op2(&k, IR_ADD, offs, splat(&k, ci(&k, DT_I32, (int64_t)q * R * C), ty1(DT_I32, R * C)));
        store(&k, ptr_at(&k, o, at), op1(&k, IR_RESHAPE, ty1(DT_I32, R * C), i_outs[q]), 0);
    }
    IrVal tk = arange(&k, R * KK);
    store(&k, ptr_at(&k, o, op2(&k, IR_ADD, tk, splat(&k, ci(&k, DT_I32, 3 * R * C), ty1(DT_I32, R * KK)))),
          op1(&k, IR_RESHAPE, ty1(DT_I32, R * KK), ti), 0);
    store(&k, ptr_at(&k, o, op2(&k, IR_ADD, arange(&k, R), splat(&k, ci(&k, DT_I32, 3 * R * C + R * KK), ty1(DT_I32, R)))),
          isum, 0);
    store(&k, ptr_at(&k, of, tk), op1(&k, IR_RESHAPE, ty1(DT_F32, R * KK), tv), 0);
    store(&k, ptr_at(&k, of, op2(&k, IR_ADD, offs, splat(&k, ci(&k, DT_I32, R * KK), ty1(DT_I32, R * C)))),
          op1(&k, IR_RESHAPE, ty1(DT_F32, R * C), fcs), 0);
    ret(&k);
    int32_t xs[R * C], os[3 * R * C + R * KK + R];
    float fs[R * C], ofs[R * KK + R * C];
    for (int i = 0; i < R * C; i++) {
        xs[i] = (int32_t)(rnd() % 41) - 20;
        if (i % 7 == 0) xs[i] = 1000 + (int32_t)(rnd() % 500); /* exercise i8 wrap in the i8 sum */
        fs[i] = (float)(int)(rnd() % 5 + 1);                   /* many ties */
    }
    InterpBuf bufs[] = {buf_of(xs, sizeof xs, "x"), buf_of(fs, sizeof fs, "f"), buf_of(os, sizeof os, "o"),
                        buf_of(ofs, sizeof ofs, "of")};
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_ptr(3)};
    assert_true(run(&k, bufs, 4, args, 1, 1, 1, 0));
    for (int r = 0; r < R; r++) {
        int64_t s = 0;
        int32_t s8 = 0;
        int32_t sorted[C];
        for (int c = 0; c < C; c++) {
            s += xs[r * C + c];
            s8 += (int8_t)xs[r * C + c];
            assert_int_equal(os[r * C + c], s);
            sorted[c] = xs[r * C + c];
        }
        assert_int_equal(os[3 * R * C + R * KK + r], s8);
        for (int i = 1; i < C; i++) /* insertion sort: stable */
            for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                int32_t t = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = t;
            }
        for (int c = 0; c < C; c++) {
            assert_int_equal(os[R * C + r * C + c], sorted[c]);
            assert_int_equal(os[2 * R * C + r * C + c], sorted[C - 1 - c]);
        }
        /* topk: the k largest in descending order, ties to the lower index */
        bool used[C] = {0};
        for (int t = 0; t < KK; t++) {
            int best = -1;
            for (int c = 0; c < C; c++)
                if (!used[c] && (best < 0 || fs[r * C + c] > fs[r * C + best])) best = c;
            used[best] = true;
            assert_int_equal(os[3 * R * C + r * KK + t], best);
            assert_true(ofs[r * KK + t] == fs[r * C + best]);
        }
    }
    for (int c = 0; c < C; c++) {
        float s = 0;
        for (int r = 0; r < R; r++) {
            s = r ? s + fs[r * C + c] : fs[c];
            assert_true(ofs[R * KK + r * C + c] == s);
        }
    }
    kb_free(&k);
}

/* dot: bf16 and f8e4m3 operands, f32 accumulator; every product exact, added with
 * one rounding in k order (= fmaf chained). */
static void test_dot(void **state)
{
    (void)state;
    enum { M = 16, K = 32, N = 8 };
    DType dts[] = {DT_BF16, DT_F8E4M3, DT_F32, DT_F16};
    for (size_t d = 0; d < TL_COUNTOF(dts); d++) {
        DType dt = dts[d];
        Kb k;
        kb_new(&k);
        IrVal a = prm(&k, "a", ir_ty_ptr(DT_F32)), b = prm(&k, "b", ir_ty_ptr(DT_F32)), c = prm(&k, "c", ir_ty_ptr(DT_F32));
        IrVal av = op1(&k, IR_RESHAPE, ty2(DT_F32, M, K), load(&k, ptr_at(&k, a, arange(&k, M * K)), 0, 0));
        IrVal bv = op1(&k, IR_RESHAPE, ty2(DT_F32, K, N), load(&k, ptr_at(&k, b, arange(&k, K * N)), 0, 0));
        IrVal cv = op1(&k, IR_RESHAPE, ty2(DT_F32, M, N), load(&k, ptr_at(&k, c, arange(&k, M * N)), 0, 0));
        IrVal an = op1(&k, IR_CAST, ty2(dt, M, K), av), bn = op1(&k, IR_CAST, ty2(dt, K, N), bv);
        IrVal r = opn(&k, IR_DOT, ty2(DT_F32, M, N), (IrVal[]){an, bn, cv}, 3, 0, 0);
        store(&k, ptr_at(&k, c, arange(&k, M * N)), op1(&k, IR_RESHAPE, ty1(DT_F32, M * N), r), 0);
        ret(&k);
        float *as = rnd_f32(M * K, 8), *bs = rnd_f32(K * N, 8), *cs = rnd_f32(M * N, 100);
        float *c0 = malloc(sizeof(float) * M * N);
        memcpy(c0, cs, sizeof(float) * M * N);
        InterpBuf bufs[] = {buf_of(as, M * K * 4, "a"), buf_of(bs, K * N * 4, "b"), buf_of(cs, M * N * 4, "c")};
        InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2)};
        assert_true(run(&k, bufs, 3, args, 1, 1, 1, 0));
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float s = c0[m * N + n];
                for (int q = 0; q < K; q++)
                    s = fmaf((float)fp_round(dt, as[m * K + q]), (float)fp_round(dt, bs[q * N + n]), s);
                assert_true(cs[m * N + n] == s);
            }
        free(as), free(bs), free(cs), free(c0);
        kb_free(&k);
    }
}

/* shape ops: broadcast of [1, C] and [R, 1], trans, expand_dims. */
static void test_shapes(void **state)
{
    (void)state;
    enum { R = 4, C = 8 };
    Kb k;
    kb_new(&k);
    IrVal o = prm(&k, "o", ir_ty_ptr(DT_I32));
    IrVal col = opn(&k, IR_EXPAND_DIMS, ty2(DT_I32, 1, C), (IrVal[]){arange(&k, C)}, 1, 0, 0);
    IrVal row = opn(&k, IR_EXPAND_DIMS, ty2(DT_I32, R, 1), (IrVal[]){arange(&k, R)}, 1, 1, 0);
    IrVal bc = op1(&k, IR_BROADCAST, ty2(DT_I32, R, C), col), br = op1(&k, IR_BROADCAST, ty2(DT_I32, R, C), row);
    IrVal v = op2(&k, IR_ADD, op2(&k, IR_MUL, br, splat(&k, ci(&k, DT_I32, 100), ty2(DT_I32, R, C))), bc);
    IrAttr perm = {.nshape = 2, .shape = {1, 0}};
    IrVal t = ir_build1(&k.b, IR_TRANS, &v, 1, ty2(DT_I32, C, R), &perm);
    store(&k, ptr_at(&k, o, arange(&k, R * C)), op1(&k, IR_RESHAPE, ty1(DT_I32, R * C), t), 0);
    ret(&k);
    int32_t os[R * C];
    InterpBuf bufs[] = {buf_of(os, sizeof os, "o")};
    InterpArg args[] = {a_ptr(0)};
    assert_true(run(&k, bufs, 1, args, 1, 1, 1, 0));
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++) assert_int_equal(os[c * R + r], 100 * r + c);
    kb_free(&k);
}

/* ---- tests: atomics, programs, control flow, debugging -------------------------------- */

/* A histogram with colliding addresses: lanes apply in row-major order, so each
 * lane's old value is the count of earlier lanes (and earlier programs) with the
 * same bin.  Masked-off lanes return 0 and change nothing.  CAS swaps only equal. */
static void test_atomics(void **state)
{
    (void)state;
    enum { N = 64, BINS = 5 };
    Kb k;
    kb_new(&k);
    IrVal bins = prm(&k, "bins", ir_ty_ptr(DT_I32)), h = prm(&k, "hist", ir_ty_ptr(DT_I32));
    IrVal olds = prm(&k, "olds", ir_ty_ptr(DT_I32)), fm = prm(&k, "fmax", ir_ty_ptr(DT_F32));
    IrVal cs = prm(&k, "cas", ir_ty_ptr(DT_I32));
    IrVal offs = block_offsets(&k, N);
    IrVal b = load(&k, ptr_at(&k, bins, offs), 0, 0);
    IrVal one = splat(&k, ci(&k, DT_I32, 1), ty1(DT_I32, N));
    IrVal m = cmp(&k, CMP_NE, op2(&k, IR_REM, offs, splat(&k, ci(&k, DT_I32, 9), ty1(DT_I32, N))),
                  splat(&k, ci(&k, DT_I32, 0), ty1(DT_I32, N)));
    IrVal old = opn(&k, IR_ATOMIC_ADD, ty1(DT_I32, N), (IrVal[]){ptr_at(&k, h, b), one, m}, 3, 0, 0);
    store(&k, ptr_at(&k, olds, offs), old, 0);
    IrVal fv = op1(&k, IR_CAST, ty1(DT_F32, N), offs);
    opn(&k, IR_ATOMIC_MAX, ty1(DT_F32, N), (IrVal[]){ptr_at(&k, fm, b), fv}, 2, 0, 0);
    /* cas: slot b holds its bin number + 1000 initially: swap it for the offset if equal */
    IrVal exp = op2(&k, IR_ADD, b, splat(&k, ci(&k, DT_I32, 1000), ty1(DT_I32, N)));
    IrVal cold = opn(&k, IR_ATOMIC_CAS, ty1(DT_I32, N), (IrVal[]){ptr_at(&k, cs, b), exp, offs}, 3, 0, 0);
    store(&k, ptr_at(&k, olds, op2(&k, IR_ADD, offs, splat(&k, ci(&k, DT_I32, 2 * N), ty1(DT_I32, N)))), cold, 0);
    ret(&k);
    int32_t bs[2 * N], hist[BINS] = {0}, os[4 * N], cas[BINS];
    float fmx[BINS];
    for (int i = 0; i < 2 * N; i++) bs[i] = (int32_t)(rnd() % BINS);
    for (int i = 0; i < BINS; i++) fmx[i] = -1, cas[i] = i + 1000;
    InterpBuf bufs[] = {buf_of(bs, sizeof bs, "bins"), buf_of(hist, sizeof hist, "hist"), buf_of(os, sizeof os, "olds"),
                        buf_of(fmx, sizeof fmx, "fmax"), buf_of(cas, sizeof cas, "cas")};
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_ptr(3), a_ptr(4)};
    assert_true(run(&k, bufs, 5, args, 2, 1, 1, 0));
    int count[BINS] = {0}, last[BINS], first[BINS];
    for (int i = 0; i < BINS; i++) first[i] = -1, last[i] = -1;
    for (int p = 0; p < 2; p++)
        for (int l = 0; l < N; l++) {
            int i = p * N + l, bin = bs[i];
            bool on = i % 9 != 0;
            assert_int_equal(os[i], on ? count[bin] : 0);
            if (on) count[bin]++;
            last[bin] = i;
            /* cas: the first lane of a bin sees bin+1000 and swaps; later ones see that lane's offset */
            assert_int_equal(os[2 * N + i], first[bin] < 0 ? bin + 1000 : first[bin]);
            if (first[bin] < 0) first[bin] = i;
        }
    for (int i = 0; i < BINS; i++) {
        assert_int_equal(hist[i], count[i]);
        assert_true(fmx[i] == (float)last[i]);
        assert_int_equal(cas[i], first[i]);
    }
    kb_free(&k);
}

/* program_id / num_programs over a 3-D grid: each program records its visit
 * number (an atomic counter's old value), which shows the row-major order. */
static void test_grid_order(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    IrVal ctr = prm(&k, "ctr", ir_ty_ptr(DT_I32)), o = prm(&k, "o", ir_ty_ptr(DT_I32));
    IrVal np1 = opn(&k, IR_NUM_PROGRAMS, ir_ty_scalar(DT_I32), NULL, 0, 1, 0);
    IrVal np2 = opn(&k, IR_NUM_PROGRAMS, ir_ty_scalar(DT_I32), NULL, 0, 2, 0);
    IrVal lin = op2(&k, IR_ADD, op2(&k, IR_MUL, op2(&k, IR_ADD, op2(&k, IR_MUL, pid(&k, 0), np1), pid(&k, 1)), np2), pid(&k, 2));
    IrVal old = opn(&k, IR_ATOMIC_ADD, ir_ty_scalar(DT_I32), (IrVal[]){ctr, ci(&k, DT_I32, 1)}, 2, 0, 0);
    store(&k, opn(&k, IR_ADDPTR, ir_ty_ptr(DT_I32), (IrVal[]){o, lin}, 2, 0, 0), old, 0);
    ret(&k);
    int32_t c = 0, os[3 * 4 * 5];
    InterpBuf bufs[] = {buf_of(&c, 4, "ctr"), buf_of(os, sizeof os, "o")};
    InterpArg args[] = {a_ptr(0), a_ptr(1)};
    assert_true(run(&k, bufs, 2, args, 3, 4, 5, 0));
    for (int i = 0; i < 60; i++) assert_int_equal(os[i], i);
    kb_free(&k);
}

/* for with a negative step carrying two values (a swap each iteration), if with
 * results, while (Collatz steps), the step-0 error and the step limit. */
static void test_control_flow(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    IrVal lo = prm(&k, "lo", ir_ty_scalar(DT_I32)), hi = prm(&k, "hi", ir_ty_scalar(DT_I32));
    IrVal st = prm(&k, "step", ir_ty_scalar(DT_I32)), o = prm(&k, "o", ir_ty_ptr(DT_I32));
    IrVal c0 = ci(&k, DT_I32, 0), c1 = ci(&k, DT_I32, 1);
    /* for i in range(hi, lo, step): (s, t) = (t, s + i) */
    k.b.loc = (SrcLoc){9, 2};
    uint32_t fop = ir_build(&k.b, IR_FOR, (IrVal[]){hi, lo, st, c0, c1}, 5,
                            (IrType[]){ir_ty_scalar(DT_I32), ir_ty_scalar(DT_I32)}, 2, NULL);
    IrBlk body = k.f->ops[fop].region[0];
    IrVal iv = ir_block_add_arg(k.f, body, ir_ty_scalar(DT_I32));
    IrVal s = ir_block_add_arg(k.f, body, ir_ty_scalar(DT_I32)), t = ir_block_add_arg(k.f, body, ir_ty_scalar(DT_I32));
    IrBuilder outer = k.b;
    ir_builder_at_end(&k.b, k.f, body);
    IrVal sum = op2(&k, IR_ADD, s, iv);
    ir_build(&k.b, IR_YIELD, (IrVal[]){t, sum}, 2, NULL, 0, NULL);
    k.b = outer;
    IrVal r0 = k.f->ops[fop].res, r1 = r0 + 1;
    /* if r0 > r1 { r0 - r1 } else { r1 * 2 } */
    uint32_t iop = ir_build(&k.b, IR_IF, (IrVal[]){cmp(&k, CMP_GT, r0, r1)}, 1, (IrType[]){ir_ty_scalar(DT_I32)}, 1, NULL);
    ir_builder_at_end(&k.b, k.f, k.f->ops[iop].region[0]);
    ir_build(&k.b, IR_YIELD, (IrVal[]){op2(&k, IR_SUB, r0, r1)}, 1, NULL, 0, NULL);
    ir_builder_at_end(&k.b, k.f, k.f->ops[iop].region[1]);
    ir_build(&k.b, IR_YIELD, (IrVal[]){op2(&k, IR_MUL, r1, ci(&k, DT_I32, 2))}, 1, NULL, 0, NULL);
    k.b = outer;
    IrVal ifr = k.f->ops[iop].res;
    /* while n != 1 { n = n even ? n / 2 : 3n + 1; steps += 1 } starting at n = hi */
    uint32_t wop = ir_build(&k.b, IR_WHILE, (IrVal[]){hi, c0}, 2, (IrType[]){ir_ty_scalar(DT_I32), ir_ty_scalar(DT_I32)}, 2, NULL);
    IrBlk before = k.f->ops[wop].region[0], after = k.f->ops[wop].region[1];
    IrVal bn = ir_block_add_arg(k.f, before, ir_ty_scalar(DT_I32)), bs = ir_block_add_arg(k.f, before, ir_ty_scalar(DT_I32));
    ir_builder_at_end(&k.b, k.f, before);
    ir_build(&k.b, IR_CONDITION, (IrVal[]){cmp(&k, CMP_NE, bn, c1), bn, bs}, 3, NULL, 0, NULL);
    IrVal an = ir_block_add_arg(k.f, after, ir_ty_scalar(DT_I32)), as = ir_block_add_arg(k.f, after, ir_ty_scalar(DT_I32));
    ir_builder_at_end(&k.b, k.f, after);
    IrVal even = cmp(&k, CMP_EQ, op2(&k, IR_AND, an, c1), c0);
    IrVal half = op2(&k, IR_DIV, an, ci(&k, DT_I32, 2));
    IrVal trip = op2(&k, IR_ADD, op2(&k, IR_MUL, an, ci(&k, DT_I32, 3)), c1);
    IrVal nn = opn(&k, IR_SELECT, ir_ty_scalar(DT_I32), (IrVal[]){even, half, trip}, 3, 0, 0);
    ir_build(&k.b, IR_YIELD, (IrVal[]){nn, op2(&k, IR_ADD, as, c1)}, 2, NULL, 0, NULL);
    k.b = outer;
    IrVal steps = k.f->ops[wop].res + 1;
    store(&k, o, r0, 0);
    store(&k, opn(&k, IR_ADDPTR, ir_ty_ptr(DT_I32), (IrVal[]){o, c1}, 2, 0, 0), r1, 0);
    store(&k, opn(&k, IR_ADDPTR, ir_ty_ptr(DT_I32), (IrVal[]){o, ci(&k, DT_I32, 2)}, 2, 0, 0), ifr, 0);
    store(&k, opn(&k, IR_ADDPTR, ir_ty_ptr(DT_I32), (IrVal[]){o, ci(&k, DT_I32, 3)}, 2, 0, 0), steps, 0);
    ret(&k);

    int cases[][3] = {{-5, 27, -3}, {3, 27, -1}, {40, 27, -2}, {0, 7, -7}, {0, 9, -100}};
    for (size_t c = 0; c < TL_COUNTOF(cases); c++) {
        int l = cases[c][0], h = cases[c][1], stp = cases[c][2];
        int32_t os[4];
        InterpBuf bufs[] = {buf_of(os, sizeof os, "o")};
        InterpArg args[] = {a_int(l), a_int(h), a_int(stp), a_ptr(0)};
        assert_true(run(&k, bufs, 1, args, 1, 1, 1, 0));
        int32_t ws = 0, wt = 1;
        for (int i = h; i > l; i += stp) {
            int32_t nt = ws + i;
            ws = wt;
            wt = nt;
        }
        int n = h, cnt = 0;
        while (n != 1) n = n % 2 == 0 ? n / 2 : 3 * n + 1, cnt++;
        assert_int_equal(os[0], ws);
        assert_int_equal(os[1], wt);
        assert_int_equal(os[2], ws > wt ? ws - wt : wt * 2);
        assert_int_equal(os[3], cnt);
    }
    int32_t os[4];
    InterpBuf bufs[] = {buf_of(os, sizeof os, "o")};
    InterpArg zero[] = {a_int(0), a_int(5), a_int(0), a_ptr(0)};
    assert_false(run(&k, bufs, 1, zero, 1, 1, 1, 0));
    expect_error("t.tile:9:2: error: for loop with step 0");
    /* Collatz from 27 takes 111 steps of about ten ops each: a limit of 500 stops it */
    InterpArg ok[] = {a_int(0), a_int(27), a_int(-1), a_ptr(0)};
    assert_false(run(&k, bufs, 1, ok, 1, 1, 1, 500));
    expect_error("step limit of 500");
    assert_true(run(&k, bufs, 1, ok, 1, 1, 1, 100000));
    kb_free(&k);
}

/* Builds `for i in range(lo, hi, step) { n += 1; s += i }` over dtype dt; stores (n, s). */
static void build_count_loop(Kb *k, DType dt, int64_t lo, int64_t hi, int64_t step, IrVal o)
{
    IrType st = ir_ty_scalar(dt), it = ir_ty_scalar(DT_I64);
    IrVal z = ci(k, DT_I64, 0);
    uint32_t fop = ir_build(&k->b, IR_FOR, (IrVal[]){ci(k, dt, lo), ci(k, dt, hi), ci(k, dt, step), z, z}, 5,
                            (IrType[]){it, it}, 2, NULL);
    IrBlk body = k->f->ops[fop].region[0];
    IrVal iv = ir_block_add_arg(k->f, body, st);
    IrVal n = ir_block_add_arg(k->f, body, it), s = ir_block_add_arg(k->f, body, it);
    IrBuilder outer = k->b;
    ir_builder_at_end(&k->b, k->f, body);
    IrVal iv64 = op1(k, IR_CAST, it, iv);
    ir_build(&k->b, IR_YIELD, (IrVal[]){op2(k, IR_ADD, n, ci(k, DT_I64, 1)), op2(k, IR_ADD, s, iv64)}, 2, NULL, 0, NULL);
    k->b = outer;
    store(k, o, k->f->ops[fop].res, 0);
    store(k, opn(k, IR_ADDPTR, ir_ty_ptr(DT_I64), (IrVal[]){o, ci(k, DT_I32, 1)}, 2, 0, 0), k->f->ops[fop].res + 1, 0);
}

/* loops whose next value would leave the induction type stop there (no wrap
 * into an endless loop); unsigned loops count up; a loop that does not start
 * leaves the initial values. */
static void test_loop_edges(void **state)
{
    (void)state;
    struct { DType dt; int64_t lo, hi, step, n, s; } cases[] = {
        {DT_I32, INT32_MAX - 5, INT32_MAX, 4, 2, 2ll * INT32_MAX - 6},
        {DT_I32, INT32_MIN + 5, INT32_MIN, -4, 2, 2ll * INT32_MIN + 6},
        {DT_U8, 250, 255, 3, 2, 250 + 253},
        {DT_U8, 0, 255, 200, 2, 200},
        {DT_I8, -128, 127, 100, 3, -128 - 28 + 72},
        {DT_I64, 5, 5, 1, 0, 0},
        {DT_I64, INT64_MAX - 1, INT64_MAX, 7, 1, INT64_MAX - 1},
    };
    for (size_t c = 0; c < TL_COUNTOF(cases); c++) {
        Kb k;
        kb_new(&k);
        IrVal o = prm(&k, "o", ir_ty_ptr(DT_I64));
        build_count_loop(&k, cases[c].dt, cases[c].lo, cases[c].hi, cases[c].step, o);
        ret(&k);
        int64_t os[2];
        InterpBuf bufs[] = {buf_of(os, sizeof os, "o")};
        InterpArg args[] = {a_ptr(0)};
        assert_true(run(&k, bufs, 1, args, 1, 1, 1, 10000));
        if (os[0] != cases[c].n || os[1] != cases[c].s)
            print_error("case %zu: n %lld s %lld\n", c, (long long)os[0], (long long)os[1]);
        assert_true(os[0] == cases[c].n && os[1] == cases[c].s);
        kb_free(&k);
    }
}

/* block_load with a block-shaped `other` (the verifier allows a scalar or a block),
 * and cumsum of f16 into f32 (the accumulation type) */
static void test_block_other_tile_and_cumsum_acc(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    IrVal a = prm(&k, "A", ir_ty_view(DT_F16, 2)), o = prm(&k, "o", ir_ty_ptr(DT_F32));
    IrType bt = ty2(DT_F16, 4, 8);
    IrVal other = op1(&k, IR_CAST, bt, op1(&k, IR_RESHAPE, ty2(DT_I32, 4, 8), arange(&k, 32)));
    IrVal z = ci(&k, DT_I64, 1);
    IrVal blk = opn(&k, IR_BLOCK_LOAD, bt, (IrVal[]){a, z, z, other}, 4, 0, 1);
    IrVal cs = opn(&k, IR_CUMSUM, ty2(DT_F32, 4, 8), &blk, 1, 1, 0);
    store(&k, ptr_at(&k, o, arange(&k, 32)), op1(&k, IR_RESHAPE, ty1(DT_F32, 32), cs), 0);
    ret(&k);
    uint16_t as[3 * 5];
    double av[3 * 5];
    for (int i = 0; i < 15; i++) {
        av[i] = fp_round(DT_F16, rnd_f(1000));
        as[i] = fp_to_f16(av[i]);
    }
    float os[32];
    InterpBuf bufs[] = {buf_of(as, sizeof as, "A"), buf_of(os, sizeof os, "o")};
    InterpArg args[] = {a_view2(0, 0, 3, 5, 5), a_ptr(1)};
    assert_true(run(&k, bufs, 2, args, 1, 1, 1, 0));
    for (int r = 0; r < 4; r++) {
        float s = 0;
        for (int c = 0; c < 8; c++) {
            int ar = r + 1, ac = c + 1;
            float v = ar < 3 && ac < 5 ? (float)av[ar * 5 + ac] : (float)(r * 8 + c);
            s = c ? s + v : v;
            assert_true(os[r * 8 + c] == s);
        }
    }
    kb_free(&k);
}

static void test_print_and_assert(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    IrVal x = prm(&k, "x", ir_ty_scalar(DT_F32));
    IrVal v = op2(&k, IR_ADD, op1(&k, IR_CAST, ty1(DT_F32, 4), arange(&k, 4)), splat(&k, x, ty1(DT_F32, 4)));
    IrAttr pa = {.str = ir_module_str(k.m, "vals", 4)};
    ir_build(&k.b, IR_PRINT, (IrVal[]){pid(&k, 0), v}, 2, NULL, 0, &pa);
    IrAttr aa = {.str = ir_module_str(k.m, "x must stay below 2", 19)};
    k.b.loc = (SrcLoc){6, 4};
    ir_build(&k.b, IR_ASSERT, (IrVal[]){cmp(&k, CMP_LT, v, splat(&k, cf(&k, DT_F32, 2.0), ty1(DT_F32, 4)))}, 1, NULL, 0, &aa);
    ret(&k);
    InterpArg args[] = {{.kind = IARG_SCALAR, .f = -2.5}};
    assert_true(run(&k, NULL, 0, args, 2, 1, 1, 0));
    assert_string_equal(print_text, "pid (0, 0, 0) vals: 0 -2.5 -1.5 -0.5 0.5\n"
                                    "pid (1, 0, 0) vals: 1 -2.5 -1.5 -0.5 0.5\n");
    args[0].f = -0.5; /* lane 3 reaches 2.5 */
    assert_false(run(&k, NULL, 0, args, 2, 1, 1, 0));
    expect_error("t.tile:6:4: error: assertion failed: x must stay below 2 (lane 3) (program (0, 0, 0))");
    kb_free(&k);
}

/* grid(ceil(n / 256), 3) computed from the arguments; an entry of 0 is an error. */
static void test_grid_clause(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    prm(&k, "x", ir_ty_ptr(DT_F32));
    prm(&k, "n", ir_ty_scalar(DT_I32));
    ret(&k);
    IrBlk g = ir_func_make_grid(k.f);
    ir_builder_at_end(&k.b, k.f, g);
    IrVal n = k.f->blocks[g].args[1];
    IrVal q = op2(&k, IR_DIV, op2(&k, IR_ADD, n, ci(&k, DT_I32, 255)), ci(&k, DT_I32, 256));
    k.b.loc = (SrcLoc){1, 30};
    ir_build(&k.b, IR_YIELD, (IrVal[]){q, ci(&k, DT_I32, 3)}, 2, NULL, 0, NULL);
    uint32_t grid[3];
    InterpArg args[] = {a_ptr(0), a_int(1000)};
    verify(&k);
    diag_reset();
    assert_true(interp_grid(k.f, args, grid, &diag));
    assert_int_equal(grid[0], 4);
    assert_int_equal(grid[1], 3);
    assert_int_equal(grid[2], 1);
    args[1] = a_int(-300);
    assert_false(interp_grid(k.f, args, grid, &diag));
    expect_error("t.tile:1:30: error: grid dimension 0 is 0; it must be in 1..2^31-1");
    kb_free(&k);
}

/* an argument of the wrong kind is an error, not a crash */
static void test_bad_arguments(void **state)
{
    (void)state;
    Kb k;
    kb_new(&k);
    prm(&k, "x", ir_ty_ptr(DT_F32));
    ret(&k);
    InterpArg args[] = {a_int(3)};
    assert_false(run(&k, NULL, 0, args, 1, 1, 1, 0));
    expect_error("argument 0 ('x') of 'k' must be a pointer, not a scalar");
    kb_free(&k);
}

static int teardown(void **state)
{
    (void)state;
    diag_free(&diag);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd_ragged),
        cmocka_unit_test(test_out_of_bounds),
        cmocka_unit_test(test_misaligned),
        cmocka_unit_test(test_block_edges),
        cmocka_unit_test(test_block_other_and_bad_view),
        cmocka_unit_test(test_int_binary),
        cmocka_unit_test(test_division_by_zero),
        cmocka_unit_test(test_float_unary),
        cmocka_unit_test(test_float_binary_fma_select),
        cmocka_unit_test(test_casts),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_scan_sort_topk),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_atomics),
        cmocka_unit_test(test_grid_order),
        cmocka_unit_test(test_control_flow),
        cmocka_unit_test(test_loop_edges),
        cmocka_unit_test(test_block_other_tile_and_cumsum_acc),
        cmocka_unit_test(test_print_and_assert),
        cmocka_unit_test(test_grid_clause),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
