/* lower_math.c: elementwise math on one float register.
 *
 * NVPTX lowers neither llvm.exp nor llvm.log, and the approximate MUFU
 * instructions (ex2.approx, lg2.approx) are off by a few ulp before any range
 * reduction; so every transcendental here is an explicit sequence of IEEE
 * operations (fma, add, mul, div.rn, rint) that tests/unit/test_cgmem.c
 * replays on the host, operation for operation, against libm in double.
 * f16 and bf16 are computed in f32 and rounded once (so their error is at
 * most 0.5 ulp of the narrow type plus the f32 error scaled down, i.e. <= 1 ulp).
 *
 *   fn       sequence                                      measured max error (ulp)   bound used
 *                                                                f32        f64          f32  f64
 *   exp      Cody-Waite by ln2 (hi/lo), Taylor to r^7 (f64:    0.87       0.85          1    1
 *            r^13), 2^n as two exact scalings (one rounding
 *            into subnormals).  f32 (exp_f32, 18 instructions):
 *            n = rint(x log2e) by fma with 1.5*2^23, 2^n as an
 *            integer add to p's exponent bits and one multiply
 *            by 2^m (m ~ n/2), NaN-propagating clamp
 *   exp2     n = rint(x), r = (x-n)*ln2, same polynomial       0.92       0.89          1    1
 *   log      x = m 2^e, m in [sqrt(1/2), sqrt(2)), f = m-1,    0.88       1.08          1    1.5
 *            s = f/(2+f), log1p(f) = f - s (f - R(s^2))
 *            (atanh series to s^11; f64: s^21), + e ln2 (hi/lo)
 *   log2     e + log1p(f) * log2e (hi/lo); exact at 2^k        1.24       1.15          1.5  1.5
 *   sqrt     llvm.sqrt = sqrt.rn (correctly rounded)           0          0             0    0
 *   rsqrt    1 / sqrt.rn (div.rn): two roundings               (<= 1 by construction)   1    1
 *   sigmoid  t = exp(-|x|); (x >= 0 ? 1 : t) / (1 + t)         2.07       2.10          2.5  2.5
 *   tanh     |x| < 0.55: em/(em+2), em = expm1(2|x|) (Taylor   2.23       2.10          2.5  2.5
 *            to y^11, f64 y^19); else 1 - 2/(e^{2|x|}+1);
 *            the sign of x
 *   erf      |x| < split: (2/sqrt(pi)) x e^{-x^2} S(2x^2),     0.50       4.35          1    5
 *            S = sum y^n/(2n+1)!! (positive terms, Horner; x^2
 *            split exactly with fma); else 1 - e^{-x^2} /
 *            (sqrt(pi) K(x)), K the erfc continued fraction
 *            x + (1/2)/(x + 1/(x + (3/2)/...)) from a fixed
 *            depth; |x| >= 6 gives 1.  f32 runs the f64
 *            sequence with fewer terms and rounds once (the
 *            f32-only sequence lost 6.6 ulp in its products).
 *            The two paths are separate blocks (the fraction's
 *            divisions run only in warps that need them).
 *   fabs floor ceil  llvm.fabs/floor/ceil: exact               0          0             0    0
 * f16/bf16: the f32 result rounded once: <= 0.5 ulp of the narrow type plus
 * the f32 error scaled by 2^-13 (f16) or 2^-16 (bf16), i.e. < 1 ulp.
 * Measured by test_cgmem's math_accuracy (400k points per function and type,
 * against long-double libm), which fails above the "bound used" column; the
 * GPU tests take that column as their tolerance.  The host replay matches the
 * PTX operation for operation: NVPTX does not contract fmul+fadd into fma
 * unless fast-math is asked for (its add/mul carry .rn), and the constants
 * and term counts (MATH_*) are repeated in the test (ORDER: keep both equal).
 * NaN in gives NaN out; exp/exp2 overflow to inf and underflow through
 * subnormals to 0; log of 0 is -inf and of a negative number NaN.
 */
#include "lower_int.h"

#include <math.h>
#include <string.h>

/* The constants and term counts that test_cgmem.c mirrors (MATH_* names). */
#define MATH_EXP_TERMS_F32 7
#define MATH_EXP_TERMS_F64 13
#define MATH_LOG_TERMS_F32 5   /* 2/3 .. 2/11 */
#define MATH_LOG_TERMS_F64 10  /* 2/3 .. 2/21 */
#define MATH_EXPM1_TERMS_F32 11
#define MATH_EXPM1_TERMS_F64 19
#define MATH_ERF_SPLIT_F32 2.0
#define MATH_ERF_SPLIT_F64 1.5
#define MATH_ERF_SERIES_F32 22
#define MATH_ERF_SERIES_F64 40
#define MATH_ERF_CF_F32 16
#define MATH_ERF_CF_F64 80

typedef struct M {
    Cg *cg;
    LLVMTypeRef t, it;  /* the float type and the integer of its width */
    const char *sfx;    /* "f32" / "f64" */
    bool f64;
} M;

static LLVMValueRef K(M *m, double v) { return LLVMConstReal(m->t, v); }
static LLVMValueRef add(M *m, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(m->cg->b, a, b, ""); }
static LLVMValueRef sub(M *m, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(m->cg->b, a, b, ""); }
static LLVMValueRef mul(M *m, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(m->cg->b, a, b, ""); }
static LLVMValueRef fdiv_(M *m, LLVMValueRef a, LLVMValueRef b)
{
    if (!m->f64 && m->cg->inline_fdiv) return cg_fdiv_f32(m->cg, a, b);
    return LLVMBuildFDiv(m->cg->b, a, b, "");
}
static LLVMValueRef neg(M *m, LLVMValueRef a) { return LLVMBuildFNeg(m->cg->b, a, ""); }

