/* exp-le0-error.c: the error of stdlib/softmax.tile's exp_le0 (the exponential of its 16-bit
 * path), measured over every f32 x in [-86.5, 0] against expl, operation for operation as the
 * kernel computes it (fmaf, the constants rounded to f32 as tilec rounds weak literals).
 *   cc -O2 -o /tmp/exp-le0-error scripts/exp-le0-error.c -lm && /tmp/exp-le0-error
 * Prints the largest relative error (and its log2) and the largest error in f32 ulps; also checks
 * that x < -86.5, -inf and NaN give 0 and x = 0 gives 1; fails above 2^-18.  Measured (about
 * 100 s), with the degree-4 polynomial: 3.12e-6 = 2^-18.29 relative at x = -86.30, 46 ulp of f32
 * (the degree-5 one it replaced: 2^-21.30, 4.8 ulp). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static float exp_le0(float x)
{
    float t = fmaf(x, (float)1.4426950408889634, 12582912.0f);
    float n = t - 12582912.0f;
    float r = fmaf(n, (float)-0.6931471805599453, x);
    float p = fmaf(r, (float)0.04151385933930074, (float)0.1678748625701645);
    p = fmaf(p, r, (float)0.5000301407392603);
    p = fmaf(p, r, (float)0.9999668296159246);
    p = fmaf(p, r, 1.0f);
    uint32_t pb, tb;
    memcpy(&pb, &p, 4);
    memcpy(&tb, &t, 4);
    uint32_t yb = pb + (tb << 23);
    float y;
    memcpy(&y, &yb, 4);
    return x >= -86.5f ? y : 0.0f;
}

int main(void)
{
    double worst = 0, worst_ulp = 0;
    float at = 0, at_ulp = 0;
    /* every f32 from -0 down to -86.5: the bit patterns 0x80000000 .. bits(-86.5) */
    float lim = -86.5f;
    uint32_t end;
    memcpy(&end, &lim, 4);
    for (uint32_t b = 0x80000000u; b <= end; b++) {
        float x;
        memcpy(&x, &b, 4);
        long double ref = expl((long double)x);
        float y = exp_le0(x);
        double rel = (double)fabsl(((long double)y - ref) / ref);
        if (rel > worst) { worst = rel; at = x; }
        int e;
        frexpl(ref, &e);
        double ulp = (double)(fabsl((long double)y - ref) / ldexpl(1.0L, e - 24));
        if (ulp > worst_ulp) { worst_ulp = ulp; at_ulp = x; }
    }
    int bad = exp_le0(-86.6f) != 0 || exp_le0(-INFINITY) != 0 || exp_le0(NAN) != 0 || exp_le0(-1e30f) != 0 ||
              exp_le0(0.0f) != 1.0f;
    printf("exp_le0 over [-86.5, 0]: max relative error %.3g (2^%.2f) at x=%.9g; max %.3f ulp at x=%.9g%s\n", worst,
           log2(worst), at, worst_ulp, at_ulp, bad ? "; SPECIAL VALUES WRONG" : "");
    return bad || worst > 0x1p-18;
}
