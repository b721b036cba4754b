/* test_scalar.c: ir/scalar.c, the language's scalar arithmetic, and the
 * promise built on it: constant folding gives the interpreter's bits.
 *
 * The first tests check the rules of lang/SEMANTICS.md one by one (division
 * and remainder by sign, shift counts outside the width, max/min with -0 and
 * NaN, comparisons with NaN, the once-rounded fma, casts, bitcasts).  The last
 * runs a table of ops twice through the interpreter, as built and after the
 * fold pass, with the operands constants (folded) or loaded at run time (the
 * algebraic identities), and requires identical bits. */
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
#include "ir/scalar.h"
#include "passes/pass.h"

static IrScalar I(int64_t v) { return (IrScalar){.i = v}; }
static IrScalar F(double v) { return (IrScalar){.f = v}; }

static int64_t ibin(IrOpcode opc, DType dt, int64_t a, int64_t b)
{
    IrScalar r;
    assert_int_equal(ir_scalar_binary(opc, dt, I(a), I(b), &r), IR_SCALAR_OK);
    return r.i;
}

static uint64_t fbits(IrOpcode opc, DType dt, double a, double b)
{
    IrScalar r;
    assert_int_equal(ir_scalar_binary(opc, dt, F(a), F(b), &r), IR_SCALAR_OK);
    return ir_scalar_bits(dt, r);
}

static double from_bits(DType dt, uint64_t b) { return ir_scalar_from_bits(dt, b).f; }

static void division_by_sign(void **state)
{
    (void)state;
    /* truncation toward zero; the remainder has the dividend's sign */
    assert_int_equal(ibin(IR_DIV, DT_I32, 7, 2), 3);
    assert_int_equal(ibin(IR_DIV, DT_I32, -7, 2), -3);
    assert_int_equal(ibin(IR_DIV, DT_I32, 7, -2), -3);
    assert_int_equal(ibin(IR_DIV, DT_I32, -7, -2), 3);
    assert_int_equal(ibin(IR_REM, DT_I32, 7, 2), 1);
    assert_int_equal(ibin(IR_REM, DT_I32, -7, 2), -1);
    assert_int_equal(ibin(IR_REM, DT_I32, 7, -2), 1);
    assert_int_equal(ibin(IR_REM, DT_I32, -7, -2), -1);
    /* min / -1 wraps, min % -1 is 0, in every signed width */
    assert_int_equal(ibin(IR_DIV, DT_I32, INT32_MIN, -1), INT32_MIN);
    assert_int_equal(ibin(IR_REM, DT_I32, INT32_MIN, -1), 0);
    assert_int_equal(ibin(IR_DIV, DT_I8, -128, -1), -128);
    assert_int_equal(ibin(IR_DIV, DT_I64, INT64_MIN, -1), INT64_MIN);
    assert_int_equal(ibin(IR_REM, DT_I64, INT64_MIN, -1), 0);
    /* unsigned: the bit patterns as values */
    assert_int_equal(ibin(IR_DIV, DT_U32, 0xffffffff, 2), 0x7fffffff);
    assert_int_equal(ibin(IR_REM, DT_U8, 0xff, 0x10), 0xf);
    assert_int_equal((uint64_t)ibin(IR_DIV, DT_U64, -1, 3), UINT64_MAX / 3);
    assert_int_equal(ibin(IR_REM, DT_U64, -1, -2), 1);
    /* by zero: the run-time error, nothing written */
    IrScalar r = I(42);
    assert_int_equal(ir_scalar_binary(IR_DIV, DT_I32, I(1), I(0), &r), IR_SCALAR_DIV_ZERO);
    assert_int_equal(ir_scalar_binary(IR_REM, DT_U16, I(1), I(0), &r), IR_SCALAR_DIV_ZERO);
    assert_int_equal(r.i, 42);
    /* float % is fmod: the dividend's sign */
    assert_true(from_bits(DT_F32, fbits(IR_REM, DT_F32, -7.5, 2)) == -1.5);
    assert_true(signbit(from_bits(DT_F32, fbits(IR_REM, DT_F32, -4, 2))));
}

