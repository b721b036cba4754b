/* bench.c: `tilec bench`, one kernel timed on the GPU.
 *
 *   tilec bench FILE --kernel NAME ARG... [--runs N] [--warmup N] [--no-flush]
 *               [--bytes EXPR] [--flops EXPR] [run's options]
 *
 * Steps:
 *   1. As `tilec run`: parse the command line, build the IR, pick the kernel,
 *      bind the arguments (files, random shapes, scalars), the grid.
 *   2. Evaluate --bytes and --flops over the arguments (before touching the GPU,
 *      so a typo costs nothing).
 *   3. Open the GPU, compile for its arch, load, copy the arguments over
 *      (run_device_prepare, dev_upload).
 *   4. --warmup launches, then a wait.
 *   5. --runs times: write a 256 MiB buffer (so the kernel starts with a cold
 *      L2: the H100/H200 L2 is 50-60 MB), record an event, launch, record an
 *      event; queued in batches of 256 without waiting, so the host's launch
 *      overhead is not timed; then each pair's elapsed time.
 *   6. Sort; print the median, min, max and spread = (p90 - p10) / median,
 *      and bytes/median and flops/median when asked.
 * Times are the GPU's own (CUDA events); the host's clock is never used.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "run.h"

#define FLUSH_BYTES ((size_t)256 << 20)

/* ---- --bytes / --flops expressions -------------------------------------------------- */

/* A recursive-descent evaluator in double precision:
 *   expr  := term (('+' | '-') term)*
 *   term  := unary (('*' | '/' | '%') unary)*
 *   unary := ('-' | '+') unary | primary
 *   primary := NUMBER | '(' expr ')' | NAME | NAME '.' ('bytes' | 'numel') | NAME '.shape' '[' expr ']'
 * NAME: a scalar argument, a buffer argument (with a field), or a compile-time parameter. */
typedef struct Expr {
    const char *opt;            /* "--bytes", for messages */
    const char *text, *p;
    const KernelArgs *ka;
    Diag *d;
    bool failed;
} Expr;

static double expr_sum(Expr *e);

static void expr_error(Expr *e, const char *fmt, const char *arg)
{
    if (e->failed) return;
    char msg[300];
    snprintf(msg, sizeof msg, fmt, arg);
    diag_error_noloc(e->d, "%s '%s': %s (at column %d)", e->opt, e->text, msg, (int)(e->p - e->text) + 1);
    e->failed = true;
}

static void skip_space(Expr *e)
{
    while (*e->p == ' ' || *e->p == '\t') e->p++;
}

static bool eat(Expr *e, char c)
{
    skip_space(e);
    if (*e->p != c) return false;
    e->p++;
    return true;
}

/* The length of the identifier at p (0 if none). */
static size_t ident_len(const char *p)
{
    size_t n = 0;
    if (!(isalpha((unsigned char)p[0]) || p[0] == '_')) return 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_') n++;
    return n;
}

static double name_value(Expr *e, const char *name, size_t n)
{
    const IrFunc *f = e->ka->f;
    char buf[128];
    snprintf(buf, sizeof buf, "%.*s", (int)(n < 100 ? n : 100), name);
    int pi = run_find_param(f, name, n);
    if (pi >= 0) {
        const IrParam *p = &f->params[pi];
        const NpyArray *a = &e->ka->binds[pi].arr;
        if (run_is_buffer_param(p->ty)) {
            skip_space(e);
            size_t fl = *e->p == '.' ? ident_len(e->p + 1) : 0;
            if (!fl) {
                expr_error(e, "'%s' is a buffer: use NAME.bytes, NAME.numel or NAME.shape[i]", buf);
                return 0;
            }
            const char *field = e->p + 1;
            e->p += 1 + fl;
            if (fl == 5 && memcmp(field, "bytes", 5) == 0) return (double)a->bytes;
            if (fl == 5 && memcmp(field, "numel", 5) == 0) return (double)npy_numel(a);
            if (fl == 5 && memcmp(field, "shape", 5) == 0) {
                if (!eat(e, '[')) {
                    expr_error(e, "%s.shape wants an index: NAME.shape[i]", buf);
                    return 0;
                }
                double i = expr_sum(e);
                if (!eat(e, ']')) expr_error(e, "a ']' is missing after %s.shape[...", buf);
                if (e->failed) return 0;
                if (i != floor(i) || i < 0 || i >= (double)a->ndim) {
                    char what[160];
                    snprintf(what, sizeof what, "%s has %u dimensions", buf, a->ndim);
                    expr_error(e, "%s: the shape index is out of range", what);
                    return 0;
                }
                return (double)a->shape[(int)i];
            }
            char fname[64];
            snprintf(fname, sizeof fname, "%.*s", (int)(fl < 60 ? fl : 60), field);
            expr_error(e, "buffers have .bytes, .numel and .shape[i], not '.%s'", fname);
            return 0;
        }
        const InterpArg *arg = &e->ka->args[pi];
        return dt_is_float((DType)p->ty.dt) ? arg->f : (double)arg->i;
    }
    for (uint32_t i = 0; i < f->nspecs; i++)
        if (strlen(f->specs[i].name) == n && memcmp(f->specs[i].name, name, n) == 0) {
            char *end;
            double v = strtod(f->specs[i].value, &end);
            if (*end || end == f->specs[i].value) {
                expr_error(e, "compile-time parameter '%s' is not a number", buf);
                return 0;
            }
            return v;
        }
    expr_error(e, "unknown name '%s' (not an argument or compile-time parameter of the kernel)", buf);
    return 0;
}

