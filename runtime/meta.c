/* meta.c: reader, writer and grid evaluator of the kernel-metadata format (meta.h).
 *
 * Reading is two passes over the blob with one routine (parse_kernels): the
 * first checks everything and counts parameters and specializations, the
 * second fills one allocation holding a copy of the blob (whose NUL-terminated
 * strings the structures point into) and every array.
 */
#include "meta.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- small helpers ------------------------------------------------------- */

uint32_t tilert_crc32(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static const struct {
    const char *name;
    uint8_t size;
} dtypes[TILERT_DTYPE_COUNT] = {
    [TILERT_I1] = {"i1", 1},     [TILERT_I8] = {"i8", 1},     [TILERT_I16] = {"i16", 2},
    [TILERT_I32] = {"i32", 4},   [TILERT_I64] = {"i64", 8},   [TILERT_U8] = {"u8", 1},
    [TILERT_U16] = {"u16", 2},   [TILERT_U32] = {"u32", 4},   [TILERT_U64] = {"u64", 8},
    [TILERT_F8E4M3] = {"f8e4m3", 1}, [TILERT_F8E5M2] = {"f8e5m2", 1}, [TILERT_F16] = {"f16", 2},
    [TILERT_BF16] = {"bf16", 2}, [TILERT_F32] = {"f32", 4},   [TILERT_F64] = {"f64", 8},
};

static bool dt_valid(unsigned t) { return t > TILERT_DTYPE_INVALID && t < TILERT_DTYPE_COUNT; }
const char *tilert_dtype_name(tilert_dtype t) { return dt_valid(t) ? dtypes[t].name : "?"; }
size_t tilert_dtype_size(tilert_dtype t) { return dt_valid(t) ? dtypes[t].size : 0; }

bool tilert_dtype_is_int(tilert_dtype t) { return t >= TILERT_I1 && t <= TILERT_U64; }
bool tilert_dtype_is_signed(tilert_dtype t) { return t >= TILERT_I8 && t <= TILERT_I64; }

int64_t tilert_meta_wrap(int64_t v, tilert_dtype dt)
{
    uint64_t u = (uint64_t)v;
    switch (dt) {
    case TILERT_I1: return u != 0;
    case TILERT_I8: return (int8_t)(uint8_t)u;
    case TILERT_I16: return (int16_t)(uint16_t)u;
    case TILERT_I32: return (int32_t)(uint32_t)u;
    case TILERT_U8: return (uint8_t)u;
    case TILERT_U16: return (uint16_t)u;
    case TILERT_U32: return (uint32_t)u;
    default: return v; /* i64, u64 */
    }
}

bool tilert_meta_parse_arch(const char *s, uint16_t *sm, uint8_t *flags)
{
    if (!s || strncmp(s, "sm_", 3) != 0) return false;
    const char *p = s + 3;
    unsigned v = 0;
    int nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 4) v = v * 10 + (unsigned)(*p++ - '0'), nd++;
    if (nd < 2 || v < 10 || v > 65535) return false;
    uint8_t f = 0;
    if (*p == 'a') f = TILERT_META_ARCH_SPECIFIC, p++;
    if (*p) return false;
    *sm = (uint16_t)v;
    *flags = f;
    return true;
}

void tilert_meta_format_arch(uint16_t sm, uint8_t flags, char *buf, size_t len)
{
    snprintf(buf, len, "sm_%u%s", (unsigned)sm, (flags & TILERT_META_ARCH_SPECIFIC) ? "a" : "");
}

/* Round-to-nearest-even encoding of x in a binary float with ebits exponent and mbits mantissa bits. */
static uint16_t f64_to_small(double x, int ebits, int mbits)
{
    uint16_t sign = signbit(x) ? (uint16_t)(1u << (ebits + mbits)) : 0;
    uint16_t inf = (uint16_t)(((1u << ebits) - 1) << mbits);
    if (isnan(x)) return (uint16_t)(sign | inf | (1u << (mbits - 1)));
    x = fabs(x);
    if (x == 0) return sign;
    int bias = (1 << (ebits - 1)) - 1, e;
    if (isinf(x)) return sign | inf;
    frexp(x, &e);
    e -= 1; /* x = m * 2^e, m in [1, 2) */
    if (e < 1 - bias) e = 1 - bias; /* subnormal: fixed quantum */
    double r = nearbyint(ldexp(x, mbits - e));
    if (r >= ldexp(1.0, mbits + 1)) {
        e++;
        r = ldexp(r, -1);
    }
    if (e > bias) return sign | inf;
    uint32_t mant = (uint32_t)r;
    uint32_t ef = mant >= (1u << mbits) ? (uint32_t)(e + bias) : 0;
    return (uint16_t)(sign | ef << mbits | (mant & ((1u << mbits) - 1)));
}

uint16_t tilert_f64_to_f16_bits(double x) { return f64_to_small(x, 5, 10); }
uint16_t tilert_f64_to_bf16_bits(double x) { return f64_to_small(x, 8, 7); }

/* ---- grid code --------------------------------------------------------------- */

/* Operand bytes after the opcode; -1 for an unknown opcode. */
static int gop_operands(uint8_t op)
{
    switch (op) {
    case TILERT_GOP_PUSH: return 8;
    case TILERT_GOP_ARG: return 1;
    case TILERT_GOP_SHAPE:
    case TILERT_GOP_STRIDE: return 2;
    case TILERT_GOP_WRAP: return 1;
    case TILERT_GOP_NUM_SMS: return 0;
    case TILERT_GOP_SELECT: return 0;
    default:
        return (op >= TILERT_GOP_ADD && op <= TILERT_GOP_MAXU) || (op >= TILERT_GOP_EQ && op <= TILERT_GOP_XOR) ? 0 : -1;
    }
}

