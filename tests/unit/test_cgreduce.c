/* test_cgreduce.c: codegen of reductions, cumsum, sort and topk (lower_reduce.c).
 *
 * 1. The layout analysis on the host: which register/lane/warp bits lie in
 *    the axis or replicate (cg_axis_bits), the order a scan walks them
 *    (cg_axis_order), and the layouts it must refuse.
 * 2. Kernels written as textual IR get layouts (the layout pass, or by hand:
 *    the mma accumulator, replicated lanes and warps) and go to PTX and an
 *    sm_90a cubin through nvJitLink; the PTX must hold the shuffles and
 *    barriers the layout calls for.
 * 3. The same LLVM IR runs on the host: every GPU thread is a host thread,
 *    tid.x, bar.sync and shfl.sync.bfly are host functions (barriers over the
 *    CTA and over each warp), the module is JIT-compiled for the host CPU.
 *    Outputs (written with integer atomic_add into zeroed buffers: plain LLVM,
 *    no inline PTX) must equal the interpreter's bit for bit; inputs are small
 *    integers where a float sum's order would otherwise matter, and carry NaN,
 *    -0 and ties where max/argmax/sort must order them.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include <cmocka.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>

#include "codegen/lower_int.h"
#include "ir/fpconv.h"
#include "ir/interp.h"
#include "passes/pass.h"

/* ---- 1. layout analysis -------------------------------------------------------- */

static IrType tile2(DType dt, int a, int b)
{
    int32_t d[2] = {a, b};
    return ir_ty_tile(dt, false, 2, d);
}

static void axis_bits_blocked(void **state)
{
    (void)state;
    /* f32 [64, 32], 4 warps: regs = cols 0-1, lanes = cols 2-4 and rows 0-1,
     * warps = rows 2-3, regs again = rows 4-5 */
    Layout L = layout_default(tile2(DT_F32, 64, 32), 4);
    CgAxisBits ab;
    assert_true(cg_axis_bits(&L, 1, &ab));
    assert_int_equal(ab.axis[LL_REG], 0x3);
    assert_int_equal(ab.axis[LL_LANE], 0x7);
    assert_int_equal(ab.axis[LL_WARP], 0);
    assert_int_equal(ab.rep[LL_REG] | ab.rep[LL_LANE] | ab.rep[LL_WARP], 0);
    assert_true(cg_axis_bits(&L, 0, &ab));
    assert_int_equal(ab.axis[LL_REG], 0xc);
    assert_int_equal(ab.axis[LL_LANE], 0x18);
    assert_int_equal(ab.axis[LL_WARP], 0x3);
    CgBitRef o[LL_MAXBITS];
    assert_true(cg_axis_order(&L, 0, o));
    static const uint8_t in0[6] = {LL_LANE, LL_LANE, LL_WARP, LL_WARP, LL_REG, LL_REG}, ix0[6] = {3, 4, 0, 1, 2, 3};
    for (int p = 0; p < 6; p++) {
        assert_int_equal(o[p].in, in0[p]);
        assert_int_equal(o[p].idx, ix0[p]);
    }
    assert_true(cg_axis_order(&L, 1, o));
    static const uint8_t in1[5] = {LL_REG, LL_REG, LL_LANE, LL_LANE, LL_LANE}, ix1[5] = {0, 1, 0, 1, 2};
    for (int p = 0; p < 5; p++) {
        assert_int_equal(o[p].in, in1[p]);
        assert_int_equal(o[p].idx, ix1[p]);
    }
}

static void axis_bits_replicated(void **state)
{
    (void)state;
    /* f32 [8] over 4 warps: 4 per thread, lane bit 0 takes the last bit, lanes
     * 1-4 and both warp bits replicate */
    int32_t n = 8;
    Layout L = layout_default(ir_ty_tile(DT_F32, false, 1, &n), 4);
    CgAxisBits ab;
    assert_true(cg_axis_bits(&L, 0, &ab));
    assert_int_equal(ab.axis[LL_REG], 0x3);
    assert_int_equal(ab.axis[LL_LANE], 0x1);
    assert_int_equal(ab.axis[LL_WARP], 0);
    assert_int_equal(ab.rep[LL_LANE], 0x1e);
    assert_int_equal(ab.rep[LL_WARP], 0x3);
    /* the slice to a scalar: everything replicates */
    Layout S = layout_slice(&L, 0);
    assert_int_equal(S.rank, 0);
    for (int k = 0; k < LL_NIN; k++)
        for (int i = 0; i < S.nbits[k]; i++) assert_int_equal(S.basis[k][i], 0);
}

static void axis_bits_mma(void **state)
{
    (void)state;
    /* mma accumulator 64x64 over 2x2 warps: reg 0 = col 0, lanes 0-1 = cols 1-2,
     * lanes 2-4 = rows 0-2, reg 1 = row 3, warp 0 = col 3, warp 1 = row 4,
     * regs 2-4 = cols 4-5, row 5 */
    Layout L = layout_mma_acc(tile2(DT_F32, 64, 64), 2, 2);
    CgAxisBits ab;
    assert_true(cg_axis_bits(&L, 1, &ab));
    assert_int_equal(ab.axis[LL_REG], 0x1 | 0x4 | 0x8);
    assert_int_equal(ab.axis[LL_LANE], 0x3);
    assert_int_equal(ab.axis[LL_WARP], 0x1);
    assert_true(cg_axis_bits(&L, 0, &ab));
    assert_int_equal(ab.axis[LL_REG], 0x2 | 0x10);
    assert_int_equal(ab.axis[LL_LANE], 0x1c);
    assert_int_equal(ab.axis[LL_WARP], 0x2);
    CgBitRef o[LL_MAXBITS];
    assert_true(cg_axis_order(&L, 1, o));
    assert_int_equal(o[0].in, LL_REG);
    assert_int_equal(o[1].in, LL_LANE);
    assert_int_equal(o[3].in, LL_WARP);
    assert_int_equal(o[5].in, LL_REG);
    assert_int_equal(o[5].idx, 3);
}

