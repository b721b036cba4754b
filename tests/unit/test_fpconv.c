/* test_fpconv.c: the narrow float conversions against independent oracles.
 *
 * Every 8- and 16-bit pattern is decoded and re-encoded; every midpoint between
 * neighbouring values must round to the even one (and a hair off it, to the
 * nearer); random doubles are checked against a brute-force "nearest value in
 * the sorted table of all finite values" oracle; f16 is also checked against the
 * compiler's _Float16 conversion where the compiler has one.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir/fpconv.h"

typedef struct Fmt {
    const char *name;
    int bits;                 /* 8 or 16 */
    double (*dec)(uint32_t);
    uint32_t (*enc)(double);
    bool saturate;            /* fp8: overflow gives the largest finite value */
    double max_finite;
} Fmt;

static double dec_f16(uint32_t b) { return fp_from_f16((uint16_t)b); }
static double dec_bf16(uint32_t b) { return fp_from_bf16((uint16_t)b); }
static double dec_e4m3(uint32_t b) { return fp_from_f8e4m3((uint8_t)b); }
static double dec_e5m2(uint32_t b) { return fp_from_f8e5m2((uint8_t)b); }
static uint32_t enc_f16(double x) { return fp_to_f16(x); }
static uint32_t enc_bf16(double x) { return fp_to_bf16(x); }
static uint32_t enc_e4m3(double x) { return fp_to_f8e4m3(x); }
static uint32_t enc_e5m2(double x) { return fp_to_f8e5m2(x); }

static const Fmt fmts[] = {
    {"f16", 16, dec_f16, enc_f16, false, 65504.0},
    {"bf16", 16, dec_bf16, enc_bf16, false, 0x1.FEp127},
    {"f8e4m3", 8, dec_e4m3, enc_e4m3, true, 448.0},
    {"f8e5m2", 8, dec_e5m2, enc_e5m2, true, 57344.0},
};

/* The non-negative finite values of a format, ascending, with their codes. */
typedef struct Table {
    double *v;
    uint32_t *code;
    uint32_t n;
} Table;

static Table table_of(const Fmt *f)
{
    uint32_t half = 1u << (f->bits - 1);
    Table t = {malloc(half * sizeof(double)), malloc(half * sizeof(uint32_t)), 0};
    for (uint32_t b = 0; b < half; b++) {
        double v = f->dec(b);
        if (isnan(v) || isinf(v)) continue;
        t.v[t.n] = v;
        t.code[t.n++] = b;
    }
    return t;
}

static void table_free(Table *t)
{
    free(t->v);
    free(t->code);
}

/* Brute-force oracle: nearest table entry, ties to the even code; beyond the
 * largest value, overflow as the format does. */
static uint32_t oracle(const Fmt *f, const Table *t, double x)
{
    uint32_t sign = signbit(x) ? 1u << (f->bits - 1) : 0;
    double a = fabs(x);
    double top = t->v[t->n - 1];
    double ulp_top = top - t->v[t->n - 2];
    if (a >= top + ulp_top / 2 && !(f->saturate)) {
        /* IEEE overflow: at or past the midpoint to the next (unrepresentable) power */
        return sign | (f->enc(INFINITY) & ~sign);
    }
    if (a >= top) return sign | t->code[t->n - 1];
    uint32_t lo = 0, hi = t->n - 1; /* v[lo] <= a < v[hi] */
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (t->v[mid] <= a) lo = mid;
        else hi = mid;
    }
    double dlo = a - t->v[lo], dhi = t->v[hi] - a;
    if (dlo < dhi) return sign | t->code[lo];
    if (dhi < dlo) return sign | t->code[hi];
    return sign | ((t->code[lo] & 1) ? t->code[hi] : t->code[lo]);
}

static void test_roundtrip_every_pattern(void **state)
{
    (void)state;
    for (size_t k = 0; k < TL_COUNTOF(fmts); k++) {
        const Fmt *f = &fmts[k];
        uint32_t signbit_ = 1u << (f->bits - 1);
        for (uint32_t b = 0; b < (1u << f->bits); b++) {
            double v = f->dec(b);
            uint32_t back = f->enc(v);
            if (isnan(v)) {
                assert_true(isnan(f->dec(back)));
                assert_int_equal(back & signbit_, b & signbit_);
            } else if (isinf(v) && f->saturate) {
                /* e5m2's inf saturates like any overflow (cvt.rn.satfinite) */
                assert_true(f->dec(back) == copysign(f->max_finite, v));
            } else {
                if (back != b) print_error("%s: 0x%x -> %a -> 0x%x\n", f->name, b, v, back);
                assert_int_equal(back, b);
            }
        }
    }
}

