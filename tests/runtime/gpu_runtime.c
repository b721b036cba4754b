/* gpu_runtime.c: libtilert on a real GPU (ctest label `gpu`).
 *
 * Builds the test module (rt_util.h: vadd, rowscale over strided tensors,
 * smem_big with 100000 bytes of dynamic shared memory) from hand-written PTX
 * with nvJitLink, loads it, launches on random data with poisoned outputs and
 * checks every element; then the error paths with a real device: another
 * arch, a truncated cubin, too much shared memory, a kernel missing from the
 * cubin, bad arguments (which must not launch), an explicit grid, an empty
 * launch, and launches from several threads at once.
 *
 * On sm_90 and later, TMA (rt_util.h's tma_tile, hand-written PTX: cp.async.bulk.tensor
 * on an mbarrier, four CUtensorMap parameters of one view): the shared-memory image of
 * every box checked against a host model (ragged edges with zero and NaN fill, 128B
 * swizzle, element strides), the TMA rules refused on a real device, launches from
 * several threads, the driver's encoding compared with itself (the cache's premise),
 * a map of zeros for a tensor whose descriptors are optional and that TMA cannot
 * describe (and a real map never all zeros), and the host cost of building tensor
 * maps, printed.
 *
 * Standalone: needs only libtilert (linked in) and libnvJitLink.so.13.
 * Prints "SKIP: no CUDA device" and exits 77 without a GPU; exits 1 on any
 * failure; the last line is a summary.
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meta.h"
#include "rt_util.h"
#include "tilert.h"
#include "tma.h"

static int checks, failures;

#define CHECK(cond, ...)                                                                                  \
    do {                                                                                                  \
        checks++;                                                                                         \
        if (!(cond)) {                                                                                    \
            failures++;                                                                                   \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                   \
            printf(__VA_ARGS__);                                                                          \
            printf("\n");                                                                                 \
        }                                                                                                 \
    } while (0)

/* status s == want, and the message contains `phrase` (NULL: any) */
static void expect(tilert_status s, tilert_status want, const char *phrase, const char *what)
{
    CHECK(s == want && (!phrase || strstr(tilert_last_error(), phrase)), "%s: got %s (%s), want %s%s%s", what,
          tilert_status_string(s), tilert_last_error(), tilert_status_string(want), phrase ? " with " : "",
          phrase ? phrase : "");
    if (s != TILERT_OK && s == want) printf("  ok, %s: %s\n", what, tilert_last_error());
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    float v = (float)((rng >> 40) % 2000001) / 1000.0f - 1000.0f; /* [-1000, 1000] */
    return v == 0.0f ? 0.5f : v;
}

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    tilert_status s = tilert_malloc(&p, bytes);
    if (s) {
        printf("FATAL: tilert_malloc(%zu): %s\n", bytes, tilert_last_error());
        exit(1);
    }
    return p;
}

static void poison(void *d, size_t bytes) { tilert_memset_d8(d, 0xFF, bytes); } /* NaN pattern */

static void sync_ok(const char *what)
{
    tilert_status s = tilert_stream_synchronize(NULL);
    CHECK(s == TILERT_OK, "%s: synchronize: %s", what, tilert_last_error());
}

/* ---- the kernels ---------------------------------------------------------------- */

static void run_vadd(tilert_kernel *k, int n)
{
    size_t bytes = (size_t)(n ? n : 1) * 4;
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    for (int i = 0; i < n; i++) x[i] = rnd(), y[i] = rnd();
    float *dx = dalloc(bytes), *dy = dalloc(bytes), *dout = dalloc(bytes);
    tilert_memcpy_htod(dx, x, bytes);
    tilert_memcpy_htod(dy, y, bytes);
    poison(dout, bytes);
    tilert_arg a[4] = {tilert_arg_ptr(dx, TILERT_F32), tilert_arg_ptr(dy, TILERT_F32),
                       tilert_arg_ptr(dout, TILERT_F32), tilert_arg_i32(n)};
    char what[64];
    snprintf(what, sizeof what, "vadd n=%d", n);
    expect(tilert_launch(k, NULL, a, 4), TILERT_OK, NULL, what);
    sync_ok(what);
    tilert_memcpy_dtoh(out, dout, bytes);
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (memcmp(&out[i], &(float){x[i] + y[i]}, 4) != 0 && bad++ < 5)
            printf("  vadd[%d] = %g, want %g\n", i, out[i], x[i] + y[i]);
    CHECK(bad == 0, "%s: %d wrong elements", what, bad);
    tilert_free(dx);
    tilert_free(dy);
    tilert_free(dout);
    free(x);
    free(y);
    free(out);
}