static void axis_bits_refused(void **state)
{
    (void)state;
    Layout L = layout_default(tile2(DT_F32, 64, 32), 4);
    CgAxisBits ab;
    CgBitRef o[LL_MAXBITS];
    /* a basis mixing a row bit with a column bit (a swizzle) */
    Layout M = L;
    M.basis[LL_LANE][3] |= 1u << 0;
    assert_false(cg_axis_bits(&M, 1, &ab));
    assert_false(cg_axis_bits(&M, 0, &ab));
    /* one element under two different bits */
    Layout D = L;
    D.basis[LL_WARP][1] = D.basis[LL_WARP][0];
    assert_false(cg_axis_bits(&D, 1, &ab));
    /* an axis basis that is two coordinate bits of the axis: fine for a
     * reduction, not a scan order */
    Layout X = L;
    X.basis[LL_REG][1] |= X.basis[LL_REG][0];
    assert_true(cg_axis_bits(&X, 1, &ab));
    assert_false(cg_axis_order(&X, 1, o));
    /* a dependent combination of three bits */
    Layout T = L;
    T.basis[LL_LANE][2] = T.basis[LL_LANE][0] ^ T.basis[LL_LANE][1];
    assert_false(cg_axis_bits(&T, 0, &ab));
}

/* ---- 2. kernels as text ------------------------------------------------------------- */

typedef struct Gen {
    StrBuf b;
    int n;
} Gen;

static int gen(Gen *g, const char *fmt, ...) TL_PRINTF(2, 3);
static int gen(Gen *g, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    sb_printf(&g->b, "  %%%d = %s\n", g->n, line);
    return g->n++;
}

/* "tile<f32>[64, 32]" (a scalar type for rank 0); one of 8 rotating buffers */
static const char *ty(const char *dt, int rank, const int *dims)
{
    static char buf[8][64];
    static int next;
    char *s = buf[next++ % 8];
    if (rank == 0) {
        snprintf(s, 64, "%s", dt);
        return s;
    }
    int k = snprintf(s, 64, "tile<%s>[", dt);
    for (int i = 0; i < rank; i++) k += snprintf(s + k, (size_t)(64 - k), i ? ", %d" : "%d", dims[i]);
    snprintf(s + k, (size_t)(64 - k), "]");
    return s;
}

/* Kernel k(x: ptr<xdt>, o: ptr<odt>, o2: ptr<o2dt>, s: i32): s is 1 at run time
 * (the addresses are then not provably contiguous: plain loads). */
static void gen_begin(Gen *g, const char *xdt, const char *odt, const char *o2dt, int warps)
{
    memset(g, 0, sizeof *g);
    sb_printf(&g->b, "kernel @k \"k\"(%%x: ptr<%s>, %%o: ptr<%s>, %%o2: ptr<%s>, %%s: i32) warps(%d) {\n", xdt, odt,
              o2dt, warps);
}

static int offsets(Gen *g, int n)
{
    int a = gen(g, "arange : tile<i32>[%d]", n);
    int s = gen(g, "splat %%s : tile<i32>[%d]", n);
    return gen(g, "mul %%%d, %%%d : tile<i32>[%d]", a, s, n);
}

static int gen_input(Gen *g, const char *dt, int rank, const int *dims)
{
    int n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    int m = offsets(g, n);
    int p = gen(g, "splat %%x : tile<ptr<%s>>[%d]", dt, n);
    int q = gen(g, "addptr %%%d, %%%d : tile<ptr<%s>>[%d]", p, m, dt, n);
    int l = gen(g, "load %%%d : tile<%s>[%d]", q, dt, n);
    if (rank == 1) return l;
    return gen(g, "reshape %%%d : %s", l, ty(dt, rank, dims));
}

/* Writes v (dtype dt) to param `par` of dtype odt (i32 or i64, zeroed) with
 * atomic_add: floats by their bits, narrow values widened. */
static void gen_output(Gen *g, int v, const char *dt, int rank, const int *dims, const char *par, const char *odt)
{
    int n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    int w = v;
    const char *cur = dt;
    if (!strcmp(dt, "f32")) cur = "i32";
    else if (!strcmp(dt, "f64")) cur = "i64";
    else if (!strcmp(dt, "f16") || !strcmp(dt, "bf16")) cur = "i16";
    if (cur != dt) w = gen(g, "bitcast %%%d : %s", w, ty(cur, rank, dims));
    if (strcmp(cur, odt)) w = gen(g, "cast %%%d : %s", w, ty(odt, rank, dims));
    if (rank == 0) {
        gen(g, "atomic_add %%%s, %%%d : %s", par, w, odt);
        return;
    }
    if (rank > 1) w = gen(g, "reshape %%%d : tile<%s>[%d]", w, odt, n);
    int m = offsets(g, n);
    int p = gen(g, "splat %%%s : tile<ptr<%s>>[%d]", par, odt, n);
    int q = gen(g, "addptr %%%d, %%%d : tile<ptr<%s>>[%d]", p, m, odt, n);
    gen(g, "atomic_add %%%d, %%%d : tile<%s>[%d]", q, w, odt, n);
}

