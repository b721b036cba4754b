/* test_exec.c: tile source, compiled and run by the reference interpreter.
 *
 * Each test compiles a kernel (an example of examples/ or a kernel of tests/interp/builtins.tile)
 * twice, as lowered (-O0) and after the default pass pipeline, runs both on the
 * same random data (never all zeros) with every output poisoned first (0xFF
 * bytes: NaN for floats, -1 for integers), requires the two runs to agree bit
 * for bit, and compares the result with a float64 host reference.
 *
 * Tolerances (|got - ref| allowed), and why:
 *   vadd, integer ops, casts, shapes, sort/topk, atomics, control flow: exact.
 *   elementwise math (exp ... erf): exact against the host's double result
 *     rounded once to f32, which is what the interpreter computes.
 *   arithmetic (+ - * / % fma ...): exact against the once-rounded f32 result.
 *   reductions: exact against an f32 accumulation in index order (the
 *     interpreter's documented order).
 *   softmax: 1e-4 * ref: f32 exp and an f32 sum of <= 1024 terms (n * 2^-24).
 *   gemm (bf16/f16 in, bf16 out): 2^-8 |ref| (the bf16 rounding of the
 *     result) + 2^-16 sum |a b| (f32 accumulation of <= 128 exact products).
 *   layernorm: 1e-4 (1 + |ref|): f32 mean and variance over <= 1024 terms.
 *   rmsnorm: 2^-8 |ref| (bf16 output; exact for f32) + 1e-4 (1 + |ref|).
 *   topk_routing: expert indices exact (logits are spaced 1/8 apart, so no
 *     rounding can reorder them); weights 1e-5 (1 + |ref|).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "ir/fpconv.h"
#include "ir/interp.h"
#include "passes/pass.h"

/* ---- buffers ------------------------------------------------------------------ */

/* A kernel buffer: `init` is restored into `data` before every run. */
typedef struct TBuf {
    const char *name;
    size_t bytes;
    unsigned char *init, *data;
} TBuf;

static TBuf tb_new(const char *name, size_t bytes)
{
    TBuf b = {name, bytes, calloc(bytes ? bytes : 1, 1), calloc(bytes ? bytes : 1, 1)};
    return b;
}
static TBuf tb_output(const char *name, size_t bytes)
{
    TBuf b = tb_new(name, bytes);
    memset(b.init, 0xFF, bytes); /* poison */
    return b;
}
static void tb_free(TBuf *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        free(b[i].init);
        free(b[i].data);
    }
}

static uint64_t rng_state = 0x853C49E6748FEA9Bull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
/* Nonzero, magnitude in [0.05, mag), random sign. */
static double rnd_f(double mag)
{
    double u = (double)(rnd() >> 11) / 9007199254740992.0;
    double v = 0.05 + u * (mag - 0.05);
    return (rnd() & 1) ? -v : v;
}
static TBuf tb_f32(const char *name, size_t n, double mag)
{
    TBuf b = tb_new(name, n * 4);
    for (size_t i = 0; i < n; i++) ((float *)b.init)[i] = (float)rnd_f(mag);
    return b;
}
static float f32_at(const TBuf *b, size_t i) { return ((const float *)b->data)[i]; }
static float f32_in(const TBuf *b, size_t i) { return ((const float *)b->init)[i]; }
static int32_t i32_at(const TBuf *b, size_t i) { return ((const int32_t *)b->data)[i]; }
static int32_t i32_in(const TBuf *b, size_t i) { return ((const int32_t *)b->init)[i]; }

static InterpArg a_ptr(uint32_t buf) { return (InterpArg){.kind = IARG_PTR, .buf = buf}; }
static InterpArg a_int(int64_t v) { return (InterpArg){.kind = IARG_SCALAR, .i = v}; }
static InterpArg a_view2(uint32_t buf, int64_t rows, int64_t cols, int64_t ld)
{
    return (InterpArg){.kind = IARG_VIEW, .buf = buf, .shape = {rows, cols}, .stride = {ld, 1}};
}

/* ---- compiling and running ------------------------------------------------------- */

typedef struct Prog {
    char *path, *src;
    size_t len;
    Ast *ast;
    IrModule *m;
    IrFunc *f;
    Diag d;
} Prog;

