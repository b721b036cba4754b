/* fpconv.c: the narrow float formats, bit for bit.
 *
 * Each narrow format is described by an FpFormat (exponent and mantissa widths,
 * bias, how it spells inf and NaN, what overflow gives).  Encoding a double x:
 *   1. NaN gives the format's canonical quiet NaN with x's sign; 0 keeps its sign.
 *   2. e = floor(log2 |x|), raised to the smallest normal exponent emin so that
 *      subnormals share emin's quantum 2^(emin - M).
 *   3. q = |x| / 2^(e - M) is exact (a power-of-two scaling far from double's
 *      limits) and below 2^(M+1), so its fraction is exact too; q rounds to an
 *      integer, ties to even.
 *   4. A carry out of the mantissa bumps the exponent; a result above the largest
 *      finite encoding (or inf) becomes inf, or, for the saturating fp8 formats,
 *      the largest finite value of the sign (as the GPU's cvt.rn.satfinite does,
 *      an infinite input saturates too).
 * Decoding is exact: every narrow value is a double.
 */
#include "fpconv.h"

#include <math.h>
#include <string.h>

typedef struct FpFormat {
    int ebits, mbits, bias;
    bool ieee;        /* all-ones exponent spells inf/NaN; otherwise ("fn") only S.1..1.1..1 is NaN */
    bool saturate;    /* overflow and inf give the largest finite value, not inf */
    uint32_t nan;     /* canonical quiet NaN, sign bit clear */
} FpFormat;

static const FpFormat fmt_f16 = {5, 10, 15, true, false, 0x7E00};
static const FpFormat fmt_bf16 = {8, 7, 127, true, false, 0x7FC0};
static const FpFormat fmt_e4m3 = {4, 3, 7, false, true, 0x7F};
static const FpFormat fmt_e5m2 = {5, 2, 15, true, true, 0x7E};

/* The largest finite encoding, sign bit clear. */
static uint32_t max_finite(const FpFormat *fmt)
{
    uint32_t emask = (1u << fmt->ebits) - 1, mmask = (1u << fmt->mbits) - 1;
    if (fmt->ieee) return ((emask - 1) << fmt->mbits) | mmask;
    return (emask << fmt->mbits) | (mmask - 1);
}

static uint32_t encode(const FpFormat *fmt, double x)
{
    uint32_t sign = signbit(x) ? 1u << (fmt->ebits + fmt->mbits) : 0;
    uint32_t maxbits = max_finite(fmt);
    uint32_t infbits = fmt->saturate ? maxbits : ((1u << fmt->ebits) - 1) << fmt->mbits;
    if (isnan(x)) return sign | fmt->nan;
    double a = fabs(x);
    if (isinf(a)) return sign | infbits;
    if (a == 0) return sign;

    int e;
    frexp(a, &e);
    e -= 1; /* a in [2^e, 2^(e+1)) */
    int emin = 1 - fmt->bias;
    if (e < emin) e = emin;
    double q = ldexp(a, fmt->mbits - e);
    double fl = floor(q), frac = q - fl;
    if (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) != 0)) fl += 1;
    uint32_t m = (uint32_t)fl;
    uint32_t hidden = 1u << fmt->mbits;
    if (m == hidden << 1) { /* carry out of the mantissa */
        m = hidden;
        e++;
    }
    uint64_t bits;
    if (m >= hidden)
        bits = ((uint64_t)(e + fmt->bias) << fmt->mbits) | (m - hidden);
    else
        bits = m; /* subnormal: e == emin, exponent field 0 */
    if (bits > maxbits) return sign | infbits;
    return sign | (uint32_t)bits;
}

static double decode(const FpFormat *fmt, uint32_t bits)
{
    uint32_t emask = (1u << fmt->ebits) - 1, mmask = (1u << fmt->mbits) - 1;
    bool neg = (bits >> (fmt->ebits + fmt->mbits)) & 1;
    uint32_t ef = (bits >> fmt->mbits) & emask, mf = bits & mmask;
    double v;
    if (ef == emask && (fmt->ieee || mf == mmask)) {
        v = (fmt->ieee && mf == 0) ? INFINITY : NAN;
    } else if (ef == 0) {
        v = ldexp((double)mf, 1 - fmt->bias - fmt->mbits);
    } else {
        v = ldexp((double)(mf | (mmask + 1)), (int)ef - fmt->bias - fmt->mbits);
    }
    return neg ? -v : v;
}

uint16_t fp_to_f16(double x) { return (uint16_t)encode(&fmt_f16, x); }
uint16_t fp_to_bf16(double x) { return (uint16_t)encode(&fmt_bf16, x); }
uint8_t fp_to_f8e4m3(double x) { return (uint8_t)encode(&fmt_e4m3, x); }
uint8_t fp_to_f8e5m2(double x) { return (uint8_t)encode(&fmt_e5m2, x); }
double fp_from_f16(uint16_t h) { return decode(&fmt_f16, h); }
double fp_from_bf16(uint16_t h) { return decode(&fmt_bf16, h); }
double fp_from_f8e4m3(uint8_t b) { return decode(&fmt_e4m3, b); }
double fp_from_f8e5m2(uint8_t b) { return decode(&fmt_e5m2, b); }