/* A is a row-major view with padded rows (stride 64), B a column-major view: the tensor ABI. */
static void run_rowscale(tilert_kernel *k, int rows, int cols)
{
    int pitch = 64;
    size_t abytes = (size_t)rows * pitch * 4, bbytes = (size_t)rows * cols * 4;
    float *a = malloc(abytes), *b = malloc(bbytes);
    for (int i = 0; i < rows * pitch; i++) a[i] = rnd();
    float *da = dalloc(abytes), *db = dalloc(bbytes);
    tilert_memcpy_htod(da, a, abytes);
    poison(db, bbytes);
    int64_t shape[2] = {rows, cols}, sa[2] = {pitch, 1}, sb[2] = {1, rows};
    tilert_arg args[3] = {tilert_arg_tensor(tilert_tensor_nd(da, TILERT_F32, 2, shape, sa)),
                          tilert_arg_tensor(tilert_tensor_nd(db, TILERT_F32, 2, shape, sb)), tilert_arg_f64(1.5)};
    expect(tilert_launch(k, NULL, args, 3), TILERT_OK, NULL, "rowscale");
    sync_ok("rowscale");
    tilert_memcpy_dtoh(b, db, bbytes);
    int bad = 0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float want = 1.5f * a[r * pitch + c], got = b[c * rows + r];
            if (memcmp(&got, &want, 4) != 0 && bad++ < 5) printf("  B[%d,%d] = %g, want %g\n", r, c, got, want);
        }
    CHECK(bad == 0, "rowscale %dx%d: %d wrong elements", rows, cols, bad);
    tilert_free(da);
    tilert_free(db);
    free(a);
    free(b);
}

static void run_smem(tilert_kernel *k, int n)
{
    size_t bytes = (size_t)n * 4;
    float *out = malloc(bytes), *dout = dalloc(bytes);
    poison(dout, bytes);
    tilert_arg a[2] = {tilert_arg_ptr(dout, TILERT_F32), tilert_arg_i32(n)};
    expect(tilert_launch(k, NULL, a, 2), TILERT_OK, NULL, "smem_big (100000 bytes of dynamic shared memory)");
    sync_ok("smem_big");
    tilert_memcpy_dtoh(out, dout, bytes);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float want = 2.0f * (float)(128 * (i / 128) + 127 - i % 128);
        if (out[i] != want && bad++ < 5) printf("  smem_big[%d] = %g, want %g\n", i, out[i], want);
    }
    CHECK(bad == 0, "smem_big n=%d: %d wrong elements", n, bad);
    tilert_free(dout);
    free(out);
}

/* ---- threads ---------------------------------------------------------------------- */

typedef struct Job {
    tilert_kernel *k;
    int n, ok;
} Job;

static void *thread_main(void *p)
{
    Job *j = p;
    size_t bytes = (size_t)j->n * 4;
    float *x = malloc(bytes), *out = malloc(bytes);
    for (int i = 0; i < j->n; i++) x[i] = (float)(i % 1000) + 0.25f;
    float *dx = NULL, *dout = NULL;
    j->ok = tilert_malloc((void **)&dx, bytes) == TILERT_OK && tilert_malloc((void **)&dout, bytes) == TILERT_OK;
    if (j->ok) {
        tilert_memcpy_htod(dx, x, bytes);
        tilert_arg a[4] = {tilert_arg_ptr(dx, TILERT_F32), tilert_arg_ptr(dx, TILERT_F32),
                           tilert_arg_ptr(dout, TILERT_F32), tilert_arg_i32(j->n)};
        for (int it = 0; it < 50 && j->ok; it++) j->ok = tilert_launch(j->k, NULL, a, 4) == TILERT_OK;
        if (!j->ok) printf("  thread launch: %s\n", tilert_last_error());
        j->ok = j->ok && tilert_stream_synchronize(NULL) == TILERT_OK;
        tilert_memcpy_dtoh(out, dout, bytes);
        for (int i = 0; i < j->n && j->ok; i++) j->ok = out[i] == 2 * x[i];
    }
    tilert_free(dx);
    tilert_free(dout);
    free(x);
    free(out);
    return NULL;
}