static void prog_compile(Prog *p, const char *rel, const char *kernel, const FeDefine *defs, uint32_t ndefs,
                         bool optimize)
{
    memset(p, 0, sizeof *p);
    size_t n = strlen(TILEC_SOURCE_DIR) + strlen(rel) + 2;
    p->path = malloc(n);
    snprintf(p->path, n, "%s/%s", TILEC_SOURCE_DIR, rel);
    p->src = tl_read_file(p->path, &p->len);
    if (!p->src) fail_msg("cannot read %s", p->path);
    diag_init(&p->d, rel, p->src, p->len, NULL, DIAG_COLOR_NEVER);
    p->d.capture = true;
    p->ast = ast_parse(rel, p->src, p->len, &p->d);
    FeOptions o = {defs, ndefs, kernel};
    if (p->ast) p->m = fe_lower(p->ast, &o, &p->d);
    if (!p->m) fail_msg("%s: %s does not compile:\n%s", rel, kernel, p->d.buf.s ? p->d.buf.s : "");
    if (optimize && !pass_run_pipeline(p->m, NULL, 0, &(PassDump){0}, &p->d))
        fail_msg("passes failed on %s:\n%s", kernel, p->d.buf.s ? p->d.buf.s : "");
    if (p->d.nerrors) fail_msg("%s", p->d.buf.s);
    p->f = ir_module_find(p->m, kernel);
    assert_non_null(p->f);
}

static void prog_free(Prog *p)
{
    ir_module_free(p->m);
    ast_free(p->ast);
    diag_free(&p->d);
    free(p->src);
    free(p->path);
}

typedef struct Exec {
    const char *file, *kernel;
    const FeDefine *defs;
    uint32_t ndefs;
    TBuf *bufs;
    uint32_t nbufs;
    const InterpArg *args;
    const uint32_t *grid;   /* NULL: the kernel's grid clause */
    FILE *print_out;
} Exec;

/* Runs one compiled variant on fresh copies of the buffers; false after an
 * interpreter error, whose text is left in *errors (malloc'd). */
static bool run_variant(const Exec *e, bool optimize, char **errors)
{
    Prog p;
    prog_compile(&p, e->file, e->kernel, e->defs, e->ndefs, optimize);
    InterpBuf ib[16];
    assert_true(e->nbufs <= 16);
    for (uint32_t i = 0; i < e->nbufs; i++) {
        memcpy(e->bufs[i].data, e->bufs[i].init, e->bufs[i].bytes);
        ib[i] = (InterpBuf){e->bufs[i].data, e->bufs[i].bytes, e->bufs[i].name};
    }
    uint32_t grid[3];
    bool ok = true;
    if (e->grid) memcpy(grid, e->grid, sizeof grid);
    else ok = interp_grid(p.f, e->args, grid, &p.d);
    InterpOptions opt = {.print_out = e->print_out, .max_steps = 1u << 30};
    ok = ok && interp_run(p.f, ib, e->nbufs, e->args, grid, &opt, &p.d);
    *errors = p.d.buf.s ? tl_xstrdup(p.d.buf.s) : tl_xstrdup("");
    prog_free(&p);
    return ok;
}

/* Runs -O0, then optimized; both must succeed and agree bit for bit.  The
 * buffers keep the -O0 results. */
static void exec(const Exec *e)
{
    char *err;
    if (!run_variant(e, true, &err)) fail_msg("%s (optimized) failed:\n%s", e->kernel, err);
    free(err);
    unsigned char *opt_out[16];
    for (uint32_t i = 0; i < e->nbufs; i++) {
        opt_out[i] = malloc(e->bufs[i].bytes ? e->bufs[i].bytes : 1);
        memcpy(opt_out[i], e->bufs[i].data, e->bufs[i].bytes);
    }
    if (!run_variant(e, false, &err)) fail_msg("%s failed:\n%s", e->kernel, err);
    free(err);
    for (uint32_t i = 0; i < e->nbufs; i++) {
        if (memcmp(opt_out[i], e->bufs[i].data, e->bufs[i].bytes) != 0)
            fail_msg("%s: buffer '%s' differs between -O0 and the optimized kernel", e->kernel, e->bufs[i].name);
        free(opt_out[i]);
    }
}

/* The 1-based line of the first occurrence of `needle` in a source file. */
static int line_of(const char *rel, const char *needle)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, rel);
    size_t len;
    char *src = tl_read_file(path, &len);
    assert_non_null(src);
    char *at = strstr(src, needle);
    assert_non_null(at);
    int line = 1;
    for (char *c = src; c < at; c++) line += *c == '\n';
    free(src);
    return line;
}

static bool close_to(double got, double ref, double tol)
{
    if (isnan(ref)) return isnan(got);
    return fabs(got - ref) <= tol;
}

/* ---- the LANGUAGE.md examples -------------------------------------------------------- */