static void shifts_outside_width(void **state)
{
    (void)state;
    assert_int_equal(ibin(IR_SHL, DT_I32, 1, 31), INT32_MIN);
    assert_int_equal(ibin(IR_SHL, DT_I32, 1, 32), 0);
    assert_int_equal(ibin(IR_SHL, DT_I32, 1, -1), 0);
    assert_int_equal(ibin(IR_SHL, DT_U8, 1, 8), 0);
    assert_int_equal(ibin(IR_SHL, DT_U8, 0x81, 1), 2);
    assert_int_equal(ibin(IR_SHL, DT_I64, 1, 64), 0);
    /* arithmetic >>: the sign fill; logical >>: 0 */
    assert_int_equal(ibin(IR_SHR, DT_I32, -8, 1), -4);
    assert_int_equal(ibin(IR_SHR, DT_I32, -8, 32), -1);
    assert_int_equal(ibin(IR_SHR, DT_I32, -8, 1000), -1);
    assert_int_equal(ibin(IR_SHR, DT_I32, 8, 40), 0);
    assert_int_equal(ibin(IR_SHR, DT_I32, -8, -1), -1);
    assert_int_equal(ibin(IR_SHR, DT_I8, -128, 7), -1);
    assert_int_equal(ibin(IR_SHR, DT_I8, -128, 8), -1);
    assert_int_equal(ibin(IR_SHR, DT_U32, 0x80000000, 31), 1);
    assert_int_equal(ibin(IR_SHR, DT_U32, 0x80000000, 32), 0);
    assert_int_equal(ibin(IR_SHR, DT_U64, -1, 63), 1);
    assert_int_equal(ibin(IR_SHR, DT_U64, -1, 64), 0);
    assert_int_equal(ibin(IR_SHR, DT_U64, -1, -1), 0); /* a count of 2^64 - 1 */
    assert_int_equal(ibin(IR_SHL, DT_U16, 1, 16), 0);
}

static void maxmin_zero_and_nan(void **state)
{
    (void)state;
    /* -0 orders below +0, whatever the operand order */
    assert_int_equal(fbits(IR_MAX, DT_F32, -0.0, 0.0), 0x00000000);
    assert_int_equal(fbits(IR_MAX, DT_F32, 0.0, -0.0), 0x00000000);
    assert_int_equal(fbits(IR_MIN, DT_F32, -0.0, 0.0), 0x80000000);
    assert_int_equal(fbits(IR_MIN, DT_F32, 0.0, -0.0), 0x80000000);
    assert_int_equal(fbits(IR_MIN, DT_F16, 0.0, -0.0), 0x8000);
    assert_int_equal(fbits(IR_MAX, DT_F64, -0.0, 0.0), 0);
    /* a NaN operand gives the positive quiet NaN, not the operand's NaN */
    double negnan = from_bits(DT_F32, 0xffc00001);
    assert_int_equal(fbits(IR_MAX, DT_F32, negnan, 1.0), 0x7fc00000);
    assert_int_equal(fbits(IR_MIN, DT_F32, 1.0, negnan), 0x7fc00000);
    assert_int_equal(fbits(IR_MAX, DT_F32, negnan, negnan), 0x7fc00000);
    assert_int_equal(fbits(IR_MIN, DT_F16, from_bits(DT_F16, 0xfe00), 2.0), 0x7e00);
    assert_int_equal(fbits(IR_MAX, DT_BF16, from_bits(DT_BF16, 0xffc0), 2.0), 0x7fc0);
    assert_int_equal(fbits(IR_MAX, DT_F64, from_bits(DT_F64, 0xfff0000000000001ull), 0), 0x7ff8000000000000ull);
    /* integers by value, signed or unsigned */
    assert_int_equal(ibin(IR_MAX, DT_I32, -1, 1), 1);
    assert_int_equal(ibin(IR_MAX, DT_U32, 0xffffffff, 1), 0xffffffff);
    assert_int_equal(ibin(IR_MIN, DT_U64, -1, 1), 1);
    assert_int_equal(ibin(IR_MIN, DT_I64, INT64_MIN, 0), INT64_MIN);
    /* the order sort and argmax use: NaN high (or low), NaNs tied */
    assert_true(ir_scalar_order(DT_F32, F(NAN), F(INFINITY), true) > 0);
    assert_true(ir_scalar_order(DT_F32, F(NAN), F(-INFINITY), false) < 0);
    assert_int_equal(ir_scalar_order(DT_F32, F(NAN), F(-NAN), true), 0);
    assert_true(ir_scalar_order(DT_F32, F(-0.0), F(0.0), true) < 0);
}

