/* scalar.c: the language's scalar arithmetic (see scalar.h; the rules are
 * lang/SEMANTICS.md's, and where it is silent the interpreter's, listed in
 * interp.c).
 *
 * Integers are computed in 64 bits on canonical operands and wrapped to the
 * dtype (int_wrap).  Floats are computed in double and rounded to the dtype
 * after each op (fp_round): below f64 every operand has at most 24
 * significant bits, so + - * / and sqrt in double, rounded once more to the
 * dtype, give the correctly rounded result.  FMA is the exception: a*b + c
 * rounded in double and again in f32 can round twice, so the sum is rounded
 * to odd in double first (see fma_round).
 */
#include "scalar.h"

#include <math.h>
#include <string.h>

#include "fpconv.h"

IrScalar ir_scalar_canon(DType dt, IrScalar x)
{
    IrScalar r;
    if (dt_is_float(dt)) r.f = fp_round(dt, x.f);
    else r.i = dt == DT_I1 ? x.i != 0 : int_wrap(dt, x.i);
    return r;
}

IrScalar ir_scalar_of_attr(DType dt, const IrAttr *a)
{
    IrScalar r;
    if (dt_is_float(dt)) r.f = fp_round(dt, a->f);
    else r.i = int_wrap(dt, a->i);
    return r;
}

/* ---- bits ---------------------------------------------------------------------- */

uint64_t ir_scalar_bits(DType dt, IrScalar x)
{
    switch (dt) {
    case DT_F8E4M3: return fp_to_f8e4m3(x.f);
    /* an e5m2 value is infinite only as it was loaded or bitcast (a conversion to e5m2
     * saturates, fp_round): its bits are inf's, as the GPU keeps them in a store or move */
    case DT_F8E5M2: return isinf(x.f) ? (signbit(x.f) ? 0xFCu : 0x7Cu) : fp_to_f8e5m2(x.f);
    case DT_F16: return fp_to_f16(x.f);
    case DT_BF16: return fp_to_bf16(x.f);
    case DT_F32: {
        float v = (float)x.f;
        uint32_t b;
        memcpy(&b, &v, sizeof b);
        return b;
    }
    case DT_F64: {
        uint64_t b;
        memcpy(&b, &x.f, sizeof b);
        return b;
    }
    default: return dt_bits[dt] == 64 ? (uint64_t)x.i : (uint64_t)x.i & ((1ull << dt_bits[dt]) - 1);
    }
}

IrScalar ir_scalar_from_bits(DType dt, uint64_t b)
{
    IrScalar v;
    switch (dt) {
    case DT_F8E4M3: v.f = fp_from_f8e4m3((uint8_t)b); break;
    case DT_F8E5M2: v.f = fp_from_f8e5m2((uint8_t)b); break;
    case DT_F16: v.f = fp_from_f16((uint16_t)b); break;
    case DT_BF16: v.f = fp_from_bf16((uint16_t)b); break;
    case DT_F32: {
        uint32_t b32 = (uint32_t)b;
        float x;
        memcpy(&x, &b32, sizeof x);
        v.f = x;
        break;
    }
    case DT_F64: memcpy(&v.f, &b, sizeof v.f); break;
    case DT_I1: v.i = b != 0; break; /* a bool byte: any nonzero is true */
    default: v.i = int_wrap(dt, (int64_t)b); break;
    }
    return v;
}

bool ir_scalar_same(DType dt, IrScalar a, IrScalar b) { return ir_scalar_bits(dt, a) == ir_scalar_bits(dt, b); }

/* ---- order and comparisons --------------------------------------------------------- */

static int icmp(DType dt, int64_t a, int64_t b)
{
    if (dt_is_signed(dt)) return a < b ? -1 : a > b;
    return (uint64_t)a < (uint64_t)b ? -1 : (uint64_t)a > (uint64_t)b;
}

static int fcmp(double a, double b, bool nan_high)
{
    bool na = isnan(a), nb = isnan(b);
    if (na || nb) return na == nb ? 0 : (na == nan_high ? 1 : -1);
    if (a < b) return -1;
    if (a > b) return 1;
    if (a == 0 && signbit(a) != signbit(b)) return signbit(a) ? -1 : 1;
    return 0;
}

int ir_scalar_order(DType dt, IrScalar a, IrScalar b, bool nan_high)
{
    return dt_is_float(dt) ? fcmp(a.f, b.f, nan_high) : icmp(dt, a.i, b.i);
}

IrScalar ir_scalar_maxmin(DType dt, IrScalar a, IrScalar b, bool want_max)
{
    if (dt_is_float(dt) && (isnan(a.f) || isnan(b.f))) return (IrScalar){.f = NAN};
    int c = ir_scalar_order(dt, a, b, true);
    return (want_max ? c >= 0 : c <= 0) ? a : b;
}