/* Whether checked code uses an opcode of version 4 (comparisons, logic, select). */
static bool code_needs_v4(const uint8_t *code, uint32_t len)
{
    for (uint32_t pc = 0; pc < len; pc += 1 + (uint32_t)gop_operands(code[pc]))
        if (code[pc] >= TILERT_GOP_EQ && code[pc] <= TILERT_GOP_SELECT) return true;
    return false;
}

/* Checks one program of k (the grid code, or requirement `what`) that must leave `want` values. */
static bool check_prog(const tilert_meta_kernel *k, const uint8_t *code, uint32_t len, int want, const char *what,
                       char *err, size_t errlen)
{
    int depth = 0;
    for (uint32_t pc = 0; pc < len;) {
        uint8_t op = code[pc];
        int nop = gop_operands(op);
        if (nop < 0) {
            fail(err, errlen, "%s: unknown opcode %u at byte %u", what, op, pc);
            return false;
        }
        if (pc + 1 + (uint32_t)nop > len) {
            fail(err, errlen, "%s: opcode %u at byte %u is cut off", what, op, pc);
            return false;
        }
        const uint8_t *a = code + pc + 1;
        if (op == TILERT_GOP_ARG || op == TILERT_GOP_SHAPE || op == TILERT_GOP_STRIDE) {
            if (a[0] >= k->nparams) {
                fail(err, errlen, "%s: parameter %u out of range (%u parameters)", what, a[0], k->nparams);
                return false;
            }
            const tilert_meta_param *p = &k->params[a[0]];
            if (op == TILERT_GOP_ARG && (p->kind != TILERT_PARAM_SCALAR || !tilert_dtype_is_int(p->dtype))) {
                fail(err, errlen, "%s reads parameter '%s', which is not an integer scalar", what, p->name);
                return false;
            }
            if (op != TILERT_GOP_ARG && (p->kind != TILERT_PARAM_TENSOR || a[1] >= p->rank)) {
                fail(err, errlen, "%s reads %s[%u] of parameter '%s', which is not a tensor of that rank", what,
                     op == TILERT_GOP_SHAPE ? "shape" : "stride", a[1], p->name);
                return false;
            }
        }
        if (op == TILERT_GOP_WRAP && !tilert_dtype_is_int((tilert_dtype)a[0])) {
            fail(err, errlen, "%s: WRAP to %u, not an integer dtype", what, a[0]);
            return false;
        }
        int pops = op <= TILERT_GOP_NUM_SMS ? 0 : op == TILERT_GOP_WRAP ? 1 : op == TILERT_GOP_SELECT ? 3 : 2;
        if (depth < pops) {
            if (op == TILERT_GOP_WRAP) fail(err, errlen, "%s: WRAP at byte %u on an empty stack", what, pc);
            else fail(err, errlen, "%s: %s opcode %u at byte %u with %d operands on the stack", what,
                      pops == 3 ? "ternary" : "binary", op, pc, depth);
            return false;
        }
        depth += 1 - pops;
        if (depth > TILERT_META_MAX_STACK) {
            fail(err, errlen, "%s needs more than %d stack entries", what, TILERT_META_MAX_STACK);
            return false;
        }
        pc += 1 + (uint32_t)nop;
    }
    if (depth != want) {
        fail(err, errlen, "%s leaves %d values, %s %d", what, depth, code == k->code ? "grid rank is" : "expected",
             want);
        return false;
    }
    return true;
}

bool tilert_meta_check_code(const tilert_meta_kernel *k, char *err, size_t errlen)
{
    if (k->grid_rank > 3) {
        fail(err, errlen, "grid rank %u (at most 3)", k->grid_rank);
        return false;
    }
    if (k->grid_rank == 0 && k->code_len) {
        fail(err, errlen, "grid code without a grid rank");
        return false;
    }
    if (k->grid_rank && !check_prog(k, k->code, k->code_len, k->grid_rank, "grid code", err, errlen)) return false;
    if (k->nrequires > TILERT_META_MAX_REQUIRES) {
        fail(err, errlen, "%u requirements (at most %d)", k->nrequires, TILERT_META_MAX_REQUIRES);
        return false;
    }
    for (uint32_t i = 0; i < k->nrequires; i++) {
        char what[48];
        snprintf(what, sizeof what, "requirement %u", i);
        if (!check_prog(k, k->requires[i].code, k->requires[i].code_len, 1, what, err, errlen)) return false;
    }
    return true;
}

static int64_t cdiv(int64_t a, int64_t b)
{
    /* ceil(a / b) from truncating division: round up when the remainder has b's sign */
    int64_t q = (a == INT64_MIN && b == -1) ? INT64_MIN : a / b;
    int64_t r = (b == -1) ? 0 : a % b;
    if (r != 0 && ((r > 0) == (b > 0))) q = (int64_t)((uint64_t)q + 1);
    return q;
}