static void comparisons_with_nan(void **state)
{
    (void)state;
    for (int p = 0; p < CMP_COUNT; p++) {
        bool want = p == CMP_NE;
        assert_int_equal(ir_scalar_cmp((IrCmp)p, DT_F32, F(NAN), F(1)), want);
        assert_int_equal(ir_scalar_cmp((IrCmp)p, DT_F32, F(1), F(NAN)), want);
        assert_int_equal(ir_scalar_cmp((IrCmp)p, DT_F64, F(NAN), F(NAN)), want);
        assert_int_equal(ir_scalar_cmp((IrCmp)p, DT_F16, F(-NAN), F(INFINITY)), want);
    }
    /* -0 == +0 */
    assert_true(ir_scalar_cmp(CMP_EQ, DT_F32, F(-0.0), F(0.0)));
    assert_false(ir_scalar_cmp(CMP_LT, DT_F32, F(-0.0), F(0.0)));
    assert_true(ir_scalar_cmp(CMP_LE, DT_F32, F(0.0), F(-0.0)));
    /* integers by signedness */
    assert_true(ir_scalar_cmp(CMP_LT, DT_I32, I(-1), I(0)));
    assert_false(ir_scalar_cmp(CMP_LT, DT_U32, I(0xffffffff), I(0)));
    assert_true(ir_scalar_cmp(CMP_GT, DT_U64, I(-1), I(0)));
    assert_true(ir_scalar_cmp(CMP_GE, DT_I8, I(-128), I(-128)));
}

static void fma_rounds_once(void **state)
{
    (void)state;
    /* a*b = 1 + 2^-11 + 2^-24 exactly: an f32 tie.  With c = +-2^-60 the exact
     * sum lies just above or below the tie; rounding it to double first loses
     * c and would tie to even (1 + 2^-11) both times. */
    double a = 1 + ldexp(1, -12), up = 1 + ldexp(1, -11) + ldexp(1, -23), down = 1 + ldexp(1, -11);
    assert_true(ir_scalar_fma(DT_F32, F(a), F(a), F(ldexp(1, -60))).f == up);
    assert_true(ir_scalar_fma(DT_F32, F(a), F(a), F(-ldexp(1, -60))).f == down);
    assert_true(ir_scalar_fma(DT_F32, F(a), F(a), F(0)).f == down); /* an exact tie: to even */
    /* the same in f16: a*b = 1 + 2^-5 + 2^-6 + 2^-11 is a tie of f16's 2^-10 grid */
    double h5 = 1 + ldexp(1, -5), h6 = 1 + ldexp(1, -6), hdown = 1 + ldexp(1, -5) + ldexp(1, -6);
    assert_true(ir_scalar_fma(DT_F16, F(h5), F(h6), F(ldexp(1, -40))).f == hdown + ldexp(1, -10));
    assert_true(ir_scalar_fma(DT_F16, F(h5), F(h6), F(-ldexp(1, -40))).f == hdown);
    assert_true(ir_scalar_fma(DT_F16, F(h5), F(h6), F(0)).f == hdown);
    /* f64 is C's fma; a product of opposite zeros plus -0 keeps -0 */
    assert_true(ir_scalar_fma(DT_F64, F(0.1), F(10), F(-1)).f == fma(0.1, 10, -1));
    assert_true(signbit(ir_scalar_fma(DT_F32, F(-0.0), F(1), F(-0.0)).f));
    assert_true(isnan(ir_scalar_fma(DT_F32, F(INFINITY), F(1), F(-INFINITY)).f)); /* inf - inf */
    assert_true(isinf(ir_scalar_fma(DT_F32, F(3e38), F(3e38), F(0)).f));        /* overflow past f32 */
    /* integers wrap */
    assert_int_equal(ir_scalar_fma(DT_I8, I(16), I(16), I(1)).i, 1);
    assert_int_equal(ir_scalar_fma(DT_U32, I(0x10000), I(0x10000), I(5)).i, 5);
}