/* ---- TMA ---------------------------------------------------------------------------- */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* What word w of block (bx, by)'s shared-memory image must hold after loading A
 * (rows x cols, row pitch `pitch` elements) with descriptor `which`:
 * 0 = *val, 1 = +0.0, 2 = NaN. */
static int tma_expect(int which, const float *A, int64_t rows, int64_t cols, int64_t pitch, int bx, int by, int w,
                      float *val)
{
    int r, c;
    if (which == 1) { /* 128B swizzle: 16-byte chunk index ^= row % 8 within each 128-byte row */
        unsigned p = (unsigned)w * 4, o = p ^ (((p >> 7) & 7u) << 4);
        r = (int)(o / 128), c = (int)(o % 128 / 4);
    } else {
        r = w / 32, c = w % 32;
    }
    int64_t gr = (int64_t)by * 16 + (which == 2 ? 2 * r : r), gc = (int64_t)bx * 32 + c;
    if (gr < rows && gc < cols) {
        *val = A[gr * pitch + gc];
        return 0;
    }
    return which == 3 ? 2 : 1;
}

typedef struct TmaRun {
    float *dA, *dout, *host, *out;
    int64_t rows, cols, pitch;
    uint32_t gx, gy;
} TmaRun;

/* Random nonzero data from a generator of its own (threads call this at once). */
static void tma_run_init(TmaRun *t, int64_t rows, int64_t cols, int64_t pitch)
{
    uint64_t g = 0x9E3779B97F4A7C15ull ^ (uint64_t)(rows * 1000003 + cols * 101 + pitch);
    t->rows = rows, t->cols = cols, t->pitch = pitch;
    t->gx = (uint32_t)((cols + 31) / 32), t->gy = (uint32_t)((rows + 15) / 16);
    size_t abytes = (size_t)(rows * (pitch ? pitch : cols) + 64) * 4, obytes = (size_t)t->gx * t->gy * 2048;
    t->host = malloc(abytes);
    t->out = malloc(obytes);
    for (size_t i = 0; i < abytes / 4; i++) {
        g ^= g << 13, g ^= g >> 7, g ^= g << 17;
        float v = (float)((g >> 40) % 2000001) / 1000.0f - 1000.0f;
        t->host[i] = v == 0.0f ? 0.5f : v;
    }
    t->dA = dalloc(abytes);
    t->dout = dalloc(obytes);
    tilert_memcpy_htod(t->dA, t->host, abytes);
}

static void tma_run_free(TmaRun *t)
{
    tilert_free(t->dA);
    tilert_free(t->dout);
    free(t->host);
    free(t->out);
}

static tilert_arg tma_tensor(const TmaRun *t, const float *base)
{
    int64_t shape[2] = {t->rows, t->cols}, stride[2] = {t->pitch, 1};
    return tilert_arg_tensor(tilert_tensor_nd((void *)base, TILERT_F32, 2, shape, stride));
}

/* Checks the images of every block; returns the number of wrong words (first few printed). */
static int tma_verify(const TmaRun *t, int which, const char *what)
{
    size_t obytes = (size_t)t->gx * t->gy * 2048;
    tilert_memcpy_dtoh(t->out, t->dout, obytes);
    int bad = 0, words = (int)rt_tma_bytes[which] / 4;
    for (uint32_t by = 0; by < t->gy; by++)
        for (uint32_t bx = 0; bx < t->gx; bx++) {
            const float *img = t->out + (size_t)(by * t->gx + bx) * 512;
            for (int w = 0; w < 512; w++) {
                uint32_t got;
                memcpy(&got, &img[w], 4);
                float v = 0;
                int kind = w < words ? tma_expect(which, t->host, t->rows, t->cols, t->pitch, (int)bx, (int)by, w, &v)
                                     : 3; /* beyond the transfer: still poisoned */
                uint32_t want = 0;
                memcpy(&want, &v, 4);
                bool ok = kind == 0 ? got == want : kind == 1 ? got == 0 : kind == 2 ? isnan(img[w]) : got == 0xFFFFFFFFu;
                if (!ok && bad++ < 5)
                    printf("  %s: block (%u, %u) word %d = 0x%08x, want %s 0x%08x\n", what, bx, by, w, got,
                           kind == 0 ? "value" : kind == 1 ? "zero" : kind == 2 ? "NaN" : "untouched", want);
            }
        }
    return bad;
}