static double expr_primary(Expr *e)
{
    skip_space(e);
    if (eat(e, '(')) {
        double v = expr_sum(e);
        if (!eat(e, ')')) expr_error(e, "a ')' is missing%s", "");
        return v;
    }
    size_t n = ident_len(e->p);
    if (n) {
        const char *name = e->p;
        e->p += n;
        return name_value(e, name, n);
    }
    if (isdigit((unsigned char)*e->p) || *e->p == '.') {
        char *end;
        double v = strtod(e->p, &end);
        e->p = end;
        return v;
    }
    expr_error(e, *e->p ? "expected a number, a name or '('%s" : "the expression ends too soon%s", "");
    return 0;
}

static double expr_unary(Expr *e)
{
    if (eat(e, '-')) return -expr_unary(e);
    if (eat(e, '+')) return expr_unary(e);
    return expr_primary(e);
}

static double expr_term(Expr *e)
{
    double v = expr_unary(e);
    while (!e->failed) {
        if (eat(e, '*')) v *= expr_unary(e);
        else if (eat(e, '/')) v /= expr_unary(e);
        else if (eat(e, '%')) v = fmod(v, expr_unary(e));
        else break;
    }
    return v;
}

static double expr_sum(Expr *e)
{
    double v = expr_term(e);
    while (!e->failed) {
        if (eat(e, '+')) v += expr_term(e);
        else if (eat(e, '-')) v -= expr_term(e);
        else break;
    }
    return v;
}

/* Evaluates text; false after an error. */
static bool expr_eval(const char *opt, const char *text, const KernelArgs *ka, double *out, Diag *d)
{
    Expr e = {opt, text, text, ka, d, false};
    double v = expr_sum(&e);
    skip_space(&e);
    if (!e.failed && *e.p) expr_error(&e, "unexpected '%s'", e.p);
    if (!e.failed && (!isfinite(v) || v <= 0)) {
        char num[64];
        snprintf(num, sizeof num, "%g", v);
        expr_error(&e, "the value %s is not a positive number", num);
    }
    *out = v;
    return !e.failed;
}

/* ---- timing ------------------------------------------------------------------------------ */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted t[0..n), interpolated linearly. */
static double quantile(const float *t, uint32_t n, double q)
{
    double pos = q * (double)(n - 1);
    uint32_t i = (uint32_t)pos;
    if (i + 1 >= n) return t[n - 1];
    return t[i] + (pos - i) * (t[i + 1] - t[i]);
}

/* Launches warmup + runs times; times[r] gets each timed run in ms.  Runs are
 * queued in batches with an event pair each and no wait in between, so the
 * host's launch overhead overlaps the GPU's work instead of being timed; with
 * the flush, the 256 MiB write ahead of each run keeps the queue full too. */
bool bench_time_runs(const RunOpts *ro, DevSession *ds, const uint32_t *grid, float *times, Diag *d)
{
    enum { BATCH = 256 };
    void *flush = NULL;
    DevEvent *ev[2 * BATCH] = {NULL};
    uint32_t nev = 2 * (ro->runs < BATCH ? ro->runs : BATCH);
    bool ok = false;
    if (ro->flush && tilert_malloc(&flush, FLUSH_BYTES) != TILERT_OK) {
        diag_error_noloc(d, "cannot allocate the 256 MiB L2-flush buffer: %s (--no-flush runs without it)",
                         tilert_last_error());
        return false;
    }
    for (uint32_t i = 0; i < nev; i++)
        if (!dev_event_create(&ev[i], d)) goto out;
    for (uint32_t i = 0; i < ro->warmup; i++)
        if (!dev_launch(ds, grid, d)) goto out;
    if (tilert_stream_synchronize(NULL) != TILERT_OK) {
        diag_error_noloc(d, "the kernel failed: %s", tilert_last_error());
        goto out;
    }
    for (uint32_t r0 = 0; r0 < ro->runs; r0 += BATCH) {
        uint32_t n = ro->runs - r0 < BATCH ? ro->runs - r0 : BATCH;
        for (uint32_t i = 0; i < n; i++) {
            if (flush && tilert_memset_d8(flush, (unsigned char)(r0 + i + 1), FLUSH_BYTES) != TILERT_OK) {
                diag_error_noloc(d, "cannot flush the L2 cache: %s", tilert_last_error());
                goto out;
            }
            if (!dev_event_record(ev[2 * i], d) || !dev_launch(ds, grid, d) || !dev_event_record(ev[2 * i + 1], d))
                goto out;
        }
        for (uint32_t i = 0; i < n; i++)
            if (!dev_event_elapsed(ev[2 * i], ev[2 * i + 1], &times[r0 + i], d)) goto out;
    }
    ok = true;
out:
    for (uint32_t i = 0; i < nev; i++) dev_event_destroy(ev[i]);
    if (flush) tilert_free(flush);
    return ok;
}

