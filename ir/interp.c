/* interp.c: the reference interpreter (semantics: lang/SEMANTICS.md).
 *
 * Algorithm:
 *   1. interp_run binds the arguments to the body's block arguments.  Pointers
 *      are encoded as (buffer index << 48 | byte offset), the offset two's
 *      complement in 48 bits, so that every access can be checked against the
 *      buffer it was derived from.
 *   2. The programs run one after another in row-major program-id order
 *      (x outermost, z innermost).  Each runs the body block.
 *   3. run_block executes a block's ops in order through exec_hook[opcode], a
 *      table generated from ops.def (an op without a hook does not compile).
 *      A hook reads its operands' runtime values and writes its results'.
 *      Control-flow hooks run their regions recursively; a terminator's hook
 *      only records itself in in->term, and the region's owner reads its operands.
 *      Elementwise ops on numbers evaluate each lane with ir_scalar_eval
 *      (ir/scalar.c), which constant folding calls too.
 *   4. The first error (out-of-bounds or misaligned access, integer division by
 *      zero, failed assert, step limit, a broken protocol of the pipelining
 *      ops) is reported at the op's location and unwinds every hook (they
 *      return false).
 *
 * Runtime values: one RVal per IrVal, whose storage is allocated at the value's
 * first definition and reused (an SSA value has one type, hence one size).
 *   numbers   an IrScalar (scalar.h): integers canonical in .i, floats in .f
 *             exactly representable in the dtype
 *   pointers  the encoding above, in Elem.i
 *   views     base pointer, shape and strides (in elements)
 *   smem      a reference to the SMEM_ALLOC result holding the buffer: its
 *             elements (every stage) and the state of each stage's barrier
 *             (see "hooks: pipelining")
 *
 * Where lang/SEMANTICS.md is silent, the interpreter decides (and the GPU
 * backend must agree):
 *   - max/min, argmax/argmin, sort and topk order -0 below +0; sort and topk
 *     put NaN above everything (argmin: below, as SEMANTICS says).
 *   - float -> i1 is x != 0 (NaN gives 0); a bool byte in memory is true if nonzero.
 *   - an infinite value converted to fp8 saturates like any overflow (e5m2
 *     too), as the GPU's cvt.rn.satfinite does.
 *   - atomic_max/min on floats follow maximum/minimum (a NaN operand gives NaN);
 *     atomic_cas compares the stored bits.
 *   - pointer arithmetic wraps in the 48-bit offset; only an access is checked.
 */
#include "interp.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fpconv.h"
#include "scalar.h"

/* One element: an IrScalar (scalar.h: integers canonical in .i, floats exact
 * in their dtype in .f), or a pointer in .i. */
typedef IrScalar Elem;

/* The barrier of one stage of a shared-memory buffer, as the protocol checks
 * see it: loads - waited loads have not been waited for yet. */
typedef struct SmemStage {
    uint64_t loads;      /* ASYNC_LOADs into the stage so far */
    uint64_t waited;     /* loads the latest ASYNC_WAIT on the stage covered */
    bool written;        /* an SMEM_WRITE filled the stage after its latest load */
} SmemStage;

typedef struct RVal {
    Elem *e;             /* n elements; NULL until the value is first defined */
    int64_t n;
    uint64_t vptr;       /* TY_VIEW: base pointer */
    int64_t vshape[IR_MAXRANK], vstride[IR_MAXRANK];
    struct RVal *smem;   /* TY_SMEM: the SMEM_ALLOC result holding the buffer (that result: itself) */
    SmemStage *stage;    /* an SMEM_ALLOC result: one per stage, the elements of stage s at e + s * tile */
} RVal;

typedef struct Interp {
    IrFunc *f;
    InterpBuf *bufs;
    uint32_t nbufs;
    RVal *vals;          /* f->nvals entries */
    uint32_t pid[3], grid[3];
    FILE *print_out;
    uint64_t max_steps, steps;
    bool no_tma;         /* InterpOptions.no_tma */
    Diag *d;
    const IrOp *term;    /* the terminator that ended the innermost finished block, or NULL */
    bool in_grid;        /* evaluating the grid clause: there is no program id */
    bool in_requires;    /* (with in_grid) evaluating the requires clauses */
} Interp;

typedef bool (*ExecHook)(Interp *in, const IrOp *op);

/* ---- pointers ---------------------------------------------------------------- */

enum { PTR_OFF_BITS = 48 };
#define PTR_OFF_MASK ((1ull << PTR_OFF_BITS) - 1)

static uint64_t ptr_make(uint32_t buf, int64_t off) { return (uint64_t)buf << PTR_OFF_BITS | ((uint64_t)off & PTR_OFF_MASK); }
static uint32_t ptr_buf(uint64_t p) { return (uint32_t)(p >> PTR_OFF_BITS); }
static int64_t ptr_off(uint64_t p)
{
    uint64_t o = p & PTR_OFF_MASK;
    if (o >> (PTR_OFF_BITS - 1)) o |= ~PTR_OFF_MASK;
    return (int64_t)o;
}
static uint64_t ptr_add(uint64_t p, int64_t bytes) { return ptr_make(ptr_buf(p), (int64_t)((uint64_t)ptr_off(p) + (uint64_t)bytes)); }

/* ---- values ------------------------------------------------------------------ */

static IrType vty(Interp *in, IrVal v) { return in->f->vals[v].ty; }
static bool is_float(IrType t) { return !t.isptr && t.kind == TY_TILE && dt_is_float((DType)t.dt); }

static RVal *arg(Interp *in, const IrOp *op, uint32_t k)
{
    RVal *r = &in->vals[ir_opnd(in->f, op, k)];
    TL_ASSERT(r->e || r->smem || vty(in, ir_opnd(in->f, op, k)).kind == TY_VIEW, "interp");
    return r;
}

/* Storage of v for writing (allocated once per value). */
static Elem *out(Interp *in, IrVal v)
{
    RVal *r = &in->vals[v];
    if (!r->e) {
        r->n = ir_ty_numel(vty(in, v));
        r->e = tl_xcalloc((size_t)r->n, sizeof(Elem));
    }
    return r->e;
}

static void copy_val(Interp *in, IrVal dst, IrVal src)
{
    RVal *s = &in->vals[src];
    if (vty(in, src).kind == TY_SMEM) { /* the same buffer, not a copy of it */
        TL_ASSERT(s->smem, "interp");
        in->vals[dst].smem = s->smem;
        return;
    }
    if (vty(in, src).kind == TY_VIEW) {
        RVal *d = &in->vals[dst];
        d->vptr = s->vptr;
        memcpy(d->vshape, s->vshape, sizeof d->vshape);
        memcpy(d->vstride, s->vstride, sizeof d->vstride);
        return;
    }
    TL_ASSERT(s->e, "interp");
    Elem *d = out(in, dst);
    memcpy(d, s->e, (size_t)s->n * sizeof(Elem));
}

static int64_t scalar_int(Interp *in, const IrOp *op, uint32_t k) { return arg(in, op, k)->e[0].i; }

/* ---- errors ------------------------------------------------------------------ */

static bool fail(Interp *in, const IrOp *op, const char *fmt, ...) TL_PRINTF(3, 4);
static bool fail(Interp *in, const IrOp *op, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (in->in_grid) diag_error(in->d, op->loc, "%s (in the %s clause)", msg, in->in_requires ? "requires" : "grid");
    else diag_error(in->d, op->loc, "%s (program (%u, %u, %u))", msg, in->pid[0], in->pid[1], in->pid[2]);
    return false;
}