static LLVMValueRef intr(M *m, const char *fn, LLVMValueRef *args, unsigned n)
{
    char name[48];
    snprintf(name, sizeof name, "llvm.%s.%s", fn, m->sfx);
    return cg_call_intrinsic(m->cg, name, m->t, args, n);
}
static LLVMValueRef fma3(M *m, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
    LLVMValueRef x[3] = {a, b, c};
    return intr(m, "fma", x, 3);
}
static LLVMValueRef un(M *m, const char *fn, LLVMValueRef a) { return intr(m, fn, &a, 1); }
static LLVMValueRef bin(M *m, const char *fn, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef x[2] = {a, b};
    return intr(m, fn, x, 2);
}
static LLVMValueRef sel(M *m, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSelect(m->cg->b, c, a, b, ""); }
static LLVMValueRef fcmp(M *m, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFCmp(m->cg->b, p, a, b, ""); }
static LLVMValueRef isnan_(M *m, LLVMValueRef a) { return fcmp(m, LLVMRealUNO, a, a); }

static double fact(int k)
{
    double f = 1;
    for (int i = 2; i <= k; i++) f *= i;
    return f;
}

/* (2n+1)!! in double (exact while it fits 53 bits) */
static double dfact2(int n)
{
    double f = 1;
    for (int i = 3; i <= 2 * n + 1; i += 2) f *= i;
    return f;
}

/* 2^n for an integer-valued float n in the exponent range, as a float (bits). */
static LLVMValueRef pow2i(M *m, LLVMValueRef ni)
{
    LLVMBuilderRef b = m->cg->b;
    unsigned mbits = m->f64 ? 52 : 23, bias = m->f64 ? 1023 : 127;
    LLVMValueRef e = LLVMBuildAdd(b, ni, LLVMConstInt(m->it, bias, 0), "");
    return LLVMBuildBitCast(b, LLVMBuildShl(b, e, LLVMConstInt(m->it, mbits, 0), ""), m->t, "");
}

/* p * 2^n (n an integer-valued float): two exact scalings, one final rounding. */
static LLVMValueRef scale(M *m, LLVMValueRef p, LLVMValueRef n)
{
    LLVMBuilderRef b = m->cg->b;
    LLVMValueRef ni = LLVMBuildFPToSI(b, n, m->it, "");
    LLVMValueRef n1 = LLVMBuildAShr(b, ni, LLVMConstInt(m->it, 1, 0), "");
    LLVMValueRef n2 = LLVMBuildSub(b, ni, n1, "");
    return mul(m, mul(m, p, pow2i(m, n1)), pow2i(m, n2));
}

/* e^r for |r| <= ln2/2: Taylor, Horner with fma. */
static LLVMValueRef exp_poly(M *m, LLVMValueRef r)
{
    int terms = m->f64 ? MATH_EXP_TERMS_F64 : MATH_EXP_TERMS_F32;
    LLVMValueRef p = K(m, 1.0 / fact(terms));
    for (int k = terms - 1; k >= 0; k--) p = fma3(m, p, r, K(m, 1.0 / fact(k)));
    return p;
}

/* p * 2^ni for an integer ni (the same two exact scalings as scale()). */
static LLVMValueRef scale_int(M *m, LLVMValueRef p, LLVMValueRef ni)
{
    LLVMBuilderRef b = m->cg->b;
    LLVMValueRef n1 = LLVMBuildAShr(b, ni, LLVMConstInt(m->it, 1, 0), "");
    LLVMValueRef n2 = LLVMBuildSub(b, ni, n1, "");
    return mul(m, mul(m, p, pow2i(m, n1)), pow2i(m, n2));
}

/* e^x in f32, 18 instructions (the f64 path below is the reference shape):
 *   xc = clamp(x, -104, 89), NaN-propagating (max.NaN/min.NaN keep NaN, so
 *        no final select);
 *   t  = fma(xc, log2e, 1.5*2^23): n + 1.5*2^23, n = rint(xc*log2e) of the
 *        exact product (t's ulp is 1); n = t - 1.5*2^23 exactly;
 *   r  = xc - n ln2 (Cody-Waite hi/lo), p = e^r (Taylor, exp_poly);
 *   t2 = fma(xc, log2e/2, 1.5*2^23): m + 1.5*2^23, m ~ n/2 (|n - m| <= 76);
 *   y  = [p * 2^(n-m)] * 2^m: the bracket is exact, an integer add of
 *        (n - m) << 23 to p's bits (p in [0.7, 1.42]: stays normal); 2^m is
 *        (m + 127) << 23, and m << 23 is t2's bits << 23 (1.5*2^23's bits,
 *        0x4b400000, vanish in the shift); n - m is bits(t) - bits(t2).  So
 *        the one rounding is the final multiply, also into subnormals, and
 *        an overflow is inf.  A NaN makes t and t2 the same NaN: n - m = 0,
 *        q stays NaN, 2^m is finite, y is NaN. */
static LLVMValueRef exp_f32(M *m, LLVMValueRef x, double hi, double lo)
{
    LLVMBuilderRef b = m->cg->b;
    LLVMValueRef xc = bin(m, "minimum", bin(m, "maximum", x, K(m, -104.0)), K(m, 89.0));
    LLVMValueRef t = fma3(m, xc, K(m, 0x1.71547652b82fep0), K(m, 0x1.8p23));
    LLVMValueRef n = sub(m, t, K(m, 0x1.8p23));
    LLVMValueRef r = fma3(m, neg(m, n), K(m, hi), xc);
    r = fma3(m, neg(m, n), K(m, lo), r);
    LLVMValueRef p = exp_poly(m, r);
    LLVMValueRef t2 = fma3(m, xc, K(m, 0x1.71547652b82fep-1), K(m, 0x1.8p23));
    LLVMValueRef tb = LLVMBuildBitCast(b, t, m->it, ""), t2b = LLVMBuildBitCast(b, t2, m->it, "");
    LLVMValueRef d = LLVMBuildSub(b, tb, t2b, "");
    LLVMValueRef q = LLVMBuildAdd(b, LLVMBuildBitCast(b, p, m->it, ""), LLVMBuildShl(b, d, LLVMConstInt(m->it, 23, 0), ""), "");
    LLVMValueRef s = LLVMBuildAdd(b, LLVMBuildShl(b, t2b, LLVMConstInt(m->it, 23, 0), ""), LLVMConstInt(m->it, 0x3f800000u, 0), "");
    return mul(m, LLVMBuildBitCast(b, q, m->t, ""), LLVMBuildBitCast(b, s, m->t, ""));
}

