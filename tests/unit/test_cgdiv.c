/* test_cgdiv.c: the inline divisions of codegen/lower_math.c (cg_fdiv_f32, cg_idiv64),
 * replayed on the host operation for operation and compared with C's division, which is
 * what the interpreter computes.  rcp.approx.ftz.f64 is modelled as 1/b with a relative
 * error up to 2^-20 either way (the instruction is better: the Newton steps must not
 * depend on it).  MATH_FDIV_NEWTON mirrors lower_math.c (keep both equal). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define MATH_FDIV_NEWTON 3

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t f_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* cg_fdiv_f32, with rcp.approx's error e (relative) */
static float fdiv_replay(float a, float b, double e)
{
    double ad = a, bd = b;
    double r0 = (1.0 / bd) * (1.0 + e), r = r0;
    if (isinf(1.0 / bd) || bd == 0) r0 = r = 1.0 / bd; /* rcp of 0 is inf, of inf 0 */
    for (int i = 0; i < MATH_FDIV_NEWTON; i++) r = fma(r, fma(-bd, r, 1.0), r);
    double q0 = ad * r;
    double q = fma(fma(-bd, q0, ad), r, q0);
    bool plain = fabsf(a) < INFINITY && fabsf(b) < INFINITY && a != 0 && b != 0;
    return (float)(plain ? q : ad * r0);
}

static void check_fdiv(float a, float b)
{
    static const double errs[] = {0, 0x1p-20, -0x1p-20, 0x1p-30, -0x1p-45};
    float want = a / b;
    for (unsigned k = 0; k < sizeof errs / sizeof errs[0]; k++) {
        float got = fdiv_replay(a, b, errs[k]);
        if (isnan(want) && isnan(got)) continue;
        if (f_bits(got) != f_bits(want))
            fail_msg("%a / %a: %a, expected %a (rcp error %g)", (double)a, (double)b, (double)got, (double)want,
                     errs[k]);
    }
}

static void test_fdiv_random_bits(void **state)
{
    (void)state;
    for (int i = 0; i < 2000000; i++) {
        uint64_t x = next();
        check_fdiv(bits_f((uint32_t)x), bits_f((uint32_t)(x >> 32)));
    }
}

static void test_fdiv_edges(void **state)
{
    (void)state;
    /* subnormal quotients that are rounding midpoints, or next to one */
    for (int m = 1; m < 2000; m += 2)
        for (int s = 1; s < 24; s++) {
            float a = ldexpf((float)m, -149), b = ldexpf(1.0f, s);
            check_fdiv(a, b);
            check_fdiv(-a, b);
            check_fdiv(a, nextafterf(b, 0));
            check_fdiv(a, nextafterf(b, INFINITY));
            check_fdiv(ldexpf((float)m, -126), ldexpf(3.0f, s));
        }
    static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -3.0f, 0x1p-149f, 0x1p127f, 0x1.fffffep127f,
                               0x1p-126f, 0x1.fffffcp-127f, 3.0f, 7.0f, 1e-30f, 1e30f};
    size_t n = sizeof sp / sizeof sp[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) check_fdiv(sp[i], sp[j]);
    /* quotients near powers of two, overflow and underflow */
    for (int i = 0; i < 200000; i++) {
        uint64_t x = next();
        float a = ldexpf(1.0f + (float)(x & 0xffffff) * 0x1p-24f, (int)((x >> 24) % 280) - 149);
        float b = ldexpf(1.0f + (float)((x >> 40) & 0xff) * 0x1p-23f, (int)((x >> 48) % 280) - 149);
        check_fdiv(a, b);
        check_fdiv(a, nextafterf(a, 0));
    }
}

/* cg_idiv64 (d != 0, not MIN / -1: lower.c replaces those denominators first):
 * udiv64_nr of lower_math.c, step for step, with rcp.approx's error e */