static void test_vadd(void **state)
{
    (void)state;
    int ns[] = {1000, 4097, 1, 1024};
    for (size_t t = 0; t < TL_COUNTOF(ns); t++) {
        size_t n = (size_t)ns[t];
        TBuf b[] = {tb_f32("x", n, 100), tb_f32("y", n, 100), tb_output("out", n * 4)};
        InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_int(ns[t])};
        Exec e = {"examples/vadd.tile", "vadd", NULL, 0, b, 3, args, NULL, NULL};
        exec(&e);
        for (size_t i = 0; i < n; i++)
            assert_true(f32_at(&b[2], i) == (float)((double)f32_in(&b[0], i) + f32_in(&b[1], i)));
        tb_free(b, 3);
    }
    /* BLOCK overridden: same results */
    TBuf b[] = {tb_f32("x", 300, 1), tb_f32("y", 300, 1), tb_output("out", 1200)};
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_int(300)};
    FeDefine d = {"BLOCK", "64"};
    Exec e = {"examples/vadd.tile", "vadd", &d, 1, b, 3, args, NULL, NULL};
    exec(&e);
    for (size_t i = 0; i < 300; i++) assert_true(f32_at(&b[2], i) == f32_in(&b[0], i) + f32_in(&b[1], i));
    tb_free(b, 3);
}

/* vadd told that n exceeds its buffers: the interpreter names the argument, the
 * offset and the load's position in examples/vadd.tile. */
static void test_vadd_out_of_bounds(void **state)
{
    (void)state;
    TBuf b[] = {tb_f32("x", 900, 1), tb_f32("y", 1000, 1), tb_output("out", 4000)};
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_int(1000)};
    Exec e = {"examples/vadd.tile", "vadd", NULL, 0, b, 3, args, NULL, NULL};
    char *err;
    assert_false(run_variant(&e, false, &err));
    char want[256];
    snprintf(want, sizeof want, "examples/vadd.tile:%d:", line_of("examples/vadd.tile", "load(x"));
    if (!strstr(err, want) || !strstr(err, "out of bounds: byte offset 3600 (element 900) of 'x'"))
        fail_msg("unexpected message:\n%s", err);
    free(err);
    tb_free(b, 3);
}

static void check_softmax(size_t rows, size_t cols, size_t ld)
{
    TBuf b[] = {tb_f32("x", rows * ld, 8), tb_output("y", rows * ld * 4)};
    InterpArg args[] = {a_view2(0, (int64_t)rows, (int64_t)cols, (int64_t)ld),
                        a_view2(1, (int64_t)rows, (int64_t)cols, (int64_t)ld)};
    Exec e = {"examples/softmax.tile", "softmax", NULL, 0, b, 2, args, NULL, NULL};
    exec(&e);
    for (size_t r = 0; r < rows; r++) {
        double mx = -INFINITY, s = 0;
        for (size_t c = 0; c < cols; c++) mx = fmax(mx, f32_in(&b[0], r * ld + c));
        for (size_t c = 0; c < cols; c++) s += exp(f32_in(&b[0], r * ld + c) - mx);
        for (size_t c = 0; c < ld; c++) {
            float got = f32_at(&b[1], r * ld + c);
            if (c >= cols) {
                assert_true(isnan(got)); /* outside the view: untouched */
                continue;
            }
            double ref = exp(f32_in(&b[0], r * ld + c) - mx) / s;
            if (!close_to(got, ref, 1e-4 * ref))
                fail_msg("softmax %zux%zu [%zu][%zu]: %.9g, want %.9g", rows, cols, r, c, got, ref);
        }
    }
    tb_free(b, 2);
}

static void test_softmax(void **state)
{
    (void)state;
    check_softmax(37, 1000, 1000);
    check_softmax(5, 1024, 1024);
    check_softmax(3, 1, 1);
    check_softmax(4, 700, 709); /* a row stride wider than the row */
}

static void check_gemm(const char *T, size_t M, size_t K, size_t N, const char *bm, const char *bn, const char *bk)
{
    DType dt = strcmp(T, "f16") == 0 ? DT_F16 : DT_BF16;
    TBuf b[] = {tb_new("A", M * K * 2), tb_new("B", K * N * 2), tb_output("C", M * N * 2)};
    double *a = malloc(M * K * sizeof *a), *bb = malloc(K * N * sizeof *bb);
    for (size_t i = 0; i < M * K; i++) {
        a[i] = fp_round(dt, rnd_f(2));
        fp_store(dt, b[0].init + 2 * i, a[i]);
    }
    for (size_t i = 0; i < K * N; i++) {
        bb[i] = fp_round(dt, rnd_f(2));
        fp_store(dt, b[1].init + 2 * i, bb[i]);
    }
    InterpArg args[] = {a_view2(0, (int64_t)M, (int64_t)K, (int64_t)K), a_view2(1, (int64_t)K, (int64_t)N, (int64_t)N),
                        a_view2(2, (int64_t)M, (int64_t)N, (int64_t)N)};
    FeDefine defs[] = {{"T", T}, {"BM", bm}, {"BN", bn}, {"BK", bk}};
    Exec e = {"examples/gemm.tile", "gemm", defs, 4, b, 3, args, NULL, NULL};
    exec(&e);
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            double ref = 0, mag = 0;
            for (size_t k = 0; k < K; k++) {
                ref += a[m * K + k] * bb[k * N + n];
                mag += fabs(a[m * K + k] * bb[k * N + n]);
            }
            double got = fp_load(DT_BF16, b[2].data + 2 * (m * N + n));
            if (!close_to(got, ref, 0x1p-8 * fabs(ref) + 0x1p-16 * mag))
                fail_msg("gemm<%s> %zux%zux%zu [%zu][%zu]: %.9g, want %.9g", T, M, K, N, m, n, got, ref);
        }
    free(a), free(bb);
    tb_free(b, 3);
}