static LLVMValueRef m_exp(M *m, LLVMValueRef x)
{
    double hi = m->f64 ? 0x1.62e42fee00000p-1 : 0x1.62e4p-1;
    double lo = m->f64 ? 0x1.a39ef35793c76p-33 : (double)(float)(0x1.62e42fefa39efp-1 - 0x1.62e4p-1);
    if (!m->f64) return exp_f32(m, x, hi, lo);
    /* clamp: beyond these the result is inf or 0 anyway; NaN is restored at the end */
    LLVMValueRef xc = bin(m, "minnum", bin(m, "maxnum", x, K(m, -746.0)), K(m, 710.0));
    LLVMValueRef n = un(m, "rint", mul(m, xc, K(m, 0x1.71547652b82fep0)));
    LLVMValueRef ni = LLVMBuildFPToSI(m->cg->b, n, m->it, "");
    LLVMValueRef r = fma3(m, neg(m, n), K(m, hi), xc);
    r = fma3(m, neg(m, n), K(m, lo), r);
    LLVMValueRef y = scale_int(m, exp_poly(m, r), ni);
    return sel(m, isnan_(m, x), x, y);
}

static LLVMValueRef m_exp2(M *m, LLVMValueRef x)
{
    LLVMValueRef xc = bin(m, "minnum", bin(m, "maxnum", x, K(m, m->f64 ? -1077.0 : -152.0)), K(m, m->f64 ? 1025.0 : 129.0));
    LLVMValueRef n = un(m, "rint", xc);
    LLVMValueRef r = mul(m, sub(m, xc, n), K(m, 0x1.62e42fefa39efp-1));
    LLVMValueRef y = scale(m, exp_poly(m, r), n);
    return sel(m, isnan_(m, x), x, y);
}

/* x = 2^e * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)); returns log1p(f), sets *e (float). */
static LLVMValueRef log_core(M *m, LLVMValueRef x, LLVMValueRef *ef)
{
    LLVMBuilderRef b = m->cg->b;
    unsigned mbits = m->f64 ? 52 : 23;
    /* subnormals: scale into the normal range first */
    LLVMValueRef tiny = fcmp(m, LLVMRealOLT, x, K(m, m->f64 ? 0x1p-1022 : 0x1p-126));
    LLVMValueRef xs = sel(m, tiny, mul(m, x, K(m, m->f64 ? 0x1p54 : 0x1p23)), x);
    LLVMValueRef eadj = sel(m, tiny, K(m, m->f64 ? -54.0 : -23.0), K(m, 0.0));
    LLVMValueRef bits = LLVMBuildBitCast(b, xs, m->it, "");
    LLVMValueRef magic = LLVMConstInt(m->it, m->f64 ? 0x3fe6a09e667f3bcdull : 0x3f3504f3ull, 0);
    LLVMValueRef e = LLVMBuildAShr(b, LLVMBuildSub(b, bits, magic, ""), LLVMConstInt(m->it, mbits, 0), "");
    LLVMValueRef mb = LLVMBuildSub(b, bits, LLVMBuildShl(b, e, LLVMConstInt(m->it, mbits, 0), ""), "");
    LLVMValueRef mant = LLVMBuildBitCast(b, mb, m->t, "");
    *ef = add(m, LLVMBuildSIToFP(b, e, m->t, ""), eadj);
    LLVMValueRef f = sub(m, mant, K(m, 1.0));
    LLVMValueRef s = fdiv_(m, f, add(m, K(m, 2.0), f));
    LLVMValueRef z = mul(m, s, s);
    int terms = m->f64 ? MATH_LOG_TERMS_F64 : MATH_LOG_TERMS_F32;
    LLVMValueRef q = K(m, 2.0 / (2 * terms + 1));
    for (int k = terms - 1; k >= 1; k--) q = fma3(m, q, z, K(m, 2.0 / (2 * k + 1)));
    LLVMValueRef R = mul(m, q, z);
    return fma3(m, neg(m, s), sub(m, f, R), f);
}

/* log of 0 is -inf, of a negative number or NaN NaN, of inf inf. */
static LLVMValueRef log_special(M *m, LLVMValueRef x, LLVMValueRef y)
{
    y = sel(m, fcmp(m, LLVMRealOEQ, x, K(m, INFINITY)), x, y);
    y = sel(m, fcmp(m, LLVMRealOEQ, x, K(m, 0.0)), K(m, -INFINITY), y);
    return sel(m, fcmp(m, LLVMRealULT, x, K(m, 0.0)), K(m, NAN), y);
}

static LLVMValueRef m_log(M *m, LLVMValueRef x)
{
    LLVMValueRef e, lp = log_core(m, x, &e);
    double hi = m->f64 ? 0x1.62e42fee00000p-1 : 0x1.62e4p-1;
    double lo = m->f64 ? 0x1.a39ef35793c76p-33 : (double)(float)(0x1.62e42fefa39efp-1 - 0x1.62e4p-1);
    return log_special(m, x, fma3(m, e, K(m, hi), fma3(m, e, K(m, lo), lp)));
}

static LLVMValueRef m_log2(M *m, LLVMValueRef x)
{
    LLVMValueRef e, lp = log_core(m, x, &e);
    double hi = m->f64 ? 0x1.71547652b82fep0 : (double)(float)0x1.71547652b82fep0;
    double lo = m->f64 ? 0x1.777d0ffda0d24p-56 : (double)(float)(0x1.71547652b82fep0 - (double)(float)0x1.71547652b82fep0);
    return log_special(m, x, add(m, e, fma3(m, lp, K(m, hi), mul(m, lp, K(m, lo)))));
}

static LLVMValueRef m_sigmoid(M *m, LLVMValueRef x)
{
    LLVMValueRef t = m_exp(m, neg(m, un(m, "fabs", x)));
    LLVMValueRef num = sel(m, fcmp(m, LLVMRealOGE, x, K(m, 0.0)), K(m, 1.0), t);
    return fdiv_(m, num, add(m, K(m, 1.0), t));
}