static void gen_end(Gen *g) { sb_puts(&g->b, "  return\n}\n"); }

static IrModule *parse_kernel(Gen *g)
{
    Diag d;
    diag_init(&d, "t.tir", g->b.s, g->b.len, stderr, DIAG_COLOR_NEVER);
    IrModule *m = ir_parse("t.tir", g->b.s, g->b.len, &d);
    if (!m) fprintf(stderr, "%s", g->b.s);
    assert_non_null(m);
    assert_true(ir_verify_module(m, &d, "test"));
    PassCtx cx = {&d, false};
    IrFunc *f = m->funcs[0];
    pass_layout(f, &cx);
    /* The outputs' atomic_add results are unused; lower_mem.c defines them in
     * the pointers' layout, so give them that one. */
    IrBlock *B = ir_blk(f, f->body);
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        if (op->opc == IR_ATOMIC_ADD) f->val_layout[ir_res(op, 0)] = f->val_layout[ir_opnd(f, op, 0)];
    }
    diag_free(&d);
    return m;
}

/* The first op of opcode opc in the body. */
static IrOp *find(IrFunc *f, IrOpcode opc)
{
    IrBlock *B = ir_blk(f, f->body);
    for (uint32_t i = 0; i < B->nops; i++)
        if (ir_op(f, B->ops[i])->opc == opc) return ir_op(f, B->ops[i]);
    fail_msg("no %s in the kernel", ir_opinfo[opc].name);
    return NULL;
}

static void set_layout(IrFunc *f, IrVal v, const Layout *L)
{
    VEC_PUSH(f->layouts, f->nlayouts, f->layoutcap, *L);
    f->val_layout[v] = f->nlayouts - 1;
}

/* Gives the reduction op's operand layout L and its result (and the value
 * the result feeds, when elementwise) the slice. */
static void force_reduce_layout(IrFunc *f, IrOpcode opc, const Layout *L)
{
    IrOp *op = find(f, opc);
    set_layout(f, ir_opnd(f, op, 0), L);
    Layout S = layout_slice(L, (int)op->attr.i);
    if (S.rank == 0) {
        f->val_layout[ir_res(op, 0)] = 0;
        return;
    }
    set_layout(f, ir_res(op, 0), &S);
}

static const CgTarget sm90a = {.arch = &ir_targets[IR_TARGET_SM_90A], .opt_level = 3};

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

/* PTX and cubin of module m's kernel; returns the malloc'd PTX text. */
static char *to_cubin(IrModule *m)
{
    Diag d;
    diag_init(&d, "t.tir", NULL, 0, stderr, DIAG_COLOR_NEVER);
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("t", ctx);
    Arena scratch;
    arena_init(&scratch);
    CgKernelFacts facts;
    assert_true(cg_lower_func(m->funcs[0], &sm90a, ctx, mod, &scratch, &facts, &d));
    arena_free(&scratch);
    StrBuf ptx = {0};
    assert_true(cg_emit_ptx(mod, &sm90a, &ptx, &d));
    LLVMContextDispose(ctx);
    void *cubin = NULL;
    size_t len = 0;
    StrBuf info = {0};
    bool ok = cg_ptx_to_cubin(ptx.s, ptx.len, &sm90a, &cubin, &len, &info, &d);
    if (!ok) fprintf(stderr, "%s\n", ptx.s);
    assert_true(ok);
    assert_true(len > 4 && memcmp(cubin, "\177ELF", 4) == 0);
    free(cubin);
    sb_free(&info);
    diag_free(&d);
    return ptx.s;
}

/* ---- 3. the host SIMT simulator ------------------------------------------------------ */

typedef void (*KernelFn)(void *x, void *o, void *o2, int32_t s);

typedef struct Sim {
    int warps;
    KernelFn fn;
    void *x, *o, *o2;
    pthread_barrier_t cta, warp[32];
    uint32_t xch[32][32];
} Sim;

static Sim *sim;
static _Thread_local int32_t sim_tid_v;

static int32_t sim_tid(void) { return sim_tid_v; }
static void sim_barrier(void) { pthread_barrier_wait(&sim->cta); }
static int32_t sim_shfl(int32_t mask, int32_t v, int32_t lane_mask, int32_t c)
{
    (void)c;
    assert_true(mask == -1);
    int w = sim_tid_v / 32, l = sim_tid_v % 32;
    sim->xch[w][l] = (uint32_t)v;
    pthread_barrier_wait(&sim->warp[w]);
    int32_t r = (int32_t)sim->xch[w][l ^ (lane_mask & 31)];
    pthread_barrier_wait(&sim->warp[w]);
    return r;
}

static void *sim_thread(void *arg)
{
    sim_tid_v = (int32_t)(intptr_t)arg;
    sim->fn(sim->x, sim->o, sim->o2, 1);
    return NULL;
}

/* f32 -> bf16 for the host code LLVM emits (libgcc 12 lacks __truncsfbf2): the
 * bits come back in the low half of xmm0, as a _Float16's would. */
static _Float16 sim_truncsfbf2(float x)
{
    uint16_t h = fp_to_bf16((double)x);
    _Float16 r;
    memcpy(&r, &h, 2);
    return r;
}