static void test_gemm(void **state)
{
    (void)state;
    check_gemm("bf16", 100, 72, 130, "32", "32", "16");
    check_gemm("f16", 100, 72, 130, "16", "64", "32");
    check_gemm("bf16", 64, 32, 64, "32", "32", "32");
    check_gemm("bf16", 1, 1, 1, "16", "16", "16");
}

static InterpArg a_f32(double v) { return (InterpArg){.kind = IARG_SCALAR, .f = v}; }

static void check_layernorm(size_t rows, size_t cols)
{
    TBuf b[] = {tb_f32("x", rows * cols, 8), tb_f32("w", cols, 2), tb_f32("b", cols, 2), tb_output("y", rows * cols * 4)};
    InterpArg args[] = {a_view2(0, (int64_t)rows, (int64_t)cols, (int64_t)cols), a_ptr(1), a_ptr(2),
                        a_view2(3, (int64_t)rows, (int64_t)cols, (int64_t)cols), a_f32(1e-5)};
    Exec e = {"examples/layernorm.tile", "layernorm", NULL, 0, b, 4, args, NULL, NULL};
    exec(&e);
    for (size_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (size_t c = 0; c < cols; c++) mean += f32_in(&b[0], r * cols + c);
        mean /= (double)cols;
        for (size_t c = 0; c < cols; c++) var += pow(f32_in(&b[0], r * cols + c) - mean, 2);
        var /= (double)cols;
        for (size_t c = 0; c < cols; c++) {
            double ref = (f32_in(&b[0], r * cols + c) - mean) / sqrt(var + (double)1e-5f) * f32_in(&b[1], c) +
                         f32_in(&b[2], c);
            double got = f32_at(&b[3], r * cols + c);
            if (!close_to(got, ref, 1e-4 * (1 + fabs(ref))))
                fail_msg("layernorm %zux%zu [%zu][%zu]: %.9g, want %.9g", rows, cols, r, c, got, ref);
        }
    }
    tb_free(b, 4);
}

static void test_layernorm(void **state)
{
    (void)state;
    check_layernorm(13, 1000);
    check_layernorm(2, 1024);
    check_layernorm(5, 3);
}

static void check_rmsnorm(const char *T, DType dt, size_t rows, size_t cols)
{
    int sz = dt_bytes(dt);
    TBuf b[] = {tb_new("x", rows * cols * (size_t)sz), tb_new("w", cols * (size_t)sz), tb_output("y", rows * cols * (size_t)sz)};
    for (size_t i = 0; i < rows * cols; i++) fp_store(dt, b[0].init + i * (size_t)sz, rnd_f(4));
    for (size_t i = 0; i < cols; i++) fp_store(dt, b[1].init + i * (size_t)sz, rnd_f(2));
    InterpArg args[] = {a_view2(0, (int64_t)rows, (int64_t)cols, (int64_t)cols), a_ptr(1),
                        a_view2(2, (int64_t)rows, (int64_t)cols, (int64_t)cols), a_f32(1e-6)};
    FeDefine d = {"T", T};
    Exec e = {"examples/rmsnorm.tile", "rmsnorm", &d, 1, b, 3, args, NULL, NULL};
    exec(&e);
    double out_tol = dt == DT_F32 ? 0 : 0x1p-8;
    for (size_t r = 0; r < rows; r++) {
        double ms = 0;
        for (size_t c = 0; c < cols; c++) ms += pow(fp_load(dt, b[0].init + (r * cols + c) * (size_t)sz), 2);
        ms /= (double)cols;
        for (size_t c = 0; c < cols; c++) {
            double x = fp_load(dt, b[0].init + (r * cols + c) * (size_t)sz), w = fp_load(dt, b[1].init + c * (size_t)sz);
            double ref = x / sqrt(ms + (double)1e-6f) * w;
            double got = fp_load(dt, b[2].data + (r * cols + c) * (size_t)sz);
            if (!close_to(got, ref, out_tol * fabs(ref) + 1e-4 * (1 + fabs(ref))))
                fail_msg("rmsnorm<%s> %zux%zu [%zu][%zu]: %.9g, want %.9g", T, rows, cols, r, c, got, ref);
        }
    }
    tb_free(b, 3);
}