/* e^y - 1 for 0 <= y <= 1.1: Taylor, y + y^2 (1/2 + y/6 + ...). */
static LLVMValueRef expm1_small(M *m, LLVMValueRef y)
{
    int terms = m->f64 ? MATH_EXPM1_TERMS_F64 : MATH_EXPM1_TERMS_F32;
    LLVMValueRef q = K(m, 1.0 / fact(terms));
    for (int k = terms - 1; k >= 2; k--) q = fma3(m, q, y, K(m, 1.0 / fact(k)));
    return fma3(m, mul(m, y, y), q, y);
}

/* |x| < 0.55: em / (em + 2) with em = expm1(2|x|) (the division shrinks em's
 * error); above: 1 - 2 / (e^{2|x|} + 1); the sign of x. */
static LLVMValueRef m_tanh(M *m, LLVMValueRef x)
{
    LLVMValueRef a = un(m, "fabs", x);
    LLVMValueRef a2 = mul(m, a, K(m, 2.0));
    LLVMValueRef em = expm1_small(m, a2);
    LLVMValueRef small = fdiv_(m, em, add(m, em, K(m, 2.0)));
    LLVMValueRef big = sub(m, K(m, 1.0), fdiv_(m, K(m, 2.0), add(m, m_exp(m, a2), K(m, 1.0))));
    LLVMValueRef t = sel(m, fcmp(m, LLVMRealOLT, a, K(m, 0.55)), small, big);
    return bin(m, "copysign", t, x);
}

/* erf with the series below `split` (ns terms) and the continued fraction
 * (nc levels) above; the two paths are separate blocks, so a warp whose
 * elements all fall on one side runs one of them. */
static LLVMValueRef m_erf(M *m, LLVMValueRef x, double split, int ns, int nc)
{
    Cg *cg = m->cg;
    LLVMValueRef a = bin(m, "minnum", un(m, "fabs", x), K(m, 6.0));
    /* e^{-a^2} with a^2 = hi + lo exactly */
    LLVMValueRef hi = mul(m, a, a), lo = fma3(m, a, a, neg(m, hi));
    LLVMValueRef e0 = m_exp(m, neg(m, hi));
    LLVMValueRef ex = fma3(m, neg(m, e0), lo, e0);
    LLVMBasicBlockRef nb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "erf.series");
    LLVMBasicBlockRef fb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "erf.cfrac");
    LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "erf.end");
    LLVMBuildCondBr(cg->b, fcmp(m, LLVMRealOLT, a, K(m, split)), nb, fb);
    /* series: S = sum y^n / (2n+1)!!, y = 2a^2, positive terms, Horner */
    LLVMPositionBuilderAtEnd(cg->b, nb);
    LLVMValueRef y = mul(m, hi, K(m, 2.0));
    LLVMValueRef S = K(m, 1.0 / dfact2(ns));
    for (int n = ns - 1; n >= 0; n--) S = fma3(m, S, y, K(m, 1.0 / dfact2(n)));
    LLVMValueRef near = mul(m, mul(m, mul(m, a, K(m, 0x1.20dd750429b6dp0)), ex), S);
    LLVMBasicBlockRef nend = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, jb);
    /* continued fraction for erfc, from depth nc up */
    LLVMPositionBuilderAtEnd(cg->b, fb);
    LLVMValueRef Kc = a;
    for (int n = nc; n >= 1; n--) Kc = add(m, a, fdiv_(m, K(m, n * 0.5), Kc));
    LLVMValueRef erfc = fdiv_(m, ex, mul(m, Kc, K(m, 0x1.c5bf891b4ef6bp0)));
    LLVMValueRef far = sub(m, K(m, 1.0), erfc);
    LLVMBasicBlockRef fend = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, jb);
    LLVMPositionBuilderAtEnd(cg->b, jb);
    LLVMValueRef r = LLVMBuildPhi(cg->b, m->t, "");
    LLVMValueRef in[2] = {near, far};
    LLVMBasicBlockRef from[2] = {nend, fend};
    LLVMAddIncoming(r, in, from, 2);
    r = bin(m, "copysign", r, x);
    return sel(m, isnan_(m, x), x, r);
}

/* --fast-math (f32, and f16/bf16 through f32): the MUFU approximations.
 * Bounds (PTX ISA, plus the rounding of the scaled argument):
 *   exp    ex2.approx.ftz(x * log2e)      2 ulp + |x| * 2^-24 relative (x <= 0 in softmax: <= 2 ulp + 1e-6 |x|)
 *   exp2   ex2.approx.ftz                 2 ulp
 *   log    lg2.approx.ftz * ln2           2^-22 absolute near 1, 3 ulp elsewhere
 *   log2   lg2.approx.ftz                 same
 *   rsqrt  rsqrt.approx.ftz               2 ulp
 *   sigmoid  rcp.approx(1 + ex2(-x log2e))  4 ulp
 *   tanh   tanh.approx.f32                2^-10.7 relative
 * Subnormal inputs and results flush to zero (ftz).  erf, sqrt, fabs, floor,
 * ceil and everything in f64 stay exact or accurate. */
static LLVMValueRef approx(Cg *cg, const char *insn, LLVMValueRef x)
{
    char text[64];
    snprintf(text, sizeof text, "%s $0, $1;", insn);
    return cg_inline_asm(cg, cg->f32, text, "=f,f", &x, 1, false);
}