double fp_round(DType dt, double x)
{
    switch (dt) {
    case DT_F8E4M3: return fp_from_f8e4m3(fp_to_f8e4m3(x));
    case DT_F8E5M2: return fp_from_f8e5m2(fp_to_f8e5m2(x));
    case DT_F16: return fp_from_f16(fp_to_f16(x));
    case DT_BF16: return fp_from_bf16(fp_to_bf16(x));
    case DT_F32: return (double)(float)x; /* C's conversion rounds to nearest even */
    case DT_F64: return x;
    default: tl_fatal("fpconv", "fp_round of non-float type %s", dt_name[dt]);
    }
}

int64_t int_wrap(DType dt, int64_t v)
{
    TL_ASSERT(dt_is_int(dt), "fpconv");
    int bits = dt_bits[dt];
    if (bits == 64) return v;
    uint64_t mask = (1ull << bits) - 1, u = (uint64_t)v & mask;
    if (dt_is_signed(dt) && (u >> (bits - 1)) & 1) u |= ~mask;
    return (int64_t)u;
}

int64_t fp_to_int(DType dt, double x)
{
    TL_ASSERT(dt_is_int(dt), "fpconv");
    if (isnan(x)) return 0;
    if (dt == DT_I1) return x != 0;
    double t = trunc(x);
    int bits = dt_bits[dt];
    if (dt_is_signed(dt)) {
        double lim = ldexp(1.0, bits - 1); /* the range is [-lim, lim) */
        if (t >= lim) return (int64_t)((1ull << (bits - 1)) - 1);
        if (t < -lim) return -(int64_t)((1ull << (bits - 1)) - 1) - 1;
        return (int64_t)t;
    }
    double lim = ldexp(1.0, bits); /* [0, lim) */
    if (t <= 0) return 0;
    if (t >= lim) return (int64_t)(bits == 64 ? UINT64_MAX : (1ull << bits) - 1);
    return (int64_t)(uint64_t)t;
}

double fp_from_int(DType dt, int64_t v, bool is_unsigned)
{
    TL_ASSERT(dt_is_float(dt), "fpconv");
    uint64_t mag = is_unsigned || v >= 0 ? (uint64_t)v : 0 - (uint64_t)v;
    bool neg = !is_unsigned && v < 0;
    if (dt == DT_F64) return is_unsigned ? (double)(uint64_t)v : (double)v;
    /* Round to 53 bits toward odd (truncate, then set the last kept bit if any
     * dropped bit was set): rounding that to <= 24 bits is then correctly rounded. */
    double d;
    if (mag < (1ull << 53)) {
        d = (double)mag;
    } else {
        int len = 64 - __builtin_clzll(mag);
        int drop = len - 53;
        uint64_t kept = mag >> drop;
        if (mag & ((1ull << drop) - 1)) kept |= 1;
        d = ldexp((double)kept, drop);
    }
    return fp_round(dt, neg ? -d : d);
}

/* ---- memory --------------------------------------------------------------- */

static uint64_t get_le(const void *p, int n)
{
    const unsigned char *b = p;
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

static void put_le(void *p, int n, uint64_t v)
{
    unsigned char *b = p;
    for (int i = 0; i < n; i++, v >>= 8) b[i] = (unsigned char)v;
}

double fp_load(DType dt, const void *p)
{
    uint64_t bits = get_le(p, dt_bytes(dt));
    switch (dt) {
    case DT_F8E4M3: return fp_from_f8e4m3((uint8_t)bits);
    case DT_F8E5M2: return fp_from_f8e5m2((uint8_t)bits);
    case DT_F16: return fp_from_f16((uint16_t)bits);
    case DT_BF16: return fp_from_bf16((uint16_t)bits);
    case DT_F32: {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof f);
        return f;
    }
    case DT_F64: {
        double f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    default: {
        int64_t v = int_wrap(dt, (int64_t)bits);
        return dt_is_signed(dt) ? (double)v : (double)(uint64_t)v;
    }
    }
}

void fp_store(DType dt, void *p, double x)
{
    uint64_t bits;
    switch (dt) {
    case DT_F8E4M3: bits = fp_to_f8e4m3(x); break;
    case DT_F8E5M2: bits = fp_to_f8e5m2(x); break;
    case DT_F16: bits = fp_to_f16(x); break;
    case DT_BF16: bits = fp_to_bf16(x); break;
    case DT_F32: {
        float f = (float)x;
        uint32_t b32;
        memcpy(&b32, &f, sizeof b32);
        bits = b32;
        break;
    }
    case DT_F64: memcpy(&bits, &x, sizeof bits); break;
    default: bits = (uint64_t)fp_to_int(dt, x); break;
    }
    put_le(p, dt_bytes(dt), bits);
}