static void tma_case(tilert_kernel *k, int64_t rows, int64_t cols, int64_t pitch)
{
    TmaRun t;
    tma_run_init(&t, rows, cols, pitch);
    for (int which = 0; which < RT_TMA_NDESC; which++) {
        char what[96];
        snprintf(what, sizeof what, "tma_tile [%lld, %lld] pitch %lld, descriptor %d", (long long)rows,
                 (long long)cols, (long long)pitch, which);
        poison(t.dout, (size_t)t.gx * t.gy * 2048);
        tilert_arg a[3] = {tma_tensor(&t, t.dA), tilert_arg_ptr(t.dout, TILERT_F32), tilert_arg_i32(which)};
        expect(tilert_launch(k, NULL, a, 3), TILERT_OK, NULL, what);
        sync_ok(what);
        int bad = tma_verify(&t, which, what);
        CHECK(bad == 0, "%s: %d wrong words", what, bad);
    }
    tma_run_free(&t);
}

typedef struct TmaJob {
    tilert_kernel *k;
    int id, ok;
} TmaJob;

static void *tma_thread(void *p)
{
    TmaJob *j = p;
    TmaRun t;
    tma_run_init(&t, 40 + 7 * j->id, 96 - 8 * j->id, 96);
    j->ok = 1;
    for (int it = 0; it < 40 && j->ok; it++) {
        int which = it % RT_TMA_NDESC;
        tilert_arg a[3] = {tma_tensor(&t, t.dA), tilert_arg_ptr(t.dout, TILERT_F32), tilert_arg_i32(which)};
        if (tilert_launch(j->k, NULL, a, 3) != TILERT_OK) {
            printf("  thread %d: %s\n", j->id, tilert_last_error());
            j->ok = 0;
        }
    }
    j->ok = j->ok && tilert_stream_synchronize(NULL) == TILERT_OK && tma_verify(&t, 3, "thread") == 0;
    tma_run_free(&t);
    return NULL;
}

typedef int (*EncodeFn)(void *map, int dt, uint32_t rank, void *addr, const uint64_t *dims, const uint64_t *strides,
                        const uint32_t *box, const uint32_t *es, int il, int sw, int l2, int oob);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median over `reps` batches of `n` launches of the host time per launch (us), synchronizing
 * between batches; launch i takes argument set i % nsets of sets[nsets][nargs]. */
static double launch_cost(tilert_kernel *k, const tilert_arg *sets, int nsets, int nargs, int n, int reps)
{
    double med[64];
    for (int r = 0; r < reps && r < 64; r++) {
        double t0 = now_us();
        for (int i = 0; i < n; i++)
            if (tilert_launch(k, NULL, sets + (size_t)(i % nsets) * (size_t)nargs, nargs) != TILERT_OK) {
                printf("  launch_cost: %s\n", tilert_last_error());
                return -1;
            }
        med[r] = (now_us() - t0) / n;
        tilert_stream_synchronize(NULL);
    }
    qsort(med, (size_t)reps, sizeof med[0], cmp_double);
    return med[reps / 2];
}