static LLVMValueRef fast_math(Cg *cg, const char *fn, LLVMValueRef x)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef log2e = LLVMConstReal(cg->f32, 1.4426950408889634), ln2 = LLVMConstReal(cg->f32, 0.6931471805599453);
    if (!strcmp(fn, "exp")) return approx(cg, "ex2.approx.ftz.f32", LLVMBuildFMul(b, x, log2e, ""));
    if (!strcmp(fn, "exp2")) return approx(cg, "ex2.approx.ftz.f32", x);
    if (!strcmp(fn, "log")) return LLVMBuildFMul(b, approx(cg, "lg2.approx.ftz.f32", x), ln2, "");
    if (!strcmp(fn, "log2")) return approx(cg, "lg2.approx.ftz.f32", x);
    if (!strcmp(fn, "rsqrt")) return approx(cg, "rsqrt.approx.ftz.f32", x);
    if (!strcmp(fn, "tanh")) return approx(cg, "tanh.approx.f32", x);
    if (!strcmp(fn, "sigmoid")) {
        LLVMValueRef t = approx(cg, "ex2.approx.ftz.f32", LLVMBuildFMul(b, LLVMBuildFNeg(b, x, ""), log2e, ""));
        return approx(cg, "rcp.approx.ftz.f32", LLVMBuildFAdd(b, LLVMConstReal(cg->f32, 1.0), t, ""));
    }
    return NULL; /* no approximation: the accurate sequence */
}

LLVMValueRef cg_math_unary(Cg *cg, const char *fn, DType dt, LLVMValueRef x)
{
    if (cg_fast_math(cg) && dt != DT_F64) {
        bool nar = dt == DT_F16 || dt == DT_BF16;
        LLVMValueRef y = fast_math(cg, fn, nar ? LLVMBuildFPExt(cg->b, x, cg->f32, "") : x);
        if (y) return nar ? LLVMBuildFPTrunc(cg->b, y, cg_dtype(cg, dt), "") : y;
    }
    bool narrow = dt == DT_F16 || dt == DT_BF16;
    TL_ASSERT(narrow || dt == DT_F32 || dt == DT_F64, "codegen");
    M m = {cg, dt == DT_F64 ? cg->f64 : cg->f32, dt == DT_F64 ? cg->i64 : cg->i32, dt == DT_F64 ? "f64" : "f32",
           dt == DT_F64};
    if (narrow) x = LLVMBuildFPExt(cg->b, x, cg->f32, "");
    LLVMValueRef y;
    if (!strcmp(fn, "exp")) y = m_exp(&m, x);
    else if (!strcmp(fn, "exp2")) y = m_exp2(&m, x);
    else if (!strcmp(fn, "log")) y = m_log(&m, x);
    else if (!strcmp(fn, "log2")) y = m_log2(&m, x);
    else if (!strcmp(fn, "sqrt")) y = un(&m, "sqrt", x);
    else if (!strcmp(fn, "rsqrt")) y = fdiv_(&m, K(&m, 1.0), un(&m, "sqrt", x));
    else if (!strcmp(fn, "sigmoid")) y = m_sigmoid(&m, x);
    else if (!strcmp(fn, "tanh")) y = m_tanh(&m, x);
    else if (!strcmp(fn, "erf") && m.f64) y = m_erf(&m, x, MATH_ERF_SPLIT_F64, MATH_ERF_SERIES_F64, MATH_ERF_CF_F64);
    else if (!strcmp(fn, "erf")) { /* in f64 with f32-sized term counts, rounded once */
        M d = {cg, cg->f64, cg->i64, "f64", true};
        LLVMValueRef xd = LLVMBuildFPExt(cg->b, x, cg->f64, "");
        y = LLVMBuildFPTrunc(cg->b, m_erf(&d, xd, MATH_ERF_SPLIT_F32, MATH_ERF_SERIES_F32, MATH_ERF_CF_F32), cg->f32, "");
    }
    else if (!strcmp(fn, "fabs")) y = un(&m, "fabs", x);
    else if (!strcmp(fn, "floor")) y = un(&m, "floor", x);
    else if (!strcmp(fn, "ceil")) y = un(&m, "ceil", x);
    else tl_fatal("codegen", "unknown math function %s", fn);
    if (narrow) y = LLVMBuildFPTrunc(cg->b, y, cg_dtype(cg, dt), "");
    return y;
}

/* f32 division without a call (cg_fdiv_f32).  ptxas expands div.rn.f32 into a fast
 * path and a subroutine for the rare operands it does not cover; a subroutine call
 * anywhere in a function makes ptxas serialize its wgmma (C7509), so kernels with
 * wgmma divide here instead, with the same correctly rounded result:
 *   r = rcp.approx.ftz.f64(b), three Newton steps r += r (1 - b r) (far below 2^-53),
 *   q0 = a r, rem = fma(-b, q0, a) (exact), q = fma(rem, r, q0): within an f64 ulp of a/b,
 *   or a/b itself where that is an f64 (Markstein), then one rounding to f32 (cvt.rn).
 * The rounding is right because a/b of two f32 is never within 2^-49 (relative) of
 * an f32 rounding midpoint without being that midpoint (a - m b is a nonzero multiple
 * of a's ulp otherwise), and a midpoint (only subnormal results can be one) is an f64
 * the sequence finds exactly.  Every f32 quotient, subnormal or overflowing, is in
 * the f64 range.  Zero, infinite and NaN operands take a * rcp.approx(b), which is
 * what IEEE division gives for them (0 * inf and inf * 0 are NaN); NaN payloads need
 * not match (the interpreter compares NaN as NaN).  test_cgmem replays it on the host. */
#define MATH_FDIV_NEWTON 3