static void report(const RunOpts *ro, const DevSession *ds, const KernelArgs *ka, float *times, double bytes,
                   double flops)
{
    uint32_t n = ro->runs;
    qsort(times, n, sizeof *times, cmp_float);
    double med = quantile(times, n, 0.5), lo = times[0], hi = times[n - 1];
    double spread = med > 0 ? (quantile(times, n, 0.9) - quantile(times, n, 0.1)) / med : 0;
    tilert_kernel_info ki;
    uint32_t grid[3] = {0, 0, 0};
    tilert_kernel_get_info(ds->kernel, &ki);
    if (ro->has_grid) memcpy(grid, ro->grid, sizeof grid);
    else tilert_kernel_check(ds->kernel, ds->args, (int)ds->nparams, grid);
    printf("%s on %s (%s, %d SMs): grid (%u, %u, %u), %d warps, %u bytes of shared memory\n", ka->f->name,
           ds->info.name, ki.arch, ds->info.sm_count, grid[0], grid[1], grid[2], ki.warps,
           ki.smem_static + ki.smem_dynamic);
    printf("%u runs after %u warm-up%s\n", n, ro->warmup,
           ro->flush ? ", L2 flushed (256 MiB written) before each" : ", L2 not flushed");
    printf("  median  %12.3f us\n", med * 1e3);
    printf("  min     %12.3f us\n", lo * 1e3);
    printf("  max     %12.3f us\n", hi * 1e3);
    printf("  spread  %12.2f %%   (p90 - p10) / median\n", spread * 100);
    if (bytes > 0) printf("  bytes   %12.6g      %.1f GB/s\n", bytes, bytes / (med * 1e-3) / 1e9);
    if (flops > 0) printf("  flops   %12.6g      %.2f TFLOP/s\n", flops, flops / (med * 1e-3) / 1e12);
    fflush(stdout);
}

static int bench_kernel(RunOpts *ro, Source *s, IrModule *m)
{
    Diag *d = &s->diag;
    IrFunc *f = run_pick_kernel(m, ro->drv.kernel, d);
    if (!f) return 1;
    KernelArgs ka = {0};
    uint32_t grid[3];
    double bytes = 0, flops = 0;
    int rc = 1;
    if (!run_bind(ro, f, &ka, d) || !run_grid(ro, &ka, grid, d)) goto out;
    if (ro->bytes_expr && !expr_eval("--bytes", ro->bytes_expr, &ka, &bytes, d)) goto out;
    if (ro->flops_expr && !expr_eval("--flops", ro->flops_expr, &ka, &flops, d)) goto out;
    DevSession ds;
    float *times = tl_xcalloc(ro->runs, sizeof *times);
    if (run_device_prepare(ro, s, m, &ds) && dev_upload(&ds, &ka, d) &&
        bench_time_runs(ro, &ds, ro->has_grid ? grid : NULL, times, d)) {
        report(ro, &ds, &ka, times, bytes, flops);
        rc = 0;
    }
    free(times);
    dev_close(&ds);
out:
    run_args_free(&ka);
    return rc;
}

int bench_main(int argc, char **argv)
{
    RunOpts ro = {.seed = RUN_DEFAULT_SEED, .bench = true, .runs = BENCH_DEFAULT_RUNS,
                  .warmup = BENCH_DEFAULT_WARMUP, .flush = true};
    driver_opts_init(&ro.drv, "tilec bench");
    int rc = run_parse_args(argc, argv, &ro);
    if (rc < 0) {
        Source s;
        IrModule *m = NULL;
        rc = 1;
        if (source_open(&s, &ro.drv) && driver_compile(&s, &ro.drv, &m, DRIVER_IR, NULL)) rc = bench_kernel(&ro, &s, m);
        driver_free_ir(&s, m);
        source_close(&s);
    }
    run_opts_free(&ro);
    return rc;
}