bool ir_scalar_cmp(IrCmp pred, DType dt, IrScalar a, IrScalar b)
{
    int c;
    if (dt_is_float(dt)) {
        if (isnan(a.f) || isnan(b.f)) return pred == CMP_NE;
        c = (a.f > b.f) - (a.f < b.f); /* -0 == +0 */
    } else {
        c = icmp(dt, a.i, b.i);
    }
    switch (pred) {
    case CMP_EQ: return c == 0;
    case CMP_NE: return c != 0;
    case CMP_LT: return c < 0;
    case CMP_LE: return c <= 0;
    case CMP_GT: return c > 0;
    case CMP_GE: return c >= 0;
    default: tl_fatal("ir", "bad cmp predicate %d", (int)pred);
    }
}

/* ---- arithmetic -------------------------------------------------------------------- */

static double fbinary(IrOpcode opc, DType dt, double a, double b)
{
    double r;
    switch (opc) {
    case IR_ADD: r = a + b; break;
    case IR_SUB: r = a - b; break;
    case IR_MUL: r = a * b; break;
    case IR_DIV: r = a / b; break;
    case IR_REM: r = fmod(a, b); break;
    case IR_MAX:
    case IR_MIN: return ir_scalar_maxmin(dt, (IrScalar){.f = a}, (IrScalar){.f = b}, opc == IR_MAX).f;
    default: tl_fatal("ir", "scalar %s on a float type", ir_opinfo[opc].name);
    }
    return fp_round(dt, r);
}

/* Integer ops on canonical operands. */
static IrScalarStatus ibinary(IrOpcode opc, DType dt, int64_t a, int64_t b, int64_t *out)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    bool sg = dt_is_signed(dt);
    int w = dt_bits[dt];
    int64_t r;
    switch (opc) {
    case IR_ADD: r = (int64_t)(ua + ub); break;
    case IR_SUB: r = (int64_t)(ua - ub); break;
    case IR_MUL: r = (int64_t)(ua * ub); break;
    case IR_DIV:
    case IR_REM:
        if (b == 0) return IR_SCALAR_DIV_ZERO;
        if (!sg) r = (int64_t)(opc == IR_DIV ? ua / ub : ua % ub);
        else if (b == -1) r = opc == IR_DIV ? (int64_t)(0 - ua) : 0; /* min / -1 wraps */
        else r = opc == IR_DIV ? a / b : a % b;
        break;
    case IR_AND: r = a & b; break;
    case IR_OR: r = a | b; break;
    case IR_XOR: r = a ^ b; break;
    case IR_SHL: /* a count outside [0, width) gives 0 */
        r = (sg ? (b < 0 || b >= w) : ub >= (uint64_t)w) ? 0 : (int64_t)(ua << b);
        break;
    case IR_SHR:
        if (sg) {
            int64_t c = b < 0 || b >= w ? 63 : b; /* out of range: the sign fill */
            r = a < 0 ? ~(~a >> c) : a >> c;
        } else {
            r = ub >= (uint64_t)w ? 0 : (int64_t)(ua >> ub);
        }
        break;
    case IR_MAX: r = icmp(dt, a, b) >= 0 ? a : b; break;
    case IR_MIN: r = icmp(dt, a, b) <= 0 ? a : b; break;
    default: tl_fatal("ir", "scalar %s on an integer type", ir_opinfo[opc].name);
    }
    *out = int_wrap(dt, r);
    return IR_SCALAR_OK;
}

IrScalarStatus ir_scalar_binary(IrOpcode opc, DType dt, IrScalar a, IrScalar b, IrScalar *r)
{
    if (dt_is_float(dt)) {
        r->f = fbinary(opc, dt, a.f, b.f);
        return IR_SCALAR_OK;
    }
    return ibinary(opc, dt, a.i, b.i, &r->i);
}

static double fmath(IrOpcode opc, double x)
{
    switch (opc) {
    case IR_NEG: return -x;
    case IR_EXP: return exp(x);
    case IR_EXP2: return exp2(x);
    case IR_LOG: return log(x);
    case IR_LOG2: return log2(x);
    case IR_SQRT: return sqrt(x);
    case IR_RSQRT: return 1.0 / sqrt(x);
    case IR_ABS: return fabs(x);
    case IR_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case IR_TANH: return tanh(x);
    case IR_ERF: return erf(x);
    case IR_FLOOR: return floor(x);
    case IR_CEIL: return ceil(x);
    default: tl_fatal("ir", "scalar %s on a float type", ir_opinfo[opc].name);
    }
}

IrScalar ir_scalar_unary(IrOpcode opc, DType from, DType to, IrScalar x)
{
    IrScalar r;
    if (dt_is_float(to)) {
        double v = dt_is_float(from) ? x.f : fp_from_int(to, x.i, dt_is_unsigned(from));
        r.f = fp_round(to, fmath(opc, v));
        return r;
    }
    switch (opc) {
    case IR_NEG: r.i = int_wrap(to, (int64_t)(0 - (uint64_t)x.i)); break;
    case IR_NOT: r.i = int_wrap(to, ~x.i); break; /* i1: 0 <-> 1 */
    case IR_ABS: r.i = dt_is_signed(to) && x.i < 0 ? int_wrap(to, (int64_t)(0 - (uint64_t)x.i)) : x.i; break;
    case IR_FLOOR:
    case IR_CEIL: r = x; break;
    default: tl_fatal("ir", "scalar %s on an integer type", ir_opinfo[opc].name);
    }
    return r;
}