static void casts_and_bitcasts(void **state)
{
    (void)state;
    assert_int_equal(ir_scalar_cast(DT_F32, DT_I32, F(3e9)).i, INT32_MAX);
    assert_int_equal(ir_scalar_cast(DT_F32, DT_I32, F(-3e9)).i, INT32_MIN);
    assert_int_equal(ir_scalar_cast(DT_F32, DT_I32, F(NAN)).i, 0);
    assert_int_equal(ir_scalar_cast(DT_F32, DT_I32, F(-2.9)).i, -2);
    assert_int_equal(ir_scalar_cast(DT_F32, DT_U8, F(-5)).i, 0);
    assert_int_equal(ir_scalar_cast(DT_F64, DT_U64, F(1e30)).i, -1);
    assert_int_equal(ir_scalar_cast(DT_F32, DT_I1, F(NAN)).i, 0);
    assert_int_equal(ir_scalar_cast(DT_F32, DT_I1, F(-0.5)).i, 1);
    assert_int_equal(ir_scalar_cast(DT_I32, DT_I8, I(0x1ff)).i, -1);
    assert_int_equal(ir_scalar_cast(DT_I32, DT_U8, I(-1)).i, 0xff);
    assert_int_equal(ir_scalar_cast(DT_I32, DT_I1, I(256)).i, 1);
    /* u64 2^64 - 1 to f32: once rounded, 2^64 */
    assert_true(ir_scalar_cast(DT_U64, DT_F32, I(-1)).f == ldexp(1, 64));
    assert_true(ir_scalar_cast(DT_I64, DT_F32, I(-1)).f == -1);
    /* float to float: overflow to inf (f16) or saturation (fp8); NaN keeps its sign */
    assert_true(isinf(ir_scalar_cast(DT_F32, DT_F16, F(1e6)).f));
    assert_true(ir_scalar_cast(DT_F32, DT_F8E4M3, F(1e6)).f == 448);
    assert_true(ir_scalar_cast(DT_F32, DT_F8E5M2, F(-INFINITY)).f == -57344);
    assert_int_equal(ir_scalar_bits(DT_F16, ir_scalar_cast(DT_F32, DT_F16, F(from_bits(DT_F32, 0xffc00123)))),
                     0xfe00);
    /* bitcasts keep every bit of an f32 or f64 NaN; f16's NaNs are canonical */
    assert_int_equal(ir_scalar_bits(DT_F32, ir_scalar_bitcast(DT_I32, DT_F32, I((int32_t)0xffc00123))), 0xffc00123);
    assert_int_equal(ir_scalar_bitcast(DT_F32, DT_I32, ir_scalar_bitcast(DT_I32, DT_F32, I(0x7fc00001))).i,
                     0x7fc00001);
    assert_int_equal((uint64_t)ir_scalar_bitcast(DT_F64, DT_I64, ir_scalar_bitcast(DT_I64, DT_F64, I(-2))).i,
                     (uint64_t)-2);
    assert_int_equal(ir_scalar_bitcast(DT_F16, DT_I16, ir_scalar_bitcast(DT_I16, DT_F16, I((int16_t)0xfd01))).i,
                     (int16_t)0xfe00);
    assert_int_equal(ir_scalar_bitcast(DT_BF16, DT_U16, F(-1.5)).i, 0xbfc0);
    assert_int_equal(ir_scalar_bitcast(DT_F8E4M3, DT_U8, F(-448)).i, 0xfe);
    /* an e5m2 inf made by a bitcast keeps its bits (a conversion saturates, above); the GPU
     * stores and moves the byte as it is (gen-run seed 21406) */
    assert_true(isinf(ir_scalar_bitcast(DT_U8, DT_F8E5M2, I(0xfc)).f));
    assert_int_equal(ir_scalar_bitcast(DT_F8E5M2, DT_U8, ir_scalar_bitcast(DT_U8, DT_F8E5M2, I(0xfc))).i, 0xfc);
    assert_int_equal(ir_scalar_bits(DT_F8E5M2, ir_scalar_bitcast(DT_U8, DT_F8E5M2, I(0x7c))), 0x7c);
    assert_int_equal(ir_scalar_bitcast(DT_I8, DT_U8, I(-1)).i, 0xff);
    /* i1 from a byte: any nonzero is true */
    assert_int_equal(ir_scalar_from_bits(DT_I1, 0x80).i, 1);
}