/* Runs one checked program; its results are st[0..depth). */
static bool eval_prog(const tilert_meta_kernel *k, const uint8_t *code, uint32_t len, const tilert_arg *args,
                      int64_t num_sms, const char *what, int64_t st[TILERT_META_MAX_STACK], char *err, size_t errlen)
{
    int sp = 0;
    for (uint32_t pc = 0; pc < len;) {
        uint8_t op = code[pc];
        const uint8_t *a = code + pc + 1;
        pc += 1 + (uint32_t)gop_operands(op);
        switch (op) {
        case TILERT_GOP_PUSH: st[sp++] = (int64_t)rd64(a); continue;
        case TILERT_GOP_ARG: st[sp++] = tilert_meta_wrap((int64_t)args[a[0]].v.u, (tilert_dtype)k->params[a[0]].dtype); continue;
        case TILERT_GOP_SHAPE: st[sp++] = args[a[0]].v.tensor.shape[a[1]]; continue;
        case TILERT_GOP_STRIDE: st[sp++] = args[a[0]].v.tensor.stride[a[1]]; continue;
        case TILERT_GOP_WRAP: st[sp - 1] = tilert_meta_wrap(st[sp - 1], (tilert_dtype)a[0]); continue;
        case TILERT_GOP_NUM_SMS:
            if (num_sms <= 0) {
                fail(err, errlen, "the %s uses num_sms(), which needs a device", what);
                return false;
            }
            st[sp++] = num_sms;
            continue;
        case TILERT_GOP_SELECT:
            sp -= 2;
            st[sp - 1] = st[sp - 1] != 0 ? st[sp] : st[sp + 1];
            continue;
        default: break;
        }
        int64_t y = st[--sp], x = st[sp - 1], r;
        uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
        bool isdiv = op == TILERT_GOP_DIV || op == TILERT_GOP_REM || op == TILERT_GOP_CDIV ||
                     op == TILERT_GOP_DIVU || op == TILERT_GOP_REMU;
        if (isdiv && y == 0) {
            fail(err, errlen, "the %s divides by zero (numerator %lld)", what, (long long)x);
            return false;
        }
        switch (op) {
        case TILERT_GOP_ADD: r = (int64_t)(ux + uy); break;
        case TILERT_GOP_SUB: r = (int64_t)(ux - uy); break;
        case TILERT_GOP_MUL: r = (int64_t)(ux * uy); break;
        case TILERT_GOP_DIV: r = (x == INT64_MIN && y == -1) ? INT64_MIN : x / y; break;
        case TILERT_GOP_REM: r = (y == -1) ? 0 : x % y; break;
        case TILERT_GOP_MIN: r = x < y ? x : y; break;
        case TILERT_GOP_MAX: r = x > y ? x : y; break;
        case TILERT_GOP_CDIV: r = cdiv(x, y); break;
        case TILERT_GOP_DIVU: r = (int64_t)(ux / uy); break;
        case TILERT_GOP_REMU: r = (int64_t)(ux % uy); break;
        case TILERT_GOP_MINU: r = (int64_t)(ux < uy ? ux : uy); break;
        case TILERT_GOP_MAXU: r = (int64_t)(ux > uy ? ux : uy); break;
        case TILERT_GOP_EQ: r = x == y; break;
        case TILERT_GOP_NE: r = x != y; break;
        case TILERT_GOP_LT: r = x < y; break;
        case TILERT_GOP_LE: r = x <= y; break;
        case TILERT_GOP_GT: r = x > y; break;
        case TILERT_GOP_GE: r = x >= y; break;
        case TILERT_GOP_LTU: r = ux < uy; break;
        case TILERT_GOP_LEU: r = ux <= uy; break;
        case TILERT_GOP_GTU: r = ux > uy; break;
        case TILERT_GOP_GEU: r = ux >= uy; break;
        case TILERT_GOP_AND: r = (int64_t)(ux & uy); break;
        case TILERT_GOP_OR: r = (int64_t)(ux | uy); break;
        default: r = (int64_t)(ux ^ uy); break; /* XOR: check_code admits nothing else */
        }
        st[sp - 1] = r;
    }
    return true;
}

bool tilert_meta_eval_grid(const tilert_meta_kernel *k, const tilert_arg *args, int64_t num_sms, int64_t out[3],
                           char *err, size_t errlen)
{
    int64_t st[TILERT_META_MAX_STACK];
    if (!eval_prog(k, k->code, k->code_len, args, num_sms, "grid expression", st, err, errlen)) return false;
    for (int i = 0; i < k->grid_rank; i++) out[i] = st[i];
    return true;
}

bool tilert_meta_eval_requires(const tilert_meta_kernel *k, const tilert_arg *args, int64_t num_sms, int *failed,
                               char *err, size_t errlen)
{
    *failed = -1;
    for (uint32_t i = 0; i < k->nrequires; i++) {
        int64_t st[TILERT_META_MAX_STACK];
        char what[64];
        snprintf(what, sizeof what, "requires(...) clause %u", i);
        if (!eval_prog(k, k->requires[i].code, k->requires[i].code_len, args, num_sms, what, st, err, errlen))
            return false;
        if (st[0] == 0) {
            *failed = (int)i;
            fail(err, errlen, "%s", k->requires[i].message);
            return false;
        }
    }
    return true;
}

/* ---- TMA descriptors ------------------------------------------------------------ */

static const char *const swizzle_names[] = {"none", "32B", "64B", "128B"};

void tilert_meta_describe_tma(const tilert_meta_tma *t, char *buf, size_t len)
{
    size_t n = 0;
    int w = snprintf(buf, len, "box [");
    n = w > 0 ? (size_t)w : 0;
    unsigned rank = t->rank <= TILERT_TMA_MAX_RANK ? t->rank : TILERT_TMA_MAX_RANK;
    for (unsigned i = 0; i < rank && n < len; i++) {
        w = snprintf(buf + n, len - n, "%s%u", i ? ", " : "", t->box[rank - 1 - i]);
        n += w > 0 ? (size_t)w : 0;
    }
    if (n < len)
        snprintf(buf + n, len - n, "] of %s, swizzle %s", tilert_dtype_name((tilert_dtype)t->dtype),
                 t->swizzle < 4 ? swizzle_names[t->swizzle] : "?");
}

static bool dt_is_float(unsigned t)
{
    return t == TILERT_F16 || t == TILERT_BF16 || t == TILERT_F32 || t == TILERT_F64;
}