static pthread_once_t jit_once = PTHREAD_ONCE_INIT;
static void jit_init(void)
{
    LLVMAddSymbol("__truncsfbf2", (void *)sim_truncsfbf2);
    LLVMLinkInMCJIT();
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
}

/* Lowers m's kernel and runs it on the host over 32 * warps threads. */
static void simulate(IrModule *m, void *x, void *o, void *o2)
{
    pthread_once(&jit_once, jit_init);
    IrFunc *f = m->funcs[0];
    Diag d;
    diag_init(&d, "t.tir", NULL, 0, stderr, DIAG_COLOR_NEVER);
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("sim", ctx);
    Arena scratch;
    arena_init(&scratch);
    CgKernelFacts facts;
    /* sm_80's lowering: the same reductions, and fp8 conversions in plain LLVM (sm_89 and
     * later convert in inline PTX, which the host cannot run; tests/gpu/fp8cvt.tile checks
     * those bits on the GPU) */
    CgTarget t = sm90a;
    t.arch = &ir_targets[IR_TARGET_SM_80];
    assert_true(cg_lower_func(f, &t, ctx, mod, &scratch, &facts, &d));
    arena_free(&scratch);
    /* the NVVM intrinsics become host functions */
    static const struct { const char *nvvm, *host; void *fn; } map[] = {
        {"llvm.nvvm.read.ptx.sreg.tid.x", "sim_tid", (void *)sim_tid},
        {"llvm.nvvm.barrier0", "sim_barrier", (void *)sim_barrier},
        {"llvm.nvvm.shfl.sync.bfly.i32", "sim_shfl", (void *)sim_shfl},
    };
    LLVMValueRef decl[3] = {0};
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        const char *name = LLVMGetValueName(fn);
        if (strncmp(name, "llvm.nvvm.", 10)) continue;
        size_t i = 0;
        while (i < TL_COUNTOF(map) && strcmp(name, map[i].nvvm)) i++;
        if (i == TL_COUNTOF(map)) fail_msg("the simulator has no %s", name);
        LLVMSetValueName2(fn, map[i].host, strlen(map[i].host));
        decl[i] = fn;
    }
    LLVMValueRef kfn = LLVMGetNamedFunction(mod, f->name);
    LLVMSetFunctionCallConv(kfn, LLVMCCallConv);
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMSetTarget(mod, triple);
    LLVMDisposeMessage(triple);
    char *err = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) fail_msg("bad LLVM IR: %s", err);
    LLVMDisposeMessage(err);
    LLVMExecutionEngineRef ee;
    struct LLVMMCJITCompilerOptions opt;
    LLVMInitializeMCJITCompilerOptions(&opt, sizeof opt);
    opt.OptLevel = 1;
    if (LLVMCreateMCJITCompilerForModule(&ee, mod, &opt, sizeof opt, &err)) fail_msg("JIT: %s", err);
    for (size_t i = 0; i < TL_COUNTOF(map); i++)
        if (decl[i]) LLVMAddGlobalMapping(ee, decl[i], map[i].fn);
    void *smem_buf = calloc(1, facts.smem_dynamic + 16);
    LLVMValueRef g = LLVMGetNamedGlobal(mod, "__tilec_smem");
    if (g) LLVMAddGlobalMapping(ee, g, smem_buf);

    Sim s;
    memset(&s, 0, sizeof s);
    s.warps = f->warps;
    s.fn = (KernelFn)(uintptr_t)LLVMGetFunctionAddress(ee, f->name);
    assert_non_null(s.fn);
    s.x = x;
    s.o = o;
    s.o2 = o2;
    int nt = 32 * s.warps;
    pthread_barrier_init(&s.cta, NULL, (unsigned)nt);
    for (int w = 0; w < s.warps; w++) pthread_barrier_init(&s.warp[w], NULL, 32);
    sim = &s;
    pthread_t th[1024];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    for (int i = 0; i < nt; i++) assert_int_equal(pthread_create(&th[i], &attr, sim_thread, (void *)(intptr_t)i), 0);
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    pthread_attr_destroy(&attr);
    pthread_barrier_destroy(&s.cta);
    for (int w = 0; w < s.warps; w++) pthread_barrier_destroy(&s.warp[w]);
    sim = NULL;
    free(smem_buf);
    LLVMDisposeExecutionEngine(ee); /* owns the module */
    LLVMContextDispose(ctx);
    diag_free(&d);
}

/* ---- inputs, and the comparison with the interpreter ---------------------------------- */

typedef enum { DATA_SMALLINT, DATA_SPECIAL, DATA_RANDOM } DataKind;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* n elements of dt: small integers (ties; float sums exact in any order),
 * or those with NaN, -0, +0 and infinities mixed in, or uniform floats. */
static void *make_input(DType dt, int n, DataKind kind)
{
    int es = dt_bytes(dt);
    unsigned char *p = calloc((size_t)n, (size_t)es);
    for (int i = 0; i < n; i++) {
        uint64_t r = next_rand();
        double v = (double)((int)(r % 17) - 8);
        if (kind == DATA_SPECIAL && dt_is_float(dt)) {
            static const double sp[6] = {-0.0, 0.0, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, 2.5};
            if (r % 7 == 0) v = sp[(r >> 8) % 6];
        }
        if (kind == DATA_RANDOM) v = (double)(int64_t)(r >> 11) / (double)(1ull << 53) * 200.0 - 100.0;
        if (dt_is_float(dt)) fp_store(dt, p + (size_t)i * es, v);
        else {
            int64_t iv = kind == DATA_SPECIAL ? (int64_t)(r >> 1) : (int64_t)v;
            if (dt_is_unsigned(dt) && iv < 0) iv = -iv;
            int64_t w = int_wrap(dt, iv);
            memcpy(p + (size_t)i * es, &w, (size_t)es); /* little-endian */
        }
    }
    return p;
}