static void run_tma(const char *arch, tilert_kernel *plain)
{
    char log[8192];
    size_t len;
    uint8_t *cubin = rt_tma_cubin(arch, &len, log, sizeof log);
    CHECK(cubin != NULL, "building the TMA cubin: %s", log);
    if (!cubin) return;
    tilert_module *m = NULL;
    expect(tilert_module_load_data(cubin, len, &m), TILERT_OK, NULL, "load the TMA cubin");
    free(cubin);
    tilert_kernel *k = NULL;
    expect(tilert_kernel_get(m, "tma_tile", &k), TILERT_OK, NULL, "get tma_tile");
    if (!k) return;

    /* every descriptor, ragged shapes (zero / NaN fill at the edges), padded rows */
    tma_case(k, 100, 75, 80);
    tma_case(k, 33, 64, 64);
    tma_case(k, 16, 32, 32);
    tma_case(k, 1, 4, 4);
    tma_case(k, 300, 1000, 1024);

    /* the rules, refused on a real device before anything runs: the output stays poisoned */
    {
        TmaRun t;
        tma_run_init(&t, 64, 64, 64);
        size_t obytes = (size_t)t.gx * t.gy * 2048;
        poison(t.dout, obytes);
        tilert_arg a[3] = {tma_tensor(&t, t.dA + 2), tilert_arg_ptr(t.dout, TILERT_F32), tilert_arg_i32(0)};
        expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_ARG_ALIGN,
               "argument 0 ('A'): TMA needs the base address 16-byte aligned, got 0x", "TMA: misaligned base");
        a[0] = tma_tensor(&t, t.dA);
        a[0].v.tensor.stride[0] = 75;
        expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_ARG_VALUE, "stride[0] = 75 elements = 300 bytes is not a "
               "multiple of 16", "TMA: stride");
        a[0].v.tensor.stride[0] = 1;
        a[0].v.tensor.stride[1] = 64;
        expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_ARG_VALUE, "innermost dimension contiguous",
               "TMA: transposed view");
        a[0] = tma_tensor(&t, t.dA);
        a[0].v.tensor.shape[0] = 0;
        expect(tilert_launch(k, NULL, a, 3), TILERT_OK, NULL, "TMA: empty launch builds no map");
        sync_ok("TMA refused launches");
        tilert_memcpy_dtoh(t.out, t.dout, obytes);
        int touched = 0;
        for (size_t i = 0; i < obytes / 4; i++) touched += !isnan(t.out[i]);
        CHECK(touched == 0, "refused TMA launches wrote %d words", touched);

        /* a stride of 0 bytes obeys every documented rule: the driver takes it (a broadcast row)
         * or refuses it, and then tilert passes the driver's own message on */
        a[0] = tma_tensor(&t, t.dA);
        a[0].v.tensor.stride[0] = 0;
        tilert_status s = tilert_launch(k, NULL, a, 3);
        if (s == TILERT_OK) {
            sync_ok("TMA stride 0");
            TmaRun b = t;
            b.pitch = 0;
            int bad = tma_verify(&b, 0, "stride 0");
            printf("  TMA with a row stride of 0: the driver accepts it; broadcast rows %s\n", bad ? "WRONG" : "right");
            CHECK(bad == 0, "TMA stride 0: %d wrong words", bad);
        } else {
            printf("  TMA with a row stride of 0: %s: %s\n", tilert_status_string(s), tilert_last_error());
            CHECK(s == TILERT_ERROR_CUDA && strstr(tilert_last_error(), "cuTensorMapEncodeTiled failed: CUDA_ERROR") &&
                  strstr(tilert_last_error(), "globalStrides {0}"),
                  "TMA stride 0: %s", tilert_last_error());
        }
        tma_run_free(&t);
    }

    /* optional descriptors (tma_ready): a real map has a nonzero byte (what tilec's TMA_READY
     * tests), and a tensor TMA cannot describe launches with a map of zeros */
    {
        tilert_kernel *r = NULL;
        expect(tilert_kernel_get(m, "tma_ready", &r), TILERT_OK, NULL, "get tma_ready");
        TmaRun t;
        tma_run_init(&t, 100, 75, 80);
        int32_t *dflag = dalloc(8), flag[2];
        const uint32_t one[3] = {1, 1, 1};
        static const struct { int64_t pitch; int ready; } rc[] = {{80, 1}, {75, 0}, {76, 1}, {0, -1}};
        for (size_t i = 0; r && i < sizeof rc / sizeof rc[0]; i++) {
            poison(dflag, 8);
            tilert_arg a[2] = {tma_tensor(&t, t.dA), tilert_arg_ptr(dflag, TILERT_I32)};
            a[0].v.tensor.stride[0] = rc[i].pitch;
            expect(tilert_launch_grid(r, NULL, one, a, 2), TILERT_OK, NULL, "tma_ready launch");
            sync_ok("tma_ready");
            tilert_memcpy_dtoh(flag, dflag, 8);
            /* a stride of 0: whichever the driver decides, the flag says it */
            CHECK(flag[1] == 1 && (rc[i].ready < 0 ? flag[0] == 0 || flag[0] == 1 : flag[0] == rc[i].ready),
                  "tma_ready with rows of %lld: flag %d (ran %d), want %d", (long long)rc[i].pitch, flag[0], flag[1],
                  rc[i].ready);
            if (rc[i].ready < 0) printf("  TMA with a row stride of 0, optional: map %s\n", flag[0] ? "built" : "zeros");
        }
        tilert_free(dflag);
        tma_run_free(&t);
    }

    /* several threads, each its own tensors, sharing the kernel's map cache */
    {
        enum { T = 4 };
        pthread_t th[T];
        TmaJob jobs[T];
        for (int i = 0; i < T; i++) {
            jobs[i] = (TmaJob){k, i, 0};
            pthread_create(&th[i], NULL, tma_thread, &jobs[i]);
        }
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            CHECK(jobs[i].ok, "TMA thread %d: launches or results wrong", i);
        }
    }

    /* the driver's encoding is a pure function of its arguments (what the cache relies on),
     * and what it costs on the host */
    {
        TmaRun t;
        tma_run_init(&t, 4096, 4096, 4096);
        size_t mlen;
        uint8_t *meta = rt_tma_meta(arch, &mlen);
        tilert_meta mm;
        char e[300];
        CHECK(meta && tilert_meta_parse(meta, mlen, &mm, e, sizeof e), "TMA metadata: %s", e);
        free(meta);
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        EncodeFn enc = lib ? (EncodeFn)dlsym(lib, "cuTensorMapEncodeTiled") : NULL;
        CHECK(enc != NULL, "cuTensorMapEncodeTiled not found in libcuda.so.1");
        tilert_arg a = tma_tensor(&t, t.dA);
        tilert_tma_encode te;
        if (enc && tilert_tma_prepare(&mm.kernels[0].params[0], &mm.kernels[0].params[0].tma[1], &a.v.tensor, &te, e,
                                      sizeof e) == TILERT_OK) {
            _Alignas(64) uint64_t m1[16], m2[16];
            memset(m1, 0x11, sizeof m1);
            memset(m2, 0x22, sizeof m2);
            int r1 = enc(m1, (int)te.data_type, te.rank, (void *)(uintptr_t)te.address, te.dims, te.strides, te.box,
                         te.elem_strides, 0, (int)te.swizzle, (int)te.l2_promotion, (int)te.oob_fill);
            int r2 = enc(m2, (int)te.data_type, te.rank, (void *)(uintptr_t)te.address, te.dims, te.strides, te.box,
                         te.elem_strides, 0, (int)te.swizzle, (int)te.l2_promotion, (int)te.oob_fill);
            CHECK(r1 == 0 && r2 == 0 && memcmp(m1, m2, sizeof m1) == 0,
                  "two encodings of the same arguments differ (%d, %d): caching tensor maps would be wrong", r1, r2);
            enum { N = 20000 };
            double t0 = now_us();
            for (int i = 0; i < N; i++)
                enc(m1, (int)te.data_type, te.rank, (void *)(uintptr_t)(te.address + 16u * (unsigned)(i & 1)), te.dims,
                    te.strides, te.box, te.elem_strides, 0, (int)te.swizzle, (int)te.l2_promotion, (int)te.oob_fill);
            double per = (now_us() - t0) / N;
            printf("TMA host cost: cuTensorMapEncodeTiled %.3f us per call (%d calls)\n", per, N);
        } else {
            CHECK(0, "tilert_tma_prepare for the timing: %s", e);
        }
        tilert_meta_free(&mm);
        /* launches: the same tensor (maps from the cache), two tensors in turn (cached too: the
         * cache keeps 4 per descriptor), 8 tensors in turn (4 maps rebuilt per launch), and a
         * kernel without TMA (rowscale, 3 arguments); a 1 x 1 grid keeps the GPU out of the way */
        enum { NS = 8 };
        tilert_arg sets[NS][3];
        for (int i = 0; i < NS; i++) {
            sets[i][0] = tma_tensor(&t, t.dA + 4 * i);
            sets[i][0].v.tensor.shape[0] = 16;
            sets[i][0].v.tensor.shape[1] = 32;
            sets[i][1] = tilert_arg_ptr(t.dout, TILERT_F32);
            sets[i][2] = tilert_arg_i32(0);
        }
        double hit = launch_cost(k, &sets[0][0], 1, 3, 500, 15), pingpong = launch_cost(k, &sets[0][0], 2, 3, 500, 15);
        double miss = launch_cost(k, &sets[0][0], NS, 3, 500, 15);
        int64_t shape[2] = {1, 32};
        tilert_arg pa[3] = {tilert_arg_tensor(tilert_tensor_nd(t.dA, TILERT_F32, 2, shape, NULL)),
                            tilert_arg_tensor(tilert_tensor_nd(t.dout, TILERT_F32, 2, shape, NULL)), tilert_arg_f32(2)};
        double base = launch_cost(plain, pa, 1, 3, 500, 15);
        printf("TMA host cost per tilert_launch (median of 15 x 500): 4 maps cached %.2f us, 2 tensors in turn "
               "(cached) %.2f us, 8 tensors in turn (4 maps rebuilt) %.2f us, no TMA (rowscale) %.2f us\n", hit,
               pingpong, miss, base);
        CHECK(hit > 0 && pingpong > 0 && miss > 0 && base > 0, "launch timing failed");
        tma_run_free(&t);
    }
    expect(tilert_module_unload(m), TILERT_OK, NULL, "unload the TMA module");
}