bool tilert_meta_check_tma(const tilert_meta_tma *t, const tilert_meta_param *p, char *err, size_t errlen)
{
    if (p->kind != TILERT_PARAM_TENSOR) {
        fail(err, errlen, "parameter '%s' is not a tensor: only tensors take TMA descriptors", p->name);
        return false;
    }
    if (!dt_valid(t->dtype) || dtypes[t->dtype].size != dtypes[p->dtype].size) {
        fail(err, errlen, "TMA dtype %s (code %u) does not have the size of the tensor's %s",
             tilert_dtype_name((tilert_dtype)t->dtype), t->dtype, tilert_dtype_name((tilert_dtype)p->dtype));
        return false;
    }
    if (t->rank != p->rank || t->rank < 1 || t->rank > TILERT_TMA_MAX_RANK) {
        fail(err, errlen, "TMA rank %u, but the tensor has rank %u (they must agree, 1..%d)", t->rank, p->rank,
             TILERT_TMA_MAX_RANK);
        return false;
    }
    if (t->interleave != 0) {
        fail(err, errlen, "TMA interleave %u: only 0 (none) is supported", t->interleave);
        return false;
    }
    if (t->swizzle > TILERT_TMA_SWIZZLE_128B || t->l2_promotion > TILERT_TMA_L2_256B ||
        t->oob_fill > TILERT_TMA_OOB_NAN) {
        fail(err, errlen, "TMA swizzle %u / L2 promotion %u / out-of-bounds fill %u out of range (0..3 / 0..3 / 0..1)",
             t->swizzle, t->l2_promotion, t->oob_fill);
        return false;
    }
    if (t->oob_fill == TILERT_TMA_OOB_NAN && !dt_is_float(t->dtype)) {
        fail(err, errlen, "TMA NaN out-of-bounds fill needs a float dtype (f16, bf16, f32, f64), not %s",
             tilert_dtype_name((tilert_dtype)t->dtype));
        return false;
    }
    unsigned esz = dtypes[t->dtype].size;
    for (unsigned i = 0; i < t->rank; i++) {
        unsigned dim = t->rank - 1 - i; /* the tensor dimension this TMA dimension runs along */
        if (t->box[i] < 1 || t->box[i] > 256) {
            fail(err, errlen, "TMA box extent %u along tensor dim %u is outside 1..256", t->box[i], dim);
            return false;
        }
        if (t->elem_stride[i] < 1 || t->elem_stride[i] > 8) {
            fail(err, errlen, "TMA element stride %u along tensor dim %u is outside 1..8", t->elem_stride[i], dim);
            return false;
        }
    }
    if (t->elem_stride[0] != 1) {
        fail(err, errlen, "TMA element stride %u along the innermost dim %u: TMA has no stride there (it must be 1)",
             t->elem_stride[0], t->rank - 1);
        return false;
    }
    unsigned inner = t->box[0] * esz;
    if (inner % 16) {
        fail(err, errlen, "the TMA box's innermost extent (tensor dim %u) is %u x %s = %u bytes, not a multiple of 16",
             t->rank - 1, t->box[0], tilert_dtype_name((tilert_dtype)t->dtype), inner);
        return false;
    }
    if (t->swizzle != TILERT_TMA_SWIZZLE_NONE && inner > (16u << t->swizzle)) {
        fail(err, errlen, "the TMA box's innermost extent (tensor dim %u) is %u x %s = %u bytes, more than the "
             "%u-byte span of swizzle %s", t->rank - 1, t->box[0], tilert_dtype_name((tilert_dtype)t->dtype), inner,
             16u << t->swizzle, swizzle_names[t->swizzle]);
        return false;
    }
    return true;
}

/* ---- reader ---------------------------------------------------------------------- */

typedef struct Reader {
    const uint8_t *p;
    size_t len, pos;
    char *err;
    size_t errlen;
    const char *what;   /* the kernel being read, for messages */
    uint16_t version;
} Reader;

static bool need(Reader *r, size_t n, const char *field)
{
    if (r->len - r->pos >= n) return true;
    fail(r->err, r->errlen, "metadata truncated: %s of %s at byte %zu needs %zu bytes, %zu left", field, r->what,
         r->pos, n, r->len - r->pos);
    return false;
}
static bool get8(Reader *r, uint8_t *v, const char *f)
{
    if (!need(r, 1, f)) return false;
    *v = r->p[r->pos++];
    return true;
}
static bool get16(Reader *r, uint16_t *v, const char *f)
{
    if (!need(r, 2, f)) return false;
    *v = rd16(r->p + r->pos);
    r->pos += 2;
    return true;
}
static bool get32(Reader *r, uint32_t *v, const char *f)
{
    if (!need(r, 4, f)) return false;
    *v = rd32(r->p + r->pos);
    r->pos += 4;
    return true;
}
/* A string: its offset in the blob (the caller maps it into its copy). */
static bool getstr(Reader *r, size_t *off, const char *f)
{
    uint16_t n;
    if (!get16(r, &n, f) || !need(r, (size_t)n + 1, f)) return false;
    if (r->p[r->pos + n] != 0 || memchr(r->p + r->pos, 0, n)) {
        fail(r->err, r->errlen, "metadata: %s of %s at byte %zu is not a NUL-terminated string of %u bytes", f,
             r->what, r->pos, n);
        return false;
    }
    *off = r->pos;
    r->pos += (size_t)n + 1;
    return true;
}

/* One pass over the kernel records.  With fill == NULL it checks and counts;
 * otherwise it fills the kernels, pointing strings into `base` (a copy of the blob). */
typedef struct Fill {
    const char *base;
    tilert_meta_kernel *kernels;
    tilert_meta_param *params;
    tilert_meta_spec *specs;
    tilert_meta_tma *tmas;
    tilert_meta_require *reqs;
} Fill;

/* The requirements of a record (version 4) into out[0..*n) (out: TILERT_META_MAX_REQUIRES
 * entries), messages and code pointing into base (which mirrors r->p). */
static bool parse_requires(Reader *r, tilert_meta_require *out, uint32_t *n, const char *base)
{
    uint16_t nr;
    if (!get16(r, &nr, "requirement count")) return false;
    if (nr > TILERT_META_MAX_REQUIRES) {
        fail(r->err, r->errlen, "metadata: %s has %u requirements (at most %d)", r->what, nr, TILERT_META_MAX_REQUIRES);
        return false;
    }
    for (uint32_t i = 0; i < nr; i++) {
        size_t msg;
        uint16_t len;
        if (!getstr(r, &msg, "requirement message") || !get16(r, &len, "requirement code length") ||
            !need(r, len, "requirement code"))
            return false;
        out[i] = (tilert_meta_require){base + msg, (const uint8_t *)base + r->pos, len};
        r->pos += len;
    }
    *n = nr;
    return true;
}