typedef struct Case {
    DType xdt;
    int n;            /* input elements */
    int on, o2n;      /* output elements of o, o2 */
    int oes, o2es;    /* their bytes per element (4 or 8) */
    DataKind data;
    int fbits;        /* 32 or 64: o holds float bits compared within atol + rtol * |want|; 0: bit-exact */
    double rtol, atol;
} Case;

static const char *cur_kernel; /* printed when a comparison fails */

static void run_interp(IrFunc *f, void *x, size_t xb, void *o, size_t ob, void *o2, size_t o2b)
{
    InterpBuf bufs[3] = {{x, xb, "x"}, {o, ob, "o"}, {o2, o2b, "o2"}};
    InterpArg args[4];
    memset(args, 0, sizeof args);
    for (int i = 0; i < 3; i++) {
        args[i].kind = IARG_PTR;
        args[i].buf = (uint32_t)i;
    }
    args[3].kind = IARG_SCALAR;
    args[3].i = 1;
    uint32_t grid[3] = {1, 1, 1};
    InterpOptions opt = {0};
    Diag d;
    diag_init(&d, "t.tir", NULL, 0, stderr, DIAG_COLOR_NEVER);
    assert_true(interp_run(f, bufs, 3, args, grid, &opt, &d));
    diag_free(&d);
}

static void compare(const char *what, const void *want, const void *got, int n, int es, const Case *c)
{
    for (int i = 0; i < n; i++) {
        int64_t a = 0, b = 0;
        memcpy(&a, (const char *)want + (size_t)i * es, (size_t)es);
        memcpy(&b, (const char *)got + (size_t)i * es, (size_t)es);
        if (a == b) continue;
        if (c->fbits) {
            double fa, fb;
            if (c->fbits == 32) {
                float x, y;
                memcpy(&x, &a, 4);
                memcpy(&y, &b, 4);
                fa = x;
                fb = y;
            } else {
                memcpy(&fa, &a, 8);
                memcpy(&fb, &b, 8);
            }
            if (fabs(fa - fb) <= c->atol + c->rtol * fabs(fa)) continue;
            fprintf(stderr, "%s", cur_kernel);
            fail_msg("%s[%d]: interpreter %.17g, lowered %.17g", what, i, fa, fb);
        }
        fprintf(stderr, "%s", cur_kernel);
        fail_msg("%s[%d]: interpreter %#llx, lowered %#llx", what, i, (unsigned long long)a, (unsigned long long)b);
    }
}

/* Runs the kernel in the interpreter and the simulator on the same input. */
static void check_against_interp(IrModule *m, const Case *c)
{
    size_t xb = (size_t)c->n * dt_bytes(c->xdt), ob = (size_t)c->on * c->oes, o2b = (size_t)(c->o2n ? c->o2n : 1) * c->o2es;
    void *x = make_input(c->xdt, c->n, c->data);
    void *oi = calloc(1, ob), *o2i = calloc(1, o2b), *os = calloc(1, ob), *o2s = calloc(1, o2b);
    run_interp(m->funcs[0], x, xb, oi, ob, o2i, o2b);
    simulate(m, x, os, o2s);
    compare("o", oi, os, c->on, c->oes, c);
    Case c2 = *c;
    c2.fbits = 0;
    compare("o2", o2i, o2s, c->o2n, c->o2es, &c2);
    free(x);
    free(oi);
    free(o2i);
    free(os);
    free(o2s);
}

/* ---- 2 and 3 together: one op under test ------------------------------------------------- */

static DType dt_of(const char *name)
{
    DType d;
    assert_true(dt_from_name(name, strlen(name), &d));
    return d;
}

static const char *out_dt(const char *dt) { return dt_bits[dt_of(dt)] == 64 ? "i64" : "i32"; }

typedef void (*Tweak)(IrFunc *f);

/* The op under test: the first reduction, scan or sort in the body. */
static IrOp *op_under_test(IrFunc *f)
{
    IrBlock *B = ir_blk(f, f->body);
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        if (op->opc >= IR_REDUCE_SUM && op->opc <= IR_TOPK) return op;
    }
    fail_msg("no reduction in the kernel");
    return NULL;
}

/* Compiles to a cubin and checks against the interpreter.  The PTX must
 * shuffle exactly when a lane bit of the operand's layout lies in the axis,
 * and hold a barrier when a warp bit does (and always for sort and topk). */