static void test_rmsnorm(void **state)
{
    (void)state;
    check_rmsnorm("bf16", DT_BF16, 9, 1000);
    check_rmsnorm("f16", DT_F16, 4, 513);
    check_rmsnorm("f32", DT_F32, 3, 1024);
}

static void check_routing(size_t tokens, size_t experts, const char *k_text, size_t K)
{
    TBuf b[] = {tb_new("logits", tokens * experts * 4), tb_output("weights", tokens * K * 4),
                tb_output("experts", tokens * K * 4)};
    float *lg = (float *)b[0].init;
    for (size_t t = 0; t < tokens; t++)
        for (size_t x = 0; x < experts; x++) /* distinct within a row, 1/8 apart */
            lg[t * experts + x] = (float)((double)((x * 37 + t * 11) % experts) / 8.0 - 4.0);
    InterpArg args[] = {a_view2(0, (int64_t)tokens, (int64_t)experts, (int64_t)experts),
                        a_view2(1, (int64_t)tokens, (int64_t)K, (int64_t)K), a_view2(2, (int64_t)tokens, (int64_t)K, (int64_t)K)};
    FeDefine d = {"K", k_text};
    Exec e = {"examples/topk_routing.tile", "topk_routing", &d, 1, b, 3, args, NULL, NULL};
    exec(&e);
    for (size_t t = 0; t < tokens; t++) {
        double mx = -INFINITY, s = 0, p[64], top = 0;
        size_t pick[8];
        for (size_t x = 0; x < experts; x++) mx = fmax(mx, lg[t * experts + x]);
        for (size_t x = 0; x < experts; x++) s += p[x] = exp(lg[t * experts + x] - mx);
        for (size_t q = 0; q < K; q++) {
            size_t best = SIZE_MAX;
            for (size_t x = 0; x < experts; x++) {
                bool taken = false;
                for (size_t j = 0; j < q; j++) taken |= pick[j] == x;
                if (!taken && (best == SIZE_MAX || p[x] > p[best])) best = x;
            }
            pick[q] = best;
            top += p[best] / s;
        }
        for (size_t q = 0; q < K; q++) {
            assert_int_equal(i32_at(&b[2], t * K + q), (int32_t)pick[q]);
            double ref = p[pick[q]] / s / top;
            if (!close_to(f32_at(&b[1], t * K + q), ref, 1e-5 * (1 + ref)))
                fail_msg("topk_routing token %zu rank %zu: %.9g, want %.9g", t, q, f32_at(&b[1], t * K + q), ref);
        }
    }
    tb_free(b, 3);
}

static void test_topk_routing(void **state)
{
    (void)state;
    check_routing(50, 64, "2", 2);
    check_routing(16, 64, "8", 8);
    check_routing(7, 64, "1", 1);
}

/* ---- one kernel per builtin -------------------------------------------------------------- */

#define BUILTINS "tests/interp/builtins.tile"

typedef double (*HostFn)(double);
static double h_logabs(double x) { return log(fabs(x)); }
static double h_log2abs(double x) { return log2(fabs(x)); }
static double h_sqrtabs(double x) { return sqrt(fabs(x)); }
static double h_rsqrtabs(double x) { return 1.0 / sqrt(fabs(x)); }
static double h_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static void test_math(void **state)
{
    (void)state;
    struct { const char *kernel; HostFn fn; double mag; } k[] = {
        {"k_exp", exp, 20},           {"k_exp2", exp2, 20},       {"k_log", h_logabs, 1e4},
        {"k_log2", h_log2abs, 1e4},   {"k_sqrt", h_sqrtabs, 1e4}, {"k_rsqrt", h_rsqrtabs, 1e4},
        {"k_abs", fabs, 100},         {"k_sigmoid", h_sigmoid, 30}, {"k_tanh", tanh, 10},
        {"k_erf", erf, 4},            {"k_floor", floor, 100},    {"k_ceil", ceil, 100},
    };
    for (size_t q = 0; q < TL_COUNTOF(k); q++) {
        size_t n = 1000;
        TBuf b[] = {tb_f32("x", n, k[q].mag), tb_output("y", n * 4)};
        InterpArg args[] = {a_ptr(0), a_ptr(1), a_int((int64_t)n)};
        Exec e = {BUILTINS, k[q].kernel, NULL, 0, b, 2, args, NULL, NULL};
        exec(&e);
        for (size_t i = 0; i < n; i++) {
            float want = (float)k[q].fn(f32_in(&b[0], i));
            if (f32_at(&b[1], i) != want)
                fail_msg("%s(%a) = %a, want %a", k[q].kernel, f32_in(&b[0], i), f32_at(&b[1], i), want);
        }
        tb_free(b, 2);
    }
}