/* ---- fold agrees with the interpreter ------------------------------------------- */

typedef struct Case {
    IrOpcode opc;
    int64_t pred;       /* CMP */
    DType dt, rdt;      /* operand and result dtypes */
    int n;              /* operands */
    uint64_t x[3];      /* operand bits in dt */
    unsigned runtime;   /* bit k: operand k is loaded, not a constant */
    bool same;          /* operand 1 is operand 0 itself */
} Case;

#define F32NEGNAN 0xffc00000u
#define F32PAYLOAD 0x7fc12345u
#define F64SNAN 0x7ff0000000000001ull
#define F64NEGNAN 0xfff8000000000000ull

static const Case cases[] = {
    /* integer division and remainder by sign, min / -1 */
    {IR_DIV, 0, DT_I32, DT_I32, 2, {(uint32_t)-7, 2}, 0, false},
    {IR_REM, 0, DT_I32, DT_I32, 2, {(uint32_t)-7, 2}, 0, false},
    {IR_REM, 0, DT_I32, DT_I32, 2, {7, (uint32_t)-2}, 0, false},
    {IR_DIV, 0, DT_I32, DT_I32, 2, {0x80000000u, 0xffffffffu}, 0, false},
    {IR_REM, 0, DT_I8, DT_I8, 2, {0x80, 0xff}, 0, false},
    {IR_DIV, 0, DT_U64, DT_U64, 2, {~0ull, 3}, 0, false},
    {IR_DIV, 0, DT_I32, DT_I32, 2, {5, 1}, 1, false},
    /* shifts at and beyond the width */
    {IR_SHL, 0, DT_I32, DT_I32, 2, {1, 32}, 0, false},
    {IR_SHR, 0, DT_I32, DT_I32, 2, {(uint32_t)-8, 33}, 0, false},
    {IR_SHR, 0, DT_U16, DT_U16, 2, {0x8000, 16}, 0, false},
    {IR_SHL, 0, DT_U64, DT_U64, 2, {1, ~0ull}, 0, false},
    {IR_SHR, 0, DT_I64, DT_I64, 2, {1ull << 63, 0}, 1, false},
    /* max/min with zeros and NaNs, constant and at run time */
    {IR_MAX, 0, DT_F32, DT_F32, 2, {0x80000000u, 0}, 0, false},
    {IR_MIN, 0, DT_F32, DT_F32, 2, {0, 0x80000000u}, 0, false},
    {IR_MAX, 0, DT_F32, DT_F32, 2, {F32NEGNAN, 0x3f800000u}, 0, false},
    {IR_MAX, 0, DT_F32, DT_F32, 2, {F32NEGNAN, F32NEGNAN}, 1, true},
    {IR_MIN, 0, DT_F32, DT_F32, 2, {F32PAYLOAD, F32PAYLOAD}, 1, true},
    {IR_MAX, 0, DT_F16, DT_F16, 2, {0xfe00, 0xfe00}, 1, true},
    {IR_MIN, 0, DT_BF16, DT_BF16, 2, {0xffc0, 0xffc0}, 1, true},
    {IR_MAX, 0, DT_F64, DT_F64, 2, {F64NEGNAN, F64NEGNAN}, 1, true},
    {IR_MIN, 0, DT_F8E4M3, DT_F8E4M3, 2, {0xff, 0xff}, 1, true},
    {IR_MAX, 0, DT_I32, DT_I32, 2, {(uint32_t)-3, (uint32_t)-3}, 1, true},
    /* comparisons with NaN */
    {IR_CMP, CMP_EQ, DT_F32, DT_I1, 2, {F32NEGNAN, F32NEGNAN}, 0, false},
    {IR_CMP, CMP_NE, DT_F32, DT_I1, 2, {F32NEGNAN, F32NEGNAN}, 0, false},
    {IR_CMP, CMP_LE, DT_F64, DT_I1, 2, {F64NEGNAN, 0}, 0, false},
    {IR_CMP, CMP_EQ, DT_F32, DT_I1, 2, {0x80000000u, 0}, 0, false},
    {IR_CMP, CMP_LT, DT_U32, DT_I1, 2, {0xffffffffu, 0}, 0, false},
    {IR_CMP, CMP_GE, DT_I32, DT_I1, 2, {5, 5}, 1, true},
    /* fma rounded once (the tie cases of fma_rounds_once) */
    {IR_FMA, 0, DT_F32, DT_F32, 3, {0x3f800800u, 0x3f800800u, 0x21800000u}, 0, false},
    {IR_FMA, 0, DT_F32, DT_F32, 3, {0x3f800800u, 0x3f800800u, 0xa1800000u}, 0, false},
    /* the float identities: a NaN, -0 and a signaling f64 NaN go through unchanged, or not folded */
    {IR_MUL, 0, DT_F32, DT_F32, 2, {F32NEGNAN, 0x3f800000u}, 1, false},
    {IR_MUL, 0, DT_F32, DT_F32, 2, {0x3f800000u, F32PAYLOAD}, 2, false},
    {IR_DIV, 0, DT_F32, DT_F32, 2, {F32PAYLOAD, 0x3f800000u}, 1, false},
    {IR_ADD, 0, DT_F32, DT_F32, 2, {0x80000000u, 0x80000000u}, 1, false},
    {IR_ADD, 0, DT_F32, DT_F32, 2, {0x80000000u, 0}, 1, false},
    {IR_ADD, 0, DT_F32, DT_F32, 2, {F32NEGNAN, 0x80000000u}, 1, false},
    {IR_SUB, 0, DT_F32, DT_F32, 2, {0x80000000u, 0}, 1, false},
    {IR_SUB, 0, DT_F32, DT_F32, 2, {F32NEGNAN, F32NEGNAN}, 1, true},
    {IR_MUL, 0, DT_F32, DT_F32, 2, {F32NEGNAN, 0}, 1, false},
    {IR_MUL, 0, DT_F64, DT_F64, 2, {F64SNAN, 0x3ff0000000000000ull}, 1, false},
    {IR_DIV, 0, DT_F64, DT_F64, 2, {F64SNAN, 0x3ff0000000000000ull}, 1, false},
    {IR_ADD, 0, DT_F64, DT_F64, 2, {F64SNAN, 0x8000000000000000ull}, 1, false},
    {IR_SUB, 0, DT_F64, DT_F64, 2, {F64SNAN, 0}, 1, false},
    {IR_MUL, 0, DT_F16, DT_F16, 2, {0xfe00, 0x3c00}, 1, false},
    {IR_MUL, 0, DT_BF16, DT_BF16, 2, {0xffc0, 0x3f80}, 1, false},
    {IR_NEG, 0, DT_F32, DT_F32, 1, {F32PAYLOAD}, 0, false},
    {IR_NEG, 0, DT_F64, DT_F64, 1, {F64SNAN}, 1, false},
    /* casts: saturation, NaN to int, NaN between floats */
    {IR_CAST, 0, DT_F32, DT_I32, 1, {0x4f800000u}, 0, false},
    {IR_CAST, 0, DT_F32, DT_U8, 1, {F32NEGNAN}, 0, false},
    {IR_CAST, 0, DT_F32, DT_F16, 1, {F32NEGNAN}, 0, false},
    {IR_CAST, 0, DT_F64, DT_F32, 1, {F64NEGNAN | 0x123456789ull}, 0, false},
    {IR_CAST, 0, DT_U64, DT_F32, 1, {~0ull}, 0, false},
    {IR_CAST, 0, DT_F32, DT_F8E4M3, 1, {0x7f7fffffu}, 0, false},
    {IR_BITCAST, 0, DT_F32, DT_I32, 1, {F32PAYLOAD}, 0, false},
    {IR_BITCAST, 0, DT_I16, DT_BF16, 1, {0xbfc0}, 0, false},
    /* the rest of the elementwise ops on a few values */
    {IR_ABS, 0, DT_I8, DT_I8, 1, {0x80}, 0, false},
    {IR_NOT, 0, DT_U16, DT_U16, 1, {0x00ff}, 0, false},
    {IR_SQRT, 0, DT_F32, DT_F32, 1, {0xbf800000u}, 0, false},
    {IR_EXP, 0, DT_F32, DT_F32, 1, {0x40400000u}, 0, false},
    {IR_FLOOR, 0, DT_F16, DT_F16, 1, {0xbe00}, 0, false},
    {IR_XOR, 0, DT_I32, DT_I32, 2, {7, 7}, 1, true},
};