/* One TMA record of parameter p (version 2) into *t. */
static bool parse_tma(Reader *r, const char *what, const tilert_meta_param *p, unsigned j, tilert_meta_tma *t)
{
    memset(t, 0, sizeof *t);
    if (!get8(r, &t->dtype, "TMA dtype") || !get8(r, &t->rank, "TMA rank") || !get8(r, &t->swizzle, "TMA swizzle") ||
        !get8(r, &t->l2_promotion, "TMA L2 promotion") || !get8(r, &t->oob_fill, "TMA fill") ||
        !get8(r, &t->interleave, "TMA interleave"))
        return false;
    if (t->rank < 1 || t->rank > TILERT_TMA_MAX_RANK) {
        fail(r->err, r->errlen, "metadata: %s, parameter '%.64s', TMA descriptor %u: rank %u (1..%d)", what, p->name, j,
             t->rank, TILERT_TMA_MAX_RANK);
        return false;
    }
    for (unsigned i = 0; i < t->rank; i++)
        if (!get16(r, &t->box[i], "TMA box")) return false;
    for (unsigned i = 0; i < t->rank; i++)
        if (!get8(r, &t->elem_stride[i], "TMA element stride")) return false;
    char e[300];
    if (!tilert_meta_check_tma(t, p, e, sizeof e)) {
        fail(r->err, r->errlen, "metadata: %s, parameter '%.64s', TMA descriptor %u: %s", what, p->name, j, e);
        return false;
    }
    return true;
}

/* Parameters into out[0..n), names pointing into base (which mirrors r->p).  TMA
 * records go to tmas[*ntma...] when tmas is not NULL (the second pass); *ntma counts them. */
static bool parse_params(Reader *r, const char *what, uint16_t sm, uint32_t n, tilert_meta_param *out,
                         const char *base, tilert_meta_tma *tmas, uint32_t *ntma)
{
    uint32_t kparams = 0, kernel_tma = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t name;
        uint8_t kind, dt, rank, flags, nt = 0;
        if (!getstr(r, &name, "parameter name") || !get8(r, &kind, "parameter kind") ||
            !get8(r, &dt, "parameter dtype") || !get8(r, &rank, "parameter rank") || !get8(r, &flags, "parameter flags"))
            return false;
        if (r->version >= 2 && !get8(r, &nt, "parameter TMA count")) return false;
        const char *pn = (const char *)r->p + name;
        uint8_t known = r->version >= 3 ? TILERT_META_PARAM_TMA_OPTIONAL : 0;
        if (kind > TILERT_PARAM_TENSOR || dt == TILERT_DTYPE_INVALID || dt >= TILERT_DTYPE_COUNT || (flags & ~known)) {
            fail(r->err, r->errlen, "metadata: %s, parameter '%.64s': invalid kind %u / dtype %u / flags %u", what,
                 pn, kind, dt, flags);
            return false;
        }
        if ((kind == TILERT_PARAM_TENSOR) ? (rank < 1 || rank > TILERT_MAX_RANK) : rank != 0) {
            fail(r->err, r->errlen, "metadata: %s, parameter '%.64s': invalid rank %u", what, pn, rank);
            return false;
        }
        if ((flags & TILERT_META_PARAM_TMA_OPTIONAL) && !nt) {
            fail(r->err, r->errlen, "metadata: %s, parameter '%.64s': TMA descriptors marked optional, but it has none",
                 what, pn);
            return false;
        }
        if (nt && sm < TILERT_META_TMA_MIN_SM) {
            fail(r->err, r->errlen, "metadata: %s, parameter '%.64s' has TMA descriptors, but the kernel is for sm_%u "
                 "(TMA needs sm_%u or later)", what, pn, sm, TILERT_META_TMA_MIN_SM);
            return false;
        }
        kernel_tma += nt;
        if (kernel_tma > TILERT_META_MAX_TMA) {
            fail(r->err, r->errlen, "metadata: %s, parameter '%.64s': the kernel has more than %d TMA descriptors",
                 what, pn, TILERT_META_MAX_TMA);
            return false;
        }
        tilert_meta_param p = {base + name, kind, dt, rank, nt, tmas && nt ? tmas + *ntma : NULL, flags};
        for (unsigned j = 0; j < nt; j++) {
            tilert_meta_tma t;
            p.name = pn;
            if (!parse_tma(r, what, &p, j, &t)) return false;
            if (tmas) tmas[*ntma] = t;
            ++*ntma;
        }
        p.name = base + name;
        kparams += kind == TILERT_PARAM_TENSOR ? 1u + 2u * rank + nt : 1u;
        out[i] = p;
    }
    if (kparams > TILERT_META_MAX_KPARAMS) {
        fail(r->err, r->errlen, "metadata: %s has %u PTX parameters (at most %d)", what, kparams,
             TILERT_META_MAX_KPARAMS);
        return false;
    }
    return true;
}

static bool parse_specs(Reader *r, uint32_t n, tilert_meta_spec *out, const char *base)
{
    for (uint32_t i = 0; i < n; i++) {
        size_t sn, sv;
        if (!getstr(r, &sn, "specialization name") || !getstr(r, &sv, "specialization value")) return false;
        if (out) out[i] = (tilert_meta_spec){base + sn, base + sv};
    }
    return true;
}