static uint64_t fptoui_sat(double x)
{
    if (!(x > 0)) return 0;
    if (x >= 0x1p64) return UINT64_MAX;
    return (uint64_t)x;
}
static int64_t fptosi_sat(double x)
{
    if (x != x) return 0;
    if (x >= 0x1p63) return INT64_MAX;
    if (x < -0x1p63) return INT64_MIN;
    return (int64_t)x;
}
static uint64_t udiv_replay_e(uint64_t n, uint64_t d, double e)
{
    double df = (double)d, r = (1.0 / df) * (1.0 + e);
    for (int i = 0; i < MATH_FDIV_NEWTON; i++) r = fma(r, fma(-df, r, 1.0), r);
    uint64_t q0 = fptoui_sat((double)n * r);
    uint64_t R = n - q0 * d;
    int64_t c = fptosi_sat(floor((double)(int64_t)R * r));
    uint64_t q = q0 + (uint64_t)c;
    R -= (uint64_t)c * d;
    if ((int64_t)R < 0) {
        q--;
        R += d;
    }
    q += R >= d;
    uint64_t t = n, qb = 0;
    for (int i = 0; i < 3; i++) {
        bool ge = t >= d;
        t = ge ? t - d : t;
        qb += ge;
    }
    return d >= (1ull << 62) ? qb : q;
}
/* udiv64_loop (a scalar's division): 32-bit division where both fit, else shift-subtract */
static uint64_t udiv_replay_loop(uint64_t ua, uint64_t ud)
{
    if (((ua | ud) >> 32) == 0) return (uint32_t)ua / (uint32_t)ud;
    uint64_t q = 0, r = 0;
    for (uint64_t i = 64; i != 0;) {
        i--;
        uint64_t rr = (r << 1) | ((ua >> i) & 1);
        bool ge = (int64_t)r < 0 || rr >= ud;
        r = ge ? rr - ud : rr;
        q |= (uint64_t)ge << i;
    }
    return q;
}
static double idiv_err;
static bool idiv_uniform;
static uint64_t udiv_replay(uint64_t ua, uint64_t ud)
{
    return idiv_uniform ? udiv_replay_loop(ua, ud) : udiv_replay_e(ua, ud, idiv_err);
}

static void check_idiv(uint64_t a, uint64_t d)
{
    if (d == 0) return;
    uint64_t q = udiv_replay(a, d);
    if (q != a / d || a - q * d != a % d)
        fail_msg("%llu / %llu: %llu", (unsigned long long)a, (unsigned long long)d, (unsigned long long)q);
    int64_t sa = (int64_t)a, sd = (int64_t)d;
    if (sa == INT64_MIN && sd == -1) return;
    uint64_t ua = sa < 0 ? -(uint64_t)sa : (uint64_t)sa, ud = sd < 0 ? -(uint64_t)sd : (uint64_t)sd;
    uint64_t uq = udiv_replay(ua, ud), ur = ua - uq * ud;
    int64_t sq = (int64_t)(((sa < 0) != (sd < 0)) ? -uq : uq), sr = (int64_t)(sa < 0 ? -ur : ur);
    if (sq != sa / sd || sr != sa % sd) fail_msg("%lld / %lld: %lld rem %lld", (long long)sa, (long long)sd,
                                                 (long long)sq, (long long)sr);
}

static void test_idiv64(void **state)
{
    (void)state;
    /* per element with each reciprocal error, then the uniform (loop) version (k == 5) */
    static const double errs[] = {0, 0x1p-20, -0x1p-20, 0x1p-33, -0x1p-45, 0};
    for (unsigned k = 0; k < sizeof errs / sizeof errs[0]; k++) {
    idiv_err = errs[k];
    idiv_uniform = k == 5;
    for (int i = 0; i < 300000; i++) {
        uint64_t a = next(), d = next();
        check_idiv(a, d);
        check_idiv(a, d >> (d & 63));
        check_idiv(a >> (a & 63), d >> 40);
        check_idiv(a & 0xffffffff, d & 0xffff);
    }
    static const uint64_t sp[] = {0, 1, 2, 3, 0x7fffffffffffffffull, 0x8000000000000000ull, 0xffffffffffffffffull,
                                  0xffffffff, 0x100000000ull, 0xfffffffffffffffeull, 0x8000000000000001ull};
    size_t n = sizeof sp / sizeof sp[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) check_idiv(sp[i], sp[j]);
    /* around the paths' boundaries: d near 2^32, 2^33, 2^53, 2^62, 2^63; n near multiples of d */
    for (int i = 0; i < 200000; i++) {
        uint64_t x = next(), y = next();
        int s = 30 + (int)(x % 35);
        uint64_t d = (1ull << (s > 63 ? 63 : s)) + (uint64_t)((int64_t)(y % 9) - 4);
        uint64_t q = x >> (x & 63);
        check_idiv(q * d, d);
        check_idiv(q * d - 1, d);
        check_idiv(q * d + 1, d);
        check_idiv(UINT64_MAX - (y & 0xffff), d);
    }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fdiv_random_bits),
        cmocka_unit_test(test_fdiv_edges),
        cmocka_unit_test(test_idiv64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