/* Builds: operands (constants or loads of in<k>), the op, a store to `out`. */
static IrFunc *build_case(IrModule *m, const Case *c)
{
    IrFunc *f = ir_func_new(m, "k", "k", (SrcLoc){1, 1});
    IrVal in[3], out;
    for (int k = 0; k < c->n; k++) {
        char name[8];
        snprintf(name, sizeof name, "in%d", k);
        in[k] = ir_func_add_param(f, name, ir_ty_ptr(c->dt));
    }
    out = ir_func_add_param(f, "out", ir_ty_ptr(c->rdt));
    IrBuilder b = {0};
    ir_builder_at_end(&b, f, f->body);
    b.loc = (SrcLoc){2, 1};
    IrVal x[3];
    for (int k = 0; k < c->n; k++) {
        if (k == 1 && c->same) {
            x[1] = x[0];
        } else if (c->runtime & (1u << k)) {
            x[k] = ir_build1(&b, IR_LOAD, &in[k], 1, ir_ty_scalar(c->dt), NULL);
        } else {
            IrScalar v = ir_scalar_from_bits(c->dt, c->x[k]);
            x[k] = dt_is_float(c->dt) ? ir_const_float(&b, c->dt, v.f) : ir_const_int(&b, c->dt, v.i);
        }
    }
    IrAttr a = {0};
    a.i = c->pred;
    IrVal r = ir_build1(&b, c->opc, x, (uint32_t)c->n, ir_ty_scalar(c->rdt), &a);
    IrVal st[2] = {out, r};
    ir_build(&b, IR_STORE, st, 2, NULL, 0, NULL);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    return f;
}