static const char *opname(const IrOp *op) { return ir_opinfo[op->opc].name; }

/* ---- element encodings --------------------------------------------------------- */

static uint64_t get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void put_le(unsigned char *p, int n, uint64_t v)
{
    for (int i = 0; i < n; i++, v >>= 8) p[i] = (unsigned char)v;
}

/* ---- memory -------------------------------------------------------------------- */

/* The host address of a `size`-byte access at p by lane `lane` of op, or NULL
 * after reporting why the access is invalid. */
static unsigned char *mem_at(Interp *in, const IrOp *op, uint64_t p, int size, int64_t lane)
{
    uint32_t b = ptr_buf(p);
    int64_t off = ptr_off(p);
    if (b >= in->nbufs) {
        fail(in, op, "%s through a pointer into no argument buffer (lane %lld)", opname(op), (long long)lane);
        return NULL;
    }
    const InterpBuf *buf = &in->bufs[b];
    const char *name = buf->name ? buf->name : "?";
    if (off < 0 || (uint64_t)off > buf->bytes || buf->bytes - (uint64_t)off < (uint64_t)size) {
        fail(in, op, "%s out of bounds: byte offset %lld (element %lld) of '%s', which holds %zu bytes (lane %lld)",
             opname(op), (long long)off, (long long)(off / size), name, buf->bytes, (long long)lane);
        return NULL;
    }
    /* alignment of the real address: a host buffer may itself be misaligned */
    if (((uintptr_t)buf->data + (uint64_t)off) % (uint64_t)size) {
        fail(in, op, "%s misaligned: byte offset %lld of '%s' is not aligned to the element size %d (lane %lld)",
             opname(op), (long long)off, name, size, (long long)lane);
        return NULL;
    }
    return (unsigned char *)buf->data + off;
}

static Elem mem_read(DType dt, const unsigned char *p) { return ir_scalar_from_bits(dt, get_le(p, dt_bytes(dt))); }
static void mem_write(DType dt, unsigned char *p, Elem v) { put_le(p, dt_bytes(dt), ir_scalar_bits(dt, v)); }
/* ---- scalar arithmetic ------------------------------------------------------------ */

/* The language's scalar arithmetic is ir/scalar.c's, shared with constant
 * folding; these name the uses the interpreter makes of it. */
static int fcmp(double a, double b, bool nan_high)
{
    return ir_scalar_order(DT_F64, (Elem){.f = a}, (Elem){.f = b}, nan_high);
}

static int icmp(DType dt, int64_t a, int64_t b) { return ir_scalar_order(dt, (Elem){.i = a}, (Elem){.i = b}, false); }

static double fmaxmin(double a, double b, bool want_max)
{
    return ir_scalar_maxmin(DT_F64, (Elem){.f = a}, (Elem){.f = b}, want_max).f;
}

static double fma_round(DType dt, double a, double b, double c)
{
    return ir_scalar_fma(dt, (Elem){.f = a}, (Elem){.f = b}, (Elem){.f = c}).f;
}

/* ---- shape helpers --------------------------------------------------------------- */

/* Splits dims around axis: outer * len * inner elements, the line along the axis
 * of (o, i) at (o * len + k) * inner + i. */
static void split_axis(IrType t, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = *inner = 1;
    for (int k = 0; k < axis; k++) *outer *= t.dims[k];
    *len = t.dims[axis];
    for (int k = axis + 1; k < t.rank; k++) *inner *= t.dims[k];
}

/* The lines of a cross-element op along its axis (attr i, in [0, rank): the
 * verifier's rule) over its first operand. */
static void axis_layout(Interp *in, const IrOp *op, int64_t *outer, int64_t *len, int64_t *inner)
{
    IrType t = vty(in, ir_opnd(in->f, op, 0));
    TL_ASSERT(op->attr.i >= 0 && op->attr.i < t.rank, "interp");
    split_axis(t, (int)op->attr.i, outer, len, inner);
}

/* ---- hooks: constants and shapes ----------------------------------------------------- */

static bool exec_CONST(Interp *in, const IrOp *op)
{
    IrType t = vty(in, op->res);
    Elem v = ir_scalar_of_attr((DType)t.dt, &op->attr);
    Elem *r = out(in, op->res);
    for (int64_t k = 0; k < in->vals[op->res].n; k++) r[k] = v;
    return true;
}

static bool exec_ARANGE(Interp *in, const IrOp *op)
{
    Elem *r = out(in, op->res);
    for (int64_t k = 0; k < in->vals[op->res].n; k++) r[k].i = k;
    return true;
}

static bool exec_SPLAT(Interp *in, const IrOp *op)
{
    Elem v = arg(in, op, 0)->e[0];
    Elem *r = out(in, op->res);
    for (int64_t k = 0; k < in->vals[op->res].n; k++) r[k] = v;
    return true;
}

static bool exec_BROADCAST(Interp *in, const IrOp *op)
{
    IrType rt = vty(in, op->res), xt = vty(in, ir_opnd(in->f, op, 0));
    RVal *x = arg(in, op, 0);
    Elem *r = out(in, op->res);
    /* operand dims, left-padded with 1s to the result's rank, and their strides */
    int64_t xstride[IR_MAXRANK];
    int pad = rt.rank - xt.rank;
    TL_ASSERT(pad >= 0, "interp");
    int64_t s = 1;
    for (int k = rt.rank - 1; k >= 0; k--) {
        int32_t d = k < pad ? 1 : xt.dims[k - pad];
        xstride[k] = d == 1 ? 0 : s;
        s *= d;
    }
    int64_t idx[IR_MAXRANK] = {0};
    int64_t n = in->vals[op->res].n;
    for (int64_t k = 0; k < n; k++) {
        int64_t src = 0;
        for (int a = 0; a < rt.rank; a++) src += idx[a] * xstride[a];
        r[k] = x->e[src];
        for (int a = rt.rank - 1; a >= 0 && ++idx[a] == rt.dims[a]; a--) idx[a] = 0;
    }
    return true;
}

static bool exec_EXPAND_DIMS(Interp *in, const IrOp *op)
{
    copy_val(in, op->res, ir_opnd(in->f, op, 0));
    return true;
}

static bool exec_RESHAPE(Interp *in, const IrOp *op)
{
    copy_val(in, op->res, ir_opnd(in->f, op, 0));
    return true;
}

/* Layouts do not exist for the interpreter: the same tile. */
static bool exec_CONVERT_LAYOUT(Interp *in, const IrOp *op)
{
    copy_val(in, op->res, ir_opnd(in->f, op, 0));
    return true;
}