static void test_values_ascend(void **state)
{
    (void)state;
    for (size_t k = 0; k < TL_COUNTOF(fmts); k++) {
        Table t = table_of(&fmts[k]);
        for (uint32_t i = 1; i < t.n; i++) assert_true(t.v[i - 1] < t.v[i]);
        assert_true(t.v[t.n - 1] == fmts[k].max_finite);
        table_free(&t);
    }
}

static void test_midpoints_round_to_even(void **state)
{
    (void)state;
    for (size_t k = 0; k < TL_COUNTOF(fmts); k++) {
        const Fmt *f = &fmts[k];
        Table t = table_of(f);
        for (uint32_t i = 0; i + 1 < t.n; i++) {
            double lo = t.v[i], hi = t.v[i + 1], mid = (lo + hi) / 2; /* exact in double */
            uint32_t even = (t.code[i] & 1) ? t.code[i + 1] : t.code[i];
            for (int s = 0; s < 2; s++) {
                double sg = s ? -1.0 : 1.0;
                uint32_t sbit = s ? 1u << (f->bits - 1) : 0;
                assert_int_equal(f->enc(sg * mid), sbit | even);
                assert_int_equal(f->enc(sg * nextafter(mid, 0)), sbit | t.code[i]);
                assert_int_equal(f->enc(sg * nextafter(mid, INFINITY)), sbit | t.code[i + 1]);
                assert_int_equal(f->enc(sg * lo), sbit | t.code[i]);
            }
        }
        table_free(&t);
    }
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_u64(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_random_against_oracle(void **state)
{
    (void)state;
    for (size_t k = 0; k < TL_COUNTOF(fmts); k++) {
        const Fmt *f = &fmts[k];
        Table t = table_of(f);
        int emin = (int)floor(log2(t.v[1])) - 3, emax = (int)ceil(log2(f->max_finite)) + 2;
        for (int i = 0; i < 200000; i++) {
            uint64_t r = next_u64();
            double m = 1.0 + (double)(r >> 12) / 4503599627370496.0; /* [1, 2) */
            int e = emin + (int)(next_u64() % (uint64_t)(emax - emin + 1));
            double x = ldexp(m, e) * ((r & 1) ? -1 : 1);
            uint32_t got = f->enc(x), want = oracle(f, &t, x);
            if (got != want) print_error("%s: %a -> 0x%x, want 0x%x\n", f->name, x, got, want);
            assert_int_equal(got, want);
        }
        table_free(&t);
    }
}

static void test_f16_matches_compiler(void **state)
{
    (void)state;
#ifdef __FLT16_MAX__
    for (int i = 0; i < 300000; i++) {
        uint64_t r = next_u64();
        double x = ldexp(1.0 + (double)(r >> 12) / 4503599627370496.0, (int)(next_u64() % 50) - 30);
        if (r & 1) x = -x;
        _Float16 h = (_Float16)x;
        uint16_t hb;
        memcpy(&hb, &h, sizeof hb);
        assert_int_equal(fp_to_f16(x), hb);
        assert_true(fp_from_f16(hb) == (double)h);
    }
#else
    skip();
#endif
}

static void test_known_values(void **state)
{
    (void)state;
    assert_int_equal(fp_to_f16(65504.0), 0x7BFF);
    assert_true(fp_from_f16(0x7BFF) == 65504.0);
    assert_int_equal(fp_to_f16(0x1p-24), 0x0001);
    assert_true(fp_from_f16(0x0001) == 0x1p-24);
    assert_int_equal(fp_to_f16(0x1p-25), 0x0000);              /* tie to even: 0 */
    assert_int_equal(fp_to_f16(0x1.8p-25), 0x0001);
    assert_int_equal(fp_to_f16(1.0), 0x3C00);
    assert_int_equal(fp_to_f16(-2.0), 0xC000);
    assert_int_equal(fp_to_f16(-0.0), 0x8000);
    assert_int_equal(fp_to_f16(65519.0), 0x7BFF);
    assert_int_equal(fp_to_f16(65520.0), 0x7C00);              /* overflow to inf */
    assert_int_equal(fp_to_f16(-1e6), 0xFC00);
    assert_int_equal(fp_to_f16(NAN) & 0x7C00, 0x7C00);
    assert_true((fp_to_f16(NAN) & 0x3FF) != 0);

    assert_int_equal(fp_to_bf16(1.0), 0x3F80);
    assert_int_equal(fp_to_bf16(1.00390625), 0x3F80);          /* 1 + 2^-8: tie, to even */
    assert_int_equal(fp_to_bf16(1.01171875), 0x3F82);          /* 1 + 3*2^-8: tie, to even (up) */
    assert_int_equal(fp_to_bf16(nextafter(1.00390625, 2)), 0x3F81);
    assert_int_equal(fp_to_bf16(1e39), 0x7F80);
    assert_int_equal(fp_to_bf16(-3.0), 0xC040);
    assert_true(fp_from_bf16(0x0001) == 0x1p-133);

    assert_int_equal(fp_to_f8e4m3(448.0), 0x7E);
    assert_int_equal(fp_to_f8e4m3(-448.0), 0xFE);
    assert_int_equal(fp_to_f8e4m3(0.001953125), 0x01);         /* 2^-9: smallest subnormal */
    assert_true(fp_from_f8e4m3(0x01) == 0.001953125);
    assert_true(fp_from_f8e4m3(0x08) == 0x1p-6);               /* smallest normal */
    assert_int_equal(fp_to_f8e4m3(1.0), 0x38);
    assert_int_equal(fp_to_f8e4m3(464.0), 0x7E);               /* tie between 448 and (480): saturates */
    assert_int_equal(fp_to_f8e4m3(1e9), 0x7E);
    assert_int_equal(fp_to_f8e4m3(-1e9), 0xFE);
    assert_int_equal(fp_to_f8e4m3(INFINITY), 0x7E);
    assert_int_equal(fp_to_f8e4m3(NAN), 0x7F);
    assert_int_equal(fp_to_f8e4m3(-NAN), 0xFF);
    assert_true(isnan(fp_from_f8e4m3(0x7F)));
    assert_true(isnan(fp_from_f8e4m3(0xFF)));
    assert_true(fp_from_f8e4m3(0x78) == 256.0);                /* S.1111.000 is a number in "fn" */

    assert_int_equal(fp_to_f8e5m2(57344.0), 0x7B);
    assert_int_equal(fp_to_f8e5m2(61440.0), 0x7B);             /* would round to inf: saturates */
    assert_int_equal(fp_to_f8e5m2(-1e30), 0xFB);
    assert_int_equal(fp_to_f8e5m2(-INFINITY), 0xFB);
    assert_true(isinf(fp_from_f8e5m2(0x7C)));
    assert_true(isnan(fp_from_f8e5m2(0x7E)));
    assert_true(isnan(fp_from_f8e5m2(fp_to_f8e5m2(NAN))));
    assert_true(fp_from_f8e5m2(0x01) == 0x1p-16);
    assert_int_equal(fp_to_f8e5m2(1.5), 0x3E);
    assert_int_equal(fp_to_f8e5m2(1.125), 0x3C);               /* tie 1 / 1.25: even */
    assert_int_equal(fp_to_f8e5m2(1.375), 0x3E);               /* tie 1.25 / 1.5: even */
}

static void test_round_by_dtype(void **state)
{
    (void)state;
    assert_true(fp_round(DT_F32, 1.0 + 0x1p-24) == 1.0);
    assert_true(fp_round(DT_F32, 1.0 + 0x1.8p-24) == 1.0 + 0x1p-23);
    assert_true(isinf(fp_round(DT_F32, 1e39)));
    assert_true(fp_round(DT_F64, 0.1) == 0.1);
    assert_true(fp_round(DT_F16, 0.1) == fp_from_f16(fp_to_f16(0.1)));
    assert_true(fp_round(DT_BF16, 3.14159) == fp_from_bf16(fp_to_bf16(3.14159)));
    assert_true(fp_round(DT_F8E4M3, 1000) == 448);
    assert_true(fp_round(DT_F8E5M2, -1e6) == -57344);
    assert_true(isnan(fp_round(DT_F8E4M3, NAN)));
}

static void test_int_conversions(void **state)
{
    (void)state;
    assert_int_equal(int_wrap(DT_I8, 200), -56);
    assert_int_equal(int_wrap(DT_U8, -1), 255);
    assert_int_equal(int_wrap(DT_I32, 0x80000000ll), INT32_MIN);
    assert_int_equal(int_wrap(DT_U32, -1), 0xFFFFFFFFll);
    assert_int_equal(int_wrap(DT_I1, 3), 1);
    assert_int_equal(int_wrap(DT_I1, 2), 0);
    assert_int_equal(int_wrap(DT_I64, INT64_MIN), INT64_MIN);
    assert_int_equal(int_wrap(DT_I16, 40000), 40000 - 65536);

    assert_int_equal(fp_to_int(DT_I32, 2.9), 2);
    assert_int_equal(fp_to_int(DT_I32, -2.9), -2);
    assert_int_equal(fp_to_int(DT_I32, 3e9), INT32_MAX);
    assert_int_equal(fp_to_int(DT_I32, -3e9), INT32_MIN);
    assert_int_equal(fp_to_int(DT_I8, 300.5), 127);
    assert_int_equal(fp_to_int(DT_I8, -129.0), -128);
    assert_int_equal(fp_to_int(DT_U8, -5.0), 0);
    assert_int_equal(fp_to_int(DT_U8, 255.9), 255);
    assert_int_equal(fp_to_int(DT_U8, 256.0), 255);
    assert_int_equal(fp_to_int(DT_I64, 1e19), INT64_MAX);
    assert_int_equal(fp_to_int(DT_I64, -1e19), INT64_MIN);
    assert_int_equal((uint64_t)fp_to_int(DT_U64, 1e20), UINT64_MAX);
    assert_int_equal((uint64_t)fp_to_int(DT_U64, 0x1p63), 1ull << 63);
    assert_int_equal(fp_to_int(DT_I32, NAN), 0);
    assert_int_equal(fp_to_int(DT_U16, INFINITY), 65535);
    assert_int_equal(fp_to_int(DT_I1, 0.25), 1);
    assert_int_equal(fp_to_int(DT_I1, 0.0), 0);

    /* 2^60 + 2^36 + 1: converting to double first would land on the f32 midpoint
     * and round down; the single rounding goes up. */
    int64_t v = (1ll << 60) + (1ll << 36) + 1;
    assert_true(fp_from_int(DT_F32, v, false) == ldexp(1, 60) + ldexp(1, 37));
    assert_true(fp_from_int(DT_F32, -v, false) == -(ldexp(1, 60) + ldexp(1, 37)));
    assert_true(fp_from_int(DT_F32, (1 << 24) + 1, false) == 16777216.0);
    assert_true(fp_from_int(DT_F32, (1 << 24) + 3, false) == 16777220.0);
    assert_true(fp_from_int(DT_F64, -1, true) == 18446744073709551615.0);
    assert_true(fp_from_int(DT_F16, 70000, false) == INFINITY);
    assert_true(fp_from_int(DT_F8E4M3, -1000, false) == -448);
    assert_true(fp_from_int(DT_F32, INT64_MIN, false) == -0x1p63);
}

static void test_load_store_little_endian(void **state)
{
    (void)state;
    unsigned char b[8];
    fp_store(DT_F16, b, 1.0);
    assert_int_equal(b[0], 0x00);
    assert_int_equal(b[1], 0x3C);
    assert_true(fp_load(DT_F16, b) == 1.0);
    fp_store(DT_F32, b, -2.5);
    assert_int_equal(b[3], 0xC0);
    assert_int_equal(b[2], 0x20);
    assert_true(fp_load(DT_F32, b) == -2.5);
    fp_store(DT_F64, b, 0.1);
    assert_true(fp_load(DT_F64, b) == 0.1);
    fp_store(DT_BF16, b, 1.00390625);
    assert_int_equal(b[1], 0x3F);
    assert_int_equal(b[0], 0x80);
    fp_store(DT_F8E4M3, b, 1e6);
    assert_int_equal(b[0], 0x7E);
    fp_store(DT_I16, b, -3.7);
    assert_int_equal(b[0], 0xFD);
    assert_int_equal(b[1], 0xFF);
    assert_true(fp_load(DT_I16, b) == -3.0);
    fp_store(DT_U8, b, 300);
    assert_true(fp_load(DT_U8, b) == 255.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_pattern),
        cmocka_unit_test(test_values_ascend),
        cmocka_unit_test(test_midpoints_round_to_even),
        cmocka_unit_test(test_random_against_oracle),
        cmocka_unit_test(test_f16_matches_compiler),
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_round_by_dtype),
        cmocka_unit_test(test_int_conversions),
        cmocka_unit_test(test_load_store_little_endian),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