LLVMValueRef cg_fdiv_f32(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
    LLVMBuilderRef B = cg->b;
    LLVMTypeRef d = LLVMDoubleTypeInContext(cg->ctx);
    M m = {cg, d, LLVMInt64TypeInContext(cg->ctx), "f64", true};
    LLVMValueRef ad = LLVMBuildFPExt(B, a, d, ""), bd = LLVMBuildFPExt(B, b, d, "");
    LLVMValueRef r0 = cg_call_intrinsic(cg, "llvm.nvvm.rcp.approx.ftz.d", d, &bd, 1), r = r0;
    LLVMValueRef nb = neg(&m, bd), one = K(&m, 1.0);
    for (int i = 0; i < MATH_FDIV_NEWTON; i++) r = fma3(&m, r, fma3(&m, nb, r, one), r);
    LLVMValueRef q0 = mul(&m, ad, r);
    LLVMValueRef q = fma3(&m, fma3(&m, nb, q0, ad), r, q0);
    /* zero, infinite or NaN operands: a * r0 */
    LLVMValueRef inf = LLVMConstReal(cg->f32, INFINITY), zero = LLVMConstReal(cg->f32, 0.0);
    LLVMValueRef fa = cg_call_intrinsic(cg, "llvm.fabs.f32", cg->f32, &a, 1);
    LLVMValueRef fb = cg_call_intrinsic(cg, "llvm.fabs.f32", cg->f32, &b, 1);
    LLVMValueRef plain = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealOLT, fa, inf, ""),
                                      LLVMBuildFCmp(B, LLVMRealOLT, fb, inf, ""), "");
    plain = LLVMBuildAnd(B, plain, LLVMBuildFCmp(B, LLVMRealONE, a, zero, ""), "");
    plain = LLVMBuildAnd(B, plain, LLVMBuildFCmp(B, LLVMRealONE, b, zero, ""), "");
    LLVMValueRef res = LLVMBuildSelect(B, plain, q, mul(&m, ad, r0), "");
    return LLVMBuildFPTrunc(B, res, cg->f32, "fdiv");
}

/* The quotient of two u64 (d != 0) without a loop or a call:
 *   d >= 2^62: q <= 3, three compare-and-subtract steps;
 *   otherwise r ~ 1/d (rcp.approx.ftz.f64 and MATH_FDIV_NEWTON Newton steps, relative
 *   error below 2^-50), q0 = sat(n r) (|n/d - q0| < n 2^-49 / d + 1, so the remainder
 *   R = n - q0 d, exact in wrapping u64 arithmetic, lies in (-2^15, d + 2^15) and fits an
 *   i64), c = floor(R r), q1 = q0 + c (R - c d now lies in (-d/2, 3d/2), and in [0, d]
 *   when d < 2^33), and one step down or up.  Straight-line code, so LLVM merges the
 *   reciprocal of a divisor shared by many divisions; tests/unit/test_cgdiv.c replays it
 *   with the reciprocal's error modelled at 2^-20. */
static LLVMValueRef udiv64_nr(Cg *cg, LLVMValueRef n, LLVMValueRef d)
{
    LLVMBuilderRef B = cg->b;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(cg->ctx), f64 = LLVMDoubleTypeInContext(cg->ctx);
    M m = {cg, f64, i64, "f64", true};
    LLVMValueRef z = LLVMConstInt(i64, 0, 0), one = LLVMConstInt(i64, 1, 0);
    LLVMValueRef df = LLVMBuildUIToFP(B, d, f64, "");
    LLVMValueRef r = cg_call_intrinsic(cg, "llvm.nvvm.rcp.approx.ftz.d", f64, &df, 1);
    LLVMValueRef nd = neg(&m, df), fone = K(&m, 1.0);
    for (int i = 0; i < MATH_FDIV_NEWTON; i++) r = fma3(&m, r, fma3(&m, nd, r, fone), r);
    LLVMValueRef x = mul(&m, LLVMBuildUIToFP(B, n, f64, ""), r);
    LLVMValueRef q0 = cg_call_intrinsic(cg, "llvm.fptoui.sat.i64.f64", i64, &x, 1);
    LLVMValueRef R = LLVMBuildSub(B, n, LLVMBuildMul(B, q0, d, ""), "");
    LLVMValueRef y = un(&m, "floor", mul(&m, LLVMBuildSIToFP(B, R, f64, ""), r));
    LLVMValueRef c = cg_call_intrinsic(cg, "llvm.fptosi.sat.i64.f64", i64, &y, 1);
    LLVMValueRef q = LLVMBuildAdd(B, q0, c, "");
    R = LLVMBuildSub(B, R, LLVMBuildMul(B, c, d, ""), "");
    LLVMValueRef low = LLVMBuildICmp(B, LLVMIntSLT, R, z, "");
    q = LLVMBuildSelect(B, low, LLVMBuildSub(B, q, one, ""), q, "");
    R = LLVMBuildSelect(B, low, LLVMBuildAdd(B, R, d, ""), R, "");
    LLVMValueRef high = LLVMBuildICmp(B, LLVMIntUGE, R, d, "");
    q = LLVMBuildAdd(B, q, LLVMBuildZExt(B, high, i64, ""), "");
    /* d >= 2^62 */
    LLVMValueRef t = n, qb = z;
    for (int i = 0; i < 3; i++) {
        LLVMValueRef ge = LLVMBuildICmp(B, LLVMIntUGE, t, d, "");
        t = LLVMBuildSelect(B, ge, LLVMBuildSub(B, t, d, ""), t, "");
        qb = LLVMBuildAdd(B, qb, LLVMBuildZExt(B, ge, i64, ""), "");
    }
    LLVMValueRef big = LLVMBuildICmp(B, LLVMIntUGE, d, LLVMConstInt(i64, 1ull << 62, 0), "");
    return LLVMBuildSelect(B, big, qb, q, "");
}

/* The quotient of two u64 (d != 0) for a uniform (scalar) division: 32-bit division
 * where both fit, else a shift-subtract loop.  It runs once per thread; the
 * straight-line udiv64_nr there (f64 registers beside the accumulators) makes ptxas
 * serialize flash_attn_fwd's wgmma (C7520), the loop does not. */