static void finish(Gen *g, const Case *c, Tweak tweak)
{
    gen_end(g);
    cur_kernel = g->b.s;
    IrModule *m = parse_kernel(g);
    IrFunc *f = m->funcs[0];
    if (tweak) tweak(f);
    IrOp *op = op_under_test(f);
    CgAxisBits ab;
    assert_true(cg_axis_bits(&f->layouts[f->val_layout[ir_opnd(f, op, 0)]], (int)op->attr.i, &ab));
    bool sorting = op->opc == IR_SORT || op->opc == IR_TOPK;
    char *ptx = to_cubin(m);
    bool shuffles = strstr(ptx, "shfl.sync.bfly") != NULL, bar = strstr(ptx, "bar.sync") != NULL;
    if (!sorting && shuffles != (ab.axis[LL_LANE] != 0)) {
        fprintf(stderr, "%s", cur_kernel);
        fail_msg("PTX %s shuffles; axis lane bits %#x", shuffles ? "has" : "lacks", ab.axis[LL_LANE]);
    }
    if ((sorting || ab.axis[LL_WARP]) && !bar) {
        fprintf(stderr, "%s", cur_kernel);
        fail_msg("PTX lacks bar.sync");
    }
    free(ptx);
    check_against_interp(m, c);
    ir_module_free(m);
    sb_free(&g->b);
}

/* op(x, axis) of x: xdt[dims] -> rdt (the axis dropped). */
static void reduce_case(const char *op, const char *xdt, int rank, const int *dims, int axis, const char *rdt, int warps,
                        DataKind data, double atol, Tweak tweak)
{
    Gen g;
    gen_begin(&g, xdt, out_dt(rdt), "i32", warps);
    int x = gen_input(&g, xdt, rank, dims);
    int rd[IR_MAXRANK] = {0}, rr = 0, n = 1, on = 1; /* zeroed: -Wmaybe-uninitialized at -O2 */
    for (int i = 0; i < rank; i++) {
        n *= dims[i];
        if (i != axis) {
            rd[rr++] = dims[i];
            on *= dims[i];
        }
    }
    int y = gen(&g, "%s %%%d {axis = %d} : %s", op, x, axis, ty(rdt, rr, rd));
    gen_output(&g, y, rdt, rr, rd, "o", out_dt(rdt));
    DType r = dt_of(rdt);
    /* float sums of random data: within (n-1) * eps * sum|x| of each other's exact sum */
    int fb = atol > 0 ? dt_bits[r] : 0;
    Case c = {dt_of(xdt), n, on, 0, dt_bits[r] == 64 ? 8 : 4, 4, data, fb, 0, atol};
    finish(&g, &c, tweak);
}

static const int d64x32[2] = {64, 32}, d32x64[2] = {32, 64}, d1024[1] = {1024}, d8[1] = {8}, d64x64[2] = {64, 64};

static void sum_lanes(void **state)
{
    (void)state;
    /* axis 1 of the default layout: 2 register bits, 3 lane bits */
    reduce_case("reduce_sum", "f32", 2, d64x32, 1, "f32", 4, DATA_SMALLINT, 0, NULL);
    reduce_case("reduce_sum", "i32", 2, d64x32, 1, "i32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_sum", "f32", 2, d64x32, 1, "f32", 4, DATA_RANDOM, 2 * 31 * 6e-8 * 3200, NULL);
}

/* exactly one shuffle per (line representative register, axis lane bit) */
static void shuffle_count(void **state)
{
    (void)state;
    for (int axis = 0; axis < 2; axis++) {
        Gen g;
        gen_begin(&g, "f32", "i32", "i32", 4);
        int x = gen_input(&g, "f32", 2, d64x32);
        int y = gen(&g, "reduce_sum %%%d {axis = %d} : tile<f32>[%d]", x, axis, d64x32[1 - axis]);
        gen_output(&g, y, "f32", 1, &d64x32[1 - axis], "o", "i32");
        gen_end(&g);
        IrModule *m = parse_kernel(&g);
        char *ptx = to_cubin(m);
        /* 16 registers, 2 axis register bits: 4 representatives; 3 (axis 1) or 2 (axis 0) lane bits */
        assert_int_equal(count(ptx, "shfl.sync.bfly.b32"), axis ? 12 : 8);
        free(ptx);
        ir_module_free(m);
        sb_free(&g.b);
    }
}

static void sum_warps(void **state)
{
    (void)state;
    /* axis 0: lane bits, warp bits (shared memory) and register bits */
    reduce_case("reduce_sum", "f32", 2, d64x32, 0, "f32", 4, DATA_SMALLINT, 0, NULL);
    reduce_case("reduce_sum", "i8", 2, d64x32, 0, "i32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_sum", "f16", 2, d32x64, 0, "f32", 8, DATA_SMALLINT, 0, NULL);
    /* i64 [32, 64] over 2 warps: all 32 lanes along dim 1, dim 0 in warps and registers only */
    reduce_case("reduce_sum", "i64", 2, d32x64, 0, "i64", 2, DATA_SPECIAL, 0, NULL);
}

static void sum_scalar(void **state)
{
    (void)state;
    reduce_case("reduce_sum", "f32", 1, d1024, 0, "f32", 4, DATA_SMALLINT, 0, NULL);
    reduce_case("reduce_sum", "f64", 1, d1024, 0, "f64", 4, DATA_RANDOM, 2 * 1023 * 1.2e-16 * 102400, NULL);
    reduce_case("reduce_sum", "u8", 1, d1024, 0, "i32", 8, DATA_SPECIAL, 0, NULL);
    /* lanes 1-4 and both warps replicate the 8 elements: counted once */
    reduce_case("reduce_sum", "f32", 1, d8, 0, "f32", 4, DATA_SMALLINT, 0, NULL);
    reduce_case("reduce_sum", "i32", 1, d8, 0, "i32", 4, DATA_SPECIAL, 0, NULL);
}