static bool exec_TRANS(Interp *in, const IrOp *op)
{
    IrType rt = vty(in, op->res), xt = vty(in, ir_opnd(in->f, op, 0));
    RVal *x = arg(in, op, 0);
    Elem *r = out(in, op->res);
    int perm[IR_MAXRANK];
    for (int k = 0; k < rt.rank; k++)
        perm[k] = op->attr.nshape ? op->attr.shape[k] : rt.rank - 1 - k; /* no perm: reverse */
    int64_t xstride[IR_MAXRANK], s = 1;
    for (int k = xt.rank - 1; k >= 0; k--) {
        xstride[k] = s;
        s *= xt.dims[k];
    }
    int64_t idx[IR_MAXRANK] = {0};
    for (int64_t k = 0; k < in->vals[op->res].n; k++) {
        int64_t src = 0;
        for (int a = 0; a < rt.rank; a++) src += idx[a] * xstride[perm[a]]; /* result dim a = operand dim perm[a] */
        r[k] = x->e[src];
        for (int a = rt.rank - 1; a >= 0 && ++idx[a] == rt.dims[a]; a--) idx[a] = 0;
    }
    return true;
}

/* ---- hooks: elementwise ------------------------------------------------------------- */

/* Elementwise ops on numbers: each lane through ir_scalar_eval, the function
 * constant folding calls too (operand dtype: operand 0's). */
static bool elementwise(Interp *in, const IrOp *op)
{
    IrOpcode opc = (IrOpcode)op->opc;
    IrType t = vty(in, ir_opnd(in->f, op, 0)), rt = vty(in, op->res);
    TL_ASSERT(op->nopnd >= 1 && op->nopnd <= 3 && !t.isptr && !rt.isptr, "interp");
    RVal *x[3];
    for (uint32_t j = 0; j < op->nopnd; j++) {
        x[j] = arg(in, op, j);
        TL_ASSERT(x[j]->n == x[0]->n, "interp");
    }
    Elem *r = out(in, op->res);
    for (int64_t k = 0; k < x[0]->n; k++) {
        Elem v[3];
        for (uint32_t j = 0; j < op->nopnd; j++) v[j] = x[j]->e[k];
        switch (ir_scalar_eval(opc, op->attr.i, (DType)t.dt, (DType)rt.dt, v, &r[k])) {
        case IR_SCALAR_OK: break;
        case IR_SCALAR_DIV_ZERO:
            return fail(in, op, "integer %s by zero (lane %lld)", opc == IR_DIV ? "division" : "remainder",
                        (long long)k);
        default: tl_fatal("interp", "%s from %s to %s", opname(op), dt_name[t.dt], dt_name[rt.dt]);
        }
    }
    return true;
}

static bool binary(Interp *in, const IrOp *op) { return elementwise(in, op); }
static bool unary(Interp *in, const IrOp *op) { return elementwise(in, op); }

/* Pointers compare by buffer, then by offset; numbers as ir_scalar_cmp says. */
static bool exec_CMP(Interp *in, const IrOp *op)
{
    if (!vty(in, ir_opnd(in->f, op, 0)).isptr) return elementwise(in, op);
    RVal *a = arg(in, op, 0), *b = arg(in, op, 1);
    TL_ASSERT(a->n == b->n, "interp");
    Elem *r = out(in, op->res);
    for (int64_t k = 0; k < a->n; k++) {
        uint64_t pa = (uint64_t)a->e[k].i, pb = (uint64_t)b->e[k].i;
        int c = ptr_buf(pa) != ptr_buf(pb) ? (ptr_buf(pa) < ptr_buf(pb) ? -1 : 1)
                                            : (ptr_off(pa) > ptr_off(pb)) - (ptr_off(pa) < ptr_off(pb));
        r[k].i = ir_scalar_cmp((IrCmp)op->attr.i, DT_I32, (Elem){.i = c}, (Elem){.i = 0});
    }
    return true;
}