static void test_arith(void **state)
{
    (void)state;
    size_t n = 777;
    TBuf b[] = {tb_f32("x", n, 50), tb_f32("y", n, 50), tb_output("out", 10 * n * 4)};
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_int((int64_t)n)};
    Exec e = {BUILTINS, "k_arith", NULL, 0, b, 3, args, NULL, NULL};
    exec(&e);
    for (size_t i = 0; i < n; i++) {
        float a = f32_in(&b[0], i), c = f32_in(&b[1], i);
        float want[] = {(float)((double)a + c), (float)((double)a - c), (float)((double)a * c), (float)((double)a / c),
                        (float)fmod(a, c), fmaxf(a, c), fminf(a, c), a > c ? a : -c, fmaf(a, c, a),
                        (float)((double)(-a * 2.0f) + 1.0)};
        for (size_t q = 0; q < TL_COUNTOF(want); q++)
            if (f32_at(&b[2], q * n + i) != want[q])
                fail_msg("k_arith result %zu lane %zu: %a, %a -> %a, want %a", q, i, a, c, f32_at(&b[2], q * n + i),
                         want[q]);
    }
    tb_free(b, 3);
}

static void test_int(void **state)
{
    (void)state;
    size_t n = 500;
    TBuf b[] = {tb_new("x", n * 4), tb_new("y", n * 4), tb_output("out", 8 * n * 4)};
    int32_t *x = (int32_t *)b[0].init, *y = (int32_t *)b[1].init;
    for (size_t i = 0; i < n; i++) {
        x[i] = (int32_t)(uint32_t)rnd();
        y[i] = i % 3 ? (int32_t)(rnd() % 2001) - 1000 : (int32_t)(uint32_t)rnd();
        if (y[i] == 0) y[i] = 7;
    }
    x[0] = INT32_MIN, y[0] = -1;
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_int((int64_t)n)};
    Exec e = {BUILTINS, "k_int", NULL, 0, b, 3, args, NULL, NULL};
    exec(&e);
    for (size_t i = 0; i < n; i++) {
        int32_t a = x[i], c = y[i];
        int32_t want[] = {
            (int32_t)((uint32_t)a * (uint32_t)c + (uint32_t)a),
            c == -1 ? (int32_t)(0u - (uint32_t)a) : a / c,
            c == -1 ? 0 : a % c,
            (a & c) | (a ^ ~c),
            (int32_t)((uint32_t)a << (c & 31)),
            a >> (c & 31),
            ((a > c) && !(a == 0)) || (c < -1000),
            (int32_t)((uint32_t)(a > c ? a : c) - (uint32_t)(a < c ? a : c)),
        };
        for (size_t q = 0; q < TL_COUNTOF(want); q++)
            if (i32_at(&b[2], q * n + i) != want[q])
                fail_msg("k_int result %zu lane %zu: %d, %d -> %d, want %d", q, i, a, c, i32_at(&b[2], q * n + i),
                         want[q]);
    }
    tb_free(b, 3);
}

static void test_cast(void **state)
{
    (void)state;
    size_t n = 300;
    TBuf b[] = {tb_f32("x", n, 600), tb_output("oi", 2 * n * 4), tb_output("of", 5 * n * 4)};
    float *x = (float *)b[0].init;
    float special[] = {NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 448.0f, 464.0f, 1e5f, 65520.0f, 0.0009765625f, -0.7f};
    memcpy(x, special, sizeof special);
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_int((int64_t)n)};
    Exec e = {BUILTINS, "k_cast", NULL, 0, b, 3, args, NULL, NULL};
    exec(&e);
    for (size_t i = 0; i < n; i++) {
        double a = x[i], t = trunc(a);
        int32_t wi = isnan(a) ? 0 : t >= 2147483647.0 ? INT32_MAX : t <= -2147483648.0 ? INT32_MIN : (int32_t)t;
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        assert_int_equal(i32_at(&b[1], i), wi);
        assert_int_equal((uint32_t)i32_at(&b[1], n + i), bits);
        double want[] = {fp_from_f8e4m3(fp_to_f8e4m3(a)), fp_from_f8e5m2(fp_to_f8e5m2(a)), fp_from_bf16(fp_to_bf16(a)),
                         fp_from_f16(fp_to_f16(a)), (double)wi};
        for (size_t q = 0; q < TL_COUNTOF(want); q++) {
            float got = f32_at(&b[2], q * n + i);
            if (isnan(want[q]) ? !isnan(got) : got != (float)want[q])
                fail_msg("k_cast result %zu of %a: %a, want %a", q, a, got, want[q]);
        }
    }
    assert_true(f32_at(&b[2], 1) == 448.0f);         /* inf -> e4m3 saturates */
    assert_true(f32_at(&b[2], n + 7) == 57344.0f);   /* 1e5 -> e5m2 saturates */
    assert_true(isinf(f32_at(&b[2], 3 * n + 8)));     /* 65520 -> f16 inf */
    tb_free(b, 3);
}