static void max_min(void **state)
{
    (void)state;
    reduce_case("reduce_max", "f32", 2, d64x32, 1, "f32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_min", "f32", 2, d64x32, 0, "f32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_max", "bf16", 2, d64x32, 0, "bf16", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_min", "f16", 2, d64x32, 1, "f16", 4, DATA_SPECIAL, 0, NULL);
    /* f64 [32, 64]: 32 lanes along dim 1, dim 0 in warps and registers; dim 1 shuffles 64-bit halves */
    reduce_case("reduce_max", "f64", 2, d32x64, 0, "f64", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_max", "f64", 2, d32x64, 1, "f64", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_min", "i64", 2, d32x64, 1, "i64", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_max", "u8", 1, d1024, 0, "u8", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_min", "i8", 2, d64x32, 0, "i8", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("reduce_max", "f8e4m3", 2, d64x32, 1, "f8e4m3", 4, DATA_SMALLINT, 0, NULL);
}

static void arg_max_min(void **state)
{
    (void)state;
    reduce_case("argmax", "f32", 2, d64x32, 1, "i32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("argmin", "f32", 2, d64x32, 1, "i32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("argmax", "f32", 2, d64x32, 0, "i32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("argmin", "f64", 2, d32x64, 0, "i32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("argmin", "f64", 2, d32x64, 1, "i32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("argmax", "i8", 2, d64x32, 0, "i32", 8, DATA_SMALLINT, 0, NULL);
    reduce_case("argmin", "u32", 1, d1024, 0, "i32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("argmax", "bf16", 1, d1024, 0, "i32", 4, DATA_SPECIAL, 0, NULL);
    reduce_case("argmax", "f32", 1, d8, 0, "i32", 4, DATA_SMALLINT, 0, NULL);
}

/* The mma.sync accumulator layout (2 x 2 warps) on the reduction's operand. */
static IrOpcode forced_op;
static void force_mma(IrFunc *f)
{
    Layout L = layout_mma_acc(tile2(DT_F32, 64, 64), 2, 2);
    force_reduce_layout(f, forced_op, &L);
}

static void mma_layout(void **state)
{
    (void)state;
    static const IrOpcode ops[3] = {IR_REDUCE_SUM, IR_ARGMAX, IR_REDUCE_MIN};
    static const char *const names[3] = {"reduce_sum", "argmax", "reduce_min"};
    static const char *const rdt[3] = {"f32", "i32", "f32"};
    for (int i = 0; i < 3; i++)
        for (int axis = 0; axis < 2; axis++) {
            forced_op = ops[i];
            reduce_case(names[i], "f32", 2, d64x64, axis, rdt[i], 4, i == 0 ? DATA_SMALLINT : DATA_SPECIAL, 0,
                        force_mma);
        }
}

/* ---- cumsum ----------------------------------------------------------------------------- */

static void cumsum_case(const char *xdt, int rank, const int *dims, int axis, const char *rdt, int warps, DataKind data,
                        Tweak tweak)
{
    Gen g;
    gen_begin(&g, xdt, out_dt(rdt), "i32", warps);
    int x = gen_input(&g, xdt, rank, dims);
    int y = gen(&g, "cumsum %%%d {axis = %d} : %s", x, axis, ty(rdt, rank, dims));
    gen_output(&g, y, rdt, rank, dims, "o", out_dt(rdt));
    int n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    Case c = {dt_of(xdt), n, n, 0, dt_bits[dt_of(rdt)] == 64 ? 8 : 4, 4, data, 0, 0, 0};
    finish(&g, &c, tweak);
}

static void force_mma_cumsum(IrFunc *f)
{
    IrOp *op = find(f, IR_CUMSUM);
    Layout L = layout_mma_acc(tile2(DT_F32, 64, 64), 2, 2);
    set_layout(f, ir_opnd(f, op, 0), &L);
    set_layout(f, ir_res(op, 0), &L);
}

/* the result in another layout than the operand (moved through shared memory) */
static void cumsum_other_layout(IrFunc *f)
{
    IrOp *op = find(f, IR_CUMSUM);
    Layout L = layout_mma_acc(tile2(DT_F32, 64, 64), 2, 2);
    set_layout(f, ir_opnd(f, op, 0), &L);
}

static void cumsum(void **state)
{
    (void)state;
    cumsum_case("f32", 2, d64x32, 1, "f32", 4, DATA_SMALLINT, NULL);
    cumsum_case("f32", 2, d64x32, 0, "f32", 4, DATA_SMALLINT, NULL);
    cumsum_case("i32", 2, d64x32, 0, "i32", 4, DATA_SPECIAL, NULL);
    cumsum_case("i8", 1, d1024, 0, "i32", 4, DATA_SPECIAL, NULL);
    cumsum_case("i64", 1, d1024, 0, "i64", 8, DATA_SPECIAL, NULL);
    cumsum_case("f16", 1, d8, 0, "f32", 4, DATA_SMALLINT, NULL);
    cumsum_case("f32", 2, d64x64, 1, "f32", 4, DATA_SMALLINT, force_mma_cumsum);
    cumsum_case("f32", 2, d64x64, 0, "f32", 4, DATA_SMALLINT, force_mma_cumsum);
    cumsum_case("f32", 2, d64x64, 1, "f32", 4, DATA_SMALLINT, cumsum_other_layout);
}

/* ---- sort and topk ----------------------------------------------------------------------- */

static void sort_case(const char *xdt, int rank, const int *dims, int axis, bool desc, int warps)
{
    Gen g;
    gen_begin(&g, xdt, out_dt(xdt), "i32", warps);
    int x = gen_input(&g, xdt, rank, dims);
    int y = gen(&g, "sort %%%d {axis = %d%s} : %s", x, axis, desc ? ", descending = true" : "", ty(xdt, rank, dims));
    gen_output(&g, y, xdt, rank, dims, "o", out_dt(xdt));
    int n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    Case c = {dt_of(xdt), n, n, 0, dt_bits[dt_of(xdt)] == 64 ? 8 : 4, 4, DATA_SPECIAL, 0, 0, 0};
    finish(&g, &c, NULL);
}

static void topk_case(const char *xdt, int rank, const int *dims, int axis, int k, int warps)
{
    Gen g;
    gen_begin(&g, xdt, out_dt(xdt), "i32", warps);
    int x = gen_input(&g, xdt, rank, dims);
    int rd[2] = {dims[0], rank > 1 ? dims[1] : 0}, n = 1, on = 1;
    rd[axis] = k;
    for (int i = 0; i < rank; i++) {
        n *= dims[i];
        on *= rd[i];
    }
    int v = gen(&g, "topk %%%d {axis = %d, k = %d} : %s, %s", x, axis, k, ty(xdt, rank, rd), ty("i32", rank, rd));
    g.n++; /* %v:2 defines two values */
    /* rewrite the results as "%v:2 =" */
    char pat[32], rep[32];
    snprintf(pat, sizeof pat, "  %%%d = topk", v);
    snprintf(rep, sizeof rep, "  %%%d:2 = topk", v);
    char *at = strstr(g.b.s, pat);
    assert_non_null(at);
    StrBuf nb = {0};
    sb_printf(&nb, "%.*s%s%s", (int)(at - g.b.s), g.b.s, rep, at + strlen(pat));
    sb_free(&g.b);
    g.b = nb;
    gen_output(&g, v, xdt, rank, rd, "o", out_dt(xdt));
    gen_output(&g, v + 1, "i32", rank, rd, "o2", "i32");
    Case c = {dt_of(xdt), n, on, on, dt_bits[dt_of(xdt)] == 64 ? 8 : 4, 4, DATA_SPECIAL, 0, 0, 0};
    finish(&g, &c, NULL);
}

static void sort(void **state)
{
    (void)state;
    static const int d4x64[2] = {4, 64}, d64x4[2] = {64, 4}, d16x16[2] = {16, 16}, d256[1] = {256};
    sort_case("f32", 2, d4x64, 1, false, 4);
    sort_case("f32", 2, d4x64, 1, true, 4);
    sort_case("f32", 2, d64x4, 0, false, 2);
    sort_case("i32", 2, d16x16, 0, true, 4);
    sort_case("i8", 1, d256, 0, false, 1);
    sort_case("f64", 1, d256, 0, true, 4);
    sort_case("bf16", 2, d16x16, 1, false, 4);
    sort_case("f32", 1, d8, 0, true, 4);
}

static void topk(void **state)
{
    (void)state;
    static const int d8x64[2] = {8, 64}, d64x8[2] = {64, 8}, d128[1] = {128};
    topk_case("f32", 2, d8x64, 1, 4, 4);
    topk_case("f32", 2, d64x8, 0, 8, 4);
    topk_case("i32", 1, d128, 0, 1, 2);
    topk_case("f16", 1, d128, 0, 128, 4);
}

/* Operands in a sliced layout (replicated registers, lanes and warps):
 * op(sum(x, 1)) for a second op along the remaining axis. */
static void nested_case(const char *op2, const char *rty, int ron, const char *xdt, int warps)
{
    Gen g;
    gen_begin(&g, xdt, "i32", "i32", warps);
    int x = gen_input(&g, xdt, 2, d64x32);
    int y = gen(&g, "reduce_sum %%%d {axis = 1} : tile<%s>[64]", x, xdt);
    int z = gen(&g, "%s %%%d {axis = 0} : %s", op2, y, rty);
    bool scalar = !strchr(rty, '[');
    int one = 64;
    const char *zdt = strstr(rty, "i32") ? "i32" : xdt;
    gen_output(&g, z, zdt, scalar ? 0 : 1, &one, "o", "i32");
    Case c = {dt_of(xdt), 64 * 32, ron, 0, 4, 4, DATA_SMALLINT, 0, 0, 0};
    finish(&g, &c, NULL);
}

static void nested(void **state)
{
    (void)state;
    nested_case("reduce_max", "f32", 1, "f32", 4);
    nested_case("reduce_sum", "i32", 1, "i32", 8);
    nested_case("argmin", "i32", 1, "f32", 2);
    nested_case("cumsum", "tile<f32>[64]", 64, "f32", 4);
    nested_case("sort", "tile<i32>[64]", 64, "i32", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(axis_bits_blocked),  cmocka_unit_test(axis_bits_replicated), cmocka_unit_test(axis_bits_mma),
        cmocka_unit_test(axis_bits_refused),  cmocka_unit_test(sum_lanes), cmocka_unit_test(shuffle_count),            cmocka_unit_test(sum_warps),
        cmocka_unit_test(sum_scalar),         cmocka_unit_test(max_min),              cmocka_unit_test(arg_max_min),
        cmocka_unit_test(mma_layout),         cmocka_unit_test(cumsum),               cmocka_unit_test(sort),
        cmocka_unit_test(topk), cmocka_unit_test(nested),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