/* a*b + c rounded once to dt.  Below f64 the operands are at most f32, so a*b is
 * exact in double; the sum is rounded to odd in double (TwoSum gives the exact
 * error), and rounding that to a format of <= 24 bits is then correctly rounded
 * (53 >= 24 + 2).  Relies on no FP contraction (ISO C mode: -ffp-contract=off). */
static double fma_round(DType dt, double a, double b, double c)
{
    if (dt == DT_F64) return fma(a, b, c);
    double p = a * b, s = p + c;
    if (!isfinite(s)) return fp_round(dt, s);
    double bb = s - p;
    double err = (p - (s - bb)) + (c - bb);
    if (err != 0) {
        uint64_t bits;
        memcpy(&bits, &s, sizeof bits);
        if (!(bits & 1)) s = nextafter(s, err > 0 ? INFINITY : -INFINITY);
    }
    return fp_round(dt, s);
}

IrScalar ir_scalar_fma(DType dt, IrScalar a, IrScalar b, IrScalar c)
{
    IrScalar r;
    if (dt_is_float(dt)) r.f = fma_round(dt, a.f, b.f, c.f);
    else r.i = int_wrap(dt, (int64_t)((uint64_t)a.i * (uint64_t)b.i + (uint64_t)c.i));
    return r;
}

IrScalar ir_scalar_cast(DType from, DType to, IrScalar x)
{
    IrScalar r;
    if (dt_is_float(from) && dt_is_float(to)) r.f = fp_round(to, x.f);
    else if (dt_is_float(from)) r.i = fp_to_int(to, x.f);
    else if (dt_is_float(to)) r.f = fp_from_int(to, x.i, dt_is_unsigned(from));
    else if (to == DT_I1) r.i = x.i != 0;
    else r.i = int_wrap(to, x.i);
    return r;
}

IrScalar ir_scalar_bitcast(DType from, DType to, IrScalar x)
{
    TL_ASSERT(dt_bits[from] == dt_bits[to], "ir");
    return ir_scalar_from_bits(to, ir_scalar_bits(from, x));
}

IrScalarStatus ir_scalar_eval(IrOpcode opc, int64_t pred, DType dt, DType rdt, const IrScalar *x, IrScalar *r)
{
    switch (opc) {
    case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM: case IR_MAX: case IR_MIN:
        return ir_scalar_binary(opc, dt, x[0], x[1], r);
    case IR_AND: case IR_OR: case IR_XOR: case IR_SHL: case IR_SHR:
        if (dt_is_float(dt)) return IR_SCALAR_NOT_SCALAR;
        return ir_scalar_binary(opc, dt, x[0], x[1], r);
    case IR_CMP:
        if (pred < 0 || pred >= CMP_COUNT) return IR_SCALAR_NOT_SCALAR;
        r->i = ir_scalar_cmp((IrCmp)pred, dt, x[0], x[1]);
        return IR_SCALAR_OK;
    case IR_NOT:
        if (dt_is_float(dt) || dt_is_float(rdt)) return IR_SCALAR_NOT_SCALAR;
        *r = ir_scalar_unary(opc, dt, rdt, x[0]);
        return IR_SCALAR_OK;
    case IR_NEG: case IR_ABS: case IR_FLOOR: case IR_CEIL:
        if (dt_is_float(dt) && !dt_is_float(rdt)) return IR_SCALAR_NOT_SCALAR;
        *r = ir_scalar_unary(opc, dt, rdt, x[0]);
        return IR_SCALAR_OK;
    case IR_SQRT: case IR_RSQRT: case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2:
    case IR_SIGMOID: case IR_TANH: case IR_ERF:
        if (!dt_is_float(rdt)) return IR_SCALAR_NOT_SCALAR;
        *r = ir_scalar_unary(opc, dt, rdt, x[0]);
        return IR_SCALAR_OK;
    case IR_FMA: *r = ir_scalar_fma(dt, x[0], x[1], x[2]); return IR_SCALAR_OK;
    case IR_SELECT: *r = x[0].i ? x[1] : x[2]; return IR_SCALAR_OK;
    case IR_CAST: *r = ir_scalar_cast(dt, rdt, x[0]); return IR_SCALAR_OK;
    case IR_BITCAST:
        if (dt_bits[dt] != dt_bits[rdt]) return IR_SCALAR_NOT_SCALAR;
        *r = ir_scalar_bitcast(dt, rdt, x[0]);
        return IR_SCALAR_OK;
    default: return IR_SCALAR_NOT_SCALAR;
    }
}