/* Runs case c, folded or not; returns the bits it stores. */
static uint64_t run_case(const Case *c, bool folded, bool *was_folded)
{
    IrModule *m = ir_module_new("t.tile");
    IrFunc *f = build_case(m, c);
    Diag d;
    diag_init(&d, "t.tile", NULL, 0, stderr, DIAG_COLOR_NEVER);
    if (!ir_verify(f, &d, "test_scalar")) fail_msg("case %s: the kernel does not verify", ir_opinfo[c->opc].name);
    if (folded) {
        PassCtx cx = {&d, false};
        pass_fold(f, &cx);
        *was_folded = cx.changed;
    }
    uint64_t inb[3], outb = 0;
    InterpBuf bufs[4];
    InterpArg args[4];
    for (int k = 0; k < c->n; k++) {
        inb[k] = c->x[k];
        bufs[k] = (InterpBuf){&inb[k], (size_t)dt_bytes(c->dt), "in"};
        args[k] = (InterpArg){.kind = IARG_PTR, .buf = (uint32_t)k};
    }
    bufs[c->n] = (InterpBuf){&outb, (size_t)dt_bytes(c->rdt), "out"};
    args[c->n] = (InterpArg){.kind = IARG_PTR, .buf = (uint32_t)c->n};
    uint32_t grid[3] = {1, 1, 1};
    if (!interp_run(f, bufs, (uint32_t)c->n + 1, args, grid, NULL, &d))
        fail_msg("case %s: the interpreter failed", ir_opinfo[c->opc].name);
    diag_free(&d);
    ir_module_free(m);
    return outb;
}