static bool parse_kernels(Reader *r, uint32_t nk, Fill *fill, uint32_t *tot_params, uint32_t *tot_specs,
                          uint32_t *tot_tma, uint32_t *tot_req)
{
    uint32_t np_all = 0, ns_all = 0, nt_all = 0, nr_all = 0;
    char what[96];
    for (uint32_t ki = 0; ki < nk; ki++) {
        snprintf(what, sizeof what, "kernel %u", ki);
        r->what = what;
        size_t start = r->pos;
        uint32_t recsize;
        size_t sym, src;
        tilert_meta_kernel k = {0};
        if (!get32(r, &recsize, "record size") || !getstr(r, &sym, "symbol") || !getstr(r, &src, "source name"))
            return false;
        snprintf(what, sizeof what, "kernel %u '%.64s'", ki, (const char *)r->p + sym);
        uint16_t nparams, nspecs, code_len;
        if (!get16(r, &k.sm, "sm") || !get8(r, &k.arch_flags, "arch flags") || !get8(r, &k.grid_rank, "grid rank") ||
            !get16(r, &k.warps, "warps") || !get16(r, &nparams, "parameter count") ||
            !get16(r, &nspecs, "specialization count") || !get16(r, &code_len, "grid code length") ||
            !get32(r, &k.smem_static, "static shared memory") || !get32(r, &k.smem_dynamic, "dynamic shared memory"))
            return false;
        if (k.sm < 10 || (k.arch_flags & ~TILERT_META_ARCH_SPECIFIC)) {
            fail(r->err, r->errlen, "metadata: %s has an invalid arch (sm %u, flags %u)", what, k.sm, k.arch_flags);
            return false;
        }
        if (k.warps < 1 || k.warps > TILERT_META_MAX_WARPS) {
            fail(r->err, r->errlen, "metadata: %s has %u warps (1..%d)", what, k.warps, TILERT_META_MAX_WARPS);
            return false;
        }
        k.nparams = nparams;
        k.nspecs = nspecs;
        k.code_len = code_len;
        /* the first pass needs the parameters too, to check the grid code */
        tilert_meta_param tmp[16];
        tilert_meta_param *params = fill ? fill->params + np_all : nparams <= 16 ? tmp : malloc(sizeof *params * nparams);
        if (!params) {
            fail(r->err, r->errlen, "out of memory reading metadata");
            return false;
        }
        bool ok = parse_params(r, what, k.sm, nparams, params, fill ? fill->base : (const char *)r->p,
                               fill ? fill->tmas : NULL, &nt_all) &&
                  parse_specs(r, nspecs, fill ? fill->specs + ns_all : NULL, fill ? fill->base : NULL);
        k.params = params;
        k.code = r->p + r->pos;
        char cerr[200];
        if (ok && !need(r, code_len, "grid code")) ok = false;
        size_t code = r->pos;
        r->pos += code_len;
        /* the requirements point into the blob on the first pass, into the copy on the second */
        tilert_meta_require *reqs = NULL;
        if (ok && r->version >= 4) {
            reqs = fill ? fill->reqs + nr_all : malloc(sizeof *reqs * TILERT_META_MAX_REQUIRES);
            if (!reqs) {
                fail(r->err, r->errlen, "out of memory reading metadata");
                ok = false;
            } else {
                ok = parse_requires(r, reqs, &k.nrequires, fill ? fill->base : (const char *)r->p);
            }
        }
        k.requires = reqs;
        if (ok && !fill && !tilert_meta_check_code(&k, cerr, sizeof cerr)) {
            fail(r->err, r->errlen, "metadata: %s: %s", what, cerr);
            ok = false;
        }
        if (ok && !fill && r->version < 4 && code_needs_v4(k.code, k.code_len)) {
            fail(r->err, r->errlen, "metadata: %s: grid code uses an opcode of version 4 in a version %u blob", what,
                 r->version);
            ok = false;
        }
        if (!fill && params != tmp) free(params);
        if (!fill) free(reqs);
        if (!ok) return false;
        if (r->pos - start != recsize) {
            fail(r->err, r->errlen, "metadata: %s: record size %u, but its fields take %zu bytes", what, recsize,
                 r->pos - start);
            return false;
        }
        if (fill) {
            k.symbol = fill->base + sym;
            k.source_name = fill->base + src;
            k.specs = fill->specs + ns_all;
            k.code = (const uint8_t *)fill->base + code;
            if (!k.nrequires) k.requires = NULL;
            fill->kernels[ki] = k;
        }
        np_all += nparams;
        ns_all += nspecs;
        nr_all += k.nrequires;
    }
    if (r->pos != r->len) {
        fail(r->err, r->errlen, "metadata: %zu bytes after the last kernel record", r->len - r->pos);
        return false;
    }
    *tot_params = np_all;
    *tot_specs = ns_all;
    *tot_tma = nt_all;
    *tot_req = nr_all;
    return true;
}

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