static LLVMValueRef udiv64_loop(Cg *cg, LLVMValueRef ua, LLVMValueRef ud)
{
    LLVMBuilderRef B = cg->b;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(cg->ctx), i32 = cg->i32;
    LLVMValueRef z = LLVMConstInt(i64, 0, 0), one = LLVMConstInt(i64, 1, 0);
    LLVMValueRef hi = LLVMBuildLShr(B, LLVMBuildOr(B, ua, ud, ""), LLVMConstInt(i64, 32, 0), "");
    LLVMValueRef small = LLVMBuildICmp(B, LLVMIntEQ, hi, z, "");
    LLVMBasicBlockRef from = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "div.small");
    LLVMBasicBlockRef lb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "div.loop");
    LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "div.done");
    LLVMBuildCondBr(B, small, sb, lb);
    LLVMPositionBuilderAtEnd(B, sb);
    LLVMValueRef qs = LLVMBuildZExt(B, LLVMBuildUDiv(B, LLVMBuildTrunc(B, ua, i32, ""), LLVMBuildTrunc(B, ud, i32, ""), ""),
                                    i64, "");
    LLVMBuildBr(B, jb);
    /* bit i from 63 down: r = 2r + bit i of a; r >= d: r -= d, set bit i of q */
    LLVMPositionBuilderAtEnd(B, lb);
    LLVMValueRef pi = LLVMBuildPhi(B, i64, "i"), pq = LLVMBuildPhi(B, i64, "q"), pr = LLVMBuildPhi(B, i64, "r");
    LLVMValueRef i = LLVMBuildSub(B, pi, one, "");
    LLVMValueRef bit = LLVMBuildAnd(B, LLVMBuildLShr(B, ua, i, ""), one, "");
    LLVMValueRef r = LLVMBuildOr(B, LLVMBuildShl(B, pr, one, ""), bit, "");
    /* r < 2d <= 2^65 may not fit: r >= d also when the shift lost r's top bit */
    LLVMValueRef top = LLVMBuildICmp(B, LLVMIntSLT, pr, z, "");
    LLVMValueRef ge = LLVMBuildOr(B, top, LLVMBuildICmp(B, LLVMIntUGE, r, ud, ""), "");
    LLVMValueRef r2 = LLVMBuildSelect(B, ge, LLVMBuildSub(B, r, ud, ""), r, "");
    LLVMValueRef q2 = LLVMBuildOr(B, pq, LLVMBuildShl(B, LLVMBuildZExt(B, ge, i64, ""), i, ""), "");
    LLVMValueRef more = LLVMBuildICmp(B, LLVMIntNE, i, z, "");
    LLVMBasicBlockRef lend = LLVMGetInsertBlock(B);
    LLVMBuildCondBr(B, more, lb, jb);
    LLVMValueRef v0[2] = {LLVMConstInt(i64, 64, 0), i}, q0[2] = {z, q2}, r0[2] = {z, r2};
    /* the loop's entry edge comes from the test's block */
    LLVMBasicBlockRef entry[2] = {from, lend};
    LLVMAddIncoming(pi, v0, entry, 2);
    LLVMAddIncoming(pq, q0, entry, 2);
    LLVMAddIncoming(pr, r0, entry, 2);
    LLVMPositionBuilderAtEnd(B, jb);
    LLVMValueRef q = LLVMBuildPhi(B, i64, "q");
    LLVMValueRef qv[2] = {qs, q2};
    LLVMBasicBlockRef qb[2] = {sb, lend};
    LLVMAddIncoming(q, qv, qb, 2);
    return q;
}

LLVMValueRef cg_idiv64(Cg *cg, LLVMValueRef a, LLVMValueRef d, bool sg, bool rem, bool uniform)
{
    LLVMBuilderRef B = cg->b;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(cg->ctx);
    LLVMValueRef z = LLVMConstInt(i64, 0, 0);
    LLVMValueRef an = sg ? LLVMBuildICmp(B, LLVMIntSLT, a, z, "") : NULL;
    LLVMValueRef dn = sg ? LLVMBuildICmp(B, LLVMIntSLT, d, z, "") : NULL;
    /* magnitudes (|MIN| is 2^63 as unsigned) */
    LLVMValueRef ua = sg ? LLVMBuildSelect(B, an, LLVMBuildNeg(B, a, ""), a, "") : a;
    LLVMValueRef ud = sg ? LLVMBuildSelect(B, dn, LLVMBuildNeg(B, d, ""), d, "") : d;
    LLVMValueRef q = uniform ? udiv64_loop(cg, ua, ud) : udiv64_nr(cg, ua, ud);
    if (rem) {
        LLVMValueRef ur = LLVMBuildSub(B, ua, LLVMBuildMul(B, q, ud, ""), "");
        return sg ? LLVMBuildSelect(B, an, LLVMBuildNeg(B, ur, ""), ur, "") : ur;
    }
    return sg ? LLVMBuildSelect(B, LLVMBuildXor(B, an, dn, ""), LLVMBuildNeg(B, q, ""), q, "") : q;
}

/* Float `%` is C's fmod (exact).  LLVM's NVPTX lowers frem as x - trunc(x / y) * y,
 * which is inexact once the quotient is large and gives +0 where fmod gives -0, so
 * this is the integer long division of the significands: normalise both (subnormals
 * by ctlz), subtract y's significand from x's once per exponent step (a loop of
 * ex - ey iterations), renormalise and rebuild the float with x's sign.  y = 0, y NaN,
 * x inf or NaN give NaN (as (x*y)/(x*y)); |x| < |y| gives x; |x| = |y| gives 0 with
 * x's sign.  f16/bf16 run in f32, where the exact result is exactly representable. */
static LLVMValueRef ic(M *m, uint64_t v) { return LLVMConstInt(m->it, v, 0); }