static void fold_agrees_with_interp(void **state)
{
    (void)state;
    int nfolded = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const Case *c = &cases[k];
        bool changed = false;
        uint64_t want = run_case(c, false, &changed), got = run_case(c, true, &changed);
        nfolded += changed;
        if (want != got)
            fail_msg("case %zu (%s %s -> %s): interpreted 0x%llx, folded 0x%llx", k, ir_opinfo[c->opc].name,
                     dt_name[c->dt], dt_name[c->rdt], (unsigned long long)want, (unsigned long long)got);
    }
    /* the table exercises folding, not only the interpreter */
    assert_true(nfolded >= (int)(sizeof cases / sizeof cases[0]) / 2);
}

/* The cases the fold pass must leave alone, because folding would change bits. */
static void fold_keeps_bit_changing_identities(void **state)
{
    (void)state;
    static const Case kept[] = {
        {IR_MAX, 0, DT_F32, DT_F32, 2, {F32NEGNAN, F32NEGNAN}, 1, true},
        {IR_MIN, 0, DT_F16, DT_F16, 2, {0xfe00, 0xfe00}, 1, true},
        {IR_MUL, 0, DT_F64, DT_F64, 2, {F64SNAN, 0x3ff0000000000000ull}, 1, false},
        {IR_ADD, 0, DT_F32, DT_F32, 2, {0x80000000u, 0}, 1, false},
    };
    for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++) {
        bool changed = true;
        uint64_t got = run_case(&kept[k], true, &changed);
        assert_false(changed);
        (void)got;
    }
    /* the quieted f64 NaN and the canonical f32 NaN, as the interpreter gives them */
    bool changed;
    assert_int_equal(run_case(&kept[2], false, &changed), 0x7ff8000000000001ull);
    assert_int_equal(run_case(&kept[0], false, &changed), 0x7fc00000u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(division_by_sign),      cmocka_unit_test(shifts_outside_width),
        cmocka_unit_test(maxmin_zero_and_nan),   cmocka_unit_test(comparisons_with_nan),
        cmocka_unit_test(fma_rounds_once),       cmocka_unit_test(casts_and_bitcasts),
        cmocka_unit_test(fold_agrees_with_interp), cmocka_unit_test(fold_keeps_bit_changing_identities),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