bool tilert_meta_parse(const void *blob, size_t len, tilert_meta *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const uint8_t *p = blob;
    if (len < TILERT_META_HEADER_SIZE) {
        fail(err, errlen, "metadata truncated: %zu bytes, the header alone is %d", len, TILERT_META_HEADER_SIZE);
        return false;
    }
    if (memcmp(p, TILERT_META_MAGIC, 4) != 0) {
        fail(err, errlen, "metadata: bad magic %02x %02x %02x %02x (expected \"TLMD\")", p[0], p[1], p[2], p[3]);
        return false;
    }
    uint16_t version = rd16(p + 4), nk = rd16(p + 6);
    uint32_t size = rd32(p + 8), crc = rd32(p + 12);
    if (version < TILERT_META_MIN_VERSION || version > TILERT_META_VERSION) {
        fail(err, errlen, "metadata version %u; this libtilert reads versions %d to %d (rebuild the cubin with a "
             "matching tilec)", version, TILERT_META_MIN_VERSION, TILERT_META_VERSION);
        return false;
    }
    if (size != len) {
        fail(err, errlen, "metadata size field says %u bytes, the symbol holds %zu", size, len);
        return false;
    }
    uint32_t got = tilert_crc32(p + TILERT_META_HEADER_SIZE, len - TILERT_META_HEADER_SIZE);
    if (got != crc) {
        fail(err, errlen, "metadata checksum mismatch (stored %08x, computed %08x): the blob is corrupt", crc, got);
        return false;
    }
    if (nk == 0) {
        fail(err, errlen, "metadata lists no kernels");
        return false;
    }
    Reader r = {p, len, TILERT_META_HEADER_SIZE, err, errlen, "", version};
    uint32_t np, ns, nt, nr;
    if (!parse_kernels(&r, nk, NULL, &np, &ns, &nt, &nr)) return false;
    size_t off_k = align8(len), off_p = off_k + align8(sizeof(tilert_meta_kernel) * nk);
    size_t off_s = off_p + align8(sizeof(tilert_meta_param) * np);
    size_t off_t = off_s + align8(sizeof(tilert_meta_spec) * ns);
    size_t off_r = off_t + align8(sizeof(tilert_meta_tma) * nt);
    size_t total = off_r + sizeof(tilert_meta_require) * nr;
    char *store = malloc(total);
    if (!store) {
        fail(err, errlen, "out of memory reading metadata (%zu bytes)", total);
        return false;
    }
    memcpy(store, blob, len);
    Fill fill = {store, (tilert_meta_kernel *)(store + off_k), (tilert_meta_param *)(store + off_p),
                 (tilert_meta_spec *)(store + off_s), (tilert_meta_tma *)(store + off_t),
                 (tilert_meta_require *)(store + off_r)};
    r.pos = TILERT_META_HEADER_SIZE;
    parse_kernels(&r, nk, &fill, &np, &ns, &nt, &nr); /* cannot fail: the same bytes passed */
    for (uint32_t i = 0; i < nk; i++)
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(fill.kernels[i].symbol, fill.kernels[j].symbol) == 0) {
                fail(err, errlen, "metadata: kernel symbol '%s' appears twice", fill.kernels[i].symbol);
                free(store);
                return false;
            }
    out->nkernels = nk;
    out->kernels = fill.kernels;
    out->store = store;
    return true;
}

void tilert_meta_free(tilert_meta *m)
{
    if (!m) return;
    free(m->store);
    memset(m, 0, sizeof *m);
}

/* ---- writer ---------------------------------------------------------------------- */

typedef struct Writer {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} Writer;

static void put(Writer *w, const void *src, size_t n)
{
    if (w->oom || n == 0) return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n) cap *= 2;
        uint8_t *q = realloc(w->p, cap);
        if (!q) {
            w->oom = true;
            return;
        }
        w->p = q;
        w->cap = cap;
    }
    memcpy(w->p + w->len, src, n);
    w->len += n;
}
static void put8(Writer *w, uint8_t v) { put(w, &v, 1); }
static void put16(Writer *w, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(w, b, 2);
}
static void put32(Writer *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(w, b, 4);
}
static void patch32(Writer *w, size_t at, uint32_t v)
{
    if (w->oom) return;
    for (int i = 0; i < 4; i++) w->p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}
static bool putstr(Writer *w, const char *s, const char *what, char *err, size_t errlen)
{
    size_t n = s ? strlen(s) : 0;
    if (n > 0xFFFF) {
        fail(err, errlen, "metadata: %s is %zu bytes long (at most 65535)", what, n);
        return false;
    }
    put16(w, (uint16_t)n);
    put(w, s ? s : "", n);
    put8(w, 0);
    return true;
}

/* Whether kernel k needs format version 4: requirements, or their opcodes in its grid code. */
static bool kernel_needs_v4(const tilert_meta_kernel *k)
{
    return k->nrequires || code_needs_v4(k->code, k->code_len);
}

bool tilert_meta_write(const tilert_meta_kernel *kernels, uint32_t n, uint8_t **out, size_t *len, char *err,
                       size_t errlen)
{
    uint16_t version = 3;
    for (uint32_t i = 0; i < n && kernels; i++)
        if (kernel_needs_v4(&kernels[i])) version = 4;
    return tilert_meta_write_version(kernels, n, version, out, len, err, errlen);
}