LLVMValueRef cg_math_fmod(Cg *cg, DType dt, LLVMValueRef x, LLVMValueRef y)
{
    bool narrow = dt == DT_F16 || dt == DT_BF16;
    TL_ASSERT(narrow || dt == DT_F32 || dt == DT_F64, "codegen");
    M m = {cg, dt == DT_F64 ? cg->f64 : cg->f32, dt == DT_F64 ? cg->i64 : cg->i32, dt == DT_F64 ? "f64" : "f32",
           dt == DT_F64};
    if (narrow) {
        x = LLVMBuildFPExt(cg->b, x, cg->f32, "");
        y = LLVMBuildFPExt(cg->b, y, cg->f32, "");
    }
    LLVMBuilderRef b = cg->b;
    const unsigned W = m.f64 ? 64 : 32, MB = m.f64 ? 52 : 23, EB = W - 1 - MB;
    const uint64_t sign = (uint64_t)1 << (W - 1), implicit = (uint64_t)1 << MB, mant = implicit - 1;
    const uint64_t infbits = sign - implicit;   /* the exponent all ones, significand 0 */
    LLVMValueRef ux = LLVMBuildBitCast(b, x, m.it, ""), uy = LLVMBuildBitCast(b, y, m.it, "");
    LLVMValueRef sx = LLVMBuildAnd(b, ux, ic(&m, sign), "");
    LLVMValueRef ax = LLVMBuildAnd(b, ux, ic(&m, ~sign), ""), ay = LLVMBuildAnd(b, uy, ic(&m, ~sign), "");
    LLVMValueRef special = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, ay, ic(&m, 0), ""),
                                       LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGT, ay, ic(&m, infbits), ""),
                                                   LLVMBuildICmp(b, LLVMIntUGE, ax, ic(&m, infbits), ""), ""), "");
    LLVMValueRef xy = mul(&m, x, y);
    LLVMValueRef early = sel(&m, special, fdiv_(&m, xy, xy),
                             sel(&m, LLVMBuildICmp(b, LLVMIntULT, ax, ay, ""), x,
                                 LLVMBuildBitCast(b, sx, m.t, "")));   /* |x| = |y|: +-0 */
    LLVMValueRef go = LLVMBuildAnd(b, LLVMBuildNot(b, special, ""), LLVMBuildICmp(b, LLVMIntUGT, ax, ay, ""), "");
    /* significands with the implicit bit at MB, and unbiased-plus-bias exponents (signed) */
    LLVMValueRef norm[2][2];
    LLVMValueRef fz = LLVMConstInt(cg->i1, 0, 0);
    for (int k = 0; k < 2; k++) {
        LLVMValueRef a = k ? ay : ax;
        char nm[16];
        snprintf(nm, sizeof nm, "llvm.ctlz.i%u", W);
        LLVMValueRef args[2] = {a, fz};
        LLVMValueRef sh = LLVMBuildSub(b, cg_call_intrinsic(cg, nm, m.it, args, 2), ic(&m, EB), "");
        LLVMValueRef e = LLVMBuildLShr(b, a, ic(&m, MB), "");
        LLVMValueRef sub = LLVMBuildICmp(b, LLVMIntEQ, e, ic(&m, 0), "");
        norm[k][0] = LLVMBuildSelect(b, sub, LLVMBuildShl(b, a, sh, ""),
                                     LLVMBuildOr(b, LLVMBuildAnd(b, a, ic(&m, mant), ""), ic(&m, implicit), ""), "");
        norm[k][1] = LLVMBuildSelect(b, sub, LLVMBuildSub(b, ic(&m, 1), sh, ""), e, "");
    }
    LLVMValueRef my = norm[1][0], ey = norm[1][1];
    LLVMBasicBlockRef entry = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "fmod.head");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "fmod.step");
    LLVMBasicBlockRef tail = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "fmod.tail");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "fmod.end");
    LLVMBuildCondBr(b, go, head, done);
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef mphi = LLVMBuildPhi(b, m.it, ""), ephi = LLVMBuildPhi(b, m.it, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, ephi, ey, ""), body, tail);
    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef d = LLVMBuildSub(b, mphi, my, "");
    LLVMValueRef keep = LLVMBuildICmp(b, LLVMIntSLT, d, ic(&m, 0), "");
    LLVMValueRef mnext = LLVMBuildShl(b, LLVMBuildSelect(b, keep, mphi, d, ""), ic(&m, 1), "");
    LLVMValueRef enext = LLVMBuildSub(b, ephi, ic(&m, 1), "");
    LLVMBuildBr(b, head);
    LLVMValueRef min_[2] = {norm[0][0], mnext}, ein[2] = {norm[0][1], enext};
    LLVMBasicBlockRef from[2] = {entry, body};
    LLVMAddIncoming(mphi, min_, from, 2);
    LLVMAddIncoming(ephi, ein, from, 2);
    LLVMPositionBuilderAtEnd(b, tail);
    d = LLVMBuildSub(b, mphi, my, "");
    LLVMValueRef mr = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, d, ic(&m, 0), ""), mphi, d, "");
    char nm[16];
    snprintf(nm, sizeof nm, "llvm.ctlz.i%u", W);
    LLVMValueRef args[2] = {mr, fz};
    LLVMValueRef sh = LLVMBuildSub(b, cg_call_intrinsic(cg, nm, m.it, args, 2), ic(&m, EB), "");
    LLVMValueRef zero = LLVMBuildICmp(b, LLVMIntEQ, mr, ic(&m, 0), "");
    sh = LLVMBuildSelect(b, zero, ic(&m, 0), sh, "");
    LLVMValueRef mn = LLVMBuildShl(b, mr, sh, ""), en = LLVMBuildSub(b, ephi, sh, "");
    LLVMValueRef normal = LLVMBuildOr(b, LLVMBuildSub(b, mn, ic(&m, implicit), ""), LLVMBuildShl(b, en, ic(&m, MB), ""), "");
    /* a subnormal result: en <= 0, shift right by 1 - en (exact: the result is a multiple of y's ulp) */
    LLVMValueRef rsh = LLVMBuildSub(b, ic(&m, 1), en, "");
    LLVMValueRef subn = LLVMBuildLShr(b, mn, LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, rsh, ic(&m, W), ""), rsh,
                                                             ic(&m, W - 1), ""), "");
    LLVMValueRef bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, en, ic(&m, 0), ""), normal, subn, "");
    bits = LLVMBuildOr(b, LLVMBuildSelect(b, zero, ic(&m, 0), bits, ""), sx, "");
    LLVMValueRef res = LLVMBuildBitCast(b, bits, m.t, "");
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMValueRef r = LLVMBuildPhi(b, m.t, "");
    LLVMValueRef rin[2] = {early, res};
    LLVMBasicBlockRef rfrom[2] = {entry, tail};
    LLVMAddIncoming(r, rin, rfrom, 2);
    if (narrow) r = LLVMBuildFPTrunc(b, r, cg_dtype(cg, dt), "");
    return r;
}