/* ---- main -------------------------------------------------------------------------- */

int main(void)
{
    tilert_status s = tilert_init();
    int ndev = 0;
    if (s == TILERT_ERROR_NO_DRIVER || s == TILERT_ERROR_NO_DEVICE ||
        (s == TILERT_OK && (tilert_device_count(&ndev) != TILERT_OK || ndev == 0))) {
        printf("SKIP: no CUDA device (%s)\n", s ? tilert_last_error() : "the driver lists none");
        return 77;
    }
    if (s) {
        printf("FAIL: tilert_init: %s\n", tilert_last_error());
        return 1;
    }
    tilert_device_info di;
    if (tilert_device_get_info(&di) != TILERT_OK) {
        printf("FAIL: tilert_device_get_info: %s\n", tilert_last_error());
        return 1;
    }
    printf("device %d: %s, compute capability %d.%d, %d SMs, %d bytes shared memory per block (opt-in)\n",
           di.ordinal, di.name, di.cc_major, di.cc_minor, di.sm_count, di.max_smem_per_block_optin);
    char arch[16], other[16], log[8192];
    snprintf(arch, sizeof arch, "sm_%d%d%s", di.cc_major, di.cc_minor, di.cc_major == 9 ? "a" : "");
    snprintf(other, sizeof other, "%s", di.cc_major == 8 ? "sm_90a" : "sm_80");

    size_t len;
    uint8_t *cubin = rt_test_cubin(arch, arch, 0, true, &len, log, sizeof log);
    if (!cubin) {
        printf("FAIL: building the %s test cubin: %s\n", arch, log);
        return 1;
    }
    tilert_module *m = NULL;
    s = tilert_module_load_data(cubin, len, &m);
    expect(s, TILERT_OK, NULL, "load the test cubin");
    if (s) return 1;
    tilert_kernel *vadd = NULL, *rowscale = NULL, *smem = NULL, *ghost = NULL;
    expect(tilert_kernel_get(m, "vadd", &vadd), TILERT_OK, NULL, "get vadd");
    expect(tilert_kernel_get(m, "rowscale", &rowscale), TILERT_OK, NULL, "get rowscale");
    expect(tilert_kernel_get(m, "smem_big", &smem), TILERT_OK, NULL, "get smem_big");
    expect(tilert_kernel_get(m, "ghost", &ghost), TILERT_ERROR_BAD_METADATA, "not in the cubin", "get ghost");
    if (!vadd || !rowscale || !smem) return 1;

    /* results on random data, ragged sizes */
    int sizes[] = {1, 255, 256, 1000, 1000003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) run_vadd(vadd, sizes[i]);
    run_rowscale(rowscale, 37, 50);
    run_rowscale(rowscale, 300, 64);
    run_smem(smem, 1000);
    run_smem(smem, 128 * 300);

    /* an empty launch does nothing and succeeds */
    tilert_arg e[4] = {tilert_arg_ptr(NULL, TILERT_F32), tilert_arg_ptr(NULL, TILERT_F32),
                       tilert_arg_ptr(NULL, TILERT_F32), tilert_arg_i32(0)};
    expect(tilert_launch(vadd, NULL, e, 4), TILERT_OK, NULL, "empty launch");

    /* bad arguments are refused before anything runs: the output stays poisoned */
    {
        int n = 1024;
        float *dx = dalloc((size_t)n * 4), *dout = dalloc((size_t)n * 4), *out = malloc((size_t)n * 4);
        float *host = malloc((size_t)n * 4);
        for (int i = 0; i < n; i++) host[i] = rnd();
        tilert_memcpy_htod(dx, host, (size_t)n * 4);
        poison(dout, (size_t)n * 4);
        tilert_arg a[4] = {tilert_arg_ptr(dx, TILERT_F32), tilert_arg_ptr(dx, TILERT_F16),
                           tilert_arg_ptr(dout, TILERT_F32), tilert_arg_i32(n)};
        expect(tilert_launch(vadd, NULL, a, 4), TILERT_ERROR_ARG_TYPE, "argument 1 ('y')", "wrong dtype");
        a[1] = tilert_arg_ptr((char *)dx + 2, TILERT_F32);
        expect(tilert_launch(vadd, NULL, a, 4), TILERT_ERROR_ARG_ALIGN, "argument 1 ('y')", "misaligned pointer");
        expect(tilert_launch(vadd, NULL, a, 3), TILERT_ERROR_ARG_COUNT, "takes 4 arguments", "argument count");
        int64_t shape[2] = {4, 4};
        tilert_arg r[3] = {tilert_arg_tensor(tilert_tensor_nd((char *)dx + 4, TILERT_F32, 2, shape, NULL)),
                           tilert_arg_tensor(tilert_tensor_nd(dout, TILERT_F32, 2, shape, NULL)), tilert_arg_f32(2)};
        expect(tilert_launch(rowscale, NULL, r, 3), TILERT_ERROR_ARG_ALIGN, "16-byte aligned", "misaligned tensor");
        sync_ok("after refused launches");
        tilert_memcpy_dtoh(out, dout, (size_t)n * 4);
        int touched = 0;
        for (int i = 0; i < n; i++) touched += !isnan(out[i]);
        CHECK(touched == 0, "refused launches wrote %d elements", touched);

        /* an explicit grid: 2 blocks of 256 threads cover the first 512 elements only */
        a[1] = tilert_arg_ptr(dx, TILERT_F32);
        const uint32_t grid[3] = {2, 1, 1};
        expect(tilert_launch_grid(vadd, NULL, grid, a, 4), TILERT_OK, NULL, "explicit grid");
        sync_ok("explicit grid");
        tilert_memcpy_dtoh(out, dout, (size_t)n * 4);
        int good = 0, untouched = 0;
        for (int i = 0; i < 512; i++) good += out[i] == host[i] + host[i];
        for (int i = 512; i < n; i++) untouched += isnan(out[i]) != 0;
        CHECK(good == 512 && untouched == n - 512, "explicit grid: %d of 512 right, %d of %d untouched", good,
              untouched, n - 512);
        tilert_free(dx);
        tilert_free(dout);
        free(out);
        free(host);
    }

    /* launches from several threads (none has a current context of its own) */
    {
        enum { T = 4 };
        pthread_t t[T];
        Job jobs[T];
        for (int i = 0; i < T; i++) {
            jobs[i] = (Job){vadd, 10000 + 777 * i, 0};
            pthread_create(&t[i], NULL, thread_main, &jobs[i]);
        }
        for (int i = 0; i < T; i++) {
            pthread_join(t[i], NULL);
            CHECK(jobs[i].ok, "thread %d: launches or results wrong", i);
        }
    }

    /* TMA: sm_90 and later */
    if (di.cc_major >= 9) run_tma(arch, rowscale);
    else printf("SKIP: TMA tests (compute capability %d.%d, TMA needs 9.0)\n", di.cc_major, di.cc_minor);

    /* error paths with the device */
    uint8_t *c2 = rt_test_cubin(other, other, 0, false, &len, log, sizeof log);
    CHECK(c2 != NULL, "building an %s cubin: %s", other, log);
    if (c2) {
        tilert_module *m2 = NULL;
        expect(tilert_module_load_data(c2, len, &m2), TILERT_ERROR_ARCH_MISMATCH, "does not run on this GPU",
               "a cubin for another GPU");
        expect(tilert_module_load_data(c2, len / 2, &m2), TILERT_ERROR_INVALID_IMAGE, "truncated",
               "a truncated cubin");
        free(c2);
    }
    uint8_t *c3 = rt_test_cubin(arch, arch, 300000, false, &len, log, sizeof log);
    CHECK(c3 != NULL, "building the big-shared-memory cubin: %s", log);
    if (c3) {
        tilert_module *m3 = NULL;
        expect(tilert_module_load_data(c3, len, &m3), TILERT_OK, NULL, "load the big-shared-memory cubin");
        tilert_kernel *k3 = NULL;
        expect(tilert_kernel_get(m3, "smem_big", &k3), TILERT_ERROR_RESOURCES, "bytes of shared memory",
               "too much shared memory");
        expect(tilert_module_unload(m3), TILERT_OK, NULL, "unload");
        free(c3);
    }
    expect(tilert_module_unload(m), TILERT_OK, NULL, "unload the test module");
    free(cubin);

    printf("gpu_runtime: %d checks, %d failed: %s\n", checks, failures, failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