bool tilert_meta_write_version(const tilert_meta_kernel *kernels, uint32_t n, uint16_t version, uint8_t **out,
                               size_t *len, char *err, size_t errlen)
{
    *out = NULL;
    *len = 0;
    if (n == 0 || n > 0xFFFF) {
        fail(err, errlen, "metadata: %u kernels (1..65535)", n);
        return false;
    }
    if (version < TILERT_META_MIN_VERSION || version > TILERT_META_VERSION) {
        fail(err, errlen, "metadata: cannot write version %u (%d..%d)", version, TILERT_META_MIN_VERSION,
             TILERT_META_VERSION);
        return false;
    }
    Writer w = {0};
    put(&w, TILERT_META_MAGIC, 4);
    put16(&w, version);
    put16(&w, (uint16_t)n);
    put32(&w, 0); /* size, patched */
    put32(&w, 0); /* crc, patched */
    for (uint32_t ki = 0; ki < n; ki++) {
        const tilert_meta_kernel *k = &kernels[ki];
        char cerr[320];
        if (k->nparams > 0xFFFF || k->nspecs > 0xFFFF || k->code_len > 0xFFFF || k->warps < 1 ||
            k->warps > TILERT_META_MAX_WARPS || k->sm < 10) {
            fail(err, errlen, "metadata: kernel '%s': counts, warps (%u) or sm (%u) out of range", k->symbol,
                 k->warps, k->sm);
            goto bad;
        }
        uint32_t kparams = 0, kernel_tma = 0;
        for (uint32_t i = 0; i < k->nparams; i++) {
            const tilert_meta_param *p = &k->params[i];
            bool rank_ok = p->kind == TILERT_PARAM_TENSOR ? (p->rank >= 1 && p->rank <= TILERT_MAX_RANK) : p->rank == 0;
            if (p->kind > TILERT_PARAM_TENSOR || p->dtype == 0 || p->dtype >= TILERT_DTYPE_COUNT || !rank_ok) {
                fail(err, errlen, "metadata: kernel '%s', parameter '%s': invalid kind, dtype or rank", k->symbol,
                     p->name);
                goto bad;
            }
            if (p->flags & ~TILERT_META_PARAM_TMA_OPTIONAL) {
                fail(err, errlen, "metadata: kernel '%s', parameter '%s': unknown flags %u", k->symbol, p->name,
                     p->flags);
                goto bad;
            }
            if (p->flags && (version < 3 || !p->ntma)) {
                fail(err, errlen, "metadata: kernel '%s', parameter '%s': TMA descriptors marked optional, which %s",
                     k->symbol, p->name, p->ntma ? "needs version 3" : "needs descriptors");
                goto bad;
            }
            if (p->ntma && version < 2) {
                fail(err, errlen, "metadata: kernel '%s', parameter '%s' has TMA descriptors, which version %u cannot "
                     "hold", k->symbol, p->name, version);
                goto bad;
            }
            if (p->ntma && k->sm < TILERT_META_TMA_MIN_SM) {
                fail(err, errlen, "metadata: kernel '%s', parameter '%s' has TMA descriptors, but the kernel is for "
                     "sm_%u (TMA needs sm_%u or later)", k->symbol, p->name, k->sm, TILERT_META_TMA_MIN_SM);
                goto bad;
            }
            for (unsigned j = 0; j < p->ntma; j++)
                if (!tilert_meta_check_tma(&p->tma[j], p, cerr, sizeof cerr)) {
                    fail(err, errlen, "metadata: kernel '%s', parameter '%s', TMA descriptor %u: %s", k->symbol,
                         p->name, j, cerr);
                    goto bad;
                }
            kernel_tma += p->ntma;
            kparams += p->kind == TILERT_PARAM_TENSOR ? 1u + 2u * p->rank + p->ntma : 1u;
        }
        if (kernel_tma > TILERT_META_MAX_TMA || kparams > TILERT_META_MAX_KPARAMS) {
            fail(err, errlen, "metadata: kernel '%s' has %u TMA descriptors (at most %d) and %u PTX parameters (at "
                 "most %d)", k->symbol, kernel_tma, TILERT_META_MAX_TMA, kparams, TILERT_META_MAX_KPARAMS);
            goto bad;
        }
        if (!tilert_meta_check_code(k, cerr, sizeof cerr)) {
            fail(err, errlen, "metadata: kernel '%s': %s", k->symbol, cerr);
            goto bad;
        }
        if (version < 4 && kernel_needs_v4(k)) {
            fail(err, errlen, "metadata: kernel '%s' has requires(...) clauses or comparisons in its grid code, which "
                 "need version 4", k->symbol);
            goto bad;
        }
        size_t start = w.len;
        put32(&w, 0);
        if (!putstr(&w, k->symbol, "a symbol", err, errlen) || !putstr(&w, k->source_name, "a name", err, errlen))
            goto bad;
        put16(&w, k->sm);
        put8(&w, k->arch_flags);
        put8(&w, k->grid_rank);
        put16(&w, k->warps);
        put16(&w, (uint16_t)k->nparams);
        put16(&w, (uint16_t)k->nspecs);
        put16(&w, (uint16_t)k->code_len);
        put32(&w, k->smem_static);
        put32(&w, k->smem_dynamic);
        for (uint32_t i = 0; i < k->nparams; i++) {
            const tilert_meta_param *p = &k->params[i];
            if (!putstr(&w, p->name, "a parameter name", err, errlen)) goto bad;
            put8(&w, p->kind);
            put8(&w, p->dtype);
            put8(&w, p->rank);
            put8(&w, p->flags);
            if (version < 2) continue;
            put8(&w, p->ntma);
            for (unsigned j = 0; j < p->ntma; j++) {
                const tilert_meta_tma *t = &p->tma[j];
                put8(&w, t->dtype);
                put8(&w, t->rank);
                put8(&w, t->swizzle);
                put8(&w, t->l2_promotion);
                put8(&w, t->oob_fill);
                put8(&w, t->interleave);
                for (unsigned d = 0; d < t->rank; d++) put16(&w, t->box[d]);
                for (unsigned d = 0; d < t->rank; d++) put8(&w, t->elem_stride[d]);
            }
        }
        for (uint32_t i = 0; i < k->nspecs; i++)
            if (!putstr(&w, k->specs[i].name, "a specialization name", err, errlen) ||
                !putstr(&w, k->specs[i].value, "a specialization value", err, errlen))
                goto bad;
        put(&w, k->code, k->code_len);
        if (version >= 4) {
            put16(&w, (uint16_t)k->nrequires);
            for (uint32_t i = 0; i < k->nrequires; i++) {
                const tilert_meta_require *q = &k->requires[i];
                if (q->code_len > 0xFFFF) {
                    fail(err, errlen, "metadata: kernel '%s': requirement %u has %u bytes of code (at most 65535)",
                         k->symbol, i, q->code_len);
                    goto bad;
                }
                if (!putstr(&w, q->message, "a requirement's message", err, errlen)) goto bad;
                put16(&w, (uint16_t)q->code_len);
                put(&w, q->code, q->code_len);
            }
        }
        if (w.len - start > 0xFFFFFFFFu) {
            fail(err, errlen, "metadata: kernel '%s' record too large", k->symbol);
            goto bad;
        }
        patch32(&w, start, (uint32_t)(w.len - start));
    }
    if (w.oom || w.len > 0xFFFFFFFFu) {
        fail(err, errlen, "out of memory writing metadata");
        goto bad;
    }
    patch32(&w, 8, (uint32_t)w.len);
    patch32(&w, 12, tilert_crc32(w.p + TILERT_META_HEADER_SIZE, w.len - TILERT_META_HEADER_SIZE));
    *out = w.p;
    *len = w.len;
    return true;
bad:
    free(w.p);
    return false;
}