static bool exec_ADD(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_SUB(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_MUL(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_DIV(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_REM(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_AND(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_OR(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_XOR(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_SHL(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_SHR(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_MAX(Interp *in, const IrOp *op) { return binary(in, op); }
static bool exec_MIN(Interp *in, const IrOp *op) { return binary(in, op); }

static bool exec_ADDPTR(Interp *in, const IrOp *op)
{
    IrType pt = vty(in, ir_opnd(in->f, op, 0));
    RVal *p = arg(in, op, 0), *o = arg(in, op, 1);
    TL_ASSERT(p->n == o->n, "interp");
    int64_t size = dt_bytes((DType)pt.dt);
    Elem *r = out(in, op->res);
    for (int64_t k = 0; k < p->n; k++)
        r[k].i = (int64_t)ptr_add((uint64_t)p->e[k].i, (int64_t)((uint64_t)o->e[k].i * (uint64_t)size));
    return true;
}

static bool exec_NEG(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_NOT(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_EXP(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_EXP2(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_LOG(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_LOG2(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_SQRT(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_RSQRT(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_ABS(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_SIGMOID(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_TANH(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_ERF(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_FLOOR(Interp *in, const IrOp *op) { return unary(in, op); }
static bool exec_CEIL(Interp *in, const IrOp *op) { return unary(in, op); }

static bool exec_CAST(Interp *in, const IrOp *op) { return elementwise(in, op); }
static bool exec_BITCAST(Interp *in, const IrOp *op) { return elementwise(in, op); }
static bool exec_FMA(Interp *in, const IrOp *op) { return elementwise(in, op); }

static bool exec_SELECT(Interp *in, const IrOp *op)
{
    RVal *c = arg(in, op, 0), *a = arg(in, op, 1), *b = arg(in, op, 2);
    Elem *r = out(in, op->res);
    for (int64_t k = 0; k < a->n; k++) r[k] = c->e[k].i ? a->e[k] : b->e[k];
    return true;
}

/* ---- hooks: programs and views ----------------------------------------------------- */

static bool exec_PROGRAM_ID(Interp *in, const IrOp *op)
{
    TL_ASSERT(op->attr.i >= 0 && op->attr.i < 3, "interp");
    out(in, op->res)[0].i = in->pid[op->attr.i];
    return true;
}

static bool exec_NUM_PROGRAMS(Interp *in, const IrOp *op)
{
    TL_ASSERT(op->attr.i >= 0 && op->attr.i < 3, "interp");
    out(in, op->res)[0].i = in->grid[op->attr.i];
    return true;
}

uint32_t interp_num_sms(const IrFunc *f)
{
    const IrTarget *t = f->mod && f->mod->target ? f->mod->target : ir_target_default();
    return t->num_sms;
}

static bool exec_NUM_SMS(Interp *in, const IrOp *op)
{
    out(in, op->res)[0].i = interp_num_sms(in->f);
    return true;
}

static bool exec_VIEW_PTR(Interp *in, const IrOp *op)
{
    out(in, op->res)[0].i = (int64_t)arg(in, op, 0)->vptr;
    return true;
}

static bool exec_VIEW_SHAPE(Interp *in, const IrOp *op)
{
    TL_ASSERT(op->attr.i >= 0 && op->attr.i < IR_MAXRANK, "interp");
    out(in, op->res)[0].i = arg(in, op, 0)->vshape[op->attr.i];
    return true;
}

static bool exec_VIEW_STRIDE(Interp *in, const IrOp *op)
{
    TL_ASSERT(op->attr.i >= 0 && op->attr.i < IR_MAXRANK, "interp");
    out(in, op->res)[0].i = arg(in, op, 0)->vstride[op->attr.i];
    return true;
}

/* ---- hooks: memory ------------------------------------------------------------------ */

/* Lane k of an optional mask operand (absent: every lane is on). */
static bool lane_on(Interp *in, const IrOp *op, uint32_t mask_opnd, int64_t k)
{
    if (mask_opnd >= op->nopnd) return true;
    return arg(in, op, mask_opnd)->e[k].i != 0;
}

static bool exec_LOAD(Interp *in, const IrOp *op)
{
    IrType rt = vty(in, op->res);
    DType dt = (DType)rt.dt;
    RVal *p = arg(in, op, 0);
    RVal *other = op->nopnd > 2 ? arg(in, op, 2) : NULL;
    Elem *r = out(in, op->res);
    for (int64_t k = 0; k < p->n; k++) {
        if (!lane_on(in, op, 1, k)) {
            /* masked off: memory is never touched */
            if (other) r[k] = other->e[k];
            else r[k] = (Elem){0};
            continue;
        }
        unsigned char *a = mem_at(in, op, (uint64_t)p->e[k].i, dt_bytes(dt), k);
        if (!a) return false;
        r[k] = mem_read(dt, a);
    }
    return true;
}

static bool exec_STORE(Interp *in, const IrOp *op)
{
    DType dt = (DType)vty(in, ir_opnd(in->f, op, 0)).dt;
    RVal *p = arg(in, op, 0), *v = arg(in, op, 1);
    for (int64_t k = 0; k < p->n; k++) {
        if (!lane_on(in, op, 2, k)) continue;
        unsigned char *a = mem_at(in, op, (uint64_t)p->e[k].i, dt_bytes(dt), k);
        if (!a) return false;
        mem_write(dt, a, v->e[k]);
    }
    return true;
}

/* Visits the block of view `v` at offsets `off` with shape `t.dims` in row-major
 * order: each element's lane k and, when it lies inside [0, shape), its pointer. */
typedef struct BlockIter {
    const RVal *v;
    IrType t;
    int64_t off[IR_MAXRANK], idx[IR_MAXRANK];
} BlockIter;

static bool block_elem(BlockIter *it, uint64_t *ptr, int64_t size)
{
    uint64_t elems = 0; /* wraps like pointer arithmetic: only an access is checked */
    for (int a = 0; a < it->t.rank; a++) {
        int64_t c;
        if (__builtin_add_overflow(it->off[a], it->idx[a], &c) || c < 0 || c >= it->v->vshape[a]) return false;
        elems += (uint64_t)c * (uint64_t)it->v->vstride[a];
    }
    *ptr = ptr_add(it->v->vptr, (int64_t)(elems * (uint64_t)size));
    return true;
}

static void block_next(BlockIter *it)
{
    for (int a = it->t.rank - 1; a >= 0 && ++it->idx[a] == it->t.dims[a]; a--) it->idx[a] = 0;
}

/* The view is operand 0 of op; the offsets are operands first, first+1, ... */
static void block_begin(Interp *in, const IrOp *op, uint32_t first, BlockIter *it, IrType block_ty)
{
    IrType vt = vty(in, ir_opnd(in->f, op, 0));
    TL_ASSERT(block_ty.rank == vt.rank, "interp");
    memset(it, 0, sizeof *it);
    it->v = arg(in, op, 0);
    it->t = block_ty;
    for (int a = 0; a < vt.rank; a++) {
        IrType ot = vty(in, ir_opnd(in->f, op, first + (uint32_t)a));
        int64_t o = scalar_int(in, op, first + (uint32_t)a);
        /* an unsigned offset beyond INT64_MAX is outside every view */
        it->off[a] = dt_is_unsigned((DType)ot.dt) && o < 0 ? INT64_MAX : o;
    }
}

/* Reads the block of type t of view operand 0 at the offsets in operands
 * first.. into r, row-major; an element outside the view is `other` (a scalar
 * or a block; NULL: 0).  BLOCK_LOAD and ASYNC_LOAD share it: the TMA copy of
 * an async load reads exactly what a block load without `other` would. */
static bool block_read(Interp *in, const IrOp *op, uint32_t first, IrType t, const RVal *other, Elem *r)
{
    DType dt = (DType)t.dt;
    BlockIter it;
    block_begin(in, op, first, &it, t);
    int64_t n = ir_ty_numel(t);
    for (int64_t k = 0; k < n; k++, block_next(&it)) {
        uint64_t p;
        if (!block_elem(&it, &p, dt_bytes(dt))) {
            r[k] = other ? other->e[other->n == 1 ? 0 : k] : (Elem){0};
            continue;
        }
        unsigned char *a = mem_at(in, op, p, dt_bytes(dt), k);
        if (!a) return false;
        r[k] = mem_read(dt, a);
    }
    return true;
}

static bool exec_BLOCK_LOAD(Interp *in, const IrOp *op)
{
    uint32_t rank = vty(in, ir_opnd(in->f, op, 0)).rank;
    RVal *other = op->nopnd > 1 + rank ? arg(in, op, 1 + rank) : NULL;
    return block_read(in, op, 1, vty(in, op->res), other, out(in, op->res));
}

static bool exec_BLOCK_STORE(Interp *in, const IrOp *op)
{
    IrType vt = vty(in, ir_opnd(in->f, op, 0));
    DType dt = (DType)vt.dt;
    IrVal value = ir_opnd(in->f, op, 1 + vt.rank);
    RVal *v = &in->vals[value];
    BlockIter it;
    block_begin(in, op, 1, &it, vty(in, value));
    for (int64_t k = 0; k < v->n; k++, block_next(&it)) {
        uint64_t p;
        if (!block_elem(&it, &p, dt_bytes(dt))) continue; /* clipped to the view */
        unsigned char *a = mem_at(in, op, p, dt_bytes(dt), k);
        if (!a) return false;
        mem_write(dt, a, v->e[k]);
    }
    return true;
}

/* Atomic read-modify-write, lanes in row-major order; masked-off lanes return 0. */
static bool atomic(Interp *in, const IrOp *op)
{
    IrOpcode opc = (IrOpcode)op->opc;
    DType dt = (DType)vty(in, op->res).dt;
    bool cas = opc == IR_ATOMIC_CAS;
    uint32_t nval = cas ? 2 : 1;
    RVal *p = arg(in, op, 0), *v = arg(in, op, 1), *desired = cas ? arg(in, op, 2) : NULL;
    Elem *r = out(in, op->res);
    for (int64_t k = 0; k < p->n; k++) {
        if (!lane_on(in, op, 1 + nval, k)) {
            r[k] = (Elem){0};
            continue;
        }
        unsigned char *a = mem_at(in, op, (uint64_t)p->e[k].i, dt_bytes(dt), k);
        if (!a) return false;
        Elem old = mem_read(dt, a), nw = old;
        if (cas) {
            if (ir_scalar_same(dt, old, v->e[k])) nw = desired->e[k];
        } else if (dt_is_float(dt)) {
            nw.f = opc == IR_ATOMIC_ADD ? fp_round(dt, old.f + v->e[k].f)
                                        : fmaxmin(old.f, v->e[k].f, opc == IR_ATOMIC_MAX);
        } else {
            IrOpcode bop = opc == IR_ATOMIC_ADD ? IR_ADD : opc == IR_ATOMIC_MAX ? IR_MAX : IR_MIN;
            ir_scalar_binary(bop, dt, old, v->e[k], &nw);
        }
        mem_write(dt, a, nw);
        r[k] = old;
    }
    return true;
}

static bool exec_ATOMIC_ADD(Interp *in, const IrOp *op) { return atomic(in, op); }
static bool exec_ATOMIC_MAX(Interp *in, const IrOp *op) { return atomic(in, op); }
static bool exec_ATOMIC_MIN(Interp *in, const IrOp *op) { return atomic(in, op); }
static bool exec_ATOMIC_CAS(Interp *in, const IrOp *op) { return atomic(in, op); }

/* ---- hooks: dot, reductions, scans, sorting ------------------------------------------- */

/* acc + a @ b: each product of the exact operand values is added to the f32
 * accumulator with one rounding, in index order (k ascending). */
static bool exec_DOT(Interp *in, const IrOp *op)
{
    IrType at = vty(in, ir_opnd(in->f, op, 0)), bt = vty(in, ir_opnd(in->f, op, 1)), rt = vty(in, op->res);
    TL_ASSERT(at.rank == 2 && bt.rank == 2 && rt.rank == 2 && at.dims[1] == bt.dims[0], "interp");
    TL_ASSERT(is_float(at) && is_float(bt) && dt_bits[at.dt] <= 32 && dt_bits[bt.dt] <= 32 && is_float(rt), "interp");
    RVal *a = arg(in, op, 0), *b = arg(in, op, 1), *c = arg(in, op, 2);
    Elem *r = out(in, op->res);
    int64_t M = at.dims[0], K = at.dims[1], N = bt.dims[1];
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = c->e[m * N + n].f;
            for (int64_t k = 0; k < K; k++) s = fma_round((DType)rt.dt, a->e[m * K + k].f, b->e[k * N + n].f, s);
            r[m * N + n].f = s;
        }
    return true;
}

/* The accumulation type of sum and cumsum for result type rt: f32 below f64. */
static DType acc_type(IrType rt) { return rt.dt == DT_F64 ? DT_F64 : DT_F32; }

static bool reduce(Interp *in, const IrOp *op)
{
    IrOpcode opc = (IrOpcode)op->opc;
    IrType xt = vty(in, ir_opnd(in->f, op, 0)), rt = vty(in, op->res);
    RVal *x = arg(in, op, 0);
    Elem *r = out(in, op->res);
    int64_t outer, len, inner;
    axis_layout(in, op, &outer, &len, &inner);
    bool fl = is_float(xt);
    DType dt = (DType)xt.dt;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const Elem *line = &x->e[o * len * inner + i];
            Elem acc = line[0];
            int64_t best = 0;
            for (int64_t k = 1; k < len; k++) {
                Elem v = line[k * inner];
                switch (opc) {
                case IR_REDUCE_SUM:
                    if (fl) acc.f = fp_round(acc_type(rt), acc.f + v.f);
                    else acc.i = (int64_t)((uint64_t)acc.i + (uint64_t)v.i);
                    break;
                case IR_REDUCE_MAX:
                case IR_REDUCE_MIN:
                    if (fl) acc.f = fmaxmin(acc.f, v.f, opc == IR_REDUCE_MAX);
                    else if (opc == IR_REDUCE_MAX ? icmp(dt, v.i, acc.i) > 0 : icmp(dt, v.i, acc.i) < 0) acc.i = v.i;
                    break;
                case IR_ARGMAX:
                case IR_ARGMIN: {
                    /* strictly better only: ties keep the lowest index */
                    int c = fl ? fcmp(v.f, acc.f, opc == IR_ARGMAX) : icmp(dt, v.i, acc.i);
                    if (opc == IR_ARGMAX ? c > 0 : c < 0) {
                        acc = v;
                        best = k;
                    }
                    break;
                }
                default: tl_fatal("interp", "bad reduction %s", opname(op));
                }
            }
            Elem res;
            if (opc == IR_ARGMAX || opc == IR_ARGMIN) res.i = best;
            else if (opc == IR_REDUCE_SUM && fl) res.f = fp_round((DType)rt.dt, acc.f);
            else if (opc == IR_REDUCE_SUM && is_float(rt)) res.f = fp_from_int((DType)rt.dt, acc.i, dt_is_unsigned(dt));
            else if (is_float(rt)) res.f = acc.f;
            else res.i = int_wrap((DType)rt.dt, acc.i);
            r[o * inner + i] = res;
        }
    return true;
}

static bool exec_REDUCE_SUM(Interp *in, const IrOp *op) { return reduce(in, op); }
static bool exec_REDUCE_MAX(Interp *in, const IrOp *op) { return reduce(in, op); }
static bool exec_REDUCE_MIN(Interp *in, const IrOp *op) { return reduce(in, op); }
static bool exec_ARGMAX(Interp *in, const IrOp *op) { return reduce(in, op); }
static bool exec_ARGMIN(Interp *in, const IrOp *op) { return reduce(in, op); }

static bool exec_CUMSUM(Interp *in, const IrOp *op)
{
    IrType xt = vty(in, ir_opnd(in->f, op, 0)), rt = vty(in, op->res);
    RVal *x = arg(in, op, 0);
    Elem *r = out(in, op->res);
    int64_t outer, len, inner;
    axis_layout(in, op, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            Elem acc = {0};
            for (int64_t k = 0; k < len; k++) {
                int64_t at = (o * len + k) * inner + i;
                if (is_float(xt)) {
                    acc.f = k ? fp_round(acc_type(rt), acc.f + x->e[at].f) : x->e[at].f;
                    r[at].f = fp_round((DType)rt.dt, acc.f);
                } else {
                    acc.i = (int64_t)((uint64_t)acc.i + (uint64_t)x->e[at].i);
                    r[at].i = int_wrap((DType)rt.dt, acc.i);
                }
            }
        }
    return true;
}

/* Stable merge sort of idx[0..n) by key (keys indexed by idx), ascending, or
 * descending when desc; equal keys keep their order.  tmp holds n entries. */
typedef struct SortKeys {
    const Elem *key;
    bool fl, desc;
    DType dt;
} SortKeys;

static bool sorts_before(const SortKeys *s, int64_t a, int64_t b)
{
    int c = s->fl ? fcmp(s->key[a].f, s->key[b].f, true) : icmp(s->dt, s->key[a].i, s->key[b].i);
    return s->desc ? c > 0 : c < 0;
}

static void merge_sort(const SortKeys *s, int64_t *idx, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = TL_MIN(lo + w, n), hi = TL_MIN(lo + 2 * w, n);
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = sorts_before(s, idx[j], idx[i]) ? idx[j++] : idx[i++];
            while (i < mid) tmp[o++] = idx[i++];
            while (j < hi) tmp[o++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

/* Sorts every line of operand 0 along the op's axis; writes the first `keep`
 * of each line (values to result 0, i32 indices to result 1 if any). */
static bool sort_lines(Interp *in, const IrOp *op, bool desc, int64_t keep)
{
    IrType xt = vty(in, ir_opnd(in->f, op, 0));
    RVal *x = arg(in, op, 0);
    int64_t outer, len, inner;
    axis_layout(in, op, &outer, &len, &inner);
    TL_ASSERT(keep <= len, "interp");
    Elem *vals = out(in, op->res);
    Elem *idxs = op->nres > 1 ? out(in, op->res + 1) : NULL;
    Elem *line = tl_xmalloc((size_t)len * sizeof *line);
    int64_t *idx = tl_xmalloc((size_t)len * sizeof *idx), *tmp = tl_xmalloc((size_t)len * sizeof *tmp);
    SortKeys s = {line, is_float(xt), desc, (DType)xt.dt};
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t k = 0; k < len; k++) {
                line[k] = x->e[(o * len + k) * inner + i];
                idx[k] = k;
            }
            merge_sort(&s, idx, tmp, len);
            for (int64_t k = 0; k < keep; k++) {
                int64_t at = (o * keep + k) * inner + i;
                vals[at] = line[idx[k]];
                if (idxs) idxs[at].i = idx[k];
            }
        }
    free(line);
    free(idx);
    free(tmp);
    return true;
}

static bool exec_SORT(Interp *in, const IrOp *op)
{
    IrType xt = vty(in, ir_opnd(in->f, op, 0));
    TL_ASSERT(op->attr.i >= 0 && op->attr.i < xt.rank, "interp");
    return sort_lines(in, op, op->attr.j != 0, xt.dims[op->attr.i]);
}

static bool exec_TOPK(Interp *in, const IrOp *op) { return sort_lines(in, op, true, op->attr.j); }

/* ---- hooks: debugging ------------------------------------------------------------------ */

static void print_elem(Interp *in, StrBuf *b, IrType t, Elem v)
{
    DType dt = (DType)t.dt;
    if (t.isptr) {
        uint64_t p = (uint64_t)v.i;
        uint32_t buf = ptr_buf(p);
        const char *name = buf < in->nbufs && in->bufs[buf].name ? in->bufs[buf].name : "?";
        sb_printf(b, " %s+%lld", name, (long long)ptr_off(p));
    } else if (dt_is_float(dt)) {
        int digits = dt == DT_F64 ? 17 : dt == DT_F32 ? 9 : dt == DT_F16 ? 5 : dt == DT_BF16 ? 4 : 3;
        sb_printf(b, " %.*g", digits, v.f);
    } else if (dt_is_signed(dt)) {
        sb_printf(b, " %lld", (long long)v.i);
    } else {
        sb_printf(b, " %llu", (unsigned long long)(uint64_t)v.i);
    }
}

static bool exec_PRINT(Interp *in, const IrOp *op)
{
    StrBuf b = {0};
    sb_printf(&b, "pid (%u, %u, %u) %s:", in->pid[0], in->pid[1], in->pid[2], in->f->mod->strs[op->attr.str]);
    for (uint32_t k = 0; k < op->nopnd; k++) {
        IrType t = vty(in, ir_opnd(in->f, op, k));
        RVal *v = arg(in, op, k);
        if (t.kind == TY_VIEW || t.kind == TY_SMEM) {
            sb_puts(&b, t.kind == TY_VIEW ? " <view>" : " <smem>");
            continue;
        }
        for (int64_t e = 0; e < v->n; e++) print_elem(in, &b, t, v->e[e]);
    }
    sb_putc(&b, '\n');
    fputs(b.s, in->print_out);
    sb_free(&b);
    return true;
}

static bool exec_ASSERT(Interp *in, const IrOp *op)
{
    RVal *c = arg(in, op, 0);
    for (int64_t k = 0; k < c->n; k++)
        if (!c->e[k].i) {
            const char *msg = in->f->mod->strs[op->attr.str];
            if (c->n == 1) return fail(in, op, "assertion failed: %s", msg);
            return fail(in, op, "assertion failed: %s (lane %lld)", msg, (long long)k);
        }
    return true;
}

/* ---- control flow --------------------------------------------------------------------- */

/* Runs block b; afterwards in->term is its terminator (NULL if it has none). */
static bool run_block(Interp *in, IrBlk b);

/* Copies the operands of terminator `term` (from operand `first` on) to n values:
 * the block arguments dst[0..n) or, when dst is NULL, the op results res, res+1, ... */
static void take_operands(Interp *in, const IrOp *term, uint32_t first, const IrVal *dst, IrVal res, uint32_t n)
{
    uint32_t have = term ? term->nopnd - first : 0;
    TL_ASSERT(have == n, "interp");
    for (uint32_t k = 0; k < n; k++) copy_val(in, dst ? dst[k] : res + k, ir_opnd(in->f, term, first + k));
}

static bool exec_FOR(Interp *in, const IrOp *op)
{
    IrFunc *f = in->f;
    IrBlock *body = ir_blk(f, op->region[0]);
    uint32_t ncarried = ir_for_ncarried(op);
    TL_ASSERT(body->nargs == ncarried + 1 && op->nres == ncarried, "interp");
    /* the results carry the state from one iteration to the next */
    for (uint32_t k = 0; k < ncarried; k++) copy_val(in, op->res + k, ir_for_init(f, op, k));
    DType dt = (DType)vty(in, body->args[0]).dt;
    int64_t iv = scalar_int(in, op, 0), upper = scalar_int(in, op, 1), step = scalar_int(in, op, 2);
    if (step == 0) return fail(in, op, "for loop with step 0");
    bool up = dt_is_unsigned(dt) || step > 0;
    for (;;) {
        int c = icmp(dt, iv, upper);
        if (up ? c >= 0 : c <= 0) break;
        out(in, body->args[0])[0].i = iv;
        for (uint32_t k = 0; k < ncarried; k++) copy_val(in, body->args[1 + k], op->res + k);
        if (!run_block(in, op->region[0])) return false;
        take_operands(in, in->term, 0, NULL, op->res, ncarried);
        /* the next value; one that leaves dt's range has passed `upper` */
        int64_t next;
        if (dt_is_unsigned(dt)) {
            uint64_t un = (uint64_t)iv + (uint64_t)step;
            if (un < (uint64_t)iv || int_wrap(dt, (int64_t)un) != (int64_t)un) break;
            next = (int64_t)un;
        } else {
            if (__builtin_add_overflow(iv, step, &next) || int_wrap(dt, next) != next) break;
        }
        iv = next;
    }
    return true;
}

static bool exec_IF(Interp *in, const IrOp *op)
{
    IrBlk region = scalar_int(in, op, 0) ? op->region[0] : op->region[1];
    if (!run_block(in, region)) return false;
    take_operands(in, in->term, 0, NULL, op->res, op->nres);
    return true;
}

static bool exec_WHILE(Interp *in, const IrOp *op)
{
    IrFunc *f = in->f;
    uint32_t n = op->nopnd, nres = op->nres;
    for (uint32_t k = 0; k < n; k++) copy_val(in, ir_blk(f, op->region[0])->args[k], ir_opnd(f, op, k));
    for (;;) {
        if (!run_block(in, op->region[0])) return false;
        const IrOp *cond = in->term;
        TL_ASSERT(cond && cond->opc == IR_CONDITION, "interp");
        IrVal c = ir_opnd(f, cond, 0);
        if (!in->vals[c].e[0].i) {
            take_operands(in, cond, 1, NULL, op->res, nres);
            return true;
        }
        take_operands(in, cond, 1, ir_blk(f, op->region[1])->args, IR_NONE, ir_blk(f, op->region[1])->nargs);
        if (!run_block(in, op->region[1])) return false;
        take_operands(in, in->term, 0, ir_blk(f, op->region[0])->args, IR_NONE, n);
    }
}

static bool exec_YIELD(Interp *in, const IrOp *op)
{
    in->term = op;
    return true;
}

static bool exec_CONDITION(Interp *in, const IrOp *op)
{
    in->term = op;
    return true;
}

static bool exec_RETURN(Interp *in, const IrOp *op)
{
    in->term = op;
    return true;
}

/* ---- hooks: pipelining ------------------------------------------------------------------ */

/* The interpreter runs one program at a time and completes every copy and dot
 * at once, so a pipelined loop computes what the loop it came from did, as
 * long as its stages are used in the right order.  That order is what the
 * GPU's asynchronous copies need, and it is checked here, on stage s of a
 * buffer (loads(s): the ASYNC_LOADs into s so far):
 *   - ASYNC_WAIT(buf, s, phase) needs a load into s since the last wait on s,
 *     and phase == (loads(s) - 1) & 1: the parity of the barrier phase the
 *     latest load completes (mbarrier.try_wait.parity);
 *   - SMEM_READ(buf, s) needs the latest load into s to have been waited for,
 *     or an SMEM_WRITE into s after it;
 *   - SMEM_WRITE(buf, s, x) needs no load into s in flight (it fills the stage
 *     at once and moves no barrier phase).
 * Loads still unwaited when a program ends (issued ahead past the last
 * iteration) are not an error. */

/* The buffer operand k of op. */
static RVal *smem_arg(Interp *in, const IrOp *op, uint32_t k)
{
    RVal *r = in->vals[ir_opnd(in->f, op, k)].smem;
    TL_ASSERT(r && r->stage, "interp");
    return r;
}

/* The stage operand k of op into *s; false after reporting one outside the
 * stages of buffer operand `buf`. */
static bool stage_arg(Interp *in, const IrOp *op, uint32_t buf, uint32_t k, int64_t *s)
{
    int32_t stages = vty(in, ir_opnd(in->f, op, buf)).dims[0];
    IrType st = vty(in, ir_opnd(in->f, op, k));
    *s = scalar_int(in, op, k);
    if (dt_is_unsigned((DType)st.dt) && *s < 0) *s = INT64_MAX; /* beyond INT64_MAX: outside every buffer */
    if (*s < 0 || *s >= stages)
        return fail(in, op, "%s on stage %lld of a buffer with %d stages", opname(op), (long long)*s, stages);
    return true;
}

static bool exec_SMEM_ALLOC(Interp *in, const IrOp *op)
{
    IrType t = vty(in, op->res);
    RVal *r = &in->vals[op->res];
    out(in, op->res); /* every stage: ir_ty_numel counts them */
    if (!r->stage) r->stage = tl_xcalloc((size_t)t.dims[0], sizeof *r->stage);
    else memset(r->stage, 0, (size_t)t.dims[0] * sizeof *r->stage);
    r->smem = r;
    return true;
}

static bool exec_ASYNC_LOAD(Interp *in, const IrOp *op)
{
    RVal *buf = smem_arg(in, op, 1);
    int64_t s;
    if (!stage_arg(in, op, 1, 2, &s)) return false;
    IrType tile = ir_ty_smem_tile(vty(in, ir_opnd(in->f, op, 1)));
    /* a tile of lower rank than the view is a box of it, extents 1 elsewhere (ops.def) */
    IrType block = ir_async_block(tile, vty(in, ir_opnd(in->f, op, 0)).rank, op->attr.i);
    if (!block_read(in, op, 3, block, NULL, buf->e + s * ir_ty_numel(tile))) return false;
    buf->stage[s].loads++;
    buf->stage[s].written = false;
    return true;
}

static bool exec_ASYNC_WAIT(Interp *in, const IrOp *op)
{
    RVal *buf = smem_arg(in, op, 0);
    int64_t s;
    if (!stage_arg(in, op, 0, 1, &s)) return false;
    SmemStage *st = &buf->stage[s];
    if (st->loads == st->waited)
        return fail(in, op, st->loads ? "async_wait on stage %lld, which has had no async_load since its last wait"
                                      : "async_wait on stage %lld, which no async_load has filled",
                    (long long)s);
    int64_t phase = scalar_int(in, op, 2), want = (int64_t)((st->loads - 1) & 1);
    if (phase != want)
        return fail(in, op,
                    "async_wait on stage %lld with phase %lld, expected %lld: the stage has had %llu load%s, and "
                    "load n completes phase (n - 1) & 1",
                    (long long)s, (long long)phase, (long long)want, (unsigned long long)st->loads,
                    st->loads == 1 ? "" : "s");
    st->waited = st->loads;
    return true;
}

static bool exec_SMEM_READ(Interp *in, const IrOp *op)
{
    RVal *buf = smem_arg(in, op, 0);
    int64_t s;
    if (!stage_arg(in, op, 0, 1, &s)) return false;
    const SmemStage *st = &buf->stage[s];
    if (st->loads == 0 && !st->written)
        return fail(in, op, "smem_read of stage %lld, which no async_load or smem_write has filled", (long long)s);
    if (st->waited != st->loads)
        return fail(in, op, "smem_read of stage %lld before an async_wait for its latest load", (long long)s);
    Elem *r = out(in, op->res);
    int64_t n = in->vals[op->res].n;
    memcpy(r, buf->e + s * n, (size_t)n * sizeof(Elem));
    return true;
}

static bool exec_SMEM_WRITE(Interp *in, const IrOp *op)
{
    RVal *buf = smem_arg(in, op, 0);
    int64_t s;
    if (!stage_arg(in, op, 0, 1, &s)) return false;
    SmemStage *st = &buf->stage[s];
    if (st->waited != st->loads)
        return fail(in, op, "smem_write on stage %lld, which has an async_load in flight", (long long)s);
    const RVal *x = &in->vals[ir_opnd(in->f, op, 2)];
    memcpy(buf->e + s * x->n, x->e, (size_t)x->n * sizeof(Elem));
    st->written = true;
    return true;
}

/* Programs run one at a time: there is no other thread to wait for. */
static bool exec_BARRIER(Interp *in, const IrOp *op)
{
    (void)in;
    (void)op;
    return true;
}

/* DOT completes at once here, pending or not: the value is already final. */
static bool exec_DOT_WAIT(Interp *in, const IrOp *op)
{
    copy_val(in, op->res, ir_opnd(in->f, op, 0));
    return true;
}

static bool exec_TMA_READY(Interp *in, const IrOp *op)
{
    out(in, op->res)[0].i = !in->no_tma;
    return true;
}

/* Warp-specialized IR (passes/warp_specialize.c) splits a program into threads
 * that run at the same time and wait for each other (the producer fills a stage
 * while the consumers read another); one program run from start to end cannot
 * do that, so it is refused.  The annotation changes nothing the program
 * computes: interpret the IR before the pass (what `tilec run --interp` does). */
static bool ws_refused(Interp *in, const IrOp *op)
{
    return fail(in, op, "%s: warp-specialized IR (the warp_specialize pass's output) runs on the GPU only; the "
                        "interpreter runs the IR before that pass, which computes the same results",
                opname(op));
}

static bool exec_PRODUCER_WARP(Interp *in, const IrOp *op) { return ws_refused(in, op); }
static bool exec_ASYNC_ACQUIRE(Interp *in, const IrOp *op) { return ws_refused(in, op); }
static bool exec_ASYNC_RELEASE(Interp *in, const IrOp *op) { return ws_refused(in, op); }

/* ORDER: generated from ops.def; every op must have its exec_ hook above. */
#define OP(id, ...) [IR_##id] = exec_##id,
static const ExecHook exec_hook[IR_NUM_OPS] = {
#include "ops.def"
};
#undef OP

static bool run_block(Interp *in, IrBlk b)
{
    const IrBlock *blk = ir_blk(in->f, b);
    for (uint32_t k = 0; k < blk->nops; k++) {
        const IrOp *op = ir_op(in->f, blk->ops[k]);
        if (in->max_steps && ++in->steps > in->max_steps)
            return fail(in, op, "step limit of %llu executed ops reached (an endless loop?)",
                        (unsigned long long)in->max_steps);
        if (!exec_hook[op->opc](in, op)) return false;
        if (ir_opinfo[op->opc].flags & IR_TERM) return true; /* exec_ has set in->term */
    }
    in->term = NULL;
    return true;
}

/* ---- entry points --------------------------------------------------------------------- */

static bool bind_args(Interp *in, IrBlk blk, const InterpArg *args)
{
    IrFunc *f = in->f;
    const IrBlock *b = ir_blk(f, blk);
    TL_ASSERT(b->nargs == f->nparams, "interp");
    for (uint32_t k = 0; k < f->nparams; k++) {
        IrType t = f->params[k].ty;
        const InterpArg *a = &args[k];
        IrVal v = b->args[k];
        RVal *r = &in->vals[v];
        InterpArgKind want = t.kind == TY_VIEW ? IARG_VIEW : t.isptr ? IARG_PTR : IARG_SCALAR;
        static const char *const kind_name[] = {"a scalar", "a pointer", "a view"};
        if (a->kind != want) {
            diag_error(in->d, f->loc, "argument %u ('%s') of '%s' must be %s, not %s", k, f->params[k].name,
                       f->source_name, kind_name[want], kind_name[a->kind]);
            return false;
        }
        if (want != IARG_SCALAR && in->bufs && a->buf >= in->nbufs) { /* interp_grid has no buffers */
            diag_error(in->d, f->loc, "argument %u ('%s') names buffer %u of %u", k, f->params[k].name, a->buf,
                       in->nbufs);
            return false;
        }
        uint64_t base = ptr_make(a->buf, (int64_t)((uint64_t)a->offset * (uint64_t)dt_bytes((DType)t.dt)));
        switch (want) {
        case IARG_SCALAR:
            out(in, v)[0] = ir_scalar_canon((DType)t.dt, is_float(t) ? (Elem){.f = a->f} : (Elem){.i = a->i});
            break;
        case IARG_PTR: out(in, v)[0].i = (int64_t)base; break;
        case IARG_VIEW:
            r->vptr = base;
            for (int d = 0; d < t.rank; d++) {
                if (a->shape[d] < 0) {
                    diag_error(in->d, f->loc, "argument %u ('%s'): negative shape %lld in dimension %d", k,
                               f->params[k].name, (long long)a->shape[d], d);
                    return false;
                }
                r->vshape[d] = a->shape[d];
                r->vstride[d] = a->stride[d];
            }
            break;
        }
    }
    return true;
}

static void interp_init(Interp *in, IrFunc *f, InterpBuf *bufs, uint32_t nbufs, const InterpOptions *opt, Diag *d)
{
    memset(in, 0, sizeof *in);
    in->f = f;
    in->bufs = bufs;
    in->nbufs = nbufs;
    in->vals = tl_xcalloc(f->nvals, sizeof(RVal));
    in->print_out = opt && opt->print_out ? opt->print_out : stdout;
    in->max_steps = opt ? opt->max_steps : 0;
    in->no_tma = opt && opt->no_tma;
    in->d = d;
    in->grid[0] = in->grid[1] = in->grid[2] = 1;
}

static void interp_fini(Interp *in)
{
    for (uint32_t k = 0; k < in->f->nvals; k++) {
        free(in->vals[k].e);
        free(in->vals[k].stage);
    }
    free(in->vals);
}

bool interp_grid(IrFunc *f, const InterpArg *args, uint32_t grid[3], Diag *d)
{
    if (!f->grid) {
        diag_error(d, f->loc, "kernel '%s' has no grid clause: give the grid explicitly", f->source_name);
        return false;
    }
    Interp in;
    interp_init(&in, f, NULL, 0, NULL, d);
    in.in_grid = true;
    bool ok = bind_args(&in, f->grid, args) && run_block(&in, f->grid);
    if (ok) {
        const IrOp *y = in.term;
        TL_ASSERT(y && y->opc == IR_YIELD && y->nopnd >= 1 && y->nopnd <= 3, "interp");
        grid[0] = grid[1] = grid[2] = 1;
        for (uint32_t k = 0; k < y->nopnd; k++) {
            IrVal v = ir_opnd(f, y, k);
            int64_t g = in.vals[v].e[0].i;
            bool neg = dt_is_signed((DType)vty(&in, v).dt) && g < 0;
            if (neg || g < 1 || g > INT32_MAX) {
                if (dt_is_signed((DType)vty(&in, v).dt))
                    diag_error(d, y->loc, "grid dimension %u is %lld; it must be in 1..2^31-1", k, (long long)g);
                else
                    diag_error(d, y->loc, "grid dimension %u is %llu; it must be in 1..2^31-1", k,
                               (unsigned long long)(uint64_t)g);
                ok = false;
                break;
            }
            grid[k] = (uint32_t)g;
        }
    }
    interp_fini(&in);
    return ok;
}

bool interp_requires(IrFunc *f, const InterpArg *args, Diag *d)
{
    if (!f->requires) return true;
    Interp in;
    interp_init(&in, f, NULL, 0, NULL, d);
    in.in_grid = in.in_requires = true;
    bool ok = bind_args(&in, f->requires, args) && run_block(&in, f->requires);
    if (ok) {
        const IrOp *y = in.term;
        TL_ASSERT(y && y->opc == IR_YIELD && y->nopnd == f->nreq, "interp");
        for (uint32_t k = 0; ok && k < y->nopnd; k++) {
            IrVal v = ir_opnd(f, y, k);
            if (in.vals[v].e[0].i != 0) continue;
            const IrValue *val = &f->vals[v];
            SrcLoc loc = val->is_arg ? y->loc : f->ops[val->def].loc;
            diag_error(d, loc, "kernel '%s': requires(...) does not hold: %s", f->source_name,
                       f->mod->strs[f->req_msg[k]]);
            ok = false;
        }
    }
    interp_fini(&in);
    return ok;
}

bool interp_run(IrFunc *f, InterpBuf *bufs, uint32_t nbufs, const InterpArg *args, const uint32_t grid[3],
                const InterpOptions *opt, Diag *d)
{
    Interp in;
    interp_init(&in, f, bufs, nbufs, opt, d);
    bool ok = true;
    for (int a = 0; a < 3; a++) {
        if (grid[a] < 1 || grid[a] > INT32_MAX) {
            diag_error(d, f->loc, "grid dimension %d is %u; it must be in 1..2^31-1", a, grid[a]);
            ok = false;
        }
        in.grid[a] = grid[a];
    }
    ok = ok && bind_args(&in, f->body, args);
    for (uint32_t x = 0; ok && x < grid[0]; x++)
        for (uint32_t y = 0; ok && y < grid[1]; y++)
            for (uint32_t z = 0; ok && z < grid[2]; z++) {
                in.pid[0] = x;
                in.pid[1] = y;
                in.pid[2] = z;
                ok = run_block(&in, f->body);
            }
    interp_fini(&in);
    return ok;
}