static void test_shape(void **state)
{
    (void)state;
    TBuf b[] = {tb_output("out", 128 * 4)};
    InterpArg args[] = {a_ptr(0)};
    uint32_t grid[3] = {1, 1, 1};
    Exec e = {BUILTINS, "k_shape", NULL, 0, b, 1, args, grid, NULL};
    exec(&e);
    for (int c = 0; c < 16; c++)
        for (int r = 0; r < 8; r++) assert_int_equal(i32_at(&b[0], (size_t)(c * 8 + r)), 101 * r + c + 7);
    tb_free(b, 1);
}

static void test_reduce(void **state)
{
    (void)state;
    enum { ROWS = 37, COLS = 50, OLD = 67 };
    TBuf b[] = {tb_f32("x", ROWS * COLS, 100), tb_output("out", ROWS * OLD * 4), tb_output("idx", ROWS * 2 * 4)};
    float *x = (float *)b[0].init;
    x[3 * COLS + 10] = x[3 * COLS + 20] = 500.0f; /* ties: argmax is 10 */
    x[4 * COLS + 7] = x[4 * COLS + 8] = -500.0f;  /* argmin is 7 */
    InterpArg args[] = {a_view2(0, ROWS, COLS, COLS), a_view2(1, ROWS, OLD, OLD), a_view2(2, ROWS, 2, 2)};
    Exec e = {BUILTINS, "k_reduce", NULL, 0, b, 3, args, NULL, NULL};
    exec(&e);
    for (size_t r = 0; r < ROWS; r++) {
        float v[64], s = 0, mx = -INFINITY, mn = INFINITY;
        int amx = 0, amn = 0;
        for (int c = 0; c < 64; c++) {
            v[c] = c < COLS ? x[r * COLS + (size_t)c] : 0.5f; /* the load's `other` */
            s = c ? s + v[c] : v[c];
            assert_true(f32_at(&b[1], r * OLD + (size_t)c) == s);
            if (v[c] > mx) mx = v[c], amx = c;
            if (v[c] < mn) mn = v[c], amn = c;
        }
        assert_true(f32_at(&b[1], r * OLD + 64) == s);
        assert_true(f32_at(&b[1], r * OLD + 65) == mx);
        assert_true(f32_at(&b[1], r * OLD + 66) == mn);
        assert_int_equal(i32_at(&b[2], r * 2), amx);
        assert_int_equal(i32_at(&b[2], r * 2 + 1), amn);
    }
    assert_int_equal(i32_at(&b[2], 3 * 2), 10);
    assert_int_equal(i32_at(&b[2], 4 * 2 + 1), 7);
    tb_free(b, 3);
}

static void test_sort_topk(void **state)
{
    (void)state;
    TBuf b[] = {tb_new("x", 128 * 4), tb_output("out", (256 + 32) * 4), tb_output("idx", 32 * 4)};
    float *x = (float *)b[0].init;
    for (int i = 0; i < 128; i++) x[i] = (float)(int)(rnd() % 9) - 4.5f; /* many ties */
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2)};
    uint32_t grid[3] = {1, 1, 1};
    Exec e = {BUILTINS, "k_sort", NULL, 0, b, 3, args, grid, NULL};
    exec(&e);
    for (int r = 0; r < 4; r++) {
        int order[32]; /* stable ascending by insertion sort */
        for (int i = 0; i < 32; i++) order[i] = i;
        for (int i = 1; i < 32; i++)
            for (int j = i; j > 0 && x[r * 32 + order[j - 1]] > x[r * 32 + order[j]]; j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        for (int i = 0; i < 32; i++) {
            assert_true(f32_at(&b[1], (size_t)(r * 32 + i)) == x[r * 32 + order[i]]);
            assert_true(f32_at(&b[1], (size_t)(128 + r * 32 + i)) == x[r * 32 + order[31 - i]]);
        }
        bool used[32] = {0};
        for (int t = 0; t < 8; t++) { /* k largest, ties to the lower index */
            int best = -1;
            for (int c = 0; c < 32; c++)
                if (!used[c] && (best < 0 || x[r * 32 + c] > x[r * 32 + best])) best = c;
            used[best] = true;
            assert_int_equal(i32_at(&b[2], (size_t)(r * 8 + t)), best);
            assert_true(f32_at(&b[1], (size_t)(256 + r * 8 + t)) == x[r * 32 + best]);
        }
    }
    tb_free(b, 3);
}

static void test_atomic(void **state)
{
    (void)state;
    enum { N = 1000, BINS = 10 };
    TBuf b[] = {tb_new("bins", N * 4), tb_f32("val", N, 100), tb_new("hist", BINS * 4), tb_new("hmax", BINS * 4),
                tb_new("hmin", BINS * 4), tb_new("owner", BINS * 4)};
    for (int i = 0; i < N; i++) ((int32_t *)b[0].init)[i] = (int32_t)(rnd() % BINS);
    for (int i = 0; i < BINS; i++) {
        ((float *)b[3].init)[i] = -INFINITY;
        ((float *)b[4].init)[i] = INFINITY;
        ((int32_t *)b[5].init)[i] = -1;
    }
    InterpArg args[] = {a_ptr(0), a_ptr(1), a_ptr(2), a_ptr(3), a_ptr(4), a_ptr(5), a_int(N)};
    Exec e = {BUILTINS, "k_atomic", NULL, 0, b, 6, args, NULL, NULL};
    exec(&e);
    for (int bin = 0; bin < BINS; bin++) {
        int count = 0, first = -1;
        float mx = -INFINITY, mn = INFINITY;
        for (int i = 0; i < N; i++)
            if (i32_in(&b[0], (size_t)i) == bin) {
                count++;
                if (first < 0) first = i;
                mx = fmaxf(mx, f32_in(&b[1], (size_t)i));
                mn = fminf(mn, f32_in(&b[1], (size_t)i));
            }
        assert_int_equal(i32_at(&b[2], (size_t)bin), count);
        assert_true(f32_at(&b[3], (size_t)bin) == mx);
        assert_true(f32_at(&b[4], (size_t)bin) == mn);
        assert_int_equal(i32_at(&b[5], (size_t)bin), first);
    }
    tb_free(b, 6);
}

static void test_flow(void **state)
{
    (void)state;
    int ns[] = {10, 27, 1, 100, 2};
    for (size_t t = 0; t < TL_COUNTOF(ns); t++) {
        TBuf b[] = {tb_output("out", 8)};
        InterpArg args[] = {a_int(ns[t]), a_ptr(0)};
        uint32_t grid[3] = {1, 1, 1};
        Exec e = {BUILTINS, "k_flow", NULL, 0, b, 1, args, grid, NULL};
        exec(&e);
        int s = 0, k = ns[t], steps = 0;
        for (int i = ns[t]; i > 0; i -= 3) s += i % 2 == 0 ? i : -1;
        while (k != 1) k = k % 2 == 0 ? k / 2 : 3 * k + 1, steps++;
        assert_int_equal(i32_at(&b[0], 0), s);
        assert_int_equal(i32_at(&b[0], 1), steps);
        tb_free(b, 1);
    }
}

static void test_pid(void **state)
{
    (void)state;
    TBuf b[] = {tb_output("out", 15 * 4)};
    InterpArg args[] = {a_ptr(0)};
    Exec e = {BUILTINS, "k_pid", NULL, 0, b, 1, args, NULL, NULL};
    exec(&e);
    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 5; y++) assert_int_equal(i32_at(&b[0], (size_t)(x * 5 + y)), x * 10 + y);
    tb_free(b, 1);
}

static void test_print_assert(void **state)
{
    (void)state;
    char text[256];
    TBuf b[] = {tb_new("x", 16)};
    float v[4] = {1, 2, 3, 4.5f};
    memcpy(b[0].init, v, sizeof v);
    InterpArg args[] = {a_ptr(0)};
    uint32_t grid[3] = {2, 1, 1};
    FILE *pf = fmemopen(text, sizeof text, "w");
    Exec e = {BUILTINS, "k_print", NULL, 0, b, 1, args, grid, pf};
    char *err;
    assert_true(run_variant(&e, false, &err));
    free(err);
    fclose(pf);
    assert_string_equal(text, "pid (0, 0, 0) v: 1 2 3 4.5\npid (1, 0, 0) v: 1 2 3 4.5\n");

    float big[4] = {50, 50, 1, 1};
    memcpy(b[0].init, big, sizeof big);
    e.print_out = pf = fmemopen(text, sizeof text, "w");
    assert_false(run_variant(&e, false, &err));
    fclose(pf);
    char want[128];
    snprintf(want, sizeof want, "builtins.tile:%d:5: error: assertion failed: sum too large",
             line_of(BUILTINS, "assert(sum"));
    if (!strstr(err, want)) fail_msg("expected '%s' in:\n%s", want, err);
    free(err);
    tb_free(b, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd),    cmocka_unit_test(test_vadd_out_of_bounds),
        cmocka_unit_test(test_softmax), cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_layernorm), cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_topk_routing),
        cmocka_unit_test(test_math),    cmocka_unit_test(test_arith),
        cmocka_unit_test(test_int),     cmocka_unit_test(test_cast),
        cmocka_unit_test(test_shape),   cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_sort_topk), cmocka_unit_test(test_atomic),
        cmocka_unit_test(test_flow),    cmocka_unit_test(test_pid),
        cmocka_unit_test(test_print_assert),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
